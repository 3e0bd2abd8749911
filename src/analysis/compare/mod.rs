//! Run against run, or config against config within a run: cases are matched by
//! (config, collective, ranks, bytes, datatype, op) and every matched pair is one
//! case of one decision (`stats::change::decide`): two configs of one sweep paired
//! round by round, two runs each with its own spread (Welch), one measurement a side
//! judged on the change alone. A case that was ok and now fails is failed: a gate
//! does not pass on it.

use std::collections::HashMap;

use anyhow::{bail, Result};
use serde::Serialize;

use super::baseline::CaseId;
use crate::export::reader::{CaseRow, RunData};
use crate::model::SIMULATED_LABEL;
use crate::stats::change::{self, Case, Change, Decision, Design, Evidence, Input};

/// One matched pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub config: String,
    pub collective: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    pub base_status: String,
    pub cand_status: String,
    /// Each side's typical time, us: the geometric mean of its rounds' medians
    /// (the change is their ratio), or its one measurement.
    pub base_time_us: Option<f64>,
    pub cand_time_us: Option<f64>,
    pub base_busbw_gbps: Option<f64>,
    pub cand_busbw_gbps: Option<f64>,
    /// The case as decided: its change, estimate and intervals.
    pub case: Case,
    /// What the quality rules flagged on each side (`report::compare` words it).
    pub flags: Flags,
    /// NCCL's algorithm and protocol differ between the sides (`Tree/LL` against
    /// `Ring/LL128`): (base's, candidate's). Empty where a side did not record one.
    pub choice_change: Option<(String, String)>,
}

/// What a pair's sides are flagged with: each side's `quality` cell where a rule
/// flagged it (`noisy`, `outlier`), or `remeasured` where an older run measured that
/// side again alone, after its partner (its rounds are not side by side).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Flags {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
}

impl Flags {
    pub fn any(&self) -> bool {
        self.base.is_some() || self.candidate.is_some()
    }
}

impl PairRow {
    /// The config, with the collective after it where it is not all_reduce.
    pub fn label(&self) -> String {
        crate::ops::collective::labelled(&self.config, &self.collective)
    }

    /// What fails a gate: slower, or failing where the base passed.
    pub fn fails(&self) -> bool {
        matches!(self.case.change, Change::Slower | Change::Failed)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub base: String,
    pub candidate: String,
    /// Both sides come from one run (configs compared, paired by round).
    pub same_run: bool,
    /// Pairs launched differently (`--graph` differs), as (base, candidate, count).
    pub graph_differs: Vec<(u64, u64, usize)>,
    pub rows: Vec<PairRow>,
    /// Every row's case, decided together.
    pub decision: Decision,
    pub only_in_base: usize,
    pub only_in_candidate: usize,
    /// Collectives only one side measured (no case of theirs is compared).
    pub collectives_only_in_base: Vec<String>,
    pub collectives_only_in_candidate: Vec<String>,
}

impl CompareReport {
    /// Whether the comparison fails a gate (`compare`'s exit 1).
    pub fn fails(&self) -> bool {
        self.rows.iter().any(PairRow::fails)
    }
}

/// Comparison settings.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub threshold: f64,
    /// Within +-margin: the threshold by default.
    pub margin: f64,
    /// The decision's error rate (`stats::change::ALPHA` by default).
    pub alpha: f64,
}

impl CompareOptions {
    pub fn new(threshold: f64) -> CompareOptions {
        CompareOptions {
            threshold,
            margin: threshold,
            alpha: change::ALPHA,
        }
    }

    /// The design for runs looked at `looks` times.
    pub fn design(&self, looks: usize) -> Design {
        Design {
            alpha: self.alpha,
            margin: self.margin,
            ..Design::new(self.threshold, looks)
        }
    }
}

/// Which cases of a run take part, under which name.
pub struct Side<'a> {
    pub run: &'a RunData,
    /// Only this config (and matched without its name), or every config.
    pub config: Option<&'a str>,
    pub label: String,
}

impl<'a> Side<'a> {
    /// One config of a run, named by it.
    pub fn config(run: &'a RunData, name: &'a str) -> Side<'a> {
        Side {
            run,
            config: Some(name),
            label: name.to_string(),
        }
    }
}

/// A case's key on its side: without its config where one config of each side is
/// compared.
fn key(side: &Side, c: &CaseRow) -> CaseId {
    let mut id = CaseId::of(c);
    if side.config.is_some() {
        id.config.clear();
    }
    id
}

fn keyed<'a>(side: &Side<'a>) -> HashMap<CaseId, &'a CaseRow> {
    side.run
        .cases
        .iter()
        .filter(|c| side.config.is_none_or(|name| c.config == name))
        .map(|c| (key(side, c), c))
        .collect()
}

/// Whether a run was made on the simulated-GPU test stand-in.
pub fn is_simulated(run: &RunData) -> bool {
    run.manifest.backend.used == SIMULATED_LABEL
        || run.cases.iter().any(|c| c.backend == SIMULATED_LABEL)
}

/// What one pair gives the model: its evidence, what the quality rules flagged,
/// and each side's typical time in us
/// (the geometric mean of its rounds' medians, whose ratio the change is, or the
/// one measurement the change was taken from).
pub struct Pair {
    pub evidence: Evidence,
    pub flags: Flags,
    pub times: (Option<f64>, Option<f64>),
}

/// The evidence of one pair: rounds side by side (`paired`: the same sweep),
/// each side's rounds, or one measurement a side.
pub fn pair(b: &CaseRow, c: &CaseRow, paired: bool) -> Pair {
    let flag = |r: &CaseRow| {
        // An older run's re-measurement ran its rounds alone, later.
        let alone = paired && b.config != c.config && r.quality == "remeasured";
        ((r.is_ok() && !r.is_trusted()) || alone).then(|| r.quality.clone())
    };
    let flags = Flags {
        base: flag(b),
        candidate: flag(c),
    };
    let typical = |r: &CaseRow| r.typical_us().filter(|_| r.is_ok());
    let mut times = (typical(b), typical(c));
    if !c.is_ok() || !b.is_ok() {
        // Failing now where the base passed is a failure; without an ok base there
        // is nothing to compare.
        let evidence = if b.is_ok() {
            Evidence::Failed
        } else {
            Evidence::Missing
        };
        return Pair {
            evidence,
            flags,
            times,
        };
    }
    let estimate = match change::of_rounds(&b.round_medians(), &c.round_medians(), paired) {
        Some((e, tb, tc)) => {
            times = (Some(tb), Some(tc));
            Some(e)
        }
        None => {
            // One measurement a side: the medians where both have one, else the
            // means (an import has only its mean).
            times = b.p50_us.zip(c.p50_us).or(b.time_us.zip(c.time_us)).unzip();
            times
                .0
                .zip(times.1)
                .and_then(|(tb, tc)| change::point(tb, tc))
        }
    };
    Pair {
        evidence: estimate.map_or(Evidence::Missing, Evidence::Measured),
        flags,
        times,
    }
}

/// Compares the candidate side against the base side.
pub fn compare(base: &Side, cand: &Side, opts: CompareOptions) -> Result<CompareReport> {
    if is_simulated(base.run) != is_simulated(cand.run) {
        let (sim, real) = if is_simulated(base.run) {
            (base, cand)
        } else {
            (cand, base)
        };
        bail!(
            "{} ran on simulated GPUs (nccl-bench's test stand-in, not a measurement) and {} did not: a simulated run is never compared with a real one",
            sim.run.dir.display(),
            real.run.dir.display()
        );
    }
    for side in [base, cand] {
        if let Some(name) = side.config {
            if !side.run.cases.iter().any(|c| c.config == name) {
                let mut known: Vec<&str> =
                    side.run.cases.iter().map(|c| c.config.as_str()).collect();
                known.dedup();
                bail!(
                    "{} has no config '{name}' (it has: {})",
                    side.run.dir.display(),
                    known.join(", ")
                );
            }
        }
    }
    let cand_cases = keyed(cand);
    // Keep the base run's order; a forced choice NCCL refused on either side has
    // nothing to compare.
    let matched: Vec<(&CaseRow, &CaseRow)> = base
        .run
        .cases
        .iter()
        .filter(|c| base.config.is_none_or(|n| c.config == n))
        .filter_map(|b| cand_cases.get(&key(base, b)).map(|&c| (b, c)))
        .filter(|(b, c)| !b.is_unsupported() && !c.is_unsupported())
        .collect();
    let same_run = base.run.dir == cand.run.dir;
    let mut graph_differs: Vec<(u64, u64, usize)> = Vec::new();
    let mut inputs = Vec::new();
    let mut pairs = Vec::new();
    for (b, c) in &matched {
        if b.is_ok() && c.is_ok() && b.graph_iters != c.graph_iters {
            let pair = (b.graph_iters, c.graph_iters);
            match graph_differs.iter_mut().find(|d| (d.0, d.1) == pair) {
                Some(d) => d.2 += 1,
                None => graph_differs.push((pair.0, pair.1, 1)),
            }
        }
        let p = pair(b, c, same_run);
        inputs.push(Input {
            evidence: p.evidence,
            flagged: p.flags.any(),
        });
        pairs.push(p);
    }
    let collectives = |side: &Side| -> Vec<String> {
        let mut all: Vec<String> = keyed(side).keys().map(|k| k.collective.clone()).collect();
        all.sort();
        all.dedup();
        all
    };
    let (base_colls, cand_colls) = (collectives(base), collectives(cand));
    if matched.is_empty() {
        bail!(
            "no case of {} ({}) matches one of {} ({}) (cases match on config, collective, ranks, bytes, datatype and op)",
            cand.label,
            cand_colls.join(", "),
            base.label,
            base_colls.join(", ")
        );
    }
    let looks = base.run.looks().max(cand.run.looks());
    let decision = change::decide(&inputs, &opts.design(looks));
    let rows = matched
        .iter()
        .zip(&decision.cases)
        .zip(pairs)
        .map(|(((b, c), case), p)| PairRow {
            config: match (base.config, cand.config) {
                (Some(a), Some(b)) if a != b => format!("{a} -> {b}"),
                (Some(a), _) => a.to_string(),
                _ => b.config.clone(),
            },
            collective: b.coll().to_string(),
            nranks: b.nranks,
            bytes: b.bytes,
            dtype: b.dtype.clone(),
            op: b.op.clone(),
            base_status: b.status.clone(),
            cand_status: c.status.clone(),
            base_time_us: p.times.0,
            cand_time_us: p.times.1,
            base_busbw_gbps: b.busbw_gbps,
            cand_busbw_gbps: c.busbw_gbps,
            case: *case,
            flags: p.flags,
            choice_change: choice_change(b, c),
        })
        .collect::<Vec<_>>();
    let only = |mine: &[String], other: &[String]| -> Vec<String> {
        mine.iter()
            .filter(|c| !other.contains(c))
            .cloned()
            .collect()
    };
    Ok(CompareReport {
        base: base.label.clone(),
        candidate: cand.label.clone(),
        same_run,
        graph_differs,
        only_in_base: keyed(base).len() - rows.len(),
        only_in_candidate: cand_cases.len() - rows.len(),
        rows,
        decision,
        collectives_only_in_base: only(&base_colls, &cand_colls),
        collectives_only_in_candidate: only(&cand_colls, &base_colls),
    })
}

/// One pair of one run decided alone, as a case of its own (a report's side
/// figure: what NVLS gained, the fastest config at a size): at 95 % over the run's
/// looks.
pub fn one_pair(run: &RunData, b: &CaseRow, c: &CaseRow, opts: CompareOptions) -> Case {
    let p = pair(b, c, true);
    let input = Input {
        evidence: p.evidence,
        flagged: p.flags.any(),
    };
    change::decide(&[input], &opts.design(run.looks())).cases[0]
}

/// NCCL's choice at each side (`Ring/LL128`), when both recorded one and they differ.
pub fn choice_change(b: &CaseRow, c: &CaseRow) -> Option<(String, String)> {
    // The host backend's store mode is its own choice per round, not NCCL's.
    if b.backend == "host" || c.backend == "host" {
        return None;
    }
    let (from, to) = (choice_of(b), choice_of(c));
    (!from.is_empty() && !to.is_empty() && from != to).then_some((from, to))
}

/// NCCL's algorithm and protocol of a case, `Ring/LL128`; empty where not recorded.
pub fn choice_of(r: &CaseRow) -> String {
    match (r.algo.as_str(), r.proto.as_str()) {
        ("", _) => String::new(),
        (a, "") => a.to_string(),
        (a, p) => format!("{a}/{p}"),
    }
}

#[cfg(test)]
mod tests;
