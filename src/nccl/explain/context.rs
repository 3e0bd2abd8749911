//! [`Context`]: what the finding rules need to know about the log as a whole (one node or
//! several, local ranks, channels, SHM peers), worked out once per log.

use std::collections::{BTreeMap, BTreeSet};

use super::summary::HostSummary;
use crate::nccl::log::{NcclLog, TransportKind};

/// What the rules need to know about the whole log.
pub(super) struct Context {
    /// More than one host name, or a connection over the network.
    pub(super) multi_node: bool,
    /// Several hosts that NCCL joined into one node over multi-node NVLink (`MNNVL 1`,
    /// every `nNodes 1`): their bootstrap goes over TCP, their data over NVLink.
    pub(super) one_nvlink_domain: bool,
    /// The most GPUs (else ranks) seen on one host, and that host.
    pub(super) local_ranks: Option<(usize, String)>,
    /// Distinct channel numbers among the connections.
    pub(super) channels: Option<usize>,
    /// The most SHM senders one rank had on one channel; `None` without SHM connections.
    pub(super) shm_peers: Option<usize>,
    pub(super) connections: usize,
    pub(super) shm_connections: usize,
}

impl Context {
    pub(super) fn new(log: &NcclLog, hosts: &[HostSummary]) -> Context {
        let named_hosts = hosts.iter().filter(|h| !h.host.is_empty()).count();
        let net = log
            .connections
            .iter()
            .any(|c| c.transport.kind == TransportKind::Net);
        let local_ranks = hosts
            .iter()
            .map(|h| {
                let n = if h.devices.is_empty() {
                    h.ranks.len()
                } else {
                    h.devices.len()
                };
                (n, h.host.clone())
            })
            .filter(|(n, _)| *n > 0)
            // The first host among those with the most.
            .fold(
                None,
                |best: Option<(usize, String)>, (n, host)| match best {
                    Some((m, _)) if m >= n => best,
                    _ => Some((n, host)),
                },
            );
        let channels: BTreeSet<u32> = log.connections.iter().map(|c| c.channel).collect();
        let mut senders: BTreeMap<(u32, u32), BTreeSet<u32>> = BTreeMap::new();
        for c in &log.connections {
            if c.transport.kind == TransportKind::Shm {
                senders
                    .entry((c.to_rank, c.channel))
                    .or_default()
                    .insert(c.from_rank);
            }
        }
        Context {
            multi_node: named_hosts > 1 || net,
            one_nvlink_domain: !net
                && log.mnnvl
                && !log.nnodes.is_empty()
                && log.nnodes.iter().all(|&n| n == 1),
            local_ranks,
            channels: (!channels.is_empty()).then_some(channels.len()),
            shm_peers: senders.values().map(BTreeSet::len).max(),
            connections: log.connections.len(),
            shm_connections: log
                .connections
                .iter()
                .filter(|c| c.transport.kind == TransportKind::Shm)
                .count(),
        }
    }
}
