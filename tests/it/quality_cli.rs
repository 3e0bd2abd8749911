//! The quality pass end to end: a rank made to stall at one size (the `stall` fault)
//! gives a median a thousand times its neighbours'; the case is flagged an outlier,
//! said on the terminal, in results.csv and in the report, and measured once: nothing
//! is measured again or set aside by its values.
//!
//! One test function, so that nothing else in this binary loads the machine while
//! it measures.

use std::collections::HashMap;

use crate::common::{rows, run_dir, sweep, text};

fn row<'a>(rows: &'a [HashMap<String, String>], bytes: &str) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r["bytes"] == bytes)
        .unwrap_or_else(|| panic!("no row for {bytes} B"))
}

#[test]
fn a_stalled_case_is_flagged_and_kept() {
    let _machine = crate::common::alone();
    let shm = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(["--gpus", "2", "--transports", "default"])
        .args(["-b", "8", "-e", "1K", "-n", "50", "--rounds", "6"])
        .env("NCCL_BENCH_FAULT", "stall:rank=1:bytes=64:us=2000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    // On a busy machine a load spike can flag other sizes too; only the stalled one
    // is required here.
    // The warning and the indented lines it wraps onto.
    let start = stderr
        .find("warning: default n=2: ")
        .unwrap_or_else(|| panic!("no flag warning: {}", text(&o)));
    let warning: String = stderr[start..]
        .lines()
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with("  "))
        .map(|(_, l)| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(warning.contains(" flagged ("), "{warning}");
    assert!(warning.contains("64 B outlier"), "{warning}");
    let run = run_dir(out.path());
    let all = rows(&run);
    assert_eq!(all.len(), 8, "one row per size");
    let stalled = row(&all, "64");
    assert_eq!(
        (stalled["status"].as_str(), stalled["quality"].as_str()),
        ("ok", "outlier")
    );
    assert!(
        stalled["p50_us"].parse::<f64>().unwrap() > 500.0,
        "{stalled:?}"
    );
    assert!(
        stalled["quality_note"].contains("what the neighbouring sizes predict"),
        "{stalled:?}"
    );
    assert!(!run.join("logs/default.n2.remeasure.r1.rank1.log").exists());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let section = report
        .split("## Cases flagged")
        .nth(1)
        .unwrap_or_else(|| panic!("no flagged section:\n{report}"));
    assert!(
        section
            .lines()
            .any(|l| l.starts_with("| default | 2 | 64 B | outlier | ")),
        "{section}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(" flagged: "),
        "{}",
        text(&o)
    );
}
