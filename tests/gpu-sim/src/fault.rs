//! Faults on request, for the tests of nccl-bench's failure handling:
//! `NCCL_BENCH_SIM_FAULT=<kind>[@<rank>][x<factor>][+<after>]` (several separated by
//! commas; `x<factor>` for `mispredict` only),
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
//!   that block on a hung kernel or proxy thread);
//! - `mispredict`: a link NCCL believes healthy is slow. Every all-reduce that uses
//!   the outgoing link of rank `<rank>` (a ring or NVLS all-reduce uses every rank's,
//!   so: every all-reduce of a communicator that has that rank; without `@<rank>`,
//!   of every communicator) takes `<factor>` times the time it would take (2 by
//!   default; `mispredict@3x1.5` for 1.5), while NCCL's tuner goes on predicting
//!   the healthy time: its choice, the `time` of its TUNING lines and
//!   `ncclGroupSimulateEnd`'s estimate are unchanged. The factor follows the rank
//!   (`mispredictx3` without one); a factor below 1 makes the spec invalid. Every
//!   rank of the communicator applies it, so they finish together as on a ring.
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
    Mispredict,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    pub fault: Fault,
    pub rank: Option<u32>,
    pub after: u64,
    /// `mispredict`'s slowdown (`x<factor>`); 1 for the other kinds.
    pub factor: f64,
}

/// `mispredict`'s factor when the spec does not give one.
pub const MISPREDICT_FACTOR: f64 = 2.0;

pub fn parse(text: &str) -> Option<Spec> {
    let (rest, after) = match text.split_once('+') {
        Some((r, a)) => (r, a.trim().parse().ok()?),
        None => (text, 0),
    };
    // No kind's name has an `x`: one starts the factor.
    let (rest, factor) = match rest.split_once('x') {
        Some((r, f)) => (r, Some(f.trim().parse::<f64>().ok()?)),
        None => (rest, None),
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
        "mispredict" => Fault::Mispredict,
        _ => return None,
    };
    let factor = match (fault, factor) {
        (Fault::Mispredict, None) => MISPREDICT_FACTOR,
        (Fault::Mispredict, Some(f)) if f.is_finite() && f >= 1.0 => f,
        (_, None) => 1.0,
        _ => return None,
    };
    Some(Spec {
        fault,
        rank,
        after,
        factor,
    })
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

/// `mispredict`'s factor on the device time of all-reduce number `seq` (from 0) of a
/// communicator of `nranks`: the largest that applies, 1 when none does.
pub fn mispredict_factor(nranks: u32, seq: u64) -> f64 {
    factor_in(specs(), nranks, seq)
}

/// [`mispredict_factor`] under `specs`.
pub fn factor_in(specs: &[Spec], nranks: u32, seq: u64) -> f64 {
    specs
        .iter()
        .filter(|s| {
            s.fault == Fault::Mispredict
                && seq >= s.after
                && s.rank.is_none_or(|r| r < nranks)
                && nranks > 1
        })
        .map(|s| s.factor)
        .fold(1.0, f64::max)
}
