//! `analysis::family` on constructed rounds.

use super::*;
use crate::stats::splitmix::SplitMix64;

mod settle;
pub(super) use settle::rounds_of;

/// `n` round medians around `center` with relative noise `spread` (uniform).
fn rounds(rng: &mut SplitMix64, n: usize, center: f64, spread: f64) -> Vec<f64> {
    (0..n)
        .map(|_| center * (1.0 + spread * (2.0 * rng.uniform() - 1.0)))
        .collect()
}

/// The members of `pairs` (base, candidate rounds), paired.
fn paired(pairs: &[(Vec<f64>, Vec<f64>)]) -> Vec<Member<'_>> {
    pairs
        .iter()
        .map(|(b, c)| Member {
            base: b,
            cand: c,
            paired: true,
        })
        .collect()
}

/// The family of `pairs` (base, candidate rounds), paired, at +-2 %.
fn family_of(pairs: &[(Vec<f64>, Vec<f64>)]) -> Family {
    decide(&paired(pairs), 0.02, 0.02, FAMILY_ALPHA, 1)
}

/// `k` pairs of `n` rounds each, both sides around 10 with noise `spread`.
fn noisy_pairs(rng: &mut SplitMix64, k: usize, n: usize, spread: f64) -> Vec<(Vec<f64>, Vec<f64>)> {
    (0..k)
        .map(|_| (rounds(rng, n, 10.0, spread), rounds(rng, n, 10.0, spread)))
        .collect()
}

#[test]
fn a_smaller_family_rate_widens_every_interval_and_says_so() {
    // 3 members of 15 rounds, the candidate 5 % slower with 3 % noise.
    let mut rng = SplitMix64::new(11, 0);
    let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..3)
        .map(|_| {
            let b = rounds(&mut rng, 15, 10.0, 0.03);
            let c = b
                .iter()
                .map(|x| x * 1.05 * (1.0 + 0.03 * (2.0 * rng.uniform() - 1.0)))
                .collect();
            (b, c)
        })
        .collect();
    let m = paired(&pairs);
    let loose = decide(&m, 0.02, 0.02, 0.05, 1);
    let strict = decide(&m, 0.02, 0.02, 0.001, 1);
    assert_eq!(strict.alpha, 0.001);
    assert!((strict.bonferroni - (1.0 - 0.001 / 3.0)).abs() < 1e-12);
    assert!(strict.per_case > loose.per_case, "{strict:?} {loose:?}");
    assert!(
        strict.most_slower > loose.most_slower,
        "{strict:?} {loose:?}"
    );
    assert!(
        strict.most_faster < loose.most_faster,
        "{strict:?} {loose:?}"
    );
    assert!(
        strict.sentence("it").contains("with at least 99.9%"),
        "{}",
        strict.sentence("it")
    );
    let each = format!("{:.2}", loose.per_case * 100.0);
    assert!(
        loose.sentence("it").contains(&format!(
            "3 cases decided together, each interval at {each}% so that all hold at once with at least 95%"
        )),
        "{}",
        loose.sentence("it")
    );
}

#[test]
fn a_check_family_finds_a_slower_run_and_calls_the_same_one_equivalent() {
    let mut rng = SplitMix64::new(5, 0);
    let same: Vec<Vec<f64>> = (0..8).map(|_| rounds(&mut rng, 15, 100.0, 0.005)).collect();
    let slow: Vec<Vec<f64>> = (0..8).map(|_| rounds(&mut rng, 15, 110.0, 0.005)).collect();
    let band =
        |r: &[Vec<f64>]| -> Vec<(Vec<f64>, f64)> { r.iter().map(|x| (x.clone(), 100.0)).collect() };
    let family = |r: &[(Vec<f64>, f64)], alpha| {
        let m: Vec<BandMember> = r
            .iter()
            .map(|(x, med)| BandMember {
                rounds: x,
                base_median: *med,
                low: 99.0,
                high: 101.0,
            })
            .collect();
        decide_bands(&m, 0.02, 0.02, alpha, 1)
    };
    let f = family(&band(&same), FAMILY_ALPHA);
    assert_eq!(
        (f.cases, f.bounded, &f.answer),
        (8, 8, &Answer::Equivalent),
        "{f:?}"
    );
    let f = family(&band(&slow), FAMILY_ALPHA);
    assert_eq!(
        f.answer,
        Answer::Different {
            slower: 8,
            faster: 0
        },
        "{f:?}"
    );
    assert!(
        f.most_slower.unwrap() > 0.10 && f.most_faster.unwrap() > 0.05,
        "{f:?}"
    );
    // Too few rounds for an interval at the family's level: not settled, said.
    let short: Vec<(Vec<f64>, f64)> = band(&slow)
        .into_iter()
        .map(|(x, m)| (x[..6].to_vec(), m))
        .collect();
    let f = family(&short, 0.001);
    assert_eq!(
        (f.bounded, &f.answer),
        (0, &Answer::NotSettled { rounds: Some(14) }),
        "{f:?}"
    );
    assert!(
        f.sentence("the run")
            .contains("8 case(s) have too few rounds"),
        "{}",
        f.sentence("the run")
    );
}

#[test]
fn an_interval_across_one_end_of_the_margin_is_not_equivalent() {
    // One member 2.5 % slower (or faster) with little noise: its interval lies
    // within the threshold on one side and past the margin on the other, so
    // neither different nor equivalent, whichever end crosses.
    let mut rng = SplitMix64::new(3, 0);
    for factor in [1.025, 0.975] {
        let base = rounds(&mut rng, 15, 10.0, 0.001);
        let cand: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, x)| x * factor * (1.0 + 0.015 * if i % 2 == 0 { 1.0 } else { -1.0 }))
            .collect();
        let f = family_of(&[(base, cand)]);
        let (lo, hi) = (f.most_faster.unwrap(), f.most_slower.unwrap());
        assert!(lo > -0.02 || hi < 0.02, "one end inside: {f:?}");
        assert!(lo < -0.02 || hi > 0.02, "one end outside: {f:?}");
        assert!(
            matches!(f.answer, Answer::NotSettled { .. }),
            "{factor}: {f:?}"
        );
    }
}

#[test]
fn the_fewest_rounds_follow_the_family_size() {
    assert_eq!(fewest_rounds(0.05), 6);
    assert_eq!(fewest_rounds(0.05 / 25.0), 10);
    assert_eq!(fewest_rounds(0.05 / 75.0), 12);
}

#[test]
fn identical_configs_are_equivalent_and_a_slower_one_is_different() {
    let mut rng = SplitMix64::new(7, 0);
    let base: Vec<Vec<f64>> = (0..10)
        .map(|_| rounds(&mut rng, 15, 100.0, 0.002))
        .collect();
    let same: Vec<Vec<f64>> = base
        .iter()
        .map(|b| {
            b.iter()
                .map(|x| x * (1.0 + 0.001 * (2.0 * rng.uniform() - 1.0)))
                .collect()
        })
        .collect();
    let members = |cand: &[Vec<f64>]| -> Vec<(Vec<f64>, Vec<f64>)> {
        base.iter().cloned().zip(cand.iter().cloned()).collect()
    };
    let aa = family_of(&members(&same));
    assert_eq!(aa.answer, Answer::Equivalent, "{aa:?}");
    assert_eq!((aa.cases, aa.bounded), (10, 10));
    assert!((aa.bonferroni - 0.995).abs() < 1e-12);
    assert!(aa.per_case > 0.95 && aa.per_case < 1.0, "{aa:?}");
    assert!(aa.most_slower.unwrap() <= 0.02 && aa.most_faster.unwrap() >= -0.02);

    let slow: Vec<Vec<f64>> = base
        .iter()
        .map(|b| b.iter().map(|x| x * 1.10).collect())
        .collect();
    let ab = family_of(&members(&slow));
    assert_eq!(
        ab.answer,
        Answer::Different {
            slower: 10,
            faster: 0
        },
        "{ab:?}"
    );
}

#[test]
fn too_few_rounds_for_the_family_say_how_many_would_do() {
    let mut rng = SplitMix64::new(11, 0);
    // Twelve rounds flip: their 4,096 sign patterns hold 205 beyond 5 %.
    let f = family_of(&noisy_pairs(&mut rng, 25, 12, 0.01));
    assert_eq!(f.bounded, 25);
    assert!(
        f.calls.iter().all(|c| !c.unpaired && c.ci.is_some()),
        "{f:?}"
    );
    // Nine (NCCL's default) and six do not (25.6 and 3.2, fewer than 50): relabelled
    // unpaired, which 48,620 and 924 ways do.
    for n in [9, 6] {
        let f = family_of(&noisy_pairs(&mut rng, 25, n, 0.01));
        assert_eq!(f.bounded, 25);
        assert!(f.calls.iter().all(|c| c.unpaired), "{f:?}");
    }
    // Three rounds reach no family interval (the measured labelling and its mirror
    // are 2 of 20 ways): none, and the rounds that would give one whatever the
    // cases' dependence (Bonferroni's). Each case's own interval at 90 % (2 of 20
    // is 10 %) is there, but too wide for the margin at 5 % noise.
    let f = family_of(&noisy_pairs(&mut rng, 25, 3, 0.05));
    assert_eq!(f.bounded, 0);
    assert!(f.most_slower.is_some_and(|hi| hi > 0.02), "{f:?}");
    assert_eq!(fewest_unpaired(0.05 / 25.0), 7);
    assert_eq!(f.answer, Answer::NotSettled { rounds: Some(7) }, "{f:?}");
    // A wide interval near zero: more rounds, in proportion to its width squared.
    let f = family_of(&noisy_pairs(&mut rng, 2, 15, 0.06));
    match f.answer {
        Answer::NotSettled { rounds: Some(r) } => assert!(r > 15, "{f:?}"),
        other => panic!("{other:?}"),
    }
}

/// Coverage: 400 families of 10 members, each member's rounds 15 pairs with a
/// true change of +5 % and round noise of 3 % (normal, in logs): the family
/// misses (some interval excludes +5 %) in at most 5 % of families. The count
/// is deterministic (seeded); 35 is 3.5 standard deviations above 20 of 400.
#[test]
fn all_intervals_of_a_family_hold_together_at_95_percent() {
    let mut rng = SplitMix64::new(2024, 1);
    let truth = 0.05f64;
    let mut missed = 0;
    for _ in 0..400 {
        let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..10)
            .map(|_| {
                let base: Vec<f64> = (0..15)
                    .map(|_| 100.0 * (0.03 * rng.normal()).exp())
                    .collect();
                let cand = base
                    .iter()
                    .map(|b| b * (1.0 + truth) * (0.03 * rng.normal()).exp())
                    .collect();
                (base, cand)
            })
            .collect();
        let alpha = FAMILY_ALPHA / pairs.len() as f64;
        let miss = pairs.iter().any(|(b, c)| {
            let s = paired_shift_at(b, c, alpha).unwrap();
            !(s.ci.0 <= truth && truth <= s.ci.1)
        });
        missed += usize::from(miss);
    }
    assert!(missed <= 35, "{missed} of 400 families missed");
}

/// The unpaired fallback on paired rounds: 400 families of 25 members of 7 rounds
/// (too few to flip: their 128 sign patterns hold 6.4 beyond 5 %), a true
/// change of +5 %, each round slower or faster for both sides by 10 % (what
/// pairing would take out) and 2 % of its own. Every member is judged unpaired,
/// and the family misses in at most 5 % of families: the shared round effect
/// widens the unpaired intervals, never narrows them. Seeded; 35 is 3.5 standard
/// deviations above 20 of 400 (it misses in none).
#[test]
fn paired_rounds_judged_unpaired_still_hold_together() {
    let mut rng = SplitMix64::new(77, 3);
    let truth = 0.05f64;
    let mut missed = 0;
    for _ in 0..400 {
        let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..25)
            .map(|_| {
                let round: Vec<f64> = (0..7).map(|_| (0.10 * rng.normal()).exp()).collect();
                let side = |rng: &mut SplitMix64, change: f64| -> Vec<f64> {
                    round
                        .iter()
                        .map(|r| 100.0 * r * (1.0 + change) * (0.02 * rng.normal()).exp())
                        .collect()
                };
                (side(&mut rng, 0.0), side(&mut rng, truth))
            })
            .collect();
        let f = family_of(&pairs);
        assert!(f.calls.iter().all(|c| c.unpaired), "{f:?}");
        let miss = f
            .calls
            .iter()
            .any(|c| c.ci.is_some_and(|(lo, hi)| !(lo <= truth && truth <= hi)));
        missed += usize::from(miss);
    }
    assert!(missed <= 35, "{missed} of 400 families missed");
}

#[test]
fn no_member_is_no_answer() {
    assert_eq!(
        decide(&[], 0.02, 0.02, FAMILY_ALPHA, 1).answer,
        Answer::Empty
    );
}

#[test]
fn looks_run_from_the_first_round_that_can_decide_to_the_most() {
    // The host's 25 sizes on one rank count, up to 15 rounds.
    assert_eq!(looks(15, 25, FAMILY_ALPHA), vec![8, 11, 15]);
    assert_eq!(looks(15, 11, FAMILY_ALPHA), vec![7, 10, 13, 15]);
    assert_eq!(looks(9, 25, FAMILY_ALPHA), vec![7, 9]);
    // 25 sizes on three rank counts: no look before the ninth round can decide.
    assert_eq!(looks(9, 75, FAMILY_ALPHA), vec![9]);
    for most in 6..40u32 {
        for k in [1, 5, 25, 75, 300, 2000] {
            let at = looks(most, k, FAMILY_ALPHA);
            assert_eq!(at.last(), Some(&most), "{most} {k}: {at:?}");
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
            // A look before the last reaches the level every look is decided at.
            if at.len() > 1 {
                let level = FAMILY_ALPHA / at.len() as f64;
                assert!(at[0] >= FIRST_LOOK, "{at:?}");
                assert!(
                    fewest_unpaired(level) <= at[0] as usize,
                    "{most} {k}: {at:?}"
                );
            }
        }
    }
}

/// Measuring until settled keeps the family's rate whatever stops the rounds: one
/// member (no Bonferroni over cases to spare), identical configs, each pair looked
/// at after 6, 8, 11 and 15 rounds against a zero threshold, so that any interval
/// that misses the true change (none) raises an alarm. 2,000 such runs: with each
/// look at 1 - 0.05 / 4 the alarms stay within 5 %; deciding every look at 95 %
/// alone would raise more (the test sees what it guards against).
#[test]
fn looks_keep_the_family_rate_whatever_stops_the_rounds() {
    let mut rng = SplitMix64::new(4242, 0);
    let at = looks(15, 1, FAMILY_ALPHA);
    assert_eq!(at, vec![6, 8, 11, 15]);
    let runs = 2000;
    let (mut alarms, mut naive) = (0, 0);
    for _ in 0..runs {
        let mut side = || -> Vec<f64> {
            (0..15)
                .map(|_| 100.0 * (0.05 * rng.normal()).exp())
                .collect()
        };
        let (base, cand) = (side(), side());
        // Decided as the sweep's family decides it, over `looks` looks.
        let alarm = |looks: usize| {
            at.iter().any(|&n| {
                let n = n as usize;
                let m = [Member {
                    base: &base[..n],
                    cand: &cand[..n],
                    paired: false,
                }];
                let family = decide(&m, 0.0, 0.0, FAMILY_ALPHA, looks);
                matches!(family.answer, Answer::Different { .. })
            })
        };
        alarms += usize::from(alarm(at.len()));
        naive += usize::from(alarm(1));
    }
    assert!(alarms * 100 <= runs * 5, "{alarms} alarms of {runs}");
    assert!(
        naive * 100 > runs * 6,
        "{naive} alarms of {runs} at 95 % a look"
    );
}
