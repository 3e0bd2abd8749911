//! Measuring until settled: when a sweep looks at its rounds ([`looks`]), whether a
//! pair may stop at a look ([`settled_at`]).

use super::{
    call_each, conclude, fewest_unpaired, rounds_to_settle, ways_to_settle, with_own, Answer,
    CallSide, Member, Rates,
};

/// Rounds a sweep measuring until settled takes before its first look: the first
/// six give every case a 95 % interval of its own.
pub const FIRST_LOOK: u32 = 6;

/// The rounds at which a sweep measuring until settled looks (its last is
/// `max_rounds`), for a family of `cases` members at rate `family_alpha`. Each look
/// decides at 1 - alpha / (K L), L the number of looks, so that every interval at
/// every look holds at once (Bonferroni over the looks: the repeated confidence
/// intervals of Jennison and Turnbull, valid whatever rule stops the rounds). The
/// first look is at the fewest rounds whose unpaired interval reaches that level (at
/// least [`FIRST_LOOK`]), the next ones about 30 % further apart each. A single look
/// at `max_rounds` when the first would come no earlier.
pub fn looks(max_rounds: u32, cases: usize, family_alpha: f64) -> Vec<u32> {
    for planned in 1..=max_rounds.max(1) as usize {
        let alpha = family_alpha / (cases.max(1) * planned) as f64;
        let first = (fewest_unpaired(alpha) as u32).max(FIRST_LOOK);
        if first + 1 >= max_rounds {
            return vec![max_rounds];
        }
        let mut at = vec![first];
        while let Some(&last) = at.last().filter(|&&l| l < max_rounds) {
            let next = (last + 2).max((f64::from(last) * 1.3).ceil() as u32);
            at.push(if next + 1 >= max_rounds {
                max_rounds
            } else {
                next
            });
        }
        // Fewer looks than planned only makes each one's level stricter than needed.
        if at.len() <= planned {
            return at;
        }
    }
    vec![max_rounds]
}

/// Whether a sweep measuring until settled may stop at this look, and the family's
/// answer if so, `alpha` the chance that some member's interval misses at this look
/// (these members' share of the whole family's rate over its looks: the family
/// will be decided over its planned members and looks, not only those so far), and
/// `own_alpha` the two-sided rate of each member's own interval, on which
/// equivalence rests ([`super::own_alpha`]: each end at the family's rate over its
/// looks, whatever the family's size). `None`: measure on. The pair is settled when
/// every member's own interval lies within +-`margin`, or when some member is beyond the
/// band and no undecided one is pending: one whose estimate lies beyond the band and
/// whose interval, narrowing as 1/sqrt(rounds), would clear the band within
/// [`FUTILITY`] times `most` rounds. So a difference is found at every case the
/// rounds left can show it at, not only at the first, and a case far too noisy to
/// show by then does not hold the rounds going. By the same estimate a pair with no
/// member beyond the band stops, not settled, where settling it either way (one
/// member shown beyond the band, or every member within) would take more than that;
/// to show every member within, each estimate is first moved one standard error
/// toward no change and the rounds may reach [`WITHIN_FUTILITY`] times the most.
/// Measuring on could not change its answer (stopping for futility only ever
/// declares less, so the family's rate holds).
pub fn settled_at(
    members: &[Member],
    threshold: f64,
    margin: f64,
    alpha: f64,
    own_alpha: f64,
    most: usize,
) -> Option<Answer> {
    let (calls, judged) = call_each(members, threshold, margin, alpha);
    let judged = with_own(members, judged, own_alpha, margin);
    let pending = calls.iter().zip(&judged).any(|(call, j)| {
        call.side == CallSide::NotSettled
            && j.estimate.is_none_or(|e| {
                e.0.abs() > threshold
                    && rounds_to_settle(&[*j], threshold, margin)
                        .is_some_and(|r| r <= most * FUTILITY)
            })
    });
    let rates = Rates {
        alpha,
        looks: 1,
        threshold,
        margin,
    };
    let answer = conclude(calls, &judged, None, &rates).answer;
    match answer {
        Answer::NotSettled { .. } => {
            let ways = ways_to_settle(&judged, threshold, margin, 1.0);
            let may_differ = ways.differ.is_some_and(|r| r <= most * FUTILITY);
            let may_be_within = ways.within.is_some_and(|r| r <= most * WITHIN_FUTILITY);
            (!may_differ && !may_be_within).then(|| Answer::NotSettled {
                rounds: rounds_to_settle(&judged, threshold, margin),
            })
        }
        Answer::Different { .. } if pending => None,
        answer => Some(answer),
    }
}

/// How far past the most rounds a look's estimate of the rounds still needed may
/// reach before a pair stops for it ([`settled_at`]). The estimate scales the
/// interval as 1/sqrt(rounds), but at a first look of 7 or 8 rounds the relabelled
/// intervals are coarse (few sign patterns) and narrow faster than that as rounds
/// come, so it runs high: on simulated families of 13 sizes 10 % slower, groups 3 %
/// apart, up to 15 rounds, stopping where it exceeds the most itself found 5,031 of
/// 5,200 cases, three times the most 5,187, never stopping 5,200; identical configs
/// stop at the first look all the same (estimates of 40 rounds and more there;
/// measured while the case needing the most rounds spoke for the pair).
pub const FUTILITY: usize = 3;

/// How far past the most rounds the estimate of the rounds that would show every
/// member within the margin may reach before a pair stops for it ([`settled_at`]),
/// once each member's estimate is moved one standard error toward no change. The
/// member needing the most rounds speaks for the family, and at a first look it is
/// the one whose few rounds put it nearest the margin, most often by their noise:
/// taken as it stands (and to 3 times the most), a config 1 % slower (13 sizes,
/// groups 0.5 % apart, up to 15 rounds) stopped for futility in families that more
/// rounds showed within +-2 % (73 of 100 equivalent, against 82 never stopping);
/// moved and at twice the most, 82, while identical configs whose groups are 3 %
/// apart, which no look shows within, still stop at the first look.
pub const WITHIN_FUTILITY: usize = 2;
