//! Ring all-reduce, scheduled the way NCCL's ring schedules it: the message is cut
//! into loops of `nranks` chunks of at most one slice; within a loop, each rank sends
//! one chunk, then `nranks - 2` times receives, reduces with its own input and
//! forwards (reduce-scatter), then reduces the last chunk into its output and
//! forwards it, then `nranks - 2` times receives, copies and forwards, and finally
//! receives the last chunk (all-gather). Every step moves at most one slice per link,
//! which is what keeps a ring of bounded FIFOs free of deadlock.

use std::ops::Range;

use anyhow::Result;

use super::shm::{ShmReceiver, ShmSender};
use super::stream::{stream_copy, stream_reduce};
use super::tcp::{TcpReceiver, TcpSender};
use crate::ops::reduce::{finish_avg, reduce};
use crate::ops::{DataType, ReduceOp};

/// The link to the ring successor.
pub enum Sender {
    Shm(ShmSender),
    Tcp(TcpSender),
}

/// The link from the ring predecessor.
pub enum Receiver {
    Shm(ShmReceiver),
    Tcp(TcpReceiver),
}

impl Sender {
    /// Waits for the next slot and copies `src` into it (streaming into shared
    /// memory, see `stream`); `post` hands it on.
    fn fill(&mut self, src: &[u8]) -> Result<()> {
        match self {
            Sender::Shm(s) => stream_copy(s.slot(src.len())?, src),
            Sender::Tcp(s) => s.slot(src.len())?.copy_from_slice(src),
        }
        Ok(())
    }

    /// Waits for the next slot and reduces `a` and `b` into it.
    fn fill_reduced(&mut self, dt: DataType, op: ReduceOp, a: &[u8], b: &[u8]) -> Result<()> {
        match self {
            Sender::Shm(s) => stream_reduce(dt, op, s.slot(a.len())?, a, b),
            Sender::Tcp(s) => reduce(dt, op, s.slot(a.len())?, a, b),
        }
        Ok(())
    }

    fn post(&mut self) -> Result<()> {
        match self {
            Sender::Shm(s) => {
                s.post();
                Ok(())
            }
            Sender::Tcp(s) => s.post(),
        }
    }
}

impl Receiver {
    fn slot(&mut self, len: usize) -> Result<&[u8]> {
        match self {
            Receiver::Shm(r) => r.slot(len),
            Receiver::Tcp(r) => r.slot(len),
        }
    }

    fn release(&mut self) {
        if let Receiver::Shm(r) = self {
            r.release();
        }
    }
}

/// A rank's place in the ring and its two links.
pub struct Ring {
    pub rank: usize,
    pub nranks: usize,
    pub tx: Sender,
    pub rx: Receiver,
    /// Largest slice one step moves, a multiple of 64 bytes.
    pub slice_bytes: usize,
}

impl Ring {
    /// `output = reduce(op, input of every rank)`; `input.len() == output.len()`, a
    /// whole number of `dt` elements.
    pub fn all_reduce(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let es = dt.size();
        let count = input.len() / es;
        let n = self.nranks;
        let r = self.rank;
        let slice_elems = (self.slice_bytes / es).max(1);
        let mut base = 0;
        while base < count {
            let real = (count - base).min(n * slice_elems);
            let chunk = real.div_ceil(n);
            let range = |c: usize| -> Range<usize> {
                let start = (c * chunk).min(real);
                let end = ((c + 1) * chunk).min(real);
                (base + start) * es..(base + end) * es
            };
            self.send(&input[range((r + n - 1) % n)])?;
            for j in 2..n {
                self.recv_reduce_send(dt, op, &input[range((r + n - j) % n)])?;
            }
            let mine = range(r);
            self.recv_reduce_copy_send(dt, op, &input[mine.clone()], &mut output[mine])?;
            for j in 1..n - 1 {
                self.recv_copy_send(&mut output[range((r + n - j) % n)])?;
            }
            self.recv(&mut output[range((r + 1) % n)])?;
            base += real;
        }
        Ok(())
    }

    fn send(&mut self, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.tx.fill(src)?;
        self.tx.post()
    }

    fn recv_reduce_send(&mut self, dt: DataType, op: ReduceOp, local: &[u8]) -> Result<()> {
        if local.is_empty() {
            return Ok(());
        }
        let incoming = self.rx.slot(local.len())?;
        self.tx.fill_reduced(dt, op, incoming, local)?;
        self.tx.post()?;
        self.rx.release();
        Ok(())
    }

    fn recv_reduce_copy_send(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        local: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        if local.is_empty() {
            return Ok(());
        }
        let incoming = self.rx.slot(local.len())?;
        reduce(dt, op, out, incoming, local);
        finish_avg(dt, op, out, self.nranks as u32);
        self.rx.release();
        self.tx.fill(out)?;
        self.tx.post()
    }

    fn recv_copy_send(&mut self, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let incoming = self.rx.slot(out.len())?;
        out.copy_from_slice(incoming);
        self.tx.fill(incoming)?;
        self.tx.post()?;
        self.rx.release();
        Ok(())
    }

    fn recv(&mut self, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        out.copy_from_slice(self.rx.slot(out.len())?);
        self.rx.release();
        Ok(())
    }

    /// Tells the peers to stop waiting on us (after an error).
    pub fn abort(&self) {
        if let Sender::Shm(s) = &self.tx {
            s.abort();
        }
        if let Receiver::Shm(r) = &self.rx {
            r.abort();
        }
    }
}
