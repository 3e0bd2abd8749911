//! The host and rank-pair summaries of an [`Explanation`](super::Explanation): which hosts
//! ran which ranks, GPUs and processes, which interfaces NCCL named, and how many channel
//! connections each rank pair had over each transport.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::nccl::log::{Direction, InterfaceLine, NcclLog, TransportKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSummary {
    /// `""` for lines without a `host:pid:tid` prefix.
    pub host: String,
    pub pids: Vec<u32>,
    /// From `Init` lines and from the rank that logged each connection line.
    pub ranks: Vec<u32>,
    /// CUDA devices from `[dev]` prefixes and `cudaDev` of the `Init` lines.
    pub devices: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterfaceSummary {
    pub source: String,
    /// Empty when NCCL said it found none (`NET/IB : No device found`).
    pub names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairSummary {
    pub from_rank: u32,
    pub to_rank: u32,
    /// Most connections first, then by label.
    pub transports: Vec<PairTransport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairTransport {
    pub kind: TransportKind,
    /// `SHM`, `P2P/CUMEM`, `NET/IB`... as in [`crate::nccl::log::Transport::label`].
    pub label: String,
    /// Distinct channel connections (channel and connection index): a NET connection
    /// logged by both its `[send]` and `[receive]` side counts once.
    pub connections: usize,
}

/// Hosts from the process prefixes, the `Init` lines and the connection lines: a connection
/// line is logged by its sending rank, or by its receiving rank for `[receive]`.
pub fn host_summaries(log: &NcclLog) -> Vec<HostSummary> {
    #[derive(Default)]
    struct Seen {
        pids: BTreeSet<u32>,
        ranks: BTreeSet<u32>,
        devices: BTreeSet<u32>,
    }
    let mut hosts: BTreeMap<&str, Seen> = BTreeMap::new();
    for p in &log.processes {
        let seen = hosts.entry(p.host.as_str()).or_default();
        seen.pids.insert(p.pid);
        seen.devices.extend(&p.devices);
    }
    for r in &log.ranks {
        let seen = hosts.entry(r.host.as_str()).or_default();
        if r.pid != 0 {
            seen.pids.insert(r.pid);
        }
        seen.ranks.insert(r.rank);
        seen.devices.extend(r.cuda_dev);
    }
    for c in &log.connections {
        let seen = hosts
            .entry(c.host.as_deref().unwrap_or_default())
            .or_default();
        seen.pids.extend(c.pid);
        let logger = match c.direction {
            Some(Direction::Receive) => c.to_rank,
            _ => c.from_rank,
        };
        seen.ranks.insert(logger);
    }
    hosts
        .into_iter()
        .map(|(host, seen)| HostSummary {
            host: host.to_string(),
            pids: seen.pids.into_iter().collect(),
            ranks: seen.ranks.into_iter().collect(),
            devices: seen.devices.into_iter().collect(),
        })
        .collect()
}

/// Distinct (source, names), in order of appearance.
pub(super) fn interface_summaries(lines: &[InterfaceLine]) -> Vec<InterfaceSummary> {
    let mut out: Vec<InterfaceSummary> = Vec::new();
    for l in lines {
        if !out
            .iter()
            .any(|s| s.source == l.source && s.names == l.names)
        {
            out.push(InterfaceSummary {
                source: l.source.clone(),
                names: l.names.clone(),
            });
        }
    }
    out
}

/// Channel connections per rank pair and transport, each (channel, connection index)
/// counted once.
pub fn pair_summaries(log: &NcclLog) -> Vec<PairSummary> {
    type Channels = BTreeSet<(u32, Option<u32>)>;
    type ByLabel<'a> = BTreeMap<&'a str, (TransportKind, Channels)>;
    let mut pairs: BTreeMap<(u32, u32), ByLabel> = BTreeMap::new();
    for c in &log.connections {
        pairs
            .entry((c.from_rank, c.to_rank))
            .or_default()
            .entry(c.transport.label.as_str())
            .or_insert_with(|| (c.transport.kind, Channels::new()))
            .1
            .insert((c.channel, c.conn_index));
    }
    pairs
        .into_iter()
        .map(|((from_rank, to_rank), labels)| {
            let mut transports: Vec<PairTransport> = labels
                .into_iter()
                .map(|(label, (kind, channels))| PairTransport {
                    kind,
                    label: label.to_string(),
                    connections: channels.len(),
                })
                .collect();
            // Stable over the label order of the map.
            transports.sort_by_key(|t| std::cmp::Reverse(t.connections));
            PairSummary {
                from_rank,
                to_rank,
                transports,
            }
        })
        .collect()
}

/// One run of identical tuning lines (`NCCL_DEBUG_SUBSYS=TUNING`): the function, the
/// size and NCCL's choice, with how many collectives in a row had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TuningSummary {
    /// `AllReduce`, ...; empty in the 2.20-2.22 wording, which does not say.
    pub func: String,
    pub bytes: u64,
    pub algo: String,
    /// Empty for a symmetric kernel.
    pub proto: String,
    /// A symmetric kernel's name.
    pub kernel: String,
    pub channels: Option<u32>,
    /// The model's time as logged (2.20-2.23), microseconds.
    pub predicted_us: Option<String>,
    pub count: usize,
}

/// The tuning lines in order, consecutive identical ones merged.
pub(super) fn tuning_summaries(log: &NcclLog) -> Vec<TuningSummary> {
    let mut out: Vec<TuningSummary> = Vec::new();
    for c in &log.choices {
        let next = TuningSummary {
            func: c.func.clone().unwrap_or_default(),
            bytes: c.bytes,
            algo: c.algo.name().to_string(),
            proto: c.proto.map(|p| p.name().to_string()).unwrap_or_default(),
            kernel: c.kernel.clone().unwrap_or_default(),
            channels: c.channels,
            predicted_us: c.predicted_us.map(|t| format!("{t:.2}")),
            count: 1,
        };
        match out.last_mut() {
            Some(last)
                if TuningSummary {
                    count: 1,
                    ..last.clone()
                } == next =>
            {
                last.count += 1
            }
            _ => out.push(next),
        }
    }
    out
}
