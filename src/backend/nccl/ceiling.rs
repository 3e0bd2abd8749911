//! The NCCL backend's link ceilings, measured before a sweep as nvbandwidth does, for
//! the GPUs the sweep uses: each GPU's device-to-device, host-to-device and
//! device-to-host copies (pinned host memory), and for each pair, copies both ways at
//! once over peer access where the driver allows it, else through pinned host
//! memory. Runs in a process of its own (`nccl-bench ceilings`, started by the
//! sweep with a time limit), so that its contexts and memory are gone before the
//! first rank starts.
//!
//! Each rate is the best of [`REPEATS`] after one warm-up copy, timed with CUDA
//! events on the copy's own stream; rates count the bytes copied per second (one
//! direction; a pair's rate is its slower direction while both ran).

use std::ffi::c_void;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{self as cusys, CUevent_flags, CUresult};
use cudarc::driver::{result as cu, CudaContext, CudaSlice, CudaStream, DevicePtr, DriverError};

use crate::model::{Ceilings, LinkKind, LinkRate};
use crate::units::Bytes;

pub const REPEATS: usize = 5;

/// Measures every link among `devices`; what fails is recorded, never fatal.
pub fn measure(devices: &[usize], bytes: usize) -> Ceilings {
    let mut out = Ceilings::default();
    if let Err(e) = super::gpu::require_driver() {
        out.errors.push(format!("no link ceilings: {e}"));
        return out;
    }
    let mut gpus = Vec::new();
    for &d in devices {
        match Gpu::new(d, bytes) {
            Ok(g) => gpus.push(g),
            Err(e) => out.errors.push(format!("GPU {d}: {e}")),
        }
    }
    let Some(first) = gpus.first() else {
        return out;
    };
    let host = match (Pinned::new(first, bytes), Pinned::new(first, bytes)) {
        (Ok(a), Ok(b)) => Some((a, b)),
        (Err(e), _) | (_, Err(e)) => {
            out.errors.push(format!(
                "pinned host memory of {}: {e}",
                Bytes(bytes as u64)
            ));
            None
        }
    };
    let size = Bytes(bytes as u64);
    for g in &gpus {
        let d2d = best(|| {
            timed(&[(&g.streams[0], &|s: &CudaStream| unsafe {
                cu::memcpy_dtod_async(g.ptr(1), g.ptr(0), bytes, s.cu_stream())
            })])
        });
        push(
            &mut out,
            LinkKind::D2d,
            vec![g.device],
            bytes,
            d2d,
            format!("device-to-device copy within the GPU, {size}, best of {REPEATS}"),
        );
        let Some((a, b)) = &host else { continue };
        let h2d = best(|| {
            timed(&[(&g.streams[0], &|s: &CudaStream| unsafe {
                cusys::cuMemcpyHtoDAsync_v2(g.ptr(0), a.ptr, bytes, s.cu_stream()).result()
            })])
        });
        push(
            &mut out,
            LinkKind::H2d,
            vec![g.device],
            bytes,
            h2d,
            format!("pinned host to device, {size}, best of {REPEATS}"),
        );
        let d2h = best(|| {
            timed(&[(&g.streams[0], &|s: &CudaStream| unsafe {
                cusys::cuMemcpyDtoHAsync_v2(b.ptr, g.ptr(0), bytes, s.cu_stream()).result()
            })])
        });
        push(
            &mut out,
            LinkKind::D2h,
            vec![g.device],
            bytes,
            d2h,
            format!("device to pinned host, {size}, best of {REPEATS}"),
        );
    }
    for (i, x) in gpus.iter().enumerate() {
        for y in &gpus[i + 1..] {
            let pair = vec![x.device, y.device];
            if peer_access(x, y) && peer_access(y, x) {
                let rate = enable_peer(x, y)
                    .and_then(|()| enable_peer(y, x))
                    .and_then(|()| {
                        best(|| {
                            timed(&[
                                (&x.streams[0], &|s: &CudaStream| unsafe {
                                    cu::memcpy_peer_async(
                                        y.ctx.cu_ctx(),
                                        y.ptr(1),
                                        x.ctx.cu_ctx(),
                                        x.ptr(0),
                                        bytes,
                                        s.cu_stream(),
                                    )
                                }),
                                (&y.streams[0], &|s: &CudaStream| unsafe {
                                    cu::memcpy_peer_async(
                                        x.ctx.cu_ctx(),
                                        x.ptr(1),
                                        y.ctx.cu_ctx(),
                                        y.ptr(0),
                                        bytes,
                                        s.cu_stream(),
                                    )
                                }),
                            ])
                        })
                    });
                push(&mut out, LinkKind::P2p, pair, bytes, rate, format!("cuMemcpyPeerAsync with peer access, both directions at once, {size}, best of {REPEATS}"));
            } else if let Some((a, b)) = &host {
                // What NCCL's SHM transport does without peer access: down to host
                // memory on one side, up on the other, both ways at once.
                let rate = best(|| {
                    timed(&[
                        (&x.streams[0], &|s: &CudaStream| unsafe {
                            cusys::cuMemcpyDtoHAsync_v2(a.ptr, x.ptr(0), bytes, s.cu_stream())
                                .result()
                        }),
                        (&y.streams[0], &|s: &CudaStream| unsafe {
                            cusys::cuMemcpyHtoDAsync_v2(y.ptr(1), b.ptr, bytes, s.cu_stream())
                                .result()
                        }),
                        (&y.streams[1], &|s: &CudaStream| unsafe {
                            cusys::cuMemcpyDtoHAsync_v2(a.ptr, y.ptr(0), bytes, s.cu_stream())
                                .result()
                        }),
                        (&x.streams[1], &|s: &CudaStream| unsafe {
                            cusys::cuMemcpyHtoDAsync_v2(x.ptr(1), b.ptr, bytes, s.cu_stream())
                                .result()
                        }),
                    ])
                });
                push(&mut out, LinkKind::ViaHost, pair, bytes, rate, format!("through pinned host memory (no peer access), both directions at once, {size}, best of {REPEATS}"));
            }
        }
    }
    out
}

/// One GPU: its context, two streams and two buffers.
struct Gpu {
    device: usize,
    ctx: Arc<CudaContext>,
    streams: [Arc<CudaStream>; 2],
    buffers: [CudaSlice<u8>; 2],
}

impl Gpu {
    fn new(device: usize, bytes: usize) -> Result<Gpu, DriverError> {
        let ctx = CudaContext::new(device)?;
        // SAFETY: the copies here are ordered by explicit events and synchronization.
        unsafe { ctx.disable_event_tracking() };
        let streams = [ctx.new_stream()?, ctx.new_stream()?];
        let buffers = [
            streams[0].alloc_zeros::<u8>(bytes)?,
            streams[0].alloc_zeros::<u8>(bytes)?,
        ];
        streams[0].synchronize()?;
        Ok(Gpu {
            device,
            ctx,
            streams,
            buffers,
        })
    }

    fn ptr(&self, i: usize) -> cusys::CUdeviceptr {
        self.buffers[i].device_ptr(&self.streams[0]).0
    }
}

/// Page-locked host memory, portable to every context.
struct Pinned {
    ptr: *mut c_void,
    _ctx: Arc<CudaContext>,
}

impl Pinned {
    fn new(gpu: &Gpu, bytes: usize) -> Result<Pinned, DriverError> {
        gpu.ctx.bind_to_thread()?;
        // SAFETY: a plain allocation; freed in Drop.
        let ptr = unsafe { cu::malloc_host(bytes, cusys::CU_MEMHOSTALLOC_PORTABLE) }?;
        Ok(Pinned {
            ptr,
            _ctx: gpu.ctx.clone(),
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host, freed once; all copies were synchronized.
        let _ = unsafe { cu::free_host(self.ptr) };
    }
}

fn peer_access(from: &Gpu, to: &Gpu) -> bool {
    let (Ok(a), Ok(b)) = (
        cu::device::get(from.device as i32),
        cu::device::get(to.device as i32),
    ) else {
        return false;
    };
    let mut can = 0;
    // SAFETY: both devices come from cuDeviceGet.
    unsafe { cusys::cuDeviceCanAccessPeer(&mut can, a, b) }
        .result()
        .is_ok()
        && can != 0
}

/// Lets `from`'s context reach `to`'s memory (already enabled is fine).
fn enable_peer(from: &Gpu, to: &Gpu) -> Result<(), DriverError> {
    from.ctx.bind_to_thread()?;
    // SAFETY: both contexts are alive (held by the Gpus).
    match unsafe { cusys::cuCtxEnablePeerAccess(to.ctx.cu_ctx(), 0) } {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        e => Err(DriverError(e)),
    }
}

type Enqueue<'a> = &'a dyn Fn(&CudaStream) -> Result<(), DriverError>;

/// Runs each copy on its stream at once (events around each); the slowest one's
/// seconds.
fn timed(copies: &[(&Arc<CudaStream>, Enqueue)]) -> Result<f64, DriverError> {
    let mut marks = Vec::with_capacity(copies.len());
    for (stream, enqueue) in copies {
        let ctx = stream.context();
        ctx.bind_to_thread()?;
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(stream)?;
        enqueue(stream)?;
        end.record(stream)?;
        marks.push((start, end));
    }
    let mut slowest = 0.0f64;
    for (start, end) in &marks {
        end.synchronize()?;
        slowest = slowest.max(f64::from(start.elapsed_ms(end)?) / 1e3);
    }
    Ok(slowest)
}

/// One warm-up, then the shortest of [`REPEATS`] timings.
fn best(mut run: impl FnMut() -> Result<f64, DriverError>) -> Result<f64, DriverError> {
    run()?;
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        best = best.min(run()?);
    }
    Ok(best)
}

fn push(
    out: &mut Ceilings,
    kind: LinkKind,
    gpus: Vec<usize>,
    bytes: usize,
    seconds: Result<f64, DriverError>,
    how: String,
) {
    match seconds {
        Ok(s) if s > 0.0 => out.links.push(LinkRate {
            kind,
            gpus,
            gbps: bytes as f64 / s / 1e9,
            bytes: bytes as u64,
            how,
        }),
        Ok(_) => out
            .errors
            .push(format!("{} {gpus:?}: a copy timed at zero", kind.as_str())),
        Err(e) => out.errors.push(format!("{} {gpus:?}: {e}", kind.as_str())),
    }
}

/// Runs `exe ceilings` for `devices` in a process of its own, stopped after `limit`;
/// what went wrong is in `errors`.
pub fn run_in_child(exe: &Path, devices: &[usize], bytes: u64, limit: Duration) -> Ceilings {
    let list: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
    let failed = |why: String| Ceilings {
        links: Vec::new(),
        errors: vec![why],
    };
    let child = Command::new(exe)
        .args([
            "ceilings",
            "--devices",
            &list.join(","),
            "--bytes",
            &bytes.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the ceiling measurement: {e}")),
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return failed(format!(
                    "the ceiling measurement timed out after {:.0} s",
                    limit.as_secs_f64()
                ));
            }
            Err(e) => return failed(format!("the ceiling measurement: {e}")),
        }
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return failed(format!(
            "the ceiling measurement ended with {status}: {}",
            tail.join(" / ")
        ));
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| failed(format!("the ceiling measurement printed no result: {e}")))
}
