//! "Keep SHM enabled?" answered from a run, as data: find the baseline config and
//! the one that disables SHM, see whether SHM was on the baseline's data path at all
//! (the transports NCCL logged), whether it failed (ENOSPC and friends), and what
//! disabling it costs, from the pair's decision (`analysis::compare`, one family
//! over every size and rank count). `report::verdict` says it in words.

use std::collections::BTreeSet;

use serde::Serialize;

pub mod each;
pub mod job;

use super::compare::{compare, CompareOptions, CompareReport, Side};
use crate::config::transport::env_truthy;
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::cell::TransportsCell;
use crate::nccl::log::FailureKind;
use crate::nccl::shm::failed_need;
pub use crate::nccl::shm::ShmNeed;
use crate::stats::change::{Case, Change};

/// The answer, with the evidence that supports it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// The run cannot answer (no SHM-disabled config, no baseline...).
    CannotTell { why: Unanswerable },
    /// SHM failed in the baseline: fix /dev/shm rather than disabling SHM.
    ShmFails {
        error: String,
        shm_total_bytes: Option<u64>,
        /// The /dev/shm the failed case needs, and how it was sized.
        need: Option<ShmNeed>,
        /// What the SHM-disabled config measured instead: (bytes, busbw GB/s) at its
        /// largest ok size.
        disabled_busbw: Option<(u64, f64)>,
    },
    /// SHM failed in the baseline because one rank kept its buffers in cuMem host
    /// memory and another in /dev/shm (NCCL 2.26.3+, a probe that differs between
    /// ranks): `NCCL_CUMEM_HOST_ENABLE=0` on every rank, neither /dev/shm's size nor
    /// disabling SHM.
    CumemMismatch { error: String },
    /// The baseline never used SHM: disabling it does not change the data path.
    NotOnDataPath {
        carried_by: Vec<String>,
        difference: Difference,
    },
    /// SHM worked: what disabling it does, from the pair's decision (`shm_seen`:
    /// NCCL's logs showed SHM on the baseline's data path; false: they named no
    /// transport).
    Measured {
        difference: Difference,
        shm_seen: bool,
    },
}

/// Why a run cannot answer the SHM question.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Unanswerable {
    /// The run has no config of the baseline's name.
    NoBaseline { baseline: String },
    /// Every case of the baseline ran on one rank: one GPU has no peer, so no
    /// transport carries data and disabling SHM cannot matter.
    OneRank { baseline: String },
    /// No config of the run sets `NCCL_SHM_DISABLE=1`.
    NoShmOff,
    /// Comparing the baseline with the config that disables SHM failed: the
    /// error's own text, its chain of causes included.
    Compare { error: String },
}

impl Verdict {
    /// SHM worked with the baseline and the answer rests on comparing times: a job's
    /// time can then decide it too.
    pub fn compares_times(&self) -> bool {
        matches!(self, Verdict::Measured { .. })
    }

    /// What disabling SHM does, where the times were compared: slower (keep SHM),
    /// within (no measurable cost), faster, or not settled.
    pub fn change(&self) -> Option<Change> {
        match self {
            Verdict::Measured { difference, .. } => Some(difference.change()),
            _ => None,
        }
    }
}

/// What disabling SHM did, across the matched cases.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// The baseline config against the one that disables SHM, every case one family.
    pub pair: CompareReport,
    /// What carried the traffic with SHM disabled, from that config's NCCL logs
    /// (`NET/IB`, `NET/Socket`, ...); empty where they named none.
    pub instead: Vec<String>,
}

/// One case of the pair, named by where it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct At {
    pub nranks: u32,
    pub bytes: u64,
    pub case: Case,
}

impl Difference {
    /// Slower where any case is slower or failed only with SHM disabled, within
    /// where every case is, faster where some is and the rest within.
    pub fn change(&self) -> Change {
        self.pair.decision.overall()
    }

    /// The two cases that matter at the largest rank count: the largest size
    /// (bandwidth) and the smallest (latency).
    pub fn headline(&self) -> Option<(At, At)> {
        let rows = &self.pair.rows;
        let nranks = rows.iter().map(|r| r.nranks).max()?;
        let mine = rows.iter().filter(|r| r.nranks == nranks);
        let at = |r: &super::compare::PairRow| At {
            nranks,
            bytes: r.bytes,
            case: r.case,
        };
        let large = mine.clone().max_by_key(|r| r.bytes).map(at)?;
        let small = mine.min_by_key(|r| r.bytes).map(at)?;
        Some((large, small))
    }
}

/// The config that disables SHM and nothing else if there is one, else any that
/// disables SHM without disabling P2P (which changes more than SHM).
pub fn shm_off_config(run: &RunData) -> Option<String> {
    let disables = |env: &std::collections::BTreeMap<String, String>| {
        env.get("NCCL_SHM_DISABLE").is_some_and(|v| env_truthy(v))
    };
    let configs = &run.manifest.configs;
    configs
        .iter()
        .find(|c| disables(&c.env) && c.env.len() == 1)
        .or_else(|| {
            configs
                .iter()
                .find(|c| disables(&c.env) && !c.env.contains_key("NCCL_P2P_DISABLE"))
        })
        .map(|c| c.name.clone())
}

fn rows_of<'a>(run: &'a RunData, config: &str) -> Vec<&'a CaseRow> {
    run.cases.iter().filter(|c| c.config == config).collect()
}

/// Transport labels the config's cases used (`P2P/CUMEM:100%` -> `P2P/CUMEM`).
pub fn transports_used(rows: &[&CaseRow]) -> Vec<String> {
    let mut set = BTreeSet::new();
    for r in rows {
        let cell = TransportsCell::parse(&r.transports);
        if cell.nvls {
            set.insert(crate::nccl::cell::NVLS.to_string());
        }
        set.extend(cell.labels().map(str::to_string));
    }
    set.into_iter().collect()
}

/// The failed case's /dev/shm need per node (`nccl::shm::failed_need`), over the ranks
/// of one node and the config's variables: the doctor reads the machine's, this the
/// config's.
fn shm_need(run: &RunData, failed: &CaseRow) -> Option<ShmNeed> {
    // /dev/shm is per node: the ranks of one node of a cluster run.
    let nodes = run
        .manifest
        .cluster
        .as_ref()
        .map_or(1, |c| c.hosts.len().max(1));
    let ranks = (failed.nranks as usize).div_ceil(nodes);
    let env = run
        .manifest
        .configs
        .iter()
        .find(|c| c.name == failed.config)
        .map(|c| c.env.clone())
        .unwrap_or_default();
    failed_need(&failed.error, failed.backend == "host", ranks, |var| {
        env.get(var)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
    })
}

fn is_shm_error(error: &str) -> bool {
    crate::nccl::shm::is_dev_shm_exhaustion(error)
}

/// The run without its one-rank cases: one GPU has no peer, so no transport carries
/// anything and SHM cannot matter; their differences are noise the verdict must not
/// read as a cost. Forced choices NCCL refused (`unsupported`) are no evidence either.
fn multi_rank(run: &RunData) -> RunData {
    RunData {
        dir: run.dir.clone(),
        manifest: run.manifest.clone(),
        cases: run
            .cases
            .iter()
            .filter(|c| c.nranks > 1 && !c.is_unsupported())
            .cloned()
            .collect(),
    }
}

pub fn decide(run: &RunData, baseline: &str, options: CompareOptions) -> Verdict {
    if rows_of(run, baseline).is_empty() {
        return Verdict::CannotTell {
            why: Unanswerable::NoBaseline {
                baseline: baseline.to_string(),
            },
        };
    }
    let run = &multi_rank(run);
    let base_rows = rows_of(run, baseline);
    if base_rows.is_empty() {
        return Verdict::CannotTell {
            why: Unanswerable::OneRank {
                baseline: baseline.to_string(),
            },
        };
    }
    let Some(off) = shm_off_config(run) else {
        return Verdict::CannotTell {
            why: Unanswerable::NoShmOff,
        };
    };
    // The failed case of the most ranks: the one that needs the most of /dev/shm.
    if let Some(failed) = base_rows
        .iter()
        .filter(|r| !r.is_ok() && is_shm_error(&r.error))
        .max_by_key(|r| r.nranks)
    {
        if crate::nccl::log::failure_kind(&failed.error) == Some(FailureKind::ShmCumemMismatch) {
            return Verdict::CumemMismatch {
                error: failed.error.clone(),
            };
        }
        let disabled_busbw = rows_of(run, &off)
            .into_iter()
            .filter(|r| r.is_ok() && r.nranks == failed.nranks)
            .filter_map(|r| r.busbw_gbps.map(|b| (r.bytes, b)))
            .max_by_key(|(bytes, _)| *bytes);
        return Verdict::ShmFails {
            error: failed.error.clone(),
            shm_total_bytes: run.manifest.host.shm_total_bytes,
            need: shm_need(run, failed),
            disabled_busbw,
        };
    }
    let pair = match compare(
        &Side::config(run, baseline),
        &Side::config(run, &off),
        options,
    ) {
        Ok(r) => r,
        Err(e) => {
            return Verdict::CannotTell {
                why: Unanswerable::Compare {
                    error: format!("{e:#}"),
                },
            }
        }
    };
    let difference = Difference {
        pair,
        instead: transports_used(&rows_of(run, &off)),
    };
    let used = transports_used(&base_rows);
    if !used.is_empty() && !used.iter().any(|t| t == "SHM") {
        return Verdict::NotOnDataPath {
            carried_by: used,
            difference,
        };
    }
    Verdict::Measured {
        difference,
        shm_seen: !used.is_empty(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
