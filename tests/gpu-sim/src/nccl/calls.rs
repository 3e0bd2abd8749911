//! The collective and point-to-point calls of NCCL's C API: each checks its
//! arguments as NCCL does (communicator, datatype, operator, root or peer, and with
//! `NCCL_CHECK_POINTERS=1` the buffers) and goes to [`group`], which launches it or
//! queues it in the thread's group.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::comm::{comm_of, Comm};
use super::group::{self, Call, What};
use super::work::{CollFunc, PeerCall};
use super::{version, NcclResult, INVALID_ARGUMENT, INVALID_USAGE, IN_PROGRESS, SUCCESS};
use crate::driver;
use crate::reduce;
use crate::stream;

/// `NCCL_CHECK_POINTERS=1`: NCCL checks a buffer is device memory of its GPU
/// (`CudaPtrCheck`); by default it does not, and a bad buffer faults the kernel.
fn check_pointer(
    c: &Comm,
    func: &str,
    what: &str,
    ptr: u64,
    bytes: usize,
) -> Result<(), NcclResult> {
    if bytes == 0 || crate::env("NCCL_CHECK_POINTERS").is_none_or(|v| v != "1") {
        return Ok(());
    }
    let msg = match driver::check_range(ptr, bytes) {
        Err(_) => format!("{func} : {what} {ptr:#x} is not a valid pointer"),
        Ok(dev) if dev != c.device => format!(
            "{func} : {what} allocated on device {dev} mismatchs with NCCL device {}",
            c.device
        ),
        Ok(_) => return Ok(()),
    };
    super::warn(c.device, "misc/argcheck.cc:21", &msg);
    Err(INVALID_ARGUMENT)
}

/// An argument error inside a group is returned again by the group's end.
fn returned(code: NcclResult) -> NcclResult {
    if !matches!(code, SUCCESS | IN_PROGRESS) {
        group::failed(code);
    }
    code
}

#[no_mangle]
pub extern "C" fn ncclAllReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::AllReduce, send, recv, count, dtype, op, 0);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclAllGather(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::AllGather, send, recv, count, dtype, 0, 0);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclReduceScatter(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::ReduceScatter, send, recv, count, dtype, op, 0);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclBroadcast(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::Broadcast, send, recv, count, dtype, 0, root);
    returned(collective(call, comm, stream))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ncclReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::Reduce, send, recv, count, dtype, op, root);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclAlltoAll(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::AlltoAll, send, recv, count, dtype, 0, 0);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclGather(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::Gather, send, recv, count, dtype, 0, root);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclScatter(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let call = (CollFunc::Scatter, send, recv, count, dtype, 0, root);
    returned(collective(call, comm, stream))
}

#[no_mangle]
pub extern "C" fn ncclSend(
    buf: *const c_void,
    count: usize,
    dtype: c_int,
    peer: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    returned(point_to_point(
        true, buf as u64, count, dtype, peer, comm, stream,
    ))
}

#[no_mangle]
pub extern "C" fn ncclRecv(
    buf: *mut c_void,
    count: usize,
    dtype: c_int,
    peer: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    returned(point_to_point(
        false, buf as u64, count, dtype, peer, comm, stream,
    ))
}

/// A communicator that takes calls now (init done, nothing in progress), or the
/// code to return.
fn usable(comm: *mut c_void, func: &str) -> Result<Arc<Comm>, NcclResult> {
    let Some(c) = comm_of(comm) else {
        super::warn(0, "enqueue.cc:1946", &format!("{func} : invalid comm"));
        return Err(INVALID_ARGUMENT);
    };
    match c.state.load(Ordering::Acquire) {
        // Init, or the previous call, still in progress: NCCL's rule is to wait.
        IN_PROGRESS => Err(INVALID_USAGE),
        SUCCESS if c.ready.load(Ordering::Acquire) => Ok(c),
        SUCCESS => Err(INVALID_USAGE),
        e => Err(e),
    }
}

/// The element width of `dtype`, or NCCL's warning and code.
fn width_of(c: &Comm, func: &str, dtype: c_int) -> Result<usize, NcclResult> {
    reduce::size(dtype).ok_or_else(|| {
        super::warn(
            c.device,
            "enqueue.cc:1946",
            &format!("{func} : invalid type {dtype}"),
        );
        INVALID_ARGUMENT
    })
}

/// A collective call: (function, send, receive, count, datatype, operator, root).
type CollArgs = (
    CollFunc,
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    c_int,
);

/// Checks a collective's arguments, then launches it, or queues it in the thread's
/// group ([`group`]). ncclAlltoAll, ncclGather and ncclScatter exist from 2.28: a
/// release before has no such symbol, so the stand-in refuses them there.
fn collective(
    (func, send, recv, count, dtype, op, root): CollArgs,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let name = func.name();
    if matches!(
        func,
        CollFunc::AlltoAll | CollFunc::Gather | CollFunc::Scatter
    ) && version() < (2, 28, 0)
    {
        let (x, y, z) = version();
        super::warn(
            driver::current().map(|c| c.device).unwrap_or(0),
            "collectives.cc:152",
            &format!("nccl{name} does not exist in NCCL {x}.{y}.{z} (it came in 2.28): the library has no such symbol"),
        );
        return INVALID_USAGE;
    }
    let c = match usable(comm, name) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let width = match width_of(&c, name, dtype) {
        Ok(w) => w,
        Err(code) => return code,
    };
    if func.reduces() && !reduce::known_op(op) {
        super::warn(
            c.device,
            "enqueue.cc:1946",
            &format!("{name} : invalid reduction operation {op}"),
        );
        return INVALID_ARGUMENT;
    }
    let n = c.nranks as usize;
    if root < 0 || root as usize >= n {
        super::warn(
            c.device,
            "enqueue.cc:1946",
            &format!("{name} : invalid root {root} (root should be in the 0..{n} range)"),
        );
        return INVALID_ARGUMENT;
    }
    let is_root = root as u32 == c.rank;
    let buffers = [
        (
            "sendbuff",
            send as u64,
            func.send_bytes(count, width, n, is_root),
        ),
        (
            "recvbuff",
            recv as u64,
            func.recv_bytes(count, width, n, is_root),
        ),
    ];
    for (what, ptr, bytes) in buffers {
        if let Err(code) = check_pointer(&c, name, what, ptr, bytes) {
            return code;
        }
    }
    group::submit(Call {
        comm: c,
        what: What::Coll {
            func,
            send: send as u64,
            recv: recv as u64,
            count,
            root: root as u32,
        },
        dtype,
        op,
        stream: stream as usize,
    })
}

/// Checks an `ncclSend`/`ncclRecv`'s arguments, then queues it in the thread's
/// group, or launches it alone.
fn point_to_point(
    send: bool,
    buf: u64,
    count: usize,
    dtype: c_int,
    peer: c_int,
    comm: *mut c_void,
    stream: stream::CUstream,
) -> NcclResult {
    let name = if send { "Send" } else { "Recv" };
    let c = match usable(comm, name) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let width = match width_of(&c, name, dtype) {
        Ok(w) => w,
        Err(code) => return code,
    };
    if peer < 0 || peer as u32 >= c.nranks {
        super::warn(
            c.device,
            "enqueue.cc:1946",
            &format!(
                "{name} : invalid peer {peer} (it should be in the 0..{} range)",
                c.nranks
            ),
        );
        return INVALID_ARGUMENT;
    }
    let bytes = count * width;
    if let Err(code) = check_pointer(&c, name, "buff", buf, bytes) {
        return code;
    }
    group::submit(Call {
        comm: c,
        what: What::Peer(PeerCall {
            send,
            buf,
            bytes,
            peer: peer as u32,
        }),
        dtype,
        op: 0,
        stream: stream as usize,
    })
}
