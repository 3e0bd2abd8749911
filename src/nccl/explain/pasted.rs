//! What was pasted, as lines: each with its file and line number, as posted and in lower
//! case for matching. The line rules and the reasoning across lines read it; the log
//! parser reads the same text for what NCCL said.

/// One file or standard input, as given.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

#[derive(Debug)]
pub struct PastedLine<'a> {
    /// Index into [`Pasted::names`].
    pub file: usize,
    /// 1-based within its file.
    pub number: usize,
    pub text: &'a str,
    pub lower: String,
}

#[derive(Debug)]
pub struct Pasted<'a> {
    pub names: Vec<&'a str>,
    pub lines: Vec<PastedLine<'a>>,
}

/// Longest evidence line kept, in characters.
const MAX_CHARS: usize = 200;

impl<'a> Pasted<'a> {
    pub fn new(inputs: &[Input<'a>]) -> Pasted<'a> {
        let mut lines = Vec::new();
        for (file, input) in inputs.iter().enumerate() {
            for (i, text) in input.text.lines().enumerate() {
                lines.push(PastedLine {
                    file,
                    number: i + 1,
                    text,
                    lower: text.to_ascii_lowercase(),
                });
            }
        }
        Pasted {
            names: inputs.iter().map(|i| i.name).collect(),
            lines,
        }
    }

    /// The first line holding `part` (lower case).
    pub fn first(&self, part: &str) -> Option<&PastedLine<'a>> {
        self.lines.iter().find(|l| l.lower.contains(part))
    }

    pub fn contains(&self, part: &str) -> bool {
        self.first(part).is_some()
    }

    /// `line 12: text`, with the file's name where several were given; cut to length.
    pub fn evidence(&self, line: &PastedLine) -> String {
        let at = if self.names.len() > 1 {
            format!("{} line {}", self.names[line.file], line.number)
        } else {
            format!("line {}", line.number)
        };
        format!("{at}: {}", cut(line.text.trim()))
    }
}

/// `text` cut at [`MAX_CHARS`] characters, with `...` where it was cut.
pub fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// The message of a line without what launchers and NCCL put before it: up to the
/// `NCCL WARN`/`NCCL INFO` tag, a `[rank3]:` or `3:` prefix, `Last error:`.
pub fn message(text: &str) -> &str {
    let t = text.trim();
    for tag in ["NCCL WARN ", "NCCL INFO "] {
        if let Some(at) = t.find(tag) {
            return t[at + tag.len()..].trim();
        }
    }
    t
}
