//! Latency of one case: every timed iteration (the mean over ranks, in ns) goes
//! into an HdrHistogram with 3 significant digits, plus exact running sums for the
//! mean and standard deviation. The median is interpolated within the timer's grain
//! ([`grouped_median_ns`]). Nothing is kept per iteration, so memory is constant
//! however many iterations a case runs.
//!
//! With CUDA graphs (`--graph N`) the N iterations of one launch are timed together:
//! the launch is one sample (its time per iteration) in the histogram, and so in the
//! median's confidence interval and in `compare`'s bootstrap, since N copies of one
//! measurement are not N independent ones; the mean and the count are over
//! iterations.

use hdrhistogram::Histogram;

/// Significant digits of every histogram (0.1 % resolution).
pub const SIGFIG: u8 = 3;

/// Accumulates iteration times of one case.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    sum_ns: u128,
    sum_sq_ns: f64,
    iterations: u64,
}

/// Summary of a case's iteration times, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencySummary {
    pub count: u64,
    /// Independent samples (timestamps) behind the figures: iterations, graph
    /// launches or event strides.
    pub samples: u64,
    pub mean_us: f64,
    pub stddev_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// 95 % confidence interval of the median (distribution-free, from order statistics).
    pub median_ci_us: (f64, f64),
}

/// Samples a percentile p needs beyond it to be estimated: 10 (p90 from 100 samples,
/// p99 from 1,000); with fewer its cell stays empty.
pub const TAIL_BEYOND: f64 = 10.0;
/// Samples that support p99 (`--tails` asks the adaptive rule for them).
pub const TAIL_SAMPLES_P99: u64 = 1000;
/// Where a sweep's missing tails come from.
pub const SWEEP_REMEDY: &str = "--tails takes them";

impl LatencySummary {
    /// The `quantile` (0.9, 0.99) where the samples support it: at least
    /// `TAIL_BEYOND` of them beyond it.
    pub fn tail(&self, quantile: f64, value: f64) -> Option<f64> {
        (self.samples as f64 * (1.0 - quantile) >= TAIL_BEYOND - 1e-9).then_some(value)
    }

    /// Why p90 or p99 is left out, if one is; `remedy` says where more is found.
    pub fn tail_note(&self, remedy: &str) -> Option<String> {
        let missing: Vec<&str> = [(0.9, "p90"), (0.99, "p99")]
            .iter()
            .filter(|(q, _)| self.tail(*q, 0.0).is_none())
            .map(|(_, name)| *name)
            .collect();
        (!missing.is_empty() && self.count > 0).then(|| {
            format!(
                "{} left empty: {} samples, a percentile needs 10 beyond it (p90 from 100, p99 from 1,000; {remedy})",
                missing.join(" and "),
                self.samples
            )
        })
    }

    /// Half-width of the median's confidence interval relative to the median.
    pub fn median_ci_relative(&self) -> f64 {
        relative_half_width(self.p50_us, self.median_ci_us)
    }
}

fn relative_half_width(median: f64, (lo, hi): (f64, f64)) -> f64 {
    if median <= 0.0 {
        return f64::INFINITY;
    }
    (median - lo).max(hi - median) / median
}

/// Samples up to which the median's interval takes exact binomial ranks.
const EXACT_RANKS: u64 = 1000;

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> LatencyRecorder {
        LatencyRecorder {
            // `new` auto-resizes, so any duration fits; SIGFIG is in range.
            histogram: Histogram::new(SIGFIG)
                .unwrap_or_else(|_| unreachable!("3 significant digits is valid")),
            sum_ns: 0,
            sum_sq_ns: 0.0,
            iterations: 0,
        }
    }

    /// One iteration's time.
    pub fn record(&mut self, ns: u64) {
        self.record_launch(ns, 1);
    }

    /// A launch of `iterations` iterations (a CUDA graph) that took `total_ns`.
    pub fn record_launch(&mut self, total_ns: u64, iterations: u64) {
        let n = iterations.max(1);
        let per_iteration = (total_ns as f64 / n as f64).round();
        // An auto-resizing histogram accepts every u64.
        let _ = self.histogram.record(per_iteration as u64);
        self.sum_ns += total_ns as u128;
        self.sum_sq_ns += per_iteration * per_iteration * n as f64;
        self.iterations += n;
    }

    /// Adds every sample of `other` (another round of the same case): the pooled
    /// histogram, and the sums behind the mean and standard deviation.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        // An auto-resizing histogram takes every value of another.
        let _ = self.histogram.add(&other.histogram);
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
        self.iterations += other.iterations;
    }

    /// Iterations recorded.
    pub fn count(&self) -> u64 {
        self.iterations
    }

    /// Independent samples in the histogram: iterations, or launches with graphs.
    pub fn samples(&self) -> u64 {
        self.histogram.len()
    }

    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    pub fn mean_ns(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.sum_ns as f64 / n as f64,
        }
    }

    /// 95 % confidence interval of the median in ns, distribution-free: the order
    /// statistics of exact binomial ranks up to `EXACT_RANKS` samples
    /// (`rounds::median_rank`), beyond that at n/2 -+ 1.96 sqrt(n)/2. Below 6 samples no
    /// pair of order statistics covers 95 %: the interval is unbounded, and the
    /// adaptive rule never calls such a case converged. Each end reaches half a grain
    /// further ([`LatencyRecorder::median_ns`]): the order statistics of samples
    /// read on a lattice are the true ones to within half a step, so a case whose
    /// samples share two values is not called precise beyond its timer.
    pub fn median_ci_ns(&self) -> (f64, f64) {
        let (lo, hi) = self.median_ranks_ns();
        // A sample read on the lattice lies within half a grain of its true time.
        let half = self.grain_ns().map_or(0.0, |g| g / 2.0);
        ((lo - half).max(0.0), hi + half)
    }

    /// [`LatencyRecorder::median_ci_ns`] before the grain: the order statistics.
    fn median_ranks_ns(&self) -> (f64, f64) {
        let n = self.samples();
        if n < super::rounds::MIN_ROUNDS as u64 {
            // No pair of order statistics covers the median with 95 % below 6.
            return (0.0, f64::INFINITY);
        }
        if n <= EXACT_RANKS {
            if let Some(k) = super::rounds::median_rank(n as usize) {
                return (
                    self.value_at_rank(k as u64) as f64,
                    self.value_at_rank(n + 1 - k as u64) as f64,
                );
            }
        }
        let nf = n as f64;
        let half = 1.96 * nf.sqrt() / 2.0;
        let lo_rank = ((nf / 2.0 - half).floor()).max(1.0);
        let hi_rank = ((nf / 2.0 + half).ceil()).min(nf);
        (
            self.value_at_rank(lo_rank as u64) as f64,
            self.value_at_rank(hi_rank as u64) as f64,
        )
    }

    /// The value of the `rank`-th smallest sample (1-based), within histogram precision.
    fn value_at_rank(&self, rank: u64) -> u64 {
        let mut seen = 0;
        for v in self.histogram.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return self.histogram.highest_equivalent(v.value_iterated_to());
            }
        }
        self.histogram.max()
    }

    /// Share of the samples below `lo_ns` or above `hi_ns` (0 without samples).
    pub fn share_outside(&self, lo_ns: u64, hi_ns: u64) -> f64 {
        let total = self.samples();
        if total == 0 {
            return 0.0;
        }
        let outside: u64 = self
            .histogram
            .iter_recorded()
            .filter(|v| {
                let value = v.value_iterated_to();
                self.histogram.highest_equivalent(value) < lo_ns
                    || self.histogram.lowest_equivalent(value) > hi_ns
            })
            .map(|v| v.count_at_value())
            .sum();
        outside as f64 / total as f64
    }

    /// Relative half-width of the median's confidence interval.
    pub fn median_ci_relative(&self) -> f64 {
        relative_half_width(self.median_ns(), self.median_ci_ns())
    }

    /// The median in ns, interpolated within the timer's grain ([`grouped_median_ns`]).
    pub fn median_ns(&self) -> f64 {
        grouped_median_ns(&self.histogram)
    }

    fn grain_ns(&self) -> Option<f64> {
        grain_ns(&self.histogram)
    }

    pub fn summary(&self) -> LatencySummary {
        let n = self.count();
        if n == 0 {
            return LatencySummary::default();
        }
        let us = |ns: f64| ns / 1e3;
        let q = |quantile: f64| us(self.histogram.value_at_quantile(quantile) as f64);
        let mean = self.mean_ns();
        let variance = if n > 1 {
            ((self.sum_sq_ns - n as f64 * mean * mean) / (n as f64 - 1.0)).max(0.0)
        } else {
            0.0
        };
        let (lo, hi) = self.median_ci_ns();
        LatencySummary {
            samples: self.samples(),
            count: n,
            mean_us: us(mean),
            stddev_us: us(variance.sqrt()),
            min_us: us(self.histogram.min() as f64),
            p50_us: us(self.median_ns()),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: us(self.histogram.max() as f64),
            median_ci_us: (us(lo), us(hi)),
        }
    }
}

/// The median of a histogram's samples in ns, interpolated within the timer's
/// grain (the grouped median). Timed samples sit on a lattice: CUDA events
/// resolve 0.5 us, so a sample of k operations is a multiple of 0.5/k us, and the
/// histogram keeps 3 significant digits. Where the grain is coarse next to the spread, most samples
/// share a few values and the plain median is one of them: two process groups
/// 0.5 % apart can read the same value or values a grain apart, and the rounds'
/// medians move in steps of the grain. The samples at the median's value are
/// taken as spread evenly over the grain around it, and the median is where half
/// the samples lie below: value - grain/2 + grain (n/2 - below) / at. The grain is
/// the smallest gap between two values recorded (the lattice's step where its
/// neighbours were seen, one histogram bucket where the samples spread freely),
/// so the median moves by at most half of it. Fechner's grouped median, as
/// Python's `statistics.median_grouped`.
pub fn grouped_median_ns(histogram: &Histogram<u64>) -> f64 {
    let grain = grain_ns(histogram);
    let half = histogram.len() as f64 / 2.0;
    let mut below = 0u64;
    for v in histogram.iter_recorded() {
        let at = v.count_at_value();
        if (below + at) as f64 >= half {
            let value = histogram.highest_equivalent(v.value_iterated_to()) as f64;
            return match grain {
                Some(g) => value - g / 2.0 + g * (half - below as f64) / at as f64,
                None => value,
            };
        }
        below += at;
    }
    0.0
}

/// The smallest gap between two values recorded, in ns: the timer's grain where the
/// samples sit on a lattice ([`grouped_median_ns`]). None where they share one value.
fn grain_ns(histogram: &Histogram<u64>) -> Option<f64> {
    let values: Vec<u64> = histogram
        .iter_recorded()
        .map(|v| histogram.highest_equivalent(v.value_iterated_to()))
        .collect();
    values
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64)
        .reduce(f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut r = LatencyRecorder::new();
        for ns in 1..=1000u64 {
            r.record(ns * 1000); // 1 us .. 1000 us
        }
        let s = r.summary();
        assert_eq!(s.count, 1000);
        assert!((s.mean_us - 500.5).abs() < 1e-9);
        // Histogram values are exact to 3 significant digits.
        assert!((s.p50_us - 500.0).abs() <= 0.5, "{}", s.p50_us);
        assert!((s.p90_us - 900.0).abs() <= 1.0, "{}", s.p90_us);
        assert!((s.p99_us - 990.0).abs() <= 1.0, "{}", s.p99_us);
        assert!((s.max_us - 1000.0).abs() <= 1.0, "{}", s.max_us);
        assert_eq!(s.min_us, 1.0);
        // Sample standard deviation of 1..=1000 (in us) is 288.8194.
        assert!((s.stddev_us - 288.8194).abs() < 0.01, "{}", s.stddev_us);
    }

    #[test]
    fn median_ci_narrows_with_more_samples() {
        let mut small = LatencyRecorder::new();
        let mut large = LatencyRecorder::new();
        for i in 0..100u64 {
            small.record(10_000 + (i * 37 % 100) * 10);
        }
        for i in 0..10_000u64 {
            large.record(10_000 + (i * 37 % 100) * 10);
        }
        let (lo, hi) = small.median_ci_ns();
        let median = small.histogram().value_at_quantile(0.5) as f64;
        assert!(lo <= median && median <= hi);
        assert!(large.median_ci_relative() < small.median_ci_relative());
        assert!(large.median_ci_relative() < 0.01);
    }

    #[test]
    fn past_the_exact_ranks_the_median_interval_is_the_normal_ranks_at_95_percent() {
        // 10,000 distinct values 1..=10000 us: the ranks n/2 -+ 1.96 sqrt(n)/2 are
        // 4902 and 5098, so the interval is those values (3 significant digits).
        let mut r = LatencyRecorder::new();
        for i in 1..=10_000u64 {
            r.record(i * 1000);
        }
        let (lo, hi) = r.median_ci_ns();
        assert!((lo / 1000.0 - 4902.0).abs() <= 5.0, "{lo}");
        assert!((hi / 1000.0 - 5098.0).abs() <= 5.0, "{hi}");
    }

    #[test]
    fn constant_samples_have_a_zero_width_interval() {
        let mut r = LatencyRecorder::new();
        for _ in 0..50 {
            r.record(2000);
        }
        assert!(r.median_ci_relative() < 1e-3);
        assert_eq!(r.summary().stddev_us, 0.0);
    }

    #[test]
    fn a_graph_launch_is_one_sample_of_many_iterations() {
        let mut r = LatencyRecorder::new();
        r.record_launch(10_000, 4); // 2.5 us per iteration
        assert!(
            r.median_ci_relative().is_infinite(),
            "one launch is one sample"
        );
        r.record_launch(20_000, 4);
        r.record_launch(3_000, 1);
        let s = r.summary();
        assert_eq!((s.count, r.samples()), (9, 3));
        assert!((s.mean_us - 33.0 / 9.0).abs() < 1e-9, "{}", s.mean_us);
        assert_eq!(s.min_us, 2.5);
        assert!((s.max_us - 5.0).abs() <= 0.005, "{}", s.max_us);
        // Ten launches of ten iterations are ten samples: recorded as 100 separate
        // iterations, the same times would claim a far narrower interval.
        let (mut launches, mut each) = (LatencyRecorder::new(), LatencyRecorder::new());
        for us in 1..=10u64 {
            launches.record_launch(us * 10_000, 10);
            (0..10).for_each(|_| each.record(us * 1000));
        }
        assert_eq!(launches.median_ranks_ns(), (2000.0, 9007.0));
        assert_eq!(each.median_ranks_ns(), (4001.0, 7003.0));
    }

    #[test]
    fn the_share_outside_a_band_counts_samples_on_both_sides() {
        let mut r = LatencyRecorder::new();
        assert_eq!(r.share_outside(1, 2), 0.0);
        // 10 fast, 70 in the band, 20 slow.
        (0..10).for_each(|_| r.record(1_000));
        (0..70).for_each(|_| r.record(10_000));
        (0..20).for_each(|_| r.record(100_000));
        assert!((r.share_outside(5_000, 20_000) - 0.30).abs() < 1e-12);
        assert!(
            (r.share_outside(1_000, 100_000)).abs() < 1e-12,
            "the ends are inside"
        );
        // 10 us is recorded as 10.00-10.007 us (3 significant digits): below 10.1 us.
        assert!((r.share_outside(10_100, 200_000) - 0.80).abs() < 1e-12);
    }

    #[test]
    fn tails_only_where_ten_samples_lie_beyond_them() {
        let with = |n: u64| {
            let mut r = LatencyRecorder::new();
            (0..n).for_each(|i| r.record(1000 + i));
            r.summary()
        };
        let s = with(20);
        assert_eq!(
            (s.tail(0.9, s.p90_us), s.tail(0.99, s.p99_us)),
            (None, None)
        );
        assert_eq!(
            s.tail_note(SWEEP_REMEDY).as_deref(),
            Some("p90 and p99 left empty: 20 samples, a percentile needs 10 beyond it (p90 from 100, p99 from 1,000; --tails takes them)")
        );
        let s = with(100);
        assert_eq!(s.tail(0.9, s.p90_us), Some(s.p90_us));
        assert_eq!(s.tail(0.99, s.p99_us), None);
        assert!(s
            .tail_note(SWEEP_REMEDY)
            .unwrap()
            .starts_with("p99 left empty: 100 samples"));
        let s = with(1000);
        assert!(s.tail(0.99, s.p99_us).is_some() && s.tail_note(SWEEP_REMEDY).is_none());
        // Ten graph launches of 100 iterations are ten samples, not 1,000.
        let mut r = LatencyRecorder::new();
        (0..10).for_each(|_| r.record_launch(100_000, 100));
        assert_eq!(r.summary().tail(0.9, 1.0), None);
    }

    #[test]
    fn too_few_samples_never_look_precise() {
        let mut r = LatencyRecorder::new();
        assert!(r.median_ci_relative().is_infinite());
        r.record(5);
        assert!(r.median_ci_relative().is_infinite());
        // Below 6 samples no pair of order statistics covers the median with 95 %
        // (the extremes of 5 miss it with 2 x 1/32 = 6.25 %): no interval, however
        // alike the samples.
        for _ in 0..4 {
            r.record(5);
        }
        assert_eq!(r.samples(), 5);
        assert_eq!(r.median_ci_ns(), (0.0, f64::INFINITY));
        // From 6 the extremes do (2 x 1/64 = 3.1 %), from 10 the 2nd lowest and
        // highest (2 x 11/1024 = 2.1 %): exact binomial ranks.
        let mut six = LatencyRecorder::new();
        (1..=6).for_each(|us| six.record(us * 1000));
        assert_eq!(six.median_ranks_ns(), (1000.0, 6003.0));
        let mut ten = LatencyRecorder::new();
        (1..=10).for_each(|us| ten.record(us * 100));
        assert_eq!(ten.median_ranks_ns(), (200.0, 900.0));
        // The interval reaches half the smallest gap further each side.
        assert_eq!(ten.median_ci_ns(), (150.0, 950.0));
    }

    /// A 6 us operation timed alone on 0.5 us events reads 6.0 or 6.5 us. The plain
    /// median is one of those, whatever the true time between them; the grouped
    /// median follows the true time, and its interval covers it.
    #[test]
    fn a_coarse_grain_neither_steps_the_median_nor_leaves_the_truth_outside_its_interval() {
        let grain = 500.0;
        let (mut worst_plain, mut worst_grouped) = (0.0f64, 0.0f64);
        for step in 0..=10 {
            let truth = 6_000.0 + 50.0 * f64::from(step);
            let mut r = LatencyRecorder::new();
            // 201 times spread evenly over +-400 ns around the truth, each read on
            // the 500 ns lattice.
            for i in 0..=200 {
                let t = truth + (f64::from(i) / 200.0 - 0.5) * 800.0;
                r.record(((t / grain).round() * grain) as u64);
            }
            let plain = r.histogram().value_at_quantile(0.5) as f64;
            worst_plain = worst_plain.max((plain - truth).abs());
            worst_grouped = worst_grouped.max((r.median_ns() - truth).abs());
            let (lo, hi) = r.median_ci_ns();
            assert!(lo <= truth && truth <= hi, "{truth}: [{lo}, {hi}]");
            let s = r.summary();
            assert!((s.p50_us * 1e3 - r.median_ns()).abs() < 1e-9);
        }
        assert!(worst_plain >= 0.4 * grain, "{worst_plain}");
        assert!(worst_grouped <= 0.05 * grain, "{worst_grouped}");
    }

    #[test]
    fn the_grouped_median_of_distinct_times_is_the_textbook_one() {
        // Odd: the middle one; even and evenly spaced: halfway between the middle two.
        let of = |times: &[u64]| {
            let mut r = LatencyRecorder::new();
            times.iter().for_each(|&t| r.record(t));
            r.median_ns()
        };
        assert_eq!(of(&[100, 200, 300, 400, 500]), 300.0);
        assert_eq!(of(&[100, 200, 300, 400]), 250.0);
        assert_eq!(of(&[700, 700, 700]), 700.0);
        assert_eq!(LatencyRecorder::new().median_ns(), 0.0);
    }
}
