//! NCCL, played version by version (`NCCL_BENCH_SIM_VERSION`, 2.28.9 by default):
//! a unique id that names a rendezvous, communicators in separate processes that
//! meet there, every collective nccl-tests calls (`ncclAllReduce`, `ncclAllGather`,
//! `ncclReduceScatter`, `ncclBroadcast`, `ncclReduce`; `ncclAlltoAll`, `ncclGather`
//! and `ncclScatter` from 2.28; `ncclSend`/`ncclRecv`, grouped or alone) enqueued on
//! the simulated streams and computed exactly across the processes, the asynchronous
//! error state, abort, NCCL's error strings and its `NCCL_DEBUG` log lines, in each
//! release's words.
//!
//! The functions NCCL tunes (all-reduce, all-gather, reduce-scatter, broadcast,
//! reduce) connect the ring and cost what the tuner's model says for its choice;
//! point-to-point work (sends and receives, and alltoall, gather and scatter, which
//! NCCL builds from them) connects each peer it talks to on its own (connection
//! index 1: P2P where the topology has it, else SHM on one host, else the network)
//! and costs a launch plus each peer's traffic over that link.
//!
//! What changes with the version, as NCCL's sources say:
//! - connections: at init up to 2.21; from 2.22 (`NCCL_RUNTIME_CONNECT`, default 1,
//!   with cuMem on) in the first collective that needs them ([`setup`]);
//! - non-blocking communicators (`NCCL_COMM_BLOCKING=0`): init returns
//!   `ncclInProgress`; in 2.22 so does a collective that connects; from 2.23 every
//!   collective ([`api`]);
//! - NVLS (from 2.17, on the `nvswitch` topology): the multicast line, the NVLS
//!   channel count, buffer set-up with its device memory, the tuner's choice
//!   ([`tuner`]), `NCCL_NVLS_ENABLE=0`;
//! - log lines: peers by bus id before 2.18.3, P2P/CUMEM from 2.19, connection
//!   indexes, SHM's wording ([`lines`]);
//! - tuning ([`tuner`]): the algorithms there are (NVLS 2.17, NVLSTree 2.18, PAT
//!   2.23); `NCCL_ALGO`/`NCCL_PROTO` a lenient comma list before 2.24, per-function
//!   lists from 2.24 whose unknown names fail `ncclCommInitRank`
//!   (`ncclInvalidUsage`); a forced choice that is impossible fails the
//!   collective up to 2.18 (`ncclInternalError`), falls back silently to Ring
//!   from 2.19 to 2.23, fails it with `ncclInvalidUsage` and a WARN naming the
//!   variables from 2.24; TUNING lines (`NCCL_DEBUG_SUBSYS=TUNING`, rank 0): the
//!   model's table at init in three layouts (to 2.17, 2.18-2.22, 2.23 on), one
//!   line per collective from 2.20 (numeric with the model's time; with the
//!   function from 2.23; names and channels from 2.24);
//! - `ncclGroupSimulateEnd` from 2.22 ([`group`]); in 2.22 and 2.23 it logs the
//!   TUNING line of what it simulates, from 2.24 not.
//!
//! - [`shared`]: the memory the ranks share; [`comm`]: a communicator and its
//!   waits; [`api`]: init, errors, abort; [`calls`]: the collective and
//!   point-to-point calls' argument checks; [`peers`]: point-to-point connections;
//!   [`group`]: group calls and the launch of collectives and point-to-point
//!   calls (tuning, TUNING line, connections); [`work`]: each operation on the
//!   stream, computed through the shared file and timed by its modelled device time.

use std::ffi::c_int;
use std::sync::OnceLock;

pub mod api;
pub mod calls;
pub mod comm;
pub mod copy_engine;
pub mod functions;
pub mod group;
pub mod lines;
pub mod nvls;
pub mod peers;
pub mod repeat;
pub mod setup;
pub mod shared;
pub mod shm;
pub mod symmetric;
pub mod tuner;
pub mod work;

pub use work::speed_of;

pub type NcclResult = c_int;

pub const SUCCESS: c_int = 0;
pub const UNHANDLED_CUDA_ERROR: c_int = 1;
pub const SYSTEM_ERROR: c_int = 2;
pub const INTERNAL_ERROR: c_int = 3;
pub const INVALID_ARGUMENT: c_int = 4;
pub const INVALID_USAGE: c_int = 5;
pub const REMOTE_ERROR: c_int = 6;
pub const IN_PROGRESS: c_int = 7;

/// A release: (major, minor, patch).
pub type Version = (u32, u32, u32);

/// The version this stand-in plays (`NCCL_BENCH_SIM_VERSION`, default 2.28.9).
pub fn version() -> Version {
    static V: OnceLock<Version> = OnceLock::new();
    *V.get_or_init(|| {
        let text = crate::env("NCCL_BENCH_SIM_VERSION").unwrap_or_else(|| "2.28.9".into());
        let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
        (
            parts.next().unwrap_or(2),
            parts.next().unwrap_or(28),
            parts.next().unwrap_or(9),
        )
    })
}

/// A WARN line from `origin` (`file.cc:line`) as the release played prints it: with
/// the function after the line from 2.30.7 ([`functions`]).
pub fn warn(dev: usize, origin: &str, msg: &str) {
    crate::log::warn(dev, &functions::decorate(version(), origin), msg);
}

fn version_code() -> c_int {
    let (x, y, z) = version();
    let code = if (x, y) >= (2, 9) {
        x * 10000 + y * 100 + z
    } else {
        x * 1000 + y * 100 + z
    };
    code as c_int
}
