//! "Is this bandwidth normal?": each config's busbw at the largest size held against
//! the published figure for this platform (`config::expected`: GPU model, GPUs per
//! node, nodes, and the transports NCCL used), with the ratio and a `Standing`; and
//! against the ring's measured link ceiling where the ring should approach it. A
//! platform the table does not know is unknown (`NoFigure`), never guessed. The
//! report says it in words.

use crate::config::expected::{FigureKind, Platform};
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::cell::TransportsCell;

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
    fn model(&self, per_node: u32) -> Result<&str, NoFigure<'static>> {
        if self.host_backend {
            return Err(NoFigure::HostBackend);
        }
        let names: Vec<&str> = self
            .gpu_names
            .iter()
            .take(per_node as usize)
            .map(String::as_str)
            .collect();
        let Some(first) = names.first() else {
            return Err(NoFigure::NoGpuModel);
        };
        if names.iter().any(|n| n != first) {
            return Err(NoFigure::MixedModels(
                names.iter().map(|n| n.to_string()).collect(),
            ));
        }
        Ok(first)
    }
}

/// Why no published figure applies to a case.
#[derive(Debug, Clone, PartialEq)]
pub enum NoFigure<'a> {
    /// The host backend: CPU processes, not GPUs.
    HostBackend,
    /// The run records no GPU model.
    NoGpuModel,
    /// The case's GPUs are of these different models.
    MixedModels(Vec<String>),
    /// The table has no row for `per_node` GPUs of this model on `nodes` nodes.
    UnknownPlatform {
        per_node: u32,
        gpu: String,
        nodes: u32,
    },
    /// NCCL ran its symmetric kernel (`proto`, maybe empty) on registered windows;
    /// the figures are for unregistered buffers.
    Symmetric { proto: String },
    /// The run did not record transports and the platform has these figures.
    TransportsNotRecorded(Vec<&'a Platform>),
    /// None of the platform's figures (`known`) is for the case's `transports` (the
    /// cell as recorded, maybe empty).
    OtherTransports {
        transports: String,
        known: Vec<&'a Platform>,
    },
}

/// A case's busbw against the figure that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The figure holds from a size larger than the case's largest, `bytes`.
    NotComparableYet { bytes: u64 },
    /// Near a figure of NCCL's link model, an upper bound.
    NearModel,
    /// Low against a figure of NCCL's link model.
    BelowModel,
    /// At or above `AS_EXPECTED` of a measured or derived figure.
    AsExpected,
    /// Between `LOW` and `AS_EXPECTED` of it.
    SomewhatLow,
    /// Below `LOW` of it.
    Low,
}

/// The published figure for a case, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement<'a> {
    pub row: &'a Platform,
    pub ratio: f64,
    pub standing: Standing,
    /// The run did not record transports: `row` is the platform's only figure.
    pub unrecorded: bool,
}

/// The rows published for `nranks` GPUs of this run's machine, or why there are
/// none: the same for every config of that GPU count.
pub fn platform_rows<'a>(
    platform: &RunPlatform,
    rows: &'a [Platform],
    nranks: u32,
) -> Result<Vec<&'a Platform>, NoFigure<'a>> {
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
        return Err(NoFigure::UnknownPlatform {
            per_node,
            gpu: gpu.to_string(),
            nodes,
        });
    }
    Ok(candidates)
}

/// The first row that matches the case, judged; or why none applies.
pub fn judge<'a>(
    platform: &RunPlatform,
    rows: &'a [Platform],
    case: &CaseRow,
    busbw_gbps: f64,
) -> Result<Judgement<'a>, NoFigure<'a>> {
    let candidates = platform_rows(platform, rows, case.nranks)?;
    let cell = TransportsCell::parse(&case.transports);
    let used: Vec<&str> = cell.labels().collect();
    let nvls = cell.nvls;
    let unrecorded = cell.is_empty();
    if case.algo == "Symmetric" {
        return Err(NoFigure::Symmetric {
            proto: case.proto.clone(),
        });
    }
    let found = if unrecorded {
        // The run did not record transports (an nccl-tests import without NCCL's
        // log): judged against the platform's only figure, or not at all.
        match candidates.as_slice() {
            [only] => Some(*only),
            _ => return Err(NoFigure::TransportsNotRecorded(candidates)),
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
        return Err(NoFigure::OtherTransports {
            transports: case.transports.clone(),
            known: candidates,
        });
    };
    let ratio = busbw_gbps / row.busbw_gbps;
    let standing = if case.bytes < row.from_bytes {
        Standing::NotComparableYet { bytes: case.bytes }
    } else if row.kind == FigureKind::Model {
        if ratio >= LOW {
            Standing::NearModel
        } else {
            Standing::BelowModel
        }
    } else if ratio >= AS_EXPECTED {
        Standing::AsExpected
    } else if ratio >= LOW {
        Standing::SomewhatLow
    } else {
        Standing::Low
    };
    Ok(Judgement {
        row,
        ratio,
        standing,
        unrecorded,
    })
}

/// A ring's busbw as a share of the link ceiling measured before the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgainstCeiling {
    /// busbw in % of the ceiling.
    pub pct: f64,
    pub reading: CeilingReading,
}

/// What a share of the link ceiling says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeilingReading {
    /// The host backend over TCP loopback.
    HostTcp,
    /// The host backend over shared memory: one core's memcpy.
    HostMemcpy,
    /// SHM or NET: a staged path whose copies the ceiling does not count.
    Staged,
    /// A P2P ring at or above `NEAR_CEILING_PCT`.
    AtCeiling,
    /// A P2P ring below it: the links carry more than this all-reduce gets.
    Low,
}

/// The case against the ring's measured link ceiling, where the run measured one;
/// only a P2P ring should approach it (SHM and NET add copies the ceiling does not
/// count).
pub fn against_ceiling(case: &CaseRow, host_backend: bool) -> Option<AgainstCeiling> {
    let pct = case.ceiling_pct?;
    let cell = TransportsCell::parse(&case.transports);
    let reading = if host_backend {
        if cell.uses("NET") {
            CeilingReading::HostTcp
        } else {
            CeilingReading::HostMemcpy
        }
    } else if !cell.p2p_only() {
        CeilingReading::Staged
    } else if pct >= NEAR_CEILING_PCT {
        CeilingReading::AtCeiling
    } else {
        CeilingReading::Low
    };
    Some(AgainstCeiling { pct, reading })
}

#[cfg(test)]
pub(crate) mod tests;
