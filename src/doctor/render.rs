//! The report as text (one line per check: status, title, value; then indented details
//! and the fix, wrapped at the terminal's width) and as the JSON document documented in
//! the module above.

use std::fmt::Write as _;

use super::Report;

/// Width of the title column.
const TITLE_WIDTH: usize = 18;
const INDENT: &str = "      ";

pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let width = crate::units::TERMINAL_WIDTH;
    let more = format!("{INDENT}  ");
    for c in &report.checks {
        let first = format!("{:<5} {:<TITLE_WIDTH$} ", c.status.label(), c.title);
        crate::units::wrap_into(&mut out, &c.value, width, &first, &more);
        for d in &c.details {
            crate::units::wrap_into(&mut out, d, width, INDENT, &more);
        }
        if let Some(fix) = &c.fix {
            crate::units::wrap_into(&mut out, &format!("fix: {fix}"), width, INDENT, &more);
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{} ok, {} warn, {} fail ({})",
        s.ok, s.warn, s.fail, report.host
    );
    out
}

pub fn render_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize the report: {e}\"}}"));
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Check, Status};

    #[test]
    fn one_line_per_check_with_details_and_fix_indented() {
        let checks = vec![
            Check::new("shm.size", "/dev/shm", Status::Fail, "64.0 MiB free")
                .with_details(vec!["need = ...".into()])
                .with_fix("docker run --shm-size=1g"),
            Check::new("container", "Container", Status::Ok, "not in a container"),
        ];
        let report = Report::new("node-1", checks);
        assert_eq!(
            render_text(&report),
            "FAIL  /dev/shm           64.0 MiB free\n\
             \x20     need = ...\n\
             \x20     fix: docker run --shm-size=1g\n\
             OK    Container          not in a container\n\
             1 ok, 0 warn, 1 fail (node-1)\n"
        );
        let v: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["checks"][0]["status"], "fail");
        assert_eq!(v["checks"][1]["fix"], serde_json::Value::Null);
        assert_eq!(v["summary"]["fail"], 1);
    }
}
