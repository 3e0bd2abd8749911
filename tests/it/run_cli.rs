//! `nccl-bench run` on one machine: four rank processes started by hand with the
//! environment a launcher would give them (torchrun-style and Slurm), the host
//! backend, the rendezvous on 127.0.0.1. Two configs appended to one run directory
//! must give what `sweep` gives; missing or misconfigured ranks must make every
//! process exit within the deadline with a precise message.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, free_port, rows, text, wait_no_processes};

/// A `run` process with a clean environment (no launcher variables of the machine
/// running the tests) plus `env`, in one round (tests that stop a run wait for a
/// first case's row, which several rounds write only at their last round).
fn rank(out: &Path, shm: &Path, env: &[(&str, String)], extra: &[&str]) -> Command {
    rank_in_rounds(out, shm, env, extra, &["--rounds", "1"])
}

/// `rank` with `rounds` (`--rounds N` or nothing for the default).
fn rank_in_rounds(
    out: &Path,
    shm: &Path,
    env: &[(&str, String)],
    extra: &[&str],
    rounds: &[&str],
) -> Command {
    let mut c = Command::new(bin());
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args([
            "run",
            "--backend",
            "host",
            "--plain",
            "-b",
            "1K",
            "-e",
            "16K",
            "-n",
            "5",
        ])
        .args(rounds)
        .arg("--shm-dir")
        .arg(shm)
        .arg("--out")
        .arg(out)
        .args(extra)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn torchrun_env(r: u32, world: u32, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("RANK", r.to_string()),
        ("WORLD_SIZE", world.to_string()),
        ("LOCAL_RANK", r.to_string()),
        ("MASTER_ADDR", "127.0.0.1".into()),
        ("MASTER_PORT", port.to_string()),
    ]
}

fn slurm_env(r: u32, world: u32, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("SLURM_PROCID", r.to_string()),
        ("SLURM_NTASKS", world.to_string()),
        ("SLURM_LOCALID", r.to_string()),
        ("SLURM_NODEID", "0".into()),
        ("SLURM_JOB_NODELIST", "localhost".into()),
        ("SLURM_JOB_ID", "4242".into()),
        ("SLURM_STEP_ID", "0".into()),
        ("MASTER_PORT", port.to_string()),
    ]
}

/// Starts the ranks (rank 0 last, so the others retry first) and waits for all.
fn run_all(commands: Vec<Command>) -> (Vec<Output>, Duration) {
    let start = Instant::now();
    let children: Vec<Child> = commands
        .into_iter()
        .rev()
        .map(|mut c| c.spawn().expect("start nccl-bench run"))
        .collect();
    let mut outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    outputs.reverse();
    (outputs, start.elapsed())
}

fn cell_keys(run: &Path) -> BTreeSet<(String, String, String)> {
    rows(run)
        .into_iter()
        .map(|r| (r["config"].clone(), r["nranks"].clone(), r["bytes"].clone()))
        .collect()
}

#[test]
fn four_ranks_under_two_launchers_build_one_run_directory_like_sweep() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();

    let port = free_port();
    let (outputs, _) = run_all(
        (0..4)
            .map(|r| {
                rank(
                    &out,
                    &shm,
                    &torchrun_env(r, 4, port),
                    &["--transports", "default"],
                )
            })
            .collect(),
    );
    for (r, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "rank {r}: {}", text(o));
    }
    let run = common::run_dir(&out);
    assert!(String::from_utf8_lossy(&outputs[1].stderr).contains("rank 1 of 4"));

    let port = free_port();
    let run_dir = run.to_string_lossy().into_owned();
    let (outputs, _) = run_all(
        (0..4)
            .map(|r| {
                rank(
                    &out,
                    &shm,
                    &slurm_env(r, 4, port),
                    &["--transports", "shm-off", "--run-dir", &run_dir],
                )
            })
            .collect(),
    );
    for (r, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "rank {r}: {}", text(o));
    }

    // Every case of both configs, correct, with the transport each config asks for.
    let all = rows(&run);
    assert_eq!(all.len(), 2 * 5, "{all:?}");
    for row in &all {
        assert_eq!(row["status"], "ok", "{row:?}");
        assert_eq!(row["nranks"], "4");
        let transport = if row["config"] == "default" {
            "SHM"
        } else {
            "NET/Socket"
        };
        assert_eq!(row["transports"], transport, "{row:?}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "complete");
    assert_eq!(manifest["cases"]["ok"], 10);
    assert_eq!(manifest["configs"][0]["name"], "default");
    assert_eq!(manifest["configs"][1]["name"], "shm-off");
    assert_eq!(manifest["cluster"]["launcher"], "Slurm");
    assert_eq!(manifest["cluster"]["world_size"], 4);
    assert_eq!(manifest["cluster"]["ranks"].as_array().unwrap().len(), 4);
    let launches = manifest["launches"].as_array().unwrap();
    assert_eq!(launches.len(), 2);
    assert_eq!(launches[0]["cluster"]["launcher"], "torchrun");
    assert_eq!(launches[0]["status"], "complete");
    assert_eq!(launches[1]["configs"][0], "shm-off");
    let logs = common::dir_entries(&run.join("logs"));
    for r in 0..4 {
        for config in ["default", "shm-off"] {
            let name = format!("{config}.n4.rank{r}.log");
            assert!(logs.contains(&name), "{name} missing: {logs:?}");
        }
    }

    // The same shape as a sweep of the same cases.
    let swept = tmp.path().join("swept");
    let o = common::sweep(&swept, &shm)
        .args([
            "--gpus",
            "4",
            "--transports",
            "default,shm-off",
            "-b",
            "1K",
            "-e",
            "16K",
            "-n",
            "5",
            "--rounds",
            "1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let swept = common::run_dir(&swept);
    // `--gpus 4` sweeps 2 and 4 ranks; the run had 4.
    let at_4: BTreeSet<_> = cell_keys(&swept)
        .into_iter()
        .filter(|k| k.1 == "4")
        .collect();
    assert_eq!(cell_keys(&run), at_4);
    let header = |dir: &Path| {
        std::fs::read_to_string(dir.join("results.csv"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(header(&run), header(&swept));
    let tags = |dir: &Path| {
        std::fs::read_to_string(dir.join("histograms.hlog"))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("Tag="))
            .map(|l| l.split(',').next().unwrap().to_string())
            // Re-measurements of flagged cases (machine noise decides which) have
            // tags of their own beside the first measurement's.
            .filter(|t| !t.ends_with("/remeasured"))
            .collect::<BTreeSet<_>>()
    };
    let tags_at_4: BTreeSet<_> = tags(&swept)
        .into_iter()
        .filter(|t| t.contains("/n4/"))
        .collect();
    assert_eq!(tags(&run), tags_at_4);
    assert_eq!(tags(&run).len(), 10);

    // And it reads like one: report and compare work on it.
    let o = Command::new(bin())
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("| shm-off |"), "{report}");
    assert!(
        report.contains("- Ranks: 4 under Slurm on 1 host(s): "),
        "{report}"
    );
    let o = Command::new(bin())
        .arg("compare")
        .arg(&run)
        .args([
            "--config-a",
            "default",
            "--config-b",
            "shm-off",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        text(&o)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        1 + 5,
        "{}",
        text(&o)
    );
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}

/// Every rank exited 2, after the rendezvous deadline `deadline` and not long after
/// (the margin is wide: a busy 2-core CI machine starts processes slowly; a rank
/// that ignored the deadline would wait for its peers for ever).
fn assert_all_exit_2_after(outputs: &[Output], elapsed: Duration, deadline: Duration) {
    for (r, o) in outputs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(2), "rank {r}: {}", text(o));
    }
    assert!(
        elapsed >= deadline.mul_f64(0.95) && elapsed < deadline + Duration::from_secs(12),
        "took {elapsed:?} with a {deadline:?} deadline"
    );
}

#[test]
fn a_rank_that_never_comes_is_named_and_every_rank_exits_within_the_deadline() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().to_path_buf());
    let port = free_port();
    let commands = (0..2)
        .map(|r| {
            rank(
                &out,
                &shm,
                &torchrun_env(r, 3, port),
                &[
                    "--transports",
                    "default",
                    "--rendezvous-timeout",
                    "3s",
                    "--label",
                    "missing-rank",
                ],
            )
        })
        .collect();
    let (outputs, elapsed) = run_all(commands);
    assert_all_exit_2_after(&outputs, elapsed, Duration::from_secs(3));
    let rank0 = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(
        rank0.contains("rank(s) 2 of 3 did not join rank 0 at 127.0.0.1:")
            && rank0.contains("joined: 0 on ")
            && rank0.contains(", 1 on "),
        "{rank0}"
    );
    let rank1 = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(
        rank1.contains("rank 0 stopped the run: rank(s) 2 of 3"),
        "{rank1}"
    );
    assert!(!out.exists(), "nothing is written when the ranks never met");
    let marker = tmp.path().to_string_lossy();
    assert!(wait_no_processes(&marker, Duration::from_secs(5)).is_empty());
}

#[test]
fn a_rank_with_the_wrong_port_fails_both_sides_within_the_deadline() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().to_path_buf());
    let (good, wrong) = (free_port(), free_port());
    let args = [
        "--transports",
        "default",
        "--rendezvous-timeout",
        "3s",
        "--label",
        "wrong-port",
    ];
    let commands = vec![
        rank(&out, &shm, &torchrun_env(0, 2, good), &args),
        rank(&out, &shm, &torchrun_env(1, 2, wrong), &args),
    ];
    let (outputs, elapsed) = run_all(commands);
    assert_all_exit_2_after(&outputs, elapsed, Duration::from_secs(3));
    let rank0 = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(rank0.contains("rank(s) 1 of 2 did not join"), "{rank0}");
    let rank1 = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(
        rank1.contains(&format!(
            "rank 1 could not reach rank 0 at 127.0.0.1:{wrong}"
        )) && rank1.contains("Connection refused"),
        "{rank1}"
    );
    let marker = tmp.path().to_string_lossy();
    assert!(wait_no_processes(&marker, Duration::from_secs(5)).is_empty());
}

#[test]
fn ranks_started_with_different_world_sizes_stop_at_once() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().to_path_buf());
    let port = free_port();
    let args = ["--transports", "default", "--rendezvous-timeout", "30s"];
    let odd = torchrun_env(1, 3, port);
    let commands = vec![
        rank(&out, &shm, &torchrun_env(0, 2, port), &args),
        rank(&out, &shm, &odd, &args),
    ];
    let (outputs, elapsed) = run_all(commands);
    for (r, o) in outputs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(2), "rank {r}: {}", text(o));
    }
    // Refused at the handshake, long before the 30 s rendezvous deadline.
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    let rank0 = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(
        rank0.contains("it was started with a world size of 3, rank 0 with 2"),
        "{rank0}"
    );
    let rank1 = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(rank1.contains("rank 0 refused rank 1"), "{rank1}");
}

#[test]
fn a_crashing_remote_rank_fails_its_case_and_fresh_workers_take_the_rest() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    let port = free_port();
    let commands = (0..2)
        .map(|r| {
            let mut env = torchrun_env(r, 2, port);
            if r == 1 {
                // Only rank 1's node has the fault: its agent's worker inherits it.
                env.push(("NCCL_BENCH_FAULT", "crash:bytes=4K".into()));
            }
            rank(&out, &shm, &env, &["--transports", "default"])
        })
        .collect();
    let (outputs, _) = run_all(commands);
    assert_eq!(outputs[0].status.code(), Some(1), "{}", text(&outputs[0]));
    assert_eq!(outputs[1].status.code(), Some(1), "{}", text(&outputs[1]));
    let run = common::run_dir(&out);
    let all = rows(&run);
    assert_eq!(all.len(), 5);
    for row in &all {
        if row["bytes"] == "4096" {
            assert_eq!(row["status"], "failed", "{row:?}");
            assert!(
                row["error"].contains("rank 1") && row["error"].contains("SIGABRT"),
                "{row:?}"
            );
        } else {
            assert_eq!(row["status"], "ok", "{row:?}");
        }
    }
    assert!(common::dir_entries(&shm).is_empty(), "segments left behind");
}

#[test]
fn a_rank_whose_process_dies_fails_the_rest_of_the_config_without_waiting() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    let port = free_port();
    let args = ["--transports", "default", "--timeout", "60s"];
    let mut rank1_env = torchrun_env(1, 2, port);
    // Rank 1's worker stops at 4 KiB; then its whole `run` process is killed.
    rank1_env.push(("NCCL_BENCH_FAULT", "hang:bytes=4K".into()));
    let mut rank1 = rank(&out, &shm, &rank1_env, &args).spawn().unwrap();
    let start = Instant::now();
    let rank0 = rank(&out, &shm, &torchrun_env(0, 2, port), &args)
        .spawn()
        .unwrap();
    let csv = loop {
        assert!(start.elapsed() < Duration::from_secs(30), "no results");
        if let Ok(entries) = std::fs::read_dir(&out) {
            if let Some(dir) = entries.flatten().next() {
                let csv = dir.path().join("results.csv");
                let lines = std::fs::read_to_string(&csv)
                    .unwrap_or_default()
                    .lines()
                    .count();
                if lines >= 3 {
                    break csv;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Rank 1's worker hangs at 4 KiB whenever the kill lands: no wait needed.
    rank1.kill().unwrap();
    let _ = rank1.wait();
    let o = rank0.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let all = rows(csv.parent().unwrap());
    assert_eq!(all.len(), 5, "{all:?}");
    for row in &all {
        if ["1024", "2048"].contains(&row["bytes"].as_str()) {
            assert_eq!(row["status"], "ok", "{row:?}");
        } else {
            assert_eq!(row["status"], "failed", "{row:?}");
            assert!(
                row["error"].contains("rank 1")
                    && row["error"].contains("is gone with its nccl-bench run process"),
                "{row:?}"
            );
        }
    }
    assert!(wait_no_processes(&shm.to_string_lossy(), Duration::from_secs(5)).is_empty());
}

#[test]
fn ranks_meet_through_a_rendezvous_file_on_a_shared_file_system() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    // A stale file of an earlier job must not be used.
    let file = tmp.path().join("rendezvous");
    std::fs::write(&file, "deadhost 1 slurm-1.0\n").unwrap();
    let rendezvous = format!("file:{}", file.display());
    let commands = (0..2)
        .map(|r| {
            let env = vec![
                ("SLURM_PROCID", r.to_string()),
                ("SLURM_NTASKS", "2".to_string()),
                ("SLURM_LOCALID", r.to_string()),
                ("SLURM_JOB_ID", "2".to_string()),
                ("SLURM_STEP_ID", "0".to_string()),
            ];
            let args = [
                "--transports",
                "default",
                "--rendezvous",
                rendezvous.as_str(),
            ];
            rank(&out, &shm, &env, &args)
        })
        .collect();
    let (outputs, _) = run_all(commands);
    for (r, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "rank {r}: {}", text(o));
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.ends_with(" slurm-2.0\n"), "{written}");
    let run = common::run_dir(&out);
    assert_eq!(rows(&run).len(), 5);
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(manifest.contains("written to"), "{manifest}");
}

#[test]
fn appending_refuses_what_would_mix_or_overwrite_results() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let shm = tmp.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    let existing = tmp.path().join("existing");
    let o = common::sweep(&tmp.path().join("unused"), &shm)
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "2K",
            "-n",
            "2",
        ])
        .arg("--run-dir")
        .arg(&existing)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let before = std::fs::read(existing.join("results.csv")).unwrap();
    let dir = existing.to_string_lossy().into_owned();
    for (transport, extra, says) in [
        ("default", None, "already has config 'default' at 2 ranks"),
        ("shm-off", Some("double"), "-d/-o must match to append"),
    ] {
        let mut args = vec!["--transports", transport, "--run-dir", dir.as_str()];
        if let Some(dtype) = extra {
            args.extend(["-d", dtype]);
        }
        let o = rank(&tmp.path().join("out"), &shm, &torchrun_env(0, 2, 1), &args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "expected {says:?} in {err}");
    }
    assert_eq!(std::fs::read(existing.join("results.csv")).unwrap(), before);
}

#[test]
fn run_refuses_what_it_cannot_do_with_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().to_path_buf());
    let not_a_run = notes(tmp.path());
    let cases: Vec<Case> = vec![
        (vec![], vec![], "cannot tell this process's rank"),
        (
            torchrun_env(0, 2, 1),
            vec!["--transports", "default,shm-off"],
            "one transport config per launch",
        ),
        (
            vec![
                ("RANK", "0".into()),
                ("WORLD_SIZE", "2".into()),
                ("LOCAL_RANK", "0".into()),
            ],
            vec!["--transports", "default"],
            "no rendezvous for rank 0",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--transports", "default", "--rendezvous", "nohost"],
            "expected HOST:PORT or file:PATH",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--transports", "default", "--run-dir", not_a_run.as_str()],
            "is not a run directory",
        ),
    ];
    assert_refused(
        cases,
        |env, args| rank(&out, &shm, env, args),
        &out,
        &not_a_run,
    );
}

type Case<'a> = (Vec<(&'a str, String)>, Vec<&'a str>, &'a str);

/// A folder that is not a run directory, with a note in it; its path.
fn notes(tmp: &Path) -> String {
    let not_a_run = tmp.join("notes");
    std::fs::create_dir(&not_a_run).unwrap();
    std::fs::write(not_a_run.join("todo.txt"), "keep me").unwrap();
    not_a_run.to_string_lossy().into_owned()
}

/// Each case (the launcher's variables, the flags, what the error says) is exit 2
/// with its words and no panic; nothing is written under `out`, and the note of
/// `not_a_run` is kept.
fn assert_refused(
    cases: Vec<Case>,
    command: impl Fn(&[(&str, String)], &[&str]) -> Command,
    out: &Path,
    not_a_run: &str,
) {
    for (env, args, says) in cases {
        let o = command(&env, &args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: expected {says:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_to_string(Path::new(not_a_run).join("todo.txt")).unwrap(),
        "keep me"
    );
}

/// `run --soak`: its timing, its one size (not a sweep's range) and a run directory
/// of its own are checked before anything is written.
#[test]
fn a_soak_over_the_ranks_refuses_bad_input_with_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let not_a_run = notes(tmp.path());
    let cases: Vec<Case> = vec![
        (
            torchrun_env(0, 2, 1),
            vec!["--transports", "default", "--soak", "1s"],
            "--soak 1s is shorter than two --interval 1s",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "--interval", "50ms"],
            "the shortest interval is 100ms",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "--size", "lots"],
            "invalid value 'lots' for '--size <SIZE>'",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "-b", "1K"],
            "cannot be used with",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "--pairs"],
            "cannot be used with",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "--rounds", "5"],
            "cannot be used with",
        ),
        (
            torchrun_env(0, 2, 1),
            vec!["--soak", "10s", "-n", "100"],
            "cannot be used with",
        ),
        (torchrun_env(0, 2, 1), vec!["--size", "1M"], "--soak"),
        (torchrun_env(0, 2, 1), vec!["--interval", "2s"], "--soak"),
        (torchrun_env(0, 2, 1), vec!["--dip", "5%"], "--soak"),
        (
            torchrun_env(0, 2, 1),
            vec![
                "--transports",
                "default",
                "--soak",
                "10s",
                "--run-dir",
                not_a_run.as_str(),
            ],
            "a soak writes a run directory of its own",
        ),
    ];
    let soak = |env: &[(&str, String)], args: &[&str]| {
        let mut c = Command::new(bin());
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .args(["run", "--backend", "host", "--plain", "--out"])
            .arg(&out)
            .arg("--shm-dir")
            .arg(tmp.path())
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        c
    };
    assert_refused(cases, soak, &out, &not_a_run);
}

#[test]
fn pairs_of_nodes_need_two_nodes() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().to_path_buf());
    let port = free_port();
    let args = ["--transports", "default", "--pairs"];
    let commands = (0..2)
        .map(|r| rank(&out, &shm, &torchrun_env(r, 2, port), &args))
        .collect();
    let (outputs, _) = run_all(commands);
    for (r, o) in outputs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(2), "rank {r}: {}", text(o));
    }
    let rank0 = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(
        rank0.contains("--pairs pairs the job's nodes, and all 2 ranks are on ")
            && rank0.contains("use `nccl-bench sweep --pairs`"),
        "{rank0}"
    );
    assert!(!out.exists(), "a run directory was made");
}

/// `run` measures in rounds too (the host backend's default, 15): each round a fresh
/// process group on every rank's node, its workers' logs named by the round.
#[test]
fn ranks_measure_in_rounds_like_a_sweep() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    let port = free_port();
    let (outputs, _) = run_all(
        (0..2)
            .map(|r| {
                rank_in_rounds(
                    &out,
                    &shm,
                    &torchrun_env(r, 2, port),
                    &["--transports", "default"],
                    &[],
                )
            })
            .collect(),
    );
    for (r, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "rank {r}: {}", text(o));
    }
    let run = common::run_dir(&out);
    let rows = rows(&run);
    assert_eq!(rows.len(), 5);
    for r in &rows {
        assert_eq!(
            (r["status"].as_str(), r["rounds"].as_str()),
            ("ok", "6"),
            "{r:?}"
        );
        // A config compared with none stops at the first look.
        assert_eq!(r["iters"], "30", "5 iterations in each of 6 rounds: {r:?}");
    }
    let logs = common::dir_entries(&run.join("logs"));
    for name in ["default.n2.r1.rank0.log", "default.n2.r6.rank1.log"] {
        assert!(logs.contains(&name.to_string()), "{name}: {logs:?}");
    }
}

/// `run` measures the collectives `--coll` names, each in its own group of the job's
/// ranks, as `sweep` does: rooted ones at `--root`.
#[test]
fn ranks_measure_every_collective_asked_for() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("results"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    let port = free_port();
    let extra = [
        "--transports",
        "default",
        "--coll",
        "alltoall,gather",
        "-r",
        "1",
    ];
    let (outputs, _) = run_all(
        (0..2)
            .map(|r| rank(&out, &shm, &torchrun_env(r, 2, port), &extra))
            .collect(),
    );
    for (r, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "rank {r}: {}", text(o));
    }
    let run = common::run_dir(&out);
    let cells: Vec<(String, String, String)> = rows(&run)
        .into_iter()
        .map(|r| {
            (
                r["collective"].clone(),
                r["bytes"].clone(),
                r["status"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = ["alltoall", "gather"]
        .iter()
        .flat_map(|c| {
            (0..5).map(move |i| (c.to_string(), (1024u64 << i).to_string(), "ok".to_string()))
        })
        .collect();
    assert_eq!(cells, want);
    let logs = common::dir_entries(&run.join("logs"));
    assert!(
        logs.contains(&"default.gather.n2.rank1.log".to_string()),
        "{logs:?}"
    );
}
