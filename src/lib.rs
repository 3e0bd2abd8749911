//! nccl-bench: collective throughput (all-reduce and the others nccl-tests measures)
//! per NCCL transport configuration.
//!
//! # Architecture
//!
//! This page is the map of the code: the problem in a paragraph, the layers, what each
//! module owns (with the type or function to search for), the rules a change must keep,
//! and where to start reading for each command. It names things rather than lines, so
//! that it stays true while code moves; `tests/it/architecture.rs` checks the layering.
//!
//! ## Bird's-eye view
//!
//! A sweep measures all-reduce (or any collective of nccl-tests, `--coll`) over
//! message sizes x rank counts x transport configs (SHM on/off, P2P off, sockets
//! only, ...). NCCL reads its environment once per process, so every (config, rank
//! count, collective) runs in fresh worker processes, one per
//! rank, driven over stdin/stdout by an orchestrator. Each rank runs on a backend: NCCL
//! on GPUs, or the host backend (CPU processes over /dev/shm or TCP) where there is no
//! GPU. The orchestrator merges the ranks' per-iteration times into a histogram and a
//! CSV row per case, reads the transports NCCL really used from its debug logs, and
//! writes a run directory after every case. Later commands read run directories back:
//! the report with the SHM verdict, `compare`, `baseline`/`check`, `history`, `pairs`.
//! A soak runs one size back to back for minutes or hours through the same workers,
//! bins it into intervals, reads GPU, link and CPU counters beside it, and its report
//! ties each dip to the counters that moved.
//!
//! ## Layers
//!
//! Imports point down only; modules on one line sit side by side and do not import
//! each other.
//!
//! ```text
//! main.rs                        parse, run the command, print the error chain, exit code
//! cmd/                           one file per command: flags -> checked settings -> the layer below
//! cli/                           clap definitions only (`judge`: the flags of compare, check, ...)
//! cluster/                       `run` under Slurm, mpirun, torchrun: rendezvous, remote ranks
//! sweep/                         plan, orchestrator, worker processes, the worker loop
//! report/                        report.md and the outputs of compare, history, check
//! plot/                          SVG and PNG charts
//! backend/ doctor/ analysis/ import/
//!                                where collectives run | checks of the machine |
//!                                judging runs | reading nccl-tests outputs
//! export/ machine/ workload/     the run directory's files | this machine as read |
//!                                a job's collectives (NCCL COLL lines, Inspector, Kineto, CSV)
//! model.rs                       the records a run produces and reads back
//! config/                        checked settings: sizes, transport configs, figures
//! nccl/                          what we know about NCCL: logs, failures, SHM sizing, ...
//! stats/ ops/ units.rs ...       statistics, datatypes and reductions, formatting
//! ```
//!
//! (`stats` above `ops` above `units`, `parallel` and `test_inputs`.)
//!
//! ## Code map
//!
//! **`main.rs`, `cli`, `cmd`.** `cli::Cli` and its `*Args` are clap types; nothing below
//! `cmd` sees them. Each `cmd::<command>::run` checks its flags into settings
//! (`cmd::settings::sweep_settings` for `sweep` and `run`), builds what the layer below
//! needs (`cluster::run::RunRequest`, `sweep::worker::WorkerSettings`,
//! `import::ImportRequest`) and calls it. `cmd::progress` is the terminal's
//! `SweepObserver` (a bar or one line per case).
//!
//! **`cluster`.** `nccl-bench run`: one process per rank under a launcher.
//! `launcher::detect` reads the rank layout, `rendezvous` brings the ranks to rank 0,
//! `gather` waits for them all (or names who is missing), `remote::RemoteLaunch`
//! starts each group's workers through the ranks' agents (`agent::serve`), and rank 0
//! runs the sweep's orchestrator over those connections (`run::run`), or with
//! `--soak` the soak's (`soak::soak`), while one agent per node reads its node's
//! counters and sends them to rank 0 (`counters`). `rank::job_manifest` records the
//! job; `target::Target` is where rank 0 writes.
//!
//! **`sweep`.** `session::run` is `sweep` from settings to exit code: backend choice,
//! preflight, manifest, the orchestrator, the report. `plan::Plan` orders the groups;
//! `orchestrator::Orchestrator::run` runs each group's sizes over a `group::RankGroup`
//! (`process::ProcessGroup` locally), with timeouts, failures kept as data
//! (`failure`), quality flags (`orchestrator::quality`), the configs of a round in a
//! Williams order (`stats::rounds::round_order`), and, without `--rounds`, measuring
//! until settled: at each of the plan's looks `orchestrator::settle` decides every
//! config against the baseline config over the rounds so far (and, with
//! `--baseline`, against that baseline: `analysis::baseline::Gate`) and stops the
//! settled ones, recording why in the manifest's `group_rounds`; `gate::check` checks
//! the run at the end. The worker loop is `worker::run`
//! (join, then size, time, check commands from `protocol::Command`, answered with
//! `protocol::Event`); `merge` turns the ranks' batches into one case. `soak::run` is `soak`: each config's
//! `orchestrator::soak` (batches binned into intervals, each written as it closes)
//! while a thread reads `machine::counters` into counters.csv.
//!
//! **`report`, `plot`.** Every sentence about a change is said by
//! `report::decision` (`sentence`, `method`) and the verdict's by `report::verdict`.
//! `report::write_with` writes a run's `report.md` (built by
//! `report::markdown::markdown`: the verdict first, whether the bandwidth is normal,
//! the cases apart, tables and charts per GPU count, the model, pairs, ceilings, the
//! machine last), the same page for a browser, `report.html` (`report::html::page`:
//! any Markdown to one self-contained page), and `model.csv`, with the charts of
//! `plot::draw_all` (each point's figures in an SVG title, `plot::common::Tips`).
//! The chapters on published figures, NCCL's logs, NVLS, NCCL's tuning, the model and
//! pairs are files of `report::sections`.
//! `report::{compare, history, check, junit}` render those commands' outputs;
//! `report::soak` and `plot::soak` a soak's report and its busbw-over-time charts.
//!
//! **`backend`.** The `Backend` and `Communicator` traits: a communicator runs timed
//! batches of back-to-back collectives (the one its group measures) and checks its
//! output. `host::HostBackend` is a ring over /dev/shm segments or TCP, every
//! collective over it (`host::collectives`); `nccl::gpu::NcclBackend` is NCCL through
//! our own FFI (`nccl::ffi` raw symbols, `nccl::library::Nccl` results with NCCL's
//! codes and texts, `nccl::comm` owners that free in `Drop`, each operation one
//! `comm::Launch` called as nccl-tests calls NCCL) with CUDA through cudarc, every
//! collective too (`nccl::gpu::pace` chooses how often it records timing events).
//! `select::resolve` chooses the backend for `--backend` and records why.
//!
//! **`doctor`.** `run_checks` and `quick_checks`: one file per check (/dev/shm,
//! leftover segments, container, NCCL settings, interfaces, InfiniBand, GPUs, libnccl),
//! each reading the machine only through `machine::Root` so tests build fake machines.
//!
//! **`analysis`.** Judging runs, read back through `export::reader::RunData`, every
//! change through the one model `stats::change::decide`: the SHM verdict
//! (`verdict::decide`), the comparison of two runs or configs (`compare::compare`),
//! baselines and checks (`baseline::{build, check}`), history (`history::build`), a
//! job's cost (`job::costs`), GPU and node pairs
//! (`pairs::tables`), the latency-bandwidth model (`model_table::models`), link
//! ceilings (`ceiling`), published figures (`expected::judge`), and a soak's episodes
//! with the counters that moved in each (`soak::judge`, `soak::causes`). It returns
//! data (`soak::Moved`, `baseline::Note`, ...), and `report` writes the sentences;
//! `plot::soak` takes a soak's cause words from `report::soak`.
//!
//! **`import`.** `import::parse` reads nccl-tests' stdout table in every layout it has
//! printed, or its `-J` JSON, of any of its `*_perf` binaries (the collective from the
//! binary the output names, `import::binary`); `import::write_run` writes it as a run
//! directory.
//!
//! **`export`.** The run directory: `RunDir` (created, never overwritten), `RunWriter`
//! (results.csv rows and the HdrHistogram log appended in place after every case
//! through `atomic::AppendFile`, the manifest replaced through `atomic::write`),
//! `reader::CaseRow` (a results.csv row, defined once), `reader::RunData` to
//! read it back, and a soak's soak.csv, counters.csv and soak.hlog (`soak::SoakWriter`).
//!
//! **`machine`.** This machine as read, never judged: `Root` (the file-system view
//! tests replace), `host` facts, `net::interfaces`, `GpuPresence`, the CUDA driver and
//! GPU facts (`cuda::read`), where libnccl is (`libnccl::discover`), and the counters
//! a soak samples and `doctor` shows (`counters::Sampler`: NVML, sysfs, /proc).
//!
//! **`workload`.** A job's collectives, `Workload` (collective, ranks, nccl-tests size,
//! calls), read from NCCL's COLL lines (`nccl::log::coll_call`, each call counted once
//! over the ranks that log it), the NCCL Inspector plugin's JSON (`workload::inspector`),
//! a PyTorch profiler trace (`workload::kineto`) or a CSV of calls per step; `workload::render` for the `workload` command.
//!
//! **`model`, `config`.** `model` holds the records: `CaseKey`, `CaseResult`,
//! `RunManifest`, the doctor's `Check`. `config` holds the checked settings:
//! `SweepSettings`, `TransportConfig` (presets and TOML files), `sizes`, `expected`.
//!
//! **`nccl`.** NCCL knowledge, in one place: the log parser (`log::parse`, `NcclLog`:
//! which transports, ranks, failures), failure explanations with their fixes
//! (`explain::explain`, `explain::explain_inputs` for what people paste), the facts
//! they rest on as data with their sources (`knowledge`: releases per GPU architecture,
//! known bugs, ibverbs statuses, CUDA errors, findings' texts), SHM segment sizing
//! (`shm::shm_estimate`), how NCCL picks socket interfaces (`net::selection`,
//! `net::IfList`), the `NCCL_*` variables it reads (`vars`), and `NcclVersion`.
//!
//! **`stats`, `ops`, `units`.** `stats`: per-iteration times (`LatencyRecorder`), the
//! adaptive stop rule (`StopRule`), bandwidth (`Bandwidth`), the decision model
//! (`change::decide`, `Change`, `Design`: every answer about a change), the rounds'
//! order and median interval (`rounds`), quality rules (`quality`), the
//! alpha-beta fit (`alpha_beta::fit`), a soak's intervals, dip episodes and stability
//! (`soak::find_episodes`). `ops`: `DataType`, `ReduceOp`, the collectives
//! with nccl-tests' sizes, bus factors and output layouts (`collective::Collective`),
//! and the check pattern whose every partial result is exact (`pattern::Pattern`,
//! `pattern::check_collective`). `units`: `Bytes`,
//! `GbPerSec` and all formatting of sizes, rates and times. `parallel::map` spreads
//! work over the cores.
//!
//! ## Invariants
//!
//! - Imports point down the layers above, and the modules of one line do not import
//!   each other (`tests/it/architecture.rs` reads the imports of every file: no cycle
//!   between files, no import upwards).
//! - clap types stay in `cli` and `cmd`: the rest is built from settings structs.
//! - Only `main`, `cmd`, the sweep's and the soak's sessions, the cluster run and the
//!   worker write to
//!   the terminal (progress goes through `sweep::SweepObserver`); the backends write
//!   only to their worker's log (stderr). `stats`, `nccl`, `analysis`, `report`,
//!   `plot`, `export`, `model` and `config` never print.
//! - Results are written by `export` (atomically, after every case; a run directory is
//!   never overwritten), `report::write_with` and `plot` (into a run directory). Reading
//!   the machine is `machine`'s; the doctor reads it through `Root`.
//! - NCCL's own rules (log formats, failure signatures, SHM sizes per version,
//!   interface choice, variable names) live in `nccl`; `backend::nccl` only calls the
//!   library.
//! - Workers are separate processes: NCCL caches its environment per process, and a
//!   hung or crashed case is killed as a process group without taking the sweep down.
//!   A failed, hung or crashed case is recorded with its reason and the sweep goes on.
//! - The simulated GPUs (`tests/gpu-sim`) are a test double: product code knows them
//!   only by the library's `ncclBenchSimulated` symbol and labels their runs
//!   `model::SIMULATED_LABEL` everywhere.
//!
//! ## Where to start reading
//!
//! | command | start at |
//! |---|---|
//! | `sweep` | `cmd::sweep::run`, then `sweep::session::run`, `sweep::orchestrator`, `sweep::worker` |
//! | `run` | `cmd::run::run`, then `cluster::run::run` |
//! | `soak` | `cmd::soak::run`, then `sweep::soak::run`, `analysis::soak::judge`, `report::soak` |
//! | `report` | `report::write_with`, `report::markdown`, `analysis::verdict::decide` |
//! | `compare` | `cmd::compare::run`, `analysis::compare::compare`, `stats::change::decide` |
//! | `baseline`, `check` | `analysis::baseline::{build, check}` |
//! | `history` | `cmd::history::run`, `analysis::history::build` |
//! | `import` | `import::parse`, `import::write_run` |
//! | `explain` | `cmd::explain::run`, `nccl::explain::explain_inputs` |
//! | `doctor` | `doctor::run_checks` |

pub mod analysis;
pub mod backend;
pub mod cli;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod doctor;
pub mod export;
pub mod import;
pub mod machine;
pub mod model;
pub mod nccl;
pub mod ops;
pub mod parallel;
pub mod plot;
pub mod report;
pub mod stats;
pub mod sweep;
#[doc(hidden)]
pub mod test_inputs;
pub mod units;
pub mod workload;
