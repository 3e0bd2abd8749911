//! The model per NCCL choice: NCCL changes algorithm and protocol with size (LL at
//! the small sizes, LL128, then Simple; Ring, Tree or NVLS), and each choice has its
//! own fixed cost and rate. One line over every size leaves the sizes around a switch
//! out; here each run of consecutive sizes where NCCL made one choice (the probe's
//! `algo` and `proto` columns) gets its own alpha and beta.

use crate::analysis::compare::choice_of;
use crate::export::reader::CaseRow;
use crate::stats::alpha_beta::{fit, AlphaBeta, NoFit, Point};

/// The sizes of one config where NCCL ran one algorithm and protocol, and their fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// `Ring/LL128`, as `compare` names a choice.
    pub choice: String,
    pub first_bytes: u64,
    pub last_bytes: u64,
    /// Sizes with a trusted ok mean time in the segment (the fit's input).
    pub sizes: usize,
    pub fit: Result<AlphaBeta, NoFit>,
}

/// The segments of one config's trusted ok cases (any order): consecutive sizes
/// with the same known choice. Empty where NCCL's choice is unknown (the host
/// backend, no probe, NCCL before 2.20) or where there is one choice only, since
/// the fit over every size is then that choice's.
pub fn segments(cases: &[&CaseRow]) -> Vec<Segment> {
    // The host backend's `proto` is its store mode, chosen per round: not NCCL's.
    if cases.iter().any(|c| c.backend == "host") {
        return Vec::new();
    }
    let mut sorted: Vec<(&CaseRow, String)> = cases
        .iter()
        .filter(|c| c.time_us.is_some())
        .map(|c| (*c, choice_of(c)))
        .collect();
    sorted.sort_by_key(|(c, _)| c.bytes);
    let mut runs: Vec<Vec<(&CaseRow, String)>> = Vec::new();
    for (c, choice) in sorted {
        match runs.last_mut() {
            Some(run) if run[0].1 == choice => run.push((c, choice)),
            _ => runs.push(vec![(c, choice)]),
        }
    }
    if runs.len() < 2 || runs.iter().any(|r| r[0].1.is_empty()) {
        return Vec::new();
    }
    runs.into_iter()
        .map(|run| {
            let points: Vec<Point> = run
                .iter()
                .filter_map(|(c, _)| {
                    Some(Point {
                        bytes: c.bytes as f64,
                        time_us: c.time_us?,
                    })
                })
                .collect();
            Segment {
                choice: run[0].1.clone(),
                first_bytes: run[0].0.bytes,
                last_bytes: run[run.len() - 1].0.bytes,
                sizes: points.len(),
                fit: fit(&points),
            }
        })
        .collect()
}
