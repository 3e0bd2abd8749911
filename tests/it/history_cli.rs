//! `nccl-bench history` over synthetic nightly runs written by the real run writer:
//! a 10 % bandwidth step at the night NCCL changed is the one step reported, with
//! both runs and the difference; `-o`
//! writes the tables and charts; bad arguments exit 2.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use nccl_bench::export::{RunDir, RunWriter};
use nccl_bench::model::{CaseKey, CaseResult, CaseStatus, NcclChoice};
use nccl_bench::ops::{DataType, ReduceOp};
use nccl_bench::stats::quality::Quality;
use nccl_bench::stats::{Bandwidth, LatencyRecorder};

const SIZES: [u64; 4] = [8, 65536, 1 << 20, 16 << 20];

/// Night-to-night noise of up to +-1.5 %, a fixed pattern.
fn night_noise(night: usize) -> f64 {
    1.0 + [
        0.0, 0.012, -0.009, 0.015, -0.015, 0.004, -0.006, 0.009, -0.003,
    ][night % 9]
}

/// Night `night` of a nightly sweep: 2 ranks, the default config, 300 iterations per
/// size with up to 5 % noise each; from 1 MiB up the times are `slow` times longer.
fn night(parent: &Path, night: usize, nccl: &str, slow: f64) -> PathBuf {
    let name = format!("night-{night:02}");
    let dir = RunDir::create_at(&parent.join(&name)).unwrap();
    let path = dir.path.clone();
    let writer = RunWriter::new(dir, SystemTime::UNIX_EPOCH).unwrap();
    let mut manifest = common::synthetic_manifest("host");
    manifest.started_at = format!("2026-10-{:02}T02:00:00Z", night + 1);
    manifest.host.hostname = "node1".into();
    manifest.nccl = Some(NcclChoice {
        path: "/opt/nccl/lib/libnccl.so.2".into(),
        version: nccl.into(),
        found_by: "test".into(),
        simulated: false,
    });
    writer.write_manifest(&manifest).unwrap();
    for (i, &bytes) in SIZES.iter().enumerate() {
        let scale = night_noise(night) * if bytes >= 1 << 20 { slow } else { 1.0 };
        let base_ns = 10_000.0 + bytes as f64 / 10.0;
        let mut rec = LatencyRecorder::new();
        for j in 0..300u64 {
            let wobble =
                1.0 + ((j * 7919 + night as u64 * 104_729 + i as u64) % 50) as f64 / 1000.0;
            rec.record((base_ns * scale * wobble) as u64);
        }
        let s = rec.summary();
        let result = CaseResult {
            key: CaseKey {
                config: "default".into(),
                collective: nccl_bench::ops::collective::Collective::AllReduce,
                nranks: 2,
                bytes,
                dtype: DataType::Float,
                op: ReduceOp::Sum,
            },
            backend: "host".into(),
            status: CaseStatus::Ok,
            warmup: 5,
            graph: 0,
            latency: Some(s),
            bandwidth: Some(Bandwidth::allreduce(bytes, 2, s.mean_us)),
            stop: None,
            wrong: 0,
            transports: "SHM".into(),
            error: String::new(),
            started_at: String::new(),
            duration_s: 0.1,
            quality: Some(Quality::Ok),
            quality_note: String::new(),
            timing_note: String::new(),
            ceiling_gbps: None,
            round_p50_us: vec![s.p50_us],
            tuning: Default::default(),
            shm_backing: String::new(),
        };
        writer
            .record(
                &result,
                Some(rec.histogram()),
                Duration::from_secs(i as u64),
            )
            .unwrap();
    }
    path
}

/// 30 nights; from night 20 on, NCCL 2.23.4 and 10 % slower from 1 MiB up.
fn thirty_nights(parent: &Path) {
    for n in 0..30 {
        if n >= 20 {
            night(parent, n, "2.23.4", 1.10);
        } else {
            night(parent, n, "2.21.5", 1.0);
        }
    }
}

fn history(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(common::bin())
        .arg("history")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_one_step_is_found_with_both_runs_and_what_changed() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    thirty_nights(&results);
    // Listed in another order than they ran: history sorts by start time.
    std::fs::rename(results.join("night-07"), results.join("zz-night-07")).unwrap();

    let o = history(&[results.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with(
            "history of 30 runs, 2026-10-01T02:00:00Z to 2026-10-30T02:00:00Z: 3 series"
        ),
        "{out}"
    );
    // Each step is one item, wrapped onto lines indented by four spaces.
    let mut items: Vec<String> = Vec::new();
    for l in out.lines() {
        match (l.strip_prefix("    "), items.last_mut()) {
            (Some(more), Some(item)) => {
                item.push(' ');
                item.push_str(more.trim());
            }
            _ => items.push(l.to_string()),
        }
    }
    let steps: Vec<&str> = items
        .iter()
        .map(String::as_str)
        .filter(|l| l.contains(" between "))
        .collect();
    assert_eq!(steps.len(), 1, "{out}");
    let step = steps[0];
    assert!(
        step.contains("default, 2 ranks, 16 MiB: ") && step.contains(" slower ("),
        "{step}"
    );
    assert!(
        step.contains("between night-19 (2026-10-20T02:00:00Z) and night-20 (2026-10-21T02:00:00Z): NCCL 2.21.5 -> 2.23.4"),
        "{step}"
    );
    assert!(!out.contains("one-off runs"), "{out}");

    // The JSON says the same.
    let o = history(&[results.as_os_str(), "--format".as_ref(), "json".as_ref()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps: Vec<&serde_json::Value> = h["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["steps"].as_array().unwrap())
        .collect();
    assert_eq!(steps.len(), 1, "{h}");
    assert_eq!(
        h["runs"][steps[0]["before"].as_u64().unwrap() as usize]["name"],
        "night-19"
    );
    assert_eq!(
        h["runs"][steps[0]["after"].as_u64().unwrap() as usize]["name"],
        "night-20"
    );
    assert_eq!(steps[0]["verdict"], "slower");
    assert_eq!(steps[0]["differences"][0]["what"], "nccl");

    // -o: the tables and a chart per size, into a new directory or its own only.
    let out_dir = tmp.path().join("history");
    let o = history(&[results.as_os_str(), "-o".as_ref(), out_dir.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    for f in [
        "history.md",
        "history.json",
        "history.csv",
        "history-host-n2-16M.svg",
        "history-host-n2-8B.png",
    ] {
        assert!(
            out_dir.join(f).is_file(),
            "{f}: {:?}",
            common::dir_entries(&out_dir)
        );
    }
    let csv = std::fs::read_to_string(out_dir.join("history.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 30);
    assert_eq!(csv.matches("step slower").count(), 1);
    let o = history(&[results.as_os_str(), "-o".as_ref(), out_dir.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "rewrites its own directory");
    let o = history(&[results.as_os_str(), "-o".as_ref(), results.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("was not written by `nccl-bench history`"));
}

#[test]
fn bad_arguments_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let o = history(&[tmp.path().join("missing").as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a directory"));
    let o = history(&[tmp.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds no run directory"));
    let o = history(&[
        tmp.path().as_os_str(),
        "--sizes".as_ref(),
        "max,lots".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("lots"),
        "{}",
        common::text(&o)
    );
}
