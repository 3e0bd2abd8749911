//! The report's "Latency and bandwidth model" section: per rank count, each
//! config's fixed cost and bandwidth term with their intervals, the sizes where the
//! model holds and the crossover size against the baseline, the fits per NCCL choice
//! ([`segments`]), and the SHM decision in two numbers ("disabling SHM adds X us per
//! all-reduce and lowers the bandwidth term from Y to Z GB/s").
//! `analysis::model_table` fits the models.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::model_table::{crossing, ConfigModel, Crossing};
use crate::ops::collective::Collective;
use crate::stats::alpha_beta::AlphaBeta;
use crate::units::{format_us, Bytes};

mod cells;
mod csv;
mod segments;

use cells::{alpha_cell, beta_cell, no_fit, rate};
pub use csv::csv;

/// The report's section: per rank count, each config's fixed cost and bandwidth
/// term (bus bandwidth, so it reads against busbw), where the model holds, and the
/// crossover size against the baseline; then the SHM sentence where the run has
/// both sides.
pub fn markdown(
    s: &mut String,
    models: &[ConfigModel],
    baseline: &str,
    shm_off: Option<&str>,
) -> Result<()> {
    if models.is_empty() {
        return Ok(());
    }
    writeln!(s, "## Latency and bandwidth model\n")?;
    let collective = models[0].collective;
    let factor = match collective {
        Collective::AllReduce => "2(n-1)/n",
        c if c.bus_factor(2) < 1.0 => "(n-1)/n",
        _ => "1",
    };
    writeln!(
        s,
        "Each config's mean times fitted to time = alpha + bytes / beta (robust weighted least squares on relative errors; sizes where the line misses, as where NCCL changes protocol, are left out and named; where NCCL's choice per size is known, a second table fits each choice's sizes apart). Alpha is the fixed cost of every {}; beta, shown as bus bandwidth (x {factor}), is the rate of the size-dependent term over the sizes where the line holds. Where the largest sizes are left out (they outgrow a cache, or NCCL changes algorithm), beta describes the sizes kept, and busbw at the largest size is the rate there. 95 % intervals in brackets; model.csv has every number.\n",
        collective.op_word()
    )?;
    let mut counts: Vec<u32> = models.iter().map(|m| m.nranks).collect();
    counts.sort_unstable();
    counts.dedup();
    for nranks in counts {
        let here: Vec<&ConfigModel> = models.iter().filter(|m| m.nranks == nranks).collect();
        let base = here
            .iter()
            .find(|m| m.config == baseline)
            .and_then(|m| m.fit.as_ref().ok());
        writeln!(s, "### {nranks} rank(s)\n")?;
        writeln!(
            s,
            "| config | alpha (fixed cost) | beta (bus bandwidth) | holds for | residual (rms) | crossover vs {baseline} |\n|---|---|---|---|---|---|"
        )?;
        for m in &here {
            let Ok(f) = &m.fit else {
                let why = m.fit.as_ref().err().map(no_fit).unwrap_or_default();
                writeln!(s, "| {} | {why} | | | | |", m.config)?;
                continue;
            };
            let crossing = match base {
                Some(b) if m.config != baseline => {
                    crossing_text(crossing(b, f), baseline, &m.config)
                }
                _ => String::new(),
            };
            writeln!(
                s,
                "| {} | {} | {} | {} | {:.1} % | {crossing} |",
                m.config,
                alpha_cell(f),
                beta_cell(f, m.bus_factor()),
                holds_for(f),
                f.rms_residual * 100.0,
            )?;
        }
        writeln!(s)?;
        segments::markdown(
            s,
            &here
                .iter()
                .map(|m| (m.config.as_str(), m.bus_factor(), m.segments.as_slice()))
                .collect::<Vec<_>>(),
        )?;
        if let (Some(base_model), Some(off)) = (
            here.iter().find(|m| m.config == baseline),
            shm_off.and_then(|off| here.iter().find(|m| m.config == off)),
        ) {
            if let Some(line) = shm_sentence(base_model, off) {
                writeln!(s, "{line}\n")?;
            }
        }
    }
    Ok(())
}

fn holds_for(f: &AlphaBeta) -> String {
    let (Some(first), Some(last)) = (f.kept.first(), f.kept.last()) else {
        return String::new();
    };
    let mut text = format!(
        "{} of {} sizes, {} to {}",
        f.kept.len(),
        f.kept.len() + f.left_out.len(),
        Bytes(*first as u64),
        Bytes(*last as u64)
    );
    if !f.left_out.is_empty() {
        let out: Vec<String> = f
            .left_out
            .iter()
            .map(|&b| Bytes(b as u64).to_string())
            .collect();
        write!(text, " (not at {})", out.join(", ")).ok();
    }
    text
}

/// The crossover cell: where `config` and the baseline cross, and which is faster
/// on each side.
fn crossing_text(crossing: Crossing, baseline: &str, config: &str) -> String {
    match crossing {
        Crossing::NoDifference => {
            "none: the two models do not differ (both intervals overlap)".to_string()
        }
        Crossing::At {
            bytes,
            other_faster_above,
            measured,
        } => {
            let (below, above) = if other_faster_above {
                (baseline, config)
            } else {
                (config, baseline)
            };
            format!(
                "{}: {below} faster below, {above} above{}",
                Bytes(bytes.round() as u64),
                if measured {
                    ""
                } else {
                    " (outside the sizes measured)"
                }
            )
        }
        Crossing::Never { other_faster } => {
            let faster = if other_faster { config } else { baseline };
            format!("none: {faster} faster at every size")
        }
    }
}

/// "With N ranks, disabling SHM adds X per all-reduce and lowers the bandwidth term
/// from Y to Z GB/s", when both fits determine what the sentence says.
fn shm_sentence(base: &ConfigModel, off: &ConfigModel) -> Option<String> {
    let (Ok(b), Ok(o)) = (&base.fit, &off.fit) else {
        return None;
    };
    if !(b.alpha_determined && o.alpha_determined && b.beta_determined && o.beta_determined) {
        return None;
    }
    let bus = base.bus_factor();
    let d_alpha = o.alpha_us - b.alpha_us;
    let fixed = if d_alpha >= 0.0 {
        format!(
            "adds {} to every {}",
            format_us(d_alpha),
            base.collective.op_word()
        )
    } else {
        format!(
            "takes {} off every {}",
            format_us(-d_alpha),
            base.collective.op_word()
        )
    };
    let direction = if o.beta_gbps < b.beta_gbps {
        "lowers"
    } else {
        "raises"
    };
    Some(format!(
        "**With {} ranks, disabling SHM ({}) {fixed} and {direction} the bandwidth term from {} to {} GB/s** (bus bandwidth; fixed cost {} against {}; the models hold for {} and {}).",
        base.nranks,
        off.config,
        rate(b.beta_gbps * bus),
        rate(o.beta_gbps * bus),
        format_us(o.alpha_us),
        format_us(b.alpha_us),
        span(b),
        span(o),
    ))
}

/// "8 B to 4 MiB": the sizes a model was fitted over.
fn span(f: &AlphaBeta) -> String {
    match (f.kept.first(), f.kept.last()) {
        (Some(a), Some(b)) => format!("{} to {}", Bytes(*a as u64), Bytes(*b as u64)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
