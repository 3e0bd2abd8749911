//! `stats::rounds` on constructed rounds.

use super::*;

/// Who follows whom over the design's rows: counts[a][b] = rows where b runs right
/// after a.
fn follows(rows: &[Vec<usize>], n: usize) -> Vec<Vec<usize>> {
    let mut counts = vec![vec![0; n]; n];
    for row in rows {
        for w in row.windows(2) {
            counts[w[0]][w[1]] += 1;
        }
    }
    counts
}

#[test]
fn a_williams_design_balances_who_goes_after_whom() {
    for n in 2..=9 {
        let rows = williams(n);
        assert_eq!(rows.len(), if n % 2 == 0 { n } else { 2 * n }, "n={n}");
        let each = rows.len() / n;
        for row in &rows {
            let mut sorted = row.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "a permutation");
        }
        for (a, after) in follows(&rows, n).iter().enumerate() {
            for (b, &count) in after.iter().enumerate() {
                let want = if a == b { 0 } else { each };
                assert_eq!(count, want, "n={n} {a}->{b}");
            }
            let first = rows.iter().filter(|r| r[0] == a).count();
            assert_eq!(first, each, "n={n}: {a} first");
        }
    }
}

/// The rounds of a sweep take the chained rows in turn: over a whole cycle every
/// config follows every config, itself included, equally often, counting the last
/// group of a round before the first of the next, and each is first equally often,
/// whatever the seed's relabelling.
#[test]
fn the_rounds_of_a_sweep_are_balanced_across_rounds_too() {
    for (n, seed) in [
        (2, 1),
        (3, 7),
        (4, 9),
        (5, 11),
        (6, 2),
        (7, 3),
        (8, 5),
        (9, 4),
    ] {
        let cycle = chained(n).len() as u32;
        let rounds: Vec<usize> = (1..=cycle).flat_map(|r| round_order(n, seed, r)).collect();
        // The whole sweep as one sequence of groups, wrapping round.
        let mut counts = vec![vec![0; n]; n];
        for i in 0..rounds.len() {
            counts[rounds[i]][rounds[(i + 1) % rounds.len()]] += 1;
        }
        // Every ordered pair alike, a config after itself too: a carry-over then
        // falls on every config alike, the one that leaves it included.
        let all: Vec<usize> = counts.iter().flatten().copied().collect();
        assert!(all.iter().all(|&c| c == all[0]), "n={n}: {counts:?}");
        let firsts: Vec<usize> = (1..=cycle).map(|r| round_order(n, seed, r)[0]).collect();
        for c in 0..n {
            assert_eq!(
                firsts.iter().filter(|&&f| f == c).count() * n,
                cycle as usize,
                "n={n}"
            );
        }
    }
    assert_eq!(round_order(1, 3, 1), vec![0]);
    assert!(round_order(0, 3, 1).is_empty());
}

/// A config 25 % slower leaves the group after it 5 % slower (a carry-over: what a
/// slow group leaves behind for the next): in the chained order neither the A/A pair
/// that may follow it nor the slow config against default reads any bias over whole
/// cycles; in a fixed order one of the pair always comes after it, and reads the
/// whole 5 %.
#[test]
fn carry_over_cancels_in_the_chained_order_not_in_a_fixed_one() {
    // 0 default, 1 same-as-default, 2 slow.
    let bias = |order: &dyn Fn(u32) -> Vec<usize>, rounds: u32| {
        let mut prev = None;
        let mut sum = [0.0f64; 3];
        for r in 1..=rounds {
            for g in order(r) {
                sum[g] += if prev == Some(2) { 0.05 } else { 0.0 };
                prev = Some(g);
            }
        }
        [sum[1] - sum[0], sum[2] - sum[0]].map(|d| d / f64::from(rounds))
    };
    let cycle = chained(3).len() as u32;
    for seed in 0..20 {
        // Neither the A/A pair nor the slow config against default, up to one
        // group's carry-over: the sweep's first group follows none.
        let [aa, slow] = bias(&|r| round_order(3, seed, r), 4 * cycle);
        let edge = 0.05 / f64::from(4 * cycle) + 1e-12;
        assert!(
            aa.abs() <= edge && slow.abs() <= edge,
            "seed {seed}: {aa} {slow}"
        );
    }
    let [fixed, _] = bias(&|_| vec![0, 1, 2], 4 * cycle);
    assert!((fixed + 0.05).abs() < 0.01, "{fixed}");
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
