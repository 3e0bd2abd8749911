//! Judging cases against the published figures: platforms found by GPU name, count
//! and transports, unknown ones said once, the report's table.

use super::*;
use crate::config::expected::{merged, parse, shipped};

fn case(nranks: u32, bytes: u64, transports: &str) -> CaseRow {
    CaseRow {
        config: "default".into(),
        nranks,
        bytes,
        status: "ok".into(),
        transports: transports.into(),
        ..CaseRow::default()
    }
}

fn gpus(name: &str, n: usize) -> RunPlatform {
    RunPlatform {
        gpu_names: vec![name.to_string(); n],
        nodes: 1,
        host_backend: false,
    }
}

const GB: u64 = 1 << 30;

#[test]
fn each_shipped_platform_is_found_from_its_gpu_name_count_and_transports() {
    let rows = shipped();
    let cases = [
        (
            "NVIDIA H100 80GB HBM3",
            8,
            1,
            "P2P/CUMEM:100%",
            "8 x H100 SXM, ring",
        ),
        (
            "NVIDIA H100 80GB HBM3",
            8,
            1,
            "NVLS P2P/CUMEM",
            "8 x H100 SXM, NVLS",
        ),
        ("NVIDIA H200", 8, 1, "P2P/IPC", "8 x H200, ring"),
        ("NVIDIA H200", 8, 1, "NVLS", "8 x H200, NVLS"),
        ("NVIDIA A100-SXM4-80GB", 8, 1, "P2P/IPC", "8 x A100 SXM"),
        ("NVIDIA B200", 8, 1, "P2P/CUMEM", "8 x B200, ring"),
        ("NVIDIA B200", 8, 1, "NVLS P2P/CUMEM", "8 x B200, NVLS"),
        (
            "NVIDIA GeForce RTX 5090",
            8,
            1,
            "P2P/CUMEM",
            "8 x RTX 5090, PCIe Gen5",
        ),
        (
            "NVIDIA GeForce RTX 5090",
            4,
            1,
            "SHM",
            "PCIe Gen5 x16 (NCCL's link model)",
        ),
        (
            "NVIDIA H100 PCIe",
            2,
            1,
            "P2P",
            "PCIe Gen5 x16 (NCCL's link model)",
        ),
        (
            "NVIDIA L40S",
            4,
            1,
            "SHM:100%",
            "PCIe Gen4 x16 (NCCL's link model)",
        ),
        (
            "NVIDIA A100-PCIE-40GB",
            2,
            1,
            "P2P",
            "PCIe Gen4 x16 (NCCL's link model)",
        ),
        (
            "NVIDIA A100-SXM4-40GB",
            16,
            2,
            "NET/IB:50% P2P/IPC:50%",
            "2 nodes x 8 A100 SXM, 8 x HDR 200G InfiniBand",
        ),
        (
            "NVIDIA H100 80GB HBM3",
            16,
            2,
            "NET/IB P2P/CUMEM",
            "2 nodes x 8 H100 SXM, 8 x NDR 400G InfiniBand",
        ),
    ];
    for (name, nranks, nodes, transports, expected) in cases {
        let mut p = gpus(name, 8);
        p.nodes = nodes;
        let j = judge(&p, &rows, &case(nranks, 8 * GB, transports), 100.0)
            .unwrap_or_else(|e| panic!("{name} x {nranks} {transports}: {e}"));
        assert_eq!(j.row.name, expected, "{name} x {nranks} {transports}");
    }
}

#[test]
fn the_verdict_follows_the_ratio_and_the_size_the_figure_needs() {
    let rows = shipped();
    let h100 = gpus("NVIDIA H100 80GB HBM3", 8);
    let at = |busbw: f64, bytes: u64| {
        judge(&h100, &rows, &case(8, bytes, "P2P/CUMEM:100%"), busbw).unwrap()
    };
    assert_eq!(at(360.0, 8 * GB).verdict, "as expected");
    assert!((at(360.0, 8 * GB).ratio - 360.0 / 370.0).abs() < 1e-12);
    assert!(at(300.0, 8 * GB)
        .verdict
        .starts_with("somewhat low: check nvidia-smi nvlink"));
    let low = at(200.0, 8 * GB);
    assert!(
        low.verdict
            .starts_with("low: check nvidia-smi nvlink --status"),
        "{low:?}"
    );
    let small = at(200.0, 256 << 20);
    assert!(
        small.verdict.starts_with("not comparable yet: the figure holds from 2 GiB, the largest size here is 256 MiB (sweep with -e 2 GiB)"),
        "{small:?}"
    );
    // A model row is an upper bound: far below it is "low against NCCL's link model".
    let l40s = gpus("NVIDIA L40S", 4);
    let j = judge(&l40s, &rows, &case(4, GB, "SHM"), 10.0).unwrap();
    assert!(
        j.verdict.starts_with("low against NCCL's link model"),
        "{j:?}"
    );
    let j = judge(&l40s, &rows, &case(4, GB, "SHM"), 20.0).unwrap();
    assert_eq!(j.verdict, "near NCCL's link model (an upper bound)");
}

/// A platform without a published figure is said once per GPU count, below its
/// table, not in every config's row.
#[test]
fn an_unknown_platform_is_said_once_per_gpu_count() {
    let mut manifest = crate::export::reader::ManifestHead::default();
    manifest.backend.used = "nccl".into();
    let gpu = serde_json::json!({"name": "NVIDIA H100 80GB HBM3"});
    manifest.gpu = Some(serde_json::json!({ "gpus": vec![gpu; 4] }));
    let mut cases = Vec::new();
    for config in ["default", "shm-off", "p2p-off"] {
        for n in [2, 4] {
            cases.push(CaseRow {
                config: config.into(),
                busbw_gbps: Some(100.0),
                ..case(n, GB, "P2P")
            });
        }
    }
    let run = RunData {
        dir: "run".into(),
        manifest,
        cases,
    };
    let mut s = String::new();
    markdown(&mut s, &run, &shipped()).unwrap();
    for n in [2, 4] {
        let line = format!(
            "{n} GPUs: unknown platform: no published figure for {n} x NVIDIA H100 80GB HBM3"
        );
        assert_eq!(s.matches(&line).count(), 1, "{s}");
    }
    assert_eq!(s.matches("unknown platform").count(), 2, "{s}");
    assert!(s.contains("| shm-off | 100.00 GB/s | - | | | - |"), "{s}");
}

#[test]
fn unknown_platforms_and_transports_are_said_not_guessed() {
    let rows = shipped();
    let e = judge(
        &gpus("NVIDIA H100 80GB HBM3", 8),
        &rows,
        &case(4, GB, "P2P"),
        1.0,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "unknown platform: no published figure for 4 x NVIDIA H100 80GB HBM3 (add a row with --expected FILE)"
    );
    let e = judge(&gpus("Radeon Pro", 8), &rows, &case(8, GB, "P2P"), 1.0).unwrap_err();
    assert!(e.starts_with("unknown platform"), "{e}");
    let e = judge(
        &gpus("NVIDIA H100 80GB HBM3", 8),
        &rows,
        &case(8, GB, "SHM:100%"),
        1.0,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "none for transports SHM:100%: the figures for this platform are for NVLS+P2P (NVLS), P2P"
    );
    let mut mixed = gpus("NVIDIA H100 80GB HBM3", 8);
    mixed.gpu_names[3] = "NVIDIA H100 PCIe".into();
    assert!(judge(&mixed, &rows, &case(8, GB, "P2P"), 1.0)
        .unwrap_err()
        .contains("different models"));
    let host = RunPlatform {
        gpu_names: Vec::new(),
        nodes: 1,
        host_backend: true,
    };
    assert_eq!(
        judge(&host, &rows, &case(2, GB, "SHM"), 1.0).unwrap_err(),
        "none (host backend: CPU processes, not GPUs)"
    );
}

#[test]
fn without_transports_only_a_platforms_single_figure_is_used() {
    let rows = shipped();
    let a100 = gpus("NVIDIA A100-SXM4-80GB", 8);
    let j = judge(&a100, &rows, &case(8, 8 * GB, ""), 150.0).unwrap();
    assert_eq!(j.row.name, "8 x A100 SXM");
    assert!(
        j.verdict.starts_with("low: check ")
            && j.verdict
                .ends_with("(transports not recorded: P2P is this platform's only figure)"),
        "{j:?}"
    );
    let e = judge(
        &gpus("NVIDIA H100 80GB HBM3", 8),
        &rows,
        &case(8, 8 * GB, ""),
        1.0,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "transports not recorded (run with NCCL_DEBUG=INFO to tell which applies): 480 GB/s (8 x H100 SXM, NVLS), 370 GB/s (8 x H100 SXM, ring)"
    );
}

#[test]
fn a_symmetric_kernel_is_not_judged_against_figures_of_unregistered_buffers() {
    let rows = shipped();
    let h100 = gpus("NVIDIA H100 80GB HBM3", 8);
    let mut sym = case(8, 8 * GB, "");
    sym.algo = "Symmetric".into();
    sym.proto = "AllReduce_RSxLDMC_AGxSTMC".into();
    let e = judge(&h100, &rows, &sym, 400.0).unwrap_err();
    assert!(
        e.starts_with(
            "NCCL ran its symmetric kernel AllReduce_RSxLDMC_AGxSTMC on registered windows"
        ) && e.contains("compare with a config that does not register"),
        "{e}"
    );
    // The same case of a ring is judged.
    sym.algo = "Ring".into();
    sym.transports = "P2P/CUMEM:100%".into();
    assert!(judge(&h100, &rows, &sym, 400.0).is_ok());
}

#[test]
fn a_users_row_overrides_the_shipped_one() {
    let mine = parse(
        "[[platform]]\nname = \"8 x H100 SXM, ring\"\ngpu = [\"H100 HBM3\"]\ngpus = 8\ntransports = [\"P2P\"]\nbusbw_gbps = 300\nkind = \"measured\"\nsource = \"our cluster, 2026-11\"\nurl = \"https://wiki.example/nccl\"\ncheck = \"our runbook\"\n",
        "ours.toml",
    )
    .unwrap();
    let rows = merged(&[mine]);
    let j = judge(
        &gpus("NVIDIA H100 80GB HBM3", 8),
        &rows,
        &case(8, 8 * GB, "P2P"),
        290.0,
    )
    .unwrap();
    assert_eq!(
        (j.row.busbw_gbps, j.row.origin.as_str()),
        (300.0, "ours.toml")
    );
    assert_eq!(j.verdict, "as expected");
}

#[test]
fn against_the_ceiling_only_a_p2p_ring_gets_a_verdict() {
    let with = |pct: f64, t: &str| {
        against_ceiling(
            &CaseRow {
                ceiling_pct: Some(pct),
                ..case(2, GB, t)
            },
            false,
        )
    };
    assert_eq!(
        with(97.0, "P2P/CUMEM:100%").unwrap(),
        "97 %: at the link ceiling"
    );
    assert!(with(70.0, "P2P/CUMEM:100%")
        .unwrap()
        .starts_with("70 %: low"));
    assert_eq!(
        with(45.0, "SHM").unwrap(),
        "45 % (a staged path: no verdict)"
    );
    assert_eq!(against_ceiling(&case(2, GB, "P2P"), false), None);
    let host = CaseRow {
        ceiling_pct: Some(31.6),
        ..case(2, GB, "NET/Socket")
    };
    assert_eq!(
        against_ceiling(&host, true).unwrap(),
        "32 % of TCP loopback"
    );
}
