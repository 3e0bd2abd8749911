//! Failure containment with real processes failing for real (test-only fault
//! injection through NCCL_BENCH_FAULT): each failing case is recorded with its reason,
//! the sweep goes on, no process survives and no segment is left in the shm dir.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

struct Faulty {
    output: Output,
    rows: Vec<HashMap<String, String>>,
    elapsed: Duration,
}

/// A 2-rank SHM sweep over 1K, 4K, 16K with `fault` injected, in one round (one
/// process group per failure: rounds are tested on their own below).
fn sweep_with_fault(fault: &str, extra: &[&str]) -> Faulty {
    sweep_with_fault_in(fault, &[&["--rounds", "1"], extra].concat())
}

/// `sweep_with_fault` with the flags `extra` only (rounds as they ask).
fn sweep_with_fault_in(fault: &str, extra: &[&str]) -> Faulty {
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let output = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "16K",
            "-f",
            "4",
            "-n",
            "3",
        ])
        .args(extra)
        .env("NCCL_BENCH_FAULT", fault)
        .output()
        .unwrap();
    let elapsed = start.elapsed();
    let marker = shm.path().to_string_lossy().into_owned();
    assert_eq!(
        wait_no_processes(&marker, Duration::from_secs(2)),
        Vec::<u32>::new(),
        "workers survived"
    );
    assert!(
        dir_entries(shm.path()).is_empty(),
        "segments left: {:?}",
        dir_entries(shm.path())
    );
    let rows = rows(&run_dir(out.path()));
    Faulty {
        output,
        rows,
        elapsed,
    }
}

fn statuses(rows: &[HashMap<String, String>]) -> Vec<&str> {
    rows.iter().map(|r| r["status"].as_str()).collect()
}

#[test]
fn a_hanging_rank_times_out_and_the_sweep_goes_on() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault(
        "hang:rank=1:bytes=4K",
        &["--timeout", "3s", "--max-time", "1s"],
    );
    assert_eq!(f.output.status.code(), Some(1), "{}", text(&f.output));
    assert_eq!(statuses(&f.rows), ["ok", "timeout", "ok"], "{:?}", f.rows);
    let error = &f.rows[1]["error"];
    assert!(
        error.starts_with("timed out after 3s during 4 KiB"),
        "{error}"
    );
    assert_eq!(f.rows[1]["transports"], "SHM");
    assert_eq!(f.rows[1]["time_us"], "");
    // The hang costs the timeout plus at most 5 s of clean-up; the other cases are quick.
    assert!(
        f.elapsed < Duration::from_secs(3 + 5),
        "took {:?}",
        f.elapsed
    );
}

#[test]
fn a_rank_exiting_mid_case_fails_that_case_only() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault("exit:rank=1:bytes=4K", &[]);
    assert_eq!(f.output.status.code(), Some(1), "{}", text(&f.output));
    assert_eq!(statuses(&f.rows), ["ok", "failed", "ok"]);
    let error = &f.rows[1]["error"];
    assert!(
        error.starts_with("rank 1 exited with status 3 during 4 KiB; last output: "),
        "{error}"
    );
    assert!(
        error.ends_with("fault injection: exiting with status 3 at Size(4096)"),
        "{error}"
    );
}

#[test]
fn a_crashing_rank_is_reported_with_its_signal() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault("crash:rank=0:bytes=16K", &[]);
    assert_eq!(statuses(&f.rows), ["ok", "ok", "failed"]);
    let error = &f.rows[2]["error"];
    assert!(
        error.starts_with("rank 0 was killed by signal 6 (SIGABRT) during 16 KiB"),
        "{error}"
    );
}

#[test]
fn a_failure_during_set_up_fails_every_size_of_the_group() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault("exit:rank=1", &[]);
    assert_eq!(statuses(&f.rows), ["failed", "failed", "failed"]);
    for row in &f.rows {
        assert!(
            row["error"].starts_with("rank 1 exited with status 3 during communicator set-up"),
            "{row:?}"
        );
    }
}

#[test]
fn a_corrupted_result_is_recorded_as_wrong() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault("corrupt:rank=0", &[]);
    assert_eq!(f.output.status.code(), Some(1));
    assert_eq!(statuses(&f.rows), ["wrong", "wrong", "wrong"]);
    for row in &f.rows {
        assert_eq!(row["wrong"], "1", "{row:?}");
        assert!(
            row["error"].contains("rank 0 has 1, the first at index 0"),
            "{row:?}"
        );
        assert_ne!(row["time_us"], "", "a wrong case still has its timing");
    }
}

/// A 1 MiB tmpfs as the shm dir: the 4 MiB FIFO segment cannot be reserved, exactly
/// NCCL's failure in a container with a small /dev/shm. The tmpfs lives in a private
/// mount namespace (unshare), so the test needs no cleanup and works without root.
#[test]
fn a_full_shm_dir_fails_with_enospc_and_leaves_nothing() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let script = r#"mount -t tmpfs -o size=1M tmpfs "$1" || exit 99; shift; "$@"; rc=$?; echo "left:$(ls -A "$SHM")"; exit $rc"#;
    let o = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(shm.path())
        .arg(bin())
        .args([
            "sweep",
            "--backend",
            "host",
            "--plain",
            "--gpus",
            "2",
            "--transports",
            "default,shm-off",
        ])
        .args(["-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "--out"])
        .arg(out.path())
        .arg("--shm-dir")
        .arg(shm.path())
        .env("SHM", shm.path())
        .env_remove("NCCL_BENCH_FAULT")
        .output()
        .expect("unshare (util-linux) is needed for this test");
    assert_ne!(
        o.status.code(),
        Some(99),
        "cannot mount a tmpfs: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("left:\n"), "segments left behind: {stdout}");
    let rows = rows(&run_dir(out.path()));
    assert_eq!(
        statuses(&rows),
        ["failed", "failed", "ok", "ok"],
        "{rows:?}"
    );
    for row in &rows[..2] {
        let e = &row["error"];
        assert!(
            e.contains("error while creating shared memory segment"),
            "{e}"
        );
        assert!(
            e.contains("posix_fallocate failed: No space left on device"),
            "{e}"
        );
    }
    assert_eq!(rows[2]["transports"], "NET/Socket");
    // The report reads this as a /dev/shm problem, not as a reason to disable SHM.
    let report = std::fs::read_to_string(run_dir(out.path()).join("report.md")).unwrap();
    assert!(
        report.contains("**Keep SHM and give /dev/shm more room"),
        "{report}"
    );
    assert!(
        report.contains("/dev/shm needs about 8.01 MiB on 2 ranks per node.")
            && report.contains("The estimate: 4198400 B per segment x 2 ranks"),
        "{report}"
    );
    // The doctor's check in the manifest sizes the same segments: one figure.
    let manifest = std::fs::read_to_string(run_dir(out.path()).join("manifest.json")).unwrap();
    assert!(
        manifest.contains("need 8.0 MiB for 2 local ranks"),
        "{manifest}"
    );
}

fn wait_for_rows(run_parent: &Path, n: usize, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(run) = std::fs::read_dir(run_parent)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        {
            if let Ok(text) = std::fs::read_to_string(run.path().join("results.csv")) {
                if text.lines().count() > n {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn sigint_stops_cleanly_and_keeps_finished_cases() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let mut child = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "1M",
            "-n",
            "3",
            "--rounds",
            "1",
        ])
        .env("NCCL_BENCH_FAULT", "hang:rank=1:bytes=8K")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // 1K, 2K and 4K finish; the sweep then hangs at 8K.
    assert!(
        wait_for_rows(out.path(), 3, Duration::from_secs(20)),
        "no case finished"
    );
    std::thread::sleep(Duration::from_millis(200));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let marker = shm.path().to_string_lossy().into_owned();
    assert!(
        wait_no_processes(&marker, Duration::from_secs(2)).is_empty(),
        "workers survived"
    );
    assert!(dir_entries(shm.path()).is_empty());
    let run = run_dir(out.path());
    let rows = rows(&run);
    assert_eq!(
        statuses(&rows),
        ["ok", "ok", "ok"],
        "finished cases are kept, the hung one is not recorded"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    assert_eq!(manifest["cases"]["done"], 3);
}

#[test]
fn workers_die_with_a_killed_orchestrator() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let marker = shm.path().to_string_lossy().into_owned();
    let mut child = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "8K",
            "-n",
            "3",
            "--rounds",
            "1",
        ])
        .env("NCCL_BENCH_FAULT", "hang:rank=1:bytes=2K")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for_rows(out.path(), 1, Duration::from_secs(20)),
        "no case finished"
    );
    // The orchestrator and its two workers, hung at 2K (waited for, not slept on:
    // the second group's workers may still be starting).
    let start = Instant::now();
    while processes_mentioning(&marker).len() != 3 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        processes_mentioning(&marker).len(),
        3,
        "workers should be running"
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert_eq!(
        wait_no_processes(&marker, Duration::from_secs(3)),
        Vec::<u32>::new(),
        "orphans"
    );
}

/// Each worker unlinks its own segment right after set-up, so the orchestrator's
/// clean-up is exercised only by a rank that hangs in between (the `segment` fault):
/// the segment is there while the group is stuck, and gone once the orchestrator
/// has killed the group.
#[test]
fn a_stuck_groups_segments_are_removed_by_the_orchestrator() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let mut child = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "1K",
        ])
        .args(["-n", "3", "--timeout", "3"])
        .env("NCCL_BENCH_FAULT", "segment:rank=1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut seen: Vec<String> = Vec::new();
    // Rank 0's segment may appear first: wait for rank 1's, which stays.
    while !seen.iter().any(|n| n.ends_with("-r1")) && start.elapsed() < Duration::from_secs(10) {
        seen = dir_entries(shm.path());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        seen.iter().any(|n| n.ends_with("-r1")),
        "rank 1's segment never appeared: {seen:?}"
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        dir_entries(shm.path()).is_empty(),
        "segments left: {:?}",
        dir_entries(shm.path())
    );
    let rows = rows(&run_dir(out.path()));
    assert_eq!(statuses(&rows), ["timeout"], "{rows:?}");
}

/// The worker pids of this sweep (processes whose command line is `... worker ...`
/// and mentions `marker`).
fn workers(marker: &str) -> Vec<u32> {
    processes_mentioning(marker)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == b"worker"))
        })
        .collect()
}

/// A failed group's workers are killed and reaped before the next group starts
/// (checked while the sweep runs: the parent-death signal would hide a failed kill
/// once the orchestrator exits).
#[test]
fn a_failed_groups_workers_are_gone_before_the_next_group_starts() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let marker = shm.path().to_string_lossy().into_owned();
    // 1 KiB hangs on rank 1 (timeout); fresh workers then run 2 KiB for a second:
    // each timed all-reduce pauses 50 ms first, so how long they live does not
    // hang on how fast this machine moves bytes (1 s of the case's 3).
    let mut child = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "--rounds",
            "1",
            "-b",
            "1K",
            "-e",
            "2K",
        ])
        .args(["-f", "2", "-n", "20", "--timeout", "3"])
        .env(
            "NCCL_BENCH_FAULT",
            "hang:rank=1:bytes=1K,stall:bytes=2K:us=50000",
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut first: Vec<u32> = Vec::new();
    let mut checked = false;
    while start.elapsed() < Duration::from_secs(30) && !checked {
        let now = workers(&marker);
        if first.is_empty() && now.len() == 2 {
            first = now;
        } else if !first.is_empty() && now.iter().any(|p| !first.contains(p)) {
            let alive: Vec<&u32> = first
                .iter()
                .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                .collect();
            assert!(
                alive.is_empty(),
                "old workers {alive:?} alongside new {now:?}"
            );
            checked = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = child.wait().unwrap();
    assert!(
        checked,
        "never saw the second group start (first group: {first:?})"
    );
    assert_eq!(status.code(), Some(1));
    let rows = rows(&run_dir(out.path()));
    assert_eq!(statuses(&rows), ["timeout", "ok"], "{rows:?}");
}

/// With rounds, a case that fails is recorded once, in the round it failed in, and
/// the later rounds leave it out; the other sizes get every round.
#[test]
fn a_case_failing_in_a_round_is_recorded_once_and_left_out_of_later_rounds() {
    let _machine = crate::common::shared();
    let f = sweep_with_fault_in("exit:rank=1:bytes=4K", &["--rounds", "6"]);
    assert_eq!(f.output.status.code(), Some(1), "{}", text(&f.output));
    assert_eq!(f.rows.len(), 3, "{:?}", f.rows);
    let by_size = |bytes: &str| {
        f.rows
            .iter()
            .find(|r| r["bytes"] == bytes)
            .unwrap_or_else(|| panic!("no {bytes} row: {:?}", f.rows))
    };
    let failed = by_size("4096");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["rounds"], "");
    for bytes in ["1024", "16384"] {
        let ok = by_size(bytes);
        assert_eq!((ok["status"].as_str(), ok["rounds"].as_str()), ("ok", "6"));
        assert_eq!(ok["iters"], "18", "3 iterations in each of 6 rounds");
    }
    let stdout = String::from_utf8_lossy(&f.output.stdout);
    assert!(stdout.contains("3 cases x 6 rounds"), "{stdout}");
}

/// SIGINT during a sweep of several rounds: the cases measured so far are kept with
/// the rounds they had, and said to have fewer than asked.
#[test]
fn sigint_keeps_the_rounds_measured_so_far() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let mut child = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "1M",
            "-n",
            "3",
            "--rounds",
            "6",
        ])
        .env("NCCL_BENCH_FAULT", "hang:rank=1:bytes=8K")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Round 1 measures 1K, 2K and 4K (each round's histogram is logged at once),
    // then hangs at 8K.
    let start = Instant::now();
    let rounds_logged = || {
        std::fs::read_dir(out.path())
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path().join("histograms.hlog")).ok())
            .map_or(0, |t| t.matches("/round1,").count())
    };
    while rounds_logged() < 3 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rounds_logged(), 3, "round 1 did not reach 8K");
    std::thread::sleep(Duration::from_millis(200));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let marker = shm.path().to_string_lossy().into_owned();
    assert!(wait_no_processes(&marker, Duration::from_secs(2)).is_empty());
    let run = run_dir(out.path());
    let rows = rows(&run);
    assert_eq!(statuses(&rows), ["ok", "ok", "ok"], "{rows:?}");
    for r in &rows {
        assert_eq!(r["rounds"], "1", "{r:?}");
        assert_eq!(r["iters"], "3", "{r:?}");
        assert!(
            r["quality_note"].contains("interrupted after 1 of 6 rounds"),
            "{r:?}"
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    assert_eq!(manifest["rounds"], 6);
    assert_eq!(manifest["cases"]["done"], 3);
}
