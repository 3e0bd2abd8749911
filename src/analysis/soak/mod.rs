//! A soak read back and judged: per soaked case (config, ranks, collective), its
//! stability (`stats::soak::Stability`), its dip episodes (`stats::soak::find_episodes`
//! with the run's `--dip`), and for each episode the counters that moved at the same
//! time (`causes`), or none: then the report says no counter explains it. With
//! counters from several nodes, each cause names its node.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::export::soak::{read_counters, read_soak, SoakRow};
use crate::model::SoakInfo;
use crate::stats::soak::{find_episodes, Episode, Stability};

pub mod causes;

pub use causes::{Cause, Moved};

/// Everything the report says about a soak.
#[derive(Debug, Clone)]
pub struct SoakFindings {
    pub info: SoakInfo,
    /// When the run started (RFC 3339), for wall-clock times.
    pub started_at: String,
    pub series: Vec<SoakSeries>,
    /// The nodes whose counters were read.
    pub nodes: Vec<String>,
}

/// One soaked case.
#[derive(Debug, Clone)]
pub struct SoakSeries {
    pub config: String,
    pub nranks: u32,
    pub collective: String,
    pub bytes: u64,
    pub rows: Vec<SoakRow>,
    pub stability: Option<Stability>,
    pub episodes: Vec<EpisodeFindings>,
}

/// A dip episode and what moved with it.
#[derive(Debug, Clone)]
pub struct EpisodeFindings {
    pub episode: Episode,
    /// Seconds since the run's start.
    pub start_s: f64,
    pub end_s: f64,
    pub median_gbps: f64,
    pub low_gbps: f64,
    pub causes: Vec<Cause>,
}

/// The soak of run directory `dir`; `None` when the run is not a soak.
pub fn analyse(dir: &Path) -> Result<Option<SoakFindings>> {
    let Some(rows) = read_soak(dir)? else {
        return Ok(None);
    };
    let manifest_path = dir.join(crate::export::run_dir::MANIFEST);
    let text = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", manifest_path.display()))?;
    let info: SoakInfo = serde_json::from_value(manifest["soak"].clone())
        .with_context(|| format!("{} has no soak settings", manifest_path.display()))?;
    let started_at = manifest["started_at"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let counters = read_counters(dir)?;
    Ok(Some(judge(info, started_at, rows, &counters)))
}

/// Judges soak rows and counters read back.
pub fn judge(
    info: SoakInfo,
    started_at: String,
    rows: Vec<SoakRow>,
    counters: &[crate::export::soak::CounterRow],
) -> SoakFindings {
    let all = causes::series(counters);
    let mut times: Vec<f64> = counters.iter().map(|c| c.t_s).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let mut nodes: Vec<String> = counters.iter().map(|c| c.node.clone()).collect();
    nodes.sort();
    nodes.dedup();
    let interval = Duration::from_secs_f64(info.interval_s.max(1e-3));
    let mut series: Vec<SoakSeries> = Vec::new();
    for r in rows {
        let same = |s: &&mut SoakSeries| {
            s.config == r.config && s.nranks == r.nranks && s.collective == r.collective
        };
        match series.iter_mut().find(|s| same(s)) {
            Some(s) => s.rows.push(r),
            None => series.push(SoakSeries {
                config: r.config.clone(),
                nranks: r.nranks,
                collective: r.collective.clone(),
                bytes: r.bytes,
                rows: vec![r],
                stability: None,
                episodes: Vec::new(),
            }),
        }
    }
    for s in &mut series {
        let values: Vec<f64> = s.rows.iter().map(|r| r.busbw_gbps).collect();
        s.stability = Stability::of(&values, interval);
        let median = s.stability.map_or(0.0, |st| st.median);
        let span = (
            s.rows.first().map_or(0.0, |r| r.start_s),
            s.rows.last().map_or(0.0, |r| r.end_s),
        );
        s.episodes = find_episodes(&values, info.dip)
            .into_iter()
            .map(|e| {
                let (start_s, end_s) = (s.rows[e.first].start_s, s.rows[e.last].end_s);
                let low =
                    values[e.first..=e.last].iter().sum::<f64>() / (e.last - e.first + 1) as f64;
                // Counters are read at interval edges: the reading that ends the
                // episode's first interval already saw its start.
                let window = (start_s, end_s + info.interval_s * 0.5);
                EpisodeFindings {
                    causes: causes::causes(&all, &times, window, span),
                    episode: e,
                    start_s,
                    end_s,
                    median_gbps: median,
                    low_gbps: low,
                }
            })
            .collect();
    }
    SoakFindings {
        info,
        started_at,
        series,
        nodes,
    }
}

impl SoakFindings {
    /// `12:03:10`: the wall-clock time `seconds` after the run started, where the
    /// start is known; else `+12.5 s`.
    pub fn clock(&self, seconds: f64) -> String {
        match chrono::DateTime::parse_from_rfc3339(&self.started_at) {
            Ok(t) => (t + chrono::Duration::milliseconds((seconds * 1e3) as i64))
                .format("%H:%M:%S")
                .to_string(),
            Err(_) => format!("+{seconds:.1} s"),
        }
    }
}
