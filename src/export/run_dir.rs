//! The run directory (`results/<YYYYmmdd-HHMMSS>-<host>[-label]/`) and the one writer
//! that owns its files. A run directory is created new, never reused: when the name
//! is taken (two runs in the same second), a numeric suffix is added.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;

use super::{atomic, csv, hlog};
use crate::model::{CaseResult, RunManifest};

pub const MANIFEST: &str = "manifest.json";
pub const RESULTS_CSV: &str = "results.csv";
pub const HISTOGRAMS: &str = "histograms.hlog";
pub const LOGS: &str = "logs";
/// The report a person reads (`report::write_with`).
pub const REPORT: &str = "report.md";
/// The same report as one self-contained page for a browser.
pub const REPORT_HTML: &str = "report.html";
/// The latency-bandwidth model of every config, beside results.csv.
pub const MODEL_CSV: &str = "model.csv";
/// The run's own table of published figures (`sweep --expected`), if it has one.
pub const EXPECTED: &str = "expected.toml";

/// A created run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// Creates `<out>/<stamp>-<host>[-label]` (and `logs/`), never an existing directory.
    pub fn create(out: &Path, stamp: &str, host: &str, label: Option<&str>) -> Result<RunDir> {
        fs::create_dir_all(out)
            .with_context(|| format!("cannot create output directory {}", out.display()))?;
        let host: String = host
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = match label {
            Some(l) => format!("{stamp}-{host}-{l}"),
            None => format!("{stamp}-{host}"),
        };
        for attempt in 1..1000 {
            let name = if attempt == 1 {
                base.clone()
            } else {
                format!("{base}-{attempt}")
            };
            let path = out.join(name);
            match fs::create_dir(&path) {
                Ok(()) => {
                    fs::create_dir(path.join(LOGS))
                        .with_context(|| format!("cannot create {}", path.join(LOGS).display()))?;
                    return Ok(RunDir { path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot create run directory in {}", out.display())
                    })
                }
            }
        }
        anyhow::bail!(
            "cannot find a free run directory name for {base} in {}",
            out.display()
        )
    }

    /// Creates exactly `path` (and `logs/`); an existing directory is an error.
    pub fn create_at(path: &Path) -> Result<RunDir> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create output directory {}", parent.display()))?;
        }
        match fs::create_dir(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                anyhow::bail!(
                    "{} already exists: a run directory is never overwritten",
                    path.display()
                )
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create run directory {}", path.display()))
            }
        }
        fs::create_dir(path.join(LOGS))
            .with_context(|| format!("cannot create {}", path.join(LOGS).display()))?;
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn logs(&self) -> PathBuf {
        self.path.join(LOGS)
    }
}

/// Owns the files of a run directory and updates them after every case.
pub struct RunWriter {
    dir: RunDir,
    csv_header: Vec<u8>,
    hlog_header: Vec<u8>,
    /// The manifest of the run being appended to: every manifest written merges it.
    previous: Option<serde_json::Value>,
}

impl RunWriter {
    /// Starts the files: a CSV with its header and an empty histogram log, so that a
    /// run interrupted before its first case still has well-formed files.
    pub fn new(dir: RunDir, run_start: SystemTime) -> Result<RunWriter> {
        let writer = RunWriter {
            csv_header: csv::header()?,
            hlog_header: hlog::header(run_start)?,
            dir,
            previous: None,
        };
        atomic::write(&writer.dir.file(RESULTS_CSV), &writer.csv_header)?;
        atomic::write(&writer.dir.file(HISTOGRAMS), &writer.hlog_header)?;
        Ok(writer)
    }

    /// Continues an existing run directory (`run --run-dir`): its files are kept and
    /// appended to, and the manifest merges what it said. Returns the writer and the
    /// run's start time (histogram intervals are offsets from it).
    pub fn append_to(path: &Path) -> Result<(RunWriter, SystemTime)> {
        let dir = RunDir {
            path: path.to_path_buf(),
        };
        let manifest = dir.file(MANIFEST);
        let text = fs::read_to_string(&manifest).with_context(|| {
            format!(
                "{} is not a run directory (no readable {MANIFEST})",
                path.display()
            )
        })?;
        let previous: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", manifest.display()))?;
        for file in [RESULTS_CSV, HISTOGRAMS] {
            if !dir.file(file).is_file() {
                anyhow::bail!("{} is not a run directory (no {file})", path.display());
            }
        }
        let csv_header = csv::header()?;
        let existing = fs::read(dir.file(RESULTS_CSV))
            .with_context(|| format!("cannot read {}", dir.file(RESULTS_CSV).display()))?;
        if !existing.is_empty() && !existing.starts_with(&csv_header) {
            anyhow::bail!(
                "{} has other columns than this nccl-bench writes (made by another version): append to it with that version, or use a new run directory",
                dir.file(RESULTS_CSV).display()
            );
        }
        fs::create_dir_all(dir.logs())
            .with_context(|| format!("cannot create {}", dir.logs().display()))?;
        let start = hlog::start_time(&dir.file(HISTOGRAMS))?.unwrap_or_else(SystemTime::now);
        let writer = RunWriter {
            csv_header,
            hlog_header: hlog::header(start)?,
            dir,
            previous: Some(previous),
        };
        Ok((writer, start))
    }

    /// The manifest of the run appended to, if any.
    pub fn previous_manifest(&self) -> Option<&serde_json::Value> {
        self.previous.as_ref()
    }

    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    pub fn write_manifest(&self, manifest: &RunManifest) -> Result<()> {
        let merged;
        let value = match &self.previous {
            Some(previous) => {
                merged = merge_manifests(previous, serde_json::to_value(manifest)?);
                &merged
            }
            None => &serde_json::to_value(manifest)?,
        };
        let mut text = serde_json::to_vec_pretty(value)?;
        text.push(b'\n');
        atomic::write(&self.dir.file(MANIFEST), &text)
            .with_context(|| format!("cannot write {}", self.dir.file(MANIFEST).display()))
    }

    /// Appends a finished case: its CSV row and, when it has timings, its histogram.
    /// `start` is when the case began, relative to the run's start.
    pub fn record(
        &self,
        result: &CaseResult,
        histogram: Option<&Histogram<u64>>,
        start: Duration,
    ) -> Result<()> {
        if let (Some(h), true) = (histogram, result.latency.is_some()) {
            self.record_histogram(result, h, start)?;
        }
        self.record_row(&csv::RowCells::from(result))
    }

    /// Appends a histogram without a row: the measurement of a case that a later row
    /// replaced or that another row already stands for.
    pub fn record_histogram(
        &self,
        result: &CaseResult,
        histogram: &Histogram<u64>,
        start: Duration,
    ) -> Result<()> {
        self.record_tagged_histogram(
            histogram,
            &result.hist_tag(),
            start,
            Duration::from_secs_f64(result.duration_s),
        )
    }

    /// Appends a histogram under `tag`, for the interval `start` (from the run's
    /// start) to `start + length`.
    pub fn record_tagged_histogram(
        &self,
        histogram: &Histogram<u64>,
        tag: &str,
        start: Duration,
        length: Duration,
    ) -> Result<()> {
        let line = hlog::line(histogram, tag, start, length)?;
        atomic::append(&self.dir.file(HISTOGRAMS), &self.hlog_header, &line)
            .with_context(|| format!("cannot write {}", self.dir.file(HISTOGRAMS).display()))
    }

    /// Replaces each row `old` (as `record` wrote it) by its `new`, in place, in one
    /// atomic rewrite of the file. An error, with nothing changed, when a row is not
    /// there.
    pub fn replace_rows(&self, pairs: &[(csv::RowCells, csv::RowCells)]) -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let path = self.dir.file(RESULTS_CSV);
        let mut text =
            fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        for (old, new) in pairs {
            let old = csv::encode_row(old)?;
            let at = find_line(&text, &old).ok_or_else(|| {
                anyhow::anyhow!("{}: the row to replace is not there", path.display())
            })?;
            text.splice(at..at + old.len(), csv::encode_row(new)?);
        }
        atomic::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Appends a row that has no histogram (an imported result).
    pub fn record_row(&self, cells: &csv::RowCells) -> Result<()> {
        atomic::append(
            &self.dir.file(RESULTS_CSV),
            &self.csv_header,
            &csv::encode_row(cells)?,
        )
        .with_context(|| format!("cannot write {}", self.dir.file(RESULTS_CSV).display()))
    }
}

/// Where `row` (with its newline) starts a line of `text`.
fn find_line(text: &[u8], row: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + row.len() <= text.len() {
        if text[at..].starts_with(row) {
            return Some(at);
        }
        at += text[at..].iter().position(|&b| b == b'\n')? + 1;
    }
    None
}

/// The manifest of a run directory that a `run` appended to: the earlier launches'
/// configs, rank counts, sizes, case counts and warnings, plus this launch's; the
/// start time of the first launch; the rest from this launch. `launches` keeps what
/// each launch alone said (command line, times, status, error, settings, cluster),
/// and an earlier launch that did not complete keeps the run's status from reading
/// `complete`.
pub fn merge_manifests(
    previous: &serde_json::Value,
    current: serde_json::Value,
) -> serde_json::Value {
    use serde_json::Value;
    let this_launch = launch_summary(&current);
    let mut out = current;
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let union = |key: &str, obj: &mut serde_json::Map<String, Value>| {
        let mut values: Vec<Value> = previous[key].as_array().cloned().unwrap_or_default();
        for v in obj
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if !values.contains(&v) {
                values.push(v);
            }
        }
        values.sort_by(|a, b| {
            a.as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        obj.insert(key.to_string(), Value::Array(values));
    };
    union("gpu_counts", obj);
    union("sizes", obj);
    let mut configs: Vec<Value> = previous["configs"].as_array().cloned().unwrap_or_default();
    for c in obj
        .get("configs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        if !configs.iter().any(|p| p["name"] == c["name"]) {
            configs.push(c);
        }
    }
    obj.insert("configs".into(), Value::Array(configs));
    let mut warnings: Vec<Value> = previous["warnings"].as_array().cloned().unwrap_or_default();
    for w in obj
        .get("warnings")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    obj.insert("warnings".into(), Value::Array(warnings));
    if let (Some(prev), Some(Value::Object(cases))) =
        (previous["cases"].as_object(), obj.get_mut("cases"))
    {
        for (k, v) in cases.iter_mut() {
            let sum = v.as_u64().unwrap_or(0) + prev.get(k).and_then(Value::as_u64).unwrap_or(0);
            *v = Value::from(sum);
        }
    }
    if let Some(started) = previous.get("started_at") {
        obj.insert("started_at".into(), started.clone());
    }
    let mut launches: Vec<Value> = match previous["launches"].as_array() {
        Some(earlier) => earlier.clone(),
        None => vec![launch_summary(previous)],
    };
    launches.push(this_launch);
    let unfinished = launches[..launches.len() - 1]
        .iter()
        .map(|l| &l["status"])
        .find(|s| s.as_str().is_some_and(|s| s != "complete"))
        .cloned();
    if let (Some(status), Some("complete")) =
        (unfinished, obj.get("status").and_then(Value::as_str))
    {
        obj.insert("status".into(), status);
    }
    obj.insert("launches".into(), Value::Array(launches));
    out
}

/// What one launch alone said: its command line, times, status, error, settings,
/// cluster, and the names of its configs.
fn launch_summary(m: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let mut l = serde_json::Map::new();
    for key in [
        "command_line",
        "started_at",
        "finished_at",
        "status",
        "error",
        "iterations",
        "warmup_iters",
        "graph_iters",
        "timeout_s",
        "cluster",
    ] {
        if let Some(v) = m.get(key).filter(|v| !v.is_null()) {
            l.insert(key.into(), v.clone());
        }
    }
    let names: Vec<Value> = m["configs"]
        .as_array()
        .map(|cs| cs.iter().map(|c| c["name"].clone()).collect())
        .unwrap_or_default();
    l.insert("configs".into(), Value::Array(names));
    Value::Object(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_are_never_reused() {
        let out = tempfile::tempdir().unwrap();
        let a = RunDir::create(out.path(), "20260101-000000", "node 1", Some("x")).unwrap();
        let b = RunDir::create(out.path(), "20260101-000000", "node 1", Some("x")).unwrap();
        assert!(a.path.ends_with("20260101-000000-node_1-x"));
        assert!(b.path.ends_with("20260101-000000-node_1-x-2"));
        assert!(a.logs().is_dir() && b.logs().is_dir());
    }

    #[test]
    fn an_appended_manifest_keeps_what_earlier_launches_said() {
        let previous = serde_json::json!({
            "started_at": "2026-01-01T00:00:00Z",
            "command_line": ["nccl-bench", "run", "--transports", "default"],
            "configs": [{"name": "default"}],
            "gpu_counts": [4], "sizes": [8, 1024],
            "cases": {"total": 2, "done": 2, "ok": 1, "failed": 1},
            "warnings": ["w1"],
        });
        let current = serde_json::json!({
            "started_at": "2026-01-01T00:05:00Z",
            "command_line": ["nccl-bench", "run", "--transports", "shm-off"],
            "configs": [{"name": "shm-off"}, {"name": "default"}],
            "gpu_counts": [2, 4], "sizes": [8, 4096],
            "cases": {"total": 2, "done": 1, "ok": 1, "failed": 0},
            "warnings": ["w1", "w2"],
            "status": "complete",
        });
        let m = merge_manifests(&previous, current);
        assert_eq!(m["started_at"], "2026-01-01T00:00:00Z");
        assert_eq!(
            m["configs"],
            serde_json::json!([{"name": "default"}, {"name": "shm-off"}])
        );
        assert_eq!(m["gpu_counts"], serde_json::json!([2, 4]));
        assert_eq!(m["sizes"], serde_json::json!([8, 1024, 4096]));
        assert_eq!(
            m["cases"],
            serde_json::json!({"total": 4, "done": 3, "ok": 2, "failed": 1})
        );
        assert_eq!(m["warnings"], serde_json::json!(["w1", "w2"]));
        assert_eq!(m["launches"][0]["command_line"][3], "default");
        assert_eq!(m["launches"][0]["configs"], serde_json::json!(["default"]));
        assert_eq!(
            m["launches"][1]["configs"],
            serde_json::json!(["shm-off", "default"])
        );
        // A third launch after an interrupted second: the earlier launches are kept
        // as they were, and the run does not read as complete.
        let mut second = m.clone();
        second["launches"][1]["status"] = "interrupted".into();
        let third = serde_json::json!({
            "command_line": ["nccl-bench", "run", "--transports", "p2p-off"],
            "configs": [{"name": "p2p-off"}], "status": "complete",
            "cases": {"total": 1}, "gpu_counts": [4], "sizes": [8], "warnings": [],
        });
        let m3 = merge_manifests(&second, third);
        assert_eq!(m3["launches"].as_array().unwrap().len(), 3);
        assert_eq!(m3["status"], "interrupted");
        assert_eq!(m3["cases"]["total"], 5);
        assert_eq!(m["command_line"][3], "shm-off");
        assert_eq!(m["status"], "complete");
    }

    #[test]
    fn appending_needs_a_run_directory() {
        let out = tempfile::tempdir().unwrap();
        let err = RunWriter::append_to(out.path()).err().unwrap();
        assert!(
            format!("{err:#}").contains("is not a run directory"),
            "{err:#}"
        );
    }

    #[test]
    fn an_unwritable_parent_is_a_clear_error() {
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("not-a-dir");
        fs::write(&file, "x").unwrap();
        let err = RunDir::create(&file, "s", "h", None).unwrap_err();
        assert!(
            format!("{err:#}").contains("cannot create output directory"),
            "{err:#}"
        );
    }
}
