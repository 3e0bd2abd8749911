//! The cluster scripts, run for real on one machine: mpirun-sweep.sh and
//! slurm-sweep.sbatch under stand-ins for mpirun and srun that start the ranks
//! with the variables the real launchers give (tests/fixtures/fake-launchers), and
//! regression.sh gating on a comparison. The host backend does the measuring.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, rows, text};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A script with the fake launchers first on PATH and no launcher or NCCL
/// variables from the machine running the tests.
fn script(name: &str) -> Command {
    let mut c = Command::new(repo().join("scripts").join(name));
    let path = format!(
        "{}:{}",
        repo().join("tests/fixtures/fake-launchers").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env_clear()
        .env("PATH", path)
        .env("NCCL_BENCH", bin())
        .current_dir(repo());
    c
}

fn host_flags(shm: &Path) -> Vec<String> {
    [
        "--backend",
        "host",
        "-b",
        "1K",
        "-e",
        "4K",
        "-n",
        "3",
        // What the scripts launch and gate on, not rounds: one each.
        "--rounds",
        "1",
        "--shm-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([shm.to_string_lossy().into_owned()])
    .collect()
}

fn port() -> String {
    common::free_port().to_string()
}

fn configs_of(run: &Path) -> Vec<String> {
    let mut configs: Vec<String> = rows(run).into_iter().map(|r| r["config"].clone()).collect();
    configs.dedup();
    configs
}

fn assert_exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
}

#[test]
fn the_launcher_scripts_sweep_every_config_into_one_run_and_regression_gates_on_it() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let shm = tmp.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    let config = repo().join("tests/fixtures/two-configs.toml");

    // mpirun: 2 ranks, one launch per config, one run directory, a report.
    // MPIRUN and MPIRUN_ARGS carry launcher flags (a root container's).
    let by_mpirun = tmp.path().join("by-mpirun");
    let launched = tmp.path().join("mpirun-args");
    let o = script("mpirun-sweep.sh")
        .args(["-np", "2", "-H", "localhost:2", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&by_mpirun)
        .arg("--")
        .args(host_flags(&shm))
        .env("MASTER_PORT", port())
        .env("MPIRUN", "mpirun --allow-run-as-root")
        .env("MPIRUN_ARGS", "--mca btl tcp,self --oversubscribe")
        .env("FAKE_MPIRUN_LOG", &launched)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let launches = std::fs::read_to_string(&launched).unwrap();
    // The script asks the launcher its --version first (Open MPI or MPICH?).
    let launches: Vec<&str> = launches.lines().filter(|l| *l != "--version").collect();
    assert_eq!(launches.len(), 2, "one launch per config: {launches:?}");
    assert!(
        launches[0].starts_with(
            "--allow-run-as-root --mca btl tcp,self --oversubscribe -np 2 -H localhost:2 -x MASTER_ADDR -x MASTER_PORT "
        ),
        "{launches:?}"
    );
    assert_eq!(configs_of(&by_mpirun), ["default", "shm-off"]);
    assert_eq!(rows(&by_mpirun).len(), 2 * 3);
    assert!(by_mpirun.join("report.md").is_file());
    let manifest = std::fs::read_to_string(by_mpirun.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"launcher\": \"Open MPI\""),
        "{manifest}"
    );

    // Slurm: the batch script in an allocation of 2 tasks, compared to the mpirun run.
    let by_slurm = tmp.path().join("by-slurm");
    let o = script("slurm-sweep.sbatch")
        .arg(&config)
        .arg("--")
        .args(host_flags(&shm))
        .envs([
            ("SLURM_JOB_ID", "7001"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "localhost"),
        ])
        .env("SLURM_SUBMIT_DIR", repo())
        .env("RUN_DIR", &by_slurm)
        .env("MASTER_PORT", port())
        .env("BASELINE", &by_mpirun)
        .env("THRESHOLD", "50%")
        .output()
        .unwrap();
    // Two runs of tiny cases on a shared machine may differ by more than any
    // threshold: the verdict is the comparison's (1 exactly when it found a
    // regression), the rest must have worked.
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let regressed = stdout.contains(" is slower at ") || stdout.contains(" fails at ");
    assert_eq!(o.status.code(), Some(i32::from(regressed)), "{}", text(&o));
    assert_eq!(configs_of(&by_slurm), ["default", "shm-off"]);
    let manifest = std::fs::read_to_string(by_slurm.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"launcher\": \"Slurm\""), "{manifest}");
    assert!(stdout.contains("== config shm-off"), "{stdout}");
    assert!(
        stdout.contains(" against ") && stdout.contains("threshold +-50.0 %"),
        "the comparison's summary is printed: {stdout}"
    );

    // regression.sh: a run against itself has no regression ...
    let o = script("regression.sh")
        .arg(&by_slurm)
        .arg("--candidate")
        .arg(&by_slurm)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert!(by_slurm.join("compare.md").is_file());

    // ... a fresh sweep where a case fails that passed in the baseline is one.
    let o = script("regression.sh")
        .arg(&by_mpirun)
        .args(["--threshold", "50%", "--"])
        .args(["--gpus", "2", "--transports", "default"])
        .args(host_flags(&shm))
        .env("OUT", tmp.path().join("nightly"))
        .env("NCCL_BENCH_FAULT", "exit:bytes=2K")
        .output()
        .unwrap();
    assert_exit(&o, 1);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("REGRESSION"),
        "{}",
        text(&o)
    );
    let nightly = common::run_dir(&tmp.path().join("nightly"));
    let comparison = std::fs::read_to_string(nightly.join("compare.md")).unwrap();
    assert!(comparison.contains("failed"), "{comparison}");

    // With a baseline file the gate is `check`, case by case: the run the baseline
    // was made from passes, with check.md and a JUnit check.xml in it ...
    let baseline = tmp.path().join("baseline.json");
    let o = Command::new(bin())
        .arg("baseline")
        .arg(&by_slurm)
        .arg("-o")
        .arg(&baseline)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let o = script("regression.sh")
        .arg(&baseline)
        .arg("--candidate")
        .arg(&by_slurm)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert!(by_slurm.join("check.md").is_file());
    let junit = std::fs::read_to_string(by_slurm.join("check.xml")).unwrap();
    assert!(
        junit.contains("<testsuites") && !junit.contains("<failure"),
        "{junit}"
    );
    // ... and the nightly run with the failing case fails it (and the config it
    // did not run is missing).
    let o = script("regression.sh")
        .arg(&baseline)
        .arg("--candidate")
        .arg(&nightly)
        .output()
        .unwrap();
    assert_exit(&o, 1);
    let check = std::fs::read_to_string(nightly.join("check.md")).unwrap();
    assert!(
        check.contains("| failed | default | 2 | 2 KiB |"),
        "{check}"
    );
    assert!(check.contains("| missing | shm-off |"), "{check}");
    let junit = std::fs::read_to_string(nightly.join("check.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");

    // No baseline: an error, not a verdict.
    let o = script("regression.sh")
        .arg(tmp.path().join("missing"))
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("neither a baseline file nor a run directory")
    );
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}

/// The batch script asks for no GPUs (a request for more than a node has pends for
/// ever) and stops when the job gave a node fewer GPUs than tasks, unless the host
/// backend is asked for.
#[test]
fn the_batch_script_stops_when_a_node_has_fewer_gpus_than_tasks() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let sbatch = std::fs::read_to_string(repo().join("scripts/slurm-sweep.sbatch")).unwrap();
    assert!(
        !sbatch.contains("#SBATCH --gpus"),
        "no GPU request in the script"
    );
    let run_dir = tmp.path().join("never");
    let o = script("slurm-sweep.sbatch")
        .args(["--", "--backend", "nccl", "-b", "8", "-e", "8"])
        .envs([
            ("SLURM_JOB_ID", "7002"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_TASKS_PER_NODE", "4(x2)"),
            ("SLURM_GPUS_ON_NODE", "2"),
        ])
        .env("SLURM_SUBMIT_DIR", repo())
        .env("RUN_DIR", &run_dir)
        .output()
        .unwrap();
    assert_exit(&o, 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("this job runs 4 tasks on ")
            && stderr.contains(" but was given 2 GPU(s) there (SLURM_GPUS_ON_NODE)")
            && stderr.contains("--ntasks-per-node 4 --gpus-per-node 4"),
        "{stderr}"
    );
    assert!(!run_dir.exists());
    // No GPUs at all, the backend left to choose: the same.
    let o = script("slurm-sweep.sbatch")
        .args(["--", "-b", "8", "-e", "8"])
        .envs([("SLURM_JOB_ID", "7003"), ("SLURM_NTASKS_PER_NODE", "8")])
        .env("SLURM_SUBMIT_DIR", repo())
        .env("RUN_DIR", &run_dir)
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("this job runs 8 tasks on "),
        "{}",
        text(&o)
    );
}

#[test]
fn the_scripts_say_how_to_use_them() {
    let _machine = crate::common::shared();
    for name in ["mpirun-sweep.sh", "regression.sh"] {
        let o = script(name).arg("--help").output().unwrap();
        assert_exit(&o, 2);
        let usage = String::from_utf8_lossy(&o.stderr);
        assert!(usage.contains("Usage:"), "{name}: {usage}");
    }
    let o = Command::new(bin())
        .args(["configs", "--names", "--config"])
        .arg(repo().join("tests/fixtures/two-configs.toml"))
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "default\nshm-off\n");
}
