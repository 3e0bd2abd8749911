//! The SHM verdict of a run of several collectives: one per collective, each decided
//! from that collective's cases alone, at its share of the rate (Bonferroni over the
//! collectives), so that the answers over all of them hold together. SHM matters
//! where any collective pays for disabling it.

use super::{decide, Verdict};
use crate::analysis::compare::CompareOptions;
use crate::export::reader::RunData;
use crate::ops::collective::Collective;

/// Each collective of the run with its own verdict, in the run's order.
pub fn decide_each(
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
) -> Vec<(Collective, Verdict)> {
    let collectives = run.collectives();
    let options = CompareOptions {
        alpha: options.alpha / collectives.len().max(1) as f64,
        ..options
    };
    collectives
        .into_iter()
        .map(|c| {
            (
                c,
                run.for_collective(c, |one| decide(one, baseline, options)),
            )
        })
        .collect()
}
