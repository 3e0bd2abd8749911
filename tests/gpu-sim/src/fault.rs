//! Faults on request, for the tests of nccl-bench's failure handling:
//! `NCCL_BENCH_SIM_FAULT=<kind>[@<rank>][+<after>]` (several separated by commas),
//! where `@<rank>` limits it to one
//! rank (for `oom`, one device) and `+<after>` lets that many all-reduces of the
//! communicator complete first. Kinds:
//! - `hang`: the all-reduce never completes; only `ncclCommAbort` ends it;
//! - `remote-error`: the all-reduce stops and `ncclCommGetAsyncError` reports
//!   `ncclRemoteError`, as when a peer's process or the network dies;
//! - `wrong`: one element of the result is wrong;
//! - `crash`: the rank's process dies (SIGABRT) in the all-reduce;
//! - `oom`: device memory allocation fails (`CUDA_ERROR_OUT_OF_MEMORY`);
//! - `init-cuda`: `ncclCommInitRank` fails with NCCL's "Cuda failure" as when the
//!   driver is older than the CUDA runtime libnccl was built with;
//! - `connect-hang`: connecting the ring never finishes (in the first collective
//!   that needs it from 2.22, in `ncclCommInitRank` before), until the
//!   communicator is aborted, as a connection to an unreachable peer can;
//! - `abort-hang`: `ncclCommAbort` never returns (NVIDIA/nccl#1777 reports aborts
//!   that block on a hung kernel or proxy thread).
//!
//! Exhausting `/dev/shm` needs no fault: SHM connections create real segments with
//! `posix_fallocate`, so a small `/dev/shm` fails as it does with NCCL.

use std::sync::OnceLock;

use crate::env;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Hang,
    RemoteError,
    Wrong,
    Crash,
    OutOfMemory,
    InitCuda,
    ConnectHang,
    AbortHang,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub fault: Fault,
    pub rank: Option<u32>,
    pub after: u64,
}

pub fn parse(text: &str) -> Option<Spec> {
    let (rest, after) = match text.split_once('+') {
        Some((r, a)) => (r, a.trim().parse().ok()?),
        None => (text, 0),
    };
    let (kind, rank) = match rest.split_once('@') {
        Some((k, r)) => (k, Some(r.trim().parse().ok()?)),
        None => (rest, None),
    };
    let fault = match kind.trim() {
        "hang" => Fault::Hang,
        "remote-error" => Fault::RemoteError,
        "wrong" => Fault::Wrong,
        "crash" => Fault::Crash,
        "oom" => Fault::OutOfMemory,
        "init-cuda" => Fault::InitCuda,
        "connect-hang" => Fault::ConnectHang,
        "abort-hang" => Fault::AbortHang,
        _ => return None,
    };
    Some(Spec { fault, rank, after })
}

/// The faults asked for: `NCCL_BENCH_SIM_FAULT`, several separated by commas
/// (`hang,abort-hang`); a spec that does not parse is ignored.
fn specs() -> &'static [Spec] {
    static SPECS: OnceLock<Vec<Spec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        env("NCCL_BENCH_SIM_FAULT")
            .map(|t| t.split(',').filter_map(parse).collect())
            .unwrap_or_default()
    })
}

/// Whether `fault` applies to `who` (a rank, or a device for `oom`).
pub fn active(fault: Fault, who: u32) -> bool {
    specs()
        .iter()
        .any(|s| s.fault == fault && s.rank.is_none_or(|r| r == who))
}

/// The collective fault for `rank` at its all-reduce number `seq` (from 0).
pub fn collective(rank: u32, seq: u64) -> Option<Fault> {
    specs()
        .iter()
        .filter(|s| s.rank.is_none_or(|r| r == rank) && seq >= s.after)
        .map(|s| s.fault)
        .find(|f| {
            matches!(
                f,
                Fault::Hang | Fault::RemoteError | Fault::Wrong | Fault::Crash
            )
        })
}
