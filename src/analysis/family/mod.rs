//! One family per decision. A comparison of two configs (or two runs) rests on many
//! cases at once: sizes x rank counts x collectives. Each case's own interval is at
//! 95 %, so over 25 cases about one in twenty-five A/A pairs would show something
//! somewhere by chance. The family makes the answer for all its cases together
//! hold at a stated rate: all K intervals cover their true changes together with at
//! least 95 %. Then, of the whole family:
//!
//! - **different**: some member's interval lies wholly beyond the threshold;
//! - **equivalent**: every member's own interval lies within +-margin, so the change
//!   is at most the margin at every size measured;
//! - **not settled**: neither; with an estimate of the rounds that would settle it
//!   (intervals narrow as 1/sqrt(rounds)).
//!
//! The intervals hold together by relabelling whole rounds ([`joint`]): a process
//! group slow at one size is slow at all of them, so the cases' intervals miss
//! together, and the rounds' relabellings measure how much. Where the cases move as
//! one, each interval is about its own 95 % one; where they move independently,
//! about Bonferroni's 1 - 0.05 / K. Members are relabelled together where their
//! rounds have the same counts and pairing; such blocks share the family's rate by
//! their sizes. Two configs of one sweep are paired round by round and flipped
//! (each round's two sides swapped) where the rounds have sign patterns enough; else
//! the rounds are relabelled unpaired (which pooled rounds were the candidate's),
//! wider, never narrower than they should be: what a round did to both sides makes
//! the pooled rounds spread more than the pairs. A member alone in its block, or a
//! block too small to relabel (two runs of 3 rounds), keeps its own rank interval
//! (`stats::rounds`) at 1 - 0.05 / K.
//!
//! Equivalence and the bound a family supports need no simultaneous intervals. "Every
//! case within +-margin" is wrong only if some case truly lies beyond it, and then
//! that case's own interval must have shown it inside: each case's own interval with
//! each end at 1 - alpha (two-sided 1 - 2 alpha, the two one-sided tests of
//! equivalence) gives the claim for all of them at 1 - alpha, however many cases
//! (the intersection-union test, Berger 1982). Likewise the largest slowdown is at
//! most the largest of the cases' own upper ends at 1 - alpha: the case truly
//! slowest must exceed its own end for that to fail. Over looks, each end is at
//! 1 - alpha / L. Differences are claims about single cases, and only these need
//! the family's simultaneous intervals.
//!
//! Each member's outcome is the family's: [`Family::calls`] gives it per member, and
//! the gates (`compare`'s exit, the SHM verdict, `check`) rest on it, not on each
//! case's own 95 % interval. `check` (against a baseline's band) keeps Bonferroni
//! over rank intervals of its medians ([`decide_bands`]).
//!
//! Members are the pairs compared over rounds with both sides trusted: a case of one
//! round (a bootstrap over its iterations), one compared on means, and one set aside
//! as noisy are not evidence for the family, and are counted apart.

use serde::Serialize;

use crate::stats::rounds::{median_interval_at, paired_shift_at, shift_at};

mod joint;
mod sentence;
mod settle;

pub use settle::{looks, settled_at, FIRST_LOOK, FUTILITY, WITHIN_FUTILITY};

/// The family-wise error rate: the chance that any member's interval misses.
pub const FAMILY_ALPHA: f64 = 0.05;

/// One member: a pair compared over its rounds, its round medians each side.
pub struct Member<'a> {
    pub base: &'a [f64],
    pub cand: &'a [f64],
    pub paired: bool,
}

/// A member's estimate and family interval: (change, low, high), fractions.
type Estimate = (f64, f64, f64);

/// A rank interval's estimate and ends.
fn shift(s: crate::stats::rounds::Shift) -> Estimate {
    (s.change, s.ci.0, s.ci.1)
}

/// What the family says together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Family {
    /// Members (K): pairs compared over rounds, both sides trusted.
    pub cases: usize,
    pub alpha: f64,
    /// The looks at the rounds the sweep planned (L: 1 for a fixed number of rounds;
    /// [`looks`]): each member's interval holds at every look at once.
    pub looks: usize,
    /// Each member's interval level (the lowest, where they differ): 1 - alpha /
    /// (K L) where the cases move independently, up to 1 - alpha / L where they move
    /// as one ([`joint`]: relabelling whole rounds).
    pub per_case: f64,
    /// Whether every bounded member's interval has that level.
    pub per_case_alike: bool,
    /// The level Bonferroni alone would give each, 1 - alpha / (K L).
    pub bonferroni: f64,
    /// Members whose rounds reach that level (the rest have no family interval).
    pub bounded: usize,
    /// The level of each member's own interval, 1 - 2 alpha / L (each end at
    /// 1 - alpha / L): on these rest the equivalence and the bounds below.
    pub own_level: f64,
    /// The largest slowdown and the largest speedup the family allows: the largest
    /// upper and the smallest lower end of the members' own intervals (fractions),
    /// each a bound at 1 - alpha on every member measured.
    pub most_slower: Option<f64>,
    pub most_faster: Option<f64>,
    pub threshold: f64,
    pub margin: f64,
    pub answer: Answer,
    /// Each member's outcome and family interval, in the order given.
    #[serde(skip)]
    pub calls: Vec<Call>,
}

/// One member's outcome over the family: its interval at 1 - alpha / K against the
/// threshold band and the margin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub side: CallSide,
    /// (low, high) as fractions; None where the rounds reach no interval at that level.
    pub ci: Option<(f64, f64)>,
    /// Judged unpaired because its paired rounds could not reach the level.
    pub unpaired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSide {
    /// Wholly above the threshold band.
    Slower,
    /// Wholly below it.
    Faster,
    /// Within +-margin.
    Within,
    /// None of these.
    NotSettled,
}

impl Call {
    fn of(ci: Option<(f64, f64)>, unpaired: bool, threshold: f64, margin: f64) -> Call {
        let side = match ci {
            Some((lo, _)) if lo > threshold => CallSide::Slower,
            Some((_, hi)) if hi < -threshold => CallSide::Faster,
            Some((lo, hi)) if lo >= -margin && hi <= margin => CallSide::Within,
            _ => CallSide::NotSettled,
        };
        Call { side, ci, unpaired }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Answer {
    /// Members whose family interval lies wholly above (slower) or below (faster)
    /// the threshold band.
    Different { slower: usize, faster: usize },
    /// Every member's own interval within +-margin (so all within at 1 - alpha).
    Equivalent,
    /// Neither; `rounds`: about how many rounds a side would settle every member
    /// (None where no estimate can be made: no member has a finite interval).
    NotSettled { rounds: Option<usize> },
    /// No member at all.
    Empty,
}

/// The family of `members` at rate `family_alpha` ([`FAMILY_ALPHA`] unless asked),
/// decided against the noise band +-`threshold` and the equivalence `margin`, over
/// the `looks` at the rounds the sweep planned (1 for a fixed number of rounds).
pub fn decide(
    members: &[Member],
    threshold: f64,
    margin: f64,
    family_alpha: f64,
    looks: usize,
) -> Family {
    let rates = Rates {
        alpha: family_alpha,
        looks: looks.max(1),
        threshold,
        margin,
    };
    let (calls, judged) = call_each(members, threshold, margin, rates.at_each_look());
    let judged = with_own(members, judged, rates.own_alpha(), margin);
    let rounds = rounds_to_settle(&judged, threshold, margin);
    conclude(calls, &judged, rounds, &rates)
}

/// What a family is decided at: its rate, its looks, the noise band and the margin.
struct Rates {
    alpha: f64,
    looks: usize,
    threshold: f64,
    margin: f64,
}

impl Rates {
    /// The chance that some member's family interval misses at one look.
    fn at_each_look(&self) -> f64 {
        self.alpha / self.looks as f64
    }

    /// The two-sided rate of each member's own interval: each end at alpha / L.
    fn own_alpha(&self) -> f64 {
        own_alpha(self.alpha, self.looks)
    }
}

/// The two-sided rate of each member's own interval in a family at `family_alpha`
/// over `looks`: each end misses at most `family_alpha` / `looks`.
pub fn own_alpha(family_alpha: f64, looks: usize) -> f64 {
    (2.0 * family_alpha / looks.max(1) as f64).min(1.0)
}

/// Each member's own interval at 1 - `own_alpha`, to `judged`: its signed-rank
/// interval where paired and its rounds reach it, else its rank-sum interval.
fn with_own(
    members: &[Member],
    mut judged: Vec<Judged>,
    own_alpha: f64,
    margin: f64,
) -> Vec<Judged> {
    for (m, j) in members.iter().zip(&mut judged) {
        j.own_level = own_alpha;
        j.own = if m.base == m.cand {
            Some((0.0, 0.0, 0.0))
        } else {
            let paired = m.paired && m.base.len() == m.cand.len();
            paired
                .then(|| paired_shift_at(m.base, m.cand, own_alpha).map(shift))
                .flatten()
                .or_else(|| shift_at(m.base, m.cand, own_alpha).map(shift))
        };
        j.own_within = j
            .own
            .is_some_and(|(_, lo, hi)| lo >= -margin && hi <= margin);
    }
    judged
}

/// What a member's rounds give: their count, the estimate and interval (None where
/// the rounds reach no interval at the level), and the two-sided level of the
/// interval (the level it would have had, where it has none); and its own interval
/// (`own`, at the two-sided `own_level`), on which equivalence rests.
#[derive(Debug, Clone, Copy)]
struct Judged {
    rounds: usize,
    estimate: Option<Estimate>,
    level: f64,
    own: Option<Estimate>,
    own_level: f64,
    /// Whether its own interval lies within the margin.
    own_within: bool,
}

/// Each member's call at the family rate `alpha` (the chance that some member's
/// interval misses, at this look). Members whose rounds have the same counts and
/// pairing are relabelled together ([`joint`]), each such block given its share of
/// `alpha` by its size: paired where its rounds reach the block's level, else
/// unpaired. A block relabelling cannot help is decided at 1 - `alpha` / K.
fn call_each(
    members: &[Member],
    threshold: f64,
    margin: f64,
    alpha: f64,
) -> (Vec<Call>, Vec<Judged>) {
    let k = members.len().max(1) as f64;
    let bonferroni = alpha / k;
    let valid = |v: &[f64]| !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0);
    let mut judged: Vec<Judged> = members
        .iter()
        .map(|m| Judged {
            rounds: m.base.len().min(m.cand.len()),
            estimate: (m.base == m.cand).then_some((0.0, 0.0, 0.0)),
            level: bonferroni,
            own: None,
            own_level: bonferroni,
            own_within: false,
        })
        .collect();
    let mut unpaired = vec![false; members.len()];
    let mut blocks: std::collections::BTreeMap<(bool, usize, usize), Vec<usize>> =
        Default::default();
    for (i, m) in members.iter().enumerate() {
        if m.base != m.cand && valid(m.base) && valid(m.cand) {
            let paired = m.paired && m.base.len() == m.cand.len();
            let key = (paired, m.base.len(), m.cand.len());
            blocks.entry(key).or_default().push(i);
        }
    }
    for ((paired, _, _), block) in blocks {
        let share = alpha * block.len() as f64 / k;
        let sides: Vec<(&[f64], &[f64])> = block
            .iter()
            .map(|&i| (members[i].base, members[i].cand))
            .collect();
        // A member alone has nothing to move with: its own rank interval.
        let alone = block.len() == 1;
        let flipped = if paired && !alone {
            joint::paired(&sides, share)
        } else {
            None
        };
        let judged_unpaired = paired && flipped.is_none();
        let relabelled = flipped.or_else(|| (!alone).then(|| joint::unpaired(&sides, share))?);
        if let Some((intervals, level)) = relabelled {
            for (&i, interval) in block.iter().zip(intervals) {
                // Without an interval, the level it would need stays Bonferroni's.
                if interval.is_some() {
                    judged[i].level = level;
                }
                unpaired[i] = judged_unpaired && interval.is_some();
                judged[i].estimate = interval;
            }
            continue;
        }
        // Alone, or too few rounds to relabel: each member's rank interval at 1 -
        // alpha / K.
        for &i in &block {
            let m = &members[i];
            let mut estimate = None;
            if paired {
                estimate = paired_shift_at(m.base, m.cand, bonferroni).map(shift);
            }
            if estimate.is_none() {
                estimate = shift_at(m.base, m.cand, bonferroni).map(shift);
                unpaired[i] = paired && estimate.is_some();
            }
            judged[i].estimate = estimate;
        }
    }
    let calls: Vec<Call> = judged
        .iter()
        .zip(&unpaired)
        .map(|(j, &u)| Call::of(j.estimate.map(|c| (c.1, c.2)), u, threshold, margin))
        .collect();
    (calls, judged)
}

/// The family's answer from its members' calls (on their family intervals) and
/// what `judged` says of each (the family intervals' levels, their own intervals);
/// `rounds`: the estimate of rounds that would settle it, said when it is not
/// settled. Equivalent where no call is a difference and every member's own
/// interval lies within the margin; then each call is `Within`, on its own interval.
fn conclude(
    mut calls: Vec<Call>,
    judged: &[Judged],
    rounds: Option<usize>,
    rates: &Rates,
) -> Family {
    let k = calls.len();
    let count = |side: CallSide| calls.iter().filter(|c| c.side == side).count();
    let (slower, faster) = (count(CallSide::Slower), count(CallSide::Faster));
    let bounded = calls.iter().filter(|c| c.ci.is_some()).count();
    let (alpha, looks) = (rates.alpha, rates.looks);
    let bonferroni = alpha / (k.max(1) * looks) as f64;
    let bounded_levels = || {
        judged
            .iter()
            .zip(&calls)
            .filter(|(_, c)| c.ci.is_some())
            .map(|(j, _)| j.level)
    };
    let widest = bounded_levels().reduce(f64::max);
    let narrowest = bounded_levels().reduce(f64::min);
    let answer = if k == 0 {
        Answer::Empty
    } else if slower + faster > 0 {
        Answer::Different { slower, faster }
    } else if judged.iter().all(|j| j.own_within) {
        for (call, j) in calls.iter_mut().zip(judged) {
            call.side = CallSide::Within;
            call.ci = j.own.map(|(_, lo, hi)| (lo, hi));
        }
        Answer::Equivalent
    } else {
        Answer::NotSettled { rounds }
    };
    let own: Vec<(f64, f64, f64)> = judged.iter().filter_map(|j| j.own).collect();
    Family {
        cases: k,
        alpha,
        looks,
        per_case: 1.0 - widest.unwrap_or(bonferroni),
        per_case_alike: widest == narrowest,
        bonferroni: 1.0 - bonferroni,
        bounded,
        own_level: 1.0 - own_alpha(alpha, looks),
        most_slower: own.iter().map(|e| e.2).reduce(f64::max),
        most_faster: own.iter().map(|e| e.1).reduce(f64::min),
        threshold: rates.threshold,
        margin: rates.margin,
        answer,
        calls,
    }
}

/// Rounds a side that would settle the family, by either way it settles: one member
/// shown beyond the threshold (the fewest any member needs), or every member shown
/// within the margin (the most any needs). [`MOST_ROUNDS`] + 1 stands for "more
/// than that". `None` where neither way has an estimate (no unsettled member, or
/// none with room to scale from).
fn rounds_to_settle(judged: &[Judged], threshold: f64, margin: f64) -> Option<usize> {
    ways_to_settle(judged, threshold, margin, 0.0).fewest()
}

/// The rounds a side each way of settling a family needs ([`ways_to_settle`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ways {
    /// The fewest rounds some member needs to be shown beyond the threshold.
    differ: Option<usize>,
    /// The most rounds any member needs to be shown within the margin (`None`:
    /// some member cannot be).
    within: Option<usize>,
}

impl Ways {
    fn fewest(self) -> Option<usize> {
        [self.differ, self.within]
            .into_iter()
            .flatten()
            .min()
            .map(|r| r.min(MOST_ROUNDS + 1))
    }
}

/// Each way's rounds ([`Ways`]). A member's rounds are at least the fewest whose
/// signed-rank (2^(1-n)) or rank-sum interval reaches its level and, with an
/// interval, its rounds times (its half-width / the room it has)^2: the room from
/// its estimate to the threshold for its family interval (to show a difference), or
/// to the margin for its own interval (to show it within). To show it within, the
/// estimate is first moved `optimism` standard errors (its own interval's, from its
/// level) toward no change: where an estimate near the margin is the noise of a few
/// rounds, more rounds bring it back, and the room with it.
fn ways_to_settle(judged: &[Judged], threshold: f64, margin: f64, optimism: f64) -> Ways {
    let fewest = |level: f64| {
        let level = level.max(f64::MIN_POSITIVE);
        fewest_rounds(level).min(fewest_unpaired(level))
    };
    let mut differ: Option<usize> = None;
    let mut within: Option<Option<usize>> = None;
    for j in judged {
        let n = j.rounds;
        let settled = |(_, lo, hi): Estimate| lo > threshold || hi < -threshold;
        if j.estimate.is_some_and(settled) || j.own_within {
            continue;
        }
        // Rounds until (change, lo, hi) clears `room`, as 1/sqrt(rounds).
        let scaled = |(change, lo, hi): Estimate, room: f64, level: f64| {
            let half = (hi - lo) / 2.0;
            (half.is_finite() && room > 0.0 && change.is_finite())
                .then(|| ((n as f64) * (half / room).powi(2)).ceil() as usize)
                .map(|r| r.max(fewest(level)).max(n + 1))
        };
        // The two intervals' estimates differ a little (relabelled rounds, own
        // ranks): each way's room from the one that gives it more. Without an
        // interval, at least the rounds that give one.
        let changes = [j.estimate, j.own].map(|e| e.map_or(f64::NAN, |e| e.0.abs()));
        let (least, most_change) = (changes[0].min(changes[1]), changes[0].max(changes[1]));
        let to_differ = match j.estimate {
            Some(e) => scaled(e, most_change - threshold, j.level),
            None => Some(fewest(j.level).max(n + 1)),
        };
        let to_within = match j.own {
            Some(e) => {
                let z = crate::stats::normal::quantile(1.0 - j.own_level / 2.0);
                let error = (e.2 - e.1) / 2.0 / z;
                scaled(e, margin - (least - optimism * error).max(0.0), j.own_level)
            }
            None => Some(fewest(j.own_level).max(n + 1)),
        };
        differ = [differ, to_differ].into_iter().flatten().min();
        within = Some(match within {
            None => to_within,
            Some(most) => most.zip(to_within).map(|(a, b)| a.max(b)),
        });
    }
    Ways {
        differ,
        within: within.flatten(),
    }
}

/// One member of a check's family: a case's round medians in the run, against the
/// band its baseline's runs span.
pub struct BandMember<'a> {
    pub rounds: &'a [f64],
    pub base_median: f64,
    pub low: f64,
    pub high: f64,
}

/// The family of a `check`: each member's median interval over its rounds at
/// 1 - `family_alpha` / (K `looks`), against its baseline band widened by `threshold` (slower:
/// wholly above it; faster: wholly below) and by `margin` (equivalent: every interval
/// inside). Changes are relative to the baseline's median. Where a member's rounds
/// reach no interval at that level, the rounds that would (the median's interval
/// from order statistics needs 2^(1-n) <= alpha / K).
pub fn decide_bands(
    members: &[BandMember],
    threshold: f64,
    margin: f64,
    family_alpha: f64,
    looks: usize,
) -> Family {
    let rates = Rates {
        alpha: family_alpha,
        looks: looks.max(1),
        threshold,
        margin,
    };
    let alpha = rates.at_each_look() / members.len().max(1) as f64;
    let change = |m: &BandMember, x: f64| x / m.base_median - 1.0;
    let estimate = |m: &BandMember, ci: Option<(f64, f64)>| {
        ci.map(|(lo, hi)| (change(m, (lo + hi) / 2.0), change(m, lo), change(m, hi)))
    };
    let inside = |m: &BandMember, (lo, hi): (f64, f64)| {
        lo >= m.low * (1.0 - margin) && hi <= m.high * (1.0 + margin)
    };
    let mut calls = Vec::new();
    let mut judged = Vec::new();
    for m in members {
        let ci = median_interval_at(m.rounds, alpha);
        let own = median_interval_at(m.rounds, rates.own_alpha());
        let side = match ci {
            Some((lo, _)) if lo > m.high * (1.0 + threshold) => CallSide::Slower,
            Some((_, hi)) if hi < m.low * (1.0 - threshold) => CallSide::Faster,
            Some(ci) if inside(m, ci) => CallSide::Within,
            _ => CallSide::NotSettled,
        };
        calls.push(Call {
            side,
            ci: ci.map(|(lo, hi)| (change(m, lo), change(m, hi))),
            unpaired: false,
        });
        judged.push(Judged {
            rounds: m.rounds.len(),
            estimate: estimate(m, ci),
            level: alpha,
            own: estimate(m, own),
            own_level: rates.own_alpha(),
            own_within: own.is_some_and(|own| inside(m, own)),
        });
    }
    // A member without an interval needs the rounds that give one; one with an
    // interval across the band's edge, an estimate this does not make.
    let rounds = calls
        .iter()
        .any(|c| c.ci.is_none())
        .then(|| fewest_rounds(alpha));
    conclude(calls, &judged, rounds, &rates)
}

/// Estimates of the rounds needed stop here (the estimate says "more than this").
pub const MOST_ROUNDS: usize = 100;

/// The fewest rounds a side whose rank-sum interval exists at 1 - `alpha`: the most
/// extreme of the C(2n, n) orderings, on either side, must be rarer than `alpha`.
pub fn fewest_unpaired(alpha: f64) -> usize {
    let mut n = 1usize;
    // C(2n, n) grows as 4^n / sqrt(pi n): a few dozen rounds reach any rate.
    while n < 64 && 2.0 / binomial(2 * n, n) > alpha {
        n += 1;
    }
    n
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The fewest rounds whose paired signed-rank interval exists at 1 - `alpha`: the
/// all-one-sign outcome, probability 2^(1-n), must be rarer than `alpha`.
pub fn fewest_rounds(alpha: f64) -> usize {
    let mut n = 1;
    while 2f64.powi(1 - n as i32) > alpha && n < 64 {
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests;
