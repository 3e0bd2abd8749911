//! Whether one case got faster or slower than another: a 95 % confidence interval of
//! the relative change of the median latency, and a verdict that calls a change only
//! when the whole interval lies outside a noise band of +-threshold (criterion's
//! rule). Cases measured in several rounds (process groups) are compared over their
//! rounds ([`compare_rounds`], `super::rounds::shift`): the interval then includes the
//! variation between process groups. Two configs of one sweep ran their rounds side by
//! side, and are compared round by round (`super::rounds::paired_shift`), so what a
//! round did to both cancels out. Cases of one round each are compared with a
//! bootstrap over their HdrHistograms ([`compare_distributions`]), which sees only
//! the variation between the iterations of each group.
//!
//! Assumptions of the bootstrap, as the interval's meaning depends on them:
//! - Iteration times within a case are independent and identically distributed. The
//!   bootstrap resamples each case on its own (the two runs' iterations are not paired).
//!   Drift or warm-up inside a case makes the interval too narrow.
//! - The histograms keep 3 significant digits ([`super::latency::SIGFIG`]): values are
//!   known to 0.1 %, so a change below about 0.1 % is not resolvable. Thresholds should
//!   be well above that (the default is 2 %).
//! - Each case has at least 2 samples. With fewer the interval is unbounded and the
//!   verdict is inconclusive.
//! - The median of a case is its lower median, the value of rank ceil(n/2), as
//!   `Histogram::value_at_quantile(0.5)` reports it (the top of its 0.1 % bucket).
//!
//! `change` is relative to the base: `cand / base - 1`. It is not symmetric: a 10 %
//! slowdown (+0.10) seen the other way round is a 9.1 % speedup (-0.0909), so swapping
//! the cases flips the sign of the change but an interval just past +threshold can be
//! just inside -threshold after the swap.
//!
//! Pure: no I/O, and the pseudo-random numbers come from a seeded generator so a
//! comparison is reproducible.

use std::fmt;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use super::distribution::Distribution;
use super::splitmix::SplitMix64;

/// Bootstrap resamples when the caller has no reason to pick another number.
pub const DEFAULT_RESAMPLES: usize = 1000;

/// Noise band: relative changes within +-2 % are not called.
pub const DEFAULT_THRESHOLD: f64 = 0.02;

/// Confidence level of the interval.
const CONFIDENCE: f64 = 0.95;

/// The outcome of comparing a candidate case against a base case (latencies: higher
/// is worse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The whole interval lies below -threshold: the candidate is faster.
    Improved,
    /// The whole interval lies above +threshold: the candidate is slower.
    Regressed,
    /// The whole interval lies within +-threshold.
    Unchanged,
    /// The interval straddles a threshold (or is unbounded): more samples needed.
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "unchanged",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// How the interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Over the rounds (process groups) of each side: the Hodges-Lehmann shift of
    /// their log medians with its Mann-Whitney interval, or with `paired` rounds the
    /// median per-round ratio with its signed-rank interval.
    Rounds {
        base: usize,
        cand: usize,
        paired: bool,
    },
    /// Percentile bootstrap of the medians over the histograms.
    Bootstrap { resamples: usize },
    /// Only the two means were known: the interval is the point `(change, change)`.
    MeansOnly,
}

/// A candidate case against a base case.
///
/// An unbounded interval holds infinities, which `serde_json` writes as `null`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comparison {
    /// Median of the base case in ns (the mean, in the caller's unit, for
    /// [`Method::MeansOnly`]).
    pub base_median: f64,
    /// Median of the candidate case in ns (the mean for [`Method::MeansOnly`]).
    pub cand_median: f64,
    /// `(cand - base) / base`, a fraction: +0.10 is 10 % slower.
    pub change: f64,
    /// 95 % confidence interval of `change`; always contains `change`.
    pub ci: (f64, f64),
    pub verdict: Verdict,
    pub method: Method,
}

/// The verdict for an interval of the relative change (positive = slower) against a
/// noise band of +-`threshold` (its sign is ignored). An interval touching the band's
/// edge from inside is unchanged; NaN anywhere gives inconclusive.
pub fn classify(ci: (f64, f64), threshold: f64) -> Verdict {
    let t = threshold.abs();
    let (lo, hi) = ci;
    if lo > t {
        Verdict::Regressed
    } else if hi < -t {
        Verdict::Improved
    } else if -t <= lo && hi <= t {
        Verdict::Unchanged
    } else {
        Verdict::Inconclusive
    }
}

/// Compares two means (any unit, the same on both sides), for runs that kept no
/// per-iteration data. Without a spread there is no interval: it is the point
/// `(change, change)` and the verdict follows [`classify`], so it is never
/// inconclusive and overstates what is known; [`Method::MeansOnly`] says so.
///
/// `None` when the base mean is not positive or either mean is not finite or negative.
pub fn compare_means(base_mean: f64, cand_mean: f64, threshold: f64) -> Option<Comparison> {
    let valid =
        base_mean.is_finite() && base_mean > 0.0 && cand_mean.is_finite() && cand_mean >= 0.0;
    if !valid {
        return None;
    }
    let change = cand_mean / base_mean - 1.0;
    Some(Comparison {
        base_median: base_mean,
        cand_median: cand_mean,
        change,
        ci: (change, change),
        verdict: classify((change, change), threshold),
        method: Method::MeansOnly,
    })
}

/// Compares two cases over their rounds: `base` and `cand` are each round's median
/// (any unit, the same on both sides; at least 2 a side). The change is the
/// Hodges-Lehmann estimate of the shift of the log medians, its interval the
/// Mann-Whitney one (at least 95 %; see `super::rounds`); with too few rounds for a
/// 95 % interval it is unbounded and the verdict inconclusive. `base_median` and
/// `cand_median` are the medians of the round medians.
///
/// `paired`: round `i` of each side ran back to back (configs of one sweep): then,
/// with the same number of rounds a side, the change is that of the per-round ratios
/// and its interval the signed-rank one (`super::rounds::paired_shift`).
///
/// `None` with fewer than 2 rounds on a side, or a median that is not positive.
pub fn compare_rounds(
    base: &[f64],
    cand: &[f64],
    threshold: f64,
    paired: bool,
) -> Option<Comparison> {
    if base.len() < 2 || cand.len() < 2 {
        return None;
    }
    let base_median = super::median(base.iter().copied())?;
    let cand_median = super::median(cand.iter().copied())?;
    if base_median <= 0.0 || cand_median < 0.0 {
        return None;
    }
    // The very same rounds (a run compared with itself): no change, with certainty.
    let same = base == cand;
    let paired = paired && base.len() == cand.len();
    let shift = if paired {
        super::rounds::paired_shift(base, cand)
    } else {
        super::rounds::shift(base, cand)
    };
    let (change, ci) = match shift.filter(|_| !same) {
        None if same => (0.0, (0.0, 0.0)),
        Some(s) => (s.change, s.ci),
        None => (
            cand_median / base_median - 1.0,
            (f64::NEG_INFINITY, f64::INFINITY),
        ),
    };
    Some(Comparison {
        base_median,
        cand_median,
        change,
        ci,
        verdict: classify(ci, threshold),
        method: Method::Rounds {
            base: base.len(),
            cand: cand.len(),
            paired,
        },
    })
}

/// Compares the median of `cand` against that of `base` (iteration times in ns) with a
/// percentile bootstrap of `resamples` resamples (use [`DEFAULT_RESAMPLES`]), seeded by
/// `seed`: [`compare_distributions`] on the histograms' recorded distributions.
///
/// `None` when either histogram is empty, or the base median is 0 (no relative change).
pub fn compare_histograms(
    base: &Histogram<u64>,
    cand: &Histogram<u64>,
    threshold: f64,
    resamples: usize,
    seed: u64,
) -> Option<Comparison> {
    compare_distributions(
        &Distribution::from_histogram(base),
        &Distribution::from_histogram(cand),
        threshold,
        resamples,
        seed,
    )
}

/// Compares the median of `cand` against that of `base` (iteration times in ns) with a
/// percentile bootstrap of `resamples` resamples (use [`DEFAULT_RESAMPLES`]), seeded by
/// `seed`. The interval is widened, if need be, to contain the point estimate, which a
/// percentile interval of a discrete distribution does not guarantee.
///
/// `None` when either distribution is empty, or the base median is 0 (no relative
/// change). Fewer than 2 samples on a side, or fewer than 2 resamples, give an unbounded interval and an inconclusive
/// verdict.
///
/// Cost: independent of the sample count, as each resampled median is drawn directly
/// (see `Distribution::draw_median`): two Beta draws (four Gamma draws) and a search
/// from the median's bucket per resample, nothing when a case is compared with
/// itself. Reading a histogram into a [`Distribution`] is done once per case, when the
/// run is read. Measured in a release build on a shared 2-core x86-64 machine: about
/// 0.2 ms per comparison at 1000 resamples, so 10,000 comparisons take about 2 s of
/// CPU, which `analysis::compare` spreads over the cores; see the ignored test
/// `cost_of_one_comparison` and `cargo bench --bench analysis`.
pub fn compare_distributions(
    base: &Distribution,
    cand: &Distribution,
    threshold: f64,
    resamples: usize,
    seed: u64,
) -> Option<Comparison> {
    let base_median = base.median()? as f64;
    let cand_median = cand.median()? as f64;
    if base_median <= 0.0 {
        return None;
    }
    let change = cand_median / base_median - 1.0;
    // The very same samples (a run compared with itself): no change, with certainty.
    // Resampling them independently would invent an uncertainty that is not there.
    let ci = if base == cand {
        (0.0, 0.0)
    } else if base.total() < 2 || cand.total() < 2 || resamples < 2 {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let (lo, hi) = bootstrap_interval(base, cand, resamples, seed);
        (lo.min(change), hi.max(change))
    };
    Some(Comparison {
        base_median,
        cand_median,
        change,
        ci,
        verdict: classify(ci, threshold),
        method: Method::Bootstrap { resamples },
    })
}

/// Percentile interval of `cand* / base* - 1` over the resampled medians.
fn bootstrap_interval(
    base: &Distribution,
    cand: &Distribution,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    // Each histogram draws from its own stream, and which stream a histogram gets
    // depends on its content, not on its role: comparing B to A then resamples exactly
    // the medians that comparing A to B did, and the two intervals mirror each other.
    // Identical histograms still get different streams (else every resample would agree
    // and the interval would collapse to 0).
    let (base_stream, cand_stream) = if base.fingerprint() <= cand.fingerprint() {
        (0, 1)
    } else {
        (1, 0)
    };
    let mut base_rng = SplitMix64::new(seed, base_stream);
    let mut cand_rng = SplitMix64::new(seed, cand_stream);
    let mut changes: Vec<f64> = (0..resamples)
        .map(|_| {
            let b = base.draw_median(&mut base_rng) as f64;
            let c = cand.draw_median(&mut cand_rng) as f64;
            match (b > 0.0, c > 0.0) {
                (true, _) => c / b - 1.0,
                (false, true) => f64::INFINITY,
                (false, false) => 0.0,
            }
        })
        .collect();
    changes.sort_unstable_by(f64::total_cmp);
    // Symmetric indices, so that the mirrored comparison picks the mirrored resamples.
    let tail = (((1.0 - CONFIDENCE) / 2.0) * (resamples - 1) as f64).round() as usize;
    (changes[tail], changes[resamples - 1 - tail])
}

#[cfg(test)]
mod tests;
