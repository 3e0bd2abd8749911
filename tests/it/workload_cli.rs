//! `nccl-bench workload` from the command line: a real COLL log, whole or split into
//! one file per rank as NCCL_DEBUG_FILE writes them, gives the same calls; a CSV's
//! calls per step; JSON; bad files are exit 2 naming the line, with nothing on stdout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, text};

fn workload(args: &[&Path], json: bool) -> Output {
    let mut c = Command::new(bin());
    c.arg("workload").args(args);
    if json {
        c.arg("--json");
    }
    c.output().unwrap()
}

fn real(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real")
        .join(name)
}

#[test]
fn a_real_coll_log_whole_or_per_rank_gives_the_same_calls() {
    let _machine = crate::common::shared();
    let log = real("tune-04-tp2-coll-reducescatter-allgather-counts.log");
    let whole = workload(&[&log], true);
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    let doc: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(doc["format"], "nccl-coll");
    assert_eq!(doc["calls"], 6);
    let first = &doc["entries"][0];
    assert_eq!(
        (
            first["collective"].as_str(),
            first["bytes"].as_u64(),
            first["calls"].as_u64()
        ),
        (Some("all_gather"), Some(16 << 20), Some(2))
    );
    // One file per rank (pid), as NCCL_DEBUG_FILE=nccl.%h.%p writes them.
    let tmp = tempfile::tempdir().unwrap();
    let all = std::fs::read_to_string(&log).unwrap();
    let mut files = Vec::new();
    for pid in ["191369", "191370"] {
        let path = tmp.path().join(format!("nccl.hopper01.{pid}.log"));
        let mine: String = all
            .lines()
            .filter(|l| l.contains(&format!(":{pid}:")))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, mine).unwrap();
        files.push(path);
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let split = workload(&paths, true);
    assert_eq!(split.status.code(), Some(0), "{}", text(&split));
    let split_doc: serde_json::Value = serde_json::from_slice(&split.stdout).unwrap();
    assert_eq!(split_doc["entries"], doc["entries"]);
    let table = workload(&[&log], false);
    let shown = String::from_utf8_lossy(&table.stdout);
    assert!(
        shown.contains("reduce_scatter  2      16 MiB  2      32 MiB  50.0 %"),
        "{shown}"
    );
}

#[test]
fn a_csv_is_calls_per_step_and_a_bad_one_is_exit_2_naming_its_line() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("step.csv");
    std::fs::write(
        &good,
        "collective,bytes,count,nranks\nall_reduce,25M,40,8\nall_gather,4M,96,8\n",
    )
    .unwrap();
    let o = workload(&[&good], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("2 collective sizes, 136 calls, 1.35 GiB in all"),
        "{shown}"
    );
    for (body, says) in [
        (
            "collective,bytes,count\nall_reduce,25M,x\n",
            "step.csv:2: field `count`",
        ),
        ("just some text\n", "holds no NCCL COLL line"),
    ] {
        std::fs::write(&good, body).unwrap();
        let o = workload(&[&good], false);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(o.stdout.is_empty(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = workload(&[&good, &good], false);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
