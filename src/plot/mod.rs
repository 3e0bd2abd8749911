//! The charts of a run, written as SVG and PNG (1000x600) into the run's `plots/`:
//! bus bandwidth and latency against message size, each config against the baseline,
//! scaling with GPU count, and measured time against NCCL's prediction. One file per chart; text uses an embedded DejaVu Sans
//! so it renders without system fonts. Failed cases are always drawn (red crosses).

mod busbw;
mod common;
mod history;
pub mod job;
mod latency;
mod pairs;
mod predicted;
mod relative;
mod scaling;
pub mod soak;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::export::reader::RunData;

pub use history::draw as draw_history;

/// The folder of a run directory that holds its charts.
pub const PLOTS: &str = "plots";

/// Draws every chart of `run` into `out_dir` (created if missing) and returns the
/// files written. `baseline` is the config the relative chart compares against
/// (skipped when the run lacks it); `threshold` is the noise band, a fraction.
pub fn draw_all(
    run: &RunData,
    baseline: &str,
    threshold: f64,
    out_dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut written = busbw::draw(run, out_dir).context("bus bandwidth chart")?;
    written.extend(latency::draw(run, out_dir).context("latency chart")?);
    written.extend(relative::draw(run, baseline, threshold, out_dir).context("relative chart")?);
    written.extend(scaling::draw(run, out_dir).context("scaling chart")?);
    written.extend(predicted::draw(run, out_dir).context("measured-against-predicted chart")?);
    let tables = crate::analysis::pairs::tables(run, threshold);
    written.extend(pairs::draw(&tables, out_dir).context("pairs chart")?);
    Ok(written)
}
