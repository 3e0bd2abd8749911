//! Choosing the backend of a sweep from `--backend` and what the machine has. The
//! NCCL backend's preconditions are checked here, before anything is spawned or
//! written, each failure one line with a hint: the NVIDIA driver, GPUs (enough for
//! `--gpus`), libnccl. What was found goes into the manifest.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::config::{BackendChoice, TransportConfig};
use crate::machine::cuda::{self, cuda_driver, GpuFacts};
use crate::machine::libnccl::{self, Machine, ThisMachine};
use crate::machine::GpuPresence;
pub use crate::model::NcclChoice;
use crate::model::SIMULATED_LABEL;
use crate::nccl::register::Registration;
use crate::ops::collective::Collective;
use crate::units::Bytes;

/// The backend a sweep will use, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedBackend {
    /// `host` or `nccl`: the workers' `--backend` and the CSV's `backend`.
    pub name: &'static str,
    /// Why this backend, in words for the banner and the manifest.
    pub reason: String,
    pub nccl: Option<NcclChoice>,
    /// Configurations that name their own libnccl, with what was found there.
    pub nccl_per_config: Vec<(String, NcclChoice)>,
    pub gpus: Option<GpuFacts>,
    /// Each step of the choice, for `--verbose`.
    pub steps: Vec<String>,
}

impl ResolvedBackend {
    /// The libnccl of the whole run, and of each config that names its own.
    pub fn nccl_paths(&self) -> (Option<PathBuf>, Vec<(String, PathBuf)>) {
        let own = self
            .nccl_per_config
            .iter()
            .map(|(name, n)| (name.clone(), n.path.clone()))
            .collect();
        (self.nccl.as_ref().map(|n| n.path.clone()), own)
    }

    /// The libnccl a config loads: its own `nccl_lib` when it names one, else the
    /// run's (none on the host backend).
    pub fn nccl_for(&self, config: &str) -> Option<&NcclChoice> {
        self.nccl_per_config
            .iter()
            .find(|(name, _)| name == config)
            .map(|(_, choice)| choice)
            .or(self.nccl.as_ref())
    }

    /// Whether a libnccl of the run is the simulated-GPU test stand-in.
    pub fn simulated(&self) -> bool {
        self.nccl.iter().any(|n| n.simulated)
            || self.nccl_per_config.iter().any(|(_, n)| n.simulated)
    }

    /// The backend as results name it: `nccl-sim` on the test stand-in, so that
    /// nothing simulated passes for a measurement.
    pub fn label(&self) -> &'static str {
        if self.simulated() {
            SIMULATED_LABEL
        } else {
            self.name
        }
    }

    fn host(reason: &str) -> ResolvedBackend {
        ResolvedBackend {
            name: "host",
            reason: reason.to_string(),
            nccl: None,
            nccl_per_config: Vec::new(),
            gpus: None,
            steps: vec![format!("backend: host ({reason})")],
        }
    }
}

/// Applies `--backend` to this machine.
/// Whether every libnccl the run loads has the calls each collective needs (NCCL's
/// own, or `ncclSend`/`ncclRecv` in a group where nccl-tests builds it from them),
/// and each config's the calls its buffer registration needs: a sweep that asks for
/// one a library lacks is refused before anything runs. The host backend runs every
/// collective and registers nothing.
pub fn check_calls(
    backend: &ResolvedBackend,
    collectives: &[Collective],
    configs: &[TransportConfig],
) -> Result<()> {
    let registers = |c: &&TransportConfig| c.register.is_some_and(|r| r != Registration::None);
    if backend.name != "nccl" {
        if let Some(c) = configs.iter().find(registers) {
            bail!(
                "config '{}' registers its buffers with NCCL (register = {}), which the {} backend does not have: use --backend nccl, or leave --register out",
                c.name,
                c.register.unwrap_or_default(),
                backend.name
            );
        }
        return Ok(());
    }
    let (run, own) = backend.nccl_paths();
    for path in run.iter().chain(own.iter().map(|(_, p)| p)) {
        let nccl = crate::backend::nccl::Nccl::load(path)?;
        let version = nccl
            .version()
            .map(|v| v.to_string())
            .unwrap_or_else(|_| "of unknown version".into());
        let missing: Vec<&str> = collectives
            .iter()
            .filter(|&&c| nccl.runs(c) == crate::backend::nccl::Runs::Missing)
            .map(|c| c.name())
            .collect();
        if !missing.is_empty() {
            bail!(
                "--coll {}: NCCL {version} at {} lacks the calls they need (their own, or ncclSend, ncclRecv, ncclGroupStart and ncclGroupEnd): use a newer libnccl (--nccl-lib) or leave them out",
                missing.join(","),
                path.display()
            );
        }
    }
    for c in configs.iter().filter(registers) {
        let Some(choice) = backend.nccl_for(&c.name) else {
            continue;
        };
        let nccl = crate::backend::nccl::Nccl::load(&choice.path)?;
        let register = c.register.unwrap_or_default();
        if let Some(why) = register.missing_call(nccl.version().ok(), &nccl.lacks(register)) {
            bail!("config '{}': {why}", c.name);
        }
    }
    Ok(())
}

pub fn resolve(
    choice: BackendChoice,
    gpus: &GpuPresence,
    nccl_lib: Option<&Path>,
    configs: &[TransportConfig],
    max_ranks: u32,
) -> Result<ResolvedBackend> {
    let nccl_preflight = |gpus, lib, max_ranks, machine: &dyn Machine| {
        let mut resolved = nccl_preflight(gpus, lib, max_ranks, machine)?;
        for c in configs {
            if let Some(own) = &c.nccl_lib {
                let found = libnccl::discover(Some(own), machine)
                    .map_err(|e| anyhow::anyhow!("config '{}': {e}", c.name))?;
                resolved
                    .nccl_per_config
                    .push((c.name.clone(), choice_of(found)));
            }
        }
        Ok::<_, anyhow::Error>(resolved)
    };
    match choice {
        BackendChoice::Host => Ok(ResolvedBackend::host("requested with --backend host")),
        BackendChoice::Nccl => nccl_preflight(gpus, nccl_lib, max_ranks, &ThisMachine),
        BackendChoice::Auto if gpus.has_gpus() => {
            nccl_preflight(gpus, nccl_lib, max_ranks, &ThisMachine)
        }
        BackendChoice::Auto => Ok(ResolvedBackend::host(
            "no NVIDIA GPU found (nothing in /proc/driver/nvidia/gpus, no /dev/nvidia<N>)",
        )),
    }
}

fn nccl_preflight(
    gpus: &GpuPresence,
    nccl_lib: Option<&Path>,
    max_ranks: u32,
    machine: &dyn Machine,
) -> Result<ResolvedBackend> {
    if let Err(why) = cuda_driver() {
        bail!(
            "no NVIDIA driver found (libcuda.so.1: {why}); the NCCL backend needs NVIDIA GPUs. Use --backend host to measure the CPU host backend"
        );
    }
    let facts = match cuda::read() {
        Ok(f) if !f.gpus.is_empty() => f,
        Ok(_) => bail!(
            "the NVIDIA driver is present but no GPU is visible ({}); check CUDA_VISIBLE_DEVICES and the container's --gpus option",
            describe_gpus(gpus)
        ),
        Err(e) => bail!("the NVIDIA driver does not answer: {e:#}; check nvidia-smi"),
    };
    if max_ranks as usize > facts.gpus.len() {
        let list: Vec<String> = facts
            .gpus
            .iter()
            .map(|g| format!("{} {} ({})", g.index, g.name, g.bus_id))
            .collect();
        bail!(
            "--gpus asks for {max_ranks} GPUs but {} visible: {}",
            if facts.gpus.len() == 1 {
                "only 1 is".to_string()
            } else {
                format!("only {} are", facts.gpus.len())
            },
            list.join(", ")
        );
    }
    let found = libnccl::discover(nccl_lib, machine).map_err(anyhow::Error::new)?;
    let mut steps = vec![
        "NVIDIA driver: libcuda.so.1 loads".to_string(),
        format!(
            "GPUs: {}",
            facts
                .gpus
                .iter()
                .map(|g| format!("{} {} ({})", g.index, g.name, g.bus_id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    steps.extend(
        found
            .tried
            .iter()
            .map(|a| format!("libnccl: {}: {}", a.place, a.outcome)),
    );
    steps.push(format!(
        "libnccl: {}: found {} (NCCL {})",
        found.how,
        found.path.display(),
        found.version
    ));
    Ok(ResolvedBackend {
        name: "nccl",
        reason: format!(
            "NCCL {} ({}), {} GPU(s), driver {}, CUDA {}",
            found.version,
            found.path.display(),
            facts.gpus.len(),
            facts.driver_version,
            facts.cuda_version
        ),
        nccl: Some(choice_of(found)),
        nccl_per_config: Vec::new(),
        gpus: Some(facts),
        steps,
    })
}

/// What a rank needs on its GPU besides the send and receive buffers: the CUDA
/// context and NCCL's own buffers (channels x peers x protocols), a few hundred MiB
/// on current GPUs; 1 GiB keeps the check on the safe side of "will not fit".
pub const GPU_MEMORY_MARGIN: u64 = 1 << 30;

/// Refuses, before any process starts, a largest size whose send and receive
/// buffers cannot fit on one of `devices` (a one-line error instead of a CUDA
/// out-of-memory failure in every case). Free memory counts where NVML gave it
/// (another job on the GPU leaves less than the total), else the total.
pub fn check_gpu_memory(facts: &GpuFacts, devices: &[usize], max_bytes: u64) -> Result<()> {
    let need = 2 * max_bytes + GPU_MEMORY_MARGIN;
    for &d in devices {
        let Some(gpu) = facts.gpus.iter().find(|g| g.index == d) else {
            continue;
        };
        let (have, what) = match gpu.free_bytes {
            Some(free) => (
                free,
                format!("{} free of {}", Bytes(free), Bytes(gpu.memory_bytes)),
            ),
            None => (gpu.memory_bytes, Bytes(gpu.memory_bytes).to_string()),
        };
        if have > 0 && need > have {
            bail!(
                "{} messages {SIZE_FLAGS} do not fit on GPU {d} ({}, {what}): a rank needs {} (send and receive buffers of the largest size, plus {} for the CUDA context and NCCL's buffers), {} more than there is; use a smaller size",
                Bytes(max_bytes),
                gpu.name,
                Bytes(need),
                Bytes(GPU_MEMORY_MARGIN),
                Bytes(need - have)
            );
        }
    }
    Ok(())
}

/// Where a size that does not fit comes from, in the errors that say so.
pub const SIZE_FLAGS: &str = "(the largest: -e/--maxbytes, or a soak's --size)";

/// Host memory a GPU rank takes besides its copy of the output: the CUDA context,
/// NCCL's pinned host buffers and proxy state, a few hundred MiB per process.
pub const HOST_MEMORY_MARGIN: u64 = 512 << 20;

/// Refuses a sweep whose `ranks` local GPU ranks cannot all keep their host copy of
/// the largest output (each rank checks its result in host memory) in the memory
/// available (`MemAvailable` of /proc/meminfo, in bytes; `None`: unknown, no check).
pub fn check_host_memory(available: Option<u64>, ranks: u32, max_bytes: u64) -> Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    let need = u64::from(ranks) * (max_bytes + HOST_MEMORY_MARGIN);
    if need > available {
        bail!(
            "{} messages {SIZE_FLAGS} need {} of host memory for {ranks} GPU rank(s) ({} each: a host copy of the largest output to check it, plus {} for the CUDA context and NCCL), {} more than the {} available; use a smaller size or fewer ranks",
            Bytes(max_bytes),
            Bytes(need),
            Bytes(max_bytes + HOST_MEMORY_MARGIN),
            Bytes(HOST_MEMORY_MARGIN),
            Bytes(need - available),
            Bytes(available)
        );
    }
    Ok(())
}

/// Without `-e` on GPUs: the sizes go on by the step factor up to the size from
/// which the published figures for these GPUs hold (the largest `from_bytes` of the
/// single-node rows of configs/expected.toml, or `--expected`, for the GPU counts
/// swept), as far as GPU and host memory allow (`fits`). An 8-GPU H100 sweep then
/// reaches 4 GiB, where the NVLS figure holds, instead of stopping at 128 MiB where
/// every verdict says "not comparable yet". Returns a note when memory stopped it
/// short.
pub fn reach_figures(
    settings: &mut crate::config::SweepSettings,
    facts: &GpuFacts,
    fits: impl Fn(u64) -> bool,
) -> Option<String> {
    if !settings.reach_figures {
        return None;
    }
    let user = settings
        .expected
        .as_deref()
        .and_then(|text| crate::config::expected::parse(text, "--expected").ok())
        .unwrap_or_default();
    let rows = crate::config::expected::merged(&[user]);
    let reach = Reach {
        step: settings.step,
        elem: settings.dtype.size() as u64,
        gpu_counts: &settings.gpu_counts,
        gpu_name: &facts.gpus.first()?.name,
    };
    reach.extend(&mut settings.sizes, &rows, fits)
}

/// What `reach_figures` extends by.
struct Reach<'a> {
    step: crate::config::sizes::Step,
    elem: u64,
    gpu_counts: &'a [u32],
    gpu_name: &'a str,
}

impl Reach<'_> {
    fn extend(
        &self,
        sizes: &mut Vec<u64>,
        rows: &[crate::config::expected::Platform],
        fits: impl Fn(u64) -> bool,
    ) -> Option<String> {
        let crate::config::sizes::Step::Factor(factor) = self.step else {
            return None;
        };
        let name = self.gpu_name;
        let target = rows
            .iter()
            .filter(|r| r.nodes == 1 && r.gpu.iter().any(|p| p.matches(name)))
            .filter(|r| r.gpus.is_none_or(|g| self.gpu_counts.contains(&g)))
            .map(|r| r.from_bytes)
            .max()?;
        let mut last = sizes.iter().copied().max()?;
        while last < target {
            let next = last.saturating_mul(factor) / self.elem * self.elem;
            if !fits(next) {
                return Some(format!(
                    "the published figures for {name} hold from {}, but GPU or host memory stops the sizes at {} (without -e the sweep goes as far as memory allows)",
                    Bytes(target),
                    Bytes(last)
                ));
            }
            sizes.push(next);
            last = next;
        }
        None
    }
}

/// `check_host_memory` with this machine's available memory.
pub fn check_host_memory_here(ranks: u32, max_bytes: u64) -> Result<()> {
    check_host_memory(crate::machine::host::memory_available(), ranks, max_bytes)
}

fn choice_of(found: libnccl::Found) -> NcclChoice {
    let simulated = super::nccl::Nccl::load(&found.path).is_ok_and(|n| n.simulated());
    NcclChoice {
        path: found.path,
        version: found.version.to_string(),
        found_by: found.how,
        simulated,
    }
}

fn describe_gpus(gpus: &GpuPresence) -> String {
    if !gpus.has_gpus() {
        return "the kernel driver shows none".into();
    }
    let ids = if gpus.bus_ids.is_empty() {
        &gpus.device_nodes
    } else {
        &gpus.bus_ids
    };
    format!(
        "the kernel driver shows {} GPU(s): {}",
        gpus.gpu_count(),
        ids.join(", ")
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn without_e_the_sizes_reach_the_published_figures_as_memory_allows() {
        use crate::config::sizes::Step;
        let rows = crate::config::expected::shipped();
        let counts = [2, 4, 8];
        let h100 = Reach {
            step: Step::Factor(2),
            elem: 4,
            gpu_counts: &counts,
            gpu_name: "NVIDIA H100 80GB HBM3",
        };
        // 8 x H100: the NVLS figure holds from 4 GiB.
        let mut sizes = vec![64 << 20, 128 << 20];
        assert_eq!(h100.extend(&mut sizes, &rows, |_| true), None);
        assert_eq!(
            sizes[2..],
            [256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30]
        );
        // Memory stops it at 1 GiB, and says so.
        let mut sizes = vec![128 << 20];
        let note = h100.extend(&mut sizes, &rows, |b| b <= 1 << 30).unwrap();
        assert_eq!(sizes.last(), Some(&(1 << 30)));
        assert!(
            note.starts_with("the published figures for NVIDIA H100 80GB HBM3 hold from 4 GiB, but GPU or host memory stops the sizes at 1 GiB"),
            "{note}"
        );
        // A GPU without a published figure, or sizes by increments: unchanged.
        let other = Reach {
            gpu_name: "NVIDIA GeForce GTX 1080",
            ..h100
        };
        let mut sizes = vec![128 << 20];
        assert_eq!(other.extend(&mut sizes, &rows, |_| true), None);
        assert_eq!(sizes, [128 << 20]);
        let by_bytes = Reach {
            step: Step::Bytes(1 << 20),
            ..h100
        };
        assert_eq!(by_bytes.extend(&mut sizes, &rows, |_| true), None);
        assert_eq!(sizes, [128 << 20]);
    }
    use super::*;

    #[test]
    fn a_largest_size_that_cannot_fit_on_a_gpu_is_refused_in_one_line() {
        let gpu = |index, gib: u64| crate::model::GpuInfo {
            free_bytes: None,
            index,
            name: "NVIDIA H100 80GB HBM3".into(),
            bus_id: format!("0000:{index:02x}:00.0"),
            memory_bytes: gib << 30,
        };
        let facts = GpuFacts {
            driver_version: "550.54.15".into(),
            cuda_version: "12.4".into(),
            gpus: vec![gpu(0, 80), gpu(1, 16)],
            p2p: vec![],
        };
        assert!(check_gpu_memory(&facts, &[0, 1], 1 << 30).is_ok());
        assert!(check_gpu_memory(&facts, &[0], 32 << 30).is_ok());
        let e = check_gpu_memory(&facts, &[0, 1], 32 << 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("32 GiB messages (the largest: -e/--maxbytes, or a soak's --size) do not fit on GPU 1 (NVIDIA H100 80GB HBM3, 16 GiB): a rank needs 65 GiB"),
            "{e}"
        );
        assert!(!e.contains('\n'));

        // Another process holds 70 GiB of GPU 0: free memory is what counts.
        let mut busy = facts.clone();
        busy.gpus[0].free_bytes = Some(10 << 30);
        assert!(check_gpu_memory(&busy, &[0], 4 << 30).is_ok());
        let e = check_gpu_memory(&busy, &[0], 8 << 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("8 GiB messages (the largest: -e/--maxbytes, or a soak's --size) do not fit on GPU 0 (NVIDIA H100 80GB HBM3, 10 GiB free of 80 GiB): a rank needs 17 GiB"),
            "{e}"
        );
        assert!(e.contains("7 GiB more than there is"), "{e}");
    }

    #[test]
    fn host_memory_for_every_ranks_output_copy_is_checked() {
        let available = Some(16 << 30);
        check_host_memory(available, 8, 1 << 30).unwrap();
        check_host_memory(None, 8, 64 << 30).unwrap();
        let e = check_host_memory(available, 8, 2 << 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "2 GiB messages (the largest: -e/--maxbytes, or a soak's --size) need 20 GiB of host memory for 8 GPU rank(s) (2.5 GiB each"
            ),
            "{e}"
        );
        assert!(e.contains("4 GiB more than the 16 GiB available"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn auto_falls_back_to_host_only_without_gpus() {
        let none = GpuPresence::default();
        let r = resolve(BackendChoice::Auto, &none, None, &[], 2).unwrap();
        assert_eq!(r.name, "host");
        assert!(r.reason.contains("no NVIDIA GPU found"));
        let two = GpuPresence {
            driver_loaded: true,
            bus_ids: vec!["0000:4c:00.0".into(), "0000:5d:00.0".into()],
            device_nodes: vec![],
        };
        // Without the driver library (this machine), auto with GPUs and nccl say so.
        if cuda_driver().is_err() {
            let err = resolve(BackendChoice::Auto, &two, None, &[], 2)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("no NVIDIA driver found (libcuda.so.1"),
                "{err}"
            );
            let err = resolve(BackendChoice::Nccl, &none, None, &[], 2)
                .unwrap_err()
                .to_string();
            assert!(err.contains("--backend host"), "{err}");
        } else {
            // With the driver, auto on GPUs goes on to NCCL: whatever it finds next
            // (a libnccl or not), it never says the driver is missing.
            if let Err(e) = resolve(BackendChoice::Auto, &two, None, &[], 2) {
                assert!(!e.to_string().contains("no NVIDIA driver found"), "{e}");
            }
        }
        assert_eq!(
            resolve(BackendChoice::Host, &two, None, &[], 2)
                .unwrap()
                .name,
            "host"
        );
    }
}
