//! `model.csv`: a row per config and rank count fitted over every size, then a row
//! per NCCL choice where that config's sizes span several. [`ModelRow`]'s fields are
//! its columns, in order.

use std::io;

use serde::Serialize;

use super::cells::{no_fit, rate};
use crate::analysis::model_table::ConfigModel;
use crate::stats::alpha_beta::{AlphaBeta, NoFit};
use crate::units::Bytes;

/// One row of `model.csv`. The interval and residual columns are empty where there
/// is no fit.
#[derive(Debug, Default, Serialize)]
struct ModelRow {
    config: String,
    nranks: u32,
    dtype: String,
    op: String,
    /// `fit`, or `not possible`.
    status: &'static str,
    /// Sizes with a trusted ok mean time: the fit's input.
    sizes: usize,
    /// Sizes where the line holds.
    sizes_kept: Option<usize>,
    min_bytes_kept: Option<String>,
    max_bytes_kept: Option<String>,
    /// The fixed cost of every call, with its 95 % interval.
    alpha_us: Option<String>,
    alpha_ci_low_us: Option<String>,
    alpha_ci_high_us: Option<String>,
    /// The rate of the size-dependent term as algbw, with its 95 % interval.
    beta_algbw_gbps: Option<String>,
    beta_algbw_ci_low_gbps: Option<String>,
    beta_algbw_ci_high_gbps: Option<String>,
    /// The same rate as busbw: algbw times the collective's bus factor.
    beta_busbw_gbps: Option<String>,
    rms_residual_pct: Option<String>,
    max_residual_pct: Option<String>,
    /// Whether some size kept has alpha as 10 % or more of its time.
    alpha_determined: Option<bool>,
    /// Whether some size kept has the bytes term as 10 % or more of its time.
    beta_determined: Option<bool>,
    /// The sizes the line misses, or why there is no fit.
    note: String,
    /// NCCL's algorithm and protocol on a row per choice; empty on the row over
    /// every size.
    choice: String,
    collective: String,
}

/// The text of `model.csv`, its header included where there are no models.
pub fn csv(models: &[ConfigModel]) -> io::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    if models.is_empty() {
        w.serialize(ModelRow::default())?;
        let text = w
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        let end = text.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        return Ok(text[..end].to_vec());
    }
    for m in models {
        w.serialize(row(m, m.sizes, &m.fit, ""))?;
        for seg in &m.segments {
            w.serialize(row(m, seg.sizes, &seg.fit, &seg.choice))?;
        }
    }
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}

fn row(m: &ConfigModel, sizes: usize, fit: &Result<AlphaBeta, NoFit>, choice: &str) -> ModelRow {
    let base = ModelRow {
        config: m.config.clone(),
        nranks: m.nranks,
        dtype: m.dtype.clone(),
        op: m.op.clone(),
        sizes,
        choice: choice.to_string(),
        collective: m.collective.to_string(),
        ..ModelRow::default()
    };
    let f = match fit {
        Ok(f) => f,
        Err(why) => {
            return ModelRow {
                status: "not possible",
                note: no_fit(why),
                ..base
            }
        }
    };
    let three = |x: f64| Some(format!("{x:.3}"));
    let pct = |x: f64| Some(format!("{:.2}", x * 100.0));
    let bytes = |b: Option<&f64>| b.map(|b| format!("{b:.0}"));
    let left_out: Vec<String> = f
        .left_out
        .iter()
        .map(|&b| Bytes(b as u64).to_string())
        .collect();
    ModelRow {
        status: "fit",
        sizes_kept: Some(f.kept.len()),
        min_bytes_kept: bytes(f.kept.first()),
        max_bytes_kept: bytes(f.kept.last()),
        alpha_us: three(f.alpha_us),
        alpha_ci_low_us: three(f.alpha_ci.0),
        alpha_ci_high_us: three(f.alpha_ci.1),
        beta_algbw_gbps: Some(rate(f.beta_gbps)),
        beta_algbw_ci_low_gbps: Some(rate(f.beta_ci.0)),
        beta_algbw_ci_high_gbps: Some(rate(f.beta_ci.1)),
        beta_busbw_gbps: Some(rate(f.beta_gbps * m.bus_factor())),
        rms_residual_pct: pct(f.rms_residual),
        max_residual_pct: pct(f.max_residual),
        alpha_determined: Some(f.alpha_determined),
        beta_determined: Some(f.beta_determined),
        note: if left_out.is_empty() {
            String::new()
        } else {
            format!("does not hold at {}", left_out.join(" "))
        },
        ..base
    }
}
