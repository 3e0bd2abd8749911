//! The parser of `NCCL_DEBUG=INFO`/`WARN` logs. It owns the knowledge of NCCL's log
//! formats from 2.3 to 2.30 (`Ring`/`Channel` connection lines with bus ids or device
//! indices, every transport spelling, version, network, NVLS and CollNet lines, the
//! `Init COMPLETE` rank lines and the failure messages) and turns a log, or one log per
//! rank, into an [`NcclLog`]: which transports the connections used, in what share, and
//! the first failure worth a CSV cell. Parsing never fails: lines it does not know are
//! skipped. Pure apart from [`parse_files`] reading its files; nothing here prints.

use std::io;
use std::path::Path;

mod calls;
mod classify;
mod failure_text;
mod lines;
mod parser;
mod record;

pub use calls::CollCall;
pub use failure_text::{cuda_error_code, shm_segment_size};
pub(in crate::nccl) use lines::strip_launcher_prefixes;
pub use record::{
    ConnectRetry, Connection, Direction, Failure, FailureKind, InterfaceLine, NcclLog, NvlsUse,
    ProcessInfo, RankInfo, ShmBacking, Teardown, Transport, TransportKind,
};

use parser::Parser;

/// The `NCCL_DEBUG_FILE` value for logs named `<prefix>.<host>.<pid>.log`. NCCL
/// expands `%h`, `%p` and `%%` anywhere in the value, so a `%` of the path itself (a
/// `--out` directory named `50%`) is doubled to reach the file system as it is.
pub fn debug_file(prefix: &Path) -> String {
    format!("{}.%h.%p.log", prefix.to_string_lossy().replace('%', "%%"))
}

/// The tag before what NCCL's log names as a failed case's cause, at the end of its
/// `error` cell: `...; NCCL log: shm-enospc: Error: failed to extend ...`.
pub const CAUSE_TAG: &str = "NCCL log: ";

/// `reason` with the cause NCCL's log names appended, after [`CAUSE_TAG`].
pub fn append_cause(reason: &mut String, cause: &str) {
    reason.push_str("; ");
    reason.push_str(CAUSE_TAG);
    reason.push_str(cause);
}

/// What NCCL's log named as the cause in an `error` cell (`shm-enospc: Error: ...`).
pub fn logged_cause(error: &str) -> Option<&str> {
    error
        .find(CAUSE_TAG)
        .map(|at| &error[at + CAUSE_TAG.len()..])
}

/// The failure an error text names (a CSV `error` cell, an application's message), as
/// the parser would classify the same words untagged; `None` if it knows none.
pub fn failure_kind(text: &str) -> Option<FailureKind> {
    classify::classify_plain(text)
}

/// One line's `COLL` call, with the process that logged it (`host:pid` where the line
/// has NCCL's prefix, else `None`); `None` for any other line.
pub fn coll_call(line: &str) -> Option<(Option<String>, CollCall)> {
    let tagged = lines::split_tagged(line)?;
    let call = calls::parse_coll_line(tagged.message)?;
    let process = tagged
        .host
        .zip(tagged.pid)
        .map(|(host, pid)| format!("{host}:{pid}"));
    Some((process, call))
}

/// Parses one log. Never fails: unknown lines are ignored.
pub fn parse(text: &str) -> NcclLog {
    let mut parser = Parser::default();
    parser.feed(text);
    parser.log
}

/// Parses several texts (one per rank, as pasted) into one log, as [`parse_files`]
/// does files.
pub fn parse_all(texts: &[&str]) -> NcclLog {
    let mut parser = Parser::default();
    for text in texts {
        parser.feed(text);
    }
    parser.log
}

/// Parses several files (typically one per rank, from `NCCL_DEBUG_FILE=...%h.%p`) into one
/// log; a connection logged in two files counts once. Invalid UTF-8 is replaced, not
/// rejected. Line numbers stay those of each file.
pub fn parse_files(paths: &[&Path]) -> io::Result<NcclLog> {
    let mut parser = Parser::default();
    for path in paths {
        let bytes = std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        parser.feed(&String::from_utf8_lossy(&bytes));
    }
    Ok(parser.log)
}

#[cfg(test)]
mod tests;
