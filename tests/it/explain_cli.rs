//! `explain` from the command line: real logs (read in place), several files and
//! standard input, and a file that is not an NCCL log (exit 2).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use nccl_bench::test_inputs::{need, Need};

fn logs() -> Option<std::path::PathBuf> {
    need(Need::Fixtures("nccl-logs"))
}

#[test]
fn every_shared_log_is_explained() {
    let _machine = crate::common::shared();
    let Some(dir) = logs() else { return };
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let o = Command::new(common::bin())
            .arg("explain")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            path.display(),
            common::text(&o)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("Transports (per rank pair)") && out.contains("Findings"),
            "{out}"
        );
    }
    let o = Command::new(common::bin())
        .arg("explain")
        .arg(dir.join("nccl-log-5c-posix-fallocate-ring-2.5.txt"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[ERROR] /dev/shm too small"), "{out}");
    assert!(out.contains("--shm-size"), "{out}");
}

#[test]
fn several_files_and_standard_input() {
    let _machine = crate::common::shared();
    let Some(dir) = logs() else { return };
    let a = dir.join("nccl-log-8-multinode-socket-connect-abort.txt");
    let b = dir.join("nccl-log-3-p2p-cumem-2.21.5.txt");
    let o = Command::new(common::bin())
        .arg("explain")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
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
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("[ERROR]"));
}

#[test]
fn a_file_that_is_not_an_nccl_log_is_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("notes.txt");
    std::fs::write(&f, "epoch 1 loss 0.3\nepoch 2 loss 0.2\n").unwrap();
    let o = Command::new(common::bin())
        .arg("explain")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not look like an NCCL log"));
    let o = Command::new(common::bin())
        .arg("explain")
        .arg(tmp.path().join("absent.log"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
