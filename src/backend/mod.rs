//! Where the collectives run. A `Backend` makes the unique id (rank 0) and joins a
//! communicator; a `Communicator` owns the buffers of one rank, sized once for the
//! largest message, and runs timed batches of back-to-back all-reduces. The
//! measurement loop (`sweep::worker`) is the same for every backend.
//!
//! Backends never print: they return errors, and the worker reports them.

pub mod detect;
pub mod host;

use anyhow::Result;

use crate::ops::pattern::{CheckReport, Pattern};

/// One rank of an initialized communicator.
pub trait Communicator {
    /// The transport(s) this rank's connections use, for the `transports` column.
    fn transports(&self) -> String;

    /// How this rank is connected, in words for its log.
    fn detail(&self) -> String;

    /// Writes this rank's input pattern into the first `bytes` of the send buffer.
    fn fill_input(&mut self, pattern: &Pattern, bytes: usize) -> Result<()>;

    /// Overwrites the output with a value no correct all-reduce produces, so that a
    /// collective that does nothing cannot pass the check.
    fn poison_output(&mut self, bytes: usize) -> Result<()>;

    /// Checks the first `bytes` of the output against the expected reduction.
    fn check_output(&mut self, pattern: &Pattern, bytes: usize) -> Result<CheckReport>;

    /// Runs `durations.len()` all-reduces of `bytes` back to back and stores the time
    /// between consecutive completions, in nanoseconds.
    fn timed_batch(&mut self, bytes: usize, durations: &mut [u64]) -> Result<()>;

    /// One untimed all-reduce (warm-up, and re-aligning ranks before a batch).
    fn all_reduce(&mut self, bytes: usize) -> Result<()>;
}

/// Creates unique ids and communicators.
pub trait Backend {
    /// Rank 0 calls this first; the text goes to the other ranks.
    fn unique_id(&mut self) -> Result<String>;

    /// Joins the communicator named by `id` as `rank` of `nranks`.
    fn init(&mut self, id: &str, rank: u32, nranks: u32) -> Result<Box<dyn Communicator>>;
}

use crate::config::BackendChoice;
use detect::GpuPresence;

/// The backend a sweep will use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedBackend {
    /// `host` (the NCCL backend is not part of this build).
    pub name: &'static str,
    /// Why this backend, in words for the banner and the manifest.
    pub reason: String,
}

/// Applies `--backend` to what the machine has.
pub fn resolve(choice: BackendChoice, gpus: &GpuPresence) -> Result<ResolvedBackend> {
    let unavailable = "the NCCL backend is not available in this build of nccl-bench yet";
    match choice {
        BackendChoice::Host => Ok(ResolvedBackend {
            name: "host",
            reason: "requested with --backend host".into(),
        }),
        BackendChoice::Nccl => anyhow::bail!(
            "{unavailable}; use --backend host to run the CPU host backend (GPUs seen: {})",
            describe_gpus(gpus)
        ),
        BackendChoice::Auto if gpus.has_gpus() => anyhow::bail!(
            "found {} ({unavailable}); use --backend host to measure the CPU host backend instead",
            describe_gpus(gpus)
        ),
        BackendChoice::Auto => Ok(ResolvedBackend {
            name: "host",
            reason: "no NVIDIA GPU found (nothing in /proc/driver/nvidia/gpus, no /dev/nvidia<N>)"
                .into(),
        }),
    }
}

fn describe_gpus(gpus: &GpuPresence) -> String {
    if !gpus.has_gpus() {
        return "none".into();
    }
    let ids = if gpus.bus_ids.is_empty() {
        &gpus.device_nodes
    } else {
        &gpus.bus_ids
    };
    format!("{} NVIDIA GPU(s): {}", gpus.gpu_count(), ids.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_host_only_without_gpus() {
        let none = GpuPresence::default();
        let r = resolve(BackendChoice::Auto, &none).unwrap();
        assert_eq!(r.name, "host");
        assert!(r.reason.contains("no NVIDIA GPU found"));
        let two = GpuPresence {
            driver_loaded: true,
            bus_ids: vec!["0000:4c:00.0".into(), "0000:5d:00.0".into()],
            device_nodes: vec![],
        };
        let err = resolve(BackendChoice::Auto, &two).unwrap_err().to_string();
        assert!(
            err.contains("found 2 NVIDIA GPU(s): 0000:4c:00.0, 0000:5d:00.0"),
            "{err}"
        );
        assert!(resolve(BackendChoice::Nccl, &none)
            .unwrap_err()
            .to_string()
            .contains("--backend host"));
        assert_eq!(resolve(BackendChoice::Host, &two).unwrap().name, "host");
    }
}
