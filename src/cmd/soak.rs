//! `nccl-bench soak`: the checked settings (one rank count, one size, a duration
//! cut into intervals), the terminal's view of it (a bar with the current and worst
//! interval, or one line per interval), and the soak itself (`sweep::soak`).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::settings::backend_choice;
use crate::cli::{RunSoakArgs, SoakArgs};
use crate::config::sizes::{self, Step};
use crate::config::{self, IterationPolicy, SweepSettings};
use crate::ops::collective::Collective;
use crate::ops::DataType;
use crate::sweep::soak::{SoakObserver, SoakSettings};
use crate::units::{format_duration, Bytes};

/// The shortest interval: a timed batch is a quarter of it, and each batch costs a
/// round trip to every rank.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

pub fn run(args: &SoakArgs) -> Result<u8> {
    let (settings, soak) = soak_settings(args)?;
    let mut observer = observer(args.plain);
    let mut sweep_observer = super::progress::for_terminal(true);
    crate::sweep::soak::run(
        &settings,
        &soak,
        sweep_observer.as_mut(),
        observer.as_mut(),
        std::env::args().collect(),
    )
}

/// A bar on a terminal, else one line per interval (`--plain`, a pipe).
pub fn observer(plain: bool) -> Box<dyn SoakObserver> {
    if !plain && std::io::stdout().is_terminal() {
        Box::new(Bar(None))
    } else {
        Box::new(Lines)
    }
}

/// Refuses an interval too short to measure, or a duration with fewer than two.
fn check_timing(duration: Duration, interval: Duration, duration_flag: &str) -> Result<()> {
    if interval < MIN_INTERVAL {
        bail!(
            "--interval {}: the shortest interval is {} (each takes several timed batches)",
            format_duration(interval),
            format_duration(MIN_INTERVAL)
        );
    }
    if duration < interval * 2 {
        bail!(
            "{duration_flag} {} is shorter than two --interval {}: a soak needs intervals to compare",
            format_duration(duration),
            format_duration(interval)
        );
    }
    Ok(())
}

/// The one size: a whole number of elements, as a sweep's sizes.
fn check_size(size: Option<Bytes>, dtype: DataType) -> Result<()> {
    if let Some(size) = size {
        sizes::size_list(size, size, Step::Factor(2), dtype.size(), dtype.name())?;
    }
    Ok(())
}

/// `run --soak`'s settings; `None` without `--soak` (a sweep).
pub fn run_soak_settings(args: &RunSoakArgs, dtype: DataType) -> Result<Option<SoakSettings>> {
    let Some(duration) = args.soak else {
        return Ok(None);
    };
    check_timing(duration, args.interval, "--soak")?;
    check_size(args.size, dtype)?;
    Ok(Some(SoakSettings {
        duration,
        interval: args.interval,
        bytes: args.size.map(|b| b.0),
        dip: args.dip,
        counters_root: args.counters_root.clone(),
    }))
}

pub fn soak_settings(args: &SoakArgs) -> Result<(SweepSettings, SoakSettings)> {
    check_timing(args.duration, args.interval, "--duration")?;
    if let Some(dir) = &args.run_dir {
        if dir.exists() {
            bail!(
                "--run-dir {} already exists: a run directory is never overwritten",
                dir.display()
            );
        }
    }
    if let Some(label) = &args.label {
        config::transport::check_name(label).map_err(|_| {
            anyhow!("invalid --label '{label}': use letters, digits, '-', '_' and '.' (it becomes part of a directory name)")
        })?;
    }
    let transports = if args.transports.is_empty() && args.config.is_empty() {
        vec!["default".to_string()]
    } else {
        args.transports.clone()
    };
    let selection = config::select_configs(&args.config, &transports)?;
    let collectives = match (&args.coll, selection.collectives) {
        (Some(text), _) => Collective::parse_list(text).map_err(|e| anyhow!("--coll: {e}"))?,
        (None, Some(from_files)) => from_files,
        (None, None) => vec![Collective::AllReduce],
    };
    config::check_root(&collectives, args.root, &[args.gpus])?;
    check_size(args.size, args.datatype)?;
    let settings = SweepSettings {
        sizes: args.size.map(|b| vec![b.0]).unwrap_or_default(),
        gpu_counts: vec![args.gpus],
        configs: selection.configs,
        warnings: selection.warnings,
        backend: backend_choice(args.backend),
        dtype: args.datatype,
        op: args.op,
        collectives,
        root: args.root,
        iterations: IterationPolicy::Fixed { iters: 1 },
        rounds: Some(1),
        max_rounds: None,
        warmup: args.warmup_iters,
        graph: args.graph,
        events_every: config::events_every(std::env::var(config::EVENTS_EVERY_ENV).ok())?,
        probe: false,
        try_every_size: true,
        timeout: args.timeout,
        out_dir: args.out.clone(),
        run_dir: args.run_dir.clone(),
        label: args.label.clone(),
        shm_dir: args.shm_dir.clone(),
        nccl_lib: args.nccl_lib.clone(),
        plain_output: true,
        verbose: false,
        ceiling_bytes: 0,
        reach_figures: false,
        step: Step::Factor(2),
        sizes_from: None,
        expected: None,
    };
    let soak = SoakSettings {
        duration: args.duration,
        interval: args.interval,
        bytes: args.size.map(|b| b.0),
        dip: args.dip,
        counters_root: args.counters_root.clone(),
    };
    Ok((settings, soak))
}

/// A bar over the soak's duration with the latest and the worst interval.
struct Bar(Option<(ProgressBar, String)>);

impl SoakObserver for Bar {
    fn started(&mut self, config: &str, nranks: u32, bytes: u64, duration: Duration) {
        let bar = ProgressBar::new(duration.as_millis() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed}/{duration} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        let head = format!("soak {config} n={nranks} {}", Bytes(bytes));
        bar.set_prefix(head.clone());
        self.0 = Some((bar, head));
    }

    fn interval(&mut self, busbw: f64, worst: f64, done: Duration) {
        if let Some((bar, _)) = &self.0 {
            bar.set_position(done.as_millis() as u64);
            bar.set_message(format!("busbw {busbw:.2} GB/s, worst {worst:.2} GB/s"));
        }
    }

    fn finished(&mut self, _config: &str, status: &str) {
        if let Some((bar, head)) = self.0.take() {
            bar.finish_and_clear();
            println!("{head}: {status}");
        }
    }

    fn warning(&mut self, message: &str) {
        match &self.0 {
            Some((bar, _)) => bar.suspend(|| eprintln!("warning: {message}")),
            None => eprintln!("warning: {message}"),
        }
    }
}

/// One line per interval (logs, CI).
struct Lines;

impl SoakObserver for Lines {
    fn started(&mut self, config: &str, nranks: u32, bytes: u64, duration: Duration) {
        println!(
            "soak {config} n={nranks} {} for {}",
            Bytes(bytes),
            format_duration(duration)
        );
    }

    fn interval(&mut self, busbw: f64, worst: f64, done: Duration) {
        println!(
            "  {:>8}  busbw {busbw:>9.3} GB/s  worst {worst:>9.3} GB/s",
            format_duration(done)
        );
    }

    fn finished(&mut self, config: &str, status: &str) {
        println!("soak {config}: {status}");
    }

    fn warning(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }
}
