//! The SHM question for one job. With a job's collectives (a sweep's `--sizes-from`,
//! or `report --workload`), the answer rests on what disabling SHM costs the job's
//! communication time (`analysis::job`): per rank count, the job's time under the
//! config that disables SHM against the baseline, the rank counts decided together.
//! The per-size verdict stays beneath it as the evidence at every size measured.

use super::shm_off_config;
use crate::analysis::job::{costs, JobCost};
use crate::export::reader::RunData;
use crate::stats::change::{self, Change};

/// The job's side of the SHM verdict.
#[derive(Debug, Clone)]
pub struct JobShm {
    /// The config that disables SHM.
    pub shm_off: String,
    pub costs: Vec<JobCost>,
}

impl JobShm {
    /// What disabling SHM does to the job over its rank counts (`change::overall`).
    pub fn change(&self) -> Change {
        change::overall(self.costs.iter().map(|c| c.case.change))
    }

    /// The rank count that decides: the largest change (the largest saving when
    /// faster).
    pub fn deciding(&self) -> Option<&JobCost> {
        let by = |a: &&JobCost, b: &&JobCost| a.change().total_cmp(&b.change());
        match self.change() {
            Change::Faster => self.costs.iter().min_by(by),
            _ => self.costs.iter().max_by(by),
        }
    }
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
    let costs = costs(run, job, baseline, &shm_off, threshold);
    (!costs.is_empty()).then_some(JobShm { shm_off, costs })
}
