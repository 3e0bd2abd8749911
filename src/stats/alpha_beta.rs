//! The latency-bandwidth (alpha-beta) model of a collective, fitted to a sweep:
//! `time = alpha + bytes / beta`. Alpha is what every call costs whatever its size
//! (launch, synchronization, the first hop's latency); beta is the rate that the
//! bytes move at once the size is large. Two numbers a person can carry to a design
//! review, and that give the crossover size between two configs.
//!
//! The fit is weighted least squares on relative errors (weights 1/time^2: sizes
//! span seven orders of magnitude, and every size's time is known to a similar
//! fraction), made robust with Tukey's bisquare (iteratively reweighted): NCCL
//! switches protocol and algorithm with size (LL, LL128, Simple; tree, ring), so the
//! line holds at the small and large ends and can miss in between. Sizes whose
//! relative residual ends beyond the bisquare's cut-off are left out and named as
//! where the model does not hold. Intervals are the weighted least-squares ones
//! (Student's t on the sizes kept, less two parameters).
//!
//! Assumptions: times are positive and finite; sizes distinct. Pure: no I/O.

/// The smallest relative scale the robust weights assume: 1 % (a case's own noise).
/// Without it a noiseless sweep would make every tiny residual an outlier.
const SCALE_FLOOR: f64 = 0.01;
/// Tukey's bisquare constant (95 % efficiency under normal errors).
const BISQUARE: f64 = 4.685;
/// A parameter is determined only where its term is at least this share of the time
/// at some size kept (alpha at the smallest, bytes/beta at the largest).
const MIN_SHARE: f64 = 0.1;
/// Fewest sizes a fit needs (two parameters and one degree of freedom).
pub const MIN_SIZES: usize = 3;

/// One point: a size and its mean time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub bytes: f64,
    pub time_us: f64,
}

/// A fitted model.
#[derive(Debug, Clone, PartialEq)]
pub struct AlphaBeta {
    /// Fixed cost per call, microseconds, with its 95 % interval.
    pub alpha_us: f64,
    pub alpha_ci: (f64, f64),
    /// Rate of the size-dependent term, GB/s (1e9 bytes per second, as algbw), with
    /// its 95 % interval (the upper end is infinite when the interval of 1/beta
    /// reaches zero).
    pub beta_gbps: f64,
    pub beta_ci: (f64, f64),
    /// The sizes the model holds for (kept by the robust fit), ascending.
    pub kept: Vec<f64>,
    /// Sizes left out, ascending.
    pub left_out: Vec<f64>,
    /// Root mean square and largest relative residual over the kept sizes.
    pub rms_residual: f64,
    pub max_residual: f64,
    /// Whether each parameter is determined by the sizes kept (its term is at least
    /// 10 % of the time somewhere); an undetermined one is shown but not relied on.
    pub alpha_determined: bool,
    pub beta_determined: bool,
}

impl AlphaBeta {
    /// Predicted time of an all-reduce of `bytes`, microseconds.
    pub fn time_us(&self, bytes: f64) -> f64 {
        self.alpha_us + bytes / (self.beta_gbps * 1e3)
    }
}

/// Why there is no model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoFit {
    /// Fewer than [`MIN_SIZES`] usable sizes.
    TooFewSizes(usize),
    /// The robust fit kept fewer than [`MIN_SIZES`] sizes: no line through them.
    NoLine,
}

/// Fits `time = alpha + bytes / beta` to the points (any order).
pub fn fit(points: &[Point]) -> Result<AlphaBeta, NoFit> {
    let mut pts: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| p.time_us.is_finite() && p.time_us > 0.0 && p.bytes >= 0.0)
        .collect();
    pts.sort_by(|a, b| a.bytes.total_cmp(&b.bytes));
    if pts.len() < MIN_SIZES {
        return Err(NoFit::TooFewSizes(pts.len()));
    }
    let mut robust = vec![1.0; pts.len()];
    let mut line = weighted_line(&pts, &robust).ok_or(NoFit::NoLine)?;
    for _ in 0..50 {
        let residuals: Vec<f64> = pts.iter().map(|p| relative(p, line)).collect();
        let scale = (1.4826 * median(residuals.iter().map(|r| r.abs()).collect())).max(SCALE_FLOOR);
        robust = residuals
            .iter()
            .map(|r| {
                let u = r / (BISQUARE * scale);
                if u.abs() < 1.0 {
                    (1.0 - u * u).powi(2)
                } else {
                    0.0
                }
            })
            .collect();
        if robust.iter().filter(|&&w| w > 0.0).count() < MIN_SIZES {
            return Err(NoFit::NoLine);
        }
        let next = weighted_line(&pts, &robust).ok_or(NoFit::NoLine)?;
        let settled = (next.0 - line.0).abs() <= 1e-9 * line.0.abs().max(1e-12)
            && (next.1 - line.1).abs() <= 1e-9 * line.1.abs().max(1e-18);
        line = next;
        if settled {
            break;
        }
    }
    let kept: Vec<Point> = pts
        .iter()
        .zip(&robust)
        .filter(|(_, w)| **w > 0.0)
        .map(|(p, _)| *p)
        .collect();
    let left_out: Vec<f64> = pts
        .iter()
        .zip(&robust)
        .filter(|(_, w)| **w <= 0.0)
        .map(|(p, _)| p.bytes)
        .collect();
    if kept.len() < MIN_SIZES {
        return Err(NoFit::NoLine);
    }
    // The interval: ordinary weighted least squares over the sizes kept.
    let ones = vec![1.0; kept.len()];
    let (a, b) = weighted_line(&kept, &ones).ok_or(NoFit::NoLine)?;
    let (se_a, se_b) = standard_errors(&kept, (a, b));
    let t = student_t95(kept.len() - 2);
    let residuals: Vec<f64> = kept.iter().map(|p| relative(p, (a, b))).collect();
    let rms = (residuals.iter().map(|r| r * r).sum::<f64>() / residuals.len() as f64).sqrt();
    let max = residuals.iter().fold(0.0f64, |m, r| m.max(r.abs()));
    let first = kept[0];
    let last = kept[kept.len() - 1];
    // beta from the slope b (us per byte): GB/s = 1e-3 / b.
    let rate = |slope: f64| {
        if slope > 0.0 {
            1e-3 / slope
        } else {
            f64::INFINITY
        }
    };
    Ok(AlphaBeta {
        alpha_us: a,
        alpha_ci: (a - t * se_a, a + t * se_a),
        beta_gbps: rate(b),
        beta_ci: (rate(b + t * se_b), rate(b - t * se_b)),
        kept: kept.iter().map(|p| p.bytes).collect(),
        left_out,
        rms_residual: rms,
        max_residual: max,
        // A negative fixed cost is no cost: the line does not hold down to the small sizes.
        alpha_determined: a > 0.0 && a >= MIN_SHARE * first.time_us,
        beta_determined: b > 0.0 && b * last.bytes >= MIN_SHARE * last.time_us,
    })
}

/// The size above which `second` is faster than `first` (or below which, when
/// `second` has the larger fixed cost but the faster rate): where their lines cross,
/// if they do at a positive size.
pub fn crossover_bytes(first: &AlphaBeta, second: &AlphaBeta) -> Option<f64> {
    let slope = |m: &AlphaBeta| 1e-3 / m.beta_gbps;
    let ds = slope(first) - slope(second);
    if ds == 0.0 || !ds.is_finite() {
        return None;
    }
    let x = (second.alpha_us - first.alpha_us) / ds;
    (x > 0.0 && x.is_finite()).then_some(x)
}

fn relative(p: &Point, (a, b): (f64, f64)) -> f64 {
    (p.time_us - (a + b * p.bytes)) / p.time_us
}

/// Weighted least squares of time on bytes with weights `robust / time^2`; `None`
/// when the sizes cannot determine a slope (all the weight on one size).
fn weighted_line(pts: &[Point], robust: &[f64]) -> Option<(f64, f64)> {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (p, r) in pts.iter().zip(robust) {
        let w = r / (p.time_us * p.time_us);
        sw += w;
        sx += w * p.bytes;
        sy += w * p.time_us;
        sxx += w * p.bytes * p.bytes;
        sxy += w * p.bytes * p.time_us;
    }
    let det = sw * sxx - sx * sx;
    if sw <= 0.0 || det <= f64::EPSILON * sw * sxx {
        return None;
    }
    let b = (sw * sxy - sx * sy) / det;
    let a = (sy - b * sx) / sw;
    Some((a, b))
}

/// Standard errors of alpha and of the slope from the weighted residuals.
fn standard_errors(pts: &[Point], (a, b): (f64, f64)) -> (f64, f64) {
    let (mut sw, mut sx, mut sxx, mut ssr) = (0.0, 0.0, 0.0, 0.0);
    for p in pts {
        let w = 1.0 / (p.time_us * p.time_us);
        sw += w;
        sx += w * p.bytes;
        sxx += w * p.bytes * p.bytes;
        let r = p.time_us - (a + b * p.bytes);
        ssr += w * r * r;
    }
    let dof = pts.len().saturating_sub(2).max(1) as f64;
    let sigma2 = ssr / dof;
    let det = sw * sxx - sx * sx;
    ((sigma2 * sxx / det).sqrt(), (sigma2 * sw / det).sqrt())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Two-sided 95 % quantile of Student's t with `dof` degrees of freedom.
fn student_t95(dof: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match dof {
        0 => f64::INFINITY,
        d if d <= 30 => TABLE[d - 1],
        d if d <= 60 => 2.000,
        _ => 1.96,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes 8 B .. 256 MiB by factors of 2, times from alpha and beta, each
    /// multiplied by 1 + noise (a small deterministic generator, seeded).
    fn synthetic(alpha_us: f64, beta_gbps: f64, noise: f64, seed: u64) -> Vec<Point> {
        let mut state = seed;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        (3..=28)
            .map(|k| {
                let bytes = (1u64 << k) as f64;
                let exact = alpha_us + bytes / (beta_gbps * 1e3);
                // Sum of three uniforms: roughly normal, sd = noise.
                let z = (uniform() + uniform() + uniform() - 1.5) * 2.0;
                Point {
                    bytes,
                    time_us: exact * (1.0 + noise * z),
                }
            })
            .collect()
    }

    fn within(value: f64, truth: f64, tolerance: f64) -> bool {
        (value / truth - 1.0).abs() <= tolerance
    }

    #[test]
    fn a_noisy_sweep_gives_back_its_alpha_and_beta_within_two_percent() {
        for seed in 1..=20 {
            for (alpha, beta) in [(5.0, 100.0), (25.0, 12.0), (2.0, 370.0), (60.0, 2.5)] {
                let m = fit(&synthetic(alpha, beta, 0.01, seed)).unwrap();
                assert!(within(m.alpha_us, alpha, 0.02), "{seed} {alpha} {m:?}");
                assert!(within(m.beta_gbps, beta, 0.02), "{seed} {beta} {m:?}");
                assert!(m.alpha_ci.0 < m.alpha_us && m.alpha_us < m.alpha_ci.1);
                assert!(m.beta_ci.0 < m.beta_gbps && m.beta_gbps < m.beta_ci.1);
                assert!(m.alpha_determined && m.beta_determined, "{m:?}");
                assert!(m.rms_residual < 0.03, "{m:?}");
            }
        }
    }

    #[test]
    fn the_intervals_cover_the_truth_about_as_often_as_they_claim() {
        let runs = 200;
        let covered = (0..runs)
            .filter(|&seed| {
                let m = fit(&synthetic(8.0, 50.0, 0.02, seed + 100)).unwrap();
                m.alpha_ci.0 <= 8.0 && 8.0 <= m.alpha_ci.1
            })
            .count();
        // 95 % intervals: between 88 % and 99 % of 200 runs.
        assert!((176..=198).contains(&covered), "{covered} of {runs}");
    }

    #[test]
    fn sizes_where_the_protocol_changes_are_left_out_and_named() {
        let mut pts = synthetic(5.0, 100.0, 0.005, 7);
        // Between 64 KiB and 1 MiB the times are 40 % above the line (a protocol
        // switch), and 4 KiB is 3 x (a one-off stall).
        for p in pts.iter_mut() {
            if (65536.0..=1048576.0).contains(&p.bytes) {
                p.time_us *= 1.4;
            }
            if p.bytes == 4096.0 {
                p.time_us *= 3.0;
            }
        }
        let m = fit(&pts).unwrap();
        assert!(within(m.alpha_us, 5.0, 0.02), "{m:?}");
        assert!(within(m.beta_gbps, 100.0, 0.02), "{m:?}");
        let expected: Vec<f64> = [4096.0, 65536.0, 131072.0, 262144.0, 524288.0, 1048576.0]
            .into_iter()
            .collect();
        assert_eq!(m.left_out, expected, "{m:?}");
        assert_eq!(m.kept.len() + m.left_out.len(), pts.len());
    }

    #[test]
    fn too_few_sizes_say_the_fit_is_not_possible() {
        let pts = synthetic(5.0, 100.0, 0.0, 1);
        assert_eq!(fit(&pts[..2]), Err(NoFit::TooFewSizes(2)));
        assert_eq!(fit(&[]), Err(NoFit::TooFewSizes(0)));
        let bad = [Point {
            bytes: 8.0,
            time_us: f64::NAN,
        }];
        assert_eq!(fit(&bad), Err(NoFit::TooFewSizes(0)));
    }

    #[test]
    fn sizes_that_never_reach_the_bandwidth_term_leave_beta_undetermined() {
        // 8 B .. 1 KiB at 100 GB/s: the bytes take at most 0.01 us of 5 us.
        let pts: Vec<Point> = synthetic(5.0, 100.0, 0.002, 3)
            .into_iter()
            .filter(|p| p.bytes <= 1024.0)
            .collect();
        let m = fit(&pts).unwrap();
        assert!(m.alpha_determined, "{m:?}");
        assert!(!m.beta_determined, "{m:?}");
        // Only large sizes: alpha is lost in the bandwidth term.
        let pts: Vec<Point> = synthetic(5.0, 100.0, 0.002, 3)
            .into_iter()
            .filter(|p| p.bytes >= 64.0 * 1048576.0)
            .collect();
        let m = fit(&pts).unwrap();
        assert!(!m.alpha_determined && m.beta_determined, "{m:?}");
    }

    #[test]
    fn a_negative_fixed_cost_is_not_determined_and_a_positive_one_is() {
        // t = -50 us + bytes / 1 GB/s: a line that crosses zero above the smallest size.
        let line = |alpha: f64| -> Vec<Point> {
            [1e5, 3e5, 1e6, 3e6, 1e7]
                .iter()
                .map(|&bytes| Point {
                    bytes,
                    time_us: alpha + bytes / 1e3,
                })
                .collect()
        };
        let m = fit(&line(-50.0)).unwrap();
        assert!(m.alpha_us < 0.0 && !m.alpha_determined, "{m:?}");
        let m = fit(&line(50.0)).unwrap();
        assert!(m.alpha_determined, "{m:?}");
    }

    #[test]
    fn the_crossover_is_where_the_two_lines_meet() {
        let line =
            |alpha_us: f64, beta_gbps: f64| fit(&synthetic(alpha_us, beta_gbps, 0.0, 1)).unwrap();
        // A: 2 us + bytes at 10 GB/s; B: 10 us + bytes at 100 GB/s. Equal where
        // 2 + x/1e4 = 10 + x/1e5, x = 8 / (1e-4 - 1e-5) = 88,888.9 bytes.
        let a = line(2.0, 10.0);
        let b = line(10.0, 100.0);
        let x = crossover_bytes(&a, &b).unwrap();
        assert!(within(x, 8.0 / 9e-5, 1e-6), "{x}");
        assert!(within(a.time_us(x), b.time_us(x), 1e-6));
        // Parallel lines, or one faster everywhere, never cross.
        assert_eq!(crossover_bytes(&a, &a), None);
        assert_eq!(crossover_bytes(&line(2.0, 100.0), &line(10.0, 10.0)), None);
    }
}
