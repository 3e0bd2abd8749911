//! Copy-engine collectives (2.28+), as `src/enqueue.cc` and `src/ce_coll.cc` have
//! them: with the CTA policy ZERO (`NCCL_CTA_POLICY`, 2: no SM for communication),
//! a CUDA 12.5+ driver, one node with symmetric support, and the receive buffer in
//! a symmetric window (2.28: both buffers), an all-gather runs as `cudaMemcpy`s on
//! the copy engines instead of a kernel. 2.28 logs no TUNING line for it; 2.29+
//! logs `AllGather [Copy Engine]: N Bytes -> cudaMemcpy` (with `; CE synchronization
//! with NVLS` where NVLS is there). NCCL has no cost model for it: here each rank
//! copies its part to every peer over the link between them, one peer after another,
//! after a synchronization of the ranks (a launch).
//!
//! (NCCL also runs alltoall, gather and scatter this way; the stand-in builds those
//! from point-to-point calls and leaves them as they are.)

use super::comm::Comm;
use super::symmetric;
use super::Version;
use crate::nccl::tuner::Func;
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

/// Whether an all-gather of `bytes` per rank from `send` into `recv` runs on the
/// copy engines.
pub fn runs(c: &Comm, v: Version, f: Func, send: u64, recv: u64, bytes: u64) -> bool {
    let driver = crate::driver::driver_version();
    let policy = cta_policy(v);
    let zero = if v >= (2, 29, 0) {
        policy & ZERO != 0
    } else {
        policy == ZERO
    };
    let n = u64::from(c.nranks);
    let windows = if v >= (2, 29, 0) {
        symmetric::in_window(c, recv, bytes * n)
    } else {
        symmetric::in_window(c, send, bytes) && symmetric::in_window(c, recv, bytes * n)
    };
    v >= (2, 28, 0)
        && f == Func::AllGather
        && zero
        && driver >= 12050
        && c.plan().symmetric
        && windows
}

/// Its TUNING line (rank 0), from 2.29.
pub fn line(v: Version, f: Func, bytes: u64, nvls: bool) -> Option<String> {
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
        assert_eq!(line((2, 28, 9), Func::AllGather, 1024, false), None);
        assert_eq!(
            line((2, 29, 3), Func::AllGather, 1024, true).unwrap(),
            "AllGather [Copy Engine]: 1024 Bytes -> cudaMemcpy; CE synchronization with NVLS"
        );
    }
}
