//! `nccl-bench check RUN_DIR --baseline baseline.json`: every case of the baseline
//! checked in the run (`analysis::baseline::check`), as a table, Markdown, JSON or
//! JUnit XML; with `--workload`, the job's communication time against the
//! baseline's too (`analysis::baseline::job`); exit 1 when a case fails or the job is
//! slower, 2 on an error (a missing or malformed
//! baseline, a run of another platform).

use anyhow::{anyhow, Context, Result};

use crate::analysis::baseline::job::{job_check, JobOutcome};
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
    let job = super::workload::job_of(args.workload.as_deref())?;
    let run = RunData::load(&args.run)?;
    let report = check(&baseline, &run, args.threshold).map_err(|e| anyhow!(e))?;
    let jobs = job
        .as_ref()
        .map(|j| job_check(&baseline, &run, j, args.threshold))
        .unwrap_or_default();
    let job_lines = job
        .as_ref()
        .map(|j| crate::analysis::baseline::job::lines(&jobs, j, args.threshold).join("\n") + "\n")
        .unwrap_or_default();
    let name = args.baseline.display().to_string();
    let out = match args.format {
        CheckFormat::Table => check::table(&report, &name, false) + &job_lines,
        CheckFormat::Markdown => check::table(&report, &name, true) + "\n" + &job_lines,
        CheckFormat::Html => crate::report::html::page(
            &format!("nccl-bench check of {}", args.run.display()),
            &(check::table(&report, &name, true) + "\n" + &job_lines),
            None,
        ),
        CheckFormat::Json => {
            let mut value = serde_json::to_value(&report)?;
            if job.is_some() {
                value["job"] = serde_json::to_value(&jobs)?;
            }
            serde_json::to_string_pretty(&value)? + "\n"
        }
        CheckFormat::Junit => junit::render(&report, &name, &crate::units::now_rfc3339()),
    };
    match &args.output {
        Some(path) => crate::export::atomic::write(path, out.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{out}"),
    }
    let job_slower = jobs.iter().any(|j| j.outcome == JobOutcome::Slower);
    Ok(if report.failures() > 0 || job_slower {
        1
    } else {
        0
    })
}
