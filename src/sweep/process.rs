//! The worker processes of one case group: spawned together in their own process
//! group, read by one thread per pipe, and killed together. Three mechanisms make
//! orphans impossible: the group is killed as a whole (SIGKILL to the process group,
//! then to each pid) and reaped before the next case; every worker asks the kernel to
//! kill it when the orchestrator dies (PR_SET_PDEATHSIG), even by SIGKILL; and a
//! worker exits when its stdin closes. Dropping a `ProcessGroup` kills it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::group::{Incoming, Launch, RankGroup, WorkerSpec};
use super::protocol;

/// `sweep`: every rank is a child process of this one, rank `r` on device `r`.
pub struct LocalLaunch {
    pub exe: PathBuf,
}

impl Launch for LocalLaunch {
    fn start(&mut self, specs: Vec<WorkerSpec>, logs: Vec<PathBuf>) -> Result<Box<dyn RankGroup>> {
        let commands = specs
            .iter()
            .map(|s| s.command(&self.exe, s.nccl_lib.as_deref().map(Path::new)))
            .collect();
        Ok(Box::new(ProcessGroup::spawn(commands, logs)?))
    }

    fn device(&self, job_rank: u32) -> usize {
        job_rank as usize
    }
}

struct Rank {
    child: Child,
    stdin: Option<ChildStdin>,
}

/// The processes of one case group.
pub struct ProcessGroup {
    pgid: i32,
    ranks: Vec<Rank>,
    pub incoming: Receiver<Incoming>,
    readers: Vec<JoinHandle<()>>,
    reaped: bool,
}

impl ProcessGroup {
    /// Spawns `commands.len()` workers; rank `r` runs `commands[r]` and its free text
    /// goes to `logs[r]`.
    pub fn spawn(commands: Vec<Command>, logs: Vec<PathBuf>) -> Result<ProcessGroup> {
        let (tx, rx) = mpsc::channel();
        let mut group = ProcessGroup {
            pgid: 0,
            ranks: Vec::new(),
            incoming: rx,
            readers: Vec::new(),
            reaped: false,
        };
        let parent = std::process::id() as i32;
        for (rank, (mut cmd, log)) in commands.into_iter().zip(logs).enumerate() {
            let rank = rank as u32;
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(group.pgid);
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The orchestrator died before the prctl took effect.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
            let mut child = cmd.spawn().context("cannot start a worker process")?;
            if rank == 0 {
                group.pgid = child.id() as i32;
            }
            let stdout = child.stdout.take();
            let stderr = child.stderr.take();
            let log = File::create(&log)
                .with_context(|| format!("cannot create log {}", log.display()))?;
            let log = std::sync::Arc::new(std::sync::Mutex::new(BufWriter::new(log)));
            if let Some(out) = stdout {
                let (tx, log) = (tx.clone(), log.clone());
                group.readers.push(std::thread::spawn(move || {
                    read_lines(out, |line| match protocol::parse_event(&line) {
                        Some(e) => tx.send(Incoming::Event(rank, e)).is_ok(),
                        None => {
                            write_log(&log, &line);
                            tx.send(Incoming::Text(rank, line)).is_ok()
                        }
                    });
                    let _ = tx.send(Incoming::Closed(rank));
                }));
            }
            if let Some(err) = stderr {
                let tx = tx.clone();
                group.readers.push(std::thread::spawn(move || {
                    read_lines(err, |line| {
                        write_log(&log, &line);
                        tx.send(Incoming::Text(rank, line)).is_ok()
                    });
                }));
            }
            group.ranks.push(Rank {
                stdin: child.stdin.take(),
                child,
            });
        }
        Ok(group)
    }

    /// Sends a command to one rank.
    pub fn send(&mut self, rank: u32, command: &protocol::Command) -> io::Result<()> {
        match self
            .ranks
            .get_mut(rank as usize)
            .and_then(|r| r.stdin.as_mut())
        {
            Some(stdin) => protocol::send(stdin, command),
            None => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "worker stdin closed",
            )),
        }
    }

    /// Sends a command to every rank; the first rank that cannot take it is returned.
    pub fn broadcast(&mut self, command: &protocol::Command) -> Result<(), u32> {
        for rank in 0..self.ranks.len() as u32 {
            self.send(rank, command).map_err(|_| rank)?;
        }
        Ok(())
    }

    /// The exit status of a rank whose stdout closed, waiting up to `grace` for it.
    pub fn exit_status(&mut self, rank: u32, grace: Duration) -> Option<ExitStatus> {
        let child = &mut self.ranks.get_mut(rank as usize)?.child;
        let deadline = Instant::now() + grace;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => return None,
            }
        }
    }

    /// Waits up to `grace` for every rank to exit by itself, then kills the rest.
    pub fn finish(&mut self, grace: Duration) {
        for r in &mut self.ranks {
            r.stdin = None; // EOF tells a worker to exit
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline
            && self
                .ranks
                .iter_mut()
                .any(|r| matches!(r.child.try_wait(), Ok(None)))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }

    /// Kills every process of the group and reaps them.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        // Only while a member is unreaped does the group id still belong to us.
        let alive = self
            .ranks
            .iter_mut()
            .any(|r| matches!(r.child.try_wait(), Ok(None)));
        if self.pgid > 0 && alive {
            // SAFETY: signalling our own child process group.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
        for r in &mut self.ranks {
            let _ = r.child.kill();
            r.stdin = None;
        }
        for r in &mut self.ranks {
            let _ = r.child.wait();
        }
        for t in self.readers.drain(..) {
            let _ = t.join();
        }
        self.reaped = true;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

impl RankGroup for ProcessGroup {
    fn recv_timeout(&mut self, wait: Duration) -> Result<Incoming, RecvTimeoutError> {
        self.incoming.recv_timeout(wait)
    }

    fn send(&mut self, rank: u32, command: &protocol::Command) -> io::Result<()> {
        ProcessGroup::send(self, rank, command)
    }

    fn nranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    fn exit_description(&mut self, rank: u32, grace: Duration) -> Option<String> {
        self.exit_status(rank, grace).map(describe_exit)
    }

    fn finish(&mut self, grace: Duration) {
        ProcessGroup::finish(self, grace)
    }

    fn kill(&mut self) {
        ProcessGroup::kill(self)
    }

    fn drain(&mut self) -> Vec<Incoming> {
        self.incoming.try_iter().collect()
    }
}

/// How a process ended, in words.
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(sig) = status.signal() {
        format!("was killed by signal {sig} ({})", signal_name(sig))
    } else {
        "ended".to_string()
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

fn read_lines(pipe: impl io::Read, mut each: impl FnMut(String) -> bool) {
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bytes, not text: a worker (or NCCL) printing invalid UTF-8 must not end
        // the stream while the process lives.
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if !each(String::from_utf8_lossy(&line).trim_end().to_string()) {
                    break;
                }
            }
        }
    }
}

fn write_log(log: &std::sync::Mutex<BufWriter<File>>, line: &str) {
    if let Ok(mut w) = log.lock() {
        let _ = writeln!(w, "{line}");
        let _ = w.flush();
    }
}
