//! The `slow` test fault: every timed all-reduce made a known fraction longer, a
//! difference for the statistics to find.
//!
//! A short spin does not read the clock: an 8-byte all-reduce takes about 0.3 us on
//! the host and a clock read on a VM up to 60 ns, so spinning until a deadline made
//! a 1 % slowdown 22 % at small sizes. It is a count of `spin_loop` iterations,
//! measured against the clock once when the rank starts. A longer one spins until
//! its deadline: a count would run long wherever the rank is descheduled in it (a
//! 50 % slowdown came out 117 % on a loaded machine), and a clock read is then a
//! small part of it.

use std::hint::spin_loop;
use std::time::{Duration, Instant};

/// How long the calibration spins at least, per attempt.
const CALIBRATION: Duration = Duration::from_millis(2);
/// Attempts; the fastest is kept (a descheduled attempt runs slow).
const ATTEMPTS: usize = 3;
/// Spins from this long read the clock, every `CHECK_EVERY` of them.
const TIMED_FROM: Duration = Duration::from_micros(2);
const CHECK_EVERY: Duration = Duration::from_nanos(100);

pub(super) struct Slowdown {
    fraction: f64,
    /// `spin_loop` iterations per nanosecond on this CPU.
    per_ns: f64,
}

impl Slowdown {
    /// `None` without a slowdown.
    pub fn new(fraction: f64) -> Option<Slowdown> {
        (fraction > 0.0).then(|| Slowdown {
            fraction,
            per_ns: spins_per_ns(),
        })
    }

    /// Spins for the fraction of `work`; returns the time owed.
    pub fn spin(&self, work: Duration) -> Duration {
        let owed = work.mul_f64(self.fraction);
        if owed < TIMED_FROM {
            spins(owed.as_nanos() as f64 * self.per_ns);
        } else {
            let until = Instant::now() + owed;
            while Instant::now() < until {
                spins((CHECK_EVERY.as_nanos() as f64 * self.per_ns).max(1.0));
            }
        }
        owed
    }
}

fn spins(n: f64) {
    for _ in 0..n as u64 {
        spin_loop();
    }
}

fn spins_per_ns() -> f64 {
    (0..ATTEMPTS)
        .map(|_| {
            let mut n = 1u64 << 12;
            loop {
                let start = Instant::now();
                spins(n as f64);
                let took = start.elapsed();
                if took >= CALIBRATION || n >= 1 << 32 {
                    return n as f64 / took.as_nanos().max(1) as f64;
                }
                n *= 4;
            }
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time owed is the fraction of the work, the calibration gives a rate, and
    /// a long spin lasts at least its time (how long a short one takes is timing,
    /// measured by the A/A bench: a 1 % slower config comes out about 1 % slower at
    /// every size).
    #[test]
    fn a_slowdown_owes_its_fraction_of_the_work() {
        assert!(Slowdown::new(0.0).is_none());
        let s = Slowdown::new(0.1).unwrap();
        assert!(s.per_ns.is_finite() && s.per_ns > 0.0, "{}", s.per_ns);
        assert_eq!(s.spin(Duration::from_micros(10)), Duration::from_micros(1));
        // From 2 us it spins until the deadline: at least that long.
        let start = Instant::now();
        assert_eq!(
            s.spin(Duration::from_micros(300)),
            Duration::from_micros(30)
        );
        assert!(start.elapsed() >= Duration::from_micros(30));
    }
}
