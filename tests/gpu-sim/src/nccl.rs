//! NCCL's API: version, unique id, communicators in separate processes that meet at
//! a rendezvous, all-reduces enqueued on the simulated streams and computed exactly
//! across the processes (through a shared memory file, one chunk at a time), the
//! asynchronous error state, abort, and NCCL's error strings and log lines.

use std::ffi::{c_char, c_int, c_void};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::driver::{self, CUdeviceptr};
use crate::fault::{self, Fault};
use crate::log;
use crate::reduce;
use crate::rendezvous::{self, JoinError, ID_BYTES};
use crate::stream::{self, Op, Work};
use crate::topo::{self, Allowed, Topology, Transport};

pub type NcclResult = c_int;

pub const SUCCESS: c_int = 0;
pub const UNHANDLED_CUDA_ERROR: c_int = 1;
pub const SYSTEM_ERROR: c_int = 2;
pub const INVALID_ARGUMENT: c_int = 4;
pub const INVALID_USAGE: c_int = 5;
pub const REMOTE_ERROR: c_int = 6;
pub const IN_PROGRESS: c_int = 7;

/// The version this stand-in plays (`NCCL_BENCH_SIM_VERSION`, default 2.28.9).
pub fn version() -> (u32, u32, u32) {
    static V: OnceLock<(u32, u32, u32)> = OnceLock::new();
    *V.get_or_init(|| {
        let text = crate::env("NCCL_BENCH_SIM_VERSION").unwrap_or_else(|| "2.28.9".into());
        let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
        (
            parts.next().unwrap_or(2),
            parts.next().unwrap_or(28),
            parts.next().unwrap_or(9),
        )
    })
}

fn version_code() -> c_int {
    let (x, y, z) = version();
    let code = if (x, y) >= (2, 9) {
        x * 10000 + y * 100 + z
    } else {
        x * 1000 + y * 100 + z
    };
    code as c_int
}

/// The most ranks a simulated communicator takes.
const MAX_RANKS: usize = 64;
/// Bytes each rank stages per step of an all-reduce.
const CHUNK: usize = 1 << 20;

#[repr(C)]
struct Slot {
    pid: AtomicI32,
    device: AtomicI32,
    arrival: AtomicU64,
}

/// The start of the shared memory file.
#[repr(C)]
struct Header {
    count: AtomicU32,
    phase: AtomicU32,
    _pad: [u32; 2],
    slots: [Slot; MAX_RANKS],
}

const DATA_OFFSET: usize = std::mem::size_of::<Header>().div_ceil(4096) * 4096;

fn file_bytes(nranks: u32) -> usize {
    DATA_OFFSET + nranks as usize * CHUNK
}

struct Shared {
    base: *mut u8,
}

// SAFETY: the mapping is shared memory used through atomics (header) and under the
// barrier protocol (data); the pointer itself is immutable.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    fn header(&self) -> &Header {
        // SAFETY: the file starts with a Header, zero-filled (valid for atomics).
        unsafe { &*(self.base as *const Header) }
    }

    fn slot_ptr(&self, rank: usize) -> *mut u8 {
        // SAFETY: within the file of file_bytes(nranks) bytes for rank < nranks.
        unsafe { self.base.add(DATA_OFFSET + rank * CHUNK) }
    }
}

/// Why a wait among the ranks stopped. A peer's abort is not one: as with NCCL's
/// kernels, the others wait on until they abort too (or see the peer's process
/// gone).
enum Stop {
    Aborted,
    PeerDied(u32),
}

pub struct Comm {
    rank: u32,
    nranks: u32,
    device: usize,
    hash: u64,
    /// This communicator's own speed (`NCCL_BENCH_SIM_GROUP_JITTER`): a factor on
    /// every collective's modelled time, the same on all its ranks.
    speed: f64,
    /// `ncclCommGetAsyncError`'s state: success, in progress, or the error.
    state: AtomicI32,
    /// `NCCL_COMM_BLOCKING=0`: calls may return `ncclInProgress`.
    blocking: bool,
    /// Init completed: collectives may be issued.
    connected: AtomicBool,
    /// The first collective connects lazily (non-blocking: `ncclInProgress`).
    first_collective: AtomicBool,
    aborted: AtomicBool,
    seq: AtomicU64,
    shared: OnceLock<Shared>,
    topo: Topology,
    /// The ring's slowest step (latency, bandwidth); `None` on one rank.
    ring_link: OnceLock<Option<(f64, f64)>>,
    /// SHM segments, unlinked but held (their space stays taken) until the
    /// communicator goes, as NCCL's mappings do.
    segments: Mutex<Vec<std::fs::File>>,
}

static COMMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn comm_of(h: *mut c_void) -> Option<Arc<Comm>> {
    let comms = COMMS.lock().unwrap();
    // SAFETY: a live handle made by Arc::into_raw; one more reference is taken while
    // the list is locked, so a concurrent destroy cannot free it in between.
    comms.contains(&(h as usize)).then(|| unsafe {
        Arc::increment_strong_count(h as *const Comm);
        Arc::from_raw(h as *const Comm)
    })
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a futex wait on a word of shared memory (not FUTEX_PRIVATE: the
    // waiters are in other processes) with a relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: wakes every waiter on the word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Whether process `pid` has exited (a zombie counts: it runs no more).
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

impl Comm {
    fn shared(&self) -> &Shared {
        self.shared.get().expect("joined")
    }

    /// Waits until every rank has reached this point.
    fn barrier(&self) -> Result<(), Stop> {
        let h = self.shared().header();
        let phase = h.phase.load(Ordering::Acquire);
        if h.count.fetch_add(1, Ordering::AcqRel) + 1 == self.nranks {
            h.count.store(0, Ordering::Release);
            h.phase.fetch_add(1, Ordering::AcqRel);
            futex_wake_all(&h.phase);
            return Ok(());
        }
        let mut checked = Instant::now();
        loop {
            if h.phase.load(Ordering::Acquire) != phase {
                return Ok(());
            }
            if self.aborted.load(Ordering::Acquire) {
                return Err(Stop::Aborted);
            }
            if checked.elapsed() > Duration::from_millis(200) {
                checked = Instant::now();
                for r in 0..self.nranks as usize {
                    let pid = h.slots[r].pid.load(Ordering::Acquire);
                    if r != self.rank as usize && pid > 0 && process_gone(pid) {
                        return Err(Stop::PeerDied(r as u32));
                    }
                }
            }
            futex_wait(&h.phase, phase, Duration::from_millis(5));
        }
    }

    /// Records an asynchronous error with NCCL's WARN line.
    fn fail_async(&self, code: c_int, origin: &str, msg: &str) {
        log::warn(self.device, origin, msg);
        // The first error stays; it replaces success or an operation in progress.
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                matches!(s, SUCCESS | IN_PROGRESS).then_some(code)
            });
    }

    fn stopped(&self, stop: Stop) {
        match stop {
            Stop::Aborted => {}
            Stop::PeerDied(r) => self.fail_async(
                REMOTE_ERROR,
                "misc/socket.cc:49",
                &format!("socketProgress: Connection closed by remote peer (rank {r}, its process exited)"),
            ),
        }
    }

    fn device_of(&self, rank: usize) -> usize {
        self.shared().header().slots[rank]
            .device
            .load(Ordering::Acquire)
            .max(0) as usize
    }

    /// Joins the rendezvous and connects the ring, logging as NCCL does.
    fn connect(&self, id: &[u8; ID_BYTES]) -> Result<(), (c_int, String, &'static str)> {
        if fault::active(Fault::InitCuda, self.rank) {
            return Err((
                UNHANDLED_CUDA_ERROR,
                "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'"
                    .into(),
                "init.cc:1886",
            ));
        }
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
        let slot = &self.shared().header().slots[self.rank as usize];
        slot.pid.store(std::process::id() as i32, Ordering::Release);
        slot.device.store(self.device as i32, Ordering::Release);
        self.barrier().map_err(|_| {
            (
                REMOTE_ERROR,
                "Bootstrap : a peer left before the communicator was complete".to_string(),
                "bootstrap.cc:210",
            )
        })?;
        self.log_init("Init START");
        let allowed = Allowed::from_env();
        let ring: Vec<Transport> = (0..self.nranks as usize)
            .filter(|_| self.nranks > 1)
            .map(|r| {
                let next = (r + 1) % self.nranks as usize;
                topo::transport(self.topo, allowed, self.device_of(r), self.device_of(next))
            })
            .collect();
        if crate::env("NCCL_NET").is_some_and(|n| !n.eq_ignore_ascii_case("Socket")) {
            let net = crate::env("NCCL_NET").unwrap_or_default();
            return Err((
                INVALID_USAGE,
                format!("Error : network {net} not found."),
                "net.cc:734",
            ));
        }
        log::info(log::INIT | log::NET, self.device, "Using network Socket");
        let mine = ring.get(self.rank as usize).copied();
        if let Some(t) = mine {
            if t == Transport::Shm {
                self.create_shm_segments()?;
            }
            let next = (self.rank as usize + 1) % self.nranks as usize;
            for channel in 0..2 {
                self.log_channel(channel, next, t);
            }
            log::info(log::INIT, self.device, "Connected all rings");
        }
        let edges: Vec<(Transport, usize, usize)> = ring
            .iter()
            .enumerate()
            .map(|(r, &t)| {
                let next = (r + 1) % self.nranks as usize;
                (t, self.device_of(r), self.device_of(next))
            })
            .collect();
        let _ = self.ring_link.set(topo::ring_link(self.topo, &edges));
        // Every rank connected before any reports complete.
        self.barrier().map_err(|_| {
            (
                REMOTE_ERROR,
                "a peer failed while the ring was being connected".to_string(),
                "transport.cc:165",
            )
        })?;
        self.log_init("Init COMPLETE");
        Ok(())
    }

    /// The receive side of an SHM connection: one segment per channel in /dev/shm,
    /// sized as NCCL sizes them and extended with `posix_fallocate` (so a small
    /// /dev/shm fails as it does with NCCL), unlinked once made.
    fn create_shm_segments(&self) -> Result<(), (c_int, String, &'static str)> {
        let v = version();
        let size: u64 = if v < (2, 12, 0) { 9_637_888 } else { 5_967_872 };
        for channel in 0..2 {
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
                // SAFETY: a valid descriptor; extends the file to `size` + 4 bytes.
                Ok(f) => unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, (size + 4) as i64) },
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
            };
            let _ = std::fs::remove_file(&name);
            if let (0, Ok(f)) = (failed, file) {
                self.segments.lock().unwrap().push(f);
                continue;
            }
            let why = std::io::Error::from_raw_os_error(failed);
            if v < (2, 12, 0) {
                log::warn(
                    self.device,
                    "include/shm.h:28",
                    &format!("Call to posix_fallocate failed : {}", strip_os(&why)),
                );
                return Err((
                    SYSTEM_ERROR,
                    format!("Error while creating shared memory segment {name} (size {size})"),
                    "include/shm.h:48",
                ));
            }
            log::warn(
                self.device,
                "misc/shmutils.cc:71",
                &format!("Error: failed to extend {name} to {} bytes", size + 4),
            );
            let tail = if v >= (2, 23, 0) {
                format!(", error: {} ({failed})", strip_os(&why))
            } else {
                String::new()
            };
            return Err((
                SYSTEM_ERROR,
                format!("Error while creating shared memory segment {name} (size {size}){tail}"),
                "misc/shmutils.cc:112",
            ));
        }
        Ok(())
    }

    fn log_init(&self, what: &str) {
        let bus = driver::driver().gpus[self.device].bus;
        let msg = if version() >= (2, 18, 0) {
            format!(
                "ncclCommInitRank comm {:p} rank {} nranks {} cudaDev {} nvmlDev {} busId {:x}000 commId {:#x} - {what}",
                self as *const Comm, self.rank, self.nranks, self.device, self.device, bus, self.hash
            )
        } else {
            format!(
                "comm {:p} rank {} nranks {} cudaDev {} busId {:x}000 - {what}",
                self as *const Comm, self.rank, self.nranks, self.device, bus
            )
        };
        log::info(log::INIT, self.device, &msg);
    }

    fn log_channel(&self, channel: u64, next: usize, t: Transport) {
        let v = version();
        let peer = |rank: usize| {
            let dev = self.device_of(rank);
            if v < (2, 12, 0) {
                format!("{rank}[{:x}000]", driver::driver().gpus[dev].bus)
            } else {
                format!("{rank}[{dev}]")
            }
        };
        let id = if v < (2, 12, 0) {
            format!("{channel:02}")
        } else {
            format!("{channel:02}/0")
        };
        let (a, b) = (peer(self.rank as usize), peer(next));
        let lines: Vec<String> = match t {
            Transport::P2p if v >= (2, 19, 0) => vec![format!("via P2P/CUMEM")],
            Transport::P2p => vec![format!("via P2P/IPC")],
            Transport::Shm if v < (2, 8, 0) => vec![format!("via direct shared memory")],
            Transport::Shm => vec![format!("via SHM/direct/direct")],
            Transport::Net => vec![
                format!("[send] via NET/Socket/0"),
                format!("[receive] via NET/Socket/0"),
            ],
        };
        for how in lines {
            log::info(
                log::INIT,
                self.device,
                &format!("Channel {id} : {a} -> {b} {how}"),
            );
        }
    }
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
    x ^= crate::realtime_ns().rotate_left(17) ^ u64::from(std::process::id());
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

/// An all-reduce on a stream (or in a graph: each launch runs it again).
struct AllReduce {
    comm: Arc<Comm>,
    send: CUdeviceptr,
    recv: CUdeviceptr,
    bytes: usize,
    dtype: i32,
    op: i32,
}

/// `NCCL_BENCH_SIM_GROUP_JITTER=s`: each communicator (one process group of a sweep)
/// runs at its own speed, exp(s z) for a standard normal z drawn from its id, as fresh
/// processes on real hardware land on other cores, pages, clocks and links. Every rank
/// of the communicator draws the same z (from the id they share). 1 (no spread) by
/// default and where `s` is not a positive number.
fn group_speed(hash: u64) -> f64 {
    let spread = crate::env("NCCL_BENCH_SIM_GROUP_JITTER")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0);
    spread.map_or(1.0, |spread| speed_of(hash, spread))
}

/// exp(spread z), z a standard normal drawn from `hash`.
pub(crate) fn speed_of(hash: u64, spread: f64) -> f64 {
    let uniform = |salt: u64| {
        let mut x = hash ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 31;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 29;
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    // Box-Muller: a standard normal from two uniforms in (0, 1).
    let z = (-2.0 * uniform(1).ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform(2)).cos();
    (spread * z).exp()
}

/// A spread of +-1% on modelled times, the same on every rank for one collective.
fn jitter(hash: u64, seq: u64) -> f64 {
    let mut x = hash ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    1.0 + ((x % 2001) as f64 - 1000.0) / 100_000.0
}

impl Work for AllReduce {
    fn run(&self, start: u64) -> u64 {
        let c = &self.comm;
        let state = c.state.load(Ordering::Acquire);
        if c.aborted.load(Ordering::Acquire) || !matches!(state, SUCCESS | IN_PROGRESS) {
            return start;
        }
        // The buffers were checked at enqueue; a free since (or a graph replayed
        // after one) is the device's illegal address, as on a GPU.
        let gone = [self.send, self.recv]
            .iter()
            .any(|&p| self.bytes > 0 && driver::check_range(p, self.bytes).is_err());
        if gone {
            driver::fault_device(c.device, driver::code::ILLEGAL_ADDRESS);
            return start;
        }
        let seq = c.seq.fetch_add(1, Ordering::AcqRel);
        match fault::collective(c.rank, seq) {
            Some(Fault::Hang) => {
                while !c.aborted.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                return start;
            }
            Some(Fault::RemoteError) => {
                c.fail_async(
                    REMOTE_ERROR,
                    "misc/socket.cc:49",
                    "socketProgress: Connection closed by remote peer (simulated network failure)",
                );
                return start;
            }
            Some(Fault::Crash) => {
                log::warn(
                    c.device,
                    "enqueue.cc:1500",
                    "simulated crash of this rank's process",
                );
                std::process::abort();
            }
            _ => {}
        }
        let h = c.shared().header();
        h.slots[c.rank as usize]
            .arrival
            .store(start, Ordering::Release);
        let mut latest = start;
        let mut offset = 0;
        let width = reduce::size(self.dtype).unwrap_or(1);
        let step = CHUNK / width * width;
        loop {
            let len = step.min(self.bytes - offset);
            // SAFETY: send and recv hold `bytes` (checked at enqueue; the caller keeps
            // them alive until the stream is synchronized); slots hold CHUNK bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (self.send as usize + offset) as *const u8,
                    c.shared().slot_ptr(c.rank as usize),
                    len,
                );
            }
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return start;
            }
            if offset == 0 {
                latest = (0..c.nranks as usize)
                    .map(|r| h.slots[r].arrival.load(Ordering::Acquire))
                    .max()
                    .unwrap_or(start);
            }
            // SAFETY: between the two barriers no rank writes a slot; recv holds
            // offset + len bytes.
            unsafe {
                // NCCL's order of combining ranks differs by algorithm and chunk:
                // start at another rank for every chunk of every collective.
                let n = c.nranks as usize;
                let first = (seq as usize + offset / step) % n;
                let inputs: Vec<&[u8]> = (0..n)
                    .map(|i| std::slice::from_raw_parts(c.shared().slot_ptr((first + i) % n), len))
                    .collect();
                let out =
                    std::slice::from_raw_parts_mut((self.recv as usize + offset) as *mut u8, len);
                reduce::reduce(self.dtype, self.op, &inputs, out);
            }
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return start;
            }
            offset += len;
            if offset >= self.bytes {
                break;
            }
        }
        if fault::collective(c.rank, seq) == Some(Fault::Wrong) && self.bytes > 0 {
            // SAFETY: recv holds at least one byte.
            unsafe { *(self.recv as *mut u8) ^= 0x5a };
        }
        let cost = topo::all_reduce_ns(
            c.ring_link.get().copied().flatten(),
            self.bytes as u64,
            c.nranks,
        );
        latest + (cost * jitter(c.hash, seq) * c.speed) as u64
    }
}

// ---- the C API -------------------------------------------------------------------

fn out<T>(p: *mut T, v: T) -> NcclResult {
    if p.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: a non-null out-parameter from the caller.
    unsafe { p.write(v) };
    SUCCESS
}

#[no_mangle]
pub extern "C" fn ncclGetVersion(v: *mut c_int) -> NcclResult {
    out(v, version_code())
}

/// `ncclUniqueId`: 128 bytes, passed by value as a C struct.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    internal: [u8; ID_BYTES],
}

#[no_mangle]
pub extern "C" fn ncclGetUniqueId(id: *mut UniqueId) -> NcclResult {
    match rendezvous::unique_id(file_bytes) {
        Ok(internal) => out(id, UniqueId { internal }),
        Err(e) => {
            log::warn(
                0,
                "bootstrap.cc:85",
                &format!("Bootstrap : cannot listen: {e}"),
            );
            SYSTEM_ERROR
        }
    }
}

fn log_banner(device: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let (x, y, z) = version();
        log::version(device, &format!("NCCL version {x}.{y}.{z}+cuda12.4"));
        let mut driver_version = 0;
        driver::cuDriverGetVersion(&mut driver_version);
        log::info(
            log::INIT,
            device,
            &format!("cudaDriverVersion {driver_version}"),
        );
        for name in [
            "NCCL_SHM_DISABLE",
            "NCCL_P2P_DISABLE",
            "NCCL_P2P_LEVEL",
            "NCCL_NET",
            "NCCL_COMM_BLOCKING",
        ] {
            if let Some(v) = crate::env(name) {
                log::info(
                    log::ENV,
                    device,
                    &format!("{name} set by environment to {v}."),
                );
            }
        }
    });
}

#[no_mangle]
pub extern "C" fn ncclCommInitRank(
    comm: *mut *mut c_void,
    nranks: c_int,
    id: UniqueId,
    rank: c_int,
) -> NcclResult {
    let id = id.internal;
    if comm.is_null() {
        return INVALID_ARGUMENT;
    }
    // Null until a communicator exists.
    out(comm, std::ptr::null_mut());
    // NCCL uses the calling thread's current device (device 0 without a context).
    let device = driver::current().map(|c| c.device).unwrap_or(0);
    log_banner(device);
    if nranks < 1 || rank < 0 || rank >= nranks {
        log::warn(
            device,
            "init.cc:1740",
            &format!("Invalid rank requested : {rank}/{nranks}"),
        );
        return INVALID_ARGUMENT;
    }
    if nranks as usize > MAX_RANKS {
        log::warn(
            device,
            "init.cc:1740",
            &format!("the simulated NCCL takes at most {MAX_RANKS} ranks, not {nranks}"),
        );
        return INVALID_USAGE;
    }
    let c = Arc::new(Comm {
        rank: rank as u32,
        nranks: nranks as u32,
        device,
        hash: rendezvous::comm_hash(&id),
        speed: group_speed(rendezvous::comm_hash(&id)),
        state: AtomicI32::new(IN_PROGRESS),
        blocking: crate::env("NCCL_COMM_BLOCKING").is_none_or(|v| v != "0"),
        connected: AtomicBool::new(false),
        first_collective: AtomicBool::new(true),
        aborted: AtomicBool::new(false),
        seq: AtomicU64::new(0),
        shared: OnceLock::new(),
        topo: driver::driver().topo,
        ring_link: OnceLock::new(),
        segments: Mutex::new(Vec::new()),
    });
    let finish = move |c: &Comm| {
        let code = match c.connect(&id) {
            Ok(()) => {
                c.connected.store(true, Ordering::Release);
                SUCCESS
            }
            Err((code, msg, origin)) => {
                log::warn(c.device, origin, &msg);
                code
            }
        };
        c.state.store(code, Ordering::Release);
        code
    };
    let handle = Arc::into_raw(c.clone()) as usize;
    COMMS.lock().unwrap().push(handle);
    let blocking = c.blocking;
    if blocking {
        let code = finish(&c);
        if code != SUCCESS {
            COMMS.lock().unwrap().retain(|&h| h != handle);
            // SAFETY: the reference made above, released once; no handle escapes.
            drop(unsafe { Arc::from_raw(handle as *const Comm) });
            return code;
        }
    } else {
        let worker = c.clone();
        std::thread::spawn(move || finish(&worker));
    }
    out(comm, handle as *mut c_void);
    if blocking {
        SUCCESS
    } else {
        IN_PROGRESS
    }
}

#[no_mangle]
pub extern "C" fn ncclAllReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let Some(c) = comm_of(comm) else {
        log::warn(0, "enqueue.cc:1946", "AllReduce : invalid comm");
        return INVALID_ARGUMENT;
    };
    match c.state.load(Ordering::Acquire) {
        // Init, or the previous call, still in progress: NCCL's rule is to wait.
        IN_PROGRESS => return INVALID_USAGE,
        SUCCESS if c.connected.load(Ordering::Acquire) => {}
        SUCCESS => return INVALID_USAGE,
        e => return e,
    }
    let Some(width) = reduce::size(dtype) else {
        log::warn(
            c.device,
            "enqueue.cc:1946",
            &format!("AllReduce : invalid type {dtype}"),
        );
        return INVALID_ARGUMENT;
    };
    if !reduce::known_op(op) {
        log::warn(
            c.device,
            "enqueue.cc:1946",
            &format!("AllReduce : invalid reduction operation {op}"),
        );
        return INVALID_ARGUMENT;
    }
    let bytes = count * width;
    for (what, ptr) in [("sendbuff", send as u64), ("recvbuff", recv as u64)] {
        if bytes > 0 && driver::check_range(ptr, bytes).is_err() {
            log::warn(
                c.device,
                "enqueue.cc:1946",
                &format!("AllReduce : invalid {what} pointer {ptr:#x}"),
            );
            return INVALID_ARGUMENT;
        }
    }
    let work = AllReduce {
        comm: c.clone(),
        send: send as u64,
        recv: recv as u64,
        bytes,
        dtype,
        op,
    };
    match stream::submit(stream, Op::Work(Arc::new(work))) {
        // The first collective of a non-blocking communicator connects in the
        // background (NCCL 2.22+ connects lazily): ncclInProgress until it is done.
        Ok(()) if !c.blocking && c.first_collective.swap(false, Ordering::AcqRel) => {
            in_progress_for(&c, Duration::from_millis(2))
        }
        Ok(()) => SUCCESS,
        Err(e) => {
            log::warn(
                c.device,
                "enqueue.cc:1500",
                &format!("Cuda failure {e} '{}'", driver::error_text(e)),
            );
            UNHANDLED_CUDA_ERROR
        }
    }
}

#[no_mangle]
pub extern "C" fn ncclCommGetAsyncError(comm: *mut c_void, err: *mut NcclResult) -> NcclResult {
    match comm_of(comm) {
        Some(c) => out(err, c.state.load(Ordering::Acquire)),
        None => INVALID_ARGUMENT,
    }
}

/// Removes a communicator handle; its memory goes when the last queued work does.
fn release(comm: *mut c_void) -> Option<Arc<Comm>> {
    let mut comms = COMMS.lock().unwrap();
    let i = comms.iter().position(|&h| h == comm as usize)?;
    comms.remove(i);
    // SAFETY: the reference made by ncclCommInitRank, released once.
    Some(unsafe { Arc::from_raw(comm as *const Comm) })
}

#[no_mangle]
pub extern "C" fn ncclCommAbort(comm: *mut c_void) -> NcclResult {
    let Some(c) = release(comm) else {
        return if comm.is_null() {
            SUCCESS
        } else {
            INVALID_ARGUMENT
        };
    };
    c.aborted.store(true, Ordering::Release);
    // Wakes this process's stream thread if it waits among the ranks; the peers
    // are not told (NCCL's kernels on the other GPUs spin until their own abort).
    if let Some(shared) = c.shared.get() {
        futex_wake_all(&shared.header().phase);
    }
    SUCCESS
}

/// Puts a non-blocking communicator in progress for `how_long`, then back to
/// success (unless an error came meanwhile); returns `ncclInProgress`.
fn in_progress_for(c: &Arc<Comm>, how_long: Duration) -> NcclResult {
    if c.state
        .compare_exchange(SUCCESS, IN_PROGRESS, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return c.state.load(Ordering::Acquire);
    }
    let c = c.clone();
    std::thread::spawn(move || {
        std::thread::sleep(how_long);
        let _ = c
            .state
            .compare_exchange(IN_PROGRESS, SUCCESS, Ordering::AcqRel, Ordering::Acquire);
    });
    IN_PROGRESS
}

#[no_mangle]
pub extern "C" fn ncclCommFinalize(comm: *mut c_void) -> NcclResult {
    let Some(c) = comm_of(comm) else {
        return INVALID_ARGUMENT;
    };
    match c.state.load(Ordering::Acquire) {
        IN_PROGRESS => INVALID_USAGE,
        // Non-blocking: finalize flushes in the background.
        SUCCESS if !c.blocking => in_progress_for(&c, Duration::from_millis(2)),
        SUCCESS => SUCCESS,
        e => e,
    }
}

#[no_mangle]
pub extern "C" fn ncclCommDestroy(comm: *mut c_void) -> NcclResult {
    match release(comm) {
        Some(_) => SUCCESS,
        None if comm.is_null() => SUCCESS,
        None => INVALID_ARGUMENT,
    }
}

#[no_mangle]
pub extern "C" fn ncclGetErrorString(code: NcclResult) -> *const c_char {
    let text: &'static [u8] = match code {
        0 => b"no error\0",
        1 => b"unhandled cuda error (run with NCCL_DEBUG=INFO for details)\0",
        2 => b"unhandled system error (run with NCCL_DEBUG=INFO for details)\0",
        3 => b"internal error - please report this issue to the NCCL developers\0",
        4 => b"invalid argument (run with NCCL_DEBUG=WARN for details)\0",
        5 => b"invalid usage (run with NCCL_DEBUG=WARN for details)\0",
        6 => b"remote process exited or there was a network error\0",
        7 => b"NCCL operation in progress\0",
        _ => b"unknown result code\0",
    };
    text.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn ncclGetLastError(_comm: *mut c_void) -> *const c_char {
    log::last_error()
}
