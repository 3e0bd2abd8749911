//! The host backend: a CPU stand-in for NCCL that measures real inter-process
//! transports. Ranks are processes; the ring all-reduce runs over shared-memory
//! segments in the shm directory (NCCL's SHM transport) or, when the configuration
//! sets `NCCL_SHM_DISABLE=1`, over TCP on loopback (NCCL's socket transport). These
//! are not NCCL numbers, and everything that reports them says so.

pub mod bootstrap;
pub mod ceiling;
pub mod collectives;
pub mod ring;
pub mod shm;
mod slowdown;
pub mod stream;
pub mod tcp;
pub mod wait;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use self::bootstrap::{connect_with_retry, Bootstrap, BootstrapRoot, UniqueId};
use self::ring::{Receiver, Ring, Sender, StoreChoice, Stores};
use self::shm::{segment_bytes, Segment, ShmReceiver, ShmSender, SLOTS};
use self::slowdown::Slowdown;
use self::tcp::{TcpReceiver, TcpSender};
use self::wait::WaitPolicy;
use super::buffer::AlignedBuf;
use super::{Backend, Communicator};
use crate::backend::Job;
use crate::config::transport::env_truthy;
use crate::ops::collective::{Collective, Counts};
use crate::ops::pattern::{CheckReport, Pattern};
use crate::ops::{DataType, ReduceOp};

/// Said wherever host numbers appear.
pub const BANNER: &str = "host backend (CPU), not NCCL";

/// NCCL's default NCCL_BUFFSIZE (Simple protocol buffer per channel and peer).
pub const DEFAULT_BUFFSIZE: usize = 4 << 20;

/// Forces the way SHM slots are written (`ordinary`, `streaming`; `auto` measures).
pub const STORES_ENV: &str = "NCCL_BENCH_HOST_STORES";

/// Transport names as NCCL logs them.
pub const TRANSPORT_SHM: &str = "SHM";
pub const TRANSPORT_SOCKET: &str = "NET/Socket";

/// How a host communicator is built.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub shm_dir: PathBuf,
    /// Segment file names start with this; the orchestrator removes leftovers by it.
    pub segment_prefix: String,
    pub use_shm: bool,
    /// FIFO size per connection (NCCL_BUFFSIZE).
    pub buffsize: usize,
    pub max_bytes: usize,
    pub dtype: DataType,
    pub op: ReduceOp,
    pub init_timeout: Duration,
    /// Test-only fault: flip one output element after every all-reduce.
    pub corrupt: bool,
    /// Test-only fault: hang once the receive segment exists, before its unlink.
    pub hang_with_segment: bool,
    /// Test-only fault: every timed all-reduce takes this fraction longer (the rank
    /// spins for it in each timed step), a known slowdown for the statistics to find.
    pub slowdown: f64,
    /// Pin each rank to its own CPU when there are enough (processes, not threads).
    pub pin_cpus: bool,
    /// Pin this rank to this CPU (its index among the CPUs the process may use)
    /// instead: the core pairs of `sweep --pairs`.
    pub cpu: Option<usize>,
    /// The address this rank listens on (bootstrap and NET/Socket): loopback, or the
    /// interface `NCCL_SOCKET_IFNAME` selects, as NCCL picks it, for ranks on
    /// several machines. Ranks with the same address share a machine and use SHM.
    pub bind: IpAddr,
    /// How SHM slots are written: measured per communicator, or as
    /// `NCCL_BENCH_HOST_STORES=ordinary|streaming` says.
    pub stores: Stores,
    /// The collective every timed iteration runs, and its root where it has one.
    pub collective: Collective,
    pub root: u32,
}

impl HostOptions {
    /// Reads the NCCL variables the host backend honours from the environment:
    /// `NCCL_SHM_DISABLE`, `NCCL_BUFFSIZE`, `NCCL_SOCKET_IFNAME` (and
    /// `NCCL_SOCKET_FAMILY`) and `NCCL_NET` (only `Socket` exists here).
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<()> {
        self.use_shm = !env("NCCL_SHM_DISABLE").is_some_and(|v| env_truthy(&v));
        if let Some(v) = env("NCCL_BUFFSIZE") {
            let size: usize = v
                .trim()
                .parse()
                .map_err(|_| anyhow!("NCCL_BUFFSIZE='{v}' is not a number of bytes"))?;
            if size < 64 * SLOTS as usize {
                bail!(
                    "NCCL_BUFFSIZE={size} is too small (at least {} bytes)",
                    64 * SLOTS
                );
            }
            self.buffsize = size;
        }
        if let Some(ifname) = env("NCCL_SOCKET_IFNAME").filter(|v| !v.trim().is_empty()) {
            self.bind = socket_address(&ifname, env("NCCL_SOCKET_FAMILY").as_deref())?;
        }
        if let Some(v) = env(STORES_ENV) {
            self.stores = match v.trim() {
                "" | "auto" => Stores::Measured,
                "ordinary" => Stores::Ordinary,
                "streaming" => Stores::Streaming,
                other => bail!("{STORES_ENV}='{other}' is not one of auto, ordinary, streaming"),
            };
        }
        if let Some(net) = env("NCCL_NET") {
            if !net.trim().eq_ignore_ascii_case("socket") {
                bail!("{BANNER}: NCCL_NET={net} requested, but the only network here is Socket (NCCL fails the same way: network {net} not found)");
            }
        }
        Ok(())
    }

    /// Defaults, for checking a configuration's environment before a run.
    pub fn for_validation() -> HostOptions {
        HostOptions {
            shm_dir: PathBuf::from("/dev/shm"),
            segment_prefix: String::new(),
            use_shm: true,
            buffsize: DEFAULT_BUFFSIZE,
            max_bytes: 0,
            dtype: DataType::Float,
            op: ReduceOp::Sum,
            init_timeout: Duration::from_secs(1),
            corrupt: false,
            hang_with_segment: false,
            slowdown: 0.0,
            pin_cpus: false,
            cpu: None,
            bind: LOOPBACK,
            stores: Stores::Measured,
            collective: Collective::AllReduce,
            root: 0,
        }
    }

    fn slot_bytes(&self) -> usize {
        (self.buffsize / SLOTS as usize) / 64 * 64
    }

    /// Bytes of each rank's receive segment in `shm_dir`.
    pub fn segment_bytes(&self) -> usize {
        segment_bytes(self.slot_bytes())
    }
}

/// Factory for host communicators.
pub struct HostBackend {
    options: HostOptions,
    root: Option<BootstrapRoot>,
}

impl HostBackend {
    pub fn new(options: HostOptions) -> HostBackend {
        HostBackend {
            options,
            root: None,
        }
    }
}

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The first address of the first interface NCCL would pick for `NCCL_SOCKET_IFNAME`
/// (prefixes, `^` to exclude, `=` for exact names), IPv4 first unless
/// `NCCL_SOCKET_FAMILY=AF_INET6`; no match fails as NCCL's bootstrap does.
fn socket_address(ifname: &str, family: Option<&str>) -> Result<IpAddr> {
    use crate::machine::net::interfaces;
    use crate::nccl::net::selection;
    let (ifaces, _) = interfaces(&crate::machine::Root::this_machine());
    let (chosen, _) = selection(&ifaces, Some(ifname), family);
    let want_v6 = family == Some("AF_INET6");
    chosen
        .iter()
        .flat_map(|i| i.addrs.iter())
        .find(|a| a.is_ipv6() == want_v6)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = ifaces.iter().map(|i| i.name.as_str()).collect();
            anyhow!(
                "{BANNER}: NCCL_SOCKET_IFNAME={ifname} selects no interface that is up with an address (interfaces: {}); NCCL fails the same way (no socket interface found)",
                names.join(", ")
            )
        })
}

impl Backend for HostBackend {
    fn unique_id(&mut self) -> Result<String> {
        let root = BootstrapRoot::new(self.options.bind)?;
        let id = root.id.encode();
        self.root = Some(root);
        Ok(id)
    }

    fn init(&mut self, id: &str, rank: u32, nranks: u32) -> Result<Box<dyn Communicator>> {
        let id = UniqueId::decode(id)?;
        let comm = HostComm::init(&self.options, &id, self.root.take(), rank, nranks)?;
        Ok(Box::new(comm))
    }
}

/// One rank of a host communicator.
pub struct HostComm {
    /// ("Ring", its store mode), or ("local", "") on one rank.
    algorithm: (String, String),
    ring: Option<Ring>,
    input: AlignedBuf,
    output: AlignedBuf,
    job: Job,
    rank: u32,
    nranks: u32,
    transport: &'static str,
    corrupt: bool,
    slowdown: Option<Slowdown>,
    detail: String,
}

impl HostComm {
    fn init(
        opts: &HostOptions,
        id: &UniqueId,
        root: Option<BootstrapRoot>,
        rank: u32,
        nranks: u32,
    ) -> Result<HostComm> {
        let deadline = Instant::now() + opts.init_timeout;
        // The data listener exists before the bootstrap publishes its address; which
        // links use it is known only after the exchange (a peer on another address).
        let listener = if nranks == 1 {
            None
        } else {
            Some(
                TcpListener::bind((opts.bind, 0))
                    .context("host backend: cannot listen for NET/Socket")?,
            )
        };
        let my_address = match &listener {
            Some(l) => l.local_addr()?,
            None => SocketAddr::new(opts.bind, 0),
        };
        let mut bootstrap = Bootstrap::init(id, root, rank, nranks, my_address, opts.init_timeout)?;
        let next = (rank + 1) % nranks;
        let prev = (rank + nranks - 1) % nranks;
        // As NCCL: SHM between ranks of one machine (same address), the network
        // between machines.
        let host_of = |r: u32| bootstrap.addresses[(r % nranks) as usize].ip();
        let shm_out = opts.use_shm && host_of(next) == host_of(rank);
        let shm_in = opts.use_shm && host_of(prev) == host_of(rank);
        // Every rank sees the same addresses, so all agree on whether links mix.
        let mixed = opts.use_shm && (0..nranks).any(|r| host_of(r) != host_of(r + 1));
        // Cores are shared by the ranks of this machine only: its rank count decides
        // the wait policy, and a rank's index among them its core.
        let local: Vec<u32> = (0..nranks)
            .filter(|&r| host_of(r) == host_of(rank))
            .collect();
        let local_ranks = local.len() as u32;
        let local_index = local.iter().position(|&r| r == rank).unwrap_or(0) as u32;
        let policy = WaitPolicy::for_ranks(local_ranks);
        let cpu = if let Some(index) = opts.cpu {
            wait::pin_to(index)
        } else if opts.pin_cpus {
            wait::pin_rank(local_index, local_ranks)
        } else {
            None
        };
        let mut stores = None;
        let (ring, transport) = if nranks == 1 {
            (None, "local")
        } else if !opts.use_shm {
            let listener =
                listener.ok_or_else(|| anyhow!("host backend: no NET/Socket listener"))?;
            let (out, inc) = connect_ring(&listener, &bootstrap, id, rank, nranks, deadline)?;
            let slice = tcp::slice_bytes(opts.slot_bytes(), &out, &inc);
            let ring = Ring {
                rank: rank as usize,
                nranks: nranks as usize,
                tx: Sender::Tcp(TcpSender::new(out, slice)?),
                rx: Receiver::Tcp(TcpReceiver::new(inc, slice)?),
                slice_bytes: slice,
                streaming: false,
                scratch: Default::default(),
            };
            (Some(ring), TRANSPORT_SOCKET)
        } else {
            let slot = opts.slot_bytes();
            let len = segment_bytes(slot);
            let slice = if mixed {
                tcp::mixed_slice_bytes(slot)
            } else {
                slot
            };
            let path = |r: u32| opts.shm_dir.join(format!("{}-r{r}", opts.segment_prefix));
            // Every rank takes part in both barriers, whatever its own links are.
            let mine = shm_in
                .then(|| Segment::create(&path(rank), len))
                .transpose()?;
            if opts.hang_with_segment && mine.is_some() {
                // Test-only fault: the segment exists and nobody will unlink it.
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            bootstrap.barrier()?;
            let theirs = shm_out
                .then(|| Segment::open(&path(next), len))
                .transpose()?;
            bootstrap.barrier()?;
            let tx = match theirs {
                Some(seg) => Sender::Shm(ShmSender::new(seg, slot, policy)),
                None => {
                    let out = connect_next(&bootstrap, id, rank, nranks, deadline)?;
                    Sender::Tcp(TcpSender::new(out, slice)?)
                }
            };
            let rx = match mine {
                Some(seg) => {
                    let mut rx = ShmReceiver::new(seg, slot, policy);
                    // Every peer has mapped it: the file is no longer needed.
                    rx.segment_mut().unlink();
                    Receiver::Shm(rx)
                }
                None => {
                    let listener = listener
                        .as_ref()
                        .ok_or_else(|| anyhow!("host backend: no NET/Socket listener"))?;
                    let inc = accept_from(listener, id.magic ^ prev as u64, deadline)?;
                    inc.set_nodelay(true)?;
                    Receiver::Tcp(TcpReceiver::new(inc, slice)?)
                }
            };
            let mut ring = Ring {
                rank: rank as usize,
                nranks: nranks as usize,
                tx,
                rx,
                slice_bytes: slice,
                streaming: false,
                scratch: Default::default(),
            };
            // A collective: every rank of an SHM ring takes part, whatever its own
            // links and whatever it was told to use, so that ranks set up
            // differently cannot disagree on running it. A forced choice is then
            // this rank's own (the reader does not care how a slot was written).
            let measured = ring
                .choose_stores()
                .context("host backend: timing ordinary against streaming stores failed")?;
            stores = Some(match opts.stores {
                Stores::Measured => measured,
                forced => {
                    ring.streaming = forced == Stores::Streaming;
                    StoreChoice::forced(ring.streaming)
                }
            });
            // The transport of this rank's outgoing connection (one per rank).
            (
                Some(ring),
                if shm_out {
                    TRANSPORT_SHM
                } else {
                    TRANSPORT_SOCKET
                },
            )
        };
        // The protocol of this rank's outgoing connection: its store mode into SHM slots,
        // or a TCP stream.
        let algorithm = match (&ring, stores) {
            (None, _) => ("local".to_string(), String::new()),
            (Some(_), _) if transport == TRANSPORT_SOCKET => {
                ("Ring".to_string(), "socket stream".to_string())
            }
            (Some(_), Some(c)) if c.streaming => {
                ("Ring".to_string(), "streaming stores".to_string())
            }
            (Some(_), _) => ("Ring".to_string(), "ordinary stores".to_string()),
        };
        Ok(HostComm {
            algorithm,
            ring,
            input: AlignedBuf::new(opts.max_bytes)?,
            output: AlignedBuf::new(opts.max_bytes)?,
            job: Job {
                collective: opts.collective,
                root: opts.root,
                dtype: opts.dtype,
                op: opts.op,
            },
            rank,
            nranks,
            transport,
            corrupt: opts.corrupt,
            slowdown: Slowdown::new(opts.slowdown),
            detail: format!(
                "{transport}, {}{}",
                match cpu {
                    Some(cpu) => format!("pinned to CPU {cpu}"),
                    None if opts.pin_cpus => "not pinned (more ranks than CPUs)".to_string(),
                    None => "not pinned".to_string(),
                },
                stores.map(|c| format!(", {c}")).unwrap_or_default()
            ),
        })
    }
}

/// Connects to the next rank's NET/Socket listener and identifies this rank.
fn connect_next(
    bootstrap: &Bootstrap,
    id: &UniqueId,
    rank: u32,
    nranks: u32,
    deadline: Instant,
) -> Result<TcpStream> {
    let next = (rank + 1) % nranks;
    let mut out = connect_with_retry(bootstrap.addresses[next as usize], deadline)
        .context("host backend: NET/Socket connect to the next rank failed")?;
    std::io::Write::write_all(&mut out, &(id.magic ^ rank as u64).to_le_bytes())?;
    out.set_nodelay(true)?;
    Ok(out)
}

/// Both socket links of a rank: to the next rank and from the previous one.
fn connect_ring(
    listener: &TcpListener,
    bootstrap: &Bootstrap,
    id: &UniqueId,
    rank: u32,
    nranks: u32,
    deadline: Instant,
) -> Result<(TcpStream, TcpStream)> {
    let out = connect_next(bootstrap, id, rank, nranks, deadline)?;
    let prev = (rank + nranks - 1) % nranks;
    let inc = accept_from(listener, id.magic ^ prev as u64, deadline)?;
    inc.set_nodelay(true)?;
    Ok((out, inc))
}

/// Accepts the predecessor's data connection, identified by its first 8 bytes.
fn accept_from(listener: &TcpListener, token: u64, deadline: Instant) -> Result<TcpStream> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                let mut b = [0u8; 8];
                if std::io::Read::read_exact(&mut s, &mut b).is_ok()
                    && u64::from_le_bytes(b) == token
                {
                    s.set_read_timeout(None)?;
                    return Ok(s);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    bail!("host backend: the previous rank never connected over NET/Socket");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e).context("host backend: NET/Socket accept failed"),
        }
    }
}

impl HostComm {
    fn operate(&mut self, bytes: usize) -> Result<()> {
        let counts = self.counts(bytes);
        let input = self.input.bytes();
        let output = self.output.bytes_mut();
        if let Err(e) = collectives::run(self.ring.as_mut(), self.job, counts, input, output) {
            if let Some(ring) = &self.ring {
                ring.abort();
            }
            return Err(e);
        }
        if self.corrupt && counts.recv > 0 {
            output[0] ^= 0x40;
        }
        Ok(())
    }

    /// nccl-tests' element counts of a case of `bytes`.
    fn counts(&self, bytes: usize) -> Counts {
        self.job.counts(bytes, self.nranks)
    }

    fn check_len(&self, bytes: usize) -> Result<()> {
        super::check_message(bytes, self.input.len(), self.job.dtype)
    }
}

impl Communicator for HostComm {
    fn transports(&self) -> String {
        self.transport.to_string()
    }

    fn detail(&self) -> String {
        self.detail.clone()
    }

    fn algorithm(&self) -> Option<(String, String)> {
        Some(self.algorithm.clone())
    }

    fn fill_input(&mut self, pattern: &Pattern, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        let send = self.counts(bytes).send as usize * self.job.dtype.size();
        pattern.fill(&mut self.input.bytes_mut()[..send]);
        Ok(())
    }

    fn poison_output(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.output.bytes_mut()[..bytes].fill(0xff);
        Ok(())
    }

    fn check_output(&mut self, pattern: &Pattern, bytes: usize) -> Result<CheckReport> {
        self.check_len(bytes)?;
        let out = self.output.bytes();
        Ok(self
            .job
            .check(pattern, (self.rank, self.nranks), bytes, out))
    }

    fn timed_batch(&mut self, bytes: usize, every: usize, durations: &mut [u64]) -> Result<()> {
        self.check_len(bytes)?;
        let first = Instant::now();
        self.operate(bytes)?;
        let mut last = Instant::now();
        // A slowdown spins before each step's clock read, for its fraction of the
        // step before (of the untimed all-reduce, first): a short spin adds no clock
        // read of its own (`slowdown`).
        let mut per_op = last.duration_since(first);
        for step in durations.chunks_mut(every.max(1)) {
            for _ in 0..step.len() {
                self.operate(bytes)?;
            }
            let spun = match &self.slowdown {
                Some(s) => s.spin(per_op * step.len() as u32),
                None => Duration::ZERO,
            };
            let now = Instant::now();
            let took = now.duration_since(last);
            per_op = took.saturating_sub(spun) / step.len() as u32;
            crate::backend::spread(took.as_nanos() as u64, step);
            last = now;
        }
        Ok(())
    }

    fn run_once(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.operate(bytes)
    }
}

#[cfg(test)]
mod tests;
