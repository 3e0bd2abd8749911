//! `results.csv`: one row per case. The first 17 columns are the stable schema every
//! later tool relies on (never renamed); more follow. Times are microseconds,
//! bandwidths GB/s (1e9 B/s); cells of cases that produced no timing are empty.

use std::io;

use crate::model::CaseResult;

/// Column names, in order. README.md documents each.
pub const COLUMNS: [&str; 27] = [
    "config",
    "backend",
    "nranks",
    "bytes",
    "dtype",
    "op",
    "iters",
    "status",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "p50_us",
    "p99_us",
    "max_us",
    "wrong",
    "transports",
    "error",
    "warmup_iters",
    "min_us",
    "p90_us",
    "stddev_us",
    "median_ci_low_us",
    "median_ci_high_us",
    "stop",
    "started_at",
    "duration_s",
    "hist_tag",
];

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

/// The cells of one row.
pub fn row(r: &CaseResult) -> Vec<String> {
    let l = r.latency;
    let lat = |f: fn(&crate::stats::LatencySummary) -> f64| num(l.as_ref().map(f), 3);
    vec![
        r.key.config.clone(),
        r.backend.clone(),
        r.key.nranks.to_string(),
        r.key.bytes.to_string(),
        r.key.dtype.to_string(),
        r.key.op.to_string(),
        r.iters().to_string(),
        r.status.to_string(),
        lat(|s| s.mean_us),
        num(r.bandwidth.map(|b| b.algbw.0), 3),
        num(r.bandwidth.map(|b| b.busbw.0), 3),
        lat(|s| s.p50_us),
        lat(|s| s.p99_us),
        lat(|s| s.max_us),
        r.wrong.to_string(),
        r.transports.clone(),
        r.error.clone(),
        r.warmup.to_string(),
        lat(|s| s.min_us),
        lat(|s| s.p90_us),
        lat(|s| s.stddev_us),
        lat(|s| s.median_ci_us.0),
        lat(|s| s.median_ci_us.1),
        r.stop.map(|s| s.to_string()).unwrap_or_default(),
        r.started_at.clone(),
        format!("{:.3}", r.duration_s),
        if l.is_some() {
            r.key.tag()
        } else {
            String::new()
        },
    ]
}

/// The header line.
pub fn header() -> io::Result<Vec<u8>> {
    encode(&COLUMNS.map(String::from))
}

/// One row, CSV-encoded (quoted where needed), with its newline.
pub fn encode_row(r: &CaseResult) -> io::Result<Vec<u8>> {
    encode(&row(r))
}

fn encode(cells: &[String]) -> io::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(cells)?;
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}
