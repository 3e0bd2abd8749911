//! Layer 3: a communicator that cleans up after itself. Dropping it destroys the
//! communicator, or aborts it when a call failed (destroy could block on peers that
//! are gone). Errors during clean-up are ignored: `Drop` never panics.
//!
//! A failed or stuck call does not abort on its own: `ncclCommAbort` can block on a
//! hung kernel or proxy thread (NVIDIA/nccl#1777), and the worker reports the error
//! to the orchestrator first, then aborts with a bounded wait (`abort_within`) and
//! leaves with `_exit`. A communicator whose init failed is not aborted either.
//!
//! Non-blocking communicators (`NCCL_COMM_BLOCKING=0` in a config) return
//! `ncclInProgress` from init, collectives and finalize; NCCL's documented rule is to
//! poll `ncclCommGetAsyncError` until the state leaves `ncclInProgress` before the
//! next call. Every such wait here is bounded by the communicator's deadline.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ffi::{NcclResult, RawComm, RawStream};
use super::library::{Nccl, NcclError, Runs, UniqueId, IN_PROGRESS};
use crate::nccl::register::Registration;
use crate::ops::collective::{Collective, Counts};
use crate::ops::{DataType, ReduceOp};

/// `ncclInvalidUsage`.
const INVALID_USAGE: i32 = 5;

/// One operation of a collective as nccl-tests calls NCCL for it (`src/<coll>.cu`'s
/// `RunColl`): the counts are nccl-tests' (`counts.param` is the count NCCL takes:
/// per peer for all_gather, reduce_scatter, alltoall, gather and scatter).
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub collective: Collective,
    /// NCCL's own call, or grouped `ncclSend`/`ncclRecv` (sendrecv always;
    /// alltoall, gather and scatter before 2.28).
    pub runs: Runs,
    pub send: *const c_void,
    pub recv: *mut c_void,
    pub counts: Counts,
    pub dtype: DataType,
    pub op: ReduceOp,
    pub root: u32,
    pub rank: u32,
    pub nranks: u32,
}

impl Launch {
    /// The NCCL call that starts it, for errors.
    pub fn call(&self) -> &'static str {
        if self.runs == Runs::Grouped {
            return "ncclGroupEnd";
        }
        match self.collective {
            Collective::AllReduce => "ncclAllReduce",
            Collective::AllGather => "ncclAllGather",
            Collective::ReduceScatter => "ncclReduceScatter",
            Collective::Broadcast => "ncclBroadcast",
            Collective::Reduce => "ncclReduce",
            Collective::AllToAll => "ncclAlltoAll",
            Collective::Gather => "ncclGather",
            Collective::Scatter => "ncclScatter",
            Collective::SendRecv => "ncclGroupEnd",
        }
    }

    /// The point-to-point calls of a grouped launch, as nccl-tests makes them:
    /// (send?, buffer, count, peer).
    fn peer_calls(&self) -> Vec<(bool, *mut c_void, usize, i32)> {
        let (n, rank, root) = (self.nranks, self.rank, self.root);
        let c = self.counts.param as usize;
        let es = self.dtype.size();
        let send = |offset: usize| (self.send as *mut u8).wrapping_add(offset) as *mut c_void;
        let recv = |offset: usize| (self.recv as *mut u8).wrapping_add(offset) as *mut c_void;
        let peers = 0..n as i32;
        match self.collective {
            Collective::SendRecv => vec![
                (true, send(0), c, ((rank + 1) % n) as i32),
                (false, recv(0), c, ((rank + n - 1) % n) as i32),
            ],
            Collective::AllToAll => peers
                .flat_map(|r| {
                    let at = r as usize * c * es;
                    [(true, send(at), c, r), (false, recv(at), c, r)]
                })
                .collect(),
            Collective::Gather => {
                let mut calls = vec![(true, send(0), c, root as i32)];
                if rank == root {
                    calls.extend(peers.map(|r| (false, recv(r as usize * c * es), c, r)));
                }
                calls
            }
            Collective::Scatter => {
                let mut calls = Vec::new();
                if rank == root {
                    calls.extend(peers.map(|r| (true, send(r as usize * c * es), c, r)));
                }
                calls.push((false, recv(0), c, root as i32));
                calls
            }
            _ => Vec::new(),
        }
    }
}

/// How long `Drop` waits for a non-blocking finalize before it aborts instead.
const FINALIZE_WAIT: Duration = Duration::from_secs(10);

pub struct NcclComm {
    nccl: Arc<Nccl>,
    raw: RawComm,
    failed: bool,
    /// Buffers registered with this communicator ([`NcclComm::register`]): handles
    /// (or windows) to release before it goes.
    registered: Vec<(Registration, *mut c_void)>,
    /// When waits for NCCL give up (set per case by the worker); `None`: never.
    deadline: Option<Instant>,
}

// SAFETY: a communicator may be used from any thread, one call at a time (&mut self).
unsafe impl Send for NcclComm {}

/// A communicator handed to the thread that aborts it.
struct Handle(RawComm);

// SAFETY: the handle moves to one thread, which makes the only call on it.
unsafe impl Send for Handle {}

impl NcclComm {
    /// `ncclCommInitRank`, waiting until `deadline` when the communicator is
    /// non-blocking. A half-built communicator that failed is aborted, not leaked.
    /// Later waits have no deadline until `set_deadline` gives one.
    pub fn init(
        nccl: Arc<Nccl>,
        nranks: u32,
        id: &UniqueId,
        rank: u32,
        deadline: Instant,
    ) -> Result<NcclComm, NcclError> {
        let (rc, raw) = nccl.comm_init_rank(nranks, id, rank);
        let mut comm = NcclComm {
            nccl,
            raw,
            failed: false,
            registered: Vec::new(),
            deadline: Some(deadline),
        };
        let r = if rc == IN_PROGRESS && !raw.is_null() {
            comm.wait_in_progress("ncclCommInitRank")
        } else {
            let r = comm.nccl.check("ncclCommInitRank", rc, raw);
            comm.track(r)
        };
        if let Err(e) = r {
            // Left to the process's exit: an abort here could block before the
            // error is reported.
            std::mem::forget(comm);
            return Err(e);
        }
        comm.deadline = None;
        Ok(comm)
    }

    /// Sets when waits for NCCL give up.
    /// Registers `bytes` of `buffer` with this communicator, as nccl-tests' `-R`
    /// does: `ncclCommRegister` (local), or `ncclCommWindowRegister` with
    /// `NCCL_WIN_COLL_SYMMETRIC`, a collective call every rank makes in the same
    /// order. Nothing for `Registration::None`. Released when the communicator goes.
    ///
    /// # Safety
    /// `buffer` holds `bytes` on this communicator's device (from `ncclMemAlloc` for
    /// a window) and outlives the communicator.
    pub unsafe fn register(
        &mut self,
        how: Registration,
        buffer: *mut c_void,
        bytes: usize,
    ) -> Result<(), NcclError> {
        let s = self.nccl.symbols();
        let missing = |symbol| NcclError::MissingSymbol {
            path: self.nccl.path.clone(),
            symbol,
        };
        let mut handle = std::ptr::null_mut();
        let (call, rc) = match how {
            Registration::None => return Ok(()),
            Registration::Local => {
                let f = s.comm_register.ok_or_else(|| missing("ncclCommRegister"))?;
                ("ncclCommRegister", f(self.raw, buffer, bytes, &mut handle))
            }
            Registration::Symmetric => {
                let f = s
                    .comm_window_register
                    .ok_or_else(|| missing("ncclCommWindowRegister"))?;
                let flags = crate::nccl::register::WIN_COLL_SYMMETRIC;
                let rc = f(self.raw, buffer, bytes, &mut handle, flags);
                ("ncclCommWindowRegister", rc)
            }
        };
        let r = self.nccl.check(call, rc, self.raw);
        self.track(r)?;
        // NCCL returns success and no window where it registers nothing (cuMem off,
        // NCCL_LOCAL_REGISTER=0): nothing to release then.
        if !handle.is_null() {
            self.registered.push((how, handle));
        }
        Ok(())
    }

    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    /// Whether the deadline has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Enqueues one operation of `launch` on `stream`.
    ///
    /// # Safety
    /// `launch.send` and `launch.recv` must be device buffers of at least the
    /// operation's send and receive counts of `dtype` that stay valid until the
    /// stream has run it, and `stream` a live stream of this communicator's device.
    pub unsafe fn launch(&mut self, launch: &Launch, stream: RawStream) -> Result<(), NcclError> {
        let rc = self.raw_launch(launch, stream);
        if rc == IN_PROGRESS {
            return self.wait_in_progress(launch.call());
        }
        self.track(self.nccl.check(launch.call(), rc, self.raw))
    }

    /// The NCCL calls of `launch`, their first failing return code as it is (a
    /// group is ended even when a call in it failed, which NCCL requires).
    ///
    /// # Safety
    /// As [`NcclComm::launch`].
    unsafe fn raw_launch(&self, l: &Launch, stream: RawStream) -> NcclResult {
        let s = self.nccl.symbols();
        let (send, recv, c) = (l.send, l.recv, l.counts.param as usize);
        let (dt, op, root, comm) = (
            l.dtype.nccl_value(),
            l.op.nccl_value(),
            l.root as i32,
            self.raw,
        );
        // A symbol `Nccl::runs` found missing is refused before any launch; should
        // one still be absent here, NCCL's `ncclInvalidUsage` says so.
        let missing = INVALID_USAGE;
        if l.runs == Runs::Grouped {
            let (Some(start), Some(end), Some(p_send), Some(p_recv)) =
                (s.group_start, s.group_end, s.send, s.recv)
            else {
                return missing;
            };
            let rc = start();
            if rc != 0 {
                return rc;
            }
            let mut first = 0;
            for (is_send, buf, count, peer) in l.peer_calls() {
                let f = if is_send { p_send } else { p_recv };
                let rc = f(buf, count, dt, peer, comm, stream);
                if rc != 0 && rc != IN_PROGRESS {
                    first = rc;
                    break;
                }
            }
            let rc = end();
            return if first != 0 { first } else { rc };
        }
        match l.collective {
            Collective::AllReduce => (s.all_reduce)(send, recv, c, dt, op, comm, stream),
            Collective::AllGather => s
                .all_gather
                .map_or(missing, |f| f(send, recv, c, dt, comm, stream)),
            Collective::ReduceScatter => s
                .reduce_scatter
                .map_or(missing, |f| f(send, recv, c, dt, op, comm, stream)),
            Collective::Broadcast => s
                .broadcast
                .map_or(missing, |f| f(send, recv, c, dt, root, comm, stream)),
            Collective::Reduce => s
                .reduce
                .map_or(missing, |f| f(send, recv, c, dt, op, root, comm, stream)),
            Collective::AllToAll => s
                .all_to_all
                .map_or(missing, |f| f(send, recv, c, dt, comm, stream)),
            Collective::Gather => s
                .gather
                .map_or(missing, |f| f(send, recv, c, dt, root, comm, stream)),
            Collective::Scatter => s
                .scatter
                .map_or(missing, |f| f(send, recv, c, dt, root, comm, stream)),
            Collective::SendRecv => missing,
        }
    }

    /// NCCL's own estimate of one operation, microseconds: the operation in a group
    /// ended by `ncclGroupSimulateEnd` (2.22+), which runs nothing. `None` where the
    /// library has no such call or gives no estimate (NCCL's model has none for
    /// sends and receives, so grouped ones are not asked), or refuses the operation.
    ///
    /// # Safety
    /// As [`NcclComm::launch`].
    pub unsafe fn predict(
        &mut self,
        launch: &Launch,
        stream: RawStream,
    ) -> Result<Option<f64>, NcclError> {
        let s = self.nccl.symbols();
        let version = self.nccl.version()?;
        let (Some(start), Some(simulate)) = (s.group_start, s.group_simulate_end) else {
            return Ok(None);
        };
        if !crate::nccl::tuning::has_simulate(version) || launch.runs == Runs::Grouped {
            return Ok(None);
        }
        self.nccl.check("ncclGroupStart", start(), self.raw)?;
        let rc = self.raw_launch(launch, stream);
        let mut info = super::ffi::SimInfo::new(version.code);
        let mut end = simulate(&mut info);
        if end == IN_PROGRESS {
            // A non-blocking communicator ends the group in the background.
            self.wait_in_progress("ncclGroupSimulateEnd")?;
            end = 0;
        }
        if rc != 0 || end != 0 {
            // A refused forced choice: the real operation says so in NCCL's words.
            return Ok(None);
        }
        let t = f64::from(info.estimated_time);
        Ok((t.is_finite() && t >= 0.0).then_some(t))
    }

    /// An operation NCCL may refuse because a forced algorithm or protocol is not
    /// available (2.24+, `ncclInvalidUsage`): `Ok(Some(NCCL's words))` then, and the
    /// communicator stays usable. Any other error is an error.
    ///
    /// # Safety
    /// As [`NcclComm::launch`].
    pub unsafe fn launch_or_refusal(
        &mut self,
        launch: &Launch,
        stream: RawStream,
    ) -> Result<Option<String>, NcclError> {
        let rc = self.raw_launch(launch, stream);
        if rc == IN_PROGRESS {
            return self.wait_in_progress(launch.call()).map(|_| None);
        }
        if rc == INVALID_USAGE {
            let said = self.last_error().unwrap_or_default();
            if crate::nccl::tuning::is_refused_choice(&said) {
                return Ok(Some(said));
            }
        }
        self.track(self.nccl.check(launch.call(), rc, self.raw))
            .map(|_| None)
    }

    /// `ncclCommGetAsyncError`: an error a background thread of NCCL hit (a peer that
    /// died, a network failure). `ncclInProgress` is not an error.
    pub fn async_error(&mut self) -> Result<(), NcclError> {
        let r = self.state("asynchronous NCCL operation").map(|_| ());
        self.track(r)
    }

    /// The communicator's state: `Ok(true)` while an operation is in progress.
    fn state(&self, call: &'static str) -> Result<bool, NcclError> {
        let mut state = 0;
        // SAFETY: a live communicator and an out-parameter.
        let rc = unsafe { (self.nccl.symbols().comm_get_async_error)(self.raw, &mut state) };
        self.nccl.check("ncclCommGetAsyncError", rc, self.raw)?;
        match state {
            0 => Ok(false),
            IN_PROGRESS => Ok(true),
            code => Err(self.nccl.call_error(call, code, self.raw)),
        }
    }

    /// Polls the state until it leaves `ncclInProgress`; NCCL's error, or the
    /// deadline, fails the communicator (the caller aborts it).
    fn wait_in_progress(&mut self, call: &'static str) -> Result<(), NcclError> {
        let start = Instant::now();
        let r = loop {
            match self.state(call) {
                Ok(true) if self.past_deadline() => {
                    break Err(NcclError::Stuck {
                        call,
                        waited_ms: start.elapsed().as_millis() as u64,
                    });
                }
                Ok(true) => backoff(start),
                other => break other.map(|_| ()),
            }
        };
        self.track(r)
    }

    /// `ncclCommAbort`, waiting for it at most `limit`: NCCL's kernels and proxy
    /// threads stop, a stuck collective ends. An abort that blocks (NVIDIA/nccl#1777)
    /// is left running on its own thread. The communicator is gone afterwards
    /// (`Drop` does nothing more). `true` when the abort returned in time.
    pub fn abort_within(&mut self, limit: Duration) -> bool {
        if self.raw.is_null() {
            return true;
        }
        let raw = Handle(self.raw);
        self.raw = std::ptr::null_mut();
        let nccl = self.nccl.clone();
        let (done, finished) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("ncclCommAbort".into())
            .spawn(move || {
                let raw = raw;
                // SAFETY: the communicator is live and not used again (raw was
                // cleared above): this thread owns it.
                unsafe {
                    let _ = (nccl.symbols().comm_abort)(raw.0);
                }
                let _ = done.send(());
            });
        spawned.is_ok() && finished.recv_timeout(limit).is_ok()
    }

    /// NCCL's last error for this communicator, when the library has one to say.
    pub fn last_error(&self) -> Option<String> {
        self.nccl.last_error(self.raw).filter(|t| !t.is_empty())
    }

    fn track(&mut self, r: Result<(), NcclError>) -> Result<(), NcclError> {
        if r.is_err() {
            self.failed = true;
        }
        r
    }
}

/// Waits between polls: yield for the first 200 us (an all-reduce usually finishes
/// within that), then sleep 50 us per pass so that NCCL's own proxy threads keep
/// their cores during a long wait.
pub(crate) fn backoff(since: Instant) {
    if since.elapsed() < Duration::from_micros(200) {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        if !self.failed {
            // Registrations go before the communicator does (nccl-tests' order); an
            // aborted communicator releases them itself.
            let s = self.nccl.symbols();
            for (how, handle) in std::mem::take(&mut self.registered) {
                let release = match how {
                    Registration::Symmetric => s.comm_window_deregister,
                    _ => s.comm_deregister,
                };
                if let Some(release) = release {
                    // SAFETY: a handle this live communicator returned, released once.
                    unsafe { release(self.raw, handle) };
                }
            }
            if let Some(finalize) = self.nccl.symbols().comm_finalize {
                // SAFETY: the communicator is live.
                let rc = unsafe { finalize(self.raw) };
                self.deadline = Some(Instant::now() + FINALIZE_WAIT);
                let finalized = match rc {
                    0 => true,
                    IN_PROGRESS => self.wait_in_progress("ncclCommFinalize").is_ok(),
                    _ => false,
                };
                // A failed finalize leaves peers unsynchronized: destroy could block.
                self.failed |= !finalized;
                if self.raw.is_null() {
                    return;
                }
            }
        }
        let s = self.nccl.symbols();
        // SAFETY: the communicator is live and dropped exactly once.
        unsafe {
            if self.failed {
                let _ = (s.comm_abort)(self.raw);
            } else {
                let _ = (s.comm_destroy)(self.raw);
            }
        }
    }
}
