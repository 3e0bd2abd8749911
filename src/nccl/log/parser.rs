//! The line-by-line reader behind [`super::parse`]: which message is which (through
//! `lines`), connections counted once across files, a `WARN` joined to the error-return
//! trail of its thread.

use std::collections::{HashMap, HashSet};

use crate::nccl::shm::DEFAULT_SHM_SEGMENT_BYTES;

use super::classify::{classify_plain, classify_warn};
use super::failure_text;
use super::lines::{
    classify_transport, is_error_return, nvls_evidence, parse_connection, parse_env_setting,
    parse_init_line, parse_interfaces, shm_backing_evidence, split_tagged, strip_launcher_prefixes,
    unquoted, ConnectionParts, Level, ShmEvidence,
};
use super::record::{
    Connection, Direction, Failure, FailureKind, InterfaceLine, NcclLog, NvlsUse, ProcessInfo,
    RankInfo, Teardown, TransportKind,
};

/// (host, pid, channel, connection index, from, to, direction).
type ConnectionKey = (
    Option<String>,
    Option<u32>,
    u32,
    Option<u32>,
    u32,
    u32,
    Option<Direction>,
);

/// (host, pid, tid): the thread a `WARN` and its error-return trail come from.
type ThreadKey = (String, u32, u32);

#[derive(Default)]
pub(super) struct Parser {
    pub(super) log: NcclLog,
    seen_connections: HashSet<ConnectionKey>,
    /// host -> pid -> index in `log.processes`.
    process_index: HashMap<String, HashMap<u32, usize>>,
}

impl Parser {
    pub(super) fn feed(&mut self, text: &str) {
        let mut failures: Vec<Failure> = Vec::new();
        // Unknown WARNs waiting for an error-return line from the same thread.
        let mut pending: HashMap<ThreadKey, (usize, String)> = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = unquoted(line);
            let trimmed = line.trim();
            // nccl-tests headers and results start with '#'; NCCL lines never do.
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some(tagged) = split_tagged(line) else {
                let message = strip_launcher_prefixes(line).trim();
                if self.read_message(message, None, None, number) {
                    self.log.nccl_lines += 1;
                }
                self.read_context(message, None, number);
                if let Some(kind) = classify_plain(message) {
                    failures.push(Failure {
                        kind,
                        line: number,
                        text: message.to_string(),
                    });
                }
                continue;
            };
            self.log.nccl_lines += 1;
            let message = tagged.message;
            if let (Some(host), Some(pid)) = (tagged.host, tagged.pid) {
                self.add_process(host, pid, tagged.dev);
            }
            let thread = match (tagged.host, tagged.pid, tagged.tid) {
                (Some(h), Some(p), Some(t)) => Some((h.to_string(), p, t)),
                _ => None,
            };
            match tagged.level {
                Level::Warn => {
                    self.log.warnings.push(trimmed.to_string());
                    let kind = classify_warn(message, tagged.source);
                    if let Some(kind) = kind {
                        failures.push(Failure {
                            kind,
                            line: number,
                            text: message.to_string(),
                        });
                    }
                    if let Some(thread) = thread {
                        match kind {
                            None => pending.insert(thread, (number, message.to_string())),
                            Some(_) => pending.remove(&thread),
                        };
                    }
                }
                Level::Info | Level::Trace => {
                    if let Some(thread) = thread.filter(|_| is_error_return(message)) {
                        if let Some((line, text)) = pending.remove(&thread) {
                            failures.push(Failure {
                                kind: FailureKind::Other,
                                line,
                                text,
                            });
                        }
                    }
                }
            }
            self.read_message(message, tagged.host, tagged.pid, number);
            self.read_context(message, tagged.host, number);
        }
        failures.sort_by_key(|f| f.line);
        for f in &failures {
            self.note_failure(f);
        }
        self.log.failures.extend(failures);
    }

    /// Takes what it knows from one message; returns whether it knew it.
    fn read_message(
        &mut self,
        message: &str,
        host: Option<&str>,
        pid: Option<u32>,
        number: usize,
    ) -> bool {
        if let Some(rest) = message.strip_prefix("NCCL version ") {
            let version = rest.split_whitespace().next().unwrap_or_default();
            push_distinct(&mut self.log.versions, version);
            return !version.is_empty();
        }
        // PyTorch ends its NCCL errors with `..., NCCL version 2.29.3`.
        if let Some((_, rest)) = message.split_once(", NCCL version ") {
            let version = rest.split_whitespace().next().unwrap_or_default();
            if crate::nccl::NcclVersion::parse(version).is_some() {
                push_distinct(&mut self.log.versions, version);
            }
        }
        if let Some(rest) = message.strip_prefix("cudaDriverVersion ") {
            self.log.driver_version = rest.trim().parse().ok().or(self.log.driver_version);
            return true;
        }
        if let Some(name) = plugin_name(message) {
            push_distinct(&mut self.log.plugins, name);
            if let Some(host) = host.filter(|h| !h.is_empty()) {
                let pair = (host.to_string(), name.to_string());
                if !self.log.host_plugins.contains(&pair) {
                    self.log.host_plugins.push(pair);
                }
            }
            return true;
        }
        if let Some((rank, nranks, how, comm)) = teardown(message) {
            self.log.teardowns.push(Teardown {
                host: host.map(str::to_string),
                pid,
                rank,
                nranks,
                how: how.to_string(),
                comm,
                line: number,
            });
            return true;
        }
        if let Some(n) = nnodes(message) {
            if !self.log.nnodes.contains(&n) {
                self.log.nnodes.push(n);
            }
            self.log.mnnvl |= message.contains(" MNNVL 1");
        }
        // NCCL 2.3 says `Using internal Network Socket` (or `external` for a plugin).
        let network = [
            "Using network ",
            "Using internal Network ",
            "Using external Network ",
        ]
        .iter()
        .find_map(|p| message.strip_prefix(p));
        if let Some(rest) = network {
            push_distinct(&mut self.log.networks, rest.trim());
            return true;
        }
        if let Some(parts) = parse_connection(message) {
            self.add_connection(parts, host, pid, number);
            return true;
        }
        if let Some(nvls) = nvls_evidence(message) {
            self.log.nvls = self.log.nvls.max(nvls);
            if nvls == NvlsUse::Failed && self.log.nvls_failure.is_none() {
                self.log.nvls_failure = Some(message.to_string());
            }
            return true;
        }
        if let Some(backing) = shm_backing_evidence(message) {
            let b = &mut self.log.shm_backing;
            match backing {
                ShmEvidence::CumemHost => b.cumem_host += 1,
                ShmEvidence::DevShm => b.dev_shm += 1,
                ShmEvidence::Fallback => {
                    b.fallback_line.get_or_insert(number);
                }
            }
            return true;
        }
        if let Some(retry) = failure_text::connect_retry(message, number) {
            self.log.connect_retries.push(retry);
            return true;
        }
        if let Some(choice) = crate::nccl::tuning::parse_choice(message) {
            self.log.choices.push(choice);
            return true;
        }
        if let Some(call) = super::calls::parse_coll_line(message) {
            self.log.calls.push(call);
            return true;
        }
        if crate::nccl::tuning::is_table_line(message) {
            self.log.tuning_table.push(message.to_string());
            return true;
        }
        if message.ends_with("Connected CollNet") {
            self.log.collnet = true;
            return true;
        }
        if let Some(rank) = parse_init_line(message, host, pid) {
            self.add_rank(rank);
            return true;
        }
        false
    }

    /// Takes the interface and environment lines: context for a diagnosis, not counted as
    /// NCCL lines on their own (an untagged `NET/IB : Using` line does not make a log).
    fn read_context(&mut self, message: &str, host: Option<&str>, number: usize) {
        if let Some(parts) = parse_interfaces(message) {
            self.log.interfaces.push(InterfaceLine {
                source: parts.source.to_string(),
                names: parts.names.iter().map(|n| n.to_string()).collect(),
                host: host.map(str::to_string),
                line: number,
                text: message.to_string(),
            });
        } else if let Some((name, value)) = parse_env_setting(message) {
            let known = self.log.env.iter().any(|(n, v)| n == name && v == value);
            if !known {
                self.log.env.push((name.to_string(), value.to_string()));
            }
        }
    }

    /// What a failure says beyond itself: an attach of a cuMem handle shows both
    /// backings, a /dev/shm segment of the SHM transport's default size (9,637,888 B, or
    /// the sender's 4,096 B; +4 B in the extend line) /dev/shm, a failed multicast bind
    /// NVLS not set up. Other /dev/shm segments (the proxy's ops pool, NVLS's) stay on
    /// /dev/shm whatever SHM uses.
    fn note_failure(&mut self, failure: &Failure) {
        let b = &mut self.log.shm_backing;
        let shm_sizes = [
            DEFAULT_SHM_SEGMENT_BYTES,
            DEFAULT_SHM_SEGMENT_BYTES + 4,
            4096,
            4100,
        ];
        match failure.kind {
            FailureKind::ShmEnospc | FailureKind::ShmAttachEnoent
                if failure
                    .shm_segment_size()
                    .is_some_and(|s| shm_sizes.contains(&s)) =>
            {
                b.dev_shm += 1
            }
            FailureKind::ShmCumemMismatch => {
                b.dev_shm += 1;
                b.cumem_host += 1;
            }
            FailureKind::NvlsBind => {
                self.log.nvls = NvlsUse::Failed;
                self.log
                    .nvls_failure
                    .get_or_insert_with(|| failure.text.clone());
            }
            _ => {}
        }
    }

    fn add_process(&mut self, host: &str, pid: u32, dev: Option<u32>) {
        let index = match self.process_index.get(host).and_then(|p| p.get(&pid)) {
            Some(&index) => index,
            None => {
                self.log.processes.push(ProcessInfo {
                    host: host.to_string(),
                    pid,
                    devices: Vec::new(),
                });
                let index = self.log.processes.len() - 1;
                self.process_index
                    .entry(host.to_string())
                    .or_default()
                    .insert(pid, index);
                index
            }
        };
        if let Some(dev) = dev {
            let devices = &mut self.log.processes[index].devices;
            if let Err(at) = devices.binary_search(&dev) {
                devices.insert(at, dev);
            }
        }
    }

    fn add_connection(
        &mut self,
        parts: ConnectionParts<'_>,
        host: Option<&str>,
        pid: Option<u32>,
        number: usize,
    ) {
        let host = host.map(str::to_string);
        let key = (
            host.clone(),
            pid,
            parts.channel,
            parts.conn_index,
            parts.from_rank,
            parts.to_rank,
            parts.direction,
        );
        if !self.seen_connections.insert(key) {
            return;
        }
        let transport = classify_transport(parts.via);
        self.log.collnet |= transport.kind == TransportKind::CollNet;
        self.log.connections.push(Connection {
            channel: parts.channel,
            conn_index: parts.conn_index,
            from_rank: parts.from_rank,
            to_rank: parts.to_rank,
            from_dev: parts.from_dev.to_string(),
            to_dev: parts.to_dev.to_string(),
            transport,
            direction: parts.direction,
            host,
            pid,
            line: number,
        });
    }

    /// Adds a rank, or completes the one an `Init START` line added.
    fn add_rank(&mut self, rank: RankInfo) {
        let same = |r: &&mut RankInfo| {
            r.host == rank.host && r.pid == rank.pid && r.comm == rank.comm && r.rank == rank.rank
        };
        match self.log.ranks.iter_mut().find(same) {
            Some(known) => {
                known.init_complete |= rank.init_complete;
                known.cuda_dev = known.cuda_dev.or(rank.cuda_dev);
                known.nvml_dev = known.nvml_dev.or(rank.nvml_dev);
                known.bus_id = known.bus_id.take().or(rank.bus_id);
                known.comm_id = known.comm_id.take().or(rank.comm_id);
            }
            None => self.log.ranks.push(rank),
        }
    }
}

/// The plugin a `NET/Plugin: Loaded net plugin FastSocket (v4)`, `P2P plugin IBext_v8`
/// or `Plugin Path : /opt/hpcx/.../libnccl-net.so` line names; `internal` for the lines
/// saying none was found (`Could not find: libnccl-net.so. Using internal network
/// plugin.`, `No plugin found (libnccl-net.so), using internal implementation`).
fn plugin_name(message: &str) -> Option<&str> {
    if message.contains("NET/Plugin")
        && (message.contains("Using internal") || message.contains("using internal"))
    {
        return Some("internal");
    }
    let rest = [
        "Loaded net plugin ",
        "Loaded coll plugin ",
        "P2P plugin ",
        "Plugin Path : ",
    ]
    .iter()
    .find_map(|k| message.find(k).map(|at| &message[at + k.len()..]))?;
    let name = rest.split(" (").next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// (rank, nranks, `Abort` or `Destroy`, the `comm 0x...` pointer) of a line that ends a communicator's teardown:
/// `comm 0x7f00 rank 0 nranks 4 cudaDev 0 busId 6000 - Abort COMPLETE`.
fn teardown(message: &str) -> Option<(u32, u32, &'static str, Option<String>)> {
    let how = ["Abort", "Destroy"]
        .into_iter()
        .find(|h| message.ends_with(&format!("- {h} COMPLETE")))?;
    let words: Vec<&str> = message.split_whitespace().collect();
    let word = |key: &str| -> Option<&str> {
        let at = words.iter().position(|w| *w == key)?;
        words.get(at + 1).copied()
    };
    let number = |key: &str| -> Option<u32> { word(key)?.parse().ok() };
    let comm = word("comm").map(str::to_string);
    Some((number("rank")?, number("nranks")?, how, comm))
}

/// `nNodes N` of a topology line (`comm 0x.. rank 2 nRanks 3 nNodes 3 localRanks 1`).
fn nnodes(message: &str) -> Option<u32> {
    let rest = &message[message.find(" nNodes ")? + " nNodes ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

fn push_distinct(list: &mut Vec<String>, value: &str) {
    if !value.is_empty() && !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}
