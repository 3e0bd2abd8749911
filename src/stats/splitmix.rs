//! Seeded pseudo-random numbers: splitmix64, and (for the seeded simulations of the
//! tests) uniform and normal variates drawn from it. Pure and reproducible: the same
//! seed and stream give the same numbers on every machine and with any number of
//! threads.

/// The splitmix64 finaliser: a bijective mix of 64 bits.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed from a text (FNV-1a), so that the same text gives the same numbers.
pub(crate) fn seed_of(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, and reproducible from its
/// seed without a `rand` dependency.
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// Independent-looking streams from one seed.
    pub(crate) fn new(seed: u64, stream: u64) -> SplitMix64 {
        SplitMix64 {
            state: mix(seed ^ mix(stream.wrapping_add(1).wrapping_mul(Self::GAMMA))),
        }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix(self.state)
    }

    /// Uniform in [0, 1), 53 random bits.
    #[cfg(test)]
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller, one variate of each pair).
    #[cfg(test)]
    pub(crate) fn normal(&mut self) -> f64 {
        let r = (-2.0 * (1.0 - self.uniform()).ln()).sqrt();
        r * (std::f64::consts::TAU * self.uniform()).cos()
    }
}
