//! Importers for results produced by other tools, so that they can be read next to
//! nccl-bench's own runs: the output of NVIDIA nccl-tests (`all_reduce_perf` and its
//! siblings), its stdout table in every format it has printed (`text`) and its `-J`
//! JSON document (`json`), read by [`parse`] into an [`ImportedRun`] (`run`), with the
//! collective of the binary the output names (`binary`), and written as a run
//! directory by [`write_run`] (`write`).

mod binary;
mod facts;
mod json;
mod run;
mod text;
mod write;

pub use binary::name_collective;
pub use json::parse_json;
pub(crate) use run::local_time;
pub use run::{Format, ImportError, ImportedRank, ImportedRow, ImportedRun, IterStats, Timing};
pub use text::parse_text;
pub use write::{write_run, ImportRequest, BACKEND};

/// Reads nccl-tests output: JSON when it starts with `{` (or `[` followed by `{` or `]`,
/// so that an mpirun `[1,0]<stdout>:` prefix still reads as text), else text.
pub fn parse(text: &str) -> Result<ImportedRun, ImportError> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let json = match t.as_bytes().first() {
        Some(b'{') => true,
        Some(b'[') => matches!(
            t[1..].trim_start().as_bytes().first(),
            Some(b'{' | b']') | None
        ),
        _ => false,
    };
    if json {
        parse_json(text)
    } else {
        parse_text(text)
    }
}

#[cfg(test)]
mod tests;
