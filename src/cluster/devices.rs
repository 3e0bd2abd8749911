//! Which GPU each rank of `run` drives: its device among those the launcher left
//! it (`CUDA_VISIBLE_DEVICES`), and the refusal of two ranks on one GPU.

use anyhow::{bail, Result};

use super::wire::Hello;
use crate::machine::cuda::GpuFacts;

/// The CUDA device of this rank among those it sees: a launcher that gives each
/// task its own GPU (`--gpus-per-task 1`) leaves one visible, device 0.
pub(super) fn device_for(local_rank: u32, visible: Option<&str>) -> usize {
    let count = visible.map(|v| v.split(',').filter(|d| !d.trim().is_empty()).count());
    if count == Some(1) {
        0
    } else {
        local_rank as usize
    }
}

/// The PCI bus id of the device a rank drives, or why it has none: the launcher
/// left it fewer GPUs than its local rank needs.
pub(super) fn bus_id_of(
    facts: &GpuFacts,
    device: usize,
    local_rank: u32,
    visible: Option<&str>,
) -> Result<String> {
    let Some(info) = facts.gpus.iter().find(|g| g.index == device) else {
        bail!(
            "local rank {local_rank} would drive CUDA device {device}, but this process sees {} GPU(s){}: give each rank its own GPU (Slurm --gpus-per-task=1, or every GPU of the node visible to every rank)",
            facts.gpus.len(),
            visible
                .map(|v| format!(" (CUDA_VISIBLE_DEVICES={v})"))
                .unwrap_or_default()
        );
    };
    Ok(info.bus_id.clone())
}

/// Two ranks of one host on the same GPU (the same PCI bus id, whatever device
/// number each sees it as): NCCL refuses that ("Duplicate GPU detected",
/// ncclInvalidUsage) once every rank has set up; said here, before any worker starts.
pub(super) fn shared_gpu<'a>(hellos: impl Iterator<Item = &'a Hello>) -> Option<String> {
    let mut seen: std::collections::HashMap<(&str, &str), &Hello> = Default::default();
    for h in hellos {
        let Some(gpu) = h.gpu.as_deref() else {
            continue;
        };
        match seen.entry((h.host.as_str(), gpu)) {
            std::collections::hash_map::Entry::Occupied(first) => {
                let first = first.get();
                return Some(format!(
                    "ranks {} and {} on {} would both drive the GPU at {gpu} (as CUDA device {} and {} of the GPUs each sees): NCCL refuses two ranks on one GPU ('Duplicate GPU detected'); give each rank its own GPU (Slurm --gpus-per-task=1, or every GPU of the node visible to every rank, each rank then taking its local rank's)",
                    first.rank, h.rank, h.host, first.device, h.device
                ));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(h);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::wire::MAGIC;

    fn hello(rank: u32, host: &str, device: usize, gpu: Option<&str>) -> Hello {
        Hello {
            magic: MAGIC.into(),
            rank,
            world_size: 4,
            local_rank: rank % 2,
            device,
            gpu: gpu.map(str::to_string),
            host: host.into(),
            pid: 100 + rank,
            config: "default".into(),
            config_env: Default::default(),
            backend: "nccl".into(),
            nccl: None,
            problem: None,
            job: None,
        }
    }

    #[test]
    fn two_ranks_on_one_gpu_are_refused_whatever_their_device_numbers() {
        // --gpus-per-task=1: every rank sees its GPU as device 0, each a different one.
        let own = [
            hello(0, "n1", 0, Some("00000000:18:00.0")),
            hello(1, "n1", 0, Some("00000000:2A:00.0")),
            hello(2, "n2", 0, Some("00000000:18:00.0")),
            hello(3, "n2", 0, Some("00000000:2A:00.0")),
        ];
        assert_eq!(shared_gpu(own.iter()), None);
        // Every GPU visible, local ranks 0 and 1: devices 0 and 1.
        let all = [
            hello(0, "n1", 0, Some("00000000:18:00.0")),
            hello(1, "n1", 1, Some("00000000:2A:00.0")),
        ];
        assert_eq!(shared_gpu(all.iter()), None);
        // One GPU per node given to two tasks: both see it as device 0.
        let shared = [
            hello(0, "n1", 0, Some("00000000:18:00.0")),
            hello(1, "n1", 0, Some("00000000:18:00.0")),
        ];
        let e = shared_gpu(shared.iter()).unwrap();
        assert!(
            e.starts_with("ranks 0 and 1 on n1 would both drive the GPU at 00000000:18:00.0")
                && e.contains("Duplicate GPU detected")
                && e.contains("--gpus-per-task=1"),
            "{e}"
        );
        // No GPU facts (the host backend): nothing to compare.
        let host = [hello(0, "n1", 0, None), hello(1, "n1", 0, None)];
        assert_eq!(shared_gpu(host.iter()), None);
    }

    #[test]
    fn one_visible_gpu_is_device_0_else_the_local_rank() {
        assert_eq!(device_for(3, None), 3);
        assert_eq!(device_for(3, Some("5")), 0);
        assert_eq!(device_for(3, Some("0,1,2,3")), 3);
        assert_eq!(device_for(1, Some("GPU-8c1d,GPU-77aa")), 1);
    }
}
