//! `nccl-bench soak` from the command line: a CPU hog on the host backend and the
//! stand-in's throttle and NVLink faults on simulated GPUs make dips that soak.csv,
//! the chart and the report place at the right time and explain with the counter
//! that moved (the GPU's index, the link); a soak without a fault has no episode;
//! bad --duration and --interval values are exit 2 with nothing written.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use common::sim::{on_sim, sim_dir};
use common::{bin, text};

/// The soaks measure time: one at a time, or they would be each other's CPU hog.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// soak.csv's rows: (start_s, end_s, busbw_gbps).
fn soak_rows(run: &Path) -> Vec<(f64, f64, f64)> {
    let mut r = csv::Reader::from_path(run.join("soak.csv")).unwrap();
    let head = r.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (s, e, b) = (col("start_s"), col("end_s"), col("busbw_gbps"));
    r.records()
        .map(|x| {
            let x = x.unwrap();
            (
                x[s].parse().unwrap(),
                x[e].parse().unwrap(),
                x[b].parse().unwrap(),
            )
        })
        .collect()
}

fn median_busbw(rows: &[(f64, f64, f64)]) -> f64 {
    let mut b: Vec<f64> = rows.iter().map(|r| r.2).collect();
    b.sort_by(f64::total_cmp);
    b[b.len() / 2]
}

/// The report's dip sentences.
fn dips(report: &str) -> Vec<&str> {
    report
        .lines()
        .filter(|l| l.starts_with("- busbw fell"))
        .collect()
}

#[test]
fn what_the_host_backend_or_the_collective_cannot_do_is_exit_2_with_nothing_written() {
    let out = tempfile::tempdir().unwrap();
    let where_to = out.path().join("results");
    for (args, says) in [
        (&["--graph", "4"][..], "--graph 4"),
        (
            &["--size", "16", "--gpus", "8", "--coll", "reduce_scatter"],
            "--size 16",
        ),
    ] {
        let o = Command::new(bin())
            .args(["soak", "--backend", "host", "--out"])
            .arg(&where_to)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{}",
            text(&o)
        );
        assert!(!where_to.exists(), "{args:?} wrote {}", where_to.display());
    }
}

#[test]
fn a_size_faster_than_a_batch_can_hold_soaks_in_full_batches() {
    // 8 bytes take a microsecond or two: a quarter interval is more iterations than
    // a worker takes at once, so batches stop at its limit.
    let _alone = alone();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let run = out.path().join("soak");
    let o = Command::new(bin())
        .args([
            "soak",
            "--backend",
            "host",
            "--size",
            "8",
            "--duration",
            "3s",
            "--plain",
        ])
        .arg("--shm-dir")
        .arg(shm.path())
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(soak_rows(&run).len() >= 2);
}

#[test]
fn bad_durations_and_intervals_are_exit_2_with_nothing_written() {
    let out = tempfile::tempdir().unwrap();
    let where_to = out.path().join("results");
    for args in [
        &["--duration", "0s"][..],
        &["--duration", "ten"],
        &["--duration=-5s"],
        &["--interval", "5ms"],
        &["--interval", "1fortnight"],
        &["--duration", "1s", "--interval", "1s"],
        &["--duration", "30s", "--interval", "20s"],
    ] {
        let o = Command::new(bin())
            .args(["soak", "--backend", "host", "--out"])
            .arg(&where_to)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(
            said.contains("--duration") || said.contains("--interval"),
            "{args:?}: {said}"
        );
        assert!(!said.contains("panicked"), "{said}");
        assert!(!where_to.exists(), "{args:?} wrote {}", where_to.display());
    }
}

/// Spins on CPU 0 from `after` for `length`, until `stop`.
fn cpu_hog(
    after: Duration,
    length: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        // SAFETY: a zeroed cpu_set_t with CPU 0 set, for this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        let end = Instant::now() + length;
        let mut x = 0u64;
        while Instant::now() < end && !stop.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    })
}

#[test]
fn a_cpu_hog_on_one_core_is_a_dip_at_its_time_explained_by_other_processes() {
    let _alone = alone();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let run = out.path().join("soak");
    let stop = Arc::new(AtomicBool::new(false));
    let hog = cpu_hog(
        Duration::from_secs(10),
        Duration::from_secs(6),
        stop.clone(),
    );
    let o = Command::new(bin())
        .args([
            "soak",
            "--backend",
            "host",
            "--gpus",
            "2",
            "--duration",
            "20s",
            "--plain",
        ])
        .arg("--shm-dir")
        .arg(shm.path())
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = soak_rows(&run);
    assert!((18..=21).contains(&rows.len()), "{} intervals", rows.len());
    // The run's clock starts when the command does (a fraction of a second after
    // the hog's): the hog ran from about 10 s to 16 s of it.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let dips = dips(&report);
    assert_eq!(dips.len(), 1, "{report}");
    assert!(
        dips[0].contains("CPU cores busy with other processes rose"),
        "{report}"
    );
    // soak.csv itself: the intervals of the hog are the low ones.
    let median = median_busbw(&rows);
    let low: Vec<f64> = rows
        .iter()
        .filter(|r| r.2 < 0.8 * median)
        .map(|r| r.0)
        .collect();
    assert!(low.len() >= 4, "{rows:?}");
    assert!(
        low.iter().all(|t| (9.0..17.0).contains(t)),
        "low intervals at {low:?} s"
    );
    assert!(run.join("plots/soak-default-n2-all_reduce.png").is_file());
    let svg = std::fs::read_to_string(run.join("plots/soak-default-n2-all_reduce.svg")).unwrap();
    assert!(
        svg.contains("below the median"),
        "the episode is shaded with its words"
    );
    let counters = std::fs::read_to_string(run.join("counters.csv")).unwrap();
    assert!(counters.contains(",host,cpu.other_cores,gauge,"));
}

/// A soak on 8 simulated H100s behind NVSwitch at 1 MiB, with `faults`; the run
/// directory and the report.
fn sim_soak(dir: &Path, out: &Path, faults: &str, duration: &str) -> (std::path::PathBuf, String) {
    let run = out.join("soak");
    let epoch = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        .to_string();
    let lib = dir.join("libnccl.so.2");
    let mut env = vec![("NCCL_BENCH_SIM_EPOCH", epoch.as_str())];
    if !faults.is_empty() {
        env.push(("NCCL_BENCH_SIM_FAULT", faults));
    }
    let args = [
        "soak",
        "--backend",
        "nccl",
        "--nccl-lib",
        lib.to_str().unwrap(),
        "--gpus",
        "8",
        "--size",
        "1M",
        "--duration",
        duration,
        "--plain",
        "--run-dir",
        run.to_str().unwrap(),
    ];
    let o = on_sim(dir, "nvswitch", &env, &args).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("Simulated GPUs (test stand-in), not a measurement"));
    (run, report)
}

#[test]
fn a_throttled_gpu_and_an_nvlink_counting_replays_are_named_as_the_causes_of_their_dips() {
    let Some(dir) = sim_dir() else { return };
    let _alone = alone();
    let out = tempfile::tempdir().unwrap();
    // GPU 3 throttles 10 s into the soak for 5 s and reports XID 79 at 11 s; the
    // NVLink between GPUs 1 and 5 replays from 20 s for 4 s.
    let faults = "throttle@3+10,nvlink-errors@1-5+20/4,xid@3+11:79";
    let (run, report) = sim_soak(&dir, out.path(), faults, "30s");
    let dips = dips(&report);
    assert_eq!(dips.len(), 2, "{report}");
    assert!(
        dips[0].contains("GPU 3 reported HW slowdown"),
        "{}",
        dips[0]
    );
    assert!(dips[0].contains("GPU 3 counted 1 XID event"), "{}", dips[0]);
    assert!(!dips[0].contains("NVLink"), "{}", dips[0]);
    // GPU 1's link to GPU 5 is its link 5, and GPU 5's link to GPU 1 its link 1.
    assert!(dips[1].contains("NVLink 5 on GPU 1 counted"), "{}", dips[1]);
    assert!(dips[1].contains("NVLink 1 on GPU 5 counted"), "{}", dips[1]);
    assert!(dips[1].contains("replays"), "{}", dips[1]);
    assert!(!dips[1].contains("GPU 3"), "{}", dips[1]);
    // soak.csv: the throttled intervals are 1/1.6 of the others, at 10-15 s of the
    // epoch (the run starts a moment after it).
    let rows = soak_rows(&run);
    let median = median_busbw(&rows);
    let throttled: Vec<f64> = rows
        .iter()
        .filter(|r| r.2 < median * 0.7)
        .map(|r| r.0)
        .collect();
    assert!(throttled.len() >= 3, "{rows:?}");
    assert!(
        throttled.iter().all(|t| (8.0..15.0).contains(t)),
        "{throttled:?}"
    );
    let counters = std::fs::read_to_string(run.join("counters.csv")).unwrap();
    assert!(counters.contains(",gpu3,throttle.hw_slowdown,flag,1"));
    assert!(counters.contains(",gpu1.nvlink5,nvlink.replay,count,"));
    assert!(counters.contains(",gpu3,xid.last,gauge,79"));
}

#[test]
fn a_soak_without_a_fault_has_no_episode() {
    let Some(dir) = sim_dir() else { return };
    let _alone = alone();
    let out = tempfile::tempdir().unwrap();
    let (run, report) = sim_soak(&dir, out.path(), "", "12s");
    assert!(dips(&report).is_empty(), "{report}");
    assert!(report.contains("No dip episode"), "{report}");
    assert!(soak_rows(&run).len() >= 11);
}

/// `doctor --json`'s error-counter check on the simulated GPUs with `env`.
fn counters_check(dir: &Path, env: &[(&str, &str)]) -> serde_json::Value {
    let o = on_sim(dir, "nvswitch", env, &["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "counters")
        .cloned()
        .unwrap()
}

#[test]
fn doctor_warns_of_an_nvlink_that_counts_replays_on_simulated_gpus() {
    let Some(dir) = sim_dir() else { return };
    // The fault's window began at the epoch: its replays are counted by now.
    let env = [
        ("NCCL_BENCH_SIM_EPOCH", "1"),
        ("NCCL_BENCH_SIM_FAULT", "nvlink-errors@1-5+0/4"),
    ];
    let check = counters_check(&dir, &env);
    assert_eq!(check["status"], "warn", "{check}");
    let value = check["value"].as_str().unwrap();
    assert!(
        value.contains("NVLink 5 on GPU 1: 160 nvlink.replay"),
        "{value}"
    );
    let check = counters_check(&dir, &[]);
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["value"]
            .as_str()
            .unwrap()
            .contains("8 GPU(s), 144 NVLink(s)"),
        "{check}"
    );
}

#[test]
fn ctrl_c_keeps_what_was_measured_and_writes_the_report() {
    let _alone = alone();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let run = out.path().join("soak");
    let mut child = Command::new(bin())
        .args([
            "soak",
            "--backend",
            "host",
            "--duration",
            "60s",
            "--size",
            "1M",
            "--plain",
        ])
        .arg("--shm-dir")
        .arg(shm.path())
        .arg("--run-dir")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let rows = soak_rows(&run);
    assert!((2..=5).contains(&rows.len()), "{} intervals", rows.len());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("## default, 2 ranks"), "{report}");
    let results = std::fs::read_to_string(run.join("results.csv")).unwrap();
    assert!(results.contains(",ok,"), "{results}");
    assert!(results.contains("interrupted after"), "{results}");
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"status\": \"interrupted\""));
}
