//! What a parsed NCCL log holds: the connections with their transports, the ranks and
//! processes, the interface and environment lines, and the failures, with the few
//! summaries built on them (transport shares, the `transports` and `error` cells).

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::failure_text::ConnectRetry;
use super::failure_text::{connect_target, shm_segment_size};

/// What one or more NCCL logs say about a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclLog {
    /// `NCCL version` values (e.g. `2.21.5+cuda12.4`), distinct, in order of appearance.
    pub versions: Vec<String>,
    /// `Using network` values (`Socket`, `IB`, `AWS Libfabric`...), distinct.
    pub networks: Vec<String>,
    /// Channel connections, each counted once (see [`Connection`]).
    pub connections: Vec<Connection>,
    pub nvls: NvlsUse,
    /// The message of the first failed NVLS multicast bind (`Failed` above): a WARN that
    /// failed the communicator, or 2.27-2.28's INFO that went on without NVLS.
    #[serde(default)]
    pub nvls_failure: Option<String>,
    /// Where the SHM transport's buffers lived (cuMem host memory or /dev/shm files).
    #[serde(default)]
    pub shm_backing: ShmBacking,
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
    /// Tuning decisions (`NCCL_DEBUG_SUBSYS=TUNING`, rank 0), in order.
    #[serde(default)]
    pub choices: Vec<crate::nccl::tuning::Choice>,
    /// Collective calls (`NCCL_DEBUG_SUBSYS=COLL`, every rank), in order.
    #[serde(default)]
    pub calls: Vec<super::CollCall>,
    /// The model's latency/bandwidth table rank 0 prints at initialization, as printed.
    #[serde(default)]
    pub tuning_table: Vec<String>,
    /// The CUDA version the driver supports, as NCCL prints it (`cudaDriverVersion 12020`).
    #[serde(default)]
    pub driver_version: Option<u32>,
    /// Network plugins NCCL loaded (`Loaded net plugin FastSocket (v4)`, `P2P plugin
    /// IBext_v8`), distinct, in order.
    #[serde(default)]
    pub plugins: Vec<String>,
    /// The same per host, as (host, plugin) from lines with a `host:pid:tid` prefix,
    /// distinct, in order: hosts of one file that loaded different plugins.
    #[serde(default)]
    pub host_plugins: Vec<(String, String)>,
    /// `nNodes` values of the topology lines (`rank 2 nRanks 3 nNodes 3 localRanks 1`),
    /// distinct.
    #[serde(default)]
    pub nnodes: Vec<u32>,
    /// A topology line says `MNNVL 1`: NCCL joins ranks of several hosts that share an
    /// NVLink fabric (multi-node NVLink) into one node.
    #[serde(default)]
    pub mnnvl: bool,
    /// Communicators a process finished tearing down (`comm 0x... rank 0 nranks 4 ...
    /// - Abort COMPLETE`, or `Destroy COMPLETE`), in order.
    #[serde(default)]
    pub teardowns: Vec<Teardown>,
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
    /// `NVLS multicast support is available on dev N`, `NVLS Head`, `NVLS Trees` or
    /// `N nvls channels` with N > 0 (init's plan), and nothing showed it set up.
    Available,
    /// NVLS was set up for a collective that uses it: `NVLS comm ... headRank`, `NVLS
    /// Creating Multicast group`, `Connected NVLS tree` (see `lines::nvls_evidence`).
    /// The tuner may still pick another algorithm for some sizes.
    Used,
    /// NVLS set-up failed on some rank: binding or adding a device to the multicast
    /// object failed (`Failed to bind NVLink SHARP (NVLS) Multicast memory ...`, or a
    /// CUDA failure in `transport/nvls.cc`). Stronger than `Used`: a rank that logged
    /// `NVLS comm` before its bind failed did not carry anything over NVLS. NCCL then
    /// fails the communicator, or (2.27 and later, where it can) goes on without NVLS.
    Failed,
}

/// Where the SHM transport's buffers lived, as far as the log shows. From NCCL 2.24,
/// with cuMem on and a CUDA 12.6 or newer driver, they are cuMem host allocations, not
/// /dev/shm files; from 2.26.3 each process probes cuMem host memory and falls back to
/// /dev/shm on its own when the probe fails (`cuMem host allocations do not appear to
/// be working; falling back to a /dev/shm/ based implementation`), as with
/// `NCCL_CUMEM_HOST_ENABLE=0`. Counts of the lines that show each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShmBacking {
    /// Lines showing cuMem host buffers (`CUMEM imported shareable host buffer ...`).
    pub cumem_host: usize,
    /// Lines showing /dev/shm files (`MMAP imported shareable host buffer /dev/shm/...`,
    /// a failure to create, extend or attach a /dev/shm segment).
    pub dev_shm: usize,
    /// The line of the first fallback from cuMem host memory to /dev/shm.
    pub fallback_line: Option<usize>,
}

impl ShmBacking {
    /// `cumem-host`, `dev-shm`, `mixed` (both: ranks differ), or `None` when the log
    /// does not say. A fallback counts as /dev/shm.
    pub fn label(&self) -> Option<&'static str> {
        let dev_shm = self.dev_shm > 0 || self.fallback_line.is_some();
        match (self.cumem_host > 0, dev_shm) {
            (true, true) => Some("mixed"),
            (true, false) => Some("cumem-host"),
            (false, true) => Some("dev-shm"),
            (false, false) => None,
        }
    }

    /// In words, for a report or `explain`.
    pub fn describe(&self) -> &'static str {
        match self.label() {
            Some("dev-shm") if self.fallback_line.is_some() => {
                "/dev/shm files (the cuMem host probe failed and NCCL fell back)"
            }
            Some(label) => ShmBacking::label_words(label),
            None => "not in the log",
        }
    }

    /// A [`label`](ShmBacking::label) (results.csv's `shm_backing`) in words; an
    /// unknown one as it is.
    pub fn label_words(label: &str) -> &str {
        match label {
            "mixed" => "cuMem host memory on some ranks, /dev/shm files on others",
            "cumem-host" => "cuMem host memory (not /dev/shm)",
            "dev-shm" => "/dev/shm files",
            other => other,
        }
    }
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

/// A communicator one process finished destroying or aborting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Teardown {
    /// The `host:pid` prefix of the line (`None` without one).
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub rank: u32,
    pub nranks: u32,
    /// `Abort` or `Destroy`.
    pub how: String,
    /// The communicator's pointer in its process (`0x7f00faaa5c00`).
    pub comm: Option<String>,
    /// 1-based line number in the file it came from.
    pub line: usize,
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
    /// The attach of a segment whose name is not one NCCL makes (`/dev/shm/nccl-` with
    /// an empty or unprintable tail) and whose size is 0: a rank on /dev/shm read a peer's
    /// cuMem host handle as a file name (the peer used cuMem host memory, this rank
    /// fell back to /dev/shm; NVIDIA/nccl PR 2388).
    ShmCumemMismatch,
    /// Binding or adding a device to NVLink SHARP multicast memory failed: `Failed to bind
    /// NVLink SHARP (NVLS) Multicast memory of size N : CUDA error 401 ...`, or a `Cuda
    /// failure` logged from `transport/nvls.cc`.
    NvlsBind,
    /// Registering a symmetric window found no room left in NCCL's symmetric address
    /// space (2.27+: `Allocation failed. No suitable space found to accommodate
    /// size=0x... within limit=0x...`, from `ncclSpaceAlloc`).
    WindowSpace,
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
    /// A failure of connection set-up: creating or attaching a shared-memory segment,
    /// binding NVLS multicast memory, or connecting a socket to a peer. NCCL sets connections up once per
    /// communicator (in its first collective from 2.22, at init before), so every
    /// later collective of a fresh communicator meets it again.
    pub fn in_connection_setup(self) -> bool {
        matches!(
            self,
            FailureKind::ShmEnospc
                | FailureKind::ShmAttachEnoent
                | FailureKind::ShmCumemMismatch
                | FailureKind::NvlsBind
                | FailureKind::ConnectionRefused
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::ShmEnospc => "shm-enospc",
            FailureKind::ShmAttachEnoent => "shm-attach-enoent",
            FailureKind::ShmCumemMismatch => "shm-cumem-mismatch",
            FailureKind::NvlsBind => "nvls-bind",
            FailureKind::WindowSpace => "window-space",
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
    /// Empty when there is no connection line. A NET connection is logged twice, `[send]`
    /// in the sender's process and `[receive]` in the receiver's: it counts once, on the
    /// send side (a receive line counts only where its send line is missing).
    pub fn transport_shares(&self) -> Vec<(String, f64)> {
        let total = self.ring_connections().count() as f64;
        self.label_counts()
            .into_iter()
            .map(|(label, n)| (label.to_string(), n as f64 / total))
            .collect()
    }

    /// The shares as one CSV cell, `SHM:75%;NET/Socket:25%`, in integer percents that sum
    /// to 100 (largest remainder; ties go to the larger share, then the label), after
    /// `NVLS;` where NVLink SHARP was set up (`crate::nccl::cell`). `""` when there is
    /// neither.
    pub fn transports_cell(&self) -> String {
        crate::nccl::cell::TransportsCell::write(self.nvls == NvlsUse::Used, &self.shares_cell())
    }

    fn shares_cell(&self) -> String {
        let counts = self.label_counts();
        let total = self.ring_connections().count();
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

    /// What a case's note says when NVLS's multicast bind failed: the case ran without
    /// NVLS (where NCCL went on, 2.27-2.28) and is judged as a ring; the cause is the
    /// fabric. `None` when no bind failed.
    pub fn nvls_note(&self) -> Option<String> {
        let message = self.nvls_failure.as_deref()?;
        let code = super::failure_text::cuda_error_code(message)
            .map(|c| format!(", CUDA error {c}"))
            .unwrap_or_default();
        let went_on = if message.contains("Proceeding without NVLS") {
            ": NCCL went on without NVLS, so the case ran on rings and trees and is judged \
             as one"
        } else {
            ""
        };
        Some(format!(
            "NVLS failed to bind its multicast memory{code} (Fabric Manager or NVSwitch \
             state; `nccl-bench explain` on the log says more){went_on}"
        ))
    }

    /// The first failure in connection set-up (`FailureKind::in_connection_setup`).
    pub fn setup_failure(&self) -> Option<&Failure> {
        self.failures.iter().find(|f| f.kind.in_connection_setup())
    }

    /// The first failure of connection set-up (the cause; the other ranks' socket errors
    /// follow from it), else of a known kind, else the first `Other`, as one line for a
    /// CSV `error` column: `shm-enospc: Call to posix_fallocate failed : No space left on
    /// device`.
    pub fn error_cell(&self) -> Option<String> {
        let failure = self
            .setup_failure()
            .or_else(|| self.failures.iter().find(|f| f.kind != FailureKind::Other))
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

    /// The connections, each once: a receive line whose send line is also here is
    /// the same connection.
    fn ring_connections(&self) -> impl Iterator<Item = &Connection> {
        let sent: std::collections::HashSet<(u32, Option<u32>, u32, u32)> = self
            .connections
            .iter()
            .filter(|c| c.direction == Some(Direction::Send))
            .map(|c| (c.channel, c.conn_index, c.from_rank, c.to_rank))
            .collect();
        self.connections.iter().filter(move |c| {
            c.direction != Some(Direction::Receive)
                || !sent.contains(&(c.channel, c.conn_index, c.from_rank, c.to_rank))
        })
    }

    /// Connections per label, sorted by count (descending) then label.
    fn label_counts(&self) -> Vec<(&str, usize)> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for c in self.ring_connections() {
            *counts.entry(c.transport.label.as_str()).or_default() += 1;
        }
        let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
}
