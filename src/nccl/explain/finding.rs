//! A finding: what a log shows, how severe, the lines that show it, the cause, the fix,
//! what would be wrong to do, and where that knowledge comes from. The texts live in
//! `nccl::knowledge` (findings.toml); a rule fills in what its log shows.

use serde::{Serialize, Serializer};

use crate::nccl::knowledge::{self, FindingText};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The finding's id (`shm-no-space`), its entry in findings.toml.
    #[serde(rename = "id")]
    pub kind: FindingKind,
    pub severity: Severity,
    pub title: String,
    /// Up to [`super::MAX_EVIDENCE`] distinct lines, `line 15: <message>` (with the file
    /// where several were read).
    pub evidence: Vec<String>,
    /// How many lines showed it (evidence keeps the first few).
    pub occurrences: usize,
    pub cause: String,
    pub fix: String,
    /// What would be wrong to do here, and why (empty: nothing to warn of).
    pub avoid: String,
    /// Where the cause and the fix come from.
    pub sources: Vec<String>,
    /// The finding this one follows from, when both are in the log: it is then a
    /// consequence, not the cause.
    pub follows: Option<&'static str>,
}

impl Finding {
    /// A finding of `kind` with its texts from findings.toml, `{name}` filled from
    /// `fill` (a name with no value becomes empty).
    pub fn new(kind: FindingKind, evidence: Vec<String>, fill: &[(&str, String)]) -> Finding {
        let text = knowledge::finding(kind.as_str());
        Finding::of_text(kind, text, evidence, fill)
    }

    pub(super) fn of_text(
        kind: FindingKind,
        text: &FindingText,
        evidence: Vec<String>,
        fill: &[(&str, String)],
    ) -> Finding {
        let f = |s: &str| fill_in(s, fill);
        Finding {
            kind,
            severity: Severity::parse(&text.severity),
            title: f(&text.title),
            occurrences: evidence.len(),
            evidence,
            cause: f(&text.cause),
            fix: f(&text.fix),
            avoid: f(&text.avoid),
            sources: text.source.clone(),
            follows: None,
        }
    }

    pub fn with_severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }

    pub fn with_occurrences(mut self, n: usize) -> Finding {
        self.occurrences = n.max(self.evidence.len());
        self
    }

    /// Replaces the cause and the fix a rule composed itself.
    pub fn with_texts(mut self, cause: String, fix: String) -> Finding {
        self.cause = cause;
        self.fix = fix;
        self
    }
}

/// `text` with each `{name}` of `fill` replaced by its value; names not in `fill` are
/// left out.
pub(super) fn fill_in(text: &str, fill: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
            if let Some((_, v)) = fill.iter().find(|(n, _)| *n == name) {
                out.push_str(v);
            }
        } else {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
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

    fn parse(s: &str) -> Severity {
        match s {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            _ => Severity::Info,
        }
    }
}

/// The kinds a rule in code raises, each with its id in findings.toml: the enum, its
/// ids and [`FindingKind::RULES`] come from this one list.
macro_rules! finding_kinds {
    ($($kind:ident => $id:literal,)*) => {
        /// What a finding is about: its id in findings.toml. `Line` findings are those
        /// raised by their lines alone (the `lines` of their entry).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FindingKind {
            $($kind,)*
            /// A finding of findings.toml raised by its lines alone.
            Line(&'static str),
        }

        impl FindingKind {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FindingKind::$kind => $id,)*
                    FindingKind::Line(id) => id,
                }
            }

            /// Every kind a rule in code raises (for the test that each has its texts).
            pub const RULES: &'static [FindingKind] = &[$(FindingKind::$kind,)*];
        }
    };
}

finding_kinds! {
    ShmNoSpace => "shm-no-space",
    ShmPermission => "shm-permission",
    ShmAttachMissing => "shm-attach-missing",
    ShmCumemMismatch => "shm-cumem-mismatch",
    ShmNotOnDataPath => "shm-not-on-data-path",
    NvlsBind => "nvls-bind",
    NvlsFallback => "nvls-fallback",
    WindowSpace => "window-space",
    SocketConnect => "socket-connect",
    DockerBridgeAddress => "docker-bridge-address",
    SocketError => "socket-error",
    SocketInterfaceAmbiguous => "socket-interface-ambiguous",
    SocketInterfaceVirtual => "socket-interface-virtual",
    IfnameNoMatch => "ifname-no-match",
    SocketConnectRetries => "socket-connect-retries",
    IbCompletion => "ib-completion",
    IbNoDevice => "ib-no-device",
    IbError => "ib-error",
    IbMemlock => "ib-memlock",
    IbSettingsNoDevice => "ib-settings-no-device",
    ListPrefixInside => "env-list-prefix-inside",
    OfiLibfabricTooOld => "ofi-libfabric-too-old",
    NewArchIllegalAccess => "new-arch-illegal-access",
    CudaFailure => "cuda-failure",
    DriverTooOld => "driver-too-old",
    NcclLacksArch => "nccl-lacks-arch",
    NcclTooOldForGpu => "nccl-too-old-for-gpu",
    GpuOutOfMemory => "gpu-out-of-memory",
    InvalidDeviceOrdinal => "invalid-device-ordinal",
    TopologyFile => "topology-file",
    KnownBug => "known-bug",
    SystemError => "system-error",
    RemoteError => "remote-error",
    OtherError => "other-error",
    Crash => "crash",
    TorchTimeout => "torch-timeout",
    TorchMismatch => "torch-mismatch",
    TorchDumpSignal => "torch-dump-signal",
    TorchWatchdogStuck => "torch-watchdog-stuck",
    TorchChildFailed => "torch-child-failed",
    TcpstorePeerGone => "tcpstore-peer-gone",
    SeparateJobs => "separate-jobs",
    VersionsDiffer => "versions-differ",
    PluginsDiffer => "plugins-differ",
    EnvDiffers => "env-differs",
    EnvNotShown => "env-not-shown",
    EnvReadOtherwise => "env-read-otherwise",
    EnvNotForwarded => "env-not-forwarded",
    StallsAfterInit => "stalls-after-init",
    NetInsideNode => "net-inside-node",
    ProtoForced => "proto-forced",
    TestsWrong => "tests-wrong",
    TestsFailure => "tests-failure",
    TestsHangInit => "tests-hang-init",
    TestsHangCuda => "tests-hang-cuda",
    TestsBusbw => "tests-busbw",
    TestsBusbwStep => "tests-busbw-step",
    InitStops => "init-stops",
    ShmSigbus => "shm-sigbus",
    HostIdentity => "host-identity",
    SameAddress => "same-address",
    BootstrapFailed => "bootstrap-failed",
    NvlsStops => "nvls-stops",
    TestsNcclBuild => "tests-nccl-build",
    InvalidArgument => "invalid-argument",
    NcclBuilds => "nccl-builds",
    InitKernelsSlow => "init-kernels-slow",
    TopologyNvlink => "topology-nvlink",
    GdrDiffers => "gdr-differs",
    SocketInterfaceLinkLocal => "socket-interface-link-local",
    FirstToFail => "first-to-fail",
    NodesVsHosts => "nodes-vs-hosts",
    TorchArch => "torch-arch",
    TestsHangHosts => "tests-hang-hosts",
    NvlsInitStops => "nvls-init-stops",
    SrunTorchrun => "srun-torchrun",
    NvlinkPairs => "nvlink-pairs",
    MpiHangs => "mpi-hangs",
    GdrUnused => "gdr-unused",
    ShmInsteadOfP2p => "shm-instead-of-p2p",
    IbGidSelection => "ib-gid-selection",
    TeardownSomeRanks => "teardown-some-ranks",
    NameUnresolved => "name-unresolved",
    NetSocketForced => "net-socket-forced",
    MpiLaunchHangs => "mpi-launch-hangs",
}

impl FindingKind {
    /// A short title for the text report (the entry's, before filling in).
    pub fn title(self) -> &'static str {
        &knowledge::finding(self.as_str()).title
    }
}

impl Serialize for FindingKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
