//! NCCL's choices and its own prediction, per GPU count: which algorithm and
//! protocol NCCL picked at each size for the run's baseline config (and where it
//! switches), whether a config forcing another choice was faster, by compare's rule
//! (the change's 95 % interval beyond the threshold), and the sizes where a case took
//! more than [`MISPREDICT_RATIO`] x the time NCCL's own model predicted for it
//! (`nccl_predicted_us`: `ncclGroupSimulateEnd`, or the TUNING line's time). The
//! columns come from the probe group of each config (`sweep::orchestrator::probe`);
//! this module only reads them. [`mispredict`] sums those cases up and says which
//! ranks the GPU counts point at. `report::sections::tuning` says it.

use super::compare::{choice_of, one_pair, CompareOptions};
use crate::export::reader::{CaseRow, RunData};
use crate::stats::change::Change;

pub mod mispredict;

use mispredict::median_of;
pub use mispredict::{Mispredicted, SlowLink, MISPREDICT_RATIO};

/// One size of the baseline config at one GPU count.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceRow {
    pub bytes: u64,
    /// `Ring/LL128`, as `compare` names a choice; empty where not recorded.
    pub choice: String,
    /// The channels NCCL used, where known.
    pub channels: String,
    pub measured_us: Option<f64>,
    pub predicted_us: Option<f64>,
    /// The fastest other config at this size when it is faster by compare's rule:
    /// its name, the change against the baseline and its interval.
    pub faster: Option<(String, f64, (f64, f64))>,
}

/// The section's findings.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// Per GPU count, the baseline config's sizes.
    pub per_gpus: Vec<(u32, Vec<ChoiceRow>)>,
    pub mispredicted: Vec<Mispredicted>,
    /// Why no case has a prediction, where none has.
    pub no_prediction: Option<NoPrediction>,
}

/// Why a run of NCCL has no predicted time.
#[derive(Debug, Clone, PartialEq)]
pub enum NoPrediction {
    /// NCCL before 2.20 (this version): no TUNING line and no `ncclGroupSimulateEnd`.
    TooOld(String),
    /// NCCL 2.20 or later (this version) gave none: no probe, or a failed one.
    NoEstimate(String),
    /// The run does not name the NCCL it loaded.
    UnknownNccl,
}

/// The findings, or `None` where the run has no NCCL choices to show (the host
/// backend, imports, runs before these columns).
pub fn tuning(run: &RunData, baseline: &str, options: CompareOptions) -> Option<Tuning> {
    let nccl = |c: &&CaseRow| c.backend != "host" && !choice_of(c).is_empty();
    if !run.cases.iter().any(|c| nccl(&c)) {
        return None;
    }
    let mut gpus: Vec<u32> = run.cases.iter().map(|c| c.nranks).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let mut per_gpus = Vec::new();
    for n in gpus {
        let base: Vec<&CaseRow> = run
            .cases
            .iter()
            .filter(|c| c.nranks == n && c.config == baseline)
            .collect();
        let rows: Vec<ChoiceRow> = base
            .iter()
            .map(|b| ChoiceRow {
                bytes: b.bytes,
                choice: choice_of(b),
                channels: b.channels.clone(),
                measured_us: median_of(b),
                predicted_us: b.nccl_predicted_us,
                faster: faster_config(run, b, options),
            })
            .collect();
        if rows.iter().any(|r| !r.choice.is_empty()) {
            per_gpus.push((n, rows));
        }
    }
    let mispredicted = run
        .cases
        .iter()
        .filter_map(|c| {
            let (measured_us, predicted_us) = (median_of(c)?, c.nccl_predicted_us?);
            (predicted_us > 0.0 && measured_us > MISPREDICT_RATIO * predicted_us).then(|| {
                Mispredicted {
                    config: c.config.clone(),
                    nranks: c.nranks,
                    bytes: c.bytes,
                    measured_us,
                    predicted_us,
                }
            })
        })
        .collect();
    let no_prediction =
        (!run.cases.iter().any(|c| c.nccl_predicted_us.is_some())).then(|| why_no_prediction(run));
    Some(Tuning {
        per_gpus,
        mispredicted,
        no_prediction,
    })
}

/// The fastest ok, trusted config at the baseline case's size and GPU count, when it
/// is faster than the baseline by compare's rule.
fn faster_config(
    run: &RunData,
    base: &CaseRow,
    options: CompareOptions,
) -> Option<(String, f64, (f64, f64))> {
    let fastest = run
        .cases
        .iter()
        .filter(|c| {
            c.nranks == base.nranks
                && c.bytes == base.bytes
                && c.config != base.config
                && c.dtype == base.dtype
                && c.op == base.op
                && c.coll() == base.coll()
                && c.is_trusted()
        })
        .filter_map(|c| Some((median_of(c)?, c)))
        .min_by(|a, b| a.0.total_cmp(&b.0))?
        .1;
    let case = one_pair(run, base, fastest, options);
    match (case.change, case.relative(), case.interval) {
        (Change::Faster, Some(change), Some(ci)) => Some((fastest.config.clone(), change, ci)),
        _ => None,
    }
}

/// Why a run of NCCL has no predicted time: its version, or no probe.
fn why_no_prediction(run: &RunData) -> NoPrediction {
    let version = run.manifest.nccl.as_ref().map(|n| n.version.clone());
    let parsed = version.as_deref().and_then(|v| {
        let mut parts = v.split('.').map(|p| p.trim().parse::<u32>().ok());
        Some((parts.next()??, parts.next()??))
    });
    match (version, parsed) {
        (Some(v), Some(mm)) if mm < (2, 20) => NoPrediction::TooOld(v),
        (Some(v), _) => NoPrediction::NoEstimate(v),
        (None, _) => NoPrediction::UnknownNccl,
    }
}

/// Consecutive sizes of one GPU count whose choice differs: (last size of the old
/// choice, first of the new, old, new).
pub fn switches(rows: &[ChoiceRow]) -> Vec<(u64, u64, String, String)> {
    rows.windows(2)
        .filter(|w| !w[0].choice.is_empty() && !w[1].choice.is_empty())
        .filter(|w| w[0].choice != w[1].choice)
        .map(|w| {
            (
                w[0].bytes,
                w[1].bytes,
                w[0].choice.clone(),
                w[1].choice.clone(),
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
