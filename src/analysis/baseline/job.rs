//! `check --workload`: a job's communication time against the baseline's, one case
//! of the gate per (config, rank count). A baseline run's job level is the calls x
//! each case's level in that run, summed; its variance within the run is at most that
//! of the cases' moving as one (the standard errors add). From run to run the job
//! varies as the baseline's run effect, estimated jointly over its cases: at most
//! that, since a job averages cases that do not all move alike. The run's job time is the
//! calls x each case's round medians, round by round. A job size the baseline or the
//! run lacks is left out and counted; one that failed in the run fails the job. A
//! job's size is found as the sweep ran it (`analysis::job::ran_as`).

use serde::Serialize;

use super::{Baseline, BaselineCase};
use crate::analysis::job::{ran_as, weighted_rounds};
use crate::config::SizesFrom;
use crate::export::reader::{CaseRow, RunData};
use crate::stats::change::{self, Case, Design, Evidence, Input, Level};

/// One (config, rank count) of the job checked.
#[derive(Debug, Clone, Serialize)]
pub struct JobCheck {
    pub config: String,
    pub nranks: u32,
    /// The job's time under the baseline and in the run, us.
    pub base_us: f64,
    pub run_us: f64,
    /// The job's (collective, size) of this rank count matched, and left out.
    pub matched: usize,
    pub left_out: usize,
    pub case: Case,
}

/// A baseline run's job level from its cases' levels: the sum of calls x time, the
/// log-scale standard error the cases' errors added.
fn job_level(parts: &[(u64, Level)]) -> Option<Level> {
    let total: f64 = parts.iter().map(|(n, l)| *n as f64 * l.time()).sum();
    if total <= 0.0 {
        return None;
    }
    let se: Option<f64> = parts
        .iter()
        .map(|(n, l)| Some(*n as f64 * l.time() / total * l.var?.sqrt()))
        .sum();
    Some(Level {
        log: total.ln(),
        var: se.map(|s| s * s),
        rounds: parts.iter().map(|p| p.1.rounds).min().unwrap_or(1),
    })
}

/// Every (config, rank count) of the baseline the job's sizes match in the run,
/// decided together at a gate's design.
pub fn job_check(base: &Baseline, run: &RunData, job: &SizesFrom, threshold: f64) -> Vec<JobCheck> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for b in &base.cases {
        if !groups.contains(&(b.id.config.as_str(), b.id.nranks)) {
            groups.push((b.id.config.as_str(), b.id.nranks));
        }
    }
    let runs = base.runs.len();
    let mut found: Vec<(JobCheck, Input)> = Vec::new();
    for (config, n) in groups {
        let mut matched: Vec<(u64, &BaselineCase, &CaseRow)> = Vec::new();
        let mut left_out = 0;
        let mut failed = false;
        for call in job.calls.iter().filter(|c| c.nranks.is_none_or(|k| k == n)) {
            let b = base
                .cases
                .iter()
                .filter(|b| (b.id.config.as_str(), b.id.nranks) == (config, n))
                .filter(|b| b.id.collective == call.collective.name())
                .filter(|b| ran_as(b.id.bytes, call.bytes, n))
                .max_by_key(|b| b.id.bytes);
            let c = b.and_then(|b| run.cases.iter().find(|c| b.id.matches(c)));
            match (b, c) {
                (Some(b), Some(c)) if c.is_ok() && b.levels.len() == runs => {
                    matched.push((call.calls, b, c))
                }
                (Some(_), Some(c)) if !c.is_ok() => failed = true,
                _ => left_out += 1,
            }
        }
        if matched.is_empty() && !failed {
            continue;
        }
        // Each baseline run's job level, over the runs every matched case has.
        let base_levels: Option<Vec<Level>> = (0..runs)
            .map(|j| {
                job_level(
                    &matched
                        .iter()
                        .map(|(n, b, _)| (*n, b.levels[j]))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let rounds: Vec<(u64, Vec<f64>)> = matched
            .iter()
            .map(|(n, _, c)| (*n, c.round_medians()))
            .collect();
        let per_round = weighted_rounds(rounds.iter().map(|(n, r)| (*n, r.as_slice())));
        let point: f64 = matched
            .iter()
            .filter_map(|(n, _, c)| Some(*n as f64 * c.level()?.time()))
            .sum();
        let cand = per_round
            .as_deref()
            .and_then(Level::of_rounds)
            .or_else(|| Level::of_point(point));
        let evidence = match (&base_levels, cand) {
            _ if failed => Evidence::Failed,
            (Some(levels), Some(cand)) if !levels.is_empty() => {
                change::between(levels, base.run_to_run, &cand)
                    .map_or(Evidence::Missing, Evidence::Measured)
            }
            _ => Evidence::Missing,
        };
        let flagged = matched.iter().any(|(_, b, c)| b.flagged || !c.is_trusted());
        let base_us = base_levels
            .as_ref()
            .map(|l| (l.iter().map(|x| x.log).sum::<f64>() / l.len().max(1) as f64).exp())
            .unwrap_or(0.0);
        let input = Input { evidence, flagged };
        found.push((
            JobCheck {
                config: config.to_string(),
                nranks: n,
                base_us,
                run_us: cand.map_or(0.0, |l| l.time()),
                matched: matched.len(),
                left_out,
                case: change::decide(&[input], &Design::gate(threshold, 1)).cases[0],
            },
            input,
        ));
    }
    let inputs: Vec<Input> = found.iter().map(|f| f.1).collect();
    let decision = change::decide(&inputs, &Design::gate(threshold, run.looks()));
    found
        .into_iter()
        .zip(decision.cases)
        .map(|((mut check, _), case)| {
            check.case = case;
            check
        })
        .collect()
}
