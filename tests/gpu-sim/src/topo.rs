//! The simulated machine: its GPUs, which pairs have peer access, the transport NCCL
//! would choose between two ranks, and what moving data costs on each.

use crate::env;

/// How the GPUs are connected (`NCCL_BENCH_SIM_TOPO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Every pair over NVLink without multicast (an A100 HGX board): P2P
    /// everywhere, no NVLS.
    NvLink,
    /// Every GPU on NVSwitches with multicast (H100/H200/B200 SXM): P2P everywhere
    /// at the H100's ring rate, and NVLink SHARP (NVLS) for the all-reduces NCCL's
    /// tuner gives it.
    NvSwitch,
    /// PCIe with peer access, all GPUs under one switch: P2P over PCIe.
    Pcie,
    /// Two PCIe switches, each with half the GPUs under it, joined through the CPU:
    /// P2P inside a switch, SHM across (NCCL's default `NCCL_P2P_LEVEL` is PXB, and
    /// the driver gives no peer access through the host bridge).
    Pcie2Switch,
    /// PCIe without peer access (consumer GPUs, some VMs): NCCL uses SHM.
    PcieNoP2p,
}

/// How far apart two GPUs are, as NCCL's topology names paths (`NCCL_P2P_LEVEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Path {
    Loc,
    Nvl,
    Pix,
    Pxb,
    Phb,
    Sys,
}

impl Path {
    /// An `NCCL_P2P_LEVEL` value: a path name, or the legacy numbers (0 LOC, 1 PIX,
    /// 2 PXB, 3 PHB, 4 SYS).
    fn level(text: &str) -> Option<Path> {
        Some(match text.to_ascii_uppercase().as_str() {
            "LOC" | "0" => Path::Loc,
            "NVL" => Path::Nvl,
            "PIX" | "1" => Path::Pix,
            "PXB" | "2" => Path::Pxb,
            "PHB" | "3" => Path::Phb,
            "SYS" | "4" => Path::Sys,
            _ => return None,
        })
    }
}

impl Topology {
    pub fn from_env() -> Topology {
        match env("NCCL_BENCH_SIM_TOPO").as_deref() {
            Some("nvswitch") => Topology::NvSwitch,
            Some("pcie") => Topology::Pcie,
            Some("pcie-2switch") => Topology::Pcie2Switch,
            Some("pcie-nop2p") => Topology::PcieNoP2p,
            _ => Topology::NvLink,
        }
    }

    /// The PCIe switch GPU `i` of `count` hangs under (the first half under 0).
    fn switch_of(i: usize, count: usize) -> usize {
        i * 2 / count.max(1)
    }

    /// The path between GPUs a and b (physical indices) of a machine of `count`.
    pub fn path(self, a: usize, b: usize, count: usize) -> Path {
        match self {
            _ if a == b => Path::Loc,
            Topology::NvLink | Topology::NvSwitch => Path::Nvl,
            Topology::Pcie | Topology::PcieNoP2p => Path::Pix,
            Topology::Pcie2Switch if Self::switch_of(a, count) == Self::switch_of(b, count) => {
                Path::Pix
            }
            Topology::Pcie2Switch => Path::Phb,
        }
    }

    /// Whether the driver gives GPU a access to GPU b's memory.
    pub fn peer_access(self, a: usize, b: usize) -> bool {
        let count = gpu_count();
        a != b
            && match self {
                Topology::PcieNoP2p => false,
                Topology::Pcie2Switch => self.path(a, b, count) <= Path::Pxb,
                _ => true,
            }
    }

    /// Whether the GPUs are joined by NVSwitches with multicast (NVLS).
    pub fn multicast(self) -> bool {
        self == Topology::NvSwitch
    }

    /// NVLinks per GPU, all active: [`NVLINKS_PER_GPU`] on the NVLink topologies,
    /// none on PCIe.
    pub fn nvlinks(self) -> usize {
        match self {
            Topology::NvLink | Topology::NvSwitch => NVLINKS_PER_GPU,
            _ => 0,
        }
    }
}

/// NVLinks of each GPU on the NVLink topologies: an H100's 18 (NVML's
/// `NVML_NVLINK_MAX_LINKS`), on the A100 board too, which has 12, so that a link's
/// index follows one rule everywhere.
pub const NVLINKS_PER_GPU: usize = 18;

/// One simulated GPU.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub name: String,
    pub total_bytes: u64,
    pub bus: u32,
    /// Its index on the machine (NCCL's `nvmlDev`), whatever `CUDA_VISIBLE_DEVICES`
    /// makes its CUDA ordinal.
    pub index: usize,
}

impl Gpu {
    /// `0000:18:00.0`, as `cuDeviceGetPCIBusId` writes it.
    pub fn bus_id(&self) -> String {
        format!("0000:{:02x}:00.0", self.bus)
    }

    /// `GPU-...`, as `cuDeviceGetUuid` and `nvidia-smi -L` name it.
    pub fn uuid(&self) -> String {
        format!(
            "GPU-5151{:04x}-0000-4000-8000-00000000{:04x}",
            self.bus, self.index
        )
    }
}

/// How many GPUs the machine has (`NCCL_BENCH_SIM_GPUS`, 8).
pub fn gpu_count() -> usize {
    env("NCCL_BENCH_SIM_GPUS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(8usize)
}

/// Every GPU of the machine, visible or not. Each has `NCCL_BENCH_SIM_MEM_GIB` of
/// memory, by default 80 GiB or what the host can back: simulated device memory is
/// host memory, so the machine's GPUs together get at most half of the host's
/// (a sweep that sized its buffers by 80 GiB would exhaust a test machine).
pub fn machine_gpus() -> Vec<Gpu> {
    let host_share = host_memory_bytes()
        .map(|b| b / 2 / gpu_count().max(1) as u64)
        .unwrap_or(u64::MAX);
    let total_bytes = env("NCCL_BENCH_SIM_MEM_GIB")
        .and_then(|v| v.parse::<u64>().ok())
        .map(|gib| gib << 30)
        .unwrap_or((80u64 << 30).min(host_share));
    let name = match Topology::from_env() {
        Topology::NvSwitch => "Simulated H100 80GB HBM3",
        Topology::NvLink => "Simulated A100-SXM4-80GB",
        _ => "Simulated L40S PCIe",
    };
    (0..gpu_count())
        .map(|index| Gpu {
            name: name.to_string(),
            total_bytes,
            bus: 0x18 + 0x10 * index as u32,
            index,
        })
        .collect()
}

/// `MemTotal` of /proc/meminfo.
fn host_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The GPUs this process sees, in CUDA's order: those `CUDA_VISIBLE_DEVICES` names
/// (indices or UUIDs, up to the first that names no GPU, as CUDA reads it), or all.
pub fn gpus() -> Vec<Gpu> {
    let all = machine_gpus();
    let Some(list) = std::env::var("CUDA_VISIBLE_DEVICES").ok() else {
        return all;
    };
    let mut seen = Vec::new();
    for item in list.split(',').map(str::trim) {
        let found = match item.parse::<usize>() {
            Ok(i) => all.get(i),
            Err(_) => all
                .iter()
                .find(|g| !item.is_empty() && g.uuid().starts_with(item)),
        };
        match found {
            Some(g) if !seen.iter().any(|s: &Gpu| s.index == g.index) => seen.push(g.clone()),
            _ => break,
        }
    }
    seen
}

/// A transport between two ranks, as NCCL's log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    P2p,
    Shm,
    Net,
}

/// The network NCCL's NET transport uses: sockets, or InfiniBand verbs on a NIC
/// with GPUDirect RDMA (`NCCL_BENCH_SIM_NIC=ib`: each GPU with a 400 Gb/s NIC
/// beside it, as on HGX and DGX nodes). With the NIC, NCCL picks IB unless
/// `NCCL_NET=Socket` or `NCCL_IB_DISABLE=1`; between two GPUs of one node that SHM
/// or P2P would not join (`NCCL_SHM_DISABLE=1`), NET/IB goes out through one NIC
/// and back in through the other, not over sockets (NVIDIA/nccl#406: "using NICs
/// instead of SHM you would always stay within the PCI switch").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Socket,
    Ib,
}

impl Network {
    /// Whether the machine has the InfiniBand NIC.
    pub fn nic() -> bool {
        env("NCCL_BENCH_SIM_NIC").is_some_and(|v| v.eq_ignore_ascii_case("ib"))
    }

    /// The network NCCL uses here, or the name of one `NCCL_NET` asks for that
    /// does not exist.
    pub fn from_env() -> Result<Network, String> {
        let ib = Network::nic() && env("NCCL_IB_DISABLE").is_none_or(|v| v == "0");
        match env("NCCL_NET") {
            Some(n) if n.eq_ignore_ascii_case("Socket") => Ok(Network::Socket),
            Some(n) if n.eq_ignore_ascii_case("IB") && ib => Ok(Network::Ib),
            Some(n) => Err(n),
            None if ib => Ok(Network::Ib),
            None => Ok(Network::Socket),
        }
    }

    /// NCCL's name for it (`Using network IB`, `via NET/IB/0/GDRDMA`).
    pub fn name(self) -> &'static str {
        match self {
            Network::Socket => "Socket",
            Network::Ib => "IB",
        }
    }
}

/// What the environment allows, read once per communicator as NCCL does.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    pub p2p: bool,
    pub shm: bool,
    /// The farthest path P2P may take (`NCCL_P2P_LEVEL`; PXB by default).
    pub p2p_level: Path,
}

impl Allowed {
    pub fn from_env() -> Allowed {
        let on = |name: &str| env(name).is_some_and(|v| v != "0");
        Allowed {
            p2p: !on("NCCL_P2P_DISABLE"),
            shm: !on("NCCL_SHM_DISABLE"),
            p2p_level: env("NCCL_P2P_LEVEL")
                .and_then(|v| Path::level(&v))
                .unwrap_or(Path::Pxb),
        }
    }
}

/// The transport NCCL picks from rank a's GPU to rank b's (physical indices), on one
/// host when `same_host`.
pub fn transport(
    topo: Topology,
    allowed: Allowed,
    a: usize,
    b: usize,
    same_host: bool,
) -> Transport {
    let path = topo.path(a, b, gpu_count());
    // NVLink is always within reach of P2P unless P2P is off (or LOC).
    let within = path == Path::Nvl && allowed.p2p_level > Path::Loc || path <= allowed.p2p_level;
    if !same_host {
        Transport::Net
    } else if allowed.p2p && topo.peer_access(a, b) && within {
        Transport::P2p
    } else if allowed.shm {
        Transport::Shm
    } else {
        Transport::Net
    }
}

/// Latency (ns) and bandwidth (bytes per ns = GB/s) of one ring step on a link.
pub fn link(topo: Topology, t: Transport) -> (f64, f64) {
    match (t, topo) {
        (Transport::P2p, Topology::NvLink) => (1_000.0, 150.0),
        (Transport::P2p, Topology::NvSwitch) => (1_000.0, 370.0),
        (Transport::P2p, _) => (1_500.0, 22.0),
        (Transport::Shm, _) => (2_500.0, 11.0),
        (Transport::Net, _) => match Network::from_env() {
            // 400 Gb/s less the protocols' share; PCIe Gen4 x16 on the PCIe boards.
            Ok(Network::Ib) if matches!(topo, Topology::NvLink | Topology::NvSwitch) => {
                (5_000.0, 45.0)
            }
            Ok(Network::Ib) => (5_000.0, 20.0),
            _ => (12_000.0, 2.5),
        },
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

/// Fixed cost of launching a collective's kernel, ns (the tuner's model builds on
/// it: [`crate::nccl::tuner::model`]).
pub const LAUNCH_NS: f64 = 4_000.0;

/// NVLS's bus bandwidth on H100 NVSwitch (GB/s) for an all-reduce of `nranks`:
/// ~480 on 8 GPUs (NCCL's maintainers, NVIDIA/nccl-tests#212: "a peak busBw of
/// ~480GB/s (algbw ~275GB/s)"), ~370 on 2 to 4, where the multicast saves little over
/// the ring's 370; between 4 and 8 the stand-in draws a straight line (no published
/// figure).
pub fn nvls_busbw(nranks: u32) -> f64 {
    const FEW: f64 = 370.0;
    const EIGHT: f64 = 480.0;
    let n = f64::from(nranks.clamp(4, 8));
    FEW + (EIGHT - FEW) * (n - 4.0) / 4.0
}

/// NVLS's latency on one node (ns): NCCL's model has no base latency for NVLS and
/// 25 us of NVLink latency (`hwLat[NVLINK][NVLS][SIMPLE]` in `src/graph/tuning.cc`,
/// 2.17-2.30), which beats its LL128 (14 + 1.9 us a step) and Simple (8.4 + 3.4 us
/// a step) rings on 8 GPUs: the tuner goes from LL straight to NVLS.
pub const NVLS_LATENCY_NS: f64 = 25_000.0;

/// Device time of an all-reduce on one rank: a launch and a local copy (NCCL runs
/// no algorithm there). Without [`slowdown`].
pub fn one_rank_ns(bytes: u64) -> f64 {
    LAUNCH_NS / 2.0 + bytes as f64 / 1_500.0
}

/// `NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN`: every all-reduce takes this many times its
/// cost while copies keep the links' speed (1.3: each takes 30 % longer than its
/// links allow, busbw at 1/1.3 of the ceiling, for tests of the ceiling verdict).
/// 1 by default, and where it is not a positive number. NCCL's tuner does not know
/// of it: it is a factor on the device time only.
pub fn slowdown() -> f64 {
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
