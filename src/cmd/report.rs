//! `nccl-bench report`: writes `report.md` and `model.csv` into a run directory
//! (atomically) and prints where it is. `sweep` calls the same function when it finishes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::analysis::compare::CompareOptions;
use crate::analysis::report::markdown;
use crate::cli::ReportArgs;
use crate::export::atomic;
use crate::export::reader::RunData;
use crate::stats::compare::DEFAULT_RESAMPLES;

pub const REPORT: &str = "report.md";

pub fn run(args: &ReportArgs) -> Result<u8> {
    let user = match &args.expected {
        Some(path) => vec![crate::config::expected::load(path)?],
        None => Vec::new(),
    };
    let path = write_with(&args.run, &args.baseline, args.threshold, user)?;
    println!("report: {}", path.display());
    Ok(0)
}

/// Writes the run's report; returns its path.
pub fn write(run_dir: &Path, baseline: &str, threshold: f64) -> Result<PathBuf> {
    write_with(run_dir, baseline, threshold, Vec::new())
}

/// The run's own table of published figures (`sweep --expected`), if it has one.
pub const EXPECTED: &str = "expected.toml";

/// Writes the run's report, with published figures from `user` tables tried before
/// the run's own expected.toml and the shipped table; returns its path.
fn write_with(
    run_dir: &Path,
    baseline: &str,
    threshold: f64,
    mut user: Vec<Vec<crate::config::expected::Platform>>,
) -> Result<PathBuf> {
    let run = RunData::load(run_dir)?;
    let own = run_dir.join(EXPECTED);
    if own.is_file() {
        user.push(crate::config::expected::load(&own)?);
    }
    let expected = crate::config::expected::merged(&user);
    let options = CompareOptions {
        threshold,
        resamples: DEFAULT_RESAMPLES,
    };
    // Plots are part of the report; one that cannot be drawn is said in the report
    // rather than losing the tables and the verdict.
    let plots_dir = run_dir.join(crate::plot::PLOTS);
    let plots =
        crate::plot::draw_all(&run, baseline, threshold, &plots_dir).map_err(|e| format!("{e:#}"));
    let models = crate::analysis::model_table::models(&run);
    let model_path = run_dir.join(crate::analysis::model_table::MODEL_CSV);
    atomic::write(&model_path, &crate::analysis::model_table::csv(&models)?)
        .with_context(|| format!("cannot write {}", model_path.display()))?;
    let text = markdown(&run, baseline, options, &plots, &expected)?;
    let path = run_dir.join(REPORT);
    atomic::write(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
