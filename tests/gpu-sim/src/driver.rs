//! The CUDA driver API: initialization, devices, primary contexts and the current
//! context per thread, device memory. Streams, events and graphs are in `stream`.
//!
//! Device memory is host memory (anonymous mappings) handed out as `CUdeviceptr`;
//! every pointer an operation is given is checked against the live allocations, so a
//! freed or out-of-range pointer is `CUDA_ERROR_INVALID_VALUE`, not a crash. The
//! return codes are the ones a real driver (555.x on an H100) gives for the same
//! misuse.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::fault::{self, Fault};
use crate::stream;
use crate::topo::{self, Gpu, Topology};

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;

/// `CUresult` values.
pub mod code {
    pub const SUCCESS: i32 = 0;
    pub const INVALID_VALUE: i32 = 1;
    pub const OUT_OF_MEMORY: i32 = 2;
    pub const NOT_INITIALIZED: i32 = 3;
    pub const INVALID_DEVICE: i32 = 101;
    pub const PEER_ACCESS_UNSUPPORTED: i32 = 217;
    pub const INVALID_CONTEXT: i32 = 201;
    pub const INVALID_HANDLE: i32 = 400;
    pub const ILLEGAL_STATE: i32 = 401;
    pub const NOT_READY: i32 = 600;
    pub const ILLEGAL_ADDRESS: i32 = 700;
    pub const PEER_ACCESS_ALREADY_ENABLED: i32 = 704;
    pub const CONTEXT_IS_DESTROYED: i32 = 709;
    pub const STREAM_CAPTURE_UNSUPPORTED: i32 = 900;
    pub const STREAM_CAPTURE_INVALIDATED: i32 = 901;
    pub const STREAM_CAPTURE_IMPLICIT: i32 = 906;
    pub const CAPTURED_EVENT: i32 = 907;
    pub const STREAM_CAPTURE_WRONG_THREAD: i32 = 908;
}

/// (code, name, text) as `cuGetErrorName` and `cuGetErrorString` give them.
const ERRORS: [(i32, &str, &str); 18] = [
    (0, "CUDA_SUCCESS\0", "no error\0"),
    (1, "CUDA_ERROR_INVALID_VALUE\0", "invalid argument\0"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY\0", "out of memory\0"),
    (3, "CUDA_ERROR_NOT_INITIALIZED\0", "initialization error\0"),
    (
        101,
        "CUDA_ERROR_INVALID_DEVICE\0",
        "invalid device ordinal\0",
    ),
    (
        217,
        "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED\0",
        "peer access is not supported between these two devices\0",
    ),
    (
        201,
        "CUDA_ERROR_INVALID_CONTEXT\0",
        "invalid device context\0",
    ),
    (
        400,
        "CUDA_ERROR_INVALID_HANDLE\0",
        "invalid resource handle\0",
    ),
    (
        401,
        "CUDA_ERROR_ILLEGAL_STATE\0",
        "the operation cannot be performed in the present state\0",
    ),
    (600, "CUDA_ERROR_NOT_READY\0", "device not ready\0"),
    (
        700,
        "CUDA_ERROR_ILLEGAL_ADDRESS\0",
        "an illegal memory access was encountered\0",
    ),
    (
        704,
        "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED\0",
        "peer access is already enabled\0",
    ),
    (
        709,
        "CUDA_ERROR_CONTEXT_IS_DESTROYED\0",
        "context is destroyed\0",
    ),
    (
        900,
        "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED\0",
        "operation not permitted when stream is capturing\0",
    ),
    (
        901,
        "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED\0",
        "operation failed due to a previous error during capture\0",
    ),
    (
        906,
        "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT\0",
        "operation would make the legacy stream depend on a capturing blocking stream\0",
    ),
    (
        907,
        "CUDA_ERROR_CAPTURED_EVENT\0",
        "operation not permitted on an event last recorded in a capturing stream\0",
    ),
    (
        908,
        "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD\0",
        "attempt to terminate a thread-local capture sequence from another thread\0",
    ),
];

pub fn error_text(code: i32) -> &'static str {
    ERRORS
        .iter()
        .find(|e| e.0 == code)
        .map(|e| e.2.trim_end_matches('\0'))
        .unwrap_or("unknown error")
}

/// A context: the primary context of one device.
pub struct Context {
    pub device: usize,
    alive: AtomicBool,
    /// A sticky error (an illegal address met by a stream): every later call fails.
    sticky: AtomicI32,
    refs: Mutex<u32>,
    /// The legacy default stream (`NULL`), created on first use.
    pub(crate) legacy: OnceLock<usize>,
    /// Devices whose memory this context was given access to (cuCtxEnablePeerAccess),
    /// by their machine index.
    peers: Mutex<Vec<usize>>,
}

impl Context {
    pub fn check(&self) -> Result<(), i32> {
        if !self.alive.load(Ordering::Acquire) {
            return Err(code::CONTEXT_IS_DESTROYED);
        }
        match self.sticky.load(Ordering::Acquire) {
            0 => Ok(()),
            e => Err(e),
        }
    }

    pub fn set_sticky(&self, e: i32) {
        let _ = self
            .sticky
            .compare_exchange(0, e, Ordering::AcqRel, Ordering::Acquire);
    }
}

struct Alloc {
    len: usize,
    mapped: usize,
    device: usize,
}

pub struct Driver {
    pub gpus: Vec<Gpu>,
    pub topo: Topology,
    initialized: AtomicBool,
    contexts: Vec<&'static Context>,
    allocs: Mutex<BTreeMap<u64, Alloc>>,
    used: Vec<AtomicU64>,
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

pub fn driver() -> &'static Driver {
    DRIVER.get_or_init(|| {
        let gpus = topo::gpus();
        let contexts = (0..gpus.len())
            .map(|device| {
                &*Box::leak(Box::new(Context {
                    device,
                    alive: AtomicBool::new(false),
                    sticky: AtomicI32::new(0),
                    refs: Mutex::new(0),
                    legacy: OnceLock::new(),
                    peers: Mutex::new(Vec::new()),
                }))
            })
            .collect();
        Driver {
            used: gpus.iter().map(|_| AtomicU64::new(0)).collect(),
            gpus,
            topo: Topology::from_env(),
            initialized: AtomicBool::new(false),
            contexts,
            allocs: Mutex::new(BTreeMap::new()),
        }
    })
}

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

fn initialized() -> Result<&'static Driver, i32> {
    let d = driver();
    if d.initialized.load(Ordering::Acquire) {
        Ok(d)
    } else {
        Err(code::NOT_INITIALIZED)
    }
}

/// The calling thread's current context, live.
pub fn current() -> Result<&'static Context, i32> {
    initialized()?;
    let ptr = CURRENT.with(Cell::get);
    if ptr == 0 {
        return Err(code::INVALID_CONTEXT);
    }
    // SAFETY: only pointers to the leaked contexts are ever made current.
    let ctx = unsafe { &*(ptr as *const Context) };
    ctx.check()?;
    Ok(ctx)
}

/// A context handle from the caller, if it is one of ours.
fn context_of(handle: CUcontext) -> Option<&'static Context> {
    driver()
        .contexts
        .iter()
        .copied()
        .find(|c| std::ptr::eq(*c, handle as *const Context))
}

fn device(dev: CUdevice) -> Result<(&'static Driver, usize), i32> {
    let d = initialized()?;
    usize::try_from(dev)
        .ok()
        .filter(|&i| i < d.gpus.len())
        .map(|i| (d, i))
        .ok_or(code::INVALID_DEVICE)
}

/// Gives device `device`'s context a sticky error (what a faulting kernel does).
pub fn fault_device(device: usize, code: i32) {
    if let Some(c) = driver().contexts.get(device) {
        c.set_sticky(code);
    }
}

/// Checks that `[ptr, ptr + len)` lies within one live allocation; its device.
pub fn check_range(ptr: CUdeviceptr, len: usize) -> Result<usize, i32> {
    let allocs = driver().allocs.lock().unwrap();
    let (start, a) = allocs
        .range(..=ptr)
        .next_back()
        .ok_or(code::INVALID_VALUE)?;
    let end = start + a.len as u64;
    if ptr >= start + a.len.max(1) as u64 || ptr + len as u64 > end {
        return Err(code::INVALID_VALUE);
    }
    Ok(a.device)
}

pub(crate) fn out<T>(p: *mut T, v: T) -> CUresult {
    if p.is_null() {
        return code::INVALID_VALUE;
    }
    // SAFETY: a non-null out-parameter from the caller.
    unsafe { p.write(v) };
    code::SUCCESS
}

pub(crate) fn result(r: Result<(), i32>) -> CUresult {
    match r {
        Ok(()) => code::SUCCESS,
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    if flags != 0 {
        return code::INVALID_VALUE;
    }
    driver().initialized.store(true, Ordering::Release);
    code::SUCCESS
}

/// The CUDA version the simulated driver supports (`NCCL_BENCH_SIM_DRIVER`, 12040).
pub(crate) fn driver_version() -> c_int {
    crate::env("NCCL_BENCH_SIM_DRIVER")
        .and_then(|v| v.parse().ok())
        .unwrap_or(12040)
}

#[no_mangle]
pub extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    out(version, driver_version())
}

#[no_mangle]
pub extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    match initialized() {
        Ok(d) => out(count, d.gpus.len() as c_int),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) -> CUresult {
    match device(ordinal) {
        Ok(_) => out(dev, ordinal),
        Err(e) => e,
    }
}

/// Copies `text` and a NUL into the caller's `buf` of `len` bytes (truncated).
fn write_c(buf: *mut c_char, len: c_int, text: &str) -> CUresult {
    if buf.is_null() || len <= 0 {
        return code::INVALID_VALUE;
    }
    let n = text.len().min(len as usize - 1);
    // SAFETY: the caller's buffer holds len bytes; n + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), buf, n);
        *buf.add(n) = 0;
    }
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    match device(dev) {
        Ok((d, i)) => write_c(name, len, &d.gpus[i].name),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    match device(dev) {
        Ok((d, i)) => out(bytes, d.gpus[i].total_bytes as usize),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuDeviceGetPCIBusId(bus: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    match device(dev) {
        Ok((d, i)) => write_c(bus, len, &d.gpus[i].bus_id()),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attrib: c_int,
    dev: CUdevice,
) -> CUresult {
    if let Err(e) = device(dev) {
        return e;
    }
    let v = match attrib {
        1 => 1024, // MAX_THREADS_PER_BLOCK
        16 => 132, // MULTIPROCESSOR_COUNT
        33 => 1,   // PCI_BUS_ID (the bus is in the id string)
        75 => 9,   // COMPUTE_CAPABILITY_MAJOR
        76 => 0,   // COMPUTE_CAPABILITY_MINOR
        115 => 1,  // MEMORY_POOLS_SUPPORTED
        a if (1..=140).contains(&a) => 0,
        _ => return code::INVALID_VALUE,
    };
    out(value, v)
}

#[no_mangle]
pub extern "C" fn cuDeviceCanAccessPeer(
    can: *mut c_int,
    dev: CUdevice,
    peer: CUdevice,
) -> CUresult {
    match (device(dev), device(peer)) {
        (Ok((d, a)), Ok((_, b))) => out(
            can,
            c_int::from(d.topo.peer_access(d.physical(a), d.physical(b))),
        ),
        (Err(e), _) | (_, Err(e)) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    let (d, i) = match device(dev) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let c = d.contexts[i];
    let mut refs = c.refs.lock().unwrap();
    *refs += 1;
    c.alive.store(true, Ordering::Release);
    out(ctx, c as *const Context as CUcontext)
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    let (d, i) = match device(dev) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let c = d.contexts[i];
    let mut refs = c.refs.lock().unwrap();
    if *refs == 0 {
        return code::INVALID_CONTEXT;
    }
    *refs -= 1;
    if *refs == 0 {
        stream::drain_context(c);
        c.alive.store(false, Ordering::Release);
    }
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    if let Err(e) = initialized() {
        return e;
    }
    if ctx.is_null() {
        CURRENT.with(|c| c.set(0));
        return code::SUCCESS;
    }
    match context_of(ctx) {
        Some(c) => {
            CURRENT.with(|cur| cur.set(c as *const Context as usize));
            code::SUCCESS
        }
        None => code::INVALID_CONTEXT,
    }
}

#[no_mangle]
pub extern "C" fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CUresult {
    if let Err(e) = initialized() {
        return e;
    }
    out(ctx, CURRENT.with(Cell::get) as CUcontext)
}

/// Allocates `bytes` of simulated device memory on the current context's device.
pub(crate) fn alloc(bytes: usize) -> Result<CUdeviceptr, i32> {
    let ctx = current()?;
    stream::refuse_in_capture()?;
    if bytes == 0 {
        return Err(code::INVALID_VALUE);
    }
    alloc_on(ctx.device, bytes)
}

/// Allocates `bytes` of device memory on `device` (a CUDA ordinal of this process),
/// as a library does that holds the device's context (NCCL's own buffers).
pub(crate) fn alloc_on(device: usize, bytes: usize) -> Result<CUdeviceptr, i32> {
    let d = driver();
    let total = d.gpus.get(device).ok_or(code::INVALID_DEVICE)?.total_bytes;
    let used = &d.used[device];
    if fault::active(Fault::OutOfMemory, device as u32)
        || used.fetch_add(bytes as u64, Ordering::AcqRel) + bytes as u64 > total
    {
        used.fetch_sub(bytes as u64, Ordering::AcqRel);
        return Err(code::OUT_OF_MEMORY);
    }
    let mapped = bytes.div_ceil(4096) * 4096;
    // SAFETY: an anonymous private mapping; the kernel zero-fills it lazily, so a
    // gigabyte costs nothing until it is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        used.fetch_sub(bytes as u64, Ordering::AcqRel);
        return Err(code::OUT_OF_MEMORY);
    }
    note_device_write();
    d.allocs.lock().unwrap().insert(
        p as u64,
        Alloc {
            len: bytes,
            mapped,
            device,
        },
    );
    Ok(p as u64)
}

/// Writes to device memory this process made other than by a collective: copies
/// into it, memsets, allocations and frees (a new allocation can reuse an old one's
/// addresses). A collective repeated with nothing written since computes what its
/// receive buffers already hold (`nccl::work`).
static DEVICE_WRITES: AtomicU64 = AtomicU64::new(0);

/// Counts a write to device memory (see [`device_writes`]).
pub(crate) fn note_device_write() {
    DEVICE_WRITES.fetch_add(1, Ordering::AcqRel);
}

/// How many writes to device memory, other than a collective's, this process made.
pub(crate) fn device_writes() -> u64 {
    DEVICE_WRITES.load(Ordering::Acquire)
}

/// Frees an allocation made by `alloc` (its start address).
pub(crate) fn free(ptr: CUdeviceptr) -> Result<(), i32> {
    note_device_write();
    let d = driver();
    let a = d
        .allocs
        .lock()
        .unwrap()
        .remove(&ptr)
        .ok_or(code::INVALID_VALUE)?;
    d.used[a.device].fetch_sub(a.len as u64, Ordering::AcqRel);
    // SAFETY: the mapping was made by `alloc` with this length and is no longer
    // handed out (removed above).
    unsafe { libc::munmap(ptr as *mut c_void, a.mapped) };
    Ok(())
}

/// Whether `ptr` starts a live allocation.
pub(crate) fn is_allocation(ptr: CUdeviceptr) -> bool {
    driver().allocs.lock().unwrap().contains_key(&ptr)
}

#[no_mangle]
pub extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) -> CUresult {
    match alloc(bytes) {
        Ok(p) => out(dptr, p),
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytes: usize,
    stream: stream::CUstream,
) -> CUresult {
    if let Err(e) = stream::resolve(stream) {
        return e;
    }
    // Stream-ordered allocation: usable by work enqueued after this call, which is
    // any work, as the memory exists from now on.
    cuMemAlloc_v2(dptr, bytes)
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    // Like cudaFree, waits for the context's work first: nothing in flight may still
    // touch the memory.
    let r = current()
        .and_then(stream::synchronize_context)
        .and_then(|()| free(dptr));
    result(r)
}

#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, stream: stream::CUstream) -> CUresult {
    if !is_allocation(dptr) {
        return code::INVALID_VALUE;
    }
    result(stream::submit(stream, stream::Op::Free(dptr)))
}

fn error_lookup(code: CUresult, which: usize, text: *mut *const c_char) -> CUresult {
    match ERRORS.iter().find(|e| e.0 == code) {
        Some(e) => out(
            text,
            if which == 0 {
                e.1.as_ptr()
            } else {
                e.2.as_ptr()
            }
            .cast(),
        ),
        None => {
            out(text, std::ptr::null());
            code::INVALID_VALUE
        }
    }
}

#[no_mangle]
pub extern "C" fn cuGetErrorName(code: CUresult, text: *mut *const c_char) -> CUresult {
    error_lookup(code, 0, text)
}

#[no_mangle]
pub extern "C" fn cuGetErrorString(code: CUresult, text: *mut *const c_char) -> CUresult {
    error_lookup(code, 1, text)
}

/// Whether a copy between the memory of devices `a` and `b` goes directly over the
/// link: the topology has peer access and one side's context enabled it.
pub fn peer_direct(a: usize, b: usize) -> bool {
    let Ok(d) = initialized() else {
        return false;
    };
    // Contexts by ordinal, the peers they were given by machine index.
    let enabled = |from: usize, to: usize| {
        d.contexts
            .get(from)
            .is_some_and(|c| c.peers.lock().unwrap().contains(&d.physical(to)))
    };
    d.topo.peer_access(d.physical(a), d.physical(b)) && (enabled(a, b) || enabled(b, a))
}

impl Driver {
    /// The machine's index (NCCL's `nvmlDev`) of the GPU this process calls
    /// `ordinal` (after `CUDA_VISIBLE_DEVICES`).
    pub fn physical(&self, ordinal: usize) -> usize {
        self.gpus.get(ordinal).map_or(ordinal, |g| g.index)
    }
}

/// The device of a context handle, when it is one of ours and alive.
pub fn context_device(handle: CUcontext) -> Result<usize, i32> {
    let c = context_of(handle).ok_or(code::INVALID_CONTEXT)?;
    c.check()?;
    Ok(c.device)
}

/// The rules of `cuCtxEnablePeerAccess` from device `me` to device `other` on
/// `topo`, given the devices `me` already reaches (`peers`, updated on success): its
/// own context is not a peer (`CUDA_ERROR_INVALID_CONTEXT`), a pair without peer
/// access is `CUDA_ERROR_PEER_ACCESS_UNSUPPORTED`, a second time is
/// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED`.
pub fn grant_peer(
    topo: Topology,
    me: usize,
    other: usize,
    peers: &mut Vec<usize>,
) -> Result<(), i32> {
    if other == me {
        return Err(code::INVALID_CONTEXT);
    }
    if !topo.peer_access(me, other) {
        return Err(code::PEER_ACCESS_UNSUPPORTED);
    }
    if peers.contains(&other) {
        return Err(code::PEER_ACCESS_ALREADY_ENABLED);
    }
    peers.push(other);
    Ok(())
}

#[no_mangle]
pub extern "C" fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> CUresult {
    let r = (|| {
        let me = current()?;
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let other = context_of(peer).ok_or(code::INVALID_CONTEXT)?;
        if !other.alive.load(Ordering::Acquire) {
            return Err(code::INVALID_CONTEXT);
        }
        let d = driver();
        grant_peer(
            d.topo,
            d.physical(me.device),
            d.physical(other.device),
            &mut me.peers.lock().unwrap(),
        )
    })();
    result(r)
}

/// `CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED`.
const HOST_ALLOC_FLAGS: c_uint = 0x1 | 0x2 | 0x4;

/// Page-locked host allocations: address -> layout.
static HOST: Mutex<BTreeMap<usize, std::alloc::Layout>> = Mutex::new(BTreeMap::new());

/// Page-locked host memory (here plain, page-aligned host memory): it needs a
/// current context, as on a real driver, and is valid in every context.
#[no_mangle]
pub extern "C" fn cuMemHostAlloc(pp: *mut *mut c_void, bytes: usize, flags: c_uint) -> CUresult {
    if let Err(e) = current() {
        return e;
    }
    if flags & !HOST_ALLOC_FLAGS != 0 {
        return code::INVALID_VALUE;
    }
    let Ok(layout) = std::alloc::Layout::from_size_align(bytes.max(1), 4096) else {
        return code::INVALID_VALUE;
    };
    // SAFETY: a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return code::OUT_OF_MEMORY;
    }
    HOST.lock().unwrap().insert(p as usize, layout);
    out(pp, p as *mut c_void)
}

#[no_mangle]
pub extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    let Some(layout) = HOST.lock().unwrap().remove(&(p as usize)) else {
        return code::INVALID_VALUE;
    };
    // SAFETY: allocated by cuMemHostAlloc with this layout, removed from the map once.
    unsafe { std::alloc::dealloc(p as *mut u8, layout) };
    code::SUCCESS
}
