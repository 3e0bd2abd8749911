//! The link rates measured before a sweep: the ceilings busbw is read against.

use serde::{Deserialize, Serialize};

/// What the links of this machine carry, measured just before the sweep (as
/// nvbandwidth does, for the links the sweep's rings use): the ceiling that busbw is
/// read against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    pub links: Vec<LinkRate>,
    /// What could not be measured, and why (a ceiling missing is said, not guessed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The host's last-level cache, bytes (host backend). Ranks whose buffers fit in
    /// it copy at the cache's rate, past what memory and the loopback carry: no
    /// ceiling holds for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
}

impl Ceilings {
    /// Whether a host-backend case of `nranks` ranks of `bytes` each fits in the
    /// last-level cache (unknown: it does not): each rank's send and receive buffers
    /// together, an estimate that leaves out the segments and a cache split per core
    /// complex or socket.
    pub fn in_cache(&self, nranks: usize, bytes: u64) -> bool {
        self.cache_bytes
            .is_some_and(|c| bytes.saturating_mul(2 * nranks as u64) <= c)
    }
}

/// The kind of link a rate was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKind {
    /// One core copying host memory (host backend).
    Memcpy,
    /// TCP over the loopback interface, one connection, one direction.
    TcpLoopback,
    /// GPU to GPU with peer access (NVLink or PCIe P2P), both directions at once.
    P2p,
    /// GPU to GPU through pinned host memory (where peer access is missing), both
    /// directions at once.
    ViaHost,
    /// Device-to-device copy within one GPU.
    D2d,
    /// Host (pinned) to device.
    H2d,
    /// Device to host (pinned).
    D2h,
}

impl LinkKind {
    /// The name `manifest.json` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Memcpy => "memcpy",
            LinkKind::TcpLoopback => "tcp-loopback",
            LinkKind::P2p => "p2p",
            LinkKind::ViaHost => "via-host",
            LinkKind::D2d => "d2d",
            LinkKind::H2d => "h2d",
            LinkKind::D2h => "d2h",
        }
    }
}

/// One measured link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRate {
    pub kind: LinkKind,
    /// The GPUs at its ends (one for d2d/h2d/d2h, two for a pair, none on the host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<usize>,
    /// GB/s (1e9 bytes per second) in each direction; for pairs, the slower of the
    /// two directions while both ran at once.
    pub gbps: f64,
    /// Bytes per copy.
    pub bytes: u64,
    /// How it was measured, in a few words.
    pub how: String,
}
