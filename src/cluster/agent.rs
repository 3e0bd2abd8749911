//! The agent: what the `nccl-bench run` process of a rank does once it has joined
//! rank 0. For every case group rank 0 starts, it spawns this rank's worker as a
//! child (in its own process group, killed with the agent), relays the worker's
//! stdout and stderr up and rank 0's commands down, forwards the lines NCCL writes
//! to its debug file on this node, and reports how the worker ended. It exits when
//! rank 0 says the run is done, or kills its worker and exits when rank 0 is gone.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Result};

use super::counters::{sample, NodeCounters};
use super::wire::{self, Down, Up};
use crate::sweep::group::Incoming;
use crate::sweep::group::{remove_segments, WorkerSpec};
use crate::sweep::process::{describe_exit, ProcessGroup};

/// Shared by the agent's threads: the connection to rank 0.
pub type Link = Arc<Mutex<Box<dyn Write + Send>>>;

/// How rank 0 ended the run for this agent: the exit code and what to print.
pub type Outcome = (u8, Option<String>);

/// What an agent knows about its node.
pub struct AgentContext {
    pub rank: u32,
    /// The executable that runs `worker` (this binary).
    pub exe: PathBuf,
    /// This node's libnccl (used when rank 0 asks for the NCCL backend).
    pub nccl_lib: Option<PathBuf>,
    /// A node-local directory for the worker's log and NCCL's debug files.
    pub scratch: PathBuf,
    /// Where this node's counter files are read (`--counters-root`; `/` when none).
    pub counters_root: Option<PathBuf>,
}

enum Input {
    Down(Down),
    /// The connection to rank 0 closed or broke.
    Lost(String),
    /// The worker of group `seq` closed its stdout.
    WorkerClosed(u32),
}

/// The worker of the current group.
struct Running {
    seq: u32,
    group: ProcessGroup,
    forwarder: Option<JoinHandle<()>>,
    tail: Arc<Mutex<NcclTail>>,
    spec: WorkerSpec,
    exit_reported: bool,
}

/// Serves rank 0 until it says the run is done; returns the exit code and message
/// it gave. An error means rank 0 was lost.
pub fn serve(
    ctx: &AgentContext,
    reader: impl BufRead + Send + 'static,
    link: Link,
) -> Result<Outcome> {
    let (tx, rx) = mpsc::channel();
    let reader_tx = tx.clone();
    std::thread::spawn(move || read_downs(reader, reader_tx));
    let mut running: Option<Running> = None;
    let stop_counters = Arc::new(AtomicBool::new(false));
    let result = serve_inputs(ctx, &rx, &tx, &link, &mut running, &stop_counters);
    // The counters' thread, if any, ends with the run.
    stop_counters.store(true, Ordering::SeqCst);
    if let Some(r) = running.take() {
        stop_within(r, &link, |g| g.kill(), Duration::ZERO);
    }
    result
}

fn read_downs(mut reader: impl BufRead, tx: Sender<Input>) {
    let mut line = String::new();
    loop {
        let input = match wire::receive::<Down>(&mut reader, &mut line) {
            Ok(Some(d)) => Input::Down(d),
            Ok(None) => Input::Lost("the connection closed".into()),
            Err(e) => Input::Lost(e.to_string()),
        };
        let last = matches!(input, Input::Lost(_) | Input::Down(Down::Done { .. }));
        if tx.send(input).is_err() || last {
            return;
        }
    }
}

fn serve_inputs(
    ctx: &AgentContext,
    rx: &Receiver<Input>,
    tx: &Sender<Input>,
    link: &Link,
    running: &mut Option<Running>,
    stop_counters: &Arc<AtomicBool>,
) -> Result<Outcome> {
    let mut sampling = false;
    loop {
        let input = rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the connection to rank 0 broke"))?;
        match input {
            Input::Down(Down::Spawn { seq, spec }) => {
                if let Some(r) = running.take() {
                    stop_within(r, link, |g| g.kill(), Duration::ZERO);
                }
                match start(ctx, seq, *spec, link, tx) {
                    Ok(r) => *running = Some(r),
                    Err(e) => send_up(
                        link,
                        &Up::SpawnFailed {
                            seq,
                            message: format!("{e:#}"),
                        },
                    ),
                }
            }
            Input::Down(Down::Worker { command }) => {
                if let Some(r) = running.as_mut() {
                    // A worker that cannot take it has died; its stdout closing says so.
                    let _ = r.group.send(0, &command);
                }
            }
            Input::Down(Down::Finish { grace_ms }) => {
                if let Some(r) = running.take() {
                    let grace = Duration::from_millis(grace_ms);
                    stop_within(r, link, move |g| g.finish(grace), grace);
                }
            }
            Input::Down(Down::Kill) => {
                if let Some(r) = running.take() {
                    stop_within(r, link, |g| g.kill(), Duration::ZERO);
                }
            }
            Input::Down(Down::Counters {
                interval_ms,
                own,
                gpus,
            }) => {
                // One thread per agent, however often rank 0 asks.
                if !sampling {
                    sampling = true;
                    let what = NodeCounters {
                        interval: Duration::from_millis(interval_ms.max(1)),
                        own,
                        gpus,
                        root: ctx.counters_root.clone(),
                    };
                    let (link, stop) = (link.clone(), stop_counters.clone());
                    std::thread::spawn(move || sample(what, stop, |up| send_up(&link, up)));
                }
            }
            Input::Down(Down::Done { code, message }) => return Ok((code, message)),
            Input::Down(other) => bail!("unexpected message from rank 0: {other:?}"),
            Input::WorkerClosed(seq) => {
                if let Some(r) = running.as_mut().filter(|r| r.seq == seq) {
                    // Say how it ended now: rank 0 is waiting to describe the failure.
                    if let Some(status) = r.group.exit_status(0, Duration::from_secs(2)) {
                        let how = describe_exit(status);
                        send_up(link, &Up::Exited { seq, how });
                        r.exit_reported = true;
                    }
                }
            }
            Input::Lost(why) => bail!("lost rank 0: {why}"),
        }
    }
}

fn send_up(link: &Link, message: &Up) {
    if let Ok(mut w) = link.lock() {
        // A broken link shows up on the reading side, which ends the agent.
        let _ = wire::send(&mut *w, message);
    }
}

fn start(
    ctx: &AgentContext,
    seq: u32,
    spec: WorkerSpec,
    link: &Link,
    tx: &Sender<Input>,
) -> Result<Running> {
    let nccl_lib = match (&spec.nccl_lib, &ctx.nccl_lib) {
        (None, _) => None,
        (Some(_), Some(own)) => Some(own.as_path()),
        (Some(_), None) => bail!("rank 0 asked for NCCL but this node has no libnccl"),
    };
    let mut cmd = spec.command(&ctx.exe, nccl_lib);
    // NCCL writes its debug log on this node; the agent forwards it to rank 0.
    let mut tail = NcclTail::default();
    // Each group's NCCL files in their own folder: a retry never re-reads the last's.
    let scratch = ctx.scratch.join(format!("group{seq}"));
    std::fs::create_dir_all(&scratch)?;
    if let Some(file) = spec.env.get("NCCL_DEBUG_FILE") {
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "nccl.%h.%p.log".into());
        tail.prefix = name.split('%').next().unwrap_or_default().to_string();
        tail.dir = scratch.clone();
        cmd.env("NCCL_DEBUG_FILE", scratch.join(name));
    }
    let log = scratch.join(format!("rank{}.log", ctx.rank));
    let mut group = ProcessGroup::spawn(vec![cmd], vec![log])?;
    let incoming = std::mem::replace(&mut group.incoming, mpsc::channel().1);
    let tail = Arc::new(Mutex::new(tail));
    let forwarder = {
        let (link, tail, tx) = (link.clone(), tail.clone(), tx.clone());
        std::thread::spawn(move || forward(seq, incoming, &link, &tail, &tx))
    };
    Ok(Running {
        seq,
        group,
        forwarder: Some(forwarder),
        tail,
        spec,
        exit_reported: false,
    })
}

/// Relays the worker's lines to rank 0, NCCL's new log lines first (so that rank 0
/// has the log of a collective when it hears the collective finished).
fn forward(
    seq: u32,
    incoming: Receiver<Incoming>,
    link: &Link,
    tail: &Mutex<NcclTail>,
    tx: &Sender<Input>,
) {
    for message in incoming {
        flush_nccl_log(seq, link, tail);
        match message {
            Incoming::Event(_, event) => {
                if let Ok(line) = serde_json::to_string(&event) {
                    send_up(link, &Up::Out { seq, line });
                }
            }
            Incoming::Text(_, line) => send_up(link, &Up::Err { seq, line }),
            Incoming::Closed(_) => {
                send_up(link, &Up::Closed { seq });
                let _ = tx.send(Input::WorkerClosed(seq));
            }
        }
    }
}

fn flush_nccl_log(seq: u32, link: &Link, tail: &Mutex<NcclTail>) {
    let Ok(mut tail) = tail.lock() else { return };
    for (file, lines) in tail.poll() {
        send_up(link, &Up::NcclLog { seq, file, lines });
    }
}

/// How long past its grace a worker may take to be killed and reaped (its output
/// pipes closed) before the agent gives up on it.
pub const REAP_LIMIT: Duration = Duration::from_secs(10);

/// `stop`, but never longer than `grace` plus `REAP_LIMIT`: a worker stuck in the
/// kernel (a GPU driver failure) or a child of it holding its pipes must not keep
/// the agent, and so the rank's `run` process, from going on or exiting.
fn stop_within(
    r: Running,
    link: &Link,
    how: impl FnOnce(&mut ProcessGroup) + Send + 'static,
    grace: Duration,
) {
    let seq = r.seq;
    let (done_tx, done_rx) = mpsc::channel();
    let thread_link = link.clone();
    std::thread::spawn(move || {
        stop(r, &thread_link, how);
        let _ = done_tx.send(());
    });
    let limit = grace + REAP_LIMIT;
    if done_rx.recv_timeout(limit).is_err() {
        let how = format!(
            "could not be stopped within {} s (stuck in the kernel, or a child of it holds its output); left behind",
            limit.as_secs()
        );
        send_up(link, &Up::Exited { seq, how });
    }
}

/// Stops the worker with `how` (finish or kill), sends what is left of its output
/// and NCCL log, says how it ended, and removes its shared-memory segments.
fn stop(mut r: Running, link: &Link, how: impl FnOnce(&mut ProcessGroup)) {
    how(&mut r.group);
    // The readers are joined: the forwarder sees the end of its channel.
    if let Some(f) = r.forwarder.take() {
        let _ = f.join();
    }
    flush_nccl_log(r.seq, link, &r.tail);
    if !r.exit_reported {
        let how = r
            .group
            .exit_status(0, Duration::ZERO)
            .map(describe_exit)
            .unwrap_or_else(|| "was stopped".into());
        send_up(link, &Up::Exited { seq: r.seq, how });
    }
    remove_segments(Path::new(&r.spec.shm_dir), &r.spec.segment_prefix);
}

/// Reads what NCCL appended to its debug files (one per process, named from a
/// common prefix) since the last poll, whole lines only.
#[derive(Default)]
struct NcclTail {
    dir: PathBuf,
    prefix: String,
    offsets: BTreeMap<String, u64>,
}

impl NcclTail {
    fn poll(&mut self) -> Vec<(String, Vec<String>)> {
        if self.prefix.is_empty() {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&self.prefix) {
                continue;
            }
            let offset = self.offsets.entry(name.clone()).or_insert(0);
            if let Ok((lines, consumed)) = read_new_lines(&entry.path(), *offset) {
                *offset += consumed;
                if !lines.is_empty() {
                    out.push((name, lines));
                }
            }
        }
        out
    }
}

/// The complete lines after `offset`, and how many bytes they took.
fn read_new_lines(path: &Path, offset: u64) -> io::Result<(Vec<String>, u64)> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let text = String::from_utf8_lossy(&bytes[..complete]);
    let lines = text.lines().map(str::to_string).collect();
    Ok((lines, complete as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;
    use std::os::unix::net::UnixStream;

    /// An agent driven like rank 0 drives it, with `sh` standing in for the worker:
    /// the worker writes NCCL's debug file and one protocol event; rank 0 must get
    /// the log lines first, then the event, then the end of the worker.
    #[test]
    fn the_agent_relays_the_worker_and_nccl_log_in_order() {
        let scratch = tempfile::tempdir().unwrap();
        let ctx = AgentContext {
            rank: 1,
            exe: PathBuf::from("/bin/sh"),
            nccl_lib: None,
            scratch: scratch.path().to_path_buf(),
            counters_root: None,
        };
        let script = r#"f=$(printf %s "$NCCL_DEBUG_FILE" | sed 's/%h/node7/; s/%p/42/'); printf 'node7:42:42 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n' > "$f"; printf '{"event":"bye"}\n'"#;
        let spec = WorkerSpec {
            rank: 1,
            job_rank: 1,
            args: vec!["-c".into(), script.into()],
            env: [(
                "NCCL_DEBUG_FILE".to_string(),
                "/run-dir/logs/default.n2.nccl.%h.%p.log".to_string(),
            )]
            .into(),
            nccl_lib: None,
            shm_dir: scratch.path().to_string_lossy().into_owned(),
            segment_prefix: "none".into(),
        };
        let (ours, theirs) = UnixStream::pair().unwrap();
        let reader = BufReader::new(theirs.try_clone().unwrap());
        let link: Link = Arc::new(Mutex::new(Box::new(theirs)));
        let agent = std::thread::spawn(move || serve(&ctx, reader, link));
        let mut down = ours.try_clone().unwrap();
        wire::send(
            &mut down,
            &Down::Spawn {
                seq: 3,
                spec: Box::new(spec),
            },
        )
        .unwrap();
        let mut up = BufReader::new(ours);
        let mut line = String::new();
        let mut seen = Vec::new();
        while let Some(m) = wire::receive::<Up>(&mut up, &mut line).unwrap() {
            let closed = matches!(m, Up::Closed { .. });
            seen.push(m);
            if closed {
                break;
            }
        }
        assert_eq!(
            seen,
            vec![
                Up::NcclLog {
                    seq: 3,
                    file: "default.n2.nccl.node7.42.log".into(),
                    lines: vec![
                        "node7:42:42 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"
                            .into()
                    ],
                },
                Up::Out {
                    seq: 3,
                    line: r#"{"event":"bye"}"#.into()
                },
                Up::Closed { seq: 3 },
            ]
        );
        let exited = wire::receive::<Up>(&mut up, &mut line).unwrap();
        assert_eq!(
            exited,
            Some(Up::Exited {
                seq: 3,
                how: "exited with status 0".into()
            })
        );
        wire::send(
            &mut down,
            &Down::Done {
                code: 1,
                message: None,
            },
        )
        .unwrap();
        assert_eq!(agent.join().unwrap().unwrap(), (1, None));
    }

    /// Asked for its node's counters, the agent sends a reading every interval, of
    /// the files under its counters root, until the run is done.
    #[test]
    fn the_agent_sends_its_nodes_counters_until_the_run_is_done() {
        let scratch = tempfile::tempdir().unwrap();
        let port = scratch.path().join("sys/class/infiniband/mlx5_0/ports/1");
        std::fs::create_dir_all(port.join("counters")).unwrap();
        std::fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
        std::fs::write(port.join("counters/symbol_error"), "7\n").unwrap();
        let ctx = AgentContext {
            rank: 2,
            exe: PathBuf::from("/bin/sh"),
            nccl_lib: None,
            scratch: scratch.path().to_path_buf(),
            counters_root: Some(scratch.path().to_path_buf()),
        };
        let (ours, theirs) = UnixStream::pair().unwrap();
        let reader = BufReader::new(theirs.try_clone().unwrap());
        let link: Link = Arc::new(Mutex::new(Box::new(theirs)));
        let agent = std::thread::spawn(move || serve(&ctx, reader, link));
        let mut down = ours.try_clone().unwrap();
        let ask = Down::Counters {
            interval_ms: 100,
            own: vec![std::process::id()],
            gpus: None,
        };
        // Asked twice: still one reading per interval.
        wire::send(&mut down, &ask).unwrap();
        wire::send(&mut down, &ask).unwrap();
        let mut up = BufReader::new(ours);
        let mut line = String::new();
        let started = std::time::Instant::now();
        let mut readings = Vec::new();
        while readings.len() < 3 {
            match wire::receive::<Up>(&mut up, &mut line).unwrap() {
                Some(Up::Counters {
                    readings: r, notes, ..
                }) => {
                    if readings.is_empty() {
                        // The other four counters of the port are missing, said once.
                        assert!(notes.iter().any(|n| n.contains("link_downed")), "{notes:?}");
                    } else {
                        assert!(notes.is_empty(), "{notes:?}");
                    }
                    readings.push(r);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // Three readings 100 ms apart: about 200 ms, not 100 (a second thread).
        assert!(started.elapsed() >= Duration::from_millis(180));
        for r in &readings {
            assert!(r.contains(&crate::machine::counters::Reading::new(
                "mlx5_0:1",
                "symbol_error",
                7.0,
                crate::machine::counters::Kind::Count
            )));
        }
        wire::send(
            &mut down,
            &Down::Done {
                code: 0,
                message: None,
            },
        )
        .unwrap();
        assert_eq!(agent.join().unwrap().unwrap(), (0, None));
    }

    #[test]
    fn the_tail_returns_whole_new_lines_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut tail = NcclTail {
            dir: dir.path().to_path_buf(),
            prefix: "g.nccl.".into(),
            offsets: BTreeMap::new(),
        };
        let path = dir.path().join("g.nccl.n1.42.log");
        std::fs::write(&path, "a\nb\npart").unwrap();
        std::fs::write(dir.path().join("other.log"), "x\n").unwrap();
        assert_eq!(
            tail.poll(),
            vec![("g.nccl.n1.42.log".to_string(), vec!["a".into(), "b".into()])]
        );
        assert!(tail.poll().is_empty());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"ial\nc\n").unwrap();
        assert_eq!(
            tail.poll(),
            vec![(
                "g.nccl.n1.42.log".to_string(),
                vec!["partial".into(), "c".into()]
            )]
        );
    }
}
