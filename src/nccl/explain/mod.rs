//! `nccl-bench explain`: what pasted NCCL logs, PyTorch errors and nccl-tests outputs
//! say, findings first: each with the cause, the lines that show it, the fix, what would
//! be wrong to do and where that knowledge comes from (`nccl::knowledge`). Then what the
//! log shows (versions, hosts, ranks and GPUs, the network, the transport of every
//! channel connection per rank pair). Built on [`super::log`], the one parser of NCCL
//! logs; pure: nothing here reads files or prints.
//!
//! [`explain_inputs`] puts the parts together: findings raised by their lines alone
//! (`signatures`), rules across lines (`reason`, `ib`, `ofi`, `torch`, `tests_output`,
//! `ranks`, `mpi`), findings from the parser's failure lines (`failures`, texts in `diagnosis`
//! and `memory`), and from the log as a whole (`rules`); [`explain`] is the part a log
//! alone gives (a sweep's own logs). `render` prints it.

mod bootstrap;
mod builds;
mod busy;
mod consequences;
mod context;
mod diagnosis;
mod evidence;
mod failures;
mod finding;
mod first;
mod hosts;
mod ib;
mod lists;
mod memory;
mod mpi;
mod names;
mod ofi;
mod pasted;
mod ranks;
mod reason;
mod render;
mod rules;
mod settings;
mod signatures;
mod summary;
mod teardown;
mod tests_output;
mod torch;
mod versions;

use std::collections::BTreeSet;

use serde::Serialize;

use super::log::{NcclLog, NvlsUse, ShmBacking};
use super::{knowledge, NcclVersion};
use context::Context;
use failures::failure_findings;
use signatures::Placed;
use summary::{interface_summaries, tuning_summaries};

pub use finding::{Finding, FindingKind, Severity};

pub use diagnosis::cuda_hint;
pub use evidence::MAX_EVIDENCE;
pub use failures::{finding_kind_of, is_ib_error_text};
pub use pasted::Input;
pub use render::render_text;
pub use rules::{
    connect_retries_rule, ib_unavailable_rule, shm_not_on_data_path_rule, socket_interface_rule,
};
pub use summary::{
    host_summaries, pair_summaries, HostSummary, InterfaceSummary, PairSummary, PairTransport,
    TuningSummary,
};

/// What one or more pasted texts say, ready to print.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The files read, in order.
    pub inputs: Vec<String>,
    /// Errors first, then warnings, then notes; causes before what follows from them,
    /// in order of appearance within each.
    pub findings: Vec<Finding>,
    /// WARN and error lines no finding placed.
    pub unplaced: Vec<String>,
    /// What to collect next, where the text does not show enough.
    pub collect: Option<String>,
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
}

impl Explanation {
    /// Whether a finding is an error (explain's exit code 1).
    pub fn has_error(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// Whether the parser found anything NCCL-like: tagged lines, lines it recognised, or
/// NCCL's error strings as an application prints them (a PyTorch traceback).
pub fn is_nccl_log(log: &NcclLog) -> bool {
    log.nccl_lines > 0 || !log.failures.is_empty()
}

/// Words that make a text one explain reads: NCCL's, PyTorch distributed's, nccl-tests',
/// the launchers' and CUDA's.
const MARKERS: &[&str] = &[
    "nccl",
    "processgroup",
    "torch.distributed",
    "c10d",
    "watchdog",
    "tcpstore",
    "gloo",
    "all_reduce_perf",
    "avg bus bandwidth",
    "out of bounds values",
    "using devices",
    "nthread",
    "cuda error",
    "cuda capability",
    // An NCCL algorithm's name: a paste of its figures is about NCCL.
    "nvlstree",
    "no kernel image",
    "cuda failure",
    "mpirun",
    "srun",
    "/dev/shm",
    "net/ofi",
    "fi_getinfo",
    "fi_info",
    "libfabric",
    "childfailederror",
    "root cause (first observed failure)",
    "process received signal",
    "ibv_",
    // Connection lines with NCCL's `Channel 00/0 :` cut off.
    "] via net/",
    "] via p2p",
    "] via shm",
    // The Fabric Manager's own log (NVLS multicast teams).
    "multicast team",
    // NCCL's socket functions, as their warnings name them.
    "socketstartconnect",
    "socketpollconnect",
    "socketprogressopt",
    "socketfinalizeaccept",
];

/// Whether the inputs hold anything explain can read: an NCCL log, a PyTorch
/// distributed error, an nccl-tests output, a launcher's or CUDA's error, or a line
/// that alone raises a finding of findings.toml (NCCL's `Duplicate GPU detected`
/// quoted by itself).
pub fn is_explainable(inputs: &[Input]) -> bool {
    // Signatures that stand on one line alone (no `with` or line count; an `unless`
    // chooses between readings of a text explain reads either way).
    let signatures: Vec<Vec<String>> = knowledge::get()
        .findings
        .iter()
        .filter(|f| f.with.is_empty() && f.min_lines <= 1)
        .flat_map(|f| f.lines.iter())
        .map(|alt| alt.iter().map(|s| s.to_ascii_lowercase()).collect())
        .collect();
    inputs.iter().any(|i| {
        let t = i.text.to_ascii_lowercase();
        MARKERS.iter().any(|m| t.contains(m))
            || i.text.lines().any(old_warn)
            || i.text.lines().any(tests_output::is_row)
            || t.lines().any(|l| {
                signatures
                    .iter()
                    .any(|alt| alt.iter().all(|s| l.contains(s.as_str())))
            })
    })
}

/// NCCL 2.4 and older: `include/socket.h:311 WARN ...`, with no `NCCL` tag.
fn old_warn(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).any(|w| {
        w[1] == "WARN"
            && w[0].rsplit_once(':').is_some_and(|(file, n)| {
                (file.ends_with(".cc") || file.ends_with(".cu") || file.ends_with(".h"))
                    && !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
            })
    })
}

/// What the user says about the run beyond the text: variables they set.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--env NAME=VALUE`: checked against what each rank's log shows.
    pub env: Vec<(String, String)>,
}

/// Explains a parsed log alone (a sweep's own NCCL logs). Never fails: what the log does
/// not show is left empty.
pub fn explain(log: &NcclLog) -> Explanation {
    build(log, None, &Options::default(), &[])
}

/// Explains pasted texts: each input one file (one rank's log, or everything pasted
/// together).
pub fn explain_inputs(inputs: &[Input], options: &Options) -> Explanation {
    let texts: Vec<&str> = inputs.iter().map(|i| i.text).collect();
    let log = super::log::parse_all(&texts);
    let pasted = pasted::Pasted::new(inputs);
    let mut e = build(&log, Some(&pasted), options, inputs);
    e.inputs = inputs.iter().map(|i| i.name.to_string()).collect();
    e
}

fn build(
    log: &NcclLog,
    pasted: Option<&pasted::Pasted>,
    options: &Options,
    inputs: &[Input],
) -> Explanation {
    let hosts = host_summaries(log);
    let context = Context::new(log, &hosts);
    let version = log
        .versions
        .first()
        .and_then(|v| NcclVersion::parse(v))
        .or_else(|| pasted.and_then(versions::wrapped_version))
        .or_else(|| pasted.and_then(versions::build_string).map(|(v, _)| v))
        .or_else(|| pasted.and_then(versions::prose_version));
    // Findings that place lines come first, so that no generic finding repeats them.
    let mut placed: Vec<Placed> = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    if let Some(p) = pasted {
        placed.extend(reason::ifname_rule(log, p));
        placed.extend(bootstrap::bootstrap_rule(log, p, context.multi_node));
        placed.extend(reason::topology_file_rule(log, p));
        placed.extend(ib::completion_findings(p));
        placed.extend(ib::untagged_memlock_rule(p));
        placed.extend(ofi::libfabric_too_old_rule(p));
        placed.extend(torch::torch_findings(p));
        placed.extend(reason::invalid_device_ordinal_rule(p));
        // The build as the log names it (`2.19.3+cuda11.0`), else the version.
        let shown = log
            .versions
            .first()
            .cloned()
            .or_else(|| versions::build_string(p).map(|(v, cuda)| format!("{v}+cuda{cuda}")))
            .or_else(|| version.map(|v| v.to_string()));
        let lines = signatures::line_findings(p, shown.as_deref());
        // A line rule whose lines another rule already placed says nothing new.
        for l in lines {
            let taken = l
                .lines
                .iter()
                .all(|at| placed.iter().any(|p| p.lines.contains(at)));
            if !taken || l.lines.is_empty() {
                placed.push(l);
            }
        }
        placed.extend(reason::crash_rule(p));
    }
    // (line number, text) of every placed line; a failure is placed where one line has
    // its number and holds its text (line numbers restart in each file).
    let placed_lines: Vec<(usize, String)> = match pasted {
        Some(p) => placed
            .iter()
            .flat_map(|x| x.lines.iter())
            .filter_map(|&(file, number)| {
                p.lines
                    .iter()
                    .find(|l| l.file == file && l.number == number)
                    .map(|l| (number, l.text.to_string()))
            })
            .collect(),
        None => Vec::new(),
    };
    let is_placed = |number: Option<usize>, text: &str| {
        let t = text.trim();
        !t.is_empty()
            && placed_lines
                .iter()
                .any(|(n, p)| number.is_none_or(|m| m == *n) && p.contains(t))
    };
    findings.extend(placed.into_iter().map(|p| p.finding));
    let mut from_failures = failure_findings(log, &context, &is_placed);
    if let Some(p) = pasted {
        let (arch, first) = versions::arch_words(p);
        for f in from_failures
            .iter_mut()
            .filter(|f| f.kind == FindingKind::NcclLacksArch)
        {
            *f = Finding::new(
                FindingKind::NcclLacksArch,
                f.evidence.clone(),
                &[
                    ("text", f.evidence.first().cloned().unwrap_or_default()),
                    ("arch", arch.clone()),
                    ("first", first.clone()),
                ],
            )
            .with_occurrences(f.occurrences);
        }
    }
    if let Some(p) = pasted {
        let words = versions::driver_words(log, p);
        for f in from_failures
            .iter_mut()
            .filter(|f| f.kind == FindingKind::DriverTooOld)
        {
            *f = Finding::new(
                FindingKind::DriverTooOld,
                f.evidence.clone(),
                &[("versions", words.clone())],
            )
            .with_occurrences(f.occurrences);
        }
    }
    findings.extend(from_failures);
    let has_ib_error = findings.iter().any(|f| {
        matches!(
            f.kind,
            FindingKind::IbError | FindingKind::IbCompletion | FindingKind::IbMemlock
        )
    });
    let has_ifname = findings
        .iter()
        .any(|f| f.kind == FindingKind::IfnameNoMatch);
    // Traffic between nodes: not between hosts NCCL joined over multi-node NVLink.
    let network = context.multi_node && !context.one_nvlink_domain;
    // Hosts joined over NVLink have bootstrapped (NCCL's `MNNVL 1` line comes after
    // it), and send no data over NET.
    if !has_ifname && !context.one_nvlink_domain {
        // What the user says they set counts as what the log shows.
        let env: Vec<(String, String)> = log.env.iter().chain(&options.env).cloned().collect();
        findings.extend(rules::socket_interface_rule(
            &log.interfaces,
            &env,
            context.multi_node,
        ));
    }
    if !has_ib_error {
        // NCCL_IB_* set with no device to act on says more than no device alone.
        let settings =
            pasted.and_then(|p| ib::ib_settings_without_device_rule(p, log, &options.env));
        // The OFI plugin is the network (EFA is not InfiniBand): its own finding says
        // whether it started.
        let ofi = pasted.is_some_and(|p| p.contains("net/ofi"));
        let unavailable = (settings.is_none() && !ofi)
            .then(|| rules::ib_unavailable_rule(log, network))
            .flatten();
        // One finding says that traffic between nodes goes over sockets.
        let without_port = match (pasted, &unavailable, &settings) {
            (Some(p), None, None) => ib::ib_without_port_rule(p, log, network, &options.env),
            _ => None,
        };
        findings.extend(unavailable);
        findings.extend(settings);
        findings.extend(without_port);
    }
    findings.extend(memory::nvls_fallback_rule(log));
    let inside = reason::net_inside_node_rule(log);
    if inside.is_none() {
        findings.extend(rules::shm_not_on_data_path_rule(log));
        findings.extend(rules::shm_instead_of_p2p_rule(log));
    }
    findings.extend(inside);
    findings.extend(rules::connect_retries_rule(log));
    if let Some(identity) = hosts::host_identity_rule(log) {
        // CUDA IPC that failed between ranks NCCL took for one host follows from that.
        if hosts::ipc_failed(log) {
            for f in findings.iter_mut().filter(|f| {
                f.kind == FindingKind::CudaFailure
                    && f.evidence.iter().any(|e| e.contains("CUDA IPC handle"))
            }) {
                consequences::follow(f, identity.kind.as_str());
            }
        }
        findings.push(identity);
    }
    findings.extend(hosts::same_address_rule(log));
    findings.extend(hosts::link_local_rule(log, context.multi_node));
    findings.extend(hosts::gdr_differs_rule(log));
    findings.extend(hosts::nodes_rule(log));
    if let Some(p) = pasted {
        findings.extend(hosts::topology_nvlink_rule(log, p));
        findings.extend(builds::nccl_builds_rule(p, version));
        findings.extend(versions::init_kernels_rule(p));
        findings.extend(ib::gdr_unused_rule(log, p));
        findings.extend(ib::gid_selection_rule(log, p));
        let has_error = findings.iter().any(|f| f.severity == Severity::Error);
        let one_rank = reason::one_rank_jobs(log, p);
        let tests = tests_output::tests_findings(p, has_error, log.driver_version, version);
        findings.extend(
            tests
                .into_iter()
                .map(|t| t.finding)
                .filter(|f| one_rank.is_none() || f.kind != FindingKind::SeparateJobs),
        );
        findings.extend(one_rank);
        let pasted_build = versions::build_string(p).map(|(_, c)| c);
        let build_cuda = log
            .versions
            .iter()
            .find_map(|v| v.split_once("+cuda").map(|(_, c)| c))
            .or(pasted_build.as_deref());
        let too_old = versions::arch_rule(version, build_cuda, p);
        if too_old.is_none() {
            findings.extend(versions::new_arch_fault_rule(version, p, log));
        }
        findings.extend(too_old);
        // A variable is set where `--env` names it, NCCL shows it or the paste sets it.
        let is_set = |name: &str| {
            options.env.iter().any(|(n, _)| n == name) || reason::setting(log, p, name).is_some()
        };
        findings.extend(versions::bug_findings(version, p, &is_set));
        findings.extend(settings::env_findings(log, p, &options.env));
        findings.extend(lists::prefix_inside_rule(log, p, &options.env));
        let across = ranks::across_files(inputs);
        if !across.iter().any(|f| f.kind == FindingKind::PluginsDiffer) {
            findings.extend(ranks::plugins_across_hosts(log));
        }
        findings.extend(across);
        findings.extend(ranks::per_rank_script(p));
        findings.extend(ranks::mpirun_prefix_rule(p, log));
        findings.extend(mpi::mpi_hangs_rule(p, log));
        findings.extend(mpi::mpi_launch_hangs_rule(p, log));
        findings.extend(ib::net_socket_forced_rule(p, log, &options.env));
        findings.extend(first::first_to_fail(p));
        findings.extend(teardown::some_ranks_rule(log, p));
        findings.extend(names::name_rule(p));
        // One finding of a bridge address: NCCL's own connect says it already.
        if !findings
            .iter()
            .any(|f| f.kind == FindingKind::DockerBridgeAddress)
        {
            findings.extend(names::c10d_bridge_rule(p, context.multi_node));
        }
    }
    if let Some(p) = pasted.filter(|_| !findings.iter().any(|f| f.severity == Severity::Error)) {
        findings.extend(memory::nvls_stops_rule(p));
    }
    // A note (severity info) does not explain a log that stops.
    if findings.iter().all(|f| f.severity == Severity::Info) {
        // On more than two NVSwitch GPUs of one host, NVLS set-up is where it stops.
        let nvls = pasted.and_then(|p| memory::nvls_init_stops(log, p));
        findings.extend(rules::init_stops_rule(log).map(|f| nvls.unwrap_or(f)));
        findings.extend(pasted.and_then(|p| rules::stalls_after_init_rule(log, p)));
    }
    // Beside an error, GPUDirect left unused is a note, not the cause.
    if findings.iter().any(|f| f.severity == Severity::Error) {
        for f in findings
            .iter_mut()
            .filter(|f| f.kind == FindingKind::GdrUnused)
        {
            f.severity = Severity::Info;
        }
    }
    consequences::mark_consequences(&mut findings);
    // Stable: the order of appearance survives within a severity.
    findings.sort_by_key(|f| (f.severity, f.follows.is_some()));
    let unplaced = unplaced_lines(log, &findings);
    let unknown = findings.iter().any(|f| f.kind == FindingKind::OtherError);
    let has_error = findings.iter().any(|f| f.severity == Severity::Error);
    // An error NCCL returned, pasted without NCCL's own lines: its cause is in them.
    let without_log = pasted.is_some_and(|p| !p.contains("nccl info") && !p.contains("nccl warn"))
        && findings.iter().any(|f| {
            matches!(
                f.kind,
                FindingKind::RemoteError
                    | FindingKind::SystemError
                    | FindingKind::TorchTimeout
                    | FindingKind::TorchChildFailed
                    | FindingKind::TorchWatchdogStuck
            )
        });
    let collect =
        (findings.is_empty() || unknown || without_log || (!has_error && !unplaced.is_empty()))
            .then(|| COLLECT.to_string());
    let nranks: BTreeSet<u32> = log.ranks.iter().map(|r| r.nranks).collect();
    Explanation {
        inputs: Vec::new(),
        findings,
        unplaced,
        collect,
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
    }
}

/// What to collect when the text does not show enough.
const COLLECT: &str = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV \
                       NCCL_DEBUG_FILE=nccl.%h.%p.log (one file per rank) and give explain every \
                       rank's file; under PyTorch add TORCH_NCCL_TRACE_BUFFER_SIZE=2000 \
                       TORCH_NCCL_DUMP_ON_TIMEOUT=1 (the Flight Recorder).";

/// The WARN lines of the log that no finding's evidence holds.
fn unplaced_lines(log: &NcclLog, findings: &[Finding]) -> Vec<String> {
    log.warnings
        .iter()
        .filter(|w| {
            let m = pasted::message(w);
            // Evidence cut at its length holds the start of a long message only.
            let start = m.char_indices().nth(80).map_or(m, |(i, _)| &m[..i]);
            !findings.iter().any(|f| {
                f.evidence
                    .iter()
                    .any(|e| e.contains(m) || (e.ends_with("...") && e.contains(start)))
            })
        })
        .take(5)
        .map(|w| pasted::cut(w))
        .collect()
}

#[cfg(test)]
mod tests;
