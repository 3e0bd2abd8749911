//! The names and addresses the rendezvous dials: host names that do not resolve
//! (getaddrinfo's `Name or service not known`, gai error -2 on glibc, EAI_NONAME, or
//! `Temporary failure in name resolution`, -3, EAI_AGAIN) on a line of PyTorch's c10d
//! store, NCCL or Gloo, and a c10d client that dials a Docker bridge address. c10d
//! quotes the name it looked up: `The IPv6 network addresses of (NAME, PORT) cannot be
//! retrieved`.

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

/// The IPv4 address a c10d client line dials (`... while trying to connect to
/// (172.17.0.2, 44737)`, `... connect to [172.17.0.2]:29500`).
fn c10d_target(lower: &str) -> Option<&str> {
    let rest = &lower[lower.find("connect to")? + "connect to".len()..];
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let address = rest[start..]
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?;
    address
        .parse::<std::net::Ipv4Addr>()
        .is_ok()
        .then_some(address)
}

/// PyTorch's c10d store client timing out or failing to connect to an address in
/// Docker's default bridge network, in a job of several hosts: the store's host
/// advertised its container address. (Containers of one host reach each other there.)
pub(super) fn c10d_bridge_rule(pasted: &Pasted, multi_node: bool) -> Option<Finding> {
    let failed = |lower: &str| {
        lower.contains("client socket")
            && ["timed out", "failed to connect", "connection refused"]
                .iter()
                .any(|w| lower.contains(w))
            // c10d's warning that one address family is missing, not a failure.
            && !lower.contains("cannot be initialized")
    };
    let dials: Vec<_> = pasted
        .lines
        .iter()
        .filter(|l| failed(&l.lower))
        .filter_map(|l| c10d_target(&l.lower).map(|a| (l, a)))
        .filter(|(_, a)| super::reason::is_docker_bridge(a))
        .collect();
    let (line, address) = dials.first()?;
    if !(multi_node || other_host(pasted)) {
        return None;
    }
    let mut f = Finding::new(
        FindingKind::DockerBridgeAddress,
        vec![pasted.evidence(line)],
        &[
            ("who", "PyTorch's c10d store client".to_string()),
            ("address", address.to_string()),
        ],
    )
    .with_occurrences(dials.len());
    f.fix = "Run the containers with host networking (`--network host`, `hostNetwork: true` \
             in a pod), or on a network the hosts route between (an overlay network), and set \
             MASTER_ADDR (or the address the framework advertises for its process group) to an \
             address of that host every node reaches."
        .to_string();
    Some(f)
}

/// Whether the paste shows a job of several hosts where NCCL's lines do not: Ray's
/// `ip=` of another address, or a launcher's node count above one.
fn other_host(pasted: &Pasted) -> bool {
    pasted.lines.iter().any(|l| {
        let ray = l.lower.split("ip=").skip(1).any(|rest| {
            let ip = rest
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .next();
            ip.is_some_and(|ip| {
                ip.parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|a| !a.is_loopback() && !super::reason::is_docker_bridge(ip))
            })
        });
        let nodes = ["--nnodes", "nnodes=", "num_nodes="].iter().any(|k| {
            l.lower.split(k).skip(1).any(|rest| {
                rest.trim_start_matches([' ', '='])
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|n| n > 1)
            })
        });
        ray || nodes
    })
}
