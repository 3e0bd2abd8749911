//! "Keep SHM enabled?" answered from a run, as rules in code: find the baseline
//! config and the one that disables SHM, see whether SHM was on the baseline's data
//! path at all (the transports NCCL logged), whether it failed (ENOSPC and friends),
//! and what disabling it measurably cost at the sizes where it matters.

use std::collections::BTreeSet;

use serde::Serialize;

pub mod each;
pub mod job;

use super::compare::{compare, CompareOptions, CompareReport, Outcome, PairRow, Side};
use crate::config::transport::env_truthy;
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::cell::TransportsCell;
use crate::nccl::log::FailureKind;
use crate::nccl::shm::{assumed_channels, node_need, shm_size_gib, DEFAULT_SHM_SEGMENT_BYTES};

/// The answer, with the evidence that supports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// The run cannot answer (no SHM-disabled config, no baseline...).
    CannotTell { why: String },
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
    /// memory and another in /dev/shm (NCCL 2.26.3+, a probe that differs between ranks):
    /// `NCCL_CUMEM_HOST_ENABLE=0` on every rank, neither /dev/shm's size nor disabling
    /// SHM.
    CumemMismatch { error: String },
    /// The baseline never used SHM: disabling it does not change the data path.
    NotOnDataPath {
        carried_by: Vec<String>,
        difference: Difference,
    },
    /// Disabling SHM measurably costs this much: keep it. `shm_seen`: NCCL's logs
    /// showed SHM on the baseline's data path (false: the logs named no transport).
    KeepShm {
        difference: Difference,
        shm_seen: bool,
    },
    /// Disabling SHM changed nothing measurable.
    NoMeasurableCost {
        difference: Difference,
        shm_seen: bool,
    },
    /// SHM was used; the data cannot tell yet. The family (in `difference`) says how
    /// many rounds would settle it.
    Inconclusive {
        difference: Difference,
        /// The most rounds a case had (0 or 1: no case was measured over rounds, and
        /// a case of one round decides nothing).
        rounds: usize,
    },
}

impl Verdict {
    /// SHM worked with the baseline and the answer rests on comparing times (keep
    /// it, no measurable cost, not settled): a job's time can then decide it too.
    pub fn compares_times(&self) -> bool {
        matches!(
            self,
            Verdict::KeepShm { .. }
                | Verdict::NoMeasurableCost { .. }
                | Verdict::Inconclusive { .. }
        )
    }
}

/// What disabling SHM did, across the matched cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub cases: usize,
    pub regressed: usize,
    pub improved: usize,
    pub unchanged: usize,
    pub inconclusive: usize,
    /// The largest slowdown among regressed cases: (bytes, nranks, change, its
    /// interval as a member of the family).
    pub worst: Option<(u64, u32, f64, (f64, f64))>,
    /// Change at the largest size matched (busbw matters there), first rank count, and
    /// its interval (the family's where the pair is a member).
    pub at_largest: Option<(u64, f64, (f64, f64))>,
    /// Cases that failed with SHM disabled but not with it.
    pub new_failures: usize,
    /// Pairs set aside because a side is flagged `noisy` or `outlier` (not counted
    /// as inconclusive: more iterations would not settle them).
    pub distrusted: usize,
    /// The cases compared over rounds, decided together at a stated rate.
    pub family: Option<crate::analysis::family::Family>,
    /// What carried the traffic with SHM disabled, from that config's NCCL logs
    /// (`NET/IB`, `NET/Socket`, ...); empty where they named none.
    pub instead: Vec<String>,
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

/// What a failed case needed of /dev/shm: the bytes and the product behind them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShmNeed {
    pub bytes: u64,
    pub how: String,
}

/// The failed case's /dev/shm need per node, with the function and the channel
/// assumption `nccl-bench doctor` sizes with (`nccl::shm::node_need`,
/// `assumed_channels`): with NCCL, the segment the error names (or NCCL's default
/// one) per channel (as the config's variables allow) and SHM peer on each rank of
/// a node; the host backend's ring uses one segment per rank, the one its error
/// names. The doctor reads the machine's variables, this the config's.
fn shm_need(run: &RunData, failed: &CaseRow) -> Option<ShmNeed> {
    // /dev/shm is per node: the ranks of one node of a cluster run.
    let nodes = run
        .manifest
        .cluster
        .as_ref()
        .map_or(1, |c| c.hosts.len().max(1));
    let ranks = (failed.nranks as usize).div_ceil(nodes);
    if failed.backend == "host" {
        let segment = segment_size(&failed.error)?;
        let e = node_need(segment, 1, ranks);
        return Some(ShmNeed {
            bytes: e.total_bytes,
            how: format!(
                "{segment} B per segment x {ranks} ranks: the host backend's ring, one segment per rank"
            ),
        });
    }
    let segment = segment_size(&failed.error).unwrap_or(DEFAULT_SHM_SEGMENT_BYTES);
    let env = run
        .manifest
        .configs
        .iter()
        .find(|c| c.name == failed.config)
        .map(|c| c.env.clone())
        .unwrap_or_default();
    let (channels, why) = assumed_channels(|var| {
        env.get(var)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
    });
    let e = node_need(segment, channels, ranks);
    Some(ShmNeed {
        bytes: e.total_bytes,
        how: format!(
            "{segment} B per segment x {channels} channels ({why}) x {} SHM peer per rank x {ranks} ranks per node, as `nccl-bench doctor` estimates it; trees and more channels need more",
            e.shm_peers
        ),
    })
}

/// The segment size an SHM error names: `... (size 9637888) ...`.
fn segment_size(error: &str) -> Option<u64> {
    let rest = &error[error.find("(size ")? + 6..];
    rest[..rest.find(')')?].trim().parse().ok()
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
        distributions: run.distributions.clone(),
    }
}

pub fn decide(run: &RunData, baseline: &str, options: CompareOptions) -> Verdict {
    if rows_of(run, baseline).is_empty() {
        return Verdict::CannotTell {
            why: format!("the run has no '{baseline}' config to compare against"),
        };
    }
    let run = &multi_rank(run);
    let base_rows = rows_of(run, baseline);
    if base_rows.is_empty() {
        return Verdict::CannotTell {
            why: format!(
                "every '{baseline}' case ran on one rank, and one GPU has no peer: no transport (SHM, P2P or the network) carries data, so NCCL_SHM_DISABLE cannot matter; sweep with --gpus 2 or more"
            ),
        };
    }
    let Some(off) = shm_off_config(run) else {
        return Verdict::CannotTell {
            why: "the run has no config that sets NCCL_SHM_DISABLE=1 (sweep with --transports default,shm-off)".into(),
        };
    };
    if let Some(failed) = base_rows
        .iter()
        .find(|r| !r.is_ok() && is_shm_error(&r.error))
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
    let report = match compare(
        &Side {
            run,
            config: Some(baseline),
            label: baseline.into(),
        },
        &Side {
            run,
            config: Some(&off),
            label: off.clone(),
        },
        options,
    ) {
        Ok(r) => r,
        Err(e) => {
            return Verdict::CannotTell {
                why: format!("{e:#}"),
            }
        }
    };
    let mut difference = summarize(&report);
    difference.instead = transports_used(&rows_of(run, &off));
    let used = transports_used(&base_rows);
    if !used.is_empty() && !used.iter().any(|t| t == "SHM") {
        return Verdict::NotOnDataPath {
            carried_by: used,
            difference,
        };
    }
    let shm_seen = !used.is_empty();
    if difference.regressed + difference.new_failures > 0 {
        Verdict::KeepShm {
            difference,
            shm_seen,
        }
    } else if difference.inconclusive == 0 && difference.unchanged + difference.improved > 0 {
        Verdict::NoMeasurableCost {
            difference,
            shm_seen,
        }
    } else {
        Verdict::Inconclusive {
            difference,
            rounds: report.most_rounds,
        }
    }
}

fn summarize(report: &CompareReport) -> Difference {
    let worst = report.worst().and_then(|w| {
        w.comparison
            .as_ref()
            .map(|c| (w.bytes, w.nranks, c.change, w.family_ci.unwrap_or(c.ci)))
    });
    let trusted = |r: &&PairRow| r.distrust.is_empty();
    let at_largest = report
        .rows
        .iter()
        .filter(trusted)
        .filter(|r| r.comparison.is_some())
        .max_by_key(|r| (r.bytes, std::cmp::Reverse(r.nranks)))
        .and_then(|r| {
            r.comparison
                .as_ref()
                .map(|c| (r.bytes, c.change, r.family_ci.unwrap_or(c.ci)))
        });
    Difference {
        cases: report.rows.len(),
        regressed: report.count(Outcome::Regressed),
        improved: report.count(Outcome::Improved),
        unchanged: report.count(Outcome::Unchanged),
        inconclusive: report
            .rows
            .iter()
            .filter(trusted)
            .filter(|r| r.outcome == Outcome::Inconclusive)
            .count(),
        worst,
        at_largest,
        new_failures: report.count(Outcome::NewFailure),
        distrusted: report
            .rows
            .iter()
            .filter(|r| !r.distrust.is_empty())
            .count(),
        family: Some(report.family.clone()),
        instead: Vec::new(),
    }
}

/// How the matched cases came out: `12 <noun>: 3 slower, ...`, and the cases that
/// failed only with SHM disabled.
pub(super) fn tally(d: &Difference, noun: &str) -> String {
    let mut s = format!(
        "{} {noun}: {} slower, {} faster, {} unchanged, {} inconclusive",
        d.cases, d.regressed, d.improved, d.unchanged, d.inconclusive
    );
    if d.new_failures > 0 {
        s.push_str(&format!(
            ", {} failing only with SHM disabled",
            d.new_failures
        ));
    }
    s
}

/// The verdict in words (Markdown).
pub fn explain(v: &Verdict, baseline: &str) -> String {
    let pct = |x: f64| format!("{:+.1}%", x * 100.0);
    let diff_words = |d: &Difference| -> String {
        let mut s = tally(d, "matched cases");
        if d.distrusted > 0 {
            s.push_str(&format!(
                ", {} set aside (a side flagged noisy or outlier, or re-measured alone: not evidence)",
                d.distrusted
            ));
        }
        if let Some((bytes, change, ci)) = d.at_largest {
            s.push_str(&format!(
                "; at the largest size ({}) the median time changes by {} (interval {} to {})",
                crate::units::Bytes(bytes),
                pct(change),
                pct(ci.0),
                pct(ci.1)
            ));
        }
        if let Some(f) = &d.family {
            let sentence = f.sentence("disabling SHM");
            if !sentence.is_empty() {
                s.push_str(". ");
                s.push_str(sentence.trim_end_matches('.'));
            }
        }
        s
    };
    match v {
        Verdict::CannotTell { why } => format!("**Cannot tell**: {why}."),
        Verdict::ShmFails { error, shm_total_bytes, need, disabled_busbw } => {
            let need = need
                .as_ref()
                .map(|n| {
                    format!(
                        " It needs about {} ({}): give it `--shm-size={}g` or more.",
                        crate::units::Bytes(n.bytes),
                        n.how,
                        shm_size_gib(Some(n.bytes))
                    )
                })
                .unwrap_or_default();
            let instead = disabled_busbw
                .map(|(bytes, bw)| format!(" With SHM disabled instead, the largest size ({}) ran at {bw:.2} GB/s busbw over the network path.", crate::units::Bytes(bytes)))
                .unwrap_or_default();
            format!(
                "**Fix /dev/shm, do not disable SHM.** The `{baseline}` config failed creating NCCL's shared-memory segments: `{error}`. \
                 /dev/shm is {} here.{need} Options: `docker run --shm-size=...`, or `--ipc=host`; on Kubernetes an \
                 `emptyDir` with `medium: Memory` mounted at /dev/shm. Disabling SHM only moves this traffic to the network path.{instead}",
                shm_total_bytes.map(|b| crate::units::Bytes(b).to_string()).unwrap_or_else(|| "of unknown size".into())
            )
        }
        Verdict::CumemMismatch { error } => format!(
            "**Set NCCL_CUMEM_HOST_ENABLE=0 on every rank; do not disable SHM.** The `{baseline}` config failed attaching a peer's SHM buffers: `{error}`. \
             A segment of size 0 with a name NCCL never makes is a peer's cuMem handle read as a /dev/shm file name: one rank keeps SHM in cuMem host memory, \
             another fell back to /dev/shm (from NCCL 2.26.3 each process probes cuMem host memory on its own). /dev/shm's size is not the cause; \
             a driver of r595 or newer fixes the probe. `nccl-bench explain` on the run's NCCL logs shows which rank fell back."
        ),
        Verdict::NotOnDataPath { carried_by, difference } => format!(
            "**Disabling SHM does not change the data path here.** `{baseline}` never used SHM: its traffic went over {}. \
             Measured: {}.",
            carried_by.join(", "),
            diff_words(difference)
        ),
        Verdict::KeepShm { difference, shm_seen } => {
            let worst = difference
                .worst
                .map(|(b, n, c, ci)| format!(" The worst case is {} on {}: {} (interval {} to {}, held together with the family's).", crate::units::Bytes(b), crate::units::plural(n as usize, "rank", "ranks"), pct(c), pct(ci.0), pct(ci.1)))
                .unwrap_or_default();
            let carried = if *shm_seen {
                "SHM carries traffic here and disabling it costs time"
            } else {
                "disabling SHM costs time (NCCL's logs named no transport, so which one carried the traffic is not known)"
            };
            format!("**Keep SHM enabled.** {carried}{}: {}.{worst}", instead(difference), diff_words(difference))
        }
        Verdict::NoMeasurableCost { difference, shm_seen } => format!(
            "**{}, but disabling it costs nothing measurable here**{}: {}.",
            if *shm_seen { "SHM is used" } else { "SHM may be used (NCCL's logs named no transport)" },
            instead(difference),
            diff_words(difference)
        ),
        Verdict::Inconclusive { difference, rounds } => format!(
            "**Not settled yet.** {}.{}",
            diff_words(difference),
            if *rounds > 1 {
                ""
            } else {
                " Each case here was measured in one round (process group): its interval sees the variation between that group's iterations only, not between groups, so it decides nothing; sweep with --rounds 6 or more."
            }
        ),
    }
}

/// What took SHM's place, in words: ` (without it, the traffic went over NET/IB)`.
fn instead(d: &Difference) -> String {
    if d.instead.is_empty() {
        String::new()
    } else {
        format!(
            " (without it, the traffic went over {})",
            d.instead.join(", ")
        )
    }
}

#[cfg(test)]
mod tests;
