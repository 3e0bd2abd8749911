//! Buffer registration (nccl-tests' `-R`), end to end on the simulated GPUs: a config
//! registers its buffers (`register = "symmetric"` or `--register`), the workers
//! allocate them with `ncclMemAlloc` and register them, NCCL 2.27+ runs its symmetric
//! kernels where it can (and logs them), the run reads which kernel ran, the report
//! says what registering is worth and judges no symmetric kernel against figures of
//! unregistered buffers; a library without the calls, or the host backend, is refused
//! before anything runs. Nothing here is a measurement.

use std::collections::HashMap;
use std::path::Path;

use crate::common::sim::{on_sim, sim_dir, sim_sweep};
use crate::common::{report, rows, run_dir, text};

const CONFIGS: &str = r#"
[[config]]
name = "default"

[[config]]
name = "symmetric"
register = "symmetric"

[[config]]
name = "symmetric-p2p-off"
register = "symmetric"
env = { NCCL_P2P_DISABLE = "1" }

[[config]]
name = "local"
register = "local"
"#;

#[test]
fn symmetric_windows_run_nccls_symmetric_kernels_and_the_report_weighs_them() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("register.toml");
    std::fs::write(&config, CONFIGS).unwrap();
    let o = sim_sweep(
        &dir,
        "nvswitch",
        &[],
        &out.path().join("runs"),
        &[
            "--gpus",
            "8",
            "-b",
            "1K",
            "-e",
            "4M",
            "-f",
            "4096",
            "--ceiling-bytes",
            "0",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_dir(&out.path().join("runs"));
    let rows = rows(&run);
    let at = |config: &str, bytes: &str| -> &HashMap<String, String> {
        rows.iter()
            .find(|r| r["config"] == config && r["bytes"] == bytes && r["nranks"] == "8")
            .unwrap_or_else(|| panic!("{config} at {bytes}: {rows:?}"))
    };
    // NCCL's model on 8 NVSwitch GPUs with NVLS: multicast LL for small sizes, then
    // multicast loads and stores.
    let small = at("symmetric", "1024");
    assert_eq!(
        (small["algo"].as_str(), small["proto"].as_str()),
        ("Symmetric", "AllReduce_AGxLLMC_R"),
        "{small:?}"
    );
    let large = at("symmetric", "4194304");
    assert_eq!(large["proto"], "AllReduce_RSxLDMC_AGxSTMC", "{large:?}");
    // Where NCCL cannot (P2P off: no symmetric support) or was not asked (local
    // registration, plain buffers) it runs its usual algorithms, locally registered
    // ones at the plain buffers' time (NCCL's model does not price staging copies).
    for config in ["default", "local", "symmetric-p2p-off"] {
        for bytes in ["1024", "4194304"] {
            let r = at(config, bytes);
            assert!(
                r["status"] == "ok" && !r["algo"].is_empty() && r["algo"] != "Symmetric",
                "{r:?}"
            );
        }
    }
    // The case says NCCL did not use the windows it was given (NCCL does not).
    let off = at("symmetric-p2p-off", "1024");
    assert!(
        off["tuning_note"].starts_with("buffers in symmetric windows, yet NCCL ran "),
        "{off:?}"
    );
    assert_eq!(at("local", "1024")["tuning_note"], "");
    let time = |r: &HashMap<String, String>| r["time_us"].parse::<f64>().unwrap();
    assert_eq!(at("local", "1024")["algo"], at("default", "1024")["algo"]);
    // The symmetric kernel's latency beats the ring's LL at 1 KiB.
    assert!(time(small) * 2.0 < time(at("default", "1024")), "{small:?}");

    // The log says so in 2.28's words (rank 0, TUNING, in the probe group's log).
    let logs = crate::common::logs_text(&run);
    assert!(
        logs.contains("AllReduce [Symmetric]: 1024 Bytes -> Kernel AllReduce_AGxLLMC_R nchannels ")
            && logs.contains(" nthreads 512 nWorks 1"),
        "no symmetric TUNING line"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let registers: Vec<&str> = manifest["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["register"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(registers, ["-", "symmetric", "symmetric", "local"]);

    let md = report(&run);
    assert!(
        md.contains("**Registration finding:** `symmetric` (buffers registered: symmetric windows, ncclCommWindowRegister)")
            && md.contains("nccl-tests -R 2"),
        "{md}"
    );
    assert!(
        md.contains(
            "NCCL ran its symmetric kernel AllReduce_RSxLDMC_AGxSTMC on registered windows"
        ),
        "{md}"
    );
}

/// The CTA policy ZERO (`NCCL_CTA_POLICY=2`, nccl-tests' `-x 2`) with symmetric windows
/// and a CUDA 12.5+ driver: NCCL 2.28+ runs an all-gather on the copy engines. 2.29
/// logs it (`AllGather [Copy Engine]: ...`, read as algo `CE`); 2.28 logs nothing,
/// and the case says so rather than leaving an empty cell unexplained.
#[test]
fn the_cta_policy_zero_puts_all_gather_on_the_copy_engines() {
    let _machine = crate::common::shared();
    let Some(dir) = sim_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("ce.toml");
    std::fs::write(
        &config,
        "[[config]]\nname = \"default\"\n\n[[config]]\nname = \"ce\"\nregister = \"symmetric\"\nenv = { NCCL_CTA_POLICY = \"2\" }\n",
    )
    .unwrap();
    for (version, algo, note) in [
        ("2.29.3", "CE", ""),
        (
            "2.28.9",
            "",
            "NCCL logged no choice for AllGather of 262144 B",
        ),
    ] {
        let runs = out.path().join(version);
        let env = [
            ("NCCL_BENCH_SIM_VERSION", version),
            ("NCCL_BENCH_SIM_DRIVER", "12080"),
        ];
        let args = [
            "--gpus",
            "4",
            "-b",
            "1M",
            "-e",
            "1M",
            "--coll",
            "all_gather",
        ];
        let config_arg = ["--config", config.to_str().unwrap(), "--ceiling-bytes", "0"];
        let o = sim_sweep(
            &dir,
            "nvswitch",
            &env,
            &runs,
            &[&args[..], &config_arg[..]].concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let rows = rows(&run_dir(&runs));
        let at = |config: &str| {
            rows.iter()
                .find(|r| r["config"] == config && r["nranks"] == "4")
                .unwrap_or_else(|| panic!("{config}: {rows:?}"))
        };
        let ce = at("ce");
        assert_eq!(
            (ce["status"].as_str(), ce["algo"].as_str()),
            ("ok", algo),
            "{version}: {ce:?}"
        );
        assert!(ce["tuning_note"].starts_with(note), "{version}: {ce:?}");
        assert_eq!(at("default")["algo"], "Ring", "{version}");
        // The manifest keeps what NCCL said it read, per config.
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run_dir(&runs).join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(
            manifest["nccl_env"]["ce"]["NCCL_CTA_POLICY"], "2",
            "{manifest}"
        );
        assert!(
            manifest["nccl_env"]["default"]["NCCL_CTA_POLICY"].is_null(),
            "{manifest}"
        );
    }
    // NCCL runs alltoall, gather and scatter on the copy engines the same way; 2.29
    // logs each (`AlltoAll [Copy Engine]: ...`, one peer's share), read as `CE`.
    let runs = out.path().join("others");
    let env = [
        ("NCCL_BENCH_SIM_VERSION", "2.29.3"),
        ("NCCL_BENCH_SIM_DRIVER", "12080"),
    ];
    let args = [
        "--gpus",
        "4",
        "-b",
        "1M",
        "-e",
        "1M",
        "--coll",
        "alltoall,gather,scatter",
        "--config",
        config.to_str().unwrap(),
        "--ceiling-bytes",
        "0",
    ];
    let o = sim_sweep(&dir, "nvswitch", &env, &runs, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = rows(&run_dir(&runs));
    for coll in ["alltoall", "gather", "scatter"] {
        let at = |config: &str| {
            rows.iter()
                .find(|r| r["config"] == config && r["nranks"] == "4" && r["collective"] == coll)
                .unwrap_or_else(|| panic!("{coll} {config}: {rows:?}"))
        };
        let ce = at("ce");
        assert_eq!(
            (ce["status"].as_str(), ce["algo"].as_str()),
            ("ok", "CE"),
            "{coll}: {ce:?}"
        );
        assert_eq!(at("default")["algo"], "", "{coll}");
    }
}

/// A sweep that must be refused before it runs: exit 2, and what it says.
fn refused(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = tempfile::tempdir().unwrap();
    let lib = dir.join("libnccl.so.2");
    let mut all = vec![
        "sweep",
        "--plain",
        "--nccl-lib",
        lib.to_str().unwrap(),
        "--out",
    ];
    all.push(out.path().to_str().unwrap());
    all.extend_from_slice(args);
    let o = on_sim(dir, "nvswitch", env, &all).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "a run directory was made"
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn registration_a_release_or_backend_lacks_is_refused_not_downgraded() {
    let Some(dir) = sim_dir() else { return };
    let nccl = ["--backend", "nccl", "--gpus", "2", "-e", "1K"];
    let e = refused(
        &dir,
        &[("NCCL_BENCH_SIM_VERSION", "2.26.6")],
        &[&nccl[..], &["--register", "symmetric"]].concat(),
    );
    assert!(
        e.contains("config 'default': --register symmetric needs ncclCommWindowRegister, which NCCL 2.26.6 does not export (NCCL 2.27 and later have it)")
            && e.contains("nccl-tests would quietly run something else"),
        "{e}"
    );
    let e = refused(
        &dir,
        &[("NCCL_BENCH_SIM_VERSION", "2.18.6")],
        &[&nccl[..], &["--register", "1"]].concat(),
    );
    assert!(
        e.contains(
            "needs ncclMemAlloc, which NCCL 2.18.6 does not export (NCCL 2.19 and later have it)"
        ),
        "{e}"
    );
    let e = refused(
        &dir,
        &[],
        &[
            "--backend",
            "host",
            "--gpus",
            "2",
            "-e",
            "1K",
            "--register",
            "local",
        ],
    );
    assert!(
        e.contains("config 'default' registers its buffers with NCCL (register = local), which the host backend does not have"),
        "{e}"
    );
}
