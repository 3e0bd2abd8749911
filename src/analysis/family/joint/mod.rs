//! Intervals that hold together, from the rounds themselves.
//!
//! Bonferroni (each of K intervals at 1 - alpha / K) holds whatever the dependence
//! between cases, and pays for it as if they were independent. They are not: a
//! process group that runs slow runs slow at every size it measures, so a round that
//! throws one case's interval off throws the others' with it. Relabelling whole
//! rounds at once keeps that dependence: for paired rounds, swapping the two sides of
//! a round (a sign flip of its log ratio, for every case at once); for unpaired
//! ones, drawing which of the pooled rounds were the candidate's (the same draw for
//! every case).
//!
//! The test: at a hypothesised change for every case, each case's candidate rounds
//! shifted back by it, each case's statistic is its t (mean change over its
//! standard error, from the spread within each side), and the family's is the
//! largest over the cases. Under the hypothesised changes every relabelling is as
//! likely as the one measured, so the share of relabellings whose statistic is at
//! least the measured one is an exact p-value (Pitman's permutation test, with
//! Westfall and Young's maximum over the cases). A case's interval is the changes
//! for it that this test keeps at alpha, the others held at their estimates: it
//! takes the rounds' dependence as they show it, about one case's own interval where
//! the cases move as one and about Bonferroni's where they move independently. A
//! change moves each relabelling's statistic linearly, so each end is found by
//! bisection over one pass of precomputed sums.
//!
//! The change is the mean of the log round medians' difference (paired: of the
//! per-round log ratios), as a relative change. A round in a slow mode moves the
//! mean, and widens the interval with it. Every relabelling is counted up to
//! [`MOST_RELABELLINGS`]; beyond, as many are drawn (seeded: the same rounds always
//! give the same intervals), the measured labelling counted with them. Members
//! relabelled together must have the same counts; the caller groups them.

use crate::stats::splitmix::SplitMix64;

/// Relabellings counted: all of them up to this many, else this many drawn.
pub const MOST_RELABELLINGS: usize = 4_000;

/// Halvings of the bracket around each end of an interval: to a few parts in a
/// million of its width.
const BISECTIONS: usize = 18;

/// Paired rounds are flipped only where their 2^n sign patterns hold at least this
/// many beyond the level (alpha 2^n: 11 rounds at 2.5 %, 12 at 1.25 %); with fewer,
/// the flips' p-values are coarse and their n - 1 degrees of freedom few against the
/// unpaired relabelling's 2n - 2, and the rounds are relabelled unpaired. In a model
/// of the simulated GPUs' bench (`cases_that_move_together_are_found_together`),
/// flipping from 9 rounds on found 97.8 % of a 10 % slowdown, from 11 on 99.5 %.
const FEWEST_BEYOND: f64 = 50.0;

/// Members' rounds: (base, candidate), positive and finite, one count per side.
pub(super) type Sides<'a> = [(&'a [f64], &'a [f64])];

/// Each member's (change, low, high) as relative changes (None where the test keeps
/// every change: too few relabellings as extreme as the measured one), and the share
/// of relabellings beyond each member's own critical value at its estimate (its
/// two-sided level, the mean over the members).
pub(super) type Intervals = (Vec<Option<(f64, f64, f64)>>, f64);

/// One member under relabelling, at a hypothesised change `estimate - delta` (logs):
/// relabelling i's mean change is `offsets[i] + delta * slopes[i]` (the slopes are
/// the block's). The rounds' sum of squares, `squares + weight delta^2`, is the same
/// in every relabelling; a mean change d between its labels explains `weight d^2`
/// of it, and the rest, over `df`, is the spread within, which times `factor` is the
/// mean change's variance.
struct Relabelled {
    estimate: f64,
    offsets: Vec<f64>,
    squares: f64,
    weight: f64,
    df: f64,
    factor: f64,
}

impl Relabelled {
    /// The t statistic's magnitude (the mean change over its standard error from the
    /// spread within, floored at [`FLOOR`] so that rounds all alike still order their
    /// relabellings) of a relabelling with `offset` and `slope`, at `delta`.
    fn statistic(&self, offset: f64, slope: f64, delta: f64) -> f64 {
        let change = offset + delta * slope;
        // squares + w delta^2 - w change^2, expanded so that nothing large cancels:
        // exact for the measured labelling (slope 1, offset 0) at any delta.
        let w = self.weight;
        let within = self.squares - w * offset * offset - 2.0 * w * slope * offset * delta
            + w * (1.0 - slope * slope) * delta * delta;
        change.abs() / (within.max(0.0) / self.df * self.factor).sqrt().max(FLOOR)
    }
}

/// The least standard error a statistic divides by, in log units (a millionth of a
/// percent): below any timer's resolution, it only keeps rounds that repeat one
/// value exactly (the simulated GPUs' do) from dividing by zero.
const FLOOR: f64 = 1e-8;

/// Paired intervals (rounds run side by side, `base[i]` with `cand[i]`) that hold
/// together with at least 1 - `alpha`, by flipping whole rounds; `None` where the
/// rounds are too few to flip (then [`unpaired`]).
pub(super) fn paired(sides: &Sides, alpha: f64) -> Option<Intervals> {
    let n = sides.first()?.0.len();
    if !(2..=40).contains(&n) || alpha * 2f64.powi(n as i32) < FEWEST_BEYOND {
        return None;
    }
    let nf = n as f64;
    let full = (1u64 << n) - 1;
    let (flips, drawn) = relabellings(
        1u64 << n,
        || Box::new(0..1u64 << n),
        |rng| rng.next_u64() & full,
    );
    let sign = |flip: u64, i: usize| if flip >> i & 1 == 1 { -1.0 } else { 1.0 };
    // A flipped round's log ratio moves with the hypothesised change the other way.
    let slopes: Vec<f64> = flips
        .iter()
        .map(|&f| (0..n).map(|i| sign(f, i)).sum::<f64>() / nf)
        .collect();
    let members: Vec<Relabelled> = sides
        .iter()
        .map(|(b, c)| {
            let d: Vec<f64> = b
                .iter()
                .zip(c.iter())
                .map(|(x, y)| y.ln() - x.ln())
                .collect();
            let estimate = d.iter().sum::<f64>() / nf;
            let r: Vec<f64> = d.iter().map(|x| x - estimate).collect();
            let offsets = flips
                .iter()
                .map(|&f| {
                    r.iter()
                        .enumerate()
                        .map(|(i, x)| sign(f, i) * x)
                        .sum::<f64>()
                        / nf
                })
                .collect();
            // Flips keep the sum of squares about the hypothesised change:
            // sum (r + delta)^2 = sum r^2 + n delta^2, as r sums to zero.
            Relabelled {
                estimate,
                offsets,
                squares: r.iter().map(|x| x * x).sum(),
                weight: nf,
                df: nf - 1.0,
                factor: 1.0 / nf,
            }
        })
        .collect();
    Some(invert(&members, &slopes, alpha, drawn))
}

/// Unpaired intervals (two sides' rounds, independent) that hold together with at
/// least 1 - `alpha`, by drawing which pooled rounds were the candidate's; `None`
/// where a side has fewer than 2 rounds or the relabellings are fewer than 1 / alpha.
pub(super) fn unpaired(sides: &Sides, alpha: f64) -> Option<Intervals> {
    let (n, m) = sides.first().map(|(b, c)| (b.len(), c.len()))?;
    let pooled = n + m;
    let count = choose(pooled, m);
    if n < 2 || m < 2 || pooled > 63 || (count as f64) * alpha < 1.0 {
        return None;
    }
    let (nf, mf, pf) = (n as f64, m as f64, pooled as f64);
    // Drawn relabellings of which pooled rounds (base first) were the candidate's.
    let (labels, drawn) = relabellings(
        count,
        || Box::new(combinations(pooled, m)),
        |rng| draw_subset(rng, pooled, m),
    );
    let measured = ((1u64 << pooled) - 1) ^ ((1u64 << n) - 1);
    // The candidate's rounds move with the hypothesised change: by how much their
    // share on each side of a relabelling moves its mean change.
    let slopes: Vec<f64> = labels
        .iter()
        .map(|&l| {
            let k = f64::from((l & measured).count_ones());
            k / mf - (mf - k) / nf
        })
        .collect();
    let members: Vec<Relabelled> = sides
        .iter()
        .map(|(b, c)| {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let x: Vec<f64> = b.iter().map(|v| v.ln()).collect();
            let y: Vec<f64> = c.iter().map(|v| v.ln()).collect();
            let estimate = mean(&y) - mean(&x);
            let z: Vec<f64> = x
                .iter()
                .copied()
                .chain(y.iter().map(|v| v - estimate))
                .collect();
            let sum: f64 = z.iter().sum();
            let offsets = labels
                .iter()
                .map(|&l| {
                    let cand: f64 = ones(l).map(|j| z[j]).sum();
                    cand / mf - (sum - cand) / nf
                })
                .collect();
            // The pooled sum of squares grows by delta^2 n m / (n + m) as the two
            // sides move apart; a mean change d between the labels explains d^2 n m /
            // (n + m) of it.
            let centre = sum / pf;
            Relabelled {
                estimate,
                offsets,
                squares: z.iter().map(|v| (v - centre).powi(2)).sum(),
                weight: nf * mf / pf,
                df: pf - 2.0,
                factor: 1.0 / nf + 1.0 / mf,
            }
        })
        .collect();
    Some(invert(&members, &slopes, alpha, drawn))
}

/// Each member's interval: the hypothesised changes the family's test keeps at
/// `alpha`, the other members held at their estimates.
fn invert(members: &[Relabelled], slopes: &[f64], alpha: f64, drawn: bool) -> Intervals {
    let count = slopes.len();
    // Each relabelling's two largest statistics at the estimates, and whose the
    // largest is: the others' largest for any one member.
    let mut top: Vec<(f64, usize, f64)> = vec![(0.0, usize::MAX, 0.0); count];
    for (m, member) in members.iter().enumerate() {
        for (i, &o) in member.offsets.iter().enumerate() {
            let t = member.statistic(o, 0.0, 0.0);
            let (first, who, second) = &mut top[i];
            if t > *first {
                *second = *first;
                *first = t;
                *who = m;
            } else if t > *second {
                *second = t;
            }
        }
    }
    // Whether the test keeps a change `delta` below the estimate of member `m`:
    // whether the share of relabellings whose statistic is at least the measured one
    // (the measured labelling counted once more where the relabellings were drawn)
    // exceeds alpha.
    let extra = usize::from(drawn);
    let needed = (alpha * (count + extra) as f64).floor() as usize + 1;
    let keeps = |m: usize, delta: f64| -> bool {
        let member = &members[m];
        let measured = member.statistic(0.0, 1.0, delta) * (1.0 - 1e-12);
        (0..count)
            .filter(|&i| {
                let (first, who, second) = top[i];
                let others = if who == m { second } else { first };
                others >= measured
                    || member.statistic(member.offsets[i], slopes[i], delta) >= measured
            })
            .take(needed)
            .count()
            + extra
            >= needed
    };
    // Far from the estimate only the relabellings that move as the measured one does
    // (all the candidate's rounds on one side) keep up with it: where they alone are
    // more than alpha, the test keeps every change.
    let alike = slopes.iter().filter(|a| a.abs() >= 1.0 - 1e-12).count();
    if alike + extra >= needed {
        return (vec![None; members.len()], 0.0);
    }
    let intervals = (0..members.len())
        .map(|m| {
            let member = &members[m];
            // How far below (delta > 0) and above (delta < 0) the estimate the test
            // keeps the change.
            let reach = |direction: f64| -> f64 {
                let kept = |d: f64| keeps(m, direction * d);
                let mut far = (member.squares * member.factor / member.df)
                    .sqrt()
                    .max(FLOOR);
                let mut doublings = 0;
                while kept(far) && doublings < 60 {
                    far *= 2.0;
                    doublings += 1;
                }
                if doublings == 60 {
                    return f64::INFINITY;
                }
                let mut near = 0.0;
                for _ in 0..BISECTIONS {
                    let mid = (near + far) / 2.0;
                    if kept(mid) {
                        near = mid;
                    } else {
                        far = mid;
                    }
                }
                near
            };
            let rel = |x: f64| x.exp() - 1.0;
            let e = member.estimate;
            let (below, above) = (reach(1.0), reach(-1.0));
            (below.is_finite() && above.is_finite())
                .then(|| (rel(e), rel(e - below), rel(e + above)))
        })
        .collect();
    // The family's critical value at the estimates, and each member's own share of
    // relabellings beyond it: the level each interval has on its own.
    let mut largest: Vec<f64> = top.iter().map(|t| t.0).collect();
    largest.sort_by(|a, b| b.total_cmp(a));
    let critical = largest[((alpha * count as f64).floor() as usize).min(count - 1)];
    let beyond: usize = members
        .iter()
        .map(|member| {
            member
                .offsets
                .iter()
                .filter(|&&o| member.statistic(o, 0.0, 0.0) > critical)
                .count()
        })
        .sum();
    // None beyond is below what the relabellings can resolve: said as one, so that
    // the level stated is one the intervals have at least (not 100 %).
    let level = beyond.max(1) as f64 / (count * members.len().max(1)) as f64;
    (intervals, level)
}

/// The relabellings to count: all `count` of them (`all`) where there are at most
/// [`MOST_RELABELLINGS`], else that many drawn by `draw`; and whether they were drawn.
fn relabellings(
    count: u64,
    all: impl FnOnce() -> Box<dyn Iterator<Item = u64>>,
    mut draw: impl FnMut(&mut SplitMix64) -> u64,
) -> (Vec<u64>, bool) {
    if count <= MOST_RELABELLINGS as u64 {
        return (all().collect(), false);
    }
    let mut rng = SplitMix64::new(0x4e43_434c, count);
    let drawn = (0..MOST_RELABELLINGS).map(|_| draw(&mut rng)).collect();
    (drawn, true)
}

/// The positions of the set bits of `bits`, lowest first.
fn ones(mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            i
        })
    })
}

/// A bit mask of the true values, the first lowest.
fn mask(bits: impl Iterator<Item = bool>) -> u64 {
    bits.enumerate()
        .fold(0, |acc, (i, b)| acc | (u64::from(b) << i))
}

/// C(n, k), saturating.
fn choose(n: usize, k: usize) -> u64 {
    (0..k).fold(1u64, |acc, i| {
        acc.saturating_mul((n - i) as u64) / (i + 1) as u64
    })
}

/// Every `k`-subset of `n` as a mask, in increasing order (Gosper's hack).
fn combinations(n: usize, k: usize) -> impl Iterator<Item = u64> {
    let first = if k == 0 { 0 } else { (1u64 << k) - 1 };
    let limit = 1u64 << n;
    std::iter::successors(Some(first), move |&x| {
        if x == 0 {
            return None;
        }
        let c = x & x.wrapping_neg();
        let r = x + c;
        let next = (((r ^ x) >> 2) / c) | r;
        (next < limit).then_some(next)
    })
}

/// A `k`-subset of `n`, drawn (a partial shuffle).
fn draw_subset(rng: &mut SplitMix64, n: usize, k: usize) -> u64 {
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (rng.next_u64() % (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    mask((0..n).map(|j| idx[..k].contains(&j)))
}

#[cfg(test)]
mod tests;
