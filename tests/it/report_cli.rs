//! `report`: report.md and report.html, written by every sweep and on demand, with the
//! SHM verdict drawn from the data, in the order a person decides; a directory that
//! is not a run is exit 2.

use crate::common;

#[test]
fn a_host_sweep_writes_a_report_with_the_shm_verdict() {
    let _machine = crate::common::shared();
    let out = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir().unwrap();
    let o = common::sweep(out.path(), shm.path())
        .args([
            "--gpus",
            "2",
            "--transports",
            "default,shm-off",
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "8",
            "-n",
            "200",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let run = common::run_dir(out.path());
    let report = std::fs::read_to_string(run.join("report.md")).expect("sweep writes report.md");
    assert!(
        report.contains("**Host backend (CPU), not NCCL.**"),
        "{report}"
    );
    // The verdict depends on this machine's speeds (TCP loopback is usually far
    // slower than shared memory, but a loaded CI machine decides): one of the
    // verdicts is given. The verdicts themselves are tested on the simulated GPUs,
    // whose times do not depend on the machine.
    let verdicts = [
        "**Keep SHM**: ",
        "**Disabling SHM costs nothing measurable**: ",
        "**Not settled**: ",
    ];
    assert!(
        verdicts.iter().any(|v| report.contains(v)),
        "no verdict: {report}"
    );
    assert!(report.contains("| shm-off |"), "{report}");
    assert!(report.contains("| NET/Socket |"), "{report}");
    // Host ranks are CPU processes, not GPUs, in the report and on the plots.
    assert!(report.contains("## 2 ranks\n"), "{report}");
    assert!(!report.contains("2 GPUs"), "{report}");
    let title = std::fs::read_to_string(run.join("plots/busbw-n2.svg")).unwrap();
    assert!(
        title.contains("All-reduce bus bandwidth, 2 ranks"),
        "busbw-n2.svg"
    );
    // The plots are drawn and embedded.
    for name in ["busbw-n2", "latency-n2", "relative-n2"] {
        for ext in ["svg", "png"] {
            let f = run.join("plots").join(format!("{name}.{ext}"));
            assert!(f.is_file(), "{} missing", f.display());
        }
        assert!(
            report.contains(&format!("![{name}.svg](plots/{name}.svg)")),
            "{report}"
        );
    }

    // In the order a person decides: the verdict first, then whether the bandwidth is
    // normal, then the GPU count's table with its plots; the machine last.
    let at = |h: &str| report.find(h).unwrap_or_else(|| panic!("{h}: {report}"));
    assert!(at("## Keep SHM enabled?") < at("## Is this bandwidth normal?"));
    assert!(at("## Is this bandwidth normal?") < at("## 2 ranks\n"));
    assert!(at("## 2 ranks\n") < at("![busbw-n2.svg]"));
    assert_eq!(report.rfind("\n## "), Some(at("## Machine and run") - 1));
    // The same as one page, with its charts inline.
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("<h2>Keep SHM enabled?</h2>"), "{page}");
    assert_eq!(
        page.matches("<svg").count(),
        report.matches("](plots/").count()
    );

    // On demand, with another baseline: the verdict needs "default", the tables do not.
    std::fs::remove_file(run.join("report.md")).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    let o = std::process::Command::new(common::bin())
        .args(["report", "--baseline", "shm-off"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("vs shm-off at"), "{report}");
    assert!(run.join("report.html").is_file());
}

#[test]
fn report_on_something_that_is_not_a_run_is_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(common::bin())
        .arg("report")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a run directory"));
    assert!(!tmp.path().join("report.md").exists());
}
