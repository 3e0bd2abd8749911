//! Findings from the log as a whole rather than from a failure line: a socket interface NCCL
//! chose itself or one other hosts cannot reach, no IB device on a multi-host run, SHM
//! that carried no connection, and connects NCCL kept retrying.

use std::collections::BTreeSet;

use super::diagnosis::{is_socket_source, socket_interface_names, socket_names};
use super::evidence::{evidence, Line};
use super::finding::{Finding, FindingKind, Severity};
use crate::nccl::log::{InterfaceLine, NcclLog, TransportKind};
use crate::nccl::net::is_virtual_interface;

/// `NET/Socket : Using [0]eth0` (or `Bootstrap : Using`): NCCL chose the interface itself
/// in a multi-host log, or chose a loopback/virtual one.
pub fn socket_interface_rule(
    interfaces: &[InterfaceLine],
    env: &[(String, String)],
    multi_node: bool,
) -> Option<Finding> {
    let lines: Vec<&InterfaceLine> = interfaces
        .iter()
        .filter(|l| {
            let names = socket_names(l);
            is_socket_source(&l.source) && !names.is_empty()
                || names.into_iter().any(is_virtual_interface)
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let names = socket_interface_names(lines.iter().copied());
    let virtual_names: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| is_virtual_interface(n))
        .collect();
    // NCCL reads a value of one character as unset.
    let ifname = env
        .iter()
        .find(|(n, _)| n == "NCCL_SOCKET_IFNAME")
        .map(|(_, v)| v.as_str())
        .filter(|v| v.len() > 1);
    if virtual_names.is_empty() && (ifname.is_some() || !multi_node) {
        return None;
    }
    // On one host a routable interface listed first carries the bootstrap; the virtual
    // ones after it matter only to ranks on other hosts, which this log does not have.
    if !multi_node && names.first().is_some_and(|n| !is_virtual_interface(n)) {
        return None;
    }
    // An IB line's OOB interface alone, in a log of one named host at most: a run
    // on one host put onto NET/IB connects over it all the same.
    let socket_virtual = lines.iter().any(|l| {
        is_socket_source(&l.source) && socket_names(l).into_iter().any(is_virtual_interface)
    });
    let hosts: BTreeSet<&str> = interfaces
        .iter()
        .filter_map(|l| l.host.as_deref())
        .collect();
    let oob_alone = !virtual_names.is_empty() && !socket_virtual && hosts.len() < 2;
    let severity = if multi_node && !oob_alone {
        Severity::Warning
    } else {
        Severity::Info
    };
    if virtual_names.is_empty() {
        let texts: Vec<Line> = lines.iter().map(|l| Line::at(l.line, &l.text)).collect();
        let n = texts.len();
        return Some(
            Finding::new(
                FindingKind::SocketInterfaceAmbiguous,
                evidence(texts),
                &[("names", names.join(", "))],
            )
            .with_severity(severity)
            .with_occurrences(n),
        );
    }
    let shown: Vec<Line> = lines
        .iter()
        .filter(|l| socket_names(l).into_iter().any(is_virtual_interface))
        .map(|l| Line::at(l.line, &l.text))
        .collect();
    let n = shown.len();
    // An exclusion list replaces NCCL's default, which leaves lo and docker* out.
    let (chosen_by, exclude) = match ifname {
        Some(v) if v.starts_with('^') => (
            format!(
                "; NCCL_SOCKET_IFNAME=`{v}` replaces NCCL's default, which leaves lo and \
                 docker out"
            ),
            format!("{v},{}", virtual_names.join(",")),
        ),
        Some(v) => (
            format!("; NCCL_SOCKET_IFNAME=`{v}` selects it"),
            "^lo,docker,veth".to_string(),
        ),
        None => (String::new(), "^lo,docker,veth".to_string()),
    };
    // `lo:127.0.0.1`: NCCL keeps the first address of each interface (findInterfaces).
    let loopback = lines
        .iter()
        .flat_map(|l| super::hosts::addresses(&l.text))
        .find(|(name, address)| is_virtual_interface(name) && super::hosts::is_loopback(address))
        .map(|(_, address)| address.to_string());
    let mut f = Finding::new(
        FindingKind::SocketInterfaceVirtual,
        evidence(shown),
        &[
            ("names", virtual_names.join(", ")),
            ("chosen_by", chosen_by),
            ("exclude", exclude),
        ],
    )
    .with_severity(severity)
    .with_occurrences(n);
    if let Some(address) = loopback {
        f.cause.push_str(&format!(
            " Its address there is {address}: NCCL keeps only the first address of each \
             interface, so a routable address that lo also holds goes unused."
        ));
        f.fix.push_str(
            " An address that lives only on lo (BGP unnumbered) needs an interface of its own \
             for NCCL_SOCKET_IFNAME to select.",
        );
        f.sources.extend(
            [
                "https://github.com/NVIDIA/nccl/blob/master/src/os/linux.cc",
                "https://github.com/NVIDIA/nccl/issues/1053",
            ]
            .map(str::to_string),
        );
    }
    if !multi_node {
        f.cause
            .push_str(" That works while every rank runs on this host.");
    }
    Some(f)
}

/// `NET/IB : No device found` (or no libibverbs) in a multi-host log, or one whose job
/// asked for IB, whose traffic did not go over IB: inter-node traffic takes TCP sockets.
/// A note where only a loaded RDMA plugin (HPC-X's IBext, `NCCL RDMA Plugin`, SHARP)
/// says IB was expected: NGC images load it on single-node machines too.
pub fn ib_unavailable_rule(log: &NcclLog, multi_node: bool) -> Option<Finding> {
    let none: Vec<&InterfaceLine> = log
        .interfaces
        .iter()
        .filter(|l| l.source == "NET/IB" && l.names.is_empty())
        .collect();
    let ib_used = log
        .connections
        .iter()
        .any(|c| c.transport.label == "NET/IB")
        || log.networks.iter().any(|n| n.starts_with("IB"));
    // A log of one host counts where the job asked for IB (`NCCL_IB_DISABLE set by
    // environment to 0`, HCAs or a GID index named): it has other nodes to reach.
    let wants_ib = log.env.iter().any(|(n, v)| {
        (n == "NCCL_IB_DISABLE" && v == "0")
            || n == "NCCL_IB_HCA"
            || n == "NCCL_IB_GID_INDEX"
            || (n == "NCCL_NET" && v.eq_ignore_ascii_case("ib"))
    });
    let rdma_plugin = log.plugins.iter().any(|p| {
        p.starts_with("IBext") || p.starts_with("NCCL RDMA Plugin") || p.starts_with("SHARP")
    });
    let asked = multi_node || wants_ib;
    if none.is_empty() || !(asked || rdma_plugin) || ib_used {
        return None;
    }
    let severity = if asked {
        Severity::Warning
    } else {
        Severity::Info
    };
    let texts: Vec<Line> = none.iter().map(|l| Line::at(l.line, &l.text)).collect();
    let n = texts.len();
    let network = match log.networks.as_slice() {
        [] => String::new(),
        n => format!(" (`Using network {}`)", n.join(", ")),
    };
    Some(
        Finding::new(
            FindingKind::IbNoDevice,
            evidence(texts),
            &[("network", network)],
        )
        .with_severity(severity)
        .with_occurrences(n),
    )
}

/// No connection used SHM while P2P or NET carried everything: NCCL_SHM_DISABLE=1 does not
/// change the data path. Not said when the log shows SHM was disabled already, nor where
/// every connection went over the network (then the question is why, `net-inside-node`).
pub fn shm_not_on_data_path_rule(log: &NcclLog) -> Option<Finding> {
    let shm_disabled = log
        .env
        .iter()
        .any(|(n, v)| n == "NCCL_SHM_DISABLE" && v != "0");
    let shm = log
        .connections
        .iter()
        .any(|c| c.transport.kind == TransportKind::Shm);
    if log.connections.is_empty() || shm || shm_disabled {
        return None;
    }
    let n = log.connections.len();
    let carriers = log
        .transport_shares()
        .into_iter()
        .map(|(label, _)| label)
        .collect::<Vec<_>>()
        .join(" and ");
    let summary = format!(
        "{n} connection line(s): {}",
        log.transports_cell().replace(';', ", ")
    );
    // One summary of all the connection lines.
    Some(
        Finding::new(
            FindingKind::ShmNotOnDataPath,
            vec![summary],
            &[("carriers", carriers), ("n", n.to_string())],
        )
        .with_occurrences(1),
    )
}

/// Every connection between GPUs of one node via SHM and none via P2P, where P2P is
/// expected: NCCL shows NCCL_P2P_DISABLE or NCCL_P2P_LEVEL set, or NET/IB lists HCAs (a
/// data-center node, whose GPUs have NVLink or PCIe P2P). Elsewhere (GeForce cards, many
/// VMs) SHM is NCCL's own choice, and nothing is said. A note either way.
pub fn shm_instead_of_p2p_rule(log: &NcclLog) -> Option<Finding> {
    let shm: Vec<&crate::nccl::log::Connection> = log
        .connections
        .iter()
        .filter(|c| c.transport.kind == TransportKind::Shm)
        .collect();
    let first = shm.first()?;
    if log
        .connections
        .iter()
        .any(|c| c.transport.kind == TransportKind::P2p)
    {
        return None;
    }
    let set: Vec<String> = log
        .env
        .iter()
        .filter(|(n, v)| match n.as_str() {
            "NCCL_P2P_DISABLE" => v != "0",
            // SYS (5) allows P2P everywhere: it restricts nothing.
            "NCCL_P2P_LEVEL" => !matches!(v.as_str(), "SYS" | "5"),
            _ => false,
        })
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let hcas = log
        .interfaces
        .iter()
        .any(|l| l.source == "NET/IB" && !l.names.is_empty());
    if set.is_empty() && !hcas {
        return None;
    }
    let why = match set.as_slice() {
        [] => String::new(),
        set => format!(", with {} set", set.join(" and ")),
    };
    let evidence = format!(
        "line {}: {}[{}] -> {}[{}] via {}",
        first.line,
        first.from_rank,
        first.from_dev,
        first.to_rank,
        first.to_dev,
        first.transport.raw
    );
    Some(
        Finding::new(
            FindingKind::ShmInsteadOfP2p,
            vec![evidence],
            &[("count", shm.len().to_string()), ("why", why)],
        )
        .with_occurrences(1),
    )
}

/// NCCL said it was retrying connects: the ranks cannot reach an address a peer
/// advertised. A start-up hang may show nothing else (NCCL 2.7 to 2.23 log only every
/// 1000th refused connect, at INFO; 2.24 and later count the attempts).
pub fn connect_retries_rule(log: &NcclLog) -> Option<Finding> {
    let retries = &log.connect_retries;
    let last = retries.last()?;
    let targets: std::collections::BTreeSet<&str> =
        retries.iter().filter_map(|r| r.target.as_deref()).collect();
    let lines: Vec<Line> = retries
        .iter()
        .map(|r| {
            let to = r
                .target
                .as_deref()
                .map(|t| format!(" to {t}"))
                .unwrap_or_default();
            let count = r
                .attempt
                .map(|(a, n)| format!(" (attempt {a} of {n})"))
                .unwrap_or_default();
            Line::at(
                r.line,
                &format!("connect{to} returned {}, retrying{count}", r.error),
            )
        })
        .collect();
    let to = if targets.is_empty() {
        "a peer (this NCCL does not name the address in its retry lines)".to_string()
    } else {
        targets.iter().copied().collect::<Vec<_>>().join(", ")
    };
    let last_text = format!(
        "`{}`{}",
        last.error,
        last.attempt
            .map(|(a, n)| format!(" at attempt {a} of {n}"))
            .unwrap_or_default()
    );
    let mut f = Finding::new(
        FindingKind::SocketConnectRetries,
        evidence(lines),
        &[
            ("to", to),
            ("n", retries.len().to_string()),
            ("last", last_text),
        ],
    )
    .with_occurrences(retries.len());
    let names = socket_interface_names(&log.interfaces);
    if !names.is_empty() {
        f.cause.push_str(&format!(
            " Socket interfaces in this log: {}.",
            names.join(", ")
        ));
    }
    if targets.iter().any(|t| super::reason::is_docker_bridge(t)) {
        f.cause.push_str(
            " The address is in Docker's default bridge network (172.17.0.0/16), private to \
             its own host: run the containers with `--network host`.",
        );
    }
    Some(f)
}

/// NCCL started (its version, bootstrap, network or init lines) but no communicator finished its
/// set-up, nothing failed and no connection was made: the log stops in init, as a
/// hang's does.
pub fn init_stops_rule(log: &NcclLog) -> Option<Finding> {
    let started = log.nccl_lines > 0
        && (!log.versions.is_empty()
            || !log.ranks.is_empty()
            || !log.interfaces.is_empty()
            || !log.networks.is_empty());
    let complete = log.ranks.iter().any(|r| r.init_complete);
    // Anything NCCL prints once set up (NVLS, tuning, collectives) says it got further.
    let further = log.nvls != crate::nccl::log::NvlsUse::Unknown
        || !log.choices.is_empty()
        || !log.calls.is_empty()
        || !log.tuning_table.is_empty()
        || log.collnet;
    if !started || complete || further || !log.failures.is_empty() || !log.connections.is_empty() {
        return None;
    }
    let what = match log.versions.first() {
        Some(v) => format!("NCCL {v}, {} line(s)", log.nccl_lines),
        None => format!("{} line(s)", log.nccl_lines),
    };
    let mut names: Vec<&str> = log
        .interfaces
        .iter()
        .flat_map(|i| i.names.iter().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let interfaces = match names.as_slice() {
        [] => String::new(),
        names => format!(" (the log shows {})", names.join(", ")),
    };
    // The peer-to-peer test is for GPUs of one node that NCCL connects directly: where
    // the log shows two on a host, and no network plugin whose set-up may be what stops.
    let plugin = log.plugins.iter().any(|p| p != "internal")
        || log
            .networks
            .iter()
            .any(|n| n.contains("Libfabric") || n.contains("OFI"));
    let two_on_a_host = log.processes.iter().any(|p| {
        let gpus: usize = log
            .processes
            .iter()
            .filter(|q| q.host == p.host)
            .map(|q| q.devices.len().max(1))
            .sum();
        gpus > 1
    });
    let p2p = if two_on_a_host && !plugin {
        " Between GPUs of one node without NVLink, test NCCL_P2P_DISABLE=1: if that runs, \
         peer-to-peer is blocked (IOMMU or PCI ACS) and the fix is there."
    } else {
        ""
    };
    Some(Finding::new(
        FindingKind::InitStops,
        Vec::new(),
        &[
            ("started", what),
            ("interfaces", interfaces),
            ("p2p", p2p.to_string()),
        ],
    ))
}

/// Every rank of one host finished NCCL's set-up, nothing failed, and the paste ends in
/// a progress bar at 0 % (`Processed prompts:   0%|`): the first collectives never
/// finished. Between GPUs of one host this is peer-to-peer traffic that does not arrive.
pub fn stalls_after_init_rule(log: &NcclLog, pasted: &super::pasted::Pasted) -> Option<Finding> {
    let hosts: std::collections::BTreeSet<&str> =
        log.ranks.iter().map(|r| r.host.as_str()).collect();
    // Every rank of the communicator is in this log: not one node's part of a larger job.
    let seen: std::collections::BTreeSet<u32> = log.ranks.iter().map(|r| r.rank).collect();
    let all_set_up = !log.ranks.is_empty()
        && log
            .ranks
            .iter()
            .all(|r| r.init_complete && r.nranks > 1 && r.nranks as usize <= seen.len().max(2));
    let over_net = log
        .connections
        .iter()
        .any(|c| c.transport.kind == TransportKind::Net);
    if !all_set_up || hosts.len() != 1 || over_net || !log.failures.is_empty() {
        return None;
    }
    let last = pasted
        .lines
        .iter()
        .rev()
        .find(|l| !l.text.trim().is_empty())?;
    // A bar redrawn with `\r` shows its latest state last.
    let latest = last.text.rsplit('\r').next().unwrap_or(last.text);
    if !latest.contains(" 0%|") {
        return None;
    }
    let gpus = log.ranks.iter().map(|r| r.nranks).max().unwrap_or(0);
    Some(Finding::new(
        FindingKind::StallsAfterInit,
        vec![pasted.evidence(last)],
        &[
            (
                "host",
                hosts.into_iter().next().unwrap_or_default().to_string(),
            ),
            ("gpus", gpus.to_string()),
        ],
    ))
}
