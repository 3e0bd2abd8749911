//! The NCCL backend end to end on simulated GPUs: nccl-bench's own test stand-in for
//! libcuda and libnccl (tests/gpu-sim), built by scripts/test.sh, which passes its
//! directory in NCCL_BENCH_TEST_SIM_DIR. Without it these tests fail unless
//! NCCL_BENCH_TEST_SKIP names `sim`. Nothing here is a measurement, and every run
//! says so.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::sim::{
    on_sim, sim_dir, sim_sweep, sweep_in_small_dev_shm, without_nccl_env, ONE_EVENT_EACH,
};
use crate::common::{bin, dir_entries, report, rows, run_dir, text, wait_no_processes};

/// A two-rank sweep of 8 B..`max` on NVLink with one config, `name` with the
/// variables `env` (TOML inline-table text), 20 iterations a case (whether each case
/// works is the question, not its time: a non-blocking communicator's host-paced
/// launches made the adaptive count run to tens of thousands); every case must be
/// ok. Its run directory (inside `out`).
fn config_sweep_all_ok(dir: &Path, out: &Path, name: &str, env: &str, max: &str) -> PathBuf {
    let config = out.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!("[[config]]\nname = \"{name}\"\nenv = {{ {env} }}\n"),
    )
    .unwrap();
    let runs = out.join("runs");
    let o = sim_sweep(
        dir,
        "nvlink",
        &[],
        &runs,
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            max,
            "-n",
            "20",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(&runs);
    for r in rows(&run) {
        assert_eq!(r["status"], "ok", "{r:?}");
    }
    run
}

#[test]
fn eight_nvlink_gpus_run_every_config_and_shm_is_not_on_the_data_path() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[],
        out.path(),
        &["--gpus", "8", "-e", "64K"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("SIMULATED GPUS (TEST STAND-IN), NOT A MEASUREMENT"),
        "{stdout}"
    );
    let run = run_dir(out.path());
    let rows = rows(&run);
    assert_eq!(
        rows.len(),
        4 * 3 * 14,
        "4 configs x 2/4/8 GPUs x 8 B..64 KiB"
    );
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["wrong"], "0", "{r:?}");
        assert_eq!(r["backend"], "nccl-sim", "{r:?}");
        let want = match r["config"].as_str() {
            "default" | "shm-off" => "P2P/CUMEM:100%",
            "p2p-off" => "SHM:100%",
            _ => "NET/Socket:100%",
        };
        assert_eq!(r["transports"], want, "{r:?}");
    }
    let report = report(&run);
    assert!(
        report.contains("**Simulated GPUs (test stand-in), not a measurement.**"),
        "{report}"
    );
    assert!(
        report.contains("**SHM is not on the data path**"),
        "{report}"
    );
    assert!(report.contains("## 8 GPUs\n"), "{report}");
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(manifest.contains(r#""used": "nccl-sim""#), "{manifest}");
    assert!(manifest.contains(r#""simulated": true"#), "{manifest}");
}

/// Six rounds: the verdict decides on its family of 9 sizes, each interval at
/// 1 - 0.05 / 9, which six rounds reach unpaired (2 / C(12, 6) = 1 / 462).
#[test]
fn without_p2p_shm_carries_the_traffic_and_disabling_it_costs() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "pcie-nop2p",
        &[],
        out.path(),
        &[
            "--gpus",
            "4",
            "--rounds",
            "6",
            "-b",
            "1K",
            "-e",
            "256K",
            "--transports",
            "default,shm-off",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(out.path());
    for r in rows(&run) {
        let want = if r["config"] == "default" {
            "SHM:100%"
        } else {
            "NET/Socket:100%"
        };
        assert_eq!(
            (r["status"].as_str(), r["transports"].as_str()),
            ("ok", want),
            "{r:?}"
        );
    }
    let report = report(&run);
    assert!(
        report.contains("**Keep SHM**: without it all_reduce on 4 ranks is "),
        "{report}"
    );
}

/// CUDA graphs (`--graph 10`): launches of 10 captured all-reduces, timed as a
/// whole, give the same per-iteration time as eager launches on the modelled device.
#[test]
fn graph_launches_match_eager_times() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let medians = |graph: &str| {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--gpus",
            "2",
            "-b",
            "64K",
            "-e",
            "1M",
            "--transports",
            "default",
        ];
        if !graph.is_empty() {
            args.extend(["--graph", graph]);
        }
        let o = sim_sweep(&dir, "nvlink", &[], out.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        rows(&run_dir(out.path()))
            .into_iter()
            .map(|r| {
                assert_eq!(r["status"], "ok", "{r:?}");
                assert_eq!(r["graph_iters"], if graph.is_empty() { "0" } else { graph });
                r["p50_us"].parse::<f64>().unwrap()
            })
            .collect::<Vec<f64>>()
    };
    let eager = medians("");
    let graphs = medians("10");
    assert_eq!(eager.len(), 5);
    for (e, g) in eager.iter().zip(&graphs) {
        assert!(
            (g / e - 1.0).abs() < 0.03,
            "eager {eager:?} vs graphs {graphs:?}"
        );
    }
}

/// `--graph 20`, adaptive: the stop rule counts launches, the samples the histogram
/// holds, so every size keeps measuring until it has `--min-iters` (20) of them, 400
/// all-reduces, and is never `converged` on two launches (the issue-31 bug: 40
/// iterations, two samples). Its p99 cell stays empty (fewer than 1,000 samples).
#[test]
fn a_graph_sweep_measures_until_it_has_the_minimum_number_of_launches() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "1M",
            "-f",
            "32",
            "--graph",
            "20",
            "--transports",
            "default",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(out.path());
    let histograms: std::collections::HashMap<String, hdrhistogram::Histogram<u64>> =
        nccl_bench::export::hlog::read(&run.join("histograms.hlog"))
            .unwrap()
            .into_iter()
            .collect();
    let rows = rows(&run);
    assert_eq!(rows.len(), 4, "8 B, 256 B, 8 KiB, 256 KiB");
    for r in &rows {
        assert_eq!(
            (r["status"].as_str(), r["graph_iters"].as_str()),
            ("ok", "20")
        );
        let launches = histograms[&r["hist_tag"]].len();
        let iters: u64 = r["iters"].parse().unwrap();
        assert!(launches >= 20, "{launches} launches: {r:?}");
        assert_eq!(iters, launches * 20, "{r:?}");
        assert_eq!(r["p99_us"], "", "{r:?}");
        assert!(!r["median_ci_low_us"].is_empty(), "{r:?}");
        assert!(
            r["quality_note"].contains(&format!("{launches} samples")),
            "{r:?}"
        );
    }
}

/// An NCCL error in a running collective (a peer's network failing) ends the case
/// at once with NCCL's words, and the sweep goes on.
#[test]
fn an_async_nccl_error_fails_the_case_quickly_with_nccls_error() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let o = sim_sweep(
        &dir,
        "nvlink",
        // 13 all-reduces per size: the 26th fails, in the 16 B case, and again in
        // the 64 B case (fresh processes from 32 B on).
        &[
            ("NCCL_BENCH_SIM_FAULT", "remote-error@1+25"),
            ONE_EVENT_EACH,
        ],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "64",
            "-n",
            "10",
            "-w",
            "2",
            "--transports",
            "default",
            "--timeout",
            "30",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let rows = rows(&run_dir(out.path()));
    let status: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["bytes"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(
        status,
        [
            ("8", "ok"),
            ("16", "failed"),
            ("32", "ok"),
            ("64", "failed")
        ],
        "{rows:?}"
    );
    let failed: Vec<_> = rows.iter().filter(|r| r["status"] == "failed").collect();
    for r in &failed {
        assert!(r["error"].contains("ncclRemoteError (6)"), "{r:?}");
        // The cause is in the cell even when a peer's consequent error came first.
        // (NCCL returns the error from the next ncclAllReduce, or from
        // ncclCommGetAsyncError, whichever rank 1 calls first.)
        let cause = r["error"]
            .split("; also ")
            .find(|part| part.starts_with("rank 1: "))
            .unwrap_or_else(|| panic!("rank 1's error missing: {r:?}"));
        assert!(cause.contains("(simulated network failure)"), "{r:?}");
    }
}

/// A collective that never completes is stopped by the rank itself just before
/// --timeout (ncclCommAbort), reported as a timeout that says so, with no process
/// left behind.
#[test]
fn a_hung_collective_is_aborted_by_the_rank_before_the_timeout() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let marker = out.path().to_str().unwrap().to_string();
    let start = Instant::now();
    let o = sim_sweep(
        &dir,
        "nvlink",
        // 13 all-reduces per size (2 warm-up, 1 aligning, 10 timed): the 26th, in
        // the 16 B case, hangs; the 32 B case gets fresh processes.
        &[("NCCL_BENCH_SIM_FAULT", "hang@1+25"), ONE_EVENT_EACH],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "32",
            "-n",
            "10",
            "-w",
            "2",
            "--transports",
            "default",
            "--timeout",
            "4",
        ],
    );
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // Within --timeout + 5 s, as every fault must end.
    assert!(took < Duration::from_secs(4 + 5), "{took:?}");
    let rows = rows(&run_dir(out.path()));
    let status: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["bytes"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(
        status,
        [("8", "ok"), ("16", "timeout"), ("32", "ok")],
        "{rows:?}"
    );
    let hung: Vec<_> = rows.iter().filter(|r| r["status"] == "timeout").collect();
    let e = &hung[0]["error"];
    assert!(
        e.contains("the communicator is aborted (ncclCommAbort) once this is reported"),
        "{e}"
    );
    // Both ranks stopped at their own deadline: the one that hung and the one that
    // waited for it (NCCL does not tell a peer about an abort). Their words are the
    // same, so the cell says them once for both.
    assert!(e.starts_with("ranks 0,1: "), "{e}");
    assert_eq!(e.matches("worker's deadline").count(), 1, "{e}");
    assert_eq!(
        wait_no_processes(&marker, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

/// A wrong element, a crashed rank, out of device memory, a failing NCCL init: each
/// case says what happened, and the other cases are measured.
#[test]
fn each_fault_is_named_and_the_sweep_goes_on() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let cases = [
        ("wrong@0+40", "wrong", "wrong"),
        ("crash@1+40", "failed", "rank 1"),
        ("oom@1", "failed", "out of GPU memory"),
        (
            "init-cuda@1",
            "failed",
            "CUDA driver version is insufficient",
        ),
    ];
    for (fault, status, says) in cases {
        let out = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let o = sim_sweep(
            &dir,
            "nvlink",
            &[("NCCL_BENCH_SIM_FAULT", fault), ONE_EVENT_EACH],
            out.path(),
            &[
                "--gpus",
                "2",
                "-b",
                "8",
                "-e",
                "64",
                // 26 all-reduces per size (5 warm-up, 1 to line up, 20 timed): the
                // 8 B case is done before a fault after 40.
                "-n",
                "20",
                "--transports",
                "default,shm-off",
                "--timeout",
                "20",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{fault}: {}", text(&o));
        assert!(
            start.elapsed() < Duration::from_secs(20 + 5),
            "{fault}: {:?}",
            start.elapsed()
        );
        let marker = out.path().to_str().unwrap();
        assert_eq!(
            wait_no_processes(marker, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{fault}"
        );
        let rows = rows(&run_dir(out.path()));
        let bad: Vec<_> = rows.iter().filter(|r| r["status"] == status).collect();
        assert!(!bad.is_empty(), "{fault}: {rows:?}");
        for r in &bad {
            let said = format!("{} {}", r["status"], r["error"]);
            assert!(said.contains(says), "{fault}: {r:?}");
        }
        if fault.starts_with("wrong") || fault.starts_with("crash") {
            assert!(
                rows.iter().any(|r| r["status"] == "ok"),
                "{fault}: {rows:?}"
            );
        }
    }
}

/// NCCL_COMM_BLOCKING=0: init and collectives report ncclInProgress, which the
/// backend waits out instead of failing.
#[test]
fn a_non_blocking_communicator_works() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let run = config_sweep_all_ok(
        &dir,
        out.path(),
        "nonblocking",
        r#"NCCL_COMM_BLOCKING = "0""#,
        "4K",
    );
    // NCCL saw the setting (and so returned ncclInProgress).
    let logs: String = dir_entries(&run.join("logs"))
        .iter()
        .filter(|n| n.contains(".nccl."))
        .map(|n| std::fs::read_to_string(run.join("logs").join(n)).unwrap())
        .collect();
    assert!(
        logs.contains("NCCL_COMM_BLOCKING set by environment to 0."),
        "{logs}"
    );
}

/// The transports come from NCCL's log in the format of each release: 2.7's bus-id
/// peers and "direct shared memory", 2.18's P2P/IPC.
#[test]
fn older_nccl_log_formats_give_the_same_transports() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    for (version, p2p) in [
        ("2.7.8", "P2P/IPC"),
        ("2.18.3", "P2P/IPC"),
        ("2.28.9", "P2P/CUMEM"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = sim_sweep(
            &dir,
            "nvlink",
            &[("NCCL_BENCH_SIM_VERSION", version)],
            out.path(),
            &[
                "--gpus",
                "2",
                "-b",
                "8",
                "-e",
                "8",
                "--transports",
                "default,p2p-off",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{version}: {}", text(&o));
        for r in rows(&run_dir(out.path())) {
            let want = if r["config"] == "default" {
                format!("{p2p}:100%")
            } else {
                "SHM:100%".to_string()
            };
            assert_eq!(r["transports"], want, "{version}: {r:?}");
        }
    }
}

/// The seed of this whole field: NCCL 2.7.8 in Docker with the default 64 MB
/// /dev/shm (here a 64 MB tmpfs in a private mount namespace). Two ranks' SHM
/// segments fit, four do not: the SHM config fails with NCCL 2.7's own
/// posix_fallocate error, and the report says to fix /dev/shm, not to disable SHM.
#[test]
fn a_small_dev_shm_fails_shm_and_the_report_says_fix_dev_shm() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sweep_in_small_dev_shm(
        &dir,
        "pcie-nop2p",
        &[("NCCL_BENCH_SIM_VERSION", "2.7.8")],
        out.path(),
        &[
            "--gpus",
            "8",
            "-b",
            "1K",
            "-e",
            "4K",
            "--transports",
            "default,shm-off",
            // What fails and what the report says, not timing: one round.
            "--rounds",
            "1",
        ],
    );
    assert_ne!(
        o.status.code(),
        Some(99),
        "cannot mount a tmpfs: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let run = run_dir(out.path());
    let rows = rows(&run);
    for r in &rows {
        let want = match (r["config"].as_str(), r["nranks"].as_str()) {
            ("default", "2") | ("shm-off", _) => "ok",
            _ => "failed",
        };
        assert_eq!(r["status"], want, "{r:?}");
        if want == "failed" {
            assert!(
                r["error"].contains("Error while creating shared memory segment /dev/shm/nccl-")
                    && r["error"].contains("(size 9637888)"),
                "{r:?}"
            );
        }
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("left:\n"),
        "segments left in /dev/shm: {stdout}"
    );
    let report = report(&run);
    assert!(
        report.contains("**Keep SHM and give /dev/shm more room"),
        "{report}"
    );
}

/// NCCL 2.12 to 2.18 extend SHM segments with ftruncate and die of SIGBUS on the
/// first page a full /dev/shm cannot back (the stand-in does the same, for real): the
/// case's reason names /dev/shm as the likely cause, and the verdict says to fix
/// /dev/shm, not to disable SHM, as it does for the ENOSPC of other releases.
#[test]
fn a_sigbus_in_init_of_nccl_2_16_is_read_as_dev_shm_too_small() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sweep_in_small_dev_shm(
        &dir,
        "pcie-nop2p",
        &[("NCCL_BENCH_SIM_VERSION", "2.16.5")],
        out.path(),
        &[
            "--gpus",
            "8",
            "-b",
            "4K",
            "-e",
            "4K",
            "--transports",
            "default,shm-off",
            "--rounds",
            "1",
        ],
    );
    assert_ne!(
        o.status.code(),
        Some(99),
        "cannot mount a tmpfs: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let run = run_dir(out.path());
    let eight = rows(&run)
        .into_iter()
        .find(|r| r["config"] == "default" && r["nranks"] == "8")
        .unwrap();
    assert_eq!(eight["status"], "failed", "{eight:?}");
    assert!(
        eight["error"].contains("(SIGBUS) during communicator set-up: a SIGBUS in an NCCL process is most likely /dev/shm too small"),
        "{eight:?}"
    );
    let report = report(&run);
    assert!(
        report.contains("**Keep SHM and give /dev/shm more room"),
        "{report}"
    );
}

/// A simulated run is never compared with a real one (here: the host backend's).
#[test]
fn compare_refuses_a_simulated_run_against_a_real_one() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let sim_out = out.path().join("sim");
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[],
        &sim_out,
        &[
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "64",
            "--transports",
            "default",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let shm = tempfile::tempdir().unwrap();
    let host_out = out.path().join("host");
    let o = common::sweep(&host_out, shm.path())
        .args([
            "--gpus",
            "2",
            "-b",
            "8",
            "-e",
            "64",
            "--transports",
            "default",
            "-n",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = Command::new(bin())
        .arg("compare")
        .arg(run_dir(&host_out))
        .arg(run_dir(&sim_out))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ran on simulated GPUs (nccl-bench's test stand-in, not a measurement)"),
        "{err}"
    );
}

/// `run` with four ranks started as torchrun starts them (RANK, WORLD_SIZE,
/// LOCAL_RANK, MASTER_ADDR/PORT), one simulated GPU each: one run directory,
/// every case ok on four ranks, the transport read from each rank's NCCL log.
#[test]
fn four_torchrun_style_ranks_run_on_the_simulated_gpus() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let port = common::free_port().to_string();
    let lib = dir.join("libnccl.so.2");
    let children: Vec<_> = (0..4)
        .rev()
        .map(|r: u32| {
            let rank = r.to_string();
            on_sim(
                &dir,
                "nvlink",
                &[
                    ("RANK", &rank),
                    ("WORLD_SIZE", "4"),
                    ("LOCAL_RANK", &rank),
                    ("MASTER_ADDR", "127.0.0.1"),
                    ("MASTER_PORT", &port),
                ],
                &[
                    "run",
                    "--backend",
                    "nccl",
                    "--plain",
                    "-b",
                    "1K",
                    "-e",
                    "16K",
                    "--rounds",
                    "1",
                ],
            )
            .arg("--nccl-lib")
            .arg(&lib)
            .arg("--transports")
            .arg("default")
            .arg("--out")
            .arg(out.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let rows = rows(&run_dir(out.path()));
    assert_eq!(rows.len(), 5, "{rows:?}");
    for r in &rows {
        assert_eq!(
            (
                r["status"].as_str(),
                r["nranks"].as_str(),
                r["backend"].as_str()
            ),
            ("ok", "4", "nccl-sim"),
            "{r:?}"
        );
        assert_eq!(r["transports"], "P2P/CUMEM:100%", "{r:?}");
    }
}

/// scripts/gpu-check.sh, the on-GPU check list, runs on two simulated GPUs as far as
/// it can there (everything but nccl-tests).
#[test]
fn gpu_check_script_passes_on_the_simulated_gpus() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gpu-check.sh");
    let mut c = Command::new(script);
    without_nccl_env(&mut c);
    let o = c
        .arg("--simulated")
        .arg(&dir)
        // One round: the check list, not the rounds, is under test here.
        .args(["--gpus", "2", "--maxbytes", "64K", "--rounds", "1", "--out"])
        .arg(out.path())
        .env("NCCL_BENCH", bin())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("this checks nccl-bench, it measures nothing"),
        "{stdout}"
    );
    assert!(stdout.contains("gpu-check: all checks passed"), "{stdout}");
    // 8 B..64 KiB: 14 sizes on 2 GPUs, for default, shm-off, p2p-off and nvls-off,
    // then default with graphs; then every collective with default: 14 sizes of
    // all_reduce, broadcast, reduce and sendrecv, 12 of the five that split a size
    // over the ranks (8 and 16 B leave no 16-byte group per rank).
    assert!(stdout.contains("plain/results.csv: 56 cases"), "{stdout}");
    assert!(stdout.contains("graph/results.csv: 14 cases"), "{stdout}");
    assert!(stdout.contains("coll/results.csv: 116 cases"), "{stdout}");
}

/// Every element type and reduction nccl-bench offers, on 3 and 8 ranks (avg is not
/// exact for 3; 8 ranks of sums, products, maxima): the stand-in computes what NCCL
/// computes, and nccl-bench's check accepts exactly that.
#[test]
fn every_type_and_operator_checks_out() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let types = [
        "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
        "bfloat16",
    ];
    for dtype in types {
        for op in ["sum", "prod", "max", "min", "avg"] {
            let out = tempfile::tempdir().unwrap();
            // Exactness, not timing: an event after every all-reduce, no calibration
            // of the event stride (which, at these sizes, asks for batches of
            // hundreds of all-reduces).
            let o = sim_sweep(
                &dir,
                "nvlink",
                &[ONE_EVENT_EACH],
                out.path(),
                &[
                    "--gpus",
                    "3,8",
                    "-b",
                    "64",
                    "-e",
                    "256K",
                    "-f",
                    "64",
                    "-n",
                    "2",
                    "-w",
                    "1",
                    "--transports",
                    "default",
                    "-d",
                    dtype,
                    "-o",
                    op,
                    // What NCCL chose is not the question here: no probe group,
                    // and no link ceilings.
                    "--no-probe",
                    "--ceiling-bytes",
                    "0",
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{dtype} {op}: {}", text(&o));
            let rows = rows(&run_dir(out.path()));
            assert_eq!(rows.len(), 2 * 3, "{dtype} {op}: {rows:?}");
            for r in rows {
                assert_eq!(
                    (r["status"].as_str(), r["wrong"].as_str()),
                    ("ok", "0"),
                    "{r:?}"
                );
                assert_eq!(
                    (r["dtype"].as_str(), r["op"].as_str()),
                    (dtype, op),
                    "{r:?}"
                );
            }
        }
    }
}

/// NCCL writes its log to stdout when NCCL_DEBUG_FILE cannot be opened (here a
/// config points it at a directory that does not exist): the lines end up in the
/// rank's log and every case is measured. (The worker's protocol has a descriptor of
/// its own, so a line another NCCL thread writes cannot split a large message
/// either; this test cannot provoke that interleaving on demand.)
#[test]
fn nccl_logging_to_stdout_does_not_break_the_workers_protocol() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let env = r#"NCCL_DEBUG_FILE = "/nonexistent/dir/nccl.%h.%p.log", NCCL_DEBUG_SUBSYS = "ALL""#;
    let run = config_sweep_all_ok(&dir, out.path(), "stdout-log", env, "1K");
    let rank_log = std::fs::read_to_string(run.join("logs/stdout-log.n2.rank0.log")).unwrap();
    assert!(
        rank_log.contains("NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"),
        "{rank_log}"
    );
}

/// The adaptive stop rule on device times that are the same on every run (the
/// simulated clock): each case converges, with the median's interval within
/// --precision (on a real machine the host test may end on the budget instead).
#[test]
fn adaptive_iterations_converge_to_the_precision() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[],
        out.path(),
        &[
            "--gpus",
            "2",
            "-b",
            "1K",
            "-e",
            "1M",
            "-f",
            "32",
            "--transports",
            "default",
            "--precision",
            "0.5%",
            "--max-time",
            "5s",
            "--min-iters",
            "30",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = rows(&run_dir(out.path()));
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert_eq!(r["stop"], "converged", "{r:?}");
        let iters: u64 = r["iters"].parse().unwrap();
        assert!(iters >= 30, "{r:?}");
        let p50: f64 = r["p50_us"].parse().unwrap();
        let lo: f64 = r["median_ci_low_us"].parse().unwrap();
        let hi: f64 = r["median_ci_high_us"].parse().unwrap();
        assert!((p50 - lo).max(hi - p50) <= 0.005 * p50, "{r:?}");
    }
}

/// nccl_library.rs runs the NCCL backend's positive path on machines with a driver;
/// here it runs on the simulated GPUs, in a child process of this test binary whose
/// loader finds the stand-in (LD_LIBRARY_PATH is read at process start).
#[test]
fn the_positive_path_of_a_driver_machine_runs_on_the_simulated_gpus() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    const CHILD: &str = "NCCL_BENCH_TEST_SIM_CHILD";
    if std::env::var_os(CHILD).is_some() {
        assert!(nccl_bench::machine::cuda::cuda_driver().is_ok());
        // What the driver says about the machine (facts.rs, read for the manifest
        // and the memory check), here the simulated pcie-nop2p machine of 4 GPUs.
        let facts = nccl_bench::machine::cuda::read().unwrap();
        assert_eq!(facts.cuda_version, "12.4");
        assert_eq!(facts.gpus.len(), 4);
        let buses: Vec<&str> = facts.gpus.iter().map(|g| g.bus_id.as_str()).collect();
        assert_eq!(
            buses,
            [
                "0000:18:00.0",
                "0000:28:00.0",
                "0000:38:00.0",
                "0000:48:00.0"
            ]
        );
        assert!(
            facts.gpus.iter().all(|g| g.memory_bytes == 24 << 30),
            "{facts:?}"
        );
        assert!(
            facts.p2p.iter().flatten().all(|&p| !p),
            "no peer access: {facts:?}"
        );
        let lib = dir.join("libnccl.so.2");
        common::one_rank_all_reduce_checks_out(&lib);
        common::one_nccl_worker_gets_ready(&lib);
        common::one_gpu_nccl_sweep_is_ok(&lib);
        let exe = common::bin();
        let target = nccl_bench::sweep::preflight::Target {
            exe: &exe,
            nccl_lib: &lib,
            device: 0,
        };
        nccl_bench::sweep::preflight::check_nccl_init(&target, Duration::from_secs(60)).unwrap();
        return;
    }
    let o = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            // Its name in the one test binary: module, then function.
            "sim_gpus::the_positive_path_of_a_driver_machine_runs_on_the_simulated_gpus",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", &dir)
        .env("NCCL_BENCH_SIM_TOPO", "pcie-nop2p")
        .env("NCCL_BENCH_SIM_GPUS", "4")
        .env("NCCL_BENCH_SIM_MEM_GIB", "24")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// `nccl-bench ceilings` (what a sweep runs before its first case) measures the
/// stand-in's configured link speeds: P2P 150 GB/s on NVLink, 22 on PCIe, through
/// host memory 25 where there is no peer access; host copies 25; HBM 1500 less its
/// latency at 64 MiB.
#[test]
fn the_measured_ceilings_are_the_configured_link_speeds() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let within = |got: f64, want: f64| (got / want - 1.0).abs() <= 0.05;
    for (topo, pair_kind, pair_gbps) in [
        ("nvlink", "p2p", 150.0),
        ("pcie", "p2p", 22.0),
        ("pcie-nop2p", "via-host", 25.0),
    ] {
        let o = on_sim(
            &dir,
            topo,
            &[("NCCL_BENCH_SIM_GPUS", "4")],
            &["ceilings", "--devices", "0,1,2,3", "--bytes", "64M"],
        )
        .output()
        .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(c.get("errors").is_none(), "{c}");
        let links = c["links"].as_array().unwrap();
        let of = |kind: &str| -> Vec<&serde_json::Value> {
            links.iter().filter(|l| l["kind"] == kind).collect()
        };
        let pairs = of(pair_kind);
        assert_eq!(pairs.len(), 6, "{topo}: {c}");
        for l in &pairs {
            assert!(
                within(l["gbps"].as_f64().unwrap(), pair_gbps),
                "{topo}: {l}"
            );
        }
        for (kind, gbps) in [("h2d", 25.0), ("d2h", 25.0), ("d2d", 1452.0)] {
            let per_gpu = of(kind);
            assert_eq!(per_gpu.len(), 4, "{topo}: {c}");
            assert!(
                per_gpu
                    .iter()
                    .all(|l| within(l["gbps"].as_f64().unwrap(), gbps)),
                "{topo} {kind}: {c}"
            );
        }
        let other = if pair_kind == "p2p" {
            "via-host"
        } else {
            "p2p"
        };
        assert!(of(other).is_empty(), "{topo}: {c}");
    }
    // A GPU that cannot hold the buffers: said in `errors`, exit 0, no panic.
    let o = on_sim(
        &dir,
        "nvlink",
        &[
            ("NCCL_BENCH_SIM_GPUS", "2"),
            ("NCCL_BENCH_SIM_MEM_GIB", "0"),
        ],
        &["ceilings", "--devices", "0,1", "--bytes", "64M"],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let errors = c["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{c}");
    assert!(errors[0].as_str().unwrap().starts_with("GPU 0: "), "{c}");
    assert!(errors[0].as_str().unwrap().contains("OUT_OF_MEMORY"), "{c}");
}

/// A sweep reads each case against its ring's measured ceiling: at the link ceiling
/// on the stand-in as configured, "low" when its all-reduce is made 30 % slower than
/// its links.
#[test]
fn an_all_reduce_slower_than_its_links_is_reported_low() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    for (slowdown, verdict) in [
        ("1", "at the link ceiling"),
        ("1.3", "low, the links carry more"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        let lib = dir.join("libnccl.so.2");
        let o = on_sim(
            &dir,
            "nvlink",
            &[
                ("NCCL_BENCH_SIM_GPUS", "2"),
                ("NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN", slowdown),
            ],
            &[
                "sweep",
                "--backend",
                "nccl",
                "--plain",
                "--gpus",
                "2",
                "-b",
                "64M",
                "-e",
                "64M",
                "-f",
                "4",
                "-n",
                "5",
                "--rounds",
                "1",
                "--transports",
                "default",
                "--ceiling-bytes",
                "64M",
                "--nccl-lib",
                lib.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--shm-dir",
                out.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("link ceilings (measured now): d2d "));
        let run = run_dir(out);
        let rows = rows(&run);
        let last = rows.last().unwrap();
        let pct: f64 = last["ceiling_pct"].parse().unwrap();
        let busbw: f64 = last["busbw_gbps"].parse().unwrap();
        let want = if slowdown == "1" { 100.0 } else { 100.0 / 1.3 };
        assert!((pct - want).abs() < 3.0, "{last:?}");
        assert!(
            (busbw / (pct / 100.0) / 150.0 - 1.0).abs() < 0.05,
            "{last:?}"
        );
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        assert!(report.contains("| of ceiling |"), "{report}");
        assert!(report.contains(&format!("%: {verdict}")), "{report}");
        assert!(report.contains("| 2 | P2P ring | "), "{report}");
    }
}

/// A GPU the machine does not have is one `errors` entry, with CUDA's error; the
/// GPUs that exist are still measured, and the command exits 0 (errors are data).
#[test]
fn a_missing_gpu_is_an_error_in_the_ceilings_and_the_others_are_measured() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let o = on_sim(
        &dir,
        "pcie",
        &[("NCCL_BENCH_SIM_GPUS", "2")],
        &["ceilings", "--devices", "0,5,1", "--bytes", "4M"],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        c["errors"],
        serde_json::json!(["GPU 5: context: CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)"]),
        "{c}"
    );
    let kinds: Vec<(String, String)> = c["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kind"].as_str().unwrap().to_string(),
                l["gpus"].to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("d2d", "[0]"),
        ("h2d", "[0]"),
        ("d2h", "[0]"),
        ("d2d", "[1]"),
        ("h2d", "[1]"),
        ("d2h", "[1]"),
        ("p2p", "[0,1]"),
    ]
    .iter()
    .map(|(k, g)| (k.to_string(), g.to_string()))
    .collect();
    assert_eq!(kinds, want, "{c}");
}

/// Arguments the measurement cannot run with are a usage error (exit 2) before any
/// GPU is touched: a GPU listed twice, zero bytes, a device that is not a number.
#[test]
fn ceilings_with_bad_arguments_exit_2() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    for (args, says) in [
        (&["--devices", "0,0"][..], "--devices lists GPU 0 twice"),
        (
            &["--devices", "0", "--bytes", "0"][..],
            "--bytes must be at least 1",
        ),
        (
            &["--devices", "0,x"][..],
            "invalid value 'x' for '--devices",
        ),
        (&["--bytes", "1M"][..], "--devices <LIST>"),
    ] {
        let mut all = vec!["ceilings"];
        all.extend_from_slice(args);
        let o = on_sim(&dir, "nvlink", &[], &all).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}

/// `sweep --pairs` on 4 NVLink GPUs whose link between GPUs 1 and 2 carries a
/// quarter of its bandwidth: the report's matrix and heatmap name that pair and no
/// other, and its ceiling (measured over the same slow link) says the all-reduce is
/// at what the link allows: the link, not NCCL, is the problem.
#[test]
fn pairs_find_the_one_slow_link() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    let o = sim_sweep(
        &dir,
        "nvlink",
        &[
            ("NCCL_BENCH_SIM_GPUS", "4"),
            ("NCCL_BENCH_SIM_SLOW_LINK", "1-2"),
        ],
        out,
        &[
            "--pairs",
            "--gpus",
            "4",
            "--transports",
            "default",
            "-b",
            "1M",
            "-e",
            "64M",
            "-f",
            "64",
            "-n",
            "10",
            // What NCCL chose is not the question here: no probe group.
            "--no-probe",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(out);
    let rows = rows(&run);
    assert_eq!(rows.len(), 6 * 2);
    let largest: Vec<_> = rows.iter().filter(|r| r["bytes"] == "67108864").collect();
    let busbw = |config: &str| -> f64 {
        let r = largest.iter().find(|r| r["config"] == config).unwrap();
        r["busbw_gbps"].parse().unwrap()
    };
    let slow = busbw("default.pair1-2");
    for other in ["default.pair0-1", "default.pair0-3", "default.pair2-3"] {
        let ratio = slow / busbw(other);
        assert!((ratio - 0.25).abs() < 0.03, "{other}: {ratio}");
    }
    // Each pair's ceiling is its own link's: all at about 100 %.
    for r in &largest {
        let pct: f64 = r["ceiling_pct"].parse().unwrap();
        assert!((pct - 100.0).abs() < 5.0, "{r:?}");
    }
    let report = report(&run);
    let section = &report[report.find("## Pairs").expect("a Pairs section")..];
    assert!(section.contains("**Slow: GPUs 1 and 2 (+"), "{section}");
    assert_eq!(
        section.matches("(slow)").count(),
        2,
        "one pair, twice in the matrix: {section}"
    );
    assert!(
        section.contains("| | GPU 0 | GPU 1 | GPU 2 | GPU 3 |"),
        "{section}"
    );
    assert!(run.join("plots/pairs-default.svg").is_file());
    assert!(report.contains("Simulated GPUs (test stand-in), not a measurement"));
}

/// A driver whose event record costs the host 500 us, on a device that waits for
/// the host's enqueue (`NCCL_BENCH_SIM_HOST_PACED`) and runs an 8 B all-reduce in
/// about 6 us: with an event after every all-reduce the host sets the pace and
/// every iteration reads about 500 us. The automatic stride measures that at the
/// size's calibration and records an event every k all-reduces instead, at most
/// the case's 2000 iterations / 100 = 20: about 25 us of event per iteration is
/// left, far below 500 us, and the case's note says so.
#[test]
fn events_that_would_set_the_pace_are_recorded_less_often() {
    let _machine = crate::common::alone();
    let Some(dir) = sim_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let slow_events = [
        ("NCCL_BENCH_SIM_HOST_PACED", "1"),
        ("NCCL_BENCH_SIM_EVENT_RECORD_NS", "500000"),
    ];
    let args = [
        "--gpus",
        "2",
        "--transports",
        "default",
        "-b",
        "8",
        "-e",
        "8",
        "-n",
        "2000",
    ];
    let sweep = |name: &str, env: &[(&str, &str)]| {
        let out = tmp.path().join(name);
        let o = sim_sweep(&dir, "nvlink", env, &out, &args);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        let run = run_dir(&out);
        let row = rows(&run).remove(0);
        let time: f64 = row["time_us"].parse().unwrap();
        (run, row, time)
    };
    let (run, auto, auto_us) = sweep("auto", &slow_events);
    let mut forced_env = slow_events.to_vec();
    forced_env.push(("NCCL_BENCH_EVENTS_EVERY", "1"));
    let (_, forced, forced_us) = sweep("forced", &forced_env);
    // The machine running the tests may slow the host further, both ways (the
    // other tests' processes take turns on its cores: 100 us an iteration was
    // seen): the bounds are far from the expected 500 us and 25 us (an event
    // every 20 all-reduces at most).
    assert!(forced_us > 400.0, "an event per all-reduce: {forced_us} us");
    assert!(
        auto_us < forced_us / 3.0,
        "the automatic stride: {auto_us} us (forced: {forced_us} us)"
    );
    assert!(
        auto["quality_note"].contains("a timestamp every ")
            && auto["quality_note"].contains("-iteration means"),
        "{auto:?}"
    );
    assert!(
        !forced["quality_note"].contains("a timestamp every"),
        "{forced:?}"
    );
    let logs = crate::common::logs_text(&run);
    assert!(
        logs.contains("8 bytes: host ") && logs.contains("an event every "),
        "{logs}"
    );
}
