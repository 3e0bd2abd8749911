//! `history`: one sweep repeated over time (nightly, after each driver, NCCL or
//! firmware upgrade), read as series and searched for steps.
//!
//! A series is one case (backend, config, ranks, size, datatype, op) across the
//! runs, in the order they started. Each run is judged against the level before it
//! by the decision model (`stats::change`): the level is the runs since the last
//! step that were within it (or not settled with no change in their interval), ok
//! and unflagged, of which the first `window` are the reference (so a slow drift
//! away from them adds up to a step); the run's level against their mean,
//! with each run's own rounds and the spread between the level's runs. Two runs
//! beyond the threshold the same way, with no run back at the level between them,
//! make a step. The new level is the runs since the level on that side that are no
//! further from the old level than the latest one by more than the threshold,
//! interval against interval (a spike before a smaller step is a one-off; a ramp is
//! part of the move); the step goes from the old level's last run to the new
//! level's first, sized by the median change of the new level's first `window` runs.
//! A lone run beyond the threshold at the end is a step not confirmed yet; one
//! followed by a run back at the level is a one-off. A level of fewer than 3 runs has
//! no known spread: when the next two runs agree against it, no step is named, and
//! its runs beyond the new level are the one-offs. Each step names the two runs
//! around it and what their manifests say changed: NCCL, its library, driver, CUDA,
//! GPUs, hosts, the config's variables, nccl-bench itself.

use std::collections::BTreeMap;

mod facts;
mod judge;
mod series;

pub use facts::{differences, facts};
pub use series::{
    Difference, Fact, History, OneOff, Options, Point, RunEntry, Series, SizeChoice, Step,
    DEFAULT_SIZES, DEFAULT_WINDOW,
};

use crate::export::reader::{CaseRow, RunData};
use judge::judge;

/// The runs in the order they started (ties, and runs without a readable start
/// time, which come first, by directory), as the history's runs.
pub fn order(runs: &mut [RunData]) {
    runs.sort_by_cached_key(|r| (start_seconds(&r.manifest.started_at), r.dir.clone()));
}

/// A start time as seconds since the epoch: RFC 3339 with its offset (our runs), or
/// without one (`2026-07-10T12:00:00`, an nccl-tests import: that machine's local
/// time, taken as this one's).
fn start_seconds(text: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp());
    }
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok()?;
    naive
        .and_local_timezone(chrono::Local)
        .earliest()
        .map(|t| t.timestamp())
}

/// The history of `runs`, which must be in order (see [`order`]).
pub fn build(runs: &[RunData], opts: &Options) -> History {
    let entries = runs
        .iter()
        .map(|r| RunEntry {
            dir: r.dir.display().to_string(),
            name: r
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| r.dir.display().to_string()),
            started_at: r.manifest.started_at.clone(),
            label: r.manifest.label.clone(),
            backend: r.manifest.backend.used.clone(),
        })
        .collect();
    let mut series = Vec::new();
    for group in groups(runs) {
        for bytes in chosen_sizes(runs, &group, &opts.sizes) {
            let mut s = one_series(runs, &group, bytes);
            judge(&mut s, runs, opts);
            series.push(s);
        }
    }
    History {
        runs: entries,
        threshold: opts.threshold,
        window: opts.window,
        series,
    }
}

/// (backend, config, ranks, datatype, op, collective): what a series keeps apart.
type Group = (String, String, u32, String, String, String);

fn backend_of<'a>(run: &'a RunData, row: &'a CaseRow) -> &'a str {
    if row.backend.is_empty() {
        &run.manifest.backend.used
    } else {
        &row.backend
    }
}

fn group_of(run: &RunData, c: &CaseRow) -> Group {
    (
        backend_of(run, c).to_string(),
        c.config.clone(),
        c.nranks,
        c.dtype.clone(),
        c.op.clone(),
        c.coll().to_string(),
    )
}

/// Whether a case belongs to a group (without building the group's key).
fn in_group(run: &RunData, c: &CaseRow, g: &Group) -> bool {
    c.nranks == g.2
        && c.config == g.1
        && c.dtype == g.3
        && c.op == g.4
        && c.coll().name() == g.5
        && backend_of(run, c) == g.0
}

/// Every group, in the order first seen.
fn groups(runs: &[RunData]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for run in runs {
        for c in &run.cases {
            if !out.iter().any(|g| in_group(run, c, g)) {
                out.push(group_of(run, c));
            }
        }
    }
    out
}

/// The sizes followed in a group: among the sizes at least half of the group's runs
/// have (all its sizes when none is that common), each choice's, without repeats.
fn chosen_sizes(runs: &[RunData], group: &Group, choices: &[SizeChoice]) -> Vec<u64> {
    let mut runs_with: BTreeMap<u64, usize> = BTreeMap::new();
    let mut group_runs = 0;
    for run in runs {
        let mut sizes: Vec<u64> = run
            .cases
            .iter()
            .filter(|c| in_group(run, c, group))
            .map(|c| c.bytes)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        group_runs += usize::from(!sizes.is_empty());
        for b in sizes {
            *runs_with.entry(b).or_default() += 1;
        }
    }
    let common: Vec<u64> = runs_with
        .iter()
        .filter(|(_, n)| **n * 2 >= group_runs)
        .map(|(b, _)| *b)
        .collect();
    let candidates = if common.is_empty() {
        runs_with.keys().copied().collect()
    } else {
        common
    };
    let log = |b: u64| (b.max(1) as f64).log2();
    let mut out = Vec::new();
    for choice in choices {
        let pick = match choice {
            SizeChoice::Largest => candidates.last().copied(),
            SizeChoice::Near(target) => candidates.iter().copied().min_by(|a, b| {
                let da = (log(*a) - log(*target)).abs();
                let db = (log(*b) - log(*target)).abs();
                da.total_cmp(&db).then(a.cmp(b))
            }),
        };
        if let Some(b) = pick.filter(|b| !out.contains(b)) {
            out.push(b);
        }
    }
    out
}

fn one_series(runs: &[RunData], group: &Group, bytes: u64) -> Series {
    let points = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| {
            let c = run
                .cases
                .iter()
                .find(|c| c.bytes == bytes && in_group(run, c, group))?;
            let median = c.typical_us().filter(|m| c.is_ok() && *m > 0.0);
            Some(Point {
                run: i,
                status: c.status.clone(),
                median_us: median,
                ci_us: median.map(|m| {
                    (
                        c.median_ci_low_us.unwrap_or(m),
                        c.median_ci_high_us.unwrap_or(m),
                    )
                }),
                busbw_gbps: c.busbw_gbps.filter(|_| c.is_ok()),
                trusted: c.is_trusted() && median.is_some(),
                // NCCL's choice; the host backend's store mode is not one.
                choice: if c.backend == "host" {
                    String::new()
                } else {
                    crate::analysis::compare::choice_of(c)
                },
                level: median.and_then(|_| c.level()),
            })
        })
        .collect();
    Series {
        backend: group.0.clone(),
        config: group.1.clone(),
        nranks: group.2,
        bytes,
        dtype: group.3.clone(),
        op: group.4.clone(),
        collective: group.5.clone(),
        points,
        steps: Vec::new(),
        one_offs: Vec::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
