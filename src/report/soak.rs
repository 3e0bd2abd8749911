//! The report of a soak: for each soaked case, first what happened in one sentence
//! per dip episode ("busbw fell 38 % from 12:03:10 to 12:03:40 (8 ranks, 256 MiB);
//! in that window GPU 3 reported HW slowdown"), or that there was none; then its
//! stability (the worst minute against the whole run, the coefficient of
//! variation), the episodes as a table, and the chart; the counters that could not
//! be read last.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::analysis::soak::{Cause, EpisodeFindings, Moved, SoakFindings, SoakSeries};
use crate::export::reader::RunData;
use crate::machine::counters::source_words;
use crate::model::SIMULATED_LABEL;
use crate::stats::soak::{median_and_spread, noise_spread, NOISE_SPREADS};
use crate::units::{format_duration, plural, Bytes};

/// A duration read back from a manifest (a hand-edited one may hold anything).
fn seconds(s: f64) -> String {
    format_duration(std::time::Duration::try_from_secs_f64(s).unwrap_or_default())
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// A count of a counter in words: `nvlink.replay` 120 -> `120 replays`.
fn count_words(counter: &str, n: f64) -> String {
    let (one, many) = match counter {
        "nvlink.replay" => ("replay", "replays"),
        "nvlink.recovery" => ("link recovery", "link recoveries"),
        "nvlink.crc_flit" => ("CRC flit error", "CRC flit errors"),
        "nvlink.crc_data" => ("CRC data error", "CRC data errors"),
        "ecc.corrected" => ("corrected ECC error", "corrected ECC errors"),
        "ecc.uncorrected" => ("uncorrected ECC error", "uncorrected ECC errors"),
        "xid.events" => ("XID event", "XID events"),
        "carrier_changes" => (
            "carrier change (a link flap)",
            "carrier changes (link flaps)",
        ),
        other => (other, other),
    };
    let name = if n == 1.0 { one } else { many };
    format!("{} {name}", crate::units::trim_number(n))
}

/// A gauge's name and unit.
fn gauge_words(counter: &str) -> (&str, &str) {
    match counter {
        "sm_clock_mhz" => ("SM clock", " MHz"),
        "power_w" => ("power", " W"),
        "temperature_c" => ("temperature", " C"),
        "cpu.other_cores" => ("CPU cores busy with other processes", ""),
        "cpu.busy_cores" => ("CPU cores busy", ""),
        "cpu.runnable" => ("runnable threads", ""),
        "cpu.load1" => ("load average", ""),
        "cpu.mhz" => ("CPU clock", " MHz"),
        "port.state" => ("port state", ""),
        "nvlink.active" => ("link state", ""),
        "xid.last" => ("last XID", ""),
        other => (other, ""),
    }
}

/// A cause in words: `GPU 3 reported HW slowdown`, `NVLink 3 on GPU 5 counted 120
/// replays`, `GPU 3's SM clock fell from 1980 MHz to 1275 MHz`.
fn cause_words(c: &Cause) -> String {
    let source = source_words(&c.source);
    match &c.moved {
        Moved::Counted(n) => format!("{source} counted {}", count_words(&c.counter, *n)),
        Moved::Reported(reasons) => format!("{source} reported {}", and_list(reasons)),
        Moved::Changed { from, to } => {
            let (name, unit) = gauge_words(&c.counter);
            let verb = if to > from { "rose" } else { "fell" };
            let n = crate::units::trim_number;
            format!(
                "{source}'s {name} {verb} from {}{unit} to {}{unit}",
                n(*from),
                n(*to)
            )
        }
    }
}

/// An episode's causes as one clause, the strongest four, each prefixed with its
/// node when several were read.
pub(super) fn causes_words(e: &EpisodeFindings, nodes: usize) -> Option<String> {
    let shown: Vec<String> = e
        .causes
        .iter()
        .take(4)
        .map(|c| match nodes {
            0 | 1 => cause_words(c),
            _ => format!("on {}, {}", c.node, cause_words(c)),
        })
        .collect();
    (!shown.is_empty()).then(|| and_list(&shown))
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
    match causes_words(e, f.nodes.len()) {
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
                    causes_words(e, f.nodes.len()).unwrap_or_else(|| "nothing".into())
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

    #[test]
    fn what_moved_with_a_dip_is_said_in_one_clause() {
        let cause = |node: &str, source: &str, counter: &str, moved: Moved| Cause {
            node: node.into(),
            source: source.into(),
            counter: counter.into(),
            moved,
            weight: 1.0,
        };
        let flags = Moved::Reported(vec!["HW slowdown".into(), "HW thermal slowdown".into()]);
        let causes = vec![
            cause("n1", "gpu3", "throttle.hw_slowdown", flags),
            cause("n1", "gpu5.nvlink3", "nvlink.replay", Moved::Counted(160.0)),
            cause(
                "n2",
                "gpu3",
                "sm_clock_mhz",
                Moved::Changed {
                    from: 1980.0,
                    to: 1275.0,
                },
            ),
            cause("n2", "eth0", "xid.events", Moved::Counted(1.0)),
            cause(
                "n2",
                "gpu0",
                "temperature_c",
                Moved::Changed {
                    from: 60.0,
                    to: 85.0,
                },
            ),
        ];
        let e = EpisodeFindings {
            episode: crate::stats::soak::Episode {
                first: 0,
                last: 1,
                depth: 0.3,
                mean_drop: 0.3,
            },
            start_s: 0.0,
            end_s: 1.0,
            median_gbps: 10.0,
            low_gbps: 7.0,
            causes,
        };
        assert_eq!(
            causes_words(&e, 1).unwrap(),
            "GPU 3 reported HW slowdown and HW thermal slowdown, NVLink 3 on GPU 5 counted \
             160 replays, GPU 3's SM clock fell from 1980 MHz to 1275 MHz and NIC eth0 \
             counted 1 XID event"
        );
        assert!(causes_words(&e, 2)
            .unwrap()
            .starts_with("on n1, GPU 3 reported HW slowdown and HW thermal slowdown, on n1, "));
        let rose = cause(
            "n1",
            "gpu0",
            "temperature_c",
            Moved::Changed {
                from: 60.0,
                to: 85.0,
            },
        );
        assert_eq!(
            cause_words(&rose),
            "GPU 0's temperature rose from 60 C to 85 C"
        );
        let none = EpisodeFindings {
            causes: vec![],
            ..e
        };
        assert_eq!(causes_words(&none, 1), None);
    }

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
