//! `check`'s outputs for people: one row per case (its change under it where the row
//! would not fit 100 columns), failures first, then the
//! decision's sentence and its method, as aligned text or a Markdown table.

use std::fmt::Write as _;

use super::decision::{self, case_words, pct};
use crate::analysis::baseline::job::JobCheck;
use crate::analysis::baseline::{CaseCheck, CheckReport, Note};
use crate::config::SizesFrom;
use crate::stats::change::Change;
use crate::units::{format_us, plural, Bytes};

/// A case's note in words: `flagged in the baseline, noisy in the run`, `timeout:
/// ...`, `not in the baseline`; empty where there is nothing to say.
pub fn note_words(note: &Note) -> String {
    match note {
        Note::None => String::new(),
        Note::Flagged {
            in_baseline,
            in_run,
        } => [
            in_baseline.then(|| "flagged in the baseline".to_string()),
            in_run.as_ref().map(|q| format!("{q} in the run")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", "),
        Note::Failed { status, error } => format!("{status}: {error}"),
        Note::NoTiming => "no timing".into(),
        Note::MissingFromRun => "missing from the run".into(),
        Note::FailingInBaseline(why) => {
            format!("not ok in the baseline's runs ({})", why.join(", "))
        }
        Note::NotInBaseline => "not in the baseline".into(),
    }
}

/// The order of the table: failures, then cases not settled, then the rest.
fn rank(c: &CaseCheck) -> u8 {
    if c.fails() {
        0
    } else if c.open() {
        1
    } else {
        2
    }
}

/// One row per case (failures first), then the summary.
pub fn table(report: &CheckReport, baseline: &str, markdown: bool) -> String {
    let mut s = String::new();
    let mut cases: Vec<&CaseCheck> = report.cases.iter().collect();
    cases.sort_by_key(|c| rank(c));
    if markdown {
        let _ = writeln!(
            s,
            "## nccl-bench check of {} against {baseline}\n\n| result | config | ranks | size | run | baseline | change | note |\n|---|---|---|---|---|---|---|---|",
            report.run
        );
    }
    let time = |v: Option<f64>| v.map(format_us).unwrap_or_else(|| "-".into());
    for c in &cases {
        let change = c.case.map(|k| case_words(&k)).unwrap_or_default();
        if markdown {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {change} | {} |",
                c.word(),
                c.id.label(),
                c.id.nranks,
                Bytes(c.id.bytes),
                time(c.run_us),
                time(c.baseline_us),
                note_words(&c.note).replace('|', "\\|")
            );
        } else {
            let head = format!(
                "{:<11} {:<14} n={:<3} {:>9} {:>10} {:>10}",
                c.word(),
                c.id.label(),
                c.id.nranks,
                Bytes(c.id.bytes).to_string(),
                time(c.run_us),
                time(c.baseline_us),
            );
            let _ = writeln!(s, "{}", crate::units::row_fitted(&head, "  ", &change));
        }
    }
    // A paragraph: as it is in Markdown, wrapped to the terminal's width in text.
    let say = |s: &mut String, text: &str| {
        if markdown {
            let _ = writeln!(s, "\n{text}");
        } else {
            crate::units::wrap_into(s, text, crate::units::TERMINAL_WIDTH, "", "  ");
        }
    };
    say(&mut s, &sentence(report));
    if let (Some(shift), Some(t)) = (report.shift, report.run_to_run) {
        let line = format!(
            "The run is {} over all its cases; the baseline's {} runs differ by {} run to run.",
            pct(shift),
            t.runs,
            pct(t.relative()).trim_start_matches('+')
        );
        say(&mut s, &line);
    }
    say(&mut s, &decision::method(&report.decision));
    let exit = format!(
        "Exit {}: 0 pass, 1 a case slower, failing or missing, 3 not settled.",
        report.exit_code()
    );
    say(&mut s, &exit);
    s
}

/// The decision's sentence over the baseline's cases, each named `8 B on 2 ranks`.
pub fn sentence(report: &CheckReport) -> String {
    let names: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.baseline_us.is_some())
        .map(|c| {
            format!(
                "{} on {}",
                Bytes(c.id.bytes),
                plural(c.id.nranks as usize, "rank", "ranks")
            )
        })
        .collect();
    decision::sentence(&report.decision, &names, "the run")
}

/// How much a baseline's runs differ as whole runs, and what that makes of a gate:
/// an identical run's own run effect is what the gate measures, so a threshold
/// near it fails some nights.
pub fn run_to_run_words(t: &crate::stats::change::RunToRun) -> String {
    let tau = t.var.sqrt();
    let at = |threshold: f64| {
        let z = threshold.ln_1p() / tau.max(f64::MIN_POSITIVE);
        // One-sided normal tail: the nights an identical run is that much slower.
        0.5 * statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
    };
    format!(
        "The {} runs differ by {} run to run: an identical run is 5 % slower in about {:.1} % of nights, 2 % slower in {:.1} %.",
        t.runs,
        pct(t.relative()).trim_start_matches('+'),
        100.0 * at(0.05),
        100.0 * at(0.02)
    )
}

/// What the gate can tell with these runs: `An identical run's intervals reach +12.3 %
/// at the widest case (median +4.1 %) in 15 rounds: with a lower --threshold it cannot
/// pass.` (A flagged case never passes, whatever the threshold.)
pub fn reach_words((widest, median): (f64, f64), rounds: u32) -> String {
    format!(
        "An identical run's intervals reach {} at the widest case (median {}) in {rounds} rounds: with a lower --threshold it cannot pass.",
        pct(widest),
        pct(median)
    )
}

/// The job's checks in lines, after `check`'s table.
pub fn job_lines(checks: &[JobCheck], job: &SizesFrom) -> Vec<String> {
    let mut out = vec![format!(
        "your job ({}: {} (collective, size) with their calls {}):",
        job.file,
        job.calls.len(),
        job.per
    )];
    if checks.is_empty() {
        out.push("  no case of the baseline and the run matches the job's sizes".into());
    }
    for c in checks {
        // "slower" and "faster" are in the change's words already.
        let change = match c.case.change {
            Change::Slower | Change::Faster => decision::case_words(&c.case),
            other => format!("{}: {}", other.word(), decision::case_words(&c.case)),
        };
        out.push(format!(
            "  {}, {}: {change}; {} against {} {}",
            c.config,
            plural(c.nranks as usize, "rank", "ranks"),
            format_us(c.run_us),
            format_us(c.base_us),
            job.per,
        ));
        if c.left_out > 0 {
            out.push(format!(
                "    {} of the job's sizes are not in both the baseline and the run: left out",
                c.left_out
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_note_is_said_in_words() {
        let words = |n: Note| note_words(&n);
        assert_eq!(words(Note::None), "");
        assert_eq!(
            words(Note::Flagged {
                in_baseline: true,
                in_run: Some("noisy".into()),
            }),
            "flagged in the baseline, noisy in the run"
        );
        assert_eq!(
            words(Note::Flagged {
                in_baseline: false,
                in_run: Some("outlier".into()),
            }),
            "outlier in the run"
        );
        assert_eq!(
            words(Note::Failed {
                status: "timeout".into(),
                error: "no progress in 30 s".into(),
            }),
            "timeout: no progress in 30 s"
        );
        assert_eq!(
            words(Note::FailingInBaseline(vec![
                "timeout".into(),
                "failed".into()
            ])),
            "not ok in the baseline's runs (timeout, failed)"
        );
        assert_eq!(words(Note::MissingFromRun), "missing from the run");
        assert_eq!(words(Note::NotInBaseline), "not in the baseline");
        assert_eq!(words(Note::NoTiming), "no timing");
    }
}
