//! A node's counters during a cluster soak: the agent rank 0 picked for the node
//! (`Down::Counters`) reads them every interval on a thread of its own and sends
//! each reading up (`Up::Counters`); rank 0 writes them into counters.csv under the
//! node's name (`feed`), so the report can name the node whose counters moved.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::wire::Up;
use crate::machine::counters::{Reading, Sampler};
use crate::machine::Root;
use crate::sweep::soak::CounterFeed;

/// What one node's agent is asked to read.
pub struct NodeCounters {
    pub interval: Duration,
    /// The pids of the node's ranks' `run` processes: their load is the soak's own.
    pub own: Vec<u32>,
    /// The PCI bus ids of the node's GPUs in the run; none: no GPU counters.
    pub gpus: Option<Vec<String>>,
    /// Where the counter files are read (`/` but in tests: `--counters-root`).
    pub root: Option<PathBuf>,
}

/// Reads the node's counters every interval and hands each reading to `send`
/// until `stop` is set (the agent's run is over, or rank 0 is gone).
pub fn sample(what: NodeCounters, stop: Arc<AtomicBool>, mut send: impl FnMut(&Up)) {
    let root = match &what.root {
        Some(dir) => Root::fake_with_process_env(dir),
        None => Root::this_machine(),
    };
    let gpus = what.gpus.is_some();
    let mut sampler = Sampler::new(root, gpus, what.gpus).owning(what.own);
    let start = Instant::now();
    let mut next = Duration::ZERO;
    while !stop.load(Ordering::SeqCst) {
        let t = start.elapsed();
        if t < next {
            std::thread::sleep((next - t).min(Duration::from_millis(50)));
            continue;
        }
        let readings = sampler.sample();
        let notes = sampler.notes();
        send(&Up::Counters { readings, notes });
        next += what.interval;
    }
}

/// Rank 0's end: writes what the nodes send (`(rank, readings, notes)`) under the
/// sending rank's node until the feed stops; each note is prefixed with its node.
pub fn feed(
    from: Receiver<(u32, Vec<Reading>, Vec<String>)>,
    hosts: Vec<String>,
    mut feed: CounterFeed,
) {
    while !feed.stopped() {
        let (rank, readings, notes) = match from.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let node = hosts
            .get(rank as usize)
            .cloned()
            .unwrap_or_else(|| format!("rank {rank}"));
        for note in notes {
            let _ = feed.notes.send(format!("{node}: {note}"));
        }
        if !feed.write(&node, readings) {
            return;
        }
    }
}
