//! `nccl-bench explain`: what an NCCL log says (versions, hosts, ranks and GPUs, the network,
//! the transport of every channel connection per rank pair) and what its failures mean, each
//! known failure signature with a diagnosis and a fix. Built on [`super::log`], the one
//! parser of NCCL logs; pure: nothing here reads files or prints.
//!
//! This module owns [`Explanation`] and [`explain`], which puts the parts together: the
//! host and rank-pair summaries (`summary`), the findings from failure lines (`failures`,
//! with their texts in `diagnosis`), the findings from the log as a whole (`rules`) and the
//! text report (`render`).

mod context;
mod diagnosis;
mod evidence;
mod failures;
mod finding;
mod memory;
mod render;
mod rules;
mod summary;

use std::collections::BTreeSet;

use serde::Serialize;

use super::log::{NcclLog, NvlsUse, ShmBacking};
use context::Context;
use failures::failure_findings;
use summary::{interface_summaries, tuning_summaries};

pub use finding::{Finding, FindingKind, Severity};

pub use diagnosis::cuda_hint;
pub use evidence::MAX_EVIDENCE;
pub use failures::{finding_kind_of, is_ib_error_text};
pub use render::render_text;
pub use rules::{
    connect_retries_rule, ib_unavailable_rule, shm_not_on_data_path_rule, socket_interface_rule,
};
pub use summary::{
    host_summaries, pair_summaries, HostSummary, InterfaceSummary, PairSummary, PairTransport,
    TuningSummary,
};

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
    /// Where SHM's buffers lived: cuMem host memory, /dev/shm files, or both.
    pub shm_backing: ShmBacking,
    pub collnet: bool,
    /// NCCL's algorithm and protocol per collective (`TUNING` lines), in order.
    pub tuning: Vec<TuningSummary>,
    /// The model's latency/bandwidth table rank 0 printed at initialization.
    pub tuning_table: Vec<String>,
    /// Errors first, then warnings, then notes; in order of appearance within each.
    pub findings: Vec<Finding>,
}

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
    findings.extend(memory::nvls_fallback_rule(log));
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
        shm_backing: log.shm_backing.clone(),
        collnet: log.collnet,
        tuning: tuning_summaries(log),
        tuning_table: log.tuning_table.clone(),
        findings,
    }
}

#[cfg(test)]
mod tests;
