//! How the orchestrator reaches the ranks of a case group, whoever started them:
//! `sweep` spawns them as child processes of its own (`process::LocalLaunch`), `run` asks the
//! `nccl-bench run` process of each rank, possibly on another node, to spawn its
//! worker (`cluster::remote`). Both speak the worker protocol and report the same
//! `Incoming` messages, so the measurement loop and its failure handling are one.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command as ProcessCommand;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::protocol::{Command, Event};

/// One worker process to start: its arguments after the executable, the environment
/// it adds, and what belongs to it on its node (its libnccl, its segments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// Its rank in the case group.
    pub rank: u32,
    /// The rank of the cluster job whose process starts it (`run`): the same as
    /// `rank`, except in a group of some of the job's ranks (`run --pairs`).
    pub job_rank: u32,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The libnccl it loads (`--nccl-lib`); a remote node substitutes its own.
    pub nccl_lib: Option<String>,
    /// Directory and name prefix of the shared-memory segments it may leave behind.
    pub shm_dir: String,
    pub segment_prefix: String,
}

impl WorkerSpec {
    /// The command that runs this worker with `exe` and `nccl_lib`.
    pub fn command(&self, exe: &Path, nccl_lib: Option<&Path>) -> ProcessCommand {
        let mut cmd = ProcessCommand::new(exe);
        cmd.args(&self.args);
        if let Some(lib) = nccl_lib {
            cmd.arg("--nccl-lib").arg(lib);
        }
        cmd.envs(&self.env);
        cmd
    }
}

/// What the reader threads pass to the orchestrator.
#[derive(Debug)]
pub enum Incoming {
    Event(u32, Event<'static>),
    /// A line of free text (stderr, or stdout that is not protocol).
    Text(u32, String),
    /// The rank's stdout closed: it exited or is about to.
    Closed(u32),
}

/// The running ranks of one case group.
pub trait RankGroup {
    /// The next message from any rank.
    fn recv_timeout(&mut self, wait: Duration) -> Result<Incoming, RecvTimeoutError>;

    /// Sends a command to one rank.
    fn send(&mut self, rank: u32, command: &Command) -> io::Result<()>;

    fn nranks(&self) -> u32;

    /// Sends a command to every rank; the first rank that cannot take it is returned.
    fn broadcast(&mut self, command: &Command) -> Result<(), u32> {
        for rank in 0..self.nranks() {
            self.send(rank, command).map_err(|_| rank)?;
        }
        Ok(())
    }

    /// How a rank that stopped talking ended, waiting up to `grace` to learn it.
    fn exit_description(&mut self, rank: u32, grace: Duration) -> Option<String>;

    /// Lets every rank exit by itself within `grace`, then kills the rest.
    fn finish(&mut self, grace: Duration);

    /// Kills every rank and waits until they are gone.
    fn kill(&mut self);

    /// Messages that arrived after the group ended (for the failure's evidence).
    fn drain(&mut self) -> Vec<Incoming> {
        let mut out = Vec::new();
        while let Ok(m) = self.recv_timeout(Duration::ZERO) {
            out.push(m);
        }
        out
    }
}

/// Starts the ranks of a case group.
pub trait Launch {
    /// Starts one worker per spec; rank `r`'s free text goes to `logs[r]`.
    fn start(&mut self, specs: Vec<WorkerSpec>, logs: Vec<PathBuf>) -> Result<Box<dyn RankGroup>>;

    /// The CUDA device (among those visible to it) that the job's rank `job_rank`
    /// drives.
    fn device(&self, job_rank: u32) -> usize;
}

/// Removes the shared-memory segments a killed group may have left.
pub fn remove_segments(dir: &Path, prefix: &str) {
    let start = format!("{prefix}-");
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&start) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `...-1` removes its own ranks' segments, not those of group `...-10`, nor
    /// files that merely start alike.
    #[test]
    fn segments_are_removed_by_exact_group_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            "nccl-bench-7-1-r0",
            "nccl-bench-7-1-r1",
            "nccl-bench-7-10-r0",
            "nccl-bench-7-1",
            "other-nccl-bench-7-1-r0",
        ];
        for n in names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        remove_segments(dir.path(), "nccl-bench-7-1");
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "nccl-bench-7-1",
                "nccl-bench-7-10-r0",
                "other-nccl-bench-7-1-r0"
            ]
        );
    }
}
