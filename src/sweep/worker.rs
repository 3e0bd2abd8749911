//! The worker: one rank of a case group, driven over stdin/stdout by the orchestrator.
//! It joins the communicator (rank 0 makes the unique id), then for each size fills
//! its input, warms up, runs the timed batches it is asked for (each preceded by one
//! untimed all-reduce that lines the ranks up) and checks the output. Its buffers and
//! its duration buffer are allocated once; nothing is allocated per iteration.
//!
//! The protocol has stdout to itself: the worker keeps a private copy of the
//! descriptor and points descriptor 1 at stderr (the rank's log), because NCCL
//! writes its debug log to stdout when `NCCL_DEBUG_FILE` cannot be opened, and a
//! library's line written into the middle of a large batch message would break it.
//! A worker that fails leaves with `_exit` once its error is sent: libnccl's static
//! destructors must not run while its proxy threads and kernels may still be alive.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::fault::{Faults, Phase};
use super::protocol::{self, Command, Event, WrongElement};
use crate::backend::host::{HostBackend, HostOptions, BANNER, DEFAULT_BUFFSIZE};
use crate::backend::nccl::gpu::{GpuOptions, NcclBackend};
use crate::backend::nccl::{Nccl, NcclError};
use crate::backend::{Backend, Communicator, DeadlineExceeded};
use crate::config::BackendChoice;
use crate::ops::collective::Collective;
use crate::ops::pattern::Pattern;
use crate::ops::{DataType, ReduceOp};
use crate::stats::adaptive::MAX_BATCH;

/// What one worker is (`cmd::worker` builds it from the hidden `worker` flags the
/// orchestrator writes).
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub backend: BackendChoice,
    pub rank: u32,
    pub nranks: u32,
    /// The largest message: the buffers' size.
    pub max_bytes: u64,
    pub datatype: DataType,
    pub op: ReduceOp,
    /// The collective every case of this group runs, and its root where it has one.
    pub collective: Collective,
    pub root: u32,
    pub shm_dir: PathBuf,
    /// Prefix of the shared-memory segments of this case (the orchestrator removes them).
    pub segment_prefix: String,
    /// libnccl to load (NCCL backend).
    pub nccl_lib: Option<PathBuf>,
    /// CUDA device of this rank (NCCL backend), or core (host backend).
    pub device: Option<usize>,
    /// All-reduces per CUDA graph launch (0: none).
    pub graph: u64,
    /// How the buffers are registered with NCCL (NCCL backend).
    pub register: crate::nccl::register::Registration,
    /// All-reduces per timing event (NCCL backend; 0: decided per size).
    pub events_every: u64,
    /// How long the communicator set-up may take.
    pub init_timeout_s: f64,
    /// How long a case (one size) may take before the orchestrator kills the group.
    pub case_timeout_s: Option<f64>,
}

/// Runs a worker to completion; returns the process exit code (a failed worker
/// does not return: it leaves with `_exit(1)` once the error is sent).
pub fn run(args: &WorkerSettings) -> i32 {
    let mut out = BufWriter::new(protocol_output());
    let stdin = io::stdin();
    let mut input = stdin.lock();
    match serve(args, &mut input, &mut out) {
        Ok(()) => 0,
        Err(e) => fail(&mut out, args.rank, &e, None),
    }
}

/// The protocol's own copy of stdout; descriptor 1 then goes to stderr.
fn protocol_output() -> File {
    // SAFETY: dup/dup2 on the process's standard descriptors; the new descriptor is
    // owned by the returned File alone.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 {
            // Without a copy the protocol keeps descriptor 1 itself.
            return File::from_raw_fd(1);
        }
        libc::dup2(2, 1);
        File::from_raw_fd(fd)
    }
}

/// How long a failed rank waits for its communicator's abort before it leaves.
const ABORT_WAIT: Duration = Duration::from_secs(5);

/// Sends the error to the orchestrator (and to the rank's log), then stops what the
/// communicator still runs (bounded: an abort can block), and leaves.
fn fail(
    out: &mut impl Write,
    rank: u32,
    e: &anyhow::Error,
    comm: Option<&mut dyn Communicator>,
) -> ! {
    let message = format!("{e:#}");
    eprintln!("rank {rank}: error: {message}");
    let timed_out = e.chain().any(|c| {
        c.is::<DeadlineExceeded>()
            || matches!(c.downcast_ref::<NcclError>(), Some(NcclError::Stuck { .. }))
    });
    let _ = protocol::send(out, &Event::Error { message, timed_out });
    let _ = out.flush();
    if let Some(comm) = comm {
        if !comm.abort(ABORT_WAIT) {
            eprintln!(
                "rank {rank}: the communicator's abort did not return within {} s; leaving without it",
                ABORT_WAIT.as_secs()
            );
        }
    }
    // SAFETY: ends the process without running atexit handlers or static destructors
    // (libnccl's would race its own threads); everything to keep is already written.
    unsafe { libc::_exit(1) }
}

/// How long a rank waits for one case before it stops the collective itself: the
/// orchestrator's timeout less a margin for the abort and the report to arrive first.
pub fn case_budget(timeout: Duration) -> Duration {
    let margin = timeout
        .mul_f64(0.1)
        .clamp(Duration::from_millis(500), Duration::from_secs(5))
        .min(timeout / 2);
    timeout.saturating_sub(margin)
}

fn backend_for(args: &WorkerSettings, faults: &Faults) -> Result<Box<dyn Backend>> {
    match args.backend {
        BackendChoice::Host => {
            let mut options = HostOptions {
                shm_dir: args.shm_dir.clone(),
                segment_prefix: args.segment_prefix.clone(),
                use_shm: true,
                buffsize: DEFAULT_BUFFSIZE,
                max_bytes: args.max_bytes as usize,
                dtype: args.datatype,
                op: args.op,
                init_timeout: Duration::from_secs_f64(args.init_timeout_s),
                corrupt: faults.corrupts(),
                hang_with_segment: faults.hangs_with_segment(),
                slowdown: faults.slowdown(),
                stores: crate::backend::host::ring::Stores::Measured,
                collective: args.collective,
                root: args.root,
                pin_cpus: true,
                cpu: args.device,
                bind: crate::backend::host::LOOPBACK,
            };
            options.apply_env(|k| std::env::var(k).ok())?;
            Ok(Box::new(HostBackend::new(options)))
        }
        BackendChoice::Nccl => {
            let path = args
                .nccl_lib
                .as_deref()
                .ok_or_else(|| anyhow!("the NCCL worker needs --nccl-lib"))?;
            let nccl = Nccl::load(path)?;
            let options = GpuOptions {
                device: args.device.unwrap_or(args.rank as usize),
                max_bytes: args.max_bytes as usize,
                dtype: args.datatype,
                op: args.op,
                collective: args.collective,
                root: args.root,
                graph: args.graph as usize,
                // Events per all-reduce unless they would set the pace or show
                // their grain (calibrated per size), or as NCCL_BENCH_EVENTS_EVERY
                // told the orchestrator.
                event_stride: args.events_every as usize,
                // Within the orchestrator's own limit, so that the rank says why.
                init_timeout: case_budget(Duration::from_secs_f64(args.init_timeout_s)),
                register: args.register,
            };
            Ok(Box::new(NcclBackend::new(nccl, options)))
        }
        BackendChoice::Auto => bail!("a worker needs an explicit --backend"),
    }
}

fn serve(args: &WorkerSettings, input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    let rank = args.rank;
    let faults = Faults::from_env(rank)?;
    let host = crate::machine::host::hostname();
    protocol::send(
        out,
        &Event::Hello {
            rank,
            pid: std::process::id(),
            host,
        },
    )?;
    let mut backend = backend_for(args, &faults)?;
    let mut line = String::new();
    let id = if rank == 0 {
        let id = backend.unique_id()?;
        protocol::send(out, &Event::UniqueId { id: id.clone() })?;
        id
    } else {
        match protocol::read_command(input, &mut line)? {
            Some(Command::UniqueId { id }) => id,
            Some(other) => bail!("expected the unique id, got {other:?}"),
            None => return Ok(()),
        }
    };
    faults.trigger(Phase::Init);
    let mut comm = backend
        .init(&id, rank, args.nranks)
        .context("communicator initialization failed")?;
    let transports = comm.transports();
    // Each backend's own words: the host backend's banner says it is not NCCL.
    let banner = match args.backend {
        BackendChoice::Host => BANNER,
        _ => "nccl backend",
    };
    let detail = format!(
        "{banner}: rank {rank} of {} (pid {}) connected via {}",
        args.nranks,
        std::process::id(),
        comm.detail()
    );
    eprintln!("{detail}");
    let algorithm = comm.algorithm();
    protocol::send(
        out,
        &Event::Ready {
            transports,
            detail,
            algorithm,
        },
    )?;
    if let Err(e) = measure(args, comm.as_mut(), &faults, input, out) {
        // Report first, then abort (bounded) and leave without a destroy: peers may
        // be stuck in a collective, and a destroy would wait for them. The
        // orchestrator kills the group anyway.
        fail(out, rank, &e, Some(comm.as_mut()));
    }
    Ok(())
}

/// Serves size, time and check commands until told to exit (or stdin closes).
fn measure(
    args: &WorkerSettings,
    comm: &mut dyn Communicator,
    faults: &Faults,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<()> {
    let pattern = Pattern::new(args.datatype, args.op, args.rank, args.nranks);
    let mut durations = vec![0u64; MAX_BATCH as usize];
    let mut current: Option<usize> = None;
    let mut line = String::new();
    let budget = args
        .case_timeout_s
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| case_budget(Duration::from_secs_f64(s)));
    while let Some(command) = protocol::read_command(input, &mut line)? {
        match command {
            Command::Size { bytes, warmup } => {
                if let Some(budget) = budget {
                    comm.set_deadline(Instant::now() + budget);
                }
                faults.trigger(Phase::Size(bytes));
                let bytes = usize::try_from(bytes)?;
                comm.fill_input(&pattern, bytes)?;
                comm.poison_output(bytes)?;
                for _ in 0..warmup {
                    comm.run_once(bytes)?;
                }
                // A stall fault times its all-reduces one by one, outside
                // timed_batch: no calibration all-reduces on any rank then.
                let wanted = if faults.has_stall() {
                    1
                } else {
                    comm.calibrate(bytes)?
                };
                current = Some(bytes);
                protocol::send(
                    out,
                    &Event::Warm {
                        bytes: bytes as u64,
                        wanted: wanted as u64,
                    },
                )?;
            }
            Command::Renew => {
                if let Some(budget) = budget {
                    comm.set_deadline(Instant::now() + budget);
                }
            }
            Command::Time { iters, every } => {
                let bytes = current.ok_or_else(|| anyhow!("time before any size"))?;
                let iters = usize::try_from(iters.min(MAX_BATCH))?;
                match faults.stall_at(bytes as u64) {
                    // As `timed_batch` (one untimed all-reduce, then the timed
                    // ones), each timed one after the pause: the peers wait in
                    // theirs, so their iterations take the pause.
                    Some(pause) => {
                        comm.run_once(bytes)?;
                        for d in &mut durations[..iters] {
                            std::thread::sleep(pause);
                            let start = Instant::now();
                            comm.run_once(bytes)?;
                            *d = start.elapsed().as_nanos() as u64;
                        }
                    }
                    None => {
                        let every = usize::try_from(every)?;
                        comm.timed_batch(bytes, every, &mut durations[..iters])?
                    }
                }
                protocol::send(
                    out,
                    &Event::Batch {
                        durations_ns: Cow::Borrowed(&durations[..iters]),
                    },
                )?;
            }
            Command::Check => {
                let bytes = current.ok_or_else(|| anyhow!("check before any size"))?;
                let report = comm.check_output(&pattern, bytes)?;
                let first_wrong = report.first.map(|m| WrongElement {
                    index: m.index,
                    got: m.got,
                    expected: m.expected,
                });
                protocol::send(
                    out,
                    &Event::Checked {
                        wrong: report.wrong,
                        first_wrong,
                    },
                )?;
            }
            Command::Probe { bytes } => {
                if let Some(budget) = budget {
                    comm.set_deadline(Instant::now() + budget);
                }
                let bytes = usize::try_from(bytes)?;
                comm.fill_input(&pattern, bytes)?;
                let probe = comm.probe(bytes)?;
                protocol::send(
                    out,
                    &Event::Probed {
                        predicted_us: probe.predicted_us,
                        refused: probe.refused,
                    },
                )?;
            }
            Command::Exit => {
                protocol::send(out, &Event::Bye)?;
                break;
            }
            Command::UniqueId { .. } => bail!("unexpected unique id after initialization"),
        }
    }
    Ok(())
}
