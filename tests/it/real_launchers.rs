//! `nccl-bench run` and `scripts/mpirun-sweep.sh` under the real Open MPI `mpirun`
//! (Debian `openmpi-bin`, installed by `.ci/run`), 4 host-backend ranks on this
//! machine: every case ok, the manifest's launcher and rank layout, the run
//! directory shaped like a `sweep` of the same cases, and a killed `mpirun` ending
//! every rank. The stand-in launchers (tests/fixtures/fake-launchers) still cover
//! what one machine cannot show with the real ones (several nodes' hostlists,
//! MPICH's variables).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, free_port, rows, rows_so_far, text, wait_no_processes};
use nccl_bench::test_inputs::{need, Need};

/// One round: the kill tests wait for a first case's row, which several rounds
/// write only at their last round.
const FLAGS: [&str; 10] = [
    "--backend",
    "host",
    "-b",
    "1K",
    "-e",
    "4K",
    "-n",
    "3",
    "--rounds",
    "1",
];

/// `mpirun -np 4` with what a root container and a 2-core machine need, and
/// nothing from the machine's NCCL or launcher environment.
fn mpirun(exe: &Path, port: u16) -> Command {
    let mut c = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") || k.starts_with("OMPI_") || k.starts_with("SLURM_") {
            c.env_remove(k);
        }
    }
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .args([
            "-np",
            "4",
            "--oversubscribe",
            "-x",
            "MASTER_ADDR",
            "-x",
            "MASTER_PORT",
        ]);
    c
}

fn tags(run: &Path) -> BTreeSet<String> {
    rows(run)
        .into_iter()
        .map(|r| r["hist_tag"].clone())
        .collect()
}

#[test]
fn four_ranks_under_open_mpi_make_the_run_directory_a_sweep_makes() {
    let _machine = crate::common::shared();
    let Some(exe) = need(Need::OpenMpi) else {
        return;
    };
    let (tmp, shm) = common::scratch_with_shm();
    let run = tmp.path().join("by-mpirun");
    let o = mpirun(&exe, free_port())
        .arg(bin())
        .args(["run", "--transports", "default", "--plain", "--run-dir"])
        .arg(&run)
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(&shm)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    common::assert_four_local_ranks(&run, 3, "Open MPI");

    // The same cases by `sweep`: the same columns and the same histograms.
    let out = tmp.path().join("swept");
    let o = common::sweep(&out, &shm)
        .args([
            "--gpus",
            "4",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "4K",
            "-n",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let swept = common::run_dir(&out);
    let header = |dir: &Path| {
        std::fs::read_to_string(dir.join("results.csv"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(header(&run), header(&swept));
    let first_takes = |dir: &Path| -> BTreeSet<String> {
        tags(dir)
            .into_iter()
            .map(|t| t.trim_end_matches("/remeasured").to_string())
            .collect()
    };
    // `--gpus 4` sweeps 2 and 4 ranks: the 4-rank cases are the same.
    let swept_at_4: BTreeSet<String> = first_takes(&swept)
        .into_iter()
        .filter(|t| t.contains("/n4/"))
        .collect();
    assert_eq!(first_takes(&run), swept_at_4);
    assert!(run.join("report.md").is_file());
    let marker = shm.to_string_lossy().into_owned();
    assert!(wait_no_processes(&marker, Duration::from_secs(5)).is_empty());
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}

#[test]
fn the_mpirun_script_sweeps_every_config_under_open_mpi() {
    let _machine = crate::common::shared();
    let Some(exe) = need(Need::OpenMpi) else {
        return;
    };
    let (tmp, shm) = common::scratch_with_shm();
    let run = tmp.path().join("by-script");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(repo.join("scripts/mpirun-sweep.sh"))
        .current_dir(&repo)
        .env("NCCL_BENCH", bin())
        .env("MPIRUN", &exe)
        .env("MPIRUN_ARGS", "--oversubscribe")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", free_port().to_string())
        .env_remove("NCCL_BENCH_FAULT")
        .args(["-np", "4", "--config"])
        .arg(repo.join("tests/fixtures/two-configs.toml"))
        .arg("--run-dir")
        .arg(&run)
        .arg("--")
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(&shm)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut configs: Vec<String> = rows(&run)
        .into_iter()
        .map(|r| r["config"].clone())
        .collect();
    configs.dedup();
    assert_eq!(configs, ["default", "shm-off"]);
    assert!(rows(&run).iter().all(|r| r["status"] == "ok"));
    assert!(run.join("report.md").is_file());
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"launcher\": \"Open MPI\""),
        "{manifest}"
    );
}

/// SIGTERM to `mpirun` while a rank hangs: Open MPI passes it on, rank 0 stops the
/// sweep (the manifest says `interrupted`, the finished case is kept), and no rank
/// or worker process is left.
#[test]
fn a_killed_mpirun_ends_every_rank() {
    let _machine = crate::common::shared();
    let Some(exe) = need(Need::OpenMpi) else {
        return;
    };
    let (tmp, shm) = common::scratch_with_shm();
    let run = tmp.path().join("killed");
    let mut child = mpirun(&exe, free_port())
        .env("NCCL_BENCH_FAULT", "hang:rank=1:bytes=2K")
        .args(["-x", "NCCL_BENCH_FAULT"])
        .arg(bin())
        .args(["run", "--transports", "default", "--plain", "--run-dir"])
        .arg(&run)
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(&shm)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // 1 KiB finishes, then rank 1 hangs at 2 KiB (its worker never answers).
    let start = Instant::now();
    while rows_so_far(&run) < 1 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(rows_so_far(&run), 1, "the first case did not finish");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    common::assert_stopped_after_the_first_case(&run, &shm, "mpirun");
}
