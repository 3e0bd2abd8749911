//! `nccl-bench compare`: loads the runs, matches their cases, prints the comparison
//! and maps it to the exit code a CI job gates on (1 when a case is slower or failing now).

use anyhow::{bail, Result};

use crate::analysis::compare::{compare, CompareOptions, Side};
use crate::cli::{CompareArgs, CompareFormat};
use crate::export::reader::RunData;
use crate::report::compare::{render, Format};

/// The configs both runs measured, each against itself.
fn shared_configs(base: &RunData, cand: &RunData) -> Vec<(String, String)> {
    let names: std::collections::BTreeSet<&str> =
        base.cases.iter().map(|c| c.config.as_str()).collect();
    names
        .into_iter()
        .map(str::to_string)
        .filter(|n| cand.cases.iter().any(|c| &c.config == n))
        .map(|n| (n.clone(), n))
        .collect()
}

pub fn run(args: &CompareArgs) -> Result<u8> {
    let base = RunData::load(&args.base)?;
    let candidate = match &args.candidate {
        Some(path) => Some(RunData::load(path)?),
        None => None,
    };
    let label = |run: &RunData, config: Option<&str>| match config {
        Some(c) => format!("{} [{c}]", run.dir.display()),
        None => run.dir.display().to_string(),
    };
    let (a, b) = (args.config_a.as_deref(), args.config_b.as_deref());
    let cand_run = match (&candidate, a) {
        (Some(c), _) => c,
        (None, Some(_)) => &base,
        (None, None) => bail!(
            "give a candidate run, or --config-a and --config-b to compare two configs of {}",
            args.base.display()
        ),
    };
    let base_side = Side {
        run: &base,
        config: a,
        label: label(&base, a),
    };
    let cand_side = Side {
        run: cand_run,
        config: b,
        label: label(cand_run, b),
    };
    let options = CompareOptions {
        threshold: args.threshold,
        margin: args.margin.unwrap_or(args.threshold),
        alpha: args.alpha,
    };
    // A bad workload is exit 2 before anything is printed.
    let job = super::workload::job_of(args.workload.as_deref())?;
    let report = compare(&base_side, &cand_side, options)?;
    let format = match args.format {
        CompareFormat::Table => Format::Table,
        CompareFormat::Markdown => Format::Markdown,
        CompareFormat::Html => Format::Html,
        CompareFormat::Csv => Format::Csv,
        CompareFormat::Json => Format::Json,
    };
    print!("{}", render(&report, format)?);
    if let Some(job) = &job {
        let configs: Vec<(String, String)> = match (a, b) {
            (Some(a), Some(b)) => vec![(a.to_string(), b.to_string())],
            _ => shared_configs(&base, cand_run),
        };
        let costs: Vec<_> = configs
            .iter()
            .flat_map(|(ca, cb)| {
                crate::analysis::job::costs_between(
                    crate::analysis::job::Side {
                        run: &base,
                        config: ca,
                    },
                    crate::analysis::job::Side {
                        run: cand_run,
                        config: cb,
                    },
                    job,
                    args.threshold,
                )
            })
            .collect();
        print!(
            "{}",
            crate::report::job::compare_lines(&costs, job).join("\n")
        );
        println!();
    }
    Ok(u8::from(report.fails()))
}
