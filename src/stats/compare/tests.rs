//! Tests of the comparison statistics (property loops over seeded random inputs).
use super::*;

fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = Histogram::new(super::super::latency::SIGFIG).unwrap();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

/// Latency-like samples: ~10 us, lognormal spread `sigma`, from a seeded stream.
fn latencies(n: usize, median_ns: f64, sigma: f64, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed, 99);
    (0..n)
        .map(|_| (median_ns * (sigma * rng.normal()).exp()).round() as u64)
        .collect()
}

fn scaled(samples: &[u64], factor: f64) -> Vec<u64> {
    samples
        .iter()
        .map(|&v| (v as f64 * factor).round() as u64)
        .collect()
}

fn compare(base: &[u64], cand: &[u64], seed: u64) -> Comparison {
    compare_histograms(
        &histogram(base.iter().copied()),
        &histogram(cand.iter().copied()),
        DEFAULT_THRESHOLD,
        DEFAULT_RESAMPLES,
        seed,
    )
    .unwrap()
}

#[test]
fn identical_histograms_are_unchanged() {
    for (n, seed) in [(300, 1), (1000, 2), (20_000, 3)] {
        let s = latencies(n, 10_000.0, 0.05, seed);
        let c = compare(&s, &s, seed);
        assert_eq!(c.change, 0.0);
        assert_eq!(
            c.ci,
            (0.0, 0.0),
            "the same samples: no change, with certainty"
        );
        assert_eq!(c.verdict, Verdict::Unchanged);
        assert_eq!(
            c.method,
            Method::Bootstrap {
                resamples: DEFAULT_RESAMPLES
            }
        );
    }
}

#[test]
fn ten_percent_slower_is_a_regression_and_faster_an_improvement() {
    let base = latencies(2000, 10_000.0, 0.05, 7);
    let slower = compare(&base, &scaled(&base, 1.10), 1);
    assert!((slower.change - 0.10).abs() < 0.002, "{}", slower.change);
    assert!(
        slower.ci.0 > 0.02,
        "above the band, so excludes 0: {:?}",
        slower.ci
    );
    assert_eq!(slower.verdict, Verdict::Regressed);

    let faster = compare(&base, &scaled(&base, 0.90), 1);
    assert!((faster.change + 0.10).abs() < 0.002, "{}", faster.change);
    assert!(faster.ci.1 < -0.02, "{:?}", faster.ci);
    assert_eq!(faster.verdict, Verdict::Improved);
}

#[test]
fn large_histograms_are_compared_without_expanding_them() {
    let base = latencies(100_000, 50_000.0, 0.1, 11);
    let c = compare(&base, &scaled(&base, 1.03), 5);
    assert!((c.change - 0.03).abs() < 0.002, "{}", c.change);
    // The median of 100k samples is known to ~0.1 %: a 3 % change is clear.
    assert!(c.ci.0 > 0.02 && c.ci.1 < 0.04, "{:?}", c.ci);
    assert_eq!(c.verdict, Verdict::Regressed);
}

#[test]
fn noise_of_the_same_distribution_is_not_called() {
    let mut covered = 0;
    for seed in 0..20 {
        let base = latencies(2000, 10_000.0, 0.1, 2 * seed);
        let cand = latencies(2000, 10_000.0, 0.1, 2 * seed + 1);
        let c = compare(&base, &cand, seed);
        // The median of 2000 samples with a 10 % spread is known to ~0.3 %: well
        // inside the band, whether or not this interval happens to contain 0.
        assert_eq!(c.verdict, Verdict::Unchanged, "seed {seed}: {c:?}");
        covered += (c.ci.0 <= 0.0 && 0.0 <= c.ci.1) as usize;
    }
    // A 95 % interval misses the true change (0) now and then, rarely 6 times in 20.
    assert!(covered >= 15, "{covered} of 20 intervals contain 0");
}

#[test]
fn one_sample_each_is_inconclusive() {
    let c = compare(&[10_000], &[20_000], 0);
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert_eq!(c.ci, (f64::NEG_INFINITY, f64::INFINITY));
    assert!((c.change - 1.0).abs() < 1e-2);
    // One side with many samples does not help.
    let many = latencies(1000, 10_000.0, 0.05, 3);
    assert_eq!(compare(&many, &[10_000], 0).verdict, Verdict::Inconclusive);
    assert_eq!(compare(&[10_000], &many, 0).verdict, Verdict::Inconclusive);
}

#[test]
fn empty_histograms_and_zero_resamples() {
    let h = histogram([10_000, 11_000]);
    let empty = histogram([]);
    assert!(compare_histograms(&empty, &h, 0.02, 1000, 0).is_none());
    assert!(compare_histograms(&h, &empty, 0.02, 1000, 0).is_none());
    assert!(compare_histograms(&histogram([0, 0]), &h, 0.02, 1000, 0).is_none());
    let other = histogram([10_000, 12_000]);
    let c = compare_histograms(&h, &other, 0.02, 0, 0).unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
}

#[test]
fn median_matches_the_histograms_own() {
    for (n, seed) in [(1, 0), (2, 1), (9, 2), (10, 3), (1001, 4)] {
        let h = histogram(latencies(n, 10_000.0, 0.2, seed));
        let c = compare_histograms(&h, &h, 0.02, 10, 0).unwrap();
        assert_eq!(c.base_median, h.value_at_quantile(0.5) as f64, "n = {n}");
    }
}

#[test]
fn same_seed_same_result() {
    let base = latencies(500, 10_000.0, 0.1, 1);
    let cand = latencies(500, 10_200.0, 0.1, 2);
    assert_eq!(compare(&base, &cand, 42), compare(&base, &cand, 42));
    assert_ne!(compare(&base, &cand, 42).ci, compare(&base, &cand, 43).ci);
}

/// Property over random pairs: the interval contains the point estimate, and swapping
/// the cases flips the change, mirrors the interval and swaps improved/regressed.
#[test]
fn interval_contains_the_change_and_swapping_mirrors_it() {
    let mut rng = SplitMix64::new(2024, 0);
    let mirror = |x: f64| 1.0 / (1.0 + x) - 1.0;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs());
    for case in 0..64 {
        let n_base = 2 + (rng.next_u64() % 3000) as usize;
        let n_cand = 2 + (rng.next_u64() % 3000) as usize;
        let sigma = 0.01 + 0.3 * rng.uniform();
        let factor = 0.8 + 0.45 * rng.uniform();
        let base = latencies(n_base, 10_000.0, sigma, rng.next_u64());
        let cand = latencies(n_cand, 10_000.0 * factor, sigma, rng.next_u64());
        let seed = rng.next_u64();
        let ab = compare(&base, &cand, seed);
        let ba = compare(&cand, &base, seed);
        let what = format!("case {case}: {ab:?} / {ba:?}");

        assert!(ab.ci.0 <= ab.change && ab.change <= ab.ci.1, "{what}");
        assert!(ba.ci.0 <= ba.change && ba.change <= ba.ci.1, "{what}");
        assert!(
            ab.change.signum() == -ba.change.signum() || ab.change == 0.0,
            "{what}"
        );
        assert!(close(ba.change, mirror(ab.change)), "{what}");
        assert!(
            close(ba.ci.0, mirror(ab.ci.1)) && close(ba.ci.1, mirror(ab.ci.0)),
            "{what}"
        );

        // The relative change is not symmetric: a bound x past +t mirrors to one past
        // -t only when x > t / (1 - t). Within that sliver the verdicts may differ.
        let t = DEFAULT_THRESHOLD;
        let sliver = |x: f64| x > t && x <= t / (1.0 - t);
        let near_threshold = [ab.ci.0, ab.ci.1, ba.ci.0, ba.ci.1].into_iter().any(sliver);
        let swapped = match ab.verdict {
            Verdict::Regressed => Verdict::Improved,
            Verdict::Improved => Verdict::Regressed,
            other => other,
        };
        assert!(ba.verdict == swapped || near_threshold, "{what}");
    }
}

/// The shortcut in `Distribution::draw_median` against the exact distribution of the lower
/// median of n draws: P(median <= x) = P(Binomial(n, F(x)) >= k).
#[test]
fn direct_median_draw_has_the_order_statistic_distribution() {
    fn binomial_at_least(n: u64, p: f64, k: u64) -> f64 {
        let mut sum = 0.0;
        let mut choose = 1.0;
        for i in 0..=n {
            if i >= k {
                sum += choose * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32);
            }
            choose = choose * (n - i) as f64 / (i + 1) as f64;
        }
        sum
    }
    // 3 x 100 ns, 4 x 200 ns, 3 x 300 ns (exact in the histogram); n = 10, k = 5.
    let h = histogram([100; 3].into_iter().chain([200; 4]).chain([300; 3]));
    let distribution = Distribution::from_histogram(&h);
    let draws = 40_000;
    let mut rng = SplitMix64::new(5, 0);
    let mut at_most = [0usize; 2];
    for _ in 0..draws {
        let m = distribution.draw_median(&mut rng);
        assert!([100, 200, 300].contains(&m), "{m}");
        at_most[0] += (m <= 100) as usize;
        at_most[1] += (m <= 200) as usize;
    }
    for (observed, f) in at_most.iter().zip([0.3, 0.7]) {
        let expected = binomial_at_least(10, f, 5);
        let observed = *observed as f64 / draws as f64;
        let sd = (expected * (1.0 - expected) / draws as f64).sqrt();
        assert!(
            (observed - expected).abs() < 4.0 * sd,
            "F = {f}: {observed} vs {expected}"
        );
    }
}

#[test]
fn gamma_has_its_mean_and_variance() {
    let mut rng = SplitMix64::new(9, 0);
    for shape in [1.0, 2.5, 1e4] {
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| rng.gamma(shape)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        assert!(
            (mean - shape).abs() < 5.0 * (shape / n as f64).sqrt(),
            "{shape}: {mean}"
        );
        assert!((var / shape - 1.0).abs() < 0.1, "{shape}: {var}");
    }
}

#[test]
fn classify_edges() {
    let t = 0.02;
    assert_eq!(classify((0.021, 0.05), t), Verdict::Regressed);
    assert_eq!(
        classify((0.02, 0.05), t),
        Verdict::Inconclusive,
        "touching +t is not past it"
    );
    assert_eq!(classify((-0.05, -0.021), t), Verdict::Improved);
    assert_eq!(classify((-0.05, -0.02), t), Verdict::Inconclusive);
    assert_eq!(
        classify((-0.02, 0.02), t),
        Verdict::Unchanged,
        "the band is closed"
    );
    assert_eq!(classify((0.0, 0.0), t), Verdict::Unchanged);
    assert_eq!(classify((0.02, 0.02), t), Verdict::Unchanged);
    assert_eq!(classify((-0.01, 0.03), t), Verdict::Inconclusive);
    assert_eq!(classify((-0.03, 0.01), t), Verdict::Inconclusive);
    assert_eq!(classify((-0.03, 0.03), t), Verdict::Inconclusive);
    assert_eq!(
        classify((f64::NEG_INFINITY, f64::INFINITY), t),
        Verdict::Inconclusive
    );
    assert_eq!(classify((f64::NAN, 0.0), t), Verdict::Inconclusive);
    assert_eq!(
        classify((0.01, 0.015), -t),
        Verdict::Unchanged,
        "the sign of t is ignored"
    );
    assert_eq!(classify((0.001, 0.002), 0.0), Verdict::Regressed);
}

#[test]
fn means_only() {
    let c = compare_means(100.0, 110.0, DEFAULT_THRESHOLD).unwrap();
    assert!((c.change - 0.10).abs() < 1e-12);
    assert_eq!(c.ci, (c.change, c.change));
    assert_eq!(c.verdict, Verdict::Regressed);
    assert_eq!(c.method, Method::MeansOnly);
    assert_eq!(
        compare_means(100.0, 101.0, DEFAULT_THRESHOLD)
            .unwrap()
            .verdict,
        Verdict::Unchanged
    );
    assert_eq!(
        compare_means(100.0, 90.0, DEFAULT_THRESHOLD)
            .unwrap()
            .verdict,
        Verdict::Improved
    );
    assert!(compare_means(0.0, 1.0, 0.02).is_none());
    assert!(compare_means(f64::NAN, 1.0, 0.02).is_none());
    assert!(compare_means(1.0, f64::INFINITY, 0.02).is_none());
}

#[test]
fn serialized_names() {
    assert_eq!(
        serde_json::to_string(&Verdict::Inconclusive).unwrap(),
        "\"inconclusive\""
    );
    let v: Verdict = serde_json::from_str("\"regressed\"").unwrap();
    assert_eq!(v, Verdict::Regressed);
    assert_eq!(Verdict::Improved.to_string(), "improved");
    assert_eq!(
        serde_json::to_string(&Method::MeansOnly).unwrap(),
        "\"means_only\""
    );
    let m = serde_json::to_string(&Method::Bootstrap { resamples: 1000 }).unwrap();
    assert_eq!(m, r#"{"bootstrap":{"resamples":1000}}"#);
}

/// Release-mode cost of one comparison of two 100,000-sample histograms with 1000
/// resamples: `cargo test --release --lib stats::compare -- --ignored --nocapture`.
#[test]
#[ignore]
fn cost_of_one_comparison() {
    let base = histogram(latencies(100_000, 50_000.0, 0.1, 1));
    let cand = histogram(latencies(100_000, 51_000.0, 0.1, 2));
    let rounds = 200;
    let start = std::time::Instant::now();
    let mut regressed = 0;
    for seed in 0..rounds {
        let c =
            compare_histograms(&base, &cand, DEFAULT_THRESHOLD, DEFAULT_RESAMPLES, seed).unwrap();
        regressed += (c.verdict == Verdict::Regressed) as usize;
    }
    let per = start.elapsed() / rounds as u32;
    println!("{per:?} per comparison ({regressed} regressed)");
    assert!(per.as_secs_f64() < 0.5);
}

/// The 95 % interval covers the true change about 95 % of the time: 500 seeded pairs
/// of independent samples at a true change of 0 and 500 at +3 % (lognormal times,
/// whose median scales exactly), each interval taken before it is widened to contain
/// the estimate. Empirical coverage must lie in [0.92, 0.98] for each.
#[test]
fn the_interval_covers_the_true_change_about_95_percent_of_the_time() {
    for (true_change, salt) in [(0.0, 0u64), (0.03, 1 << 32)] {
        let pairs = 500;
        let mut covered = 0;
        for i in 0..pairs {
            let seed = salt + i;
            let base = histogram(latencies(1000, 10_000.0, 0.1, 2 * seed));
            let cand = histogram(latencies(
                1000,
                10_000.0 * (1.0 + true_change),
                0.1,
                2 * seed + 1,
            ));
            let (b, c) = (
                Distribution::from_histogram(&base),
                Distribution::from_histogram(&cand),
            );
            let (lo, hi) = bootstrap_interval(&b, &c, 1000, seed);
            covered += usize::from(lo <= true_change && true_change <= hi);
        }
        let coverage = covered as f64 / pairs as f64;
        assert!(
            (0.92..=0.98).contains(&coverage),
            "true change {true_change}: coverage {coverage}"
        );
    }
}
