//! The NCCL backend's rank: one process per GPU, CUDA through cudarc (context,
//! stream, device buffers sized once for the largest message, events), collectives
//! through our libnccl bindings. All-reduces are launched back to back on one stream
//! with CUDA events between them (every `event_stride` all-reduces), and each gap
//! between two events is that step's time, shared by its all-reduces; the
//! orchestrator averages the ranks' times (see `sweep::merge`). Event tracking is
//! off, so cudarc adds no synchronization of its own.
//!
//! An event after every all-reduce gives a histogram of single iterations, and
//! has two costs. It takes host time per iteration, which changes the measurement
//! where the host, not the GPU, sets the pace. And CUDA events resolve time to
//! about 0.5 us (cudaEventElapsedTime's documentation), so that a 6 us all-reduce
//! timed alone reads 6.0 or 6.5 us and its median can be 4 % off; rounds compared
//! to a percent need far less. With the automatic stride, every size under 1 GiB
//! is calibrated after its warm-up: 16 all-reduces with an event after each and 16
//! with events only at the ends, timed on the host (enqueue) and the GPU (events).
//! An event per all-reduce is kept when the host's time per all-reduce with its
//! event stays under 80 % of the GPU's time per all-reduce and the event grain is
//! at most 0.25 % of it (200 us and longer); else events go every k all-reduces, k the
//! smallest that brings the events' host time per all-reduce within that margin
//! (or, when the host sets the pace even without events, within 1 % of the GPU's
//! time) and the grain within 0.25 % of a step. What grain is left, the median
//! interpolates (`stats::LatencyRecorder::median_ns`). Each rank calibrates (every
//! rank the same all-reduces, whatever it measures: a size decides), and the
//! orchestrator sends every rank the largest k (see `sweep::orchestrator::drive`):
//! one stride per case for all ranks.
//!
//! With `--graph N`, N all-reduces are captured once per size into a CUDA graph
//! (nccl-tests' `-G` captures its `-n` iterations the same way) and the events go
//! between graph launches: each of the N iterations of a launch gets the launch's
//! time / N, so the mean stays exact and the histogram shows per-launch spread.
//!
//! Waiting for the stream polls `cuStreamQuery` and `ncclCommGetAsyncError`, as
//! nccl-tests' `testStreamSynchronize` does: a collective that NCCL reports failed
//! (a peer died, the network broke), or that is still running at the worker's
//! deadline, is stopped with `ncclCommAbort` and reported with NCCL's own words,
//! where `cuStreamSynchronize` would block until the orchestrator killed the rank.
//!
//! The input is filled on the device: one period of the pattern is copied from the
//! host, then the filled part doubles with device-to-device copies (no kernel to
//! compile, memory-speed for a gigabyte). The output is poisoned with a device
//! memset, copied back and checked on the host against the exact expected values.
//!
//! Every collective nccl-tests measures runs the same way, called as nccl-tests
//! calls it (`comm::Launch`): NCCL's own call, or grouped `ncclSend`/`ncclRecv`
//! (sendrecv; alltoall, gather and scatter before 2.28). "All-reduce" above stands
//! for one operation of whichever collective the rank runs.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use cudarc::driver::sys::{
    self as cusys, CUdeviceptr, CUevent_flags, CUgraphInstantiate_flags, CUresult,
    CUstreamCaptureMode,
};
use cudarc::driver::{result as cu, CudaContext, CudaEvent, CudaGraph, CudaStream, DriverError};

use super::comm::{backoff, Launch, NcclComm};
use super::library::{Nccl, Runs, UniqueId};
use crate::backend::buffer::AlignedBuf;
use crate::backend::{Backend, Communicator, DeadlineExceeded, Job};
use crate::nccl::register::Registration;
use crate::ops::collective::Collective;
use crate::ops::pattern::{doubling_copies, CheckReport, Pattern};
use crate::ops::{DataType, ReduceOp};

mod buffer;
mod pace;

use buffer::Buffer;

use crate::stats::adaptive::launch_steps;
pub use pace::{Pace, EVENT_GRAIN_NS};
use pace::{CALIBRATE_BELOW, CALIBRATION};

/// What a GPU rank needs besides its rank.
#[derive(Debug, Clone)]
pub struct GpuOptions {
    /// CUDA device ordinal (after CUDA_VISIBLE_DEVICES).
    pub device: usize,
    pub max_bytes: usize,
    pub dtype: DataType,
    pub op: ReduceOp,
    /// The collective every operation runs, and its root where it has one.
    pub collective: Collective,
    pub root: u32,
    /// All-reduces per CUDA graph launch; 0 launches them one by one.
    pub graph: usize,
    /// Eager all-reduces between two timing events (1: an event after each); 0
    /// decides per size by calibration (module comment).
    pub event_stride: usize,
    /// How long communicator set-up may take.
    pub init_timeout: Duration,
    /// How the send and receive buffers are registered with NCCL (`--register`).
    pub register: Registration,
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

impl Backend for NcclBackend {
    fn unique_id(&mut self) -> Result<String> {
        Ok(self.nccl.unique_id()?.to_hex())
    }

    fn init(&mut self, id: &str, rank: u32, nranks: u32) -> Result<Box<dyn Communicator>> {
        crate::machine::cuda::require_driver()?;
        let id = UniqueId::from_hex(id).ok_or_else(|| anyhow!("malformed NCCL unique id"))?;
        let o = &self.options;
        let runs = self.nccl.runs(o.collective);
        if runs == Runs::Missing {
            anyhow::bail!(
                "{} cannot run {}: the library lacks a call it needs",
                self.nccl.path.display(),
                o.collective
            );
        }
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
        let bytes = o.max_bytes.max(1);
        let (send, recv) = if o.register == Registration::None {
            let alloc = |what| stream.alloc_zeros::<u8>(bytes).with_context(|| oom(what));
            (
                Buffer::Cuda(alloc("send")?),
                Buffer::Cuda(alloc("receive")?),
            )
        } else {
            // Registered buffers are NCCL's own (cuMem memory it can map), as
            // nccl-tests allocates them.
            let alloc = |what| Buffer::nccl(&self.nccl, bytes).with_context(|| oom(what));
            (alloc("send")?, alloc("receive")?)
        };
        // The buffers never move or shrink, so their addresses are taken once (with
        // event tracking off the guards these calls return do nothing).
        let send_ptr = send.ptr(&stream);
        let recv_ptr = recv.ptr(&stream);
        let deadline = Instant::now() + o.init_timeout;
        let mut comm = NcclComm::init(self.nccl.clone(), nranks, &id, rank, deadline)?;
        for (buffer, what) in [(send_ptr, "send"), (recv_ptr, "receive")] {
            // SAFETY: the buffer holds `bytes` on this device (ncclMemAlloc's where
            // registered) and outlives the communicator (field order of GpuComm).
            unsafe { comm.register(o.register, buffer as *mut c_void, bytes) }.with_context(
                || {
                    format!(
                        "cannot register the {what} buffer with NCCL ({})",
                        o.register
                    )
                },
            )?;
        }
        Ok(Box::new(GpuComm {
            graphs: HashMap::new(),
            comm,
            events: Vec::new(),
            host: AlignedBuf::new(o.max_bytes)?,
            send_ptr,
            recv_ptr,
            _buffers: (send, recv),
            stream,
            ctx,
            job: Job {
                collective: o.collective,
                root: o.root,
                dtype: o.dtype,
                op: o.op,
            },
            runs,
            rank,
            nranks,
            device: o.device,
            graph: o.graph,
            event_stride: o.event_stride,
        }))
    }
}

/// One GPU rank. Field order is drop order: graphs go before the communicator
/// their all-reduces belong to, the communicator before the buffers it may still
/// reference, the context last.
pub struct GpuComm {
    /// Captured graphs of the current size, by the number of all-reduces in them.
    graphs: HashMap<(usize, usize), CudaGraph>,
    comm: NcclComm,
    events: Vec<CudaEvent>,
    host: AlignedBuf,
    send_ptr: CUdeviceptr,
    recv_ptr: CUdeviceptr,
    /// The send and receive buffers behind the two addresses, owned until the
    /// communicator that may have registered them is gone.
    _buffers: (Buffer, Buffer),
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    job: Job,
    runs: Runs,
    rank: u32,
    nranks: u32,
    device: usize,
    graph: usize,
    /// 0: automatic, decided per size by calibration.
    event_stride: usize,
}

impl GpuComm {
    fn check_len(&self, bytes: usize) -> Result<()> {
        crate::backend::check_message(bytes, self.host.len(), self.job.dtype)
    }

    /// Makes this rank's context current: the raw driver and NCCL calls below do
    /// not bind it themselves.
    fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .context("cannot make the CUDA context current")
    }

    /// One operation of a case of `bytes`, on this rank's buffers.
    fn launch(&self, bytes: usize) -> Launch {
        Launch {
            collective: self.job.collective,
            runs: self.runs,
            send: self.send_ptr as *const c_void,
            recv: self.recv_ptr as *mut c_void,
            counts: self.job.counts(bytes, self.nranks),
            dtype: self.job.dtype,
            op: self.job.op,
            root: self.job.root % self.nranks.max(1),
            rank: self.rank,
            nranks: self.nranks,
        }
    }

    /// Enqueues one operation of `bytes` on the stream.
    fn enqueue(&mut self, bytes: usize) -> Result<()> {
        let launch = self.launch(bytes);
        // SAFETY: both buffers hold at least `bytes` (checked), more than any
        // collective's send and receive counts of a case of `bytes`, and live as
        // long as self; the stream belongs to this communicator's device.
        unsafe {
            self.comm
                .launch(&launch, self.stream.cu_stream() as *mut c_void)?;
        }
        Ok(())
    }

    /// Captures (once per size) a graph of `n` all-reduces of `bytes`, uploads it and
    /// launches it once untimed, so that no timed launch pays for instantiation.
    fn ensure_graph(&mut self, bytes: usize, n: usize) -> Result<()> {
        if self.graphs.contains_key(&(bytes, n)) {
            return Ok(());
        }
        self.graphs.retain(|&(b, _), _| b == bytes);
        // NCCL connects lazily: a first all-reduce outside the capture sets the
        // connections up, so no set-up happens inside it.
        self.enqueue(bytes)?;
        self.sync()?;
        self.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .context("cannot start a CUDA graph capture")?;
        let enqueued = (0..n).try_for_each(|_| self.enqueue(bytes));
        // The capture is ended even when an all-reduce failed, or the stream stays
        // unusable.
        let graph = self.stream.end_capture(CUgraphInstantiate_flags(0));
        // NCCL's own error first: it says more than the capture it invalidated.
        let call = self.launch(bytes).call();
        enqueued.with_context(|| format!("{call} failed during CUDA graph capture"))?;
        let graph = graph
            .context("CUDA graph capture of the operations failed")?
            .ok_or_else(|| anyhow!("the CUDA graph capture recorded nothing"))?;
        graph.upload().context("cannot upload the CUDA graph")?;
        graph.launch().context("CUDA graph launch failed")?;
        self.sync()?;
        self.graphs.insert((bytes, n), graph);
        Ok(())
    }

    /// Enqueues `n` all-reduces of `bytes`: one graph launch, or `n` launches.
    fn enqueue_step(&mut self, bytes: usize, n: usize) -> Result<()> {
        match self.graphs.get(&(bytes, n)) {
            Some(graph) => graph.launch().context("CUDA graph launch failed"),
            None => (0..n).try_for_each(|_| self.enqueue(bytes)),
        }
    }

    /// Waits until the stream has run everything enqueued, polling `cuStreamQuery`
    /// and NCCL's asynchronous error; an NCCL error or the deadline ends the wait
    /// with an error that says why (the worker reports it, then aborts the
    /// communicator: `Communicator::abort`).
    fn sync(&mut self) -> Result<()> {
        self.bind()?;
        let stream = self.stream.cu_stream();
        let start = Instant::now();
        loop {
            // SAFETY: a live stream of this rank's context, which is current.
            match unsafe { cusys::cuStreamQuery(stream) } {
                CUresult::CUDA_SUCCESS => break,
                CUresult::CUDA_ERROR_NOT_READY => {}
                code => return Err(DriverError(code)).context("CUDA stream failed"),
            }
            if let Err(e) = self.comm.async_error() {
                return Err(anyhow::Error::new(e)
                    .context("NCCL reported an error while the stream ran; the communicator is aborted (ncclCommAbort) once this is reported"));
            }
            if self.comm.past_deadline() {
                let last = self.comm.last_error();
                return Err(DeadlineExceeded {
                    what: "the work on the GPU stream".into(),
                    waited_s: start.elapsed().as_secs_f64(),
                    aftermath: format!(
                        "the communicator is aborted (ncclCommAbort) once this is reported{}",
                        last.map(|l| format!("; NCCL's last error: {l}"))
                            .unwrap_or_default()
                    ),
                }
                .into());
            }
            backoff(start);
        }
        if let Err(e) = self.comm.async_error() {
            return Err(anyhow::Error::new(e).context(
                "NCCL reported an error once the stream was done; the communicator is aborted (ncclCommAbort) once this is reported",
            ));
        }
        Ok(())
    }

    /// Times `CALIBRATION` all-reduces with an event after each and as many with
    /// events at the ends only (each batch after an aligning all-reduce), and
    /// chooses the size's stride; every rank runs the same all-reduces, whatever
    /// it measures.
    fn measure_pace(&mut self, bytes: usize) -> Result<Pace> {
        self.ensure_events(CALIBRATION + 1)?;
        let record =
            |e: &CudaEvent, s: &Arc<CudaStream>| e.record(s).context("cudaEventRecord failed");
        self.enqueue(bytes)?;
        record(&self.events[0], &self.stream)?;
        let start = Instant::now();
        for i in 0..CALIBRATION {
            self.enqueue(bytes)?;
            record(&self.events[i + 1], &self.stream)?;
        }
        let host_with = start.elapsed();
        self.sync()?;
        self.enqueue(bytes)?;
        record(&self.events[0], &self.stream)?;
        let start = Instant::now();
        for _ in 0..CALIBRATION {
            self.enqueue(bytes)?;
        }
        let host_without = start.elapsed();
        record(&self.events[1], &self.stream)?;
        self.sync()?;
        let gpu_ms = self.events[0]
            .elapsed_ms(&self.events[1])
            .context("cudaEventElapsedTime failed")?;
        let per = |d: Duration| d.as_nanos() as f64 / CALIBRATION as f64;
        let pace = Pace::choose(
            per(host_with),
            per(host_without),
            gpu_ms as f64 * 1e6 / CALIBRATION as f64,
        );
        // The worker's log says what was decided, and on what.
        let op = self.job.collective.op_word();
        let every = match pace.stride {
            1 => format!("an event after every {op}"),
            k => format!("an event every {k} operations"),
        };
        eprintln!(
            "{bytes} bytes: host {:.2} us per {op} with an event, {:.2} us without; GPU {:.2} us per {op}: {every}",
            pace.host_with_event_ns / 1e3,
            pace.host_without_ns / 1e3,
            pace.gpu_ns / 1e3,
        );
        Ok(pace)
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
        self.bind()?;
        let period = pattern.input_period();
        let first = period.len().min(bytes);
        let stream = self.stream.cu_stream();
        // SAFETY: the first `first` <= `bytes` bytes of the send buffer exist
        // (checked above); the pattern outlives the copy (synchronized below).
        unsafe { cu::memcpy_htod_async(self.send_ptr, &period[..first], stream) }
            .context("copy to the GPU failed")?;
        for (offset, len) in doubling_copies(period.len(), bytes) {
            // SAFETY: source 0..len and destination offset..offset+len lie within the
            // first `bytes` of the send buffer (checked above) and do not overlap
            // (len <= offset); the stream belongs to the buffer's context.
            unsafe {
                cu::memcpy_dtod_async(self.send_ptr + offset as u64, self.send_ptr, len, stream)
            }
            .context("device-to-device copy failed while filling the input")?;
        }
        self.sync()
    }

    fn poison_output(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.bind()?;
        // SAFETY: the first `bytes` of the receive buffer exist (checked above); any
        // byte pattern is valid for u8.
        unsafe { cu::memset_d8_async(self.recv_ptr, 0xff, bytes, self.stream.cu_stream()) }
            .context("cuMemsetD8Async failed on the output buffer")?;
        self.sync()
    }

    fn check_output(&mut self, pattern: &Pattern, bytes: usize) -> Result<CheckReport> {
        self.check_len(bytes)?;
        self.bind()?;
        let stream = self.stream.cu_stream();
        // SAFETY: the first `bytes` of the receive buffer and of the host buffer
        // exist (checked above); the host buffer is not touched until the stream is
        // synchronized below.
        unsafe {
            cu::memcpy_dtoh_async(&mut self.host.bytes_mut()[..bytes], self.recv_ptr, stream)
        }
        .context("copy from the GPU failed")?;
        self.sync()?;
        let who = (self.rank, self.nranks);
        Ok(self.job.check(pattern, who, bytes, self.host.bytes()))
    }

    fn calibrate(&mut self, bytes: usize) -> Result<usize> {
        self.check_len(bytes)?;
        self.bind()?;
        Ok(if self.graph > 0 {
            // The graph launches are the steps.
            1
        } else if self.event_stride > 0 {
            self.event_stride
        } else if bytes >= CALIBRATE_BELOW {
            1
        } else {
            self.measure_pace(bytes)?.stride
        })
    }

    fn timed_batch(&mut self, bytes: usize, every: usize, durations: &mut [u64]) -> Result<()> {
        self.check_len(bytes)?;
        self.bind()?;
        let per_step = if self.graph > 0 {
            self.graph
        } else {
            every.max(1)
        };
        let steps = launch_steps(durations.len(), per_step);
        if self.graph > 0 {
            for &n in &steps {
                self.ensure_graph(bytes, n)?;
            }
        }
        self.ensure_events(steps.len() + 1)?;
        // One untimed operation lines the ranks up: event 0 then marks its
        // completion on this rank (every rank's at once for all-reduce; rooted
        // collectives and sendrecv finish rank by rank, and the orchestrator
        // averages the ranks' times).
        self.enqueue(bytes)?;
        self.events[0]
            .record(&self.stream)
            .context("cudaEventRecord failed")?;
        for (i, &n) in steps.iter().enumerate() {
            self.enqueue_step(bytes, n)?;
            self.events[i + 1]
                .record(&self.stream)
                .context("cudaEventRecord failed")?;
        }
        self.sync()?;
        let mut rest = &mut durations[..];
        for (i, &n) in steps.iter().enumerate() {
            let ms = self.events[i]
                .elapsed_ms(&self.events[i + 1])
                .context("cudaEventElapsedTime failed")?;
            let (step, tail) = rest.split_at_mut(n);
            crate::backend::spread((ms as f64 * 1e6).round() as u64, step);
            rest = tail;
        }
        Ok(())
    }

    fn run_once(&mut self, bytes: usize) -> Result<()> {
        self.check_len(bytes)?;
        self.enqueue(bytes)?;
        self.sync()
    }

    fn probe(&mut self, bytes: usize) -> Result<crate::backend::Probe> {
        self.check_len(bytes)?;
        let launch = self.launch(bytes);
        let stream = self.stream.cu_stream() as *mut c_void;
        // SAFETY: as `enqueue`: both buffers hold `bytes`, the stream is this device's.
        let predicted_us = unsafe { self.comm.predict(&launch, stream)? };
        // SAFETY: as above.
        let refused = unsafe { self.comm.launch_or_refusal(&launch, stream)? };
        if refused.is_none() {
            self.sync()?;
        }
        Ok(crate::backend::Probe {
            predicted_us,
            refused,
        })
    }

    fn set_deadline(&mut self, deadline: Instant) {
        self.comm.set_deadline(deadline);
    }

    fn abort(&mut self, within: Duration) -> bool {
        self.comm.abort_within(within)
    }
}
