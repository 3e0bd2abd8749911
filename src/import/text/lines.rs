//! The lines of a text output as the importer sees them: the launcher prefix that names
//! the rank (mpirun `--tag-output`, MPICH `-prepend-rank`, `srun -l`) split off, and the
//! lines that are NCCL's log or a Markdown fence rather than nccl-tests' own.

pub(in crate::import) struct Line<'a> {
    pub(in crate::import) no: usize,
    /// The launcher prefix naming the rank (`[1,0]`, `[0]`, `0:`), or "".
    pub(in crate::import) key: &'a str,
    pub(in crate::import) body: &'a str,
}

/// Splits a launcher prefix off a line: mpirun `--tag-output` `[1,0]<stdout>:`, MPICH
/// `-prepend-rank` `[0] ` and Slurm `srun -l` ` 0: `.
pub(in crate::import) fn split_prefix(raw: &str) -> (&str, &str) {
    let s = raw.strip_suffix('\r').unwrap_or(raw);
    if let Some(rest) = s.strip_prefix('[') {
        if let Some(close) = rest.find(']') {
            let inner = &rest[..close];
            let after = &rest[close + 1..];
            let key = &s[..close + 2];
            if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit() || b == b',') {
                if inner.contains(',') {
                    if let Some(stream) = after.strip_prefix('<') {
                        if let Some(gt) = stream.find('>') {
                            if let Some(body) = stream[gt + 1..].strip_prefix(':') {
                                return (key, body);
                            }
                        }
                    }
                } else if after.is_empty() || after.starts_with(' ') {
                    return (key, after);
                }
            }
        }
    }
    let t = s.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && t[digits..].starts_with(':') {
        let after = &t[digits + 1..];
        if after.is_empty() || after.starts_with(' ') {
            return (&t[..digits + 1], after);
        }
    }
    ("", s)
}

/// An NCCL debug line (`NCCL INFO`, `WARN`, `TRACE`) among nccl-tests' output.
pub(in crate::import) fn is_nccl_log(t: &str) -> bool {
    t.contains("NCCL INFO") || t.contains("NCCL WARN") || t.contains("NCCL TRACE")
}

/// A Markdown code fence around pasted output.
pub(in crate::import) fn is_fence(t: &str) -> bool {
    t.starts_with("```") || t.starts_with("~~~")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_prefixes_are_split() {
        assert_eq!(split_prefix("[1,12]<stdout>:  8  2"), ("[1,12]", "  8  2"));
        assert_eq!(split_prefix("[1,0]<stderr>:x"), ("[1,0]", "x"));
        assert_eq!(
            split_prefix("[3] node:1:1 [0] NCCL INFO x"),
            ("[3]", " node:1:1 [0] NCCL INFO x")
        );
        assert_eq!(split_prefix(" 0: # size"), ("0:", " # size"));
        assert_eq!(split_prefix("12:"), ("12:", ""));
        assert_eq!(
            split_prefix("           8             2"),
            ("", "           8             2")
        );
        assert_eq!(split_prefix("12:34:56 x"), ("", "12:34:56 x"));
        assert_eq!(
            split_prefix("[2025-11-11 16:54:54] x"),
            ("", "[2025-11-11 16:54:54] x")
        );
        assert_eq!(split_prefix("line\r"), ("", "line"));
    }
}
