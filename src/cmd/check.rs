//! `nccl-bench check RUN_DIR --baseline baseline.json`: every case of the baseline
//! checked in the run (`analysis::baseline::check`), as a table, Markdown, JSON or
//! JUnit XML; exit 1 when a case fails, 2 on an error (a missing or malformed
//! baseline, a run of another platform).

use std::fmt::Write as _;

use anyhow::{anyhow, Context, Result};

use crate::analysis::baseline::{check, Baseline, CheckReport, Outcome, SCHEMA_VERSION};
use crate::cli::{CheckArgs, CheckFormat};
use crate::export::reader::RunData;
use crate::units::Bytes;

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
        CheckFormat::Table => table(&report, &name, false),
        CheckFormat::Markdown => table(&report, &name, true),
        CheckFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        CheckFormat::Junit => {
            crate::export::junit::render(&report, &name, &crate::units::now_rfc3339())
        }
    };
    match &args.output {
        Some(path) => crate::export::atomic::write(path, out.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{out}"),
    }
    Ok(if report.failures() > 0 { 1 } else { 0 })
}

/// One line per case (failures first), then the summary.
fn table(report: &CheckReport, baseline: &str, markdown: bool) -> String {
    let mut s = String::new();
    let mut cases: Vec<_> = report.cases.iter().collect();
    cases.sort_by_key(|c| !c.outcome.fails());
    if markdown {
        let _ = writeln!(
            s,
            "## nccl-bench check of {} against {baseline}\n\n| result | config | ranks | size | run | baseline | change | why |\n|---|---|---|---|---|---|---|---|",
            report.run
        );
    }
    for c in &cases {
        let us = |v: Option<f64>| {
            v.map(|v| format!("{v:.3} us"))
                .unwrap_or_else(|| "-".into())
        };
        let change = c
            .change
            .map(|x| format!("{:+.1} %", x * 100.0))
            .unwrap_or_else(|| "-".into());
        if markdown {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {change} | {} |",
                c.outcome.as_str(),
                c.config,
                c.nranks,
                Bytes(c.bytes),
                us(c.run_us),
                us(c.baseline_us),
                c.message.replace('|', "\\|")
            );
        } else {
            let _ = writeln!(
                s,
                "{:<12} {:<12} n={:<4} {:>10}  run {:>14}  baseline {:>14}  {change:>8}  {}",
                c.outcome.as_str(),
                c.config,
                c.nranks,
                Bytes(c.bytes).to_string(),
                us(c.run_us),
                us(c.baseline_us),
                c.message
            );
        }
    }
    let count = |o: Outcome| report.cases.iter().filter(|c| c.outcome == o).count();
    let _ = writeln!(
        s,
        "{}{} of {} cases fail ({} slower, {} missing, {} not ok); {} pass, {} faster, {} inconclusive, {} new; threshold {:.1} %",
        if markdown { "\n" } else { "" },
        report.failures(),
        report.cases.len(),
        count(Outcome::Slower),
        count(Outcome::Missing),
        count(Outcome::NotOk),
        count(Outcome::Pass),
        count(Outcome::Faster),
        count(Outcome::Inconclusive),
        count(Outcome::New),
        report.threshold * 100.0
    );
    s
}
