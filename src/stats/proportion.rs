//! A rate measured by counting (k of n runs ended in a false alarm) with its exact
//! binomial bounds: the Clopper-Pearson interval, which covers the true rate with at
//! least the level asked whatever the rate, where the normal approximation fails (0 of
//! 20 bounds the rate only below about 17 %, not 0 %).

/// The two-sided Clopper-Pearson interval of a proportion, `k` of `n`, at level
/// 1 - `alpha`: the rates p whose binomial tail beyond `k` is at least alpha / 2 on
/// each side. (0, 1) for `n` = 0.
pub fn clopper_pearson(k: u64, n: u64, alpha: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let k = k.min(n);
    let tail = alpha / 2.0;
    // Lower: P(X >= k; p) = tail, rising in p. Upper: P(X <= k; p) = tail, falling.
    let lower = if k == 0 {
        0.0
    } else {
        solve(|p| 1.0 - cdf(k - 1, n, p), tail, true)
    };
    let upper = if k == n {
        1.0
    } else {
        solve(|p| cdf(k, n, p), tail, false)
    };
    (lower, upper)
}

/// The p in (0, 1) where the monotone `f` crosses `target` (`rising`: f grows with p).
fn solve(f: impl Fn(f64) -> f64, target: f64, rising: bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if (f(mid) < target) == rising {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// P(X <= k) for X ~ Bin(n, p), summed in logs.
fn cdf(k: u64, n: u64, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if k >= n { 1.0 } else { 0.0 };
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_choose = 0.0f64;
    let mut sum = 0.0;
    for i in 0..=k {
        if i > 0 {
            log_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (log_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    sum.min(1.0)
}

/// `k/n (x %, 95 % bounds lo-hi %)`: a counted rate as the bench prints it.
pub fn rate_words(k: u64, n: u64) -> String {
    if n == 0 {
        return "-".to_string();
    }
    let (lo, hi) = clopper_pearson(k, n, 0.05);
    format!(
        "{k}/{n} ({:.1} %, {:.1}-{:.1})",
        100.0 * k as f64 / n as f64,
        100.0 * lo,
        100.0 * hi
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against published values (and the closed forms at the ends: 0 of n has upper
    /// bound 1 - (alpha/2)^(1/n)).
    #[test]
    fn bounds_match_the_exact_interval() {
        let close = |a: f64, b: f64| (a - b).abs() < 5e-4;
        let (lo, hi) = clopper_pearson(0, 20, 0.05);
        assert_eq!(lo, 0.0);
        assert!(close(hi, 1.0 - 0.025f64.powf(1.0 / 20.0)), "{hi}");
        assert!(close(hi, 0.1684), "{hi}");
        let (_, hi) = clopper_pearson(0, 100, 0.05);
        assert!(close(hi, 0.0362), "{hi}");
        // 5 of 100: 1.64 % to 11.28 %.
        let (lo, hi) = clopper_pearson(5, 100, 0.05);
        assert!(close(lo, 0.0164) && close(hi, 0.1128), "{lo} {hi}");
        // 95 of 100 mirrors 5 of 100.
        let (lo, hi) = clopper_pearson(95, 100, 0.05);
        assert!(
            close(lo, 1.0 - 0.1128) && close(hi, 1.0 - 0.0164),
            "{lo} {hi}"
        );
        assert_eq!(clopper_pearson(3, 3, 0.05).1, 1.0);
        assert_eq!(clopper_pearson(0, 0, 0.05), (0.0, 1.0));
        assert_eq!(rate_words(0, 20), "0/20 (0.0 %, 0.0-16.8)");
    }
}
