//! The seeded pseudo-random numbers of the comparison statistics: splitmix64 and the
//! normal, gamma and beta variates drawn from it. Pure and reproducible: the same seed
//! and stream give the same numbers on every machine and with any number of threads.

/// The splitmix64 finaliser: a bijective mix of 64 bits.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, good enough for resampling, and
/// reproducible from its seed without a `rand` dependency.
pub(crate) struct SplitMix64 {
    state: u64,
    /// The second normal variate of the last Box-Muller pair, not yet used.
    spare_normal: Option<f64>,
}

impl SplitMix64 {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// Independent-looking streams from one seed.
    pub(crate) fn new(seed: u64, stream: u64) -> SplitMix64 {
        SplitMix64 {
            state: mix(seed ^ mix(stream.wrapping_add(1).wrapping_mul(Self::GAMMA))),
            spare_normal: None,
        }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix(self.state)
    }

    /// Uniform in [0, 1), 53 random bits.
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1], safe to take the logarithm of.
    fn uniform_open0(&mut self) -> f64 {
        1.0 - self.uniform()
    }

    /// Standard normal (Box-Muller, both variates of a pair used).
    pub(crate) fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        let r = (-2.0 * self.uniform_open0().ln()).sqrt();
        let (sin, cos) = (std::f64::consts::TAU * self.uniform()).sin_cos();
        self.spare_normal = Some(r * sin);
        r * cos
    }

    /// Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang 2000); accepts ~96 % of
    /// tries at shape 1 and nearly all for large shapes.
    pub(crate) fn gamma(&mut self, shape: f64) -> f64 {
        debug_assert!(shape >= 1.0);
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (3.0 * d.sqrt());
        loop {
            let x = self.normal();
            let y = c * x;
            if y <= -1.0 {
                continue;
            }
            // v = (1 + y)^3; v - 1 and ln v written to keep precision for large shapes,
            // where y is tiny.
            let v_minus_1 = y * (3.0 + y * (3.0 + y));
            let u = self.uniform_open0();
            // Marsaglia and Tsang's squeeze: u < 1 - 0.0331 x^4 implies the full test
            // below (with a margin far above rounding), so it accepts exactly the draws
            // that the full test would, and spares its two logarithms about 9 times in
            // 10. The test `the_squeeze_accepts_what_the_full_test_accepts` checks that
            // the draws are the same bit for bit.
            if u < 1.0 - 0.0331 * (x * x) * (x * x) {
                return d * (1.0 + v_minus_1);
            }
            let ln_v = 3.0 * y.ln_1p();
            if u.ln() < 0.5 * x * x - d * v_minus_1 + d * ln_v {
                return d * (1.0 + v_minus_1);
            }
        }
    }

    /// Beta(a, b) for a, b >= 1.
    pub(crate) fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marsaglia and Tsang's method without the squeeze, as it was written first.
    fn gamma_without_squeeze(rng: &mut SplitMix64, shape: f64) -> f64 {
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (3.0 * d.sqrt());
        loop {
            let x = rng.normal();
            let y = c * x;
            if y <= -1.0 {
                continue;
            }
            let v_minus_1 = y * (3.0 + y * (3.0 + y));
            let ln_v = 3.0 * y.ln_1p();
            let u = rng.uniform_open0();
            if u.ln() < 0.5 * x * x - d * v_minus_1 + d * ln_v {
                return d * (1.0 + v_minus_1);
            }
        }
    }

    /// The squeeze is a shortcut, not a change: the same stream gives the same draws
    /// (the bootstrap intervals of `compare` stay what they were before it).
    #[test]
    fn the_squeeze_accepts_what_the_full_test_accepts() {
        for (i, shape) in [1.0, 1.5, 2.0, 3.7, 10.0, 150.0, 1000.0, 1001.0, 5e4, 5e6]
            .into_iter()
            .enumerate()
        {
            let mut fast = SplitMix64::new(i as u64, 3);
            let mut reference = SplitMix64::new(i as u64, 3);
            for draw in 0..200_000 {
                let a = fast.gamma(shape);
                let b = gamma_without_squeeze(&mut reference, shape);
                assert_eq!(a.to_bits(), b.to_bits(), "shape {shape}, draw {draw}");
            }
        }
    }
}
