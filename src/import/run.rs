//! What an import reads: an [`ImportedRun`] of rows with their timings and what the
//! output said about the run (ranks, versions, `NCCL_*` variables, the command), and the
//! precise errors of input that cannot be read.

use serde::Serialize;
use thiserror::Error;

use crate::ops::collective::Collective;

/// Names the input in errors when it has no path (the caller adds it).
pub(crate) const NO_PATH: &str = "the input";

/// Where an [`ImportedRun`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The table nccl-tests prints on stdout.
    Text,
    /// The document nccl-tests writes with `-J file.json`.
    Json,
}

/// One nccl-tests run: its rows and what the output says about how it was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedRun {
    /// One row per (size, type, redop, root), in the order printed.
    pub rows: Vec<ImportedRow>,
    /// Number of ranks: from the `#  Rank N Group ... device` lines (text) or the
    /// `config.devices` list (JSON); else from NCCL's `... rank R nranks N ...` INFO lines.
    pub nranks: Option<u32>,
    /// NCCL library version, `2.19.3+cuda12.3` from an `NCCL version` line, else
    /// `2.19.3` decoded from nccl-tests' `nccl-library=21903` (JSON: `nccl_version`).
    pub nccl_version: Option<String>,
    /// From `# nccl-tests version 2.19.4 ...` (text only; the JSON does not record it).
    pub nccl_tests_version: Option<String>,
    /// `NCCL_*` variables the output shows were set (NCCL's `... set by environment to`
    /// INFO lines, assignments on the command line or on `export` lines; JSON: `env`).
    /// First value wins.
    pub env: Vec<(String, String)>,
    /// The command line that ran the test, when the input shows it.
    pub command: Option<String>,
    /// The nccl-tests binary the output names (`alltoall_perf`, `all_gather_perf_mpi`):
    /// its `# Collective test starting:` banner or the command line (text), `args`
    /// (JSON). `None` when nothing names it.
    pub binary: Option<String>,
    /// The collective measured: the one of `binary`; all_reduce, assumed, without one.
    pub collective: Collective,
    pub format: Format,
    /// The run used `-I 1` (per-iteration timing).
    pub per_iteration: bool,
    /// The times are CPU times (`-C 1`: `cputime` column, `cpu_time` key).
    pub cpu_time: bool,
    /// `# Avg bus bandwidth    : 12.3` (JSON: `average_bus_bandwidth.bandwidth`).
    pub avg_busbw_gbps: Option<f64>,
    /// `# Out of bounds values : 0 OK` (JSON: `out_of_bounds.count`).
    pub out_of_bounds: Option<u64>,
    /// Each rank's host and GPU, from the `#  Rank N Group G Pid P on HOST device D
    /// [BUS] NAME` lines (text only), in rank order.
    pub ranks: Vec<ImportedRank>,
    /// When the run started, the local time of its machine as `2026-07-10T12:00:00`:
    /// JSON `start_time`, or in text with `-S` the first row's timestamp (when
    /// that size finished, a moment after the start).
    pub started_at: Option<String>,
}

/// nccl-tests' `%Y-%m-%d %H:%M:%S` (its JSON `start_time`, its `-S` column; its
/// machine's local time, no zone) as `2026-07-10T12:00:00`; `None` when it is not
/// that.
pub(crate) fn local_time(text: &str) -> Option<String> {
    chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M:%S")
        .ok()
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
}

/// One rank as nccl-tests lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportedRank {
    pub rank: u32,
    pub pid: u32,
    pub host: String,
    pub device: usize,
    pub bus_id: String,
    /// The GPU's name as the driver reports it, e.g. `NVIDIA H100 80GB HBM3`.
    pub gpu: String,
}

/// One message size of one (type, redop, root).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedRow {
    /// 1-based line in the input where the row starts.
    pub line: usize,
    pub bytes: u64,
    pub count: u64,
    pub dtype: String,
    /// The `redop` (`op` in 2017 output) as printed: `none` for the collectives that do
    /// not reduce (sendrecv prints the op it was given); empty when the table has no
    /// such column or, as alltoall's did before 2022, leaves it blank.
    pub op: String,
    /// `None` when the table has no `root` column (nccl-tests before 2022).
    pub root: Option<i64>,
    pub out_of_place: Timing,
    pub in_place: Option<Timing>,
    /// Out-of-place per-iteration times in microseconds, from the JSON's
    /// `out_of_place_per_iter.times_us`. Empty for text input: with `-I` the table
    /// prints only a summary of them, found in [`Timing::per_iter`].
    pub iteration_times_us: Vec<f64>,
}

/// The result of the out-of-place or the in-place half of a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// Mean time of one iteration in microseconds (2017 millisecond tables converted).
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// `#wrong`; `None` for `N/A` (run with `-c 0`) and for tables without the column.
    pub wrong: Option<u64>,
    /// The old format's `error` (max deviation) column; `None` for `N/A` or no column.
    pub error: Option<f64>,
    /// The `-I` summary (`i_min i_max i_p99 i_cv%`; the JSON has more).
    pub per_iter: Option<IterStats>,
}

/// nccl-tests' `-I` per-iteration statistics (per iteration, the max over ranks).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IterStats {
    pub min_us: f64,
    pub max_us: f64,
    pub p99_us: f64,
    /// Coefficient of variation, percent.
    pub cv_pct: f64,
    /// JSON only, like the fields below.
    pub avg_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p95_us: Option<f64>,
    pub stdev_us: Option<f64>,
    /// Leading iterations left out of the statistics (`-K`).
    pub skipped_iterations: Option<u32>,
    /// Every iteration's time (JSON only), skipped ones included: per iteration the
    /// max over all ranks.
    pub times_us: Vec<f64>,
    /// Per process, every iteration's time (the max over that process's GPUs), from
    /// `per_process_max_times_us` (JSON of runs with several processes).
    pub process_times_us: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ImportError {
    #[error(
        "no nccl-tests result table found in {path_hint}: expected a header line such as \
         `#  size  count  type  redop  root  time  algbw  busbw  #wrong ...` or a -J JSON \
         document with \"results\""
    )]
    NoTable { path_hint: String },
    #[error("line {line}: malformed nccl-tests result row ({why}): {text}")]
    BadRow {
        line: usize,
        text: String,
        why: String,
    },
    #[error("line {line}: invalid nccl-tests JSON: {message}")]
    Json { line: usize, message: String },
    #[error(
        "{first_at} names {first} but {second_at} names {second}: an import reads the run \
         of one nccl-tests binary (split the file, one run in each)"
    )]
    SeveralBinaries {
        first_at: String,
        first: String,
        second_at: String,
        second: String,
    },
    #[error("{at}: {binary} is not a collective nccl-bench knows (it reads {known})")]
    UnknownBinary {
        at: String,
        binary: String,
        known: String,
    },
}

impl ImportError {
    /// Names the input (usually its path) in a [`ImportError::NoTable`] error.
    pub fn with_path_hint(self, hint: impl Into<String>) -> Self {
        match self {
            ImportError::NoTable { .. } => ImportError::NoTable {
                path_hint: hint.into(),
            },
            other => other,
        }
    }
}

/// `NCCL_` followed by what NCCL's variable names are made of.
pub(crate) fn is_nccl_var(name: &str) -> bool {
    name.len() > 5
        && name.starts_with("NCCL_")
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// NCCL's version code as nccl-tests prints it (`nccl-library=21903`): `2.19.3`.
pub(crate) fn version_from_code(code: u64) -> String {
    crate::nccl::NcclVersion::from_code(i32::try_from(code).unwrap_or(i32::MAX)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_codes() {
        assert_eq!(version_from_code(21903), "2.19.3");
        assert_eq!(version_from_code(23203), "2.32.3");
        assert_eq!(version_from_code(2803), "2.8.3");
    }
}
