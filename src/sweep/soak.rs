//! The `soak` command from checked settings to exit code: the backend and run
//! directory as a sweep has them, then each config's soak in turn
//! (`Orchestrator::soak`) while a thread of its own reads this machine's counters
//! every interval (`machine::counters::Sampler`) into counters.csv, and at the end
//! the report (its soak section ties each dip to the counters that moved). Exit code:
//! 0 every soak ran to its end, 1 one failed, hung or computed wrong, 130 interrupted
//! (what was measured is kept and reported).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};

use super::orchestrator::soak::{SoakPlan, SoakSink};
use super::orchestrator::Orchestrator;
use super::plan::{Group, Plan};
use super::process::LocalLaunch;
use super::session::{self, EXIT_INTERRUPTED, MAX_HOST_RANKS};
use super::SweepObserver;
use crate::backend;
use crate::config::{IterationPolicy, SweepSettings};
use crate::export::soak::{ChangesOnly, CounterRow, SoakRow, SoakWriter};
use crate::export::RunWriter;
use crate::machine::counters::{Reading, Sampler};
use crate::machine::{GpuPresence, Root};
use crate::model::{CaseStatus, RunStatus, SoakInfo};
use crate::stats::soak::Interval;
use crate::stats::Bandwidth;
use crate::units::{now_rfc3339, Bytes};

/// What a soak adds to a sweep's settings (which hold its one rank count, its
/// configs and collective).
#[derive(Debug, Clone)]
pub struct SoakSettings {
    pub duration: Duration,
    pub interval: Duration,
    /// `--size`; `None`: 256 MiB with NCCL, 64 MiB on the host backend.
    pub bytes: Option<u64>,
    pub dip: f64,
    /// Where the counter files are read (`/` but in tests).
    pub counters_root: Option<PathBuf>,
}

/// The soak's default size on GPUs and on the host backend.
pub const GPU_SIZE: u64 = 256 << 20;
pub const HOST_SIZE: u64 = 64 << 20;

/// What the terminal shows of a soak.
pub trait SoakObserver {
    fn started(&mut self, config: &str, nranks: u32, bytes: u64, duration: Duration);
    /// An interval closed: its busbw and the worst one so far, `done` of the soak.
    fn interval(&mut self, busbw: f64, worst: f64, done: Duration);
    fn finished(&mut self, config: &str, status: &str);
    fn warning(&mut self, message: &str);
}

/// Writes each interval as it closes and tells the terminal.
struct Intervals<'a> {
    writer: &'a SoakWriter,
    observer: &'a mut dyn SoakObserver,
    notes: mpsc::Receiver<String>,
    said: Vec<String>,
    worst: f64,
}

impl SoakSink for Intervals<'_> {
    fn interval(
        &mut self,
        group: &Group,
        bytes: u64,
        offset: Duration,
        i: &Interval,
    ) -> Result<()> {
        let summary = (i.recorder.count() > 0).then(|| i.recorder.summary());
        let bandwidth =
            summary.map(|s| Bandwidth::of(group.collective, bytes, group.nranks, s.mean_us));
        let row = SoakRow {
            config: group.config.name.clone(),
            nranks: group.nranks,
            collective: group.collective.name().to_string(),
            bytes,
            interval: i.index,
            start_s: (offset + i.start).as_secs_f64(),
            end_s: (offset + i.end).as_secs_f64(),
            iterations: i.recorder.count(),
            mean_us: summary.map(|s| s.mean_us),
            p50_us: summary.map(|s| s.p50_us),
            p99_us: summary.map(|s| s.p99_us),
            max_us: summary.map(|s| s.max_us),
            algbw_gbps: bandwidth.map_or(0.0, |b| b.algbw.0),
            busbw_gbps: bandwidth.map_or(0.0, |b| b.busbw.0),
        };
        let tag = format!(
            "{}/n{}/{}/{}",
            row.config, row.nranks, row.collective, row.interval
        );
        self.writer
            .interval(&row, Some(i.recorder.histogram()), &tag)?;
        self.worst = self.worst.min(row.busbw_gbps);
        self.observer.interval(row.busbw_gbps, self.worst, i.end);
        while let Ok(note) = self.notes.try_recv() {
            self.observer.warning(&note);
            self.said.push(note);
        }
        Ok(())
    }
}

/// What a thread feeding counters.csv gets: the file, the run's clock, when to
/// stop, and where to say what could not be read.
pub struct CounterFeed {
    pub writer: Arc<SoakWriter>,
    pub run_start: Instant,
    pub stop: Arc<AtomicBool>,
    pub notes: mpsc::Sender<String>,
    changes: ChangesOnly,
}

impl CounterFeed {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Writes `node`'s readings, taken `at` after the run's start, where they
    /// changed; false when counters.csv cannot be written (said once: the feed
    /// should end).
    pub fn write(&mut self, node: &str, at: Duration, readings: Vec<Reading>) -> bool {
        let t_s = at.as_secs_f64();
        let rows = readings
            .into_iter()
            .map(|r| CounterRow {
                t_s,
                node: node.to_string(),
                source: r.source,
                counter: r.counter,
                kind: r.kind.as_str().to_string(),
                value: r.value,
            })
            .collect();
        match self.writer.counters(&self.changes.keep(rows)) {
            Ok(()) => true,
            Err(e) => {
                let _ = self.notes.send(format!("counters.csv: {e:#}"));
                false
            }
        }
    }
}

/// Reads this machine's counters every `interval` until the feed stops.
fn sample_counters(mut sampler: Sampler, mut feed: CounterFeed, interval: Duration) {
    let node = crate::machine::host::hostname();
    let mut next = Duration::ZERO;
    while !feed.stopped() {
        let t = feed.run_start.elapsed();
        if t < next {
            std::thread::sleep((next - t).min(Duration::from_millis(50)));
            continue;
        }
        let readings = sampler.sample();
        for note in sampler.notes() {
            let _ = feed.notes.send(note);
        }
        if !feed.write(&node, t, readings) {
            return;
        }
        next += interval;
    }
}

/// The size a soak runs: `--size`, else 256 MiB with NCCL, 64 MiB on the host backend.
pub fn size_for(backend: &str, asked: Option<u64>) -> u64 {
    asked.unwrap_or(if backend == "host" {
        HOST_SIZE
    } else {
        GPU_SIZE
    })
}

/// The soak's settings (one size: `size_for`) and plan, one group per config and
/// collective; refuses a size too small for one of the collectives.
pub fn plan(
    settings: &SweepSettings,
    backend: &str,
    soak: &SoakSettings,
) -> Result<(SweepSettings, Plan)> {
    let asked = size_for(backend, soak.bytes);
    // What only a sweep does is off, so that the manifest says what ran.
    let settings = SweepSettings {
        sizes: vec![asked],
        iterations: IterationPolicy::Fixed { iters: 1 },
        rounds: Some(1),
        max_rounds: None,
        probe: false,
        try_every_size: true,
        ceiling_bytes: 0,
        reach_figures: false,
        ..settings.clone()
    };
    let plan = Plan::new(&settings);
    // The size each collective really moves (nccl-tests' rounding to whole
    // elements per rank); none is refused, as a sweep lists it.
    if let Some(g) = plan.groups.iter().find(|g| g.sizes.is_empty()) {
        bail!(
            "--size {}: {}",
            Bytes(asked),
            g.empty_reason()
                .unwrap_or_else(|| "too small for this collective".into())
        );
    }
    Ok((settings, plan))
}

pub fn run(
    settings: &SweepSettings,
    soak: &SoakSettings,
    sweep_observer: &mut dyn SweepObserver,
    observer: &mut dyn SoakObserver,
    command_line: Vec<String>,
) -> Result<u8> {
    let gpus = GpuPresence::probe();
    let nranks = settings.gpu_counts.first().copied().unwrap_or(2);
    let backend = backend::resolve(
        settings.backend,
        &gpus,
        settings.nccl_lib.as_deref(),
        &settings.configs,
        settings.device_count(),
    )?;
    backend::select::check_calls(&backend, &settings.collectives, &settings.configs)?;
    let (settings, plan) = plan(settings, backend.name, soak)?;
    let settings = &settings;
    let bytes_max = plan.groups.iter().map(|g| g.sizes[0]).max().unwrap_or(0);
    if let Some(facts) = &backend.gpus {
        let devices: Vec<usize> = (0..settings.device_count() as usize).collect();
        backend::select::check_gpu_memory(facts, &devices, bytes_max)?;
        backend::select::check_host_memory_here(nranks, bytes_max)?;
    }
    if backend.name == "host" {
        if nranks > MAX_HOST_RANKS {
            bail!("--gpus {nranks}: the host backend runs at most {MAX_HOST_RANKS} processes");
        }
        if !settings.shm_dir.is_dir() {
            bail!(
                "--shm-dir {} is not a directory",
                settings.shm_dir.display()
            );
        }
        session::check_host_settings(settings, nranks)?;
    }
    let exe = std::env::current_exe().context("cannot find the nccl-bench executable")?;
    session::check_libraries(settings, &backend, &exe)?;
    let dir = session::new_run_dir(settings)?;
    let start_time = SystemTime::now();
    let writer = RunWriter::new(dir, start_time)?;
    let soak_writer = Arc::new(SoakWriter::create(&writer.dir().path, start_time)?);
    let manifest = session::manifest(
        settings,
        &backend,
        command_line,
        &gpus,
        settings.warnings.clone(),
    );
    let interrupted = session::interrupt_flag()?;
    println!("{}", session::banner(&backend));
    for w in &settings.warnings {
        observer.warning(w);
    }

    let root = match &soak.counters_root {
        Some(dir) => Root::fake_with_process_env(dir),
        None => Root::this_machine(),
    };
    // The soak's own GPUs (NVML lists every GPU of the machine).
    let bus_ids: Option<Vec<String>> = backend.gpus.as_ref().map(|f| {
        f.gpus
            .iter()
            .take(settings.device_count().max(nranks) as usize)
            .map(|g| g.bus_id.clone())
            .collect()
    });
    let sampler = Sampler::new(root, backend.name != "host", bus_ids);
    let interval = soak.interval;
    let mut launch = LocalLaunch { exe };
    let (nccl_lib, nccl_lib_per_config) = backend.nccl_paths();
    let orchestrator = Orchestrator {
        settings,
        launch: &mut launch,
        backend: backend.name.to_string(),
        label: backend.label().to_string(),
        nccl_lib,
        nccl_lib_per_config,
        writer: &writer,
        manifest,
        observer: sweep_observer,
        interrupted,
        run_start: Instant::now(),
        gate: None,
    };
    soak_groups(
        orchestrator,
        &plan,
        soak,
        soak_writer,
        observer,
        move |feed| sample_counters(sampler, feed, interval),
    )
}

/// Soaks each group of `plan` in turn while `counters` feeds counters.csv on a
/// thread of its own, then writes the manifest and the report; the exit code.
pub fn soak_groups(
    mut orchestrator: Orchestrator,
    plan: &Plan,
    soak: &SoakSettings,
    soak_writer: Arc<SoakWriter>,
    observer: &mut dyn SoakObserver,
    counters: impl FnOnce(CounterFeed) + Send + 'static,
) -> Result<u8> {
    let writer = orchestrator.writer;
    let interrupted = orchestrator.interrupted.clone();
    let asked = size_for(&orchestrator.backend, soak.bytes);
    orchestrator.manifest.soak = Some(SoakInfo {
        bytes: asked,
        duration_s: soak.duration.as_secs_f64(),
        interval_s: soak.interval.as_secs_f64(),
        dip: soak.dip,
        counter_notes: Vec::new(),
    });
    orchestrator.manifest.cases.total = plan.groups.len() as u64;
    writer.write_manifest(&orchestrator.manifest)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (notes_tx, notes) = mpsc::channel();
    let feed = CounterFeed {
        writer: soak_writer.clone(),
        run_start: orchestrator.run_start,
        stop: stop.clone(),
        notes: notes_tx,
        changes: ChangesOnly::default(),
    };
    let thread = std::thread::Builder::new()
        .name("counters".into())
        .spawn(move || counters(feed))
        .context("cannot start the counter thread")?;
    let mut sink = Intervals {
        writer: &soak_writer,
        observer,
        notes,
        said: Vec::new(),
        worst: f64::INFINITY,
    };
    let soak_plan = SoakPlan {
        duration: soak.duration,
        interval: soak.interval,
    };
    let mut all_ok = true;
    let mut outcome = Ok(());
    for group in &plan.groups {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        sink.worst = f64::INFINITY;
        let bytes = group.sizes[0];
        sink.observer
            .started(&group.config.name, group.nranks, bytes, soak.duration);
        match orchestrator.soak(group, bytes, soak_plan, &mut sink) {
            Ok(result) => {
                orchestrator.manifest.record_case(&result);
                all_ok &= result.status == CaseStatus::Ok;
                let status = match result.status {
                    CaseStatus::Ok => "ok".to_string(),
                    s => format!("{}: {}", s.as_str(), result.error),
                };
                sink.observer.finished(&group.config.name, &status);
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    let _ = thread.join();
    while let Ok(note) = sink.notes.try_recv() {
        sink.observer.warning(&note);
        sink.said.push(note);
    }
    let was_interrupted = interrupted.load(Ordering::SeqCst);
    let m = &mut orchestrator.manifest;
    if let Some(info) = &mut m.soak {
        info.counter_notes = sink.said.clone();
    }
    m.finished_at = Some(now_rfc3339());
    m.status = match (&outcome, was_interrupted) {
        (Err(_), _) => RunStatus::Aborted,
        (Ok(()), true) => RunStatus::Interrupted,
        (Ok(()), false) => RunStatus::Complete,
    };
    if let Err(e) = &outcome {
        m.error = Some(format!("{e:#}"));
    }
    writer.write_manifest(m)?;
    outcome?;
    session::write_report(&writer.dir().path);
    println!(
        "soak of {} at {} written to {}",
        crate::units::format_duration(soak.duration),
        Bytes(asked),
        writer.dir().path.display()
    );
    Ok(if was_interrupted {
        EXIT_INTERRUPTED
    } else if all_ok {
        0
    } else {
        1
    })
}
