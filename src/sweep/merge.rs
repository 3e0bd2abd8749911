//! Merging what the ranks report into one case: iteration i's time is the slowest
//! rank's i-th duration (the collective is done when the last rank is), and the
//! transports of all ranks become one cell.

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

/// Iteration i's time is the slowest rank's i-th duration. With CUDA graphs of
/// `per_launch` iterations, the iterations of one launch (as `launch_steps` cuts the
/// batch) are one sample of their summed time.
pub(crate) fn fold_max(
    batches: &[Vec<u64>],
    iters: u64,
    per_launch: u64,
    recorder: &mut LatencyRecorder,
) -> Result<(), Failure> {
    if let Some(bad) = batches.iter().find(|b| b.len() as u64 != iters) {
        return Err(Failure::Protocol(format!(
            "a rank returned {} durations for a batch of {iters}",
            bad.len()
        )));
    }
    let max = |i: usize| batches.iter().map(|b| b[i]).max().unwrap_or(0);
    let mut start = 0;
    for n in launch_steps(iters as usize, per_launch as usize) {
        let total = (start..start + n).map(max).sum();
        recorder.record_launch(total, n as u64);
        start += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_time_is_the_max_over_ranks() {
        let mut r = LatencyRecorder::new();
        fold_max(&[vec![10, 50, 30], vec![20, 40, 30]], 3, 0, &mut r).unwrap();
        let s = r.summary();
        assert_eq!(s.count, 3);
        assert!((s.mean_us - (20.0 + 50.0 + 30.0) / 3.0 / 1000.0).abs() < 1e-9);
        assert!(fold_max(&[vec![1, 2], vec![1]], 2, 0, &mut r).is_err());
    }

    #[test]
    fn graph_launches_are_one_sample_each() {
        let mut r = LatencyRecorder::new();
        // Launches of 2, 2 and 1 iterations; rank 1 is slower in the first launch.
        let ranks = [vec![10, 10, 40, 40, 7], vec![15, 15, 30, 30, 9]];
        fold_max(&ranks, 5, 2, &mut r).unwrap();
        assert_eq!((r.count(), r.samples()), (5, 3));
        assert!((r.mean_ns() - (15.0 + 15.0 + 40.0 + 40.0 + 9.0) / 5.0).abs() < 1e-9);
    }

    #[test]
    fn transports_merge_when_ranks_agree() {
        assert_eq!(merge_transports(&["SHM".into(), "SHM".into()]), "SHM");
        let mixed = ["SHM", "NET/Socket", "SHM", "SHM"].map(String::from);
        assert_eq!(merge_transports(&mixed), "SHM:75%;NET/Socket:25%");
        assert_eq!(merge_transports(&[]), "");
    }
}
