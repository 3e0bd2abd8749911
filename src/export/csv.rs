//! `results.csv`: one row per case, [`CaseRow`] (its one definition, in
//! `export::reader`): the row of a measured case, the header and the encoding of a
//! row. `round_p50_us` lists the median of each round (process group),
//! `;`-separated: the statistics over rounds need nothing else.

use std::io;

pub use super::reader::CaseRow;
use crate::model::CaseResult;

/// The row of a case the sweep measured.
impl From<&CaseResult> for CaseRow {
    fn from(r: &CaseResult) -> CaseRow {
        let l = r.latency;
        let lat = |f: fn(&crate::stats::LatencySummary) -> f64| l.as_ref().map(f);
        // An unbounded interval (too few samples) is no interval: empty cells.
        let ci = l.map(|s| s.median_ci_us).filter(|ci| ci.1.is_finite());
        let mut row = CaseRow {
            config: r.key.config.clone(),
            backend: r.backend.clone(),
            nranks: r.key.nranks,
            bytes: r.key.bytes,
            dtype: r.key.dtype.to_string(),
            op: r.key.op.to_string(),
            iters: r.iters(),
            status: r.status.to_string(),
            time_us: lat(|s| s.mean_us),
            algbw_gbps: r.bandwidth.map(|b| b.algbw.0),
            busbw_gbps: r.bandwidth.map(|b| b.busbw.0),
            p50_us: lat(|s| s.p50_us),
            // Tails only where the samples support them (`LatencySummary::tail`).
            p99_us: l.as_ref().and_then(|s| s.tail(0.99, s.p99_us)),
            max_us: lat(|s| s.max_us),
            wrong: r.wrong,
            transports: r.transports.clone(),
            error: r.error.clone(),
            warmup_iters: r.warmup,
            min_us: lat(|s| s.min_us),
            p90_us: l.as_ref().and_then(|s| s.tail(0.9, s.p90_us)),
            stddev_us: lat(|s| s.stddev_us),
            median_ci_low_us: ci.map(|c| c.0),
            median_ci_high_us: ci.map(|c| c.1),
            stop: r.stop.map(|s| s.to_string()).unwrap_or_default(),
            started_at: r.started_at.clone(),
            duration_s: r.duration_s,
            hist_tag: if l.is_some() {
                r.hist_tag()
            } else {
                String::new()
            },
            graph_iters: r.graph,
            quality: r.quality.map(|q| q.to_string()).unwrap_or_default(),
            quality_note: match (r.quality_note.is_empty(), r.timing_note.is_empty()) {
                (_, true) => r.quality_note.clone(),
                (true, false) => r.timing_note.clone(),
                (false, false) => format!("{}; {}", r.quality_note, r.timing_note),
            },
            ceiling_pct: r
                .bandwidth
                .zip(r.ceiling_gbps)
                .filter(|(_, c)| *c > 0.0)
                .map(|(b, c)| b.busbw.0 / c * 100.0),
            algo: r.tuning.algo.clone(),
            proto: r.tuning.proto.clone(),
            channels: r.tuning.channels.clone(),
            nccl_predicted_us: r.tuning.predicted_us,
            tuning_note: r.tuning.note.clone(),
            collective: r.key.collective.to_string(),
            shm_backing: r.shm_backing.clone(),
            ..CaseRow::default()
        };
        row.set_rounds(&r.round_p50_us);
        row
    }
}

impl CaseRow {
    /// Each round's median, us: the `rounds`, `round_p50_us` and `round_spread_pct`
    /// cells.
    pub fn set_rounds(&mut self, medians: &[f64]) {
        self.rounds = (!medians.is_empty()).then_some(medians.len());
        self.round_p50_us = medians
            .iter()
            .map(|v| format!("{v:.3}"))
            .collect::<Vec<_>>()
            .join(";");
        self.round_spread_pct = round_spread_pct(medians);
    }
}

/// The spread between rounds: (highest - lowest round median) / their median, in
/// percent; `None` with fewer than two rounds.
pub fn round_spread_pct(round_p50_us: &[f64]) -> Option<f64> {
    if round_p50_us.len() < 2 {
        return None;
    }
    let lo = round_p50_us.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = round_p50_us
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let mid = crate::stats::median(round_p50_us.iter().copied())?;
    (mid > 0.0).then(|| (hi - lo) / mid * 100.0)
}

/// The header line: the names of [`CaseRow`]'s fields, in order.
pub fn header() -> io::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.serialize(CaseRow::default())?;
    let text = w
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    let end = text
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| i + 1);
    Ok(text[..end].to_vec())
}

/// One row, CSV-encoded (quoted where needed), with its newline.
pub fn encode_row(row: &CaseRow) -> io::Result<Vec<u8>> {
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    if row.collective.is_empty() {
        // A row made without one measured all_reduce, as a reader takes it.
        let mut named = row.clone();
        named.collective = crate::ops::collective::Collective::AllReduce.to_string();
        w.serialize(&named)?;
    } else {
        w.serialize(row)?;
    }
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}
