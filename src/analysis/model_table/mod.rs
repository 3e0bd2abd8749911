//! The latency-bandwidth model of every config and rank count of a run (fitted by
//! `stats::alpha_beta` to the trusted ok cases' mean times): `model.csv` and the
//! report's section, which turns the SHM decision into two numbers ("disabling SHM
//! adds X us per all-reduce and lowers the bandwidth term from Y to Z GB/s") and
//! names the size where two configs cross. Where NCCL's choices are known, each
//! algorithm/protocol segment of a config is fitted apart too ([`segments`]).

use std::fmt::Write as _;

use anyhow::Result;

use crate::export::reader::{CaseRow, RunData};
use crate::ops::collective::Collective;
use crate::stats::alpha_beta::{crossover_bytes, fit, AlphaBeta, NoFit, Point};
use crate::units::{format_us, Bytes};

mod cells;
mod segments;

use cells::{alpha_cell, beta_cell, rate};

pub use segments::Segment;

/// Columns of `model.csv`, in order. README.md documents each.
pub const COLUMNS: [&str; 23] = [
    "config",
    "nranks",
    "dtype",
    "op",
    "status",
    "sizes",
    "sizes_kept",
    "min_bytes_kept",
    "max_bytes_kept",
    "alpha_us",
    "alpha_ci_low_us",
    "alpha_ci_high_us",
    "beta_algbw_gbps",
    "beta_algbw_ci_low_gbps",
    "beta_algbw_ci_high_gbps",
    "beta_busbw_gbps",
    "rms_residual_pct",
    "max_residual_pct",
    "alpha_determined",
    "beta_determined",
    "note",
    "choice",
    "collective",
];

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

/// The text of `model.csv`: a row per config over every size (`choice` empty), then
/// a row per NCCL choice where its sizes span several.
pub fn csv(models: &[ConfigModel]) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    for m in models {
        w.write_record(csv_row(m, m.sizes, &m.fit, ""))?;
        for seg in &m.segments {
            w.write_record(csv_row(m, seg.sizes, &seg.fit, &seg.choice))?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

fn csv_row(
    m: &ConfigModel,
    sizes: usize,
    fit: &Result<AlphaBeta, NoFit>,
    choice: &str,
) -> Vec<String> {
    let mut row = vec![
        m.config.clone(),
        m.nranks.to_string(),
        m.dtype.clone(),
        m.op.clone(),
    ];
    match fit {
        Ok(f) => {
            let kept = |i: usize| f.kept.get(i).map(|b| format!("{b:.0}")).unwrap_or_default();
            let left_out: Vec<String> = f
                .left_out
                .iter()
                .map(|&b| Bytes(b as u64).to_string())
                .collect();
            row.extend([
                "fit".to_string(),
                sizes.to_string(),
                f.kept.len().to_string(),
                kept(0),
                kept(f.kept.len().saturating_sub(1)),
                format!("{:.3}", f.alpha_us),
                format!("{:.3}", f.alpha_ci.0),
                format!("{:.3}", f.alpha_ci.1),
                rate(f.beta_gbps),
                rate(f.beta_ci.0),
                rate(f.beta_ci.1),
                rate(f.beta_gbps * m.bus_factor()),
                format!("{:.2}", f.rms_residual * 100.0),
                format!("{:.2}", f.max_residual * 100.0),
                f.alpha_determined.to_string(),
                f.beta_determined.to_string(),
                if left_out.is_empty() {
                    String::new()
                } else {
                    format!("does not hold at {}", left_out.join(" "))
                },
            ]);
        }
        Err(why) => {
            row.extend(["not possible".to_string(), sizes.to_string()]);
            row.extend(std::iter::repeat_n(String::new(), 14));
            row.push(why.to_string());
        }
    }
    row.push(choice.to_string());
    row.push(m.collective.to_string());
    row
}

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
                let why = m
                    .fit
                    .as_ref()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                writeln!(s, "| {} | {why} | | | | |", m.config)?;
                continue;
            };
            let crossing = match base {
                Some(b) if m.config != baseline => crossing_text(b, f, baseline, &m.config),
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

fn crossing_text(base: &AlphaBeta, other: &AlphaBeta, baseline: &str, config: &str) -> String {
    let overlap = |a: (f64, f64), b: (f64, f64)| a.0 <= b.1 && b.0 <= a.1;
    if overlap(base.alpha_ci, other.alpha_ci) && overlap(base.beta_ci, other.beta_ci) {
        return "none: the two models do not differ (both intervals overlap)".to_string();
    }
    let measured = |x: f64| {
        let lo = base.kept.first().copied().unwrap_or(0.0);
        let hi = base.kept.last().copied().unwrap_or(0.0);
        if (lo..=hi).contains(&x) {
            ""
        } else {
            " (outside the sizes measured)"
        }
    };
    match crossover_bytes(base, other) {
        Some(x) => {
            let other_faster_above = other.beta_gbps > base.beta_gbps;
            let (below, above) = if other_faster_above {
                (baseline, config)
            } else {
                (config, baseline)
            };
            format!(
                "{}: {below} faster below, {above} above{}",
                Bytes(x.round() as u64),
                measured(x)
            )
        }
        None => {
            let faster = if other.time_us(1.0) < base.time_us(1.0) {
                config
            } else {
                baseline
            };
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
