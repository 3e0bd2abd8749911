//! Layer 1: the raw C ABI of libnccl, resolved with libloading. Required symbols
//! fail loading with the name of the missing one; symbols newer releases added
//! (`ncclGetLastError` 2.13+, `ncclCommFinalize` 2.14+, `ncclMemAlloc`,
//! `ncclCommRegister` and their frees 2.19+, `ncclGroupSimulateEnd` 2.22+,
//! `ncclCommWindowRegister` 2.27+, `ncclAlltoAll`, `ncclGather` and `ncclScatter`
//! 2.28+) are optional, and so
//! are the collectives beside all-reduce: a library without one cannot run that
//! collective (`Nccl::runs`), and a sweep asking for it is refused.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use libloading::Library;

/// `ncclResult_t`.
pub type NcclResult = c_int;
/// `ncclComm_t`, an opaque pointer.
pub type RawComm = *mut c_void;
/// `cudaStream_t`, an opaque pointer.
pub type RawStream = *mut c_void;

/// Bytes of `ncclUniqueId`.
pub const UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`, passed by value to `ncclCommInitRank`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueIdRaw {
    pub internal: [c_char; UNIQUE_ID_BYTES],
}

type GetVersion = unsafe extern "C" fn(*mut c_int) -> NcclResult;
type GetUniqueId = unsafe extern "C" fn(*mut UniqueIdRaw) -> NcclResult;
type CommInitRank = unsafe extern "C" fn(*mut RawComm, c_int, UniqueIdRaw, c_int) -> NcclResult;
type AllReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    RawComm,
    RawStream,
) -> NcclResult;
/// `ncclAllGather`, `ncclAlltoAll` (send buffer, receive buffer, count per peer,
/// datatype, comm, stream).
type Exchange = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    RawComm,
    RawStream,
) -> NcclResult;
/// `ncclReduceScatter` (its count is the receive count).
type ReduceScatter = AllReduce;
/// `ncclBroadcast`, `ncclGather`, `ncclScatter` (..., datatype, root, comm, stream).
type Rooted = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    RawComm,
    RawStream,
) -> NcclResult;
/// `ncclReduce` (..., datatype, op, root, comm, stream).
type Reduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    c_int,
    RawComm,
    RawStream,
) -> NcclResult;
/// `ncclSend` (buffer, count, datatype, peer, comm, stream); `ncclRecv` takes a
/// mutable buffer in the same place.
type PointToPoint =
    unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, RawStream) -> NcclResult;
type CommOp = unsafe extern "C" fn(RawComm) -> NcclResult;
type CommGetAsyncError = unsafe extern "C" fn(RawComm, *mut NcclResult) -> NcclResult;
type GetErrorString = unsafe extern "C" fn(NcclResult) -> *const c_char;
type GetLastError = unsafe extern "C" fn(RawComm) -> *const c_char;
type Group = unsafe extern "C" fn() -> NcclResult;
type GroupSimulateEnd = unsafe extern "C" fn(*mut SimInfo) -> NcclResult;
/// `ncclMemAlloc(void** ptr, size_t size)`.
type MemAlloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> NcclResult;
/// `ncclMemFree(void* ptr)`.
type MemFree = unsafe extern "C" fn(*mut c_void) -> NcclResult;
/// `ncclCommRegister(comm, buff, size, void** handle)`.
type CommRegister =
    unsafe extern "C" fn(RawComm, *mut c_void, usize, *mut *mut c_void) -> NcclResult;
/// `ncclCommDeregister(comm, handle)` and `ncclCommWindowDeregister(comm, win)`.
type CommDeregister = unsafe extern "C" fn(RawComm, *mut c_void) -> NcclResult;
/// `ncclCommWindowRegister(comm, buff, size, ncclWindow_t* win, int winFlags)`.
type CommWindowRegister =
    unsafe extern "C" fn(RawComm, *mut c_void, usize, *mut *mut c_void, c_int) -> NcclResult;

/// `ncclSimInfo_t` (nccl.h, 2.22+), set up as `NCCL_SIM_INFO_INITIALIZER` does.
#[repr(C)]
pub struct SimInfo {
    pub size: usize,
    pub magic: u32,
    pub version: u32,
    /// NCCL's estimate of the group's operations, microseconds.
    pub estimated_time: f32,
}

impl SimInfo {
    pub fn new(version_code: i32) -> SimInfo {
        SimInfo {
            size: std::mem::size_of::<SimInfo>(),
            magic: 0x7468_5283,
            version: version_code as u32,
            // NCCL_UNDEF_FLOAT
            estimated_time: -1.0,
        }
    }
}

/// The function pointers, valid while `library` is loaded (it is owned alongside).
pub struct Symbols {
    pub get_version: GetVersion,
    pub get_unique_id: GetUniqueId,
    pub comm_init_rank: CommInitRank,
    pub all_reduce: AllReduce,
    pub comm_destroy: CommOp,
    pub comm_abort: CommOp,
    pub comm_get_async_error: CommGetAsyncError,
    pub get_error_string: GetErrorString,
    pub get_last_error: Option<GetLastError>,
    pub comm_finalize: Option<CommOp>,
    pub group_start: Option<Group>,
    pub group_end: Option<Group>,
    pub group_simulate_end: Option<GroupSimulateEnd>,
    pub all_gather: Option<Exchange>,
    pub reduce_scatter: Option<ReduceScatter>,
    pub broadcast: Option<Rooted>,
    pub reduce: Option<Reduce>,
    pub send: Option<PointToPoint>,
    pub recv: Option<PointToPoint>,
    pub all_to_all: Option<Exchange>,
    pub gather: Option<Rooted>,
    pub scatter: Option<Rooted>,
    pub mem_alloc: Option<MemAlloc>,
    pub mem_free: Option<MemFree>,
    pub comm_register: Option<CommRegister>,
    pub comm_deregister: Option<CommDeregister>,
    pub comm_window_register: Option<CommWindowRegister>,
    pub comm_window_deregister: Option<CommDeregister>,
}

/// The loaded library and its symbols. The library is never unloaded: NCCL starts
/// threads of its own (`ncclGetUniqueId` already starts the bootstrap root's), and
/// `dlclose` under a running thread crashes the process (seen: SIGSEGV at exit).
pub struct Loaded {
    pub symbols: Symbols,
    /// The library exports `ncclBenchSimulated`: it is the test stand-in of
    /// tests/gpu-sim (simulated GPUs), not NCCL.
    pub simulated: bool,
    _library: &'static Library,
}

/// Why a library could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    Open(String),
    MissingSymbol(&'static str),
}

impl Loaded {
    /// Opens `path` (or a bare name for the dynamic loader's search) and resolves
    /// every symbol.
    pub fn open(path: &Path) -> Result<Loaded, LoadError> {
        // SAFETY: loading libnccl runs its initializers, which have no preconditions.
        let library = unsafe { Library::new(path.as_os_str()) }
            .map_err(|e| LoadError::Open(e.to_string()))?;
        // SAFETY: each symbol is looked up with the type of its C declaration in nccl.h.
        unsafe {
            macro_rules! required {
                ($name:literal) => {
                    *library
                        .get(concat!($name, "\0").as_bytes())
                        .map_err(|_| LoadError::MissingSymbol($name))?
                };
            }
            macro_rules! optional {
                ($name:literal) => {
                    library
                        .get(concat!($name, "\0").as_bytes())
                        .ok()
                        .map(|s| *s)
                };
            }
            let symbols = Symbols {
                get_version: required!("ncclGetVersion"),
                get_unique_id: required!("ncclGetUniqueId"),
                comm_init_rank: required!("ncclCommInitRank"),
                all_reduce: required!("ncclAllReduce"),
                comm_destroy: required!("ncclCommDestroy"),
                comm_abort: required!("ncclCommAbort"),
                comm_get_async_error: required!("ncclCommGetAsyncError"),
                get_error_string: required!("ncclGetErrorString"),
                get_last_error: optional!("ncclGetLastError"),
                comm_finalize: optional!("ncclCommFinalize"),
                group_start: optional!("ncclGroupStart"),
                group_end: optional!("ncclGroupEnd"),
                group_simulate_end: optional!("ncclGroupSimulateEnd"),
                all_gather: optional!("ncclAllGather"),
                reduce_scatter: optional!("ncclReduceScatter"),
                broadcast: optional!("ncclBroadcast"),
                reduce: optional!("ncclReduce"),
                send: optional!("ncclSend"),
                recv: optional!("ncclRecv"),
                all_to_all: optional!("ncclAlltoAll"),
                gather: optional!("ncclGather"),
                scatter: optional!("ncclScatter"),
                mem_alloc: optional!("ncclMemAlloc"),
                mem_free: optional!("ncclMemFree"),
                comm_register: optional!("ncclCommRegister"),
                comm_deregister: optional!("ncclCommDeregister"),
                comm_window_register: optional!("ncclCommWindowRegister"),
                comm_window_deregister: optional!("ncclCommWindowDeregister"),
            };
            Ok(Loaded {
                symbols,
                simulated: library.get::<*const u8>(b"ncclBenchSimulated\0").is_ok(),
                _library: Box::leak(Box::new(library)),
            })
        }
    }
}

/// Reads a C string NCCL returned.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives the call (NCCL's
/// error strings are static).
pub unsafe fn c_text(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    let text = std::ffi::CStr::from_ptr(ptr)
        .to_string_lossy()
        .trim()
        .to_string();
    (!text.is_empty()).then_some(text)
}
