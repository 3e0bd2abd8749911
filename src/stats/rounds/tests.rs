//! `stats::rounds` on constructed rounds.

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
