//! The simulated machine: its GPUs, which pairs have peer access, the transport NCCL
//! would choose between two ranks, and what moving data costs on each.

use crate::env;

/// How the GPUs are connected (`NCCL_BENCH_SIM_TOPO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Every pair over NVLink (an HGX board): P2P everywhere.
    NvLink,
    /// PCIe with peer access: P2P over PCIe.
    Pcie,
    /// PCIe without peer access (consumer GPUs, some VMs): NCCL uses SHM.
    PcieNoP2p,
}

impl Topology {
    pub fn from_env() -> Topology {
        match env("NCCL_BENCH_SIM_TOPO").as_deref() {
            Some("pcie") => Topology::Pcie,
            Some("pcie-nop2p") => Topology::PcieNoP2p,
            _ => Topology::NvLink,
        }
    }

    pub fn peer_access(self, a: usize, b: usize) -> bool {
        a != b && self != Topology::PcieNoP2p
    }
}

/// One simulated GPU.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub name: String,
    pub total_bytes: u64,
    pub bus: u32,
}

impl Gpu {
    /// `0000:18:00.0`, as `cuDeviceGetPCIBusId` writes it.
    pub fn bus_id(&self) -> String {
        format!("0000:{:02x}:00.0", self.bus)
    }
}

/// The GPUs of the machine, from the environment.
pub fn gpus() -> Vec<Gpu> {
    let count = env("NCCL_BENCH_SIM_GPUS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(8usize);
    let gib: u64 = env("NCCL_BENCH_SIM_MEM_GIB")
        .and_then(|v| v.parse().ok())
        .unwrap_or(80);
    let name = match Topology::from_env() {
        Topology::NvLink => "Simulated H100 80GB HBM3",
        _ => "Simulated L40S PCIe",
    };
    (0..count)
        .map(|i| Gpu {
            name: name.to_string(),
            total_bytes: gib << 30,
            bus: 0x18 + 0x10 * i as u32,
        })
        .collect()
}

/// A transport between two ranks, as NCCL's log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    P2p,
    Shm,
    Net,
}

/// What the environment allows, read once per communicator as NCCL does.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    pub p2p: bool,
    pub shm: bool,
}

impl Allowed {
    pub fn from_env() -> Allowed {
        let on = |name: &str| env(name).is_some_and(|v| v != "0");
        let level_off =
            env("NCCL_P2P_LEVEL").is_some_and(|v| v.eq_ignore_ascii_case("LOC") || v == "0");
        Allowed {
            p2p: !on("NCCL_P2P_DISABLE") && !level_off,
            shm: !on("NCCL_SHM_DISABLE"),
        }
    }
}

/// The transport NCCL picks from rank a's GPU to rank b's, on one host.
pub fn transport(topo: Topology, allowed: Allowed, a: usize, b: usize) -> Transport {
    if allowed.p2p && topo.peer_access(a, b) {
        Transport::P2p
    } else if allowed.shm {
        Transport::Shm
    } else {
        Transport::Net
    }
}

/// Latency (ns) and bandwidth (bytes per ns = GB/s) of one ring step on a link.
fn link(topo: Topology, t: Transport) -> (f64, f64) {
    match (t, topo) {
        (Transport::P2p, Topology::NvLink) => (1_000.0, 150.0),
        (Transport::P2p, _) => (1_500.0, 22.0),
        (Transport::Shm, _) => (2_500.0, 11.0),
        (Transport::Net, _) => (12_000.0, 2.5),
    }
}

/// `NCCL_BENCH_SIM_SLOW_LINK=a-b[:factor]`: the direct link between GPUs a and b
/// carries 1/factor (default 4) of its bandwidth, both ways: a degraded NVLink, for
/// tests of `sweep --pairs`. Peer copies over it (the link ceilings) are as slow;
/// traffic that does not use it (SHM, NET) is not. The factor on the link a-b: 1 for
/// every other pair.
pub fn link_factor(a: usize, b: usize) -> f64 {
    let Some(spec) = env("NCCL_BENCH_SIM_SLOW_LINK") else {
        return 1.0;
    };
    let (pair, factor) = match spec.split_once(':') {
        Some((pair, f)) => (pair, f.trim().parse::<f64>().ok()),
        None => (spec.as_str(), Some(4.0)),
    };
    let ends = pair.split_once('-').and_then(|(x, y)| {
        Some((
            x.trim().parse::<usize>().ok()?,
            y.trim().parse::<usize>().ok()?,
        ))
    });
    match (ends, factor.filter(|f| f.is_finite() && *f >= 1.0)) {
        (Some((x, y)), Some(f)) if (x, y) == (a, b) || (y, x) == (a, b) => f,
        _ => 1.0,
    }
}

/// One ring step's latency and bandwidth: the slowest of the ring's links, each
/// given as (transport, from GPU, to GPU). `None` for an empty ring (one rank).
pub fn ring_link(topo: Topology, edges: &[(Transport, usize, usize)]) -> Option<(f64, f64)> {
    edges
        .iter()
        .map(|&(t, a, b)| {
            let (latency, bandwidth) = link(topo, t);
            let factor = if t == Transport::P2p {
                link_factor(a, b)
            } else {
                1.0
            };
            (latency, bandwidth / factor)
        })
        .reduce(|x, y| (x.0.max(y.0), x.1.min(y.1)))
}

/// Device time of an all-reduce of `bytes` over a ring whose slowest step is
/// `ring` (latency, bandwidth; see [`ring_link`]): a launch, then 2(n-1) steps each
/// moving bytes/n (nccl-tests' busbw then comes out near the link bandwidth at large
/// sizes). One rank copies locally.
pub fn all_reduce_ns(ring: Option<(f64, f64)>, bytes: u64, nranks: u32) -> f64 {
    const LAUNCH_NS: f64 = 4_000.0;
    let ns = match ring.filter(|_| nranks > 1) {
        None => LAUNCH_NS / 2.0 + bytes as f64 / 1_500.0,
        Some((latency, bandwidth)) => {
            let steps = 2.0 * (nranks as f64 - 1.0);
            LAUNCH_NS + steps * (latency + bytes as f64 / nranks as f64 / bandwidth)
        }
    };
    ns * slowdown()
}

/// `NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN`: every all-reduce takes this many times its
/// cost while copies keep the links' speed (1.3: each takes 30 % longer than its
/// links allow, busbw at 1/1.3 of the ceiling, for tests of the ceiling verdict).
/// 1 by default, and where it is not a positive number.
fn slowdown() -> f64 {
    env("NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0)
}

/// Device time of a copy from GPU `from` to GPU `to` on `topo`: over the P2P link
/// (the same link an all-reduce's P2P steps use) when `direct`, else staged through
/// host memory (down to the host and up again).
pub fn peer_copy_ns(topo: Topology, bytes: u64, direct: bool, from: usize, to: usize) -> f64 {
    if direct {
        let (latency, bandwidth) = link(topo, Transport::P2p);
        latency + bytes as f64 / (bandwidth / link_factor(from, to))
    } else {
        2.0 * copy_ns(bytes, true)
    }
}

/// Device time of a copy of `bytes`: over PCIe to or from the host, or within HBM.
pub fn copy_ns(bytes: u64, host_side: bool) -> f64 {
    if host_side {
        2_000.0 + bytes as f64 / 25.0
    } else {
        1_500.0 + bytes as f64 / 1_500.0
    }
}
