//! The quality pass end to end: a rank made to stall at one size (the `stall` fault,
//! which processes started to re-measure do not make) gives a median a thousand
//! times its neighbours'; the case is flagged, measured again in fresh processes and
//! comes out `remeasured` with a sane median, both histograms kept. With
//! `--no-remeasure` it stays an `outlier`, and the report lists it.
//!
//! One test function, so that nothing else in this binary loads the machine while
//! it measures.

use crate::common;

use std::collections::HashMap;

use crate::common::{rows, run_dir, sweep, text};

fn row<'a>(rows: &'a [HashMap<String, String>], bytes: &str) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r["bytes"] == bytes)
        .unwrap_or_else(|| panic!("no row for {bytes} B"))
}

fn p50(r: &HashMap<String, String>) -> f64 {
    r["p50_us"].parse().unwrap()
}

#[test]
fn a_stalled_case_is_flagged_and_remeasured() {
    let _machine = crate::common::alone();
    let shm = tempfile::tempdir().unwrap();
    let args = [
        "--gpus",
        "2",
        "--transports",
        "default",
        "-b",
        "8",
        "-e",
        "1K",
        "-n",
        "50",
    ];

    // Re-measured.
    let out = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(args)
        .env("NCCL_BENCH_FAULT", "stall:rank=1:bytes=64:us=2000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The stalled size is flagged as an outlier. On a busy machine a load spike can
    // make other sizes out of line too (seen: 8-32 B three times slower than 128 B
    // while another build ran); they are re-measured as well, which is the rule
    // working, so only the stalled one is required here.
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning: default n=2: re-measuring "))
        .unwrap_or_else(|| panic!("no re-measuring warning: {}", text(&o)));
    assert!(warning.contains("64 B outlier"), "{}", text(&o));
    let run = run_dir(out.path());
    let all = rows(&run);
    assert_eq!(
        all.len(),
        8,
        "one row per size, the re-measurement in place"
    );
    let stalled = row(&all, "64");
    assert_eq!(stalled["status"], "ok");
    assert_eq!(stalled["quality"], "remeasured", "{stalled:?}");
    assert!(p50(stalled) < 50.0, "a sane median: {stalled:?}");
    let note = &stalled["quality_note"];
    assert!(note.starts_with("first measurement p50 "), "{note}");
    assert!(note.contains(" ms: median "), "the stalled median: {note}");
    assert!(note.contains("; kept the re-measurement"), "{note}");
    assert_eq!(stalled["hist_tag"], "default/n2/64/float/sum/remeasured");
    let hlog = std::fs::read_to_string(run.join("histograms.hlog")).unwrap();
    assert!(
        hlog.contains("Tag=default/n2/64/float/sum,"),
        "the first take stays"
    );
    assert!(hlog.contains("Tag=default/n2/64/float/sum/remeasured,"));
    // Re-measured in as many rounds as the first take (9 by default).
    assert!(run.join("logs/default.n2.remeasure.r9.rank1.log").is_file());
    let log = std::fs::read_to_string(run.join("logs/default.n2.remeasure.r1.rank1.log")).unwrap();
    assert!(log.contains(", re-measuring, connected via"), "{log}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest["cases"]["remeasured"].as_u64().unwrap() >= 1);
    assert_eq!(manifest["cases"]["ok"], 8);
    assert!(stdout.contains("re-measured"), "summary line: {stdout}");
    // `compare` reads the re-measured histogram through hist_tag: the run against
    // itself is unchanged everywhere.
    let cmp = std::process::Command::new(common::bin())
        .arg("compare")
        .arg(&run)
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(cmp.status.code(), Some(0), "{}", text(&cmp));
    assert!(
        String::from_utf8_lossy(&cmp.stdout).contains("8 matched cases (8 unchanged)"),
        "{}",
        text(&cmp)
    );

    // Not re-measured: the outlier stays, said everywhere.
    let out = tempfile::tempdir().unwrap();
    let o = sweep(out.path(), shm.path())
        .args(args)
        .arg("--no-remeasure")
        .env("NCCL_BENCH_FAULT", "stall:rank=1:bytes=64:us=2000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(out.path());
    let all = rows(&run);
    let stalled = row(&all, "64");
    assert_eq!(stalled["quality"], "outlier", "{stalled:?}");
    assert!(p50(stalled) > 500.0, "{stalled:?}");
    assert!(
        stalled["quality_note"].contains("; not re-measured (--no-remeasure)"),
        "{stalled:?}"
    );
    assert!(!run.join("logs/default.n2.remeasure.r1.rank1.log").exists());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let section = report
        .split("## Cases to distrust")
        .nth(1)
        .unwrap_or_else(|| panic!("no distrust section:\n{report}"));
    // Listed as an outlier with its reason. The stall may also make its samples
    // two-moded or drifting (seen once in CI: "bimodal: ...; drifted: ..." first),
    // which the rules rightly add before it.
    let listed = section
        .lines()
        .find(|l| l.starts_with("| default | 2 | 64 B | outlier | "))
        .unwrap_or_else(|| panic!("{section}"));
    assert!(
        listed.contains("what the neighbouring sizes predict")
            && listed.contains("not re-measured (--no-remeasure)"),
        "{listed}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(" to distrust: "),
        "{}",
        text(&o)
    );
}
