//! The statistics of a soak: back-to-back collectives binned into fixed intervals
//! (`IntervalBins`), the dips of their bandwidth merged into episodes
//! (`find_episodes`), and the run's stability (`Stability::of`). Pure: no I/O, no
//! clock; times are offsets from the soak's start.
//!
//! A dip is judged against the run's own median, as the quality rules judge a case
//! against its neighbours: an interval is low when its bandwidth is more than the
//! threshold below the median *and* more than `NOISE_SPREADS` noise spreads below
//! it, so that a noisy machine's ordinary scatter is never an episode and a quiet
//! machine's real dip always is. The noise spread is read from the differences of
//! neighbouring intervals (`noise_spread`), which a dip's level shift barely
//! touches, where the spread around the median would count the dip itself as noise.
//! Assumes fewer than half the intervals are low (the median is then the healthy
//! level).

use std::time::Duration;

use super::latency::LatencyRecorder;

/// How many robust spreads below the median an interval must also be to be low.
pub const NOISE_SPREADS: f64 = 5.0;

/// The default `--dip`: 10 % below the run's median.
pub const DEFAULT_DIP: f64 = 0.10;

/// The window of the stability figure: the worst minute.
pub const STABILITY_WINDOW: Duration = Duration::from_secs(60);

/// One closed interval of a soak.
#[derive(Debug, Clone)]
pub struct Interval {
    /// 0-based position: it spans `index * length` to `(index + 1) * length`.
    pub index: u64,
    pub start: Duration,
    pub end: Duration,
    /// Iteration times (mean over ranks) of the steps that ended in it; empty when
    /// no collective completed in the interval (a stall).
    pub recorder: LatencyRecorder,
}

/// Bins steps (an iteration, or the iterations between two timing events) by the
/// time they ended into intervals of a fixed length. An interval closes once a
/// step ends after it; intervals in which nothing ended close empty.
#[derive(Debug)]
pub struct IntervalBins {
    length: Duration,
    current: u64,
    recorder: LatencyRecorder,
}

impl IntervalBins {
    /// Bins of `length` (more than zero).
    pub fn new(length: Duration) -> IntervalBins {
        IntervalBins {
            length: length.max(Duration::from_millis(1)),
            current: 0,
            recorder: LatencyRecorder::new(),
        }
    }

    pub fn length(&self) -> Duration {
        self.length
    }

    fn index_of(&self, at: Duration) -> u64 {
        (at.as_nanos() / self.length.as_nanos()) as u64
    }

    fn close_until(&mut self, index: u64, closed: &mut Vec<Interval>) {
        while self.current < index {
            let i = self.current;
            closed.push(Interval {
                index: i,
                start: self.length * i as u32,
                end: self.length * (i as u32 + 1),
                recorder: std::mem::take(&mut self.recorder),
            });
            self.current += 1;
        }
    }

    /// Adds a step of `iterations` that took `total_ns` and ended at `end`; returns
    /// the intervals this closes, in order.
    pub fn add(&mut self, end: Duration, total_ns: u64, iterations: u64) -> Vec<Interval> {
        let mut closed = Vec::new();
        let index = self.index_of(end).max(self.current);
        self.close_until(index, &mut closed);
        self.recorder.record_launch(total_ns, iterations);
        closed
    }

    /// Closes every interval that ended before `now`: those in which nothing
    /// ended (a stall) close empty.
    pub fn tick(&mut self, now: Duration) -> Vec<Interval> {
        let mut closed = Vec::new();
        let index = self.index_of(now);
        self.close_until(index, &mut closed);
        closed
    }

    /// Closes the interval in progress at the soak's end, `end`: kept when it has at
    /// least half an interval's length (a short tail would read as a dip).
    pub fn finish(mut self, end: Duration) -> Vec<Interval> {
        let mut closed = self.tick(end);
        let start = self.length * self.current as u32;
        if end.saturating_sub(start) * 2 >= self.length && self.recorder.count() > 0 {
            closed.push(Interval {
                index: self.current,
                start,
                end,
                recorder: self.recorder,
            });
        }
        closed
    }
}

/// Consecutive low intervals: `first..=last` (positions in the series).
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub first: usize,
    pub last: usize,
    /// The lowest interval's shortfall from the median (0.38: 38 % below).
    pub depth: f64,
    /// The episode's mean shortfall from the median.
    pub mean_drop: f64,
}

/// `median` and the robust spread (1.4826 x MAD) of the finite values; `None` when
/// there are none.
pub fn median_and_spread(values: &[f64]) -> Option<(f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let median = super::median(finite.iter().copied())?;
    let mad = super::median(finite.iter().map(|v| (v - median).abs()))?;
    Some((median, 1.4826 * mad))
}

/// The scatter of a series from one interval to the next: the median absolute
/// difference of neighbours, scaled to a normal standard deviation (1.4826 / sqrt 2).
/// A level shift (a dip's start and end) adds two large differences, not many.
pub fn noise_spread(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let diffs = finite.windows(2).map(|w| (w[1] - w[0]).abs());
    Some(super::median(diffs)? * 1.4826 / std::f64::consts::SQRT_2)
}

/// The episodes of a bandwidth series (one value per interval; 0 for an interval
/// without a completed collective): runs of low intervals, where one healthy
/// interval between two low ones does not split an episode (a dip that straddles
/// interval edges). `threshold` is the fraction below the median (0.10).
pub fn find_episodes(values: &[f64], threshold: f64) -> Vec<Episode> {
    let (Some((median, _)), Some(spread)) = (median_and_spread(values), noise_spread(values))
    else {
        return Vec::new();
    };
    if median <= 0.0 {
        return Vec::new();
    }
    // Hysteresis: an episode needs one interval below both limits, and spans its
    // neighbours below the threshold alone (a noisy estimate of the spread cannot
    // split one dip into pieces).
    let lenient = median * (1.0 - threshold);
    let strict = lenient.min(median - NOISE_SPREADS * spread);
    let below = |v: f64, limit: f64| !v.is_finite() || v < limit;
    let low: Vec<bool> = values.iter().map(|v| below(*v, lenient)).collect();
    let mut episodes: Vec<Episode> = Vec::new();
    let mut i = 0;
    while i < low.len() {
        if !low[i] {
            i += 1;
            continue;
        }
        let first = i;
        let mut last = i;
        let mut j = i + 1;
        while j < low.len() {
            if low[j] {
                last = j;
                j += 1;
            } else if j + 1 < low.len() && low[j + 1] {
                j += 1;
            } else {
                break;
            }
        }
        i = last + 1;
        if !(first..=last).any(|k| below(values[k], strict)) {
            continue;
        }
        let drops: Vec<f64> = (first..=last)
            .map(|k| 1.0 - values[k].max(0.0) / median)
            .map(|d| if d.is_finite() { d } else { 1.0 })
            .collect();
        episodes.push(Episode {
            first,
            last,
            depth: drops.iter().copied().fold(0.0, f64::max),
            mean_drop: drops.iter().sum::<f64>() / drops.len() as f64,
        });
    }
    episodes
}

/// How steady a soak's bandwidth stayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stability {
    pub median: f64,
    /// The worst window's median over the run's median (1: as steady as it gets).
    pub worst_window_ratio: f64,
    /// Where the worst window starts (position in the series) and how many
    /// intervals it spans (a quarter of a run shorter than two windows).
    pub worst_window_start: usize,
    pub window_len: usize,
    /// Coefficient of variation of the interval bandwidths.
    pub cv: f64,
}

impl Stability {
    /// Of a series of `interval`-long values; `None` for an empty one.
    pub fn of(values: &[f64], interval: Duration) -> Option<Stability> {
        let (median, _) = median_and_spread(values)?;
        let per_window = (STABILITY_WINDOW.as_secs_f64() / interval.as_secs_f64()).round();
        // A soak shorter than two windows is judged on its worst quarter instead.
        let per_window = per_window.max(1.0) as usize;
        let window_len = if values.len() >= 2 * per_window {
            per_window
        } else {
            (values.len() / 4).max(1)
        };
        let (worst_window_start, worst) = (0..=values.len() - window_len)
            .filter_map(|s| Some((s, super::median(values[s..s + window_len].iter().copied())?)))
            .fold(
                (0, f64::INFINITY),
                |best, (s, m)| {
                    if m < best.1 {
                        (s, m)
                    } else {
                        best
                    }
                },
            );
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        Some(Stability {
            median,
            worst_window_ratio: if median > 0.0 { worst / median } else { 0.0 },
            worst_window_start,
            window_len,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::splitmix::SplitMix64;

    fn noise(seed: u64, n: usize, level: f64, sd: f64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed, 0);
        (0..n).map(|_| level * (1.0 + sd * rng.normal())).collect()
    }

    #[test]
    fn a_steady_series_rarely_has_an_episode() {
        // The A/A side: of 2,000 noise-only soaks of 60 intervals, at 1 % and at 4 %
        // scatter (a busy shared machine), at most one in a thousand finds an
        // episode: a low interval must be five spreads down (measured: none at
        // either).
        let mut found = [0, 0];
        for seed in 0..1000 {
            for (i, sd) in [0.01, 0.04].into_iter().enumerate() {
                let v = noise(seed, 60, 100.0, sd);
                found[i] += usize::from(!find_episodes(&v, DEFAULT_DIP).is_empty());
            }
        }
        assert_eq!(found[0], 0, "false episodes in 1000 steady soaks at 1 %");
        assert!(
            found[1] <= 1,
            "{} false episodes in 1000 soaks at 4 %",
            found[1]
        );
    }

    #[test]
    fn a_dip_is_found_where_it_is_at_every_seed() {
        // The known-difference side: a 30 % dip of 6 intervals at 20..26 in 1 %
        // scatter is found, at its place, in every one of 1,000 soaks.
        for seed in 0..1000 {
            let mut v = noise(seed, 60, 100.0, 0.01);
            for x in &mut v[20..26] {
                *x *= 0.7;
            }
            let e = find_episodes(&v, DEFAULT_DIP);
            assert_eq!(e.len(), 1, "seed {seed}: {e:?}");
            assert_eq!((e[0].first, e[0].last), (20, 25), "seed {seed}");
            assert!((e[0].mean_drop - 0.3).abs() < 0.03, "{e:?}");
        }
    }

    #[test]
    fn a_dip_over_a_third_of_the_run_is_found_though_it_widens_the_spread_around_the_median() {
        // 6 of 20 intervals at half the bandwidth in 5 % scatter (a host soak with a
        // CPU hog), 1,000 times: the spread around the median would be 5 x wider
        // than the noise, and a noisy spread estimate would split the dip.
        let (mut found, mut extra) = (0, 0);
        for seed in 0..1000 {
            let mut v = noise(seed, 20, 2.0, 0.05);
            for x in &mut v[10..16] {
                *x *= 0.5;
            }
            let e = find_episodes(&v, DEFAULT_DIP);
            // The dip, its edges at most two intervals off (a healthy interval two
            // spreads down beside a dip reads as part of it), and nothing else.
            let dip = |x: &Episode| (8..=10).contains(&x.first) && (15..=17).contains(&x.last);
            found += usize::from(e.iter().any(dip));
            extra += usize::from(e.iter().any(|x| !dip(x)));
        }
        // Measured: 1000 of 1000 found, 3 with an extra one-interval episode (a
        // healthy interval 15 % down, where 20 intervals underestimated the noise).
        assert!(extra <= 5, "{extra} of 1000 with an extra episode");
        assert!(found >= 995, "found in {found} of 1000");
    }

    #[test]
    fn a_dip_smaller_than_the_threshold_or_the_noise_is_not_an_episode() {
        let mut v = noise(7, 60, 100.0, 0.01);
        for x in &mut v[20..26] {
            *x *= 0.95;
        }
        assert!(find_episodes(&v, DEFAULT_DIP).is_empty());
        // Scatter of 10 % hides a 15 % dip: five spreads are 50 %.
        let mut v = noise(7, 60, 100.0, 0.10);
        for x in &mut v[20..26] {
            *x *= 0.85;
        }
        assert!(find_episodes(&v, DEFAULT_DIP).is_empty());
    }

    #[test]
    fn one_healthy_interval_inside_a_dip_does_not_split_it_and_stalls_are_low() {
        let mut v = vec![100.0; 40];
        v[10] = 50.0;
        v[12] = 0.0;
        v[13] = 60.0;
        v[30] = 70.0;
        let e = find_episodes(&v, DEFAULT_DIP);
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!((e[0].first, e[0].last), (10, 13));
        assert_eq!(e[0].depth, 1.0);
        assert_eq!((e[1].first, e[1].last), (30, 30));
        assert!((e[1].depth - 0.3).abs() < 1e-9);
    }

    #[test]
    fn stability_is_the_worst_minutes_median_and_the_cv() {
        let mut v = vec![100.0; 300];
        for x in &mut v[100..140] {
            *x = 50.0;
        }
        let s = Stability::of(&v, Duration::from_secs(1)).unwrap();
        assert_eq!(s.window_len, 60);
        assert_eq!(s.median, 100.0);
        assert_eq!(s.worst_window_ratio, 0.5);
        // The first window that is more than half dip starts at 71.
        assert!((71..=110).contains(&s.worst_window_start), "{s:?}");
        assert!(s.cv > 0.1);
        let short = Stability::of(&[10.0, 10.0, 10.0], Duration::from_secs(1)).unwrap();
        assert_eq!(
            (short.window_len, short.worst_window_ratio, short.cv),
            (1, 1.0, 0.0)
        );
        let mut dipped = vec![10.0; 30];
        for x in &mut dipped[10..17] {
            *x = 5.0;
        }
        // Half a minute: judged on its worst quarter.
        let quarter = Stability::of(&dipped, Duration::from_secs(1)).unwrap();
        // The first window that is mostly dip starts at 7.
        assert_eq!((quarter.window_len, quarter.worst_window_start), (7, 7));
        assert_eq!(quarter.worst_window_ratio, 0.5);
        assert!(Stability::of(&[], Duration::from_secs(1)).is_none());
    }

    #[test]
    fn steps_land_in_the_interval_they_end_in_and_stalls_close_empty() {
        let mut bins = IntervalBins::new(Duration::from_millis(100));
        assert!(bins.add(Duration::from_millis(50), 1_000, 1).is_empty());
        assert!(bins.add(Duration::from_millis(99), 3_000, 1).is_empty());
        let closed = bins.add(Duration::from_millis(350), 5_000, 1);
        assert_eq!(closed.len(), 3);
        assert_eq!(closed[0].recorder.count(), 2);
        assert_eq!(
            (closed[1].recorder.count(), closed[2].recorder.count()),
            (0, 0)
        );
        assert_eq!(closed[2].start, Duration::from_millis(200));
        assert_eq!(bins.tick(Duration::from_millis(420)).len(), 1);
        // The last interval holds one step and 40 % of its length: dropped.
        let mut tail = IntervalBins::new(Duration::from_millis(100));
        assert_eq!(tail.add(Duration::from_millis(120), 1_000, 1).len(), 1);
        assert!(tail.finish(Duration::from_millis(140)).is_empty());
        let mut kept = IntervalBins::new(Duration::from_millis(100));
        kept.add(Duration::from_millis(120), 1_000, 1);
        let closed = kept.finish(Duration::from_millis(160));
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].end, Duration::from_millis(160));
    }
}
