//! Before an NCCL sweep writes anything, one worker initializes a one-rank
//! communicator with this process's environment and no config's. What fails there
//! fails every case of every config (a driver older than the CUDA runtime libnccl
//! was built for, a GPU the process cannot use, a global NCCL setting that breaks
//! the bootstrap), so it is one line with NCCL's own last error, a hint and exit 2,
//! not a run directory full of failed cases. What fails only with a config's
//! variables, or only with several ranks, stays a failed case: that is data.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::group::Incoming;
use super::process::{describe_exit, ProcessGroup};
use super::protocol::Event;
use crate::model::NcclChoice;
use crate::nccl::explain::{self, cuda_hint, Severity};
use crate::nccl::log as nccl_log;

/// Where the NCCL library was found and which GPU is tried, for the message.
pub struct Target<'a> {
    pub exe: &'a Path,
    pub nccl_lib: &'a Path,
    pub device: usize,
}

/// Everything a sweep needs from one libnccl before it starts: graph support when
/// `--graph` asks for it, and a one-rank communicator that comes up.
pub fn check_library(
    target: &Target,
    nccl: &NcclChoice,
    graph: u64,
    timeout: Duration,
) -> Result<()> {
    check_graph_support(nccl, graph)?;
    check_nccl_init(target, timeout)
}

/// Initializes one rank on `target.device` in a worker process and shuts it down.
pub fn check_nccl_init(target: &Target, timeout: Duration) -> Result<()> {
    let scratch = Scratch::new()?;
    let log = nccl_log::debug_file(&scratch.path().join("nccl"));
    let mut cmd = Command::new(target.exe);
    cmd.args([
        "worker",
        "--backend",
        "nccl",
        "--rank",
        "0",
        "--nranks",
        "1",
    ])
    .args(["--max-bytes", "4", "--datatype", "float", "--op", "sum"])
    .args([
        "--shm-dir",
        "/dev/shm",
        "--segment-prefix",
        "nccl-bench-preflight",
    ])
    .arg("--nccl-lib")
    .arg(target.nccl_lib)
    .args(["--device", &target.device.to_string()])
    .args(["--init-timeout", &timeout.as_secs_f64().to_string()])
    .env("NCCL_DEBUG", "WARN")
    .env("NCCL_DEBUG_FILE", &log)
    .env_remove(super::fault::ENV);
    let outcome = init_outcome(cmd, scratch.path().join("worker.log"), timeout);
    let Err(message) = outcome else {
        return Ok(());
    };
    let log = read_nccl_logs(scratch.path());
    bail!(
        "NCCL cannot initialize even one rank on GPU {} with {}: {message}; hint: {}",
        target.device,
        target.nccl_lib.display(),
        hint(&message, &log)
    )
}

/// A folder for the worker's logs, removed with everything in it when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("nccl-bench-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Scratch(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// NCCL captures collectives into CUDA graphs from 2.9.6, but mixing graph launches
/// with eager all-reduces on one communicator (the untimed all-reduce before each
/// capture, warm-up, the alignment all-reduce of every batch) is declared supported
/// only from 2.13 (`NCCL_GRAPH_MIXING_SUPPORT`), so `--graph` needs 2.13.
pub fn check_graph_support(nccl: &NcclChoice, graph: u64) -> Result<()> {
    let version: Vec<u32> = nccl
        .version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    if graph > 0 && version.as_slice() < [2, 13, 0].as_slice() {
        bail!(
            "--graph needs NCCL 2.13 or newer (graph-launched and eager all-reduces on one communicator); {} is NCCL {}: use a newer libnccl with --nccl-lib, or leave --graph out",
            nccl.path.display(),
            nccl.version
        );
    }
    Ok(())
}

/// Runs the worker until its communicator is up (Ok) or it fails (the reason).
fn init_outcome(cmd: Command, worker_log: PathBuf, timeout: Duration) -> Result<(), String> {
    let mut group =
        ProcessGroup::spawn(vec![cmd], vec![worker_log]).map_err(|e| format!("{e:#}"))?;
    let deadline = Instant::now() + timeout;
    let mut last_text = String::new();
    let outcome = loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match group.incoming.recv_timeout(wait) {
            Ok(Incoming::Event(_, Event::Ready { .. })) => break Ok(()),
            Ok(Incoming::Event(_, Event::Error { message, .. })) => break Err(message),
            Ok(Incoming::Event(..)) => {}
            Ok(Incoming::Text(_, line)) => last_text = line,
            Ok(Incoming::Closed(_)) => {
                let how = group
                    .exit_status(0, Duration::from_secs(2))
                    .map(describe_exit)
                    .unwrap_or_else(|| "closed its output".into());
                // Its stderr may still be on the way: the readers end with the process.
                group.kill();
                for message in group.incoming.try_iter() {
                    if let Incoming::Text(_, line) = message {
                        last_text = line;
                    }
                }
                let said = if last_text.trim().is_empty() {
                    String::new()
                } else {
                    format!(" after printing '{}'", last_text.trim())
                };
                break Err(format!(
                    "the worker {how}{said} before its communicator was up"
                ));
            }
            Err(RecvTimeoutError::Timeout) => {
                break Err(format!(
                    "the communicator was not up after {:.0} s (ncclCommInitRank hangs)",
                    timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => break Err("the worker vanished".into()),
        }
    };
    match outcome {
        Ok(()) => group.finish(Duration::from_secs(5)),
        Err(_) => group.kill(),
    }
    outcome
}

/// The NCCL logs the worker left in `dir`, parsed as one.
fn read_nccl_logs(dir: &Path) -> nccl_log::NcclLog {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("nccl."))
    });
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    nccl_log::parse_files(&paths).unwrap_or_else(|_| nccl_log::parse(""))
}

/// What to do about it: `explain`'s fix for the first error NCCL logged, else what
/// the quoted CUDA error usually means, else where to look.
pub fn hint(message: &str, log: &nccl_log::NcclLog) -> String {
    let explained = explain::explain(log);
    if let Some(f) = explained
        .findings
        .iter()
        .find(|f| f.severity == Severity::Error)
    {
        return one_line(&f.fix);
    }
    if let Some(h) = cuda_hint(message) {
        return h.to_string();
    }
    "run `nccl-bench doctor` for this machine's GPUs, /dev/shm and network, and rerun with NCCL_DEBUG=INFO to see where NCCL stops".to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_worker(script: &str, timeout: Duration) -> Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        init_outcome(cmd, dir.path().join("worker.log"), timeout)
    }

    const HELLO: &str = r#"echo '{"event":"hello","rank":0,"pid":1,"host":"h"}'"#;

    #[test]
    fn a_communicator_that_comes_up_passes() {
        let script = format!(
            r#"{HELLO}; echo '{{"event":"ready","transports":"","detail":"GPU 0"}}'; cat >/dev/null"#
        );
        assert_eq!(fake_worker(&script, Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn the_workers_error_is_the_reason() {
        let script = format!(
            r#"{HELLO}; echo '{{"event":"error","message":"communicator initialization failed: boom"}}'; sleep 30"#
        );
        let started = Instant::now();
        assert_eq!(
            fake_worker(&script, Duration::from_secs(10)),
            Err("communicator initialization failed: boom".into())
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "killed, not waited for"
        );
    }

    #[test]
    fn a_worker_that_dies_quietly_is_described() {
        let err = fake_worker(
            "echo 'symbol lookup error' >&2; exit 3",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.contains("exited with status 3"), "{err}");
        assert!(err.contains("'symbol lookup error'"), "{err}");
    }

    #[test]
    fn a_hanging_init_times_out() {
        let err =
            fake_worker(&format!("{HELLO}; sleep 30"), Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("not up after"), "{err}");
    }

    #[test]
    fn graphs_need_nccl_2_13() {
        let lib = |version: &str| NcclChoice {
            path: "/x/libnccl.so.2".into(),
            version: version.into(),
            found_by: "test".into(),
            simulated: false,
        };
        for old in ["2.8.4", "2.9.6", "2.12.12", "2.9"] {
            let err = check_graph_support(&lib(old), 20).unwrap_err().to_string();
            assert!(
                err.contains(&format!("/x/libnccl.so.2 is NCCL {old}")),
                "{err}"
            );
        }
        for new in ["2.13.4", "2.21.5", "3.0.0"] {
            check_graph_support(&lib(new), 20).unwrap();
        }
        check_graph_support(&lib("2.8.4"), 0).unwrap();
    }

    #[test]
    fn the_hint_comes_from_nccls_log_then_from_the_cuda_error() {
        let log = nccl_log::parse(
            "h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
             h:1:1 [0] include/shm.h:28 NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes, error: No space left on device (28)\n",
        );
        let h = hint("ncclCommInitRank failed", &log);
        assert!(h.contains("--shm-size"), "{h}");
        assert!(!h.contains('\n'), "one line: {h}");

        let empty = nccl_log::parse("");
        let h = hint(
            "last error: Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
            &empty,
        );
        assert!(h.contains("driver is older than the CUDA runtime"), "{h}");
        assert!(hint("something else", &empty).contains("nccl-bench doctor"));
    }
}
