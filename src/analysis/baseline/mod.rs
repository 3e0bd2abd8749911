//! Baselines for regression tracking: several runs on one platform keep, per case
//! (config, collective, ranks, size, datatype, operator), each run's level (its
//! rounds' mean log median and that mean's variance), and how much runs differ
//! from run to run beyond their rounds (a run effect, estimated jointly over the
//! cases: `stats::change::run_to_run`). `check` judges a new run against it as one
//! decision of the model (`stats::change`, a gate's design): a case is slower where
//! its interval lies wholly beyond the threshold, within where its own interval's
//! upper end lies inside it, and not settled otherwise; a case missing from the run,
//! or not ok in it, fails.

use serde::{Deserialize, Serialize};

use crate::export::reader::{CaseRow, RunData};
use crate::stats::change::{
    self, Case, Change, Decision, Design, Evidence, Input, Level, RunToRun,
};

pub mod job;

pub const SCHEMA_VERSION: u32 = 2;

/// `baseline.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    pub created_at: String,
    pub platform: Platform,
    pub runs: Vec<SourceRun>,
    pub cases: Vec<BaselineCase>,
    /// Cases the runs measured but never ok: no expectation, but not new either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<FailingCase>,
    /// How much a run's level varies from run to run beyond its rounds (`None`
    /// with one run).
    pub run_to_run: Option<RunToRun>,
}

/// The key of a case: config, collective, ranks, bytes, datatype, op.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CaseId {
    pub config: String,
    pub collective: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
}

impl CaseId {
    pub fn of(c: &CaseRow) -> CaseId {
        CaseId {
            config: c.config.clone(),
            collective: c.coll().to_string(),
            nranks: c.nranks,
            bytes: c.bytes,
            dtype: c.dtype.clone(),
            op: c.op.clone(),
        }
    }

    /// The case a sweep measures under `key`.
    pub fn of_key(key: &crate::model::CaseKey) -> CaseId {
        CaseId {
            config: key.config.clone(),
            collective: key.collective.to_string(),
            nranks: key.nranks,
            bytes: key.bytes,
            dtype: key.dtype.to_string(),
            op: key.op.to_string(),
        }
    }

    fn matches(&self, c: &CaseRow) -> bool {
        (
            self.config.as_str(),
            self.collective.as_str(),
            self.nranks,
            self.bytes,
        ) == (c.config.as_str(), c.coll().name(), c.nranks, c.bytes)
            && (self.dtype.as_str(), self.op.as_str()) == (c.dtype.as_str(), c.op.as_str())
    }

    /// The config, with the collective after it where it is not all_reduce.
    pub fn label(&self) -> String {
        crate::ops::collective::labelled(&self.config, &self.collective)
    }
}

/// A case of the baseline's runs that was never ok in any of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingCase {
    #[serde(flatten)]
    pub id: CaseId,
    /// What the runs made of it (`timeout`, `failed`, ...), each once.
    pub why: Vec<String>,
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
    #[serde(flatten)]
    pub id: CaseId,
    /// The typical time over the runs, us (the geometric mean of their levels).
    pub median_us: f64,
    /// Each run's level where the case was ok.
    pub levels: Vec<Level>,
    /// Median busbw over the runs, GB/s.
    pub busbw_gbps: Option<f64>,
    /// A quality rule flagged the case in some run.
    #[serde(default)]
    pub flagged: bool,
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

fn on(gpu: &Option<String>) -> String {
    gpu.as_deref()
        .map(|g| format!(" on {g}"))
        .unwrap_or_default()
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
    let mut ids: Vec<CaseId> = runs
        .iter()
        .flat_map(|r| {
            r.cases
                .iter()
                .filter(|c| !c.is_unsupported())
                .map(CaseId::of)
        })
        .collect();
    ids.sort();
    ids.dedup();
    let mut cases = Vec::new();
    let mut failing = Vec::new();
    for id in ids {
        let seen: Vec<&CaseRow> = runs
            .iter()
            .filter_map(|r| r.cases.iter().find(|c| id.matches(c)))
            .collect();
        let ok: Vec<(&CaseRow, Level)> = seen
            .iter()
            .filter(|c| c.is_ok())
            .filter_map(|c| Some((*c, c.level()?)))
            .collect();
        if ok.is_empty() {
            let mut why: Vec<String> = seen.iter().map(|c| c.status.clone()).collect();
            why.dedup();
            failing.push(FailingCase { id, why });
            continue;
        }
        let levels: Vec<Level> = ok.iter().map(|o| o.1).collect();
        let mean = levels.iter().map(|l| l.log).sum::<f64>() / levels.len() as f64;
        cases.push(BaselineCase {
            id,
            median_us: mean.exp(),
            busbw_gbps: crate::stats::median(ok.iter().filter_map(|o| o.0.busbw_gbps)),
            flagged: ok.iter().any(|o| !o.0.is_trusted()),
            levels,
        });
    }
    let all: Vec<&[Level]> = cases.iter().map(|c| c.levels.as_slice()).collect();
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
        run_to_run: change::run_to_run(&all),
        cases,
        failing,
    })
}

/// Reads a baseline file, with a precise message for a file that is not one or
/// was written for another schema.
pub fn load(path: &std::path::Path) -> Result<Baseline, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
    let version: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a baseline written by `nccl-bench baseline`: {e}",
            path.display()
        )
    })?;
    match version["schema_version"].as_u64() {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "{}: baseline schema version {v} (this nccl-bench reads {SCHEMA_VERSION}); make it again from its runs with `nccl-bench baseline RUN... -o FILE`",
                path.display()
            ))
        }
        None => {
            return Err(format!(
                "{}: not a baseline written by `nccl-bench baseline` (no schema_version)",
                path.display()
            ))
        }
    }
    serde_json::from_value(version).map_err(|e| {
        format!(
            "{}: not a baseline written by `nccl-bench baseline`: {e}",
            path.display()
        )
    })
}

/// A sweep judged against a baseline while it measures (`sweep --baseline`): it
/// measures each group until `check` could decide every case of it.
#[derive(Debug, Clone)]
pub struct Gate {
    pub baseline: Baseline,
    /// The file it was read from.
    pub path: std::path::PathBuf,
    pub threshold: f64,
}

impl Gate {
    /// The gate's decision on one group's cases so far (each a case key with its
    /// round medians), as `check` would decide them with these rounds, each level
    /// the whole baseline's; `None` where the baseline has none of them.
    pub fn look(&self, cases: &[(CaseId, Vec<f64>)], looks: usize) -> Option<Decision> {
        let inputs: Vec<Input> = cases
            .iter()
            .filter_map(|(id, rounds)| {
                let b = self.baseline.cases.iter().find(|b| &b.id == id)?;
                let level = Level::of_rounds(rounds)?;
                let e = change::between(&b.levels, self.baseline.run_to_run, &level)?;
                Some(Input {
                    evidence: Evidence::Measured(e),
                    flagged: b.flagged,
                })
            })
            .collect();
        let design = Design::gate(self.threshold, looks);
        (!inputs.is_empty()).then(|| change::decide_in(&inputs, &design, self.baseline.cases.len()))
    }
}

/// How wide the gate's intervals are for a run like the baseline's own: per case, the
/// upper end of its own interval (the one "within" rests on) for a run at the
/// baseline's level, measured in `rounds` rounds with the spread its runs had, at a
/// gate's level over `looks` looks. The threshold must lie above these for an
/// identical run to pass: (the widest case's, the median case's), as fractions.
pub fn reach(base: &Baseline, rounds: usize, looks: usize) -> Option<(f64, f64)> {
    let level = Design::gate(change::GATE_THRESHOLD, looks).own_level();
    let mut ends: Vec<f64> = base
        .cases
        .iter()
        .filter_map(|b| {
            // A round's variance, from each run's variance of its mean.
            let per_round: Vec<f64> = b
                .levels
                .iter()
                .filter_map(|l| l.var.map(|v| v * l.rounds as f64))
                .collect();
            if per_round.is_empty() {
                return None;
            }
            let mean = b.levels.iter().map(|l| l.log).sum::<f64>() / b.levels.len() as f64;
            let var = per_round.iter().sum::<f64>() / per_round.len() as f64;
            let like = Level {
                log: mean,
                var: Some(var / rounds.max(2) as f64),
                rounds: rounds.max(2),
            };
            let e = change::between(&b.levels, base.run_to_run, &like)?;
            let half = e.se? * change::t_quantile(level, e.df);
            Some(half.exp() - 1.0)
        })
        .collect();
    ends.sort_by(f64::total_cmp);
    let widest = *ends.last()?;
    Some((widest, ends[ends.len() / 2]))
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseCheck {
    #[serde(flatten)]
    pub id: CaseId,
    /// The case as decided; `None` for a case new to the run (nothing to check
    /// against).
    pub case: Option<Case>,
    pub baseline_us: Option<f64>,
    pub run_us: Option<f64>,
    pub note: Note,
}

/// What a case's change rests on beyond its numbers: what the quality rules flagged,
/// what failed, or why a case is new (`report::check` words it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Note {
    None,
    /// Flagged by a quality rule in some baseline run, and the run's `quality` word
    /// where the run's own case is flagged.
    Flagged {
        in_baseline: bool,
        in_run: Option<String>,
    },
    /// The run's case did not pass: its status and error.
    Failed {
        status: String,
        error: String,
    },
    /// Ok, but with no timing to compare.
    NoTiming,
    MissingFromRun,
    /// New to the run, and never ok in the baseline's runs (what they made of it).
    FailingInBaseline(Vec<String>),
    NotInBaseline,
}

impl CaseCheck {
    /// The case's word: its change, or `new`.
    pub fn word(&self) -> &'static str {
        self.case.map_or("new", |c| c.change.word())
    }

    /// Whether it fails the gate: slower, failed, or missing from the run.
    pub fn fails(&self) -> bool {
        self.case
            .is_some_and(|c| matches!(c.change, Change::Slower | Change::Failed | Change::Missing))
    }

    /// Whether the gate could not tell.
    pub fn open(&self) -> bool {
        self.case.is_some_and(|c| c.change == Change::NotSettled)
    }
}

/// Every case of the baseline and of the run, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub run: String,
    pub threshold: f64,
    /// The baseline's cases, then the run's new ones.
    pub cases: Vec<CaseCheck>,
    /// The baseline's cases decided together.
    pub decision: Decision,
    pub run_to_run: Option<RunToRun>,
    /// The run's change over all its cases: the median of their changes (a run
    /// effect), a fraction.
    pub shift: Option<f64>,
}

/// `check`'s exit codes besides 0 (pass) and 2 (an error).
pub const EXIT_FAILS: u8 = 1;
pub const EXIT_NOT_SETTLED: u8 = 3;

impl CheckReport {
    pub fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.fails()).count()
    }

    /// 1 when a case fails, 3 when none fails but some case is not settled, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.failures() > 0 {
            EXIT_FAILS
        } else if self.cases.iter().any(CaseCheck::open) {
            EXIT_NOT_SETTLED
        } else {
            0
        }
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
    let mut notes = Vec::new();
    let mut times = Vec::new();
    let inputs: Vec<Input> = base
        .cases
        .iter()
        .map(|b| {
            let found = run.cases.iter().find(|c| b.id.matches(c));
            let (evidence, note, run_us) = match found {
                None => (Evidence::Missing, Note::MissingFromRun, None),
                Some(c) if !c.is_ok() => (
                    Evidence::Failed,
                    Note::Failed {
                        status: c.status.clone(),
                        error: c.error.clone(),
                    },
                    None,
                ),
                Some(c) => match c.level() {
                    Some(l) => {
                        let e = change::between(&b.levels, base.run_to_run, &l);
                        let in_run = (!c.is_trusted()).then(|| c.quality.clone());
                        let note = if b.flagged || in_run.is_some() {
                            Note::Flagged {
                                in_baseline: b.flagged,
                                in_run,
                            }
                        } else {
                            Note::None
                        };
                        (
                            e.map_or(Evidence::Missing, Evidence::Measured),
                            note,
                            Some(l.time()),
                        )
                    }
                    None => (Evidence::Failed, Note::NoTiming, None),
                },
            };
            notes.push(note);
            times.push(run_us);
            Input {
                evidence,
                flagged: b.flagged || found.is_some_and(|c| c.is_ok() && !c.is_trusted()),
            }
        })
        .collect();
    let decision = change::decide(&inputs, &Design::gate(threshold, run.looks()));
    let mut cases: Vec<CaseCheck> = base
        .cases
        .iter()
        .zip(&decision.cases)
        .zip(notes.into_iter().zip(times))
        .map(|((b, case), (note, run_us))| CaseCheck {
            id: b.id.clone(),
            case: Some(*case),
            baseline_us: Some(b.median_us),
            run_us,
            note,
        })
        .collect();
    for c in &run.cases {
        if base.cases.iter().any(|b| b.id.matches(c)) || c.is_unsupported() {
            continue;
        }
        let failing = base.failing.iter().find(|f| f.id.matches(c));
        let case = match (failing, c.is_ok()) {
            (Some(_), false) => change::decide(
                &[Input {
                    evidence: Evidence::Failed,
                    flagged: false,
                }],
                &decision.design,
            )
            .cases
            .first()
            .copied(),
            _ => None,
        };
        let note = match failing {
            Some(f) => Note::FailingInBaseline(f.why.clone()),
            None => Note::NotInBaseline,
        };
        cases.push(CaseCheck {
            id: CaseId::of(c),
            case,
            baseline_us: None,
            run_us: c.typical_us(),
            note,
        });
    }
    let shift = crate::stats::median(decision.cases.iter().filter_map(|c| c.relative()));
    Ok(CheckReport {
        run: run.dir.display().to_string(),
        threshold,
        cases,
        decision,
        run_to_run: base.run_to_run,
        shift,
    })
}

#[cfg(test)]
mod tests;
