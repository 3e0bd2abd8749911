//! The cases slower than NCCL's own prediction, in the report: where the GPU
//! counts say the slow link is, then a line per config and GPU count with its sizes
//! and how far beyond the predicted time they are. `analysis::tuning::mispredict`
//! sums them up and locates the link.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::tuning::mispredict::{groups, locate, Mispredicted, SlowLink};
use crate::analysis::tuning::MISPREDICT_RATIO;
use crate::export::reader::RunData;
use crate::units::{format_us, Bytes};

/// The report's lines: where the link is, then a line per config and GPU count.
pub fn markdown(s: &mut String, run: &RunData, cases: &[Mispredicted]) -> Result<()> {
    if let Some(link) = locate(run, cases) {
        writeln!(s, "{}\n", slow_link(run, &link))?;
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

/// Where the GPU counts say the slow link is, in words.
pub fn slow_link(run: &RunData, link: &SlowLink) -> String {
    let cluster = run.manifest.cluster.is_some();
    match *link {
        SlowLink::OneCount(n) => format!(
            "Every case measured with {} is slower than NCCL predicts: a slow link, or a model that does not know this machine (`NCCL_TOPO_DUMP_FILE` writes the topology NCCL detected). One GPU count cannot tell which: measured with more (`--gpus 2,4,8`), the counts that keep to the prediction locate a link.",
            run.ranks(n)
        ),
        SlowLink::EveryCount(ref counts) => format!(
            "Every GPU count measured ({}) is slower than NCCL predicts: a link that every group uses (ranks 0 to {}) or a model that does not know this machine (`NCCL_TOPO_DUMP_FILE` writes the topology NCCL detected).",
            counts.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            counts[0].saturating_sub(1)
        ),
        SlowLink::Ranks {
            fine: m,
            slow: k,
            largest,
        } => {
            // In a sweep rank i drives GPU i; on a cluster the ranks span nodes.
            let ranks = match (k - m, cluster) {
                (1, false) => format!("rank {m} (in a sweep, GPU {m})"),
                (1, true) => format!("rank {m}"),
                (_, false) => format!("ranks {m} to {} (in a sweep, GPUs {m} to {})", k - 1, k - 1),
                (_, true) => format!("ranks {m} to {}", k - 1),
            };
            let next = if cluster {
                "`nccl-bench run --pairs` on the job's nodes times every pair of nodes apart"
                    .to_string()
            } else {
                format!("`nccl-bench sweep --pairs --gpus {largest}` times every pair apart and names it")
            };
            format!(
                "**Slow link:** groups of {} keep to NCCL's prediction and groups of {k} and more do not: the link NCCL overrates is at {ranks}, which the larger groups add. {next}.",
                run.ranks(m),
            )
        }
    }
}
