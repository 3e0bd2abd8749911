//! Baselines for regression tracking: what each case (config, ranks, size, datatype,
//! operator) is expected to take, from several runs on one platform, and the check
//! of a new run against it, case by case, for a CI gate.
//!
//! A baseline case keeps the median over runs of each run's median iteration time,
//! and the spread of those runs: the lowest and highest end of their medians' 95 %
//! intervals (imports have no interval: their mean times stand for both ends). A
//! checked case fails when the whole interval of its median lies beyond the
//! baseline's highest end by more than the threshold (slower than every baseline run
//! could explain), and when it is missing or did not pass. A case whose timings the
//! quality rules flag (`noisy`, `outlier`) is inconclusive, as in `compare`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::family::{self, BandMember, CallSide, Family};

pub mod job;
use crate::export::reader::{CaseRow, RunData};
use crate::ops::collective::Collective;
use crate::stats;

pub const SCHEMA_VERSION: u32 = 1;

/// `baseline.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    pub created_at: String,
    pub platform: Platform,
    pub runs: Vec<SourceRun>,
    pub cases: Vec<BaselineCase>,
    /// Cases the runs measured but never with trusted ok timings (flagged noisy or
    /// outlier, or not ok, in every run): no expectation, but not new either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<UntrustedCase>,
}

/// A case of the baseline's runs without a trusted timing in any of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntrustedCase {
    pub config: String,
    pub collective: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    /// What the runs made of it (`noisy`, `outlier`, `timeout`, ...), each once.
    pub why: Vec<String>,
}

impl UntrustedCase {
    fn matches(&self, c: &CaseRow) -> bool {
        let key = (self.config.as_str(), self.collective.as_str(), self.nranks);
        same_case(key, self.bytes, (&self.dtype, &self.op), c)
    }
}

/// Whether run row `c` is the case (config, collective, ranks), bytes, (dtype, op).
fn same_case(key: (&str, &str, u32), bytes: u64, types: (&str, &str), c: &CaseRow) -> bool {
    key == (c.config.as_str(), c.coll().name(), c.nranks)
        && bytes == c.bytes
        && types == (c.dtype.as_str(), c.op.as_str())
}

/// What a baseline holds for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `host`, `nccl`, `nccl-tests`, ...
    pub backend: String,
    /// The GPU model (absent for the host backend, or where the runs recorded none).
    pub gpu: Option<String>,
    /// Distinct hosts of the runs.
    pub hosts: Vec<String>,
}

/// A run a baseline was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRun {
    pub dir: String,
    pub started_at: String,
    pub nccl: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineCase {
    pub config: String,
    /// The collective (all_reduce in baselines made before there were others).
    #[serde(default = "all_reduce")]
    pub collective: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    /// Median over the runs of each run's median iteration time, microseconds.
    pub median_us: f64,
    /// Lowest and highest end of the runs' medians' 95 % intervals.
    pub low_us: f64,
    pub high_us: f64,
    /// Median busbw over the runs, GB/s.
    pub busbw_gbps: Option<f64>,
    /// Runs with a trusted ok measurement of this case.
    pub runs: usize,
}

fn all_reduce() -> String {
    Collective::AllReduce.to_string()
}

impl BaselineCase {
    fn matches(&self, c: &CaseRow) -> bool {
        let key = (self.config.as_str(), self.collective.as_str(), self.nranks);
        same_case(key, self.bytes, (&self.dtype, &self.op), c)
    }
}

/// The platform of a run, as a baseline records it.
pub fn platform_of(run: &RunData) -> Platform {
    let gpu = run.manifest.gpu.as_ref().and_then(|g| {
        g["gpus"].as_array()?.first()?["name"]
            .as_str()
            .map(String::from)
    });
    let mut hosts: Vec<String> = match &run.manifest.cluster {
        Some(c) => c.hosts.clone(),
        None => vec![run.manifest.host.hostname.clone()],
    };
    hosts.retain(|h| !h.is_empty());
    Platform {
        backend: run.manifest.backend.used.clone(),
        gpu,
        hosts,
    }
}

/// A case's median with its interval, where the run has one.
fn median(c: &CaseRow) -> Option<(f64, f64, f64)> {
    let m = c.p50_us.or(c.time_us)?;
    Some((
        m,
        c.median_ci_low_us.unwrap_or(m),
        c.median_ci_high_us.unwrap_or(m),
    ))
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

/// A checked case's median and interval beside its baseline's, in words.
fn span(c: &CaseRow, b: &BaselineCase) -> Option<String> {
    let (m, lo, hi) = median(c)?;
    Some(format!(
        "median {m:.3} us [{lo:.3}, {hi:.3}] against the baseline's {:.3} us [{:.3}, {:.3}] ({} runs)",
        b.median_us, b.low_us, b.high_us, b.runs
    ))
}

/// A baseline from runs of one backend and GPU model (their hosts are merged).
pub fn build(runs: &[RunData], created_at: String) -> Result<Baseline, String> {
    let Some(first) = runs.first() else {
        return Err("a baseline needs at least one run directory".into());
    };
    let mut platform = platform_of(first);
    for r in &runs[1..] {
        let p = platform_of(r);
        if (p.backend.as_str(), p.gpu.as_deref())
            != (platform.backend.as_str(), platform.gpu.as_deref())
        {
            return Err(format!(
                "{} is a {} run{}, {} a {} run{}: a baseline holds for one platform",
                r.dir.display(),
                p.backend,
                on(&p.gpu),
                first.dir.display(),
                platform.backend,
                on(&platform.gpu)
            ));
        }
        for h in p.hosts {
            if !platform.hosts.contains(&h) {
                platform.hosts.push(h);
            }
        }
    }
    type Key = (String, Collective, u32, u64, String, String);
    let mut keys: BTreeSet<Key> = BTreeSet::new();
    for r in runs {
        for c in r.cases.iter().filter(|c| c.is_ok() && c.is_trusted()) {
            keys.insert((
                c.config.clone(),
                c.coll(),
                c.nranks,
                c.bytes,
                c.dtype.clone(),
                c.op.clone(),
            ));
        }
    }
    let mut untrusted: Vec<UntrustedCase> = Vec::new();
    for r in runs {
        for c in &r.cases {
            let key = (
                c.config.clone(),
                c.coll(),
                c.nranks,
                c.bytes,
                c.dtype.clone(),
                c.op.clone(),
            );
            if keys.contains(&key) {
                continue;
            }
            let why = if c.is_ok() {
                c.quality.clone()
            } else {
                c.status.clone()
            };
            match untrusted.iter_mut().find(|u| u.matches(c)) {
                Some(u) if !u.why.contains(&why) => u.why.push(why),
                Some(_) => {}
                None => untrusted.push(UntrustedCase {
                    config: key.0,
                    collective: key.1.to_string(),
                    nranks: key.2,
                    bytes: key.3,
                    dtype: key.4,
                    op: key.5,
                    why: vec![why],
                }),
            }
        }
    }
    let cases = keys
        .into_iter()
        .filter_map(|(config, collective, nranks, bytes, dtype, op)| {
            let seen: Vec<(&CaseRow, (f64, f64, f64))> = runs
                .iter()
                .filter_map(|r| {
                    r.cases.iter().find(|c| {
                        c.config == config
                            && c.coll() == collective
                            && c.nranks == nranks
                            && c.bytes == bytes
                            && c.dtype == dtype
                            && c.op == op
                            && c.is_ok()
                            && c.is_trusted()
                    })
                })
                .filter_map(|c| Some((c, median(c)?)))
                .collect();
            if seen.is_empty() {
                return None;
            }
            let medians: Vec<f64> = seen.iter().map(|(_, m)| m.0).collect();
            let busbw: Vec<f64> = seen.iter().filter_map(|(c, _)| c.busbw_gbps).collect();
            Some(BaselineCase {
                config,
                collective: collective.to_string(),
                nranks,
                bytes,
                dtype,
                op,
                median_us: stats::median(medians).unwrap_or(f64::NAN),
                low_us: seen.iter().map(|(_, m)| m.1).fold(f64::INFINITY, f64::min),
                high_us: seen.iter().map(|(_, m)| m.2).fold(0.0, f64::max),
                busbw_gbps: stats::median(busbw),
                runs: seen.len(),
            })
        })
        .collect();
    Ok(Baseline {
        schema_version: SCHEMA_VERSION,
        created_at,
        platform,
        runs: runs
            .iter()
            .map(|r| SourceRun {
                dir: r.dir.display().to_string(),
                started_at: r.manifest.started_at.clone(),
                nccl: r.manifest.nccl.as_ref().map(|n| n.version.clone()),
            })
            .collect(),
        cases,
        untrusted,
    })
}

fn on(gpu: &Option<String>) -> String {
    gpu.as_deref()
        .map(|g| format!(" on {g}"))
        .unwrap_or_default()
}

/// How a case fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Within the baseline's spread and the threshold.
    Pass,
    /// Faster than every baseline run by more than the threshold.
    Faster,
    /// Its timings are flagged: not judged.
    Inconclusive,
    /// Slower than every baseline run by more than the threshold.
    Slower,
    /// In the baseline, not in the run.
    Missing,
    /// In the run, not ok (failed, timeout, wrong).
    NotOk,
    /// In the run, not in the baseline: nothing to check against.
    New,
}

impl Outcome {
    pub fn fails(self) -> bool {
        matches!(self, Outcome::Slower | Outcome::Missing | Outcome::NotOk)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Faster => "faster",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Slower => "slower",
            Outcome::Missing => "missing",
            Outcome::NotOk => "not-ok",
            Outcome::New => "new",
        }
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseCheck {
    pub config: String,
    pub collective: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    pub outcome: Outcome,
    pub baseline_us: Option<f64>,
    pub run_us: Option<f64>,
    /// run / baseline - 1.
    pub change: Option<f64>,
    pub message: String,
}

impl CaseCheck {
    /// The config, with the collective after it where it is not all_reduce.
    pub fn label(&self) -> String {
        crate::ops::collective::labelled(&self.config, &self.collective)
    }
}

/// Every case of the baseline and of the run, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub run: String,
    pub threshold: f64,
    pub cases: Vec<CaseCheck>,
    /// The cases checked over rounds with a trusted timing, decided together at a
    /// stated rate (`analysis::family`): their outcomes are the family's.
    pub family: Family,
}

impl CheckReport {
    pub fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.outcome.fails()).count()
    }
}

/// Checks a run against a baseline; an error when the run is of another platform.
pub fn check(base: &Baseline, run: &RunData, threshold: f64) -> Result<CheckReport, String> {
    let p = platform_of(run);
    if p.backend != base.platform.backend || p.gpu != base.platform.gpu {
        return Err(format!(
            "{} is a {} run{}; the baseline holds for {}{}",
            run.dir.display(),
            p.backend,
            on(&p.gpu),
            base.platform.backend,
            on(&base.platform.gpu)
        ));
    }
    let mut cases: Vec<CaseCheck> = base
        .cases
        .iter()
        .map(|b| {
            let found = run.cases.iter().find(|c| b.matches(c));
            let mut out = CaseCheck {
                config: b.config.clone(),
                collective: b.collective.clone(),
                nranks: b.nranks,
                bytes: b.bytes,
                dtype: b.dtype.clone(),
                op: b.op.clone(),
                outcome: Outcome::Pass,
                baseline_us: Some(b.median_us),
                run_us: None,
                change: None,
                message: String::new(),
            };
            let Some(c) = found else {
                out.outcome = Outcome::Missing;
                out.message = "missing from the run".into();
                return out;
            };
            if !c.is_ok() {
                out.outcome = Outcome::NotOk;
                out.message = format!("{}: {}", c.status, c.error);
                return out;
            }
            let Some((m, lo, hi)) = median(c) else {
                out.outcome = Outcome::NotOk;
                out.message = "no timing".into();
                return out;
            };
            out.run_us = Some(m);
            out.change = Some(m / b.median_us - 1.0);
            let span = span(c, b).unwrap_or_default();
            let (outcome, why) = if !c.is_trusted() {
                (
                    Outcome::Inconclusive,
                    format!("{} timings ({})", c.quality, c.quality_note),
                )
            } else if c.round_medians().len() < 2 {
                (
                    Outcome::Inconclusive,
                    format!(
                        "one round ({}): an interval over one process group's iterations decides nothing; sweep with --rounds 6 or more",
                        pct(m / b.median_us - 1.0)
                    ),
                )
            } else if lo > b.high_us * (1.0 + threshold) {
                (
                    Outcome::Slower,
                    format!("slower ({}) beyond the threshold {}", pct(m / b.median_us - 1.0), pct(threshold)),
                )
            } else if hi < b.low_us * (1.0 - threshold) {
                (Outcome::Faster, format!("faster ({})", pct(m / b.median_us - 1.0)))
            } else {
                (Outcome::Pass, format!("within ({})", pct(m / b.median_us - 1.0)))
            };
            out.outcome = outcome;
            out.message = format!("{why}: {span}");
            out
        })
        .collect();
    for c in &run.cases {
        if base.cases.iter().any(|b| b.matches(c)) {
            continue;
        }
        // A case the baseline's runs measured without a trusted timing holds no
        // expectation: one that fails here still fails, any other is undecided.
        let (outcome, message) = match base.untrusted.iter().find(|u| u.matches(c)) {
            Some(u) => {
                let why = format!(
                    "no trusted timing in the baseline's runs ({})",
                    u.why.join(", ")
                );
                if c.is_ok() {
                    (Outcome::Inconclusive, why)
                } else {
                    (Outcome::NotOk, format!("{}: {}; {why}", c.status, c.error))
                }
            }
            None => (Outcome::New, "not in the baseline".to_string()),
        };
        cases.push(CaseCheck {
            config: c.config.clone(),
            collective: c.coll().to_string(),
            nranks: c.nranks,
            bytes: c.bytes,
            dtype: c.dtype.clone(),
            op: c.op.clone(),
            outcome,
            baseline_us: None,
            run_us: median(c).map(|m| m.0),
            change: None,
            message,
        });
    }
    // The family: every baseline case the run measured over rounds, trusted (the
    // first cases, in the baseline's order); each one's outcome is the family's.
    let judged: Vec<(usize, &BaselineCase, &CaseRow, Vec<f64>)> = base
        .cases
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let c = run.cases.iter().find(|c| b.matches(c))?;
            let rounds = c.round_medians();
            (c.is_ok() && c.is_trusted() && rounds.len() > 1).then_some((i, b, c, rounds))
        })
        .collect();
    let members: Vec<BandMember> = judged
        .iter()
        .map(|(_, b, _, rounds)| BandMember {
            rounds,
            base_median: b.median_us,
            low: b.low_us,
            high: b.high_us,
        })
        .collect();
    let family = family::decide_bands(
        &members,
        threshold,
        threshold,
        family::FAMILY_ALPHA,
        run.looks(),
    );
    for ((i, b, c, _), call) in judged.iter().zip(&family.calls) {
        let case = &mut cases[*i];
        let change = case.change.unwrap_or(0.0);
        let (outcome, why) = match call.side {
            CallSide::Slower => (
                Outcome::Slower,
                format!(
                    "slower ({}) beyond the threshold {}",
                    pct(change),
                    pct(threshold)
                ),
            ),
            CallSide::Faster => (Outcome::Faster, format!("faster ({})", pct(change))),
            CallSide::Within => (Outcome::Pass, format!("within ({})", pct(change))),
            CallSide::NotSettled => (
                Outcome::Inconclusive,
                format!(
                    "not settled ({}): its interval reaches past the threshold and within it",
                    pct(change)
                ),
            ),
        };
        let at = match call.ci {
            Some((lo, hi)) => format!(
                "; over the family its change lies in {} to {}",
                pct(lo),
                pct(hi)
            ),
            None => "; its rounds are too few for an interval at the family's level".into(),
        };
        let span = span(c, b).unwrap_or_default();
        case.outcome = outcome;
        case.message = format!("{why}: {span}{at}");
    }
    Ok(CheckReport {
        run: run.dir.display().to_string(),
        threshold,
        cases,
        family,
    })
}

#[cfg(test)]
mod tests;
