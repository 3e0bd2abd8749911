//! The NCCL backend's link ceilings, measured before a sweep as nvbandwidth does, for
//! the GPUs the sweep uses: each GPU's device-to-device, host-to-device and
//! device-to-host copies (pinned host memory), and for each pair, copies both ways at
//! once over peer access where the driver allows it, else through pinned host
//! memory. Runs in a process of its own (`nccl-bench ceilings`, started by the
//! sweep through [`run_in_child`] with a time limit), so that its contexts, peer
//! mappings and memory are gone before the first rank starts, and a hung copy
//! costs the sweep its ceilings, not its run.
//!
//! Each rate is the best of [`REPEATS`] after one warm-up copy, timed with CUDA
//! events on the copy's own stream. Rates count the bytes copied per second, one
//! direction, GB/s = 1e9 B/s: for a copy within one GPU that is half the memory
//! traffic (each byte is read and written), as nvbandwidth's `device_local_copy`
//! reports it; for a pair, the slower direction while both ran.
//!
//! Copies that run "at once" are enqueued back to back on their own streams; with
//! no kernel to hold them at a common start, the first starts a few microseconds
//! early, which at the sizes used (hundreds of MiB, milliseconds per copy) is well
//! under a percent of overlap lost.

use std::ffi::c_void;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{self as cusys, CUevent_flags, CUresult};
use cudarc::driver::{result as cu, CudaContext, CudaSlice, CudaStream, DevicePtr, DriverError};

use crate::model::{Ceilings, LinkKind, LinkRate};
use crate::units::Bytes;

/// Timed repetitions per rate, after one warm-up.
pub const REPEATS: usize = 5;

/// Measures every link among `devices` with copies of `bytes`; what fails is recorded
/// in `errors` with the CUDA error and what was being measured, never fatal.
pub fn measure(devices: &[usize], bytes: usize) -> Ceilings {
    let mut out = Ceilings::default();
    if let Err(e) = crate::machine::cuda::require_driver() {
        out.errors.push(format!("no link ceilings: {e:#}"));
        return out;
    }
    let mut gpus = Vec::new();
    for &d in devices {
        match Gpu::new(d, bytes) {
            Ok(g) => gpus.push(g),
            Err(e) => out.errors.push(format!("GPU {d}: {e}")),
        }
    }
    // (i, j, peer access both ways) for every unordered pair.
    let mut pairs = Vec::new();
    for (i, x) in gpus.iter().enumerate() {
        for (j, y) in gpus.iter().enumerate().skip(i + 1) {
            pairs.push((i, j, can_access_peer(x, y) && can_access_peer(y, x)));
        }
    }
    let Some(first) = gpus.first() else {
        return out;
    };
    // [down, up] for one direction, and another two for the reverse direction of a
    // pair without peer access, so that no two concurrent copies share a buffer.
    let buffers = if pairs.iter().all(|p| p.2) { 2 } else { 4 };
    let host = match (0..buffers)
        .map(|_| Pinned::new(first, bytes))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(h) => Some(h),
        Err(e) => {
            out.errors.push(format!(
                "{buffers} pinned host buffers of {}: {}; no h2d, d2h or via-host rates",
                Bytes(bytes as u64),
                cuda(e)
            ));
            None
        }
    };
    let mut meter = Meter {
        out: &mut out,
        bytes,
    };
    for g in &gpus {
        meter.gpu(g, host.as_deref());
    }
    for &(i, j, direct) in &pairs {
        if direct {
            meter.peer(&gpus[i], &gpus[j]);
        } else if let Some(host) = &host {
            meter.via_host(&gpus[i], &gpus[j], host);
        }
    }
    out
}

/// Runs the measurements and records each as a rate or an error.
struct Meter<'a> {
    out: &'a mut Ceilings,
    bytes: usize,
}

impl Meter<'_> {
    /// D2D within `g`; H2D and D2H with pinned host memory where there is some.
    fn gpu(&mut self, g: &Gpu, host: Option<&[Pinned]>) {
        let d2d = best(|| timed(&[(&g.streams[0], &|s: &CudaStream| g.copy_dtod(1, 0, s))]));
        self.record(
            LinkKind::D2d,
            vec![g.device],
            d2d,
            "cuMemcpyDtoDAsync within the GPU, bytes copied per second \
             (as nvbandwidth's device_local_copy: half the memory traffic)",
        );
        let Some([down, up, ..]) = host else { return };
        let h2d = best(|| timed(&[(&g.streams[0], &|s: &CudaStream| g.copy_htod(1, up, s))]));
        self.record(
            LinkKind::H2d,
            vec![g.device],
            h2d,
            "cuMemcpyHtoDAsync from pinned host memory",
        );
        let d2h = best(|| timed(&[(&g.streams[0], &|s: &CudaStream| g.copy_dtoh(down, 0, s))]));
        self.record(
            LinkKind::D2h,
            vec![g.device],
            d2h,
            "cuMemcpyDtoHAsync to pinned host memory",
        );
    }

    /// `x` to `y` and `y` to `x` at once over peer access, each on its own stream.
    fn peer(&mut self, x: &Gpu, y: &Gpu) {
        let seconds = enable_peer(x, y)
            .and_then(|()| enable_peer(y, x))
            .map_err(|e| format!("enabling peer access: {}", cuda(e)))
            .and_then(|()| {
                best(|| {
                    timed(&[
                        (&x.streams[0], &|s: &CudaStream| x.copy_peer(0, y, 1, s)),
                        (&y.streams[0], &|s: &CudaStream| y.copy_peer(0, x, 1, s)),
                    ])
                })
            });
        self.record(
            LinkKind::P2p,
            vec![x.device, y.device],
            seconds,
            "cuMemcpyPeerAsync with peer access, both directions at once (the slower)",
        );
    }

    /// What NCCL's SHM transport does without peer access: down to host memory on
    /// one side and up on the other, both directions at once (4 copies, 4 streams,
    /// 4 buffers).
    fn via_host(&mut self, x: &Gpu, y: &Gpu, host: &[Pinned]) {
        let [down_xy, up_xy, down_yx, up_yx] = host else {
            return;
        };
        let seconds = best(|| {
            timed(&[
                (&x.streams[0], &|s: &CudaStream| x.copy_dtoh(down_xy, 0, s)),
                (&y.streams[1], &|s: &CudaStream| y.copy_htod(1, up_xy, s)),
                (&y.streams[0], &|s: &CudaStream| y.copy_dtoh(down_yx, 0, s)),
                (&x.streams[1], &|s: &CudaStream| x.copy_htod(1, up_yx, s)),
            ])
        });
        self.record(
            LinkKind::ViaHost,
            vec![x.device, y.device],
            seconds,
            "no peer access: cuMemcpyDtoHAsync into and cuMemcpyHtoDAsync out of \
             pinned host memory, both directions at once (the slowest of 4 copies)",
        );
    }

    fn record(
        &mut self,
        kind: LinkKind,
        gpus: Vec<usize>,
        seconds: Result<f64, String>,
        how: &str,
    ) {
        let what = match gpus.as_slice() {
            [one] => format!("{} on GPU {one}", kind.as_str()),
            ends => {
                let ends: Vec<String> = ends.iter().map(|g| g.to_string()).collect();
                format!("{} between GPUs {}", kind.as_str(), ends.join("-"))
            }
        };
        match seconds {
            Ok(s) if s > 0.0 => self.out.links.push(LinkRate {
                kind,
                gpus,
                gbps: self.bytes as f64 / s / 1e9,
                bytes: self.bytes as u64,
                how: format!("{how}, {}, best of {REPEATS}", Bytes(self.bytes as u64)),
            }),
            Ok(_) => self
                .out
                .errors
                .push(format!("{what}: a copy timed at zero")),
            Err(e) => self.out.errors.push(format!("{what}: {e}")),
        }
    }
}

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": the driver's name and text.
fn cuda(e: DriverError) -> String {
    match (e.error_name(), e.error_string()) {
        (Ok(name), Ok(text)) => format!("{} ({})", name.to_string_lossy(), text.to_string_lossy()),
        _ => format!("CUDA error {}", e.0 as u32),
    }
}

/// One GPU: its context, two streams and two buffers (0 is read, 1 is written).
struct Gpu {
    device: usize,
    ctx: Arc<CudaContext>,
    streams: [Arc<CudaStream>; 2],
    buffers: [CudaSlice<u8>; 2],
}

impl Gpu {
    fn new(device: usize, bytes: usize) -> Result<Gpu, String> {
        let ctx = CudaContext::new(device).map_err(|e| format!("context: {}", cuda(e)))?;
        // SAFETY: the copies here are ordered by explicit events and synchronization.
        unsafe { ctx.disable_event_tracking() };
        let stream = || ctx.new_stream().map_err(|e| format!("stream: {}", cuda(e)));
        let streams = [stream()?, stream()?];
        let buffer = || {
            streams[0]
                .alloc_zeros::<u8>(bytes)
                .map_err(|e| format!("2 buffers of {}: {}", Bytes(bytes as u64), cuda(e)))
        };
        let buffers = [buffer()?, buffer()?];
        streams[0]
            .synchronize()
            .map_err(|e| format!("zeroing its buffers: {}", cuda(e)))?;
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

    fn len(&self) -> usize {
        self.buffers[0].len()
    }

    fn copy_dtod(&self, dst: usize, src: usize, s: &CudaStream) -> Result<(), DriverError> {
        // SAFETY: both buffers belong to this GPU and hold len() bytes.
        unsafe { cu::memcpy_dtod_async(self.ptr(dst), self.ptr(src), self.len(), s.cu_stream()) }
    }

    fn copy_htod(&self, dst: usize, src: &Pinned, s: &CudaStream) -> Result<(), DriverError> {
        // SAFETY: the pinned buffer and the device buffer both hold len() bytes, and
        // the pinned one outlives the copy (every copy is synchronized before return).
        unsafe { cusys::cuMemcpyHtoDAsync_v2(self.ptr(dst), src.ptr, self.len(), s.cu_stream()) }
            .result()
    }

    fn copy_dtoh(&self, dst: &Pinned, src: usize, s: &CudaStream) -> Result<(), DriverError> {
        // SAFETY: as in copy_htod.
        unsafe { cusys::cuMemcpyDtoHAsync_v2(dst.ptr, self.ptr(src), self.len(), s.cu_stream()) }
            .result()
    }

    /// Copies this GPU's buffer `src` into `to`'s buffer `dst`.
    fn copy_peer(
        &self,
        src: usize,
        to: &Gpu,
        dst: usize,
        s: &CudaStream,
    ) -> Result<(), DriverError> {
        // SAFETY: both contexts are alive (held by the Gpus); both buffers hold len().
        unsafe {
            cu::memcpy_peer_async(
                to.ctx.cu_ctx(),
                to.ptr(dst),
                self.ctx.cu_ctx(),
                self.ptr(src),
                self.len(),
                s.cu_stream(),
            )
        }
    }
}

/// Page-locked host memory, portable to every context.
struct Pinned {
    ptr: *mut c_void,
    ctx: Arc<CudaContext>,
}

impl Pinned {
    fn new(gpu: &Gpu, bytes: usize) -> Result<Pinned, DriverError> {
        gpu.ctx.bind_to_thread()?;
        // SAFETY: a plain allocation; freed in Drop.
        let ptr = unsafe { cu::malloc_host(bytes, cusys::CU_MEMHOSTALLOC_PORTABLE) }?;
        Ok(Pinned {
            ptr,
            ctx: gpu.ctx.clone(),
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // Nothing to do about a failure here: the process is about to end.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_host, freed once; all copies were synchronized.
        let _ = unsafe { cu::free_host(self.ptr) };
    }
}

/// What cuDeviceCanAccessPeer says (a failure counts as no).
fn can_access_peer(from: &Gpu, to: &Gpu) -> bool {
    let mut can = 0;
    // SAFETY: both devices come from cuDeviceGet (held by live contexts).
    unsafe { cusys::cuDeviceCanAccessPeer(&mut can, from.ctx.cu_device(), to.ctx.cu_device()) }
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

/// Runs each copy on its stream at once, events around each; the slowest one's
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
fn best(mut run: impl FnMut() -> Result<f64, DriverError>) -> Result<f64, String> {
    let mut once = || run().map_err(cuda);
    once()?;
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        best = best.min(once()?);
    }
    Ok(best)
}

/// Runs `exe ceilings` for `devices` in a process of its own, killed after `limit`;
/// what went wrong (no start, a timeout, a crash, no JSON) is its only `errors` entry.
pub fn run_in_child(exe: &Path, devices: &[usize], bytes: u64, limit: Duration) -> Ceilings {
    let list: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
    let failed = |why: String| Ceilings {
        links: Vec::new(),
        errors: vec![why],
        ..Ceilings::default()
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
        Err(e) => {
            return failed(format!(
                "cannot start the ceiling measurement ({}): {e}",
                exe.display()
            ))
        }
    };
    // Read both pipes while the child runs, so that a full pipe cannot stall it.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return failed(format!(
                    "ceiling measurement timed out after {} s",
                    limit.as_secs_f64()
                ));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return failed(format!("ceiling measurement: waiting for it: {e}"));
            }
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        return failed(format!(
            "ceiling measurement failed ({status}){}",
            tail(&stderr)
        ));
    }
    // The result is the last line; anything a library printed before it is not.
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    match last.map(|l| serde_json::from_str::<Ceilings>(l.trim())) {
        Some(Ok(c)) => c,
        Some(Err(e)) => failed(format!(
            "ceiling measurement printed no result ({e}){}",
            tail(&stderr)
        )),
        None => failed(format!(
            "ceiling measurement printed nothing{}",
            tail(&stderr)
        )),
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut text);
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// ": " and the last lines of a child's stderr (at most 3 lines, 600 characters),
/// joined by " / "; empty when it wrote nothing.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let text = lines[lines.len().saturating_sub(3)..].join(" / ");
    let chars: Vec<char> = text.chars().collect();
    let kept: String = chars[chars.len().saturating_sub(600)..].iter().collect();
    format!(": {}", kept.trim())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for `nccl-bench` that runs `body` as a shell script.
    fn fake_exe(dir: &Path, body: &str) -> std::path::PathBuf {
        // Written by a child process, not by this one: a file this process held open
        // for writing can still be open in a child another test thread forks, and
        // executing it then fails with ETXTBSY ("Text file busy").
        let text = dir.join("fake-nccl-bench.txt");
        std::fs::write(&text, format!("#!/bin/sh\n{body}\n")).unwrap();
        let path = dir.join("fake-nccl-bench");
        let copied = std::process::Command::new("cp")
            .arg(&text)
            .arg(&path)
            .status()
            .unwrap();
        assert!(copied.success());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn run(body: &str, limit: Duration) -> Ceilings {
        let dir = tempfile::tempdir().unwrap();
        run_in_child(&fake_exe(dir.path(), body), &[0, 1], 1024, limit)
    }

    #[test]
    fn the_childs_json_is_the_result_and_it_gets_the_devices_and_bytes() {
        let c = run(
            r#"echo "a library's chatter"; echo "{\"links\":[],\"errors\":[\"$*\"]}""#,
            Duration::from_secs(30),
        );
        assert_eq!(c.errors, vec!["ceilings --devices 0,1 --bytes 1024"]);
    }

    #[test]
    fn a_hung_measurement_is_killed_at_its_limit() {
        let started = Instant::now();
        let c = run("sleep 30", Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(c.errors, vec!["ceiling measurement timed out after 0.5 s"]);
        assert!(c.links.is_empty());
    }

    #[test]
    fn a_crash_is_an_error_with_the_end_of_its_stderr() {
        let c = run(
            "echo one >&2; echo two >&2; echo three >&2; echo 'error: four' >&2; exit 3",
            Duration::from_secs(30),
        );
        assert_eq!(
            c.errors,
            vec!["ceiling measurement failed (exit status: 3): two / three / error: four"]
        );
    }

    #[test]
    fn output_that_is_not_a_result_is_an_error() {
        let c = run("echo 'not json'", Duration::from_secs(30));
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0].starts_with("ceiling measurement printed no result ("),
            "{c:?}"
        );
        let c = run("true", Duration::from_secs(30));
        assert_eq!(c.errors, vec!["ceiling measurement printed nothing"]);
    }

    #[test]
    fn a_missing_executable_is_an_error() {
        let c = run_in_child(
            Path::new("/nonexistent/nccl-bench"),
            &[0],
            1024,
            Duration::from_secs(1),
        );
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0].starts_with("cannot start the ceiling measurement (/nonexistent/"),
            "{c:?}"
        );
    }

    #[test]
    fn a_long_stderr_does_not_stall_the_child() {
        // 1 MiB of stderr: more than a pipe holds, read while the child runs.
        let c = run(
            "head -c 1048576 /dev/zero | tr '\\0' 'x' >&2; echo '{\"links\":[]}'",
            Duration::from_secs(30),
        );
        assert_eq!(c, Ceilings::default());
    }
}
