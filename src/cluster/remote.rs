//! Rank 0's side of a `run`: the connections to every rank's agent (the hub), and
//! the `Launch`/`RankGroup` the orchestrator drives through them. A group is every
//! rank of the job, or some of them (a pair of nodes, `run --pairs`): its rank g is
//! the job's rank `members[g]`, and the others' agents wait. A message from an
//! older group (`seq`) or from a rank outside the group is dropped; a connection
//! that closes is a rank whose node or process is gone, and every later group sees
//! that rank as dead at once.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::wire::{self, Down, Hello, Up};
use crate::machine::counters::Reading;
use crate::sweep::group::{Incoming, Launch, RankGroup, WorkerSpec};
use crate::sweep::protocol::{self, Command, Event};

/// One accepted rank: its hello and both directions of its connection.
pub struct Joined {
    pub hello: Hello,
    pub reader: Box<dyn BufRead + Send>,
    pub writer: Box<dyn Write + Send>,
}

struct Member {
    hello: Hello,
    writer: Mutex<Box<dyn Write + Send>>,
    /// False once its connection failed a write or reached its end.
    alive: Arc<AtomicBool>,
}

/// One reading of a node's counters, from the rank that reads them.
pub struct NodeReading {
    pub rank: u32,
    /// When it was taken, after the rank was asked (`Hub::read_counters`).
    pub t: Duration,
    pub readings: Vec<Reading>,
    /// What could not be read, each said once.
    pub notes: Vec<String>,
}

/// The connections to every rank, index = rank.
pub struct Hub {
    members: Vec<Member>,
    /// `(rank, message)`; `None` when the rank's connection closed.
    rx: Mutex<Receiver<(u32, Option<Up>)>>,
    /// The nodes' counters, which go past the groups (`read_counters` takes it).
    counters: Mutex<Option<Receiver<NodeReading>>>,
}

impl Hub {
    /// Takes the joined ranks (sorted by rank, all present) and starts reading them.
    pub fn new(joined: Vec<Joined>) -> Arc<Hub> {
        let (tx, rx) = mpsc::channel();
        let (counters_tx, counters) = mpsc::channel();
        let mut members = Vec::new();
        for j in joined {
            let rank = j.hello.rank;
            let tx: Sender<(u32, Option<Up>)> = tx.clone();
            let counters_tx: Sender<NodeReading> = counters_tx.clone();
            let mut reader = j.reader;
            let alive = Arc::new(AtomicBool::new(true));
            let reader_alive = alive.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                while let Ok(Some(up)) = wire::receive::<Up>(&mut reader, &mut line) {
                    let sent = match up {
                        // Nobody may be reading them (a sweep): never an error.
                        Up::Counters {
                            t_ms,
                            readings,
                            notes,
                        } => {
                            let _ = counters_tx.send(NodeReading {
                                rank,
                                t: Duration::from_millis(t_ms),
                                readings,
                                notes,
                            });
                            true
                        }
                        up => tx.send((rank, Some(up))).is_ok(),
                    };
                    if !sent {
                        return;
                    }
                }
                // Later groups see this rank as gone at once.
                reader_alive.store(false, Ordering::SeqCst);
                let _ = tx.send((rank, None));
            });
            members.push(Member {
                hello: j.hello,
                writer: Mutex::new(j.writer),
                alive,
            });
        }
        Arc::new(Hub {
            members,
            rx: Mutex::new(rx),
            counters: Mutex::new(Some(counters)),
        })
    }

    /// Asks one rank of each node (its first) to read the node's counters every
    /// `interval` until the run is done, with GPU counters when `gpus`; returns
    /// where the readings arrive (`None` when already asked).
    pub fn read_counters(&self, interval: Duration, gpus: bool) -> Option<Receiver<NodeReading>> {
        let receiver = self.counters.lock().ok()?.take()?;
        let mut asked: Vec<&str> = Vec::new();
        for m in &self.members {
            let host = m.hello.host.as_str();
            if asked.contains(&host) {
                continue;
            }
            asked.push(host);
            let on_node = || self.hellos().filter(|h| h.host == host);
            let message = Down::Counters {
                interval_ms: interval.as_millis() as u64,
                own: on_node().map(|h| h.pid).collect(),
                gpus: gpus.then(|| on_node().filter_map(|h| h.gpu.clone()).collect()),
            };
            // A rank that is gone has no counters to send: its node goes unread.
            let _ = self.send(m.hello.rank, &message);
        }
        Some(receiver)
    }

    pub fn hellos(&self) -> impl Iterator<Item = &Hello> {
        self.members.iter().map(|m| &m.hello)
    }

    fn send(&self, rank: u32, message: &Down) -> io::Result<()> {
        let member = &self.members[rank as usize];
        if !member.alive.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "rank is gone"));
        }
        let mut w = member
            .writer
            .lock()
            .map_err(|_| io::Error::other("poisoned link"))?;
        wire::send(&mut *w, message).inspect_err(|_| member.alive.store(false, Ordering::SeqCst))
    }

    fn is_alive(&self, rank: u32) -> bool {
        self.members[rank as usize].alive.load(Ordering::SeqCst)
    }

    fn host(&self, rank: u32) -> &str {
        &self.members[rank as usize].hello.host
    }

    /// Tells every rank that the run is over and how it ends.
    pub fn done(&self, code: u8, message: Option<String>) {
        for rank in 0..self.members.len() as u32 {
            let _ = self.send(
                rank,
                &Down::Done {
                    code,
                    message: message.clone(),
                },
            );
        }
    }
}

/// How long rank 0 waits for an agent to confirm its worker is gone: longer than
/// the agent's own limit for reaping one (`agent::REAP_LIMIT`).
const CONFIRM_LIMIT: Duration = Duration::from_secs(15);

/// Starts each group's workers through the agents.
pub struct RemoteLaunch {
    pub hub: Arc<Hub>,
    /// The run directory's log folder: worker output and NCCL logs land here.
    pub logs_dir: PathBuf,
    seq: u32,
}

impl RemoteLaunch {
    pub fn new(hub: Arc<Hub>, logs_dir: PathBuf) -> RemoteLaunch {
        RemoteLaunch {
            hub,
            logs_dir,
            seq: 0,
        }
    }
}

impl Launch for RemoteLaunch {
    fn start(&mut self, specs: Vec<WorkerSpec>, logs: Vec<PathBuf>) -> Result<Box<dyn RankGroup>> {
        self.seq += 1;
        let mut group = RemoteGroup {
            hub: self.hub.clone(),
            members: specs.iter().map(|s| s.job_rank).collect(),
            seq: self.seq,
            logs_dir: self.logs_dir.clone(),
            logs: Vec::new(),
            exits: vec![None; specs.len()],
            pending: VecDeque::new(),
        };
        for path in logs {
            let file = File::create(&path)
                .map_err(|e| anyhow::anyhow!("cannot create log {}: {e}", path.display()))?;
            group.logs.push(BufWriter::new(file));
        }
        for spec in specs {
            let (rank, job_rank) = (spec.rank, spec.job_rank);
            let spawn = Down::Spawn {
                seq: self.seq,
                spec: Box::new(spec),
            };
            if self.hub.send(job_rank, &spawn).is_err() {
                group.lost(rank);
            }
        }
        Ok(Box::new(group))
    }

    fn device(&self, job_rank: u32) -> usize {
        self.hub.members[job_rank as usize].hello.device
    }
}

/// The workers of one group, reached through their agents.
struct RemoteGroup {
    hub: Arc<Hub>,
    /// The job's rank of each rank of the group.
    members: Vec<u32>,
    seq: u32,
    logs_dir: PathBuf,
    logs: Vec<BufWriter<File>>,
    /// How each rank's worker ended, once its agent said so.
    exits: Vec<Option<String>>,
    /// Messages already taken off the hub that the orchestrator has not seen.
    pending: VecDeque<Incoming>,
}

impl RemoteGroup {
    /// A rank whose connection is gone: its worker is as good as dead.
    fn lost(&mut self, rank: u32) {
        let i = rank as usize;
        if self.exits[i].is_none() {
            self.exits[i] = Some(
                "is gone with its nccl-bench run process (the connection to it closed)".into(),
            );
            self.pending.push_back(Incoming::Closed(rank));
        }
    }

    fn log(&mut self, rank: u32, line: &str) {
        if let Some(w) = self.logs.get_mut(rank as usize) {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }

    /// The group's rank of the job's rank `job_rank`, if it is in the group.
    fn group_rank(&self, job_rank: u32) -> Option<u32> {
        self.members
            .iter()
            .position(|&m| m == job_rank)
            .map(|g| g as u32)
    }

    fn host(&self, rank: u32) -> &str {
        self.hub.host(self.members[rank as usize])
    }

    /// Takes one message of the job's rank `job_rank` off the hub and turns it
    /// into what the orchestrator sees, if anything.
    fn absorb(&mut self, job_rank: u32, message: Option<Up>) -> Option<Incoming> {
        if let Some(Up::NcclLog { file, lines, .. }) = &message {
            // NCCL's files are named by host and pid: late lines of an earlier
            // group still belong to that group's file.
            append_log(&self.logs_dir, file, lines);
            return None;
        }
        let rank = self.group_rank(job_rank)?;
        let Some(up) = message else {
            self.lost(rank);
            return self.pending.pop_front();
        };
        match up {
            Up::Out { seq, line } if seq == self.seq => match protocol::parse_event(&line) {
                Some(event) => Some(Incoming::Event(rank, event)),
                None => {
                    self.log(rank, &line);
                    Some(Incoming::Text(rank, line))
                }
            },
            Up::Err { seq, line } if seq == self.seq => {
                self.log(rank, &line);
                Some(Incoming::Text(rank, line))
            }
            Up::Closed { seq } if seq == self.seq => Some(Incoming::Closed(rank)),
            Up::Exited { seq, how } if seq == self.seq => {
                self.exits[rank as usize] = Some(how);
                None
            }
            Up::SpawnFailed { seq, message } if seq == self.seq => {
                self.exits[rank as usize] = Some("could not be started".into());
                Some(Incoming::Event(
                    rank,
                    Event::Error {
                        message: format!(
                            "cannot start the worker on {}: {message}",
                            self.host(rank)
                        ),
                        timed_out: false,
                    },
                ))
            }
            _ => None, // from an earlier group
        }
    }

    /// Waits until every rank still connected has said how its worker ended.
    fn wait_exits(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while (0..self.nranks()).any(|r| self.exits[r as usize].is_none()) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            match self.next(deadline - now) {
                Ok(Some(m)) => self.pending.push_back(m),
                Ok(None) => {}
                Err(_) => return,
            }
        }
    }

    fn next(&mut self, wait: Duration) -> Result<Option<Incoming>, RecvTimeoutError> {
        let (rank, message) = self
            .hub
            .rx
            .lock()
            .map_err(|_| RecvTimeoutError::Disconnected)?
            .recv_timeout(wait)?;
        Ok(self.absorb(rank, message))
    }

    fn tell_live(&mut self, message: &Down) {
        for rank in 0..self.nranks() {
            let job_rank = self.members[rank as usize];
            if self.exits[rank as usize].is_none() && self.hub.send(job_rank, message).is_err() {
                self.lost(rank);
            }
        }
    }
}

impl RankGroup for RemoteGroup {
    fn recv_timeout(&mut self, wait: Duration) -> Result<Incoming, RecvTimeoutError> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(m) = self.pending.pop_front() {
                return Ok(m);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(m) = self.next(left)? {
                return Ok(m);
            }
        }
    }

    fn send(&mut self, rank: u32, command: &Command) -> io::Result<()> {
        if self.exits[rank as usize].is_some() {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "worker ended"));
        }
        let message = Down::Worker {
            command: command.clone(),
        };
        self.hub
            .send(self.members[rank as usize], &message)
            .inspect_err(|_| self.lost(rank))
    }

    fn nranks(&self) -> u32 {
        self.exits.len() as u32
    }

    fn exit_description(&mut self, rank: u32, grace: Duration) -> Option<String> {
        let deadline = Instant::now() + grace;
        while self.exits[rank as usize].is_none() && Instant::now() < deadline {
            match self.next(deadline.saturating_duration_since(Instant::now())) {
                Ok(Some(m)) => self.pending.push_back(m),
                Ok(None) => {}
                Err(_) => break,
            }
        }
        let how = self.exits[rank as usize].clone()?;
        Some(format!("{how} (on {})", self.host(rank)))
    }

    fn finish(&mut self, grace: Duration) {
        self.tell_live(&Down::Finish {
            grace_ms: grace.as_millis() as u64,
        });
        self.wait_exits(grace + CONFIRM_LIMIT);
        self.kill();
    }

    fn kill(&mut self) {
        self.tell_live(&Down::Kill);
        self.wait_exits(CONFIRM_LIMIT);
        for rank in 0..self.nranks() {
            if self.exits[rank as usize].is_none()
                && !self.hub.is_alive(self.members[rank as usize])
            {
                self.lost(rank);
            }
        }
    }

    fn drain(&mut self) -> Vec<Incoming> {
        self.pending.drain(..).collect()
    }
}

/// Appends forwarded NCCL log lines to the run directory's copy of that file.
fn append_log(dir: &Path, file: &str, lines: &[String]) {
    // The name comes from another process: keep it a plain file name.
    if file.is_empty() || file.starts_with('.') || file.contains('/') {
        return;
    }
    if let Ok(f) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(file))
    {
        let mut w = BufWriter::new(f);
        for line in lines {
            let _ = writeln!(w, "{line}");
        }
        let _ = w.flush();
    }
}
