//! Rounds: a sweep measures each (config, rank count) in several independent process
//! groups, its rounds, and each round of a case is summed up by its median iteration
//! time. Here: the order the configs of a round run in ([`round_order`]: balanced
//! for carry-over), and the distribution-free interval of a case's median over its
//! rounds ([`median_interval`], for results.csv's `median_ci_*`). Decisions read
//! the rounds through `stats::change`. Pure: no I/O.

/// Fewest rounds that give a 95 % interval of the median.
pub const MIN_ROUNDS: usize = 6;

/// One minus the confidence of the median's interval.
const ALPHA: f64 = 0.05;

/// The rows of a Williams design for `n` treatments (Williams 1949): orders in which
/// every treatment comes first equally often and follows every other equally often
/// (once each in `n` rows for even `n`; twice each in `2n` rows for odd `n`, the
/// rows and their mirror images). So what a process group leaves behind for the next
/// (clocks, memory still being freed, caches) falls on every config alike, and a
/// comparison of two configs carries none of it.
pub fn williams(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    // 0, 1, n-1, 2, n-2, ...: each difference between neighbours once, mod n.
    let first: Vec<usize> = (0..n)
        .map(|j| {
            if j % 2 == 1 {
                j.div_ceil(2)
            } else {
                (n - j / 2) % n
            }
        })
        .collect();
    let mut rows: Vec<Vec<usize>> = (0..n)
        .map(|i| first.iter().map(|&t| (t + i) % n).collect())
        .collect();
    if n % 2 == 1 {
        let mirrored: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirrored);
    }
    rows
}

/// The rows of [`williams`], chained so that each row starts with the treatment the
/// row before it ended with, and the last leads back to the first. A row is an edge
/// of a graph from its first treatment to its last; a cyclic Williams design holds
/// every row's mirror image (so the graph is balanced), but for even `n` its edges
/// only join `i` and `i + n/2`, so the design is taken twice, the second time with
/// the upper half of the treatments rotated by one, which joins the graph up. An
/// Eulerian circuit then uses every row once (Hierholzer's algorithm). Within the
/// rows every treatment follows every other equally often, and across two rows a
/// treatment follows itself.
pub fn chained(n: usize) -> Vec<Vec<usize>> {
    let mut rows = williams(n);
    if n < 2 {
        return rows;
    }
    if n % 2 == 0 && n > 2 {
        let half = n / 2;
        let rotate = |t: usize| {
            if t < half {
                t
            } else {
                half + (t - half + 1) % half
            }
        };
        let second: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().map(|&t| rotate(t)).collect())
            .collect();
        rows.extend(second);
    }
    // The rows leaving each treatment, not yet used.
    let mut leaving: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in rows.iter().enumerate().rev() {
        leaving[r[0]].push(i);
    }
    // Hierholzer: follow unused rows from the current treatment; at a dead end, the
    // row that led there is done.
    let mut path: Vec<usize> = Vec::new();
    let mut stack: Vec<(usize, Option<usize>)> = vec![(rows[0][0], None)];
    while let Some(&(at, row)) = stack.last() {
        match leaving[at].pop() {
            Some(next) => stack.push((rows[next][n - 1], Some(next))),
            None => {
                stack.pop();
                path.extend(row);
            }
        }
    }
    path.reverse();
    path.into_iter().map(|i| rows[i].clone()).collect()
}

/// The order in which the `n` groups of a round run: the rows of [`chained`] in
/// turn, over the groups relabelled once per sweep from `seed` (so no config is
/// always the first of the first round). Over a whole cycle every config follows
/// every other equally often, and a round begins with the config the last one ended
/// with: what a process group leaves behind for the next falls on every config alike.
pub fn round_order(n: usize, seed: u64, round: u32) -> Vec<usize> {
    let rows = chained(n);
    let mut labels: Vec<usize> = (0..n).collect();
    let mut rng = super::splitmix::SplitMix64::new(seed, 0);
    // Fisher-Yates.
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        labels.swap(i, j);
    }
    let row = &rows[(round.max(1) as usize - 1) % rows.len()];
    row.iter().map(|&t| labels[t]).collect()
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

/// The 1-based rank `k` of [`median_interval`]: the largest with P(B <= k - 1) <= 2.5 %
/// for B ~ Bin(n, 1/2); the `k`-th lowest and `k`-th highest of `n` samples cover the
/// median with at least 95 %. `None` below [`MIN_ROUNDS`] samples, where no pair
/// does.
pub fn median_rank(n: usize) -> Option<usize> {
    if n < MIN_ROUNDS {
        return None;
    }
    use statrs::distribution::{Binomial, DiscreteCDF};
    let b = Binomial::new(0.5, n as u64).ok()?;
    let k = (0..=n as u64 / 2)
        .take_while(|&i| b.cdf(i) <= ALPHA / 2.0)
        .count();
    (k >= 1).then_some(k)
}

#[cfg(test)]
mod tests;
