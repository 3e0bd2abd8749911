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
}

impl RunWriter {
    /// Starts the files: a CSV with its header and an empty histogram log, so that a
    /// run interrupted before its first case still has well-formed files.
    pub fn new(dir: RunDir, run_start: SystemTime) -> Result<RunWriter> {
        let writer = RunWriter {
            csv_header: csv::header()?,
            hlog_header: hlog::header(run_start)?,
            dir,
        };
        atomic::write(&writer.dir.file(RESULTS_CSV), &writer.csv_header)?;
        atomic::write(&writer.dir.file(HISTOGRAMS), &writer.hlog_header)?;
        Ok(writer)
    }

    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    pub fn write_manifest(&self, manifest: &RunManifest) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(manifest)?;
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
            let line = hlog::line(
                h,
                &result.key.tag(),
                start,
                Duration::from_secs_f64(result.duration_s),
            )?;
            atomic::append(&self.dir.file(HISTOGRAMS), &self.hlog_header, &line)
                .with_context(|| format!("cannot write {}", self.dir.file(HISTOGRAMS).display()))?;
        }
        self.record_row(&csv::RowCells::from(result))
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
