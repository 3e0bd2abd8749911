//! A communicator of the simulated NCCL: one rank's view, the handles the C API
//! gives out, and how its ranks wait for each other (a barrier in the shared file
//! that notices a peer that died, or, while connecting, one that failed or
//! aborted).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::setup::{Connected, Plan};
use super::shared::{futex_wait, futex_wake_all, process_gone, Shared};
use super::{IN_PROGRESS, REMOTE_ERROR, SUCCESS};
use crate::driver;
use crate::topo::Topology;

pub struct Comm {
    pub rank: u32,
    pub nranks: u32,
    /// The CUDA ordinal of its GPU in this process (the `[dev]` of log lines).
    pub device: usize,
    /// The GPU's machine index (NCCL's `nvmlDev`).
    pub nvml: usize,
    pub bus: u32,
    pub hash: u64,
    /// This communicator's own speed (`NCCL_BENCH_SIM_GROUP_JITTER`): a factor on
    /// every collective's modelled time, the same on all its ranks.
    pub speed: f64,
    /// `ncclCommGetAsyncError`'s state: success, in progress, or the error.
    pub state: AtomicI32,
    /// `NCCL_COMM_BLOCKING=0`: calls may return `ncclInProgress`.
    pub blocking: bool,
    /// Init completed: collectives may be issued.
    pub ready: AtomicBool,
    pub aborted: AtomicBool,
    pub seq: AtomicU64,
    pub shared: OnceLock<Shared>,
    pub topo: Topology,
    /// What init decided: transports, channels, NVLS, when to connect.
    pub plan: OnceLock<Plan>,
    /// What is connected so far, and what it holds.
    pub connected: Mutex<Connected>,
}

/// Why a wait among the ranks stopped. A peer's abort stops a wait only while
/// connecting (its sockets close): as with NCCL's kernels, ranks in a collective
/// wait on until they abort too (or see the peer's process gone).
pub enum Stop {
    Aborted,
    PeerDied(u32),
    PeerLeft(u32),
}

/// A failure to report: (NCCL's result code, its WARN text, the source line).
pub type Failure = (c_int, String, &'static str);

static COMMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Registers a communicator; its handle.
pub fn register(c: &Arc<Comm>) -> usize {
    let handle = Arc::into_raw(c.clone()) as usize;
    COMMS.lock().unwrap().push(handle);
    handle
}

/// The communicator behind a handle, if it is live.
pub fn comm_of(h: *mut c_void) -> Option<Arc<Comm>> {
    let comms = COMMS.lock().unwrap();
    // SAFETY: a live handle made by Arc::into_raw; one more reference is taken while
    // the list is locked, so a concurrent destroy cannot free it in between.
    comms.contains(&(h as usize)).then(|| unsafe {
        Arc::increment_strong_count(h as *const Comm);
        Arc::from_raw(h as *const Comm)
    })
}

/// Removes a communicator handle; its memory goes when the last queued work does.
pub fn release(comm: *mut c_void) -> Option<Arc<Comm>> {
    let mut comms = COMMS.lock().unwrap();
    let i = comms.iter().position(|&h| h == comm as usize)?;
    comms.remove(i);
    // SAFETY: the reference made by `register`, released once.
    Some(unsafe { Arc::from_raw(comm as *const Comm) })
}

impl Comm {
    pub fn shared(&self) -> &Shared {
        self.shared.get().expect("joined")
    }

    pub fn plan(&self) -> &Plan {
        self.plan.get().expect("planned at init")
    }

    /// Waits until every rank has reached this point of a collective.
    pub fn barrier(&self) -> Result<(), Stop> {
        self.wait_all(false)
    }

    /// Waits until every rank has reached this point of setting up connections: a
    /// peer that failed or aborted meanwhile fails the wait.
    pub fn connect_barrier(&self) -> Result<(), Stop> {
        self.wait_all(true)
    }

    fn wait_all(&self, connecting: bool) -> Result<(), Stop> {
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
            let peers = (0..self.nranks as usize).filter(|&r| r != self.rank as usize);
            if connecting {
                for r in peers.clone() {
                    if h.slots[r].left.load(Ordering::Acquire) != 0 {
                        return Err(Stop::PeerLeft(r as u32));
                    }
                }
            }
            if checked.elapsed() > Duration::from_millis(200) {
                checked = Instant::now();
                for r in peers {
                    let pid = h.slots[r].pid.load(Ordering::Acquire);
                    if pid > 0 && process_gone(pid) {
                        return Err(Stop::PeerDied(r as u32));
                    }
                }
            }
            futex_wait(&h.phase, phase, Duration::from_millis(5));
        }
    }

    /// Marks this rank gone for peers that are connecting (its sockets closed).
    pub fn leave(&self) {
        if let Some(s) = self.shared.get() {
            s.slot(self.rank as usize).left.store(1, Ordering::Release);
            futex_wake_all(&s.header().phase);
        }
    }

    /// Records an asynchronous error with NCCL's WARN line.
    pub fn fail_async(&self, code: c_int, origin: &str, msg: &str) {
        super::warn(self.device, origin, msg);
        // The first error stays; it replaces success or an operation in progress.
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                matches!(s, SUCCESS | IN_PROGRESS).then_some(code)
            });
    }

    /// Reports why a collective's wait stopped.
    pub fn stopped(&self, stop: Stop) {
        if let Some((code, msg, origin)) = stop_failure(stop) {
            self.fail_async(code, origin, &msg);
        }
    }

    /// The machine index of rank `r`'s GPU.
    pub fn nvml_of(&self, r: usize) -> usize {
        self.shared().slot(r).nvml.load(Ordering::Acquire).max(0) as usize
    }

    /// Whether rank `r` runs on this rank's host.
    pub fn same_host(&self, r: usize) -> bool {
        let s = self.shared();
        s.slot(r).host.load(Ordering::Acquire)
            == s.slot(self.rank as usize).host.load(Ordering::Acquire)
    }

    /// Ranks on this rank's host.
    pub fn local_ranks(&self) -> u32 {
        (0..self.nranks as usize)
            .filter(|&r| self.same_host(r))
            .count() as u32
    }

    /// This rank's index among the ranks of its host.
    pub fn local_rank(&self) -> u32 {
        (0..self.rank as usize)
            .filter(|&r| self.same_host(r))
            .count() as u32
    }
}

/// What a stopped wait reports: a peer whose process is gone or whose sockets
/// closed is NCCL's remote error; this rank's own abort reports nothing.
pub fn stop_failure(stop: Stop) -> Option<Failure> {
    let msg = match stop {
        Stop::Aborted => return None,
        Stop::PeerDied(r) => {
            format!(
                "socketProgress: Connection closed by remote peer (rank {r}, its process exited)"
            )
        }
        Stop::PeerLeft(r) => {
            format!("socketProgress: Connection closed by remote peer (rank {r} failed or aborted while connecting)")
        }
    };
    Some((REMOTE_ERROR, msg, "misc/socket.cc:49"))
}

impl Drop for Comm {
    fn drop(&mut self) {
        let connected = self.connected.get_mut().unwrap();
        if let Some(p) = connected.nvls_memory.take() {
            let _ = driver::free(p);
        }
    }
}
