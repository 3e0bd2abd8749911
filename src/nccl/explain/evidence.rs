//! Evidence: the log lines a finding quotes, each with its line number where the parse
//! result has one, deduplicated, at most [`MAX_EVIDENCE`] of them and each cut to length.

use crate::nccl::log::Failure;

/// Evidence lines kept per finding.
pub const MAX_EVIDENCE: usize = 3;

/// Longest evidence line kept, in characters.
pub(super) const MAX_EVIDENCE_CHARS: usize = 200;

/// A log line shown as evidence: its line number when the parse result has one.
pub(super) struct Line {
    pub(super) number: Option<usize>,
    pub(super) text: String,
}

impl Line {
    pub(super) fn at(number: usize, text: &str) -> Line {
        Line {
            number: Some(number),
            text: text.trim().to_string(),
        }
    }

    pub(super) fn of(failure: &Failure) -> Line {
        Line {
            number: Some(failure.line),
            // An untagged `[rank1]: ...` keeps the `: ` its prefix left.
            text: failure
                .text
                .trim_start_matches([':', ' '])
                .trim_end()
                .to_string(),
        }
    }
}

/// The first [`MAX_EVIDENCE`] lines of distinct text, `line N: text` (the text alone
/// without a number), each cut at [`MAX_EVIDENCE_CHARS`].
pub(super) fn evidence(lines: Vec<Line>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if out.len() == MAX_EVIDENCE {
            break;
        }
        if seen.contains(&line.text) {
            continue;
        }
        let shown = match line.number {
            Some(n) => format!("line {n}: {}", line.text),
            None => line.text.clone(),
        };
        let shown = match shown.char_indices().nth(MAX_EVIDENCE_CHARS) {
            Some((cut, _)) => format!("{}...", &shown[..cut]),
            None => shown,
        };
        seen.push(line.text);
        out.push(shown);
    }
    out
}

/// The first [`MAX_EVIDENCE`] distinct lines of `lines`, already worded.
pub(super) fn distinct(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if out.len() == MAX_EVIDENCE {
            break;
        }
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}
