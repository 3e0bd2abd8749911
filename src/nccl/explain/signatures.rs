//! The findings raised by their lines alone: each entry of findings.toml with `lines`,
//! where some line holds every substring of one of its alternatives (and the text none
//! of its `unless` and, where it has a `with`, one of those). The lines it placed are returned too, so that no generic finding
//! repeats them.

use super::finding::{Finding, FindingKind};
use super::pasted::{cut, message, Pasted};
use crate::nccl::knowledge;

/// One line-raised finding and the lines (file, number) it explains.
pub(super) struct Placed {
    pub finding: Finding,
    pub lines: Vec<(usize, usize)>,
}

/// Every line-raised finding the text shows, in order of its first line.
pub(super) fn line_findings(pasted: &Pasted, version: Option<&str>) -> Vec<Placed> {
    let mut out: Vec<(usize, Placed)> = Vec::new();
    for text in knowledge::get()
        .findings
        .iter()
        .filter(|f| !f.lines.is_empty())
    {
        let alternatives: Vec<Vec<String>> = text
            .lines
            .iter()
            .map(|alt| alt.iter().map(|s| s.to_ascii_lowercase()).collect())
            .collect();
        let off = text
            .unless
            .iter()
            .any(|u| pasted.contains(&u.to_ascii_lowercase()))
            || !(text.with.is_empty()
                || text
                    .with
                    .iter()
                    .any(|w| pasted.contains(&w.to_ascii_lowercase())));
        if off {
            continue;
        }
        let hits: Vec<usize> = pasted
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                alternatives
                    .iter()
                    .any(|alt| alt.iter().all(|s| l.lower.contains(s.as_str())))
            })
            .map(|(i, _)| i)
            .collect();
        if hits.len() < text.min_lines.max(1) {
            continue;
        }
        let first = &pasted.lines[hits[0]];
        let evidence =
            super::evidence::distinct(hits.iter().map(|&i| pasted.evidence(&pasted.lines[i])));
        let version = version.map(|v| format!(" (NCCL {v})")).unwrap_or_default();
        let fill = [
            ("count", hits.len().to_string()),
            ("evidence", cut(message(first.text))),
            ("version", version),
        ];
        let finding = Finding::of_text(
            FindingKind::Line(static_id(&text.id)),
            text,
            evidence,
            &fill,
        )
        .with_occurrences(hits.len());
        let lines = hits
            .iter()
            .map(|&i| (pasted.lines[i].file, pasted.lines[i].number))
            .collect();
        out.push((hits[0], Placed { finding, lines }));
    }
    out.sort_by_key(|(first, _)| *first);
    out.into_iter().map(|(_, p)| p).collect()
}

/// The id of a finding of the knowledge, which lives as long as the program.
fn static_id(id: &str) -> &'static str {
    knowledge::finding(id).id.as_str()
}
