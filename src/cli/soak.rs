//! The flags of `soak`: one size, one rank count, for a duration cut into intervals.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::CliBackend;
use crate::ops::{DataType, ReduceOp};
use crate::units::{self, Bytes};

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every soak ran to its end, 1 one failed, hung or computed wrong, 2 bad input, 130 interrupted (what was measured is kept and reported).\n\n\
Examples:\n  \
nccl-bench soak --gpus 8 --duration 30m                  256 MiB all-reduce on 8 GPUs for 30 minutes\n  \
nccl-bench soak --gpus 8 --duration 10m --transports default,shm-off --interval 2s"
)]
pub struct SoakArgs {
    /// GPUs (ranks): one count
    #[arg(short = 'g', long = "gpus", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub gpus: u32,

    /// Message size [default: 256M with NCCL, 64M on the host backend]
    #[arg(short = 'b', long = "size", value_name = "SIZE", value_parser = Bytes::parse)]
    pub size: Option<Bytes>,

    /// How long each config runs (30s, 10m, 2h)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = units::parse_duration)]
    pub duration: Duration,

    /// Length of one interval: one row of soak.csv, one histogram, one counter reading
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = units::parse_duration)]
    pub interval: Duration,

    /// An interval this far below the run's median (and five noise spreads) is a dip
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = units::parse_percent)]
    pub dip: f64,

    /// Collective(s), as nccl-tests' binaries without _perf (each soaks in turn)
    /// [default: the config files' `collectives`, else all_reduce]
    #[arg(long = "coll", value_name = "NAME,...")]
    pub coll: Option<String>,

    /// Element type
    #[arg(
        short = 'd',
        long = "datatype",
        value_name = "TYPE",
        default_value = "float"
    )]
    pub datatype: DataType,

    /// Reduction
    #[arg(short = 'o', long = "op", value_name = "OP", default_value = "sum")]
    pub op: ReduceOp,

    /// Root rank of broadcast, reduce, gather and scatter
    #[arg(short = 'r', long = "root", value_name = "RANK", default_value_t = 0)]
    pub root: u32,

    /// Transport configurations from a TOML file (repeatable)
    #[arg(long = "config", value_name = "FILE.toml")]
    pub config: Vec<PathBuf>,

    /// Transport configurations by name, each soaked in turn [default: default]
    #[arg(long = "transports", value_name = "NAME,...", value_delimiter = ',')]
    pub transports: Vec<String>,

    /// Where the collectives run
    #[arg(long, value_enum, default_value_t = CliBackend::Auto)]
    pub backend: CliBackend,

    /// Untimed warm-up iterations
    #[arg(
        short = 'w',
        long = "warmup_iters",
        alias = "warmup-iters",
        value_name = "N",
        default_value_t = 5
    )]
    pub warmup_iters: u64,

    /// Capture N collectives in one CUDA graph and time graph launches (NCCL backend)
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub graph: u64,

    /// Give up when one timed batch (a quarter interval) or the set-up takes longer
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = units::parse_duration)]
    pub timeout: Duration,

    /// Parent directory of the run directory
    #[arg(long = "out", value_name = "DIR", default_value = "results")]
    pub out: PathBuf,

    /// Appended to the run directory's name and recorded in the manifest
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// Write the run to exactly this directory (it must not exist)
    #[arg(long = "run-dir", value_name = "DIR", conflicts_with = "label")]
    pub run_dir: Option<PathBuf>,

    /// libnccl to use (default: NCCL_BENCH_NCCL_LIB, the loader, ldconfig, CUDA, pip's)
    #[arg(long = "nccl-lib", value_name = "PATH")]
    pub nccl_lib: Option<PathBuf>,

    /// Directory of the host backend's shared-memory segments
    #[arg(long = "shm-dir", value_name = "DIR", default_value = "/dev/shm")]
    pub shm_dir: PathBuf,

    /// Read the counter files (/sys, /proc) under DIR instead of / (tests)
    #[arg(long = "counters-root", value_name = "DIR", hide = true)]
    pub counters_root: Option<PathBuf>,

    /// One line per interval even on a terminal (no progress bar)
    #[arg(long)]
    pub plain: bool,
}

/// `run --soak`: the soak's flags where `run` takes a sweep's.
#[derive(Debug, Args)]
pub struct RunSoakArgs {
    /// Soak instead of sweeping: one size (--size) back to back for this long (30s,
    /// 10m, 2h), busbw per interval, and every node's counters (a sweep's sizes,
    /// iteration counts, rounds and probes do not apply)
    #[arg(long, value_name = "DURATION", value_parser = units::parse_duration,
          conflicts_with_all = ["minbytes", "maxbytes", "stepfactor", "stepbytes", "pairs",
              "iters", "max_time", "precision", "min_iters", "tails", "rounds",
              "no_probe", "try_every_size", "ceiling_bytes", "expected"])]
    pub soak: Option<Duration>,

    /// The soak's message size [default: 256M with NCCL, 64M on the host backend]
    #[arg(long = "size", value_name = "SIZE", value_parser = Bytes::parse, requires = "soak")]
    pub size: Option<Bytes>,

    /// The soak's interval: one row of soak.csv, one counter reading per node
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = units::parse_duration, requires = "soak")]
    pub interval: Duration,

    /// An interval this far below the soak's median (and five noise spreads) is a dip
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = units::parse_percent, requires = "soak")]
    pub dip: f64,

    /// Read this node's counter files (/sys, /proc) under DIR instead of / (tests)
    #[arg(
        long = "counters-root",
        value_name = "DIR",
        hide = true,
        requires = "soak"
    )]
    pub counters_root: Option<PathBuf>,
}
