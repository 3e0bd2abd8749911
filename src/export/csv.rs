//! `results.csv`: one row per case. The first 17 columns are the stable schema every
//! later tool relies on (never renamed); more follow. `round_p50_us` lists the median
//! of each round (process group), `;`-separated: the statistics over rounds need
//! nothing else. Times are microseconds,
//! bandwidths GB/s (1e9 B/s); cells of cases that produced no timing are empty.

use std::io;

use crate::model::CaseResult;
use crate::ops::collective::Collective;

/// Column names, in order. README.md documents each.
pub const COLUMNS: [&str; 43] = [
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
    "graph_iters",
    "quality",
    "quality_note",
    "ceiling_pct",
    "rounds",
    "round_p50_us",
    "round_spread_pct",
    "nccl_tests_p95_us",
    "nccl_tests_p99_us",
    "algo",
    "proto",
    "channels",
    "nccl_predicted_us",
    "tuning_note",
    "collective",
    "shm_backing",
];

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

/// The values of one row, before formatting. Runs made elsewhere (imported
/// nccl-tests output) fill what they know and leave the rest empty.
#[derive(Debug, Clone, Default)]
pub struct RowCells {
    pub config: String,
    pub backend: String,
    pub nranks: u32,
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    pub iters: u64,
    pub status: String,
    pub time_us: Option<f64>,
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub wrong: u64,
    pub transports: String,
    pub error: String,
    pub warmup_iters: u64,
    pub min_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub stddev_us: Option<f64>,
    pub median_ci_us: Option<(f64, f64)>,
    pub stop: String,
    pub started_at: String,
    pub duration_s: f64,
    pub hist_tag: String,
    pub graph_iters: u64,
    pub quality: String,
    pub quality_note: String,
    /// busbw as a percentage of the ring's measured link ceiling.
    pub ceiling_pct: Option<f64>,
    /// Each round's median, us (rounds = their count).
    pub round_p50_us: Vec<f64>,
    /// nccl-tests' own `-I` p95 and p99 of an imported case, as it printed them
    /// (whatever its iteration count); empty for nccl-bench's own runs.
    pub nccl_tests_p95_us: Option<f64>,
    pub nccl_tests_p99_us: Option<f64>,
    /// The algorithm, protocol and channels the case ran with, NCCL's predicted time
    /// and a forced choice it did not follow (`model::TuningCells`).
    pub algo: String,
    pub proto: String,
    pub channels: String,
    pub nccl_predicted_us: Option<f64>,
    pub tuning_note: String,
    /// nccl-tests' name of the collective (`all_reduce` where empty).
    pub collective: String,
    /// Where NCCL's SHM buffers lived (`model::CaseResult::shm_backing`).
    pub shm_backing: String,
}

impl From<&CaseResult> for RowCells {
    fn from(r: &CaseResult) -> RowCells {
        let l = r.latency;
        let lat = |f: fn(&crate::stats::LatencySummary) -> f64| l.as_ref().map(f);
        RowCells {
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
            // An unbounded interval (too few samples) is no interval: empty cells.
            median_ci_us: l.map(|s| s.median_ci_us).filter(|ci| ci.1.is_finite()),
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
            round_p50_us: r.round_p50_us.clone(),
            nccl_tests_p95_us: None,
            nccl_tests_p99_us: None,
            algo: r.tuning.algo.clone(),
            proto: r.tuning.proto.clone(),
            channels: r.tuning.channels.clone(),
            nccl_predicted_us: r.tuning.predicted_us,
            tuning_note: r.tuning.note.clone(),
            collective: r.key.collective.to_string(),
            shm_backing: r.shm_backing.clone(),
        }
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

/// The cells of one row, formatted.
pub fn row(c: &RowCells) -> Vec<String> {
    vec![
        c.config.clone(),
        c.backend.clone(),
        c.nranks.to_string(),
        c.bytes.to_string(),
        c.dtype.clone(),
        c.op.clone(),
        c.iters.to_string(),
        c.status.clone(),
        num(c.time_us, 3),
        num(c.algbw_gbps, 3),
        num(c.busbw_gbps, 3),
        num(c.p50_us, 3),
        num(c.p99_us, 3),
        num(c.max_us, 3),
        c.wrong.to_string(),
        c.transports.clone(),
        c.error.clone(),
        c.warmup_iters.to_string(),
        num(c.min_us, 3),
        num(c.p90_us, 3),
        num(c.stddev_us, 3),
        num(c.median_ci_us.map(|ci| ci.0), 3),
        num(c.median_ci_us.map(|ci| ci.1), 3),
        c.stop.clone(),
        c.started_at.clone(),
        format!("{:.3}", c.duration_s),
        c.hist_tag.clone(),
        c.graph_iters.to_string(),
        c.quality.clone(),
        c.quality_note.clone(),
        num(c.ceiling_pct, 1),
        if c.round_p50_us.is_empty() {
            String::new()
        } else {
            c.round_p50_us.len().to_string()
        },
        c.round_p50_us
            .iter()
            .map(|v| format!("{v:.3}"))
            .collect::<Vec<_>>()
            .join(";"),
        num(round_spread_pct(&c.round_p50_us), 1),
        num(c.nccl_tests_p95_us, 3),
        num(c.nccl_tests_p99_us, 3),
        c.algo.clone(),
        c.proto.clone(),
        c.channels.clone(),
        num(c.nccl_predicted_us, 3),
        c.tuning_note.clone(),
        if c.collective.is_empty() {
            Collective::AllReduce.to_string()
        } else {
            c.collective.clone()
        },
        c.shm_backing.clone(),
    ]
}

/// The header line.
pub fn header() -> io::Result<Vec<u8>> {
    encode(&COLUMNS.map(String::from))
}

/// One row, CSV-encoded (quoted where needed), with its newline.
pub fn encode_row(cells: &RowCells) -> io::Result<Vec<u8>> {
    encode(&row(cells))
}

fn encode(cells: &[String]) -> io::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(cells)?;
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}
