//! Streams, events and graphs. Each stream is a queue drained by a thread of its own,
//! so an enqueue returns before the work is done, as on a GPU: a missing
//! synchronization in the caller reads stale data or unfinished events here too.
//!
//! Time is a virtual device clock per stream, in nanoseconds of the real-time clock
//! when the stream was made: each operation advances it by its modelled cost (see
//! `topo`), an event takes the clock's value when the stream reaches it, and an
//! all-reduce ends at the same instant on every rank (the latest arrival plus its
//! cost). Times are then those of the modelled devices, unaffected by how busy the
//! machine running the test is. With `NCCL_BENCH_SIM_HOST_PACED=1` an operation
//! also starts no earlier than the real time the host enqueued it, so a host that
//! enqueues slower than the device runs sets the pace, as on a GPU.
//!
//! Capture records operations into a graph instead of running them; launching the
//! instantiated graph enqueues them again. Operations that capture forbids fail with
//! the driver's codes and invalidate the capture.

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;

use crate::driver::{self, code, out, result, CUdeviceptr, CUresult, Context};
use crate::topo;

pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;
pub type CUgraph = *mut c_void;
pub type CUgraphExec = *mut c_void;

/// Work that another part of the library (NCCL) puts on a stream.
pub trait Work: Send + Sync {
    /// Runs on the stream's thread when the stream reaches it, starting at device
    /// time `start_ns`; returns the device time at which it ended.
    fn run(&self, start_ns: u64) -> u64;
}

/// One operation on a stream (or a node of a graph).
#[derive(Clone)]
pub enum Op {
    /// A copy; `device` says which of (dst, src) are device memory.
    Copy {
        dst: u64,
        src: u64,
        len: usize,
        device: (bool, bool),
        /// Between two GPUs (cuMemcpyPeerAsync): whether directly over the link,
        /// and from which GPU to which.
        peer: Option<(bool, usize, usize)>,
    },
    Set {
        dst: u64,
        value: u8,
        len: usize,
    },
    /// An event record; the generation is assigned when it is enqueued.
    Record(Arc<Event>, u64),
    Free(CUdeviceptr),
    Work(Arc<dyn Work>),
}

struct Capture {
    ops: Vec<Op>,
    /// `CUstreamCaptureMode`: 0 global, 1 thread-local, 2 relaxed.
    mode: c_uint,
    thread: ThreadId,
    invalidated: bool,
}

struct Queue {
    /// Each operation and the real time it was enqueued.
    ops: VecDeque<(Op, u64)>,
    submitted: u64,
    completed: u64,
    clock: u64,
    capture: Option<Capture>,
    closing: bool,
}

pub struct Stream {
    ctx: &'static Context,
    q: Mutex<Queue>,
    cv: Condvar,
}

/// Live handles, so that a stale or foreign one is an error, not a crash.
static STREAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static EVENTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static GRAPHS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static EXECS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Global-mode captures in progress in this process.
static GLOBAL_CAPTURES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Streams this thread is capturing in global or thread-local mode.
    static CAPTURING: RefCell<HashSet<usize>> = RefCell::new(HashSet::new());
}

fn live(set: &Mutex<Vec<usize>>, h: usize) -> bool {
    h != 0 && set.lock().unwrap().contains(&h)
}

fn new_stream(ctx: &'static Context) -> usize {
    let s = Arc::new(Stream {
        ctx,
        q: Mutex::new(Queue {
            ops: VecDeque::new(),
            submitted: 0,
            completed: 0,
            clock: crate::realtime_ns(),
            capture: None,
            closing: false,
        }),
        cv: Condvar::new(),
    });
    let worker = s.clone();
    std::thread::Builder::new()
        .name("sim-stream".into())
        .spawn(move || worker.drain())
        .expect("cannot start a simulated stream's thread");
    let h = Arc::into_raw(s) as usize;
    STREAMS.lock().unwrap().push(h);
    h
}

/// The stream a handle names: `NULL` and `CU_STREAM_PER_THREAD` (2) are the current
/// context's default stream.
pub fn resolve(h: CUstream) -> Result<&'static Stream, i32> {
    let h = h as usize;
    if h == 0 || h == 2 {
        let ctx = driver::current()?;
        let legacy = *ctx.legacy.get_or_init(|| new_stream(ctx));
        // SAFETY: made by new_stream and never freed.
        return Ok(unsafe { &*(legacy as *const Stream) });
    }
    if !live(&STREAMS, h) {
        return Err(code::INVALID_HANDLE);
    }
    // SAFETY: a live handle made by new_stream; streams are never freed.
    let s = unsafe { &*(h as *const Stream) };
    s.ctx.check()?;
    Ok(s)
}

fn is_legacy(h: CUstream) -> bool {
    h.is_null()
}

impl Stream {
    fn drain(&self) {
        loop {
            let (op, start) = {
                let mut q = self.q.lock().unwrap();
                loop {
                    if let Some((op, enqueued)) = q.ops.pop_front() {
                        let start = if host_paced() {
                            q.clock.max(enqueued)
                        } else {
                            q.clock
                        };
                        break (op, start);
                    }
                    if q.closing {
                        return;
                    }
                    q = self.cv.wait(q).unwrap();
                }
            };
            let end = self.execute(op, start);
            let mut q = self.q.lock().unwrap();
            q.clock = end;
            q.completed += 1;
            self.cv.notify_all();
        }
    }

    /// Runs one operation; memory is checked again (it may have been freed since the
    /// enqueue): a bad address is the context's sticky illegal-address error.
    fn execute(&self, op: Op, start: u64) -> u64 {
        match op {
            Op::Copy {
                dst,
                src,
                len,
                device,
                peer,
            } => {
                let freed = [(dst, device.0), (src, device.1)]
                    .iter()
                    .any(|&(p, dev)| dev && driver::check_range(p, len).is_err());
                if freed {
                    self.ctx.set_sticky(code::ILLEGAL_ADDRESS);
                    return start;
                }
                if device.0 {
                    driver::note_device_write();
                }
                if len > 0 {
                    // SAFETY: device sides lie within live allocations (checked
                    // above); host sides are the caller's, valid until it syncs.
                    unsafe {
                        std::ptr::copy(src as *const u8, dst as *mut u8, len);
                    }
                }
                let cost = match peer {
                    Some((direct, from, to)) => {
                        topo::peer_copy_ns(driver::driver().topo, len as u64, direct, from, to)
                    }
                    None => topo::copy_ns(len as u64, !(device.0 && device.1)),
                };
                start + cost as u64
            }
            Op::Set { dst, value, len } => {
                if driver::check_range(dst, len).is_err() {
                    self.ctx.set_sticky(code::ILLEGAL_ADDRESS);
                    return start;
                }
                driver::note_device_write();
                // SAFETY: checked to lie within a live allocation.
                unsafe { std::ptr::write_bytes(dst as *mut u8, value, len) };
                start + 1_000 + len as u64 / 2_500
            }
            Op::Record(event, gen) => {
                let mut st = event.st.lock().unwrap();
                if gen >= st.done_gen {
                    st.done_gen = gen;
                    st.time_ns = start;
                }
                event.cv.notify_all();
                start
            }
            Op::Free(ptr) => {
                let _ = driver::free(ptr);
                start
            }
            Op::Work(work) => work.run(start),
        }
    }

    /// Waits until everything enqueued so far has run.
    fn wait_idle(&self) -> Result<(), i32> {
        let mut q = self.q.lock().unwrap();
        let target = q.submitted;
        while q.completed < target {
            q = self.cv.wait(q).unwrap();
        }
        drop(q);
        self.ctx.check()
    }
}

/// Enqueues `op` on the stream `h`, or records it into the stream's capture.
pub fn submit(h: CUstream, op: Op) -> Result<(), i32> {
    let s = resolve(h)?;
    if is_legacy(h) {
        invalidate_own_captures()?;
    }
    let mut q = s.q.lock().unwrap();
    if let Some(c) = q.capture.as_mut() {
        if c.invalidated {
            return Err(code::STREAM_CAPTURE_INVALIDATED);
        }
        if let Op::Record(event, _) = &op {
            event.st.lock().unwrap().captured = true;
        }
        c.ops.push(op);
        return Ok(());
    }
    let op = match op {
        Op::Record(event, _) => {
            let mut st = event.st.lock().unwrap();
            st.recorded_gen += 1;
            st.captured = false;
            let gen = st.recorded_gen;
            drop(st);
            Op::Record(event, gen)
        }
        other => other,
    };
    q.ops.push_back((op, crate::realtime_ns()));
    q.submitted += 1;
    s.cv.notify_all();
    Ok(())
}

/// An operation on the legacy stream while this thread captures: the capture is
/// invalidated (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`).
fn invalidate_own_captures() -> Result<(), i32> {
    let mine: Vec<usize> = CAPTURING.with(|c| c.borrow().iter().copied().collect());
    if mine.is_empty() {
        return Ok(());
    }
    for h in mine {
        // SAFETY: capturing streams are live handles made by new_stream.
        let s = unsafe { &*(h as *const Stream) };
        if let Some(c) = s.q.lock().unwrap().capture.as_mut() {
            c.invalidated = true;
        }
    }
    Err(code::STREAM_CAPTURE_IMPLICIT)
}

/// Allocation and other potentially unsafe calls fail during a global-mode capture
/// (any thread) and on a thread capturing in thread-local mode, and invalidate the
/// caller's captures.
pub fn refuse_in_capture() -> Result<(), i32> {
    let mine = CAPTURING.with(|c| !c.borrow().is_empty());
    if mine || GLOBAL_CAPTURES.load(Ordering::Acquire) > 0 {
        let _ = invalidate_own_captures();
        return Err(code::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// A capturing stream cannot be waited for: the capture is invalidated.
fn refuse_capturing(s: &Stream) -> Result<(), i32> {
    if let Some(c) = s.q.lock().unwrap().capture.as_mut() {
        c.invalidated = true;
        return Err(code::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// Waits for every stream of `ctx`.
pub fn synchronize_context(ctx: &'static Context) -> Result<(), i32> {
    let handles: Vec<usize> = STREAMS.lock().unwrap().clone();
    for h in handles {
        // SAFETY: live handles made by new_stream.
        let s = unsafe { &*(h as *const Stream) };
        if std::ptr::eq(s.ctx, ctx) {
            refuse_capturing(s)?;
            s.wait_idle()?;
        }
    }
    Ok(())
}

/// Waits for a context's streams before it is torn down (errors do not matter then).
pub fn drain_context(ctx: &'static Context) {
    let handles: Vec<usize> = STREAMS.lock().unwrap().clone();
    for h in handles {
        // SAFETY: live handles made by new_stream.
        let s = unsafe { &*(h as *const Stream) };
        if std::ptr::eq(s.ctx, ctx) {
            let _ = s.wait_idle();
        }
    }
}

#[no_mangle]
pub extern "C" fn cuStreamCreate(out_stream: *mut CUstream, _flags: c_uint) -> CUresult {
    if out_stream.is_null() {
        return code::INVALID_VALUE;
    }
    match driver::current() {
        Ok(ctx) => out(out_stream, new_stream(ctx) as CUstream),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(h: CUstream) -> CUresult {
    let hu = h as usize;
    let mut streams = STREAMS.lock().unwrap();
    let Some(i) = streams.iter().position(|&x| x == hu) else {
        return code::INVALID_HANDLE;
    };
    streams.remove(i);
    drop(streams);
    // SAFETY: the handle was live; the stream itself is never freed (its thread
    // drains what is queued, then ends).
    let s = unsafe { &*(hu as *const Stream) };
    s.q.lock().unwrap().closing = true;
    s.cv.notify_all();
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuStreamQuery(h: CUstream) -> CUresult {
    let s = match resolve(h) {
        Ok(s) => s,
        Err(e) => return e,
    };
    if let Err(e) = refuse_capturing(s) {
        return e;
    }
    let q = s.q.lock().unwrap();
    let busy = q.completed < q.submitted;
    drop(q);
    if let Err(e) = s.ctx.check() {
        return e;
    }
    if busy {
        code::NOT_READY
    } else {
        code::SUCCESS
    }
}

#[no_mangle]
pub extern "C" fn cuStreamSynchronize(h: CUstream) -> CUresult {
    result(resolve(h).and_then(|s| {
        refuse_capturing(s)?;
        s.wait_idle()
    }))
}

#[no_mangle]
pub extern "C" fn cuStreamBeginCapture_v2(h: CUstream, mode: c_uint) -> CUresult {
    if is_legacy(h) {
        return code::STREAM_CAPTURE_UNSUPPORTED;
    }
    let s = match resolve(h) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mut q = s.q.lock().unwrap();
    if q.capture.is_some() {
        return code::ILLEGAL_STATE;
    }
    q.capture = Some(Capture {
        ops: Vec::new(),
        mode,
        thread: std::thread::current().id(),
        invalidated: false,
    });
    if mode == 0 {
        GLOBAL_CAPTURES.fetch_add(1, Ordering::AcqRel);
    }
    if mode != 2 {
        CAPTURING.with(|c| c.borrow_mut().insert(h as usize));
    }
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuStreamEndCapture(h: CUstream, graph: *mut CUgraph) -> CUresult {
    if graph.is_null() {
        return code::INVALID_VALUE;
    }
    let s = match resolve(h) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mut q = s.q.lock().unwrap();
    let Some(c) = q.capture.as_ref() else {
        return code::ILLEGAL_STATE;
    };
    if c.mode != 2 && c.thread != std::thread::current().id() {
        if let Some(c) = q.capture.as_mut() {
            c.invalidated = true;
        }
        return code::STREAM_CAPTURE_WRONG_THREAD;
    }
    let c = q.capture.take().expect("checked above");
    drop(q);
    if c.mode == 0 {
        GLOBAL_CAPTURES.fetch_sub(1, Ordering::AcqRel);
    }
    CAPTURING.with(|set| set.borrow_mut().remove(&(h as usize)));
    if c.invalidated {
        out(graph, std::ptr::null_mut());
        return code::STREAM_CAPTURE_INVALIDATED;
    }
    let g = Box::into_raw(Box::new(c.ops)) as usize;
    GRAPHS.lock().unwrap().push(g);
    out(graph, g as CUgraph)
}

fn graph_ops(set: &Mutex<Vec<usize>>, h: *mut c_void) -> Result<&'static Vec<Op>, i32> {
    if !live(set, h as usize) {
        return Err(code::INVALID_HANDLE);
    }
    // SAFETY: a live graph handle made by Box::into_raw of a Vec<Op>.
    Ok(unsafe { &*(h as *const Vec<Op>) })
}

fn destroy_graph(set: &Mutex<Vec<usize>>, h: *mut c_void) -> CUresult {
    let mut v = set.lock().unwrap();
    let Some(i) = v.iter().position(|&x| x == h as usize) else {
        return code::INVALID_HANDLE;
    };
    v.remove(i);
    // SAFETY: made by Box::into_raw and removed from the live set, so freed once.
    drop(unsafe { Box::from_raw(h as *mut Vec<Op>) });
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut CUgraphExec,
    graph: CUgraph,
    _flags: u64,
) -> CUresult {
    if exec.is_null() {
        return code::INVALID_VALUE;
    }
    match graph_ops(&GRAPHS, graph) {
        Ok(ops) => {
            let e = Box::into_raw(Box::new(ops.clone())) as usize;
            EXECS.lock().unwrap().push(e);
            out(exec, e as CUgraphExec)
        }
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuGraphUpload(exec: CUgraphExec, h: CUstream) -> CUresult {
    result(graph_ops(&EXECS, exec).and_then(|_| resolve(h).map(|_| ())))
}

#[no_mangle]
pub extern "C" fn cuGraphLaunch(exec: CUgraphExec, h: CUstream) -> CUresult {
    let ops = match graph_ops(&EXECS, exec) {
        Ok(ops) => ops,
        Err(e) => return e,
    };
    for op in ops {
        if let Err(e) = submit(h, op.clone()) {
            return e;
        }
    }
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuGraphExecDestroy(exec: CUgraphExec) -> CUresult {
    destroy_graph(&EXECS, exec)
}

#[no_mangle]
pub extern "C" fn cuGraphDestroy(graph: CUgraph) -> CUresult {
    destroy_graph(&GRAPHS, graph)
}

fn copy(dst: u64, src: u64, len: usize, h: CUstream, check: (bool, bool)) -> CUresult {
    for (ptr, device) in [(dst, check.0), (src, check.1)] {
        if device {
            if let Err(e) = driver::check_range(ptr, len) {
                return e;
            }
        } else if ptr == 0 && len > 0 {
            return code::INVALID_VALUE;
        }
    }
    result(submit(
        h,
        Op::Copy {
            dst,
            src,
            len,
            device: check,
            peer: None,
        },
    ))
}

#[no_mangle]
pub extern "C" fn cuMemcpyPeerAsync(
    dst: CUdeviceptr,
    dst_ctx: driver::CUcontext,
    src: CUdeviceptr,
    src_ctx: driver::CUcontext,
    len: usize,
    h: CUstream,
) -> CUresult {
    let devices =
        driver::context_device(dst_ctx).and_then(|d| Ok((d, driver::context_device(src_ctx)?)));
    let (to, from) = match devices {
        Ok(d) => d,
        Err(e) => return e,
    };
    // Each pointer must lie in memory of its context's device (what a real driver
    // does with a mismatch is undefined; the stand-in refuses it).
    for (ptr, device) in [(dst, to), (src, from)] {
        match driver::check_range(ptr, len) {
            Ok(d) if d == device => {}
            Ok(_) => return code::INVALID_VALUE,
            Err(e) => return e,
        }
    }
    result(submit(
        h,
        Op::Copy {
            dst,
            src,
            len,
            device: (true, true),
            peer: (to != from).then(|| {
                let d = driver::driver();
                (
                    driver::peer_direct(from, to),
                    d.physical(from),
                    d.physical(to),
                )
            }),
        },
    ))
}

#[no_mangle]
pub extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    len: usize,
    h: CUstream,
) -> CUresult {
    copy(dst, src as u64, len, h, (true, false))
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    len: usize,
    h: CUstream,
) -> CUresult {
    copy(dst as u64, src, len, h, (false, true))
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    len: usize,
    h: CUstream,
) -> CUresult {
    copy(dst, src, len, h, (true, true))
}

#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    value: u8,
    len: usize,
    h: CUstream,
) -> CUresult {
    if let Err(e) = driver::check_range(dst, len) {
        return e;
    }
    result(submit(h, Op::Set { dst, value, len }))
}

/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: c_uint = 0x2;

pub struct Event {
    ctx: &'static Context,
    flags: c_uint,
    st: Mutex<EventState>,
    cv: Condvar,
}

#[derive(Default)]
struct EventState {
    /// Generation of the last record enqueued (0: never recorded).
    recorded_gen: u64,
    /// Generation the stream has reached.
    done_gen: u64,
    time_ns: u64,
    /// Last recorded in a capturing stream.
    captured: bool,
}

fn event_of(h: CUevent) -> Result<Arc<Event>, i32> {
    let events = EVENTS.lock().unwrap();
    if h.is_null() || !events.contains(&(h as usize)) {
        return Err(code::INVALID_HANDLE);
    }
    // SAFETY: a live handle made by Arc::into_raw; one more reference is taken while
    // the list is locked, so a concurrent destroy cannot free it in between.
    let e = unsafe {
        Arc::increment_strong_count(h as *const Event);
        Arc::from_raw(h as *const Event)
    };
    drop(events);
    e.ctx.check()?;
    Ok(e)
}

#[no_mangle]
pub extern "C" fn cuEventCreate(out_event: *mut CUevent, flags: c_uint) -> CUresult {
    if out_event.is_null() {
        return code::INVALID_VALUE;
    }
    let ctx = match driver::current() {
        Ok(c) => c,
        Err(e) => return e,
    };
    let e = Arc::into_raw(Arc::new(Event {
        ctx,
        flags,
        st: Mutex::new(EventState::default()),
        cv: Condvar::new(),
    })) as usize;
    EVENTS.lock().unwrap().push(e);
    out(out_event, e as CUevent)
}

#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(h: CUevent) -> CUresult {
    let mut v = EVENTS.lock().unwrap();
    let Some(i) = v.iter().position(|&x| x == h as usize) else {
        return code::INVALID_HANDLE;
    };
    v.remove(i);
    // SAFETY: the reference made by cuEventCreate, released once; queued records
    // hold their own.
    drop(unsafe { Arc::from_raw(h as *const Event) });
    code::SUCCESS
}

/// Whether the device waits for the host's enqueue (`NCCL_BENCH_SIM_HOST_PACED`).
fn host_paced() -> bool {
    static PACED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PACED.get_or_init(|| crate::env_u64("NCCL_BENCH_SIM_HOST_PACED", 0) != 0)
}

/// The host time of one `cuEventRecord` (`NCCL_BENCH_SIM_EVENT_RECORD_NS`).
fn record_cost() -> std::time::Duration {
    static COST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    std::time::Duration::from_nanos(
        *COST.get_or_init(|| crate::env_u64("NCCL_BENCH_SIM_EVENT_RECORD_NS", 0)),
    )
}

#[no_mangle]
pub extern "C" fn cuEventRecord(h: CUevent, stream: CUstream) -> CUresult {
    let cost = record_cost();
    if !cost.is_zero() {
        let until = std::time::Instant::now() + cost;
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    match event_of(h) {
        Ok(e) => result(submit(stream, Op::Record(e, 0))),
        Err(e) => e,
    }
}

/// `Ok(true)` when the event's last record has been reached (or it never was).
fn event_done(e: &Event) -> Result<bool, i32> {
    let st = e.st.lock().unwrap();
    if st.captured {
        return Err(code::CAPTURED_EVENT);
    }
    Ok(st.done_gen >= st.recorded_gen)
}

#[no_mangle]
pub extern "C" fn cuEventQuery(h: CUevent) -> CUresult {
    match event_of(h).and_then(|e| event_done(&e)) {
        Ok(true) => code::SUCCESS,
        Ok(false) => code::NOT_READY,
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuEventSynchronize(h: CUevent) -> CUresult {
    let e = match event_of(h) {
        Ok(e) => e,
        Err(e) => return e,
    };
    if let Err(err) = event_done(&e) {
        return err;
    }
    let mut st = e.st.lock().unwrap();
    while st.done_gen < st.recorded_gen {
        st = e.cv.wait(st).unwrap();
    }
    code::SUCCESS
}

/// The resolution of event times (`NCCL_BENCH_SIM_EVENT_GRAIN_NS`): real events
/// resolve to about half a microsecond (CUDA's documentation of
/// `cudaEventElapsedTime`), so 500 ns by default; at least 1.
fn event_grain_ns() -> u64 {
    static GRAIN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *GRAIN.get_or_init(|| crate::env_u64("NCCL_BENCH_SIM_EVENT_GRAIN_NS", 500).max(1))
}

#[no_mangle]
pub extern "C" fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    let (a, b) = match (event_of(start), event_of(end)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    if ms.is_null() {
        return code::INVALID_VALUE;
    }
    if !std::ptr::eq(a.ctx, b.ctx) {
        return code::INVALID_CONTEXT;
    }
    let mut times = [0u64; 2];
    for (i, e) in [&a, &b].into_iter().enumerate() {
        if e.flags & DISABLE_TIMING != 0 {
            return code::INVALID_HANDLE;
        }
        let st = e.st.lock().unwrap();
        if st.recorded_gen == 0 {
            return code::INVALID_HANDLE;
        }
        if st.done_gen < st.recorded_gen {
            return code::NOT_READY;
        }
        times[i] = st.time_ns / event_grain_ns() * event_grain_ns();
    }
    let ns = times[1] as i128 - times[0] as i128;
    out(ms, (ns as f64 / 1e6) as f32)
}
