//! When to stop timing a size. With `-n` the count is fixed. Otherwise iterations run
//! in batches until the 95 % confidence interval of the median is within the target
//! precision, the per-size time budget is spent, or an iteration cap is reached, and
//! never before a minimum count. Batches grow geometrically and are sized from the
//! precision reached so far (the interval narrows as 1/sqrt(n)), so convergence costs
//! few round trips to the workers.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::LatencyRecorder;

/// Largest batch the workers are asked for; their duration buffers are this long.
pub const MAX_BATCH: u64 = 1 << 16;

/// Iteration policy of a sweep, as the measurement loop applies it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopRule {
    Fixed(u64),
    Adaptive {
        min_iters: u64,
        precision: f64,
        max_time: Duration,
        max_iters: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopReason {
    /// The fixed count (`-n`) was reached.
    Count,
    /// The median's confidence interval reached the target precision.
    Converged,
    /// The per-size time budget ran out first.
    Budget,
    /// The iteration cap was reached first.
    Cap,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::Count => "count",
            StopReason::Converged => "converged",
            StopReason::Budget => "budget",
            StopReason::Cap => "cap",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchDecision {
    Run(u64),
    Stop(StopReason),
}

impl StopRule {
    /// What to do after `recorded` took `elapsed` wall time in total, when each
    /// sample (timestamp) covers `per_sample` iterations (a CUDA graph launch of
    /// `--graph N`, or the event stride of a case). A fixed count (`-n`) counts
    /// iterations, as nccl-tests' `-n` does; its last step may be shorter. The
    /// adaptive rule counts samples, the unit its interval rests on: its minimum is
    /// `min_iters` samples, and its batches are whole samples.
    pub fn next(
        &self,
        recorded: &LatencyRecorder,
        elapsed: Duration,
        per_sample: u64,
    ) -> BatchDecision {
        let done = recorded.count();
        let per = per_sample.max(1);
        // The largest batch of whole samples.
        let whole = (MAX_BATCH - MAX_BATCH % per).max(per);
        match *self {
            StopRule::Fixed(n) if done >= n => BatchDecision::Stop(StopReason::Count),
            StopRule::Fixed(n) => BatchDecision::Run((n - done).min(MAX_BATCH)),
            StopRule::Adaptive {
                min_iters,
                precision,
                max_time,
                max_iters,
            } => {
                let samples = recorded.samples();
                if samples < min_iters {
                    return BatchDecision::Run(((min_iters - samples) * per).min(whole));
                }
                let relative = recorded.median_ci_relative();
                if relative <= precision {
                    return BatchDecision::Stop(StopReason::Converged);
                }
                if elapsed >= max_time {
                    return BatchDecision::Stop(StopReason::Budget);
                }
                if done >= max_iters {
                    return BatchDecision::Stop(StopReason::Cap);
                }
                // Samples needed for the target precision, as the interval shrinks with 1/sqrt(n).
                let ratio = if relative.is_finite() {
                    relative / precision
                } else {
                    2.0
                };
                let needed = (samples as f64 * ratio * ratio * 1.1).ceil() as u64;
                let by_precision = needed.saturating_sub(samples).max(samples / 2).max(1);
                let sample_s = recorded.mean_ns() * 1e-9 * per as f64;
                let by_time = if sample_s > 0.0 {
                    (((max_time - elapsed).as_secs_f64() / sample_s).ceil() as u64).max(1)
                } else {
                    MAX_BATCH
                };
                let batch = by_precision
                    .min(samples.max(1)) // at most double per round
                    .min(by_time)
                    .min((max_iters - done).div_ceil(per));
                BatchDecision::Run((batch.max(1) * per).min(whole))
            }
        }
    }
}

/// The launches of a batch of `iters` all-reduces: one each, or graphs of `graph`
/// all-reduces and a smaller last one for the remainder.
pub fn launch_steps(iters: usize, graph: usize) -> Vec<usize> {
    let per = graph.max(1);
    let mut steps = vec![per; iters / per];
    if iters % per != 0 {
        steps.push(iters % per);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(samples: impl IntoIterator<Item = u64>) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        for s in samples {
            r.record(s);
        }
        r
    }

    const ADAPTIVE: StopRule = StopRule::Adaptive {
        min_iters: 20,
        precision: 0.01,
        max_time: Duration::from_secs(1),
        max_iters: 1_000_000,
    };

    #[test]
    fn fixed_count_runs_exactly_n() {
        let rule = StopRule::Fixed(50);
        assert_eq!(
            rule.next(&recorder([]), Duration::ZERO, 1),
            BatchDecision::Run(50)
        );
        assert_eq!(
            rule.next(&recorder(vec![1000; 50]), Duration::ZERO, 1),
            BatchDecision::Stop(StopReason::Count)
        );
        let big = StopRule::Fixed(1 << 20);
        assert_eq!(
            big.next(&recorder([]), Duration::ZERO, 1),
            BatchDecision::Run(MAX_BATCH)
        );
    }

    #[test]
    fn adaptive_runs_the_minimum_first() {
        assert_eq!(
            ADAPTIVE.next(&recorder([]), Duration::ZERO, 1),
            BatchDecision::Run(20)
        );
        assert_eq!(
            ADAPTIVE.next(&recorder(vec![1000; 5]), Duration::ZERO, 1),
            BatchDecision::Run(15)
        );
    }

    #[test]
    fn a_case_is_never_converged_without_an_interval() {
        // Five identical samples over a minimum of 2: no 95 % interval exists yet.
        let rule = StopRule::Adaptive {
            min_iters: 2,
            precision: 0.01,
            max_time: Duration::from_secs(1),
            max_iters: 1_000_000,
        };
        let t = Duration::from_millis(1);
        assert!(matches!(
            rule.next(&recorder(vec![10_000; 5]), t, 1),
            BatchDecision::Run(_)
        ));
        assert_eq!(
            rule.next(&recorder(vec![10_000; 6]), t, 1),
            BatchDecision::Stop(StopReason::Converged)
        );
    }

    #[test]
    fn adaptive_stops_when_the_median_is_pinned_down() {
        let steady = recorder(vec![10_000; 30]);
        assert_eq!(
            ADAPTIVE.next(&steady, Duration::from_millis(1), 1),
            BatchDecision::Stop(StopReason::Converged)
        );
    }

    #[test]
    fn adaptive_keeps_going_on_noise_until_the_budget() {
        let noisy = recorder((0..20u64).map(|i| 10_000 + (i * 7919 % 20) * 1_000));
        match ADAPTIVE.next(&noisy, Duration::from_millis(1), 1) {
            BatchDecision::Run(n) => assert!((1..=20).contains(&n), "{n}"),
            other => panic!("expected another batch, got {other:?}"),
        }
        assert_eq!(
            ADAPTIVE.next(&noisy, Duration::from_secs(2), 1),
            BatchDecision::Stop(StopReason::Budget)
        );
    }

    #[test]
    fn batches_never_overrun_the_time_budget_by_much() {
        // 20 iterations of 40 ms: 0.2 s left allows about 5 more.
        let slow = recorder((0..20u64).map(|i| 40_000_000 + (i % 5) * 4_000_000));
        match ADAPTIVE.next(&slow, Duration::from_millis(800), 1) {
            BatchDecision::Run(n) => assert!(n <= 6, "{n}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn adaptive_counts_samples_not_iterations() {
        let t = Duration::ZERO;
        // min_iters = 20 samples: 20 iterations one by one, 160 in launches of 8.
        assert_eq!(ADAPTIVE.next(&recorder([]), t, 1), BatchDecision::Run(20));
        assert_eq!(ADAPTIVE.next(&recorder([]), t, 8), BatchDecision::Run(160));
        // Two launches of 20 (40 iterations, 2 samples) are not the minimum.
        let mut two = LatencyRecorder::new();
        two.record_launch(200_000, 20);
        two.record_launch(200_000, 20);
        assert_eq!(two.count(), 40);
        assert_eq!(ADAPTIVE.next(&two, t, 20), BatchDecision::Run(360));
        // Batches stay whole samples under the batch cap.
        assert_eq!(
            ADAPTIVE.next(&recorder([]), t, 4096),
            BatchDecision::Run(MAX_BATCH)
        );
        assert_eq!(
            ADAPTIVE.next(&recorder([]), t, 5000),
            BatchDecision::Run(65_000)
        );
        // A fixed count is never exceeded.
        let fixed = StopRule::Fixed(10);
        assert_eq!(fixed.next(&recorder([]), t, 8), BatchDecision::Run(10));
        assert_eq!(
            fixed.next(&recorder([1000; 10]), t, 8),
            BatchDecision::Stop(StopReason::Count)
        );
    }

    #[test]
    fn launches_cover_the_batch() {
        assert_eq!(launch_steps(5, 0), vec![1; 5]);
        assert_eq!(launch_steps(10, 4), vec![4, 4, 2]);
        assert_eq!(launch_steps(8, 4), vec![4, 4]);
        assert_eq!(launch_steps(3, 20), vec![3]);
        assert!(launch_steps(0, 4).is_empty());
    }
}
