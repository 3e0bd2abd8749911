//! A case's iteration times as the comparison statistics read them: the recorded
//! distribution of its HdrHistogram, one entry per non-empty bucket. A run keeps this
//! rather than the histogram itself: a histogram holds a counter for every bucket of
//! its range (about 57 KB at 3 significant digits up to 40 us), a distribution only
//! the buckets that were hit (a few KB), so 10,000 cases take megabytes, not a
//! gigabyte, and each comparison reads them without walking empty buckets.
//!
//! Pure: no I/O.

use hdrhistogram::Histogram;

use super::splitmix::{mix, SplitMix64};

/// The recorded distribution of a histogram. Two are equal when they hold the very
/// same samples at the same precision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// Representative value of each bucket (its highest equivalent value), ascending.
    values: Vec<u64>,
    /// Samples at or below each bucket.
    cumulative: Vec<u64>,
    total: u64,
    /// Hash of the content, to assign random streams independently of the role.
    fingerprint: u64,
    /// The bucket of the median, where the search for a resampled median starts.
    median_bucket: usize,
    /// The histogram's precision, so that equal buckets mean equal samples.
    sigfig: u8,
    low: u64,
}

impl Distribution {
    pub fn from_histogram(histogram: &Histogram<u64>) -> Distribution {
        let mut values = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        let mut fingerprint = 0u64;
        for v in histogram.iter_recorded() {
            let value = histogram.highest_equivalent(v.value_iterated_to());
            total += v.count_at_value();
            values.push(value);
            cumulative.push(total);
            fingerprint = mix(mix(fingerprint ^ value) ^ v.count_at_value());
        }
        let median_bucket = cumulative.partition_point(|&c| c < total.div_ceil(2));
        Distribution {
            values,
            cumulative,
            total,
            fingerprint,
            median_bucket,
            sigfig: histogram.sigfig(),
            low: histogram.low(),
        }
    }

    /// Samples recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The value of the `rank`-th smallest sample (1-based, clamped to 1..=total).
    /// Not for an empty distribution.
    fn value_at_rank(&self, rank: u64) -> u64 {
        let rank = rank.clamp(1, self.total);
        let i = self.cumulative.partition_point(|&c| c < rank);
        self.values[i.min(self.values.len() - 1)]
    }

    /// The lower median, rank ceil(n/2), as `Histogram::value_at_quantile(0.5)`
    /// reports it; `None` when empty.
    pub fn median(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.value_at_rank(self.total.div_ceil(2)))
    }

    /// The median of `total` draws with replacement from this distribution, drawn
    /// directly rather than by drawing `total` values.
    ///
    /// Why this is exact: inverse-CDF sampling turns n uniform draws U_i into draws
    /// X_i = F^-1(U_i), and F^-1 is non-decreasing, so the k-th smallest X is F^-1 of
    /// the k-th smallest U. The k-th order statistic of n uniforms is Beta(k, n-k+1)
    /// distributed. So the median of a resample (k = ceil(n/2)) is F^-1(Beta(k, n-k+1)),
    /// one Beta draw and one binary search whatever n is, where drawing n values would
    /// cost O(n log buckets), or, with the draws capped, would widen the interval by
    /// sqrt(n / cap). The test `direct_median_draw_has_the_order_statistic_distribution`
    /// checks it against the exact binomial distribution of a sample median.
    /// Not for an empty distribution.
    pub(crate) fn draw_median(&self, rng: &mut SplitMix64) -> u64 {
        let n = self.total as f64;
        let k = self.total.div_ceil(2) as f64;
        let u = rng.beta(k, n - k + 1.0);
        // F^-1(u) is the first bucket whose cumulative count reaches u * n.
        let rank = ((u * n).ceil() as u64).clamp(1, self.total);
        self.values[self.bucket_near_median(rank)]
    }

    /// The first bucket whose cumulative count reaches `rank` (1..=total), the bucket
    /// `value_at_rank` finds, searched outwards from the median's bucket: a resampled
    /// median lies within a bucket or two of it, where a binary search over every
    /// bucket would take a chain of dependent loads each time.
    fn bucket_near_median(&self, rank: u64) -> usize {
        let m = self.median_bucket;
        let reaches = |i: usize| self.cumulative[i] >= rank;
        // Gallop away from the median's bucket to a window holding the answer, then
        // search the window: O(log distance).
        let (lo, hi) = if reaches(m) {
            let mut step = 1;
            let mut hi = m;
            loop {
                let lo = m.saturating_sub(step);
                if lo == 0 || !reaches(lo) {
                    break (lo, hi);
                }
                hi = lo;
                step *= 2;
            }
        } else {
            let last = self.cumulative.len() - 1;
            let mut step = 1;
            let mut lo = m + 1;
            loop {
                let hi = (m + step).min(last);
                if hi == last || reaches(hi) {
                    break (lo, hi);
                }
                lo = hi + 1;
                step *= 2;
            }
        };
        lo + self.cumulative[lo..hi].partition_point(|&c| c < rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search from the median finds, for every rank, the bucket that a binary
    /// search over all buckets finds.
    #[test]
    fn the_search_from_the_median_finds_every_rank_bucket() {
        let mut rng = SplitMix64::new(7, 0);
        for case in 0..300 {
            let mut h = Histogram::<u64>::new(3).unwrap();
            let n = 1 + rng.next_u64() % 400;
            let spread = 1 + rng.next_u64() % 5000;
            for _ in 0..n {
                let skew = rng.next_u64() % 4 == 0;
                let v = 1000 + rng.next_u64() % spread * if skew { 7 } else { 1 };
                h.record(v).unwrap();
            }
            let d = Distribution::from_histogram(&h);
            for rank in 1..=d.total() {
                assert_eq!(
                    d.values[d.bucket_near_median(rank)],
                    d.value_at_rank(rank),
                    "case {case}, rank {rank} of {}",
                    d.total()
                );
            }
        }
    }

    #[test]
    fn median_and_emptiness() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        assert!(Distribution::from_histogram(&h).is_empty());
        assert_eq!(Distribution::from_histogram(&h).median(), None);
        for v in [5, 1, 3, 9] {
            h.record(v).unwrap();
        }
        let d = Distribution::from_histogram(&h);
        assert_eq!(d.median(), Some(h.value_at_quantile(0.5)));
        assert_eq!(d.total(), 4);
    }
}
