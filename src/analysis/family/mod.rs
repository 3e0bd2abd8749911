//! One family per decision. A comparison of two configs (or two runs) rests on many
//! cases at once: sizes x rank counts x collectives. Each case's own interval is at
//! 95 %, so over 25 cases about one in twenty-five A/A pairs would show something
//! somewhere by chance. The family makes the answer for all its cases together
//! hold at a stated rate: all K intervals cover their true changes together with at
//! least 95 %. Then, of the whole family:
//!
//! - **different**: some member's interval lies wholly beyond the threshold;
//! - **equivalent**: every member's interval lies within +-margin, so the change is
//!   at most the margin at every size measured;
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
mod settle;

pub use settle::{looks, settled_at, FIRST_LOOK, FUTILITY};

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
    /// The largest slowdown and the largest speedup any member's family interval
    /// allows (its upper and lower ends, fractions), over the bounded members.
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
    /// Every member's family interval within +-margin.
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
    let alpha = family_alpha / looks.max(1) as f64;
    let (calls, judged) = call_each(members, threshold, margin, alpha);
    let rounds = rounds_to_settle(&judged, threshold, margin);
    let levels: Vec<f64> = judged.iter().map(|j| j.level).collect();
    conclude(
        calls,
        &levels,
        family_alpha,
        looks,
        threshold,
        margin,
        rounds,
    )
}

/// What a member's rounds give: their count, the estimate and interval (None where
/// the rounds reach no interval at the level), and the two-sided level of the
/// interval (the level it would have had, where it has none).
#[derive(Debug, Clone, Copy)]
struct Judged {
    rounds: usize,
    estimate: Option<Estimate>,
    level: f64,
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
    let shift = |s: crate::stats::rounds::Shift| (s.change, s.ci.0, s.ci.1);
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

/// The family's answer from its members' calls and their intervals' two-sided
/// `levels`; `rounds`: the estimate of rounds that would settle it, said when it is
/// not settled.
fn conclude(
    calls: Vec<Call>,
    levels: &[f64],
    family_alpha: f64,
    looks: usize,
    threshold: f64,
    margin: f64,
    rounds: Option<usize>,
) -> Family {
    let k = calls.len();
    let count = |side: CallSide| calls.iter().filter(|c| c.side == side).count();
    let (slower, faster) = (count(CallSide::Slower), count(CallSide::Faster));
    let answer = if k == 0 {
        Answer::Empty
    } else if slower + faster > 0 {
        Answer::Different { slower, faster }
    } else if count(CallSide::Within) == k {
        Answer::Equivalent
    } else {
        Answer::NotSettled { rounds }
    };
    let bounds: Vec<(f64, f64)> = calls.iter().filter_map(|c| c.ci).collect();
    let bonferroni = family_alpha / (k.max(1) * looks.max(1)) as f64;
    let bounded_levels = || calls.iter().zip(levels).filter(|(c, _)| c.ci.is_some());
    let widest = bounded_levels().map(|(_, &l)| l).reduce(f64::max);
    let narrowest = bounded_levels().map(|(_, &l)| l).reduce(f64::min);
    Family {
        cases: k,
        alpha: family_alpha,
        looks: looks.max(1),
        per_case: 1.0 - widest.unwrap_or(bonferroni),
        per_case_alike: widest == narrowest,
        bonferroni: 1.0 - bonferroni,
        bounded: bounds.len(),
        most_slower: bounds.iter().map(|ci| ci.1).reduce(f64::max),
        most_faster: bounds.iter().map(|ci| ci.0).reduce(f64::min),
        threshold,
        margin,
        answer,
        calls,
    }
}

/// Rounds a side that would settle every unsettled member: at least the fewest whose
/// signed-rank (2^(1-n)) or rank-sum interval reaches its level, and for a member
/// with an interval, its rounds times (its half-width / the room it has)^2, the room
/// being the distance from its estimate to the margin (to show equivalence) or to
/// the threshold (to show a difference), whichever is larger; [`MOST_ROUNDS`] + 1
/// stands for "more than that". `None` where no unsettled member has a finite
/// interval to scale from.
fn rounds_to_settle(judged: &[Judged], threshold: f64, margin: f64) -> Option<usize> {
    let mut most: Option<usize> = None;
    for j in judged {
        // A paired member that cannot reach the level is judged unpaired (`decide`).
        let level = j.level.max(f64::MIN_POSITIVE);
        let fewest = fewest_rounds(level).min(fewest_unpaired(level));
        let n = j.rounds;
        let needed = match j.estimate {
            None => Some(fewest.max(n + 1)),
            Some((change, lo, hi)) => {
                let settled = lo > threshold || hi < -threshold || (lo >= -margin && hi <= margin);
                if settled {
                    continue;
                }
                let half = (hi - lo) / 2.0;
                let room = (margin - change.abs()).max(change.abs() - threshold);
                (half.is_finite() && room > 0.0)
                    .then(|| ((n as f64) * (half / room).powi(2)).ceil() as usize)
                    .map(|r| r.max(fewest).max(n + 1))
            }
        };
        match needed {
            Some(r) => most = Some(most.map_or(r, |m| m.max(r)).min(MOST_ROUNDS + 1)),
            None => return None,
        }
    }
    most
}

impl Family {
    /// The family's answer in one sentence (Markdown), `what` naming the change
    /// ("disabling SHM"); empty for a family without members.
    pub fn sentence(&self, what: &str) -> String {
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let band = format!("+-{:.1}%", self.margin * 100.0);
        let range = match (self.most_faster, self.most_slower) {
            (Some(lo), Some(hi)) => format!("between {} and {}", pct(lo), pct(hi)),
            _ => String::new(),
        };
        // 95, 99.9: as many decimals as the rate has (up to three).
        let level = format!("{:.3}", (1.0 - self.alpha) * 100.0);
        let level = level.trim_end_matches('0').trim_end_matches('.');
        // Two decimals, more where two would round to 100.
        let each = (2..8)
            .map(|d| format!("{:.d$}", self.per_case * 100.0))
            .find(|t| !t.starts_with("100"))
            .unwrap_or_else(|| format!("{:.8}", self.per_case * 100.0));
        let looks = if self.looks > 1 {
            format!(
                " at any of {} looks while measuring until settled",
                self.looks
            )
        } else {
            String::new()
        };
        let or_more = if self.per_case_alike { "" } else { " or more" };
        // Relabelling whole rounds showed the cases moving together: say what
        // Bonferroni alone would have asked.
        let joint = if self.bonferroni - self.per_case > 5e-5 {
            let bonferroni = (2..8)
                .map(|d| format!("{:.d$}", self.bonferroni * 100.0))
                .find(|t| !t.starts_with("100"))
                .unwrap_or_else(|| format!("{:.8}", self.bonferroni * 100.0));
            format!(
                ", not the {bonferroni}% that Bonferroni asks, as relabelling whole rounds shows the cases moving together"
            )
        } else {
            String::new()
        };
        let family = format!(
            "{} cases decided together, each interval at {each}%{or_more} so that all hold at once{looks} with at least {level}%{joint}",
            self.cases,
        );
        match &self.answer {
            Answer::Empty => String::new(),
            Answer::Different { slower, faster } => {
                let mut parts = Vec::new();
                if *slower > 0 {
                    parts.push(format!("slower beyond {band} at {slower}"));
                }
                if *faster > 0 {
                    parts.push(format!("faster beyond {band} at {faster}"));
                }
                format!(
                    "Over the family ({family}): {what} is {} of them.",
                    parts.join(" and ")
                )
            }
            Answer::Equivalent => format!(
                "Over the family ({family}): {what} changes the time by at most {band} at every case measured (every interval {range})."
            ),
            Answer::NotSettled { rounds } => {
                let short = self.cases - self.bounded;
                let mut s = format!("Over the family ({family}): not settled");
                if !range.is_empty() {
                    s.push_str(&format!(
                        "; the changes lie {range}, so {what} costs at most {} where measured",
                        pct(self.most_slower.unwrap_or(0.0).max(0.0))
                    ));
                }
                if short > 0 {
                    s.push_str(&format!(
                        "; {short} case(s) have too few rounds for an interval at that level"
                    ));
                }
                match rounds {
                    Some(r) if *r > MOST_ROUNDS => s.push_str(&format!(
                        "; more than {MOST_ROUNDS} rounds would be needed: a change this close to {band}, or this noisy, is not settled by measuring longer (a wider --threshold is)"
                    )),
                    Some(r) => s.push_str(&format!(
                        "; about {r} rounds (--rounds {r}) would settle it within {band}"
                    )),
                    None => {}
                }
                s.push('.');
                s
            }
        }
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
    let alpha = family_alpha / (members.len().max(1) * looks.max(1)) as f64;
    let change = |m: &BandMember, x: f64| x / m.base_median - 1.0;
    let calls: Vec<Call> = members
        .iter()
        .map(|m| {
            let ci = median_interval_at(m.rounds, alpha);
            let side = match ci {
                Some((lo, _)) if lo > m.high * (1.0 + threshold) => CallSide::Slower,
                Some((_, hi)) if hi < m.low * (1.0 - threshold) => CallSide::Faster,
                Some((lo, hi)) if lo >= m.low * (1.0 - margin) && hi <= m.high * (1.0 + margin) => {
                    CallSide::Within
                }
                _ => CallSide::NotSettled,
            };
            Call {
                side,
                ci: ci.map(|(lo, hi)| (change(m, lo), change(m, hi))),
                unpaired: false,
            }
        })
        .collect();
    // A member without an interval needs the rounds that give one; one with an
    // interval across the band's edge, an estimate this does not make.
    let rounds = calls
        .iter()
        .any(|c| c.ci.is_none())
        .then(|| fewest_rounds(alpha));
    let levels = vec![alpha; calls.len()];
    conclude(
        calls,
        &levels,
        family_alpha,
        looks,
        threshold,
        margin,
        rounds,
    )
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
