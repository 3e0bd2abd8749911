//! A bootstrap that failed on the interface it used: `bootstrap.cc:NN -> 2` with no
//! NCCL warning of its own, the interface named from the log.

use super::finding::{Finding, FindingKind};
use super::hosts::{addresses, oob_address};
use super::pasted::{message, Pasted, PastedLine};
use super::signatures::Placed;
use crate::nccl::log::{FailureKind, NcclLog};

/// `bootstrap.cc:270 -> 2`: the bootstrap returned a system error, with no WARN line
/// saying why; the interface it used is named from the log.
pub(super) fn bootstrap_rule(log: &NcclLog, pasted: &Pasted, multi_node: bool) -> Option<Placed> {
    // The application's `unhandled system error` is this failure as it reports it,
    // unless the NCCL warning it quotes says a peer went away.
    let peer_gone = |text: &str| {
        let t = text.to_ascii_lowercase();
        let quoted = t.split_once("log entry").map_or("", |(_, q)| q);
        ["closed by", "reset by peer", "remote", "refused"]
            .iter()
            .any(|s| quoted.contains(s))
    };
    if log
        .failures
        .iter()
        .any(|f| f.kind != FailureKind::SystemError || peer_gone(&f.text))
    {
        return None;
    }
    let hits: Vec<&PastedLine> = pasted
        .lines
        .iter()
        .filter(|l| {
            let m = message(l.text);
            m.starts_with("bootstrap.cc:") && m.ends_with("-> 2")
        })
        .collect();
    let first = hits.first()?;
    let chosen = log
        .interfaces
        .iter()
        .filter(|l| l.source == "Bootstrap" || l.text.contains("OOB "))
        .chain(log.interfaces.iter().filter(|l| l.source == "NET/Socket"))
        .find_map(|l| oob_address(&l.text).or_else(|| addresses(&l.text).first().copied()));
    let (interface, address) = match chosen {
        Some((name, address)) => (format!("interface {name}"), format!(" ({address})")),
        None => ("the interface NCCL picked".to_string(), String::new()),
    };
    // One host in the log: the job may run there alone, or this be one of its nodes.
    let alone = if multi_node {
        ""
    } else {
        "; if every rank runs on this one host, `lo` will do"
    };
    let evidence = super::evidence::distinct(hits.iter().take(3).map(|l| pasted.evidence(l)));
    let finding = Finding::new(
        FindingKind::BootstrapFailed,
        evidence,
        &[
            ("interface", interface),
            ("address", address),
            ("evidence", message(first.text).to_string()),
            ("alone", alone.to_string()),
        ],
    )
    .with_occurrences(hits.len());
    Some(Placed {
        finding,
        lines: hits.iter().map(|l| (l.file, l.number)).collect(),
    })
}
