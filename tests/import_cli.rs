//! `nccl-bench import`: nccl-tests outputs become run directories that `compare`
//! reads; malformed input is exit 2 with its line number, and nothing existing is
//! overwritten.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use nccl_bench::test_inputs::{need, Need};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(common::bin())
        .args(args)
        .output()
        .unwrap()
}

fn import(file: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "import".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    run(&args)
}

#[test]
fn an_nccl_tests_table_becomes_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("imported");
    let o = import(&fixture("all_reduce_perf-2ranks.txt"), &out, &[]);
    assert!(o.status.success(), "{}", common::text(&o));
    let rows = common::rows(&out);
    assert_eq!(rows.len(), 10, "5 sizes, out-of-place and in-place");
    let first = &rows[0];
    assert_eq!(
        first["config"], "shm-off",
        "named after the preset with the same NCCL variables"
    );
    assert_eq!(first["backend"], "nccl-tests");
    assert_eq!(first["nranks"], "2");
    assert_eq!(first["bytes"], "8");
    assert_eq!(first["time_us"], "10.500");
    assert_eq!(first["iters"], "50");
    assert_eq!(first["p50_us"], "", "no percentiles in nccl-tests output");
    assert_eq!(rows[1]["config"], "shm-off-inplace");
    assert_eq!(rows[1]["time_us"], "10.200");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["backend"]["used"], "nccl-tests");
    assert_eq!(manifest["configs"][0]["env"]["NCCL_SHM_DISABLE"], "1");

    // compare reads it, says it compares means, and finds no change against itself.
    let o = run(&["compare".as_ref(), out.as_os_str(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("10 matched cases (10 unchanged)"), "{text}");
    assert!(text.contains("compared on mean times only"), "{text}");
    // In-place against out-of-place within the import: in-place is ~3 % faster.
    let o = run(&[
        "compare".as_ref(),
        out.as_os_str(),
        "--config-a".as_ref(),
        "shm-off".as_ref(),
        "--config-b".as_ref(),
        "shm-off-inplace".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("improved"));
}

#[test]
fn malformed_input_is_exit_2_with_the_line_and_nothing_is_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x");
    let o = import(&fixture("all_reduce_perf-bad-row.txt"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("line 14"), "{stderr}");
    assert!(!out.exists());

    let o = import(&fixture("broken.toml"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("table"),
        "{}",
        common::text(&o)
    );

    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "mine").unwrap();
    let o = import(&fixture("all_reduce_perf-2ranks.txt"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    assert_eq!(std::fs::read_to_string(out.join("keep")).unwrap(), "mine");
}

/// The real outputs in ../shared/fixtures/nccl-tests, read in place.
#[test]
fn every_shared_nccl_tests_fixture_imports() {
    let Some(dir) = need(Need::Fixtures("nccl-tests")) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let expected = [
        ("nccl-tests-1-old-error-column-no-root.txt", 20, Some("16")),
        ("nccl-tests-2-mpirun-tag-output-old-format.txt", 56, None),
        ("nccl-tests-3-srun-label-na-multinode.txt", 22, None),
        (
            "nccl-tests-5-current-v2.19.4-nccl-2.19.3-UNIDENTIFIED-SOURCE.txt",
            50,
            None,
        ),
        ("nccl-tests-5b-current-v2.20.0-partial.txt", 8, None),
    ];
    for (name, rows, nranks) in expected {
        let out = tmp.path().join(name);
        let extra: Vec<&str> = nranks.map(|n| vec!["--nranks", n]).unwrap_or_default();
        let o = import(&dir.join(name), &out, &extra);
        assert!(o.status.success(), "{name}: {}", common::text(&o));
        assert_eq!(common::rows(&out).len(), rows, "{name}");
    }
    let o = import(
        &dir.join("nccl-tests-1-old-error-column-no-root.txt"),
        &tmp.path().join("no-ranks"),
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give --nranks"));
}
