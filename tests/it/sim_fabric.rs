//! NVLink SHARP that fails to bind its multicast memory (the stand-in's fault
//! `nvls-bind`, played as each release's `transport/nvls.cc` plays it): 2.27-2.28 go
//! on without NVLS, so the case is a ring, judged against the ring's figure, and its
//! note says why; 2.29 fails the communicator, and the failure names NVLS. Either way
//! `explain` on the run's NCCL logs names the Fabric Manager and NCCL_NVLS_ENABLE=0.
//! `doctor` reads each GPU's registration with the NVLink fabric from NVML and fails
//! on a GPU that has not finished (the fault `fabric-incomplete`).
//! Without the stand-in these tests fail unless NCCL_BENCH_TEST_SKIP names `sim`.

use std::path::{Path, PathBuf};

use nccl_bench::nccl::explain::{explain, Finding, FindingKind, Severity};
use nccl_bench::nccl::log::{parse_files, NcclLog, NvlsUse};

use crate::common::sim::{on_sim, sim_dir, sim_sweep};
use crate::common::{report, rows, run_dir, text};

/// The NCCL logs of a run directory, parsed as one.
fn nccl_log_of(run: &Path) -> NcclLog {
    let files: Vec<PathBuf> = std::fs::read_dir(run.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".nccl."))
        .collect();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    parse_files(&paths).unwrap()
}

/// `explain`'s finding of `kind` on `log`, which must have one.
fn finding(log: &NcclLog, kind: FindingKind) -> Finding {
    let e = explain(log);
    e.findings
        .into_iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {log:?}"))
}

fn sweep(dir: &Path, version: &str, out: &Path) -> (std::process::Output, PathBuf) {
    let o = sim_sweep(
        dir,
        "nvswitch",
        &[
            ("NCCL_BENCH_SIM_VERSION", version),
            ("NCCL_BENCH_SIM_FAULT", "nvls-bind"),
        ],
        out,
        &[
            "--gpus",
            "8",
            "-b",
            "16M",
            "-e",
            "16M",
            "-n",
            "20",
            "--transports",
            "default",
            "--no-probe",
        ],
    );
    let run = run_dir(out);
    (o, run)
}

#[test]
fn a_failed_nvls_bind_is_a_ring_judged_as_one_where_nccl_goes_on_and_a_named_failure_where_it_does_not(
) {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };

    // 2.28.9: NCCL goes on without NVLS.
    let out = tempfile::tempdir().unwrap();
    let (o, run) = sweep(&dir, "2.28.9", out.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let cases = rows(&run);
    let r = cases.iter().find(|r| r["nranks"] == "8").unwrap();
    assert_eq!(r["status"], "ok", "{r:?}");
    assert!(r["transports"].starts_with("P2P/"), "{r:?}");
    // A ring's ceiling and figure, not NVLS's.
    assert_ne!(r["ceiling_pct"], "", "{r:?}");
    assert!(
        r["tuning_note"].starts_with("NVLS failed to bind its multicast memory, CUDA error 401")
            && r["tuning_note"].ends_with("is judged as one"),
        "{r:?}"
    );
    let report = report(&run);
    assert!(report.contains("8 x H100 SXM, ring"), "{report}");
    // One size: one latency column, not the same one twice.
    assert!(
        report.contains("| of ceiling | latency at 16 MiB | vs default at 16 MiB |"),
        "{report}"
    );
    // The logs' finding beside its cases, with the Fabric Manager and the cost of rings
    // against the NVLS figure.
    let (before, logs) = report
        .split_once("## What NCCL's logs say")
        .unwrap_or_else(|| panic!("{report}"));
    // The case is judged as the ring it ran, and its row names the finding.
    assert!(!before.contains("8 x H100 SXM, NVLS"), "{report}");
    assert!(
        report.contains("| ok; NCCL log: nvls-fallback |"),
        "{report}"
    );
    assert!(
        logs.contains("**NVLS failed and NCCL went on without it** (warning, default n2")
            && logs.contains("default n8)")
            && logs.contains("nvidia-fabricmanager"),
        "{logs}"
    );
    // 16 MiB is below the sizes the NVLS figure is published for: no share, but the
    // size to sweep to.
    assert!(
        logs.contains(
            " GB/s busbw at 16 MiB without NVLS; 8 x H100 SXM, NVLS publishes 480 GB/s from \
             4 GiB up, so sweep to 4 GiB (`-e 4G`) to compare."
        ),
        "{logs}"
    );
    let log = nccl_log_of(&run);
    assert_eq!(log.nvls, NvlsUse::Failed);
    let f = finding(&log, FindingKind::NvlsFallback);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.fix.contains("NCCL_NVLS_ENABLE=0") && f.cause.contains("went on without NVLS"));

    // 2.29.3: the communicator fails, and the case says it was NVLS.
    let out = tempfile::tempdir().unwrap();
    let (o, run) = sweep(&dir, "2.29.3", out.path());
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
    let cases = rows(&run);
    let r = cases.iter().find(|r| r["nranks"] == "8").unwrap();
    assert_ne!(r["status"], "ok", "{r:?}");
    assert!(
        r["error"].contains("nvls-bind: Failed to bind NVLink SHARP"),
        "{r:?}"
    );
    let f = finding(&nccl_log_of(&run), FindingKind::NvlsBind);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.cause.contains("CUDA error 401") && f.fix.contains("nvidia-fabricmanager"));

    // 2.30.7 names the function after file:line, as the real log of
    // tests/fixtures/real/nvls-11-* does (`transport/nvls.cc:379 (nvlsAllocateMem)`);
    // read the same.
    let out = tempfile::tempdir().unwrap();
    let (o, run) = sweep(&dir, "2.30.7", out.path());
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
    let logs = crate::common::logs_text(&run);
    assert!(
        logs.contains(
            "] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401"
        ),
        "{logs}"
    );
    let r = rows(&run).into_iter().find(|r| r["nranks"] == "8").unwrap();
    assert!(
        r["status"] != "ok" && r["error"].contains("nvls-bind: Failed to bind NVLink SHARP"),
        "{r:?}"
    );
    let f = finding(&nccl_log_of(&run), FindingKind::NvlsBind);
    assert_eq!(f.severity, Severity::Error);
}

/// A sweep of 2 GPUs without peer access (SHM carries the ring) at NCCL 2.28.9 with a
/// CUDA `driver`, and the stand-in's `fault` if any; its output and run directory.
fn shm_sweep(
    dir: &Path,
    driver: &str,
    fault: &str,
    configs: &str,
    out: &Path,
) -> (std::process::Output, PathBuf) {
    let mut env = vec![("NCCL_BENCH_SIM_DRIVER", driver)];
    if !fault.is_empty() {
        env.push(("NCCL_BENCH_SIM_FAULT", fault));
    }
    let o = sim_sweep(
        dir,
        "pcie-nop2p",
        &env,
        out,
        &[
            "--gpus",
            "2",
            "-b",
            "1M",
            "-e",
            "1M",
            "-n",
            "20",
            "--transports",
            configs,
            "--no-probe",
        ],
    );
    (o, run_dir(out))
}

/// SHM's buffers as NCCL 2.24+ places them: cuMem host memory with a CUDA 12.6+
/// driver, /dev/shm files with an older one or where the process's probe of cuMem
/// host memory fails; each case says which. Where the probe fails on one rank only,
/// that rank reads its peer's cuMem handle as a /dev/shm name: the case fails with
/// the size-0 attach, and `explain` names the cause and NCCL_CUMEM_HOST_ENABLE=0.
#[test]
fn each_case_says_where_shm_kept_its_buffers_and_a_rank_that_fell_back_alone_is_named() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let backing = |driver: &str, fault: &str| {
        let out = tempfile::tempdir().unwrap();
        let (o, run) = shm_sweep(&dir, driver, fault, "default", out.path());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let cases = rows(&run);
        let r = cases.iter().find(|r| r["nranks"] == "2").unwrap().clone();
        assert_eq!(
            (r["status"].as_str(), r["transports"].as_str()),
            ("ok", "SHM:100%"),
            "{r:?}"
        );
        // The manifest records it per config.
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(
            manifest["shm_backing"]["default"],
            serde_json::json!([r["shm_backing"]]),
            "{manifest}"
        );
        (r["shm_backing"].clone(), nccl_log_of(&run), report(&run))
    };
    let (b, _, report_md) = backing("12080", "");
    assert_eq!(b, "cumem-host");
    assert!(
        report_md
            .contains("- SHM's buffers (NCCL's log): cuMem host memory (not /dev/shm) in 1 case\n"),
        "{report_md}"
    );
    let (b, _, _) = backing("12040", "");
    assert_eq!(b, "dev-shm");
    let (b, log, _) = backing("12080", "cumem-host-probe");
    assert_eq!(b, "dev-shm");
    assert!(
        log.shm_backing.fallback_line.is_some(),
        "{:?}",
        log.shm_backing
    );

    // Rank 1 alone falls back; the SHM verdict says what to set, not /dev/shm.
    let out = tempfile::tempdir().unwrap();
    let (o, run) = shm_sweep(
        &dir,
        "12080",
        "cumem-host-probe@1",
        "default,shm-off",
        out.path(),
    );
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
    let cases = rows(&run);
    let r = cases
        .iter()
        .find(|r| r["nranks"] == "2" && r["config"] == "default")
        .unwrap();
    assert_ne!(r["status"], "ok", "{r:?}");
    assert!(
        r["error"].contains(
            "shm-cumem-mismatch: Error while attaching to shared memory segment /dev/shm/nccl-"
        ),
        "{r:?}"
    );
    let report = report(&run);
    assert!(
        report.contains("**Set NCCL_CUMEM_HOST_ENABLE=0 on every rank; do not disable SHM**")
            && !report.contains("Fix /dev/shm"),
        "{report}"
    );
    let log = nccl_log_of(&run);
    assert_eq!(
        log.shm_backing.label(),
        Some("mixed"),
        "{:?}",
        log.shm_backing
    );
    let f = finding(&log, FindingKind::ShmCumemMismatch);
    assert!(
        f.fix
            .starts_with("Set NCCL_CUMEM_HOST_ENABLE=0 on every rank"),
        "{}",
        f.fix
    );
    assert!(f.cause.contains("fell back to /dev/shm"), "{}", f.cause);
}

/// doctor's `fabric` check on the stand-in's machine `topo` with `faults`: its JSON,
/// and doctor's exit code.
fn fabric_check(dir: &Path, topo: &str, faults: &str) -> (serde_json::Value, Option<i32>) {
    let env = [("NCCL_BENCH_SIM_FAULT", faults)];
    let o = on_sim(dir, topo, &env, &["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "fabric")
        .cloned()
        .unwrap_or_else(|| panic!("no fabric check: {report}"));
    (check, o.status.code())
}

/// Every GPU of the NVSwitch machine registered: ok. GPU 3 still in progress, as
/// while Fabric Manager is down: the check fails, names the GPU and says what to do,
/// and doctor exits 1. A PCIe machine has no fabric: no finding.
#[test]
fn doctor_fails_a_gpu_that_has_not_registered_with_the_nvlink_fabric() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let (ok, _) = fabric_check(&dir, "nvswitch", "");
    assert_eq!(ok["status"], "ok", "{ok}");
    assert_eq!(
        ok["value"], "every GPU registered (8 of 8, 1 clique)",
        "{ok}"
    );
    let (bad, code) = fabric_check(&dir, "nvswitch", "fabric-incomplete@3");
    assert_eq!(bad["status"], "fail", "{bad}");
    assert_eq!(code, Some(1));
    let value = bad["value"].as_str().unwrap();
    assert!(
        value.starts_with("1 of 8 GPUs not registered with the NVLink fabric: GPU 3 (in progress)"),
        "{value}"
    );
    let fix = bad["fix"].as_str().unwrap();
    assert!(
        fix.contains("nvidia-fabricmanager") && fix.contains("NCCL_NVLS_ENABLE=0"),
        "{fix}"
    );
    let (pcie, _) = fabric_check(&dir, "pcie", "");
    assert_eq!(pcie["status"], "ok", "{pcie}");
    assert!(
        pcie["value"]
            .as_str()
            .unwrap()
            .starts_with("no NVLink fabric to register with"),
        "{pcie}"
    );
}
