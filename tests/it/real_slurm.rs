//! `nccl-bench run` and `scripts/slurm-sweep.sbatch` under a real Slurm (22.05,
//! Debian's `slurm-wlm` and `munge`, installed by `.ci/run`): each test starts a
//! private one-node cluster of its own (munged, slurmctld and slurmd as child
//! processes, its own ports, key, socket, spool and state directories under a
//! temporary directory, `SLURM_CONF` pointing at its slurm.conf), waits until the
//! node is idle, and stops and reaps the daemons when it ends, however it ends.
//! Host-backend ranks, 4 tasks on one node.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, free_port, rows, text, wait_no_processes};
use nccl_bench::test_inputs::{need, Need};

/// A one-node Slurm cluster that lives as long as this value.
struct LocalSlurm {
    dir: tempfile::TempDir,
    bin: PathBuf,
    daemons: Vec<Child>,
}

fn hostname() -> String {
    let out = Command::new("hostname").output().unwrap();
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    name.split('.').next().unwrap_or_default().to_string()
}

impl LocalSlurm {
    fn start(bin: PathBuf) -> LocalSlurm {
        let dir = tempfile::tempdir().unwrap();
        let mut slurm = LocalSlurm {
            dir,
            bin,
            daemons: Vec::new(),
        };
        let d = slurm.dir.path().to_path_buf();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let key: Vec<u8> = (0..1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ std::process::id() as u8)
            .collect();
        std::fs::write(d.join("munge.key"), key).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("munge.key"), std::fs::Permissions::from_mode(0o400))
            .unwrap();
        let socket = d.join("munge.sock");
        let munged = Command::new(slurm.tool("munged"))
            .arg("--foreground")
            .arg("--force")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", d.join("munge.key").display()))
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--log-file={}", d.join("munged.log").display()))
            .arg(format!("--seed-file={}", d.join("munge.seed").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start munged");
        slurm.daemons.push(munged);
        wait_until(
            Duration::from_secs(10),
            || socket.exists(),
            "munged's socket",
        );
        let host = hostname();
        let (ctld_port, d_port) = (free_port(), free_port());
        let p = |name: &str| d.join(name).display().to_string();
        let conf = format!(
            "ClusterName=nb{pid}\n\
             SlurmctldHost={host}\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={d_port}\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\n\
             SlurmdPidFile={d_pid}\n\
             SlurmctldLogFile={ctld_log}\n\
             SlurmdLogFile={d_log}\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             SchedulerType=sched/builtin\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             SlurmdParameters=config_overrides\n\
             JobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\n\
             NodeName={host} CPUs=8 State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            pid = std::process::id(),
            socket = socket.display(),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            d_pid = p("slurmd.pid"),
            ctld_log = p("slurmctld.log"),
            d_log = p("slurmd.log"),
        );
        std::fs::write(d.join("slurm.conf"), conf).unwrap();
        for daemon in ["slurmctld", "slurmd"] {
            let child = Command::new(slurm.tool(daemon))
                .arg("-D")
                .arg("-f")
                .arg(d.join("slurm.conf"))
                .env("SLURM_CONF", d.join("slurm.conf"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("start {daemon}: {e}"));
            slurm.daemons.push(child);
        }
        let idle = || {
            slurm
                .command("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        };
        wait_until(Duration::from_secs(30), idle, "the node to be idle");
        slurm
    }

    /// A Slurm daemon or command of this installation.
    fn tool(&self, name: &str) -> PathBuf {
        [
            self.bin.clone(),
            PathBuf::from("/usr/bin"),
            PathBuf::from("/usr/sbin"),
        ]
        .iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
    }

    /// A client command of this cluster, with no NCCL or launcher variables from
    /// the machine running the tests.
    fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.tool(name));
        for (k, _) in std::env::vars() {
            if k.starts_with("NCCL_") || k.starts_with("SLURM_") || k.starts_with("OMPI_") {
                c.env_remove(k);
            }
        }
        c.env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        c
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        // slurmd and slurmctld first, munged last; TERM, then KILL, always reaped.
        for child in self.daemons.iter_mut().rev() {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One round: the cancel test waits for a first case's row, which several rounds
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

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `salloc -n 4 srun nccl-bench run ...` for one config into `run`.
fn srun_in_salloc(slurm: &LocalSlurm, run: &Path, shm: &Path, config: &str) -> Command {
    let mut c = slurm.command("salloc");
    c.args(["-n", "4"])
        .arg(slurm.tool("srun"))
        .arg(bin())
        .args(["run", "--transports", config, "--plain", "--run-dir"])
        .arg(run)
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(shm)
        .env("MASTER_PORT", free_port().to_string());
    c
}

#[test]
fn srun_in_an_allocation_and_the_batch_script_run_under_slurm() {
    let _machine = crate::common::shared();
    let Some(bin_dir) = need(Need::Slurm) else {
        return;
    };
    let slurm = LocalSlurm::start(bin_dir);
    let (tmp, shm) = common::scratch_with_shm();

    // srun inside salloc: 4 tasks, one run directory.
    let by_srun = tmp.path().join("by-srun");
    let o = srun_in_salloc(&slurm, &by_srun, &shm, "default")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    common::assert_four_local_ranks(&by_srun, 3, "Slurm");

    // A soak under srun: the four ranks' series, the node's counters under its name.
    let soaked = tmp.path().join("soak");
    let o = slurm
        .command("salloc")
        .args(["-n", "4"])
        .arg(slurm.tool("srun"))
        .arg(bin())
        .args([
            "run",
            "--transports",
            "default",
            "--plain",
            "--backend",
            "host",
        ])
        .args(["--soak", "4s", "--size", "1M", "--run-dir"])
        .arg(&soaked)
        .arg("--shm-dir")
        .arg(&shm)
        .env("MASTER_PORT", free_port().to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let intervals = std::fs::read_to_string(soaked.join("soak.csv")).unwrap();
    assert!((4..=6).contains(&intervals.lines().count()), "{intervals}");
    assert!(intervals
        .lines()
        .skip(1)
        .all(|l| l.starts_with("default,4,all_reduce,1048576,")));
    let counters = std::fs::read_to_string(soaked.join("counters.csv")).unwrap();
    let node = format!(",{},host,cpu.", hostname());
    assert!(counters.contains(&node), "{node} in {counters}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(soaked.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["cluster"]["launcher"], "Slurm");
    assert_eq!(manifest["soak"]["duration_s"], 4.0);

    // The batch script, both configs, compared with the srun run as its baseline.
    let by_batch = tmp.path().join("by-batch");
    let o: Output = slurm
        .command("sbatch")
        .current_dir(repo())
        .args(["--wait", "--nodes=1", "--ntasks-per-node=4"])
        .arg(format!("--output={}", tmp.path().join("job.out").display()))
        .arg("scripts/slurm-sweep.sbatch")
        .arg("tests/fixtures/two-configs.toml")
        .arg("--")
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(&shm)
        .env("NCCL_BENCH", bin())
        .env("RUN_DIR", &by_batch)
        .env("BASELINE", &by_srun)
        .env("THRESHOLD", "50%")
        .output()
        .unwrap();
    let job = std::fs::read_to_string(tmp.path().join("job.out")).unwrap_or_default();
    // Tiny cases on a shared machine may differ by more than any threshold: the
    // exit status is the comparison's (1 exactly when it found a regression).
    let regressed = job.contains(" is slower at ") || job.contains(" fails at ");
    assert_eq!(
        o.status.code(),
        Some(i32::from(regressed)),
        "{}\njob output:\n{job}",
        text(&o)
    );
    assert!(job.contains("== config shm-off"), "{job}");
    assert!(
        job.contains(" against ") && job.contains("threshold +-50.0 %"),
        "{job}"
    );
    let mut configs: Vec<String> = rows(&by_batch)
        .into_iter()
        .map(|r| r["config"].clone())
        .collect();
    configs.dedup();
    assert_eq!(configs, ["default", "shm-off"]);
    assert!(by_batch.join("report.md").is_file());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(by_batch.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["cluster"]["launcher"], "Slurm");
    assert_eq!(manifest["cluster"]["world_size"], 4);
    assert_eq!(
        manifest["launches"].as_array().map(Vec::len),
        Some(2),
        "one launch per config"
    );

    // A baseline file instead: the per-case gate, check.md and check.xml in the run.
    let baseline = tmp.path().join("baseline.json");
    let o = Command::new(bin())
        .arg("baseline")
        .arg(&by_srun)
        .arg("-o")
        .arg(&baseline)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let one_config = tmp.path().join("default.toml");
    std::fs::write(
        &one_config,
        "[[config]]\nname = \"default\"\ndescription = \"NCCL's own choice\"\n",
    )
    .unwrap();
    let checked = tmp.path().join("checked");
    let o: Output = slurm
        .command("sbatch")
        .current_dir(repo())
        .args(["--wait", "--nodes=1", "--ntasks-per-node=4"])
        .arg(format!(
            "--output={}",
            tmp.path().join("check.out").display()
        ))
        .arg("scripts/slurm-sweep.sbatch")
        .arg(&one_config)
        .arg("--")
        .args(FLAGS)
        .arg("--shm-dir")
        .arg(&shm)
        .env("NCCL_BENCH", bin())
        .env("RUN_DIR", &checked)
        .env("BASELINE", &baseline)
        .env("THRESHOLD", "50%")
        .output()
        .unwrap();
    let job = std::fs::read_to_string(tmp.path().join("check.out")).unwrap_or_default();
    let check = std::fs::read_to_string(checked.join("check.md"))
        .unwrap_or_else(|e| panic!("no check.md ({e}); job output:\n{job}"));
    let junit = std::fs::read_to_string(checked.join("check.xml")).unwrap();
    assert!(junit.contains("<testsuites"), "{junit}");
    // The same tiny cases again may differ by more than any threshold: the exit
    // status is the check's (1 exactly when a case failed it).
    let failed = junit.contains("<failure");
    assert_eq!(
        o.status.code(),
        Some(i32::from(failed)),
        "{}\njob output:\n{job}\ncheck.md:\n{check}",
        text(&o)
    );
    assert!(
        job.contains(check.trim()),
        "check.md is what the job printed"
    );

    let marker = shm.to_string_lossy().into_owned();
    assert!(wait_no_processes(&marker, Duration::from_secs(5)).is_empty());
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}

/// `scancel` of the job while a rank hangs: Slurm signals every task, rank 0
/// records the run as interrupted, and no rank or worker process is left.
#[test]
fn a_cancelled_job_ends_every_rank() {
    let _machine = crate::common::shared();
    let Some(bin_dir) = need(Need::Slurm) else {
        return;
    };
    let slurm = LocalSlurm::start(bin_dir);
    let (tmp, shm) = common::scratch_with_shm();
    let run = tmp.path().join("cancelled");
    let mut child = srun_in_salloc(&slurm, &run, &shm, "default")
        .env("NCCL_BENCH_FAULT", "hang:rank=1:bytes=2K")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        Duration::from_secs(60),
        || common::rows_so_far(&run) >= 1,
        "the first case",
    );
    let o = slurm
        .command("scancel")
        .args(["--user", "root"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    common::assert_stopped_after_the_first_case(&run, &shm, "the job");
}
