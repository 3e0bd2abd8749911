//! Host names that do not resolve: getaddrinfo's `Name or service not known` (gai error
//! -2, EAI_NONAME) or `Temporary failure in name resolution` (-3, EAI_AGAIN). PyTorch's
//! c10d store looks a name up for IPv6 and IPv4 apart and warns of each lookup that
//! fails: an IPv6 lookup of `localhost` or of an IPv4 address fails on most hosts and
//! is harmless.

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;

/// The name of c10d's `The IPv6 network addresses of (NAME, PORT) cannot be retrieved`.
fn ipv6_lookup_name(lower: &str) -> Option<&str> {
    let (_, rest) = lower.split_once("the ipv6 network addresses of (")?;
    let name = rest.split([',', ')']).next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// Whether an IPv6 lookup of `name` fails on a host with IPv4 alone, harmlessly: an
/// IPv4 address, or `localhost`.
fn ipv4_only(name: &str) -> bool {
    name == "localhost" || name.parse::<std::net::Ipv4Addr>().is_ok()
}

const FAILED_LOOKUP: [&str; 3] = [
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname provided",
];

/// A host name that did not resolve, or (a note) c10d's IPv6 lookups alone failing.
pub(super) fn name_rule(pasted: &Pasted) -> Option<Finding> {
    let failed: Vec<_> = pasted
        .lines
        .iter()
        .filter(|l| FAILED_LOOKUP.iter().any(|f| l.lower.contains(f)))
        .collect();
    let first = failed.first()?;
    // A failed lookup of a name (not one of c10d's harmless IPv6 lookups) says more.
    let telling = failed
        .iter()
        .find(|l| ipv6_lookup_name(&l.lower).is_none_or(|n| !ipv4_only(n)));
    let (kind, line) = match telling {
        Some(l) => (FindingKind::NameUnresolved, l),
        None => (FindingKind::Ipv6LookupOnly, first),
    };
    // As posted, not lower-cased.
    let posted = ipv6_lookup_name(&line.lower).map(|n| {
        let at = line.lower.find(n).unwrap_or(0);
        &line.text[at..at + n.len()]
    });
    let name = posted.map_or_else(|| "a host name".to_string(), |n| format!("`{n}`"));
    let lookup = posted.unwrap_or("<name>").to_string();
    Some(
        Finding::new(
            kind,
            vec![pasted.evidence(line)],
            &[
                ("name", name),
                ("lookup", lookup),
                (
                    "evidence",
                    super::pasted::cut(super::pasted::message(line.text)),
                ),
            ],
        )
        .with_occurrences(failed.len()),
    )
}
