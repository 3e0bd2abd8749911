//! Run against run (or config against config within a run): cases are matched by
//! (config, nranks, bytes, dtype, op), each pair gets the confidence interval of the
//! change of its median latency, and a verdict against the threshold. The interval is
//! over the rounds (process groups) of each case where both sides have several
//! (`stats::compare::compare_rounds`): it then includes the variation between process
//! groups. Cases of one round are compared with a bootstrap over their histograms,
//! which sees the variation between iterations only; cases without per-iteration
//! data (imports) on their means. The pairs compared over rounds with both sides
//! trusted form one family (`analysis::family`): each one's outcome is decided on its
//! interval at the family's level, so that the answer for all of them together holds
//! at a stated rate. A pair of one round or of means is shown, and decides nothing
//! (inconclusive). A case that was ok and now fails is a regression too: a CI gate
//! must not pass on it.

use std::collections::HashMap;

use anyhow::{bail, Result};
use serde::Serialize;

use super::family::{self, CallSide, Family, Member};
use crate::export::reader::{CaseRow, RunData};
use crate::model::SIMULATED_LABEL;
use crate::stats::compare::{
    compare_distributions, compare_means, compare_rounds, Comparison, Method, Verdict,
};

/// How a matched pair of cases turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Improved,
    Regressed,
    Unchanged,
    Inconclusive,
    /// Ok in the base, failed/timeout/wrong in the candidate.
    NewFailure,
    /// Failed in the base, ok in the candidate.
    Fixed,
    /// Not ok on either side: nothing to compare.
    FailedBoth,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Improved => "improved",
            Outcome::Regressed => "regressed",
            Outcome::Unchanged => "unchanged",
            Outcome::Inconclusive => "inconclusive",
            Outcome::NewFailure => "new-failure",
            Outcome::Fixed => "fixed",
            Outcome::FailedBoth => "failed-both",
        }
    }

    /// What fails a CI gate.
    pub fn is_regression(self) -> bool {
        matches!(self, Outcome::Regressed | Outcome::NewFailure)
    }
}

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
    /// The iteration time the comparison used, us: the median, or the mean on both
    /// sides when the pair was compared on means (a side without per-iteration data,
    /// such as an imported nccl-tests run, whose `time` is a mean).
    pub base_time_us: Option<f64>,
    pub cand_time_us: Option<f64>,
    pub base_busbw_gbps: Option<f64>,
    pub cand_busbw_gbps: Option<f64>,
    /// Present when both sides are ok.
    pub comparison: Option<Comparison>,
    pub outcome: Outcome,
    /// The sides whose `quality` says not to trust them (`candidate noisy`), which
    /// makes the pair inconclusive; empty when both are trusted.
    pub distrust: String,
    /// Between two runs: the change, though beyond the threshold, is smaller than
    /// two single rounds of one run differ (`stats::rounds::noise_floor`), so it may
    /// be variation between runs rather than a change: it does not fail a gate.
    pub within_noise: bool,
    /// The pair's interval as a member of the family (each at 1 - alpha / K, so that
    /// all hold at once), which its outcome rests on; None for a pair that is no
    /// member (a side of one round, means only, a side not trusted).
    pub family_ci: Option<(f64, f64)>,
    /// NCCL's algorithm and protocol differ between the sides (`Tree/LL` against
    /// `Ring/LL128`): (base's, candidate's). Empty where a side did not record one.
    pub choice_change: Option<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub base: String,
    pub candidate: String,
    pub threshold: f64,
    /// At least one pair was compared on means only (no per-iteration data).
    pub means_only: bool,
    /// Pairs compared over rounds, and the most rounds a side had.
    pub over_rounds: usize,
    pub most_rounds: usize,
    /// Pairs of ok cases with a single round on a side (compared over its
    /// iterations: the variation between process groups is not in their interval).
    pub single_round: usize,
    /// Both sides come from one run (configs compared), not from two runs.
    pub same_run: bool,
    /// Pairs that changed beyond the threshold by less than the runs' noise floor.
    pub within_noise: usize,
    /// Pairs launched differently (`--graph` differs), as (base, candidate, count).
    pub graph_differs: Vec<(u64, u64, usize)>,
    pub rows: Vec<PairRow>,
    pub only_in_base: usize,
    pub only_in_candidate: usize,
    /// Collectives one side measured and the other did not (said, not compared).
    pub collectives_only_in_base: Vec<String>,
    pub collectives_only_in_candidate: Vec<String>,
    /// The pairs compared over rounds with both sides trusted, decided together at
    /// a stated family-wise rate (`analysis::family`).
    pub family: Family,
}

impl PairRow {
    /// The config, with the collective after it where it is not all_reduce.
    pub fn label(&self) -> String {
        crate::ops::collective::labelled(&self.config, &self.collective)
    }
}

impl CompareReport {
    /// The pairs that fail a gate: regressed or newly failing, but for a change
    /// between two runs smaller than their noise floor (`within_noise`, marked `~`),
    /// which two runs cannot tell from run-to-run variation.
    pub fn regressions(&self) -> impl Iterator<Item = &PairRow> {
        self.rows
            .iter()
            .filter(|r| r.outcome.is_regression() && !r.within_noise)
    }

    /// The regressed pair with the largest slowdown (new failures first).
    pub fn worst(&self) -> Option<&PairRow> {
        self.regressions().max_by(|a, b| {
            let key = |r: &PairRow| match (&r.outcome, &r.comparison) {
                (Outcome::NewFailure, _) => f64::INFINITY,
                (_, Some(c)) => c.change,
                _ => f64::NEG_INFINITY,
            };
            key(a).total_cmp(&key(b))
        })
    }

    pub fn count(&self, outcome: Outcome) -> usize {
        self.rows.iter().filter(|r| r.outcome == outcome).count()
    }
}

/// Comparison settings.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub threshold: f64,
    pub resamples: usize,
    /// The family's equivalence margin: every member's interval within +-margin is
    /// "equivalent" (`analysis::family`); the threshold by default.
    pub margin: f64,
    /// The family's error rate: the chance that any member's interval misses
    /// (`family::FAMILY_ALPHA` by default; `compare --alpha`).
    pub family_alpha: f64,
}

/// Which cases of a run take part, under which name.
pub struct Side<'a> {
    pub run: &'a RunData,
    /// Only this config (and matched without its name), or every config.
    pub config: Option<&'a str>,
    pub label: String,
}

type Key = (String, String, u32, u64, String, String);

fn keyed<'a>(side: &Side<'a>) -> HashMap<Key, &'a CaseRow> {
    side.run
        .cases
        .iter()
        .filter(|c| side.config.is_none_or(|name| c.config == name))
        .map(|c| {
            let config = if side.config.is_some() {
                String::new()
            } else {
                c.config.clone()
            };
            let (dtype, op) = (c.dtype.clone(), c.op.clone());
            (
                (config, c.coll().to_string(), c.nranks, c.bytes, dtype, op),
                c,
            )
        })
        .collect()
}

/// Whether a run was made on the simulated-GPU test stand-in.
pub fn is_simulated(run: &RunData) -> bool {
    run.manifest.backend.used == SIMULATED_LABEL
        || run.cases.iter().any(|c| c.backend == SIMULATED_LABEL)
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
    let base_cases = keyed(base);
    let cand_cases = keyed(cand);
    // Keep the base run's order.
    let matched: Vec<(&CaseRow, &CaseRow, Key)> = base
        .run
        .cases
        .iter()
        .filter(|c| base.config.is_none_or(|n| c.config == n))
        .filter_map(|b| {
            let config = if base.config.is_some() {
                String::new()
            } else {
                b.config.clone()
            };
            let (dtype, op) = (b.dtype.clone(), b.op.clone());
            let key = (config, b.coll().to_string(), b.nranks, b.bytes, dtype, op);
            cand_cases.get(&key).map(|&c| (b, c, key))
        })
        // A forced choice NCCL refused on either side has nothing to compare.
        .filter(|(b, c, _)| !b.is_unsupported() && !c.is_unsupported())
        .collect();
    // The bootstraps on every core: each pair is seeded from its key, so the results
    // do not depend on which thread computed them.
    let compared = crate::parallel::map(&matched, |(b, c, key)| {
        compare_pair(base.run, b, cand.run, c, opts, seed(key))
    });
    let mut rows = Vec::new();
    let mut means_only = false;
    let (mut over_rounds, mut most_rounds, mut single_round) = (0, 0, 0);
    let same_run = base.run.dir == cand.run.dir;
    let mut graph_differs: Vec<(u64, u64, usize)> = Vec::new();
    // The family's members: round medians of each side, paired or not, and their row.
    let mut members: Vec<(Vec<f64>, Vec<f64>, bool, usize)> = Vec::new();
    for ((b, c, _), (comparison, outcome)) in matched.into_iter().zip(compared) {
        if comparison.is_some() && b.graph_iters != c.graph_iters {
            let pair = (b.graph_iters, c.graph_iters);
            match graph_differs.iter_mut().find(|d| (d.0, d.1) == pair) {
                Some(d) => d.2 += 1,
                None => graph_differs.push((pair.0, pair.1, 1)),
            }
        }
        let on_means = comparison
            .as_ref()
            .is_some_and(|c| c.method == Method::MeansOnly);
        let shown = |r: &CaseRow| {
            if on_means {
                r.time_us.or(r.p50_us)
            } else {
                r.p50_us.or(r.time_us)
            }
        };
        means_only |= on_means;
        match comparison.as_ref().map(|c| c.method) {
            Some(Method::Rounds { base, cand, .. }) => {
                over_rounds += 1;
                most_rounds = most_rounds.max(base).max(cand);
            }
            Some(Method::Bootstrap { .. }) => single_round += 1,
            _ => {}
        }
        let distrust = distrust(b, c, same_run && b.config != c.config);
        if let (Some(Method::Rounds { paired, .. }), true) =
            (comparison.as_ref().map(|c| c.method), distrust.is_empty())
        {
            let (base_rounds, cand_rounds) = side_by_side(b, c, paired);
            members.push((base_rounds, cand_rounds, paired, rows.len()));
        }
        // A pair that is no member of the family decides nothing: one round (its
        // interval sees one process group's iterations) or means alone.
        let outcome = match (outcome, comparison.as_ref().map(|c| c.method)) {
            (
                Outcome::Regressed | Outcome::Improved | Outcome::Unchanged,
                Some(Method::Bootstrap { .. } | Method::MeansOnly),
            ) => Outcome::Inconclusive,
            (o, _) => o,
        };
        rows.push(PairRow {
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
            base_time_us: shown(b),
            cand_time_us: shown(c),
            base_busbw_gbps: b.busbw_gbps,
            cand_busbw_gbps: c.busbw_gbps,
            comparison,
            outcome,
            distrust,
            within_noise: false,
            family_ci: None,
            choice_change: choice_change(b, c),
        });
    }
    let collectives = |side: &Side| -> Vec<String> {
        let mut all: Vec<String> = keyed(side).keys().map(|k| k.1.clone()).collect();
        all.sort();
        all.dedup();
        all
    };
    let (base_colls, cand_colls) = (collectives(base), collectives(cand));
    if rows.is_empty() {
        bail!(
            "no case of {} ({}) matches one of {} ({}) (cases match on config, collective, ranks, bytes, datatype and op)",
            cand.label,
            cand_colls.join(", "),
            base.label,
            base_colls.join(", ")
        );
    }
    let only = |mine: &[String], other: &[String]| -> Vec<String> {
        mine.iter()
            .filter(|c| !other.contains(c))
            .cloned()
            .collect()
    };
    let family = family::decide(
        &members
            .iter()
            .map(|(base, cand, paired, _)| Member {
                base,
                cand,
                paired: *paired,
            })
            .collect::<Vec<_>>(),
        opts.threshold,
        opts.margin,
        opts.family_alpha,
        base.run.looks().max(cand.run.looks()),
    );
    // Each member's outcome is the family's.
    for ((base_rounds, cand_rounds, _, at), call) in members.iter().zip(&family.calls) {
        let row = &mut rows[*at];
        row.family_ci = call.ci;
        row.outcome = match call.side {
            CallSide::Slower => Outcome::Regressed,
            CallSide::Faster => Outcome::Improved,
            CallSide::Within => Outcome::Unchanged,
            CallSide::NotSettled => Outcome::Inconclusive,
        };
        row.within_noise = !same_run
            && matches!(row.outcome, Outcome::Regressed | Outcome::Improved)
            && row.comparison.as_ref().is_some_and(|cmp| {
                crate::stats::rounds::noise_floor(base_rounds, cand_rounds)
                    .is_some_and(|floor| cmp.change.abs() < floor)
            });
    }
    let only_in_base = base_cases.len() - rows.len();
    let only_in_candidate = cand_cases.len() - rows.len();
    Ok(CompareReport {
        base: base.label.clone(),
        candidate: cand.label.clone(),
        threshold: opts.threshold,
        means_only,
        over_rounds,
        most_rounds,
        single_round,
        same_run,
        within_noise: rows.iter().filter(|r| r.within_noise).count(),
        graph_differs,
        rows,
        only_in_base,
        only_in_candidate,
        collectives_only_in_base: only(&base_colls, &cand_colls),
        collectives_only_in_candidate: only(&cand_colls, &base_colls),
        family,
    })
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

/// Which sides of an ok pair are not evidence, in words: flagged by the quality
/// rules, or, for two configs of one run (`same_run`: one run, two configs), re-measured alone: the
/// re-measurement that case kept ran its rounds later, not side by side with the
/// other config's, so what the machine did meanwhile is in the difference.
pub fn distrust(b: &CaseRow, c: &CaseRow, same_run: bool) -> String {
    [("base", b), ("candidate", c)]
        .iter()
        .filter(|(_, r)| r.is_ok())
        .filter_map(|(side, r)| {
            if !r.is_trusted() {
                Some(format!("{side} {}", r.quality))
            } else if same_run && r.quality == "remeasured" {
                Some(format!("{side} re-measured alone"))
            } else {
                None
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One pair of cases: the comparison of their latencies when both are ok (over their
/// rounds, else a bootstrap over their histograms, else their means when a run has
/// none), and the outcome. A
/// pair with a side that the quality rules left `noisy` or `outlier`, or between
/// configs of one run a side that kept its re-measurement, is inconclusive,
/// whatever its interval says: such a side is not evidence ([`distrust`]).
pub fn compare_pair(
    base_run: &RunData,
    b: &CaseRow,
    cand_run: &RunData,
    c: &CaseRow,
    opts: CompareOptions,
    seed: u64,
) -> (Option<Comparison>, Outcome) {
    match (b.is_ok(), c.is_ok()) {
        (true, true) => {
            // Two configs of one sweep ran each round side by side: paired by round
            // (a side that kept its re-measurement is not evidence, `distrust`).
            let same_run = base_run.dir == cand_run.dir && b.config != c.config;
            let (base_rounds, cand_rounds) = side_by_side(b, c, same_run);
            let cmp = compare_rounds(&base_rounds, &cand_rounds, opts.threshold, same_run).or_else(
                || match (base_run.distribution(b), cand_run.distribution(c)) {
                    (Some(hb), Some(hc)) => {
                        compare_distributions(hb, hc, opts.threshold, opts.resamples, seed)
                    }
                    _ => match (b.time_us, c.time_us) {
                        (Some(tb), Some(tc)) => compare_means(tb, tc, opts.threshold),
                        _ => None,
                    },
                },
            );
            let trusted = distrust(b, c, same_run).is_empty();
            let outcome = match cmp.as_ref().map(|c| c.verdict) {
                _ if !trusted => Outcome::Inconclusive,
                Some(Verdict::Improved) => Outcome::Improved,
                Some(Verdict::Regressed) => Outcome::Regressed,
                Some(Verdict::Unchanged) => Outcome::Unchanged,
                Some(Verdict::Inconclusive) | None => Outcome::Inconclusive,
            };
            (cmp, outcome)
        }
        (true, false) => (None, Outcome::NewFailure),
        (false, true) => (None, Outcome::Fixed),
        (false, false) => (None, Outcome::FailedBoth),
    }
}

/// The round medians of a pair: for two configs of one sweep, the rounds both ran
/// (a sweep measuring until settled stops a config at a look while the baseline may
/// go on: the pair's evidence is the rounds side by side up to that look).
fn side_by_side(b: &CaseRow, c: &CaseRow, paired: bool) -> (Vec<f64>, Vec<f64>) {
    let (mut base, mut cand) = (b.round_medians(), c.round_medians());
    if paired {
        let n = base.len().min(cand.len());
        base.truncate(n);
        cand.truncate(n);
    }
    (base, cand)
}

/// A seed per case, so that reruns give the same intervals.
pub fn seed(key: &impl std::fmt::Debug) -> u64 {
    let text = format!("{key:?}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;
