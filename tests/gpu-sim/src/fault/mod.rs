//! Faults on request, for the tests of nccl-bench's failure handling:
//! `NCCL_BENCH_SIM_FAULT`, several separated by commas (`hang,abort-hang`); a spec
//! that does not parse is ignored. Two families: faults counted in collectives,
//! and faults timed in seconds ([`timed`]).
//!
//! Counted: `<kind>[@<rank>][x<factor>][+<after>]` (`x<factor>` for `mispredict`
//! only), where `@<rank>` limits it to one rank (for `oom`, one device) and
//! `+<after>` lets that many collectives of the communicator complete first. Kinds:
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
//! - `nvls-bind`: binding NVLS multicast memory fails with CUDA error 401 (`the
//!   operation cannot be performed in the present state`), as on an NVSwitch machine
//!   whose Fabric Manager is down or degraded; each release reacts as its
//!   `transport/nvls.cc` does (see `nccl::setup`);
//! - `cumem-host-probe`: the process's probe of cuMem host memory fails (2.26.3+),
//!   as in a container that hides NUMA: it falls back to /dev/shm for SHM (see
//!   `nccl::shm`); on one rank of several, its SHM connections to peers on cuMem fail;
//! - `fabric-incomplete`: NVML says the GPU (`@<gpu>`, a machine index; every GPU
//!   without) has not finished registering with the NVLink fabric, as while Fabric
//!   Manager is not running on an NVSwitch machine ([`crate::nvml::links`]); the
//!   CUDA half is unchanged;
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
//! Timed: `+SECONDS` is seconds (fractions allowed, 0 when left out) since the
//! simulated machine's epoch ([`clock`]: `NCCL_BENCH_SIM_EPOCH`), GPUs are machine
//! indices (NVML's order, whatever `CUDA_VISIBLE_DEVICES` says), and the window
//! lasts `/DURATION` seconds (5 by default). Kinds:
//! - `throttle@GPU[x<factor>]+SECONDS[/DURATION]`: GPU `GPU` is throttled. NVML
//!   reads its throttled clocks, power, temperature and throttle reasons
//!   ([`crate::nvml`]), and every collective of a communicator with a rank on that
//!   GPU takes `<factor>` (1.6) times its time;
//! - `nvlink-errors@A-B[x<factor>]+SECONDS[/DURATION]`: the NVLink between GPUs A
//!   and B replays. Collectives of a communicator with ranks on both take `<factor>`
//!   (1.3) times their time; NVML's DL_REPLAY counter of GPU A's link `B % 18` and of
//!   GPU B's link `A % 18` grows by 40 a second of the window, and DL_RECOVERY by 1
//!   when it begins. On a topology without NVLink (`pcie*`) the slowdown applies all
//!   the same, but NVML has no link to count on;
//! - `xid@GPU+SECONDS[:CODE]`: GPU `GPU` reports XID `CODE` (79 by default) once its
//!   time has come: one event (`nvmlEventTypeXidCriticalError`) for each NVML event
//!   set that registered that GPU for it. It slows nothing.
//!
//! A timed fault's factor (at least 1, else the spec is invalid) is applied where
//! `mispredict`'s is, to the device time alone (NCCL's tuner goes on predicting the
//! healthy time), by every rank of the communicator, so they finish together; the
//! largest factor that applies wins, as a ring goes at its slowest member's pace. A
//! collective is in a window when the instant it begins is: the later of its
//! devices' clock and the real time at which the last rank reached it (the device
//! clock lags the real one unless `NCCL_BENCH_SIM_HOST_PACED=1`, while the windows
//! are real time, as NVML's readings are).
//!
//! Exhausting `/dev/shm` needs no fault: SHM connections create real segments with
//! `posix_fallocate`, so a small `/dev/shm` fails as it does with NCCL.

use std::sync::OnceLock;

use crate::env;

pub mod clock;
#[cfg(test)]
mod tests;
pub mod timed;

use timed::Timed;

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
    NvlsBind,
    CumemHostProbe,
    FabricIncomplete,
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
    // No counted kind's name has an `x`: one starts the factor.
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
        "nvls-bind" => Fault::NvlsBind,
        "cumem-host-probe" => Fault::CumemHostProbe,
        "fabric-incomplete" => Fault::FabricIncomplete,
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

/// The faults of a list (`NCCL_BENCH_SIM_FAULT`): the counted ones and the timed
/// ones, in order; a spec that does not parse is left out.
pub fn read(list: &str) -> (Vec<Spec>, Vec<Timed>) {
    let mut faults = (Vec::new(), Vec::new());
    for text in list.split(',') {
        if let Some(t) = timed::parse(text) {
            faults.1.push(t);
        } else if let Some(s) = parse(text) {
            faults.0.push(s);
        }
    }
    faults
}

/// The faults asked for, read once.
fn requests() -> &'static (Vec<Spec>, Vec<Timed>) {
    static REQUESTS: OnceLock<(Vec<Spec>, Vec<Timed>)> = OnceLock::new();
    REQUESTS.get_or_init(|| read(&env("NCCL_BENCH_SIM_FAULT").unwrap_or_default()))
}

/// The counted faults asked for.
fn specs() -> &'static [Spec] {
    &requests().0
}

/// The timed faults asked for.
fn timed_specs() -> &'static [Timed] {
    &requests().1
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

/// The timed faults' factor on the device time of a collective begun at
/// `realtime_ns` on a communicator whose ranks use the machine's GPUs `gpus`: the
/// largest that applies, 1 when none does.
pub fn timed_factor(gpus: &[usize], realtime_ns: u64) -> f64 {
    clock::with_faults(|faults| {
        if faults.is_empty() {
            1.0
        } else {
            timed::slowdown(faults, gpus, clock::since_epoch(realtime_ns))
        }
    })
}
