//! The report of a soak: for each soaked case, first what happened in one sentence
//! per dip episode ("busbw fell 38 % from 12:03:10 to 12:03:40 (8 ranks, 256 MiB);
//! in that window GPU 3 reported HW slowdown"), or that there was none; then its
//! stability (the worst minute against the whole run, the coefficient of
//! variation), the episodes as a table, and the chart; the counters that could not
//! be read last.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::analysis::soak::{SoakFindings, SoakSeries};
use crate::export::reader::RunData;
use crate::model::SIMULATED_LABEL;
use crate::stats::soak::{median_and_spread, noise_spread, NOISE_SPREADS};
use crate::units::{format_duration, plural, Bytes};

/// A duration read back from a manifest (a hand-edited one may hold anything).
fn seconds(s: f64) -> String {
    format_duration(std::time::Duration::try_from_secs_f64(s).unwrap_or_default())
}

/// The sentence that says a dip and its causes.
pub fn episode_sentence(f: &SoakFindings, s: &SoakSeries, i: usize) -> String {
    let e = &s.episodes[i];
    let head = format!(
        "busbw fell {:.0} % from {} to {} ({} ranks, {} {})",
        e.episode.mean_drop * 100.0,
        f.clock(e.start_s),
        f.clock(e.end_s),
        s.nranks,
        s.collective,
        Bytes(s.bytes)
    );
    match e.causes_words(f.nodes.len()) {
        Some(c) => format!("{head}; in that window {c}."),
        None => format!("{head}; no counter read moved in that window, so none explains it."),
    }
}

/// The whole report.
pub fn markdown(
    run: &RunData,
    f: &SoakFindings,
    plots: &Result<Vec<PathBuf>, String>,
) -> Result<String> {
    let mut s = String::new();
    let name = run
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    writeln!(s, "# nccl-bench soak: {name}\n")?;
    let m = &run.manifest;
    if m.backend.used == "host" {
        writeln!(s, "> **Host backend (CPU), not NCCL.** These numbers measure this machine's CPU transports between processes, not NCCL on GPUs.\n")?;
    }
    if m.backend.used == SIMULATED_LABEL {
        writeln!(s, "> **Simulated GPUs (test stand-in), not a measurement.** Times and counters come from nccl-bench's test stand-in (tests/gpu-sim).\n")?;
    }
    writeln!(
        s,
        "Back-to-back collectives at {} for {} per config, in {} intervals; a dip is an interval more than {:.0} % (and five noise spreads) below the run's median busbw.\n",
        Bytes(f.info.bytes),
        seconds(f.info.duration_s),
        seconds(f.info.interval_s),
        f.info.dip * 100.0
    )?;
    for series in &f.series {
        let label = crate::ops::collective::labelled(&series.config, &series.collective);
        writeln!(s, "## {label}, {} ranks\n", series.nranks)?;
        if series.episodes.is_empty() {
            writeln!(s, "{}\n", no_dip_sentence(series, f.info.dip))?;
        }
        for i in 0..series.episodes.len() {
            writeln!(s, "- {}", episode_sentence(f, series, i))?;
        }
        if !series.episodes.is_empty() {
            writeln!(s)?;
        }
        if let Some(st) = series.stability {
            writeln!(
                s,
                "Stability: median busbw {:.2} GB/s over {} intervals; the worst {} window's median is {:.1} % of it; coefficient of variation {:.1} %.\n",
                st.median,
                series.rows.len(),
                seconds(st.window_len as f64 * f.info.interval_s),
                st.worst_window_ratio * 100.0,
                st.cv * 100.0
            )?;
        }
        if !series.episodes.is_empty() {
            writeln!(
                s,
                "| start | end | depth | mean drop | busbw in it | what moved |"
            )?;
            writeln!(s, "|---|---|---:|---:|---:|---|")?;
            for e in &series.episodes {
                writeln!(
                    s,
                    "| {} | {} | {:.0} % | {:.0} % | {:.2} GB/s | {} |",
                    f.clock(e.start_s),
                    f.clock(e.end_s),
                    e.episode.depth * 100.0,
                    e.episode.mean_drop * 100.0,
                    e.low_gbps,
                    e.causes_words(f.nodes.len())
                        .unwrap_or_else(|| "nothing".into())
                )?;
            }
            writeln!(s)?;
        }
        let stem = format!(
            "soak-{}-n{}-{}",
            series
                .config
                .replace(|c: char| !(c.is_ascii_alphanumeric() || c == '-'), "_"),
            series.nranks,
            series.collective
        );
        if let Ok(paths) = plots {
            if let Some(svg) = paths.iter().find(|p| {
                p.file_stem().is_some_and(|n| n.to_string_lossy() == stem)
                    && p.extension().is_some_and(|e| e == "svg")
            }) {
                let rel = svg.strip_prefix(&run.dir).unwrap_or(svg);
                writeln!(s, "![busbw over time, {label}]({})\n", rel.display())?;
            }
        }
    }
    if let Err(e) = plots {
        writeln!(s, "No chart: {e}\n")?;
    }
    let failed: Vec<_> = run.cases.iter().filter(|r| r.status != "ok").collect();
    if !failed.is_empty() {
        writeln!(s, "## Soaks that did not end well\n")?;
        for r in failed {
            writeln!(
                s,
                "- {} n={}: {}: {}",
                r.config, r.nranks, r.status, r.error
            )?;
        }
        writeln!(s)?;
    }
    writeln!(s, "## Counters\n")?;
    writeln!(
        s,
        "counters.csv holds every counter read each interval on {} ({}), a row whenever a value changed.",
        crate::units::plural(f.nodes.len(), "node", "nodes"),
        f.nodes.join(", ")
    )?;
    if f.info.counter_notes.is_empty() {
        writeln!(s)?;
    } else {
        writeln!(s, " Not read:\n")?;
        for n in &f.info.counter_notes {
            writeln!(s, "- {n}")?;
        }
        writeln!(s)?;
    }
    Ok(s)
}

/// Why a soak has no episode: no interval fell `dip` below the median, or those
/// that did stayed within the noise (five noise spreads), said with its size.
fn no_dip_sentence(series: &SoakSeries, dip: f64) -> String {
    let values: Vec<f64> = series.rows.iter().map(|r| r.busbw_gbps).collect();
    let limit = dip * 100.0;
    let within =
        format!("No dip episode: every interval stayed within {limit:.0} % of the median.");
    let (Some((median, _)), Some(noise)) = (median_and_spread(&values), noise_spread(&values))
    else {
        return within;
    };
    let low = values.iter().filter(|v| **v < median * (1.0 - dip)).count();
    if low == 0 || median <= 0.0 {
        return within;
    }
    format!(
        "No dip episode: {} fell more than {limit:.0} % below the median, but none by five noise spreads ({:.0} %; busbw scatters by {:.1} % from one interval to the next here), so none stands out from the noise.",
        plural(low, "interval", "intervals"),
        NOISE_SPREADS * noise / median * 100.0,
        noise / median * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::soak::SoakRow;

    fn series(busbw: &[f64]) -> SoakSeries {
        let rows = busbw
            .iter()
            .enumerate()
            .map(|(i, &b)| SoakRow {
                config: "default".into(),
                nranks: 2,
                collective: "all_reduce".into(),
                bytes: 1 << 20,
                interval: i as u64,
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                iterations: 100,
                mean_us: Some(100.0),
                p50_us: Some(100.0),
                p99_us: Some(100.0),
                max_us: Some(100.0),
                algbw_gbps: b,
                busbw_gbps: b,
            })
            .collect();
        SoakSeries {
            config: "default".into(),
            nranks: 2,
            collective: "all_reduce".into(),
            bytes: 1 << 20,
            rows,
            stability: None,
            episodes: Vec::new(),
        }
    }

    #[test]
    fn a_soak_without_an_episode_says_whether_intervals_fell_within_the_noise() {
        let steady: Vec<f64> = (0..20).map(|i| 10.0 + 0.1 * (i % 3) as f64).collect();
        assert_eq!(
            no_dip_sentence(&series(&steady), 0.10),
            "No dip episode: every interval stayed within 10 % of the median."
        );
        // Scatter of about 10 % between neighbours: three intervals 15 % down are
        // not five spreads down.
        let noisy: Vec<f64> = (0..20)
            .map(|i| match i {
                7 | 12 | 16 => 8.5,
                _ if i % 2 == 0 => 10.5,
                _ => 9.5,
            })
            .collect();
        let said = no_dip_sentence(&series(&noisy), 0.10);
        assert!(
            said.starts_with("No dip episode: 3 intervals fell more than 10 % below the median, but none by five noise spreads ("),
            "{said}"
        );
        assert!(
            said.ends_with("so none stands out from the noise."),
            "{said}"
        );
    }
}
