//! The latency-bandwidth model of every config and rank count of a run (fitted by
//! `stats::alpha_beta` to the trusted ok cases' mean times), and where two configs'
//! models cross ([`crossing`]). `report::sections::model_table` turns it into the
//! report's section, which says the SHM decision in two numbers, and into `model.csv`.
//! Where NCCL's choices are known, each algorithm/protocol segment of a config is
//! fitted apart too ([`segments`]).

use crate::export::reader::{CaseRow, RunData};
use crate::ops::collective::Collective;
use crate::stats::alpha_beta::{crossover_bytes, fit, AlphaBeta, NoFit, Point};

mod segments;

pub use segments::Segment;

/// The model of one config at one rank count.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigModel {
    pub config: String,
    pub collective: Collective,
    pub nranks: u32,
    pub dtype: String,
    pub op: String,
    /// Sizes with a trusted ok mean time (the fit's input).
    pub sizes: usize,
    pub fit: Result<AlphaBeta, NoFit>,
    /// The fits per NCCL choice, where the config's sizes span two or more.
    pub segments: Vec<Segment>,
}

impl ConfigModel {
    /// busbw / algbw for this rank count: nccl-tests' factor of the collective
    /// (2(n-1)/n for all-reduce).
    pub fn bus_factor(&self) -> f64 {
        if self.nranks == 0 {
            0.0
        } else {
            self.collective.bus_factor(self.nranks)
        }
    }
}

/// Every (config, collective, rank count, datatype, operator) of the run, in the
/// run's order.
pub fn models(run: &RunData) -> Vec<ConfigModel> {
    fn key(c: &CaseRow) -> (&str, Collective, u32, &str, &str) {
        let (dtype, op) = (c.dtype.as_str(), c.op.as_str());
        (c.config.as_str(), c.coll(), c.nranks, dtype, op)
    }
    let mut groups = Vec::new();
    for c in &run.cases {
        if !groups.contains(&key(c)) {
            groups.push(key(c));
        }
    }
    groups
        .into_iter()
        .map(|group| {
            let (config, collective, nranks, dtype, op) = group;
            let cases: Vec<&CaseRow> = run
                .cases
                .iter()
                .filter(|c| key(c) == group)
                .filter(|c| c.is_ok() && c.is_trusted())
                .collect();
            let points: Vec<Point> = cases.iter().filter_map(|c| point(c)).collect();
            ConfigModel {
                config: config.to_string(),
                collective,
                nranks,
                dtype: dtype.to_string(),
                op: op.to_string(),
                sizes: points.len(),
                fit: fit(&points),
                segments: segments::segments(&cases),
            }
        })
        .collect()
}

fn point(c: &CaseRow) -> Option<Point> {
    Some(Point {
        bytes: c.bytes as f64,
        time_us: c.time_us?,
    })
}

/// Where another config's model crosses the baseline's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Crossing {
    /// Both intervals (alpha and beta) overlap: the two models do not differ.
    NoDifference,
    /// The lines cross at `bytes`: the other config is faster above it where
    /// `other_faster_above`, below it otherwise. `measured`: `bytes` lies within the
    /// sizes the baseline's model was fitted over.
    At {
        bytes: f64,
        other_faster_above: bool,
        measured: bool,
    },
    /// The lines do not cross at a positive size: the other config is faster at
    /// every size where `other_faster`, the baseline otherwise.
    Never { other_faster: bool },
}

/// Where `other`'s line crosses `base`'s, or that they do not differ.
pub fn crossing(base: &AlphaBeta, other: &AlphaBeta) -> Crossing {
    let overlap = |a: (f64, f64), b: (f64, f64)| a.0 <= b.1 && b.0 <= a.1;
    if overlap(base.alpha_ci, other.alpha_ci) && overlap(base.beta_ci, other.beta_ci) {
        return Crossing::NoDifference;
    }
    match crossover_bytes(base, other) {
        Some(x) => {
            let lo = base.kept.first().copied().unwrap_or(0.0);
            let hi = base.kept.last().copied().unwrap_or(0.0);
            Crossing::At {
                bytes: x,
                other_faster_above: other.beta_gbps > base.beta_gbps,
                measured: (lo..=hi).contains(&x),
            }
        }
        None => Crossing::Never {
            other_faster: other.time_us(1.0) < base.time_us(1.0),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests;
