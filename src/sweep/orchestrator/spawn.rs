//! The processes of one group run: the worker spec of each rank (its flags and
//! environment), starting them, cleaning up after them, and what NCCL's logs of the
//! group say (the transports it used, its first error).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::super::failure::Tails;
use super::super::group::{remove_segments, Incoming, WorkerSpec};
use super::super::plan::Group;
use super::{GroupStop, Orchestrator, Takes};
use crate::nccl::log as nccl_log;

impl Orchestrator<'_> {
    pub(super) fn worker_spec(
        &self,
        group: &Group,
        rank: u32,
        prefix: &str,
        log_stem: &str,
    ) -> WorkerSpec {
        let s = self.settings;
        let mut args: Vec<String> = vec!["worker".into()];
        let mut push = |flag: &str, value: String| {
            args.push(flag.to_string());
            args.push(value);
        };
        push("--backend", self.backend.clone());
        push("--rank", rank.to_string());
        push("--nranks", group.nranks.to_string());
        push("--max-bytes", s.max_bytes().to_string());
        push("--datatype", s.dtype.name().to_string());
        push("--op", s.op.name().to_string());
        push("--coll", group.collective.name().to_string());
        push("--root", s.root.to_string());
        push("--shm-dir", s.shm_dir.to_string_lossy().into_owned());
        push("--segment-prefix", prefix.to_string());
        push("--init-timeout", s.timeout.as_secs_f64().to_string());
        push("--case-timeout", s.timeout.as_secs_f64().to_string());
        if s.events_every > 0 {
            push("--events-every", s.events_every.to_string());
        }
        if s.graph > 0 {
            push("--graph", s.graph.to_string());
        }
        if let Some(register) = group.config.register {
            push("--register", register.name().to_string());
        }
        let own = self
            .nccl_lib_per_config
            .iter()
            .find(|(name, _)| name == &group.config.name)
            .map(|(_, p)| p);
        let nccl_lib = own.or(self.nccl_lib.as_ref());
        let mut env = std::collections::BTreeMap::new();
        // A pair of `--pairs` names its devices (GPUs, or cores on the host backend).
        let pair_device = group
            .config
            .devices
            .as_ref()
            .and_then(|d| d.get(rank as usize).copied());
        if let (Some(device), None) = (pair_device, nccl_lib) {
            push("--device", device.to_string());
        }
        // A pair of nodes of `run --pairs` is some of the job's ranks.
        let job_rank = group
            .config
            .ranks
            .as_ref()
            .and_then(|r| r.get(rank as usize).copied())
            .unwrap_or(rank);
        if nccl_lib.is_some() {
            // One process per GPU: the launcher says which of the visible devices.
            let device = pair_device.unwrap_or_else(|| self.launch.device(job_rank));
            push("--device", device.to_string());
            // NCCL's own log per process, read back for the transports it used.
            let prefix = self.writer.dir().logs().join(format!("{log_stem}.nccl"));
            env.insert("NCCL_DEBUG".into(), "INFO".into());
            // SHM: where its buffers live (cuMem host memory or /dev/shm files, 2.23.4+).
            env.insert("NCCL_DEBUG_SUBSYS".into(), "INIT,ENV,SHM".into());
            env.insert("NCCL_DEBUG_FILE".into(), nccl_log::debug_file(&prefix));
        }
        // The config's variables replace inherited ones of the same name (and ours:
        // a config may ask for its own NCCL_DEBUG_SUBSYS).
        env.extend(group.config.env.clone());
        WorkerSpec {
            rank,
            job_rank,
            args,
            env,
            nccl_lib: nccl_lib.map(|p| p.to_string_lossy().into_owned()),
            shm_dir: s.shm_dir.to_string_lossy().into_owned(),
            segment_prefix: prefix.to_string(),
        }
    }

    /// What NCCL's logs of this group say so far: the transports cell, the first
    /// known failure, and whether a connection set-up failed. Empty for the host
    /// backend, which has no NCCL log.
    pub(super) fn nccl_log_findings(&self, log_stem: &str) -> LogFindings {
        match self.nccl_log(log_stem) {
            Some(log) => LogFindings {
                transports: log.transports_cell(),
                error: log.error_cell(),
                setup_failed: log.setup_failure().is_some(),
                nvls_note: log.nvls_note(),
                shm_backing: log.shm_backing.label().unwrap_or_default().to_string(),
                env: log.env,
            },
            None => LogFindings::default(),
        }
    }

    /// The NCCL logs of the processes of `log_stem`, parsed as one; `None` for the
    /// host backend or logs that cannot be read.
    pub(super) fn nccl_log(&self, log_stem: &str) -> Option<nccl_log::NcclLog> {
        self.nccl_lib.as_ref()?;
        let start = format!("{log_stem}.nccl.");
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.writer.dir().logs())
            .map(|it| {
                it.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(&start))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        nccl_log::parse_files(&paths).ok()
    }

    /// Each rank's own log of the processes of `log_stem`.
    pub(super) fn rank_logs(&self, log_stem: &str, nranks: u32) -> Vec<PathBuf> {
        (0..nranks)
            .map(|r| {
                self.writer
                    .dir()
                    .logs()
                    .join(format!("{log_stem}.rank{r}.log"))
            })
            .collect()
    }

    /// Runs `sizes` of one group in fresh processes; `Err` describes an early stop.
    pub(super) fn run_group(
        &mut self,
        group: &Group,
        sizes: &[u64],
        attempt: u32,
        sequence: u32,
        takes: &mut Takes,
    ) -> Result<Option<GroupStop>> {
        let prefix = format!("nccl-bench-{}-{sequence}", std::process::id());
        // `default.n2`, then `.r3` for the third round of several, `.try2` for the
        // processes after a failure.
        let mut suffix = String::new();
        if self.rounds() > 1 {
            suffix.push_str(&format!(".r{}", takes.round));
        }
        if attempt > 1 {
            suffix.push_str(&format!(".try{attempt}"));
        }
        let log_stem = format!("{}{suffix}", group.stem());
        let logs = self.rank_logs(&log_stem, group.nranks);
        let specs = (0..group.nranks)
            .map(|r| self.worker_spec(group, r, &prefix, &log_stem))
            .collect();
        let mut processes = self.launch.start(specs, logs)?;
        let mut tails = Tails::new(group.nranks);
        let outcome = self.drive(
            processes.as_mut(),
            &mut tails,
            group,
            sizes,
            &log_stem,
            takes,
        );
        match &outcome {
            Ok(()) => processes.finish(Duration::from_secs(2)),
            Err(_) => processes.kill(),
        }
        // Lines still queued (the readers are joined now) are part of the evidence.
        for message in processes.drain() {
            if let Incoming::Text(rank, line) = message {
                tails.push(rank, line);
            }
        }
        remove_segments(&self.settings.shm_dir, &prefix);
        Ok(outcome.err().map(|mut f| {
            f.reason = f.failure.describe(self.settings.timeout, &tails);
            let logged = self.nccl_log_findings(&log_stem);
            if let Some(e) = logged.error {
                crate::nccl::log::append_cause(&mut f.reason, &e);
            }
            if !logged.transports.is_empty() {
                f.transports = logged.transports;
            }
            f.in_setup = logged.setup_failed;
            f
        }))
    }
}

/// What a group's NCCL logs say (`Orchestrator::nccl_log_findings`).
#[derive(Debug, Clone, Default)]
pub(super) struct LogFindings {
    pub(super) transports: String,
    pub(super) error: Option<String>,
    /// NCCL failed to set a connection up (`FailureKind::in_connection_setup`).
    pub(super) setup_failed: bool,
    /// NVLS's multicast bind failed: what the case's note says of it.
    pub(super) nvls_note: Option<String>,
    /// Where SHM kept its buffers (`ShmBacking::label`), empty if the log does not say.
    pub(super) shm_backing: String,
    /// The variables NCCL said it read (`NCCL_X set by environment to V`).
    pub(super) env: Vec<(String, String)>,
}
