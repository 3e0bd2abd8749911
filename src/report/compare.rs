//! The comparison as people and programs read it: an aligned table for the terminal,
//! Markdown for a PR or a wiki, CSV and JSON for scripts. Every text form ends with
//! the decision's sentence, its method, and what else a reader must know (a changed
//! NCCL choice, cases only one side has), wrapped to the terminal's width in the table.

use std::fmt::Write as _;

use anyhow::Result;

use super::decision;
use crate::analysis::compare::{CompareReport, Flags, PairRow};
use crate::units::{format_us, plural, Bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    /// One page for a browser: the summary first, then the cases.
    Html,
    Csv,
    Json,
}

const HEADERS: [&str; 8] = [
    "config",
    "nranks",
    "size",
    "base",
    "candidate",
    "change",
    "interval",
    "",
];

/// What the quality rules flagged, in words: `base noisy, candidate re-measured
/// alone`; empty for neither side.
pub fn flag_words(flags: &Flags) -> String {
    [("base", &flags.base), ("candidate", &flags.candidate)]
        .into_iter()
        .filter_map(|(side, q)| {
            let q = q.as_deref()?;
            let word = if q == "remeasured" {
                "re-measured alone"
            } else {
                q
            };
            Some(format!("{side} {word}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A pair's change in words, with its flags beside it: `slower (candidate noisy)`.
pub fn outcome(r: &PairRow) -> String {
    match flag_words(&r.flags) {
        f if f.is_empty() => r.case.change.word().to_string(),
        f => format!("{} ({f})", r.case.change.word()),
    }
}

fn cells(r: &PairRow) -> [String; 8] {
    let time = |t: Option<f64>, status: &str| match t {
        Some(t) if status == "ok" => format_us(t),
        _ => status.to_string(),
    };
    let change = r.case.relative();
    let interval = match (
        r.case.interval,
        change,
        r.case.estimate.map(|e| e.se.is_some()),
    ) {
        (Some(i), Some(c), Some(true)) => decision::range(i, c),
        _ => String::new(),
    };
    let change = change.map(decision::how_much).unwrap_or_default();
    let word = outcome(r);
    [
        r.label(),
        r.nranks.to_string(),
        Bytes(r.bytes).to_string(),
        time(r.base_time_us, &r.base_status),
        time(r.cand_time_us, &r.cand_status),
        change,
        interval,
        word,
    ]
}

/// A case's name in sentences: `1 MiB on 8 ranks`.
fn name(r: &PairRow) -> String {
    format!(
        "{} on {}",
        Bytes(r.bytes),
        plural(r.nranks as usize, "rank", "ranks")
    )
}

/// The lines under a table: the sentence, the method, and the notes.
pub fn summary(report: &CompareReport) -> Vec<String> {
    let names: Vec<String> = report.rows.iter().map(name).collect();
    let mut lines = vec![
        decision::sentence(&report.decision, &names, "the candidate"),
        decision::method(&report.decision),
    ];
    if !report.same_run && report.decision.members > 0 {
        lines.push(
            "Two runs: the intervals hold each run's own rounds, not how runs differ from night to night; `baseline` and `check` judge that.".into(),
        );
    }
    for r in &report.rows {
        if let Some((from, to)) = &r.choice_change {
            lines.push(format!(
                "NCCL's choice changed at {}, {}: {to}, was {from}.",
                r.label(),
                name(r)
            ));
        }
    }
    for &(base, cand, count) in &report.graph_differs {
        let how = |n: u64| match n {
            0 => "one launch each".to_string(),
            n => format!("CUDA graphs of {n}"),
        };
        lines.push(format!(
            "{} launched differently ({} in the base, {} in the candidate): launch overhead is part of the change.",
            plural(count, "case", "cases"),
            how(base),
            how(cand)
        ));
    }
    if report.only_in_base + report.only_in_candidate > 0 {
        lines.push(format!(
            "Unmatched: {} only in the base, {} only in the candidate.",
            report.only_in_base, report.only_in_candidate
        ));
    }
    for (side, only) in [
        ("base", &report.collectives_only_in_base),
        ("candidate", &report.collectives_only_in_candidate),
    ] {
        if !only.is_empty() {
            lines.push(format!(
                "Only the {side} measured {}: not compared.",
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
                "collective",
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
                "own_low",
                "own_high",
                "base_busbw_gbps",
                "cand_busbw_gbps",
                "outcome",
                "flags",
                "base_choice",
                "cand_choice",
            ])?;
            for r in &report.rows {
                let opt = |x: Option<f64>| x.map(|v| format!("{v:.5}")).unwrap_or_default();
                let choice = r.choice_change.as_ref();
                w.write_record([
                    r.config.clone(),
                    r.collective.clone(),
                    r.nranks.to_string(),
                    r.bytes.to_string(),
                    r.dtype.clone(),
                    r.op.clone(),
                    r.base_status.clone(),
                    r.cand_status.clone(),
                    opt(r.base_time_us),
                    opt(r.cand_time_us),
                    opt(r.case.relative()),
                    opt(r.case.interval.map(|i| i.0)),
                    opt(r.case.interval.map(|i| i.1)),
                    opt(r.case.own.map(|i| i.0)),
                    opt(r.case.own.map(|i| i.1)),
                    opt(r.base_busbw_gbps),
                    opt(r.cand_busbw_gbps),
                    r.case.change.word().to_string(),
                    flag_words(&r.flags),
                    choice.map(|c| c.0.clone()).unwrap_or_default(),
                    choice.map(|c| c.1.clone()).unwrap_or_default(),
                ])?;
            }
            String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?
        }
        Format::Markdown | Format::Html => {
            let mut table = String::new();
            writeln!(table, "| {} |", HEADERS.join(" | "))?;
            writeln!(table, "|{}", "---|".repeat(HEADERS.len()))?;
            for r in &report.rows {
                writeln!(table, "| {} |", cells(r).join(" | "))?;
            }
            let mut lines = String::new();
            for line in summary(report) {
                writeln!(lines, "- {line}")?;
            }
            if format == Format::Markdown {
                format!("{table}\n{lines}")
            } else {
                let body = format!("## Summary\n\n{lines}\n## Cases\n\n{table}");
                let title = format!(
                    "nccl-bench compare: {} against {}",
                    report.candidate, report.base
                );
                super::html::page(&title, &body, None)
            }
        }
        Format::Table => {
            let rows: Vec<[String; 8]> = report.rows.iter().map(cells).collect();
            // One config pair throughout: named once above the table, not on each row.
            let one_config = rows.windows(2).all(|w| w[0][0] == w[1][0]);
            let mut widths = HEADERS.map(str::len);
            for r in &rows {
                for (w, c) in widths.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let mut s = String::new();
            // The outcome last: under its row where the row would not fit.
            let line = |cells: &[String]| -> String {
                let head = cells[..7]
                    .iter()
                    .zip(widths)
                    .enumerate()
                    .filter(|(i, _)| *i > 0 || !one_config)
                    .map(|(i, (c, w))| match i {
                        0 => format!("{c:<w$}"),
                        _ => format!("{c:>w$}"),
                    })
                    .collect::<Vec<_>>()
                    .join("  ");
                crate::units::row_fitted(&head, "  ", &cells[7])
            };
            if let (true, Some(r)) = (one_config, rows.first()) {
                writeln!(s, "{}", r[0])?;
            }
            writeln!(s, "{}", line(&HEADERS.map(String::from)))?;
            for r in &rows {
                writeln!(s, "{}", line(r))?;
            }
            writeln!(s)?;
            let against = format!(
                "{} against {}, threshold {}",
                report.candidate,
                report.base,
                decision::band(report.decision.design.threshold)
            );
            crate::units::wrap_into(&mut s, &against, crate::units::TERMINAL_WIDTH, "", "  ");
            for l in summary(report) {
                crate::units::wrap_into(&mut s, &l, crate::units::TERMINAL_WIDTH, "", "  ");
            }
            s
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_worded_per_side() {
        let flags = |base: Option<&str>, candidate: Option<&str>| Flags {
            base: base.map(String::from),
            candidate: candidate.map(String::from),
        };
        assert_eq!(flag_words(&flags(None, None)), "");
        assert_eq!(flag_words(&flags(None, Some("noisy"))), "candidate noisy");
        assert_eq!(
            flag_words(&flags(Some("remeasured"), Some("outlier"))),
            "base re-measured alone, candidate outlier"
        );
    }
}
