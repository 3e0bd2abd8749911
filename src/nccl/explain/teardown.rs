//! Communicators torn down on some ranks only: NCCL's destroy and abort synchronize the
//! ranks of a communicator to free its resources, so a rank that never gets there (or
//! destroys its communicators in another order) leaves the others waiting.

use std::collections::BTreeSet;

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;
use crate::nccl::log::NcclLog;

/// Some processes of the log finished tearing down a communicator (`... - Abort
/// COMPLETE`, `Destroy COMPLETE`) and others of it went on logging without.
pub(super) fn some_ranks_rule(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    let first = log.teardowns.first()?;
    let key = |host: &Option<String>, pid: Option<u32>| (host.clone().unwrap_or_default(), pid);
    let done: BTreeSet<(String, Option<u32>)> =
        log.teardowns.iter().map(|t| key(&t.host, t.pid)).collect();
    // The processes of communicators of the sizes torn down, from their init lines;
    // without those, every process of the log.
    let sizes: BTreeSet<u32> = log.teardowns.iter().map(|t| t.nranks).collect();
    let members: BTreeSet<(String, Option<u32>)> = log
        .ranks
        .iter()
        .filter(|r| sizes.contains(&r.nranks) && !r.host.is_empty())
        .map(|r| (r.host.clone(), Some(r.pid)))
        .collect();
    let waiting: Vec<String> = log
        .processes
        .iter()
        .map(|p| (p, (p.host.clone(), Some(p.pid))))
        .filter(|(_, k)| !done.contains(k) && (members.is_empty() || members.contains(k)))
        // Still logging after a teardown ended: alive, and not torn down. A process
        // whose lines stop before it may be another run, or its log cut.
        .filter(|(p, _)| {
            let tag = format!("{}:{}:", p.host, p.pid);
            pasted
                .lines
                .iter()
                .skip_while(|l| !(l.number == first.line && l.lower.contains(" complete")))
                .any(|l| l.text.contains(&tag))
        })
        .map(|(p, _)| {
            let devices: Vec<String> = p.devices.iter().map(u32::to_string).collect();
            match devices.as_slice() {
                [] => format!("pid {} on {}", p.pid, p.host),
                [d] => format!("pid {} (GPU {d}) on {}", p.pid, p.host),
                many => format!("pid {} (GPUs {}) on {}", p.pid, many.join(", "), p.host),
            }
        })
        .collect();
    if waiting.is_empty() {
        return None;
    }
    let mut ranks: Vec<u32> = log.teardowns.iter().map(|t| t.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let ranks: Vec<String> = ranks.iter().map(u32::to_string).collect();
    let done_words = match ranks.as_slice() {
        [one] => format!("rank {one}"),
        many => format!("ranks {}", many.join(", ")),
    };
    let line = pasted
        .lines
        .iter()
        .find(|l| l.number == first.line && l.lower.contains(" complete"));
    let text = line.map_or_else(String::new, |l| super::pasted::message(l.text).to_string());
    Some(
        Finding::new(
            FindingKind::TeardownSomeRanks,
            line.map(|l| pasted.evidence(l)).into_iter().collect(),
            &[
                ("evidence", text),
                ("done", done_words),
                ("how", first.how.clone()),
                ("waiting", waiting.join(", ")),
            ],
        )
        .with_occurrences(log.teardowns.len()),
    )
}
