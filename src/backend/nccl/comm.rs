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

use super::ffi::{RawComm, RawStream};
use super::library::{Nccl, NcclError, UniqueId, IN_PROGRESS};

/// `ncclInvalidUsage`.
const INVALID_USAGE: i32 = 5;
use crate::ops::{DataType, ReduceOp};

/// How long `Drop` waits for a non-blocking finalize before it aborts instead.
const FINALIZE_WAIT: Duration = Duration::from_secs(10);

pub struct NcclComm {
    nccl: Arc<Nccl>,
    raw: RawComm,
    failed: bool,
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
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    /// Whether the deadline has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Enqueues an all-reduce of `count` elements on `stream`.
    ///
    /// # Safety
    /// `send` and `recv` must be device buffers of at least `count` elements of `dtype`
    /// that stay valid until the stream has run the operation, and `stream` a live
    /// stream of this communicator's device.
    pub unsafe fn all_reduce(
        &mut self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        stream: RawStream,
    ) -> Result<(), NcclError> {
        let rc = self.raw_all_reduce(send, recv, count, dtype, op, stream);
        if rc == IN_PROGRESS {
            return self.wait_in_progress("ncclAllReduce");
        }
        self.track(self.nccl.check("ncclAllReduce", rc, self.raw))
    }

    /// NCCL's own estimate of one all-reduce, microseconds: the all-reduce in a group
    /// ended by `ncclGroupSimulateEnd` (2.22+), which runs nothing. `None` where the
    /// library has no such call or gives no estimate, or refuses the all-reduce.
    ///
    /// # Safety
    /// As [`NcclComm::all_reduce`].
    pub unsafe fn predict(
        &mut self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        stream: RawStream,
    ) -> Result<Option<f64>, NcclError> {
        let s = self.nccl.symbols();
        let version = self.nccl.version()?;
        let (Some(start), Some(simulate)) = (s.group_start, s.group_simulate_end) else {
            return Ok(None);
        };
        if !crate::nccl::tuning::has_simulate(version) {
            return Ok(None);
        }
        self.nccl.check("ncclGroupStart", start(), self.raw)?;
        let rc = self.raw_all_reduce(send, recv, count, dtype, op, stream);
        let mut info = super::ffi::SimInfo::new(version.code);
        let end = simulate(&mut info);
        if rc != 0 || end != 0 {
            // A refused forced choice: the real all-reduce says so in NCCL's words.
            return Ok(None);
        }
        let t = f64::from(info.estimated_time);
        Ok((t.is_finite() && t >= 0.0).then_some(t))
    }

    /// An all-reduce NCCL may refuse because a forced algorithm or protocol is not
    /// available (2.24+, `ncclInvalidUsage`): `Ok(Some(NCCL's words))` then, and the
    /// communicator stays usable. Any other error is an error.
    ///
    /// # Safety
    /// As [`NcclComm::all_reduce`].
    pub unsafe fn all_reduce_or_refusal(
        &mut self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        stream: RawStream,
    ) -> Result<Option<String>, NcclError> {
        let rc = self.raw_all_reduce(send, recv, count, dtype, op, stream);
        if rc == IN_PROGRESS {
            return self.wait_in_progress("ncclAllReduce").map(|_| None);
        }
        if rc == INVALID_USAGE {
            let said = self.last_error().unwrap_or_default();
            if crate::nccl::tuning::is_refused_choice(&said) {
                return Ok(Some(said));
            }
        }
        self.track(self.nccl.check("ncclAllReduce", rc, self.raw))
            .map(|_| None)
    }

    /// `ncclAllReduce` itself, its return code as it is.
    ///
    /// # Safety
    /// As [`NcclComm::all_reduce`].
    unsafe fn raw_all_reduce(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        stream: RawStream,
    ) -> i32 {
        (self.nccl.symbols().all_reduce)(
            send,
            recv,
            count,
            dtype.nccl_value(),
            op.nccl_value(),
            self.raw,
            stream,
        )
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
