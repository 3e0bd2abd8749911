//! Reading a run directory back: the manifest's essentials, every row of
//! `results.csv`, and the histograms of `histograms.hlog` by tag. Used by the
//! commands that work on finished runs (compare, and later report). A directory that
//! is not a run, a CSV row that does not parse, a histogram that does not decode: each
//! is an error naming the file and line.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::run_dir::{MANIFEST, RESULTS_CSV};
use crate::ops::collective::Collective;
use crate::stats::quality::Quality;

/// One row of `results.csv`, and its one definition: the fields are the columns, in
/// order (the first 17 are the stable schema every later tool relies on, never
/// renamed), written by `export::csv` and read back here. Times are microseconds,
/// bandwidths GB/s (1e9 B/s); cells of cases that produced no timing are empty, and a
/// column absent from an older run reads as empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    /// The transport configuration's name.
    pub config: String,
    /// `host`, `nccl`, `nccl-tests` (an import), the simulated GPUs' label.
    pub backend: String,
    pub nranks: u32,
    /// The message size: nccl-tests' size, bytes per rank of the buffer.
    pub bytes: u64,
    pub dtype: String,
    pub op: String,
    /// Timed iterations, over every round.
    pub iters: u64,
    /// `ok`, `failed`, `timeout`, `wrong`, `skipped`, `unsupported`.
    pub status: String,
    /// The mean iteration time (nccl-tests' time).
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub time_us: Option<f64>,
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub algbw_gbps: Option<f64>,
    /// algbw times the collective's bus factor (nccl-tests' busbw).
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub busbw_gbps: Option<f64>,
    /// The median of the samples of every round, pooled.
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub p50_us: Option<f64>,
    /// Empty where the samples cannot support it (1,000 or more, `--tails`).
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub p99_us: Option<f64>,
    #[serde(serialize_with = "three", deserialize_with = "number")]
    pub max_us: Option<f64>,
    /// Elements the correctness check found wrong.
    #[serde(default, deserialize_with = "whole")]
    pub wrong: u64,
    /// The transports NCCL used, with their shares (`P2P/CUMEM:100%`).
    pub transports: String,
    pub error: String,
    #[serde(default, deserialize_with = "whole")]
    pub warmup_iters: u64,
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub min_us: Option<f64>,
    /// Empty below 100 samples.
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub p90_us: Option<f64>,
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub stddev_us: Option<f64>,
    /// 95 % interval of the median: over the round medians (6 rounds or more), else
    /// over the samples of the one round; absent in imports without iterations.
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub median_ci_low_us: Option<f64>,
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub median_ci_high_us: Option<f64>,
    /// Why the iterations stopped (`precision`, `max-time`, `iters`).
    #[serde(default)]
    pub stop: String,
    #[serde(default)]
    pub started_at: String,
    #[serde(default, serialize_with = "three_f64", deserialize_with = "seconds")]
    pub duration_s: f64,
    /// The case's histogram in histograms.hlog; empty without timings.
    #[serde(default)]
    pub hist_tag: String,
    /// All-reduces per CUDA graph launch (0, or absent in older runs: none).
    #[serde(default, deserialize_with = "whole")]
    pub graph_iters: u64,
    /// `ok`, `noisy`, `outlier`; empty where not assessed (older runs, imports,
    /// cases without timings).
    #[serde(default)]
    pub quality: String,
    #[serde(default)]
    pub quality_note: String,
    /// busbw as a percentage of the ring's measured link ceiling (absent where none
    /// was measured).
    #[serde(default, serialize_with = "one", deserialize_with = "number")]
    pub ceiling_pct: Option<f64>,
    /// How many rounds (process groups) measured the case.
    #[serde(default, deserialize_with = "count")]
    pub rounds: Option<usize>,
    /// Each round's median, us, `;`-separated (absent in older runs and imports).
    #[serde(default)]
    pub round_p50_us: String,
    /// (highest - lowest round median) / their median, percent.
    #[serde(default, serialize_with = "one", deserialize_with = "number")]
    pub round_spread_pct: Option<f64>,
    /// nccl-tests' own `-I` p95 and p99 of an imported case, as it printed them.
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub nccl_tests_p95_us: Option<f64>,
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub nccl_tests_p99_us: Option<f64>,
    /// The algorithm, protocol and channels the case ran with (`model::TuningCells`).
    #[serde(default)]
    pub algo: String,
    #[serde(default)]
    pub proto: String,
    #[serde(default)]
    pub channels: String,
    /// NCCL's own estimate, us (absent where NCCL gives none).
    #[serde(default, serialize_with = "three", deserialize_with = "number")]
    pub nccl_predicted_us: Option<f64>,
    /// A forced choice NCCL did not follow, and the like.
    #[serde(default)]
    pub tuning_note: String,
    /// nccl-tests' name of the collective; runs made before there were others
    /// measured all_reduce only.
    #[serde(default = "all_reduce")]
    pub collective: String,
    /// Where NCCL's SHM buffers lived (`model::CaseResult::shm_backing`).
    #[serde(default)]
    pub shm_backing: String,
}

fn fixed<S: serde::Serializer>(v: Option<f64>, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&format!("{v:.decimals$}")),
        None => s.serialize_str(""),
    }
}

/// A number cell with three decimals; empty for none.
fn three<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 3, s)
}

fn three_f64<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(Some(*v), 3, s)
}

/// A percentage cell with one decimal.
fn one<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 1, s)
}

/// An empty cell is no number.
fn number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let text = String::deserialize(d)?;
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse()
        .map(Some)
        .map_err(|e| serde::de::Error::custom(format!("{t:?} is not a number ({e})")))
}

/// A count cell; an empty one is 0.
fn whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(count(d)?.unwrap_or(0) as u64)
}

/// A duration cell; an empty one is 0.
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(number(d)?.unwrap_or(0.0))
}

fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let text = String::deserialize(d)?;
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse().map(Some).map_err(serde::de::Error::custom)
}

fn all_reduce() -> String {
    Collective::AllReduce.to_string()
}

#[cfg(test)]
impl CaseRow {
    /// For tests: a trusted, ok all-reduce of `config` on 2 ranks at `bytes` whose
    /// rounds had these medians (us); its own median is the upper middle one.
    pub fn with_rounds(config: &str, bytes: u64, rounds: &[f64]) -> CaseRow {
        let text: Vec<String> = rounds.iter().map(|r| r.to_string()).collect();
        let mut sorted = rounds.to_vec();
        sorted.sort_by(f64::total_cmp);
        CaseRow {
            config: config.into(),
            collective: "all_reduce".into(),
            backend: "host".into(),
            nranks: 2,
            bytes,
            dtype: "float".into(),
            op: "sum".into(),
            status: "ok".into(),
            quality: "ok".into(),
            p50_us: sorted.get(sorted.len() / 2).copied(),
            round_p50_us: text.join(";"),
            ..Default::default()
        }
    }
}

impl CaseRow {
    /// Each round's median, us: one per process group that measured the case. Empty
    /// for older runs and imports (and for a cell that does not parse).
    pub fn round_medians(&self) -> Vec<f64> {
        let values: Option<Vec<f64>> = self
            .round_p50_us
            .split(';')
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
            })
            .collect();
        values.unwrap_or_default()
    }

    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    /// The case's level for the decision model: its rounds, else its one
    /// measurement (its median, or an import's mean).
    pub fn level(&self) -> Option<crate::stats::change::Level> {
        use crate::stats::change::Level;
        Level::of_rounds(&self.round_medians())
            .or_else(|| Level::of_point(self.p50_us.or(self.time_us)?))
    }

    /// The case's typical time, us: the geometric mean of its rounds' medians (every
    /// change is a ratio of these), or its one measurement. Every table of a report
    /// shows this time.
    pub fn typical_us(&self) -> Option<f64> {
        self.level().map(|l| l.time())
    }

    /// The collective measured: all_reduce for a row without one (the reader
    /// refuses a name it does not know).
    pub fn coll(&self) -> Collective {
        // The reader writes nccl-tests' name, so an exact match is the rule (no
        // allocation: keys call this for every case); other rows are parsed.
        Collective::ALL
            .into_iter()
            .find(|c| c.name() == self.collective)
            .unwrap_or_else(|| Collective::parse(&self.collective).unwrap_or(Collective::AllReduce))
    }

    /// A forced algorithm or protocol NCCL refused: no measurement, and no failure.
    pub fn is_unsupported(&self) -> bool {
        self.status == "unsupported"
    }

    /// Whether the row's timings count as evidence: an ok case that no quality rule
    /// left flagged (`noisy`, `outlier`). Rows never assessed count.
    pub fn is_trusted(&self) -> bool {
        self.is_ok() && Quality::parse(&self.quality).is_none_or(Quality::trusted)
    }
}

/// What a command needs from `manifest.json` (the rest is for people).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ManifestHead {
    #[serde(default)]
    pub schema_version: u32,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub backend: BackendHead,
    #[serde(default)]
    pub host: HostHead,
    #[serde(default)]
    pub configs: Vec<ConfigHead>,
    #[serde(default)]
    pub nccl: Option<NcclHead>,
    /// Configs that ran with their own libnccl (`nccl_lib` in the TOML).
    #[serde(default)]
    pub nccl_per_config: std::collections::BTreeMap<String, NcclHead>,
    #[serde(default)]
    pub gpu: Option<serde_json::Value>,
    #[serde(default)]
    pub tool: ToolHead,
    /// The ranks of a `run` (absent for `sweep` and imports).
    #[serde(default)]
    pub cluster: Option<crate::model::ClusterInfo>,
    /// Link rates measured before the sweep (absent in older runs and imports).
    #[serde(default)]
    pub ceilings: Option<crate::model::Ceilings>,
    /// Asked sizes a collective could not run, a line each.
    #[serde(default)]
    pub sizes_not_run: Vec<String>,
    /// Process groups per (config, rank count) (1 in older runs and imports).
    #[serde(default = "one_round")]
    pub rounds: u32,
    /// The rounds at which a sweep measuring until settled looked (empty: one look,
    /// at `rounds`).
    #[serde(default)]
    pub looks: Vec<u32>,
    /// How many rounds each group took, and why it stopped there (measured until
    /// settled).
    #[serde(default)]
    pub group_rounds: Vec<crate::model::GroupRounds>,
    /// The job whose sizes the sweep measured (`--sizes-from`).
    #[serde(default)]
    pub sizes_from: Option<crate::config::SizesFrom>,
}

fn one_round() -> u32 {
    1
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConfigHead {
    pub name: String,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// The devices of a pair of `sweep --pairs`.
    #[serde(default)]
    pub devices: Option<Vec<usize>>,
    /// The job's ranks of a pair of nodes of `run --pairs`.
    #[serde(default)]
    pub ranks: Option<Vec<u32>>,
    /// How its buffers were registered with NCCL (absent: none).
    #[serde(default)]
    pub register: Option<crate::nccl::register::Registration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NcclHead {
    #[serde(default)]
    pub version: String,
    /// The library file loaded.
    #[serde(default)]
    pub path: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolHead {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub git_rev: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct BackendHead {
    #[serde(default)]
    pub used: String,
    #[serde(default)]
    pub note: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct HostHead {
    #[serde(default)]
    pub hostname: String,
    #[serde(default)]
    pub cpu_model: String,
    #[serde(default)]
    pub cpus: usize,
    #[serde(default)]
    pub shm_total_bytes: Option<u64>,
}

/// A run directory, loaded.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub manifest: ManifestHead,
    pub cases: Vec<CaseRow>,
}

impl RunData {
    /// The looks at the rounds a family over this run is decided over (1 for a run of
    /// fixed rounds): `analysis::family::looks`.
    pub fn looks(&self) -> usize {
        self.manifest.looks.len().max(1)
    }

    /// A run directory's manifest and results.csv (what every command reads;
    /// histograms.hlog is for other tools and charts).
    pub fn load(dir: &Path) -> Result<RunData> {
        if !dir.is_dir() {
            bail!("{} is not a directory", dir.display());
        }
        let csv_path = dir.join(RESULTS_CSV);
        if !csv_path.is_file() {
            bail!(
                "{} is not a run directory (no {RESULTS_CSV})",
                dir.display()
            );
        }
        let manifest_path = dir.join(MANIFEST);
        let manifest: ManifestHead = match std::fs::read(&manifest_path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a valid manifest", manifest_path.display()))?,
            Err(_) => bail!("{} is not a run directory (no {MANIFEST})", dir.display()),
        };
        let cases = read_rows(&csv_path)?;
        Ok(RunData {
            dir: dir.to_path_buf(),
            manifest,
            cases,
        })
    }

    /// `n` ranks in the words of this run's backend: "2 GPUs", or "2 ranks" on the
    /// host backend, whose ranks are CPU processes.
    pub fn ranks(&self, n: u32) -> String {
        let host = self.manifest.backend.used == "host"
            || (!self.cases.is_empty() && self.cases.iter().all(|c| c.backend == "host"));
        let (one, many) = if host {
            ("rank", "ranks")
        } else {
            ("GPU", "GPUs")
        };
        crate::units::plural(n as usize, one, many)
    }

    /// The collectives of the run's cases, in nccl-tests' order.
    pub fn collectives(&self) -> Vec<Collective> {
        let mut out: Vec<Collective> = self.cases.iter().map(CaseRow::coll).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The run with only the cases of one collective, as
    /// if it had measured that one alone: what the report and the charts of each
    /// collective read.
    pub fn of_collective(&self, collective: Collective) -> RunData {
        let cases: Vec<CaseRow> = self
            .cases
            .iter()
            .filter(|c| c.coll() == collective)
            .cloned()
            .collect();
        RunData {
            dir: self.dir.clone(),
            manifest: self.manifest.clone(),
            cases,
        }
    }

    /// `f` on the run's cases of one collective: the run itself when it holds no
    /// other, else [`RunData::of_collective`].
    pub fn for_collective<R>(&self, collective: Collective, f: impl FnOnce(&RunData) -> R) -> R {
        if self.cases.iter().all(|c| c.coll() == collective) {
            f(self)
        } else {
            f(&self.of_collective(collective))
        }
    }

    /// How the run's charts and headings name its collective: "All-reduce" for a
    /// run of all_reduce alone (or of several collectives).
    pub fn collective_title(&self) -> &'static str {
        match self.collectives()[..] {
            [one] => one.title(),
            _ => Collective::AllReduce.title(),
        }
    }
}

fn read_rows(path: &Path) -> Result<Vec<CaseRow>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, record) in reader.deserialize::<CaseRow>().enumerate() {
        // Line 1 is the header.
        let mut row = record.map_err(|e| anyhow!("{}:{}: {e}", path.display(), i + 2))?;
        // One spelling per collective, so that rows key alike (`allreduce` too).
        row.collective = match row.collective.trim() {
            "" => Collective::AllReduce.to_string(),
            name => Collective::parse(name)
                .map_err(|e| anyhow!("{}:{}: collective: {e}", path.display(), i + 2))?
                .to_string(),
        };
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(dir: &Path, csv: &str) {
        std::fs::write(
            dir.join(MANIFEST),
            r#"{"schema_version":1,"status":"complete","backend":{"used":"host","note":"x"}}"#,
        )
        .unwrap();
        std::fs::write(dir.join(RESULTS_CSV), csv).unwrap();
    }

    const HEADER: &str = "config,backend,nranks,bytes,dtype,op,iters,status,time_us,algbw_gbps,busbw_gbps,p50_us,p99_us,max_us,wrong,transports,error,hist_tag\n";

    #[test]
    fn rows_with_and_without_timings_load() {
        let dir = tempfile::tempdir().unwrap();
        write_run(
            dir.path(),
            &format!("{HEADER}default,host,2,1024,float,sum,20,ok,1.5,0.68,0.68,1.4,2.0,3.0,0,SHM,,default/n2/1024/float/sum\nshm-off,host,2,1024,float,sum,0,failed,,,,,,,0,,\"rank 1: boom, badly\",\n"),
        );
        let run = RunData::load(dir.path()).unwrap();
        assert_eq!(run.manifest.backend.used, "host");
        assert_eq!(run.cases.len(), 2);
        assert_eq!(run.cases[0].time_us, Some(1.5));
        assert!(run.cases[0].is_ok());
        assert_eq!(run.cases[1].time_us, None);
        assert_eq!(run.cases[1].error, "rank 1: boom, badly");
        // A run from before there were other collectives measured all_reduce.
        assert_eq!(run.cases[0].collective, "all_reduce");
        assert_eq!(run.cases[0].coll(), Collective::AllReduce);
    }

    #[test]
    fn a_bad_row_names_its_line_and_a_non_run_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_run(
            dir.path(),
            &format!("{HEADER}default,host,two,1024,float,sum,20,ok,1.5,,,,,,0,SHM,,\n"),
        );
        let err = format!("{:#}", RunData::load(dir.path()).unwrap_err());
        assert!(err.contains("results.csv:2:"), "{err}");
        let header = HEADER.replace('\n', ",collective\n");
        write_run(
            dir.path(),
            &format!("{header}default,host,2,1024,float,sum,20,ok,1.5,,,,,,0,SHM,,,AllGather\ndefault,host,2,1024,float,sum,20,ok,1.5,,,,,,0,SHM,,,all_to_one\n"),
        );
        let err = format!("{:#}", RunData::load(dir.path()).unwrap_err());
        assert!(
            err.contains("results.csv:3: collective: unknown collective \"all_to_one\""),
            "{err}"
        );
        let empty = tempfile::tempdir().unwrap();
        let err = RunData::load(empty.path()).unwrap_err().to_string();
        assert!(
            err.contains("is not a run directory (no results.csv)"),
            "{err}"
        );
    }
}
