//! Communicators torn down on some ranks only. In recent releases ncclCommDestroy and
//! ncclCommAbort wait for the other ranks on the node to free what they share
//! (NVIDIA/nccl#863), so a rank that never gets there, or destroys its communicators in
//! another order, leaves the others waiting.

use std::collections::BTreeSet;

use super::finding::{Finding, FindingKind};
use super::first::host_pid;
use super::pasted::{message, Pasted};
use crate::nccl::log::{NcclLog, Teardown};

/// The `host:pid` of the ranks of the communicator `t` tore down, from their init lines
/// (its `commId`, else its size); empty where the log has none.
fn members(log: &NcclLog, t: &Teardown) -> BTreeSet<String> {
    let own = log.ranks.iter().find(|r| {
        t.comm.is_some()
            && r.comm == t.comm
            && Some(r.host.as_str()) == t.host.as_deref()
            && Some(r.pid) == t.pid
    });
    log.ranks
        .iter()
        .filter(|r| !r.host.is_empty())
        .filter(|r| match own.and_then(|o| o.comm_id.as_ref()) {
            Some(id) => r.comm_id.as_ref() == Some(id),
            None => r.nranks == t.nranks,
        })
        .map(|r| format!("{}:{}", r.host, r.pid))
        .collect()
}

/// Some ranks finished tearing down a communicator (`... - Abort COMPLETE`, `Destroy
/// COMPLETE`) and another process of it went on logging after that, in the same file,
/// in a log with no error before: a teardown that waits, not the clean-up after a
/// failure.
pub(super) fn some_ranks_rule(log: &NcclLog, pasted: &Pasted) -> Option<Finding> {
    if !log.failures.is_empty() || !log.warnings.is_empty() {
        return None;
    }
    let first = log.teardowns.first()?;
    let at = pasted.lines.iter().position(|l| {
        l.number == first.line
            && l.lower.contains(" complete")
            && first.comm.as_deref().is_none_or(|c| l.text.contains(c))
    })?;
    let file = pasted.lines[at].file;
    let done: BTreeSet<String> = log
        .teardowns
        .iter()
        .filter_map(|t| Some(format!("{}:{}", t.host.as_deref()?, t.pid?)))
        .collect();
    let members = members(log, first);
    // Processes still logging after the teardown, in its file, of its communicator.
    let mut waiting: Vec<String> = Vec::new();
    for l in pasted.lines[at + 1..].iter().filter(|l| l.file == file) {
        let Some(who) = host_pid(l.text) else {
            continue;
        };
        if done.contains(&who)
            || waiting.contains(&who)
            || !(members.is_empty() || members.contains(&who))
        {
            continue;
        }
        waiting.push(who);
    }
    let (one, rest) = waiting.split_first()?;
    let waiting_words = match rest.len() {
        0 => one.clone(),
        n => format!("{one} and {n} more"),
    };
    let ranks: BTreeSet<u32> = log.teardowns.iter().map(|t| t.rank).collect();
    Some(
        Finding::new(
            FindingKind::TeardownSomeRanks,
            vec![pasted.evidence(&pasted.lines[at])],
            &[
                ("evidence", message(pasted.lines[at].text).to_string()),
                ("done", super::torch::ranks_words(&ranks)),
                ("how", first.how.clone()),
                ("waiting", waiting_words),
            ],
        )
        .with_occurrences(log.teardowns.len()),
    )
}
