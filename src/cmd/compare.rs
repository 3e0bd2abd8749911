//! `nccl-bench compare`: loads the runs, matches their cases, prints the comparison
//! and maps it to the exit code a CI job gates on (1 when anything regressed).

use anyhow::{bail, Result};

use crate::analysis::compare::{compare, CompareOptions, Side};
use crate::cli::{CompareArgs, CompareFormat};
use crate::export::reader::RunData;
use crate::report::compare::{render, Format};

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
        resamples: args.resamples as usize,
    };
    let report = compare(&base_side, &cand_side, options)?;
    let format = match args.format {
        CompareFormat::Table => Format::Table,
        CompareFormat::Markdown => Format::Markdown,
        CompareFormat::Html => Format::Html,
        CompareFormat::Csv => Format::Csv,
        CompareFormat::Json => Format::Json,
    };
    print!("{}", render(&report, format)?);
    Ok(if report.regressions().next().is_some() {
        1
    } else {
        0
    })
}
