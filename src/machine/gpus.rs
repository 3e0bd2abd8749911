//! Is there an NVIDIA GPU here? Answered from what the kernel driver exposes
//! (`/proc/driver/nvidia/gpus/<bus id>`, `/dev/nvidia<N>`), without loading any
//! library, so that `--backend auto` can decide on any machine.

use std::path::Path;

/// What the machine shows of NVIDIA GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuPresence {
    pub driver_loaded: bool,
    /// PCI bus ids of the GPUs the driver registered.
    pub bus_ids: Vec<String>,
    /// `/dev/nvidia<N>` device nodes (what a container is given).
    pub device_nodes: Vec<String>,
}

impl GpuPresence {
    pub fn probe() -> GpuPresence {
        Self::probe_root(Path::new("/"))
    }

    /// Probes below `root` (tests pass a fake tree).
    pub fn probe_root(root: &Path) -> GpuPresence {
        let list = |dir: &Path, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter_map(|e| e.file_name().into_string().ok())
                        .filter(|n| keep(n))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names
        };
        let bus_ids = list(&root.join("proc/driver/nvidia/gpus"), &|_| true);
        let device_nodes = list(&root.join("dev"), &|n| {
            n.strip_prefix("nvidia")
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        });
        GpuPresence {
            driver_loaded: root.join("proc/driver/nvidia/version").exists(),
            bus_ids,
            device_nodes,
        }
    }

    pub fn gpu_count(&self) -> usize {
        self.bus_ids.len().max(self.device_nodes.len())
    }

    pub fn has_gpus(&self) -> bool {
        self.gpu_count() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_gpus_in_a_fake_tree() {
        let root = tempfile::tempdir().unwrap();
        assert!(!GpuPresence::probe_root(root.path()).has_gpus());
        let gpus = root.path().join("proc/driver/nvidia/gpus");
        std::fs::create_dir_all(gpus.join("0000:4c:00.0")).unwrap();
        std::fs::create_dir_all(gpus.join("0000:5d:00.0")).unwrap();
        std::fs::write(root.path().join("proc/driver/nvidia/version"), "NVRM").unwrap();
        std::fs::create_dir_all(root.path().join("dev")).unwrap();
        for node in ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"] {
            std::fs::write(root.path().join("dev").join(node), "").unwrap();
        }
        let p = GpuPresence::probe_root(root.path());
        assert!(p.driver_loaded);
        assert_eq!(p.bus_ids, ["0000:4c:00.0", "0000:5d:00.0"]);
        assert_eq!(p.device_nodes, ["nvidia0", "nvidia1"]);
        assert_eq!(p.gpu_count(), 2);
    }
}
