//! `explain` from the command line: real logs (read in place), several files and
//! standard input, the findings first, exit 1 on an error finding and 0 without, `--json`
//! and `--env`, what people paste beside NCCL logs (a PyTorch timeout, an nccl-tests
//! table), and input with nothing to read (exit 2).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use nccl_bench::test_inputs::{need, Need};

fn logs() -> Option<std::path::PathBuf> {
    need(Need::Fixtures("nccl-logs"))
}

fn explain(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(common::bin())
        .arg("explain")
        .args(args)
        .output()
        .unwrap()
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", common::text(o)))
}

/// Every shared log is read; the exit code is 1 exactly where a finding is an error, and
/// the findings come before what the log shows.
#[test]
fn every_shared_log_is_explained_and_exits_by_its_findings() {
    let _machine = crate::common::shared();
    let Some(dir) = logs() else { return };
    let mut errors = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = explain(&[path.as_os_str()]);
        let out = String::from_utf8_lossy(&text.stdout);
        assert!(
            out.starts_with("Findings\n") && out.contains("\nTransports (per rank pair)\n"),
            "{}: {out}",
            path.display()
        );
        let j = explain(&[path.as_os_str(), "--json".as_ref()]);
        let v = json(&j);
        let error = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["severity"] == "error");
        let want = if error { 1 } else { 0 };
        assert_eq!(text.status.code(), Some(want), "{}", path.display());
        assert_eq!(j.status.code(), Some(want), "{}", path.display());
        errors += usize::from(error);
    }
    assert!(errors > 0, "the shared logs hold failures");
    let o = explain(&[dir
        .join("nccl-log-5c-posix-fallocate-ring-2.5.txt")
        .as_os_str()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1));
    assert!(out.contains("[ERROR] /dev/shm too small"), "{out}");
    assert!(out.contains("--shm-size"), "{out}");
    assert!(
        out.contains("     Not: NCCL_SHM_DISABLE=1 only hides it"),
        "{out}"
    );
}

#[test]
fn several_files_and_standard_input() {
    let _machine = crate::common::shared();
    let Some(dir) = logs() else { return };
    let a = dir.join("nccl-log-8-multinode-socket-connect-abort.txt");
    let b = dir.join("nccl-log-3-p2p-cumem-2.21.5.txt");
    let o = explain(&[a.as_os_str(), b.as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let both = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(both.contains("P2P/CUMEM") && both.contains("SHM"), "{both}");

    let mut child = Command::new(common::bin())
        .args(["explain", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&a).unwrap())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("[ERROR]"));
}

/// The JSON holds every finding with its id, severity, evidence, cause, fix, what not to
/// do and its sources; a clean log exits 0 with no error in it.
#[test]
fn json_lists_every_finding_with_its_knowledge() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.log");
    std::fs::write(
        &bad,
        "node1:11:12 [0] misc/shmutils.cc:80 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes, error: No space left on device (28)\n",
    )
    .unwrap();
    let o = explain(&[bad.as_os_str(), "--json".as_ref()]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let f = &v["findings"][0];
    assert_eq!(f["id"], "shm-no-space");
    assert_eq!(f["severity"], "error");
    for key in ["title", "cause", "fix", "avoid"] {
        assert!(!f[key].as_str().unwrap().is_empty(), "{key}: {f}");
    }
    assert!(f["evidence"][0]
        .as_str()
        .unwrap()
        .contains("failed to extend"));
    assert!(f["sources"][0].as_str().unwrap().starts_with("https://"));

    let clean = tmp.path().join("clean.log");
    std::fs::write(
        &clean,
        "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
         h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n",
    )
    .unwrap();
    let o = explain(&[clean.as_os_str(), "--json".as_ref()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    assert!(json(&o)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["severity"] != "error"));
}

/// What people paste beside NCCL's own lines is read, not refused: a PyTorch watchdog
/// timeout with no NCCL line, and an nccl-tests table with wrong results.
#[test]
fn a_pytorch_timeout_and_an_nccl_tests_table_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let torch = tmp.path().join("torch.txt");
    std::fs::write(
        &torch,
        "[rank1]:[E1205 04:35:53.584483882 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600098 milliseconds before timing out.\n",
    )
    .unwrap();
    let o = explain(&[torch.as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("a collective timed out: ALLREDUCE #42 on rank 1"),
        "{out}"
    );
    assert!(out.contains("TORCH_NCCL_TRACE_BUFFER_SIZE"), "{out}");

    let tests = tmp.path().join("tests.txt");
    std::fs::write(
        &tests,
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n\
         #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
         \x20    8388608       2097152     float     sum      -1    45.10  186.00  186.00      3    45.00  186.40  186.40      0\n\
         # Out of bounds values : 3 FAILED\n",
    )
    .unwrap();
    let o = explain(&[tests.as_os_str(), "--json".as_ref()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let ids: Vec<String> = json(&o)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.contains(&"tests-wrong".to_string()), "{ids:?}");
    assert!(ids.contains(&"tests-busbw".to_string()), "{ids:?}");
}

/// `--env`: a variable the user set that the log never shows NCCL reading.
#[test]
fn a_variable_set_that_no_rank_shows_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("rank0.log");
    std::fs::write(
        &log,
        "h:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n\
         h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n",
    )
    .unwrap();
    let o = explain(&[
        log.as_os_str(),
        "--env".as_ref(),
        "NCCL_IB_DISABLE=1".as_ref(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("NCCL_IB_DISABLE was set, but NCCL never shows it"),
        "{out}"
    );
    let o = explain(&[
        log.as_os_str(),
        "--env".as_ref(),
        "NCCL_IB_DISABLE".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not NAME=VALUE"));
}

#[test]
fn a_file_with_nothing_to_read_is_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("notes.txt");
    std::fs::write(&f, "epoch 1 loss 0.3\nepoch 2 loss 0.2\n").unwrap();
    let o = explain(&[f.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not look like an NCCL log"));
    let o = explain(&[tmp.path().join("absent.log").as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
}
