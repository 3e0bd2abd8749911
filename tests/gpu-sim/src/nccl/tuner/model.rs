//! The tuner's cost model: a latency and a bandwidth per function, algorithm and
//! protocol, in NCCL's form (`time = latency + bytes / bandwidth`), built on the
//! ring's slowest step (latency `L` ns, bandwidth `B` GB/s, [`crate::topo::ring_link`])
//! as the stand-in's all-reduce always was: a launch, then `s = 2(n-1)` steps each
//! moving `bytes/n`, so nccl-tests' busbw comes out near `B` at large sizes.
//!
//! Per protocol (all-reduce on a ring; NCCL's refinements in `ncclTopoTuneModel`
//! quoted where they are the source), on the A100 (`nvlink`) and L40S (PCIe) | on
//! the H100 (`nvswitch`), where the stand-in takes NCCL's own latencies
//! (`baseLat` and `hwLat[NVLINK]` of `src/graph/tuning.cc`, 2.19-2.30, with
//! `L` = 1 us a step over NVLink):
//! - Simple: `4 us + s L` | `8.4 us + s 3.4 L`, bus bandwidth `B`;
//! - LL128: `2.7 us + s 0.7 L` | `14 us + s 1.9 L`, `0.92 B` (NCCL: `busBw *
//!   0.92`, "120.0/128.0");
//! - LL: `2.4 us + s 0.7 L` | `6.6 us + s 0.6 L`, `B/2` capped at 87.7 GB/s (A100,
//!   L40S) or 141 (H100), 39 across nodes (NCCL: `std::min(llMaxBw, busBw * .5)`,
//!   `llMaxBws`).
//!
//! LL and LL128 save on the fixed cost (their flags replace Simple's fences) and
//! per step, and pay in bandwidth. On the A100 board the cheapest is LL up to
//! 29-50 KiB (8 to 2 ranks), LL128 to 3.3-5.6 MiB, Simple above (but see
//! [`correction`]); on PCIe (no LL128 by default) LL up to 35-100 KiB (the
//! stand-in's constants, chosen for those shapes). On 8 H100s NCCL's latencies put
//! NVLS (25 us) below LL128 (40.6 us) and Simple (56 us): LL up to ~1 MiB, NVLS
//! above, never LL128; on 2 H100s (no NVLS before 2.28.7) LL up to ~1.7 MiB, then
//! Simple.
//!
//! Other algorithms: Tree on one node is a chain with the ring's latency plus
//! 0.2 us (NCCL's base latencies 6.8 vs 6.6) | NCCL's tree latencies (6.8, 14 and
//! 8.4 us, plus 0.6, 1.25 and 4 us a step), and bus bandwidth `0.92 B` (NCCL:
//! `busBw*.92` for all-reduce; LL `1/3.8` of it, capped; LL128 `7/9` of it on one
//! node), without NCCL's per-size tree correction; NVLS is 25 us and the bus
//! bandwidth of [`topo::nvls_busbw`] (Simple only); CollNet, NVLSTree and PAT have
//! no cost here. Rows of other functions, printed in the table only: Broadcast and
//! Reduce on the ring (`n-1` steps, bandwidth `B`), AllGather and ReduceScatter on
//! the ring (`n-1` steps of `bytes/n`).

use super::{Algo, Func, Machine, Proto};
use crate::topo::{self, LAUNCH_NS, NVLS_LATENCY_NS};

/// A cost in NCCL's form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Fixed part, ns.
    pub latency_ns: f64,
    /// NCCL's algorithm bandwidth, bytes per ns (GB/s): the bus bandwidth times
    /// `n / steps` for a ring.
    pub bandwidth: f64,
}

impl Cost {
    pub fn ns(&self, bytes: u64) -> f64 {
        self.latency_ns + bytes as f64 / self.bandwidth
    }

    /// The table's entry: latency in microseconds, bandwidth in GB/s, as floats.
    pub fn table(&self) -> (f32, f32) {
        ((self.latency_ns / 1000.0) as f32, self.bandwidth as f32)
    }
}

/// A ring's fixed cost (ns), factor on the step latency, factor on the bus
/// bandwidth (before LL's cap), per protocol on the H100 (`hopper`: NCCL's
/// `baseLat` and `hwLat[NVLINK]`) or the A100 and L40S.
fn protocol(p: Proto, hopper: bool) -> (f64, f64, f64) {
    match (p, hopper) {
        (Proto::Simple, true) => (8_400.0, 3.4, 1.0),
        (Proto::Ll128, true) => (14_000.0, 1.9, 0.92),
        (Proto::Ll, true) => (6_600.0, 0.6, 0.5),
        (Proto::Simple, false) => (LAUNCH_NS, 1.0, 1.0),
        (Proto::Ll128, false) => (2_700.0, 0.7, 0.92),
        (Proto::Ll, false) => (2_400.0, 0.7, 0.5),
    }
}

/// A tree's fixed cost (ns) and factor on the step latency: on the H100 NCCL's
/// (`baseLat` and `hwLat[NVLINK]` of Tree), elsewhere the ring's plus 0.2 us.
fn tree_protocol(p: Proto, hopper: bool) -> (f64, f64) {
    match (p, hopper) {
        (Proto::Simple, true) => (8_400.0, 4.0),
        (Proto::Ll128, true) => (14_000.0, 1.25),
        (Proto::Ll, true) => (6_800.0, 0.6),
        (p, false) => {
            let (fixed, step, _) = protocol(p, false);
            (fixed + 200.0, step)
        }
    }
}

/// LL's bus bandwidth ceiling (NCCL's `llMaxBws`: by GPU on one node, by CPU across
/// nodes; the stand-in's hosts are Intel).
fn ll_max(m: &Machine) -> f64 {
    if m.nodes > 1 {
        39.0
    } else if m.hopper {
        141.0
    } else {
        87.7
    }
}

/// The cost of function `f` with algorithm `a` and protocol `p` on `m`; `None` where
/// NCCL has no such entry (bandwidth 0 before any user setting).
pub fn cost(m: &Machine, f: Func, a: Algo, p: Proto) -> Option<Cost> {
    let n = m.nranks;
    let (step_latency, link_bw) = m.ring.filter(|_| n > 1)?;
    let nf = f64::from(n);
    let (fixed, step_factor, bw_factor) = protocol(p, m.hopper);
    let ring_bus = match p {
        Proto::Ll => (link_bw * bw_factor).min(ll_max(m)),
        _ => link_bw * bw_factor,
    };
    match (f, a) {
        (Func::AllReduce, Algo::Ring) => {
            let steps = 2.0 * (nf - 1.0);
            Some(Cost {
                latency_ns: fixed + steps * step_latency * step_factor,
                bandwidth: ring_bus * nf / steps,
            })
        }
        (Func::AllReduce, Algo::Tree) => {
            let steps = 2.0 * (nf - 1.0);
            let (fixed, step_factor) = tree_protocol(p, m.hopper);
            let bus = link_bw * 0.92;
            let bus = match p {
                Proto::Ll => (bus / 3.8).min(ll_max(m)),
                Proto::Ll128 if m.nodes == 1 => bus * 7.0 / 9.0,
                Proto::Ll128 => bus * 120.0 / 128.0,
                Proto::Simple => bus,
            };
            Some(Cost {
                latency_ns: fixed + steps * step_latency * step_factor,
                bandwidth: bus * nf / steps,
            })
        }
        (Func::AllReduce, Algo::Nvls) if p == Proto::Simple && m.nvls && m.nodes == 1 => {
            Some(Cost {
                latency_ns: NVLS_LATENCY_NS,
                bandwidth: topo::nvls_busbw(n) * nf / (2.0 * (nf - 1.0)),
            })
        }
        (Func::Broadcast | Func::Reduce, Algo::Ring) => Some(Cost {
            latency_ns: fixed + (nf - 1.0) * step_latency * step_factor,
            bandwidth: ring_bus,
        }),
        (Func::AllGather | Func::ReduceScatter, Algo::Ring) => Some(Cost {
            latency_ns: fixed + (nf - 1.0) * step_latency * step_factor,
            bandwidth: ring_bus * nf / (nf - 1.0),
        }),
        _ => None,
    }
}

/// The time an all-reduce of `bytes` with `a` and `p` takes on the simulated
/// device (before `NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN`), ns: the cost; one rank's
/// local copy on one rank.
pub fn base_ns(m: &Machine, a: Algo, p: Proto, bytes: u64) -> f64 {
    func_base_ns(m, Func::AllReduce, a, p, bytes)
}

/// [`base_ns`] of any function the tuner knows.
pub fn func_base_ns(m: &Machine, f: Func, a: Algo, p: Proto, bytes: u64) -> f64 {
    if m.nranks < 2 || m.ring.is_none() {
        return topo::one_rank_ns(bytes);
    }
    cost(m, f, a, p).map_or_else(
        // Not in the model (never chosen): as Ring/Simple.
        || match cost(m, f, Algo::Ring, Proto::Simple) {
            Some(c) => c.ns(bytes),
            None => topo::one_rank_ns(bytes),
        },
        |c| c.ns(bytes),
    )
}

/// Where the deliberate mis-tuning lies: LL128 all-reduces (Ring and Tree) from
/// 64 KiB to 512 KiB on topology `nvlink`.
pub const MISTUNED_BYTES: std::ops::RangeInclusive<u64> = (64 << 10)..=(512 << 10);
/// How much the model over-states Ring/LL128's time there.
pub const MISTUNED_FACTOR: f64 = 1.4;

/// The model's per-size correction of an all-reduce's predicted time (NCCL has one
/// for trees, `treeCorrectionFactor`). The stand-in's is a deliberate mis-tuning:
/// on topology `nvlink` (the A100 board) the model puts LL128 (Ring and Tree) at
/// [`MISTUNED_FACTOR`] times its real time in [`MISTUNED_BYTES`], so NCCL's default
/// there is LL (to ~330-520 KiB) or Simple, 2-26 % slower than a forced
/// `NCCL_PROTO=LL128` (over 10 % from 256 KiB on 2 to 8 ranks): a
/// "tuning finding" for nccl-bench to make, as users report forced protocols
/// beating NCCL's choice at mid sizes. Invented: no NCCL release is known to
/// mis-tune this window.
pub fn correction(m: &Machine, a: Algo, p: Proto, bytes: u64) -> f64 {
    if m.mistuned
        && m.nranks > 1
        && p == Proto::Ll128
        && matches!(a, Algo::Ring | Algo::Tree)
        && MISTUNED_BYTES.contains(&bytes)
    {
        MISTUNED_FACTOR
    } else {
        1.0
    }
}

/// What NCCL's model predicts for an all-reduce of `bytes` with `a` and `p`, ns (in
/// double precision: the tuner computes it in float).
pub fn model_ns(m: &Machine, a: Algo, p: Proto, bytes: u64) -> f64 {
    base_ns(m, a, p, bytes) * correction(m, a, p, bytes)
}

/// The time an all-reduce of `bytes` with `a` and `p` takes on the simulated
/// device, ns: the model's but for its [`correction`], times
/// `NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN`. The `mispredict` fault and the
/// communicator's own speed come on top, in the all-reduce.
pub fn device_ns(m: &Machine, a: Algo, p: Proto, bytes: u64) -> f64 {
    func_device_ns(m, Func::AllReduce, a, p, bytes)
}

/// [`device_ns`] of any function the tuner knows.
pub fn func_device_ns(m: &Machine, f: Func, a: Algo, p: Proto, bytes: u64) -> f64 {
    func_base_ns(m, f, a, p, bytes) * topo::slowdown()
}
