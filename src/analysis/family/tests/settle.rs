//! Measuring until settled: the looks' rule on simulated families.

use super::*;

/// Looks at `pairs` (each side's rounds, all of the most) as a sweep measuring until
/// settled does, stopping by `stop`: the look it stopped at (its index; the last
/// where none stopped it) and the family decided there at +-2 %.
fn until_settled(
    pairs: &[(Vec<f64>, Vec<f64>)],
    at: &[u32],
    stop: impl Fn(&[Member], f64) -> bool,
) -> (usize, Family) {
    until_settled_within(pairs, at, 0.02, stop)
}

/// [`until_settled`] with the family decided at the equivalence `margin`.
fn until_settled_within(
    pairs: &[(Vec<f64>, Vec<f64>)],
    at: &[u32],
    margin: f64,
    stop: impl Fn(&[Member], f64) -> bool,
) -> (usize, Family) {
    let level = FAMILY_ALPHA / at.len() as f64;
    for (i, &n) in at.iter().enumerate() {
        let cut: Vec<(Vec<f64>, Vec<f64>)> = pairs
            .iter()
            .map(|(b, c)| (b[..n as usize].to_vec(), c[..n as usize].to_vec()))
            .collect();
        let m = paired(&cut);
        if stop(&m, level) || i + 1 == at.len() {
            return (i, decide(&m, 0.02, margin, FAMILY_ALPHA, at.len()));
        }
    }
    unreachable!("looks end at the most rounds")
}

/// The sweep's rule: `settled_at`, up to `most` rounds.
fn settles(most: u32) -> impl Fn(&[Member], f64) -> bool {
    move |m, level| settled_at(m, 0.02, 0.02, level, 2.0 * level, most as usize).is_some()
}

/// `rounds` rounds of `sizes` cases of a config `slower` than the baseline: each
/// process group at its own speed (`group` between groups, shared by all its sizes,
/// as a communicator's is) and each case `case` apart within a group.
pub(in crate::analysis::family) fn rounds_of(
    rng: &mut SplitMix64,
    sizes: usize,
    rounds: usize,
    slower: f64,
    group: f64,
    case: f64,
) -> Vec<(Vec<f64>, Vec<f64>)> {
    let groups: Vec<(f64, f64)> = (0..rounds)
        .map(|_| (group * rng.normal(), group * rng.normal()))
        .collect();
    (0..sizes)
        .map(|_| {
            let (b, c) = groups
                .iter()
                .map(|(gb, gc)| {
                    let b = 100.0 * (gb + case * rng.normal()).exp();
                    let c = 100.0 * (1.0 + slower) * (gc + case * rng.normal()).exp();
                    (b, c)
                })
                .unzip();
            (b, c)
        })
        .collect()
}

/// A large difference settles at the first look: 25 sizes 30 % slower with 5 %
/// between rounds, paired, looked at after 8, 11 and 15 rounds. Nearly every family
/// stops at the first look, and each case is found at least 95 % of the time where
/// the family stops.
#[test]
fn a_large_difference_settles_at_the_first_look() {
    let mut rng = SplitMix64::new(99, 2);
    let at = looks(15, 25, FAMILY_ALPHA);
    let (mut first, mut found) = (0, 0);
    for _ in 0..200 {
        let pairs = rounds_of(&mut rng, 25, 15, 0.30, 0.0, 0.05);
        let (look, family) = until_settled(&pairs, &at, settles(*at.last().unwrap()));
        first += usize::from(look == 0);
        let Answer::Different { slower, faster } = family.answer else {
            panic!("{:?} after {} rounds", family.answer, at[look]);
        };
        found += slower;
        assert_eq!(faster, 0);
    }
    assert!(first >= 190, "{first} of 200 settled at round {}", at[0]);
    assert!(found * 100 >= 200 * 25 * 95, "{found} of 5,000 cases found");
}

/// A difference close to the band, as the simulated GPUs' bench makes it: 13 sizes
/// 10 % slower, each process group 3 % from the next (shared by its sizes) and the
/// cases 0.3 % apart within a group, looked at after 7 and 9 rounds. Relabelling
/// whole rounds sees the sizes move together: the sweep's rule finds nearly every
/// case. Each case's rank interval at Bonferroni's 1 - 0.05 / (13 x 2), after all 9
/// rounds, finds far fewer; so does stopping at the first look where some case is
/// shown (seeded: 99.5 % of cases, against 88.6 % and 96.3 %).
#[test]
fn cases_that_move_together_are_found_together() {
    let mut rng = SplitMix64::new(7, 44);
    let at = looks(9, 13, FAMILY_ALPHA);
    assert_eq!(at, vec![7, 9]);
    let slower = |f: &Family| {
        f.calls
            .iter()
            .filter(|c| c.side == CallSide::Slower)
            .count()
    };
    let (mut found, mut first_shown, mut bonferroni) = (0, 0, 0);
    for _ in 0..200 {
        let pairs = rounds_of(&mut rng, 13, 9, 0.10, 0.03, 0.003);
        found += slower(&until_settled(&pairs, &at, settles(*at.last().unwrap())).1);
        let shown = |m: &[Member], level: f64| {
            let (calls, _) = call_each(m, 0.02, 0.02, level);
            calls.iter().any(|c| c.side != CallSide::NotSettled)
        };
        first_shown += slower(&until_settled(&pairs, &at, shown).1);
        let level = FAMILY_ALPHA / (13 * at.len()) as f64;
        bonferroni += pairs
            .iter()
            .filter(|(b, c)| shift_at(b, c, level).is_some_and(|s| s.ci.0 > 0.02))
            .count();
    }
    let cases = 200 * 13;
    assert!(found * 100 >= cases * 97, "{found} of {cases} found");
    assert!(
        bonferroni * 100 <= cases * 90,
        "{bonferroni} of {cases} by Bonferroni"
    );
    assert!(
        first_shown < found,
        "{found} of {cases} found, {first_shown} stopping at the first shown"
    );
}

/// What the equivalence margin asks of the rounds: a config 1 % slower, 13 sizes,
/// looked at until settled up to 9 rounds. Each case's own interval (the
/// intersection-union test) shows it within +-2 % in most families where process
/// groups are 0.3 % apart and in few where they are 1 % apart; all the family's
/// simultaneous intervals inside would show it in far fewer (seeded: 80 and 22 of
/// 100 against 17 and 1; none of either at 3 %), as intervals over at most 9 rounds
/// are wide. README's statistics say so, for the default margin.
#[test]
fn equivalence_within_the_margin_needs_groups_far_closer_than_it() {
    let at = looks(9, 13, FAMILY_ALPHA);
    let equivalent = |jitter: f64| {
        let mut rng = SplitMix64::new(11, 5);
        let (mut own, mut simultaneous) = (0, 0);
        for _ in 0..100 {
            let pairs = rounds_of(&mut rng, 13, 9, 0.01, jitter, 0.003);
            let (look, family) = until_settled(&pairs, &at, settles(9));
            own += usize::from(family.answer == Answer::Equivalent);
            let n = at[look] as usize;
            let cut: Vec<(Vec<f64>, Vec<f64>)> = pairs
                .iter()
                .map(|(b, c)| (b[..n].to_vec(), c[..n].to_vec()))
                .collect();
            let level = FAMILY_ALPHA / at.len() as f64;
            let (calls, _) = call_each(&paired(&cut), 0.02, 0.02, level);
            simultaneous += usize::from(calls.iter().all(|c| c.side == CallSide::Within));
        }
        (own, simultaneous)
    };
    let (own, simultaneous) = equivalent(0.003);
    assert!(
        own >= 65 && simultaneous <= 40,
        "{own} and {simultaneous} of 100 at 0.3 %"
    );
    let (own, simultaneous) = equivalent(0.01);
    assert!(
        (10..=40).contains(&own) && simultaneous < own,
        "{own} and {simultaneous} of 100 at 1 %"
    );
    assert_eq!(equivalent(0.03).0, 0);
}

/// The rate of a wrong "equivalent": 13 sizes, 12 of them unchanged and one
/// exactly at the margin (+2 %, the hardest case beyond it to tell from inside),
/// process groups 0.3 % apart, looked at until settled up to 15 rounds. Each case's
/// own interval, each end at 5 % over the 4 looks, lets at most 5 % of such families
/// be called equivalent, however many cases are inside (seeded: 11 of 400; the
/// assertion's 34 is 3.2 standard deviations above 5 %'s 20, so a rule at the
/// rate fails it by chance less than once in a thousand).
#[test]
fn a_case_at_the_margin_is_called_within_at_most_the_family_rate() {
    let at = looks(15, 13, FAMILY_ALPHA);
    let mut rng = SplitMix64::new(5, 77);
    let mut wrong = 0;
    for _ in 0..400 {
        let mut pairs = rounds_of(&mut rng, 12, 15, 0.0, 0.003, 0.003);
        let edge = rounds_of(&mut rng, 1, 15, 0.02, 0.003, 0.003);
        pairs.extend(edge);
        let (_, family) = until_settled(&pairs, &at, settles(15));
        wrong += usize::from(family.answer == Answer::Equivalent);
    }
    assert!(wrong <= 34, "{wrong} of 400 families called within +-2 %");
}

/// A case that looks beyond the band but is far too noisy to be shown by the most
/// rounds does not hold a settled pair going; with rounds enough to show it, it does.
#[test]
fn a_case_the_rounds_left_cannot_show_does_not_hold_the_rounds() {
    let base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8];
    let clearly: Vec<f64> = base.iter().map(|b| b * 1.5).collect();
    let noisy: Vec<f64> = base
        .iter()
        .zip([1.4, 0.7, 1.06, 1.3, 0.8, 1.05, 1.1])
        .map(|(b, f)| b * f)
        .collect();
    let m = [
        Member {
            base: &base,
            cand: &clearly,
            paired: false,
        },
        Member {
            base: &base,
            cand: &noisy,
            paired: false,
        },
    ];
    let level = FAMILY_ALPHA / 4.0;
    let (calls, intervals) = call_each(&m, 0.02, 0.02, level);
    assert_eq!(calls[0].side, CallSide::Slower);
    assert_eq!(calls[1].side, CallSide::NotSettled);
    assert!(intervals[1].estimate.unwrap().0 > 0.02, "{intervals:?}");
    assert_eq!(
        settled_at(&m, 0.02, 0.02, level, 2.0 * level, 9),
        Some(Answer::Different {
            slower: 1,
            faster: 0
        })
    );
    assert_eq!(settled_at(&m, 0.02, 0.02, level, 2.0 * level, 10_000), None);
}

/// Stopping for futility ([`FUTILITY`]): 13 sizes, groups 3 % apart, looked at up to
/// 15 rounds. Identical configs, never settled within +-2 % at these rounds, stop at
/// the first look, where they would have gone on to the most; a config 10 % slower is
/// found at nearly every case all the same, as where nothing stops for futility
/// (seeded: 95 of 100 stop at the first look, 96 before the way to "within" moved
/// each estimate toward no change; 1,300 of 1,300 cases found both ways).
#[test]
fn a_pair_the_most_rounds_cannot_settle_stops_at_the_first_look() {
    let at = looks(15, 13, FAMILY_ALPHA);
    assert_eq!(at, vec![7, 10, 13, 15]);
    let never =
        |m: &[Member], level: f64| settled_at(m, 0.02, 0.02, level, 2.0 * level, 1 << 20).is_some();
    let mut rng = SplitMix64::new(7, 44);
    let (mut first, mut found, mut found_never) = (0, 0, 0);
    let slower = |f: &Family| {
        f.calls
            .iter()
            .filter(|c| c.side == CallSide::Slower)
            .count()
    };
    for _ in 0..100 {
        let same = rounds_of(&mut rng, 13, 15, 0.0, 0.03, 0.003);
        let (look, family) = until_settled(&same, &at, settles(15));
        first += usize::from(look == 0);
        assert!(
            matches!(family.answer, Answer::NotSettled { rounds: Some(r) } if r > 15),
            "{:?}",
            family.answer
        );
        assert_eq!(until_settled(&same, &at, never).0, 3);
        let slow = rounds_of(&mut rng, 13, 15, 0.10, 0.03, 0.003);
        found += slower(&until_settled(&slow, &at, settles(15)).1);
        found_never += slower(&until_settled(&slow, &at, never).1);
    }
    assert!(first >= 95, "{first} of 100 stopped at the first look");
    assert!(found * 100 >= 1300 * 98, "{found} of 1,300 found");
    assert!(found <= found_never, "{found} against {found_never}");
}

/// A pair settles either way: one case shown beyond the band, or every case shown
/// within the margin. A case whose estimate sits on the band's edge would need far
/// more rounds either way, but it does not hold back a case heading for a
/// difference: the rounds to settle are the fewest that case needs (a sweep saw
/// this pair, 10 % slower, stop for futility after 7 rounds when the edge case's
/// estimate counted for the family).
#[test]
fn a_case_on_the_edge_does_not_stop_a_pair_about_to_differ() {
    let judged = |estimate: Estimate, own: Estimate| Judged {
        rounds: 7,
        estimate: Some(estimate),
        level: 0.001,
        own: Some(own),
        own_level: 0.025,
        own_within: false,
    };
    let heading = judged((0.06, -0.01, 0.13), (0.06, 0.0, 0.12));
    let edge = judged((0.021, -0.04, 0.08), (0.02, -0.03, 0.07));
    // 7 x (0.07 / 0.04)^2 = 21.4 rounds to show the first beyond +2 %.
    assert_eq!(rounds_to_settle(&[heading, edge], 0.02, 0.02), Some(22));
    assert_eq!(rounds_to_settle(&[edge], 0.02, 0.02), Some(MOST_ROUNDS + 1));
    // Two cases near zero: shown within once the wider one is, 7 x (0.05 / 0.02)^2.
    let near = judged((0.0, -0.05, 0.05), (0.0, -0.05, 0.05));
    let closer = judged((0.0, -0.03, 0.03), (0.0, -0.03, 0.03));
    assert_eq!(rounds_to_settle(&[near, closer], 0.02, 0.02), Some(44));
}

/// Stopping for futility on the way to "within" ([`WITHIN_FUTILITY`]): a config 1 %
/// slower, 13 sizes, process groups 0.5 % apart, up to 15 rounds. A family that more
/// rounds would show within +-2 % is not stopped before they come: about as many are
/// shown within as where nothing stops for futility, and most of them (seeded: 82
/// and 82 of 100; taking each estimate as it stands, to 3 times the most, 73).
#[test]
fn a_pair_more_rounds_would_show_within_goes_on_to_them() {
    let at = looks(15, 13, FAMILY_ALPHA);
    let never =
        |m: &[Member], level: f64| settled_at(m, 0.02, 0.02, level, 2.0 * level, 1 << 20).is_some();
    let mut rng = SplitMix64::new(11, 5);
    let (mut within, mut within_never) = (0, 0);
    for _ in 0..100 {
        let pairs = rounds_of(&mut rng, 13, 15, 0.01, 0.005, 0.003);
        let equivalent = |f: Family| usize::from(f.answer == Answer::Equivalent);
        within += equivalent(until_settled(&pairs, &at, settles(15)).1);
        within_never += equivalent(until_settled(&pairs, &at, never).1);
    }
    assert!(
        within >= 78 && within + 3 >= within_never,
        "{within} of 100 within +-2 %, {within_never} never stopping"
    );
}
