//! Layer 3: a communicator that cleans up after itself. Dropping it destroys the
//! communicator, or aborts it when a call failed (destroy could block on peers that
//! are gone). Errors during clean-up are ignored: `Drop` never panics.

use std::ffi::c_void;
use std::sync::Arc;

use super::ffi::{RawComm, RawStream};
use super::library::{Nccl, NcclError, UniqueId};
use crate::ops::{DataType, ReduceOp};

pub struct NcclComm {
    nccl: Arc<Nccl>,
    raw: RawComm,
    failed: bool,
}

// SAFETY: a communicator may be used from any thread, one call at a time (&mut self).
unsafe impl Send for NcclComm {}

impl NcclComm {
    pub fn init(
        nccl: Arc<Nccl>,
        nranks: u32,
        id: &UniqueId,
        rank: u32,
    ) -> Result<NcclComm, NcclError> {
        let raw = nccl.comm_init_rank(nranks, id, rank)?;
        Ok(NcclComm {
            nccl,
            raw,
            failed: false,
        })
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
        let s = self.nccl.symbols();
        let rc = (s.all_reduce)(
            send,
            recv,
            count,
            dtype.nccl_value(),
            op.nccl_value(),
            self.raw,
            stream,
        );
        self.track(self.nccl.check("ncclAllReduce", rc, self.raw))
    }

    /// `ncclCommGetAsyncError`: an error a background thread of NCCL hit (a peer that
    /// died, a network failure).
    pub fn async_error(&mut self) -> Result<(), NcclError> {
        let mut state = 0;
        // SAFETY: a live communicator and an out-parameter.
        let rc = unsafe { (self.nccl.symbols().comm_get_async_error)(self.raw, &mut state) };
        let r = self.nccl.check("ncclCommGetAsyncError", rc, self.raw);
        let r = r.and_then(|()| match state {
            0 | 7 => Ok(()), // success, or still in progress
            code => self
                .nccl
                .check("asynchronous NCCL operation", code, self.raw),
        });
        self.track(r)
    }

    fn track(&mut self, r: Result<(), NcclError>) -> Result<(), NcclError> {
        if r.is_err() {
            self.failed = true;
        }
        r
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let s = self.nccl.symbols();
        // SAFETY: the communicator is live and dropped exactly once.
        unsafe {
            if self.failed {
                let _ = (s.comm_abort)(self.raw);
            } else {
                if let Some(finalize) = s.comm_finalize {
                    let _ = finalize(self.raw);
                }
                let _ = (s.comm_destroy)(self.raw);
            }
        }
    }
}
