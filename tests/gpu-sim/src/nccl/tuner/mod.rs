//! NCCL's algorithm and protocol tuning, release by release: which algorithm
//! (`NCCL_ALGO_*`: Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4,
//! NVLSTree 5, PAT 6) and protocol (`NCCL_PROTO_*`: LL 0, LL128 1, Simple 2) an
//! all-reduce runs, on how many channels, and what NCCL's model predicts for it.
//!
//! As `src/graph/tuning.cc` (`ncclTopoTuneModel`) and `src/enqueue.cc`
//! (`topoGetAlgoInfo`) do it: at init NCCL fills a latency/bandwidth table per
//! function, algorithm and protocol ([`model`]), zeroes what is disabled
//! (`NCCL_ALGO`, `NCCL_PROTO` [`parse`]d; LL128 only over NVLink by default; NVLSTree
//! only across nodes; CollNet never here), and rank 0 prints it ([`lines`]); each
//! collective takes the pair of least predicted time `lat + bytes / (1000 bw)`.
//!
//! On the stand-in's one node: Ring and Tree are always there (more than one rank),
//! NVLS only where the communicator set it up (topology `nvswitch`) and only for the
//! types and operators NVLS reduces (`ncclNvlsSupported`), PAT never for an
//! all-reduce. The default choice: LL for small all-reduces, LL128 in the middle
//! (NVLink only), Simple for large ones, NVLS from about 1 MiB on 8 H100s.
//!
//! What changes with the release:
//! - `NCCL_ALGO`/`NCCL_PROTO` syntax and strictness ([`parse`]): before 2.24 a comma
//!   list, unknown names ignored; from 2.24 per-function lists, unknown names an
//!   error of `ncclCommInitRank`;
//! - a forced choice that is impossible: up to 2.18 the collective fails
//!   (`ncclInternalError`); from 2.19 to 2.23 NCCL falls back silently to Ring with
//!   the fastest protocol allowed (its "backup RING algorithm"); from 2.24 the
//!   collective fails with `ncclInvalidUsage` and a WARN naming `NCCL_ALGO` and
//!   `NCCL_PROTO` ([`refusal`]). Up to 2.23 an `NCCL_ALGO` that leaves none of Ring,
//!   Tree, NVLS and NVLSTree enabled is ignored (with a WARN up to 2.19);
//! - the TUNING lines ([`lines`]): none per collective before 2.20, the numeric one
//!   with the model's time in 2.20-2.23, names and channels from 2.24.
//!
//! The model is NCCL's prediction (what it chooses by, its TUNING `time`,
//! `ncclGroupSimulateEnd`'s estimate); the time an all-reduce takes on the
//! simulated stream is [`model::device_ns`], the same but for a deliberate
//! mis-tuning on topology `nvlink` ([`model::correction`]: the model overstates
//! Ring/LL128 from 64 to 512 KiB, so the default there is slower than a forced
//! `NCCL_PROTO=LL128`) and the `mispredict` fault ([`crate::fault`]).

pub mod lines;
pub mod model;
pub mod parse;
#[cfg(test)]
mod tests;

use super::comm::Failure;
use super::{Version, INTERNAL_ERROR, INVALID_USAGE};

pub use parse::Enabled;

/// NCCL's algorithms, in its numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
}

pub const ALGOS: [Algo; 7] = [
    Algo::Tree,
    Algo::Ring,
    Algo::CollNetDirect,
    Algo::CollNetChain,
    Algo::Nvls,
    Algo::NvlsTree,
    Algo::Pat,
];

impl Algo {
    /// `NCCL_ALGO_*`.
    pub fn code(self) -> usize {
        self as usize
    }

    /// The name `NCCL_ALGO` takes and the table prints (`ncclAlgoStr` of `v`).
    pub fn name(self, v: Version) -> &'static str {
        match self {
            Algo::Tree => "Tree",
            Algo::Ring => "Ring",
            Algo::CollNetDirect if v < (2, 14, 0) => "CollNet",
            Algo::CollNetDirect => "CollNetDirect",
            Algo::CollNetChain => "CollNetChain",
            Algo::Nvls => "NVLS",
            Algo::NvlsTree => "NVLSTree",
            Algo::Pat => "PAT",
        }
    }

    /// The name of the 2.24+ TUNING line (`ncclAlgoToString`).
    pub fn log_name(self) -> &'static str {
        match self {
            Algo::Tree => "TREE",
            Algo::Ring => "RING",
            Algo::CollNetDirect => "COLLNET_DIRECT",
            Algo::CollNetChain => "COLLNET_CHAIN",
            Algo::Nvls => "NVLS",
            Algo::NvlsTree => "NVLS_TREE",
            Algo::Pat => "PAT",
        }
    }
}

/// The algorithms release `v` has (`NCCL_NUM_ALGORITHMS`): CollNet split in two in
/// 2.14, NVLS from 2.17, NVLSTree from 2.18, PAT from 2.23.
pub fn algos(v: Version) -> &'static [Algo] {
    let n = if v >= (2, 23, 0) {
        7
    } else if v >= (2, 18, 0) {
        6
    } else if v >= (2, 17, 0) {
        5
    } else if v >= (2, 14, 0) {
        4
    } else {
        3
    };
    &ALGOS[..n]
}

/// NCCL's protocols, in its numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Ll,
    Ll128,
    Simple,
}

pub const PROTOS: [Proto; 3] = [Proto::Ll, Proto::Ll128, Proto::Simple];

impl Proto {
    /// `NCCL_PROTO_*`.
    pub fn code(self) -> usize {
        self as usize
    }

    /// The name `NCCL_PROTO` takes and the table prints (`ncclProtoStr`).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Ll => "LL",
            Proto::Ll128 => "LL128",
            Proto::Simple => "Simple",
        }
    }

    /// The name of the 2.24+ TUNING line (`ncclProtoToString`).
    pub fn log_name(self) -> &'static str {
        match self {
            Proto::Ll => "LL",
            Proto::Ll128 => "LL128",
            Proto::Simple => "SIMPLE",
        }
    }
}

/// NCCL's collective functions (`ncclFuncStr`, `NCCL_NUM_FUNCTIONS` 5): the table
/// has a row for each, `NCCL_ALGO`'s prefixes name them. The stand-in runs
/// all-reduces only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    AllReduce,
}

pub const FUNCS: [Func; 5] = [
    Func::Broadcast,
    Func::Reduce,
    Func::AllGather,
    Func::ReduceScatter,
    Func::AllReduce,
];

impl Func {
    pub fn name(self) -> &'static str {
        match self {
            Func::Broadcast => "Broadcast",
            Func::Reduce => "Reduce",
            Func::AllGather => "AllGather",
            Func::ReduceScatter => "ReduceScatter",
            Func::AllReduce => "AllReduce",
        }
    }
}

/// A table per function, algorithm and protocol (NCCL's `comm->latencies`, ...).
pub type Table = [[[f32; 3]; 7]; 5];

/// What the tuner works from: the communicator's links and channels, and NCCL's
/// tables once [`Machine::tuned`].
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub nranks: u32,
    /// Hosts the ranks are on (NCCL's `nNodes`).
    pub nodes: u32,
    /// The ring's slowest step (latency ns, bandwidth GB/s); `None` on one rank.
    pub ring: Option<(f64, f64)>,
    /// NVLS set up for this communicator.
    pub nvls: bool,
    pub nvls_channels: u32,
    /// Ring channels (NCCL's `nChannels`).
    pub channels: u32,
    /// Every step within a host is P2P over NVLink (NCCL's `typeIntra <= PATH_NVB`):
    /// LL128 is on by default, Simple rings get 512 threads (256 over PCIe).
    pub nvlink: bool,
    /// H100s (topology `nvswitch`): LL's ceiling is 141 GB/s (87.7 on the A100 of
    /// `nvlink` and the L40S of the PCIe topologies), NCCL's `llMaxBws`.
    pub hopper: bool,
    /// Topology `nvlink`: the deliberate mis-tuning of [`model::device_ns`].
    pub mistuned: bool,
    /// Latency (us) per function, algorithm and protocol.
    pub lat: Table,
    /// Bandwidth (GB/s, NCCL's algorithm bandwidth: `time = lat + bytes / (1000 bw)`);
    /// 0 where unavailable or disabled.
    pub bw: Table,
    /// The ring's bandwidth per function and enabled protocol, whether `NCCL_ALGO`
    /// allows the ring or not (NCCL's `ringbdw`, 2.19-2.23).
    pub ring_backup: [[f32; 3]; 5],
}

impl Machine {
    /// A machine of `nranks` on one node whose ring's slowest step is `ring`, before
    /// its tables are filled.
    pub fn new(nranks: u32, ring: Option<(f64, f64)>) -> Machine {
        Machine {
            nranks,
            nodes: 1,
            ring,
            nvls: false,
            nvls_channels: 0,
            channels: 16,
            nvlink: true,
            hopper: false,
            mistuned: false,
            lat: [[[0.0; 3]; 7]; 5],
            bw: [[[0.0; 3]; 7]; 5],
            ring_backup: [[0.0; 3]; 5],
        }
    }

    /// The machine with NCCL's tables filled for release `v` and what `enabled`
    /// allows (`ncclTopoTuneModel`).
    pub fn tuned(mut self, v: Version, enabled: &Enabled) -> Machine {
        for f in FUNCS {
            for a in ALGOS {
                for p in PROTOS {
                    let (fi, ai, pi) = (f as usize, a.code(), p.code());
                    let cost = model::cost(&self, f, a, p);
                    let (lat, bw) = cost.map_or((0.0, 0.0), |c| c.table());
                    let proto_on = self.proto_enabled(enabled.proto[fi][pi]);
                    let algo_on = enabled.algo[fi][ai] != 0;
                    self.lat[fi][ai][pi] = lat;
                    self.bw[fi][ai][pi] = if proto_on && algo_on { bw } else { 0.0 };
                    if a == Algo::Ring {
                        self.ring_backup[fi][pi] = if proto_on { bw } else { 0.0 };
                    }
                }
            }
        }
        // 2.19-2.23: "at least set ring algo available" for a function left with
        // nothing.
        if ((2, 19, 0)..(2, 24, 0)).contains(&v) {
            for f in FUNCS {
                let fi = f as usize;
                if self.bw[fi].iter().flatten().all(|&b| b == 0.0) {
                    self.bw[fi][Algo::Ring.code()] = self.ring_backup[fi];
                }
            }
        }
        self
    }

    /// NCCL's `protoEnable` made final: LL128's default (2) is on where the paths
    /// are NVLink.
    fn proto_enabled(&self, value: u8) -> bool {
        match value {
            0 => false,
            2 => self.nvlink,
            _ => true,
        }
    }

    /// NCCL's `maxThreads` of an algorithm and protocol.
    pub fn max_threads(&self, a: Algo, p: Proto) -> u32 {
        match (a, p) {
            (Algo::Ring, Proto::Simple) if !self.nvlink => 256,
            (Algo::Ring | Algo::Tree, Proto::Ll | Proto::Simple) => 512,
            (Algo::Ring | Algo::Tree, Proto::Ll128) => 640,
            (
                Algo::CollNetDirect | Algo::CollNetChain | Algo::Nvls | Algo::NvlsTree,
                Proto::Simple,
            ) => 640,
            _ => 0,
        }
    }

    /// The channels a collective of `bytes` runs on (`topoGetAlgoInfo`): NVLS on its
    /// own channels; a ring or tree drops channels while each would get less than
    /// its threads times a threshold (8 bytes for LL, times the ranks on a ring; 8
    /// for LL128; 64 for Simple).
    pub fn channels_for(&self, a: Algo, p: Proto, bytes: u64) -> u32 {
        if matches!(a, Algo::Nvls | Algo::NvlsTree) {
            return self.nvls_channels;
        }
        let threads = u64::from(self.max_threads(a, p));
        let threshold = match p {
            Proto::Ll if a == Algo::Ring => 8 * u64::from(self.nranks),
            Proto::Ll | Proto::Ll128 => 8,
            Proto::Simple => 64,
        };
        let mut nc = self.channels.max(1);
        while nc >= 2 && bytes < u64::from(nc) * threads * threshold {
            nc -= 1;
        }
        nc
    }
}

/// Whether NVLS reduces `dtype` with `op` (`ncclNvlsSupported`): sum of the 32- and
/// 64-bit integers, half, bfloat16, float and double; max and min of the integers,
/// half and bfloat16. Not 8-bit types, products or averages.
pub fn nvls_supported(dtype: i32, op: i32) -> bool {
    const SUM: i32 = 0;
    const MAX: i32 = 2;
    const MIN: i32 = 3;
    match dtype {
        2..=6 | 9 => matches!(op, SUM | MAX | MIN),
        7 | 8 => op == SUM,
        _ => false,
    }
}

/// What the tuner chose for a collective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub algo: Algo,
    pub proto: Proto,
    /// NCCL's predicted time, microseconds (a C float, as NCCL computes it).
    pub time_us: f32,
    pub channels: u32,
}

/// NCCL's predicted time (`ncclTopoGetAlgoTime`, one operation): in float.
pub fn predicted_us(lat: f32, bw: f32, bytes: u64) -> f32 {
    lat + bytes as f32 / (1000.0 * bw)
}

/// The all-reduce of `bytes` of `dtype` with `op` on `m` (tuned) in release `v`: the
/// algorithm and protocol of least predicted time among those available and
/// allowed; from 2.19 to 2.23, failing that, the ring with its fastest allowed
/// protocol; `None` when nothing is left (see [`refusal`]). More than one rank.
pub fn choose(m: &Machine, v: Version, bytes: u64, dtype: i32, op: i32) -> Option<Choice> {
    choose_for(m, v, Func::AllReduce, bytes, dtype, op)
}

/// [`choose`] for any function the tuner knows (its tables hold the rest: Ring
/// for Broadcast, Reduce, AllGather and ReduceScatter here).
pub fn choose_for(
    m: &Machine,
    v: Version,
    func: Func,
    bytes: u64,
    dtype: i32,
    op: i32,
) -> Option<Choice> {
    let f = func as usize;
    let nvls = m.nvls && nvls_supported(dtype, op);
    let backup_ring = ((2, 19, 0)..(2, 24, 0)).contains(&v);
    let mut best: Option<(Algo, Proto, f32)> = None;
    let mut backup: Option<(Algo, Proto, f32)> = None;
    for &a in algos(v) {
        match a {
            // CollNet needs a CollNet network plugin: never here.
            Algo::CollNetDirect | Algo::CollNetChain => continue,
            Algo::Nvls | Algo::NvlsTree if !nvls => continue,
            _ => {}
        }
        for p in PROTOS {
            let (ai, pi) = (a.code(), p.code());
            let mut bw = m.bw[f][ai][pi];
            let mut is_backup = false;
            if backup_ring && a == Algo::Ring && bw == 0.0 {
                bw = m.ring_backup[f][pi];
                is_backup = true;
            }
            if bw == 0.0 {
                continue;
            }
            let t = predicted_us(m.lat[f][ai][pi], bw, bytes)
                * if func == Func::AllReduce {
                    model::correction(m, a, p, bytes) as f32
                } else {
                    1.0
                };
            let slot = if is_backup { &mut backup } else { &mut best };
            if t >= 0.0 && slot.is_none_or(|(_, _, min)| t < min) {
                *slot = Some((a, p, t));
            }
        }
    }
    let (algo, proto, time_us) = best.or(backup)?;
    Some(Choice {
        algo,
        proto,
        time_us,
        channels: m.channels_for(algo, proto, bytes),
    })
}

/// `ncclDatatypeToString` (2.24+): `ncclUint8` is missing from NCCL's switch, so it
/// is `Unknown` too.
pub fn datatype_name(dtype: i32) -> &'static str {
    match dtype {
        0 => "ncclInt8",
        2 => "ncclInt32",
        3 => "ncclUint32",
        4 => "ncclInt64",
        5 => "ncclUint64",
        6 => "ncclFloat16",
        7 => "ncclFloat32",
        8 => "ncclFloat64",
        9 => "ncclBfloat16",
        10 => "ncclFloat8e4m3",
        11 => "ncclFloat8e5m2",
        _ => "Unknown",
    }
}

/// The failure of an all-reduce for which [`choose`] found nothing, in release
/// `v`'s words, given the `NCCL_ALGO` and `NCCL_PROTO` NCCL reads at that moment:
/// from 2.24 `ncclInvalidUsage` (`ncclInternalError` when neither is set) naming
/// the function, type and variables; before, `ncclInternalError`.
pub fn refusal(v: Version, dtype: i32, algo_env: Option<&str>, proto_env: Option<&str>) -> Failure {
    if v < (2, 24, 0) {
        let origin = if v >= (2, 22, 0) {
            "enqueue.cc:1848"
        } else if v >= (2, 19, 0) {
            "enqueue.cc:1528"
        } else {
            "enqueue.cc:1182"
        };
        return (
            INTERNAL_ERROR,
            "Error : no algorithm/protocol available".into(),
            origin,
        );
    }
    let algo = algo_env.map_or(String::new(), |a| format!(" NCCL_ALGO was set to {a}."));
    let proto = proto_env.map_or(String::new(), |p| format!(" NCCL_PROTO was set to {p}."));
    let code = if algo_env.is_some() || proto_env.is_some() {
        INVALID_USAGE
    } else {
        INTERNAL_ERROR
    };
    (
        code,
        format!(
            "Error : no algorithm/protocol available for function AllReduce with datatype {}.{algo}{proto}",
            datatype_name(dtype)
        ),
        "enqueue.cc:1859",
    )
}
