//! The checked configuration of a sweep: sizes, GPU counts, transport configs (from
//! presets and TOML files), iterations, output. `cmd` builds it from the command line;
//! everything the user can get wrong is rejected there or here, before any process is
//! spawned or any file is written. Nothing here knows the command-line types.

pub mod expected;
pub mod sizes;
pub mod transport;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::ops::collective::Collective;
use crate::ops::{DataType, ReduceOp};
pub use sizes::Step;
pub use transport::TransportConfig;

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    Auto,
    Nccl,
    Host,
}

/// How many timed iterations each size gets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum IterationPolicy {
    /// Exactly this many (`-n`).
    Fixed { iters: u64 },
    /// Until the 95 % confidence interval of the median is within `precision`
    /// (a fraction) of it, or `max_time` is spent, and never fewer than `min_iters`.
    Adaptive {
        min_iters: u64,
        precision: f64,
        #[serde(with = "seconds")]
        max_time: Duration,
    },
}

/// Process groups per config and rank count, the most a sweep measuring until
/// settled takes when neither `--rounds` nor `--max-rounds` is given. A pair stops at
/// its first look (7 or 8 rounds) when it is settled there, and also when settling it
/// would take far more rounds than these (`analysis::family::FUTILITY`), so only the
/// pairs the later looks can still settle go on: on simulated families of 13 sizes
/// 10 % slower, groups 3 % apart, at most 9 rounds found 99.1 % of the cases and 15
/// found 99.8 %, while identical configs stopped after 7 either way.
pub const DEFAULT_MAX_ROUNDS: u32 = 15;

/// The sizes a sweep took from a job's collectives (`sweep --sizes-from`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SizesFrom {
    /// The workload file(s) as given.
    pub file: String,
    /// Each collective's sizes (nccl-tests' size), ascending.
    pub sizes: std::collections::BTreeMap<crate::ops::collective::Collective, Vec<u64>>,
    /// The job's calls, to weigh the sweep's answers by (the report's "Your job").
    #[serde(default)]
    pub calls: Vec<JobCall>,
    /// What the calls count: `per step` (a CSV) or `in the log` (NCCL's COLL lines).
    #[serde(default)]
    pub per: String,
}

/// One (collective, ranks, size) of a job and its calls (`workload::Entry`, kept in
/// the manifest).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobCall {
    pub collective: crate::ops::collective::Collective,
    pub nranks: Option<u32>,
    pub bytes: u64,
    pub calls: u64,
}

/// A checked sweep request.
#[derive(Debug, Clone)]
pub struct SweepSettings {
    pub sizes: Vec<u64>,
    pub gpu_counts: Vec<u32>,
    pub configs: Vec<TransportConfig>,
    /// Problems worth a word that do not stop the sweep (unknown NCCL variables, ...).
    pub warnings: Vec<String>,
    pub backend: BackendChoice,
    pub dtype: DataType,
    pub op: ReduceOp,
    /// The collectives to measure (`--coll`, or the config files' `collectives`), in
    /// order, and the root of the rooted ones (`-r/--root`).
    pub collectives: Vec<Collective>,
    pub root: u32,
    pub iterations: IterationPolicy,
    /// Independent process groups per (config, rank count), interleaved across
    /// configs (`--rounds`): 1, or at least `stats::rounds::MIN_ROUNDS`; `None`
    /// measures until settled ([`SweepSettings::until_settled`]).
    pub rounds: Option<u32>,
    /// The most rounds a sweep measuring until settled takes (`--max-rounds`); `None`
    /// for [`DEFAULT_MAX_ROUNDS`].
    pub max_rounds: Option<u32>,
    pub warmup: u64,
    /// All-reduces per CUDA graph launch (`--graph`); 0 launches them one by one.
    pub graph: u64,
    /// All-reduces per timing event on the NCCL backend (`NCCL_BENCH_EVENTS_EVERY`,
    /// read once here so that every rank gets the same); 0 decides per size.
    pub events_every: u64,
    /// Ask NCCL about each size in an untimed probe group first (`--no-probe` turns
    /// it off).
    pub probe: bool,
    /// Run every size of a group even after two sizes in a row timed out
    /// (`--try-every-size`).
    pub try_every_size: bool,
    pub timeout: Duration,
    pub out_dir: PathBuf,
    /// The exact run directory to create (`sweep --run-dir`), instead of a new one
    /// under `out_dir`.
    pub run_dir: Option<PathBuf>,
    pub label: Option<String>,
    pub shm_dir: PathBuf,
    pub nccl_lib: Option<PathBuf>,
    pub plain_output: bool,
    pub verbose: bool,
    /// The text of `--expected FILE`, checked; kept in the run directory.
    pub expected: Option<String>,
    /// Bytes per copy of the GPU link-ceiling measurement; 0 skips it.
    pub ceiling_bytes: u64,
    /// No `-e` was given: on GPUs the sizes go on to where the published figures
    /// hold, as memory allows (`backend::select::reach_figures`).
    pub reach_figures: bool,
    /// How the sizes follow each other (`-f`, `-i`).
    pub step: sizes::Step,
    /// `--sizes-from FILE`: each collective's own sizes, a job's, instead of `sizes`
    /// for every collective.
    pub sizes_from: Option<SizesFrom>,
}

/// Every config once per pair of the devices `0..devices`, named
/// `<config>.pair<i>-<j>`, its two ranks on devices i and j (`sweep --pairs`).
pub fn pair_configs(configs: &[TransportConfig], devices: usize) -> Result<Vec<TransportConfig>> {
    let mut out = Vec::new();
    for config in configs {
        for i in 0..devices {
            for j in i + 1..devices {
                out.push(TransportConfig {
                    devices: Some(vec![i, j]),
                    ..paired(config, i, j, &format!("devices {i} and {j}"))?
                });
            }
        }
    }
    Ok(out)
}

/// Every config once per pair of the job's nodes (`run --pairs`), named
/// `<config>.pair<i>-<j>` with the nodes numbered in the order of their first
/// rank: its group is every rank of both nodes, in rank order. `hosts` is the host
/// of each rank of the job, rank by rank.
pub fn node_pair_configs(
    configs: &[TransportConfig],
    hosts: &[String],
) -> Result<Vec<TransportConfig>> {
    let mut nodes: Vec<&str> = Vec::new();
    for h in hosts {
        if !nodes.contains(&h.as_str()) {
            nodes.push(h);
        }
    }
    let mut out = Vec::new();
    for config in configs {
        for i in 0..nodes.len() {
            for j in i + 1..nodes.len() {
                let ranks = (0..hosts.len() as u32)
                    .filter(|&r| [nodes[i], nodes[j]].contains(&hosts[r as usize].as_str()))
                    .collect();
                let what = format!("nodes {} and {}", nodes[i], nodes[j]);
                out.push(TransportConfig {
                    ranks: Some(ranks),
                    ..paired(config, i, j, &what)?
                });
            }
        }
    }
    Ok(out)
}

/// `config` renamed for its pair `i`-`j`, described with `what` the pair is.
fn paired(config: &TransportConfig, i: usize, j: usize, what: &str) -> Result<TransportConfig> {
    let name = format!("{}.pair{i}-{j}", config.name);
    transport::check_name(&name).map_err(|e| anyhow::anyhow!("--pairs: {e}"))?;
    Ok(TransportConfig {
        name,
        description: format!("{} ({what})", config.description),
        ..config.clone()
    })
}

/// Forces the NCCL backend's timing events: an event every N all-reduces.
pub const EVENTS_EVERY_ENV: &str = "NCCL_BENCH_EVENTS_EVERY";

/// `NCCL_BENCH_EVENTS_EVERY`: `auto` (or unset) decides per size (0), N records an
/// event every N all-reduces.
pub fn events_every(value: Option<String>) -> Result<u64> {
    match value.as_deref().map(str::trim) {
        None | Some("") | Some("auto") => Ok(0),
        Some(v) => v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            anyhow::anyhow!("{EVENTS_EVERY_ENV}={v}: expected auto or a whole number of all-reduces per event (1: an event after each)")
        }),
    }
}

/// The config a `--pairs` config was made from, and its two devices.
pub fn pair_of(name: &str) -> Option<(&str, usize, usize)> {
    let (base, pair) = name.rsplit_once(".pair")?;
    let (i, j) = pair.split_once('-')?;
    Some((base, i.parse().ok()?, j.parse().ok()?))
}

impl SweepSettings {
    /// How many devices the sweep's ranks use (0..n): the largest rank count, or
    /// with `--pairs` the highest device of a pair + 1.
    pub fn device_count(&self) -> u32 {
        let paired = self
            .configs
            .iter()
            .filter_map(|c| c.devices.as_ref())
            .flatten()
            .map(|&d| d as u32 + 1)
            .max()
            .unwrap_or(0);
        let ranks = self.gpu_counts.iter().copied().max().unwrap_or(1);
        paired.max(ranks)
    }

    /// The rounds of a sweep, the most where it measures until settled: `--rounds`,
    /// else `--max-rounds`, else [`DEFAULT_MAX_ROUNDS`].
    pub fn rounds(&self) -> u32 {
        self.rounds
            .or(self.max_rounds)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
    }

    /// Without `--rounds`, a sweep measures until settled: after its first look
    /// (`analysis::family::looks`), only the configs whose comparison with the
    /// baseline config is not settled go on, up to [`SweepSettings::rounds`].
    pub fn until_settled(&self) -> bool {
        self.rounds.is_none()
    }

    pub fn max_bytes(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }
}

/// A root every rank count has, where a rooted collective needs one (`-r/--root`).
pub fn check_root(collectives: &[Collective], root: u32, counts: &[u32]) -> Result<()> {
    let rooted: Vec<&str> = collectives
        .iter()
        .filter(|c| c.rooted())
        .map(|c| c.name())
        .collect();
    match counts.iter().find(|&&n| root >= n) {
        Some(&n) if !rooted.is_empty() => bail!(
            "--root {root} is not a rank of {n} GPUs (ranks 0 to {}): it is the root of {}",
            n.saturating_sub(1),
            rooted.join(", ")
        ),
        _ => Ok(()),
    }
}

/// `--config` files and/or `--transports` names; the SHM decision presets when neither.
pub fn select_configs(files: &[PathBuf], names: &[String]) -> Result<Selection> {
    let mut from_files = Vec::new();
    let mut warnings = Vec::new();
    let mut collectives: Option<Vec<Collective>> = None;
    for path in files {
        let parsed = transport::load(path)?;
        warnings.extend(parsed.warnings);
        for c in parsed.collectives.unwrap_or_default() {
            let list = collectives.get_or_insert_with(Vec::new);
            if !list.contains(&c) {
                list.push(c);
            }
        }
        for c in parsed.configs {
            transport::push_unique(&mut from_files, c)?;
        }
    }
    let configs = if !names.is_empty() {
        let names: Vec<String> = names.iter().map(|n| n.trim().to_string()).collect();
        transport::select(&names, &from_files).context("--transports")?
    } else if !from_files.is_empty() {
        from_files
    } else {
        transport::default_configs()
    };
    if configs.is_empty() {
        bail!("no transport configuration to run");
    }
    Ok(Selection {
        configs,
        warnings,
        collectives,
    })
}

/// The configs a sweep runs, the warnings their files deserve, and the collectives
/// the files name (in order, without repeats; `None` where no file names any).
#[derive(Debug)]
pub struct Selection {
    pub configs: Vec<TransportConfig>,
    pub warnings: Vec<String>,
    pub collectives: Option<Vec<Collective>>,
}

mod seconds {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}
