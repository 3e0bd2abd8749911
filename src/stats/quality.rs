//! Whether a case's numbers deserve trust. A benchmark must not hand out a wrong
//! number with confidence: a case in which something else ran on the machine, or
//! whose median is out of line with the sizes around it, is flagged in the
//! `quality` column. A flag is shown beside every answer the case is part of, and no
//! answer calls a flagged case within; nothing is set aside or measured again by
//! its values.
//!
//! Rules on one case (`noisy`):
//! - a heavy tail: p99 more than `TAIL_RATIO` x the median (with enough samples for
//!   a p99 to mean something);
//! - two modes: more than `FAR_SHARE` of the samples below half or above twice the
//!   median, so that the mean depends on how often each mode came up;
//! - drift: the median of the last quarter of the iterations differs from that of
//!   the first quarter by more than `DRIFT_RATIO` (either way).
//!
//! Rules across the sizes of one config and rank count (`outlier`), on medians and
//! their confidence intervals (a rule fires only when the whole interval is beyond
//! its bound, so few iterations never make an outlier):
//! - slower than a size at least 4 x larger (by more than `SLOWER_MARGIN`: at small
//!   sizes the time is flat, and noise must not count);
//! - more than `NEIGHBOUR_RATIO` x what its two neighbours predict (interpolated on
//!   log-log axes), or at the ends of the range, than its one neighbour predicts when
//!   time grows in proportion to size.

use std::cmp::Ordering;
use std::fmt;

use super::LatencyRecorder;

/// p99 / p50 above this is a tail that a quiet machine does not produce.
pub const TAIL_RATIO: f64 = 10.0;
/// Samples needed before the p99 is judged (below, the p99 is nearly the maximum).
pub const TAIL_MIN_SAMPLES: u64 = 100;
/// Share of samples outside [median / 2, 2 x median] that makes a case bimodal.
pub const FAR_SHARE: f64 = 0.10;
/// Samples needed before two modes are judged.
pub const FAR_MIN_SAMPLES: u64 = 20;
/// Last-quarter / first-quarter median ratio (or its inverse) that is drift.
pub const DRIFT_RATIO: f64 = 1.5;
/// Samples needed before drift is judged.
pub const DRIFT_MIN_SAMPLES: u64 = 40;
/// How much slower than a 4 x larger size a case must be to be an outlier.
pub const SLOWER_MARGIN: f64 = 1.25;
/// How far above its neighbours' prediction a case must be to be an outlier.
pub const NEIGHBOUR_RATIO: f64 = 10.0;

/// The `quality` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quality {
    /// No rule flagged the case.
    Ok,
    /// Older runs: flagged, re-measured in fresh processes, and the measurement
    /// kept passed every rule.
    Remeasured,
    /// A rule on the case itself flagged it.
    Noisy,
    /// Its median is out of line with the sizes around it.
    Outlier,
}

impl Quality {
    pub fn name(self) -> &'static str {
        match self {
            Quality::Ok => "ok",
            Quality::Remeasured => "remeasured",
            Quality::Noisy => "noisy",
            Quality::Outlier => "outlier",
        }
    }

    /// Parses the column; empty (older runs, imports) is `None`: not assessed.
    pub fn parse(cell: &str) -> Option<Quality> {
        match cell {
            "ok" => Some(Quality::Ok),
            "remeasured" => Some(Quality::Remeasured),
            "noisy" => Some(Quality::Noisy),
            "outlier" => Some(Quality::Outlier),
            _ => None,
        }
    }

    /// Whether the case's numbers count as evidence.
    pub fn trusted(self) -> bool {
        matches!(self, Quality::Ok | Quality::Remeasured)
    }
}

impl fmt::Display for Quality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One reason to distrust a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// `Noisy` or `Outlier`.
    pub kind: Quality,
    pub reason: String,
}

impl Flag {
    fn noisy(reason: String) -> Flag {
        Flag {
            kind: Quality::Noisy,
            reason,
        }
    }

    fn outlier(reason: String) -> Flag {
        Flag {
            kind: Quality::Outlier,
            reason,
        }
    }
}

/// The quality that a list of flags amounts to: an outlier flag outweighs a noisy
/// one; no flag is `Ok`.
pub fn verdict(flags: &[Flag]) -> Quality {
    flags.iter().map(|f| f.kind).max().unwrap_or(Quality::Ok)
}

/// The reasons of `flags`, joined for the `quality_note` column.
pub fn reasons(flags: &[Flag]) -> String {
    flags
        .iter()
        .map(|f| f.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Medians of consecutive stretches of iterations, in the order they ran: enough to
/// tell whether a case drifted, in constant memory per batch.
#[derive(Debug, Clone, Default)]
pub struct Drift {
    /// (samples, median ns) of each stretch.
    stretches: Vec<(u64, u64)>,
    scratch: Vec<u64>,
}

/// Stretches each batch is cut into (a fixed `-n` count is often a single batch).
const STRETCHES_PER_BATCH: usize = 4;

impl Drift {
    pub fn new() -> Drift {
        Drift::default()
    }

    /// One batch's samples (ns per iteration), in the order they ran.
    pub fn add_batch(&mut self, samples: impl IntoIterator<Item = u64>) {
        self.scratch.clear();
        self.scratch.extend(samples);
        let n = self.scratch.len();
        if n == 0 {
            return;
        }
        let pieces = STRETCHES_PER_BATCH.min(n);
        for i in 0..pieces {
            let (start, end) = (i * n / pieces, (i + 1) * n / pieces);
            let stretch = &mut self.scratch[start..end];
            let mid = stretch.len() / 2;
            let (_, median, _) = stretch.select_nth_unstable(mid);
            self.stretches.push(((end - start) as u64, *median));
        }
    }

    /// Appends `other`'s stretches, which ran after these (the next round of a case):
    /// drift is then judged over the rounds as they ran.
    pub fn extend(&mut self, other: &Drift) {
        self.stretches.extend_from_slice(&other.stretches);
    }

    /// (first quarter, last quarter) medians in ns, the median of the stretch
    /// medians covering each quarter of the samples; `None` with too few samples.
    pub fn ends(&self) -> Option<(f64, f64)> {
        let total: u64 = self.stretches.iter().map(|s| s.0).sum();
        if total < DRIFT_MIN_SAMPLES {
            return None;
        }
        let quarter = |stretches: &mut dyn Iterator<Item = &(u64, u64)>| {
            let mut taken = Vec::new();
            let mut count = 0;
            for &(n, median) in stretches {
                taken.push(median);
                count += n;
                if count * 4 >= total {
                    break;
                }
            }
            taken.sort_unstable();
            taken[taken.len() / 2] as f64
        };
        Some((
            quarter(&mut self.stretches.iter()),
            quarter(&mut self.stretches.iter().rev()),
        ))
    }
}

/// What the rules on one case look at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseShape {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Share of samples below half or above twice the median.
    pub far_share: f64,
    /// First- and last-quarter medians, us.
    pub ends_us: Option<(f64, f64)>,
}

impl CaseShape {
    pub fn of(recorder: &LatencyRecorder, drift: &Drift) -> CaseShape {
        let s = recorder.summary();
        let p50_ns = recorder.histogram().value_at_quantile(0.5);
        CaseShape {
            samples: recorder.samples(),
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            far_share: recorder.share_outside(p50_ns / 2, p50_ns.saturating_mul(2)),
            ends_us: drift.ends().map(|(a, b)| (a / 1e3, b / 1e3)),
        }
    }
}

fn us(v: f64) -> String {
    crate::units::format_us(v)
}

/// The quality a case gets from the rules on itself alone, and why.
pub fn first_quality(shape: &CaseShape) -> (Quality, String) {
    let flags = case_flags(shape);
    (verdict(&flags), reasons(&flags))
}

/// The rules on one case.
pub fn case_flags(shape: &CaseShape) -> Vec<Flag> {
    let mut flags = Vec::new();
    let p50 = shape.p50_us;
    if p50 <= 0.0 {
        return flags;
    }
    if shape.samples >= TAIL_MIN_SAMPLES && shape.p99_us > TAIL_RATIO * p50 {
        flags.push(Flag::noisy(format!(
            "p99 {} is {:.0} x the median {}: the machine interfered",
            us(shape.p99_us),
            shape.p99_us / p50,
            us(p50)
        )));
    }
    if shape.samples >= FAR_MIN_SAMPLES && shape.far_share > FAR_SHARE {
        flags.push(Flag::noisy(format!(
            "bimodal: {:.0} % of the samples are below half or above twice the median {}",
            shape.far_share * 100.0,
            us(p50)
        )));
    }
    if let Some((early, late)) = shape.ends_us {
        let ratio = late.max(early) / late.min(early).max(f64::MIN_POSITIVE);
        if ratio > DRIFT_RATIO {
            flags.push(Flag::noisy(format!(
                "drifted: the median went from {} in the first quarter of the iterations to {} in the last",
                us(early),
                us(late)
            )));
        }
    }
    flags
}

/// One case as the rules across sizes see it: its size, its median and the 95 %
/// confidence interval of that median (us).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub bytes: u64,
    pub p50_us: f64,
    pub ci_us: (f64, f64),
}

/// The rules across sizes, for the cases of one config and rank count, in any
/// order. A rule fires only when the whole confidence interval of the case's median
/// is beyond the bound, and bounds taken from other cases use the far end of their
/// intervals: with few iterations (`-n 3`) medians are too loose to call anything
/// out of line. Returns the flags of each point, in the same order.
pub fn neighbour_flags(points: &[Point]) -> Vec<Vec<Flag>> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by_key(|&i| points[i].bytes);
    let mut flags = vec![Vec::new(); points.len()];
    let timed = |p: &Point| p.p50_us > 0.0 && p.ci_us.1.is_finite();
    for (pos, &i) in order.iter().enumerate() {
        let me = points[i];
        if !timed(&me) {
            continue;
        }
        let (bytes, p50, low) = (me.bytes, me.p50_us, me.ci_us.0);
        // Slower than a size at least 4 x larger: the fastest such size.
        let faster = order[pos + 1..]
            .iter()
            .map(|&j| points[j])
            .filter(|p| p.bytes >= bytes.saturating_mul(4) && timed(p))
            .min_by(|a, b| a.ci_us.1.partial_cmp(&b.ci_us.1).unwrap_or(Ordering::Equal));
        if let Some(f) = faster {
            if low > SLOWER_MARGIN * f.ci_us.1 {
                flags[i].push(Flag::outlier(format!(
                    "median {} is slower than {} at {}, a size {} x larger",
                    us(p50),
                    us(f.p50_us),
                    crate::units::Bytes(f.bytes),
                    f.bytes / bytes.max(1)
                )));
            }
        }
        let neighbour = |p: Option<&usize>| p.map(|&j| points[j]).filter(timed);
        let prev = neighbour(pos.checked_sub(1).map(|p| &order[p]));
        let next = neighbour(order.get(pos + 1));
        let predicted = match (prev, next) {
            (Some(a), Some(b)) if a.bytes > 0 && b.bytes > a.bytes => {
                let at = |b: u64| (b.max(1) as f64).ln();
                let x = (at(bytes) - at(a.bytes)) / (at(b.bytes) - at(a.bytes));
                let (t0, t1) = (a.ci_us.1, b.ci_us.1);
                Some((t0.ln() + x * (t1.ln() - t0.ln())).exp())
            }
            // At an end of the range: the one neighbour, scaled in proportion to
            // size when this case is larger (time grows at most linearly).
            (Some(a), None) if a.bytes > 0 => {
                Some(a.ci_us.1 * (bytes as f64 / a.bytes as f64).max(1.0))
            }
            (None, Some(b)) => Some(b.ci_us.1),
            _ => None,
        };
        if let Some(expected) = predicted {
            if low > NEIGHBOUR_RATIO * expected {
                flags[i].push(Flag::outlier(format!(
                    "median {} is {:.0} x what the neighbouring sizes predict ({})",
                    us(p50),
                    p50 / expected,
                    us(expected)
                )));
            }
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(p50: f64, p99: f64, far: f64, ends: Option<(f64, f64)>) -> CaseShape {
        CaseShape {
            samples: 1000,
            p50_us: p50,
            p99_us: p99,
            far_share: far,
            ends_us: ends,
        }
    }

    #[test]
    fn a_quiet_case_has_no_flag() {
        assert!(case_flags(&shape(10.0, 30.0, 0.02, Some((10.0, 11.0)))).is_empty());
    }

    #[test]
    fn a_heavy_tail_is_noisy_with_enough_samples() {
        let f = case_flags(&shape(0.2, 4000.0, 0.0, None));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, Quality::Noisy);
        assert!(
            f[0].reason.starts_with("p99 4.00 ms is 20000 x the median"),
            "{}",
            f[0].reason
        );
        // 20 samples: the p99 is the maximum, one stall; not judged.
        let few = CaseShape {
            samples: 20,
            ..shape(0.2, 4000.0, 0.0, None)
        };
        assert!(case_flags(&few).is_empty());
        // Just under the ratio.
        assert!(case_flags(&shape(1.0, 9.9, 0.0, None)).is_empty());
    }

    #[test]
    fn two_modes_are_noisy() {
        let f = case_flags(&shape(5.0, 12.0, 0.3, None));
        assert_eq!(verdict(&f), Quality::Noisy);
        assert!(f[0].reason.starts_with("bimodal: 30 %"), "{}", f[0].reason);
        assert!(case_flags(&shape(5.0, 12.0, 0.1, None)).is_empty());
        // Three samples, one far off: not judged.
        let few = CaseShape {
            samples: 3,
            ..shape(5.0, 12.0, 0.33, None)
        };
        assert!(case_flags(&few).is_empty());
    }

    #[test]
    fn drift_either_way_is_noisy() {
        let up = case_flags(&shape(10.0, 20.0, 0.0, Some((8.0, 13.0))));
        assert!(up[0].reason.starts_with("drifted"), "{:?}", up);
        let down = case_flags(&shape(10.0, 20.0, 0.0, Some((16.0, 10.0))));
        assert_eq!(down.len(), 1);
        assert!(case_flags(&shape(10.0, 20.0, 0.0, Some((10.0, 14.9)))).is_empty());
    }

    #[test]
    fn drift_compares_the_first_and_last_quarters_of_the_iterations() {
        // One batch of 100 samples: 50 at 10 us, then 50 at 20 us.
        let mut d = Drift::new();
        d.add_batch((0..100).map(|i| if i < 50 { 10_000 } else { 20_000 }));
        assert_eq!(d.ends(), Some((10_000.0, 20_000.0)));
        // Batches of 20, 20, 40, 80 (as the adaptive rule grows them): the first
        // quarter is the first 40 samples, the last the final 40.
        let mut d = Drift::new();
        d.add_batch(std::iter::repeat_n(5_000, 20));
        d.add_batch(std::iter::repeat_n(5_000, 20));
        d.add_batch(std::iter::repeat_n(6_000, 40));
        d.add_batch((0..80).map(|i| if i < 40 { 6_000 } else { 9_000 }));
        assert_eq!(d.ends(), Some((5_000.0, 9_000.0)));
        // Too few samples to judge.
        let mut d = Drift::new();
        d.add_batch(std::iter::repeat_n(1, 39));
        assert_eq!(d.ends(), None);
    }

    /// Sizes 8 B, 16 B, ... with these medians, each known to +-1 %.
    fn sizes(p50s: &[f64]) -> Vec<Point> {
        p50s.iter()
            .enumerate()
            .map(|(i, &t)| Point {
                bytes: 8u64 << i,
                p50_us: t,
                ci_us: (t * 0.99, t * 1.01),
            })
            .collect()
    }

    fn flagged(points: &[Point]) -> Vec<u64> {
        neighbour_flags(points)
            .iter()
            .zip(points)
            .filter(|(f, _)| !f.is_empty())
            .map(|(_, p)| p.bytes)
            .collect()
    }

    #[test]
    fn loose_medians_are_not_called_out_of_line() {
        // Three iterations per size: 8 B looks 40 % slower than 32 B, but its
        // interval reaches below 32 B's.
        let mut points = sizes(&[0.35, 0.30, 0.25, 0.26]);
        points[0].ci_us = (0.20, 0.50);
        points[2].ci_us = (0.20, 0.40);
        assert!(flagged(&points).is_empty());
        // An unbounded interval (one sample) is never judged, nor used as a bound.
        let mut points = sizes(&[0.3, 1000.0, 0.3, 0.3]);
        points[1].ci_us = (0.0, f64::INFINITY);
        assert!(flagged(&points).is_empty());
    }

    #[test]
    fn a_stalled_small_size_is_an_outlier() {
        // A sweep seen on the 2-core development machine: 16 B at 1.17 ms between
        // 8 B at 0.80 us and 32 B at 0.26 us. 8 B, three times slower than 32 B, is
        // out of line too (by the ordering rule alone).
        let points = sizes(&[0.80, 1170.0, 0.26, 0.30, 0.31, 0.35]);
        assert_eq!(flagged(&points), [8, 16]);
        let all = neighbour_flags(&points);
        assert_eq!(all[0].len(), 1);
        assert!(
            all[0][0].reason.contains("slower than 0.26 us at 32 B"),
            "{}",
            all[0][0].reason
        );
        let f = &all[1];
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].reason.contains("slower than"), "{}", f[0].reason);
        assert!(
            f[1].reason
                .contains("x what the neighbouring sizes predict"),
            "{}",
            f[1].reason
        );
    }

    #[test]
    fn a_normal_latency_then_bandwidth_curve_is_not_flagged() {
        // Flat, with noise, then growing linearly.
        let points = sizes(&[0.21, 0.23, 0.20, 0.22, 0.25, 0.4, 0.7, 1.3, 2.5, 5.0, 10.0]);
        assert!(flagged(&points).is_empty());
        // Noise within the margin at the flat end.
        assert!(flagged(&sizes(&[0.26, 0.22, 0.21])).is_empty());
        // Out of order input gives the same answer.
        let mut shuffled = points.clone();
        shuffled.reverse();
        assert!(flagged(&shuffled).is_empty());
    }

    #[test]
    fn an_end_of_the_range_is_judged_by_its_one_neighbour() {
        // The largest size at 10 x a linear extrapolation and more.
        assert_eq!(flagged(&sizes(&[1.0, 2.0, 4.0, 90.0])), [64]);
        assert!(flagged(&sizes(&[1.0, 2.0, 4.0, 30.0])).is_empty());
        // The smallest, against the next size.
        assert_eq!(flagged(&sizes(&[50.0, 0.3, 0.3, 0.35, 0.4])), [8]);
    }

    #[test]
    fn a_case_slower_than_a_four_times_larger_one_is_an_outlier() {
        // 3 x slower than the size 4 x larger: below the 10 x neighbour rule, caught
        // by the ordering rule.
        let points = sizes(&[1.0, 1.0, 3.0, 1.1, 1.0, 1.2]);
        assert_eq!(flagged(&points), [32]);
    }

    #[test]
    fn outlier_outweighs_noisy_and_only_ok_and_remeasured_are_trusted() {
        let flags = [Flag::noisy("a".into()), Flag::outlier("b".into())];
        assert_eq!(verdict(&flags), Quality::Outlier);
        assert_eq!(reasons(&flags), "a; b");
        assert_eq!(verdict(&[]), Quality::Ok);
        for q in [
            Quality::Ok,
            Quality::Remeasured,
            Quality::Noisy,
            Quality::Outlier,
        ] {
            assert_eq!(Quality::parse(q.name()), Some(q));
        }
        assert_eq!(Quality::parse(""), None);
        assert!(Quality::Remeasured.trusted() && !Quality::Noisy.trusted());
    }
}
