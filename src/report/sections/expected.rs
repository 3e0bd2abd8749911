//! "Is this bandwidth normal?", as the report says it: per GPU count a table of each
//! config's busbw at the largest size, the published figure `analysis::expected`
//! judged it against with its ratio and verdict, and its share of the link ceiling;
//! why no figure applies, said once below a GPU count's table; and the figures cited,
//! numbered, with their sources.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::expected::{
    against_ceiling, judge, platform_rows, AgainstCeiling, CeilingReading, Judgement, NoFigure,
    RunPlatform, Standing,
};
use crate::config::expected::{FigureKind, Platform};
use crate::export::reader::{CaseRow, RunData};
use crate::units::Bytes;

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
            let ceiling = against_ceiling(case, platform.host_backend)
                .map_or_else(|| "-".into(), |c| ceiling_words(&c));
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
                        verdict_words(&j)
                    )?;
                }
                Err(why) => {
                    let why = no_figure_words(&why);
                    writeln!(s, "| {config} | {busbw:.2} GB/s | {why} | | | {ceiling} |")?;
                }
            }
        }
        writeln!(s)?;
        if let Some(why) = gap {
            writeln!(s, "{}: {}.\n", run.ranks(nranks), no_figure_words(&why))?;
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

/// Why no published figure applies, as the table's cell and the line below it say.
fn no_figure_words(why: &NoFigure) -> String {
    match why {
        NoFigure::HostBackend => "none (host backend: CPU processes, not GPUs)".into(),
        NoFigure::NoGpuModel => "unknown platform: the run records no GPU model".into(),
        NoFigure::MixedModels(names) => format!(
            "none: the GPUs are of different models ({})",
            names.join(", ")
        ),
        NoFigure::UnknownPlatform {
            per_node,
            gpu,
            nodes,
        } => format!(
            "unknown platform: no published figure for {} x {gpu}{} (add a row with --expected FILE)",
            per_node,
            if *nodes > 1 {
                format!(" on {nodes} nodes")
            } else {
                String::new()
            }
        ),
        NoFigure::Symmetric { proto } => format!(
            "NCCL ran its symmetric kernel{} on registered windows: the published figures are for unregistered buffers (compare with a config that does not register)",
            if proto.is_empty() { String::new() } else { format!(" {proto}") }
        ),
        NoFigure::TransportsNotRecorded(candidates) => {
            let figures: Vec<String> = candidates
                .iter()
                .map(|r| format!("{} GB/s ({})", r.busbw_gbps, r.name))
                .collect();
            format!(
                "transports not recorded (run with NCCL_DEBUG=INFO to tell which applies): {}",
                figures.join(", ")
            )
        }
        NoFigure::OtherTransports { transports, known } => {
            let known: Vec<String> = known
                .iter()
                .map(|r| r.transports.join("+") + if r.nvls { " (NVLS)" } else { "" })
                .collect();
            format!(
                "none for transports {}: the figures for this platform are for {}",
                if transports.is_empty() {
                    "unknown"
                } else {
                    transports.as_str()
                },
                known.join(", ")
            )
        }
    }
}

/// The verdict cell: what the figure says of the case, and what to check.
fn verdict_words(j: &Judgement) -> String {
    let row = j.row;
    let verdict = match j.standing {
        Standing::NotComparableYet { bytes } => format!(
            "not comparable yet: the figure holds from {}, the largest size here is {} (sweep with -e {})",
            Bytes(row.from_bytes),
            Bytes(bytes),
            Bytes(row.from_bytes)
        ),
        Standing::NearModel => "near NCCL's link model (an upper bound)".to_string(),
        Standing::BelowModel => format!(
            "low against NCCL's link model (an upper bound): check {}",
            row.check
        ),
        Standing::AsExpected => "as expected".to_string(),
        Standing::SomewhatLow => format!("somewhat low: check {}", row.check),
        Standing::Low => format!("low: check {}", row.check),
    };
    if j.unrecorded {
        format!(
            "{verdict} (transports not recorded: {} is this platform's only figure)",
            row.transports.join("+")
        )
    } else {
        verdict
    }
}

/// The link-ceiling cell: the share, and what it says where a ring should approach it.
fn ceiling_words(c: &AgainstCeiling) -> String {
    let pct = c.pct;
    match c.reading {
        CeilingReading::HostTcp => format!("{pct:.0} % of TCP loopback"),
        CeilingReading::HostMemcpy => format!("{pct:.0} % of one core's memcpy"),
        CeilingReading::Staged => format!("{pct:.0} % (a staged path: no verdict)"),
        CeilingReading::AtCeiling => format!("{pct:.0} %: at the link ceiling"),
        CeilingReading::Low => format!(
            "{pct:.0} %: low, the links carry more than this all-reduce gets; check NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS settings, other work on the GPUs, GPU clocks"
        ),
    }
}

/// The section "Is this bandwidth normal?" in words: each verdict and what to check,
/// why no figure applies (said once per GPU count where the platform is unknown), and
/// the share of the link ceiling.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::expected::tests::{case, gpus, GB};
    use crate::config::expected::shipped;

    /// The verdict cell of a case judged, or the words of why no figure applies.
    fn said(
        platform: &RunPlatform,
        rows: &[Platform],
        case: &CaseRow,
        busbw: f64,
    ) -> Result<String, String> {
        judge(platform, rows, case, busbw)
            .map(|j| verdict_words(&j))
            .map_err(|e| no_figure_words(&e))
    }

    #[test]
    fn each_verdict_says_what_to_check() {
        let rows = shipped();
        let h100 = gpus("NVIDIA H100 80GB HBM3", 8);
        let at = |busbw: f64, bytes: u64| {
            said(&h100, &rows, &case(8, bytes, "P2P/CUMEM:100%"), busbw).unwrap()
        };
        assert_eq!(at(360.0, 8 * GB), "as expected");
        assert!(at(300.0, 8 * GB).starts_with("somewhat low: check nvidia-smi nvlink"));
        let low = at(200.0, 8 * GB);
        assert!(
            low.starts_with("low: check nvidia-smi nvlink --status"),
            "{low:?}"
        );
        let small = at(200.0, 256 << 20);
        assert!(
            small.starts_with("not comparable yet: the figure holds from 2 GiB, the largest size here is 256 MiB (sweep with -e 2 GiB)"),
            "{small:?}"
        );
        // A model row is an upper bound: far below it is "low against NCCL's link model".
        let l40s = gpus("NVIDIA L40S", 4);
        let j = said(&l40s, &rows, &case(4, GB, "SHM"), 10.0).unwrap();
        assert!(j.starts_with("low against NCCL's link model"), "{j:?}");
        let j = said(&l40s, &rows, &case(4, GB, "SHM"), 20.0).unwrap();
        assert_eq!(j, "near NCCL's link model (an upper bound)");
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
        let e = said(
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
        let e = said(&gpus("Radeon Pro", 8), &rows, &case(8, GB, "P2P"), 1.0).unwrap_err();
        assert!(e.starts_with("unknown platform"), "{e}");
        let e = said(
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
        assert!(said(&mixed, &rows, &case(8, GB, "P2P"), 1.0)
            .unwrap_err()
            .contains("different models"));
        let host = RunPlatform {
            gpu_names: Vec::new(),
            nodes: 1,
            host_backend: true,
        };
        assert_eq!(
            said(&host, &rows, &case(2, GB, "SHM"), 1.0).unwrap_err(),
            "none (host backend: CPU processes, not GPUs)"
        );
    }

    #[test]
    fn without_transports_the_verdict_says_which_figure_was_used() {
        let rows = shipped();
        let a100 = gpus("NVIDIA A100-SXM4-80GB", 8);
        let j = said(&a100, &rows, &case(8, 8 * GB, ""), 150.0).unwrap();
        assert!(
            j.starts_with("low: check ")
                && j.ends_with("(transports not recorded: P2P is this platform's only figure)"),
            "{j:?}"
        );
        let e = said(
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
        let e = said(&h100, &rows, &sym, 400.0).unwrap_err();
        assert!(
            e.starts_with(
                "NCCL ran its symmetric kernel AllReduce_RSxLDMC_AGxSTMC on registered windows"
            ) && e.contains("compare with a config that does not register"),
            "{e}"
        );
        // The same case of a ring is judged.
        sym.algo = "Ring".into();
        sym.transports = "P2P/CUMEM:100%".into();
        assert!(said(&h100, &rows, &sym, 400.0).is_ok());
    }

    #[test]
    fn the_share_of_the_ceiling_reads_with_its_verdict() {
        let words =
            |case: &CaseRow, host: bool| against_ceiling(case, host).map(|c| ceiling_words(&c));
        let with = |pct: f64, t: &str| {
            words(
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
        assert_eq!(words(&case(2, GB, "P2P"), false), None);
        let host = CaseRow {
            ceiling_pct: Some(31.6),
            ..case(2, GB, "NET/Socket")
        };
        assert_eq!(words(&host, true).unwrap(), "32 % of TCP loopback");
    }
}
