//! Helpers for the tests on the simulated GPUs (tests/gpu-sim): where the stand-in
//! is, and `nccl-bench` run on it with a clean NCCL environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nccl_bench::test_inputs::{need, Need};

use super::bin;

pub fn sim_dir() -> Option<PathBuf> {
    need(Need::Sim)
}

/// An event after every all-reduce, with no calibration before a size's first
/// batch: for the tests whose faults count all-reduces.
pub const ONE_EVENT_EACH: (&str, &str) = ("NCCL_BENCH_EVENTS_EVERY", "1");

/// Removes the NCCL_* variables of the environment running the tests.
pub fn without_nccl_env(c: &mut Command) {
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") {
            c.env_remove(k);
        }
    }
}

/// `nccl-bench <args>` on the simulated GPUs of topology `topo`, with a clean NCCL
/// environment plus `env`.
pub fn on_sim(dir: &Path, topo: &str, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    without_nccl_env(&mut c);
    c.args(args)
        .env("LD_LIBRARY_PATH", dir)
        .env("NCCL_BENCH_SIM_TOPO", topo);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// A sweep on the simulated GPUs writing under `out`.
/// `out` is also given as `--shm-dir` (the NCCL backend does not use it): it puts
/// `out` on every worker's command line, so a test can look for leftover workers.
pub fn sim_sweep(
    dir: &Path,
    topo: &str,
    env: &[(&str, &str)],
    out: &Path,
    args: &[&str],
) -> Output {
    let lib = dir.join("libnccl.so.2");
    std::fs::create_dir_all(out).unwrap();
    let mut base = vec![
        "sweep",
        "--backend",
        "nccl",
        "--plain",
        "--nccl-lib",
        lib.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--shm-dir",
        out.to_str().unwrap(),
    ];
    // Small copies keep the link-ceiling measurement quick (the stand-in's copies
    // move real bytes; its rates come from the cost model either way), unless a
    // test asks for other ones.
    if !args.contains(&"--ceiling-bytes") {
        base.extend(["--ceiling-bytes", "4M"]);
    }
    // One round unless a test asks for more: each simulated process group costs a
    // communicator set-up, and rounds have tests of their own.
    if !args.contains(&"--rounds") {
        base.extend(["--rounds", "1"]);
    }
    base.extend_from_slice(args);
    on_sim(dir, topo, env, &base).output().unwrap()
}

/// `nccl-bench sweep --backend nccl` on the simulated GPUs with a 64 MB /dev/shm
/// (Docker's default): a tmpfs in a private mount and user namespace (`unshare`),
/// which prints `left:` and what the sweep left in it. Exit 99: no tmpfs could be
/// mounted.
pub fn sweep_in_small_dev_shm(
    dir: &Path,
    topo: &str,
    env: &[(&str, &str)],
    out: &Path,
    args: &[&str],
) -> Output {
    let script = r#"mount -t tmpfs -o size=64M tmpfs /dev/shm || exit 99; "$@"; rc=$?; echo "left:$(ls -A /dev/shm)"; exit $rc"#;
    let lib = dir.join("libnccl.so.2");
    let mut c = Command::new("unshare");
    without_nccl_env(&mut c);
    c.args([
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(bin())
    .args(["sweep", "--backend", "nccl", "--plain", "--nccl-lib"])
    .arg(&lib)
    .arg("--out")
    .arg(out)
    // As sim_sweep: small copies for the link ceilings (256 MiB ones take 20 s on
    // 8 simulated GPUs without peer access).
    .args(["--ceiling-bytes", "4M"])
    .args(args)
    .env("LD_LIBRARY_PATH", dir)
    .env("NCCL_BENCH_SIM_TOPO", topo);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .expect("unshare (util-linux) is needed for this test")
}
