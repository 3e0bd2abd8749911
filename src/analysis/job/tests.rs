//! `analysis::job` on constructed runs: the job's cost per rank count, and what is
//! interpolated and what is not.

use std::path::PathBuf;

use super::*;
use crate::config::JobCall;
use crate::ops::collective::Collective;
use crate::stats::change::Change;

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
    }
}

const ROUNDS: [f64; 6] = [10.0, 10.4, 9.8, 10.2, 10.1, 9.9];

fn scaled(by: f64) -> Vec<f64> {
    ROUNDS.iter().map(|r| r * by).collect()
}

fn costs_of(r: &RunData, job: &SizesFrom) -> JobCost {
    costs(r, job, "default", "shm-off", 0.02).remove(0)
}

/// One size with 100 calls per step against one with 1: the job's change is the
/// dominant size's, not the average of the sizes'.
#[test]
fn the_size_a_job_calls_most_decides_its_cost() {
    let r = run(vec![
        case("default", 1 << 20, &scaled(1.0)),
        case("shm-off", 1 << 20, &scaled(1.5)),
        case("default", 64 << 20, &scaled(10.0)),
        case("shm-off", 64 << 20, &scaled(10.0)),
    ]);
    let c = costs_of(&r, &job(&[(1 << 20, 100), (64 << 20, 1)]));
    assert_eq!(c.entries[0].bytes, 1 << 20, "the largest share first");
    // 100 x 1.5 t + 10 t against 100 t + 10 t, round by round: +45.5 %.
    assert!((c.change() - 50.0 / 110.0).abs() < 1e-9, "{c:?}");
    assert!((c.cand_us / c.base_us - 1.0 - c.change()).abs() < 1e-12);
    assert_eq!(c.case.change, Change::Slower);
    let (lo, hi) = c.case.interval.unwrap();
    assert!(lo > 0.40 && hi < 0.5, "{lo} {hi}");
    // The same configs: no change, within.
    let same = run(vec![
        case("default", 1 << 20, &scaled(1.0)),
        case("shm-off", 1 << 20, &scaled(1.0)),
    ]);
    let c = costs_of(&same, &job(&[(1 << 20, 10)]));
    assert_eq!((c.change(), c.case.change), (0.0, Change::Within));
}

/// A size the sweep never ran, between two it ran, takes the line through them,
/// round by round, and says so; one past the largest is left out.
#[test]
fn a_size_between_measured_ones_is_interpolated_and_said() {
    let r = run(vec![
        case("default", 1 << 20, &scaled(1.0)),
        case("shm-off", 1 << 20, &scaled(2.0)),
        case("default", 4 << 20, &scaled(4.0)),
        case("shm-off", 4 << 20, &scaled(8.0)),
    ]);
    let c = costs_of(&r, &job(&[(2 << 20, 10), (8 << 20, 1)]));
    assert_eq!((c.interpolated, c.unmeasured), (1, 1), "{c:?}");
    assert!(c
        .entries
        .iter()
        .any(|e| e.bytes == 2 << 20 && e.interpolated));
    // Twice as slow in every round.
    assert!((c.change() - 1.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c.case.change, Change::Slower);
}

/// Nothing is interpolated across a size that failed: the job fails with it, and
/// is never within.
#[test]
fn a_failed_size_fails_the_job_and_is_not_interpolated_across() {
    let mut failed = case("shm-off", 2 << 20, &scaled(1.0));
    failed.status = "failed".into();
    let r = run(vec![
        case("default", 1 << 20, &scaled(1.0)),
        case("shm-off", 1 << 20, &scaled(1.0)),
        case("default", 2 << 20, &scaled(2.0)),
        failed,
        case("default", 4 << 20, &scaled(4.0)),
        case("shm-off", 4 << 20, &scaled(4.0)),
    ]);
    let c = costs_of(&r, &job(&[(2 << 20, 10), (1 << 20, 1)]));
    assert_eq!((c.failed, c.interpolated), (1, 0), "{c:?}");
    assert_eq!(c.case.change, Change::Failed);
    // A flagged size: the job may be slower, never within.
    let mut noisy = case("shm-off", 1 << 20, &scaled(1.0));
    noisy.quality = "noisy".into();
    let r = run(vec![case("default", 1 << 20, &scaled(1.0)), noisy]);
    let c = costs_of(&r, &job(&[(1 << 20, 10)]));
    assert!(c.case.flagged);
    assert_eq!(c.case.change, Change::NotSettled);
}

/// A size nccl-tests rounded down (within 16 bytes a rank) is the job's; one the
/// candidate did not run is left out and counted.
#[test]
fn rounded_sizes_match_and_unmeasured_ones_are_counted() {
    let r = run(vec![
        case("default", 1000, &scaled(1.0)),
        case("shm-off", 1000, &scaled(2.0)),
        case("default", 4096, &scaled(1.0)),
    ]);
    let c = costs_of(&r, &job(&[(1010, 3), (4096, 5), (1 << 30, 1)]));
    assert_eq!((c.unmeasured, c.interpolated), (2, 0), "{c:?}");
    assert!((c.change() - 1.0).abs() < 1e-9);
}

/// Measuring until settled, a config may stop one collective's rounds before
/// another's: the job's time per round is over the rounds every case has.
#[test]
fn a_collective_that_stopped_early_leaves_the_job_its_common_rounds() {
    let nine: Vec<f64> = ROUNDS.iter().chain(&[10.0, 10.3, 9.9]).copied().collect();
    let mut gather = case("shm-off", 1 << 20, &scaled(2.0));
    gather.collective = "all_gather".into();
    let mut gather_base = case("default", 1 << 20, &ROUNDS);
    gather_base.collective = "all_gather".into();
    let doubled: Vec<f64> = nine.iter().map(|t| t * 2.0).collect();
    let r = run(vec![
        case("default", 1 << 20, &nine),
        case("shm-off", 1 << 20, &doubled),
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
    let c = costs_of(&r, &job);
    let e = c.case.estimate.unwrap();
    assert_eq!(e.cand_rounds, 6);
    assert!((c.change() - 1.0).abs() < 1e-9, "{c:?}");
}
