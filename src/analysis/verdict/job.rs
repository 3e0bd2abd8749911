//! The SHM question for one job. With a job's collectives (a sweep's `--sizes-from`,
//! or `report --workload`), the answer rests on what disabling SHM costs the job's
//! communication time (`analysis::job`): per rank count, the job's time under the
//! config that disables SHM against the baseline, with its interval over the rounds
//! (all rank counts' intervals holding together with 95 %). The per-size verdict stays
//! beneath it as the evidence at every size measured.

use super::shm_off_config;
use crate::analysis::job::{costs, JobCost};
use crate::export::reader::RunData;

/// What disabling SHM does to the job, over its rank counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobAnswer {
    /// Some rank count's interval lies wholly above the noise band: keep SHM.
    Costs,
    /// Every rank count's interval lies within the band.
    Within,
    /// Some interval lies wholly below the band, none above.
    Saves,
    /// Neither: an interval reaches past the band, or a rank count has none.
    NotSettled,
}

/// The job's side of the SHM verdict.
#[derive(Debug, Clone)]
pub struct JobShm {
    /// The config that disables SHM.
    pub shm_off: String,
    pub costs: Vec<JobCost>,
    pub answer: JobAnswer,
}

/// The SHM verdict on the job's time; None for a run without a job, without a config
/// that disables SHM, or where no case matches the job's sizes.
pub fn for_job(run: &RunData, baseline: &str, threshold: f64) -> Option<JobShm> {
    let job = run
        .manifest
        .sizes_from
        .as_ref()
        .filter(|j| !j.calls.is_empty())?;
    let shm_off = shm_off_config(run)?;
    let costs = costs(run, job, baseline, &shm_off);
    if costs.is_empty() {
        return None;
    }
    let intervals: Vec<Option<(f64, f64)>> =
        costs.iter().map(|c| c.interval.map(|i| i.1)).collect();
    let any = |f: &dyn Fn(f64, f64) -> bool| intervals.iter().flatten().any(|&(lo, hi)| f(lo, hi));
    let answer = if any(&|lo, _| lo > threshold) {
        JobAnswer::Costs
    } else if intervals
        .iter()
        .all(|i| i.is_some_and(|(lo, hi)| lo >= -threshold && hi <= threshold))
    {
        JobAnswer::Within
    } else if any(&|_, hi| hi < -threshold) {
        JobAnswer::Saves
    } else {
        JobAnswer::NotSettled
    };
    Some(JobShm {
        shm_off,
        costs,
        answer,
    })
}

impl JobShm {
    /// The answer in a few words, for a sweep's last line: `your job: keep SHM:
    /// disabling it costs +6.0 % of its communication time on 8 ranks`.
    pub fn words(&self) -> String {
        let pct = |x: f64| format!("{:+.1} %", x * 100.0);
        // The rank count that decides: the largest change (the largest saving).
        let by_change = |a: &&JobCost, b: &&JobCost| a.change().total_cmp(&b.change());
        let worst = match self.answer {
            JobAnswer::Saves => self.costs.iter().min_by(by_change),
            _ => self.costs.iter().max_by(by_change),
        }
        .expect("a job's verdict has costs");
        let on = crate::units::plural(worst.nranks as usize, "rank", "ranks");
        match self.answer {
            JobAnswer::Costs => format!(
                "your job: keep SHM: disabling it costs {} of its communication time on {on}",
                pct(worst.change())
            ),
            JobAnswer::Within => {
                "your job: disabling SHM changes its communication time by less than the noise band"
                    .into()
            }
            JobAnswer::Saves => format!(
                "your job: disabling SHM saves {} of its communication time on {on}",
                pct(-worst.change())
            ),
            JobAnswer::NotSettled => "your job: not settled yet".into(),
        }
    }
}
