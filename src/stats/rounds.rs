//! Statistics over rounds. A sweep measures each (config, rank count) in several
//! independent process groups, its rounds; each round of a case is summed up by its
//! median iteration time. The rounds, not the iterations, are the independent
//! measurements of what a fresh set of processes gets (core and page placement,
//! caches, clocks, links): intervals over them include the variation between process
//! groups, which intervals over the iterations of one group cannot see and which is
//! often larger (on a 2-core VM: 7 % between groups at small sizes, and one group in
//! ten 60 % slower at 128 KiB, against well under 1 % within a group).
//!
//! Both intervals here are distribution-free, so that a round in a slow mode widens
//! an interval instead of dragging a mean, and neither assumes normal round medians:
//!
//! - [`median_interval`]: the median of a case over its rounds lies between two
//!   order statistics of the round medians, with exact binomial coverage of at least
//!   95 %. It needs [`MIN_ROUNDS`] (6) rounds: with 5, the lowest and highest round
//!   cover the median only 93.75 % of the time.
//! - [`shift`]: the change between two cases is the Hodges-Lehmann estimate of the
//!   shift between their log round medians (the median of every pairwise difference),
//!   with the interval of the Mann-Whitney test inverted (Lehmann 1963): order
//!   statistics of the pairwise differences, at least 95 % under the shift model,
//!   exact for small counts, the normal approximation beyond [`EXACT_PAIRS`]. It needs
//!   enough rounds that the most extreme ordering is rarer than 2.5 %: 4 a side, or 3
//!   against 5.
//!
//! Assumptions: rounds are independent and, within a case, alike (exchangeable), which
//! interleaving the configs' rounds in time helps make true; a machine that drifts
//! during a sweep moves every config's later rounds alike. The configs of a round run
//! in an order drawn afresh each round, the last too ([`round_order`]): in a fixed order each config
//! would always follow the same other one, and what a group leaves behind for the
//! next (clocks, memory still being freed, caches) would bias their comparison by
//! several percent. Pure: no I/O.

/// Fewest rounds that give a 95 % interval of the median.
pub const MIN_ROUNDS: usize = 6;

/// Pairs (rounds x rounds) up to which the Mann-Whitney distribution is exact.
pub const EXACT_PAIRS: usize = 900;

/// One minus the confidence of the intervals.
pub const ALPHA: f64 = 0.05;

/// The order in which the `n` groups of a round run: a permutation drawn afresh for
/// each `round` from `seed` (one per sweep). Measured on the 2-core VM with the
/// configs in a fixed order, a config after one 25 % slower came out 3 to 6 % slower
/// than an identical config after itself, in every case; shuffled, which config
/// precedes which is left to chance, and what is left of the effect is noise between
/// rounds that their interval holds.
pub fn round_order(n: usize, seed: u64, round: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = super::splitmix::SplitMix64::new(seed, u64::from(round));
    // Fisher-Yates.
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The 95 % interval of the median of `values` (round medians, any unit): the
/// `k`-th lowest and `k`-th highest value for the largest `k` whose binomial tail
/// P(Bin(n, 1/2) < k) is at most 2.5 %. `None` with fewer than [`MIN_ROUNDS`] values
/// or a value that is not finite.
pub fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < MIN_ROUNDS || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let k = median_rank(n)?;
    Some((sorted[k - 1], sorted[n - k]))
}

/// [`median_interval`] at level 1 - `alpha` (the tails `alpha / 2` each): `None` where
/// the rounds are too few for any interval at that level.
pub fn median_interval_at(values: &[f64], alpha: f64) -> Option<(f64, f64)> {
    let n = values.len();
    if n == 0 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let k = median_rank_at(n, alpha)?;
    Some((sorted[k - 1], sorted[n - k]))
}

/// The 1-based rank `k` of [`median_interval`]: the largest with P(B <= k - 1) <= 2.5 %
/// for B ~ Bin(n, 1/2); the `k`-th lowest and `k`-th highest of `n` samples cover the
/// median with at least 95 %. `None` below [`MIN_ROUNDS`] samples, where no pair
/// does.
pub fn median_rank(n: usize) -> Option<usize> {
    if n < MIN_ROUNDS {
        return None;
    }
    median_rank_at(n, ALPHA)
}

/// [`median_rank`] at level 1 - `alpha`.
fn median_rank_at(n: usize, alpha: f64) -> Option<usize> {
    // P(B = i) for n trials, accumulated in log space so that large n stays finite.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut tail = 0.0;
    let mut k = 0;
    for i in 0..=n / 2 {
        tail += (ln_choose(n, i) + ln_half_n).exp();
        if tail > alpha / 2.0 {
            break;
        }
        k = i + 1;
    }
    (k >= 1).then_some(k)
}

fn ln_choose(n: usize, k: usize) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

fn ln_factorial(n: usize) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

/// How one case's rounds compare with another's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// Hodges-Lehmann estimate of `cand / base - 1` (a fraction: +0.10 is 10 % slower).
    pub change: f64,
    /// Its interval, at least 95 %; always contains `change`.
    pub ci: (f64, f64),
    /// Coverage of the interval under the shift model (at least 0.95).
    pub confidence: f64,
}

/// The change from `base` to `cand` (each a case's round medians, positive, one unit),
/// as the shift of their logarithms (see the module comment). `None` when a value is
/// not positive and finite, or when the counts are too small for a 95 % interval.
pub fn shift(base: &[f64], cand: &[f64]) -> Option<Shift> {
    shift_at(base, cand, ALPHA)
}

/// [`shift`] with an interval of at least `1 - alpha` (a member of a family of
/// intervals that must hold together: `alpha` is the family's rate over its size).
/// `None` where the counts are too small for that level.
pub fn shift_at(base: &[f64], cand: &[f64], alpha: f64) -> Option<Shift> {
    let valid = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x > 0.0);
    if base.is_empty() || cand.is_empty() || !valid(base) || !valid(cand) {
        return None;
    }
    let (n, m) = (base.len(), cand.len());
    let (c, confidence) = mann_whitney_critical(n, m, alpha)?;
    let d: Vec<f64> = cand
        .iter()
        .flat_map(|y| base.iter().map(move |x| y.ln() - x.ln()))
        .collect();
    Some(hodges_lehmann(d, c, confidence))
}

/// The shift from log differences (pairwise, or Walsh averages): their median as the
/// estimate, the `c`-th lowest and highest as the interval, as relative changes.
fn hodges_lehmann(mut d: Vec<f64>, c: usize, confidence: f64) -> Shift {
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let estimate = if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    };
    let (lo, hi) = (d[c], d[n - 1 - c]);
    let change = estimate.exp() - 1.0;
    Shift {
        change,
        ci: ((lo.exp() - 1.0).min(change), (hi.exp() - 1.0).max(change)),
        confidence,
    }
}

/// The change from `base` to `cand` measured in the same rounds, round `i` of each
/// side run back to back (two configs of one sweep): the Hodges-Lehmann estimate of
/// the median of the per-round log ratios (the median of their Walsh averages), with
/// the interval of the Wilcoxon signed-rank test inverted (Tukey's order statistics
/// of the Walsh averages; at least 95 %, exact up to [`EXACT_SIGNED_RANKS`] rounds).
/// Pairing takes out what a round did to both sides alike (a machine slower for a
/// minute, another core placement): only the difference within each round is noise.
/// Assumes the per-round log ratios are symmetric about their median. `None` unless
/// both sides have the same number of positive, finite values, and at least 6 (with
/// 5, no interval reaches 95 %).
pub fn paired_shift(base: &[f64], cand: &[f64]) -> Option<Shift> {
    paired_shift_at(base, cand, ALPHA)
}

/// [`paired_shift`] with an interval of at least `1 - alpha`; `None` where `n`
/// rounds cannot reach that level (the most extreme signs have probability
/// 2^(1-n): 0.05 / 25 needs 10 rounds, 0.05 / 75 needs 12).
pub fn paired_shift_at(base: &[f64], cand: &[f64], alpha: f64) -> Option<Shift> {
    let valid = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x > 0.0);
    if base.len() != cand.len() || !valid(base) || !valid(cand) {
        return None;
    }
    let n = base.len();
    let (c, confidence) = signed_rank_critical(n, alpha)?;
    let d: Vec<f64> = base
        .iter()
        .zip(cand)
        .map(|(b, c)| c.ln() - b.ln())
        .collect();
    let walsh: Vec<f64> = (0..n)
        .flat_map(|i| {
            let di = d[i];
            d[i..].iter().map(move |dj| (di + dj) / 2.0)
        })
        .collect();
    Some(hodges_lehmann(walsh, c, confidence))
}

/// Rounds up to which the signed-rank distribution is exact.
pub const EXACT_SIGNED_RANKS: usize = 60;

/// The largest `c` with P(T <= c) <= alpha / 2 for the Wilcoxon signed-rank statistic
/// of `n` pairs, and the two-sided coverage 1 - 2 P(T <= c); `None` when even T = 0 is
/// more likely than that.
fn signed_rank_critical(n: usize, alpha: f64) -> Option<(usize, f64)> {
    if n == 0 {
        return None;
    }
    if n <= EXACT_SIGNED_RANKS {
        // P(T = t): each rank 1..=n in the sum with probability 1/2.
        let total = n * (n + 1) / 2;
        let mut p = vec![0.0; total + 1];
        p[0] = 1.0;
        for rank in 1..=n {
            for t in (rank..=total).rev() {
                p[t] = (p[t] + p[t - rank]) / 2.0;
            }
            for q in p.iter_mut().take(rank) {
                *q /= 2.0;
            }
        }
        let mut cumulative = 0.0;
        let mut critical = None;
        for (t, q) in p.iter().enumerate() {
            if cumulative + q > alpha / 2.0 {
                break;
            }
            cumulative += q;
            critical = Some((t, 1.0 - 2.0 * cumulative));
        }
        return critical;
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    let c = (mean - super::normal::quantile(1.0 - alpha / 2.0) * sd - 0.5).floor();
    (c >= 0.0).then_some((c as usize, 1.0 - alpha))
}

/// How far two single rounds of one case differ, 95 % of the time: 1.96 x sqrt(2) x
/// the spread of a round's log median within its case (the median absolute
/// deviation x 1.4826 of each side, pooled; robust to a round in a slow mode), as a
/// relative change. Two runs differ by at least this much when each run is no more
/// than one more round: the noise floor of a comparison between runs. `None` with
/// fewer than 3 rounds a side or a value that is not positive.
pub fn noise_floor(base: &[f64], cand: &[f64]) -> Option<f64> {
    let spread = |v: &[f64]| -> Option<f64> {
        if v.len() < 3 || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
            return None;
        }
        let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let mid = super::median(logs.iter().copied())?;
        let mad = super::median(logs.iter().map(|l| (l - mid).abs()))?;
        Some(1.4826 * mad)
    };
    let (a, b) = (spread(base)?, spread(cand)?);
    let pooled = ((a * a + b * b) / 2.0).sqrt();
    Some((1.959_964 * std::f64::consts::SQRT_2 * pooled).exp() - 1.0)
}

/// The largest `c` with P(U <= c) <= alpha / 2 for the Mann-Whitney U of `n` and `m`
/// observations, and the resulting two-sided coverage 1 - 2 P(U <= c). `None` when
/// even U = 0 is more likely than that (too few observations for the level).
fn mann_whitney_critical(n: usize, m: usize, alpha: f64) -> Option<(usize, f64)> {
    if n * m <= EXACT_PAIRS {
        let probabilities = mann_whitney_distribution(n, m);
        let mut cumulative = 0.0;
        let mut critical = None;
        for (u, p) in probabilities.iter().enumerate() {
            if cumulative + p > alpha / 2.0 {
                break;
            }
            cumulative += p;
            critical = Some((u, 1.0 - 2.0 * cumulative));
        }
        return critical;
    }
    // Normal approximation with continuity correction: U <= c when
    // (c + 0.5 - nm/2) / sd <= -z (1.96 at 95 %).
    let (nf, mf) = (n as f64, m as f64);
    let mean = nf * mf / 2.0;
    let sd = (nf * mf * (nf + mf + 1.0) / 12.0).sqrt();
    let c = (mean - super::normal::quantile(1.0 - alpha / 2.0) * sd - 0.5).floor();
    (c >= 0.0).then_some((c as usize, 1.0 - alpha))
}

/// P(U = u) for u = 0..=n*m under the null hypothesis (every ordering of the n + m
/// observations equally likely), by the recurrence on the largest observation:
/// f(n, m, u) = f(n - 1, m, u - m) + f(n, m - 1, u), as probabilities.
fn mann_whitney_distribution(n: usize, m: usize) -> Vec<f64> {
    // dist[j] holds the distribution for (i, j), for the current i.
    let mut dist: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for i in 1..=n {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        next.push(vec![1.0]);
        for j in 1..=m {
            let size = i * j + 1;
            let mut p = vec![0.0; size];
            let (wi, wj) = (i as f64 / (i + j) as f64, j as f64 / (i + j) as f64);
            // The largest observation is from the first sample (weight i / (i + j)):
            // it exceeds all j of the second, adding j to U.
            for (u, q) in dist[j].iter().enumerate() {
                p[u + j] += wi * q;
            }
            // From the second sample: U unchanged.
            for (u, q) in next[j - 1].iter().enumerate() {
                p[u] += wj * q;
            }
            next.push(p);
        }
        dist = next;
    }
    dist.pop().unwrap_or_else(|| vec![1.0])
}

#[cfg(test)]
mod tests {
    use super::super::splitmix::SplitMix64;
    use super::*;

    #[test]
    fn a_family_level_needs_more_rounds_and_widens_the_interval() {
        // 0.05 / 25: the all-one-sign outcome (2^(1-n)) must be rarer than 0.002.
        assert_eq!(signed_rank_critical(9, 0.002), None);
        let (c, conf) = signed_rank_critical(10, 0.002).unwrap();
        assert_eq!(c, 0);
        assert!(conf >= 0.998, "{conf}");
        // At 15 rounds the family interval is the wider one: a smaller critical value.
        assert!(
            signed_rank_critical(15, 0.002).unwrap().0 < signed_rank_critical(15, ALPHA).unwrap().0
        );
        let d: Vec<f64> = (0..15).map(|i| 100.0 + i as f64).collect();
        let c: Vec<f64> = d
            .iter()
            .enumerate()
            .map(|(i, x)| x * (1.1 + 0.01 * (i % 3) as f64))
            .collect();
        let at95 = paired_shift(&d, &c).unwrap();
        let family = paired_shift_at(&d, &c, 0.002).unwrap();
        assert!(
            family.ci.0 <= at95.ci.0 && family.ci.1 >= at95.ci.1,
            "{at95:?} {family:?}"
        );
        assert!(mann_whitney_critical(5, 5, 0.002).is_none());
        assert!(mann_whitney_critical(8, 8, 0.002).is_some());
    }

    #[test]
    fn the_signed_rank_interval_needs_six_rounds_and_matches_the_tables() {
        assert_eq!(signed_rank_critical(5, ALPHA), None);
        // n = 6: T = 0 has probability 1/64 = 1.6 %, so the extremes cover 96.9 %.
        let (c, conf) = signed_rank_critical(6, ALPHA).unwrap();
        assert_eq!(c, 0);
        assert!((conf - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        // Published two-sided 5 % critical values: n = 10: 8, n = 15: 25, n = 20: 52.
        assert_eq!(signed_rank_critical(10, ALPHA).unwrap().0, 8);
        assert_eq!(signed_rank_critical(15, ALPHA).unwrap().0, 25);
        assert_eq!(signed_rank_critical(20, ALPHA).unwrap().0, 52);
        // The normal approximation just past the exact range is close to exact.
        let exact = signed_rank_critical(EXACT_SIGNED_RANKS, ALPHA).unwrap().0 as f64;
        let approx = signed_rank_critical(EXACT_SIGNED_RANKS + 1, ALPHA)
            .unwrap()
            .0 as f64;
        assert!(approx > exact && approx < exact * 1.1, "{exact} {approx}");
    }

    #[test]
    fn pairing_cancels_what_a_round_did_to_both_sides() {
        // Rounds at very different speeds (a machine slower for a while), the
        // candidate 3 % slower in each: unpaired, the spread hides it; paired, it
        // is found, with an interval around +3 %.
        let base = [10.0, 10.4, 15.0, 9.8, 14.2, 10.1, 20.0, 10.3, 9.9];
        let wiggle = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001, 1.0];
        let cand: Vec<f64> = base.iter().zip(wiggle).map(|(b, w)| b * 1.03 * w).collect();
        let unpaired = shift(&base, &cand).unwrap();
        assert!(unpaired.ci.0 < 0.0, "{unpaired:?}");
        let paired = paired_shift(&base, &cand).unwrap();
        assert!((paired.change - 0.03).abs() < 0.003, "{paired:?}");
        assert!(paired.ci.0 > 0.02 && paired.ci.1 < 0.04, "{paired:?}");
        assert!(paired.confidence >= 0.95);
        // Identical sides: no change, a point interval.
        let same = paired_shift(&base, &base).unwrap();
        assert_eq!((same.change, same.ci), (0.0, (0.0, 0.0)));
        // Unequal counts, too few rounds, a value that is not positive: none.
        assert_eq!(paired_shift(&base, &cand[..8]), None);
        assert_eq!(paired_shift(&base[..5], &cand[..5]), None);
        assert_eq!(paired_shift(&[0.0; 6], &[1.0; 6]), None);
    }

    #[test]
    fn round_orders_are_permutations_that_balance_who_goes_after_whom() {
        // Three configs over 300 rounds: each config follows each other one (within
        // a round, or from the round before) about equally often.
        let mut after = [[0u32; 3]; 3];
        let mut last = None;
        for round in 1..=300 {
            let order = round_order(3, 7, round);
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2]);
            for i in order {
                if let Some(p) = last {
                    after[i][p] += 1;
                }
                last = Some(i);
            }
        }
        for (i, row) in after.iter().enumerate() {
            for (p, n) in row.iter().enumerate() {
                // 899 steps: a config after itself only across a round's boundary
                // (about 100 in all), each ordered pair of two configs about 133.
                let expected = if i == p { 15..=55 } else { 105..=165 };
                assert!(expected.contains(n), "{i} after {p}: {n} ({after:?})");
            }
        }
        assert_eq!(round_order(3, 7, 4), round_order(3, 7, 4), "reproducible");
        assert_ne!(
            (1..=6).map(|r| round_order(4, 1, r)).collect::<Vec<_>>(),
            (1..=6).map(|r| round_order(4, 2, r)).collect::<Vec<_>>(),
            "each sweep its own orders"
        );
        assert_eq!(round_order(1, 3, 1), vec![0]);
        assert!(round_order(0, 3, 1).is_empty());
    }

    #[test]
    fn the_median_interval_needs_six_rounds_and_uses_exact_ranks() {
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
        // n = 6: the extremes cover 1 - 2/64 = 96.9 %.
        assert_eq!(
            median_interval(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]),
            Some((1.0, 6.0))
        );
        // n = 9: P(B <= 1) = 10/512 < 2.5 %, P(B <= 2) = 46/512 > 2.5 %: ranks 2 and 8.
        let nine: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(median_interval(&nine), Some((2.0, 8.0)));
        // n = 20: ranks 6 and 15 (P(B <= 5) = 2.07 %).
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_interval(&twenty), Some((6.0, 15.0)));
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]), None);
    }

    #[test]
    fn mann_whitney_critical_values_match_the_tables() {
        // Two-sided 5 % critical values of U (published tables): the interval uses
        // the differences past them.
        for (n, m, c) in [
            (4, 4, 0),
            (5, 5, 2),
            (6, 6, 5),
            (7, 7, 8),
            (8, 8, 13),
            (9, 9, 17),
            (10, 10, 23),
            (5, 9, 7),
        ] {
            let (got, confidence) = mann_whitney_critical(n, m, ALPHA).unwrap();
            assert_eq!(got, c, "{n} x {m}");
            assert!(confidence >= 0.95, "{n} x {m}: {confidence}");
        }
        assert_eq!(mann_whitney_critical(3, 3, ALPHA), None);
        assert_eq!(mann_whitney_critical(3, 4, ALPHA), None);
        assert!(mann_whitney_critical(3, 5, ALPHA).is_some());
        // The approximation takes over smoothly: 30 x 30 is the last exact one, and
        // the approximation there agrees within one.
        let (exact, _) = mann_whitney_critical(30, 30, ALPHA).unwrap();
        let (nf, mean) = (30.0f64, 450.0);
        let approx = (mean - 1.959_964 * (nf * nf * (2.0 * nf + 1.0) / 12.0).sqrt() - 0.5).floor();
        assert!((exact as f64 - approx).abs() <= 1.0, "{exact} {approx}");
        assert_eq!(mann_whitney_critical(31, 31, ALPHA).unwrap().0, 340);
    }

    #[test]
    fn the_null_distribution_sums_to_one_and_is_symmetric() {
        let p = mann_whitney_distribution(5, 7);
        assert_eq!(p.len(), 36);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for u in 0..p.len() {
            assert!((p[u] - p[p.len() - 1 - u]).abs() < 1e-12);
        }
        // P(U = 0) = 1 / C(12, 5) = 1 / 792.
        assert!((p[0] - 1.0 / 792.0).abs() < 1e-15);
    }

    #[test]
    fn the_noise_floor_is_the_spread_of_single_rounds_and_ignores_a_slow_one() {
        // Log medians 1 % apart around 10: MAD 0.01, floor 1.96 x 1.414 x 1.48 %.
        let even = [9.9, 10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 10.0, 10.1];
        let floor = noise_floor(&even, &even).unwrap();
        assert!((floor - 0.0414).abs() < 0.002, "{floor}");
        let mut slow = even;
        slow[4] = 16.0;
        assert!((noise_floor(&even, &slow).unwrap() - floor).abs() < 0.002);
        assert_eq!(noise_floor(&[1.0, 2.0], &even), None);
    }

    #[test]
    fn a_shift_is_estimated_and_bounded() {
        let base = [10.0, 10.2, 9.9, 10.1, 10.05, 9.95, 10.0, 10.15, 9.85];
        let same = shift(&base, &base).unwrap();
        assert!(same.change.abs() < 1e-12);
        assert!(same.ci.0 < 0.0 && same.ci.1 > 0.0, "{same:?}");
        let slower: Vec<f64> = base.iter().map(|x| x * 1.10).collect();
        let s = shift(&base, &slower).unwrap();
        assert!((s.change - 0.10).abs() < 1e-9, "{s:?}");
        assert!(s.ci.0 > 0.05 && s.ci.1 < 0.15, "{s:?}");
        // One round of each side in a slow mode: the estimate barely moves.
        let mut outlier = slower.clone();
        outlier[3] *= 1.6;
        let mut base_outlier = base;
        base_outlier[0] *= 1.6;
        let s = shift(&base_outlier, &outlier).unwrap();
        assert!((s.change - 0.10).abs() < 0.02, "{s:?}");
        assert!(s.ci.0 > 0.02, "still found: {s:?}");
        assert_eq!(shift(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(shift(&base, &[0.0; 9]), None);
    }

    /// The intervals' coverage on simulated rounds: log-normal round medians with a
    /// 3 % spread, and one round in ten 60 % slower. At least 95 % in theory; 2000
    /// trials give a standard error of 0.5 %.
    #[test]
    fn intervals_cover_the_truth_at_least_ninety_five_percent_of_the_time() {
        let mut rng = SplitMix64::new(7, 0);
        let draw = |shift: f64, rng: &mut SplitMix64| -> Vec<f64> {
            (0..9)
                .map(|_| {
                    let slow = if rng.uniform() < 0.1 { 1.6 } else { 1.0 };
                    10.0 * (1.0 + shift) * (0.03 * rng.normal()).exp() * slow
                })
                .collect()
        };
        let trials = 2000;
        let (mut shift_covered, mut median_covered) = (0, 0);
        for _ in 0..trials {
            let a = draw(0.0, &mut rng);
            let b = draw(0.10, &mut rng);
            let s = shift(&a, &b).unwrap();
            if s.ci.0 <= 0.10 && 0.10 <= s.ci.1 {
                shift_covered += 1;
            }
            // The true median of a round median: 90 % of the rounds log-normal around
            // 10, 10 % above: the 0.5 / 0.9 quantile of the log-normal, 10.042.
            let (lo, hi) = median_interval(&a).unwrap();
            if lo <= 10.042 && 10.042 <= hi {
                median_covered += 1;
            }
        }
        let rate = |k: usize| k as f64 / trials as f64;
        assert!(rate(shift_covered) >= 0.94, "shift {}", rate(shift_covered));
        assert!(
            rate(median_covered) >= 0.94,
            "median {}",
            rate(median_covered)
        );
    }
}
