//! What NCCL's failure messages carry beyond their kind: the peer a failed connect
//! names, the connects NCCL says it is retrying (a start-up hang often shows only as
//! these), and the size of a /dev/shm segment that could not be made.

use serde::{Deserialize, Serialize};

/// One `... connect ... retrying` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectRetry {
    /// 1-based line number in the file it came from.
    pub line: usize,
    /// The address being connected to (`10.0.0.2<45763>`), when the line names it
    /// (NCCL 2.27 and later).
    pub target: Option<String>,
    /// What connect returned: `Connection refused`, `Connection timed out`...
    pub error: String,
    /// (attempt, of) when the line counts them (2.24 and later).
    pub attempt: Option<(u32, u32)>,
}

/// The peer of a failed connect: `Connect to 10.0.0.2<45763> failed : ...` -> `10.0.0.2<45763>`.
/// Also NCCL 2.27+'s `connect to 10.0.0.2<45763> returned ...`.
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

/// A connect NCCL is retrying, as its INFO line says it: 2.7 to 2.23 print
/// `Call to connect returned Connection refused, retrying` (every 1000th refusal),
/// 2.24 to 2.26 `socketPollConnect: connect returned No route to host, retrying (3/34)
/// after sleep for 300 msec`, and 2.27 and later name the address: `connect to
/// 10.0.0.2<45763> returned ...` (src/misc/socket.cc of each release).
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
    let i = message
        .find("connect to ")
        .or_else(|| message.find("connect returned "))?;
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

/// The size a /dev/shm failure names: `... segment /dev/shm/nccl-X (size 9637888)`, else
/// `failed to extend /dev/shm/nccl-X to 9637892 bytes`. `None` for a size of 0 (an attach
/// failure) or none at all (`posix_fallocate failed`).
pub fn shm_segment_size(message: &str) -> Option<u64> {
    fn leading_number(text: &str) -> Option<(u64, &str)> {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let n = text[..digits].parse::<u64>().ok()?;
        Some((n, &text[digits..]))
    }
    if let Some(i) = message.find("(size ") {
        let (n, rest) = leading_number(&message[i + "(size ".len()..])?;
        return (n > 0 && rest.starts_with(')')).then_some(n);
    }
    let path = "failed to extend /dev/shm/";
    let rest = &message[message.find(path)? + path.len()..];
    let to = rest.find(" to ")?;
    let (n, rest) = leading_number(&rest[to + " to ".len()..])?;
    (n > 0 && rest.starts_with(" bytes")).then_some(n)
}

/// The CUDA error code a message names: `CUDA error 401 '...'` (2.27+'s NVLS bind),
/// `Cuda failure 401 '...'` (2.19+); `None` for 2.18's `Cuda failure 'text'`.
pub fn cuda_error_code(message: &str) -> Option<u32> {
    let at = message
        .find("CUDA error ")
        .map(|i| i + "CUDA error ".len())
        .or_else(|| {
            message
                .find("Cuda failure ")
                .map(|i| i + "Cuda failure ".len())
        })?;
    let rest = &message[at..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}
