//! How a sweep reports progress without knowing about terminals: the orchestrator
//! calls an observer; `cmd::progress` implements one with a progress bar and one
//! with plain lines.

use std::path::Path;

use crate::model::{CaseCounts, CaseKey, CaseResult};

pub trait SweepObserver {
    fn sweep_started(&mut self, total_cases: u64, backend_note: &str);
    fn case_started(&mut self, key: &CaseKey);
    fn case_finished(&mut self, result: &CaseResult);
    fn warning(&mut self, message: &str);
    fn sweep_finished(&mut self, counts: &CaseCounts, run_dir: &Path, interrupted: bool);
}

/// Observes nothing (library users and tests).
pub struct Silent;

impl SweepObserver for Silent {
    fn sweep_started(&mut self, _: u64, _: &str) {}
    fn case_started(&mut self, _: &CaseKey) {}
    fn case_finished(&mut self, _: &CaseResult) {}
    fn warning(&mut self, _: &str) {}
    fn sweep_finished(&mut self, _: &CaseCounts, _: &Path, _: bool) {}
}
