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
    if case.algo == "Symmetric" {
        return Err(format!(
            "NCCL ran its symmetric kernel{} on registered windows: the published figures are for unregistered buffers (compare with a config that does not register)",
            if case.proto.is_empty() { String::new() } else { format!(" {}", case.proto) }
        ));
    }
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
            writeln!(s, "{}: {why}.\n", run.ranks(nranks))?;
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
mod tests;
