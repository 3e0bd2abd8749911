//! Connect lines of NCCL's socket code: the peer a failed connect names, and the
//! connects NCCL says it is retrying (a start-up hang often shows only as these).

use serde::{Deserialize, Serialize};

/// One `... connect ... retrying` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectRetry {
    /// 1-based line number in the file it came from.
    pub line: usize,
    /// The address being connected to (`10.0.0.2<45763>`), when the line names it
    /// (NCCL 2.22 and later).
    pub target: Option<String>,
    /// What connect returned: `Connection refused`, `Connection timed out`...
    pub error: String,
    /// (attempt, of) when the line counts them (2.22 and later).
    pub attempt: Option<(u32, u32)>,
}

/// The peer of a failed connect: `Connect to 10.0.0.2<45763> failed : ...` -> `10.0.0.2<45763>`.
/// Also NCCL 2.22+'s `connect to 10.0.0.2<45763> returned ...`.
pub(super) fn connect_target(message: &str) -> Option<&str> {
    let (i, len) = message
        .find("Connect to ")
        .map(|i| (i, "Connect to ".len()))
        .or_else(|| {
            message
                .find("connect to ")
                .map(|i| (i, "connect to ".len()))
        })?;
    let rest = &message[i + len..];
    let end = rest.find(" failed").or_else(|| rest.find(" returned"))?;
    let target = rest[..end].trim();
    (!target.is_empty() && !target.contains(char::is_whitespace)).then_some(target)
}

/// A connect NCCL is retrying, as its INFO line says it: 2.7 to 2.21 print
/// `Call to connect returned Connection refused, retrying` (every 1000th refusal),
/// 2.22 and later `socketStartConnect: connect to 10.0.0.2<45763> returned Connection
/// timed out, retrying (3/34) after sleep for 300 msec`.
pub(super) fn connect_retry(message: &str, line: usize) -> Option<ConnectRetry> {
    if let Some(rest) = message.strip_prefix("Call to connect returned ") {
        let error = rest.strip_suffix(", retrying")?;
        return Some(ConnectRetry {
            line,
            target: None,
            error: error.to_string(),
            attempt: None,
        });
    }
    let i = message.find("connect to ")?;
    let (head, tail) = message[i..].split_once(", retrying (")?;
    let error = head.split_once(" returned ")?.1.to_string();
    let (counts, _) = tail.split_once(')')?;
    let attempt = counts
        .split_once('/')
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    Some(ConnectRetry {
        line,
        target: connect_target(message).map(str::to_string),
        error,
        attempt,
    })
}
