//! The text of NCCL's INFO lines that nccl-bench reads, as each release writes it
//! (taken from NCCL's sources, 2.7 to 2.28): who connects to whom and how, the
//! communicator's start and end, the channel counts and the NVLS lines.

use super::Version;
use crate::topo::{Network, Transport};

/// A rank and its GPU as a connection line names them: `3[3]` (the GPU's machine
/// index, NCCL's `nvmlDev`, from 2.18.3), `3[4c000]` (its bus id before).
pub fn peer(v: Version, rank: usize, nvml: usize, bus: u32) -> String {
    if v >= (2, 18, 3) {
        format!("{rank}[{nvml}]")
    } else {
        format!("{rank}[{bus:x}000]")
    }
}

/// How NCCL names a P2P connection's mechanism.
pub fn p2p_mechanism(cumem: bool) -> &'static str {
    if cumem {
        "P2P/CUMEM"
    } else {
        "P2P/IPC"
    }
}

/// One connection line of channel `channel`: `from` sends to `to` (both as [`peer`]
/// writes them). NET is logged on both sides, `[send]` by the sender and
/// `[receive]` by the receiver (`sender_side` says which this is); P2P and SHM by
/// the sender only, SHM without a connection index.
pub fn channel(
    v: Version,
    channel: u32,
    from: &str,
    to: &str,
    t: Transport,
    cumem: bool,
    sender_side: bool,
) -> String {
    connection(v, channel, 0, from, to, t, cumem, sender_side)
}

/// [`channel`] of connection index `conn` (1: point-to-point, from 2.12).
#[allow(clippy::too_many_arguments)]
pub fn connection(
    v: Version,
    channel: u32,
    conn: u32,
    from: &str,
    to: &str,
    t: Transport,
    cumem: bool,
    sender_side: bool,
) -> String {
    let indexed = |min: Version| {
        if v >= min {
            format!("{channel:02}/{conn}")
        } else {
            format!("{channel:02}")
        }
    };
    match t {
        Transport::P2p => format!(
            "Channel {} : {from} -> {to} via {}",
            indexed((2, 14, 0)),
            p2p_mechanism(cumem)
        ),
        Transport::Shm if v < (2, 13, 0) => {
            format!("Channel {channel:02} : {from} -> {to} via direct shared memory")
        }
        Transport::Shm => format!("Channel {channel:02} : {from} -> {to} via SHM/direct/direct"),
        Transport::Net => format!(
            "Channel {} : {from} -> {to} [{}] via NET/{}",
            indexed((2, 12, 0)),
            if sender_side { "send" } else { "receive" },
            match Network::from_env() {
                Ok(Network::Ib) => "IB/0/GDRDMA",
                _ => "Socket/0",
            }
        ),
    }
}

/// The line after the rings are connected.
pub fn rings_connected(v: Version) -> &'static str {
    if v >= (2, 24, 0) {
        "Connected all rings, use ring PXN 0 GDR 1"
    } else {
        "Connected all rings"
    }
}

/// The communicator's `Init START` / `Init COMPLETE` line.
#[allow(clippy::too_many_arguments)]
pub fn init(
    v: Version,
    what: &str,
    comm: usize,
    rank: u32,
    nranks: u32,
    cuda_dev: usize,
    nvml: usize,
    bus: u32,
    hash: u64,
) -> String {
    let who = format!("comm {comm:#x} rank {rank} nranks {nranks} cudaDev {cuda_dev}");
    if v >= (2, 21, 0) {
        format!("ncclCommInitRank {who} nvmlDev {nvml} busId {bus:x}000 commId {hash:#x} - {what}")
    } else if v >= (2, 18, 0) {
        format!("{who} nvmlDev {nvml} busId {bus:x}000 commId {hash:#x} - {what}")
    } else {
        format!("{who} busId {bus:x}000 - {what}")
    }
}

/// `NVLS multicast support is [not ]available on dev N[ (NVLS_NCHANNELS n)]`
/// (2.17 on; `dev` is the CUDA ordinal).
pub fn nvls_support(v: Version, available: bool, dev: usize, channels: u32) -> String {
    let not = if available { "" } else { "not " };
    if v >= (2, 27, 0) {
        format!("NVLS multicast support is {not}available on dev {dev} (NVLS_NCHANNELS {channels})")
    } else {
        format!("NVLS multicast support is {not}available on dev {dev}")
    }
}

/// Sizes of NVLS buffers, as NCCL computes them (see [`nvls_buffers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvlsSizes {
    pub buff: u64,
    /// 2.17-2.21 only: the alignment slack per buffer.
    pub mem: u64,
    pub per_rank: u64,
    pub total: u64,
}

impl NvlsSizes {
    /// NCCL's arithmetic: 128 KiB chunks times 8 steps per buffer, two buffers per
    /// channel (reduce and broadcast), one set per head (every local rank).
    pub fn of(v: Version, channels: u32, heads: u32) -> NvlsSizes {
        let buff = 128 * 1024 * 8;
        let mem = if v < (2, 22, 0) { 2 << 20 } else { 0 };
        let per_rank = u64::from(channels) * 2 * (buff + mem);
        NvlsSizes {
            buff,
            mem,
            per_rank,
            total: per_rank * u64::from(heads),
        }
    }
}

/// The line of NVLS buffer set-up (at init up to 2.21 or without runtime
/// connection; else before the first collective that uses NVLS).
pub fn nvls_buffers(
    v: Version,
    comm: usize,
    head_rank: u32,
    heads: u32,
    local_ranks: u32,
    s: NvlsSizes,
) -> String {
    let start = format!("NVLS comm {comm:#x} headRank {head_rank} nHeads {heads}");
    if v >= (2, 27, 0) {
        format!(
            "{start} nvlsRanks {local_ranks} buffSize {} nvlsPerRankSize {} nvlsTotalSize {}",
            s.buff, s.per_rank, s.total
        )
    } else if v >= (2, 22, 0) {
        format!(
            "{start} buffSize {} nvlsPerRankSize {} nvlsTotalSize {}",
            s.buff, s.per_rank, s.total
        )
    } else {
        format!(
            "{start} buffSize {} memSize {} nvlsPerRankSize {} nvlsTotalSize {}",
            s.buff, s.mem, s.per_rank, s.total
        )
    }
}

/// The channel counts after init.
pub fn channel_counts(v: Version, coll: u32, nvls: u32, p2p: u32, p2p_per_peer: u32) -> String {
    if v >= (2, 20, 0) {
        format!("{coll} coll channels, {coll} collnet channels, {nvls} nvls channels, {p2p} p2p channels, {p2p_per_peer} p2p channels per peer")
    } else if v >= (2, 17, 0) {
        format!("{coll} coll channels, {nvls} nvls channels, {p2p} p2p channels, {p2p_per_peer} p2p channels per peer")
    } else {
        format!("{coll} coll channels, {p2p} p2p channels, {p2p_per_peer} p2p channels per peer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_lines_follow_the_release() {
        let p = |v| (peer(v, 0, 0, 0x18), peer(v, 1, 1, 0x28));
        let v = (2, 28, 9);
        let (a, b) = p(v);
        assert_eq!(
            channel(v, 3, &a, &b, Transport::P2p, true, true),
            "Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM"
        );
        assert_eq!(
            channel(v, 3, &a, &b, Transport::Shm, true, true),
            "Channel 03 : 0[0] -> 1[1] via SHM/direct/direct"
        );
        assert_eq!(
            channel(v, 0, &a, &b, Transport::Net, true, false),
            "Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0"
        );
        let v = (2, 12, 12);
        let (a, b) = p(v);
        assert_eq!(
            channel(v, 1, &a, &b, Transport::P2p, false, true),
            "Channel 01 : 0[18000] -> 1[28000] via P2P/IPC"
        );
        assert_eq!(
            channel(v, 1, &a, &b, Transport::Shm, false, true),
            "Channel 01 : 0[18000] -> 1[28000] via direct shared memory"
        );
    }

    #[test]
    fn nvls_sizes_are_nccls_arithmetic() {
        // 2.22 on, 8 H100s: 16 channels x 2 x 1 MiB per head, 8 heads: 256 MiB.
        let s = NvlsSizes::of((2, 28, 9), 16, 8);
        assert_eq!(
            (s.buff, s.per_rank, s.total),
            (1 << 20, 32 << 20, 256 << 20)
        );
        // 2.21 and before add 2 MiB of alignment per buffer.
        assert_eq!(
            NvlsSizes::of((2, 21, 5), 16, 8).total,
            16 * 2 * (3 << 20) * 8
        );
        assert_eq!(
            nvls_buffers((2, 28, 9), 0x10, 0, 8, 8, s),
            "NVLS comm 0x10 headRank 0 nHeads 8 nvlsRanks 8 buffSize 1048576 nvlsPerRankSize 33554432 nvlsTotalSize 268435456"
        );
        assert_eq!(
            nvls_support((2, 24, 3), true, 2, 16),
            "NVLS multicast support is available on dev 2"
        );
    }
}
