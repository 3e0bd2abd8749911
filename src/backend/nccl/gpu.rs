//! The NCCL backend's rank: one process per GPU, CUDA through cudarc (context,
//! stream, device buffers sized once for the largest message, events), collectives
//! through our libnccl bindings. Timing follows nccl-tests' method with one event
//! per iteration: events are recorded between back-to-back `ncclAllReduce` launches
//! on one stream, and iteration i's time is the time between events i and i+1.
//! Event tracking is off, so cudarc adds no synchronization of its own.
//!
//! Buffers are filled on the host and copied to the device; the output is copied
//! back and checked on the host, against the exact expected values.

use std::ffi::c_void;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::comm::NcclComm;
use super::library::{Nccl, UniqueId};
use crate::backend::buffer::AlignedBuf;
use crate::backend::{Backend, Communicator};
use crate::ops::pattern::{CheckReport, Pattern};
use crate::ops::{DataType, ReduceOp};

/// What a GPU rank needs besides its rank.
#[derive(Debug, Clone)]
pub struct GpuOptions {
    /// CUDA device ordinal (after CUDA_VISIBLE_DEVICES).
    pub device: usize,
    pub max_bytes: usize,
    pub dtype: DataType,
    pub op: ReduceOp,
}

pub struct NcclBackend {
    nccl: Arc<Nccl>,
    options: GpuOptions,
}

impl NcclBackend {
    pub fn new(nccl: Nccl, options: GpuOptions) -> NcclBackend {
        NcclBackend {
            nccl: Arc::new(nccl),
            options,
        }
    }
}

/// Turns cudarc's absence-of-driver panic into an error: ask first.
pub fn require_driver() -> Result<()> {
    // SAFETY: only tries to load the driver library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        bail!("no NVIDIA driver found (libcuda.so.1)")
    }
}

impl Backend for NcclBackend {
    fn unique_id(&mut self) -> Result<String> {
        Ok(self.nccl.unique_id()?.to_hex())
    }

    fn init(&mut self, id: &str, rank: u32, nranks: u32) -> Result<Box<dyn Communicator>> {
        require_driver()?;
        let id = UniqueId::from_hex(id).ok_or_else(|| anyhow!("malformed NCCL unique id"))?;
        let o = &self.options;
        let ctx = CudaContext::new(o.device)
            .with_context(|| format!("cannot open CUDA device {} for rank {rank}", o.device))?;
        // SAFETY: set before any buffer or event exists, as cudarc requires.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().context("cannot create a CUDA stream")?;
        let oom = |what: &str| {
            format!(
                "out of GPU memory allocating the {what} buffer for the largest size ({} bytes) on device {}; lower -e/--maxbytes",
                o.max_bytes, o.device
            )
        };
        let send = stream
            .alloc_zeros::<u8>(o.max_bytes.max(1))
            .with_context(|| oom("send"))?;
        let recv = stream
            .alloc_zeros::<u8>(o.max_bytes.max(1))
            .with_context(|| oom("receive"))?;
        let comm = NcclComm::init(self.nccl.clone(), nranks, &id, rank)?;
        Ok(Box::new(GpuComm {
            comm,
            events: Vec::new(),
            host: AlignedBuf::new(o.max_bytes)?,
            send,
            recv,
            stream,
            ctx,
            dtype: o.dtype,
            op: o.op,
            device: o.device,
        }))
    }
}

/// One GPU rank. Field order is drop order: the communicator goes before the
/// buffers it may still reference, the context last.
pub struct GpuComm {
    comm: NcclComm,
    events: Vec<CudaEvent>,
    host: AlignedBuf,
    send: CudaSlice<u8>,
    recv: CudaSlice<u8>,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    dtype: DataType,
    op: ReduceOp,
    device: usize,
}

impl GpuComm {
    fn check_len(&self, bytes: usize) -> Result<()> {
        crate::backend::check_message(bytes, self.host.len(), self.dtype)
    }

    /// Enqueues one all-reduce of `bytes` on the stream.
    fn enqueue(&mut self, bytes: usize) -> Result<()> {
        let count = bytes / self.dtype.size();
        let (send, _s) = self.send.device_ptr(&self.stream);
        let (recv, _r) = self.recv.device_ptr_mut(&self.stream);
        // SAFETY: both buffers hold at least `bytes` (checked) and live as long as self;
        // the stream belongs to this communicator's device.
        unsafe {
            self.comm.all_reduce(
                send as *const c_void,
                recv as *mut c_void,
                count,
                self.dtype,
                self.op,
                self.stream.cu_stream() as *mut c_void,
            )?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.stream
            .synchronize()
            .context("CUDA stream synchronization failed")?;
        self.comm.async_error()?;
        Ok(())
    }

    /// Makes sure `n` timing events exist (created once, reused by every batch).
    fn ensure_events(&mut self, n: usize) -> Result<()> {
        while self.events.len() < n {
            let e = self
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .context("cannot create a CUDA event")?;
            self.events.push(e);
        }
        Ok(())
    }
}

impl Communicator for GpuComm {
    fn transports(&self) -> String {
        // The real transports come from NCCL's own log, read by the orchestrator.
        String::new()
    }

    fn detail(&self) -> String {
        let name = self.ctx.name().unwrap_or_default();
        format!("GPU {} ({name})", self.device)
    }

    fn fill_input(&mut self, pattern: &Pattern, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        pattern.fill(&mut self.host.bytes_mut()[..bytes]);
        let mut dst = self.send.slice_mut(0..bytes);
        self.stream
            .memcpy_htod(&self.host.bytes()[..bytes], &mut dst)
            .context("copy to the GPU failed")?;
        self.sync()
    }

    fn poison_output(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.host.bytes_mut()[..bytes].fill(0xff);
        let mut dst = self.recv.slice_mut(0..bytes);
        self.stream
            .memcpy_htod(&self.host.bytes()[..bytes], &mut dst)
            .context("copy to the GPU failed")?;
        self.sync()
    }

    fn check_output(&mut self, pattern: &Pattern, bytes: usize) -> Result<CheckReport> {
        self.check_len(bytes)?;
        let src = self.recv.slice(0..bytes);
        self.stream
            .memcpy_dtoh(&src, &mut self.host.bytes_mut()[..bytes])
            .context("copy from the GPU failed")?;
        self.sync()?;
        Ok(pattern.check(&self.host.bytes()[..bytes]))
    }

    fn timed_batch(&mut self, bytes: usize, durations: &mut [u64]) -> Result<()> {
        self.check_len(bytes)?;
        let n = durations.len();
        self.ensure_events(n + 1)?;
        self.events[0]
            .record(&self.stream)
            .context("cudaEventRecord failed")?;
        for i in 0..n {
            self.enqueue(bytes)?;
            self.events[i + 1]
                .record(&self.stream)
                .context("cudaEventRecord failed")?;
        }
        self.sync()?;
        for (i, d) in durations.iter_mut().enumerate() {
            let ms = self.events[i]
                .elapsed_ms(&self.events[i + 1])
                .context("cudaEventElapsedTime failed")?;
            *d = (ms as f64 * 1e6).round() as u64;
        }
        Ok(())
    }

    fn all_reduce(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.enqueue(bytes)?;
        self.sync()
    }
}
