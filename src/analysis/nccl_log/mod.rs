//! The parser of `NCCL_DEBUG=INFO`/`WARN` logs. It owns the knowledge of NCCL's log
//! formats from 2.3 to 2.30 (`Ring`/`Channel` connection lines with bus ids or device
//! indices, every transport spelling, version, network, NVLS and CollNet lines, the
//! `Init COMPLETE` rank lines and the failure messages) and turns a log, or one log per
//! rank, into an [`NcclLog`]: which transports the connections used, in what share, and
//! the first failure worth a CSV cell. Parsing never fails: lines it does not know are
//! skipped. Pure apart from [`parse_files`] reading its files; nothing here prints.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use lines::{
    classify_plain, classify_transport, classify_warn, is_error_return, nvls_evidence,
    parse_connection, parse_env_setting, parse_init_line, parse_interfaces, shm_segment_size,
    split_tagged, strip_launcher_prefixes, ConnectionParts, Level,
};

mod lines;

mod connect;

use connect::connect_target;
pub use connect::ConnectRetry;

/// What one or more NCCL logs say about a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclLog {
    /// `NCCL version` values (e.g. `2.21.5+cuda12.4`), distinct, in order of appearance.
    pub versions: Vec<String>,
    /// `Using network` values (`Socket`, `IB`, `AWS Libfabric`...), distinct.
    pub networks: Vec<String>,
    /// Channel connections, each counted once (see [`Connection`]).
    pub connections: Vec<Connection>,
    pub nvls: NvlsUse,
    /// Whether CollNet connections were set up (`CollNet 00/0 : ...` or `Connected CollNet`).
    pub collnet: bool,
    pub ranks: Vec<RankInfo>,
    /// Failures in the order they occur in each file.
    pub failures: Vec<Failure>,
    /// Connects NCCL said it was retrying, in order (a start-up hang often shows only
    /// as these).
    #[serde(default)]
    pub connect_retries: Vec<ConnectRetry>,
    /// Every `NCCL WARN` line, trimmed, prefix included.
    pub warnings: Vec<String>,
    /// Lines naming the network interfaces NCCL uses (`NET/Socket : Using [0]eth0:...`,
    /// `NET/IB : Using ...`, `Bootstrap : Using ...`) or saying IB has none, in order.
    #[serde(default)]
    pub interfaces: Vec<InterfaceLine>,
    /// `NCCL_X set by environment to V` lines as (name, value), distinct, in order.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The processes named by `host:pid:tid [dev]` prefixes, in order of appearance.
    #[serde(default)]
    pub processes: Vec<ProcessInfo>,
    /// Lines that came from NCCL: those with an `NCCL INFO`/`WARN`/`TRACE` tag, plus
    /// untagged lines the parser took something from (NCCL 2.28 prints its version line
    /// untagged, and some posted logs have every prefix stripped).
    pub nccl_lines: usize,
}

/// One channel connection line, e.g. `Channel 02/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA`.
///
/// A connection is counted once per (host, pid, channel, connection index, from, to,
/// direction): the same line read twice (a log captured both in a file and on stdout)
/// counts once, while `Channel 00/0` and `Channel 00/1` are two connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    pub channel: u32,
    /// The `/1` of `Channel 00/1` (NCCL 2.12+); `None` in older formats.
    pub conn_index: Option<u32>,
    pub from_rank: u32,
    pub to_rank: u32,
    /// What the brackets after the rank hold: a hex bus id up to 2.18.1 (`89000`), a device
    /// index after (`3`); empty when the line has no brackets (2.4 and older, CollNet).
    pub from_dev: String,
    pub to_dev: String,
    pub transport: Transport,
    pub direction: Option<Direction>,
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// 1-based line number in the file it came from.
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Send,
    Receive,
}

/// A transport as named on a connection line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transport {
    pub kind: TransportKind,
    /// Normalised name used for shares: `SHM`, `P2P/CUMEM`, `P2P/IPC`, `P2P/direct`,
    /// `NET/Socket`, `NET/IB`, `COLLNET/SHARP`, `NVLS`...
    pub label: String,
    /// The text after `via`, as logged (`P2P/IPC/read`, `NET/IB/0/GDRDMA`).
    pub raw: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    P2p,
    Shm,
    Net,
    CollNet,
    Nvls,
    Other,
}

/// What the logs say about NVLink SHARP. Declared from weakest to strongest evidence, so
/// merging several ranks keeps the strongest (`max`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum NvlsUse {
    /// No NVLS line at all (NCCL before 2.17, or a log cut before init).
    #[default]
    Unknown,
    /// `NVLS multicast support is not available on dev N`.
    NotAvailable,
    /// `NVLS multicast support is available on dev N`, and nothing showed it set up.
    Available,
    /// NVLS channels were set up: `NVLS Head`, `NVLS comm ... headRank`, `Connected NVLS
    /// tree`, or `N nvls channels` with N > 0. The tuner may still pick another algorithm
    /// for some sizes.
    Used,
}

/// One rank of a communicator, from `comm 0x... rank 0 nranks 2 cudaDev 0 nvmlDev 2 busId
/// 4c000 commId 0x... - Init COMPLETE` (or `Init START` when init never completed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// Empty when the line carried no `host:pid:tid` prefix.
    pub host: String,
    /// 0 when the line carried no `host:pid:tid` prefix.
    pub pid: u32,
    pub rank: u32,
    pub nranks: u32,
    pub cuda_dev: Option<u32>,
    pub nvml_dev: Option<u32>,
    pub bus_id: Option<String>,
    /// The communicator pointer (`0x7fac840181a0`).
    pub comm: Option<String>,
    /// `commId` (NCCL 2.19+), the same on every rank of one communicator.
    pub comm_id: Option<String>,
    /// Whether `Init COMPLETE` was seen; false when only `Init START` was.
    pub init_complete: bool,
}

/// A line naming the network interfaces NCCL uses, or saying IB has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceLine {
    /// `NET/Socket`, `NET/IB` or `Bootstrap`.
    pub source: String,
    /// Interface names in NCCL's order (`eth0`, `mlx5_0:1`); empty for `NET/IB : No device
    /// found` and `Failed to open libibverbs.so`.
    pub names: Vec<String>,
    pub host: Option<String>,
    /// 1-based line number in the file it came from.
    pub line: usize,
    /// The message, trimmed.
    pub text: String,
}

/// A process seen in `host:pid:tid [dev]` prefixes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub host: String,
    pub pid: u32,
    /// The CUDA devices its lines named in `[dev]`, sorted, distinct.
    pub devices: Vec<u32>,
}

/// A failure message found in the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    /// 1-based line number in the file it came from.
    pub line: usize,
    /// The message: what follows `NCCL WARN`, or the whole line for non-NCCL lines.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// /dev/shm full: `posix_fallocate failed : No space left on device`, `failed to extend
    /// /dev/shm/nccl-X to N bytes`, `Error while creating shared memory segment`.
    ShmEnospc,
    /// `Error while attaching to shared memory segment ... No such file or directory`.
    ShmAttachEnoent,
    /// `Cuda failure ...` or `unhandled cuda error`.
    CudaFailure,
    /// `Connection refused`, or any failed `Connect to ... failed` (whatever the errno).
    ConnectionRefused,
    /// Any other socket error: closed by peer, recv failed, wrong handshake type...
    SocketError,
    /// `unhandled system error` (ncclSystemError as the application reports it).
    SystemError,
    /// `remote process exited or there was a network error` (ncclRemoteError).
    RemoteError,
    /// A `WARN` with another message that NCCL followed with an error return
    /// (`file.cc:NN -> N` from the same thread), or a shm error with another errno.
    Other,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::ShmEnospc => "shm-enospc",
            FailureKind::ShmAttachEnoent => "shm-attach-enoent",
            FailureKind::CudaFailure => "cuda-failure",
            FailureKind::ConnectionRefused => "connection-refused",
            FailureKind::SocketError => "socket-error",
            FailureKind::SystemError => "system-error",
            FailureKind::RemoteError => "remote-error",
            FailureKind::Other => "other",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Failure {
    /// The segment size a /dev/shm failure names (`(size 9637888)`, or `failed to extend
    /// ... to 9637892 bytes`); `None` when it names none.
    pub fn shm_segment_size(&self) -> Option<u64> {
        shm_segment_size(&self.text)
    }

    /// The peer a failed connect names: `Connect to 10.0.0.2<45763> failed` -> `10.0.0.2<45763>`.
    pub fn connect_target(&self) -> Option<&str> {
        connect_target(&self.text)
    }
}

/// Longest `error_cell` text kept, in characters.
const ERROR_CELL_MAX_CHARS: usize = 240;

impl NcclLog {
    /// Share of connections per transport label, sorted by share (descending) then label.
    /// Empty when there is no connection line.
    pub fn transport_shares(&self) -> Vec<(String, f64)> {
        let total = self.connections.len() as f64;
        self.label_counts()
            .into_iter()
            .map(|(label, n)| (label.to_string(), n as f64 / total))
            .collect()
    }

    /// The shares as one CSV cell, `SHM:75%;NET/Socket:25%`, in integer percents that sum
    /// to 100 (largest remainder; ties go to the larger share, then the label). `""` when
    /// there is no connection line.
    pub fn transports_cell(&self) -> String {
        let counts = self.label_counts();
        let total = self.connections.len();
        if total == 0 {
            return String::new();
        }
        let mut percents: Vec<usize> = counts.iter().map(|(_, n)| n * 100 / total).collect();
        let missing = 100 - percents.iter().sum::<usize>();
        let mut by_remainder: Vec<usize> = (0..counts.len()).collect();
        // Stable sort: equal remainders keep the share order.
        by_remainder.sort_by_key(|&i| std::cmp::Reverse(counts[i].1 * 100 % total));
        for &i in by_remainder.iter().take(missing) {
            percents[i] += 1;
        }
        counts
            .iter()
            .zip(percents)
            .map(|((label, _), pct)| format!("{label}:{pct}%"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// The first failure of a known kind (else the first `Other`), as one line for a CSV
    /// `error` column: `shm-enospc: Call to posix_fallocate failed : No space left on device`.
    pub fn error_cell(&self) -> Option<String> {
        let failure = self
            .failures
            .iter()
            .find(|f| f.kind != FailureKind::Other)
            .or_else(|| self.failures.first())?;
        let text: String = failure
            .text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let text = text.trim();
        let text = match text.char_indices().nth(ERROR_CELL_MAX_CHARS) {
            Some((cut, _)) => format!("{}...", &text[..cut]),
            None => text.to_string(),
        };
        Some(format!("{}: {text}", failure.kind))
    }

    /// Connections per label, sorted by count (descending) then label.
    fn label_counts(&self) -> Vec<(&str, usize)> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for c in &self.connections {
            *counts.entry(c.transport.label.as_str()).or_default() += 1;
        }
        let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
}

/// The `NCCL_DEBUG_FILE` value for logs named `<prefix>.<host>.<pid>.log`. NCCL
/// expands `%h`, `%p` and `%%` anywhere in the value, so a `%` of the path itself (a
/// `--out` directory named `50%`) is doubled to reach the file system as it is.
pub fn debug_file(prefix: &Path) -> String {
    format!("{}.%h.%p.log", prefix.to_string_lossy().replace('%', "%%"))
}

/// Parses one log. Never fails: unknown lines are ignored.
pub fn parse(text: &str) -> NcclLog {
    let mut parser = Parser::default();
    parser.feed(text);
    parser.log
}

/// Parses several files (typically one per rank, from `NCCL_DEBUG_FILE=...%h.%p`) into one
/// log; a connection logged in two files counts once. Invalid UTF-8 is replaced, not
/// rejected. Line numbers stay those of each file.
pub fn parse_files(paths: &[&Path]) -> io::Result<NcclLog> {
    let mut parser = Parser::default();
    for path in paths {
        let bytes = std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        parser.feed(&String::from_utf8_lossy(&bytes));
    }
    Ok(parser.log)
}

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
struct Parser {
    log: NcclLog,
    seen_connections: HashSet<ConnectionKey>,
    /// host -> pid -> index in `log.processes`.
    process_index: HashMap<String, HashMap<u32, usize>>,
}

impl Parser {
    fn feed(&mut self, text: &str) {
        let mut failures: Vec<Failure> = Vec::new();
        // Unknown WARNs waiting for an error-return line from the same thread.
        let mut pending: HashMap<ThreadKey, (usize, String)> = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
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
                    let kind = classify_warn(message);
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
        if let Some(rest) = message.strip_prefix("Using network ") {
            push_distinct(&mut self.log.networks, rest.trim());
            return true;
        }
        if let Some(parts) = parse_connection(message) {
            self.add_connection(parts, host, pid, number);
            return true;
        }
        if let Some(nvls) = nvls_evidence(message) {
            self.log.nvls = self.log.nvls.max(nvls);
            return true;
        }
        if let Some(retry) = connect::connect_retry(message, number) {
            self.log.connect_retries.push(retry);
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

fn push_distinct(list: &mut Vec<String>, value: &str) {
    if !value.is_empty() && !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

#[cfg(test)]
mod tests;
