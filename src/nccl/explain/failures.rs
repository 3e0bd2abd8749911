//! Findings from failure lines: which finding each failure line belongs to, and one error
//! finding per kind with its evidence, diagnosis and fix (the texts are in
//! [`super::diagnosis`]).

use super::context::Context;
use super::diagnosis::{
    cuda_failure_text, ib_error_text, other_error_text, remote_error_text, shm_attach_missing_text,
    shm_no_space_text, socket_connect_text, socket_error_text, system_error_text,
};
use super::evidence::{evidence, Line};
use super::finding::{Finding, FindingKind, Severity};
use super::memory::{nvls_bind_text, shm_cumem_mismatch_text, window_space_text};
use crate::nccl::log::{Failure, FailureKind, NcclLog};

/// The finding a failure line belongs to.
pub fn finding_kind_of(failure: &Failure) -> FindingKind {
    let ib = is_ib_error_text(&failure.text);
    match failure.kind {
        FailureKind::ShmEnospc => FindingKind::ShmNoSpace,
        FailureKind::ShmAttachEnoent => FindingKind::ShmAttachMissing,
        FailureKind::ShmCumemMismatch => FindingKind::ShmCumemMismatch,
        FailureKind::NvlsBind => FindingKind::NvlsBind,
        FailureKind::WindowSpace => FindingKind::WindowSpace,
        FailureKind::CudaFailure => FindingKind::CudaFailure,
        FailureKind::SystemError => FindingKind::SystemError,
        FailureKind::RemoteError => FindingKind::RemoteError,
        FailureKind::ConnectionRefused | FailureKind::SocketError | FailureKind::Other if ib => {
            FindingKind::IbError
        }
        FailureKind::ConnectionRefused => FindingKind::SocketConnect,
        FailureKind::SocketError if is_connect_text(&failure.text) => FindingKind::SocketConnect,
        FailureKind::SocketError => FindingKind::SocketError,
        FailureKind::Other => FindingKind::OtherError,
    }
}

/// An ibverbs or NET/IB failure message (not the benign "no IB here" lines).
pub fn is_ib_error_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let ib = ["net/ib", "ibv_", "ibverbs", "net_ib", "infiniband"]
        .iter()
        .any(|s| t.contains(s));
    let benign = t.contains("failed to open libibverbs") || t.contains("no device found");
    ib && !benign
}

/// A socket error that is about connecting: `socketPollConnect: connect returned Connection
/// timed out`, `Connect to ... failed`.
fn is_connect_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "startconnect",
        "pollconnect",
        "connect returned",
        "connect to ",
        "timed out",
    ]
    .iter()
    .any(|s| t.contains(s))
}

/// The failures of one finding kind, and its evidence lines.
struct Group<'a> {
    kind: FindingKind,
    failures: Vec<&'a Failure>,
    lines: Vec<Line>,
}

/// One finding per kind, in order of the kind's first failure line; IB error `WARN` lines
/// that the parser did not count as failures (no error return followed) join the IB one.
pub(super) fn failure_findings(log: &NcclLog, context: &Context) -> Vec<Finding> {
    let mut groups: Vec<Group> = Vec::new();
    let group = |groups: &mut Vec<Group>, kind| match groups.iter().position(|g| g.kind == kind) {
        Some(at) => at,
        None => {
            groups.push(Group {
                kind,
                failures: Vec::new(),
                lines: Vec::new(),
            });
            groups.len() - 1
        }
    };
    for f in &log.failures {
        let at = group(&mut groups, finding_kind_of(f));
        groups[at].failures.push(f);
        groups[at].lines.push(Line::of(f));
    }
    let unreturned_ib = log
        .warnings
        .iter()
        .filter(|w| is_ib_error_text(w))
        .filter(|w| !log.failures.iter().any(|f| w.ends_with(f.text.trim())));
    for w in unreturned_ib {
        let at = group(&mut groups, FindingKind::IbError);
        groups[at].lines.push(Line {
            number: None,
            text: w.clone(),
        });
    }
    let kinds: Vec<FindingKind> = groups.iter().map(|g| g.kind).collect();
    groups
        .into_iter()
        .map(|g| {
            let others: Vec<FindingKind> = kinds.iter().copied().filter(|k| *k != g.kind).collect();
            let failures = g.failures.as_slice();
            let (diagnosis, fix) = match g.kind {
                FindingKind::ShmNoSpace => shm_no_space_text(failures, context, log),
                FindingKind::ShmAttachMissing => shm_attach_missing_text(),
                FindingKind::ShmCumemMismatch => shm_cumem_mismatch_text(failures, log),
                FindingKind::NvlsBind => nvls_bind_text(failures),
                FindingKind::WindowSpace => window_space_text(failures),
                FindingKind::SocketConnect => socket_connect_text(failures, log),
                FindingKind::SocketError => socket_error_text(failures),
                FindingKind::IbError => ib_error_text(&g.lines),
                FindingKind::CudaFailure => cuda_failure_text(failures, &others),
                FindingKind::SystemError => system_error_text(&others),
                FindingKind::RemoteError => remote_error_text(),
                _ => other_error_text(),
            };
            Finding {
                kind: g.kind,
                severity: Severity::Error,
                occurrences: g.lines.len(),
                evidence: evidence(g.lines),
                diagnosis,
                fix,
            }
        })
        .collect()
}
