//! A soak's files in its run directory: `soak.csv` (one row per interval: its
//! iterations, latency percentiles and bandwidth), `counters.csv` (the counters read
//! beside the traffic, one row per interval, source and counter whose value changed
//! since that counter's last row: carry a value forward until its next row) and
//! `soak.hlog` (each interval's latency histogram, tagged with its case). The three
//! files grow a whole line at a time through an open handle (never copied: a soak
//! of hours must not rewrite its past every second), so a crash leaves every
//! finished interval readable; the CSV readers skip a last line cut short.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::hlog;

pub const SOAK_CSV: &str = "soak.csv";
pub const COUNTERS_CSV: &str = "counters.csv";
pub const SOAK_HLOG: &str = "soak.hlog";

/// One interval of a soak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakRow {
    pub config: String,
    pub nranks: u32,
    pub collective: String,
    pub bytes: u64,
    /// 0-based, within this config's soak.
    pub interval: u64,
    /// Seconds since the run started.
    pub start_s: f64,
    pub end_s: f64,
    /// Collectives completed in the interval (0: a stall).
    pub iterations: u64,
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}

/// One counter's value at one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterRow {
    /// Seconds since the run started, when it was read.
    pub t_s: f64,
    /// The host it was read on.
    pub node: String,
    pub source: String,
    pub counter: String,
    /// `count`, `gauge` or `flag` (`machine::counters::Kind`).
    pub kind: String,
    pub value: f64,
}

/// Appends whole lines to one CSV, its header first.
struct Lines {
    path: PathBuf,
    file: Mutex<File>,
}

impl Lines {
    fn create(path: PathBuf, header: &[&str]) -> Result<Lines> {
        Lines::create_raw(path, format!("{}\n", header.join(",")).as_bytes())
    }

    /// A new file (never one that exists) starting with `header`.
    fn create_raw(path: PathBuf, header: &[u8]) -> Result<Lines> {
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        file.write_all(header)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Lines {
            path,
            file: Mutex::new(file),
        })
    }

    /// Appends whole lines in one write, flushed.
    fn write(&self, bytes: &[u8]) -> Result<()> {
        let mut file = self.file.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        file.write_all(bytes)
            .and_then(|_| file.flush())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    fn append<T: Serialize>(&self, rows: &[T]) -> Result<()> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
        self.write(&bytes)
    }
}

const SOAK_COLUMNS: [&str; 14] = [
    "config",
    "nranks",
    "collective",
    "bytes",
    "interval",
    "start_s",
    "end_s",
    "iterations",
    "mean_us",
    "p50_us",
    "p99_us",
    "max_us",
    "algbw_gbps",
    "busbw_gbps",
];

const COUNTER_COLUMNS: [&str; 6] = ["t_s", "node", "source", "counter", "kind", "value"];

/// The writer of a soak's three files (created, never overwritten).
pub struct SoakWriter {
    soak: Lines,
    counters: Lines,
    hlog: Lines,
}

impl SoakWriter {
    pub fn create(dir: &Path, run_start: SystemTime) -> Result<SoakWriter> {
        // The CSVs first: they refuse to replace a file.
        let soak = Lines::create(dir.join(SOAK_CSV), &SOAK_COLUMNS)?;
        let counters = Lines::create(dir.join(COUNTERS_CSV), &COUNTER_COLUMNS)?;
        let hlog = Lines::create_raw(dir.join(SOAK_HLOG), &hlog::header(run_start)?)?;
        Ok(SoakWriter {
            soak,
            counters,
            hlog,
        })
    }

    /// An interval: its row and, when it has iterations, its histogram under `tag`.
    pub fn interval(
        &self,
        row: &SoakRow,
        histogram: Option<&Histogram<u64>>,
        tag: &str,
    ) -> Result<()> {
        if let Some(h) = histogram.filter(|h| !h.is_empty()) {
            let start = Duration::from_secs_f64(row.start_s.max(0.0));
            let length = Duration::from_secs_f64((row.end_s - row.start_s).max(0.0));
            self.hlog.write(&hlog::line(h, tag, start, length)?)?;
        }
        self.soak.append(std::slice::from_ref(row))
    }

    pub fn counters(&self, rows: &[CounterRow]) -> Result<()> {
        self.counters.append(rows)
    }
}

/// Keeps only the rows whose value changed since that (node, source, counter)'s
/// last one, as `counters.csv` stores them.
#[derive(Debug, Default)]
pub struct ChangesOnly {
    last: HashMap<(String, String, String), f64>,
}

impl ChangesOnly {
    pub fn keep(&mut self, rows: Vec<CounterRow>) -> Vec<CounterRow> {
        rows.into_iter()
            .filter(|r| {
                let key = (r.node.clone(), r.source.clone(), r.counter.clone());
                self.last.insert(key, r.value) != Some(r.value)
            })
            .collect()
    }
}

fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // A line cut short by a crash is not a row.
    let whole = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    let mut reader = csv::Reader::from_reader(whole.as_bytes());
    let mut rows = Vec::new();
    for (i, r) in reader.deserialize().enumerate() {
        match r {
            Ok(row) => rows.push(row),
            Err(e) => bail!("{} line {}: {e}", path.display(), i + 2),
        }
    }
    Ok(rows)
}

/// `soak.csv` of a run directory; `None` when the run is not a soak.
pub fn read_soak(dir: &Path) -> Result<Option<Vec<SoakRow>>> {
    let path = dir.join(SOAK_CSV);
    if !path.is_file() {
        return Ok(None);
    }
    read_rows(&path).map(Some)
}

/// `counters.csv` of a run directory (empty when absent).
pub fn read_counters(dir: &Path) -> Result<Vec<CounterRow>> {
    let path = dir.join(COUNTERS_CSV);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    read_rows(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u64) -> SoakRow {
        SoakRow {
            config: "default".into(),
            nranks: 2,
            collective: "all_reduce".into(),
            bytes: 1 << 20,
            interval: i,
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            iterations: 10,
            mean_us: Some(5.0),
            p50_us: Some(5.0),
            p99_us: None,
            max_us: Some(6.0),
            algbw_gbps: 1.0,
            busbw_gbps: 1.0,
        }
    }

    #[test]
    fn rows_read_back_and_a_cut_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let w = SoakWriter::create(dir.path(), SystemTime::now()).unwrap();
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(5000).unwrap();
        w.interval(&row(0), Some(&h), "default/n2").unwrap();
        w.interval(&row(1), None, "default/n2").unwrap();
        let c = |v| CounterRow {
            t_s: 1.0,
            node: "n1".into(),
            source: "gpu0".into(),
            counter: "power_w".into(),
            kind: "gauge".into(),
            value: v,
        };
        let mut changes = ChangesOnly::default();
        let kept = changes.keep(vec![c(1.0)]);
        assert_eq!(changes.keep(vec![c(1.0)]), vec![]);
        assert_eq!(changes.keep(vec![c(2.0)]).len(), 1);
        w.counters(&kept).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(SOAK_CSV))
            .unwrap();
        f.write_all(b"default,2,all_re").unwrap();
        let back = read_soak(dir.path()).unwrap().unwrap();
        assert_eq!(back, vec![row(0), row(1)]);
        assert_eq!(read_counters(dir.path()).unwrap(), kept);
        assert!(
            SoakWriter::create(dir.path(), SystemTime::now()).is_err(),
            "never overwritten"
        );
        let hlog = std::fs::read_to_string(dir.path().join(SOAK_HLOG)).unwrap();
        assert_eq!(hlog.lines().filter(|l| l.starts_with("Tag=")).count(), 1);
    }
}
