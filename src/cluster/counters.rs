//! A node's counters during a cluster soak: the agent rank 0 picked for the node
//! (`Down::Counters`) reads them every interval on a thread of its own and sends
//! each reading up (`Up::Counters`) with when it was taken, on the node's clock
//! from when it was asked; rank 0 writes them into counters.csv under the node's
//! name and on the run's clock (`feed`: the time it asked, plus the node's), so the
//! report can name the node whose counters moved, however late a reading arrives.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::remote::NodeReading;
use super::wire::Up;
use crate::machine::counters::Sampler;
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
        let mut readings = sampler.sample();
        // JSON has no NaN: one would not parse at rank 0.
        readings.retain(|r| r.value.is_finite());
        let notes = sampler.notes();
        send(&Up::Counters {
            t_ms: t.as_millis() as u64,
            readings,
            notes,
        });
        next += what.interval;
    }
}

/// Rank 0's end: writes what the nodes send under the sending rank's node, at
/// `asked` (when rank 0 asked, after the run's start) plus the node's own time,
/// until the feed stops, then what had arrived by then; each note is prefixed with
/// its node.
pub fn feed(
    from: Receiver<NodeReading>,
    hosts: Vec<String>,
    asked: Duration,
    mut feed: CounterFeed,
) {
    let write = |feed: &mut CounterFeed, m: NodeReading| {
        let node = hosts
            .get(m.rank as usize)
            .cloned()
            .unwrap_or_else(|| format!("rank {}", m.rank));
        for note in m.notes {
            let _ = feed.notes.send(format!("{node}: {note}"));
        }
        feed.write(&node, asked + m.t, m.readings)
    };
    while !feed.stopped() {
        match from.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => {
                if !write(&mut feed, m) {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
    while let Ok(m) = from.try_recv() {
        if !write(&mut feed, m) {
            return;
        }
    }
}
