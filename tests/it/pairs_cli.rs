//! `sweep --pairs`: the 2-rank sweep on every pair of devices (cores on the host
//! backend), its rows per pair, the report's matrix and the heatmap. On a machine
//! with fewer CPUs than cores asked for, the pairs that share a CPU are the slow ones
//! it names: a real measurement of this machine.

use crate::common;

#[test]
fn every_pair_of_four_cores_is_measured_and_the_shared_ones_are_named() {
    let _machine = crate::common::alone();
    let (_shm_dir, shm) = common::scratch_with_shm();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = common::sweep(&out, &shm)
        // Six rounds, the fewest that give each case an interval: a pair whose two
        // ranks share a CPU is far slower than that.
        .args([
            "--pairs",
            "--gpus",
            "4",
            "--transports",
            "default",
            "--rounds",
            "6",
        ])
        .args([
            "-b",
            "64K",
            "-e",
            "1M",
            "-f",
            "16",
            "-n",
            "30",
            "--ceiling-bytes",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let run = common::run_dir(&out);
    let rows = common::rows(&run);
    let mut configs: Vec<&str> = rows.iter().map(|r| r["config"].as_str()).collect();
    configs.dedup();
    assert_eq!(
        configs,
        [
            "default.pair0-1",
            "default.pair0-2",
            "default.pair0-3",
            "default.pair1-2",
            "default.pair1-3",
            "default.pair2-3"
        ]
    );
    assert_eq!(rows.len(), 6 * 2);
    assert!(rows
        .iter()
        .all(|r| r["nranks"] == "2" && r["status"] == "ok"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["configs"][4]["devices"], serde_json::json!([1, 3]));

    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let section = &report[report.find("## Pairs").expect("a Pairs section")..];
    assert!(section.contains("### default at 1 MiB"), "{section}");
    assert!(
        section.contains("| | core 0 | core 1 | core 2 | core 3 |"),
        "{section}"
    );
    assert!(run.join("plots/pairs-default.svg").is_file());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus == 2 {
        // Cores 0 and 2, 1 and 3 are one CPU each: those ranks take turns.
        assert!(
            section.contains("This machine has 2 CPUs for 4 cores"),
            "{section}"
        );
        // Named slow (a load spike may name another pair beside them).
        let slow = section
            .lines()
            .find(|l| l.starts_with("**Slow: "))
            .unwrap_or_else(|| panic!("no slow pairs named: {section}"));
        assert!(
            slow.contains("cores 0 and 2 (+") && slow.contains("cores 1 and 3 (+"),
            "{section}"
        );
    }
}

#[test]
fn pairs_need_two_devices() {
    let _machine = crate::common::shared();
    let (_shm_dir, shm) = common::scratch_with_shm();
    let tmp = tempfile::tempdir().unwrap();
    let o = common::sweep(&tmp.path().join("out"), &shm)
        .args(["--pairs", "--gpus", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pairs needs at least 2 devices"));
}
