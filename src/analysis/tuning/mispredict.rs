//! Where NCCL's model expects more than the machine gives: the cases slower than
//! [`MISPREDICT_RATIO`] x NCCL's own prediction, summed up per config and GPU count,
//! and, from the GPU counts where they appear, the ranks that hold the slow link.
//! A link NCCL believes healthy slows every collective of every group that uses it:
//! when groups of m ranks keep to the prediction and groups of k > m ranks do not,
//! the link is at one of the ranks m to k-1 that the larger groups add (in a sweep,
//! rank i runs on GPU i).

use crate::export::reader::{CaseRow, RunData};

/// Measured over predicted beyond which NCCL's model is said to be wrong.
pub const MISPREDICT_RATIO: f64 = 1.5;

/// A case that took more than [`MISPREDICT_RATIO`] x NCCL's prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Mispredicted {
    pub config: String,
    pub nranks: u32,
    pub bytes: u64,
    pub measured_us: f64,
    pub predicted_us: f64,
}

/// The typical time of an ok case (the geometric mean of its round medians).
pub fn median_of(c: &CaseRow) -> Option<f64> {
    c.typical_us().filter(|_| c.is_ok())
}

/// Share of a GPU count's predicted cases beyond the ratio from which the count is
/// slow, and below which it keeps to the prediction.
const SLOW_SHARE: f64 = 0.5;
const FINE_SHARE: f64 = 0.1;

/// The cases of one config and GPU count beyond NCCL's prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub config: String,
    pub nranks: u32,
    /// Cases beyond, of the cases with a prediction.
    pub beyond: usize,
    pub predicted: usize,
    /// The distinct sizes beyond, ascending.
    pub sizes: Vec<u64>,
    /// Smallest and largest measured / predicted among those beyond.
    pub ratios: (f64, f64),
}

/// Per config and GPU count, in the run's order.
pub fn groups(run: &RunData, cases: &[Mispredicted]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for m in cases {
        let ratio = m.measured_us / m.predicted_us;
        match out
            .iter_mut()
            .find(|g| g.config == m.config && g.nranks == m.nranks)
        {
            Some(g) => {
                g.beyond += 1;
                if !g.sizes.contains(&m.bytes) {
                    g.sizes.push(m.bytes);
                    g.sizes.sort_unstable();
                }
                g.ratios = (g.ratios.0.min(ratio), g.ratios.1.max(ratio));
            }
            None => out.push(Group {
                config: m.config.clone(),
                nranks: m.nranks,
                beyond: 1,
                predicted: predicted_cases(run, |c| c.config == m.config && c.nranks == m.nranks),
                sizes: vec![m.bytes],
                ratios: (ratio, ratio),
            }),
        }
    }
    out
}

/// Whether a case has a measured median and a prediction to hold it against.
fn predicted(c: &CaseRow) -> bool {
    median_of(c).is_some() && c.nccl_predicted_us.is_some_and(|p| p > 0.0)
}

fn predicted_cases(run: &RunData, keep: impl Fn(&CaseRow) -> bool) -> usize {
    run.cases.iter().filter(|c| keep(c) && predicted(c)).count()
}

/// What the GPU counts beyond NCCL's prediction point at.
#[derive(Debug, Clone, PartialEq)]
pub enum SlowLink {
    /// The one GPU count measured is slow: a slow link or a model that does not know
    /// the machine, which one count cannot tell apart.
    OneCount(u32),
    /// Every GPU count measured (ascending) is slow: a link that every group uses
    /// (ranks 0 to the smallest count - 1) or the model.
    EveryCount(Vec<u32>),
    /// Groups of `fine` ranks keep to the prediction and groups of `slow` and more do
    /// not: the link is at ranks `fine` to `slow` - 1. `largest` is the largest count
    /// measured.
    Ranks { fine: u32, slow: u32, largest: u32 },
}

/// The ranks that the GPU counts point at, where they point anywhere: every count
/// from some k on is slow (most of its predicted cases beyond the ratio), and the
/// count m just below keeps to the prediction.
pub fn locate(run: &RunData, cases: &[Mispredicted]) -> Option<SlowLink> {
    let mut counts: Vec<u32> = run
        .cases
        .iter()
        .filter(|c| predicted(c))
        .map(|c| c.nranks)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let share = |n: u32| {
        let all = predicted_cases(run, |c| c.nranks == n);
        let beyond = cases.iter().filter(|m| m.nranks == n).count();
        beyond as f64 / all.max(1) as f64
    };
    let slow: Vec<bool> = counts.iter().map(|&n| share(n) >= SLOW_SHARE).collect();
    let first = slow.iter().position(|s| *s)?;
    if slow[first..].iter().any(|s| !s) {
        return None;
    }
    if first == 0 {
        if counts.len() == 1 {
            return Some(SlowLink::OneCount(counts[0]));
        }
        return Some(SlowLink::EveryCount(counts));
    }
    let (fine, slow) = (counts[first - 1], counts[first]);
    if share(fine) >= FINE_SHARE {
        return None;
    }
    Some(SlowLink::Ranks {
        fine,
        slow,
        largest: counts[counts.len() - 1],
    })
}
