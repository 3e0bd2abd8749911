//! Findings from the log as a whole rather than from a failure line: a socket interface NCCL
//! chose itself or one other hosts cannot reach, no IB device on a multi-host run, and SHM
//! that carried no connection.

use super::diagnosis::{is_socket_source, socket_interface_names, IFNAME_FIX};
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
        .filter(|l| is_socket_source(&l.source) && !l.names.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let names = socket_interface_names(interfaces);
    let virtual_names: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| is_virtual_interface(n))
        .collect();
    let ifname = env
        .iter()
        .find(|(n, _)| n == "NCCL_SOCKET_IFNAME")
        .map(|(_, v)| v.as_str());
    if virtual_names.is_empty() && (ifname.is_some() || !multi_node) {
        return None;
    }
    let shown: Vec<&InterfaceLine> = if virtual_names.is_empty() {
        lines
    } else {
        lines
            .into_iter()
            .filter(|l| l.names.iter().any(|n| is_virtual_interface(n)))
            .collect()
    };
    let chosen_by = match ifname {
        Some(v) => format!("NCCL_SOCKET_IFNAME=`{v}` selects it"),
        None => {
            "NCCL only falls back to lo or docker* when it finds no other interface".to_string()
        }
    };
    let diagnosis = match (virtual_names.is_empty(), multi_node) {
        (false, false) => format!(
            "NCCL's socket interface is {} (loopback or virtual; {chosen_by}). That works \
             while every rank runs on this host, but ranks on other hosts cannot reach it: a \
             multi-node run set up like this hangs at init or fails to connect.",
            virtual_names.join(", ")
        ),
        (false, true) => format!(
            "NCCL uses {} (loopback or virtual; {chosen_by}) for its sockets in a multi-node \
             log: ranks on other hosts cannot reach that address, which shows as connect \
             failures or a hang at init.",
            virtual_names.join(", ")
        ),
        _ => format!(
            "NCCL chose its socket interface(s) itself ({}): without NCCL_SOCKET_IFNAME it \
             takes the first match in its own order (ib* first, then any but docker* and lo), \
             which on a host with several networks may not be the one the other nodes reach. \
             Harmless if the run worked; the first suspect if it hangs or cannot connect.",
            names.join(", ")
        ),
    };
    let mut fix = format!("{IFNAME_FIX}.");
    if !multi_node {
        fix.push_str(" Only needed for runs across hosts.");
    }
    let texts: Vec<Line> = shown.iter().map(|l| Line::at(l.line, &l.text)).collect();
    Some(Finding {
        kind: FindingKind::SocketInterfaceAmbiguous,
        severity: if multi_node {
            Severity::Warning
        } else {
            Severity::Info
        },
        occurrences: texts.len(),
        evidence: evidence(texts),
        diagnosis,
        fix,
    })
}

/// `NET/IB : No device found` (or no libibverbs) in a multi-host log whose traffic did not
/// go over IB: inter-node traffic takes TCP sockets.
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
    if none.is_empty() || !multi_node || ib_used {
        return None;
    }
    let texts: Vec<Line> = none.iter().map(|l| Line::at(l.line, &l.text)).collect();
    let network = match log.networks.as_slice() {
        [] => String::new(),
        n => format!(" (`Using network {}`)", n.join(", ")),
    };
    Some(Finding {
        kind: FindingKind::IbError,
        severity: Severity::Warning,
        occurrences: texts.len(),
        evidence: evidence(texts),
        diagnosis: format!(
            "NCCL found no usable InfiniBand/RoCE device (`NET/IB : No device found` or no \
             libibverbs), so traffic between nodes goes over TCP sockets{network}."
        ),
        fix: "If the nodes have InfiniBand or RoCE: install rdma-core (libibverbs) in the \
              container, pass /dev/infiniband in, and pick the HCAs with NCCL_IB_HCA; if they \
              have none, NCCL_IB_DISABLE=1 makes the choice explicit."
            .to_string(),
    })
}

/// No connection used SHM while P2P or NET carried everything: NCCL_SHM_DISABLE=1 does not
/// change the data path. Not said when the log shows SHM was disabled already.
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
    Some(Finding {
        kind: FindingKind::ShmNotOnDataPath,
        severity: Severity::Info,
        // One summary of all the connection lines.
        occurrences: 1,
        evidence: vec![format!(
            "{n} connection line(s): {}",
            log.transports_cell().replace(';', ", ")
        )],
        diagnosis: format!(
            "No connection in this log used SHM: {carriers} carried all {n} connection \
             line(s). NCCL uses SHM only where P2P is refused, so disabling SHM does not change \
             the data path here (as far as this log shows: a partial log can miss connections)."
        ),
        fix: "Keep SHM enabled: NCCL_SHM_DISABLE=1 buys nothing here. To be sure, measure \
              both configurations with `nccl-bench sweep`."
            .to_string(),
    })
}

/// NCCL said it was retrying connects: the ranks cannot reach an address a peer
/// advertised. A start-up hang may show nothing else (NCCL 2.7 to 2.21 log only every
/// 1000th refused connect, at INFO; 2.22 and later count the attempts).
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
        targets.into_iter().collect::<Vec<_>>().join(", ")
    };
    let mut diagnosis = format!(
        "NCCL kept retrying to connect to {to}: {} retry line(s), the last one `{}`{}. \
         This rank cannot reach the address the peer advertised, and the job waits at \
         start-up until a timeout ends it.",
        retries.len(),
        last.error,
        last.attempt
            .map(|(a, n)| format!(" at attempt {a} of {n}"))
            .unwrap_or_default()
    );
    let names = socket_interface_names(&log.interfaces);
    if !names.is_empty() {
        diagnosis.push_str(&format!(
            " Socket interfaces in this log: {}.",
            names.join(", ")
        ));
    }
    Some(Finding {
        kind: FindingKind::SocketConnectRetries,
        severity: Severity::Error,
        occurrences: retries.len(),
        evidence: evidence(lines),
        diagnosis,
        fix: format!(
            "Check, from this node, that the peer's address is reachable (`nc -vz <addr> \
             <port>`; a firewall or security group must allow TCP between the nodes on all \
             ports, as NCCL listens on ephemeral ones); {IFNAME_FIX}; compare with the \
             address the peer advertised in its `NET/Socket : Using` and `Bootstrap : Using` \
             lines: a container's virtual interface (docker0, a veth, a CNI bridge) or lo is \
             not reachable from other nodes."
        ),
    })
}
