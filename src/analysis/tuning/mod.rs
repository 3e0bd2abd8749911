//! NCCL's choices and its own prediction, per GPU count: which algorithm and
//! protocol NCCL picked at each size for the run's baseline config (and where it
//! switches), whether a config forcing another choice was faster, by compare's rule
//! (the change's 95 % interval beyond the threshold), and the sizes where a case took
//! more than [`MISPREDICT_RATIO`] x the time NCCL's own model predicted for it
//! (`nccl_predicted_us`: `ncclGroupSimulateEnd`, or the TUNING line's time). The
//! columns come from the probe group of each config (`sweep::orchestrator::probe`);
//! this module only reads them. [`mispredict`] sums those cases up and says which
//! ranks the GPU counts point at.

use std::fmt::Write as _;

use anyhow::Result;

use super::compare::{one_pair, CompareOptions};
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::register::Registration;
use crate::stats::change::Change;
use crate::units::{format_us, Bytes};

mod mispredict;

use mispredict::median_of;
pub use mispredict::{Mispredicted, MISPREDICT_RATIO};

/// One size of the baseline config at one GPU count.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceRow {
    pub bytes: u64,
    /// `Ring/LL128`, with the channels where known, or a mix with shares.
    pub choice: String,
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
    pub no_prediction: Option<String>,
}

/// `algo/proto` of a case, with its channels.
fn choice_of(c: &CaseRow) -> String {
    let mut s = super::compare::choice_of(c);
    if !s.is_empty() && !c.channels.is_empty() {
        let _ = write!(s, " ({} ch)", c.channels);
    }
    s
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
fn why_no_prediction(run: &RunData) -> String {
    let version = run.manifest.nccl.as_ref().map(|n| n.version.clone());
    let parsed = version.as_deref().and_then(|v| {
        let mut parts = v.split('.').map(|p| p.trim().parse::<u32>().ok());
        Some((parts.next()??, parts.next()??))
    });
    match (version, parsed) {
        (Some(v), Some(mm)) if mm < (2, 20) => format!(
            "NCCL {v} logs no TUNING line (from 2.20) and has no ncclGroupSimulateEnd (from 2.22): it says nothing about its model"
        ),
        (Some(v), _) => format!(
            "NCCL {v} gave no estimate: the probe did not run (--no-probe), or it failed (its log under logs/ says why)"
        ),
        (None, _) => "the run does not say which NCCL it loaded".to_string(),
    }
}

/// Consecutive sizes of one GPU count whose choice differs: (last size of the old
/// choice, first of the new, old, new).
pub fn switches(rows: &[ChoiceRow]) -> Vec<(u64, u64, String, String)> {
    rows.windows(2)
        .filter(|w| !w[0].choice.is_empty() && !w[1].choice.is_empty())
        .filter(|w| strip_channels(&w[0].choice) != strip_channels(&w[1].choice))
        .map(|w| {
            (
                w[0].bytes,
                w[1].bytes,
                strip_channels(&w[0].choice).to_string(),
                strip_channels(&w[1].choice).to_string(),
            )
        })
        .collect()
}

fn strip_channels(choice: &str) -> &str {
    choice.split(" (").next().unwrap_or(choice)
}

/// The "Algorithms and protocols" section of report.md.
pub fn markdown(
    s: &mut String,
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
) -> Result<()> {
    let Some(t) = tuning(run, baseline, options) else {
        return Ok(());
    };
    writeln!(s, "## Algorithms and protocols\n")?;
    writeln!(
        s,
        "What NCCL chose for `{baseline}` at each size (read from its TUNING lines by one untimed probe per config), NCCL's own predicted time, and the fastest other config where it beat NCCL's choice by compare's rule (95 % interval beyond +-{:.0} %).\n",
        options.threshold * 100.0
    )?;
    for (n, rows) in &t.per_gpus {
        writeln!(s, "### {}\n", run.ranks(*n))?;
        for (last, first, from, to) in switches(rows) {
            writeln!(
                s,
                "- NCCL switches from {from} to {to} between {} and {}.",
                Bytes(last),
                Bytes(first)
            )?;
        }
        let mut found = Vec::new();
        writeln!(
            s,
            "\n| size | NCCL's choice | measured p50 | NCCL predicted | measured / predicted | faster config |\n|---|---|---|---|---|---|"
        )?;
        for r in rows {
            let ratio = match (r.measured_us, r.predicted_us) {
                (Some(m), Some(p)) if p > 0.0 => format!("{:.2}", m / p),
                _ => "-".into(),
            };
            let faster = match &r.faster {
                Some((config, change, ci)) => {
                    found.push((r.bytes, config.clone(), *change, *ci));
                    format!(
                        "{config} {:+.1} % [{:+.1}, {:+.1}]",
                        change * 100.0,
                        ci.0 * 100.0,
                        ci.1 * 100.0
                    )
                }
                None => "-".into(),
            };
            writeln!(
                s,
                "| {} | {} | {} | {} | {ratio} | {faster} |",
                Bytes(r.bytes),
                if r.choice.is_empty() { "-" } else { &r.choice },
                r.measured_us.map(format_us).unwrap_or_else(|| "-".into()),
                r.predicted_us.map(format_us).unwrap_or_else(|| "-".into()),
            )?;
        }
        writeln!(s)?;
        tuning_finding(s, run, &found)?;
    }
    if let Some(why) = &t.no_prediction {
        writeln!(s, "No predicted times: {why}.\n")?;
    } else if t.mispredicted.is_empty() {
        writeln!(
            s,
            "Every case took less than {MISPREDICT_RATIO} x the time NCCL's model predicted for it.\n"
        )?;
    } else {
        mispredict::markdown(s, run, &t.mispredicted)?;
    }
    Ok(())
}

/// What to set, for which sizes: each config that beat NCCL's choice, its variables
/// and the sizes.
fn tuning_finding(
    s: &mut String,
    run: &RunData,
    found: &[(u64, String, f64, (f64, f64))],
) -> Result<()> {
    if found.is_empty() {
        writeln!(
            s,
            "No forced choice was faster than NCCL's own at any size here.\n"
        )?;
        return Ok(());
    }
    let mut configs: Vec<&String> = Vec::new();
    for f in found {
        if !configs.contains(&&f.1) {
            configs.push(&f.1);
        }
    }
    for config in configs {
        let sizes: Vec<&(u64, String, f64, (f64, f64))> =
            found.iter().filter(|f| &f.1 == config).collect();
        let best = sizes
            .iter()
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .expect("one size at least");
        let manifest_config = run.manifest.configs.iter().find(|c| &c.name == config);
        let env = manifest_config
            .map(|c| {
                c.env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|e| !e.is_empty());
        let register = manifest_config
            .and_then(|c| c.register)
            .filter(|&r| r != Registration::None);
        let sizes_text = sizes
            .iter()
            .map(|f| Bytes(f.0).to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let best_text = format!(
            "best {:+.1} % [{:+.1}, {:+.1}] at {}",
            best.2 * 100.0,
            best.3 .0 * 100.0,
            best.3 .1 * 100.0,
            Bytes(best.0)
        );
        match register {
            // Registration is the job's to do: no variable or tuner sets it.
            Some(r) => writeln!(
                s,
                "**Registration finding:** `{config}` (buffers registered: {}{}) is faster than NCCL's own choice on plain buffers at {sizes_text} ({best_text}): allocate the job's communication buffers with ncclMemAlloc and register them the same way (nccl-tests -R {}), and check again after an NCCL upgrade.\n",
                registration_calls(r),
                env.map(|e| format!("; {e}")).unwrap_or_default(),
                r.nccl_tests_flag()
            )?,
            None => writeln!(
                s,
                "**Tuning finding:** `{config}` ({}) beats NCCL's own choice at {sizes_text} ({best_text}): set it for those sizes (for example per communicator, or with a tuner plugin), and check again after an NCCL upgrade.\n",
                env.unwrap_or_else(|| "its variables".into())
            )?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// The call a registration makes, as the finding names it.
fn registration_calls(r: Registration) -> &'static str {
    match r {
        Registration::Symmetric => "symmetric windows, ncclCommWindowRegister",
        _ => "ncclCommRegister",
    }
}
