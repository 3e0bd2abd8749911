//! `nccl-bench check RUN_DIR --baseline baseline.json`: every case of the baseline
//! checked in the run (`analysis::baseline::check`), as a table, Markdown, JSON or
//! JUnit XML; exit 1 when a case fails, 2 on an error (a missing or malformed
//! baseline, a run of another platform).

use anyhow::{anyhow, Context, Result};

use crate::analysis::baseline::{check, Baseline, SCHEMA_VERSION};
use crate::cli::{CheckArgs, CheckFormat};
use crate::export::reader::RunData;
use crate::report::{check, junit};

pub fn run(args: &CheckArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.baseline)
        .with_context(|| format!("cannot read baseline {}", args.baseline.display()))?;
    let baseline: Baseline = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{}: not a baseline written by `nccl-bench baseline`: {e}",
            args.baseline.display()
        )
    })?;
    if baseline.schema_version != SCHEMA_VERSION {
        return Err(anyhow!(
            "{}: baseline schema version {} (this nccl-bench reads {SCHEMA_VERSION})",
            args.baseline.display(),
            baseline.schema_version
        ));
    }
    let run = RunData::load(&args.run)?;
    let report = check(&baseline, &run, args.threshold).map_err(|e| anyhow!(e))?;
    let name = args.baseline.display().to_string();
    let out = match args.format {
        CheckFormat::Table => check::table(&report, &name, false),
        CheckFormat::Markdown => check::table(&report, &name, true),
        CheckFormat::Html => crate::report::html::page(
            &format!("nccl-bench check of {}", args.run.display()),
            &check::table(&report, &name, true),
            None,
        ),
        CheckFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        CheckFormat::Junit => junit::render(&report, &name, &crate::units::now_rfc3339()),
    };
    match &args.output {
        Some(path) => crate::export::atomic::write(path, out.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{out}"),
    }
    Ok(if report.failures() > 0 { 1 } else { 0 })
}
