//! JUnit XML of a `check`: one `<testcase>` per case, so that GitLab, Jenkins and
//! GitHub show every case as a test. Failing outcomes are `<failure>`, cases not
//! judged (inconclusive timings, cases new to the run) are `<skipped>`. The shape is
//! the common JUnit schema: `testsuites` > `testsuite` > `testcase` > `failure` /
//! `skipped` / `system-out`.

use std::fmt::Write as _;

use crate::analysis::baseline::{CheckReport, Outcome};
use crate::units::{xml_escape, Bytes};

/// The XML document.
pub fn render(report: &CheckReport, baseline: &str, timestamp: &str) -> String {
    let tests = report.cases.len();
    let failures = report.failures();
    let skipped = report
        .cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Inconclusive | Outcome::New))
        .count();
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
        let class = match c.collective.as_str() {
            "" | "all_reduce" => format!("nccl-bench.{}.n{}", c.config, c.nranks),
            coll => format!("nccl-bench.{}.{coll}.n{}", c.config, c.nranks),
        };
        let name = format!("{} {} {}", Bytes(c.bytes), c.dtype, c.op);
        // A case's "time" is its median all-reduce time, in seconds.
        let time = c.run_us.map(|us| us / 1e6).unwrap_or(0.0);
        let _ = write!(
            s,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.9}\"",
            xml_escape(&class),
            xml_escape(&name)
        );
        let message = xml_escape(&c.message);
        match c.outcome {
            o if o.fails() => {
                let _ = writeln!(
                    s,
                    ">\n      <failure type=\"{}\" message=\"{message}\">{message}</failure>\n    </testcase>",
                    o.as_str()
                );
            }
            Outcome::Inconclusive | Outcome::New => {
                let _ = writeln!(
                    s,
                    ">\n      <skipped message=\"{}: {message}\"/>\n    </testcase>",
                    c.outcome.as_str()
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    ">\n      <system-out>{}: {message}</system-out>\n    </testcase>",
                    c.outcome.as_str()
                );
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::baseline::CaseCheck;

    fn case(outcome: Outcome, message: &str) -> CaseCheck {
        CaseCheck {
            config: "default".into(),
            collective: "all_reduce".into(),
            nranks: 2,
            bytes: 65536,
            dtype: "float".into(),
            op: "sum".into(),
            outcome,
            baseline_us: Some(10.0),
            run_us: Some(11.0),
            change: Some(0.1),
            message: message.into(),
        }
    }

    #[test]
    fn every_case_is_a_testcase_and_the_counts_add_up() {
        let report = CheckReport {
            run: "runs/<new> & \"x\"".into(),
            threshold: 0.05,
            cases: vec![
                case(Outcome::Pass, "within (+1.0 %)"),
                case(Outcome::Slower, "slower (+10.0 %) < beyond"),
                case(Outcome::Inconclusive, "noisy timings"),
                case(Outcome::Missing, "missing from the run"),
            ],
            family: crate::analysis::family::decide_bands(&[], 0.05, 0.05, 0.05, 1),
        };
        let xml = render(&report, "base.json", "2026-11-24T21:00:00+00:00");
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nccl-bench check\" tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\">"), "{xml}");
        assert!(xml.contains("name=\"nccl-bench check of runs/&lt;new&gt; &amp; &quot;x&quot; against base.json\""), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 4);
        assert_eq!(xml.matches("<failure ").count(), 2);
        assert!(
            xml.contains("<failure type=\"slower\" message=\"slower (+10.0 %) &lt; beyond\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"inconclusive: noisy timings\"/>"),
            "{xml}"
        );
        assert!(xml.contains("classname=\"nccl-bench.default.n2\" name=\"64 KiB float sum\" time=\"0.000011000\""), "{xml}");
        assert_eq!(xml_escape("a\u{1}b"), "a\u{FFFD}b");
    }
}
