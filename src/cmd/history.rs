//! `nccl-bench history RUN_OR_RESULTS_DIR...`: finds the run directories, reads each
//! one's manifest and results.csv and
//! prints the history (`analysis::history`); `-o DIR` also writes it as Markdown,
//! JSON and CSV with its charts.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::analysis::history::{self, Options};
use crate::cli::{HistoryArgs, HistoryFormat};
use crate::export::atomic;
use crate::export::reader::RunData;
use crate::export::run_dir::{MANIFEST, RESULTS_CSV};
use crate::report::history::{render, Format};

/// How deep a results directory is searched for runs.
const SEARCH_DEPTH: usize = 3;

/// The files `-o` writes; a directory holding anything else is not overwritten.
const HISTORY_JSON: &str = "history.json";

pub fn run(args: &HistoryArgs) -> Result<u8> {
    if let Some(out) = &args.out {
        check_out_dir(out)?;
    }
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for arg in &args.runs {
        if is_run_dir(arg) {
            runs.push(RunData::load(arg)?);
            continue;
        }
        if !arg.is_dir() {
            bail!("{} is not a directory", arg.display());
        }
        let found = find_runs(arg);
        if found.is_empty() {
            bail!(
                "{} holds no run directory (one with {MANIFEST} and {RESULTS_CSV}) within {SEARCH_DEPTH} levels",
                arg.display()
            );
        }
        for dir in found {
            // A broken run among hundreds found by searching is reported, not fatal.
            match RunData::load(&dir) {
                Ok(run) => runs.push(run),
                Err(e) => skipped.push(format!("{e:#}")),
            }
        }
    }
    if runs.is_empty() {
        bail!("no run could be read: {}", skipped.join("; "));
    }
    runs.dedup_by(|a, b| a.dir == b.dir);
    history::order(&mut runs);
    runs.dedup_by(|a, b| same_dir(&a.dir, &b.dir));
    let opts = Options {
        sizes: args.sizes.clone(),
        threshold: args.threshold,
        window: args.window,
    };
    let h = history::build(&runs, &opts);
    let format = match args.format {
        HistoryFormat::Table => Format::Table,
        HistoryFormat::Markdown => Format::Markdown,
        HistoryFormat::Html => Format::Html,
        HistoryFormat::Json => Format::Json,
        HistoryFormat::Csv => Format::Csv,
    };
    print!("{}", render(&h, format)?);
    for s in &skipped {
        eprintln!("warning: left out: {s}");
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        for (name, format) in [
            ("history.md", Format::Markdown),
            (HISTORY_JSON, Format::Json),
            ("history.csv", Format::Csv),
        ] {
            let path = out.join(name);
            atomic::write(&path, render(&h, format)?.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        let charts = crate::plot::draw_history(&h, out).context("history charts")?;
        let path = out.join("history.html");
        let page = crate::report::history::page(&h, &charts, Some(out))?;
        atomic::write(&path, page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "wrote history.md, history.html, history.json, history.csv and {} charts to {}",
            charts.len(),
            out.display()
        );
    }
    Ok(0)
}

fn is_run_dir(dir: &Path) -> bool {
    dir.join(MANIFEST).is_file() && dir.join(RESULTS_CSV).is_file()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The run directories under `root` (not inside other runs), in path order.
fn find_runs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..SEARCH_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            children.sort();
            for child in children {
                if is_run_dir(&child) {
                    found.push(child);
                } else {
                    next.push(child);
                }
            }
        }
        level = next;
    }
    found.sort();
    found
}

/// `-o` writes into a new or empty directory, or one an earlier history wrote.
fn check_out_dir(out: &Path) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("{} exists and is not a directory", out.display());
    }
    let empty = std::fs::read_dir(out)
        .with_context(|| format!("cannot read {}", out.display()))?
        .next()
        .is_none();
    if !empty && !out.join(HISTORY_JSON).is_file() {
        bail!(
            "{} exists and was not written by `nccl-bench history` (no {HISTORY_JSON}): nothing in it is overwritten; choose another directory",
            out.display()
        );
    }
    Ok(())
}
