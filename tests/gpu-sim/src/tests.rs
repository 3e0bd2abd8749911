//! The driver semantics nccl-bench relies on, each checked against what a real
//! driver returned for the same call (555.x, H100, read on 2026-11-23 with a probe of
//! the driver API): error codes for misuse, asynchronous streams, events, capture.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::driver::*;
use crate::stream::*;

/// Work that takes real time on the stream, so "not yet done" can be observed.
struct Sleep(Duration, Arc<AtomicBool>);

impl Work for Sleep {
    fn run(&self, start: u64) -> u64 {
        std::thread::sleep(self.0);
        self.1.store(true, Ordering::Release);
        start + self.0.as_nanos() as u64
    }
}

/// cuInit, device 0's primary context made current; its handle.
fn context() -> CUcontext {
    assert_eq!(cuInit(0), 0);
    let mut ctx = std::ptr::null_mut();
    assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), 0);
    assert_eq!(cuCtxSetCurrent(ctx), 0);
    ctx
}

fn new_stream() -> CUstream {
    let mut s = std::ptr::null_mut();
    assert_eq!(cuStreamCreate(&mut s, 1), 0);
    s
}

fn alloc(bytes: usize) -> CUdeviceptr {
    let mut p = 0;
    assert_eq!(cuMemAlloc_v2(&mut p, bytes), 0);
    p
}

fn sleep_on(s: CUstream, ms: u64) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    submit(
        s,
        Op::Work(Arc::new(Sleep(Duration::from_millis(ms), done.clone()))),
    )
    .unwrap();
    done
}

#[test]
fn calls_without_a_current_context_fail_as_cuda_does() {
    assert_eq!(cuInit(0), 0);
    std::thread::spawn(|| {
        let mut p = 0;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), 201);
        let mut s = std::ptr::null_mut();
        assert_eq!(cuStreamCreate(&mut s, 0), 201);
        let mut e = std::ptr::null_mut();
        assert_eq!(cuEventCreate(&mut e, 0), 201);
    })
    .join()
    .unwrap();
}

#[test]
fn the_primary_context_is_one_handle_however_often_retained() {
    let a = context();
    let b = context();
    assert_eq!(a, b);
    let mut cur = std::ptr::null_mut();
    assert_eq!(cuCtxGetCurrent(&mut cur), 0);
    assert_eq!(cur, a);
}

#[test]
fn bad_pointers_and_exhaustion_are_errors_not_crashes() {
    context();
    let mut p = 0;
    assert_eq!(cuMemAlloc_v2(&mut p, 0), 1, "zero bytes");
    let mut total = 0;
    assert_eq!(cuDeviceTotalMem_v2(&mut total, 0), 0);
    assert_eq!(
        cuMemAlloc_v2(&mut p, total + 1),
        2,
        "more than the device has"
    );
    let s = new_stream();
    let buf = alloc(4096);
    assert_eq!(cuMemsetD8Async(buf + 4000, 0, 200, s), 1, "past the end");
    assert_eq!(cuMemsetD8Async(0xdead_0000, 0, 8, s), 1, "never allocated");
    assert_eq!(cuMemFree_v2(buf), 0);
    assert_eq!(cuMemFree_v2(buf), 1, "double free");
    assert_eq!(cuMemsetD8Async(buf, 0, 8, s), 1, "freed");
}

#[test]
fn streams_run_asynchronously_and_synchronize_waits() {
    context();
    let s = new_stream();
    let done = sleep_on(s, 100);
    assert_eq!(
        cuStreamQuery(s),
        600,
        "enqueue returned before the work ran"
    );
    assert!(!done.load(Ordering::Acquire));
    assert_eq!(cuStreamSynchronize(s), 0);
    assert!(done.load(Ordering::Acquire));
    assert_eq!(cuStreamQuery(s), 0);
}

#[test]
fn copies_run_in_stream_order() {
    context();
    let s = new_stream();
    let dev = alloc(8);
    let src = [7u8; 8];
    let mut dst = [0u8; 8];
    sleep_on(s, 50);
    assert_eq!(cuMemcpyHtoDAsync_v2(dev, src.as_ptr().cast(), 8, s), 0);
    assert_eq!(cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), dev, 8, s), 0);
    assert_eq!(dst, [0; 8], "nothing copied before the stream got there");
    assert_eq!(cuStreamSynchronize(s), 0);
    assert_eq!(dst, [7; 8]);
}

#[test]
fn events_follow_the_driver() {
    context();
    let s = new_stream();
    let (mut a, mut b, mut untimed) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    assert_eq!(cuEventCreate(&mut a, 0), 0);
    assert_eq!(cuEventCreate(&mut b, 0), 0);
    assert_eq!(cuEventCreate(&mut untimed, 2), 0);
    let mut ms = 0f32;
    assert_eq!(cuEventQuery(a), 0, "never recorded: complete");
    assert_eq!(cuEventSynchronize(a), 0);
    assert_eq!(cuEventElapsedTime(&mut ms, a, b), 400, "never recorded");
    assert_eq!(cuEventRecord(a, s), 0);
    sleep_on(s, 50);
    let dev = alloc(1 << 20);
    assert_eq!(cuMemsetD8Async(dev, 1, 1 << 20, s), 0);
    assert_eq!(cuEventRecord(b, s), 0);
    assert_eq!(cuEventQuery(b), 600, "not reached yet");
    assert_eq!(cuEventElapsedTime(&mut ms, a, b), 600);
    assert_eq!(cuEventSynchronize(b), 0);
    assert_eq!(cuEventElapsedTime(&mut ms, a, b), 0);
    // 50 ms of work plus a 1 MiB memset at the modelled speed, in milliseconds.
    assert!((ms - 50.0).abs() < 0.01, "{ms}");
    assert_eq!(cuEventRecord(untimed, s), 0);
    assert_eq!(cuStreamSynchronize(s), 0);
    assert_eq!(
        cuEventElapsedTime(&mut ms, a, untimed),
        400,
        "timing disabled"
    );
}

#[test]
fn capture_records_instead_of_running_and_replays_on_launch() {
    context();
    let s = new_stream();
    let dev = alloc(16);
    assert_eq!(cuMemsetD8Async(dev, 0, 16, s), 0);
    assert_eq!(cuStreamBeginCapture_v2(s, 1), 0);
    assert_eq!(cuMemsetD8Async(dev, 9, 16, s), 0);
    let mut graph = std::ptr::null_mut();
    assert_eq!(cuStreamEndCapture(s, &mut graph), 0);
    assert!(!graph.is_null());
    let mut out = [0u8; 16];
    assert_eq!(cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), dev, 16, s), 0);
    assert_eq!(cuStreamSynchronize(s), 0);
    assert_eq!(out, [0; 16], "the captured memset did not run");
    let mut exec = std::ptr::null_mut();
    assert_eq!(cuGraphInstantiateWithFlags(&mut exec, graph, 0), 0);
    assert_eq!(cuGraphLaunch(exec, s), 0);
    assert_eq!(cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), dev, 16, s), 0);
    assert_eq!(cuStreamSynchronize(s), 0);
    assert_eq!(out, [9; 16], "the launch replayed it");
    assert_eq!(cuGraphExecDestroy(exec), 0);
    assert_eq!(cuGraphDestroy(graph), 0);
    assert_eq!(cuGraphDestroy(graph), 400);
}

#[test]
fn what_capture_forbids_fails_and_invalidates_it() {
    context();
    let s = new_stream();
    let dev = alloc(8);
    // Waiting for a capturing stream: 900, then the capture ends invalidated (901)
    // with no graph.
    assert_eq!(cuStreamBeginCapture_v2(s, 1), 0);
    assert_eq!(cuStreamSynchronize(s), 900);
    let mut graph = std::ptr::dangling_mut::<c_void>();
    assert_eq!(cuStreamEndCapture(s, &mut graph), 901);
    assert!(graph.is_null());
    // An event recorded in a capture cannot be queried (907).
    let mut e = std::ptr::null_mut();
    assert_eq!(cuEventCreate(&mut e, 0), 0);
    assert_eq!(cuStreamBeginCapture_v2(s, 1), 0);
    assert_eq!(cuEventRecord(e, s), 0);
    assert_eq!(cuEventQuery(e), 907);
    // The legacy stream while this thread captures: 906.
    assert_eq!(cuMemsetD8Async(dev, 0, 8, std::ptr::null_mut()), 906);
    assert_eq!(cuStreamEndCapture(s, &mut graph), 901);
    // Allocating on a thread that captures in thread-local mode: 900, invalidated.
    assert_eq!(cuStreamBeginCapture_v2(s, 1), 0);
    let mut p = 0;
    assert_eq!(cuMemAlloc_v2(&mut p, 64), 900);
    assert_eq!(cuStreamEndCapture(s, &mut graph), 901);
    // Capture on the legacy stream is not allowed at all.
    assert_eq!(cuStreamBeginCapture_v2(std::ptr::null_mut(), 1), 900);
}

#[test]
fn error_names_and_strings_are_the_drivers() {
    let mut text: *const std::ffi::c_char = std::ptr::null();
    assert_eq!(cuGetErrorString(201, &mut text), 0);
    // SAFETY: a static NUL-terminated string.
    let s = unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap();
    assert_eq!(s, "invalid device context");
    assert_eq!(cuGetErrorName(907, &mut text), 0);
    let s = unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap();
    assert_eq!(s, "CUDA_ERROR_CAPTURED_EVENT");
    assert_eq!(cuGetErrorString(12345, &mut text), 1);
}

#[test]
fn reductions_are_exact_per_type_and_avg_is_pre_multiplied() {
    use crate::reduce::reduce;
    let a = 3.0f32.to_le_bytes();
    let b = 5.0f32.to_le_bytes();
    let mut out = [0u8; 4];
    reduce(7, 0, &[&a, &b], &mut out);
    assert_eq!(f32::from_le_bytes(out), 8.0);
    reduce(7, 4, &[&a, &b], &mut out);
    assert_eq!(f32::from_le_bytes(out), 4.0);
    let (x, y) = ([250u8], [10u8]);
    let mut o = [0u8];
    reduce(1, 0, &[&x, &y], &mut o);
    assert_eq!(o, [4], "uint8 sums wrap");
    reduce(1, 3, &[&x, &y], &mut o);
    assert_eq!(o, [10]);
}

#[test]
fn fault_specs_parse() {
    use crate::fault::{parse, Fault, Spec};
    assert_eq!(
        parse("hang@1+40"),
        Some(Spec {
            fault: Fault::Hang,
            rank: Some(1),
            after: 40,
            factor: 1.0,
        })
    );
    assert_eq!(
        parse("oom").map(|s| (s.fault, s.rank)),
        Some((Fault::OutOfMemory, None))
    );
    assert_eq!(parse("explode"), None);
}

/// Device `dev`'s primary context, retained (not made current).
fn retain(dev: CUdevice) -> CUcontext {
    assert_eq!(cuInit(0), 0);
    let mut ctx = std::ptr::null_mut();
    assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, dev), 0);
    ctx
}

/// `bytes` of device memory of `ctx`'s device (made current).
fn alloc_on(ctx: CUcontext, bytes: usize) -> CUdeviceptr {
    assert_eq!(cuCtxSetCurrent(ctx), 0);
    alloc(bytes)
}

// Each test below uses GPUs of its own (the default machine has 8): peer access is
// per process, and tests share one.

#[test]
fn peer_access_is_enabled_once_per_direction_with_cudas_errors() {
    let (ctx0, ctx1) = (retain(0), retain(1));
    assert_eq!(cuCtxSetCurrent(ctx0), 0);
    // Not to itself, only with flags 0, only to a context (the default topology is
    // NVLink), and once.
    assert_eq!(cuCtxEnablePeerAccess(ctx0, 0), 201);
    assert_eq!(cuCtxEnablePeerAccess(ctx1, 1), 1);
    assert_eq!(cuCtxEnablePeerAccess(std::ptr::null_mut(), 0), 201);
    assert_eq!(cuCtxEnablePeerAccess(ctx1, 0), 0);
    assert_eq!(cuCtxEnablePeerAccess(ctx1, 0), 704);
    // Access is one way: the other direction is enabled on its own.
    assert_eq!(cuCtxSetCurrent(ctx1), 0);
    assert_eq!(cuCtxEnablePeerAccess(ctx0, 0), 0);
    assert_eq!(cuCtxEnablePeerAccess(ctx0, 0), 704);
    // No current context: a thread of its own.
    let peer = ctx1 as usize;
    std::thread::spawn(move || assert_eq!(cuCtxEnablePeerAccess(peer as CUcontext, 0), 201))
        .join()
        .unwrap();
}

#[test]
fn peer_access_follows_the_topology() {
    use crate::topo::Topology;
    let mut peers = Vec::new();
    assert_eq!(grant_peer(Topology::PcieNoP2p, 0, 1, &mut peers), Err(217));
    assert!(peers.is_empty());
    for topo in [Topology::Pcie, Topology::NvLink] {
        let mut peers = Vec::new();
        assert_eq!(grant_peer(topo, 0, 1, &mut peers), Ok(()));
        assert_eq!(grant_peer(topo, 0, 1, &mut peers), Err(704));
        assert_eq!(grant_peer(topo, 0, 0, &mut peers), Err(201));
        assert_eq!(peers, vec![1]);
    }
    // cuDeviceCanAccessPeer agrees: never to itself, to another GPU on NVLink.
    let mut can = -1;
    assert_eq!(cuDeviceCanAccessPeer(&mut can, 2, 2), 0);
    assert_eq!(can, 0);
    assert_eq!(cuDeviceCanAccessPeer(&mut can, 2, 3), 0);
    assert_eq!(can, 1);
    assert_eq!(cuDeviceCanAccessPeer(&mut can, 2, 99), 101);
}

#[test]
fn peer_copies_deliver_the_bytes_into_pinned_memory_and_back() {
    let (ctx2, ctx3) = (retain(2), retain(3));
    let dst = alloc_on(ctx3, 4096);
    let src = alloc_on(ctx2, 4096);
    let s = new_stream();
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(
        cuMemcpyHtoDAsync_v2(src, pattern.as_ptr() as *const c_void, 4096, s),
        0
    );
    // From device 2's memory to device 3's, then into pinned host memory.
    assert_eq!(cuMemcpyPeerAsync(dst, ctx3, src, ctx2, 4096, s), 0);
    let mut host = std::ptr::null_mut();
    assert_eq!(cuMemHostAlloc(&mut host, 4096, 1), 0);
    assert_eq!(host as usize % 4096, 0, "page-aligned");
    assert_eq!(cuMemcpyDtoHAsync_v2(host, dst, 4096, s), 0);
    assert_eq!(cuStreamSynchronize(s), 0);
    // SAFETY: 4096 bytes of pinned memory, the copy into them synchronized.
    let back = unsafe { std::slice::from_raw_parts(host as *const u8, 4096) };
    assert_eq!(back, &pattern[..]);
    assert_eq!(cuMemFreeHost(host), 0);
    assert_eq!(cuMemFreeHost(host), 1, "freed twice");
    // A context that is not one, memory that is not allocated, memory of another
    // device than the context says.
    assert_eq!(
        cuMemcpyPeerAsync(dst, std::ptr::null_mut(), src, ctx2, 64, s),
        201
    );
    assert_eq!(cuMemcpyPeerAsync(dst, ctx3, 8, ctx2, 64, s), 1);
    assert_eq!(cuMemcpyPeerAsync(src, ctx3, dst, ctx2, 64, s), 1);
    assert_eq!(
        cuMemcpyPeerAsync(dst, ctx3, src, ctx2, 8192, s),
        1,
        "too long"
    );
}

#[test]
fn pinned_memory_needs_a_context_and_known_flags() {
    let ctx = retain(4);
    std::thread::spawn(|| {
        let mut host = std::ptr::null_mut();
        assert_eq!(cuMemHostAlloc(&mut host, 64, 0), 201);
    })
    .join()
    .unwrap();
    assert_eq!(cuCtxSetCurrent(ctx), 0);
    let mut host = std::ptr::null_mut();
    assert_eq!(cuMemHostAlloc(&mut host, 64, 0x8), 1, "an unknown flag");
    // PORTABLE | DEVICEMAP | WRITECOMBINED
    assert_eq!(cuMemHostAlloc(&mut host, 64, 0x7), 0);
    assert_eq!(cuMemFreeHost(host), 0);
    assert_eq!(cuMemFreeHost(0x1000 as *mut c_void), 1, "never allocated");
}

/// Device time of one copy enqueued by `copy` on `s`, from events around it.
fn copy_ms(s: CUstream, copy: impl Fn() -> CUresult) -> f64 {
    let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(cuEventCreate(&mut a, 0), 0);
    assert_eq!(cuEventCreate(&mut b, 0), 0);
    assert_eq!(cuEventRecord(a, s), 0);
    assert_eq!(copy(), 0);
    assert_eq!(cuEventRecord(b, s), 0);
    assert_eq!(cuEventSynchronize(b), 0);
    let mut ms = 0.0f32;
    assert_eq!(cuEventElapsedTime(&mut ms, a, b), 0);
    assert_eq!(cuEventDestroy_v2(a), 0);
    assert_eq!(cuEventDestroy_v2(b), 0);
    f64::from(ms)
}

#[test]
fn copies_take_the_time_of_the_links_the_all_reduce_uses() {
    const LEN: usize = 15_000_000;
    // The link's rate and its latency per copy (topo::link and topo::copy_ns).
    let near = |ms: f64, gbps: f64, latency_ns: f64| {
        let want_ms = (latency_ns + LEN as f64 / gbps) / 1e6;
        (ms / want_ms - 1.0).abs() < 0.01
    };
    let (ctx5, ctx6) = (retain(5), retain(6));
    let dst = alloc_on(ctx6, LEN);
    let src = alloc_on(ctx5, LEN);
    let s = new_stream();
    let peer = || cuMemcpyPeerAsync(dst, ctx6, src, ctx5, LEN, s);
    // Before peer access, staged through the host: down and up at 25 GB/s each.
    let staged = copy_ms(s, peer);
    assert!(near(staged, 12.5, 4_000.0), "{staged} ms");
    // Enabled (either side), over NVLink at 150 GB/s, the P2P link of the ring.
    assert_eq!(cuCtxEnablePeerAccess(ctx6, 0), 0);
    let direct = copy_ms(s, peer);
    assert!(near(direct, 150.0, 1_000.0), "{direct} ms");
    // Pinned host memory at 25 GB/s both ways; within the GPU at 1500 GB/s.
    let mut host = std::ptr::null_mut();
    assert_eq!(cuMemHostAlloc(&mut host, LEN, 1), 0);
    let up = copy_ms(s, || cuMemcpyHtoDAsync_v2(src, host, LEN, s));
    let down = copy_ms(s, || cuMemcpyDtoHAsync_v2(host, src, LEN, s));
    assert!(near(up, 25.0, 2_000.0), "{up} ms");
    assert!(near(down, 25.0, 2_000.0), "{down} ms");
    let other = alloc(LEN);
    let local = copy_ms(s, || cuMemcpyDtoDAsync_v2(other, src, LEN, s));
    assert!(near(local, 1500.0, 1_500.0), "{local} ms");
    assert_eq!(cuMemFreeHost(host), 0);
}

/// `NCCL_BENCH_SIM_GROUP_JITTER`: one speed per communicator id, log-normal with the
/// spread asked for across ids.
#[test]
fn each_communicator_gets_its_own_speed() {
    let spread = 0.03;
    let logs: Vec<f64> = (0..4000u64)
        .map(|i| {
            crate::nccl::speed_of(crate::rendezvous::comm_hash(&[i as u8; 128]) ^ i, spread).ln()
        })
        .collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let sd =
        (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt();
    assert!(mean.abs() < 0.003, "{mean}");
    assert!((sd - spread).abs() < 0.003, "{sd}");
    assert_eq!(
        crate::nccl::speed_of(7, spread),
        crate::nccl::speed_of(7, spread)
    );
}
