//! nccl-tests' bandwidth conventions: `algbw = size / time` and `busbw = algbw x` the
//! collective's factor (`Collective::bus_factor`; all-reduce's is 2(n-1)/n), the rate
//! each link must sustain in a ring, which makes numbers comparable across rank
//! counts. GB/s are 1e9 bytes per second.

use crate::ops::collective::Collective;
use crate::units::GbPerSec;

/// The bus-bandwidth correction factor of all-reduce for `nranks` ranks.
pub fn allreduce_bus_factor(nranks: u32) -> f64 {
    if nranks == 0 {
        return 0.0;
    }
    2.0 * (nranks as f64 - 1.0) / nranks as f64
}

/// Algorithm and bus bandwidth of one all-reduce case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    pub algbw: GbPerSec,
    pub busbw: GbPerSec,
}

impl Bandwidth {
    /// For an all-reduce of `bytes` across `nranks` in `time_us` microseconds.
    pub fn allreduce(bytes: u64, nranks: u32, time_us: f64) -> Bandwidth {
        Bandwidth::of(Collective::AllReduce, bytes, nranks, time_us)
    }

    /// For `collective` of nccl-tests' size `bytes` across `nranks` in `time_us`.
    pub fn of(collective: Collective, bytes: u64, nranks: u32, time_us: f64) -> Bandwidth {
        let algbw = GbPerSec::from_bytes_per(bytes, time_us * 1e-6);
        let factor = if nranks == 0 {
            0.0
        } else {
            collective.bus_factor(nranks)
        };
        Bandwidth {
            algbw,
            busbw: GbPerSec(algbw.0 * factor),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn matches_hand_computed_values() {
        // 1 GiB in 10 ms: algbw = 1073741824 / 0.01 / 1e9 = 107.3741824 GB/s.
        let bw = Bandwidth::allreduce(1 << 30, 2, 10_000.0);
        assert!(close(bw.algbw.0, 107.374_182_4));
        assert!(close(bw.busbw.0, 107.374_182_4)); // 2(2-1)/2 = 1
        let bw = Bandwidth::allreduce(1 << 30, 4, 10_000.0);
        assert!(close(bw.busbw.0, 107.374_182_4 * 1.5)); // 2*3/4
        let bw = Bandwidth::allreduce(1 << 30, 8, 10_000.0);
        assert!(close(bw.busbw.0, 107.374_182_4 * 1.75)); // 2*7/8
                                                          // nccl-tests, 8 GPUs: 134217728 B in 1226.6 us -> algbw 109.42, busbw 191.49.
        let bw = Bandwidth::allreduce(134_217_728, 8, 1226.6);
        assert!((bw.algbw.0 - 109.42).abs() < 0.01);
        assert!((bw.busbw.0 - 191.49).abs() < 0.01);
    }

    #[test]
    fn other_collectives_take_nccl_tests_factors() {
        // nccl-tests' all_gather_perf, 8 GPUs: 1 GiB in 10 ms -> busbw = algbw x 7/8.
        let bw = Bandwidth::of(Collective::AllGather, 1 << 30, 8, 10_000.0);
        assert!(close(bw.algbw.0, 107.374_182_4));
        assert!(close(bw.busbw.0, 107.374_182_4 * 0.875));
        let bw = Bandwidth::of(Collective::Broadcast, 1 << 30, 8, 10_000.0);
        assert!(close(bw.busbw.0, bw.algbw.0));
    }

    #[test]
    fn a_single_rank_moves_no_bus_traffic() {
        assert_eq!(allreduce_bus_factor(1), 0.0);
        assert_eq!(Bandwidth::allreduce(1024, 1, 1.0).busbw.0, 0.0);
    }
}
