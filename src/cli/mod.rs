//! Command-line definitions (clap derive) and nothing else: `cmd` turns them into
//! checked settings, and the rest of the program never sees these types.

// The doc comments here are `--help` texts, written for a terminal, not for rustdoc.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::ops::collective::Collective;
use crate::ops::{DataType, ReduceOp};
use crate::units::{self, Bytes};

mod judge;
mod soak;

pub use judge::{
    BaselineArgs, CheckArgs, CheckFormat, CompareArgs, CompareFormat, HistoryArgs, HistoryFormat,
};
pub use soak::{RunSoakArgs, SoakArgs};

#[derive(Debug, Parser)]
#[command(
    name = "nccl-bench",
    version,
    about = "Measure NCCL all-reduce throughput per transport configuration",
    long_about = "Measure NCCL all-reduce throughput per transport configuration.\n\n\
        nccl-bench sweeps message sizes x GPU counts x NCCL transport settings (SHM on/off, \
        P2P off, sockets only, ...), each configuration in fresh processes, and records for \
        every case a latency histogram, algbw/busbw, a correctness check and the transport \
        NCCL really used. Results go to a run directory (CSV, HdrHistogram log, manifest, logs).\n\n\
        Without GPUs it runs the same pipeline on a CPU host backend (shared memory or TCP \
        between processes) and says so: those numbers are not NCCL numbers.",
    after_help = "Examples:\n  \
        nccl-bench sweep --gpus 8                      SHM decision sweep on 2, 4 and 8 GPUs\n  \
        nccl-bench sweep --gpus 2 --transports default,shm-off -b 8 -e 1G\n  \
        nccl-bench sweep --config configs/transports.toml -n 50 --label nightly"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run all-reduce over sizes x GPU counts x transport configurations
    Sweep(SweepArgs),
    /// One rank of a multi-node run under srun, mpirun or torchrun (rank 0 writes the run directory)
    Run(RunArgs),
    /// Run one collective back to back at one size for minutes or hours: bandwidth per interval, its dips, and the GPU, link and CPU counters that explain them
    Soak(SoakArgs),
    /// List transport configurations: the built-in presets, or those of --config files
    Configs(ConfigsArgs),
    /// Compare two run directories (or two configs of one run); exit 1 on a regression
    Compare(CompareArgs),
    /// Make a baseline (expected median and spread per case) from one or more runs of one platform
    Baseline(BaselineArgs),
    /// Check a run against a baseline, case by case (exit 1 when a case fails); table, markdown, JSON or JUnit XML
    Check(CheckArgs),
    /// Many runs over time: busbw and latency per config and size, each step with the two runs around it and what changed
    History(HistoryArgs),
    /// Turn nccl-tests all_reduce_perf output (text or -J JSON) into a run directory
    Import(ImportArgs),
    /// Write report.md for a run directory: tables per GPU count and the SHM verdict
    Report(ReportArgs),
    /// Read NCCL_DEBUG=INFO/WARN logs: versions, ranks, transports per rank pair, and a diagnosis of every known failure
    Explain(ExplainArgs),
    /// Read a job's collectives (NCCL's COLL debug lines, the NCCL Inspector's JSON, a PyTorch profiler trace, or a CSV collective,bytes,count[,nranks]) and say what it sends
    Workload(WorkloadArgs),
    /// Check this machine for NCCL: /dev/shm size and leftover segments, container, NCCL_* variables, network interfaces, InfiniBand, GPUs, libnccl
    Doctor(DoctorArgs),
    /// One rank of a case (spawned by `sweep`; not for direct use)
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Measure the GPUs' link ceilings and print them as JSON (spawned by `sweep`)
    #[command(hide = true)]
    Ceilings(CeilingsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CliBackend {
    /// NCCL on GPUs when an NVIDIA driver and GPUs are present, else the host backend
    Auto,
    /// NCCL on NVIDIA GPUs
    Nccl,
    /// CPU processes over shared memory or TCP (not NCCL)
    Host,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        nccl-bench sweep --gpus 8                      SHM decision sweep on 2, 4 and 8 GPUs\n  \
        nccl-bench sweep --gpus 8 --coll all_gather -b 8 -e 1G -f 2 --transports default,shm-off\n  \
        nccl-bench sweep --gpus 8 --pairs --transports default    every GPU pair, to find a slow link\n  \
        nccl-bench sweep --config configs/transports.toml -n 50 --label nightly")]
pub struct SweepArgs {
    /// GPUs (ranks) per case: N sweeps 2, 4, 8, ... up to N; a list like 2,4,8 is used as given
    #[arg(short = 'g', long = "gpus", value_name = "N|LIST", default_value = "2")]
    pub gpus: String,

    /// Run the 2-rank sweep on every pair of the --gpus N devices (cores on the host backend), one pair at a time, to find a slow link; rows go under <config>.pair<i>-<j>
    #[arg(long)]
    pub pairs: bool,

    /// Write the run to exactly this directory (it must not exist), not one under --out
    #[arg(long = "run-dir", value_name = "DIR", conflicts_with = "label")]
    pub run_dir: Option<PathBuf>,

    /// A gate: measure each group until `check` against this baseline (from
    /// `nccl-bench baseline`) can decide it, then check the run (check.md and
    /// check.xml in the run directory); the exit status is check's
    #[arg(long, value_name = "FILE.json")]
    pub baseline: Option<PathBuf>,

    /// The SHM decision in minutes: default and shm-off (unless --transports or
    /// --config), every third size from -b to -e (8x apart), at most 8 rounds (looks
    /// after 6 and 8), 0.25 s a size; the same error rate, fewer cases settled
    #[arg(long, conflicts_with_all = ["stepfactor", "stepbytes", "sizes_from", "rounds", "max_rounds", "max_time", "iters", "baseline", "tails", "min_iters"])]
    pub quick: bool,

    /// The gate's threshold, as `check --threshold`
    #[arg(long = "baseline-threshold", value_name = "PERCENT", default_value = "5%", value_parser = units::parse_percent, requires = "baseline")]
    pub baseline_threshold: f64,

    #[command(flatten)]
    pub measure: MeasureArgs,
}

/// What `sweep` and `run` share: sizes, iterations, configs, backend, output.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Smallest message size (K, M, G are powers of 1024)
    #[arg(short = 'b', long = "minbytes", value_name = "SIZE", default_value = "8", value_parser = Bytes::parse)]
    pub minbytes: Bytes,

    /// Largest message size [default: 128M; with NCCL, to where published figures hold]
    #[arg(short = 'e', long = "maxbytes", value_name = "SIZE", value_parser = Bytes::parse)]
    pub maxbytes: Option<Bytes>,

    /// Multiply the size by this factor between steps [default: 2]
    #[arg(
        short = 'f',
        long = "stepfactor",
        value_name = "FACTOR",
        conflicts_with = "stepbytes"
    )]
    pub stepfactor: Option<u64>,

    /// Add this many bytes between steps instead of multiplying
    #[arg(short = 'i', long = "stepbytes", value_name = "SIZE", value_parser = Bytes::parse)]
    pub stepbytes: Option<Bytes>,

    /// Measure exactly a job's (collective, size) pairs, read as `nccl-bench workload`
    /// reads them (NCCL's COLL lines or a CSV); instead of -b/-e/-f/-i and --coll
    #[arg(
        long = "sizes-from",
        value_name = "FILE",
        conflicts_with_all = ["minbytes", "maxbytes", "stepfactor", "stepbytes", "coll"]
    )]
    pub sizes_from: Option<PathBuf>,

    /// Timed iterations per size. Without it, iterate until the 95% confidence
    /// interval of the median is within --precision, or --max-time is spent
    #[arg(short = 'n', long = "iters", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub iters: Option<u64>,

    /// Untimed warm-up iterations per size
    #[arg(
        short = 'w',
        long = "warmup_iters",
        alias = "warmup-iters",
        value_name = "N",
        default_value_t = 5
    )]
    pub warmup_iters: u64,

    /// Element type: float, half, bfloat16, double, int8, uint8, int32, uint32, int64, uint64
    #[arg(
        short = 'd',
        long = "datatype",
        value_name = "TYPE",
        default_value = "float"
    )]
    pub datatype: DataType,

    /// Reduction: sum, prod, min, max, avg
    #[arg(short = 'o', long = "op", value_name = "OP", default_value = "sum")]
    pub op: ReduceOp,

    /// Collectives, as nccl-tests' binaries without _perf: all_reduce, all_gather,
    /// reduce_scatter, broadcast, reduce, alltoall, sendrecv, gather, scatter, or all
    /// [default: the config files' `collectives`, else all_reduce]
    #[arg(long = "coll", value_name = "NAME,...")]
    pub coll: Option<String>,

    /// Root rank of broadcast, reduce, gather and scatter
    #[arg(short = 'r', long = "root", value_name = "RANK", default_value_t = 0)]
    pub root: u32,

    /// Transport configurations from a TOML file (repeatable); all unless --transports picks
    #[arg(long = "config", value_name = "FILE.toml")]
    pub config: Vec<PathBuf>,

    /// Transport configurations by name, from --config files or the built-in presets
    /// (default, shm-off, p2p-off, net-only, ib-off, socket-only, nvls-off, ...)
    #[arg(long = "transports", value_name = "NAME,...", value_delimiter = ',')]
    pub transports: Vec<String>,

    /// Where the collectives run
    #[arg(long, value_enum, default_value_t = CliBackend::Auto)]
    pub backend: CliBackend,

    /// Parent directory of the run directory
    #[arg(long = "out", value_name = "DIR", default_value = "results")]
    pub out: PathBuf,

    /// Appended to the run directory's name and recorded in the manifest
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// Give up on a case (and kill its processes) when it takes longer than this, its
    /// warm-up, timed iterations and check together
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = units::parse_duration)]
    pub timeout: Duration,

    /// Time budget per size when iterating adaptively
    #[arg(long = "max-time", value_name = "DURATION", default_value = "1s", value_parser = units::parse_duration)]
    pub max_time: Duration,

    /// Target half-width of the 95% confidence interval of the median, adaptive mode
    #[arg(long, value_name = "PERCENT", default_value = "1%", value_parser = units::parse_percent)]
    pub precision: f64,

    /// Fewest timed samples per size in adaptive mode (shared among the rounds)
    #[arg(long = "min-iters", value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub min_iters: u64,

    /// Adaptive mode: take enough samples for p99 (1,000 per size; p90 needs 100)
    #[arg(long, conflicts_with = "iters")]
    pub tails: bool,

    /// Process groups per config and rank count, interleaved: 1, or 6 and more.
    /// Without it, measure until settled: at each look (after 6, 8 and 11 rounds) a
    /// config stops once every case against the baseline config is decided, or
    /// could not be by --max-rounds; -n is per round
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: Option<u32>,

    /// The most rounds measuring until settled takes [default: 15]
    #[arg(long = "max-rounds", value_name = "N", conflicts_with = "rounds", value_parser = clap::value_parser!(u32).range(6..=1000))]
    pub max_rounds: Option<u32>,

    /// libnccl to use (default: NCCL_BENCH_NCCL_LIB, the loader, ldconfig, CUDA, pip's)
    #[arg(long = "nccl-lib", value_name = "PATH")]
    pub nccl_lib: Option<PathBuf>,

    /// Directory of the host backend's shared-memory segments
    #[arg(long = "shm-dir", value_name = "DIR", default_value = "/dev/shm")]
    pub shm_dir: PathBuf,

    /// Capture N all-reduces in one CUDA graph and time graph launches (NCCL backend;
    /// nccl-tests' `-n I -G L` is `--graph I -n I*L`). 0: launch one by one
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub graph: u64,

    /// Register the buffers with NCCL (nccl-tests' -R): none, local (ncclCommRegister,
    /// NCCL 2.19+) or symmetric (ncclCommWindowRegister windows, 2.27+); configs with
    /// their own `register` keep it [default: none]
    #[arg(long, value_name = "MODE", value_parser = parse_registration)]
    pub register: Option<crate::nccl::register::Registration>,

    /// NCCL: no untimed probe group per config (no algo, proto, prediction columns)
    #[arg(long = "no-probe")]
    pub no_probe: bool,

    /// Run every size even after two sizes of a config in a row timed out (default: skip)
    #[arg(long = "try-every-size")]
    pub try_every_size: bool,

    /// NCCL: bytes per copy measuring the GPUs' link ceilings before the sweep (0: none)
    #[arg(long = "ceiling-bytes", value_name = "SIZE", default_value = "256M", value_parser = Bytes::parse)]
    pub ceiling_bytes: Bytes,

    /// Your platforms' published busbw figures ([[platform]] rows as in
    /// configs/expected.toml), tried before the shipped ones
    #[arg(long, value_name = "FILE.toml")]
    pub expected: Option<PathBuf>,

    /// One line per case even on a terminal (no progress bar)
    #[arg(long)]
    pub plain: bool,

    /// Say how the backend and libnccl were chosen (every place tried)
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The rank layout comes from the launcher: Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), MPICH (PMI_RANK/PMI_SIZE) or torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); --rank, --world-size and --local-rank override it. One transport config per launch: NCCL reads its environment once per process.\n\n\
Exit status (every rank): 0 all cases ok, 1 a case failed, 2 error (a rank missing at the rendezvous, bad input), 130 interrupted.\n\n\
Examples:\n  \
srun -N 2 --ntasks-per-node 8 --gpus-per-task 1 nccl-bench run --transports default -b 8 -e 1G\n  \
mpirun -np 16 -x MASTER_ADDR=node01 -x MASTER_PORT=29517 nccl-bench run --transports shm-off --run-dir results/nightly"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    #[command(flatten)]
    pub soak: RunSoakArgs,

    /// Where rank 0 listens: HOST:PORT, or file:PATH on a file system every node sees
    /// [default: MASTER_ADDR:MASTER_PORT, else the first node of the Slurm job]
    #[arg(long, value_name = "HOST:PORT|file:PATH")]
    pub rendezvous: Option<String>,

    /// How long the ranks wait for each other at start-up
    #[arg(long = "rendezvous-timeout", value_name = "DURATION", default_value = "120s", value_parser = units::parse_duration)]
    pub rendezvous_timeout: Duration,

    /// Run the sweep on every pair of the job's nodes (all ranks of both), one pair at a time, to find a slow node or link; rows go under <config>.pair<i>-<j>, nodes numbered in the order of their first rank
    #[arg(long)]
    pub pairs: bool,

    /// Write to this run directory: created when absent, else this config's cases are
    /// appended (a loop over configs builds one sweep)
    #[arg(long = "run-dir", value_name = "DIR", conflicts_with = "label")]
    pub run_dir: Option<PathBuf>,

    /// This process's rank (overrides the launcher)
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,

    /// Number of ranks (overrides the launcher)
    #[arg(long = "world-size", value_name = "N")]
    pub world_size: Option<u32>,

    /// Rank among those on this node; picks the GPU (overrides the launcher)
    #[arg(long = "local-rank", value_name = "N")]
    pub local_rank: Option<u32>,
}

#[derive(Debug, Args)]
#[command(after_help = "Example (one launch per config of a file):\n  \
for c in $(nccl-bench configs --config configs/transports.toml --names); do srun nccl-bench run --config configs/transports.toml --transports \"$c\" --run-dir \"$RUN\"; done")]
pub struct ConfigsArgs {
    /// Transport configurations from a TOML file (repeatable)
    #[arg(long = "config", value_name = "FILE.toml")]
    pub config: Vec<PathBuf>,

    /// Only these, by name, from --config files or the built-in presets
    #[arg(long = "transports", value_name = "NAME,...", value_delimiter = ',')]
    pub transports: Vec<String>,

    /// One name per line, nothing else
    #[arg(long)]
    pub names: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The run directory holds mean times only (nccl-tests keeps no per-iteration data); compare says so when it uses one.\n\n\
Example:\n  \
mpirun -np 8 ./all_reduce_perf -b 8 -e 8G -f 2 -g 1 > base.txt\n  \
nccl-bench import base.txt -o results/base-nccl-tests"
)]
pub struct ImportArgs {
    /// The output of an nccl-tests *_perf binary as printed (mpirun/srun prefixes and NCCL INFO lines are fine), or its -J JSON
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The run directory to create (never an existing one)
    #[arg(short = 'o', long = "out", value_name = "RUN_DIR")]
    pub out: PathBuf,

    /// Config name for the rows [default: the preset whose NCCL variables the output shows, else "default"]
    #[arg(long, value_name = "NAME")]
    pub config: Option<String>,

    /// Rank count, when the output does not show it
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub nranks: Option<u32>,

    /// When nccl-tests ran (RFC 3339, or a local 2026-11-24 02:00), for `history`'s order [default: the JSON's start_time, else the text's first -S timestamp, else the file's modification time]
    #[arg(long = "started-at", value_name = "TIME", value_parser = units::parse_time)]
    pub started_at: Option<String>,

    /// The collective measured, for an output that names no nccl-tests binary (alltoall for alltoall_perf) [default: the binary the output names, else all_reduce]
    #[arg(long = "coll", value_name = "NAME", value_parser = |s: &str| crate::ops::collective::Collective::parse(s))]
    pub coll: Option<crate::ops::collective::Collective>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples (a run directory's report, written again; and weighed by a job's calls):\n  \
        nccl-bench report results/20261128-031019-gpu01\n  \
        nccl-bench report results/20261128-031019-gpu01 --workload nccl-coll.log"
)]
pub struct ReportArgs {
    /// The run directory (sweep writes its report itself)
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,

    /// The config others are compared against
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub baseline: String,

    /// A change counts only when its 95% confidence interval lies entirely beyond this
    #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = units::parse_percent)]
    pub threshold: f64,

    /// Published busbw figures of your own platforms, tried before the run's own
    /// expected.toml and the shipped table
    #[arg(long, value_name = "FILE.toml")]
    pub expected: Option<PathBuf>,

    /// A job's collectives (an NCCL COLL log, Inspector JSON, PyTorch trace or CSV):
    /// the report's "Your job" weighs the run's cases by its calls, sizes between
    /// measured ones interpolated
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Logs may mix ranks and carry timestamp, mpirun or srun prefixes; a PyTorch traceback around them is fine.\n\
Exit status: 0 when no error is found, 1 when a finding is an error, 2 for unreadable input.\n\n\
Examples:\n  \
nccl-bench explain nccl.*.log\n  \
kubectl logs trainer-0 | nccl-bench explain -\n  \
nccl-bench explain rank0.log rank1.log --env NCCL_IB_DISABLE=1 --json"
)]
pub struct ExplainArgs {
    /// Files as pasted: NCCL logs (one per rank, or all in one), PyTorch errors,
    /// nccl-tests outputs (- for standard input)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// A variable you set for the job (NAME=VALUE, repeatable): explain checks that the
    /// logs show NCCL read it
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,
    /// Every finding as JSON (id, severity, evidence, cause, fix, what not to do,
    /// sources) and what the log shows
    #[arg(long)]
    pub json: bool,
}

/// `NAME=VALUE` of `explain --env`.
fn parse_env_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v))
            if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok((n.to_string(), v.to_string()))
        }
        _ => Err(format!(
            "`{s}` is not NAME=VALUE (for example NCCL_IB_DISABLE=1)"
        )),
    }
}

#[derive(Debug, Args)]
#[command(
    after_help = "NCCL's log: run the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL (every rank's \
lines may be in one file or several); a call logged by every rank counts once.\n\
NCCL Inspector (NCCL 2.28+, NCCL_PROFILER_PLUGIN=.../libnccl-profiler-inspector.so NCCL_INSPECTOR_ENABLE=1): \
its JSON files, one per process; a call recorded by every rank counts once (it skips calls under 8 KiB by default).\n\
PyTorch profiler (Kineto) traces, one per rank, PyTorch 2.1+: the collectives' NCCL metadata (Collective name, In/Out msg nelems, Group size, dtype).\n\
CSV: a header collective,bytes,count[,nranks] and one line per (collective, size): the calls per step.\n\n\
Examples:\n  \
nccl-bench workload nccl.*.log\n  \
nccl-bench workload step.csv --json"
)]
pub struct WorkloadArgs {
    /// The job's NCCL logs (COLL lines), or one CSV
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,

    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CeilingsArgs {
    /// CUDA device ordinals, comma-separated
    #[arg(long, value_name = "LIST", value_delimiter = ',', required = true)]
    pub devices: Vec<usize>,

    /// Bytes per copy
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = Bytes::parse)]
    pub bytes: Bytes,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long, value_enum)]
    pub backend: CliBackend,
    #[arg(long)]
    pub rank: u32,
    #[arg(long)]
    pub nranks: u32,
    #[arg(long = "max-bytes")]
    pub max_bytes: u64,
    #[arg(long)]
    pub datatype: DataType,
    #[arg(long)]
    pub op: ReduceOp,
    #[arg(long = "coll", default_value = "all_reduce")]
    pub collective: Collective,
    #[arg(long, default_value_t = 0)]
    pub root: u32,
    #[arg(long = "shm-dir")]
    pub shm_dir: PathBuf,
    /// Prefix of the shared-memory segments of this case (the orchestrator removes them)
    #[arg(long = "segment-prefix")]
    pub segment_prefix: String,
    /// libnccl to load (NCCL backend)
    #[arg(long = "nccl-lib")]
    pub nccl_lib: Option<PathBuf>,
    /// CUDA device of this rank (NCCL backend)
    #[arg(long)]
    pub device: Option<usize>,
    /// All-reduces per CUDA graph launch (0: none).
    #[arg(long, default_value_t = 0)]
    pub graph: u64,
    /// How the buffers are registered with NCCL (none, local, symmetric).
    #[arg(long, default_value = "none", value_parser = parse_registration)]
    pub register: crate::nccl::register::Registration,
    /// All-reduces per timing event (NCCL backend; 0: decided per size)
    #[arg(long = "events-every", default_value_t = 0)]
    pub events_every: u64,
    /// Seconds the communicator set-up may take
    #[arg(long = "init-timeout", default_value_t = 120.0)]
    pub init_timeout_s: f64,
    /// Seconds a case (one size) may take before the orchestrator kills the group;
    /// the rank stops a stuck collective itself a little earlier
    #[arg(long = "case-timeout")]
    pub case_timeout_s: Option<f64>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 no check failed, 1 a check failed, 2 error.\n\n\
Examples:\n  \
nccl-bench doctor                     all checks, /dev/shm sized for 8 local ranks\n  \
nccl-bench doctor --gpus 4 --json     JSON for scripts (schema in docs/guide/doctor.md)\n  \
nccl-bench doctor --clean             also remove /dev/shm/nccl-* segments no process uses"
)]
pub struct DoctorArgs {
    /// Local ranks (GPUs per node) to size /dev/shm for
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub gpus: u32,

    /// Print the checks as one JSON document
    #[arg(long)]
    pub json: bool,

    /// Remove leftover nccl-* segments in the shm directory that no live process maps or holds
    #[arg(long)]
    pub clean: bool,

    /// Shared-memory directory NCCL uses
    #[arg(long = "shm-dir", value_name = "DIR", default_value = "/dev/shm")]
    pub shm_dir: PathBuf,

    /// libnccl to check (default: the search sweep does; also NCCL_BENCH_NCCL_LIB)
    #[arg(long = "nccl-lib", value_name = "PATH")]
    pub nccl_lib: Option<PathBuf>,

    /// Read the machine from this directory tree instead of / (tests)
    #[arg(long, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,
}

fn parse_registration(text: &str) -> Result<crate::nccl::register::Registration, String> {
    crate::nccl::register::Registration::parse(text)
}
