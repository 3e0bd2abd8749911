//! `nccl-bench explain`: what an NCCL log says (versions, hosts, ranks and GPUs, the network,
//! the transport of every channel connection per rank pair) and what its failures mean, each
//! known failure signature with a diagnosis and a fix. Built on [`super::nccl_log`], the one
//! parser of NCCL logs; pure: nothing here reads files or prints.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::nccl_log::{Failure, FailureKind, InterfaceLine, NcclLog, NvlsUse, TransportKind};

/// What one or more NCCL logs say, ready to print.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// `NCCL version` values, in order of appearance.
    pub versions: Vec<String>,
    /// `NCCL_X set by environment to V` lines as (name, value).
    pub env: Vec<(String, String)>,
    /// Hosts with the ranks, GPUs and processes seen on them, sorted by name (`""`: lines
    /// without a `host:pid:tid` prefix).
    pub hosts: Vec<HostSummary>,
    /// Communicator sizes (`nranks`) from the `Init` lines, ascending.
    pub nranks: Vec<u32>,
    /// `Using network` values.
    pub networks: Vec<String>,
    /// Interfaces NCCL named per source (`NET/Socket`, `NET/IB`, `Bootstrap`), distinct.
    pub interfaces: Vec<InterfaceSummary>,
    /// Channel connections per (from rank, to rank), sorted.
    pub pairs: Vec<PairSummary>,
    /// Share of connection lines per transport (`P2P/IPC:90%;NET/Socket:10%`); `""` if none.
    pub transports: String,
    pub nvls: NvlsUse,
    pub collnet: bool,
    /// Errors first, then warnings, then notes; in order of appearance within each.
    pub findings: Vec<Finding>,
}

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
    /// `SHM`, `P2P/CUMEM`, `NET/IB`... as in [`super::nccl_log::Transport::label`].
    pub label: String,
    /// Distinct channel connections (channel and connection index): a NET connection
    /// logged by both its `[send]` and `[receive]` side counts once.
    pub connections: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// Up to [`MAX_EVIDENCE`] distinct log lines, `line 15: <message>` (a `WARN` line that
    /// has no line number in the parse result is quoted whole).
    pub evidence: Vec<String>,
    /// How many log lines showed it (evidence keeps the first few).
    pub occurrences: usize,
    pub diagnosis: String,
    pub fix: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
            Severity::Info => "INFO",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Creating a /dev/shm segment failed with ENOSPC.
    ShmNoSpace,
    /// Attaching to a peer's /dev/shm segment failed with ENOENT.
    ShmAttachMissing,
    /// A TCP connect to a peer was refused, aborted or timed out.
    SocketConnect,
    /// A socket failed after connecting: closed by the peer, recv failed, wrong handshake.
    SocketError,
    /// NCCL chose its socket interface itself on a multi-host run, or chose lo/docker0.
    SocketInterfaceAmbiguous,
    /// An IB/RoCE (ibverbs) failure, or no IB device on a multi-host run.
    IbError,
    CudaFailure,
    SystemError,
    RemoteError,
    /// An NCCL error without a known signature.
    OtherError,
    /// No connection used SHM: disabling it does not change the data path.
    ShmNotOnDataPath,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::ShmNoSpace => "shm-no-space",
            FindingKind::ShmAttachMissing => "shm-attach-missing",
            FindingKind::SocketConnect => "socket-connect",
            FindingKind::SocketError => "socket-error",
            FindingKind::SocketInterfaceAmbiguous => "socket-interface-ambiguous",
            FindingKind::IbError => "ib-error",
            FindingKind::CudaFailure => "cuda-failure",
            FindingKind::SystemError => "system-error",
            FindingKind::RemoteError => "remote-error",
            FindingKind::OtherError => "other-error",
            FindingKind::ShmNotOnDataPath => "shm-not-on-data-path",
        }
    }

    /// A short title for the text report.
    pub fn title(self) -> &'static str {
        match self {
            FindingKind::ShmNoSpace => "/dev/shm too small for NCCL's SHM segments",
            FindingKind::ShmAttachMissing => "shared memory segment of a peer not found",
            FindingKind::SocketConnect => "socket connection to a peer failed",
            FindingKind::SocketError => "socket error between ranks",
            FindingKind::SocketInterfaceAmbiguous => "socket interface chosen by NCCL itself",
            FindingKind::IbError => "InfiniBand/RoCE problem",
            FindingKind::CudaFailure => "CUDA failure inside NCCL",
            FindingKind::SystemError => "unhandled system error",
            FindingKind::RemoteError => "a remote rank exited or the network failed",
            FindingKind::OtherError => "NCCL error without a known signature",
            FindingKind::ShmNotOnDataPath => "SHM is not on the data path",
        }
    }
}

/// Evidence lines kept per finding.
pub const MAX_EVIDENCE: usize = 3;

/// Longest evidence line kept, in characters.
const MAX_EVIDENCE_CHARS: usize = 200;

/// One SHM receive segment with the default `NCCL_BUFFSIZE` (NCCL 2.12+): a 4096 B header
/// plus the LL, LL128 and Simple buffers.
pub const DEFAULT_SHM_SEGMENT_BYTES: u64 = 9_637_888;

const MIB: f64 = 1024.0 * 1024.0;
const GIB: u64 = 1 << 30;

/// Whether the parser found anything NCCL-like: tagged lines, lines it recognised, or
/// NCCL's error strings as an application prints them (a PyTorch traceback).
pub fn is_nccl_log(log: &NcclLog) -> bool {
    log.nccl_lines > 0 || !log.failures.is_empty()
}

/// Explains a parsed log. Never fails: what the log does not show is left empty.
pub fn explain(log: &NcclLog) -> Explanation {
    let hosts = host_summaries(log);
    let context = Context::new(log, &hosts);
    let mut findings = failure_findings(log, &context);
    let has_ib_error = findings.iter().any(|f| f.kind == FindingKind::IbError);
    findings.extend(socket_interface_rule(
        &log.interfaces,
        &log.env,
        context.multi_node,
    ));
    if !has_ib_error {
        findings.extend(ib_unavailable_rule(log, context.multi_node));
    }
    findings.extend(shm_not_on_data_path_rule(log));
    // Stable: the order of appearance survives within a severity.
    findings.sort_by_key(|f| f.severity);
    let nranks: BTreeSet<u32> = log.ranks.iter().map(|r| r.nranks).collect();
    Explanation {
        versions: log.versions.clone(),
        env: log.env.clone(),
        hosts,
        nranks: nranks.into_iter().collect(),
        networks: log.networks.clone(),
        interfaces: interface_summaries(&log.interfaces),
        pairs: pair_summaries(log),
        transports: log.transports_cell(),
        nvls: log.nvls,
        collnet: log.collnet,
        findings,
    }
}

// ---- Summaries ----

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
            Some(super::nccl_log::Direction::Receive) => c.to_rank,
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
fn interface_summaries(lines: &[InterfaceLine]) -> Vec<InterfaceSummary> {
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

/// What the rules need to know about the whole log.
struct Context {
    /// More than one host name, or a connection over the network.
    multi_node: bool,
    /// The most GPUs (else ranks) seen on one host, and that host.
    local_ranks: Option<(usize, String)>,
    /// Distinct channel numbers among the connections.
    channels: Option<usize>,
    /// The most SHM senders one rank had on one channel; `None` without SHM connections.
    shm_peers: Option<usize>,
    connections: usize,
    shm_connections: usize,
}

impl Context {
    fn new(log: &NcclLog, hosts: &[HostSummary]) -> Context {
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

// ---- Findings from failure lines ----

/// The finding a failure line belongs to.
pub fn finding_kind_of(failure: &Failure) -> FindingKind {
    let ib = is_ib_error_text(&failure.text);
    match failure.kind {
        FailureKind::ShmEnospc => FindingKind::ShmNoSpace,
        FailureKind::ShmAttachEnoent => FindingKind::ShmAttachMissing,
        FailureKind::CudaFailure => FindingKind::CudaFailure,
        FailureKind::SystemError => FindingKind::SystemError,
        FailureKind::RemoteError => FindingKind::RemoteError,
        FailureKind::ConnectionRefused | FailureKind::SocketError | FailureKind::Other if ib => {
            FindingKind::IbError
        }
        FailureKind::ConnectionRefused => FindingKind::SocketConnect,
        FailureKind::SocketError if is_connect_text(&failure.text) => FindingKind::SocketConnect,
        FailureKind::SocketError => FindingKind::SocketError,
        FailureKind::Other => FindingKind::OtherError,
    }
}

/// An ibverbs or NET/IB failure message (not the benign "no IB here" lines).
pub fn is_ib_error_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let ib = ["net/ib", "ibv_", "ibverbs", "net_ib", "infiniband"]
        .iter()
        .any(|s| t.contains(s));
    let benign = t.contains("failed to open libibverbs") || t.contains("no device found");
    ib && !benign
}

/// A socket error that is about connecting: `socketPollConnect: connect returned Connection
/// timed out`, `Connect to ... failed`.
fn is_connect_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "startconnect",
        "pollconnect",
        "connect returned",
        "connect to ",
        "timed out",
    ]
    .iter()
    .any(|s| t.contains(s))
}

/// A log line shown as evidence: its line number when the parse result has one.
struct Line {
    number: Option<usize>,
    text: String,
}

impl Line {
    fn at(number: usize, text: &str) -> Line {
        Line {
            number: Some(number),
            text: text.trim().to_string(),
        }
    }

    fn of(failure: &Failure) -> Line {
        Line {
            number: Some(failure.line),
            // An untagged `[rank1]: ...` keeps the `: ` its prefix left.
            text: failure
                .text
                .trim_start_matches([':', ' '])
                .trim_end()
                .to_string(),
        }
    }
}

/// The failures of one finding kind, and its evidence lines.
struct Group<'a> {
    kind: FindingKind,
    failures: Vec<&'a Failure>,
    lines: Vec<Line>,
}

/// One finding per kind, in order of the kind's first failure line; IB error `WARN` lines
/// that the parser did not count as failures (no error return followed) join the IB one.
fn failure_findings(log: &NcclLog, context: &Context) -> Vec<Finding> {
    let mut groups: Vec<Group> = Vec::new();
    let group = |groups: &mut Vec<Group>, kind| match groups.iter().position(|g| g.kind == kind) {
        Some(at) => at,
        None => {
            groups.push(Group {
                kind,
                failures: Vec::new(),
                lines: Vec::new(),
            });
            groups.len() - 1
        }
    };
    for f in &log.failures {
        let at = group(&mut groups, finding_kind_of(f));
        groups[at].failures.push(f);
        groups[at].lines.push(Line::of(f));
    }
    let unreturned_ib = log
        .warnings
        .iter()
        .filter(|w| is_ib_error_text(w))
        .filter(|w| !log.failures.iter().any(|f| w.ends_with(f.text.trim())));
    for w in unreturned_ib {
        let at = group(&mut groups, FindingKind::IbError);
        groups[at].lines.push(Line {
            number: None,
            text: w.clone(),
        });
    }
    let kinds: Vec<FindingKind> = groups.iter().map(|g| g.kind).collect();
    groups
        .into_iter()
        .map(|g| {
            let others: Vec<FindingKind> = kinds.iter().copied().filter(|k| *k != g.kind).collect();
            let failures = g.failures.as_slice();
            let (diagnosis, fix) = match g.kind {
                FindingKind::ShmNoSpace => shm_no_space_text(failures, context),
                FindingKind::ShmAttachMissing => shm_attach_missing_text(),
                FindingKind::SocketConnect => socket_connect_text(failures, log),
                FindingKind::SocketError => socket_error_text(failures),
                FindingKind::IbError => ib_error_text(&g.lines),
                FindingKind::CudaFailure => cuda_failure_text(failures),
                FindingKind::SystemError => system_error_text(&others),
                FindingKind::RemoteError => remote_error_text(),
                _ => other_error_text(),
            };
            Finding {
                kind: g.kind,
                severity: Severity::Error,
                occurrences: g.lines.len(),
                evidence: evidence(g.lines),
                diagnosis,
                fix,
            }
        })
        .collect()
}

/// The first [`MAX_EVIDENCE`] lines of distinct text, `line N: text` (the text alone
/// without a number), each cut at [`MAX_EVIDENCE_CHARS`].
fn evidence(lines: Vec<Line>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if out.len() == MAX_EVIDENCE {
            break;
        }
        if seen.contains(&line.text) {
            continue;
        }
        let shown = match line.number {
            Some(n) => format!("line {n}: {}", line.text),
            None => line.text.clone(),
        };
        let shown = match shown.char_indices().nth(MAX_EVIDENCE_CHARS) {
            Some((cut, _)) => format!("{}...", &shown[..cut]),
            None => shown,
        };
        seen.push(line.text);
        out.push(shown);
    }
    out
}

/// The estimate of the /dev/shm a node needs for NCCL's SHM transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmEstimate {
    pub segment_bytes: u64,
    pub channels: usize,
    pub shm_peers: usize,
    pub local_ranks: usize,
    /// segment x channels x SHM peers per rank x local ranks.
    pub total_bytes: u64,
}

/// Segment size x channels x SHM peers per rank x local ranks: one receive segment per
/// channel and SHM peer on every local rank.
pub fn shm_estimate(
    segment_bytes: u64,
    channels: usize,
    shm_peers: usize,
    local_ranks: usize,
) -> ShmEstimate {
    let total_bytes = segment_bytes
        .saturating_mul(channels as u64)
        .saturating_mul(shm_peers as u64)
        .saturating_mul(local_ranks as u64);
    ShmEstimate {
        segment_bytes,
        channels,
        shm_peers,
        local_ranks,
        total_bytes,
    }
}

/// Whole GiB for `--shm-size`: twice the estimate (NCCL's proxy and the application use
/// /dev/shm too), at least 1.
pub fn shm_size_gib(estimate_bytes: Option<u64>) -> u64 {
    estimate_bytes.map_or(1, |b| b.saturating_mul(2).div_ceil(GIB).max(1))
}

fn shm_no_space_text(failures: &[&Failure], context: &Context) -> (String, String) {
    let mut d = String::from(
        "/dev/shm too small for NCCL's SHM segments: creating a shared memory segment failed \
         with ENOSPC (No space left on device).",
    );
    // `(size N)` names the segment; `failed to extend ... to N bytes` adds a 4 B refcount.
    let segment = failures
        .iter()
        .filter(|f| f.text.contains("(size "))
        .find_map(|f| f.shm_segment_size())
        .or_else(|| failures.iter().find_map(|f| f.shm_segment_size()));
    let mut estimate_bytes = None;
    match segment {
        Some(size) => {
            let _ = write!(d, " One segment here is {size} B ({}).", human_bytes(size));
            match (context.channels, &context.local_ranks) {
                (Some(channels), Some((local, host))) => {
                    let peers = context.shm_peers.unwrap_or(1);
                    let e = shm_estimate(size, channels, peers, *local);
                    estimate_bytes = Some(e.total_bytes);
                    let peer_source = if context.shm_peers.is_some() {
                        "the most SHM senders one rank had on one channel in this log"
                    } else {
                        "as in a ring; trees and more channels need more"
                    };
                    let host = if host.is_empty() {
                        String::new()
                    } else {
                        format!(" on {host}")
                    };
                    let _ = write!(
                        d,
                        " Needed: about {} = {size} B x {channels} channel(s) x {peers} SHM \
                         peer(s) per rank x {local} local rank(s). Assumed: one segment per \
                         channel and SHM peer; {peers} SHM peer(s) per rank and channel \
                         ({peer_source}); the {channels} channel(s) and {local} rank(s){host} \
                         this log shows.",
                        human_bytes(e.total_bytes)
                    );
                }
                (channels, local) => {
                    let mut missing = Vec::new();
                    if channels.is_none() {
                        missing.push("the channel count");
                    }
                    if local.is_none() {
                        missing.push("how many ranks share a node");
                    }
                    let _ = write!(
                        d,
                        " A node needs about segment size x channels x SHM peers per rank x \
                         local ranks; this log does not show {}.",
                        missing.join(" or ")
                    );
                }
            }
        }
        None => {
            let _ = write!(
                d,
                " The log does not give the segment size: with the default NCCL_BUFFSIZE one \
                 segment is {DEFAULT_SHM_SEGMENT_BYTES} B ({}) in NCCL 2.12+, and a node needs \
                 about one per channel and SHM peer on each local rank.",
                human_bytes(DEFAULT_SHM_SEGMENT_BYTES)
            );
        }
    }
    d.push_str(" Docker gives a container 64 MiB of /dev/shm unless told otherwise.");
    if context.connections > 0 && context.shm_connections == 0 {
        d.push_str(
            " No connection in this log used the SHM transport, so the failing segment is \
             probably another NCCL user of /dev/shm (such as the proxy's shared buffers): \
             NCCL_SHM_DISABLE=1 would not even remove it.",
        );
    }
    let gib = shm_size_gib(estimate_bytes);
    let fix = format!(
        "Give /dev/shm more room: `docker run --shm-size={gib}g ...` or share the host's with \
         `docker run --ipc=host`; on Kubernetes mount an `emptyDir: {{medium: Memory}}` volume \
         at /dev/shm (sizeLimit {gib}Gi or more). NCCL_SHM_DISABLE=1 only hides the problem: \
         the traffic SHM would carry then takes the network path (sockets or IB loopback), \
         usually slower."
    );
    (d, fix)
}

fn shm_attach_missing_text() -> (String, String) {
    (
        "A rank could not open a /dev/shm segment that a peer on the same node created \
         (ENOENT): the segment was already gone (stale, or removed by a peer that crashed or \
         restarted), or the two ranks do not share /dev/shm because they run in different IPC \
         namespaces, such as separate containers without a shared /dev/shm. NCCL saw the same \
         host, chose SHM, and the peer's segment was not there. This is not a reason to \
         disable SHM."
            .to_string(),
        "Run the ranks of a node in one container or pod, or share the IPC namespace \
         (`docker run --ipc=host`, or `--ipc=container:<first>`; containers of one Kubernetes \
         pod share it, with one emptyDir of medium Memory at /dev/shm); remove leftover \
         /dev/shm/nccl-* files of crashed runs. If the ranks really are on different machines \
         that look alike (same hostname), give them distinct NCCL_HOSTID values."
            .to_string(),
    )
}

const IFNAME_FIX: &str = "Set NCCL_SOCKET_IFNAME on every node to the interface the nodes \
     reach each other on (`NCCL_SOCKET_IFNAME=eth0`: a name is a prefix, `=eth0` matches \
     exactly, `^docker0,lo` excludes instead)";

fn socket_connect_text(failures: &[&Failure], log: &NcclLog) -> (String, String) {
    let mut d = String::from("NCCL could not open a TCP connection to a peer");
    let targets: BTreeSet<&str> = failures.iter().filter_map(|f| f.connect_target()).collect();
    if !targets.is_empty() {
        let _ = write!(
            d,
            " ({})",
            targets.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    d.push_str(
        ": refused, aborted or timed out. The address is the peer's NCCL socket interface; \
         usually it is one this node cannot reach (NCCL picked docker0, lo, a management \
         network or a link-local address), or a firewall drops the connection.",
    );
    let names = socket_interface_names(&log.interfaces);
    if !names.is_empty() {
        let _ = write!(d, " Socket interfaces in this log: {}.", names.join(", "));
    }
    if let Some((_, v)) = log.env.iter().find(|(n, _)| n == "NCCL_SOCKET_IFNAME") {
        let _ = write!(
            d,
            " NCCL_SOCKET_IFNAME is set to `{v}`: check it selects the right interface on \
             every node."
        );
    }
    let fix = format!(
        "{IFNAME_FIX}; check the peer address is reachable from this node (`ping`, `nc -vz \
         <addr> <port>`); allow TCP between the nodes on all ports in the firewall or security \
         group (NCCL listens on ephemeral ports)."
    );
    (d, fix)
}

/// Distinct interface names of the socket and bootstrap lines.
fn socket_interface_names(lines: &[InterfaceLine]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for l in lines.iter().filter(|l| is_socket_source(&l.source)) {
        for n in &l.names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

fn is_socket_source(source: &str) -> bool {
    source == "NET/Socket" || source == "Bootstrap"
}

fn socket_error_text(failures: &[&Failure]) -> (String, String) {
    let texts: Vec<String> = failures
        .iter()
        .map(|f| f.text.to_ascii_lowercase())
        .collect();
    let any = |s: &[&str]| texts.iter().any(|t| s.iter().any(|p| t.contains(p)));
    let mut d = String::from("A TCP connection between ranks failed after it was set up.");
    let peer_died = any(&[
        "closed",
        "reset",
        "recv failed",
        "broken pipe",
        "call to recv",
    ]);
    if peer_died {
        d.push_str(
            " `Connection closed by remote peer`, a reset or a failed recv mostly means the \
             peer process died or aborted first: this rank is a victim.",
        );
    }
    if any(&["wrong type", "magic", "unexpected"]) {
        d.push_str(
            " `wrong type` (an unexpected handshake) means something else answered on the \
             port NCCL connected to: a rank of another job or NCCL version, or bootstrap and \
             socket interfaces that resolve to different networks on different nodes.",
        );
    }
    if !peer_died && !any(&["wrong type", "magic", "unexpected"]) {
        d.push_str(" The peer may have died, or the network dropped the connection.");
    }
    let fix = format!(
        "Look at the other ranks' logs for the first error (a crash, OOM or kill there \
         explains this one); make sure every node runs the same NCCL version; {}.",
        lowercase_first(IFNAME_FIX)
    );
    (d, fix)
}

fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn ib_error_text(lines: &[Line]) -> (String, String) {
    let mut d = String::from(
        "An InfiniBand/RoCE (ibverbs) operation failed: a port that is down or on another \
         fabric, a wrong GID index on RoCE, a memlock limit too low to register memory, or a \
         peer that went away.",
    );
    if lines.iter().any(|l| l.text.contains("error 12")) {
        d.push_str(
            " `error 12` is a transport retry timeout: the remote HCA did not answer (link \
             down, no route between the ports, or the peer died).",
        );
    }
    let fix = "Choose the HCAs explicitly with NCCL_IB_HCA (e.g. `NCCL_IB_HCA=mlx5_0,mlx5_1`; \
               check the ports with `ibstat` or `ibv_devinfo`), set NCCL_IB_GID_INDEX on RoCE \
               (often 3 for RoCEv2), run containers with `ulimit -l unlimited` and \
               /dev/infiniband; NCCL_IB_DISABLE=1 falls back to sockets (slower) and shows \
               whether IB is the problem."
        .to_string();
    (d, fix)
}

/// What a quoted CUDA error usually means.
pub fn cuda_hint(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    let hints: [(&[&str], &str); 7] = [
        (
            &["driver version is insufficient"],
            "the NVIDIA driver is older than the CUDA runtime NCCL was built with: update the \
             driver, or use an NCCL/PyTorch build for the driver's CUDA version",
        ),
        (
            &["no kernel image", "invalid device function"],
            "NCCL or the program was not compiled for this GPU's architecture: use a build \
             that includes it (a newer GPU needs a newer NCCL)",
        ),
        (
            &["invalid argument"],
            "at a kernel launch this usually means a build without support for this GPU's \
             architecture or a launch the GPU refuses: check that NCCL and the program are \
             built for this GPU",
        ),
        (
            &["out of memory"],
            "the GPU ran out of memory while NCCL allocated its buffers: free memory before \
             init, or lower NCCL_BUFFSIZE or NCCL_MAX_NCHANNELS",
        ),
        (
            &["illegal memory access", "misaligned address"],
            "a kernel touched invalid memory, often the application's (a buffer freed or too \
             small); NCCL reports it because it synchronises",
        ),
        (
            &[
                "no cuda-capable device",
                "initialization error",
                "not initialized",
            ],
            "the process sees no usable GPU: check CUDA_VISIBLE_DEVICES, the container's GPU \
             access (`--gpus`) and nvidia-smi",
        ),
        (
            &["peer access", "launch failure", "uncorrectable ecc"],
            "the GPU or the path between GPUs is in a bad state: check dmesg for Xid errors; \
             NCCL_P2P_DISABLE=1 shows whether peer-to-peer access is the cause",
        ),
    ];
    hints
        .iter()
        .find(|(keys, _)| keys.iter().any(|k| t.contains(k)))
        .map(|(_, hint)| *hint)
}

fn cuda_failure_text(failures: &[&Failure]) -> (String, String) {
    let mut d = String::from(
        "A CUDA call inside NCCL failed (`Cuda failure`, ncclUnhandledCudaError); the quoted \
         CUDA error says which.",
    );
    let mut hints: Vec<&str> = Vec::new();
    for f in failures {
        if let Some(h) = cuda_hint(&f.text) {
            if !hints.contains(&h) {
                hints.push(h);
            }
        }
    }
    if hints.is_empty() {
        d.push_str(
            " Common causes: a driver older than the CUDA runtime, a GPU architecture the \
             build lacks, out of memory, or a GPU in a bad state (Xid errors in dmesg).",
        );
    } else {
        for h in hints {
            let _ = write!(d, " Here: {h}.");
        }
    }
    let fix = "Check `nvidia-smi` and dmesg (Xid errors); match the driver, CUDA runtime and \
               NCCL versions; rerun with NCCL_DEBUG=INFO to see the call that failed."
        .to_string();
    (d, fix)
}

fn system_error_text(others: &[FindingKind]) -> (String, String) {
    let mut d = String::from(
        "`unhandled system error` (ncclSystemError): a system call or external library inside \
         NCCL failed. The message names no cause; usually it is a resource limit (/dev/shm \
         too small, `ulimit -l` for IB memory registration, open files) or a failed socket or \
         shm call, reported by an NCCL WARN line just before it in the failing rank's log.",
    );
    let specific: Vec<&str> = others
        .iter()
        .filter(|k| !matches!(k, FindingKind::RemoteError | FindingKind::SystemError))
        .map(|k| k.as_str())
        .collect();
    if !specific.is_empty() {
        let _ = write!(
            d,
            " Here the other finding(s) ({}) are the likely cause.",
            specific.join(", ")
        );
    }
    let fix = "Read the first NCCL WARN of the failing rank; if the log has none, rerun with \
               NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (and NCCL_DEBUG_FILE=nccl.%h.%p.log \
               for one file per process)."
        .to_string();
    (d, fix)
}

fn remote_error_text() -> (String, String) {
    (
        "`remote process exited or there was a network error` (ncclRemoteError): a peer died \
         or its connection dropped; the rank that reports it is usually a victim."
            .to_string(),
        "Look at the other ranks' logs first: the rank that failed first (OOM, CUDA error, \
         killed by the scheduler) holds the cause. If every rank was alive, check the network \
         (NCCL_SOCKET_IFNAME, IB ports)."
            .to_string(),
    )
}

fn other_error_text() -> (String, String) {
    (
        "NCCL reported an error (a WARN followed by an error return) this tool has no \
         diagnosis for; the WARN line says what failed."
            .to_string(),
        "Read the WARN line and the lines before it; rerun with NCCL_DEBUG=INFO \
         NCCL_DEBUG_SUBSYS=INIT,NET to see the failing call."
            .to_string(),
    )
}

// ---- Findings from the log as a whole ----

/// lo, docker0, virbr0 and the like: interfaces other hosts cannot reach.
pub fn is_virtual_interface(name: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "docker",
        "virbr",
        "veth",
        "br-",
        "cni",
        "flannel",
        "cali",
        "vxlan",
        "tailscale",
    ];
    name == "lo" || PREFIXES.iter().any(|p| name.starts_with(p))
}

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

// ---- Text ----

/// Width the text report wraps its prose at.
const WIDTH: usize = 100;

/// The report `nccl-bench explain` prints: sections NCCL, Ranks, Network, Transports (per
/// rank pair) and Findings. Plain text, no colors.
pub fn render_text(e: &Explanation) -> String {
    let mut out = String::new();
    out.push_str("NCCL\n");
    match e.versions.as_slice() {
        [] => out.push_str("  version: not in the log\n"),
        v => {
            let _ = writeln!(out, "  version: {}", v.join(", "));
        }
    }
    if !e.env.is_empty() {
        let env: Vec<String> = e.env.iter().map(|(n, v)| format!("{n}={v}")).collect();
        wrap_into(
            &mut out,
            &format!("set by environment: {}", env.join(" ")),
            "  ",
            "    ",
        );
    }

    out.push_str("\nRanks\n");
    if !e.nranks.is_empty() {
        let sizes: Vec<String> = e.nranks.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "  communicator size: {} ranks", sizes.join(", "));
    }
    if e.hosts.is_empty() {
        out.push_str("  no host or rank in the log\n");
    }
    for h in &e.hosts {
        let host = if h.host.is_empty() {
            "(no host prefix)"
        } else {
            h.host.as_str()
        };
        let plural = |word: &str, n: usize| {
            if n == 1 {
                word.to_string()
            } else {
                format!("{word}s")
            }
        };
        let mut parts = Vec::new();
        if !h.ranks.is_empty() {
            let label = plural("rank", h.ranks.len());
            parts.push(format!("{label} {}", ranges(&h.ranks)));
        }
        if !h.devices.is_empty() {
            let label = plural("GPU", h.devices.len());
            parts.push(format!("{label} {}", ranges(&h.devices)));
        }
        if !h.pids.is_empty() {
            let pids: Vec<String> = h.pids.iter().map(u32::to_string).collect();
            let label = plural("pid", h.pids.len());
            parts.push(format!("{label} {}", pids.join(", ")));
        }
        wrap_into(
            &mut out,
            &format!("{host}: {}", parts.join("; ")),
            "  ",
            "    ",
        );
    }

    out.push_str("\nNetwork\n");
    if e.networks.is_empty() && e.interfaces.is_empty() {
        out.push_str("  not in the log\n");
    }
    if !e.networks.is_empty() {
        let _ = writeln!(out, "  using network: {}", e.networks.join(", "));
    }
    for i in &e.interfaces {
        let names = if i.names.is_empty() {
            "none found".to_string()
        } else {
            i.names.join(", ")
        };
        let _ = writeln!(out, "  {} interfaces: {names}", i.source);
    }

    out.push_str("\nTransports (per rank pair)\n");
    if e.pairs.is_empty() {
        out.push_str("  no connection lines in the log\n");
    } else {
        let width = e
            .pairs
            .iter()
            .map(|p| format!("{} -> {}", p.from_rank, p.to_rank).len())
            .max()
            .unwrap_or(0);
        for p in &e.pairs {
            let pair = format!("{} -> {}", p.from_rank, p.to_rank);
            let transports: Vec<String> = p
                .transports
                .iter()
                .map(|t| format!("{} x{}", t.label, t.connections))
                .collect();
            let _ = writeln!(out, "  {pair:<width$}  {}", transports.join(", "));
        }
        let _ = writeln!(
            out,
            "  (xN: channel connections; all lines: {})",
            e.transports.replace(';', ", ")
        );
    }
    let nvls = match e.nvls {
        NvlsUse::Unknown => "not in the log",
        NvlsUse::NotAvailable => "not available",
        NvlsUse::Available => "available (not shown in use)",
        NvlsUse::Used => "used",
    };
    let _ = writeln!(out, "  NVLS: {nvls}");
    let collnet = if e.collnet { "used" } else { "not in the log" };
    let _ = writeln!(out, "  CollNet: {collnet}");

    out.push_str("\nFindings\n");
    if e.findings.is_empty() {
        out.push_str("  no known failure signature in the log\n");
    }
    for (i, f) in e.findings.iter().enumerate() {
        let times = if f.occurrences > 1 {
            format!(" ({} lines)", f.occurrences)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {}. [{}] {}{times}",
            i + 1,
            f.severity.as_str(),
            f.kind.title()
        );
        for line in &f.evidence {
            let _ = writeln!(out, "     > {line}");
        }
        if f.occurrences > f.evidence.len() {
            let _ = writeln!(out, "     > ... {} more", f.occurrences - f.evidence.len());
        }
        wrap_into(
            &mut out,
            &format!("Diagnosis: {}", f.diagnosis),
            "     ",
            "       ",
        );
        wrap_into(&mut out, &format!("Fix: {}", f.fix), "     ", "       ");
    }
    out
}

/// `0-3, 5, 7-8`.
pub fn ranges(values: &[u32]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    parts.join(", ")
}

/// `9637888` -> `9.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= GIB {
        format!("{:.1} GiB", b / GIB as f64)
    } else if b >= MIB {
        format!("{:.1} MiB", b / MIB)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Appends `text` wrapped at [`WIDTH`]: the first line after `first`, the others after
/// `rest`. Words longer than a line stay whole.
fn wrap_into(out: &mut String, text: &str, first: &str, rest: &str) {
    let mut line = String::from(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
