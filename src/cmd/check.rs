//! `nccl-bench check RUN_DIR --baseline baseline.json`: every case of the baseline
//! checked in the run (`analysis::baseline::check`), as a table, Markdown, JSON or
//! JUnit XML; with `--workload`, the job's communication time against the
//! baseline's too (`analysis::baseline::job`). Exit 1 when a case (or the job) is
//! slower, failing or missing, 3 when none is but some case is not settled (a gate
//! never passes on what it could not tell), 2 on an error (a missing or malformed
//! baseline, a run of another platform).

use anyhow::{anyhow, Context, Result};

use crate::analysis::baseline::job::job_check;
use crate::analysis::baseline::{check, EXIT_FAILS, EXIT_NOT_SETTLED};
use crate::cli::{CheckArgs, CheckFormat};
use crate::export::reader::RunData;
use crate::report::{check, junit};
use crate::stats::change::Change;

pub fn run(args: &CheckArgs) -> Result<u8> {
    let baseline = crate::analysis::baseline::load(&args.baseline).map_err(|e| anyhow!(e))?;
    let job = super::workload::job_of(args.workload.as_deref())?;
    let run = RunData::load(&args.run)?;
    let report = check(&baseline, &run, args.threshold).map_err(|e| anyhow!(e))?;
    let jobs = job
        .as_ref()
        .map(|j| job_check(&baseline, &run, j, args.threshold))
        .unwrap_or_default();
    let job_lines = job
        .as_ref()
        .map(|j| check::job_lines(&jobs, j).join("\n") + "\n")
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
            // Each case's note as the table says it.
            for (c, v) in report
                .cases
                .iter()
                .zip(value["cases"].as_array_mut().into_iter().flatten())
            {
                v["note"] = check::note_words(&c.note).into();
            }
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
    let job = |c: Change| jobs.iter().any(|j| j.case.change == c);
    Ok(match report.exit_code() {
        0 if job(Change::Slower) || job(Change::Failed) => EXIT_FAILS,
        0 if job(Change::NotSettled) => EXIT_NOT_SETTLED,
        code => code,
    })
}
