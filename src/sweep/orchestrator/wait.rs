//! The orchestrator's waits on its ranks: sending a command to all of them, waiting
//! for the event each must send back, and what a failure then looks like (a dead
//! rank, an error with every other rank's words, a timeout).

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::super::failure::{Failure, Tails};
use super::super::group::Incoming;
use super::super::group::RankGroup;
use super::super::protocol::{Command, Event};
use super::Orchestrator;

impl Orchestrator<'_> {
    pub(super) fn broadcast(
        &self,
        processes: &mut dyn RankGroup,
        command: &Command,
        phase: &str,
    ) -> Result<(), Failure> {
        processes
            .broadcast(command)
            .map_err(|rank| self.dead(processes, rank, phase))
    }

    pub(super) fn dead(&self, processes: &mut dyn RankGroup, rank: u32, phase: &str) -> Failure {
        let how = processes
            .exit_description(rank, Duration::from_secs(3))
            .unwrap_or_else(|| "stopped reading its commands".to_string());
        // A launcher that stops a job (scancel, a killed mpirun) signals every
        // process of it, workers included, and a worker may die before this
        // process has seen its own signal: that is the run being stopped, not a
        // failed case.
        if [" (SIGTERM)", " (SIGINT)"].iter().any(|s| how.contains(s)) {
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if self.interrupted.load(Ordering::SeqCst) {
                    return Failure::Interrupted;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Failure::Died {
            rank,
            how,
            phase: phase.to_string(),
        }
    }

    /// Waits until each of `ranks` sent an event `pick` accepts; fails on an error
    /// event, a dead rank, the deadline or an interrupt.
    pub(super) fn wait_for<T>(
        &self,
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        ranks: &[u32],
        deadline: Instant,
        phase: &str,
        mut pick: impl FnMut(Event<'static>) -> Option<T>,
    ) -> Result<Vec<T>, Failure> {
        let mut got: Vec<Option<T>> = ranks.iter().map(|_| None).collect();
        let slot = |rank: u32| ranks.iter().position(|&r| r == rank);
        while got.iter().any(Option::is_none) {
            if self.interrupted.load(Ordering::SeqCst) {
                return Err(Failure::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Failure::Timeout {
                    waiting_for: ranks
                        .iter()
                        .zip(&got)
                        .filter(|(_, g)| g.is_none())
                        .map(|(r, _)| *r)
                        .collect(),
                    phase: phase.to_string(),
                });
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            match processes.recv_timeout(wait) {
                Ok(Incoming::Event(rank, Event::Error { message, timed_out })) => {
                    let (others, other_timed_out) =
                        Self::other_errors(processes, tails, rank, deadline);
                    let reports: Vec<(u32, String)> =
                        std::iter::once((rank, message)).chain(others).collect();
                    return Err(if timed_out || other_timed_out {
                        Failure::Aborted { reports }
                    } else {
                        Failure::Error { reports }
                    });
                }
                Ok(Incoming::Event(rank, event)) => {
                    if let (Some(i), Some(value)) = (slot(rank), pick(event)) {
                        got[i] = Some(value);
                    }
                }
                Ok(Incoming::Text(rank, line)) => tails.push(rank, line),
                Ok(Incoming::Closed(rank)) => return Err(self.dead(processes, rank, phase)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Protocol("every worker pipe closed".into()))
                }
            }
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// What other ranks report within a moment of the first error (a failure often
    /// shows on several ranks, and the first to arrive is not always the cause), in
    /// the order it arrived, and whether one of them stopped at its deadline (the
    /// case is then a timeout).
    fn other_errors(
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        first: u32,
        deadline: Instant,
    ) -> (Vec<(u32, String)>, bool) {
        const GRACE: Duration = Duration::from_millis(300);
        let until = (Instant::now() + GRACE).min(deadline);
        let mut others: Vec<(u32, String)> = Vec::new();
        let mut timed_out = false;
        let reported = |others: &[(u32, String)], rank: u32| {
            rank == first || others.iter().any(|(r, _)| *r == rank)
        };
        while let Some(wait) = until.checked_duration_since(Instant::now()) {
            match processes.recv_timeout(wait) {
                Ok(Incoming::Event(
                    rank,
                    Event::Error {
                        message,
                        timed_out: t,
                    },
                )) if !reported(&others, rank) => {
                    others.push((rank, message));
                    timed_out |= t;
                }
                // A rank that died without a word (it did not report an error).
                Ok(Incoming::Closed(rank)) if !reported(&others, rank) => {
                    others.push((rank, "its process exited".to_string()));
                }
                Ok(Incoming::Text(rank, line)) => tails.push(rank, line),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        (others, timed_out)
    }
}
