//! "Is this bandwidth normal?": each config's busbw at the largest size held against
//! the published figure for this platform (`config::expected`: GPU model, GPUs per
//! node, nodes, and the transports NCCL used), with the source, the ratio and a plain
//! verdict; and against the ring's measured link ceiling where the ring should
//! approach it. A platform the table does not know is said to be unknown, never
//! guessed.

use std::fmt::Write as _;

use anyhow::Result;

use crate::config::expected::{FigureKind, Platform};
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::cell::TransportsCell;
use crate::units::Bytes;

/// At or above this share of the published figure a run is as expected.
const AS_EXPECTED: f64 = 0.9;
/// Below this share it is low; between the two, somewhat low.
const LOW: f64 = 0.75;
/// A P2P ring at or above this share of its slowest link is at the link ceiling
/// (NCCL's ring over NVLink reaches about 95 % of a copy's rate: 370 of ~390 GB/s).
const NEAR_CEILING_PCT: f64 = 80.0;

/// What the run says about its platform.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlatform {
    /// The GPU model of GPUs 0..n (None: no GPU facts, or the host backend).
    pub gpu_names: Vec<String>,
    pub nodes: u32,
    pub host_backend: bool,
}

impl RunPlatform {
    pub fn of(run: &RunData) -> RunPlatform {
        let gpu_names = run
            .manifest
            .gpu
            .as_ref()
            .and_then(|g| g["gpus"].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|g| g["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        RunPlatform {
            gpu_names,
            nodes: run
                .manifest
                .cluster
                .as_ref()
                .map(|c| c.hosts.len().max(1) as u32)
                .unwrap_or(1),
            host_backend: run.manifest.backend.used == "host",
        }
    }

    /// The one GPU model of a case's `nranks` GPUs (per node), or why there is none.
    fn model(&self, per_node: u32) -> Result<&str, String> {
        if self.host_backend {
            return Err("none (host backend: CPU processes, not GPUs)".into());
        }
        let names: Vec<&str> = self
            .gpu_names
            .iter()
            .take(per_node as usize)
            .map(String::as_str)
            .collect();
        let Some(first) = names.first() else {
            return Err("unknown platform: the run records no GPU model".into());
        };
        if names.iter().any(|n| n != first) {
            return Err(format!(
                "none: the GPUs are of different models ({})",
                names.join(", ")
            ));
        }
        Ok(first)
    }
}

/// The published figure for a case, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement<'a> {
    pub row: &'a Platform,
    pub ratio: f64,
    pub verdict: String,
}

/// The rows published for `nranks` GPUs of this run's machine, or why there are
/// none: the same for every config of that GPU count.
pub fn platform_rows<'a>(
    platform: &RunPlatform,
    rows: &'a [Platform],
    nranks: u32,
) -> Result<Vec<&'a Platform>, String> {
    let nodes = platform.nodes;
    let per_node = nranks / nodes.max(1);
    let gpu = platform.model(per_node)?;
    let same_machine = |r: &&Platform| {
        r.gpu.iter().any(|p| p.matches(gpu))
            && r.nodes == nodes
            && r.gpus.map_or(per_node >= 2, |g| g == per_node)
    };
    let candidates: Vec<&Platform> = rows.iter().filter(same_machine).collect();
    if candidates.is_empty() {
        return Err(format!(
            "unknown platform: no published figure for {} x {gpu}{} (add a row with --expected FILE)",
            per_node,
            if nodes > 1 {
                format!(" on {nodes} nodes")
            } else {
                String::new()
            }
        ));
    }
    Ok(candidates)
}

/// The first row that matches the case, judged; or why none applies.
pub fn judge<'a>(
    platform: &RunPlatform,
    rows: &'a [Platform],
    case: &CaseRow,
    busbw_gbps: f64,
) -> Result<Judgement<'a>, String> {
    let candidates = platform_rows(platform, rows, case.nranks)?;
    let cell = TransportsCell::parse(&case.transports);
    let used: Vec<&str> = cell.labels().collect();
    let nvls = cell.nvls;
    let unrecorded = cell.is_empty();
    let found = if unrecorded {
        // The run did not record transports (an nccl-tests import without NCCL's
        // log): judged against the platform's only figure, or not at all.
        match candidates.as_slice() {
            [only] => Some(*only),
            _ => {
                let figures: Vec<String> = candidates
                    .iter()
                    .map(|r| format!("{} GB/s ({})", r.busbw_gbps, r.name))
                    .collect();
                return Err(format!(
                    "transports not recorded (run with NCCL_DEBUG=INFO to tell which applies): {}",
                    figures.join(", ")
                ));
            }
        }
    } else {
        // An NVLS case whose ring never connected (`NVLS` alone) matches the
        // platform's NVLS row.
        candidates.iter().copied().find(|r| {
            r.nvls == nvls
                && used
                    .iter()
                    .all(|t| r.transports.iter().any(|k| t.starts_with(k.as_str())))
        })
    };
    let Some(row) = found else {
        let known: Vec<String> = candidates
            .iter()
            .map(|r| r.transports.join("+") + if r.nvls { " (NVLS)" } else { "" })
            .collect();
        return Err(format!(
            "none for transports {}: the figures for this platform are for {}",
            if case.transports.is_empty() {
                "unknown"
            } else {
                case.transports.as_str()
            },
            known.join(", ")
        ));
    };
    let ratio = busbw_gbps / row.busbw_gbps;
    let verdict = if case.bytes < row.from_bytes {
        format!(
            "not comparable yet: the figure holds from {}, the largest size here is {} (sweep with -e {})",
            Bytes(row.from_bytes),
            Bytes(case.bytes),
            Bytes(row.from_bytes)
        )
    } else if row.kind == FigureKind::Model {
        if ratio >= LOW {
            "near NCCL's link model (an upper bound)".to_string()
        } else {
            format!(
                "low against NCCL's link model (an upper bound): check {}",
                row.check
            )
        }
    } else if ratio >= AS_EXPECTED {
        "as expected".to_string()
    } else if ratio >= LOW {
        format!("somewhat low: check {}", row.check)
    } else {
        format!("low: check {}", row.check)
    };
    let verdict = if unrecorded {
        format!(
            "{verdict} (transports not recorded: {} is this platform's only figure)",
            row.transports.join("+")
        )
    } else {
        verdict
    };
    Ok(Judgement {
        row,
        ratio,
        verdict,
    })
}

/// The verdict against the ring's measured link ceiling, where the ring should
/// approach it (P2P only: SHM and NET add copies the ceiling does not count).
pub fn against_ceiling(case: &CaseRow, host_backend: bool) -> Option<String> {
    let pct = case.ceiling_pct?;
    if host_backend {
        let link = if TransportsCell::parse(&case.transports).uses("NET") {
            "TCP loopback"
        } else {
            "one core's memcpy"
        };
        return Some(format!("{pct:.0} % of {link}"));
    }
    let p2p_only = TransportsCell::parse(&case.transports).p2p_only();
    Some(if !p2p_only {
        format!("{pct:.0} % (a staged path: no verdict)")
    } else if pct >= NEAR_CEILING_PCT {
        format!("{pct:.0} %: at the link ceiling")
    } else {
        format!(
            "{pct:.0} %: low, the links carry more than this all-reduce gets; check NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS settings, other work on the GPUs, GPU clocks"
        )
    })
}

/// The report's section, for each rank count and config.
pub fn markdown(s: &mut String, run: &RunData, rows: &[Platform]) -> Result<()> {
    let platform = RunPlatform::of(run);
    let mut counts: Vec<u32> = run
        .cases
        .iter()
        .map(|c| c.nranks)
        .filter(|&n| n >= 2)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.is_empty() {
        return Ok(());
    }
    writeln!(s, "## Is this bandwidth normal?\n")?;
    let against = if run.manifest.ceilings.is_some() {
        "and against the ring's link ceiling measured before the sweep"
    } else {
        "(this run measured no link ceilings)"
    };
    writeln!(
        s,
        "busbw at the largest size, against the published figure for this platform (configs/expected.toml, or --expected FILE) {against}.\n"
    )?;
    let mut cited: Vec<&Platform> = Vec::new();
    for nranks in counts {
        let here: Vec<&CaseRow> = run.cases.iter().filter(|c| c.nranks == nranks).collect();
        let largest = here.iter().map(|c| c.bytes).max().unwrap_or(0);
        writeln!(s, "### {}\n", run.ranks(nranks))?;
        writeln!(
            s,
            "| config | busbw at {} | published figure | ratio | verdict | against the link ceiling |\n|---|---|---|---|---|---|",
            Bytes(largest)
        )?;
        // Why no figure applies to this GPU count at all: said once, below the table.
        let gap = platform_rows(&platform, rows, nranks).err();
        let mut configs: Vec<&str> = Vec::new();
        for c in &here {
            if !configs.contains(&c.config.as_str()) {
                configs.push(&c.config);
            }
        }
        for config in configs {
            let case = here
                .iter()
                .copied()
                .find(|c| c.config == config && c.bytes == largest);
            let Some((case, busbw)) =
                case.and_then(|c| Some((c, c.busbw_gbps.filter(|_| c.is_ok())?)))
            else {
                writeln!(
                    s,
                    "| {config} | - | | | no ok case at {} | |",
                    Bytes(largest)
                )?;
                continue;
            };
            let ceiling =
                against_ceiling(case, platform.host_backend).unwrap_or_else(|| "-".into());
            if gap.is_some() {
                writeln!(s, "| {config} | {busbw:.2} GB/s | - | | | {ceiling} |")?;
                continue;
            }
            match judge(&platform, rows, case, busbw) {
                Ok(j) => {
                    if !cited.contains(&j.row) {
                        cited.push(j.row);
                    }
                    let number = cited.iter().position(|r| *r == j.row).unwrap_or(0) + 1;
                    writeln!(
                        s,
                        "| {config} | {busbw:.2} GB/s | {} GB/s, {} [{number}] | {:.0} % | {} | {ceiling} |",
                        j.row.busbw_gbps,
                        j.row.name,
                        j.ratio * 100.0,
                        j.verdict
                    )?;
                }
                Err(why) => {
                    writeln!(s, "| {config} | {busbw:.2} GB/s | {why} | | | {ceiling} |")?;
                }
            }
        }
        writeln!(s)?;
        if let Some(why) = gap {
            writeln!(s, "No published figure for {}: {why}.\n", run.ranks(nranks))?;
        }
    }
    for (i, r) in cited.iter().enumerate() {
        let kind = match r.kind {
            FigureKind::Measured => "measured",
            FigureKind::Derived => "derived",
            FigureKind::Model => "NCCL's link model, an upper bound",
        };
        writeln!(
            s,
            "{}. {} ({kind}, from {}): {} <{}>",
            i + 1,
            r.name,
            r.origin,
            r.source,
            r.url
        )?;
    }
    if !cited.is_empty() {
        writeln!(s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
            distributions: Default::default(),
        };
        let mut s = String::new();
        markdown(&mut s, &run, &shipped()).unwrap();
        for n in [2, 4] {
            let line = format!(
                "No published figure for {n} GPUs: unknown platform: no published figure for {n} x NVIDIA H100 80GB HBM3"
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
}
