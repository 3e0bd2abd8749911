//! The checked settings of `sweep` and `run`, built from their flags: sizes, rank
//! counts, transport configs, iterations and output (`config::SweepSettings`), with
//! every mistake rejected before anything runs.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use crate::cli::{CliBackend, MeasureArgs, SweepArgs};
use crate::config::sizes::{self, Step};
use crate::config::{self, BackendChoice, IterationPolicy, SweepSettings, EVENTS_EVERY_ENV};
use crate::ops::collective::Collective;
use crate::units::Bytes;

/// The largest size without `-e` (before `reach_figures` on GPUs), as nccl-tests'
/// common `-e 128M`.
const DEFAULT_MAX_BYTES: u64 = 128 << 20;

/// Which backend the user asked for.
pub fn backend_choice(b: CliBackend) -> BackendChoice {
    match b {
        CliBackend::Auto => BackendChoice::Auto,
        CliBackend::Nccl => BackendChoice::Nccl,
        CliBackend::Host => BackendChoice::Host,
    }
}

pub fn sweep_settings(args: &SweepArgs) -> Result<SweepSettings> {
    let gpu_counts = sizes::gpu_counts(&args.gpus).map_err(anyhow::Error::msg)?;
    let mut settings = measure_settings(&args.measure, gpu_counts)?;
    if args.quick {
        quick(&mut settings, &args.measure);
    }
    if let Some(dir) = &args.run_dir {
        if dir.exists() {
            bail!(
                "--run-dir {} already exists: a run directory is never overwritten",
                dir.display()
            );
        }
        settings.run_dir = Some(dir.clone());
    }
    if args.pairs {
        let devices = settings.gpu_counts.iter().copied().max().unwrap_or(2);
        if devices < 2 {
            bail!("--pairs needs at least 2 devices (--gpus 2 or more)");
        }
        settings.configs = config::pair_configs(&settings.configs, devices as usize)?;
        settings.gpu_counts = vec![2];
        config::check_root(&settings.collectives, settings.root, &[2])?;
    }
    Ok(settings)
}

/// The most rounds of `--quick`: looks after 6 and 8.
pub const QUICK_ROUNDS: u32 = 8;

/// The time budget of a size under `--quick`, shared among its rounds.
pub const QUICK_MAX_TIME: Duration = Duration::from_millis(250);

/// `--quick`: the SHM pair (unless configs were named), every third size of the
/// factor-2 list (8x apart) and its largest, [`QUICK_ROUNDS`] at the most, [`QUICK_MAX_TIME`] a size.
fn quick(settings: &mut SweepSettings, args: &MeasureArgs) {
    if args.transports.is_empty() && args.config.is_empty() {
        settings
            .configs
            .retain(|c| c.name == "default" || c.name == "shm-off");
    }
    let last = settings.sizes.len().saturating_sub(1);
    settings.sizes = settings
        .sizes
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 0 || *i == last)
        .map(|(_, &b)| b)
        .collect();
    settings.max_rounds = Some(QUICK_ROUNDS);
    if let IterationPolicy::Adaptive { max_time, .. } = &mut settings.iterations {
        *max_time = QUICK_MAX_TIME;
    }
}

/// `--sizes-from FILE`: the job's collectives and each one's sizes, with a warning
/// where the job's communicators have other rank counts than the sweep, or where
/// nccl-tests' rounding changes a size on a rank count of the sweep.
fn sizes_from(
    path: &std::path::Path,
    element: u64,
    gpu_counts: &[u32],
    warnings: &mut Vec<String>,
) -> Result<config::SizesFrom> {
    let job = crate::workload::Workload::read(path).map_err(|e| anyhow!("--sizes-from: {e}"))?;
    let mut sizes: std::collections::BTreeMap<Collective, Vec<u64>> = Default::default();
    for e in &job.entries {
        let list = sizes.entry(e.collective).or_default();
        if !list.contains(&e.bytes) {
            list.push(e.bytes);
        }
        if let Some(n) = e.nranks.filter(|n| !gpu_counts.contains(n)) {
            let line = format!(
                "--sizes-from: the job's {} runs on {n} ranks; this sweep measures {}",
                e.collective.name(),
                gpu_counts
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !warnings.contains(&line) {
                warnings.push(line);
            }
        }
        for &n in gpu_counts {
            let runs = e.collective.counts(e.bytes, element, n).size_bytes(element);
            if runs != e.bytes {
                warnings.push(format!(
                    "--sizes-from: the job's {} of {} B runs as {runs} B on {n} ranks (nccl-tests rounds each rank's part down to whole 16-byte groups)",
                    e.collective.name(),
                    e.bytes
                ));
            }
        }
    }
    for list in sizes.values_mut() {
        list.sort_unstable();
    }
    Ok(config::SizesFrom {
        file: path.display().to_string(),
        sizes,
        calls: job.calls(),
        per: job.per().to_string(),
    })
}

/// Settings for the given rank counts (`run` takes its one count from the launcher).
pub fn measure_settings(args: &MeasureArgs, gpu_counts: Vec<u32>) -> Result<SweepSettings> {
    let step = match (args.stepbytes, args.stepfactor) {
        (Some(b), _) => Step::Bytes(b.0),
        (None, f) => Step::Factor(f.unwrap_or(2)),
    };
    let sizes = sizes::size_list(
        args.minbytes,
        args.maxbytes.unwrap_or(Bytes(DEFAULT_MAX_BYTES)),
        step,
        args.datatype.size(),
        args.datatype.name(),
    )?;
    let config::Selection {
        configs,
        warnings,
        collectives,
    } = config::select_configs(&args.config, &args.transports)?;
    let mut warnings = warnings;
    // --register is every config's unless it names its own.
    let mut configs = configs;
    if let Some(register) = args.register {
        for c in &mut configs {
            c.register.get_or_insert(register);
        }
    }
    let sizes_from = match &args.sizes_from {
        Some(path) => Some(sizes_from(
            path,
            args.datatype.size() as u64,
            &gpu_counts,
            &mut warnings,
        )?),
        None => None,
    };
    let collectives = match (&args.coll, collectives, &sizes_from) {
        (_, _, Some(job)) => job.sizes.keys().copied().collect(),
        (Some(text), _, None) => {
            Collective::parse_list(text).map_err(|e| anyhow!("--coll: {e}"))?
        }
        (None, Some(from_files), None) => from_files,
        (None, None, None) => vec![Collective::AllReduce],
    };
    let sizes = match &sizes_from {
        Some(job) => {
            let mut all: Vec<u64> = job.sizes.values().flatten().copied().collect();
            all.sort_unstable();
            all.dedup();
            all
        }
        None => sizes,
    };
    config::check_root(&collectives, args.root, &gpu_counts)?;
    if let Some(label) = &args.label {
        config::transport::check_name(label)
            .map_err(|_| anyhow::anyhow!("invalid --label '{label}': use letters, digits, '-', '_' and '.' (it becomes part of a directory name)"))?;
    }
    let iterations = match args.iters {
        Some(iters) => IterationPolicy::Fixed { iters },
        None => IterationPolicy::Adaptive {
            min_iters: if args.tails {
                args.min_iters.max(crate::stats::latency::TAIL_SAMPLES_P99)
            } else {
                args.min_iters
            },
            precision: args.precision,
            max_time: args.max_time,
        },
    };
    let min_rounds = crate::stats::rounds::MIN_ROUNDS as u32;
    if let Some(rounds) = args.rounds.filter(|r| (2..min_rounds).contains(r)) {
        bail!(
            "--rounds {rounds}: 2 to {} rounds give no 95 % interval over process groups (the smallest count that does is {min_rounds}); use --rounds 1 (intervals within one process group) or {min_rounds} or more",
            min_rounds - 1,
        );
    }
    if args.iters.is_none() && args.timeout <= args.max_time {
        bail!(
            "--timeout ({:?}) must be longer than --max-time ({:?}): a case needs its whole time budget plus set-up",
            args.timeout,
            args.max_time
        );
    }
    Ok(SweepSettings {
        sizes,
        gpu_counts,
        configs,
        warnings,
        backend: backend_choice(args.backend),
        dtype: args.datatype,
        op: args.op,
        collectives,
        root: args.root,
        iterations,
        rounds: args.rounds,
        max_rounds: args.max_rounds,
        warmup: args.warmup_iters,
        graph: args.graph,
        events_every: config::events_every(std::env::var(EVENTS_EVERY_ENV).ok())?,
        probe: !args.no_probe,
        try_every_size: args.try_every_size,
        timeout: args.timeout,
        out_dir: args.out.clone(),
        run_dir: None,
        label: args.label.clone(),
        shm_dir: args.shm_dir.clone(),
        nccl_lib: args.nccl_lib.clone(),
        plain_output: args.plain,
        verbose: args.verbose,
        ceiling_bytes: args.ceiling_bytes.0,
        reach_figures: args.maxbytes.is_none() && sizes_from.is_none(),
        step,
        sizes_from,
        expected: match &args.expected {
            Some(path) => {
                config::expected::load(path)?;
                Some(std::fs::read_to_string(path)?)
            }
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::sweep::Plan;
    use clap::Parser;

    fn settings(args: &[&str]) -> SweepSettings {
        let mut argv = vec!["nccl-bench", "sweep"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Sweep(a) => sweep_settings(&a).unwrap(),
            _ => unreachable!("parsed as sweep"),
        }
    }

    #[test]
    fn defaults_plan_the_shm_decision_sweep() {
        let s = settings(&[]);
        assert_eq!(s.sizes.first(), Some(&8));
        assert_eq!(s.sizes.last(), Some(&(128 << 20)));
        assert_eq!(s.sizes.len(), 25);
        assert_eq!(s.gpu_counts, [2]);
        let plan = Plan::new(&s);
        let names: Vec<&str> = plan.groups.iter().map(|g| g.config.name.as_str()).collect();
        assert_eq!(names, ["default", "shm-off", "p2p-off", "net-only"]);
        assert_eq!(plan.total_cases(), 4 * 25);
        assert!(matches!(
            s.iterations,
            crate::config::IterationPolicy::Adaptive { min_iters: 20, .. }
        ));
    }

    #[test]
    fn quick_is_the_shm_pair_at_every_third_size_in_at_most_8_rounds() {
        let s = settings(&["--quick"]);
        assert_eq!(
            s.sizes,
            [
                8,
                64,
                512,
                4 << 10,
                32 << 10,
                256 << 10,
                2 << 20,
                16 << 20,
                128 << 20
            ]
        );
        let names: Vec<&str> = s.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["default", "shm-off"]);
        assert_eq!(s.rounds(), QUICK_ROUNDS);
        assert!(s.until_settled());
        assert_eq!(crate::stats::change::looks(s.rounds()), [6, 8]);
        assert!(matches!(
            s.iterations,
            crate::config::IterationPolicy::Adaptive { max_time, .. } if max_time == QUICK_MAX_TIME
        ));
        // Named configs are kept; flags it would override are refused.
        let s = settings(&["--quick", "--transports", "default,p2p-off"]);
        assert_eq!(s.configs.len(), 2);
        assert_eq!(s.configs[1].name, "p2p-off");
        for flag in [
            ["--rounds", "6"],
            ["--max-time", "2s"],
            ["-f", "4"],
            ["--min-iters", "50"],
        ] {
            let mut argv = vec!["nccl-bench", "sweep", "--quick"];
            argv.extend(flag);
            assert!(Cli::try_parse_from(argv).is_err(), "{flag:?}");
        }
    }

    #[test]
    fn rank_counts_are_the_outer_loop() {
        let s = settings(&[
            "--gpus",
            "8",
            "--transports",
            "shm-off,default",
            "-b",
            "1K",
            "-e",
            "4K",
            "-n",
            "7",
        ]);
        let plan = Plan::new(&s);
        let order: Vec<(u32, &str)> = plan
            .groups
            .iter()
            .map(|g| (g.nranks, g.config.name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (2, "shm-off"),
                (2, "default"),
                (4, "shm-off"),
                (4, "default"),
                (8, "shm-off"),
                (8, "default")
            ]
        );
        assert_eq!(plan.sizes, [1024, 2048, 4096]);
        assert_eq!(plan.total_cases(), 18);
        assert_eq!(
            s.iterations,
            crate::config::IterationPolicy::Fixed { iters: 7 }
        );
    }

    #[test]
    fn a_config_file_supplies_every_entry_unless_names_pick() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\nenv = { NCCL_SHM_DISABLE = 1 }\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let all = settings(&["--config", f]);
        assert_eq!(
            all.configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        let picked = settings(&["--config", f, "--transports", "b,ib-off"]);
        assert_eq!(
            picked
                .configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["b", "ib-off"]
        );
    }
}
