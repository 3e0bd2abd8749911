//! GPUs and libnccl: what the kernel driver shows (`GpuPresence`), what the CUDA
//! driver says when it loads (names, versions, the P2P matrix, via `machine::cuda`),
//! NVLink from NVML and NVSwitch devices; and the libnccl `sweep` would load (the same
//! `machine::libnccl` search). The driver library is checked with `cuda_driver()` before
//! cudarc is touched (cudarc panics without it) and only on the real machine. A
//! machine without GPUs is a WARN, not a FAIL: the host backend still works there.

use std::path::{Path, PathBuf};

use super::nvlink;
use crate::machine::cuda::{self, cuda_driver, GpuFacts};
use crate::machine::libnccl::{self, Machine, ThisMachine};
use crate::machine::GpuPresence;
use crate::machine::Root;
use crate::model::{Check, Status};
use crate::nccl::NcclVersion;
use crate::units::human_bytes;
use crate::units::plural;

pub const ID: &str = "gpu";
pub const TITLE: &str = "GPUs";
pub const LIB_ID: &str = "nccl.lib";
pub const LIB_TITLE: &str = "libnccl";

/// Which GPU pairs lack peer-to-peer access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct P2pSummary {
    pub gpus: usize,
    /// Pairs (i < j) where either direction has no P2P.
    pub missing: Vec<(usize, usize)>,
}

impl P2pSummary {
    pub fn from_matrix(p2p: &[Vec<bool>]) -> P2pSummary {
        let n = p2p.len();
        let can = |i: usize, j: usize| p2p.get(i).and_then(|r| r.get(j)).copied() == Some(true);
        let missing = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| !(can(i, j) && can(j, i)))
            .collect();
        P2pSummary { gpus: n, missing }
    }

    /// `0-1, 0-2, ... and 20 more`.
    pub fn describe_missing(&self) -> String {
        const SHOWN: usize = 8;
        let mut s: Vec<String> = self
            .missing
            .iter()
            .take(SHOWN)
            .map(|(i, j)| format!("{i}-{j}"))
            .collect();
        if self.missing.len() > SHOWN {
            s.push(format!("and {} more", self.missing.len() - SHOWN));
        }
        s.join(", ")
    }
}

/// What the CUDA driver answered.
#[derive(Debug, Clone)]
enum Driver {
    /// Not asked, and why.
    NotAsked(&'static str),
    /// libcuda.so.1 does not load.
    Missing(String),
    Failed(String),
    Answered(GpuFacts),
}

/// Everything known about the GPUs of a machine.
#[derive(Debug, Clone)]
pub struct GpuSurvey {
    presence: GpuPresence,
    driver: Driver,
    nvswitches: usize,
    nvlink: Option<Result<Vec<u32>, String>>,
    visible_devices: Option<String>,
}

impl GpuSurvey {
    pub fn probe(root: &Root) -> GpuSurvey {
        let presence = GpuPresence::probe_root(&root.path(Path::new("/")));
        let driver = if !presence.has_gpus() {
            Driver::NotAsked("no GPU")
        } else if !root.is_real() {
            Driver::NotAsked("the driver is not asked about a fake root")
        } else {
            match cuda_driver() {
                Err(why) => Driver::Missing(why),
                Ok(()) => match cuda::read() {
                    Ok(f) => Driver::Answered(f),
                    Err(e) => Driver::Failed(format!("{e:#}")),
                },
            }
        };
        let nvlink = matches!(driver, Driver::Answered(_)).then(nvlink::active_links);
        GpuSurvey {
            nvswitches: nvlink::nvswitches(root),
            presence,
            driver,
            nvlink,
            visible_devices: root.env("CUDA_VISIBLE_DEVICES").map(str::to_string),
        }
    }

    pub fn has_gpus(&self) -> bool {
        self.presence.has_gpus()
    }

    /// The CUDA version the driver supports (`(12, 4)`), where the driver answered.
    pub fn cuda_driver(&self) -> Option<(u32, u32)> {
        let Driver::Answered(f) = &self.driver else {
            return None;
        };
        let (major, minor) = f.cuda_version.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    }

    pub fn p2p_summary(&self) -> Option<P2pSummary> {
        match &self.driver {
            Driver::Answered(f) if !f.gpus.is_empty() => Some(P2pSummary::from_matrix(&f.p2p)),
            _ => None,
        }
    }

    pub fn check(&self, local_ranks: u32) -> Check {
        let shown = self.presence.gpu_count();
        let kernel = format!("the kernel driver shows {}", plural(shown, "GPU", "GPUs"));
        let mut details: Vec<String> = self
            .presence
            .bus_ids
            .iter()
            .map(|b| format!("kernel driver: {b}"))
            .collect();
        if let Some(v) = &self.visible_devices {
            details.push(format!("CUDA_VISIBLE_DEVICES={v}"));
        }
        if self.nvswitches > 0 {
            details.push(format!(
                "{}: every GPU pair talks over NVLink",
                plural(self.nvswitches, "NVSwitch device", "NVSwitch devices")
            ));
        }
        let facts = match &self.driver {
            Driver::NotAsked("no GPU") => {
                return Check::new(
                    ID,
                    TITLE,
                    Status::Warn,
                    "no NVIDIA GPU found (nothing in /proc/driver/nvidia/gpus, no /dev/nvidia<N>)",
                )
                .with_fix(
                    "The NCCL backend needs NVIDIA GPUs (in a container: `--gpus all` with the \
                     NVIDIA container toolkit); `nccl-bench sweep --backend host` measures the \
                     CPU host backend here",
                )
                .with_details(details)
            }
            Driver::NotAsked(why) => {
                return Check::new(ID, TITLE, Status::Ok, format!("{kernel} ({why})"))
                    .with_details(details)
            }
            Driver::Missing(why) => {
                return Check::new(
                    ID,
                    TITLE,
                    Status::Fail,
                    format!("{kernel} but libcuda.so.1 does not load: {why}"),
                )
                .with_fix(
                    "Install the NVIDIA driver's user-space libraries matching the kernel \
                     module; in a container use the NVIDIA container toolkit (`--gpus all`)",
                )
                .with_details(details)
            }
            Driver::Failed(e) => {
                return Check::new(
                    ID,
                    TITLE,
                    Status::Fail,
                    format!("{kernel} but the CUDA driver does not answer: {e}"),
                )
                .with_fix("Check `nvidia-smi` and dmesg (Xid errors); reboot or reset the GPU if the driver is wedged")
                .with_details(details)
            }
            Driver::Answered(f) => f,
        };
        if facts.gpus.is_empty() {
            return Check::new(
                ID,
                TITLE,
                Status::Fail,
                format!("{kernel} but CUDA sees none"),
            )
            .with_fix("Check CUDA_VISIBLE_DEVICES and the container's `--gpus` option")
            .with_details(details);
        }
        details.extend(facts.gpus.iter().map(|g| {
            format!(
                "GPU {}: {} ({}), {}",
                g.index,
                g.name,
                g.bus_id,
                human_bytes(g.memory_bytes)
            )
        }));
        let p2p = P2pSummary::from_matrix(&facts.p2p);
        let p2p_text = if facts.gpus.len() < 2 {
            "one GPU: no peer".to_string()
        } else if p2p.missing.is_empty() {
            "P2P between every pair".to_string()
        } else {
            details.push(format!(
                "no P2P between {}: NCCL uses SHM there (the network path with NCCL_SHM_DISABLE=1)",
                p2p.describe_missing()
            ));
            format!("{} without P2P", plural(p2p.missing.len(), "pair", "pairs"))
        };
        let nvlink_text = match &self.nvlink {
            Some(Ok(links)) if links.iter().all(|&l| l == 0) => "no active NVLink".to_string(),
            Some(Ok(links)) => {
                let with = links.iter().filter(|&&l| l > 0).count();
                let max = links.iter().copied().max().unwrap_or(0);
                format!(
                    "NVLink on {with} of {} GPUs (up to {max} links each)",
                    links.len()
                )
            }
            Some(Err(e)) => {
                details.push(format!("NVLink: unknown ({e})"));
                "NVLink unknown".to_string()
            }
            None => "NVLink not asked".to_string(),
        };
        if local_ranks as usize > facts.gpus.len() {
            details.push(format!(
                "/dev/shm is sized for {local_ranks} local ranks; {} visible here",
                plural(facts.gpus.len(), "GPU is", "GPUs are")
            ));
        }
        let value = format!(
            "{}, driver {}, CUDA {}; {p2p_text}; {nvlink_text}",
            name_counts(facts),
            facts.driver_version,
            facts.cuda_version
        );
        Check::new(ID, TITLE, Status::Ok, value).with_details(details)
    }
}

/// `8 x NVIDIA H100 80GB HBM3`, or one group per name.
fn name_counts(f: &GpuFacts) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for g in &f.gpus {
        match groups.iter_mut().find(|(n, _)| *n == g.name) {
            Some((_, c)) => *c += 1,
            None => groups.push((g.name.clone(), 1)),
        }
    }
    groups
        .iter()
        .map(|(n, c)| format!("{c} x {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The version of the libnccl `sweep` would load, where one is found.
pub fn library_version(root: &Root, explicit: Option<&Path>) -> Option<NcclVersion> {
    let fake = FakeLibraries(root);
    let machine: &dyn Machine = if root.is_real() { &ThisMachine } else { &fake };
    libnccl::discover(explicit, machine).ok().map(|f| f.version)
}

/// The libnccl `sweep` would load.
pub fn library_check(root: &Root, explicit: Option<&Path>, has_gpus: bool) -> Check {
    let fake = FakeLibraries(root);
    let machine: &dyn Machine = if root.is_real() { &ThisMachine } else { &fake };
    match libnccl::discover(explicit, machine) {
        Ok(found) => {
            let mut details: Vec<String> = found
                .tried
                .iter()
                .map(|a| format!("{}: {}", a.place, a.outcome))
                .collect();
            if found.version >= NcclVersion::from_code(22400) {
                details.push(
                    "NCCL 2.24+ with a CUDA 12.6+ driver may keep SHM buffers in cuMem host \
                     memory rather than /dev/shm"
                        .to_string(),
                );
            }
            let value = format!(
                "NCCL {} at {} (found by {})",
                found.version,
                found.path.display(),
                found.how
            );
            Check::new(LIB_ID, LIB_TITLE, Status::Ok, value).with_details(details)
        }
        Err(nf) => {
            let status = if has_gpus || explicit.is_some() {
                Status::Fail
            } else {
                Status::Warn
            };
            let details = nf
                .tried
                .iter()
                .map(|a| format!("{}: {}", a.place, a.outcome))
                .collect();
            let value = match explicit {
                Some(p) => format!("--nccl-lib {} does not load", p.display()),
                None => "no usable libnccl found".to_string(),
            };
            Check::new(LIB_ID, LIB_TITLE, status, value)
                .with_fix(format!(
                    "pip install nvidia-nccl-cu12 (PyTorch's NCCL), or pass --nccl-lib \
                     /path/to/libnccl.so.2 or set {}",
                    libnccl::ENV_VAR
                ))
                .with_details(details)
        }
    }
}

/// Library discovery on a fake root: files and directories come from the tree,
/// nothing is loaded (the tree's files are not this machine's libraries).
struct FakeLibraries<'r>(&'r Root);

impl Machine for FakeLibraries<'_> {
    fn env(&self, name: &str) -> Option<String> {
        self.0.env(name).map(str::to_string)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.0.path(path).is_file()
    }

    fn glob_dirs(&self, parent: &Path, prefix: &str) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.0.path(parent))
            .map(|it| {
                it.flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(prefix))
                    .map(|n| parent.join(n))
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    fn ldconfig(&self) -> String {
        String::new()
    }

    fn site_packages(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    fn load(&self, _what: &Path) -> Result<(NcclVersion, PathBuf), String> {
        Err("not loaded: --root describes another machine".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;
    use crate::machine::cuda::GpuInfo;

    #[test]
    fn p2p_pairs_missing_in_either_direction_count() {
        let m = vec![
            vec![false, true, false],
            vec![true, false, true],
            vec![true, false, false],
        ];
        let s = P2pSummary::from_matrix(&m);
        assert_eq!(s.missing, [(0, 2), (1, 2)]);
        assert_eq!(s.describe_missing(), "0-2, 1-2");
        let all = P2pSummary::from_matrix(&[vec![false, true], vec![true, false]]);
        assert!(all.missing.is_empty());
    }

    #[test]
    fn no_gpu_is_a_warning_and_a_fake_root_never_asks_the_driver() {
        let c = GpuSurvey::probe(&FakeMachine::new().root()).check(8);
        assert_eq!(c.status, Status::Warn);
        assert!(c.value.starts_with("no NVIDIA GPU found"));
        assert!(c.fix.unwrap().contains("--backend host"));
        let m = FakeMachine::new()
            .dir("/proc/driver/nvidia/gpus/0000:4c:00.0")
            .dir("/proc/driver/nvidia/gpus/0000:5d:00.0")
            .file("/proc/driver/nvidia/version", "NVRM version: 550.54.15\n");
        let survey = GpuSurvey::probe(&m.root());
        assert!(survey.has_gpus() && survey.p2p_summary().is_none());
        let c = survey.check(8);
        assert_eq!(c.status, Status::Ok);
        assert_eq!(
            c.value,
            "the kernel driver shows 2 GPUs (the driver is not asked about a fake root)"
        );
    }

    #[test]
    fn driver_answers_are_summarised() {
        let survey = GpuSurvey {
            presence: GpuPresence::default(),
            driver: Driver::Answered(GpuFacts {
                driver_version: "550.54.15".into(),
                cuda_version: "12.4".into(),
                gpus: (0..2)
                    .map(|index| GpuInfo {
                        free_bytes: None,
                        index,
                        name: "NVIDIA RTX 5090".into(),
                        bus_id: format!("0000:0{index}:00.0"),
                        memory_bytes: 32 << 30,
                    })
                    .collect(),
                p2p: vec![vec![false, false], vec![false, false]],
            }),
            nvswitches: 0,
            nvlink: Some(Ok(vec![0, 0])),
            visible_devices: None,
        };
        let c = survey.check(8);
        assert_eq!(
            c.value,
            "2 x NVIDIA RTX 5090, driver 550.54.15, CUDA 12.4; 1 pair without P2P; no active NVLink"
        );
        assert!(c
            .details
            .iter()
            .any(|d| d.starts_with("no P2P between 0-1: NCCL uses SHM")));
        assert!(c
            .details
            .iter()
            .any(|d| d.contains("sized for 8 local ranks; 2 GPUs are visible")));
        assert_eq!(survey.p2p_summary().unwrap().missing, [(0, 1)]);
    }

    #[test]
    fn library_search_on_a_fake_root_loads_nothing_and_says_where_it_looked() {
        let m = FakeMachine::new().file("/usr/local/cuda-12.4/lib64/libnccl.so.2", "");
        let c = library_check(&m.root(), None, false);
        assert_eq!(
            (c.status, c.value.as_str()),
            (Status::Warn, "no usable libnccl found")
        );
        let text = c.details.join("\n");
        assert!(
            text.contains("/usr/local/cuda-12.4/lib64/libnccl.so.2: not loaded"),
            "{text}"
        );
        let c = library_check(&m.root(), None, true);
        assert_eq!(c.status, Status::Fail);
        let c = library_check(&m.root(), Some(Path::new("/opt/libnccl.so.2")), false);
        assert_eq!(c.status, Status::Fail);
        assert_eq!(c.value, "--nccl-lib /opt/libnccl.so.2 does not load");
    }
}
