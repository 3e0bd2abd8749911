//! Merging what the ranks report into one case. Iteration i's time is the mean over
//! ranks of each rank's i-th duration, so the iterations sum to each rank's batch
//! total averaged over ranks: nccl-tests' default (`-a 1`) time. The maximum over
//! ranks per iteration would not: every rank's clock marks the end of an iteration a
//! little differently (events resolve about 0.5 us), and the sum of per-iteration
//! maxima gathers that jitter into a time longer than any rank measured, a few
//! percent at 10-30 us all-reduces. The transports of all ranks become one cell.

use super::failure::Failure;
use crate::stats::adaptive::launch_steps;
use crate::stats::LatencyRecorder;

/// Every rank's transports: one value when they agree, else each with its share of
/// the ranks (each rank reports its outgoing connection), as `SHM:50%;NET/Socket:50%`.
pub(crate) fn merge_transports(per_rank: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for t in per_rank {
        match counts.iter_mut().find(|(name, _)| *name == t.as_str()) {
            Some((_, n)) => *n += 1,
            None => counts.push((t, 1)),
        }
    }
    if counts.len() <= 1 {
        return counts
            .first()
            .map(|(t, _)| t.to_string())
            .unwrap_or_default();
    }
    counts
        .iter()
        .map(|(t, n)| {
            format!(
                "{t}:{}%",
                (100.0 * *n as f64 / per_rank.len() as f64).round()
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Folds one batch of every rank into `recorder`: each step (an iteration, or the
/// iterations of one CUDA graph launch or between two timing events, as
/// `launch_steps` cuts the batch with `per_step`) is one sample, its time the mean
/// over ranks of the ranks' times for that step. Returns each step's time per
/// iteration in the order the steps ran (for the drift rule).
pub(crate) fn fold_mean(
    batches: &[Vec<u64>],
    iters: u64,
    per_step: u64,
    recorder: &mut LatencyRecorder,
) -> Result<Vec<u64>, Failure> {
    if let Some(bad) = batches.iter().find(|b| b.len() as u64 != iters) {
        return Err(Failure::Protocol(format!(
            "a rank returned {} durations for a batch of {iters}",
            bad.len()
        )));
    }
    let ranks = batches.len().max(1) as u128;
    let mut start = 0;
    let mut per_iteration = Vec::new();
    for n in launch_steps(iters as usize, per_step as usize) {
        let sum: u128 = batches
            .iter()
            .flat_map(|b| &b[start..start + n])
            .map(|&d| u128::from(d))
            .sum();
        start += n;
        // Rounded to the nearest nanosecond.
        let mean = u64::try_from((sum + ranks / 2) / ranks).unwrap_or(u64::MAX);
        recorder.record_launch(mean, n as u64);
        per_iteration.push(mean / n.max(1) as u64);
    }
    Ok(per_iteration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_time_is_the_mean_over_ranks() {
        let mut r = LatencyRecorder::new();
        fold_mean(&[vec![10, 50, 30], vec![20, 40, 30]], 3, 0, &mut r).unwrap();
        let s = r.summary();
        assert_eq!(s.count, 3);
        assert!((s.mean_us - (15.0 + 45.0 + 30.0) / 3.0 / 1000.0).abs() < 1e-9);
        assert!(fold_mean(&[vec![1, 2], vec![1]], 2, 0, &mut r).is_err());
    }

    /// Two ranks that each took exactly 100 us for 10 iterations, their event
    /// boundaries jittered in opposite directions: the max per iteration adds the
    /// jitter up (105 us); the mean over ranks gives each rank's own total.
    #[test]
    fn boundary_jitter_does_not_inflate_the_mean() {
        let a: Vec<u64> = (0..10)
            .map(|i| if i % 2 == 0 { 11_000 } else { 9_000 })
            .collect();
        let b: Vec<u64> = (0..10)
            .map(|i| if i % 2 == 0 { 9_000 } else { 11_000 })
            .collect();
        assert_eq!(a.iter().sum::<u64>(), 100_000);
        assert_eq!(b.iter().sum::<u64>(), 100_000);
        let max_fold: u64 = (0..10).map(|i| a[i].max(b[i])).sum();
        assert_eq!(max_fold, 110_000, "the bias the mean must not have");
        let mut r = LatencyRecorder::new();
        fold_mean(&[a, b], 10, 0, &mut r).unwrap();
        assert_eq!(r.count(), 10);
        assert!((r.mean_ns() - 10_000.0).abs() < 1e-9, "{}", r.mean_ns());
        // Every iteration is 10 us (the histogram keeps 3 significant digits), not 11.
        let max = r.summary().max_us;
        assert!((max - 10.0).abs() < 0.01, "{max}");
    }

    #[test]
    fn ranks_with_different_totals_average_like_nccl_tests() {
        // Rank 0 took 90 us, rank 1 110 us over 4 iterations: nccl-tests' -a 1 time
        // is (90 + 110) / 2 / 4 = 25 us per iteration.
        let mut r = LatencyRecorder::new();
        fold_mean(
            &[
                vec![30_000, 20_000, 20_000, 20_000],
                vec![20_000, 30_000, 30_000, 30_000],
            ],
            4,
            0,
            &mut r,
        )
        .unwrap();
        assert!((r.mean_ns() - 25_000.0).abs() < 1e-9);
    }

    #[test]
    fn graph_launches_are_one_sample_each() {
        let mut r = LatencyRecorder::new();
        // Launches of 2, 2 and 1 iterations; rank 1 is slower in the first launch.
        let ranks = [vec![10, 10, 40, 40, 7], vec![15, 15, 30, 30, 9]];
        let per_iteration = fold_mean(&ranks, 5, 2, &mut r).unwrap();
        assert_eq!((r.count(), r.samples()), (5, 3));
        // Each launch's time per iteration, in order: (20 + 30) / 2 / 2, (80 + 60) / 2 / 2,
        // (7 + 9) / 2 (whole nanoseconds).
        assert_eq!(per_iteration, [12, 35, 8]);
        assert!((r.mean_ns() - (25.0 + 25.0 + 70.0 + 70.0 + 16.0) / 2.0 / 5.0).abs() < 1e-9);
    }

    #[test]
    fn transports_merge_when_ranks_agree() {
        assert_eq!(merge_transports(&["SHM".into(), "SHM".into()]), "SHM");
        let mixed = ["SHM", "NET/Socket", "SHM", "SHM"].map(String::from);
        assert_eq!(merge_transports(&mixed), "SHM:75%;NET/Socket:25%");
        assert_eq!(merge_transports(&[]), "");
    }
}
