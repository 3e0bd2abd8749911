//! Why a group of workers stopped early, and the evidence for the `error` cell: the
//! last lines each rank printed, NCCL WARN lines first.

use std::collections::VecDeque;
use std::time::Duration;

use crate::model::CaseStatus;

/// Lines of output kept per rank for failure reasons.
const TAIL_LINES: usize = 20;

/// Why a group of workers stopped early.
#[derive(Debug)]
pub enum Failure {
    Timeout {
        waiting_for: Vec<u32>,
        phase: String,
    },
    Died {
        rank: u32,
        how: String,
        phase: String,
    },
    Error {
        rank: u32,
        message: String,
    },
    /// A rank stopped its stuck collective at its own deadline and said so.
    Aborted {
        rank: u32,
        message: String,
    },
    Protocol(String),
    /// Writing the results failed: not the case's fault, the sweep cannot go on.
    Write(String),
    Interrupted,
}

impl Failure {
    pub fn status(&self) -> CaseStatus {
        match self {
            Failure::Timeout { .. } | Failure::Aborted { .. } => CaseStatus::Timeout,
            _ => CaseStatus::Failed,
        }
    }

    /// The `error` cell: what happened, then the evidence from the ranks' output.
    pub fn describe(&self, timeout: Duration, tails: &Tails) -> String {
        match self {
            Failure::Timeout { waiting_for, phase } => {
                let ranks: Vec<String> = waiting_for.iter().map(u32::to_string).collect();
                let mut s = format!(
                    "timed out after {} during {phase}, waiting for rank(s) {}",
                    seconds(timeout),
                    ranks.join(",")
                );
                tails.append_evidence(&mut s, waiting_for);
                s
            }
            Failure::Died { rank, how, phase } => {
                let mut s = format!("rank {rank} {how} during {phase}");
                tails.append_evidence(&mut s, &[*rank]);
                s
            }
            Failure::Error { rank, message } | Failure::Aborted { rank, message } => {
                format!("rank {rank}: {message}")
            }
            Failure::Protocol(message) => format!("worker protocol error: {message}"),
            Failure::Write(message) => message.clone(),
            Failure::Interrupted => "interrupted".to_string(),
        }
    }
}

pub(crate) fn seconds(d: Duration) -> String {
    format!("{}s", (d.as_secs_f64() * 10.0).round() / 10.0)
}

/// The last lines each rank printed.
pub struct Tails(Vec<VecDeque<String>>);

impl Tails {
    pub fn new(nranks: u32) -> Tails {
        Tails((0..nranks).map(|_| VecDeque::new()).collect())
    }

    pub fn push(&mut self, rank: u32, line: String) {
        if let Some(t) = self.0.get_mut(rank as usize) {
            if t.len() == TAIL_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    }

    /// Appends NCCL WARN lines (all ranks) or else the last lines of `ranks`.
    fn append_evidence(&self, s: &mut String, ranks: &[u32]) {
        let warns: Vec<&String> = self
            .0
            .iter()
            .flatten()
            .filter(|l| l.contains("NCCL WARN"))
            .collect();
        let lines: Vec<&String> = if !warns.is_empty() {
            warns.into_iter().rev().take(3).rev().collect()
        } else {
            ranks
                .iter()
                .filter_map(|r| self.0.get(*r as usize))
                .flat_map(|t| t.iter().rev().take(2).rev())
                .collect()
        };
        if !lines.is_empty() {
            let joined: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
            s.push_str("; last output: ");
            s.push_str(&joined.join(" | "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reasons_carry_the_evidence() {
        let mut tails = Tails::new(2);
        tails.push(1, "fault injection: exiting with status 3".into());
        let f = Failure::Died {
            rank: 1,
            how: "exited with status 3".into(),
            phase: "4 KiB".into(),
        };
        assert_eq!(
            f.describe(Duration::from_secs(5), &tails),
            "rank 1 exited with status 3 during 4 KiB; last output: fault injection: exiting with status 3"
        );
        tails.push(
            0,
            "host:1:1 [0] NCCL WARN Call to posix_fallocate failed : No space left on device"
                .into(),
        );
        let t = Failure::Timeout {
            waiting_for: vec![1],
            phase: "8 B".into(),
        };
        let text = t.describe(Duration::from_secs(5), &tails);
        assert!(
            text.starts_with("timed out after 5s during 8 B, waiting for rank(s) 1; last output: "),
            "{text}"
        );
        assert!(text.contains("NCCL WARN Call to posix_fallocate"), "{text}");
        assert_eq!(t.status(), CaseStatus::Timeout);
    }
}
