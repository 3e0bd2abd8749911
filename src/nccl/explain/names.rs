//! Host names that do not resolve: getaddrinfo's `Name or service not known` (gai error
//! -2 on glibc, EAI_NONAME) or `Temporary failure in name resolution` (-3, EAI_AGAIN),
//! on a line of PyTorch's c10d store, NCCL or Gloo. c10d quotes the name it looked up:
//! `The IPv6 network addresses of (NAME, PORT) cannot be retrieved`.

use super::finding::{Finding, FindingKind};
use super::pasted::{cut, message, Pasted};

/// The name, as posted, of c10d's `network addresses of (NAME, PORT)`.
fn looked_up(text: &str) -> Option<&str> {
    let key = "network addresses of (";
    let at = text.to_ascii_lowercase().find(key)? + key.len();
    let name = text[at..].split([',', ')']).next()?;
    (!name.is_empty()).then_some(name)
}

/// Whether `name` is `localhost` or an IPv4 address: its IPv6 lookup failing says
/// nothing of whether the name resolves.
fn no_name_to_resolve(name: &str) -> bool {
    name == "localhost" || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// A line from c10d's own words on (`The IPv6 network addresses of ...`), without the
/// prefixes before them; any other line's message.
fn c10d_words(text: &str) -> &str {
    match text.to_ascii_lowercase().find("the ipv") {
        Some(at) => &text[at..],
        None => message(text),
    }
}

const FAILED_LOOKUP: [&str; 3] = [
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname provided",
];

/// Words of a line from the rendezvous or the communication libraries, not from pip,
/// a model hub or ssh.
const DISTRIBUTED: [&str; 9] = [
    "c10d",
    "nccl",
    "gloo",
    "socket.cpp",
    "tcpstore",
    "rendezvous",
    "master_addr",
    "torch.distributed",
    "init_process_group",
];

/// A host name that did not resolve, on a line of the rendezvous or of NCCL or Gloo.
pub(super) fn name_rule(pasted: &Pasted) -> Option<Finding> {
    let failed: Vec<_> = pasted
        .lines
        .iter()
        .filter(|l| FAILED_LOOKUP.iter().any(|f| l.lower.contains(f)))
        .filter(|l| DISTRIBUTED.iter().any(|w| l.lower.contains(w)))
        .filter(|l| looked_up(l.text).is_none_or(|n| !no_name_to_resolve(n)))
        .collect();
    let line = failed.first()?;
    let name = looked_up(line.text);
    Some(
        Finding::new(
            FindingKind::NameUnresolved,
            vec![pasted.evidence(line)],
            &[
                (
                    "name",
                    name.map_or_else(|| "a host name".to_string(), |n| format!("`{n}`")),
                ),
                ("lookup", name.unwrap_or("<name>").trim().to_string()),
                ("evidence", cut(c10d_words(line.text))),
            ],
        )
        .with_occurrences(failed.len()),
    )
}
