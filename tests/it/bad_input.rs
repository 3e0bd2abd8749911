//! Bad input gets a precise message and exit code 2, never a panic, and nothing is
//! written: the output directory is not even created.

use std::path::Path;

use crate::common::*;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// Runs a sweep with `args`, expects exit 2 with `message` on stderr and no output.
fn rejected(args: &[&str], message: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = sweep(&out, tmp.path())
        .args(["-n", "1"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    assert!(
        stderr.contains(message),
        "{args:?}: expected {message:?} in:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out.exists(), "{args:?} wrote {}", out.display());
}

#[test]
fn malformed_sizes() {
    let _machine = crate::common::shared();
    rejected(&["-b", "1.5M"], "invalid size '1.5M'");
    rejected(&["-e", "lots"], "invalid size 'lots'");
    rejected(&["-b", "99999999999G"], "too large");
}

#[test]
fn minimum_above_maximum() {
    let _machine = crate::common::shared();
    rejected(
        &["-b", "64M", "-e", "1M"],
        "minimum size 64 MiB is larger than maximum size 1 MiB",
    );
    rejected(
        &["-b", "2", "-d", "float"],
        "smaller than one float element (4 bytes)",
    );
    rejected(&["-f", "1"], "-f/--stepfactor must be at least 2");
}

#[test]
fn unknown_names() {
    let _machine = crate::common::shared();
    rejected(
        &["--transports", "default,shm-of"],
        "unknown transport configuration 'shm-of'",
    );
    rejected(&["-d", "float128"], "unknown datatype 'float128'");
    // (`rejected` passes -n 1: --tails asks the adaptive rule for samples.)
    rejected(
        &["--tails"],
        "the argument '--iters <N>' cannot be used with '--tails'",
    );
    rejected(&["-o", "xor"], "unknown reduction op 'xor'");
    rejected(&["--gpus", "two"], "invalid --gpus 'two'");
    rejected(&["--gpus", "0"], "invalid --gpus '0'");
    rejected(&["--gpus", "65"], "at most 64 processes");
    rejected(&["--label", "my label"], "invalid --label 'my label'");
}

#[test]
fn broken_toml_names_the_line() {
    let _machine = crate::common::shared();
    rejected(
        &["--config", &fixture("broken.toml")],
        "broken.toml: TOML parse error at line 6",
    );
}

#[test]
fn unknown_toml_key_names_key_and_line() {
    let _machine = crate::common::shared();
    let f = fixture("unknown-key.toml");
    rejected(&["--config", &f], "unknown field `enviroment`");
    rejected(&["--config", &f], "line 6");
}

#[test]
fn missing_config_file() {
    let _machine = crate::common::shared();
    rejected(
        &["--config", "/nonexistent/configs.toml"],
        "cannot read transport config /nonexistent/configs.toml",
    );
}

#[test]
fn out_dir_that_cannot_be_created() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, "precious").unwrap();
    let o = sweep(&file.join("sub"), tmp.path())
        .args(["-n", "1", "-b", "8", "-e", "8"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot create output directory"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");
}

#[test]
fn shm_dir_must_exist() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = sweep(&out, &tmp.path().join("nope"))
        .args(["-n", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a directory"));
    assert!(!out.exists());
}

#[test]
fn nccl_backend_without_a_driver_is_a_one_line_error() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = std::process::Command::new(bin())
        .args(["sweep", "--backend", "nccl", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    // CI machines have no NVIDIA driver; on one that has it, the next missing piece is named.
    assert!(
        stderr.starts_with("error: ") && stderr.contains("NVIDIA"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!out.exists());
}

#[test]
fn an_unknown_nccl_variable_warns_and_still_runs() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = sweep(&out, tmp.path())
        .args([
            "--config",
            &fixture("blog-advice.toml"),
            "-b",
            "8",
            "-e",
            "8",
            "-n",
            "2",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let stderr = crate::common::joined(&String::from_utf8_lossy(&o.stderr));
    assert!(stderr.contains("blog-advice.toml:5: config 'blog': NCCL_SHM_USE_CUDA_MEMORY is not a variable any NCCL release reads"), "{stderr}");
    assert!(
        stderr.contains("did you mean NCCL_SHM_USE_CUDA_MEMCPY?"),
        "{stderr}"
    );
}

#[test]
fn an_existing_run_directory_is_never_reused() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for _ in 0..2 {
        let o = sweep(&out, tmp.path())
            .args([
                "--transports",
                "default",
                "-b",
                "8",
                "-e",
                "8",
                "-n",
                "1",
                "--label",
                "same",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let runs = dir_entries(&out);
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in runs {
        assert_eq!(rows(&out.join(run)).len(), 1);
    }
}

#[test]
fn help_reads_like_a_real_tool() {
    let _machine = crate::common::shared();
    let o = std::process::Command::new(bin())
        .args(["sweep", "--help"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--minbytes",
        "--maxbytes",
        "--stepfactor",
        "--iters",
        "--warmup_iters",
        "--datatype",
        "--op",
        "--gpus",
        "--transports",
        "--backend",
        "--timeout",
        "--max-time",
    ] {
        assert!(help.contains(flag), "{flag} missing from help");
    }
    let top = std::process::Command::new(bin())
        .arg("--help")
        .output()
        .unwrap();
    let top = String::from_utf8_lossy(&top.stdout);
    assert!(top.contains("sweep") && !top.contains("worker"), "{top}");
}

#[test]
fn an_unusable_config_value_is_refused_before_the_run() {
    let _machine = crate::common::shared();
    rejected(
        &["--config", &fixture("bad-buffsize.toml")],
        "config 'big-fifo'",
    );
    rejected(
        &["--config", &fixture("bad-buffsize.toml")],
        "NCCL_BUFFSIZE='4M' is not a number of bytes",
    );
}

#[test]
fn cuda_graphs_need_the_nccl_backend() {
    let _machine = crate::common::shared();
    rejected(
        &["--graph", "20"],
        "--graph 20 captures CUDA graphs, which the host backend does not have",
    );
    rejected(
        &["--graph", "5000"],
        "invalid value '5000' for '--graph <N>': 5000 is not in 0..=4096",
    );
}

#[test]
fn buffers_larger_than_memory_are_refused_before_the_run() {
    let _machine = crate::common::shared();
    rejected(&["-b", "1T", "-e", "1T"], "need 4 TiB of memory");
}

#[test]
fn an_existing_run_dir_is_never_overwritten() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let existing = tmp.path().join("earlier-run");
    std::fs::create_dir(&existing).unwrap();
    std::fs::write(existing.join("results.csv"), "precious\n").unwrap();
    let o = sweep(&tmp.path().join("out"), tmp.path())
        .args(["-n", "1", "--run-dir"])
        .arg(&existing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("already exists: a run directory is never overwritten"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(existing.join("results.csv")).unwrap(),
        "precious\n"
    );
}

#[test]
fn a_bad_event_stride_is_refused_before_anything_runs() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = sweep(&out, tmp.path())
        .args(["-n", "1"])
        .env("NCCL_BENCH_EVENTS_EVERY", "often")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("NCCL_BENCH_EVENTS_EVERY=often: expected auto or a whole number"),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
}
