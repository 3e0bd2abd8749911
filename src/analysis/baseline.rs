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
        self.config == c.config
            && self.collective == c.coll().name()
            && self.nranks == c.nranks
            && self.bytes == c.bytes
            && self.dtype == c.dtype
            && self.op == c.op
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
            let pct = |x: f64| format!("{:+.1} %", x * 100.0);
            let span = format!(
                "median {:.3} us [{lo:.3}, {hi:.3}] against the baseline's {:.3} us [{:.3}, {:.3}] ({} runs)",
                m, b.median_us, b.low_us, b.high_us, b.runs
            );
            let (outcome, why) = if !c.is_trusted() {
                (
                    Outcome::Inconclusive,
                    format!("{} timings ({})", c.quality, c.quality_note),
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
        if !base.cases.iter().any(|b| b.matches(c)) {
            cases.push(CaseCheck {
                config: c.config.clone(),
                collective: c.coll().to_string(),
                nranks: c.nranks,
                bytes: c.bytes,
                dtype: c.dtype.clone(),
                op: c.op.clone(),
                outcome: Outcome::New,
                baseline_us: None,
                run_us: median(c).map(|m| m.0),
                change: None,
                message: "not in the baseline".into(),
            });
        }
    }
    Ok(CheckReport {
        run: run.dir.display().to_string(),
        threshold,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::reader::ManifestHead;

    fn row(config: &str, bytes: u64, p50: f64) -> CaseRow {
        CaseRow {
            config: config.into(),
            backend: "host".into(),
            nranks: 2,
            bytes,
            dtype: "float".into(),
            op: "sum".into(),
            iters: 100,
            status: "ok".into(),
            time_us: Some(p50),
            p50_us: Some(p50),
            median_ci_low_us: Some(p50 * 0.99),
            median_ci_high_us: Some(p50 * 1.01),
            quality: "ok".into(),
            ..CaseRow::default()
        }
    }

    fn run(name: &str, scale: f64) -> RunData {
        let mut manifest = ManifestHead::default();
        manifest.backend.used = "host".into();
        manifest.host.hostname = "node1".into();
        RunData {
            dir: name.into(),
            manifest,
            cases: [8u64, 65536, 1 << 26]
                .iter()
                .map(|&b| row("default", b, (5.0 + b as f64 / 1e4) * scale))
                .collect(),
            distributions: Default::default(),
        }
    }

    #[test]
    fn a_baseline_keeps_the_median_and_the_spread_of_its_runs() {
        let b = build(
            &[run("a", 1.0), run("b", 1.02), run("c", 0.99)],
            "now".into(),
        )
        .unwrap();
        assert_eq!(b.cases.len(), 3);
        let c = &b.cases[0];
        assert_eq!((c.bytes, c.runs), (8, 3));
        let t = 5.0 + 8.0 / 1e4;
        assert!((c.median_us - t).abs() < 1e-12, "{c:?}");
        assert!((c.low_us - t * 0.99 * 0.99).abs() < 1e-12, "{c:?}");
        assert!((c.high_us - t * 1.02 * 1.01).abs() < 1e-12, "{c:?}");
        assert_eq!(b.platform.hosts, ["node1"]);
    }

    #[test]
    fn the_same_run_passes_a_slower_one_fails_and_a_missing_case_fails() {
        let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
        let same = check(&base, &run("c", 1.0), 0.05).unwrap();
        assert_eq!(same.failures(), 0, "{same:?}");
        assert!(same.cases.iter().all(|c| c.outcome == Outcome::Pass));

        // 10 % slower than run "a" at the largest size (9.5 % over the baseline's
        // median of 1.0 and 1.01).
        let mut slower = run("d", 1.0);
        let last = slower.cases.last_mut().unwrap();
        for v in [
            &mut last.p50_us,
            &mut last.median_ci_low_us,
            &mut last.median_ci_high_us,
        ] {
            *v = v.map(|x| x * 1.1);
        }
        slower.cases.remove(1);
        let r = check(&base, &slower, 0.05).unwrap();
        let outcomes: Vec<Outcome> = r.cases.iter().map(|c| c.outcome).collect();
        assert_eq!(outcomes, [Outcome::Pass, Outcome::Missing, Outcome::Slower]);
        assert_eq!(r.failures(), 2);
        assert!(
            r.cases[2]
                .message
                .starts_with("slower (+9.5 %) beyond the threshold +5.0 %"),
            "{:?}",
            r.cases[2]
        );
    }

    #[test]
    fn flagged_failed_and_new_cases_are_said_and_other_platforms_refused() {
        let base = build(&[run("a", 1.0)], "now".into()).unwrap();
        let mut r = run("b", 2.0);
        r.cases[0].quality = "noisy".into();
        r.cases[1].status = "timeout".into();
        r.cases.push(row("shm-off", 8, 9.0));
        let c = check(&base, &r, 0.05).unwrap();
        let outcomes: Vec<Outcome> = c.cases.iter().map(|c| c.outcome).collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Inconclusive,
                Outcome::NotOk,
                Outcome::Slower,
                Outcome::New
            ]
        );
        let mut gpu = run("g", 1.0);
        gpu.manifest.backend.used = "nccl".into();
        gpu.manifest.gpu = Some(serde_json::json!({"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}));
        let e = check(&base, &gpu, 0.05).unwrap_err();
        assert_eq!(
            e,
            "g is a nccl run on NVIDIA H100 80GB HBM3; the baseline holds for host"
        );
        let e = build(&[run("a", 1.0), gpu], "now".into()).unwrap_err();
        assert!(e.ends_with("a baseline holds for one platform"), "{e}");
    }
}
