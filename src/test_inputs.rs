//! The one rule for tests that need something from outside the repository: the
//! shared fixtures (`../shared/fixtures`), a real libnccl (`NCCL_BENCH_TEST_NCCL_LIB`)
//! or the simulated GPUs (`NCCL_BENCH_TEST_SIM_DIR`), which `scripts/test.sh`
//! provides, and Open MPI's `mpirun` and Slurm with munge (Debian `openmpi-bin`,
//! `slurm-wlm`, `munge`) and Chromium (Debian `chromium`), which `.ci/run` installs.
//! A test whose input is missing fails, saying what it needs, unless
//! `NCCL_BENCH_TEST_SKIP` names the input (`fixtures`, `nccl`, `sim`, `mpi`, `slurm`,
//! `chromium`, or `all`, comma-separated): then it says it is skipped and returns. Nothing is
//! skipped silently, and no variable such as `CI` changes the rule.

use std::path::PathBuf;

/// An input from outside the repository.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// A folder of `../shared/fixtures` (`nccl-logs`, `nccl-tests`).
    Fixtures(&'static str),
    /// A real libnccl.so.2.
    Nccl,
    /// The directory of the simulated GPUs' libraries.
    Sim,
    /// Open MPI's `mpirun`.
    OpenMpi,
    /// Slurm's daemons and commands and munge (a private one-node Slurm is started).
    Slurm,
    /// A Chromium to open the HTML pages in, headless (`NCCL_BENCH_TEST_CHROMIUM`, or
    /// `chromium` on PATH).
    Chromium,
}

impl Need {
    fn name(self) -> &'static str {
        match self {
            Need::Fixtures(_) => "fixtures",
            Need::Nccl => "nccl",
            Need::Sim => "sim",
            Need::OpenMpi => "mpi",
            Need::Slurm => "slurm",
            Need::Chromium => "chromium",
        }
    }

    fn find(self) -> Option<PathBuf> {
        let env = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        match self {
            Need::Fixtures(folder) => Some(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../shared/fixtures")
                    .join(folder),
            )
            .filter(|d| d.is_dir()),
            Need::Nccl => env("NCCL_BENCH_TEST_NCCL_LIB"),
            Need::Chromium => env("NCCL_BENCH_TEST_CHROMIUM").or_else(|| {
                std::env::split_paths(&std::env::var_os("PATH")?)
                    .map(|dir| dir.join("chromium"))
                    .find(|p| p.is_file())
            }),
            Need::Sim => env("NCCL_BENCH_TEST_SIM_DIR"),
            Need::OpenMpi => std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join("mpirun"))
                .find(|p| p.is_file())
                .filter(|p| {
                    std::process::Command::new(p)
                        .arg("--version")
                        .output()
                        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Open MPI"))
                }),
            // The directory of slurmctld; the rest must be beside it or on PATH.
            Need::Slurm => {
                let found = |name: &str| {
                    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
                        .map(|dir| dir.join(name))
                        .find(|p| p.is_file())
                };
                [
                    "slurmd", "munged", "srun", "sbatch", "salloc", "scancel", "sinfo",
                ]
                .iter()
                .all(|n| found(n).is_some())
                .then(|| found("slurmctld"))
                .flatten()
                .and_then(|p| p.parent().map(PathBuf::from))
            }
        }
    }

    fn what(self) -> String {
        match self {
            Need::Fixtures(folder) => format!("../shared/fixtures/{folder} beside the repository"),
            Need::Nccl => "NCCL_BENCH_TEST_NCCL_LIB (a real libnccl.so.2)".into(),
            Need::Sim => "NCCL_BENCH_TEST_SIM_DIR (the simulated GPUs)".into(),
            Need::OpenMpi => {
                "Open MPI's mpirun on PATH (Debian: apt-get install openmpi-bin)".into()
            }
            Need::Slurm => "Slurm and munge (Debian: apt-get install slurm-wlm munge)".into(),
            Need::Chromium => {
                "Chromium on PATH or NCCL_BENCH_TEST_CHROMIUM (Debian: apt-get install chromium)"
                    .into()
            }
        }
    }
}

/// Whether `NCCL_BENCH_TEST_SKIP` (its value given) names `name`.
fn skipped_by(list: &str, name: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|item| item == name || item == "all")
}

/// The input a test needs; `None` (said on stderr) only when `NCCL_BENCH_TEST_SKIP`
/// names it. Panics when it is missing otherwise.
pub fn need(n: Need) -> Option<PathBuf> {
    if let Some(found) = n.find() {
        return Some(found);
    }
    let list = std::env::var("NCCL_BENCH_TEST_SKIP").unwrap_or_default();
    if skipped_by(&list, n.name()) {
        eprintln!(
            "skipped (NCCL_BENCH_TEST_SKIP={list}): this test needs {}",
            n.what()
        );
        return None;
    }
    panic!(
        "this test needs {}: run scripts/test.sh, or set NCCL_BENCH_TEST_SKIP={} to skip it knowingly",
        n.what(),
        n.name()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_named_input_is_skipped() {
        assert!(skipped_by("nccl,sim", "sim"));
        assert!(skipped_by(" fixtures ", "fixtures"));
        assert!(skipped_by("all", "nccl"));
        assert!(!skipped_by("nccl", "sim"));
        assert!(!skipped_by("", "fixtures"));
        assert!(!skipped_by("simulated", "sim"));
    }
}
