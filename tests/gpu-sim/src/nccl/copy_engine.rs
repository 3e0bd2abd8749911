//! Copy-engine collectives (2.28+), as `src/enqueue.cc` and `src/ce_coll.cc` have
//! them: with the CTA policy ZERO (`NCCL_CTA_POLICY`, 2: no SM for communication),
//! a CUDA 12.5+ driver, one node with symmetric support, and the receive buffer in
//! a symmetric window (2.28: both buffers), an all-gather, alltoall, gather or
//! scatter (`ncclCeImplemented`) runs as `cudaMemcpy`s on the copy engines instead
//! of a kernel. 2.28 logs no TUNING line for it; 2.29+ logs `AllGather [Copy
//! Engine]: N Bytes -> cudaMemcpy` (N: the count x type size the call names, one
//! peer's share; with `; CE synchronization with NVLS` where NVLS is there). NCCL
//! has no cost model for it: here each rank copies its part to every peer over the
//! link between them, one peer after another, after a synchronization of the ranks
//! (a launch); a gather's or scatter's root sets that pace for all of them.

use super::comm::Comm;
use super::symmetric;
use super::work::CollFunc;
use super::Version;
use crate::topo;

/// `NCCL_CTA_POLICY_ZERO`.
const ZERO: u32 = 0x02;

/// `NCCL_CTA_POLICY` as release `v` reads it: an integer (0 default, 1 efficiency,
/// 2 zero); from 2.29 also names (`DEFAULT`, `EFFICIENCY`, `ZERO`, any case)
/// joined by `|`. Unset or unreadable: 0.
pub fn cta_policy(v: Version) -> u32 {
    let Some(text) = crate::env("NCCL_CTA_POLICY") else {
        return 0;
    };
    if let Ok(n) = text.trim().parse::<u32>() {
        return if n <= 2 { n } else { 0 };
    }
    if v < (2, 29, 0) {
        return 0;
    }
    text.split('|')
        .map(|t| match t.trim().to_ascii_uppercase().as_str() {
            "EFFICIENCY" => 0x01,
            "ZERO" => ZERO,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

/// Whether `f` of `bytes` per peer (the call's count x type size) from `send` into
/// `recv` runs on the copy engines (`root`: whether this rank is a gather's or
/// scatter's root).
pub fn runs(
    c: &Comm,
    v: Version,
    f: CollFunc,
    send: u64,
    recv: u64,
    bytes: u64,
    root: bool,
) -> bool {
    let implemented = matches!(
        f,
        CollFunc::AllGather | CollFunc::AlltoAll | CollFunc::Gather | CollFunc::Scatter
    );
    let driver = crate::driver::driver_version();
    let policy = cta_policy(v);
    let zero = if v >= (2, 29, 0) {
        policy & ZERO != 0
    } else {
        policy == ZERO
    };
    let n = c.nranks as usize;
    let width = bytes as usize;
    let (send_len, recv_len) = (
        f.send_bytes(1, width, n, root) as u64,
        f.recv_bytes(1, width, n, root) as u64,
    );
    let windows = if v >= (2, 29, 0) {
        symmetric::in_window(c, recv, recv_len)
    } else {
        symmetric::in_window(c, send, send_len) && symmetric::in_window(c, recv, recv_len)
    };
    v >= (2, 28, 0) && implemented && zero && driver >= 12050 && c.plan().symmetric && windows
}

/// Its TUNING line (rank 0), from 2.29.
pub fn line(v: Version, f: CollFunc, bytes: u64, nvls: bool) -> Option<String> {
    (v >= (2, 29, 0)).then(|| {
        let sync = if nvls {
            "; CE synchronization with NVLS"
        } else {
            ""
        };
        format!(
            "{} [Copy Engine]: {bytes} Bytes -> cudaMemcpy{sync}",
            f.name()
        )
    })
}

/// Device time, ns: a launch, then `bytes` to each peer in turn over its link.
pub fn device_ns(c: &Comm, bytes: u64) -> f64 {
    let me = c.rank as usize;
    let copies: f64 = (0..c.nranks as usize)
        .filter(|&r| r != me)
        .map(|r| {
            let (latency, bandwidth) = c.peer_link(r);
            latency + bytes as f64 / bandwidth
        })
        .sum();
    (topo::LAUNCH_NS + copies) * topo::slowdown()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_release() {
        assert_eq!(line((2, 28, 9), CollFunc::AllGather, 1024, false), None);
        assert_eq!(
            line((2, 29, 3), CollFunc::AllGather, 1024, true).unwrap(),
            "AllGather [Copy Engine]: 1024 Bytes -> cudaMemcpy; CE synchronization with NVLS"
        );
    }
}
