//! The records a sweep produces: one `CaseResult` per (config, nranks, bytes), the
//! `RunManifest` that describes the whole run, and the doctor's `Check`s it keeps. All
//! are serde types with a schema version, read back by later commands (report,
//! compare).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::{IterationPolicy, TransportConfig};
use crate::ops::collective::Collective;
use crate::ops::{DataType, ReduceOp};
use crate::stats::quality::Quality;
use crate::stats::{Bandwidth, LatencySummary, StopReason};

mod ceilings;
mod synthetic;

pub use ceilings::{Ceilings, LinkKind, LinkRate};

pub const SCHEMA_VERSION: u32 = 1;

/// The backend column of runs on the simulated-GPU test stand-in.
pub const SIMULATED_LABEL: &str = "nccl-sim";
/// What every run on the stand-in says about itself.
pub const SIMULATED_NOTE: &str = "simulated GPUs (test stand-in), not a measurement";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    Ok,
    Failed,
    Timeout,
    Wrong,
    Skipped,
    /// A forced algorithm or protocol NCCL refused (2.24+): no measurement, NCCL's
    /// words in `error`; left out of verdicts and comparisons.
    Unsupported,
}

impl CaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::Failed => "failed",
            CaseStatus::Timeout => "timeout",
            CaseStatus::Wrong => "wrong",
            CaseStatus::Skipped => "skipped",
            CaseStatus::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for CaseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What identifies a case within a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaseKey {
    pub config: String,
    /// The collective measured (all_reduce in runs made before there were others).
    pub collective: Collective,
    pub nranks: u32,
    /// nccl-tests' `size`: the larger buffer of one rank (`Counts::size_bytes`).
    pub bytes: u64,
    pub dtype: DataType,
    pub op: ReduceOp,
}

impl CaseKey {
    /// The case's tag in `histograms.hlog` (no commas or spaces, as the format
    /// requires); all_reduce's has no collective in it, as before there were others.
    pub fn tag(&self) -> String {
        let tag = format!(
            "{}/n{}/{}/{}/{}",
            self.config, self.nranks, self.bytes, self.dtype, self.op
        );
        match self.collective {
            Collective::AllReduce => tag,
            c => format!("{tag}/{c}"),
        }
    }
}

/// Outcome of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    pub key: CaseKey,
    pub backend: String,
    pub status: CaseStatus,
    pub warmup: u64,
    /// All-reduces per CUDA graph launch (`--graph`); 0 when launched one by one.
    pub graph: u64,
    /// Timed iterations actually run, with their summary (absent when none ran).
    pub latency: Option<LatencySummary>,
    pub bandwidth: Option<Bandwidth>,
    pub stop: Option<StopReason>,
    pub wrong: u64,
    pub transports: String,
    pub error: String,
    pub started_at: String,
    pub duration_s: f64,
    /// How far the timings deserve trust (`None` for a case without timings).
    pub quality: Option<Quality>,
    /// Why the case was flagged.
    pub quality_note: String,
    /// How its iterations were timed when not one timestamp each (the NCCL
    /// backend's event stride); results.csv's `quality_note` ends with it.
    pub timing_note: String,
    /// The busbw ceiling of the ring it ran on (`analysis::ceiling`), where measured.
    pub ceiling_gbps: Option<f64>,
    /// The median iteration time of each round (process group) that measured the
    /// case, us, in the order they ran; empty for a case without timings.
    pub round_p50_us: Vec<f64>,
    /// The algorithm and protocol the case ran with (NCCL's, from an untimed probe).
    pub tuning: TuningCells,
    /// Where NCCL's SHM transport kept its buffers (`cumem-host`, `dev-shm`, `mixed`),
    /// from its log; empty where the log does not say (no SHM, the host backend).
    pub shm_backing: String,
}

/// What a case ran with: NCCL's algorithm, protocol and channels (from its `TUNING`
/// line in an untimed probe of the size), its model's predicted time, and a forced
/// choice it did not follow; the host backend's own ring and store mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TuningCells {
    pub algo: String,
    pub proto: String,
    pub channels: String,
    /// NCCL's own estimate of the all-reduce, microseconds (`ncclGroupSimulateEnd`
    /// from 2.22, the TUNING line's `time` in 2.20-2.23).
    pub predicted_us: Option<f64>,
    pub note: String,
}

impl CaseResult {
    /// Rounds (process groups) the case's timings come from.
    pub fn rounds(&self) -> usize {
        self.round_p50_us.len()
    }

    pub fn iters(&self) -> u64 {
        self.latency.map(|l| l.count).unwrap_or(0)
    }

    /// The tag of this measurement's histogram in `histograms.hlog`.
    pub fn hist_tag(&self) -> String {
        self.key.tag()
    }
}

/// Machine facts recorded with a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    /// Size and free space of the shm directory used, when it could be read.
    pub shm_dir: String,
    pub shm_total_bytes: Option<u64>,
    pub shm_free_bytes: Option<u64>,
    /// NVIDIA GPUs the kernel driver shows (bus ids), empty when none.
    pub gpus: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseCounts {
    pub total: u64,
    pub done: u64,
    pub ok: u64,
    pub failed: u64,
    pub timeout: u64,
    pub wrong: u64,
    pub skipped: u64,
    /// Forced choices NCCL refused.
    #[serde(default)]
    pub unsupported: u64,
    /// Cases re-measured in fresh processes whose kept measurement passed every
    /// quality rule, and cases still flagged `noisy` or `outlier` at the end.
    #[serde(default)]
    pub remeasured: u64,
    #[serde(default)]
    pub noisy: u64,
    #[serde(default)]
    pub outlier: u64,
}

impl CaseCounts {
    pub fn add(&mut self, status: CaseStatus) {
        self.done += 1;
        *self.of_status(status) += 1;
    }

    /// Counts a case's quality.
    pub fn add_quality(&mut self, quality: Quality) {
        if let Some(n) = self.of_quality(quality) {
            *n += 1;
        }
    }

    /// Moves one case from one quality to another (a group's final assessment);
    /// `None` is a case without one (not ok).
    pub fn change_quality(&mut self, from: Option<Quality>, to: Option<Quality>) {
        if let Some(n) = from.and_then(|q| self.of_quality(q)) {
            *n = n.saturating_sub(1);
        }
        if let Some(q) = to {
            self.add_quality(q);
        }
    }

    fn of_quality(&mut self, quality: Quality) -> Option<&mut u64> {
        match quality {
            Quality::Ok => None,
            Quality::Remeasured => Some(&mut self.remeasured),
            Quality::Noisy => Some(&mut self.noisy),
            Quality::Outlier => Some(&mut self.outlier),
        }
    }

    /// Moves one case from one status to another (a re-measurement that was kept).
    pub fn change_status(&mut self, from: CaseStatus, to: CaseStatus) {
        let n = self.of_status(from);
        *n = n.saturating_sub(1);
        *self.of_status(to) += 1;
    }

    fn of_status(&mut self, status: CaseStatus) -> &mut u64 {
        match status {
            CaseStatus::Ok => &mut self.ok,
            CaseStatus::Failed => &mut self.failed,
            CaseStatus::Timeout => &mut self.timeout,
            CaseStatus::Wrong => &mut self.wrong,
            CaseStatus::Skipped => &mut self.skipped,
            CaseStatus::Unsupported => &mut self.unsupported,
        }
    }

    pub fn all_ok(&self) -> bool {
        self.ok + self.skipped + self.unsupported == self.done
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    /// The sweep itself failed (see `error`).
    Aborted,
}

/// `manifest.json`: everything needed to interpret and reproduce a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunManifest {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub command_line: Vec<String>,
    pub label: Option<String>,
    pub status: RunStatus,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Why an aborted sweep stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub backend: BackendInfo,
    /// The libnccl used (NCCL backend).
    pub nccl: Option<NcclChoice>,
    /// The libnccl of each configuration that names its own.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub nccl_per_config: std::collections::BTreeMap<String, NcclChoice>,
    /// Driver, CUDA, GPUs and their peer-access matrix (NCCL backend).
    pub gpu: Option<GpuFacts>,
    pub host: HostInfo,
    pub configs: Vec<TransportConfig>,
    pub gpu_counts: Vec<u32>,
    pub sizes: Vec<u64>,
    pub dtype: DataType,
    pub op: ReduceOp,
    /// The collectives measured (all_reduce alone in runs made before the others),
    /// and the root of the rooted ones.
    pub collectives: Vec<Collective>,
    pub root: u32,
    /// Asked sizes a collective cannot run (no element per rank), a line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes_not_run: Vec<String>,
    pub iterations: IterationPolicy,
    /// Process groups per (config, rank count), interleaved across configs: the
    /// most, where the sweep measured until settled.
    pub rounds: u32,
    /// Measured until settled: the rounds at which it looked whether each pair of
    /// configs is settled (`stats::change::looks`); empty for fixed rounds. Every
    /// decision on the run spends its rate over these looks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<u32>,
    /// How the rounds were ordered and decided while measuring (the decisions
    /// read `looks`; this is the rest of the design, for the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<SweepDesign>,
    /// Measured until settled: the rounds each group took, and why it stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_rounds: Vec<GroupRounds>,
    pub warmup_iters: u64,
    /// All-reduces per CUDA graph launch (`--graph`); 0 when launched one by one.
    #[serde(default)]
    pub graph_iters: u64,
    pub timeout_s: f64,
    pub cases: CaseCounts,
    pub warnings: Vec<String>,
    /// The ranks of a `run` under a cluster launcher (absent for `sweep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// `doctor`'s quick checks of this machine, run before the sweep.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doctor: Vec<Check>,
    /// Link rates measured before the sweep: the reference of `ceiling_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<Ceilings>,
    /// What a `soak` run was asked for (absent for a sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakInfo>,
    /// Where NCCL's SHM transport kept its buffers, per config: the backings its
    /// cases' logs named (`cumem-host`, `dev-shm`, `mixed`; results.csv's
    /// `shm_backing`). Absent where no log said (no SHM, the host backend).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub shm_backing: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    /// `--sizes-from`: the job's file and the sizes of each collective it sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes_from: Option<crate::config::SizesFrom>,
    /// What NCCL said it read, per config (`NCCL_X set by environment to V` lines;
    /// NCCL's parameter API lists only its debug parameters). Absent without logs.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub nccl_env: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
}

impl RunManifest {
    /// Adds what a group's NCCL log said it read from the environment to `config`'s.
    pub fn note_nccl_env(&mut self, config: &str, env: &[(String, String)]) {
        for (k, v) in env {
            let known = self.nccl_env.entry(config.to_string()).or_default();
            known.insert(k.clone(), v.trim_end_matches('.').to_string());
        }
    }

    /// Counts a finished case: its status, its quality, and where its SHM buffers
    /// lived.
    pub fn record_case(&mut self, result: &CaseResult) {
        self.cases.add(result.status);
        if let Some(q) = result.quality {
            self.cases.add_quality(q);
        }
        if !result.shm_backing.is_empty() {
            self.shm_backing
                .entry(result.key.config.clone())
                .or_default()
                .insert(result.shm_backing.clone());
        }
    }
}

/// A sweep's design, as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDesign {
    /// The rate, band and margin each pair was settled at (`stats::change`).
    pub alpha: f64,
    pub threshold: f64,
    pub margin: f64,
    /// The order of the configs within a round: `williams` (each follows each
    /// other equally often).
    pub order: String,
    /// The rows of that order each rank count's rounds took in turn, as the groups'
    /// names (`config` or `config collective`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<OrderRows>,
    /// With `sweep --baseline`: the baseline each group was also settled against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateDesign>,
}

/// The rows of the order of one rank count's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRows {
    pub nranks: u32,
    pub rows: Vec<Vec<String>>,
}

/// The gate a sweep measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDesign {
    pub baseline: String,
    pub alpha: f64,
    pub threshold: f64,
}

/// How many rounds one group of a sweep that measured until settled took (a config
/// on one rank count, one collective), and why it stopped there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRounds {
    pub config: String,
    pub collective: Collective,
    pub nranks: u32,
    pub rounds: u32,
    pub why: String,
}

/// A soak's settings, as its report and plot read them back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakInfo {
    pub bytes: u64,
    pub duration_s: f64,
    pub interval_s: f64,
    /// An interval this far below the run's median (0.10) may be a dip.
    pub dip: f64,
    /// Counters that could not be read, each said once.
    #[serde(default)]
    pub counter_notes: Vec<String>,
}

/// Who took part in a `run`: the launcher, the rendezvous and every rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    pub launcher: String,
    pub rendezvous: String,
    pub world_size: u32,
    /// Distinct hosts, in the order of their first rank.
    pub hosts: Vec<String>,
    pub ranks: Vec<RankInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    pub host: String,
    pub local_rank: u32,
    pub device: usize,
    pub pid: u32,
    /// The libnccl version this rank loaded (NCCL backend).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    pub git_rev: String,
}

impl ToolInfo {
    /// This nccl-bench: its version and the git revision it was built from.
    pub fn this() -> ToolInfo {
        ToolInfo {
            name: "nccl-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_rev: option_env!("NCCL_BENCH_GIT_REV")
                .unwrap_or("unknown")
                .into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackendInfo {
    pub requested: String,
    pub used: String,
    /// What the numbers are (for the host backend: not NCCL).
    pub note: String,
}

/// The libnccl a sweep uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclChoice {
    pub path: std::path::PathBuf,
    pub version: String,
    /// Which discovery step found it.
    pub found_by: String,
    /// The library is the simulated-GPU test stand-in (tests/gpu-sim), not NCCL:
    /// nothing measured with it is a measurement.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub index: usize,
    pub name: String,
    pub bus_id: String,
    pub memory_bytes: u64,
    /// Free memory when the run started (NVML, which sees other processes' use);
    /// absent where NVML could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
}

/// GPU facts of the machine a run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// The kernel module's version (`/proc/driver/nvidia/version`), e.g. 550.54.15.
    pub driver_version: String,
    /// The CUDA version the driver supports (`cuDriverGetVersion`), e.g. 12.4.
    pub cuda_version: String,
    pub gpus: Vec<GpuInfo>,
    /// `p2p[i][j]`: GPU i can access GPU j's memory directly.
    pub p2p: Vec<Vec<bool>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_kinds_are_named_as_the_manifest_writes_them() {
        for kind in [
            LinkKind::Memcpy,
            LinkKind::TcpLoopback,
            LinkKind::P2p,
            LinkKind::ViaHost,
            LinkKind::D2d,
            LinkKind::H2d,
            LinkKind::D2h,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    /// `OK`, `WARN`, `FAIL`: the text output's first column.
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One check of the machine: what it found and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, e.g. `shm.size`.
    pub id: String,
    /// Short name for people, e.g. `/dev/shm`.
    pub title: String,
    pub status: Status,
    /// The measured value in words.
    pub value: String,
    /// One line saying how to fix a WARN or FAIL; `None` when nothing needs fixing.
    pub fix: Option<String>,
    /// The lines behind the value: formula, assumptions, the items looked at.
    pub details: Vec<String>,
}

impl Check {
    pub fn new(id: &str, title: &str, status: Status, value: impl Into<String>) -> Check {
        Check {
            id: id.to_string(),
            title: title.to_string(),
            status,
            value: value.into(),
            fix: None,
            details: Vec::new(),
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    pub fn with_details(mut self, details: Vec<String>) -> Check {
        self.details = details;
        self
    }
}
