//! Group calls and the launch of collectives: `ncclGroupStart`, `ncclGroupEnd`,
//! `ncclGroupSimulateEnd` (`src/group.cc`), and what every call goes through when it
//! is launched (`src/enqueue.cc`): the tuner's choice and its TUNING line (for the
//! functions NCCL tunes), the connections it still needs, the work on the stream.
//!
//! Between `ncclGroupStart` and `ncclGroupEnd` (nested: only the outermost end
//! launches) each call checks its arguments and is queued; the group's end launches
//! them in order, a communicator's sends and receives together as one operation
//! where the first of them stood (each receive from a peer takes that peer's send to
//! it of the same rank in order). An argument error inside a group is returned by
//! the call and again by the group's end, which then launches nothing. A one-rank
//! collective runs at once even in a group (NCCL's `ncclLaunchOneRank`); a send or
//! receive waits for its group's end. Groups are per thread, as NCCL's
//! `ncclGroupDepth` is.
//!
//! `ncclGroupSimulateEnd(ncclSimInfo_t*)` (from 2.22) ends the group without running
//! anything: it writes the model's predicted time of the queued collectives NCCL
//! tunes into `estimatedTime` (microseconds; their sum here, where NCCL keeps the
//! last task's estimate, the same for one collective; sends and receives have none)
//! and drops them. Its argument must be
//! initialized with `NCCL_SIM_INFO_INITIALIZER` (magic `0x74685283`, else WARN and
//! `ncclInvalidArgument`); NCCL reads at most `size` bytes of it and writes back as
//! many. A NULL argument is refused here too (NCCL would end the group normally).
//! Before 2.22 the symbol does not exist: the stand-in answers `ncclInvalidUsage`
//! with a WARN and leaves the group as it was. (With non-blocking communicators
//! NCCL 2.28 ignores the argument and launches in the background; the stand-in
//! simulates for them as for blocking ones.)
//!
//! A forced choice that leaves nothing ([`tuner::refusal`]) fails the launch: the
//! code is returned (a non-blocking communicator also records it, in the background
//! from 2.23 where it returns `ncclInProgress` first).

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::comm::{Comm, Failure};
use super::copy_engine;
use super::symmetric;
use super::tuner::{self, lines, Algo, Func, Proto};
use super::work::{CollFunc, Kind, Operation, PeerCall, Route};
use super::UNHANDLED_CUDA_ERROR;
use super::{version, NcclResult, Version, INVALID_ARGUMENT, INVALID_USAGE, IN_PROGRESS, SUCCESS};
use crate::driver;
use crate::log;
use crate::stream::{self, Op};

/// A call whose arguments were checked, to launch.
pub struct Call {
    pub comm: Arc<Comm>,
    pub what: What,
    pub dtype: i32,
    pub op: i32,
    pub stream: usize,
}

/// A collective, or one `ncclSend`/`ncclRecv`.
#[derive(Debug, Clone, Copy)]
pub enum What {
    Coll {
        func: CollFunc,
        send: u64,
        recv: u64,
        count: usize,
        root: u32,
    },
    Peer(PeerCall),
}

impl Call {
    /// The peers point-to-point work connects to (the whole group's of a send or
    /// receive are gathered at its end); `None` for a function NCCL runs over the
    /// ring.
    fn peers(&self) -> Option<Vec<u32>> {
        match self.what {
            What::Peer(p) => Some(vec![p.peer]),
            What::Coll { func, root, .. } if func.tuned().is_none() => {
                Some(func.peers(self.comm.rank, root, self.comm.nranks))
            }
            What::Coll { .. } => None,
        }
    }

    /// The tuner's function and NCCL's `nBytes`, for a collective NCCL tunes.
    fn tuned(&self) -> Option<(Func, u64)> {
        let What::Coll { func, count, .. } = self.what else {
            return None;
        };
        let width = crate::reduce::size(self.dtype).unwrap_or(1);
        let n = self.comm.nranks as usize;
        Some((func.tuned()?, func.tuned_bytes(count, width, n)))
    }
}

#[derive(Default)]
struct Group {
    depth: u32,
    calls: Vec<Call>,
    /// The first error of a call in the group (NCCL's `ncclGroupError`).
    error: NcclResult,
}

thread_local! {
    static GROUP: RefCell<Group> = RefCell::new(Group::default());
}

/// `ncclSimInfo_t` (`nccl.h`, 2.22+).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimInfo {
    pub size: usize,
    pub magic: u32,
    pub version: u32,
    pub estimated_time: f32,
}

/// `NCCL_SIM_INFO_INITIALIZER`'s magic.
pub const SIM_MAGIC: u32 = 0x7468_5283;

/// Launches `call` now, or queues it in this thread's group. A one-rank collective
/// is never queued (a send or receive is: it needs its match).
pub fn submit(call: Call) -> NcclResult {
    let queued = GROUP.with(|g| {
        let mut g = g.borrow_mut();
        let peer = matches!(call.what, What::Peer(_));
        if g.depth > 0 && (call.comm.nranks > 1 || peer) {
            g.calls.push(call);
            None
        } else {
            Some(call)
        }
    });
    match queued {
        Some(call) => launch(vec![call]),
        None => SUCCESS,
    }
}

/// Records an argument error of a call: inside a group, its end returns it.
pub fn failed(code: NcclResult) {
    GROUP.with(|g| {
        let mut g = g.borrow_mut();
        if g.depth > 0 && g.error == SUCCESS {
            g.error = code;
        }
    });
}

#[no_mangle]
pub extern "C" fn ncclGroupStart() -> NcclResult {
    GROUP.with(|g| g.borrow_mut().depth += 1);
    SUCCESS
}

/// Leaves one level of the group: `Err` with the code to return when there was no
/// group, `Ok(None)` while still nested, `Ok(Some(calls))` at the outermost end (or
/// the group's error, its calls dropped).
fn leave() -> Result<Option<Vec<Call>>, NcclResult> {
    GROUP.with(|g| {
        let mut g = g.borrow_mut();
        if g.depth == 0 {
            super::warn(
                current_device(),
                "group.cc:657",
                "ncclGroupEnd: not in a group call.",
            );
            return Err(INVALID_USAGE);
        }
        g.depth -= 1;
        if g.depth > 0 {
            return Ok(None);
        }
        let calls = std::mem::take(&mut g.calls);
        match std::mem::replace(&mut g.error, SUCCESS) {
            SUCCESS => Ok(Some(calls)),
            e => Err(e),
        }
    })
}

fn current_device() -> usize {
    driver::current().map(|c| c.device).unwrap_or(0)
}

#[no_mangle]
pub extern "C" fn ncclGroupEnd() -> NcclResult {
    match leave() {
        Err(code) => code,
        Ok(None) => SUCCESS,
        Ok(Some(calls)) => launch(calls),
    }
}

#[no_mangle]
pub extern "C" fn ncclGroupSimulateEnd(info: *mut SimInfo) -> NcclResult {
    simulate_end(version(), info)
}

/// `ncclGroupSimulateEnd` as release `v` has it.
pub fn simulate_end(v: Version, info: *mut SimInfo) -> NcclResult {
    if v < (2, 22, 0) {
        let (x, y, z) = v;
        super::warn(
            current_device(),
            "group.cc:113",
            &format!("ncclGroupSimulateEnd does not exist in NCCL {x}.{y}.{z} (it came in 2.22): the library has no such symbol"),
        );
        return INVALID_USAGE;
    }
    let calls = match leave() {
        Err(code) => return code,
        Ok(None) => return SUCCESS,
        Ok(Some(calls)) => calls,
    };
    let mut sim = SimInfo {
        size: 0,
        magic: 0,
        version: 0,
        estimated_time: -1.0,
    };
    let size = std::mem::size_of::<SimInfo>();
    let real = if info.is_null() {
        0
    } else {
        // SAFETY: the caller's struct starts with its size; at most our size is read.
        let given = unsafe { std::ptr::read_unaligned(info as *const usize) };
        let real = given.min(size);
        unsafe {
            std::ptr::copy_nonoverlapping(
                info as *const u8,
                &mut sim as *mut SimInfo as *mut u8,
                real,
            )
        };
        real
    };
    if info.is_null() || sim.magic != SIM_MAGIC {
        let msg = if info.is_null() {
            "ncclGroupSimulateEnd: simInfo is NULL"
        } else {
            "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER"
        };
        super::warn(current_device(), "group.cc:678", msg);
        return INVALID_ARGUMENT;
    }
    let mut total: Option<f32> = None;
    let lone = calls.len() == 1;
    for call in &calls {
        // A symmetric kernel's or copy engines' task leaves the list before NCCL
        // estimates the rest
        // (2.27: returns before; 2.28+: `ncclMakeSymmetricTaskList`): no estimate.
        if copy_engine(call, false).is_some() || symmetric_kernel(call, lone, false).is_some() {
            continue;
        }
        match tune(call, lines::logs_simulated(v)) {
            Ok((_, _, Some(choice))) => total = Some(total.unwrap_or(0.0) + choice.time_us),
            Ok(_) => {}
            Err((code, msg, origin)) => {
                super::warn(call.comm.device, origin, &msg);
                return code;
            }
        }
    }
    if let Some(t) = total {
        sim.estimated_time = t;
    }
    // SAFETY: writes back the `real` bytes read from the caller's struct.
    unsafe {
        std::ptr::copy_nonoverlapping(&sim as *const SimInfo as *const u8, info as *mut u8, real)
    };
    SUCCESS
}

/// The tuner's choice for `call` (rank 0 logs its TUNING line where the release
/// does and `log_line` says): (algorithm, protocol, the choice). One rank runs
/// NCCL's local copy, chosen by no tuner (Ring/Simple, no line); an empty
/// collective is not tuned either (NCCL returns before), nor is point-to-point work.
pub fn tune(call: &Call, log_line: bool) -> Result<(Algo, Proto, Option<tuner::Choice>), Failure> {
    let c = &call.comm;
    let v = version();
    // Point-to-point work (sends, receives, and the collectives NCCL builds from
    // them) is not tuned.
    let Some((func, bytes)) = call.tuned().filter(|_| c.nranks >= 2) else {
        return Ok((Algo::Ring, Proto::Simple, None));
    };
    let choice = tuner::choose_for(&c.plan().machine, v, func, bytes, call.dtype, call.op);
    if bytes == 0 {
        let (a, p) = choice.map_or((Algo::Ring, Proto::Simple), |ch| (ch.algo, ch.proto));
        return Ok((a, p, None));
    }
    let Some(choice) = choice else {
        return Err(tuner::refusal(
            v,
            call.dtype,
            crate::env("NCCL_ALGO").as_deref(),
            crate::env("NCCL_PROTO").as_deref(),
        ));
    };
    if log_line && c.rank == 0 {
        if let Some(line) = lines::choice(v, func, bytes, u64::from(c.nranks), &choice) {
            log::info(log::TUNING, c.device, &line);
        }
    }
    Ok((choice.algo, choice.proto, Some(choice)))
}

/// Launches `calls` (any communicators), each communicator's in order: the first
/// error is returned, else `ncclInProgress` if a non-blocking communicator went on
/// in the background, else success.
pub fn launch(calls: Vec<Call>) -> NcclResult {
    let mut by_comm: Vec<(Arc<Comm>, Vec<Call>)> = Vec::new();
    for call in calls {
        match by_comm.iter_mut().find(|(c, _)| Arc::ptr_eq(c, &call.comm)) {
            Some((_, list)) => list.push(call),
            None => by_comm.push((call.comm.clone(), vec![call])),
        }
    }
    // Several communicators (one thread driving several GPUs): side by side, as
    // NCCL's group launch does, so that connecting ones can wait for each other.
    let codes: Vec<NcclResult> = if by_comm.len() == 1 {
        by_comm
            .into_iter()
            .map(|(c, calls)| launch_on(&c, calls))
            .collect()
    } else {
        std::thread::scope(|scope| {
            let jobs: Vec<_> = by_comm
                .into_iter()
                .map(|(c, calls)| scope.spawn(move || launch_on(&c, calls)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().unwrap_or(super::INTERNAL_ERROR))
                .collect()
        })
    };
    let mut result = SUCCESS;
    for code in codes {
        if result == SUCCESS || (result == IN_PROGRESS && code != SUCCESS) {
            result = code;
        }
    }
    result
}

/// What a call runs instead of an algorithm, if anything.
type Sym = Option<Route>;

/// A call with its algorithm and protocol, or what it runs instead.
type Tuned = (Call, Algo, Proto, Sym);

fn tune_all(calls: Vec<Call>) -> Result<Vec<Tuned>, Failure> {
    let lone = calls.len() == 1;
    calls
        .into_iter()
        .map(|call| {
            let route = copy_engine(&call, true)
                .or_else(|| symmetric_kernel(&call, lone, true).map(Route::Symmetric));
            match route {
                Some(route) => Ok((call, Algo::Ring, Proto::Simple, Some(route))),
                None => tune(&call, true).map(|(a, p, _)| (call, a, p, None)),
            }
        })
        .collect()
}

/// The copy engines' route of `call`, if it takes it ([`copy_engine`]); rank 0
/// logs its TUNING line where the release has one and `log_line` says.
fn copy_engine(call: &Call, log_line: bool) -> Option<Route> {
    let v = version();
    let c = &call.comm;
    let What::Coll {
        func,
        send,
        recv,
        count,
        root,
    } = call.what
    else {
        return None;
    };
    let bytes = count as u64 * crate::reduce::size(call.dtype)? as u64;
    let is_root = root == c.rank;
    if c.nranks < 2 || bytes == 0 || !copy_engine::runs(c, v, func, send, recv, bytes, is_root) {
        return None;
    }
    if log_line && c.rank == 0 {
        if let Some(line) = copy_engine::line(v, func, bytes, c.plan().machine.nvls) {
            log::info(log::TUNING, c.device, &line);
        }
    }
    Some(Route::CopyEngine { bytes })
}

/// A collective NCCL tunes: its function, send and receive buffers, count and
/// element width.
fn tuned_buffers(call: &Call) -> Option<(Func, u64, u64, u64, u64)> {
    let What::Coll {
        func,
        send,
        recv,
        count,
        ..
    } = call.what
    else {
        return None;
    };
    let width = crate::reduce::size(call.dtype)? as u64;
    Some((func.tuned()?, send, recv, count as u64, width))
}

/// The symmetric kernel `call` runs, if any ([`symmetric`]): a collective with both
/// buffers in symmetric windows, alone in its launch in 2.27 (2.28+ takes each), on
/// a communicator with symmetric support; rank 0 logs its TUNING line where
/// `log_line` says.
fn symmetric_kernel(call: &Call, lone: bool, log_line: bool) -> Option<symmetric::Pick> {
    let v = version();
    let c = &call.comm;
    let (f, send, recv, count, width) = tuned_buffers(call)?;
    if !c.plan().symmetric || !(lone || v >= (2, 28, 0)) || count == 0 {
        return None;
    }
    let bytes = count * width;
    let windows = symmetric::in_window(c, send, bytes) && symmetric::in_window(c, recv, bytes);
    if !windows || !symmetric::implemented(f, call.dtype, call.op) {
        return None;
    }
    let nvls = c.plan().machine.nvls;
    let pick = symmetric::pick(f, call.dtype, call.op, count, width, c.nranks, nvls)?;
    if log_line && c.rank == 0 {
        log::info(log::TUNING, c.device, &symmetric::line(v, f, bytes, &pick));
    }
    Some(pick)
}

/// Connects what each call's algorithm still needs and puts it on its stream.
fn enqueue(c: &Comm, tuned: Vec<Tuned>) -> Result<(), Failure> {
    // The group's sends and receives run as one operation, where the first of them
    // stood (NCCL launches a group's point-to-point work together).
    let Some(comm) = tuned.first().map(|(call, ..)| call.comm.clone()) else {
        return Ok(());
    };
    let mut peer_calls = Vec::new();
    let mut first_peer: Option<(usize, i32, usize)> = None;
    let mut ops: Vec<(usize, Kind, i32, i32, Algo, Proto, Sym)> = Vec::new();
    for (call, algo, proto, sym) in tuned {
        match call.what {
            What::Peer(p) => {
                first_peer.get_or_insert((ops.len(), call.dtype, call.stream));
                peer_calls.push(p);
            }
            What::Coll {
                func,
                send,
                recv,
                count,
                root,
            } => {
                // A symmetric kernel or the copy engines reach the peers through the
                // windows' mappings.
                match call.peers() {
                    Some(peers) => c.connect_peers(&peers)?,
                    None if sym.is_none() && c.needs_connect(algo) => c.prepare(algo)?,
                    None => {}
                }
                let kind = Kind::Coll {
                    func,
                    send,
                    recv,
                    count,
                    root,
                };
                ops.push((call.stream, kind, call.dtype, call.op, algo, proto, sym));
            }
        }
    }
    if let Some((at, dtype, stream)) = first_peer {
        let peers: Vec<u32> = peer_calls.iter().map(|p| p.peer).collect();
        c.connect_peers(&peers)?;
        let kind = Kind::P2p(peer_calls);
        ops.insert(
            at,
            (stream, kind, dtype, 0, Algo::Ring, Proto::Simple, None),
        );
    }
    for (stream, kind, dtype, op, algo, proto, route) in ops {
        let work = Operation {
            comm: comm.clone(),
            kind,
            dtype,
            op,
            algo,
            proto,
            route,
        };
        stream::submit(stream as stream::CUstream, Op::Work(Arc::new(work))).map_err(|e| {
            (
                UNHANDLED_CUDA_ERROR,
                format!("Cuda failure {e} '{}'", driver::error_text(e)),
                "enqueue.cc:1500",
            )
        })?;
    }
    Ok(())
}

/// Launches one communicator's calls. Non-blocking: from 2.23 every launch goes on
/// in NCCL's background thread (`ncclInProgress`); in 2.22 only one that has to
/// connect first.
fn launch_on(c: &Arc<Comm>, calls: Vec<Call>) -> NcclResult {
    let v = version();
    if !c.blocking && v >= (2, 23, 0) {
        return in_background(c, move |c| enqueue(c, tune_all(calls)?));
    }
    let tuned = match tune_all(calls) {
        Ok(t) => t,
        Err((code, msg, origin)) => {
            if c.blocking {
                super::warn(c.device, origin, &msg);
            } else {
                c.fail_async(code, origin, &msg);
            }
            return code;
        }
    };
    let connect = tuned.iter().any(|(call, a, _, sym)| match call.peers() {
        Some(peers) => c.needs_peers(&peers),
        None => sym.is_none() && c.needs_connect(*a),
    });
    if !c.blocking && connect {
        return in_background(c, move |c| enqueue(c, tuned));
    }
    match enqueue(c, tuned) {
        Ok(()) => SUCCESS,
        Err((code, msg, origin)) => {
            c.fail_async(code, origin, &msg);
            code
        }
    }
}

/// Runs `work` on a thread of its own with the communicator in progress until it
/// is done (or failed); `ncclInProgress`, or the communicator's error.
fn in_background(
    c: &Arc<Comm>,
    work: impl FnOnce(&Comm) -> Result<(), Failure> + Send + 'static,
) -> NcclResult {
    if c.state
        .compare_exchange(SUCCESS, IN_PROGRESS, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return c.state.load(Ordering::Acquire);
    }
    let worker = c.clone();
    std::thread::spawn(move || match work(&worker) {
        Ok(()) => {
            let _ = worker.state.compare_exchange(
                IN_PROGRESS,
                SUCCESS,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        Err((code, msg, origin)) => worker.fail_async(code, origin, &msg),
    });
    IN_PROGRESS
}
