//! Ring all-reduce, scheduled the way NCCL's ring schedules it: the message is cut
//! into loops of `nranks` chunks of at most one slice; within a loop, each rank sends
//! one chunk, then `nranks - 2` times receives, reduces with its own input and
//! forwards (reduce-scatter), then reduces the last chunk into its output and
//! forwards it, then `nranks - 2` times receives, copies and forwards, and finally
//! receives the last chunk (all-gather). Every step moves at most one slice per link,
//! which is what keeps a ring of bounded FIFOs free of deadlock.

use std::ops::Range;
use std::time::Instant;

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
    /// Waits for the next slot and copies `src` into it, with streaming stores into
    /// shared memory when `streaming` (see `stream`); `post` hands it on.
    fn fill(&mut self, src: &[u8], streaming: bool) -> Result<()> {
        match self {
            Sender::Shm(s) if streaming => stream_copy(s.slot(src.len())?, src),
            Sender::Shm(s) => s.slot(src.len())?.copy_from_slice(src),
            Sender::Tcp(s) => s.slot(src.len())?.copy_from_slice(src),
        }
        Ok(())
    }

    /// Waits for the next slot and reduces `a` and `b` into it.
    fn fill_reduced(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        a: &[u8],
        b: &[u8],
        streaming: bool,
    ) -> Result<()> {
        match self {
            Sender::Shm(s) if streaming => stream_reduce(dt, op, s.slot(a.len())?, a, b),
            Sender::Shm(s) => reduce(dt, op, s.slot(a.len())?, a, b),
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
    /// Whether slices go into shared memory with streaming stores (`choose_stores`).
    pub streaming: bool,
    /// Staging buffers kept between calls (alltoall's relay, `collectives`).
    pub scratch: [Vec<u8>; 2],
}

/// The message `choose_stores` times, and how many times each way.
const CALIBRATION_BYTES: usize = 1 << 20;
const CALIBRATION_ROUNDS: usize = 3;

/// How SHM slots are to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stores {
    /// Timed both ways when the communicator is made (`choose_stores`).
    Measured,
    Ordinary,
    Streaming,
}

/// How the ring writes its shared-memory slots, and what timing both ways found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreChoice {
    pub streaming: bool,
    /// Best time of a 1 MiB all-reduce with ordinary and with streaming stores,
    /// summed over ranks, seconds (`None` when forced).
    pub timed_s: Option<(f64, f64)>,
}

impl StoreChoice {
    pub fn forced(streaming: bool) -> StoreChoice {
        StoreChoice {
            streaming,
            timed_s: None,
        }
    }
}

impl std::fmt::Display for StoreChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let way = if self.streaming {
            "streaming"
        } else {
            "ordinary"
        };
        match self.timed_s {
            Some((ordinary, streaming)) => write!(
                f,
                "{way} stores into SHM slots (1 MiB all-reduce, summed over ranks: {:.0} us ordinary, {:.0} us streaming)",
                ordinary * 1e6,
                streaming * 1e6
            ),
            None => write!(f, "{way} stores into SHM slots (forced)"),
        }
    }
}

/// Streaming stores are chosen only when clearly faster (by this factor): where
/// the two are close, ordinary stores keep small slices in cache for the reader.
const STREAMING_GAIN: f64 = 0.8;

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

    pub(super) fn send(&mut self, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.tx.fill(src, self.streaming)?;
        self.tx.post()
    }

    pub(super) fn recv_reduce_send(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        local: &[u8],
    ) -> Result<()> {
        if local.is_empty() {
            return Ok(());
        }
        let incoming = self.rx.slot(local.len())?;
        self.tx
            .fill_reduced(dt, op, incoming, local, self.streaming)?;
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
        self.recv_reduce(dt, op, local, out)?;
        self.send(out)
    }

    pub(super) fn recv_copy_send(&mut self, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let incoming = self.rx.slot(out.len())?;
        out.copy_from_slice(incoming);
        self.tx.fill(incoming, self.streaming)?;
        self.tx.post()?;
        self.rx.release();
        Ok(())
    }

    pub(super) fn recv(&mut self, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        out.copy_from_slice(self.rx.slot(out.len())?);
        self.rx.release();
        Ok(())
    }

    /// Receives a slice, reduces it with `local` into `out` (the last contribution:
    /// `avg` divides here) and sends nothing on.
    pub(super) fn recv_reduce(
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
        Ok(())
    }

    /// Receives a slice of `len` bytes and sends it on unchanged.
    pub(super) fn relay(&mut self, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let incoming = self.rx.slot(len)?;
        self.tx.fill(incoming, self.streaming)?;
        self.tx.post()?;
        self.rx.release();
        Ok(())
    }

    /// Times a 1 MiB all-reduce with ordinary and with streaming stores into the
    /// shared-memory slots (alternating, best of three each) and keeps the faster.
    /// A collective: every rank of the ring calls it, and all agree, because the
    /// decision is made on the times summed over ranks by one more all-reduce.
    /// Which is faster depends on where the cores sit, and on virtual machines it
    /// changes over time (see `stream`), so each communicator measures it afresh.
    pub fn choose_stores(&mut self) -> Result<StoreChoice> {
        let input = vec![1u8; CALIBRATION_BYTES];
        let mut output = vec![0u8; CALIBRATION_BYTES];
        let mut best = [f64::INFINITY; 2];
        for _ in 0..CALIBRATION_ROUNDS {
            for (way, streaming) in [false, true].into_iter().enumerate() {
                self.streaming = streaming;
                let start = Instant::now();
                self.all_reduce(DataType::Uint8, ReduceOp::Sum, &input, &mut output)?;
                best[way] = best[way].min(start.elapsed().as_secs_f64());
            }
        }
        let mine: Vec<u8> = best.iter().flat_map(|t| t.to_le_bytes()).collect();
        let mut sum = vec![0u8; mine.len()];
        self.streaming = false;
        self.all_reduce(DataType::Double, ReduceOp::Sum, &mine, &mut sum)?;
        let total =
            |i: usize| f64::from_le_bytes(sum[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        let (ordinary_s, streaming_s) = (total(0), total(1));
        self.streaming = streaming_s < STREAMING_GAIN * ordinary_s;
        Ok(StoreChoice {
            streaming: self.streaming,
            timed_s: Some((ordinary_s, streaming_s)),
        })
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
