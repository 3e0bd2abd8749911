//! `check --workload`: a job's communication time against the baseline's. Per
//! (config, rank count), the job's time under the baseline is the calls x each case's
//! median over the baseline's runs, with the band the calls x the ends of the runs'
//! intervals span; the run's is the calls x each case's round medians, round by
//! round, and its median's interval over the rounds. The job is slower when that
//! interval lies wholly above the band widened by the threshold, faster when wholly
//! below, within when wholly inside; each interval at 1 - 0.05 / (checks x looks),
//! so that the job's checks hold together with 95 %. A job size the baseline or the
//! run lacks is left out and counted (no interpolation against a band).

use serde::Serialize;

use super::{Baseline, BaselineCase};
use crate::config::SizesFrom;
use crate::export::reader::{CaseRow, RunData};

/// How the job's time in the run stands against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobOutcome {
    Slower,
    Faster,
    Within,
    NotSettled,
}

/// One (config, rank count) of the job checked.
#[derive(Debug, Clone, Serialize)]
pub struct JobCheck {
    pub config: String,
    pub nranks: u32,
    /// The job's time under the baseline (calls x medians) and its band, us.
    pub base_us: f64,
    pub band_us: (f64, f64),
    /// The job's time in the run (calls x the cases' medians), us.
    pub run_us: f64,
    /// The interval of the run's job time over its rounds, us, and the rounds.
    pub interval_us: Option<(f64, f64)>,
    pub rounds: usize,
    /// The job's (collective, size) of this rank count matched, and left out.
    pub matched: usize,
    pub left_out: usize,
    pub outcome: JobOutcome,
}

/// Every (config, rank count) of the baseline the job's sizes match in the run.
pub fn job_check(base: &Baseline, run: &RunData, job: &SizesFrom, threshold: f64) -> Vec<JobCheck> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for b in &base.cases {
        if !groups.contains(&(b.config.as_str(), b.nranks)) {
            groups.push((b.config.as_str(), b.nranks));
        }
    }
    // Each group's matched calls: (calls, the baseline's case, the run's case).
    type Matched<'a> = Vec<(u64, &'a BaselineCase, &'a CaseRow)>;
    let mut found: Vec<(&str, u32, Matched, usize)> = Vec::new();
    for (config, n) in groups {
        let mut matched: Matched = Vec::new();
        let mut left_out = 0;
        for call in job.calls.iter().filter(|c| c.nranks.is_none_or(|k| k == n)) {
            let b = base.cases.iter().find(|b| {
                b.config == config
                    && b.nranks == n
                    && b.bytes == call.bytes
                    && b.collective == call.collective.name()
            });
            let c = b.and_then(|b| run.cases.iter().find(|c| b.matches(c) && c.is_ok()));
            match (b, c) {
                (Some(b), Some(c)) => matched.push((call.calls, b, c)),
                _ => left_out += 1,
            }
        }
        if !matched.is_empty() {
            found.push((config, n, matched, left_out));
        }
    }
    let alpha = crate::stats::rounds::ALPHA / (found.len().max(1) * run.looks()) as f64;
    found
        .into_iter()
        .map(|(config, nranks, matched, left_out)| {
            let sum = |f: &dyn Fn(&BaselineCase) -> f64| -> f64 {
                matched.iter().map(|(n, b, _)| *n as f64 * f(b)).sum()
            };
            let band = (sum(&|b| b.low_us), sum(&|b| b.high_us));
            let run_us = matched
                .iter()
                .map(|(n, _, c)| *n as f64 * c.p50_us.unwrap_or(0.0))
                .sum();
            let per_round = job_rounds(&matched);
            let interval = crate::stats::rounds::median_interval_at(&per_round, alpha)
                .filter(|_| per_round.len() > 1);
            let (lo, hi) = (band.0 * (1.0 - threshold), band.1 * (1.0 + threshold));
            let outcome = match interval {
                Some((a, _)) if a > hi => JobOutcome::Slower,
                Some((_, b)) if b < lo => JobOutcome::Faster,
                Some((a, b)) if a >= lo && b <= hi => JobOutcome::Within,
                _ => JobOutcome::NotSettled,
            };
            JobCheck {
                config: config.to_string(),
                nranks,
                base_us: sum(&|b| b.median_us),
                band_us: band,
                run_us,
                interval_us: interval,
                rounds: per_round.len(),
                matched: matched.len(),
                left_out,
                outcome,
            }
        })
        .collect()
}

/// The run's job time in each round (the calls x the cases' round medians); empty
/// unless every case has the same rounds.
fn job_rounds(matched: &[(u64, &BaselineCase, &CaseRow)]) -> Vec<f64> {
    let rounds: Vec<(u64, Vec<f64>)> = matched
        .iter()
        .map(|(n, _, c)| (*n, c.round_medians()))
        .collect();
    crate::analysis::job::weighted_rounds(rounds.iter().map(|(n, r)| (*n, r.as_slice())))
        .unwrap_or_default()
}

/// The checks in lines, after `check`'s table: `your job (...)`, then one per
/// (config, rank count) with both times and the outcome.
pub fn lines(checks: &[JobCheck], job: &SizesFrom, threshold: f64) -> Vec<String> {
    use crate::units::format_us;
    let mut out = vec![format!(
        "your job ({}: {} (collective, size) with their calls {}), each interval at 1 - 0.05 / {} so that all hold together with 95 %:",
        job.file,
        job.calls.len(),
        job.per,
        checks.len().max(1)
    )];
    if checks.is_empty() {
        out.push(
            "  no case of the baseline and the run matches the job's sizes: nothing to weigh"
                .into(),
        );
    }
    for c in checks {
        let interval = match c.interval_us {
            Some((a, b)) => format!(
                "interval {} to {} over {} rounds",
                format_us(a),
                format_us(b),
                c.rounds
            ),
            None => format!("no interval over {} round(s)", c.rounds),
        };
        let band = format!("+-{:.1}%", threshold * 100.0);
        let words = match c.outcome {
            JobOutcome::Slower => format!("SLOWER than every baseline run beyond {band}"),
            JobOutcome::Faster => format!("faster than every baseline run beyond {band}"),
            JobOutcome::Within => format!("within the baseline runs' spread and {band}"),
            JobOutcome::NotSettled => "not settled against the baseline's band".into(),
        };
        out.push(format!(
            "  {}, {}: baseline {} {} (runs {} to {}), this run {} ({interval}): {words}",
            c.config,
            crate::units::plural(c.nranks as usize, "rank", "ranks"),
            format_us(c.base_us),
            job.per,
            format_us(c.band_us.0),
            format_us(c.band_us.1),
            format_us(c.run_us),
        ));
        if c.left_out > 0 {
            out.push(format!(
                "    {} of the job's sizes are not in both the baseline and the run, and are left out",
                c.left_out
            ));
        }
    }
    out
}
