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

/// The rounds of a sweep take the rows in turn: over a whole design every config
/// follows every other equally often, whatever the seed's relabelling; a fixed order
/// (the mutant) has one config always after the same other.
#[test]
fn the_rounds_of_a_sweep_are_balanced() {
    for (n, seed) in [(2, 1), (3, 7), (4, 9), (5, 11)] {
        let rows: Vec<Vec<usize>> = (1..=williams(n).len() as u32)
            .map(|r| round_order(n, seed, r))
            .collect();
        let counts = follows(&rows, n);
        let off: Vec<usize> = (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .map(|(a, b)| counts[a][b])
            .collect();
        assert!(off.iter().all(|&c| c == off[0]), "n={n}: {counts:?}");
    }
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
