//! `check`'s outputs for people: one line per case of the baseline, failures first,
//! then the summary, as aligned text or a Markdown table.

use std::fmt::Write as _;

use crate::analysis::baseline::{CheckReport, Outcome};
use crate::units::Bytes;

/// One line per case (failures first), then the summary.
pub fn table(report: &CheckReport, baseline: &str, markdown: bool) -> String {
    let mut s = String::new();
    let mut cases: Vec<_> = report.cases.iter().collect();
    cases.sort_by_key(|c| !c.outcome.fails());
    if markdown {
        let _ = writeln!(
            s,
            "## nccl-bench check of {} against {baseline}\n\n| result | config | ranks | size | run | baseline | change | why |\n|---|---|---|---|---|---|---|---|",
            report.run
        );
    }
    for c in &cases {
        let us = |v: Option<f64>| {
            v.map(|v| format!("{v:.3} us"))
                .unwrap_or_else(|| "-".into())
        };
        let change = c
            .change
            .map(|x| format!("{:+.1} %", x * 100.0))
            .unwrap_or_else(|| "-".into());
        if markdown {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {change} | {} |",
                c.outcome.as_str(),
                c.label(),
                c.nranks,
                Bytes(c.bytes),
                us(c.run_us),
                us(c.baseline_us),
                c.message.replace('|', "\\|")
            );
        } else {
            let _ = writeln!(
                s,
                "{:<12} {:<12} n={:<4} {:>10}  run {:>14}  baseline {:>14}  {change:>8}  {}",
                c.outcome.as_str(),
                c.label(),
                c.nranks,
                Bytes(c.bytes).to_string(),
                us(c.run_us),
                us(c.baseline_us),
                c.message
            );
        }
    }
    let count = |o: Outcome| report.cases.iter().filter(|c| c.outcome == o).count();
    let _ = writeln!(
        s,
        "{}{} of {} cases fail ({} slower, {} missing, {} not ok); {} pass, {} faster, {} inconclusive, {} new; threshold {:.1} %",
        if markdown { "\n" } else { "" },
        report.failures(),
        report.cases.len(),
        count(Outcome::Slower),
        count(Outcome::Missing),
        count(Outcome::NotOk),
        count(Outcome::Pass),
        count(Outcome::Faster),
        count(Outcome::Inconclusive),
        count(Outcome::New),
        report.threshold * 100.0
    );
    let family = report.family.sentence("the run");
    if !family.is_empty() {
        let _ = writeln!(s, "{}{family}", if markdown { "\n" } else { "" });
    }
    s
}
