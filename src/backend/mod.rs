//! Where the collectives run. A `Backend` makes the unique id (rank 0) and joins a
//! communicator; a `Communicator` owns the buffers of one rank, sized once for the
//! largest message, and runs timed batches of back-to-back all-reduces. The
//! measurement loop (`sweep::worker`) is the same for every backend.
//!
//! Backends never print: they return errors, and the worker reports them.

pub mod detect;
pub mod host;
pub mod nccl;

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

/// Applies `--backend` to what the machine has. The NCCL backend's preconditions
/// are checked here, before anything is spawned or written, each failure one line
/// with a hint: the NVIDIA driver, GPUs, then libnccl.
pub fn resolve(
    choice: BackendChoice,
    gpus: &GpuPresence,
    nccl_lib: Option<&std::path::Path>,
) -> Result<ResolvedBackend> {
    match choice {
        BackendChoice::Host => Ok(ResolvedBackend {
            name: "host",
            reason: "requested with --backend host".into(),
        }),
        BackendChoice::Nccl => nccl_preflight(gpus, nccl_lib, &nccl::discovery::ThisMachine),
        BackendChoice::Auto if gpus.has_gpus() => {
            nccl_preflight(gpus, nccl_lib, &nccl::discovery::ThisMachine)
        }
        BackendChoice::Auto => Ok(ResolvedBackend {
            name: "host",
            reason: "no NVIDIA GPU found (nothing in /proc/driver/nvidia/gpus, no /dev/nvidia<N>)"
                .into(),
        }),
    }
}

/// Whether the NVIDIA driver's library can be loaded (cudarc panics without it, so
/// this is asked before CUDA is touched).
pub fn cuda_driver() -> std::result::Result<(), String> {
    // SAFETY: loading libcuda runs its initializers, which have no preconditions.
    unsafe { libloading::Library::new("libcuda.so.1") }
        .map(drop)
        .map_err(|e| e.to_string())
}

fn nccl_preflight(
    gpus: &GpuPresence,
    nccl_lib: Option<&std::path::Path>,
    machine: &dyn nccl::discovery::Machine,
) -> Result<ResolvedBackend> {
    if let Err(why) = cuda_driver() {
        anyhow::bail!(
            "no NVIDIA driver found (libcuda.so.1: {why}); the NCCL backend needs NVIDIA GPUs. Use --backend host to measure the CPU host backend"
        );
    }
    if !gpus.has_gpus() {
        anyhow::bail!("the NVIDIA driver library is present but no GPU is visible (no /proc/driver/nvidia/gpus entries, no /dev/nvidia<N>); check CUDA_VISIBLE_DEVICES and the container's --gpus option");
    }
    let found = nccl::discovery::discover(nccl_lib, machine).map_err(anyhow::Error::new)?;
    anyhow::bail!(
        "found {} and NCCL {} at {} ({}), but running collectives on GPUs is not part of this build of nccl-bench yet; use --backend host to run the CPU host backend",
        describe_gpus(gpus),
        found.version,
        found.path.display(),
        found.how
    )
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
        let r = resolve(BackendChoice::Auto, &none, None).unwrap();
        assert_eq!(r.name, "host");
        assert!(r.reason.contains("no NVIDIA GPU found"));
        let two = GpuPresence {
            driver_loaded: true,
            bus_ids: vec!["0000:4c:00.0".into(), "0000:5d:00.0".into()],
            device_nodes: vec![],
        };
        // Without the driver library (this machine), auto with GPUs and nccl say so.
        if cuda_driver().is_err() {
            let err = resolve(BackendChoice::Auto, &two, None)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("no NVIDIA driver found (libcuda.so.1"),
                "{err}"
            );
            let err = resolve(BackendChoice::Nccl, &none, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains("--backend host"), "{err}");
        }
        assert_eq!(
            resolve(BackendChoice::Host, &two, None).unwrap().name,
            "host"
        );
    }
}
