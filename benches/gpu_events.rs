//! What a timing event after every all-reduce costs on a real GPU, measured side by
//! side in one run (not a timed test): one rank on GPU 0, batches of back-to-back
//! all-reduces through the NCCL backend's own `timed_batch`, with an event after each
//! all-reduce (stride 1) and with events only around the batch (stride = batch),
//! alternating, at a few sizes. Printed per size: the GPU time per all-reduce (from
//! the events) and the host time per `timed_batch` iteration in both modes, and the
//! host time to enqueue one all-reduce with and without an event record after it.
//!
//! Run on a machine with an NVIDIA GPU: `cargo bench --bench gpu_events` (libnccl
//! found as the sweep finds it, or `NCCL_BENCH_NCCL_LIB`). Without a driver it says so
//! and exits 0.

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaContext;
use nccl_bench::backend::nccl::comm::{Launch, NcclComm};
use nccl_bench::backend::nccl::gpu::{GpuOptions, NcclBackend};
use nccl_bench::backend::nccl::{Nccl, Runs};
use nccl_bench::backend::Backend;
use nccl_bench::machine::libnccl::{self, ThisMachine};
use nccl_bench::ops::collective::Collective;
use nccl_bench::ops::pattern::Pattern;
use nccl_bench::ops::{DataType, ReduceOp};

const BATCH: usize = 1000;
const ROUNDS: usize = 5;
const SIZES: [usize; 3] = [8, 64 << 10, 1 << 20];

fn main() {
    if let Err(e) = nccl_bench::machine::cuda::cuda_driver() {
        println!("gpu_events: skipped, no NVIDIA driver ({e})");
        return;
    }
    if let Err(e) = run() {
        eprintln!("gpu_events: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let explicit = std::env::var_os("NCCL_BENCH_NCCL_LIB").map(std::path::PathBuf::from);
    let found =
        libnccl::discover(explicit.as_deref(), &ThisMachine).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("NCCL {} at {}", found.version, found.path.display());
    let backend = |stride: usize| -> anyhow::Result<Box<dyn nccl_bench::backend::Communicator>> {
        let mut b = NcclBackend::new(
            Nccl::load(&found.path)?,
            GpuOptions {
                device: 0,
                max_bytes: *SIZES.iter().max().unwrap_or(&8),
                dtype: DataType::Float,
                op: ReduceOp::Sum,
                collective: Collective::AllReduce,
                root: 0,
                graph: 0,
                event_stride: stride,
                init_timeout: std::time::Duration::from_secs(60),
                register: Default::default(),
            },
        );
        let id = b.unique_id()?;
        b.init(&id, 0, 1)
    };
    let mut every = backend(1)?;
    let mut ends = backend(BATCH)?;
    let pattern = Pattern::new(DataType::Float, ReduceOp::Sum, 0, 1);
    let mut durations = vec![0u64; BATCH];
    println!(
        "{:>9}  {:>13} {:>13} {:>7}  {:>13} {:>13}",
        "size", "GPU us/iter", "GPU us/iter", "ratio", "host us/iter", "host us/iter"
    );
    println!(
        "{:>9}  {:>13} {:>13} {:>7}  {:>13} {:>13}",
        "", "event each", "events at ends", "", "event each", "events at ends"
    );
    for &bytes in &SIZES {
        for (comm, stride) in [(&mut every, 1), (&mut ends, BATCH)] {
            comm.fill_input(&pattern, bytes)?;
            comm.timed_batch(bytes, stride, &mut durations)?; // warm-up
        }
        let (mut gpu, mut host) = ([0f64; 2], [0f64; 2]);
        for _ in 0..ROUNDS {
            for (k, (comm, stride)) in [(&mut every, 1), (&mut ends, BATCH)]
                .into_iter()
                .enumerate()
            {
                let t = Instant::now();
                comm.timed_batch(bytes, stride, &mut durations)?;
                host[k] += t.elapsed().as_nanos() as f64;
                gpu[k] += durations.iter().sum::<u64>() as f64;
            }
        }
        let per = |ns: f64| ns / (ROUNDS * BATCH) as f64 / 1000.0;
        println!(
            "{:>9}  {:>13.3} {:>13.3} {:>7.3}  {:>13.3} {:>13.3}",
            bytes,
            per(gpu[0]),
            per(gpu[1]),
            gpu[0] / gpu[1],
            per(host[0]),
            per(host[1])
        );
    }
    drop((every, ends));
    enqueue_cost(&found.path)
}

/// Host time to enqueue one 8-byte all-reduce, with and without an event record
/// after it (500 per batch, below the launch queue's depth, so nothing blocks).
fn enqueue_cost(path: &std::path::Path) -> anyhow::Result<()> {
    const N: usize = 500;
    let nccl = std::sync::Arc::new(Nccl::load(path)?);
    let ctx = CudaContext::new(0)?;
    // SAFETY: before any buffer or event exists.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let send = stream.alloc_zeros::<f32>(2)?;
    let recv = stream.alloc_zeros::<f32>(2)?;
    let (sp, rp) = {
        use cudarc::driver::DevicePtr;
        (send.device_ptr(&stream).0, recv.device_ptr(&stream).0)
    };
    let id = nccl.unique_id()?;
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    let mut comm = NcclComm::init(nccl, 1, &id, 0, deadline)?;
    let launch = Launch {
        collective: Collective::AllReduce,
        runs: Runs::Native,
        send: sp as *const _,
        recv: rp as *mut _,
        counts: Collective::AllReduce.counts(8, 4, 1),
        dtype: DataType::Float,
        op: ReduceOp::Sum,
        root: 0,
        rank: 0,
        nranks: 1,
    };
    let events: Vec<_> = (0..N)
        .map(|_| ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)))
        .collect::<Result<_, _>>()?;
    let mut best = [f64::INFINITY; 2];
    for _ in 0..20 {
        for (k, best) in best.iter_mut().enumerate() {
            stream.synchronize()?;
            let t = Instant::now();
            for e in events.iter().take(N) {
                // SAFETY: 2-element device buffers of this context, a live stream.
                unsafe {
                    comm.launch(&launch, stream.cu_stream() as *mut _)?;
                }
                if k == 0 {
                    e.record(&stream)?;
                }
            }
            *best = best.min(t.elapsed().as_nanos() as f64 / N as f64 / 1000.0);
        }
    }
    stream.synchronize()?;
    println!(
        "enqueue, best of 20 x {N}: {:.3} us per all-reduce with an event record after it, {:.3} us without: an event costs {:.3} us of host time",
        best[0],
        best[1],
        best[0] - best[1]
    );
    Ok(())
}
