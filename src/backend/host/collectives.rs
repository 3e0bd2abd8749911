//! Every collective of `ops::collective` over the host backend's ring (each rank
//! linked to its successor and from its predecessor, over SHM or TCP), scheduled so
//! that bounded FIFOs cannot deadlock: where every rank both sends and receives (the
//! ring phases, sendrecv, alltoall), each step moves at most one slice per link
//! before it receives one; where the data flows one way from or to a root
//! (broadcast, reduce, gather, scatter), the root breaks the cycle.
//!
//! - all_gather and reduce_scatter: the two halves of the ring all-reduce, per slice
//!   of each rank's chunk;
//! - broadcast and reduce: a pipeline along the ring from the root, or ending at it;
//! - sendrecv: each rank to its successor, slice by slice;
//! - gather and scatter: chunks relayed along the ring to or from the root, the
//!   farthest first;
//! - alltoall: a ring relay in `n - 1` steps: at step `s` each rank passes on the
//!   chunks that source rank `r - s + 1` still has to deliver beyond it, keeps the one
//!   addressed to itself, and stages the rest for the next step.

use std::ops::Range;

use anyhow::Result;

use super::ring::Ring;
use crate::backend::Job;
use crate::ops::collective::{Collective, Counts};
use crate::ops::{DataType, ReduceOp};

/// Runs `job` on `ring` (none: a single rank) over the first `counts.send` elements
/// of `input` into the first `counts.recv` of `output`.
pub fn run(
    ring: Option<&mut Ring>,
    job: Job,
    counts: Counts,
    input: &[u8],
    output: &mut [u8],
) -> Result<()> {
    let es = job.dtype.size();
    let input = &input[..counts.send as usize * es];
    let output = &mut output[..counts.recv as usize * es];
    let Some(ring) = ring else {
        // One rank: every collective's output is its own input (or its reduction
        // with nothing else).
        let n = input.len().min(output.len());
        output[..n].copy_from_slice(&input[..n]);
        return Ok(());
    };
    let (dt, op) = (job.dtype, job.op);
    let root = job.root as usize % ring.nranks;
    let chunk = counts.param as usize * es;
    match job.collective {
        Collective::AllReduce => ring.all_reduce(dt, op, input, output),
        Collective::AllGather => ring.all_gather(input, output, es),
        Collective::ReduceScatter => ring.reduce_scatter(dt, op, input, output),
        Collective::Broadcast => ring.broadcast(root, input, output, es),
        Collective::Reduce => ring.reduce(dt, op, root, input, output),
        Collective::AllToAll => ring.all_to_all(input, output, chunk, es),
        Collective::SendRecv => ring.send_recv(input, output, es),
        Collective::Gather => ring.gather(root, input, output, es),
        Collective::Scatter => ring.scatter(root, input, output, es),
    }
}

/// The byte ranges of `len` bytes cut into slices of at most `slice` bytes, whole
/// elements of `es` bytes.
fn slices(len: usize, slice: usize, es: usize) -> impl Iterator<Item = Range<usize>> {
    let step = (slice / es).max(1) * es;
    (0..len)
        .step_by(step)
        .map(move |at| at..(at + step).min(len))
}

/// `range` moved by `offset` bytes.
fn shifted(range: &Range<usize>, offset: usize) -> Range<usize> {
    range.start + offset..range.end + offset
}

impl Ring {
    /// Distance of this rank from `root` along the ring (0 at the root).
    fn distance(&self, root: usize) -> usize {
        (self.rank + self.nranks - root) % self.nranks
    }

    /// The rank `k` places after this one.
    fn ahead(&self, k: usize) -> usize {
        (self.rank + k) % self.nranks
    }

    /// The rank `k` places before this one.
    fn behind(&self, k: usize) -> usize {
        (self.rank + self.nranks - k % self.nranks) % self.nranks
    }

    /// Passes `chunks` chunks of `p` bytes from the predecessor on to the successor,
    /// slice by slice.
    fn relay_chunks(&mut self, chunks: usize, p: usize, es: usize) -> Result<()> {
        for _ in 0..chunks {
            for s in slices(p, self.slice_bytes, es) {
                self.relay(s.len())?;
            }
        }
        Ok(())
    }

    /// `output` (n chunks of `input.len()`) gets chunk c from rank c.
    pub fn all_gather(&mut self, input: &[u8], output: &mut [u8], es: usize) -> Result<()> {
        let (n, r, p) = (self.nranks, self.rank, input.len());
        output[r * p..(r + 1) * p].copy_from_slice(input);
        for s in slices(p, self.slice_bytes, es) {
            let at = |c: usize| shifted(&s, c * p);
            self.send(&output[at(r)])?;
            for j in 1..n - 1 {
                self.recv_copy_send(&mut output[at(self.behind(j))])?;
            }
            self.recv(&mut output[at(self.ahead(1))])?;
        }
        Ok(())
    }

    /// `output` (one chunk) gets chunk `rank` of the reduction of every rank's
    /// `input` (n chunks).
    pub fn reduce_scatter(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let (n, r, p) = (self.nranks, self.rank, output.len());
        for s in slices(p, self.slice_bytes, dt.size()) {
            let at = |c: usize| shifted(&s, c * p);
            self.send(&input[at(self.behind(1))])?;
            for j in 2..n {
                self.recv_reduce_send(dt, op, &input[at(self.behind(j))])?;
            }
            self.recv_reduce(dt, op, &input[at(r)], &mut output[s.clone()])?;
        }
        Ok(())
    }

    /// Every rank's `output` gets the root's `input`.
    pub fn broadcast(
        &mut self,
        root: usize,
        input: &[u8],
        output: &mut [u8],
        es: usize,
    ) -> Result<()> {
        let d = self.distance(root);
        for s in slices(output.len(), self.slice_bytes, es) {
            if d == 0 {
                output[s.clone()].copy_from_slice(&input[s.clone()]);
                self.send(&input[s])?;
            } else if d < self.nranks - 1 {
                self.recv_copy_send(&mut output[s])?;
            } else {
                self.recv(&mut output[s])?;
            }
        }
        Ok(())
    }

    /// The root's `output` gets the reduction of every rank's `input`; the others'
    /// output is not written.
    pub fn reduce(
        &mut self,
        dt: DataType,
        op: ReduceOp,
        root: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let d = self.distance(root);
        for s in slices(input.len(), self.slice_bytes, dt.size()) {
            match d {
                0 => self.recv_reduce(dt, op, &input[s.clone()], &mut output[s])?,
                1 => self.send(&input[s])?,
                _ => self.recv_reduce_send(dt, op, &input[s])?,
            }
        }
        Ok(())
    }

    /// `output` gets the predecessor's `input`.
    pub fn send_recv(&mut self, input: &[u8], output: &mut [u8], es: usize) -> Result<()> {
        for s in slices(input.len(), self.slice_bytes, es) {
            self.send(&input[s.clone()])?;
            self.recv(&mut output[s])?;
        }
        Ok(())
    }

    /// The root's `output` (n chunks of `input.len()`) gets chunk c from rank c.
    pub fn gather(
        &mut self,
        root: usize,
        input: &[u8],
        output: &mut [u8],
        es: usize,
    ) -> Result<()> {
        let (n, p) = (self.nranks, input.len());
        let d = self.distance(root);
        if d == 0 {
            output[root * p..(root + 1) * p].copy_from_slice(input);
            // The farthest rank's chunk first (the root's predecessor sends its own
            // first), then the chunks it relays, nearer and nearer.
            for k in 1..n {
                let from = self.behind(k);
                for s in slices(p, self.slice_bytes, es) {
                    self.recv(&mut output[shifted(&s, from * p)])?;
                }
            }
            return Ok(());
        }
        for s in slices(p, self.slice_bytes, es) {
            self.send(&input[s])?;
        }
        self.relay_chunks(d - 1, p, es)
    }

    /// Each rank's `output` gets chunk `rank` of the root's `input` (n chunks).
    pub fn scatter(
        &mut self,
        root: usize,
        input: &[u8],
        output: &mut [u8],
        es: usize,
    ) -> Result<()> {
        let (n, p) = (self.nranks, output.len());
        let d = self.distance(root);
        if d == 0 {
            output.copy_from_slice(&input[root * p..(root + 1) * p]);
            // The farthest rank's chunk first: each rank on the way relays what is
            // for ranks beyond it, then keeps its own.
            for k in (1..n).rev() {
                let to = self.ahead(k);
                for s in slices(p, self.slice_bytes, es) {
                    self.send(&input[shifted(&s, to * p)])?;
                }
            }
            return Ok(());
        }
        self.relay_chunks(n - d - 1, p, es)?;
        for s in slices(p, self.slice_bytes, es) {
            self.recv(&mut output[s])?;
        }
        Ok(())
    }

    /// `output` chunk c gets chunk `rank` of rank c's `input` (both n chunks of
    /// `chunk` bytes).
    pub fn all_to_all(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        chunk: usize,
        es: usize,
    ) -> Result<()> {
        let (n, r, p) = (self.nranks, self.rank, chunk);
        output[r * p..(r + 1) * p].copy_from_slice(&input[r * p..(r + 1) * p]);
        // What this rank passes on at the next step, and what it receives for it.
        let mut staged = std::mem::take(&mut self.scratch[0]);
        let mut incoming = std::mem::take(&mut self.scratch[1]);
        staged.resize((n - 1) * p, 0);
        incoming.resize((n - 1) * p, 0);
        let result = (|| -> Result<()> {
            for step in 1..n {
                // Sent: source r - step + 1's chunks for the ranks from r + 1 on, n - step
                // of them; received: source r - step's, the first of them our own.
                let source = self.behind(step);
                let chunks = n - step;
                for k in 0..chunks {
                    for s in slices(p, self.slice_bytes, es) {
                        let out = if step == 1 {
                            &input[shifted(&s, self.ahead(k + 1) * p)]
                        } else {
                            &staged[shifted(&s, k * p)]
                        };
                        self.send(out)?;
                        if k == 0 {
                            self.recv(&mut output[shifted(&s, source * p)])?;
                        } else {
                            self.recv(&mut incoming[shifted(&s, (k - 1) * p)])?;
                        }
                    }
                }
                std::mem::swap(&mut staged, &mut incoming);
            }
            Ok(())
        })();
        self.scratch = [staged, incoming];
        result
    }
}
