//! The run directory (`results/<YYYYmmdd-HHMMSS>-<host>[-label]/`) and the one writer
//! that owns its files. A run directory is created new, never reused: when the name
//! is taken (two runs in the same second), a numeric suffix is added.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;

use super::atomic::{self, AppendFile};
use super::merge::merge_manifests;
use super::{csv, hlog};
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

/// How often a sweep's manifest is rewritten while cases are recorded (it is written
/// at the start and the end regardless): its counts are a summary, results.csv is the
/// record, and rewriting it after every case costs a whole file and an fsync per case.
const MANIFEST_EVERY: Duration = Duration::from_secs(1);

/// Owns the files of a run directory and updates them after every case: rows and
/// histograms are appended in place (one fsync per file and case), the manifest is
/// replaced atomically.
pub struct RunWriter {
    dir: RunDir,
    appends: Mutex<Appends>,
    /// When the manifest was last written (`update_manifest`).
    manifest_at: Mutex<Option<Instant>>,
    /// The manifest of the run being appended to: every manifest written merges it.
    previous: Option<serde_json::Value>,
}

/// The two files that grow a line at a time.
struct Appends {
    csv: AppendFile,
    hlog: AppendFile,
}

impl Appends {
    fn open(dir: &RunDir) -> Result<Appends> {
        let open = |name: &str| {
            let path = dir.file(name);
            AppendFile::open(&path).with_context(|| format!("cannot open {}", path.display()))
        };
        Ok(Appends {
            csv: open(RESULTS_CSV)?,
            hlog: open(HISTOGRAMS)?,
        })
    }
}

impl RunWriter {
    /// Starts the files: a CSV with its header and an empty histogram log, so that a
    /// run interrupted before its first case still has well-formed files.
    pub fn new(dir: RunDir, run_start: SystemTime) -> Result<RunWriter> {
        atomic::write(&dir.file(RESULTS_CSV), &csv::header()?)?;
        atomic::write(&dir.file(HISTOGRAMS), &hlog::header(run_start)?)?;
        Ok(RunWriter {
            appends: Mutex::new(Appends::open(&dir)?),
            dir,
            manifest_at: Mutex::new(None),
            previous: None,
        })
    }

    /// Continues an existing run directory (`run --run-dir`): its files are kept and
    /// appended to (a line a crash left half-written is cut off), and the manifest
    /// merges what it said. Returns the writer and the run's start time (histogram
    /// intervals are offsets from it).
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
        let existing = read_head(&dir.file(RESULTS_CSV), csv_header.len())?;
        if !existing.is_empty() && existing != csv_header {
            anyhow::bail!(
                "{} has other columns than this nccl-bench writes (made by another version): append to it with that version, or use a new run directory",
                dir.file(RESULTS_CSV).display()
            );
        }
        fs::create_dir_all(dir.logs())
            .with_context(|| format!("cannot create {}", dir.logs().display()))?;
        let found_start = hlog::start_time(&dir.file(HISTOGRAMS))?;
        let start = found_start.unwrap_or_else(SystemTime::now);
        let mut appends = Appends::open(&dir)?;
        // A file that a crash left without its header (or empty) gets it first.
        if existing.is_empty() {
            appends.csv.append(&csv_header)?;
        }
        if found_start.is_none() && read_head(&dir.file(HISTOGRAMS), 1)?.is_empty() {
            appends.hlog.append(&hlog::header(start)?)?;
        }
        let writer = RunWriter {
            appends: Mutex::new(appends),
            dir,
            manifest_at: Mutex::new(None),
            previous: Some(previous),
        };
        Ok((writer, start))
    }

    fn appends(&self) -> MutexGuard<'_, Appends> {
        self.appends.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts every row and histogram appended so far on disk.
    fn sync(&self, appends: &mut Appends) -> Result<()> {
        appends
            .hlog
            .sync()
            .with_context(|| format!("cannot write {}", self.dir.file(HISTOGRAMS).display()))?;
        appends
            .csv
            .sync()
            .with_context(|| format!("cannot write {}", self.dir.file(RESULTS_CSV).display()))
    }

    /// The manifest of the run appended to, if any.
    pub fn previous_manifest(&self) -> Option<&serde_json::Value> {
        self.previous.as_ref()
    }

    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// Writes the manifest now (at the start and the end of a run, or when it says
    /// something new), after the rows and histograms recorded so far.
    pub fn write_manifest(&self, manifest: &RunManifest) -> Result<()> {
        self.sync(&mut self.appends())?;
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
            .with_context(|| format!("cannot write {}", self.dir.file(MANIFEST).display()))?;
        *self.manifest_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    }

    /// Writes the manifest if it was last written a second ago or more: what a
    /// sweep calls after each case, so that its counts follow the run without a
    /// rewrite per case. The run's last `write_manifest` brings it up to date.
    pub fn update_manifest(&self, manifest: &RunManifest) -> Result<()> {
        let last = *self.manifest_at.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < MANIFEST_EVERY) {
            return Ok(());
        }
        self.write_manifest(manifest)
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
        self.record_row(&csv::CaseRow::from(result))
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
    /// start) to `start + length`. It reaches the disk with the next row.
    pub fn record_tagged_histogram(
        &self,
        histogram: &Histogram<u64>,
        tag: &str,
        start: Duration,
        length: Duration,
    ) -> Result<()> {
        let line = hlog::line(histogram, tag, start, length)?;
        self.appends()
            .hlog
            .append(&line)
            .with_context(|| format!("cannot write {}", self.dir.file(HISTOGRAMS).display()))
    }

    /// Replaces each row `old` (as `record` wrote it) by its `new`, in place, in one
    /// atomic rewrite of the file. An error, with nothing changed, when a row is not
    /// there.
    pub fn replace_rows(&self, pairs: &[(csv::CaseRow, csv::CaseRow)]) -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let mut appends = self.appends();
        self.sync(&mut appends)?;
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
        atomic::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
        // The rename put a new file in place: append to that one from now on.
        appends.csv =
            AppendFile::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(())
    }

    /// Where results.csv ends now, with every row appended so far on disk: a mark
    /// for [`RunWriter::order_rows_from`].
    pub fn rows_mark(&self) -> Result<u64> {
        let mut appends = self.appends();
        self.sync(&mut appends)?;
        let path = self.dir.file(RESULTS_CSV);
        Ok(fs::metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len())
    }

    /// Puts the rows written after `mark` in the order of `key` (config, collective,
    /// bytes), stably, in one atomic rewrite: the rounds of a sweep complete its
    /// cases in an order drawn afresh, and results.csv lists them in the plan's.
    pub fn order_rows_from<K: Ord>(
        &self,
        mark: u64,
        key: impl Fn(&str, &str, u64) -> K,
    ) -> Result<()> {
        let mut appends = self.appends();
        self.sync(&mut appends)?;
        let path = self.dir.file(RESULTS_CSV);
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let at = usize::try_from(mark).unwrap_or(usize::MAX).min(text.len());
        let (head, tail) = text.split_at(at);
        let header = csv::header()?;
        let column = |name: &str| {
            ::csv::ReaderBuilder::new()
                .from_reader(header.as_slice())
                .headers()
                .ok()
                .and_then(|h| h.iter().position(|c| c == name))
        };
        let (Some(config), Some(collective), Some(bytes)) =
            (column("config"), column("collective"), column("bytes"))
        else {
            anyhow::bail!("results.csv's header lacks config, collective or bytes");
        };
        // Each row's bytes (a quoted field may hold a newline) and its key.
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(tail);
        let mut rows: Vec<(K, usize, usize)> = Vec::new();
        let mut record = ::csv::StringRecord::new();
        let mut start = 0usize;
        while reader
            .read_record(&mut record)
            .with_context(|| format!("{}: a row does not read back", path.display()))?
        {
            let end = usize::try_from(reader.position().byte()).unwrap_or(tail.len());
            let field = |i: usize| record.get(i).unwrap_or("");
            let size = field(bytes).parse().unwrap_or(u64::MAX);
            rows.push((key(field(config), field(collective), size), start, end));
            start = end;
        }
        if rows.windows(2).all(|w| w[0].0 <= w[1].0) {
            return Ok(());
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let mut sorted = head.to_vec();
        for (_, from, to) in &rows {
            sorted.extend_from_slice(&tail[*from..*to]);
        }
        sorted.extend_from_slice(&tail[start..]);
        atomic::write(&path, &sorted)
            .with_context(|| format!("cannot write {}", path.display()))?;
        appends.csv =
            AppendFile::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(())
    }

    /// Appends a row that has no histogram (an imported result), and puts it and
    /// the histograms before it on disk.
    pub fn record_row(&self, cells: &csv::CaseRow) -> Result<()> {
        let mut appends = self.appends();
        appends
            .csv
            .append(&csv::encode_row(cells)?)
            .with_context(|| format!("cannot write {}", self.dir.file(RESULTS_CSV).display()))?;
        self.sync(&mut appends)
    }
}

/// The first `n` bytes of `path` (fewer when it is shorter).
fn read_head(path: &Path, n: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(n);
    fs::File::open(path)
        .and_then(|f| f.take(n as u64).read_to_end(&mut head))
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(head)
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

#[cfg(test)]
mod tests;
