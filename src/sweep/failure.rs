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
    /// What the ranks reported, in the order their reports arrived (the first one
    /// that reported, then others within a moment).
    Error {
        reports: Vec<(u32, String)>,
    },
    /// A rank stopped its stuck collective at its own deadline and said so.
    Aborted {
        reports: Vec<(u32, String)>,
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
                if how.contains("(SIGBUS)") {
                    s.push_str(": ");
                    s.push_str(crate::nccl::shm::SIGBUS_HINT);
                }
                tails.append_evidence(&mut s, &[*rank]);
                s
            }
            Failure::Error { reports } | Failure::Aborted { reports } => grouped(reports),
            Failure::Protocol(message) => format!("worker protocol error: {message}"),
            Failure::Write(message) => message.clone(),
            Failure::Interrupted => "interrupted".to_string(),
        }
    }
}

/// The ranks' reports, each distinct message once with the ranks that reported it
/// (`ranks 0-3: ...`), in the order the messages first arrived, joined by `; also `.
pub(crate) fn grouped(reports: &[(u32, String)]) -> String {
    let mut groups: Vec<(Vec<u32>, &str)> = Vec::new();
    for (rank, message) in reports {
        match groups.iter_mut().find(|(_, m)| *m == message.as_str()) {
            Some((ranks, _)) => ranks.push(*rank),
            None => groups.push((vec![*rank], message)),
        }
    }
    groups
        .into_iter()
        .map(|(mut ranks, message)| {
            ranks.sort_unstable();
            ranks.dedup();
            format!("{}: {message}", rank_list(&ranks))
        })
        .collect::<Vec<_>>()
        .join("; also ")
}

/// `rank 3`, `ranks 0-3`, `ranks 0,2,5-7` (sorted, distinct ranks).
fn rank_list(ranks: &[u32]) -> String {
    if let [one] = ranks {
        return format!("rank {one}");
    }
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for &r in ranks {
        match spans.last_mut() {
            Some((_, hi)) if *hi + 1 == r => *hi = r,
            _ => spans.push((r, r)),
        }
    }
    let parts: Vec<String> = spans
        .iter()
        .map(|&(lo, hi)| match hi - lo {
            0 => lo.to_string(),
            1 => format!("{lo},{hi}"),
            _ => format!("{lo}-{hi}"),
        })
        .collect();
    format!("ranks {}", parts.join(","))
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
    fn ranks_that_report_the_same_error_are_named_once() {
        let same = "ncclAllReduce failed: ncclInternalError (3)";
        let reports = |list: &[(u32, &str)]| -> Vec<(u32, String)> {
            list.iter().map(|(r, m)| (*r, m.to_string())).collect()
        };
        let f = Failure::Error {
            reports: reports(&[(1, same), (0, same), (3, same), (2, same)]),
        };
        assert_eq!(
            f.describe(Duration::from_secs(5), &Tails::new(4)),
            format!("ranks 0-3: {same}")
        );
        // Distinct messages keep their order of arrival: the first is often the cause.
        assert_eq!(
            grouped(&reports(&[
                (1, "remote error"),
                (0, same),
                (5, same),
                (2, "its process exited"),
                (6, same),
                (7, same),
            ])),
            format!(
                "rank 1: remote error; also ranks 0,5-7: {same}; also rank 2: its process exited"
            )
        );
        assert_eq!(
            grouped(&reports(&[(0, same), (2, same)])),
            format!("ranks 0,2: {same}")
        );
    }

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
        // A SIGBUS names /dev/shm as its likely cause; other signals do not.
        let died = |how: &str| Failure::Died {
            rank: 4,
            how: how.into(),
            phase: "communicator set-up".into(),
        };
        let bus = died("was killed by signal 7 (SIGBUS)").describe(Duration::ZERO, &Tails::new(8));
        assert!(
            bus.starts_with("rank 4 was killed by signal 7 (SIGBUS) during communicator set-up: a SIGBUS in an NCCL process is most likely /dev/shm too small"),
            "{bus}"
        );
        assert!(crate::nccl::shm::is_dev_shm_exhaustion(&bus));
        let segv =
            died("was killed by signal 11 (SIGSEGV)").describe(Duration::ZERO, &Tails::new(8));
        assert!(!segv.contains("/dev/shm"), "{segv}");
        assert!(!crate::nccl::shm::is_dev_shm_exhaustion(&segv));
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
