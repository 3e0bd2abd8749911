//! A real host-backend sweep end to end: 2 and 4 ranks, SHM and TCP configurations,
//! 1 KiB to 4 MiB, in the host backend's default 15 rounds, then the run directory read
//! back.

use crate::common::*;
use nccl_bench::export::hlog;

#[test]
fn host_sweep_writes_a_complete_run_directory() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(["--gpus", "2,4", "--transports", "default,shm-off"])
        .args(["-b", "1K", "-e", "4M", "-f", "4", "-n", "5", "-w", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("HOST BACKEND (CPU), NOT NCCL"), "{stdout}");
    assert!(stdout.contains("28 of 28 cases (28 ok"), "{stdout}");
    // The first screen says what will run; the last lines, where the report is and
    // its answer.
    assert!(
        stdout.contains(
            "plan: 2 configs (default, shm-off) x 2 rank counts (2, 4) x 7 sizes (1 KiB to 4 MiB)\n  \
             of all_reduce = 28 cases, each in 6 to 15 rounds of fresh processes (at most 60 \
             process groups)\n  looks after rounds 6, 8, 11: a config settled against the \
             baseline stops (--rounds N fixes them)\n"
        ),
        "{stdout}"
    );
    let answer = crate::common::answer(&stdout).unwrap_or_else(|| panic!("{stdout}"));
    let report_line = stdout.lines().rev().find(|l| l.starts_with("report: "));
    assert!(
        // Within 100 columns, but for a line of the run directory's path (one word).
        report_line.is_some()
            && stdout
                .lines()
                .filter(|l| !l.contains(&*out.path().to_string_lossy()))
                .all(|l| l.chars().count() <= 100),
        "{stdout}"
    );
    assert!(answer.starts_with("answer: "), "{answer}");

    let run = run_dir(out.path());
    let rows = rows(&run);
    assert_eq!(rows.len(), 2 * 2 * 7);
    // Measured until settled: each (config, rank count) took the rounds of the look it
    // stopped at, every size alike, and the manifest says which and why.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["looks"], serde_json::json!([6, 8, 11, 15]));
    let took = |config: &str, nranks: &str| -> usize {
        let groups = manifest["group_rounds"].as_array().unwrap();
        let g = groups
            .iter()
            .find(|g| g["config"] == config && g["nranks"].as_u64() == nranks.parse().ok())
            .unwrap_or_else(|| panic!("{config} n={nranks}: {manifest}"));
        assert!(!g["why"].as_str().unwrap().is_empty(), "{g}");
        g["rounds"].as_u64().unwrap() as usize
    };
    let sizes: Vec<u64> = (0..7).map(|i| 1024u64 << (2 * i)).collect();
    for (i, row) in rows.iter().enumerate() {
        let nranks = if i < 14 { "2" } else { "4" };
        let config = if (i / 7) % 2 == 0 {
            "default"
        } else {
            "shm-off"
        };
        assert_eq!(row["nranks"], nranks, "{row:?}");
        assert_eq!(row["config"], config, "{row:?}");
        assert_eq!(row["bytes"], sizes[i % 7].to_string());
        assert_eq!(row["backend"], "host");
        assert_eq!(row["dtype"], "float");
        assert_eq!(row["op"], "sum");
        assert_eq!(row["status"], "ok", "{row:?}");
        assert_eq!(row["wrong"], "0");
        // Its group's rounds (process groups), at a look, of five iterations each.
        let r = took(config, nranks);
        assert!([6, 8, 11, 15].contains(&r), "{r}");
        assert_eq!(row["iters"], (5 * r).to_string());
        assert_eq!(row["rounds"], r.to_string());
        let round_p50: Vec<f64> = row["round_p50_us"]
            .split(';')
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(round_p50.len(), r, "{row:?}");
        // The median's interval spans at least the k-th lowest to the k-th highest
        // round median, k the largest with P(Bin(r, 1/2) < k) <= 2.5 %.
        let k = [(6, 1), (8, 1), (11, 2), (15, 4)]
            .iter()
            .find(|p| p.0 == r)
            .unwrap()
            .1;
        let mut sorted = round_p50.clone();
        sorted.sort_by(f64::total_cmp);
        let lo: f64 = row["median_ci_low_us"].parse().unwrap();
        let hi: f64 = row["median_ci_high_us"].parse().unwrap();
        assert!(
            lo <= sorted[k - 1] + 1e-3 && hi >= sorted[r - k] - 1e-3,
            "{row:?}"
        );
        assert!(!row["round_spread_pct"].is_empty(), "{row:?}");
        assert_eq!(row["stop"], "count");
        // Five iterations under a parallel test run: any verdict but re-measured.
        assert!(
            ["ok", "noisy", "outlier"].contains(&row["quality"].as_str()),
            "{row:?}"
        );
        let expected = if config == "default" {
            "SHM"
        } else {
            "NET/Socket"
        };
        assert_eq!(row["transports"], expected);
        let time: f64 = row["time_us"].parse().unwrap();
        let algbw: f64 = row["algbw_gbps"].parse().unwrap();
        let busbw: f64 = row["busbw_gbps"].parse().unwrap();
        let bytes: f64 = row["bytes"].parse().unwrap();
        assert!(time > 0.0);
        assert!(
            (algbw - bytes / time / 1e3).abs() <= 0.002 + algbw * 1e-3,
            "{row:?}"
        );
        let n: f64 = row["nranks"].parse().unwrap();
        assert!(
            (busbw - algbw * 2.0 * (n - 1.0) / n).abs() <= 0.002 + busbw * 1e-3,
            "{row:?}"
        );
        let p50: f64 = row["p50_us"].parse().unwrap();
        let max: f64 = row["max_us"].parse().unwrap();
        assert!(p50 <= max * 1.001, "{row:?}");
        // Five samples in each of 15 rounds or fewer support no tail: p90 and p99
        // stay empty, and the note says so.
        assert_eq!((row["p90_us"].as_str(), row["p99_us"].as_str()), ("", ""));
        assert!(
            row["quality_note"].contains(&format!("p90 and p99 left empty: {} samples", 5 * r)),
            "{row:?}"
        );
    }

    // Each round's histogram, then at the last round the case's pooled one.
    let histograms = hlog::read(&run.join("histograms.hlog")).unwrap();
    let rounds_of = |row: &std::collections::HashMap<String, String>| -> usize {
        row["rounds"].parse().unwrap()
    };
    let all: usize = rows.iter().map(|r| rounds_of(r) + 1).sum();
    assert_eq!(histograms.len(), all);
    let pooled: Vec<_> = histograms
        .iter()
        .filter(|(tag, _)| !hlog::is_round_tag(tag))
        .collect();
    assert_eq!(pooled.len(), rows.len());
    for row in &rows {
        for round in 1..=rounds_of(row) as u32 {
            let tag = hlog::round_tag(&row["hist_tag"], round);
            let h = histograms.iter().find(|(t, _)| *t == tag);
            assert_eq!(h.map(|(_, h)| h.len()), Some(5), "{tag}");
        }
    }
    // The log holds them in the order the cases completed (the last round runs its
    // configs in a drawn order); results.csv is in the plan's: each row's by its tag.
    for row in &rows {
        let (tag, h) = pooled
            .iter()
            .find(|(tag, _)| *tag == row["hist_tag"])
            .unwrap_or_else(|| panic!("no pooled histogram for {row:?}"));
        assert_eq!(h.len() as usize, 5 * rounds_of(row));
        let p50_us = nccl_bench::stats::grouped_median_ns(h) / 1e3;
        let csv_p50: f64 = row["p50_us"].parse().unwrap();
        assert!(
            (p50_us - csv_p50).abs() < 1e-3,
            "{tag}: {p50_us} vs {csv_p50}"
        );
    }

    assert_eq!(manifest["status"], "complete");
    assert_eq!(manifest["backend"]["used"], "host");
    assert_eq!(manifest["cases"]["ok"], 28);
    assert_eq!(manifest["rounds"], 15);
    assert_eq!(manifest["sizes"].as_array().unwrap().len(), 7);
    assert!(manifest["backend"]["note"]
        .as_str()
        .unwrap()
        .contains("not NCCL"));
    let checks: Vec<&str> = manifest["doctor"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        checks,
        [
            "shm.size",
            "shm.leftovers",
            "nccl.env",
            "net.socket",
            "net.ib"
        ]
    );
    let logs = dir_entries(&run.join("logs"));
    for round in 1..=took("default", "4") {
        let log = format!("default.n4.r{round}.rank3.log");
        assert!(logs.contains(&log), "{log}: {logs:?}");
    }
    assert!(dir_entries(shm.path()).is_empty(), "segments left behind");
}

#[test]
fn adaptive_iterations_stop_on_precision_or_budget() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        // One round: its precision target is what is checked.
        .args(["--gpus", "2", "--transports", "default", "--rounds", "1"])
        .args([
            "-b",
            "64K",
            "-e",
            "64K",
            "--max-time",
            "0.5s",
            "--min-iters",
            "30",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = rows(&run_dir(out.path()));
    assert_eq!(rows.len(), 1);
    let iters: u64 = rows[0]["iters"].parse().unwrap();
    assert!(iters >= 30, "{:?}", rows[0]);
    let stop = rows[0]["stop"].as_str();
    assert!(stop == "converged" || stop == "budget", "{stop}");
    if stop == "converged" {
        let p50: f64 = rows[0]["p50_us"].parse().unwrap();
        let lo: f64 = rows[0]["median_ci_low_us"].parse().unwrap();
        let hi: f64 = rows[0]["median_ci_high_us"].parse().unwrap();
        assert!(
            (p50 - lo).max(hi - p50) <= 0.01 * p50 + 1e-3,
            "{:?}",
            rows[0]
        );
    }
}

/// `--tails` takes the 1,000 samples p99 needs (adaptive mode), and the tails are
/// reported, in order.
#[test]
fn tails_are_measured_when_asked_for() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(["--gpus", "2", "--transports", "default", "--rounds", "1"])
        .args(["-b", "1K", "-e", "1K", "--tails"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = rows(&run_dir(out.path())).remove(0);
    let iters: u64 = r["iters"].parse().unwrap();
    assert!(iters >= 1000, "{r:?}");
    let v = |k: &str| r[k].parse::<f64>().unwrap_or_else(|_| panic!("{k}: {r:?}"));
    assert!(
        v("p50_us") <= v("p90_us") && v("p90_us") <= v("p99_us"),
        "{r:?}"
    );
    assert!(v("p99_us") <= v("max_us") * 1.001, "{r:?}");
    assert!(!r["quality_note"].contains("left empty"), "{r:?}");
}

/// Three timed iterations are three samples: no pair of order statistics covers
/// the median with 95 %, so the interval cells stay empty and the note says why;
/// six give one.
#[test]
fn an_interval_only_where_the_samples_support_one() {
    let _machine = crate::common::shared();
    for (n, interval) in [("3", false), ("6", true)] {
        let out = tempfile::tempdir().unwrap();
        let shm = tempfile::tempdir().unwrap();
        let o = sweep(out.path(), shm.path())
            .args(["--gpus", "2", "--transports", "default", "--rounds", "1"])
            .args(["-b", "1K", "-e", "1K", "-n", n])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let r = rows(&run_dir(out.path())).remove(0);
        assert_eq!(r["median_ci_low_us"].is_empty(), !interval, "{r:?}");
        assert_eq!(r["median_ci_high_us"].is_empty(), !interval, "{r:?}");
        assert_eq!(
            r["quality_note"]
                .contains("samples: too few for a 95 % interval of the median (6 needed)"),
            !interval,
            "{r:?}"
        );
    }
}

#[test]
fn every_datatype_and_op_is_checked_correct() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    for (dtype, op) in [
        ("half", "prod"),
        ("bfloat16", "max"),
        ("int8", "min"),
        ("double", "avg"),
        ("uint64", "sum"),
    ] {
        let o = sweep(out.path(), shm.path())
            .args([
                "--gpus",
                "3",
                "--transports",
                "default",
                "-b",
                "1K",
                "-e",
                "1M",
                "-f",
                "32",
                "-n",
                "2",
                // Correctness, not timing: one round.
                "--rounds",
                "1",
            ])
            .args(["-d", dtype, "-o", op, "--label", &format!("{dtype}-{op}")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{dtype} {op}: {}", text(&o));
    }
    let runs = dir_entries(out.path());
    assert_eq!(runs.len(), 5);
    for run in runs {
        let rows = rows(&out.path().join(&run));
        // --gpus 3 sweeps 2 and 3 ranks; 1 KiB, 32 KiB and 1 MiB each.
        let ranks: Vec<&str> = rows.iter().map(|r| r["nranks"].as_str()).collect();
        assert_eq!(ranks, ["2", "2", "2", "3", "3", "3"], "{run}");
        for row in &rows {
            assert_eq!(row["status"], "ok", "{run}: {row:?}");
        }
    }
}

#[test]
fn a_failed_doctor_check_is_said_and_the_sweep_still_runs_every_case() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default",
            "-b",
            "1K",
            "-e",
            "1K",
            "-n",
            "3",
        ])
        .env("NCCL_SOCKET_IFNAME", "=nccl-bench-no-such-if0")
        .output()
        .unwrap();
    // The host backend honours NCCL_SOCKET_IFNAME as NCCL does: no interface, no
    // communicator. The case is recorded failed with that reason.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("doctor: Socket interfaces FAIL: ") && err.contains("fix: "),
        "{err}"
    );
    let run = run_dir(out.path());
    let row = &rows(&run)[0];
    assert_eq!(row["status"], "failed", "{row:?}");
    assert!(
        row["error"].contains("NCCL_SOCKET_IFNAME==nccl-bench-no-such-if0 selects no interface"),
        "{row:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let socket = manifest["doctor"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "net.socket")
        .unwrap();
    assert_eq!(socket["status"], "fail", "{socket}");
    assert!(manifest["warnings"].as_array().unwrap().iter().any(|w| w
        .as_str()
        .unwrap()
        .starts_with("doctor: Socket interfaces FAIL")));
}
