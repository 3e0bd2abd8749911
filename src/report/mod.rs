//! Documents for people from what `analysis` decided: the run's `report.md` and the
//! same as one page for a browser, `report.html` (the SHM verdict and its evidence,
//! tables per GPU count, the model, pairs, ceilings, with the plots), and `model.csv`,
//! written into the run directory; and the outputs of `compare`, `history` and
//! `check` in each of their formats (text, Markdown, HTML, CSV, JSON, JUnit XML).
//! Rendering only: nothing here measures or judges, and nothing prints; `write_with`
//! is the one function that writes a run's files.

pub mod check;
pub mod compare;
pub mod decision;
mod glance;
pub mod history;
pub mod html;
pub mod job;
pub mod junit;
mod machine;
pub mod markdown;
pub mod sections;
pub mod soak;
pub mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::analysis::compare::CompareOptions;
use crate::export::atomic;
use crate::export::reader::RunData;
use crate::export::run_dir::{EXPECTED, MODEL_CSV, REPORT, REPORT_HTML};
use markdown::markdown;

/// The last part of a run directory's path, its name.
fn run_name(run_dir: &Path) -> String {
    run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run_dir.display().to_string())
}

/// A soak's report and charts (`report::soak`); returns the report's path.
fn write_soak(
    run_dir: &Path,
    run: &RunData,
    findings: &crate::analysis::soak::SoakFindings,
) -> Result<PathBuf> {
    let words =
        |e: &crate::analysis::soak::EpisodeFindings| soak::causes_words(e, findings.nodes.len());
    let plots = crate::plot::soak::draw(findings, &run_dir.join(crate::plot::PLOTS), &words)
        .map_err(|e| format!("{e:#}"));
    let text = soak::markdown(run, findings, &plots)?;
    let path = run_dir.join(REPORT);
    atomic::write(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let title = format!("nccl-bench soak: {}", run_name(run_dir));
    let page = html::page(&title, &text, Some(run_dir));
    let html_path = run_dir.join(REPORT_HTML);
    atomic::write(&html_path, page.as_bytes())
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    Ok(path)
}

/// Writes the run's report; returns its path.
pub fn write(run_dir: &Path, baseline: &str, threshold: f64) -> Result<PathBuf> {
    write_with(run_dir, baseline, threshold, Vec::new(), None)
}

/// Writes the run's report, with published figures from `user` tables tried before
/// the run's own expected.toml and the shipped table, and the calls of `job` (`report
/// --workload`) in place of those the sweep recorded; returns its path.
pub fn write_with(
    run_dir: &Path,
    baseline: &str,
    threshold: f64,
    mut user: Vec<Vec<crate::config::expected::Platform>>,
    job: Option<crate::config::SizesFrom>,
) -> Result<PathBuf> {
    let mut run = RunData::load(run_dir)?;
    if job.is_some() {
        run.manifest.sizes_from = job;
    }
    if let Some(findings) = crate::analysis::soak::analyse(run_dir)? {
        return write_soak(run_dir, &run, &findings);
    }
    let own = run_dir.join(EXPECTED);
    if own.is_file() {
        user.push(crate::config::expected::load(&own)?);
    }
    let expected = crate::config::expected::merged(&user);
    let options = CompareOptions::new(threshold);
    // Plots are part of the report; one that cannot be drawn is said in the report
    // rather than losing the tables and the verdict.
    // A run of several collectives draws each one's charts into a folder of its own.
    let plots_dir = run_dir.join(crate::plot::PLOTS);
    let plots = match &run.collectives()[..] {
        [_, _, ..] => run
            .collectives()
            .into_iter()
            .try_fold(Vec::new(), |mut all, c| {
                let dir = plots_dir.join(c.name());
                let one = run.of_collective(c);
                all.extend(crate::plot::draw_all(&one, baseline, threshold, &dir)?);
                anyhow::Ok(all)
            }),
        _ => crate::plot::draw_all(&run, baseline, threshold, &plots_dir),
    }
    .and_then(|mut all| {
        // The job's chart spans its collectives: one folder up.
        if let Some(job) = &run.manifest.sizes_from {
            all.extend(crate::plot::job::draw(&run, job, &plots_dir).context("job chart")?);
        }
        anyhow::Ok(all)
    })
    .map_err(|e| format!("{e:#}"));
    let models = crate::analysis::model_table::models(&run);
    let model_path = run_dir.join(MODEL_CSV);
    atomic::write(&model_path, &sections::model_table::csv(&models)?)
        .with_context(|| format!("cannot write {}", model_path.display()))?;
    let text = markdown(&run, baseline, options, &plots, &expected)?;
    let path = run_dir.join(REPORT);
    atomic::write(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let title = format!("nccl-bench report: {}", run_name(run_dir));
    let page = html::page(&title, &text, Some(run_dir));
    let html_path = run_dir.join(REPORT_HTML);
    atomic::write(&html_path, page.as_bytes())
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    Ok(path)
}
