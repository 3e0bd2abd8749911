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
        let mut cumulative = 0.0;
        let mut critical = None;
        for (t, q) in signed_rank_distribution(n).iter().enumerate() {
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

/// P(T = t) for the Wilcoxon signed-rank statistic of `n` pairs, t = 0..=n(n+1)/2:
/// each rank 1..=n in the sum with probability 1/2.
fn signed_rank_distribution(n: usize) -> Vec<f64> {
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
    p
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
mod tests;
