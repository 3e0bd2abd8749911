//! Judging cases against the published figures: platforms found by GPU name, count
//! and transports, verdicts by the ratio and the size, and against the link ceiling.
//! `case` and `gpus` are also the inputs of the report section's tests.

use super::*;
use crate::config::expected::{merged, parse, shipped};

pub(crate) fn case(nranks: u32, bytes: u64, transports: &str) -> CaseRow {
    CaseRow {
        config: "default".into(),
        nranks,
        bytes,
        status: "ok".into(),
        transports: transports.into(),
        ..CaseRow::default()
    }
}

pub(crate) fn gpus(name: &str, n: usize) -> RunPlatform {
    RunPlatform {
        gpu_names: vec![name.to_string(); n],
        nodes: 1,
        host_backend: false,
    }
}

pub(crate) const GB: u64 = 1 << 30;

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
            .unwrap_or_else(|e| panic!("{name} x {nranks} {transports}: {e:?}"));
        assert_eq!(j.row.name, expected, "{name} x {nranks} {transports}");
    }
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
    assert_eq!(j.standing, Standing::AsExpected);
}

#[test]
fn the_verdict_follows_the_ratio_and_the_size_the_figure_needs() {
    let rows = shipped();
    let h100 = gpus("NVIDIA H100 80GB HBM3", 8);
    let at = |busbw: f64, bytes: u64| {
        judge(&h100, &rows, &case(8, bytes, "P2P/CUMEM:100%"), busbw).unwrap()
    };
    assert_eq!(at(360.0, 8 * GB).standing, Standing::AsExpected);
    assert!((at(360.0, 8 * GB).ratio - 360.0 / 370.0).abs() < 1e-12);
    assert_eq!(at(300.0, 8 * GB).standing, Standing::SomewhatLow);
    assert_eq!(at(200.0, 8 * GB).standing, Standing::Low);
    assert_eq!(
        at(200.0, 256 << 20).standing,
        Standing::NotComparableYet { bytes: 256 << 20 }
    );
    // A model row is an upper bound: far below it is low against the model.
    let l40s = gpus("NVIDIA L40S", 4);
    let j = judge(&l40s, &rows, &case(4, GB, "SHM"), 10.0).unwrap();
    assert_eq!(j.standing, Standing::BelowModel);
    let j = judge(&l40s, &rows, &case(4, GB, "SHM"), 20.0).unwrap();
    assert_eq!(j.standing, Standing::NearModel);
}

#[test]
fn without_transports_only_a_platforms_single_figure_is_used() {
    let rows = shipped();
    let a100 = gpus("NVIDIA A100-SXM4-80GB", 8);
    let j = judge(&a100, &rows, &case(8, 8 * GB, ""), 150.0).unwrap();
    assert_eq!(j.row.name, "8 x A100 SXM");
    assert!(j.unrecorded, "{j:?}");
    let h100 = gpus("NVIDIA H100 80GB HBM3", 8);
    let e = judge(&h100, &rows, &case(8, 8 * GB, ""), 1.0).unwrap_err();
    assert!(
        matches!(&e, NoFigure::TransportsNotRecorded(rows) if rows.len() == 2),
        "{e:?}"
    );
}

#[test]
fn against_the_ceiling_only_a_p2p_ring_gets_a_verdict() {
    let reading = |pct: f64, t: &str, host: bool| {
        let case = CaseRow {
            ceiling_pct: Some(pct),
            ..case(2, GB, t)
        };
        against_ceiling(&case, host).map(|c| c.reading)
    };
    assert_eq!(
        reading(97.0, "P2P/CUMEM:100%", false),
        Some(CeilingReading::AtCeiling)
    );
    assert_eq!(
        reading(70.0, "P2P/CUMEM:100%", false),
        Some(CeilingReading::Low)
    );
    assert_eq!(reading(45.0, "SHM", false), Some(CeilingReading::Staged));
    assert_eq!(
        reading(31.6, "NET/Socket", true),
        Some(CeilingReading::HostTcp)
    );
    assert_eq!(against_ceiling(&case(2, GB, "P2P"), false), None);
}
