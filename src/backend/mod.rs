//! Where the collectives run. A `Backend` makes the unique id (rank 0) and joins a
//! communicator; a `Communicator` owns the buffers of one rank, sized once for the
//! largest message, and runs timed batches of back-to-back all-reduces. The
//! measurement loop (`sweep::worker`) is the same for every backend.
//!
//! Backends never print: they return errors, and the worker reports them.

pub mod buffer;
pub mod host;
pub mod nccl;
pub mod select;

pub use select::{resolve, ResolvedBackend};

use std::time::Instant;

use anyhow::Result;
use thiserror::Error;

use crate::ops::collective::{Collective, Counts};
use crate::ops::pattern::{check_collective, CheckReport, Pattern};
use crate::ops::{DataType, ReduceOp};

/// What one rank runs: the collective, its root, the element type and operator.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub collective: Collective,
    pub root: u32,
    pub dtype: DataType,
    pub op: ReduceOp,
}

impl Job {
    /// nccl-tests' element counts of a case of `bytes` on `nranks` ranks.
    pub fn counts(&self, bytes: usize, nranks: u32) -> Counts {
        let es = self.dtype.size() as u64;
        self.collective.counts(bytes as u64, es, nranks)
    }

    /// Checks `rank`'s output of a case of `bytes` (`out` holds at least its
    /// `counts.recv` elements) against what the collective must have put there:
    /// the all-reduce against `pattern`'s reduced values, the others stretch by
    /// stretch against the reduction or the sending rank's input.
    pub fn check(
        &self,
        pattern: &Pattern,
        (rank, nranks): (u32, u32),
        bytes: usize,
        out: &[u8],
    ) -> CheckReport {
        if self.collective == Collective::AllReduce {
            return pattern.check(&out[..bytes]);
        }
        let counts = self.counts(bytes, nranks);
        let out = &out[..counts.recv as usize * self.dtype.size()];
        let who = (rank, nranks, self.root % nranks.max(1));
        check_collective(self.collective, (self.dtype, self.op), who, counts, out)
    }
}

/// One rank of an initialized communicator.
pub trait Communicator {
    /// The transport(s) this rank's connections use, for the `transports` column.
    fn transports(&self) -> String;

    /// How this rank is connected, in words for its log.
    fn detail(&self) -> String;

    /// The algorithm and protocol of a backend that decides them itself, once for
    /// every size (the host backend: its ring and how it stores into SHM slots);
    /// `None` where the library decides per size (NCCL: `probe`).
    fn algorithm(&self) -> Option<(String, String)> {
        None
    }

    /// Writes this rank's input pattern into the first `bytes` of the send buffer.
    fn fill_input(&mut self, pattern: &Pattern, bytes: usize) -> Result<()>;

    /// Overwrites the output with a value no correct collective produces, so that a
    /// collective that does nothing cannot pass the check.
    fn poison_output(&mut self, bytes: usize) -> Result<()>;

    /// Checks the output of a case of `bytes` against what the rank's collective
    /// must have put there (the reduction, or the sending ranks' inputs: `Job::check`).
    fn check_output(&mut self, pattern: &Pattern, bytes: usize) -> Result<CheckReport>;

    /// How many iterations should share a timestamp at this size (1: each its
    /// own): more where taking one per iteration would let the host set the pace,
    /// or leave the times at the timer's grain (see `nccl::gpu`). Every rank runs the
    /// same untimed collectives, whatever it measures; the orchestrator takes the
    /// largest answer, so that all ranks of a case time alike.
    fn calibrate(&mut self, _bytes: usize) -> Result<usize> {
        Ok(1)
    }

    /// Runs one untimed operation of the rank's collective (it lines the ranks up
    /// after the pause between batches), then `durations.len()` operations back to
    /// back, and stores the time between consecutive completions, in nanoseconds:
    /// the first timed iteration is measured from the completion of the untimed one.
    /// With `every` > 1 a timestamp is taken after every `every` operations (and
    /// after the last), and each step's time is shared evenly by its operations
    /// (`spread`).
    fn timed_batch(&mut self, bytes: usize, every: usize, durations: &mut [u64]) -> Result<()>;

    /// One untimed operation of the rank's collective, synchronized (warm-up).
    fn run_once(&mut self, bytes: usize) -> Result<()>;

    /// What the library decides for an operation of `bytes`, untimed: its own
    /// estimate where it has one, and its refusal of a forced algorithm or protocol;
    /// otherwise the operation runs once (NCCL logs its choice then).
    fn probe(&mut self, bytes: usize) -> Result<Probe> {
        self.run_once(bytes)?;
        Ok(Probe::default())
    }

    /// When waits for the collective give up, stopping it (set before each size, a
    /// little before the orchestrator's case timeout). A backend whose waits cannot
    /// hang on their own ignores it: the orchestrator's kill is the backstop.
    fn set_deadline(&mut self, _deadline: Instant) {}

    /// Stops whatever this rank still runs (NCCL: `ncclCommAbort`), waiting for it at
    /// most `within`; called once the error is reported, before the worker exits.
    /// `true` when it stopped in time (a backend with nothing to stop: at once).
    fn abort(&mut self, _within: std::time::Duration) -> bool {
        true
    }
}

/// What `Communicator::probe` learnt about one size.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probe {
    /// The library's own estimate, microseconds (NCCL: `ncclGroupSimulateEnd`).
    pub predicted_us: Option<f64>,
    /// The library refused the all-reduce (NCCL 2.24+: a forced algorithm or protocol
    /// that is not available), in its words.
    pub refused: Option<String>,
}

/// A collective that was still running at the worker's deadline and was stopped
/// (NCCL: `ncclCommAbort`). The case is a timeout, reported by the rank itself with
/// what NCCL had to say, instead of a kill by the orchestrator with nothing said.
#[derive(Debug, Error)]
#[error("{what} did not complete within {waited_s:.1}s (the worker's deadline, just before --timeout); {aftermath}")]
pub struct DeadlineExceeded {
    pub what: String,
    pub waited_s: f64,
    pub aftermath: String,
}

/// Refuses a message that does not fit the buffers (sized for the largest message)
/// or is not a whole number of elements.
pub fn check_message(bytes: usize, capacity: usize, dtype: crate::ops::DataType) -> Result<()> {
    if bytes > capacity || bytes % dtype.size() != 0 {
        anyhow::bail!("message of {bytes} bytes does not fit the {capacity}-byte buffers in whole {dtype} elements");
    }
    Ok(())
}

/// Creates unique ids and communicators.
pub trait Backend {
    /// Rank 0 calls this first; the text goes to the other ranks.
    fn unique_id(&mut self) -> Result<String>;

    /// Joins the communicator named by `id` as `rank` of `nranks`.
    fn init(&mut self, id: &str, rank: u32, nranks: u32) -> Result<Box<dyn Communicator>>;
}

/// Shares a step's time among its iterations so that they sum to it exactly.
pub fn spread(total_ns: u64, iterations: &mut [u64]) {
    let n = iterations.len() as u64;
    for (i, d) in iterations.iter_mut().enumerate() {
        *d = total_ns / n + u64::from((i as u64) < total_ns % n);
    }
}
