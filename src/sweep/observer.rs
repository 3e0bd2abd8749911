//! How a sweep reports progress without knowing about terminals: the orchestrator
//! calls an observer; `cmd::progress` implements one with a progress bar and one
//! with plain lines.

use std::path::Path;

use crate::model::{CaseCounts, CaseKey, CaseResult};

pub trait SweepObserver {
    /// `rounds` process groups measure each case (`measured` counts them).
    fn sweep_started(&mut self, total_cases: u64, rounds: u32, backend_note: &str);
    /// A case starts its `round` (1-based).
    fn case_started(&mut self, key: &CaseKey, round: u32);
    /// `rounds` more rounds of cases are done (or will not run: a failed case's).
    fn measured(&mut self, rounds: u64);
    /// A case is done, all its rounds combined (or failed).
    fn case_finished(&mut self, result: &CaseResult);
    fn warning(&mut self, message: &str);
    /// Something the sweep decided that the person watching should know (a group
    /// settled and stopped measuring).
    fn note(&mut self, message: &str);
    fn sweep_finished(&mut self, counts: &CaseCounts, run_dir: &Path, interrupted: bool);
}

/// Observes nothing (library users and tests).
pub struct Silent;

impl SweepObserver for Silent {
    fn sweep_started(&mut self, _: u64, _: u32, _: &str) {}
    fn case_started(&mut self, _: &CaseKey, _: u32) {}
    fn measured(&mut self, _: u64) {}
    fn case_finished(&mut self, _: &CaseResult) {}
    fn warning(&mut self, _: &str) {}
    fn note(&mut self, _: &str) {}
    fn sweep_finished(&mut self, _: &CaseCounts, _: &Path, _: bool) {}
}
