//! Where rank 0 of a `run` writes: a new run directory (under --out, or exactly the
//! path given), or one it appends this config to, checked before the rendezvous so
//! that a wrong `--run-dir` fails at once; a run directory is never overwritten.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{bail, Result};

use crate::config::SweepSettings;
use crate::export::{RunDir, RunWriter};
use crate::units::now_stamp;

/// What the run is, as far as its run directory is concerned.
pub struct Asked<'a> {
    pub run_dir: Option<&'a Path>,
    pub pairs: bool,
    /// A soak writes soak.csv and counters.csv: never into another run's directory.
    pub soak: bool,
    pub settings: &'a SweepSettings,
    pub world_size: u32,
    /// The backend this rank resolved, where it could.
    pub backend: Option<&'a str>,
}

pub enum Target {
    New(Option<PathBuf>),
    Append(PathBuf),
}

impl Target {
    pub fn choose(asked: &Asked) -> Result<Target> {
        let Some(dir) = asked.run_dir else {
            return Ok(Target::New(None));
        };
        if !dir.exists() {
            return Ok(Target::New(Some(dir.to_path_buf())));
        }
        if asked.soak {
            bail!(
                "--run-dir {} already exists: a soak writes a run directory of its own (a run directory is never overwritten)",
                dir.display()
            );
        }
        let run = crate::export::reader::RunData::load(dir)?;
        let settings = asked.settings;
        let config = &settings.configs[0].name;
        if asked.pairs {
            if run
                .cases
                .iter()
                .any(|r| crate::config::pair_of(&r.config).is_some_and(|(base, ..)| base == config))
            {
                bail!(
                    "{} already has node pairs of config '{config}': a run directory is never overwritten (use another --run-dir)",
                    dir.display()
                );
            }
        } else if run
            .cases
            .iter()
            .any(|r| &r.config == config && r.nranks == asked.world_size)
        {
            bail!(
                "{} already has config '{config}' at {} ranks: a run directory is never overwritten (use another --run-dir)",
                dir.display(),
                asked.world_size
            );
        }
        let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
            dir.join(crate::export::run_dir::MANIFEST),
        )?)?;
        let same = |key: &str, ours: &str| manifest[key].as_str().is_none_or(|v| v == ours);
        if !same("dtype", settings.dtype.name()) || !same("op", settings.op.name()) {
            bail!(
                "{} holds {} {} results; this run measures {} {} (-d/-o must match to append)",
                dir.display(),
                manifest["dtype"].as_str().unwrap_or("?"),
                manifest["op"].as_str().unwrap_or("?"),
                settings.dtype.name(),
                settings.op.name()
            );
        }
        if let (Some(used), Some(ours)) = (manifest["backend"]["used"].as_str(), asked.backend) {
            if used != ours {
                bail!(
                    "{} holds {used} backend results; this run uses the {ours} backend",
                    dir.display()
                );
            }
        }
        Ok(Target::Append(dir.to_path_buf()))
    }

    /// The run directory's writer and when the run began (an appended run's first
    /// start: histogram intervals are offsets from it).
    pub fn open(self, settings: &SweepSettings, host: &str) -> Result<(RunWriter, SystemTime)> {
        match self {
            Target::New(path) => {
                let dir = match path {
                    Some(path) => RunDir::create_at(&path)?,
                    None => RunDir::create(
                        &settings.out_dir,
                        &now_stamp(),
                        host,
                        settings.label.as_deref(),
                    )?,
                };
                let start = SystemTime::now();
                Ok((RunWriter::new(dir, start)?, start))
            }
            Target::Append(path) => RunWriter::append_to(&path),
        }
    }
}
