//! Who is who: ranks that claim one GPU of one host, hosts that announce one address or a
//! link-local one, GPUDirect RDMA on some hosts only, and the NVLinks a pasted
//! `nvidia-smi topo -m` shows.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;
use crate::nccl::log::{Connection, Direction, InterfaceLine, NcclLog, TransportKind};

/// Whether NCCL failed to open a peer's CUDA IPC handle.
pub(super) fn ipc_failed(log: &NcclLog) -> bool {
    log.warnings
        .iter()
        .any(|w| w.contains("failed to open CUDA IPC handle"))
}

/// Ranks that NCCL joined by P2P or SHM (one node, to NCCL; with no network connection,
/// all the ranks of one host name) and that claim the same GPU:
/// two processes on one GPU, or machines that share a host identity. Not read where a
/// process shows more than one rank (several communicators number their ranks apart),
/// nor where the node's ranks all show one device (before 2.5 the brackets hold the CUDA
/// device, `[0]` in every process that sees one GPU).
pub(super) fn host_identity_rule(log: &NcclLog) -> Option<Finding> {
    let local: Vec<&Connection> = log
        .connections
        .iter()
        .filter(|c| matches!(c.transport.kind, TransportKind::P2p | TransportKind::Shm))
        // Multi-node NVLink joins trays whose devices each start at 0.
        .filter(|c| !c.transport.raw.contains("MNNVL"))
        .collect();
    let mut ranks_of_pid: BTreeMap<(Option<&str>, u32), BTreeSet<u32>> = BTreeMap::new();
    for c in local.iter().filter(|c| c.pid.is_some()) {
        // A receive line names the peer first.
        let own = match c.direction {
            Some(Direction::Receive) => c.to_rank,
            _ => c.from_rank,
        };
        ranks_of_pid
            .entry((c.host.as_deref(), c.pid.unwrap_or_default()))
            .or_default()
            .insert(own);
    }
    if ranks_of_pid.values().any(|r| r.len() > 1) {
        return None;
    }
    // The nodes as NCCL formed them: ranks joined by local connections.
    let mut node: BTreeMap<u32, u32> = BTreeMap::new();
    fn root(node: &mut BTreeMap<u32, u32>, r: u32) -> u32 {
        let up = *node.entry(r).or_insert(r);
        if up == r {
            return r;
        }
        let top = root(node, up);
        node.insert(r, top);
        top
    }
    let mut join = |a: u32, b: u32| {
        let (a, b) = (root(&mut node, a), root(&mut node, b));
        node.insert(a.max(b), a.min(b));
    };
    for c in &local {
        join(c.from_rank, c.to_rank);
    }
    // With no connection over the network, NCCL saw one node per host name: a paste cut
    // short still joins the ranks its lines tag with one host.
    if !log
        .connections
        .iter()
        .any(|c| c.transport.kind == TransportKind::Net)
    {
        let mut first_of: BTreeMap<&str, u32> = BTreeMap::new();
        for c in &local {
            if let Some(h) = c.host.as_deref() {
                let first = *first_of.entry(h).or_insert(c.from_rank);
                join(first, c.from_rank);
            }
        }
    }
    let mut ranks_of_dev: BTreeMap<(u32, &str), BTreeSet<u32>> = BTreeMap::new();
    for c in &local {
        for (rank, dev) in [(c.from_rank, &c.from_dev), (c.to_rank, &c.to_dev)] {
            if !dev.is_empty() {
                let n = root(&mut node, rank);
                ranks_of_dev
                    .entry((n, dev.as_str()))
                    .or_default()
                    .insert(rank);
            }
        }
    }
    let devices_of = |n: u32| ranks_of_dev.keys().filter(|(m, _)| *m == n).count();
    // Ranks whose Init lines give different bus ids are on different GPUs, whatever the
    // brackets say (from 2.18.3 an NVML index, which restarts in each container).
    let bus_of = |r: &u32| {
        log.ranks
            .iter()
            .find(|i| i.rank == *r)
            .and_then(|i| i.bus_id.as_deref())
    };
    let distinct_buses = |ranks: &BTreeSet<u32>| {
        let buses: Vec<Option<&str>> = ranks.iter().map(bus_of).collect();
        buses.iter().all(Option::is_some)
            && buses.iter().collect::<BTreeSet<_>>().len() == buses.len()
    };
    // One shared bracket on distinct GPUs: the brackets are not GPUs in this log.
    if ranks_of_dev
        .values()
        .any(|r| r.len() > 1 && distinct_buses(r))
    {
        return None;
    }
    // Every process showing one device is read where CUDA IPC between them failed:
    // then the ranks do not share a GPU they can both open.
    let ipc_failed = ipc_failed(log);
    let ((n, device), ranks) = ranks_of_dev
        .iter()
        .find(|((n, _), r)| r.len() > 1 && (devices_of(*n) > 1 || ipc_failed))?;
    let (hidden, hidden_fix) = if devices_of(*n) > 1 {
        (String::new(), String::new())
    } else {
        (
            ", or each process sees only its own GPU, as device 0 (a per-process \
             CUDA_VISIBLE_DEVICES or container), and CUDA IPC cannot open a GPU the process \
             does not see (`failed to open CUDA IPC handle`)"
                .to_string(),
            ", and let every process of a machine see all its GPUs".to_string(),
        )
    };
    let shown: Vec<&&Connection> = local
        .iter()
        .filter(|c| {
            (ranks.contains(&c.to_rank) && c.to_dev == *device)
                || (ranks.contains(&c.from_rank) && c.from_dev == *device)
        })
        .take(3)
        .collect();
    let host = shown
        .iter()
        .find_map(|c| c.host.clone())
        .unwrap_or_else(|| format!("node of rank {n}"));
    let via = shown
        .first()
        .map(|c| c.transport.label.clone())
        .unwrap_or_default();
    let lines: Vec<String> = shown
        .iter()
        .map(|c| {
            format!(
                "line {}: {}[{}] -> {}[{}] via {}",
                c.line, c.from_rank, c.from_dev, c.to_rank, c.to_dev, c.transport.raw
            )
        })
        .collect();
    let ranks: Vec<String> = ranks.iter().map(u32::to_string).collect();
    let ranks = match ranks.as_slice() {
        [a, b] => format!("{a} and {b} both"),
        [rest @ .., last] => format!("{} and {last} all", rest.join(", ")),
        [] => unreachable!("two ranks or more"),
    };
    Some(Finding::new(
        FindingKind::HostIdentity,
        lines,
        &[
            ("host", host),
            ("device", device.to_string()),
            ("ranks", ranks),
            ("via", via),
            ("hidden", hidden),
            ("hidden_fix", hidden_fix),
        ],
    ))
}

/// `eth0:172.17.0.2` and the like: (interface, address) pairs of an interface line's
/// text, the OOB one of an IB line included.
pub(super) fn addresses(text: &str) -> Vec<(&str, &str)> {
    text.split_whitespace()
        .filter_map(|token| {
            let token = token.trim_start_matches(|c: char| c == '[' || c.is_ascii_digit());
            let token = token.trim_start_matches(']');
            let (name, rest) = token.split_once(':')?;
            let address = rest.split('<').next()?;
            let plausible = rest.contains('<')
                && !name.is_empty()
                && (address.contains('.') || address.contains(':'));
            plausible.then_some((name, address))
        })
        .collect()
}

/// The (interface, address) after `OOB ` of a `NET/IB : Using` line: the socket its
/// peers exchange queue-pair details over.
pub(super) fn oob_address(text: &str) -> Option<(&str, &str)> {
    let (_, oob) = text.split_once("OOB ")?;
    addresses(oob).first().copied()
}

pub(super) fn is_loopback(address: &str) -> bool {
    address.starts_with("127.") || address == "::1"
}

/// Two hosts (by the names their lines carry) announcing one address on their socket or
/// bootstrap interface: peers that dial it reach themselves.
pub(super) fn same_address_rule(log: &NcclLog) -> Option<Finding> {
    let mut hosts_of: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for l in &log.interfaces {
        let Some(host) = l.host.as_deref() else {
            continue;
        };
        for (name, address) in addresses(&l.text) {
            if !is_loopback(address) {
                hosts_of.entry((address, name)).or_default().insert(host);
            }
        }
    }
    let ((address, interface), hosts) = hosts_of.iter().find(|(_, h)| h.len() > 1)?;
    let evidence: Vec<String> = log
        .interfaces
        .iter()
        .filter(|l| l.text.contains(address))
        .map(|l| (l.host.as_deref(), l))
        .collect::<BTreeMap<_, _>>()
        .into_values()
        .take(3)
        .map(|l| format!("line {}: {}", l.line, l.text))
        .collect();
    let bridge = if super::reason::is_docker_bridge(address) {
        ", an address of Docker's default bridge network that every container has on its own \
         machine"
    } else {
        ""
    };
    let hosts: Vec<&str> = hosts.iter().copied().collect();
    Some(Finding::new(
        FindingKind::SameAddress,
        evidence,
        &[
            ("hosts", hosts.join(" and ")),
            ("address", address.to_string()),
            ("interface", interface.to_string()),
            ("bridge", bridge.to_string()),
        ],
    ))
}

/// A pasted `nvidia-smi topo -m` matrix with NVLink (`NV1`, `NV12`) between GPUs.
pub(super) fn topology_nvlink_rule(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    // Where the log shows P2P, NCCL uses the links already.
    if log
        .connections
        .iter()
        .any(|c| c.transport.kind == TransportKind::P2p)
    {
        return None;
    }
    let header = pasted.lines.iter().position(|l| {
        let words: Vec<&str> = l.text.split_whitespace().collect();
        words.len() >= 2 && words[0] == "GPU0" && words[1] == "GPU1"
    })?;
    let columns: Vec<&str> = pasted.lines[header]
        .text
        .split_whitespace()
        .take_while(|w| w.starts_with("GPU"))
        .collect();
    let mut pairs: Vec<String> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    // NVLink peers per GPU row, for a matrix that joins GPUs in pairs only.
    let mut peers: Vec<usize> = Vec::new();
    for l in &pasted.lines[header + 1..] {
        let words: Vec<&str> = l.text.split_whitespace().collect();
        let Some(row) = words.first().filter(|w| w.starts_with("GPU")) else {
            break;
        };
        let cells = &words[1..];
        let mut any = false;
        peers.push(
            columns
                .iter()
                .zip(cells)
                .filter(|(_, c)| c.starts_with("NV"))
                .count(),
        );
        for (col, cell) in columns.iter().zip(cells) {
            let index = |g: &str| g[3..].parse::<u32>().ok();
            if cell.starts_with("NV") && index(col) > index(row) {
                pairs.push(format!("{}-{} ({cell})", &row[3..], &col[3..]));
                any = true;
            }
        }
        if any && shown.len() < 2 {
            shown.push(pasted.evidence(l));
        }
    }
    if pairs.is_empty() {
        return None;
    }
    // More than two GPUs, each NVLinked to one other at most: the rest is PCIe.
    if peers.len() > 2 && peers.iter().all(|&n| n <= 1) {
        return Some(Finding::new(
            FindingKind::NvlinkPairs,
            shown,
            &[("pairs", pairs.join(", "))],
        ));
    }
    Some(Finding::new(
        FindingKind::TopologyNvlink,
        shown,
        &[("pairs", pairs.join(", "))],
    ))
}

fn is_link_local(address: &str) -> bool {
    let a = address.to_ascii_lowercase();
    a.starts_with("fe80:") || a.starts_with("169.254.")
}

/// A socket or bootstrap interface whose address is link-local (`fe80::`, `169.254.`):
/// it does not route between hosts. Read where it matters: the bootstrap's first
/// interface, or any socket interface of a job that spans hosts or sends over sockets.
pub(super) fn link_local_rule(log: &NcclLog, multi_node: bool) -> Option<Finding> {
    let lines: Vec<&InterfaceLine> = log
        .interfaces
        .iter()
        .filter(|l| l.source == "Bootstrap" || l.source == "NET/Socket")
        .collect();
    // Within one host a link-local address works: read it only where the job spans
    // hosts, or may (the bootstrap's first interface, where the log does not say one).
    let hosts: BTreeSet<&str> = log
        .interfaces
        .iter()
        .filter_map(|l| l.host.as_deref())
        .collect();
    let one_node = log.nnodes.iter().all(|n| *n == 1) && !log.nnodes.is_empty();
    let sockets = (multi_node && hosts.len() > 1) || log.nnodes.iter().any(|n| *n > 1);
    let (line, name, address) = lines.iter().find_map(|l| {
        let all = addresses(&l.text);
        let first_of_bootstrap = l.source == "Bootstrap";
        all.into_iter()
            .enumerate()
            .find(|(i, (_, a))| {
                is_link_local(a) && (sockets || (first_of_bootstrap && *i == 0 && !one_node))
            })
            .map(|(_, (n, a))| (*l, n, a))
    })?;
    let others: Vec<&str> = lines
        .iter()
        .flat_map(|l| addresses(&l.text))
        .filter(|(n, a)| *n != name && !is_link_local(a))
        .map(|(n, _)| n)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let others = if others.is_empty() {
        "`ip -br addr` lists them".to_string()
    } else {
        format!("here perhaps {}", others.join(", "))
    };
    let shown = lines.iter().filter(|l| l.text.contains(address)).count();
    Some(
        Finding::new(
            FindingKind::SocketInterfaceLinkLocal,
            vec![format!("line {}: {}", line.line, line.text)],
            &[
                ("name", name.to_string()),
                ("address", address.to_string()),
                ("others", others),
            ],
        )
        .with_occurrences(shown),
    )
}

/// The host a connection line came from, or without a host prefix the rank that logs
/// it: the sender logs `[send]`, the receiver `[receive]`.
fn logged_by(c: &Connection, hosts: bool) -> Option<String> {
    match (&c.host, c.direction) {
        (Some(h), _) => Some(h.clone()),
        // Ranks only where no line names a host: a host and a rank are not two machines.
        _ if hosts => None,
        (None, Some(Direction::Send)) => Some(format!("rank {}", c.from_rank)),
        (None, Some(Direction::Receive)) => Some(format!("rank {}", c.to_rank)),
        (None, None) => None,
    }
}

/// NET/IB connections with GPUDirect RDMA (`/GDRDMA`) on some hosts (or, without host
/// prefixes, ranks) and on none of another's, receive lines included.
pub(super) fn gdr_differs_rule(log: &NcclLog) -> Option<Finding> {
    // (any GDRDMA line, any receive line) per host. GPUDirect reads (send lines) can be
    // off by default while writes are on, so a host without GDR is one whose receive
    // lines lack it too.
    let hosts = log.connections.iter().any(|c| c.host.is_some());
    let mut gdr: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for c in log
        .connections
        .iter()
        .filter(|c| c.transport.raw.starts_with("NET/IB"))
    {
        let Some(host) = logged_by(c, hosts) else {
            continue;
        };
        let e = gdr.entry(host).or_default();
        e.0 |= c.transport.raw.contains("GDRDMA");
        e.1 |= c.direction == Some(Direction::Receive);
    }
    let with: Vec<&str> = gdr
        .iter()
        .filter(|(_, g)| g.0)
        .map(|(h, _)| h.as_str())
        .collect();
    let without: Vec<&str> = gdr
        .iter()
        .filter(|(_, g)| !g.0 && g.1)
        .map(|(h, _)| h.as_str())
        .collect();
    if with.is_empty() || without.is_empty() {
        return None;
    }
    let example = |gdr_on: bool| {
        log.connections.iter().find(|c| {
            c.transport.raw.starts_with("NET/IB")
                && c.transport.raw.contains("GDRDMA") == gdr_on
                && logged_by(c, hosts).is_some()
        })
    };
    let evidence: Vec<String> = [example(true), example(false)]
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "line {} ({}): via {}",
                c.line,
                logged_by(c, hosts).unwrap_or_default(),
                c.transport.raw
            )
        })
        .collect();
    Some(Finding::new(
        FindingKind::GdrDiffers,
        evidence,
        &[("with", with.join(", ")), ("without", without.join(", "))],
    ))
}

/// NCCL's `nNodes` against the host names of a communicator whose every rank the logs
/// show: more nodes than names (machines that share a name: NCCL told them apart, the
/// logs do not), or fewer (machines taken for one node: an NCCL_HOSTID set alike).
pub(super) fn nodes_rule(log: &NcclLog) -> Option<Finding> {
    let nodes = *log.nnodes.iter().max()?;
    if log.nnodes.len() != 1 {
        return None;
    }
    let nranks = log.ranks.iter().map(|r| r.nranks).max()?;
    let ranks: BTreeSet<u32> = log
        .ranks
        .iter()
        .filter(|r| r.nranks == nranks)
        .map(|r| r.rank)
        .collect();
    if ranks.len() != nranks as usize {
        return None;
    }
    let hosts: BTreeSet<&str> = log
        .ranks
        .iter()
        .filter(|r| r.nranks == nranks && !r.host.is_empty())
        .map(|r| r.host.as_str())
        .collect();
    let h = hosts.len() as u32;
    let every_rank_named = log
        .ranks
        .iter()
        .filter(|r| r.nranks == nranks)
        .all(|r| !r.host.is_empty());
    if h == 0 || h == nodes || !every_rank_named {
        return None;
    }
    let set = |name: &str| log.env.iter().any(|(n, v)| n == name && v != "0");
    // Fewer nodes than names: multi-node NVLink (one clique, one node) does that unless
    // NCCL_HOSTID is set; more: disabling P2P and SHM cuts each GPU off as a node.
    if nodes < h && !set("NCCL_HOSTID") {
        return None;
    }
    if nodes > h && set("NCCL_P2P_DISABLE") && set("NCCL_SHM_DISABLE") {
        return None;
    }
    let names = hosts.iter().copied().collect::<Vec<_>>().join(", ");
    let (detail, fix, severity) = if nodes > h {
        (
            format!(
                "NCCL counts {nodes} nodes for {nranks} ranks, but their lines carry {h} host \
                 name(s) ({names}): several machines share a name. NCCL tells them apart (by \
                 boot ID or NCCL_HOSTID), but logs, launchers and this reading cannot."
            ),
            "Give each machine its own hostname, so that the logs say which machine each \
             rank ran on."
                .to_string(),
            super::finding::Severity::Info,
        )
    } else {
        (
            format!(
                "NCCL counts {nodes} node(s) for {nranks} ranks on {h} host names ({names}): \
                 it takes ranks of different machines for one node, so it may connect them by \
                 P2P or SHM, which fails across machines. NCCL_HOSTID set to one value on \
                 several machines does this."
            ),
            "Unset NCCL_HOSTID, or give each machine its own value; keep one value only for \
             containers of one machine."
                .to_string(),
            super::finding::Severity::Warning,
        )
    };
    Some(
        Finding::new(
            FindingKind::NodesVsHosts,
            Vec::new(),
            &[
                ("nodes", nodes.to_string()),
                ("hosts", h.to_string()),
                ("detail", detail),
                ("fix", fix),
            ],
        )
        .with_severity(severity),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_from_socket_ib_and_ipv6_lines() {
        assert_eq!(
            addresses("Bootstrap : Using [0]eth0:172.17.0.2<0> [1]ib0:10.0.0.1<0>"),
            vec![("eth0", "172.17.0.2"), ("ib0", "10.0.0.1")]
        );
        assert_eq!(
            addresses("NET/IB : Using [0]mlx5_0:1/IB/SHARP [RO]; OOB ibp75s0:192.168.0.103<0>"),
            vec![("ibp75s0", "192.168.0.103")]
        );
        assert_eq!(
            addresses("Using [1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>"),
            vec![("veth25f2e72", "fe80::380d:bfff:fe5b:54d2%veth25f2e72")]
        );
    }
}
