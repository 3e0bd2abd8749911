//! Every collective nccl-tests measures, from the command line on the host backend:
//! `--coll`, `-r/--root` and a config file's `collectives`; nccl-tests' sizes and bus
//! factors in results.csv; the report's verdict per collective; `compare` keyed by
//! collective; and the mistakes refused with exit 2.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::common::{bin, rows, run_dir, sweep, text};

/// nccl-tests' bus factor per collective (its `GetBw`), written out here rather than
/// taken from the code under test.
fn factor(coll: &str, n: f64) -> f64 {
    match coll {
        "all_reduce" => 2.0 * (n - 1.0) / n,
        "all_gather" | "reduce_scatter" | "alltoall" | "gather" | "scatter" => (n - 1.0) / n,
        "broadcast" | "reduce" | "sendrecv" => 1.0,
        other => panic!("unknown collective {other}"),
    }
}

/// nccl-tests' `size` for an asked size of float (4-byte) elements: per-rank chunks
/// of whole 16-byte groups for the collectives that split the buffer.
fn size(coll: &str, bytes: u64, n: u64) -> u64 {
    let count = bytes / 4;
    let chunk = count / n / 4 * 4;
    match coll {
        "all_reduce" | "broadcast" | "reduce" | "sendrecv" => count * 4,
        _ => chunk * n * 4,
    }
}

const ALL: [&str; 9] = [
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
    "gather",
    "scatter",
];

#[test]
fn every_collective_is_ok_correct_and_measured_as_nccl_tests_does() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(["--gpus", "3", "--coll", "all", "-r", "1"])
        .args(["--transports", "default,shm-off"])
        .args([
            "-b", "8", "-e", "100K", "-f", "10", "-n", "4", "--rounds", "1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let run = run_dir(out.path());
    let rows = rows(&run);
    let asked = [8u64, 80, 800, 8000, 80000];
    let mut seen: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
    for r in &rows {
        let (coll, n) = (
            r["collective"].as_str(),
            r["nranks"].parse::<u64>().unwrap(),
        );
        let bytes: u64 = r["bytes"].parse().unwrap();
        assert!(bytes > 0, "{r:?}");
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["wrong"], "0", "{r:?}");
        let busbw: f64 = r["busbw_gbps"].parse().unwrap();
        let algbw: f64 = r["algbw_gbps"].parse().unwrap();
        let time: f64 = r["time_us"].parse().unwrap();
        // algbw = size / time, busbw = algbw x nccl-tests' factor (the cells have
        // 3 decimals: the time's rounding, up to 0.0005 us, moves algbw by as much
        // relative to the time).
        let expected = bytes as f64 / time / 1e3;
        let slack = 0.0015 + expected * 0.0005 / time;
        assert!((algbw - expected).abs() < slack, "{r:?}");
        assert!(
            (busbw - algbw * factor(coll, n as f64)).abs() < 0.0015 + 1e-3 * busbw,
            "{r:?}"
        );
        // The hlog tag carries the collective (all_reduce's keeps its old form).
        let tag = &r["hist_tag"];
        assert_eq!(
            tag.ends_with(&format!("/{coll}")),
            coll != "all_reduce",
            "{tag}"
        );
        seen.entry((coll.to_string(), r["nranks"].clone()))
            .or_default()
            .insert(bytes);
    }
    for coll in ALL {
        for n in [2u64, 3] {
            let want: BTreeSet<u64> = asked
                .iter()
                .map(|&b| size(coll, b, n))
                .filter(|&s| s > 0)
                .collect();
            let got = seen.get(&(coll.to_string(), n.to_string()));
            assert_eq!(got, Some(&want), "{coll} on {n} ranks");
        }
    }
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(manifest["collectives"].as_array().unwrap().len(), 9);
    assert_eq!(manifest["root"], 1);
    // The asked sizes too small to give each rank an element: said, not run.
    let not_run: Vec<&str> = manifest["sizes_not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut want = Vec::new();
    for n in [2u64, 3] {
        for coll in ALL {
            if asked.iter().any(|&b| size(coll, b, n) == 0) {
                want.push(format!(
                    "{coll}: 8 B split over {n} ranks leaves no element per rank"
                ));
            }
        }
    }
    assert!(!want.is_empty());
    assert_eq!(not_run.len(), want.len(), "{not_run:?}");
    for (line, start) in not_run.iter().zip(&want) {
        assert!(line.starts_with(start.as_str()), "{line} / {start}");
    }

    // The report: one verdict per collective and over all of them, and a chapter
    // with its charts for each.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let verdict = &report[report.find("## Keep SHM enabled?").unwrap()..];
    let verdict = &verdict[..verdict[3..].find("\n## ").unwrap()];
    assert!(verdict.contains("| collective | answer |"), "{verdict}");
    for coll in ALL {
        assert!(
            verdict.contains(&format!("\n| {coll} | ")),
            "{coll}: {verdict}"
        );
        assert!(
            verdict.contains(&format!("\n### {coll}\n")),
            "{coll}: {verdict}"
        );
        assert!(
            report.contains(&format!("\n## {coll}: 3 ranks\n")),
            "{coll}"
        );
        assert!(
            run.join(format!("plots/{coll}/busbw-n3.svg")).is_file(),
            "{coll}"
        );
    }
    assert!(report.contains("\n## Sizes not run\n"), "{report}");
    let svg = std::fs::read_to_string(run.join("plots/alltoall/busbw-n2.svg")).unwrap();
    assert!(
        svg.contains("All-to-all bus bandwidth, 2 ranks"),
        "chart title"
    );
    let model = std::fs::read_to_string(run.join("model.csv")).unwrap();
    assert!(model.lines().next().unwrap().ends_with(",collective"));
    assert!(model.lines().any(|l| l.ends_with(",gather")), "{model}");
}

#[test]
fn compare_keys_cases_by_collective_and_says_what_one_side_lacks() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for (label, colls) in [("base", "all_reduce,alltoall"), ("cand", "alltoall")] {
        let o = sweep(out.path(), shm.path())
            .args(["--gpus", "2", "--coll", colls, "--transports", "default"])
            .args(["-b", "64K", "-e", "256K", "-n", "4", "--rounds", "1"])
            .args(["--label", label])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let name = common::dir_entries(out.path())
            .into_iter()
            .find(|d| d.ends_with(label))
            .unwrap();
        dirs.push(out.path().join(name));
    }
    let o = Command::new(bin())
        .arg("compare")
        .args([&dirs[0], &dirs[1]])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    // alltoall against alltoall only: 64, 128 and 256 KiB.
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].contains(",collective,"), "{csv}");
    assert_eq!(lines.len(), 4, "{}", text(&o));
    assert!(lines[1..].iter().all(|l| l.contains(",alltoall,")), "{csv}");
    let o = Command::new(bin())
        .arg("compare")
        .args([&dirs[0], &dirs[1]])
        .output()
        .unwrap();
    assert!(
        text(&o).contains("Only the base measured all_reduce: not compared."),
        "{}",
        text(&o)
    );
}

#[test]
fn a_config_file_names_its_collectives_and_mistakes_are_exit_2() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let file = out.path().join("moe.toml");
    std::fs::write(
        &file,
        "collectives = [\"alltoall\", \"sendrecv\"]\n\n[[config]]\nname = \"plain\"\n",
    )
    .unwrap();
    let results = out.path().join("results");
    let o = sweep(&results, shm.path())
        .args(["--gpus", "2", "--config"])
        .arg(&file)
        .args(["-b", "1K", "-e", "1K", "-n", "2", "--rounds", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let colls: Vec<String> = rows(&run_dir(&results))
        .iter()
        .map(|r| r["collective"].clone())
        .collect();
    assert_eq!(colls, ["alltoall", "sendrecv"]);

    let refused = |args: &[&str], words: &str| {
        let empty = tempfile::tempdir().unwrap();
        let o = sweep(empty.path(), shm.path())
            .args(["-b", "1K", "-e", "1K", "-n", "2"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(words), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
        assert!(
            common::dir_entries(empty.path()).is_empty(),
            "nothing written"
        );
    };
    refused(
        &["--coll", "all_reduce,allgatherv"],
        "--coll: unknown collective \"allgatherv\" (expected all_reduce, all_gather",
    );
    refused(
        &["--coll", "broadcast", "--gpus", "2", "-r", "2"],
        "--root 2 is not a rank of 2 GPUs (ranks 0 to 1): it is the root of broadcast",
    );
    // --pairs runs 2 ranks whatever --gpus says: the root must be one of those.
    refused(
        &["--coll", "gather", "--gpus", "4", "--pairs", "-r", "3"],
        "--root 3 is not a rank of 2 GPUs (ranks 0 to 1): it is the root of gather",
    );
    std::fs::write(
        &file,
        "collectives = [\"all_to_one\"]\n[[config]]\nname = \"x\"\n",
    )
    .unwrap();
    let path = file.to_string_lossy().to_string();
    refused(
        &["--config", &path],
        "moe.toml:1: unknown collective \"all_to_one\"",
    );
}

/// The NCCL backend on the simulated 8-GPU machine without P2P (`pcie-nop2p`):
/// every collective ok and exactly correct, each with the transports NCCL's log shows
/// (SHM with SHM on, the network with it off; alltoall connects rank 0 to every
/// other rank: P2P connections, which NCCL logs in the ring's form), and an SHM
/// verdict per collective and overall.
#[test]
fn every_collective_runs_on_simulated_gpus_with_an_shm_verdict_each() {
    let _machine = crate::common::shared();
    let Some(dir) = common::sim::sim_dir() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let results = out.path().join("results");
    let o = common::sim::sim_sweep(
        &dir,
        "pcie-nop2p",
        &[],
        &results,
        &[
            "--gpus",
            "2,8",
            "--coll",
            "all",
            "--transports",
            "default,shm-off",
            "-b",
            "64K",
            "-e",
            "1M",
            "-f",
            "16",
            "-n",
            "10",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = common::run_dir(&results);
    let rows = common::rows(&run);
    let mut seen = std::collections::BTreeSet::new();
    for r in &rows {
        assert_eq!(r["backend"], "nccl-sim", "{r:?}");
        assert_eq!(
            (r["status"].as_str(), r["wrong"].as_str()),
            ("ok", "0"),
            "{r:?}"
        );
        let want = if r["config"] == "default" {
            "SHM"
        } else {
            "NET/Socket"
        };
        assert!(r["transports"].starts_with(want), "{r:?}");
        let n: f64 = r["nranks"].parse().unwrap();
        let (algbw, busbw): (f64, f64) = (
            r["algbw_gbps"].parse().unwrap(),
            r["busbw_gbps"].parse().unwrap(),
        );
        let want = algbw * factor(&r["collective"], n);
        assert!((busbw - want).abs() <= 0.002 + 1e-3 * want, "{r:?}");
        // NCCL's choice, matched to the case from the TUNING line (whose bytes are one
        // rank's share for all-gather and reduce-scatter from 2.24).
        let tuned = [
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "broadcast",
            "reduce",
        ];
        if tuned.contains(&r["collective"].as_str()) {
            assert!(
                !r["algo"].is_empty() && r["tuning_note"].is_empty(),
                "{r:?}"
            );
        }
        seen.insert((
            r["collective"].clone(),
            r["nranks"].clone(),
            r["config"].clone(),
        ));
    }
    // 9 collectives x 2 GPU counts x 2 configs, each with its sizes.
    assert_eq!(seen.len(), 36, "{seen:?}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    for coll in [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "alltoall",
        "sendrecv",
        "gather",
        "scatter",
    ] {
        // One round (process group) each: the SHM-off side is far slower, judged on
        // its change alone, with no error rate, for each collective and over them all.
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {coll} | ")))
            .unwrap_or_else(|| panic!("{coll}: {report}"));
        assert!(
            row.contains("| keep SHM: ") && row.ends_with("(one measurement a side) |"),
            "{row}"
        );
        let section = &report[report.find(&format!("\n### {coll}\n")).unwrap()..];
        assert!(
            section[..section[4..].find("\n#").unwrap()]
                .contains("(one measurement a side, no error rate)"),
            "{coll}: {section}"
        );
    }
    assert!(
        report.contains("**Keep SHM**: disabling it costs all_reduce, "),
        "{report}"
    );
    let logs = common::dir_entries(&run.join("logs"));
    let alltoall: String = logs
        .iter()
        .filter(|name| name.starts_with("default.alltoall.n8.") && name.contains(".nccl."))
        .map(|name| std::fs::read_to_string(run.join("logs").join(name)).unwrap())
        .collect();
    for peer in 1..8 {
        // NCCL's SHM line names no connection index.
        let line = format!("Channel 00 : 0[0] -> {peer}[{peer}] via SHM/direct/direct");
        assert!(alltoall.contains(&line), "{line}: {alltoall}");
    }
}

/// Before 2.28 (NCCL 2.21.5 played) alltoall, gather and scatter are grouped sends
/// and receives, as nccl-tests builds them (the stand-in refuses their own calls
/// there, as a library without the symbols would fail): still exact, captured into
/// CUDA graphs too, over P2P on NVSwitch.
#[test]
fn before_2_28_alltoall_gather_and_scatter_are_grouped_and_exact() {
    let _machine = crate::common::shared();
    let Some(dir) = common::sim::sim_dir() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let results = out.path().join("results");
    let o = common::sim::sim_sweep(
        &dir,
        "nvswitch",
        &[("NCCL_BENCH_SIM_VERSION", "2.21.5")],
        &results,
        &[
            "--gpus",
            "4",
            "--transports",
            "default",
            "--coll",
            "alltoall,gather,scatter",
            "-r",
            "1",
            "-b",
            "4K",
            "-e",
            "2M",
            "-f",
            "32",
            "-n",
            "20",
            "--graph",
            "5",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = common::rows(&common::run_dir(&results));
    let groups: std::collections::BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r["collective"].clone(), r["nranks"].clone()))
        .collect();
    assert_eq!(
        groups.len(),
        3 * 2,
        "3 collectives x 2 GPU counts: {groups:?}"
    );
    for r in &rows {
        assert_eq!(
            (r["status"].as_str(), r["wrong"].as_str()),
            ("ok", "0"),
            "{r:?}"
        );
        assert!(r["transports"].contains("P2P"), "{r:?}");
    }
}
