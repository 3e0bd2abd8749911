//! `nccl-bench explain`: what an NCCL log says (versions, hosts, ranks and GPUs, the network,
//! the transport of every channel connection per rank pair) and what its failures mean, each
//! known failure signature with a diagnosis and a fix. Built on [`super::nccl_log`], the one
//! parser of NCCL logs; pure: nothing here reads files or prints.
//!
//! This module owns the result types and [`explain`], which puts the parts together: the
//! host and rank-pair summaries (`summary`), the findings from failure lines (`failures`,
//! with their texts in `diagnosis`), the findings from the log as a whole (`rules`) and the
//! text report (`render`).

mod context;
mod diagnosis;
mod evidence;
mod failures;
mod render;
mod rules;
mod summary;

use std::collections::BTreeSet;

use serde::Serialize;

use super::nccl_log::{NcclLog, NvlsUse, TransportKind};
use context::Context;
use failures::failure_findings;
use summary::interface_summaries;

pub use diagnosis::{
    cuda_hint, shm_estimate, shm_size_gib, ShmEstimate, DEFAULT_SHM_SEGMENT_BYTES,
};
pub use evidence::MAX_EVIDENCE;
pub use failures::{finding_kind_of, is_ib_error_text};
pub use render::render_text;
pub use rules::{
    connect_retries_rule, ib_unavailable_rule, is_virtual_interface, shm_not_on_data_path_rule,
    socket_interface_rule,
};
pub use summary::{host_summaries, pair_summaries};

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
    /// NCCL kept retrying a connect: the hang at start-up that shows only as retries.
    SocketConnectRetries,
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
            FindingKind::SocketConnectRetries => "socket-connect-retries",
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
            FindingKind::SocketConnectRetries => "connections to a peer kept being retried",
        }
    }
}

/// Bytes in a GiB: `--shm-size` advice and byte sizes in the report.
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
    findings.extend(connect_retries_rule(log));
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

#[cfg(test)]
mod tests;
