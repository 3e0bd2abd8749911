//! Where NCCL's model expects more than the machine gives: the cases slower than
//! [`MISPREDICT_RATIO`] x NCCL's own prediction, summed up per config and GPU count,
//! and, from the GPU counts where they appear, the ranks that hold the slow link.
//! A link NCCL believes healthy slows every collective of every group that uses it:
//! when groups of m ranks keep to the prediction and groups of k > m ranks do not,
//! the link is at one of the ranks m to k-1 that the larger groups add (in a sweep,
//! rank i runs on GPU i).

use std::fmt::Write as _;

use anyhow::Result;

use crate::export::reader::{CaseRow, RunData};
use crate::units::{format_us, Bytes};

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

/// The ranks that the GPU counts point at, in words, where they point anywhere:
/// every count from some k on is slow (most of its predicted cases beyond the
/// ratio), and the count m just below keeps to the prediction.
pub fn locate(run: &RunData, cases: &[Mispredicted]) -> Option<String> {
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
    let cluster = run.manifest.cluster.is_some();
    if first == 0 {
        if counts.len() == 1 {
            return Some(format!(
                "Every case measured with {} is slower than NCCL predicts: a slow link, or a model that does not know this machine (`NCCL_TOPO_DUMP_FILE` writes the topology NCCL detected). One GPU count cannot tell which: measured with more (`--gpus 2,4,8`), the counts that keep to the prediction locate a link.",
                run.ranks(counts[0])
            ));
        }
        return Some(format!(
            "Every GPU count measured ({}) is slower than NCCL predicts: a link that every group uses (ranks 0 to {}) or a model that does not know this machine (`NCCL_TOPO_DUMP_FILE` writes the topology NCCL detected).",
            counts.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            counts[0].saturating_sub(1)
        ));
    }
    let (m, k) = (counts[first - 1], counts[first]);
    if share(m) >= FINE_SHARE {
        return None;
    }
    // In a sweep rank i drives GPU i; on a cluster the ranks span nodes.
    let ranks = match (k - m, cluster) {
        (1, false) => format!("rank {m} (in a sweep, GPU {m})"),
        (1, true) => format!("rank {m}"),
        (_, false) => format!("ranks {m} to {} (in a sweep, GPUs {m} to {})", k - 1, k - 1),
        (_, true) => format!("ranks {m} to {}", k - 1),
    };
    let next = if cluster {
        "`nccl-bench run --pairs` on the job's nodes times every pair of nodes apart".to_string()
    } else {
        format!(
            "`nccl-bench sweep --pairs --gpus {}` times every pair apart and names it",
            counts[counts.len() - 1]
        )
    };
    Some(format!(
        "**Slow link:** groups of {} keep to NCCL's prediction and groups of {k} and more do not: the link NCCL overrates is at {ranks}, which the larger groups add. {next}.",
        run.ranks(m),
    ))
}

/// The report's lines: where the link is, then a line per config and GPU count.
pub fn markdown(s: &mut String, run: &RunData, cases: &[Mispredicted]) -> Result<()> {
    if let Some(line) = locate(run, cases) {
        writeln!(s, "{line}\n")?;
    }
    writeln!(
        s,
        "Slower than {MISPREDICT_RATIO} x NCCL's own prediction (its model expects more of this machine than it gives: a slow link, a GPU or NIC below its rated speed, or a model that does not know this topology):\n"
    )?;
    for g in groups(run, cases) {
        let sizes = match (
            g.sizes.as_slice(),
            cases
                .iter()
                .find(|m| m.config == g.config && m.nranks == g.nranks),
        ) {
            ([one], Some(m)) => format!(
                "{}: {} measured, {} predicted",
                Bytes(*one),
                format_us(m.measured_us),
                format_us(m.predicted_us)
            ),
            (all, _) => format!(
                "{} sizes from {} to {}",
                all.len(),
                Bytes(all[0]),
                Bytes(all[all.len() - 1])
            ),
        };
        let ratio = if format!("{:.1}", g.ratios.0) == format!("{:.1}", g.ratios.1) {
            format!("{:.1} x", g.ratios.0)
        } else {
            format!("{:.1} to {:.1} x", g.ratios.0, g.ratios.1)
        };
        writeln!(
            s,
            "- {}, {}: {} of {} cases with a prediction ({sizes}), {ratio} the predicted time",
            g.config,
            run.ranks(g.nranks),
            g.beyond,
            g.predicted
        )?;
    }
    writeln!(s)?;
    Ok(())
}
