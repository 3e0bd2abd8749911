//! Setting a communicator up as NCCL does. The bootstrap: every rank joins the
//! rendezvous its unique id names and says who and where it is (process, GPU,
//! host). The plan: the transport of each ring step, the channels, whether NVLS is
//! there and when to connect. The connections: the ring's channels (their log
//! lines, SHM segments) and NVLS buffers (device memory).
//!
//! Up to 2.21, and from 2.22 with `NCCL_RUNTIME_CONNECT=0` (or cuMem off), all of
//! it happens in `ncclCommInitRank`. From 2.22 NCCL connects at runtime: init
//! bootstraps and plans, and the first collective that runs an algorithm connects
//! what that algorithm needs, so its log lines and its failures (a full /dev/shm, a
//! refused or hung connection, no memory for NVLS) come there.

use std::ffi::c_int;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use super::comm::{stop_failure, Comm, Failure, Stop};
use super::lines::{self, NvlsSizes};
use super::nvls;
use super::shared::{file_bytes, host_hash, Shared};
use super::shm;
use super::tuner::{self, Algo, Enabled, Machine};
use super::{
    version, INTERNAL_ERROR, INVALID_ARGUMENT, INVALID_USAGE, REMOTE_ERROR, SYSTEM_ERROR,
    UNHANDLED_CUDA_ERROR,
};
use crate::driver::{self, CUdeviceptr};
use crate::fault::{self, Fault};
use crate::log;
use crate::rendezvous::{self, JoinError, ID_BYTES};
use crate::topo::{self, Allowed, Network, Topology, Transport};
use crate::{env, realtime_ns};

/// What init decided, the same on every rank.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The transport of each rank's ring step to the next rank.
    pub ring: Vec<Transport>,
    /// What the tuner works from: links, channels, NCCL's tables.
    pub machine: Machine,
    /// NVLS channels; 0 without NVLS.
    pub nvls_channels: u32,
    /// Ring channels (NCCL's coll channels).
    pub channels: u32,
    /// Connections are made by the first collective that needs them (2.22+).
    pub lazy: bool,
    /// P2P buffers through cuMem (`P2P/CUMEM`), else legacy IPC handles.
    pub cumem: bool,
    /// `comm->symmetricSupport` (2.27+): one node, every pair of GPUs direct P2P,
    /// cuMem on, `NCCL_WIN_ENABLE` not 0 ([`super::symmetric`]).
    pub symmetric: bool,
}

/// What is connected so far, and the resources it holds while the communicator
/// lives.
#[derive(Default)]
pub struct Connected {
    pub ring: bool,
    pub nvls: bool,
    /// SHM segments, unlinked but held (their space stays taken), as NCCL's
    /// mappings are.
    pub segments: Vec<File>,
    /// NVLS buffers' device memory.
    pub nvls_memory: Option<CUdeviceptr>,
    /// A connection was tried (`connect-hang` hangs the first only).
    pub tried: bool,
    /// Peers connected for point-to-point work.
    pub peers: std::collections::BTreeSet<u32>,
}

/// An NCCL integer parameter from the environment (`NCCL_<name>`), as NCCL reads
/// it: a number, else the default.
pub(super) fn param(name: &str, default: i64) -> i64 {
    env(&format!("NCCL_{name}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether P2P buffers go through cuMem: `NCCL_CUMEM_ENABLE`, on by default from
/// 2.19 (off before; 2.18 takes 1).
fn cumem_enabled() -> bool {
    let v = version();
    match param("CUMEM_ENABLE", -2) {
        -2 => v >= (2, 19, 0),
        0 => false,
        _ => v >= (2, 18, 0),
    }
}

impl Comm {
    /// `ncclCommInitRank`'s work: bootstrap, plan, and (unless connections are made
    /// at runtime) connect everything.
    pub fn init(&self, id: &[u8; ID_BYTES]) -> Result<(), Failure> {
        if fault::active(Fault::InitCuda, self.rank) {
            return Err((
                UNHANDLED_CUDA_ERROR,
                "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'"
                    .into(),
                "init.cc:1886",
            ));
        }
        self.bootstrap(id)?;
        self.log_init("Init START");
        if let Some(line) = shm::fallback_line(version(), cumem_enabled(), self.rank) {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| log::info(log::INIT, self.device, line));
        }
        let failed = self.check_peers().and_then(|()| self.make_plan());
        if let Err(e) = failed {
            self.leave();
            return Err(e);
        }
        let plan = self.plan();
        if !plan.lazy {
            let mut connected = self.connected.lock().unwrap();
            self.connect_ring(&mut connected)?;
            if plan.nvls_channels > 0 {
                self.setup_nvls(&mut connected)?;
            }
        }
        // Every rank set up before any reports complete.
        self.connect_barrier().map_err(|stop| {
            stop_failure(stop).unwrap_or((
                INTERNAL_ERROR,
                "the communicator was aborted during init".into(),
                "init.cc:1480",
            ))
        })?;
        self.log_init("Init COMPLETE");
        Ok(())
    }

    /// Joins the rendezvous, maps the shared file and says who and where this rank
    /// is; returns once every rank has.
    fn bootstrap(&self, id: &[u8; ID_BYTES]) -> Result<(), Failure> {
        let fd = rendezvous::join(id, self.rank, self.nranks).map_err(|e| match e {
            JoinError::BadId => (
                INVALID_ARGUMENT,
                "Invalid unique id: it was not made by this library".to_string(),
                "bootstrap.cc:520",
            ),
            JoinError::Connect(e) => (
                REMOTE_ERROR,
                format!("Bootstrap : connect to the root failed: {e}"),
                "misc/socket.cc:483",
            ),
            JoinError::Mismatch => (
                INVALID_USAGE,
                format!(
                    "Invalid rank {} or nranks {}: the communicator's other ranks disagree",
                    self.rank, self.nranks
                ),
                "init.cc:1760",
            ),
            JoinError::Io(e) => (
                SYSTEM_ERROR,
                format!("Bootstrap : receiving from the root failed: {e}"),
                "bootstrap.cc:133",
            ),
        })?;
        let len = file_bytes(self.nranks);
        // SAFETY: maps the shared file of `len` bytes (sized by the root).
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err((
                SYSTEM_ERROR,
                format!(
                    "mmap of the bootstrap segment failed: {}",
                    std::io::Error::last_os_error()
                ),
                "misc/shmutils.cc:98",
            ));
        }
        let _ = self.shared.set(Shared { base: base.cast() });
        let slot = self.shared().slot(self.rank as usize);
        slot.pid.store(std::process::id() as i32, Ordering::Release);
        slot.nvml.store(self.nvml as i32, Ordering::Release);
        slot.host.store(host_hash(), Ordering::Release);
        self.barrier().map_err(|_| {
            (
                REMOTE_ERROR,
                "Bootstrap : a peer left before the communicator was complete".to_string(),
                "bootstrap.cc:210",
            )
        })
    }

    /// What NCCL checks once it knows every rank: two ranks of one host on one GPU,
    /// and a network that exists.
    fn check_peers(&self) -> Result<(), Failure> {
        for r in (0..self.nranks as usize).filter(|&r| r != self.rank as usize) {
            if self.same_host(r) && self.nvml_of(r) == self.nvml {
                return Err((
                    INVALID_USAGE,
                    format!(
                        "Duplicate GPU detected : rank {} and rank {r} both on CUDA device {:x}000",
                        self.rank, self.bus
                    ),
                    "init.cc:904",
                ));
            }
        }
        let network = match Network::from_env() {
            Ok(n) => n,
            Err(net) => {
                return Err((
                    INVALID_USAGE,
                    format!("Error : network {net} not found."),
                    "net.cc:734",
                ))
            }
        };
        if network == Network::Ib {
            // Without relaxed ordering, as NCCL 2.4 to 2.30 print it.
            log::info(
                log::INIT | log::NET,
                self.device,
                "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
            );
        }
        log::info(
            log::INIT | log::NET,
            self.device,
            &format!("Using network {}", network.name()),
        );
        Ok(())
    }

    /// The ring's slowest step where its NET steps go through one InfiniBand NIC a
    /// host (`NCCL_BENCH_SIM_NIC=ib`): every step a host sends over NET shares that
    /// NIC's bandwidth, so on one node with SHM and P2P off each of `n` steps gets
    /// 1/n of it. Sockets and the other transports as `link` is.
    fn shared_nic(&self, link: Option<(f64, f64)>, ring: &[Transport]) -> Option<(f64, f64)> {
        let (latency, bandwidth) = link?;
        if Network::from_env() != Ok(Network::Ib) {
            return Some((latency, bandwidth));
        }
        let host = |r: usize| self.shared().slot(r).host.load(Ordering::Acquire);
        let mut sends: Vec<(u64, u32)> = Vec::new();
        for (r, _) in ring
            .iter()
            .enumerate()
            .filter(|(_, &t)| t == Transport::Net)
        {
            let h = host(r);
            match sends.iter_mut().find(|(x, _)| *x == h) {
                Some((_, n)) => *n += 1,
                None => sends.push((h, 1)),
            }
        }
        let flows = sends.iter().map(|&(_, n)| n).max().unwrap_or(1);
        let (_, nic) = topo::link(self.topo, Transport::Net);
        Some((latency, bandwidth.min(nic / f64::from(flows))))
    }

    /// Decides transports, channels and NVLS, and logs what NCCL logs of it.
    fn make_plan(&self) -> Result<(), Failure> {
        let v = version();
        let n = self.nranks as usize;
        let allowed = Allowed::from_env();
        let ring: Vec<Transport> = (0..n)
            .filter(|_| n > 1)
            .map(|r| {
                let next = (r + 1) % n;
                let same = self.shared().slot(r).host.load(Ordering::Acquire)
                    == self.shared().slot(next).host.load(Ordering::Acquire);
                topo::transport(
                    self.topo,
                    allowed,
                    self.nvml_of(r),
                    self.nvml_of(next),
                    same,
                )
            })
            .collect();
        let edges: Vec<(Transport, usize, usize)> = ring
            .iter()
            .enumerate()
            .map(|(r, &t)| (t, self.nvml_of(r), self.nvml_of((r + 1) % n)))
            .collect();
        let nvls_channels = self.nvls_support()?;
        let cumem = cumem_enabled();
        // NCCL's search gives a ring as many channels as its links carry: many
        // over NVLink (24 on 8 H100s, as their logs say: `24 coll channels, ...,
        // 16 nvls channels, 32 p2p channels, 32 p2p channels per peer`), two over
        // PCIe, SHM or the network.
        let nvlink = matches!(self.topo, Topology::NvLink | Topology::NvSwitch)
            && ring.iter().all(|&t| t == Transport::P2p);
        let hopper = self.topo == Topology::NvSwitch;
        let channels = match (nvlink, hopper) {
            (true, true) => 24,
            (true, false) => 16,
            (false, _) => 2,
        };
        let mut machine = Machine::new(
            self.nranks,
            self.shared_nic(topo::ring_link(self.topo, &edges), &ring),
        );
        machine.nodes = self.nodes();
        machine.nvls = nvls_channels > 0;
        machine.nvls_channels = nvls_channels;
        machine.channels = channels;
        // LL128's paths: NVLink within each host (the network between hosts of
        // the NVLink machines is PXB, which LL128 takes).
        machine.nvlink = matches!(self.topo, Topology::NvLink | Topology::NvSwitch)
            && ring
                .iter()
                .enumerate()
                .all(|(r, &t)| t == Transport::P2p || !self.same_host_pair(r, (r + 1) % n));
        machine.hopper = hopper;
        machine.mistuned = self.topo == Topology::NvLink;
        let machine = self.tune_model(machine)?;
        if v >= (2, 16, 0) {
            let (p2p, per_peer) = match (nvlink, hopper) {
                (true, true) => (32, 32),
                (true, false) => (32, 4),
                (false, _) => (2, 2),
            };
            log::info(
                log::INIT,
                self.device,
                &lines::channel_counts(v, channels, nvls_channels, p2p, per_peer),
            );
        }
        let all_p2p = (0..n).all(|a| {
            (a + 1..n).all(|b| {
                self.same_host_pair(a, b)
                    && topo::transport(self.topo, allowed, self.nvml_of(a), self.nvml_of(b), true)
                        == Transport::P2p
            })
        });
        let symmetric = v >= (2, 27, 0) && n > 1 && all_p2p && cumem && param("WIN_ENABLE", 1) != 0;
        let _ = self.plan.set(Plan {
            ring,
            machine,
            nvls_channels,
            channels,
            lazy: v >= (2, 22, 0) && cumem && param("RUNTIME_CONNECT", 1) != 0,
            cumem,
            symmetric,
        });
        Ok(())
    }

    /// Rank `r` as NCCL's connection lines name it (`3[3]`; the bus id before
    /// 2.18.3).
    pub(super) fn peer_name(&self, r: usize) -> String {
        let bus = driver::driver()
            .gpus
            .iter()
            .find(|g| g.index == self.nvml_of(r))
            .map_or(0, |g| g.bus);
        lines::peer(version(), r, self.nvml_of(r), bus)
    }

    /// Whether ranks `a` and `b` are on one host.
    pub(super) fn same_host_pair(&self, a: usize, b: usize) -> bool {
        let s = self.shared();
        s.slot(a).host.load(Ordering::Acquire) == s.slot(b).host.load(Ordering::Acquire)
    }

    /// Hosts the communicator spans (NCCL's `nNodes`).
    fn nodes(&self) -> u32 {
        let mut hosts: Vec<u64> = (0..self.nranks as usize)
            .map(|r| self.shared().slot(r).host.load(Ordering::Acquire))
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts.len() as u32
    }

    /// `ncclTopoTuneModel`: nothing on one rank; else `NCCL_PROTO` and `NCCL_ALGO`
    /// (logged, parsed: from 2.24 a bad one fails the init), the tables, and on rank
    /// 0 the matrix (2.24+, ENV) and the table (TUNING).
    fn tune_model(&self, machine: Machine) -> Result<Machine, Failure> {
        let v = version();
        if self.nranks < 2 {
            return Ok(machine);
        }
        let proto = env("NCCL_PROTO");
        let algo = env("NCCL_ALGO");
        if let Some(p) = &proto {
            log::info(
                log::ENV,
                self.device,
                &format!("NCCL_PROTO set by environment to {p}"),
            );
            if v >= (2, 24, 0) {
                // NCCL parses NCCL_PROTO before it logs NCCL_ALGO.
                Enabled::read(v, None, Some(p), machine.nodes)?;
            }
        }
        if let Some(a) = &algo {
            log::info(
                log::ENV,
                self.device,
                &format!("NCCL_ALGO set by environment to {a}"),
            );
        }
        let (enabled, notes) = Enabled::read(v, algo.as_deref(), proto.as_deref(), machine.nodes)?;
        let machine = machine.tuned(v, &enabled);
        if self.rank == 0 {
            if let Some(parsed) = notes.matrix {
                log::info(log::ENV, self.device, &tuner::lines::matrix(v, &parsed));
            }
            if notes.ignored_algo_warning {
                super::warn(
                    self.device,
                    "graph/tuning.cc:276",
                    "CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET",
                );
            }
            for line in tuner::lines::table(v, &machine) {
                log::info(log::TUNING, self.device, &line);
            }
        }
        Ok(machine)
    }

    /// NVLS channels (0 without NVLS), logging NCCL's line about multicast where
    /// NCCL does: from 2.17, with `NCCL_NVLS_ENABLE` not 0 and enough GPUs on the
    /// host (3 up to 2.28.3, 2 after), on one host. From 2.27.3 NCCL binds NVLS memory
    /// here, at init: a failed bind (fault `nvls-bind`) turns NVLS off (2.27-2.28,
    /// not forced) or fails init ([`nvls`]).
    fn nvls_support(&self) -> Result<u32, Failure> {
        let v = version();
        let gpus = self.local_ranks();
        let least = if v >= (2, 28, 7) { 2 } else { 3 };
        if v < (2, 17, 0) || param("NVLS_ENABLE", 2) == 0 || gpus < least || gpus < self.nranks {
            return Ok(0);
        }
        let available = self.topo.multicast();
        let channels = if available { 16 } else { 0 };
        log::info(
            log::INIT,
            self.device,
            &lines::nvls_support(v, available, self.device, channels),
        );
        if available && v >= (2, 27, 3) && fault::active(Fault::NvlsBind, self.rank) {
            let forced = param("NVLS_ENABLE", 2) == 1;
            let failed = nvls::bind_failed(v, nvls::FIRST_BIND_BYTES, forced);
            if nvls::goes_on_without(v) && !forced {
                log::info(log::INIT | log::NVLS, self.device, &failed);
                return Ok(0);
            }
            return Err((UNHANDLED_CUDA_ERROR, failed, nvls::origin(v)));
        }
        Ok(channels)
    }

    /// Whether a collective with `algo` still has to connect.
    pub fn needs_connect(&self, algo: Algo) -> bool {
        let c = self.connected.lock().unwrap();
        match algo {
            Algo::Nvls | Algo::NvlsTree => !c.nvls,
            // Tree and the rest use the ring's connections here.
            _ => !c.ring,
        }
    }

    /// Connects what `algo` needs, if not yet: at runtime, before the collective.
    pub fn prepare(&self, algo: Algo) -> Result<(), Failure> {
        let mut connected = self.connected.lock().unwrap();
        match algo {
            Algo::Nvls | Algo::NvlsTree if !connected.nvls => self.setup_nvls(&mut connected),
            Algo::Nvls | Algo::NvlsTree => Ok(()),
            _ if !connected.ring => self.connect_ring(&mut connected),
            _ => Ok(()),
        }
    }

    /// Connects the ring's channels: logs each connection as NCCL does, creates the
    /// SHM segments of an SHM step, and waits for every rank.
    fn connect_ring(&self, connected: &mut MutexGuard<Connected>) -> Result<(), Failure> {
        let r = self.connect_ring_once(connected);
        if r.is_err() {
            self.leave();
        }
        r
    }

    fn connect_ring_once(&self, connected: &mut MutexGuard<Connected>) -> Result<(), Failure> {
        let first = !std::mem::replace(&mut connected.tried, true);
        if first && fault::active(Fault::ConnectHang, self.rank) {
            while !self.aborted.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            return Err((
                INTERNAL_ERROR,
                "the communicator was aborted while connecting".into(),
                "transport.cc:200",
            ));
        }
        let plan = self.plan().clone();
        let n = self.nranks as usize;
        if n > 1 {
            let v = version();
            let me = self.rank as usize;
            let (prev, next) = ((me + n - 1) % n, (me + 1) % n);
            let name = |r: usize| self.peer_name(r);
            let (send, recv) = (plan.ring[me], plan.ring[prev]);
            if send == Transport::Shm {
                connected
                    .segments
                    .extend(self.create_shm_segments(plan.channels, next)?);
            }
            for channel in 0..plan.channels {
                if recv == Transport::Net {
                    let line =
                        lines::channel(v, channel, &name(prev), &name(me), recv, plan.cumem, false);
                    log::info(log::INIT | log::NET, self.device, &line);
                }
                let line =
                    lines::channel(v, channel, &name(me), &name(next), send, plan.cumem, true);
                log::info(log::INIT, self.device, &line);
            }
        }
        self.connect_barrier().map_err(failure_while_connecting)?;
        if n > 1 {
            log::info(log::INIT, self.device, lines::rings_connected(version()));
        }
        connected.ring = true;
        Ok(())
    }

    /// Sets up NVLS buffers: NCCL's line with their sizes, the device memory they
    /// take on this GPU, and a wait for every rank.
    fn setup_nvls(&self, connected: &mut MutexGuard<Connected>) -> Result<(), Failure> {
        let v = version();
        let heads = self.local_ranks();
        let sizes = NvlsSizes::of(v, self.plan().nvls_channels, heads);
        log::info(
            log::INIT | log::NVLS,
            self.device,
            &lines::nvls_buffers(
                v,
                self as *const Comm as usize,
                self.local_rank(),
                heads,
                heads,
                sizes,
            ),
        );
        if fault::active(Fault::NvlsBind, self.rank) {
            self.leave();
            let forced = param("NVLS_ENABLE", 2) == 1;
            let failed = nvls::bind_failed(v, nvls::FIRST_BIND_BYTES, forced);
            return Err((UNHANDLED_CUDA_ERROR, failed, nvls::origin(v)));
        }
        let memory = match driver::alloc_on(self.device, sizes.total as usize) {
            Ok(p) => p,
            Err(e) => {
                self.leave();
                return Err((
                    UNHANDLED_CUDA_ERROR,
                    format!("Cuda failure {e} '{}'", driver::error_text(e)),
                    "transport/nvls.cc:285",
                ));
            }
        };
        connected.nvls_memory = Some(memory);
        self.connect_barrier().map_err(failure_while_connecting)?;
        connected.nvls = true;
        Ok(())
    }

    /// The buffers of this rank's SHM connection to `peer` on `channels` channels:
    /// in cuMem host memory where the release and this process put them there
    /// ([`shm::backing`]), else one segment per channel in /dev/shm, sized as NCCL
    /// sizes them and extended with `posix_fallocate` (so a small /dev/shm fails as it
    /// does with NCCL), unlinked once made. A rank on /dev/shm whose peer is on cuMem
    /// fails as NCCL's importer does.
    pub(super) fn create_shm_segments(
        &self,
        channels: u32,
        peer: usize,
    ) -> Result<Vec<File>, Failure> {
        let v = version();
        let cumem = cumem_enabled();
        let mine = shm::backing(v, cumem, self.rank);
        if mine == shm::Backing::DevShm
            && shm::backing(v, cumem, peer as u32) == shm::Backing::CumemHost
        {
            return Err(shm::mismatch_failure(v, self.hash ^ peer as u64));
        }
        if mine == shm::Backing::CumemHost {
            for channel in 0..u64::from(channels) {
                let ptr = 0x7f00_0000_0000 + ((self.hash ^ channel) & 0xff_ffff) * 0x1000;
                log::info(log::SHM, self.device, &shm::cumem_allocated(ptr));
            }
            return Ok(Vec::new());
        }
        let size = shm::SEGMENT_BYTES;
        let mut made = Vec::new();
        for channel in 0..u64::from(channels) {
            let name = format!(
                "/dev/shm/nccl-{}",
                seg_suffix(self.hash ^ (u64::from(self.rank) << 8) ^ channel)
            );
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&name);
            let failed = match &file {
                Ok(f) if ((2, 12, 0)..(2, 19, 0)).contains(&v) => extend_and_touch(f, size + 4),
                // SAFETY: a valid descriptor; extends the file to `size` + 4 bytes.
                Ok(f) => unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, (size + 4) as i64) },
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
            };
            let _ = std::fs::remove_file(&name);
            if let (0, Ok(f)) = (failed, file) {
                if v >= (2, 23, 4) {
                    let ptr = 0x7f00_0000_0000 + (channel & 0xff) * 0x100_0000;
                    log::info(log::SHM, self.device, &shm::mmap_allocated(&name, ptr));
                }
                made.push(f);
                continue;
            }
            return Err(self.shm_failure(&name, size, failed));
        }
        Ok(made)
    }

    /// NCCL's WARN lines and error for a segment that could not be made, in each
    /// release's words (`misc/shmutils.cc`): before 2.12 `posix_fallocate` in
    /// `include/shm.h`; from 2.12 `failed to extend ... to N bytes` and `Error while
    /// creating shared memory segment ... (size N)`, with `, error: <strerror> (<errno>)`
    /// from 2.22.3; the source lines of 2.12-2.21, 2.22-2.28, 2.29.0-2.29.6 and 2.29.7,
    /// and from 2.30 in `os/linux.cc` (`ncclOsShmOpen`; 2.30.3-2.30.6 and 2.30.7).
    fn shm_failure(&self, name: &str, size: u64, errno: c_int) -> Failure {
        let v = version();
        let why = strip_os(&std::io::Error::from_raw_os_error(errno));
        if v < (2, 12, 0) {
            super::warn(
                self.device,
                "include/shm.h:28",
                &format!("Call to posix_fallocate failed : {why}"),
            );
            return (
                SYSTEM_ERROR,
                format!("Error while creating shared memory segment {name} (size {size})"),
                "include/shm.h:48",
            );
        }
        let (tail, extend_at, create_at) = if v >= (2, 22, 3) {
            let (extend_at, create_at) = super::shm::shm_open_lines(v);
            (format!(", error: {why} ({errno})"), extend_at, create_at)
        } else {
            (String::new(), "misc/shmutils.cc:71", "misc/shmutils.cc:112")
        };
        super::warn(
            self.device,
            extend_at,
            &format!("Error: failed to extend {name} to {} bytes{tail}", size + 4),
        );
        (
            SYSTEM_ERROR,
            format!("Error while creating shared memory segment {name} (size {size}){tail}"),
            create_at,
        )
    }

    fn log_init(&self, what: &str) {
        let line = lines::init(
            version(),
            what,
            self as *const Comm as usize,
            self.rank,
            self.nranks,
            self.device,
            self.nvml,
            self.bus,
            self.hash,
        );
        log::info(log::INIT, self.device, &line);
    }
}

/// How NCCL 2.12-2.18 make a segment (`misc/shmutils.cc`): `ftruncate` to `bytes`,
/// which a full /dev/shm does not refuse (the file is sparse), then `mmap` and
/// `memset` to zero, whose first page /dev/shm cannot back kills the process with
/// SIGBUS, as it kills NCCL's. 0, or the errno of a call that failed.
fn extend_and_touch(f: &File, bytes: u64) -> c_int {
    let fd = f.as_raw_fd();
    // SAFETY: a valid descriptor, a fresh shared mapping of the file's `bytes`,
    // written within its length and unmapped before return.
    unsafe {
        if libc::ftruncate(fd, bytes as libc::off_t) != 0 {
            return std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
        }
        let len = bytes as usize;
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if ptr == libc::MAP_FAILED {
            return std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
        }
        std::ptr::write_bytes(ptr.cast::<u8>(), 0, len);
        libc::munmap(ptr, len);
    }
    0
}

/// A connection wait that stopped: a peer gone is NCCL's remote error; this
/// rank's own abort, an internal error.
fn failure_while_connecting(stop: Stop) -> Failure {
    stop_failure(stop).unwrap_or((
        INTERNAL_ERROR,
        "the communicator was aborted while connecting".into(),
        "transport.cc:200",
    ))
}

fn strip_os(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Six characters like mkstemp's, from a number.
fn seg_suffix(mut x: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    x ^= realtime_ns().rotate_left(17) ^ u64::from(std::process::id());
    (0..6)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                >> 7;
            c
        })
        .collect()
}
