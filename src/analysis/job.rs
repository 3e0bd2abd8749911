//! "What does this cost my job?": a sweep's cases weighed by the calls of a job
//! (`sweep --sizes-from`, kept in the manifest as `config::SizesFrom`). For each rank
//! count and a pair of configs, the job's communication time is the sum over its
//! (collective, size) of calls x the case's time, per step where the job file counts
//! per step (a CSV) or over the calls a log recorded.
//!
//! The job is one case of the decision model per rank count (`stats::change`):
//! every round of a sweep runs each config once, so a round has a job time per
//! config (its cases' round medians, weighed by the calls), and the change is that of
//! the per-round job times, paired within one run, each run's own between two; the
//! rank counts are the decision's family.
//!
//! Sizes match as the sweep ran them: nccl-tests rounds each rank's part down to
//! whole 16-byte groups, so a job's size is found at the case of its collective and
//! rank count at or below it within 16 bytes per rank. A size the sweep never ran,
//! between two ok and unflagged sizes it did run, takes the latency-bandwidth line
//! (alpha + bytes / beta) through them, round by round. Nothing is interpolated
//! across a size that failed, was flagged or is missing, nor extrapolated beyond
//! the sizes run: a size that failed fails the job, a flagged one keeps the job
//! from being within, and a size with nothing to weigh is left out and counted.

use serde::Serialize;

use crate::config::SizesFrom;
use crate::export::reader::{CaseRow, RunData};
use crate::stats::change::{self, Case, Design, Evidence, Input, Level};

/// One of the job's (collective, size) under both configs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryCost {
    pub collective: String,
    pub bytes: u64,
    pub calls: u64,
    /// calls x the case's typical time, us; `None` where the config has no ok case.
    pub base_us: Option<f64>,
    pub cand_us: Option<f64>,
    /// The sweep did not run this size: its times are interpolated between the
    /// sizes around it.
    pub interpolated: bool,
}

/// The job's communication time under two configs at one rank count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobCost {
    pub nranks: u32,
    pub base: String,
    pub cand: String,
    /// What the calls count (`per step`, `in the log`).
    pub per: String,
    /// Largest share of the base config's time first.
    pub entries: Vec<EntryCost>,
    /// The job's typical time under each config, us (the geometric mean of its
    /// per-round times: their ratio is the change).
    pub base_us: f64,
    pub cand_us: f64,
    /// Entries left out: neither side has the size nor ok sizes around it.
    pub unmeasured: usize,
    /// Entries whose times are interpolated between measured sizes.
    pub interpolated: usize,
    /// Entries whose size failed under a config.
    pub failed: usize,
    /// The job's change as decided with the other rank counts.
    pub case: Case,
}

impl JobCost {
    /// The relative change of the job's time.
    pub fn change(&self) -> f64 {
        self.case
            .relative()
            .unwrap_or(self.cand_us / self.base_us - 1.0)
    }
}

/// The time of the job's `bytes` of `collective` on `nranks` under `config`: its
/// typical time and round medians, us.
#[derive(Debug, Clone, PartialEq)]
struct Timed {
    typical: f64,
    rounds: Vec<f64>,
    interpolated: bool,
    flagged: bool,
}

/// What a config has at one of the job's sizes.
enum Found {
    Timed(Timed),
    Failed,
    Nothing,
}

/// Whether a case of `case_bytes` is the one that ran a job's `bytes` on `nranks`:
/// at or below it within 16 bytes a rank, as nccl-tests rounds each rank's part down.
pub fn ran_as(case_bytes: u64, bytes: u64, nranks: u32) -> bool {
    case_bytes <= bytes && bytes - case_bytes < (16 * u64::from(nranks)).max(1)
}

/// The ok case of `config` that ran the job's `bytes`, or the line through the ok
/// cases on each side of a size the sweep never ran.
fn timed(run: &RunData, config: &str, collective: &str, nranks: u32, bytes: u64) -> Found {
    let mine: Vec<&CaseRow> = run
        .cases
        .iter()
        .filter(|c| c.config == config && c.nranks == nranks && c.coll().name() == collective)
        .filter(|c| !c.is_unsupported())
        .collect();
    let of = |c: &CaseRow| -> Option<Timed> {
        let rounds = c.round_medians();
        let typical = Level::of_rounds(&rounds)
            .map(|l| l.time())
            .or(c.p50_us)
            .or(c.time_us)?;
        Some(Timed {
            typical,
            rounds,
            interpolated: false,
            flagged: !c.is_trusted(),
        })
    };
    if let Some(c) = mine
        .iter()
        .filter(|c| ran_as(c.bytes, bytes, nranks))
        .max_by_key(|c| c.bytes)
    {
        return match c.is_ok().then(|| of(c)).flatten() {
            Some(t) => Found::Timed(t),
            None => Found::Failed,
        };
    }
    // The sizes around it, both ran ok and unflagged.
    let below = mine
        .iter()
        .filter(|c| c.bytes < bytes)
        .max_by_key(|c| c.bytes);
    let above = mine
        .iter()
        .filter(|c| c.bytes > bytes)
        .min_by_key(|c| c.bytes);
    let (Some(below), Some(above)) = (below, above) else {
        return Found::Nothing;
    };
    if !(below.is_trusted() && above.is_trusted()) {
        return Found::Nothing;
    }
    let (Some(lo), Some(hi)) = (of(below), of(above)) else {
        return Found::Nothing;
    };
    // alpha + bytes / beta through the two: linear in bytes between them.
    let w = (bytes - below.bytes) as f64 / (above.bytes - below.bytes) as f64;
    let line = |a: f64, b: f64| a + w * (b - a);
    Found::Timed(Timed {
        typical: line(lo.typical, hi.typical),
        rounds: lo
            .rounds
            .iter()
            .zip(&hi.rounds)
            .map(|(a, b)| line(*a, *b))
            .collect(),
        interpolated: true,
        flagged: false,
    })
}

/// The job's cost under `cand` against `base`, two configs of one run, one per rank
/// count both measured (the job's calls on that many ranks, or of any count where the
/// file does not say).
pub fn costs(
    run: &RunData,
    job: &SizesFrom,
    base: &str,
    cand: &str,
    threshold: f64,
) -> Vec<JobCost> {
    let (base, cand) = (Side { run, config: base }, Side { run, config: cand });
    costs_between(base, cand, job, threshold)
}

/// One side of a job's comparison: a config of a run.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub run: &'a RunData,
    pub config: &'a str,
}

/// [`costs`] between two sides, configs of one run (their rounds paired) or of two
/// runs (each run's own spread), decided together over the rank counts at
/// `threshold`.
pub fn costs_between(base: Side, cand: Side, job: &SizesFrom, threshold: f64) -> Vec<JobCost> {
    let mut counts: Vec<u32> = base
        .run
        .cases
        .iter()
        .filter(|c| c.config == base.config)
        .map(|c| c.nranks)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let paired = base.run.dir == cand.run.dir;
    let mut found: Vec<(JobCost, Input)> = counts
        .into_iter()
        .filter_map(|n| cost_at(base, cand, job, n, paired))
        .collect();
    let looks = base.run.looks().max(cand.run.looks());
    let inputs: Vec<Input> = found.iter().map(|f| f.1).collect();
    let decision = change::decide(&inputs, &Design::new(threshold, looks));
    for ((cost, _), case) in found.iter_mut().zip(decision.cases) {
        cost.case = case;
    }
    found.into_iter().map(|f| f.0).collect()
}

fn cost_at(
    base: Side,
    cand: Side,
    job: &SizesFrom,
    n: u32,
    paired: bool,
) -> Option<(JobCost, Input)> {
    let mut entries = Vec::new();
    // Per entry both sides measured: its calls and both sides' times.
    let mut matched: Vec<(u64, Timed, Timed)> = Vec::new();
    let mut failed = 0;
    for call in job.calls.iter().filter(|c| c.nranks.is_none_or(|k| k == n)) {
        let name = call.collective.name();
        let b = timed(base.run, base.config, name, n, call.bytes);
        let c = timed(cand.run, cand.config, name, n, call.bytes);
        let time = |t: &Found| match t {
            Found::Timed(t) => Some(t.typical * call.calls as f64),
            _ => None,
        };
        let interpolated = [&b, &c]
            .iter()
            .any(|t| matches!(t, Found::Timed(t) if t.interpolated));
        entries.push(EntryCost {
            collective: name.to_string(),
            bytes: call.bytes,
            calls: call.calls,
            base_us: time(&b),
            cand_us: time(&c),
            interpolated,
        });
        match (b, c) {
            (Found::Timed(b), Found::Timed(c)) => matched.push((call.calls, b, c)),
            (Found::Failed, _) | (_, Found::Failed) => failed += 1,
            _ => {}
        }
    }
    if matched.is_empty() && failed == 0 {
        return None;
    }
    let both = |e: &EntryCost| e.base_us.zip(e.cand_us);
    let unmeasured = entries.iter().filter(|e| both(e).is_none()).count() - failed;
    let interpolated = entries
        .iter()
        .filter(|e| e.interpolated && both(e).is_some())
        .count();
    entries.sort_by(|a, b| {
        b.base_us
            .unwrap_or(0.0)
            .total_cmp(&a.base_us.unwrap_or(0.0))
    });
    let flagged = matched.iter().any(|(_, b, c)| b.flagged || c.flagged);
    let total =
        |pick: &dyn Fn(&(u64, Timed, Timed)) -> f64| -> f64 { matched.iter().map(pick).sum() };
    let (mut base_us, mut cand_us) = (
        total(&|m| m.0 as f64 * m.1.typical),
        total(&|m| m.0 as f64 * m.2.typical),
    );
    let base_rounds = job_rounds(matched.iter().map(|m| (m.0, &m.1)));
    let cand_rounds = job_rounds(matched.iter().map(|m| (m.0, &m.2)));
    let rounds = base_rounds.as_deref().zip(cand_rounds.as_deref());
    let estimate = match rounds.and_then(|(b, c)| change::of_rounds(b, c, paired)) {
        Some((e, b, c)) => {
            (base_us, cand_us) = (b, c);
            Some(e)
        }
        None => change::point(base_us, cand_us),
    };
    let evidence = match estimate {
        _ if failed > 0 => Evidence::Failed,
        Some(e) => Evidence::Measured(e),
        None => Evidence::Missing,
    };
    let input = Input { evidence, flagged };
    let cost = JobCost {
        nranks: n,
        base: base.config.to_string(),
        cand: cand.config.to_string(),
        per: job.per.clone(),
        entries,
        base_us,
        cand_us,
        unmeasured,
        interpolated,
        failed,
        case: change::decide(&[input], &Design::new(0.0, 1)).cases[0],
    };
    Some((cost, input))
}

/// Each round's job time: the calls-weighed sum of the cases' round medians, over
/// the rounds they all have.
fn job_rounds<'a>(cases: impl Iterator<Item = (u64, &'a Timed)>) -> Option<Vec<f64>> {
    weighted_rounds(cases.map(|(calls, t)| (calls, t.rounds.as_slice())))
}

/// The calls-weighed sum of `(calls, round medians)` round by round, over the rounds
/// every case has (a sweep measuring until settled may stop one collective of a
/// config before another: their first rounds are the same rounds of the sweep);
/// `None` where some case has none.
pub fn weighted_rounds<'a>(cases: impl Iterator<Item = (u64, &'a [f64])>) -> Option<Vec<f64>> {
    let per_case: Vec<(u64, &[f64])> = cases.collect();
    let k = per_case.iter().map(|(_, r)| r.len()).min()?;
    if k == 0 {
        return None;
    }
    Some(
        (0..k)
            .map(|i| per_case.iter().map(|(calls, r)| *calls as f64 * r[i]).sum())
            .collect(),
    )
}

#[cfg(test)]
mod tests;
