//! The "Algorithms and protocols" section of report.md: per GPU count, what NCCL
//! chose for the baseline config at each size and where it switches, NCCL's own
//! predicted time against the measured one, and the fastest other config where it
//! beat NCCL's choice by compare's rule, said as a tuning or registration finding.
//! Then the cases slower than NCCL predicts ([`mispredict`]), or why there is no
//! prediction. `analysis::tuning` finds all of it.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::compare::CompareOptions;
use crate::analysis::tuning::{switches, tuning, ChoiceRow, NoPrediction, MISPREDICT_RATIO};
use crate::export::reader::RunData;
use crate::nccl::register::Registration;
use crate::units::{format_us, Bytes};

mod mispredict;

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
                choice_cell(r),
                r.measured_us.map(format_us).unwrap_or_else(|| "-".into()),
                r.predicted_us.map(format_us).unwrap_or_else(|| "-".into()),
            )?;
        }
        writeln!(s)?;
        tuning_finding(s, run, &found)?;
    }
    if let Some(why) = &t.no_prediction {
        writeln!(s, "No predicted times: {}.\n", no_prediction(why))?;
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

/// The call a registration makes, as the finding names it.
fn registration_calls(r: Registration) -> &'static str {
    match r {
        Registration::Symmetric => "symmetric windows, ncclCommWindowRegister",
        _ => "ncclCommRegister",
    }
}

/// NCCL's choice at one size with its channels, `-` where not recorded.
fn choice_cell(r: &ChoiceRow) -> String {
    match (r.choice.as_str(), r.channels.as_str()) {
        ("", _) => "-".into(),
        (choice, "") => choice.into(),
        (choice, channels) => format!("{choice} ({channels} ch)"),
    }
}

/// Why no case has a prediction: its version, or no probe.
fn no_prediction(why: &NoPrediction) -> String {
    match why {
        NoPrediction::TooOld(v) => format!(
            "NCCL {v} logs no TUNING line (from 2.20) and has no ncclGroupSimulateEnd (from 2.22): it says nothing about its model"
        ),
        NoPrediction::NoEstimate(v) => format!(
            "NCCL {v} gave no estimate: the probe did not run (--no-probe), or it failed (its log under logs/ says why)"
        ),
        NoPrediction::UnknownNccl => "the run does not say which NCCL it loaded".to_string(),
    }
}

#[cfg(test)]
mod tests;
