//! NCCL's C API as nccl-bench calls it (the group calls are in [`super::group`]).

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::comm::{comm_of, register, release, Comm};
use super::shared::file_bytes;
use super::shared::MAX_RANKS;
use super::work::group_speed;
use super::{
    version, version_code, NcclResult, INVALID_ARGUMENT, INVALID_USAGE, IN_PROGRESS, SUCCESS,
};
use crate::driver;
use crate::fault::{self, Fault};
use crate::log;
use crate::rendezvous::{self, ID_BYTES};

/// Writes an out-parameter; a NULL one is `ncclInvalidArgument`.
pub(super) fn out<T>(p: *mut T, v: T) -> NcclResult {
    if p.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: a non-null out-parameter from the caller.
    unsafe { p.write(v) };
    SUCCESS
}

#[no_mangle]
pub extern "C" fn ncclGetVersion(v: *mut c_int) -> NcclResult {
    out(v, version_code())
}

/// `ncclUniqueId`: 128 bytes, passed by value as a C struct.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    internal: [u8; ID_BYTES],
}

#[no_mangle]
pub extern "C" fn ncclGetUniqueId(id: *mut UniqueId) -> NcclResult {
    match rendezvous::unique_id(file_bytes) {
        Ok(internal) => out(id, UniqueId { internal }),
        Err(e) => {
            super::warn(
                0,
                "bootstrap.cc:85",
                &format!("Bootstrap : cannot listen: {e}"),
            );
            super::SYSTEM_ERROR
        }
    }
}

fn log_banner(device: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let (x, y, z) = version();
        log::version(device, &format!("NCCL version {x}.{y}.{z}+cuda12.4"));
        let mut driver_version = 0;
        driver::cuDriverGetVersion(&mut driver_version);
        log::info(
            log::INIT,
            device,
            &format!("cudaDriverVersion {driver_version}"),
        );
        for name in [
            "NCCL_SHM_DISABLE",
            "NCCL_P2P_DISABLE",
            "NCCL_P2P_LEVEL",
            "NCCL_NET",
            "NCCL_IB_DISABLE",
            "NCCL_COMM_BLOCKING",
            "NCCL_RUNTIME_CONNECT",
            "NCCL_NVLS_ENABLE",
            "NCCL_CUMEM_ENABLE",
            "NCCL_CHECK_POINTERS",
            "NCCL_LOCAL_REGISTER",
            "NCCL_WIN_ENABLE",
            "NCCL_CTA_POLICY",
        ] {
            // Parameters of later releases are read (and logged) from those on.
            let since = match name {
                "NCCL_LOCAL_REGISTER" => (2, 19, 0),
                "NCCL_WIN_ENABLE" | "NCCL_CTA_POLICY" => (2, 27, 0),
                _ => (0, 0, 0),
            };
            if version() < since {
                continue;
            }
            if let Some(v) = crate::env(name) {
                log::info(
                    log::ENV,
                    device,
                    &format!("{name} set by environment to {v}."),
                );
            }
        }
    });
}

#[no_mangle]
pub extern "C" fn ncclCommInitRank(
    comm: *mut *mut c_void,
    nranks: c_int,
    id: UniqueId,
    rank: c_int,
) -> NcclResult {
    let id = id.internal;
    if comm.is_null() {
        return INVALID_ARGUMENT;
    }
    // Null until a communicator exists.
    out(comm, std::ptr::null_mut());
    // NCCL uses the calling thread's current device (device 0 without a context).
    let device = driver::current().map(|c| c.device).unwrap_or(0);
    log_banner(device);
    if nranks < 1 || rank < 0 || rank >= nranks {
        super::warn(
            device,
            "init.cc:1740",
            &format!("Invalid rank requested : {rank}/{nranks}"),
        );
        return INVALID_ARGUMENT;
    }
    if nranks as usize > MAX_RANKS {
        super::warn(
            device,
            "init.cc:1740",
            &format!("the simulated NCCL takes at most {MAX_RANKS} ranks, not {nranks}"),
        );
        return INVALID_USAGE;
    }
    let d = driver::driver();
    let hash = rendezvous::comm_hash(&id);
    let c = Arc::new(Comm {
        rank: rank as u32,
        nranks: nranks as u32,
        device,
        nvml: d.physical(device),
        bus: d.gpus.get(device).map_or(0, |g| g.bus),
        hash,
        speed: group_speed(hash),
        state: AtomicI32::new(IN_PROGRESS),
        blocking: crate::env("NCCL_COMM_BLOCKING").is_none_or(|v| v != "0"),
        ready: AtomicBool::new(false),
        aborted: AtomicBool::new(false),
        seq: AtomicU64::new(0),
        shared: OnceLock::new(),
        topo: d.topo,
        plan: OnceLock::new(),
        connected: Mutex::new(Default::default()),
    });
    let finish = move |c: &Comm| {
        let code = match c.init(&id) {
            Ok(()) => {
                c.ready.store(true, Ordering::Release);
                SUCCESS
            }
            Err((code, msg, origin)) => {
                super::warn(c.device, origin, &msg);
                code
            }
        };
        c.state.store(code, Ordering::Release);
        code
    };
    let handle = register(&c);
    if c.blocking {
        let code = finish(&c);
        if code != SUCCESS {
            drop(release(handle as *mut c_void));
            return code;
        }
        out(comm, handle as *mut c_void);
        SUCCESS
    } else {
        let worker = c.clone();
        std::thread::spawn(move || finish(&worker));
        out(comm, handle as *mut c_void);
        IN_PROGRESS
    }
}

#[no_mangle]
pub extern "C" fn ncclCommGetAsyncError(comm: *mut c_void, err: *mut NcclResult) -> NcclResult {
    match comm_of(comm) {
        Some(c) => out(err, c.state.load(Ordering::Acquire)),
        None => INVALID_ARGUMENT,
    }
}

#[no_mangle]
pub extern "C" fn ncclCommAbort(comm: *mut c_void) -> NcclResult {
    if comm_of(comm).is_some_and(|c| fault::active(Fault::AbortHang, c.rank)) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let Some(c) = release(comm) else {
        return if comm.is_null() {
            SUCCESS
        } else {
            INVALID_ARGUMENT
        };
    };
    c.aborted.store(true, Ordering::Release);
    // Its sockets close: peers still connecting fail. Peers in a collective are not
    // told (NCCL's kernels on the other GPUs spin until their own abort).
    c.leave();
    SUCCESS
}

/// Puts a non-blocking communicator in progress for `how_long`, then back to
/// success (unless an error came meanwhile); returns `ncclInProgress`.
fn in_progress_for(c: &Arc<Comm>, how_long: Duration) -> NcclResult {
    if c.state
        .compare_exchange(SUCCESS, IN_PROGRESS, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return c.state.load(Ordering::Acquire);
    }
    let c = c.clone();
    std::thread::spawn(move || {
        std::thread::sleep(how_long);
        let _ = c
            .state
            .compare_exchange(IN_PROGRESS, SUCCESS, Ordering::AcqRel, Ordering::Acquire);
    });
    IN_PROGRESS
}

#[no_mangle]
pub extern "C" fn ncclCommFinalize(comm: *mut c_void) -> NcclResult {
    let Some(c) = comm_of(comm) else {
        return INVALID_ARGUMENT;
    };
    match c.state.load(Ordering::Acquire) {
        IN_PROGRESS => INVALID_USAGE,
        // Non-blocking: finalize flushes in the background.
        SUCCESS if !c.blocking => in_progress_for(&c, Duration::from_millis(2)),
        SUCCESS => SUCCESS,
        e => e,
    }
}

#[no_mangle]
pub extern "C" fn ncclCommDestroy(comm: *mut c_void) -> NcclResult {
    match release(comm) {
        Some(c) => {
            c.leave();
            SUCCESS
        }
        None if comm.is_null() => SUCCESS,
        None => INVALID_ARGUMENT,
    }
}

#[no_mangle]
pub extern "C" fn ncclGetErrorString(code: NcclResult) -> *const c_char {
    let text: &'static [u8] = match code {
        0 => b"no error\0",
        1 => b"unhandled cuda error (run with NCCL_DEBUG=INFO for details)\0",
        2 => b"unhandled system error (run with NCCL_DEBUG=INFO for details)\0",
        3 => b"internal error - please report this issue to the NCCL developers\0",
        4 => b"invalid argument (run with NCCL_DEBUG=WARN for details)\0",
        5 => b"invalid usage (run with NCCL_DEBUG=WARN for details)\0",
        6 => b"remote process exited or there was a network error\0",
        7 => b"NCCL operation in progress\0",
        _ => b"unknown result code\0",
    };
    text.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn ncclGetLastError(_comm: *mut c_void) -> *const c_char {
    log::last_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{cuCtxSetCurrent, cuDevicePrimaryCtxRetain, cuInit, cuMemAlloc_v2};
    use crate::nccl::calls::ncclAllReduce;
    use crate::nccl::tuner;
    use crate::stream::cuStreamCreate;

    fn unique_id() -> UniqueId {
        let mut id = UniqueId {
            internal: [0; ID_BYTES],
        };
        assert_eq!(ncclGetUniqueId(&mut id), SUCCESS);
        id
    }

    /// The state of `comm` once it leaves `ncclInProgress`.
    fn settled(comm: *mut c_void) -> NcclResult {
        loop {
            let mut state = IN_PROGRESS;
            assert_eq!(ncclCommGetAsyncError(comm, &mut state), SUCCESS);
            if state != IN_PROGRESS {
                return state;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// The NCCL of today (2.28, this stand-in's default) on one process: a
    /// non-blocking communicator answers `ncclInProgress` from init and from every
    /// collective until it is enqueued (2.23+); two ranks on one GPU are refused
    /// with `ncclInvalidUsage` (`Duplicate GPU detected`). One test: both set the
    /// environment that communicators read.
    #[test]
    fn non_blocking_calls_are_in_progress_and_a_shared_gpu_is_refused() {
        assert_eq!(cuInit(0), 0);
        let mut ctx = std::ptr::null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), 0);
        assert_eq!(cuCtxSetCurrent(ctx), 0);
        std::env::set_var("NCCL_COMM_BLOCKING", "0");
        let mut comm = std::ptr::null_mut();
        assert_eq!(ncclCommInitRank(&mut comm, 1, unique_id(), 0), IN_PROGRESS);
        assert_eq!(settled(comm), SUCCESS);
        let (mut send, mut recv) = (0, 0);
        assert_eq!(cuMemAlloc_v2(&mut send, 64), 0);
        assert_eq!(cuMemAlloc_v2(&mut recv, 64), 0);
        let mut s = std::ptr::null_mut();
        assert_eq!(cuStreamCreate(&mut s, 1), 0);
        for _ in 0..3 {
            // float (7), sum (0)
            let rc = ncclAllReduce(send as _, recv as _, 16, 7, 0, comm, s);
            assert_eq!(rc, IN_PROGRESS);
            assert_eq!(settled(comm), SUCCESS);
        }
        assert_eq!(ncclCommDestroy(comm), SUCCESS);
        std::env::remove_var("NCCL_COMM_BLOCKING");

        // Two ranks on device 0 of one host.
        let id = unique_id();
        let ranks: Vec<_> = (0..2)
            .map(|rank| {
                std::thread::spawn(move || {
                    let mut comm = std::ptr::null_mut();
                    let rc = ncclCommInitRank(&mut comm, 2, id, rank);
                    (rc, comm.is_null())
                })
            })
            .collect();
        for r in ranks {
            assert_eq!(r.join().unwrap(), (INVALID_USAGE, true));
        }
    }

    /// Group calls on two ranks (threads, GPUs 6 and 7): a simulated end predicts the
    /// model's time and runs nothing, nested groups launch at the outermost end, a
    /// bad `ncclSimInfo_t` is refused, and a release before 2.22 has no
    /// `ncclGroupSimulateEnd`.
    #[test]
    fn groups_queue_all_reduces_and_a_simulated_end_predicts_them() {
        use crate::nccl::group::{
            ncclGroupEnd, ncclGroupSimulateEnd, ncclGroupStart, simulate_end, SimInfo, SIM_MAGIC,
        };
        use crate::stream::{cuMemcpyDtoHAsync_v2, cuMemcpyHtoDAsync_v2, cuStreamSynchronize};
        const COUNT: usize = 64 << 10;
        let id = unique_id();
        let ranks: Vec<_> = (0..2)
            .map(|rank| {
                std::thread::spawn(move || {
                    assert_eq!(cuInit(0), 0);
                    let mut ctx = std::ptr::null_mut();
                    assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 6 + rank), 0);
                    assert_eq!(cuCtxSetCurrent(ctx), 0);
                    // Another test may make communicators non-blocking meanwhile.
                    let mut comm = std::ptr::null_mut();
                    let rc = ncclCommInitRank(&mut comm, 2, id, rank);
                    assert!(matches!(rc, SUCCESS | IN_PROGRESS), "{rc}");
                    assert_eq!(settled(comm), SUCCESS);
                    let bytes = COUNT * 4;
                    let (mut send, mut recv) = (0, 0);
                    assert_eq!(cuMemAlloc_v2(&mut send, bytes), 0);
                    assert_eq!(cuMemAlloc_v2(&mut recv, bytes), 0);
                    let mut s = std::ptr::null_mut();
                    assert_eq!(cuStreamCreate(&mut s, 1), 0);
                    let ones = vec![(rank + 1) as f32; COUNT];
                    let up = cuMemcpyHtoDAsync_v2(send, ones.as_ptr().cast(), bytes, s);
                    assert_eq!(up, 0);
                    let all_reduce = || ncclAllReduce(send as _, recv as _, COUNT, 7, 0, comm, s);
                    let fresh = || SimInfo {
                        size: std::mem::size_of::<SimInfo>(),
                        magic: SIM_MAGIC,
                        version: 22803,
                        estimated_time: -1.0,
                    };
                    // Simulated, nested: only the outermost end estimates.
                    let mut info = fresh();
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(all_reduce(), SUCCESS);
                    assert_eq!(ncclGroupSimulateEnd(&mut info), SUCCESS);
                    assert_eq!(info.estimated_time, -1.0);
                    assert_eq!(ncclGroupSimulateEnd(&mut info), SUCCESS);
                    let c = comm_of(comm).unwrap();
                    let want = tuner::choose(&c.plan().machine, version(), bytes as u64, 7, 0);
                    assert_eq!(info.estimated_time, want.unwrap().time_us);
                    assert!(info.estimated_time > 1.0);
                    // Refused: a struct without the magic, none at all; no group.
                    let mut bad = SimInfo {
                        magic: 0,
                        ..fresh()
                    };
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(all_reduce(), SUCCESS);
                    assert_eq!(ncclGroupSimulateEnd(&mut bad), INVALID_ARGUMENT);
                    assert_eq!(bad.estimated_time, -1.0);
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(ncclGroupSimulateEnd(std::ptr::null_mut()), INVALID_ARGUMENT);
                    assert_eq!(ncclGroupEnd(), INVALID_USAGE);
                    // 2.21 has no ncclGroupSimulateEnd: the group stays open, and its
                    // end runs the all-reduce.
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(all_reduce(), SUCCESS);
                    assert_eq!(simulate_end((2, 21, 5), &mut info), INVALID_USAGE);
                    let rc = ncclGroupEnd();
                    assert!(matches!(rc, SUCCESS | IN_PROGRESS), "{rc}");
                    assert_eq!(settled(comm), SUCCESS);
                    // Nested: the inner end launches nothing, the outer one all.
                    assert_eq!(cuStreamSynchronize(s), 0);
                    let zeros = vec![0f32; COUNT];
                    let clear = cuMemcpyHtoDAsync_v2(recv, zeros.as_ptr().cast(), bytes, s);
                    assert_eq!(clear, 0);
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(ncclGroupStart(), SUCCESS);
                    assert_eq!(all_reduce(), SUCCESS);
                    assert_eq!(ncclGroupEnd(), SUCCESS);
                    assert_eq!(cuStreamSynchronize(s), 0);
                    let mut out = vec![0f32; COUNT];
                    let down = cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), recv, bytes, s);
                    assert_eq!(down, 0);
                    assert_eq!(cuStreamSynchronize(s), 0);
                    assert_eq!(out[0], 0.0, "not launched before the outer end");
                    let rc = ncclGroupEnd();
                    assert!(matches!(rc, SUCCESS | IN_PROGRESS), "{rc}");
                    assert_eq!(settled(comm), SUCCESS);
                    let down = cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), recv, bytes, s);
                    assert_eq!(down, 0);
                    assert_eq!(cuStreamSynchronize(s), 0);
                    assert!(out.iter().all(|&x| x == 3.0));
                    assert_eq!(ncclCommDestroy(comm), SUCCESS);
                })
            })
            .collect();
        for r in ranks {
            r.join().unwrap();
        }
    }
}
