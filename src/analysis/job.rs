//! "What does this cost my job?": a sweep's cases weighed by the calls of a job
//! (`sweep --sizes-from`, kept in the manifest as `config::SizesFrom`). For each rank
//! count measured and a pair of configs, the job's communication time is the sum over
//! its (collective, size) of calls x the case's median time, per step where the job
//! file counts per step (a CSV) or over the calls a log recorded.
//!
//! The interval comes from the rounds, not from adding the cases' intervals: every
//! round of a sweep runs each config once, so a round has a job time per config (its
//! cases' round medians, weighed by the calls), and the change between the two
//! configs is the paired shift of those per-round job times (`stats::rounds`), the same
//! interval the per-case answers use. A case a config did not measure (failed, or a
//! size the sweep did not run) leaves its calls out, and the answer says how many.
//!
//! Sizes match as the sweep ran them: nccl-tests rounds each rank's part down to
//! whole 16-byte groups, so a job's size is found at the case of its collective and
//! rank count at or below it within 16 bytes per rank. A size the sweep did not
//! measure, between two it did, is interpolated: the latency-bandwidth line
//! (alpha + bytes / beta) through the two measured neighbours gives its time, round by
//! round, and the answer says how many sizes were. Outside the measured sizes nothing
//! is extrapolated: such a size is left out and counted.

use serde::Serialize;

use crate::config::SizesFrom;
use crate::export::reader::{CaseRow, RunData};
use crate::stats::rounds::{paired_shift_at, shift_at};

/// One of the job's (collective, size) under both configs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryCost {
    pub collective: String,
    pub bytes: u64,
    pub calls: u64,
    /// calls x the case's median time, us; `None` where the config has no ok case.
    pub base_us: Option<f64>,
    pub cand_us: Option<f64>,
    /// The sweep did not measure this size: its times are interpolated between the
    /// measured sizes around it.
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
    /// Over the entries both configs measured, us.
    pub base_us: f64,
    pub cand_us: f64,
    /// Entries left out (a config has no ok case of their size, nor one on each side
    /// of it to interpolate between).
    pub unmeasured: usize,
    /// Entries whose times are interpolated between measured sizes.
    pub interpolated: usize,
    /// `cand / base - 1` of the job's time, with its interval over the rounds
    /// (paired), and the rounds; `None` with fewer than 6 rounds on every case.
    /// The intervals of all rank counts hold together with 95 % (each at
    /// 1 - 0.05 / (rank counts x looks)).
    pub interval: Option<(f64, (f64, f64), usize)>,
}

impl JobCost {
    /// The relative change of the job's time (from the totals).
    pub fn change(&self) -> f64 {
        self.cand_us / self.base_us - 1.0
    }
}

/// The time of the job's `bytes` of `collective` on `nranks` under `config`: its median
/// and round medians, us.
#[derive(Debug, Clone, PartialEq)]
struct Timed {
    median: f64,
    rounds: Vec<f64>,
    interpolated: bool,
}

/// The ok case of `config` that ran the job's `bytes`, or the line through the ok
/// cases on each side of it.
fn timed(run: &RunData, config: &str, collective: &str, nranks: u32, bytes: u64) -> Option<Timed> {
    let slack = 16 * u64::from(nranks);
    let ok: Vec<&CaseRow> = run
        .cases
        .iter()
        .filter(|c| c.config == config && c.nranks == nranks && c.is_ok())
        .filter(|c| c.coll().name() == collective)
        .collect();
    let median = |c: &CaseRow| c.p50_us.or(c.time_us);
    if let Some(c) = ok
        .iter()
        .filter(|c| c.bytes <= bytes && bytes - c.bytes < slack.max(1))
        .max_by_key(|c| c.bytes)
    {
        return Some(Timed {
            median: median(c)?,
            rounds: c.round_medians(),
            interpolated: false,
        });
    }
    let below = ok
        .iter()
        .filter(|c| c.bytes < bytes)
        .max_by_key(|c| c.bytes)?;
    let above = ok
        .iter()
        .filter(|c| c.bytes > bytes)
        .min_by_key(|c| c.bytes)?;
    // alpha + bytes / beta through the two: linear in bytes between them.
    let w = (bytes - below.bytes) as f64 / (above.bytes - below.bytes) as f64;
    let line = |lo: f64, hi: f64| lo + w * (hi - lo);
    let (rb, ra) = (below.round_medians(), above.round_medians());
    Some(Timed {
        median: line(median(below)?, median(above)?),
        rounds: rb.iter().zip(&ra).map(|(b, a)| line(*b, *a)).collect(),
        interpolated: true,
    })
}

/// The job's cost under `cand` against `base`, two configs of one run, one per rank
/// count both measured (the job's calls on that many ranks, or of any count where the
/// file does not say).
pub fn costs(run: &RunData, job: &SizesFrom, base: &str, cand: &str) -> Vec<JobCost> {
    costs_between(Side { run, config: base }, Side { run, config: cand }, job)
}

/// One side of a job's comparison: a config of a run.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub run: &'a RunData,
    pub config: &'a str,
}

/// [`costs`] between two sides, configs of one run (their rounds paired) or of two
/// runs (their rounds independent: the interval is the unpaired shift, and it holds
/// the variation between process groups of each run, not between runs).
pub fn costs_between(base: Side, cand: Side, job: &SizesFrom) -> Vec<JobCost> {
    let mut counts: Vec<u32> = base
        .run
        .cases
        .iter()
        .filter(|c| c.config == base.config)
        .map(|c| c.nranks)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    // Each rank count's interval at 1 - 0.05 / (counts x looks): the job's answers
    // over all its rank counts, at every look of a sweep measured until settled,
    // hold together with 95 %.
    let looks = base.run.looks().max(cand.run.looks());
    let divisor = counts.len().max(1) * looks;
    counts
        .into_iter()
        .filter_map(|n| cost_at(base, cand, job, n, divisor))
        .collect()
}

fn cost_at(base: Side, cand: Side, job: &SizesFrom, n: u32, divisor: usize) -> Option<JobCost> {
    let mut entries = Vec::new();
    // Per matched entry: its calls and both sides' times, for the per-round job times.
    let mut matched: Vec<(u64, Timed, Timed)> = Vec::new();
    for call in job.calls.iter().filter(|c| c.nranks.is_none_or(|k| k == n)) {
        let name = call.collective.name();
        let b = timed(base.run, base.config, name, n, call.bytes);
        let c = timed(cand.run, cand.config, name, n, call.bytes);
        let time = |t: &Option<Timed>| t.as_ref().map(|t| t.median * call.calls as f64);
        entries.push(EntryCost {
            collective: name.to_string(),
            bytes: call.bytes,
            calls: call.calls,
            base_us: time(&b),
            cand_us: time(&c),
            interpolated: [&b, &c]
                .iter()
                .any(|t| t.as_ref().is_some_and(|t| t.interpolated)),
        });
        if let (Some(b), Some(c)) = (b, c) {
            matched.push((call.calls, b, c));
        }
    }
    if matched.is_empty() {
        return None;
    }
    let both = |e: &EntryCost| e.base_us.zip(e.cand_us);
    let base_us: f64 = entries.iter().filter_map(both).map(|t| t.0).sum();
    let cand_us: f64 = entries.iter().filter_map(both).map(|t| t.1).sum();
    let unmeasured = entries.iter().filter(|e| both(e).is_none()).count();
    let interpolated = entries
        .iter()
        .filter(|e| e.interpolated && both(e).is_some())
        .count();
    entries.sort_by(|a, b| {
        b.base_us
            .unwrap_or(0.0)
            .total_cmp(&a.base_us.unwrap_or(0.0))
    });
    let paired = base.run.dir == cand.run.dir;
    Some(JobCost {
        nranks: n,
        base: base.config.to_string(),
        cand: cand.config.to_string(),
        per: job.per.clone(),
        entries,
        base_us,
        cand_us,
        unmeasured,
        interpolated,
        interval: per_round_interval(&matched, paired, divisor),
    })
}

/// The interval of the job's per-round time: over the rounds every case of a side
/// has, each round's job time the calls-weighed sum of its round medians; paired
/// round by round within one run (over the rounds both sides ran; unpaired where too
/// few rounds reach the level paired), unpaired between two. At 1 - 0.05 /
/// `divisor`: the rank counts and looks it is one of, so that all hold together
/// with 95 %.
fn per_round_interval(
    matched: &[(u64, Timed, Timed)],
    paired: bool,
    divisor: usize,
) -> Option<(f64, (f64, f64), usize)> {
    let mut base = job_rounds(matched.iter().map(|m| (m.0, &m.1)))?;
    let mut cand = job_rounds(matched.iter().map(|m| (m.0, &m.2)))?;
    let alpha = crate::stats::rounds::ALPHA / divisor.max(1) as f64;
    if paired {
        let n = base.len().min(cand.len());
        base.truncate(n);
        cand.truncate(n);
    }
    // Paired where its rounds reach the level, else unpaired (as a family's member:
    // wider, never narrower than it should be).
    let found = if base == cand {
        return Some((0.0, (0.0, 0.0), base.len()));
    } else if paired {
        paired_shift_at(&base, &cand, alpha).or_else(|| shift_at(&base, &cand, alpha))?
    } else {
        shift_at(&base, &cand, alpha)?
    };
    Some((found.change, found.ci, base.len().min(cand.len())))
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
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::JobCall;
    use crate::ops::collective::Collective;

    fn case(config: &str, bytes: u64, round_us: &[f64]) -> CaseRow {
        CaseRow::with_rounds(config, bytes, round_us)
    }

    fn job(calls: &[(u64, u64)]) -> SizesFrom {
        SizesFrom {
            file: "job.csv".into(),
            sizes: Default::default(),
            calls: calls
                .iter()
                .map(|&(bytes, calls)| JobCall {
                    collective: Collective::AllReduce,
                    nranks: None,
                    bytes,
                    calls,
                })
                .collect(),
            per: "per step".into(),
        }
    }

    fn run(cases: Vec<CaseRow>) -> RunData {
        RunData {
            dir: PathBuf::from("r"),
            manifest: Default::default(),
            cases,
            distributions: Default::default(),
        }
    }

    const ROUNDS: [f64; 6] = [10.0, 10.4, 9.8, 10.2, 10.1, 9.9];

    fn scaled(by: f64) -> Vec<f64> {
        ROUNDS.iter().map(|r| r * by).collect()
    }

    /// One size with 100 calls per step against one with 1: the job's change is
    /// the dominant size's (+50 %), not the average of the sizes' (+25 %).
    #[test]
    fn the_size_a_job_calls_most_decides_its_cost() {
        let r = run(vec![
            case("default", 1 << 20, &scaled(1.0)),
            case("shm-off", 1 << 20, &scaled(1.5)),
            case("default", 64 << 20, &scaled(10.0)),
            case("shm-off", 64 << 20, &scaled(10.0)),
        ]);
        let costs = costs(
            &r,
            &job(&[(1 << 20, 100), (64 << 20, 1)]),
            "default",
            "shm-off",
        );
        assert_eq!(costs.len(), 1);
        let c = &costs[0];
        assert_eq!(c.entries[0].bytes, 1 << 20, "the largest share first");
        // 100 x 10.1 + 101 against 100 x 15.15 + 101 (medians of the rounds).
        assert!((c.base_us - 1111.0).abs() < 1e-6, "{c:?}");
        assert!((c.change() - 505.0 / 1111.0).abs() < 1e-9, "{c:?}");
        let (change, ci, rounds) = c.interval.unwrap();
        assert_eq!(rounds, 6);
        assert!(
            ci.0 > 0.40 && ci.1 < 0.5 && (ci.0..=ci.1).contains(&change),
            "{ci:?}"
        );
        // The same configs: no change, an interval around 0.
        let same = run(vec![
            case("default", 1 << 20, &scaled(1.0)),
            case("same", 1 << 20, &scaled(1.0)),
        ]);
        let c = &costs_of(&same, "same");
        assert_eq!(c.change(), 0.0);
        assert_eq!(c.interval.unwrap().1, (0.0, 0.0));
    }

    fn costs_of(r: &RunData, cand: &str) -> JobCost {
        costs(r, &job(&[(1 << 20, 10)]), "default", cand).remove(0)
    }

    /// A size between two measured ones takes the line through them, round by
    /// round, and says so; one past the largest measured is not extrapolated.
    #[test]
    fn a_size_between_measured_ones_is_interpolated_and_said() {
        let r = run(vec![
            case("default", 1 << 20, &scaled(1.0)),
            case("shm-off", 1 << 20, &scaled(2.0)),
            case("default", 4 << 20, &scaled(4.0)),
            case("shm-off", 4 << 20, &scaled(8.0)),
        ]);
        // 2 MiB: a third of the way from 1 MiB to 4 MiB.
        let c = &costs(
            &r,
            &job(&[(2 << 20, 10), (8 << 20, 1)]),
            "default",
            "shm-off",
        )[0];
        assert_eq!((c.interpolated, c.unmeasured), (1, 1), "{c:?}");
        let e = c.entries.iter().find(|e| e.bytes == 2 << 20).unwrap();
        assert!(e.interpolated);
        // 10 calls x (10.1 + (40.4 - 10.1) / 3) us: the line through the medians.
        let want = 10.0 * (10.1 + (40.4 - 10.1) / 3.0);
        assert!((e.base_us.unwrap() - want).abs() < 1e-9, "{e:?}");
        assert!((c.change() - 1.0).abs() < 1e-9, "{c:?}");
        // The rounds are interpolated alike: twice as slow in every round.
        let (change, ci, rounds) = c.interval.unwrap();
        assert_eq!(rounds, 6);
        assert!(
            (change - 1.0).abs() < 1e-9 && ci.0 > 0.99 && ci.1 < 1.01,
            "{ci:?}"
        );
    }

    /// A size nccl-tests rounded down (within 16 bytes a rank) is the job's; one the
    /// candidate did not measure is left out and counted.
    #[test]
    fn rounded_sizes_match_and_unmeasured_ones_are_counted() {
        let r = run(vec![
            case("default", 1000, &scaled(1.0)),
            case("shm-off", 1000, &scaled(2.0)),
            case("default", 4096, &scaled(1.0)),
        ]);
        let c = &costs(
            &r,
            &job(&[(1010, 3), (4096, 5), (1 << 30, 1)]),
            "default",
            "shm-off",
        )[0];
        assert_eq!((c.unmeasured, c.interpolated), (2, 0), "{c:?}");
        let e = c.entries.iter().find(|e| e.bytes == 1010).unwrap();
        assert!(e.base_us.is_some() && e.cand_us.is_some(), "{e:?}");
        assert!((c.change() - 1.0).abs() < 1e-9);
    }

    /// Measuring until settled, a config may stop one collective's rounds before
    /// another's (here after 6 rounds against 9): the job's time per round is over
    /// the rounds every case has, so it still has its interval.
    #[test]
    fn a_collective_that_stopped_early_leaves_the_job_its_common_rounds() {
        let nine: Vec<f64> = ROUNDS.iter().chain(&[10.0, 10.3, 9.9]).copied().collect();
        let mut gather = CaseRow::with_rounds("shm-off", 1 << 20, &scaled(2.0));
        gather.collective = "all_gather".into();
        let mut gather_base = CaseRow::with_rounds("default", 1 << 20, &ROUNDS);
        gather_base.collective = "all_gather".into();
        let r = run(vec![
            case("default", 1 << 20, &nine),
            case(
                "shm-off",
                1 << 20,
                &nine.iter().map(|t| t * 2.0).collect::<Vec<_>>(),
            ),
            gather_base,
            gather,
        ]);
        let mut job = job(&[(1 << 20, 10)]);
        job.calls.push(JobCall {
            collective: Collective::AllGather,
            nranks: None,
            bytes: 1 << 20,
            calls: 10,
        });
        let c = &costs(&r, &job, "default", "shm-off")[0];
        let (change, ci, rounds) = c.interval.expect("an interval over 6 rounds");
        assert_eq!(rounds, 6);
        assert!((change - 1.0).abs() < 1e-9 && ci.0 > 0.99, "{ci:?}");
    }
}
