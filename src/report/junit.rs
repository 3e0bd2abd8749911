//! JUnit XML of a `check`: one `<testcase>` per case, so that GitLab, Jenkins and
//! GitHub show every case as a test. A case slower, failing, missing or not settled
//! is a `<failure>` (a gate never passes on what it could not tell); a case new to
//! the run is `<skipped>`. The shape is the common JUnit schema: `testsuites` >
//! `testsuite` > `testcase` > `failure` / `skipped` / `system-out`.

use std::fmt::Write as _;

use super::decision::case_words;
use crate::analysis::baseline::{CaseCheck, CheckReport};
use crate::units::{xml_escape, Bytes};

/// What a case says: its change and interval, and its note.
fn message(c: &CaseCheck) -> String {
    let change = c.case.map(|k| case_words(&k)).unwrap_or_default();
    [
        c.word().to_string(),
        change,
        super::check::note_words(&c.note),
    ]
    .into_iter()
    .filter(|p| !p.is_empty())
    .collect::<Vec<_>>()
    .join(": ")
}

/// The XML document.
pub fn render(report: &CheckReport, baseline: &str, timestamp: &str) -> String {
    let tests = report.cases.len();
    let failing = |c: &&CaseCheck| c.fails() || c.open();
    let failures = report.cases.iter().filter(failing).count();
    let skipped = report.cases.iter().filter(|c| c.case.is_none()).count();
    let suite = format!("nccl-bench check of {} against {baseline}", report.run);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"nccl-bench check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" timestamp=\"{}\">",
        xml_escape(&suite),
        xml_escape(timestamp)
    );
    for c in &report.cases {
        // all_reduce's cases keep the names they had before there were others.
        let class = match c.id.collective.as_str() {
            "" | "all_reduce" => format!("nccl-bench.{}.n{}", c.id.config, c.id.nranks),
            coll => format!("nccl-bench.{}.{coll}.n{}", c.id.config, c.id.nranks),
        };
        let name = format!("{} {} {}", Bytes(c.id.bytes), c.id.dtype, c.id.op);
        // A case's "time" is its typical collective time, in seconds.
        let time = c.run_us.map(|us| us / 1e6).unwrap_or(0.0);
        let _ = write!(
            s,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.9}\"",
            xml_escape(&class),
            xml_escape(&name)
        );
        let text = xml_escape(&message(c));
        let _ = if failing(&c) {
            writeln!(
                s,
                ">\n      <failure type=\"{}\" message=\"{text}\">{text}</failure>\n    </testcase>",
                c.word()
            )
        } else if c.case.is_none() {
            writeln!(s, ">\n      <skipped message=\"{text}\"/>\n    </testcase>")
        } else {
            writeln!(
                s,
                ">\n      <system-out>{text}</system-out>\n    </testcase>"
            )
        };
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::baseline::{CaseId, Note};
    use crate::stats::change::{self, Design, Evidence, Input};

    fn case(evidence: Evidence, note: Note) -> CaseCheck {
        let decided = change::decide(
            &[Input {
                evidence,
                flagged: false,
            }],
            &Design::gate(0.05, 1),
        );
        CaseCheck {
            id: CaseId {
                config: "default".into(),
                collective: "all_reduce".into(),
                nranks: 2,
                bytes: 65536,
                dtype: "float".into(),
                op: "sum".into(),
            },
            case: Some(decided.cases[0]),
            baseline_us: Some(10.0),
            run_us: Some(11.0),
            note,
        }
    }

    #[test]
    fn every_case_is_a_testcase_and_what_the_gate_cannot_tell_fails() {
        let rounds =
            |by: f64| -> Vec<f64> { [10.0, 10.1, 9.9, 10.0].iter().map(|r| r * by).collect() };
        let level = |by| change::Level::of_rounds(&rounds(by)).unwrap();
        let within = change::between(&[level(1.0)], None, &level(1.0)).unwrap();
        let slower = change::between(&[level(1.0)], None, &level(1.5)).unwrap();
        let noisy = change::Estimate {
            se: Some(0.2),
            ..within
        };
        let mut new = case(Evidence::Missing, Note::NotInBaseline);
        new.case = None;
        let report = CheckReport {
            run: "runs/<new> & \"x\"".into(),
            threshold: 0.05,
            cases: vec![
                case(Evidence::Measured(within), Note::None),
                case(
                    Evidence::Measured(slower),
                    Note::Flagged {
                        in_baseline: false,
                        in_run: Some("< beyond".into()),
                    },
                ),
                case(Evidence::Measured(noisy), Note::None),
                case(Evidence::Missing, Note::MissingFromRun),
                new,
            ],
            decision: change::decide(&[], &Design::gate(0.05, 1)),
            run_to_run: None,
            shift: None,
        };
        let xml = render(&report, "base.json", "2026-11-24T21:00:00+00:00");
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nccl-bench check\" tests=\"5\" failures=\"3\" errors=\"0\" skipped=\"1\">"), "{xml}");
        assert!(xml.contains("name=\"nccl-bench check of runs/&lt;new&gt; &amp; &quot;x&quot; against base.json\""), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 5);
        assert!(
            xml.contains("<failure type=\"slower\" message=\"slower: 50.0 % slower ("),
            "{xml}"
        );
        assert!(xml.contains("&lt; beyond"), "{xml}");
        assert!(xml.contains("<failure type=\"not settled\""), "{xml}");
        assert!(xml.contains("<failure type=\"missing\""), "{xml}");
        assert!(
            xml.contains("<skipped message=\"new: not in the baseline\"/>"),
            "{xml}"
        );
        assert!(xml.contains("classname=\"nccl-bench.default.n2\" name=\"64 KiB float sum\" time=\"0.000011000\""), "{xml}");
        assert_eq!(xml_escape("a\u{1}b"), "a\u{FFFD}b");
    }
}
