//! The comparison as people and programs read it: an aligned table for the terminal,
//! Markdown for a PR or a wiki, CSV and JSON for scripts. Every text form ends with
//! the summary: counts per outcome, the worst regression, and whether the comparison
//! had to fall back on mean times.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::compare::{CompareReport, PairRow};
use crate::stats::compare::Method;
use crate::units::{format_us, Bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    /// One page for a browser: the summary first, then the cases.
    Html,
    Csv,
    Json,
}

const HEADERS: [&str; 10] = [
    "config",
    "nranks",
    "size",
    "base",
    "candidate",
    "change",
    "interval",
    "base busbw",
    "cand busbw",
    "outcome",
];

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

fn cells(r: &PairRow) -> [String; 10] {
    let time = |t: Option<f64>, status: &str| match t {
        Some(t) if status == "ok" => format_us(t),
        _ => status.to_string(),
    };
    let bw = |b: Option<f64>| b.map(|b| format!("{b:.2} GB/s")).unwrap_or_default();
    let (change, ci) = match &r.comparison {
        Some(c) => {
            let (lo, hi) = r.family_ci.unwrap_or(c.ci);
            (pct(c.change), format!("[{}, {}]", pct(lo), pct(hi)))
        }
        None => (String::new(), String::new()),
    };
    [
        r.label(),
        r.nranks.to_string(),
        Bytes(r.bytes).to_string(),
        time(r.base_time_us, &r.base_status),
        time(r.cand_time_us, &r.cand_status),
        change,
        ci,
        bw(r.base_busbw_gbps),
        bw(r.cand_busbw_gbps),
        if r.within_noise {
            format!("{} ~", r.outcome.as_str())
        } else if !r.distrust.is_empty() {
            format!("{} ({})", r.outcome.as_str(), r.distrust)
        } else {
            match why_not_decided(r) {
                Some(why) => format!("{} ({why})", r.outcome.as_str()),
                None => r.outcome.as_str().to_string(),
            }
        },
    ]
}

/// Why an ok pair with a comparison decides nothing: it is no member of the family.
fn why_not_decided(r: &PairRow) -> Option<&'static str> {
    match r.comparison.as_ref()?.method {
        Method::Bootstrap { .. } => Some("one round"),
        Method::MeansOnly => Some("means only"),
        _ => None,
    }
}

/// The summary lines under a table.
pub fn summary(report: &CompareReport) -> Vec<String> {
    use crate::analysis::compare::Outcome::*;
    let mut lines = Vec::new();
    let counts: Vec<String> = [
        Regressed,
        NewFailure,
        Improved,
        Unchanged,
        Inconclusive,
        Fixed,
        FailedBoth,
    ]
    .iter()
    .filter_map(|&o| match report.count(o) {
        0 => None,
        n => Some(format!("{n} {}", o.as_str())),
    })
    .collect();
    lines.push(format!(
        "{} matched cases ({}); threshold +-{:.1}%; {} vs {}",
        report.rows.len(),
        counts.join(", "),
        report.threshold * 100.0,
        report.candidate,
        report.base
    ));
    match report.worst() {
        Some(w) => lines.push(format!(
            "worst regression: {} n={} {}: {}",
            w.config,
            w.nranks,
            Bytes(w.bytes),
            match &w.comparison {
                Some(c) => {
                    let (lo, hi) = w.family_ci.unwrap_or(c.ci);
                    format!(
                        "{} (interval {} to {}, one of the family's)",
                        pct(c.change),
                        pct(lo),
                        pct(hi)
                    )
                }
                None => format!("now {}", w.cand_status),
            }
        )),
        None => lines.push("no regression".to_string()),
    }
    let distrusted = report
        .rows
        .iter()
        .filter(|r| !r.distrust.is_empty())
        .count();
    if distrusted > 0 {
        lines.push(format!(
            "note: {distrusted} pair(s) are inconclusive because a side is flagged noisy or outlier in its run (results.csv's quality_note says why), or, between two configs of one run, kept a re-measurement whose rounds ran alone: such a case is not evidence either way"
        ));
    }
    if report.over_rounds > 0 {
        lines.push(if report.same_run {
            format!(
                "intervals over rounds: each case's process groups (up to {} a side), so they include the variation between groups of processes, not only between iterations; paired round by round (a round runs every config back to back, in a shuffled order), so what the machine did in a round cancels out",
                report.most_rounds
            )
        } else {
            format!(
                "intervals over rounds: each run's process groups (up to {} a side), so they include the variation between groups of processes within each run; what changes between runs beyond that (a reboot, other nodes, another day) is not in them: to tell a change from run-to-run variation, check against a baseline of several runs (`nccl-bench baseline`, `check`)",
                report.most_rounds
            )
        });
    }
    for r in &report.rows {
        if let Some((from, to)) = &r.choice_change {
            lines.push(format!(
                "note: NCCL's choice changed at {}, {} ranks, {}: {to} now, was {from}",
                r.label(),
                r.nranks,
                Bytes(r.bytes)
            ));
        }
    }
    let family = report.family.sentence("the candidate");
    if !family.is_empty() {
        lines.push(family);
    }
    if report.within_noise > 0 {
        lines.push(format!(
            "note: {} pair(s) changed beyond the threshold by less than two process groups of one run differ from each other (marked `~`): between two runs that may be run-to-run variation rather than a change, so they do not fail the gate (exit 0 on them alone); a baseline of 3 or more runs (`baseline`, `check`, `history`) tells them apart",
            report.within_noise
        ));
    }
    if report.single_round > 0 {
        lines.push(format!(
            "note: {} pair(s) have a single round (process group) on a side: their intervals cover the variation between that group's iterations only, which is often smaller than between groups, so they decide nothing (inconclusive, one round) and never fail the gate; a sweep with --rounds 6 or more measures it",
            report.single_round
        ));
    }
    if report.means_only {
        lines.push("note: some cases were compared on mean times only (no per-iteration data, e.g. an imported run): their times shown are means, their interval is a point, and they decide nothing (inconclusive, means only)".to_string());
    }
    for &(base, cand, count) in &report.graph_differs {
        let how = |n: u64| match n {
            0 => "one launch per all-reduce".to_string(),
            n => format!("CUDA graphs of {n} all-reduces"),
        };
        lines.push(format!(
            "note: {count} pair(s) were launched differently ({} in the base, {} in the candidate): launch overhead is part of their difference",
            how(base),
            how(cand)
        ));
    }
    if report.only_in_base + report.only_in_candidate > 0 {
        lines.push(format!(
            "unmatched: {} case(s) only in the base, {} only in the candidate",
            report.only_in_base, report.only_in_candidate
        ));
    }
    for (side, only) in [
        ("base", &report.collectives_only_in_base),
        ("candidate", &report.collectives_only_in_candidate),
    ] {
        if !only.is_empty() {
            lines.push(format!(
                "note: only the {side} measured {}: not compared",
                only.join(", ")
            ));
        }
    }
    lines
}

pub fn render(report: &CompareReport, format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([
                "config",
                "nranks",
                "bytes",
                "dtype",
                "op",
                "base_status",
                "cand_status",
                "base_time_us",
                "cand_time_us",
                "change",
                "ci_low",
                "ci_high",
                "base_busbw_gbps",
                "cand_busbw_gbps",
                "outcome",
                "distrust",
                "base_choice",
                "cand_choice",
                "collective",
                "family_ci_low",
                "family_ci_high",
            ])?;
            for r in &report.rows {
                let opt = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_default();
                let c = r.comparison.as_ref();
                let choice = r.choice_change.as_ref();
                w.write_record([
                    r.config.clone(),
                    r.nranks.to_string(),
                    r.bytes.to_string(),
                    r.dtype.clone(),
                    r.op.clone(),
                    r.base_status.clone(),
                    r.cand_status.clone(),
                    opt(r.base_time_us),
                    opt(r.cand_time_us),
                    c.map(|c| format!("{:.5}", c.change)).unwrap_or_default(),
                    c.map(|c| format!("{:.5}", c.ci.0)).unwrap_or_default(),
                    c.map(|c| format!("{:.5}", c.ci.1)).unwrap_or_default(),
                    opt(r.base_busbw_gbps),
                    opt(r.cand_busbw_gbps),
                    r.outcome.as_str().to_string(),
                    r.distrust.clone(),
                    choice.map(|c| c.0.clone()).unwrap_or_default(),
                    choice.map(|c| c.1.clone()).unwrap_or_default(),
                    r.collective.clone(),
                    r.family_ci
                        .map(|c| format!("{:.5}", c.0))
                        .unwrap_or_default(),
                    r.family_ci
                        .map(|c| format!("{:.5}", c.1))
                        .unwrap_or_default(),
                ])?;
            }
            String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?
        }
        Format::Markdown => {
            let mut s = String::new();
            writeln!(s, "| {} |", HEADERS.join(" | "))?;
            writeln!(s, "|{}", "---|".repeat(HEADERS.len()))?;
            for r in &report.rows {
                writeln!(s, "| {} |", cells(r).join(" | "))?;
            }
            writeln!(s)?;
            for line in summary(report) {
                writeln!(s, "- {line}")?;
            }
            s
        }
        Format::Html => {
            let mut s = String::from("## Summary\n\n");
            for line in summary(report) {
                writeln!(s, "- {line}")?;
            }
            writeln!(s, "\n## Cases\n")?;
            writeln!(s, "| {} |", HEADERS.join(" | "))?;
            writeln!(s, "|{}", "---|".repeat(HEADERS.len()))?;
            for r in &report.rows {
                writeln!(s, "| {} |", cells(r).join(" | "))?;
            }
            let title = format!(
                "nccl-bench compare: {} against {}",
                report.candidate, report.base
            );
            super::html::page(&title, &s, None)
        }
        Format::Table => {
            let rows: Vec<[String; 10]> = report.rows.iter().map(cells).collect();
            let mut widths = HEADERS.map(str::len);
            for r in &rows {
                for (w, c) in widths.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let mut s = String::new();
            let line = |cells: &[String]| -> String {
                cells
                    .iter()
                    .zip(widths)
                    .enumerate()
                    .map(|(i, (c, w))| {
                        if i == 0 {
                            format!("{c:<w$}")
                        } else {
                            format!("{c:>w$}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("  ")
            };
            writeln!(s, "{}", line(&HEADERS.map(String::from)))?;
            for r in &rows {
                writeln!(s, "{}", line(r))?;
            }
            writeln!(s)?;
            for l in summary(report) {
                writeln!(s, "{l}")?;
            }
            s
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::analysis::compare::{compare, CompareOptions, Outcome, Side};
    use crate::export::reader::{CaseRow, RunData};

    fn run(dir: &str, rounds: &[f64]) -> RunData {
        RunData {
            dir: PathBuf::from(dir),
            manifest: Default::default(),
            cases: vec![CaseRow::with_rounds("default", 1 << 20, rounds)],
            distributions: Default::default(),
        }
    }

    /// Two runs whose rounds alternate 100/110 us: +15 % is beyond the threshold
    /// (regressed, its interval from +4.5 %) but within two single rounds' spread
    /// (the noise floor, about 21 %): marked `~`, and it does not fail the gate; +60 %
    /// does.
    #[test]
    fn a_change_within_the_runs_noise_floor_does_not_fail_the_gate() {
        let base = run("a", &[100.0, 110.0, 100.0, 110.0, 100.0, 110.0]);
        fn side<'a>(run: &'a RunData, label: &str) -> Side<'a> {
            Side {
                run,
                config: None,
                label: label.into(),
            }
        }
        let opts = CompareOptions {
            threshold: 0.02,
            resamples: 100,
            margin: 0.02,
            family_alpha: crate::analysis::family::FAMILY_ALPHA,
        };
        for (factor, gates) in [(1.15, false), (1.6, true)] {
            let times: Vec<f64> = [100.0, 110.0, 100.0, 110.0, 100.0, 110.0]
                .iter()
                .map(|t| t * factor)
                .collect();
            let cand = run("b", &times);
            let report = compare(&side(&base, "a"), &side(&cand, "b"), opts).unwrap();
            let r = &report.rows[0];
            assert_eq!(r.outcome, Outcome::Regressed, "{factor}: {r:?}");
            assert_eq!(r.within_noise, !gates, "{factor}: {r:?}");
            assert_eq!(report.regressions().next().is_some(), gates, "{factor}");
            let lines = summary(&report).join("\n");
            assert_eq!(lines.contains("no regression"), !gates, "{lines}");
        }
    }
}
