//! A finding: what kind of problem a log shows, how severe, the lines that show it, the
//! diagnosis and the fix.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// Up to [`super::MAX_EVIDENCE`] distinct log lines, `line 15: <message>` (a `WARN` line that
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
    /// A rank on /dev/shm attached a peer's cuMem host handle as a file name.
    ShmCumemMismatch,
    /// NVLink SHARP multicast memory could not be bound (Fabric Manager, NVSwitch).
    NvlsBind,
    /// Symmetric windows registered beyond NCCL's symmetric address space.
    WindowSpace,
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
            FindingKind::ShmCumemMismatch => "shm-cumem-mismatch",
            FindingKind::NvlsBind => "nvls-bind",
            FindingKind::WindowSpace => "window-space",
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
            FindingKind::ShmCumemMismatch => {
                "cuMem host memory on one rank, /dev/shm on another (not a /dev/shm problem)"
            }
            FindingKind::NvlsBind => "NVLS multicast memory could not be bound (Fabric Manager)",
            FindingKind::WindowSpace => "symmetric windows exceed NCCL's symmetric address space",
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
