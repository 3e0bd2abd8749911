//! Findings that follow from another in the log: a consequence says so, and its own
//! remedies give way to fixing the cause.

use super::finding::{Finding, FindingKind, Severity};
use crate::nccl::knowledge;

/// `f` follows from the finding `cause`: its own remedies give way to fixing that, and
/// the ordinal's guess at why (the GPUs a process sees) to the cause found.
pub(super) fn follow(f: &mut Finding, cause: &'static str) {
    f.follows = Some(cause);
    if f.kind == FindingKind::InvalidDeviceOrdinal {
        f.cause = knowledge::finding(f.kind.as_str())
            .cause
            .replace("{context}", "");
    }
    f.fix = format!("Fix {cause} first: this follows from it.");
    f.avoid.clear();
}

/// Findings that follow from another in the log: the victims' errors (a socket closed,
/// a remote error, a timeout, a TCPStore peer gone, the launcher's summary) after a
/// cause found elsewhere (findings.toml's `follows`, and these).
pub(super) fn mark_consequences(findings: &mut [Finding]) {
    use FindingKind::*;
    let victim = |k: FindingKind| {
        matches!(
            k,
            SocketError
                | RemoteError
                | SystemError
                | TorchTimeout
                | TorchChildFailed
                | TcpstorePeerGone
                | OtherError
                | TorchWatchdogStuck
        )
    };
    // A run that stops before its first result is explained by any error found, a
    // known bug's included.
    // (InitStops is raised only where nothing else is, so it never follows.)
    let stops = |k: FindingKind| k == TestsHangInit;
    // findings.toml's `follows`: a finding whose cause another present finding is.
    let present: Vec<&'static str> = findings.iter().map(|f| f.kind.as_str()).collect();
    for f in findings.iter_mut() {
        let text = knowledge::finding(f.kind.as_str());
        if let Some(&cause) = present
            .iter()
            .find(|p| text.follows.iter().any(|id| id == *p))
        {
            follow(f, cause);
        }
    }
    // A cause is as severe as what follows from it, so that it is listed above it (one
    // step: no finding that follows is itself followed).
    for i in 0..findings.len() {
        let id = findings[i].kind.as_str();
        let worst = findings
            .iter()
            .filter(|f| f.follows == Some(id))
            .map(|f| f.severity)
            .min();
        if let Some(worst) = worst {
            findings[i].severity = findings[i].severity.min(worst);
        }
    }
    let cause = |f: &Finding| {
        f.severity == Severity::Error && !victim(f.kind) && !stops(f.kind) && f.follows.is_none()
    };
    let root = findings
        .iter()
        .find(|f| cause(f) && f.kind != KnownBug)
        .map(|f| f.kind.as_str());
    let hang_root = root.or_else(|| findings.iter().find(|f| cause(f)).map(|f| f.kind.as_str()));
    if let Some(root) = hang_root {
        for f in findings.iter_mut().filter(|f| stops(f.kind)) {
            f.follows = Some(root);
            f.fix = format!("Fix {root} first: the run stops because of it.");
            f.avoid.clear();
        }
    }
    // An error NCCL reports with no cause of its own (`internal error`) follows a known
    // bug the log shows at its version, where nothing else is the cause.
    let bug = findings
        .iter()
        .find(|f| f.kind == KnownBug && f.severity == Severity::Error && f.follows.is_none())
        .map(|f| f.kind.as_str());
    let Some(root) = root else {
        if let Some(bug) = bug {
            for f in findings
                .iter_mut()
                .filter(|f| f.kind == OtherError && f.follows.is_none())
            {
                follow(f, bug);
            }
        }
        return;
    };
    for f in findings
        .iter_mut()
        .filter(|f| victim(f.kind) && f.follows.is_none())
    {
        f.follows = Some(root);
        if f.kind == SystemError {
            // Its usual suspects (/dev/shm, ulimit) are guesses the root replaces.
            f.cause = format!(
                "`unhandled system error` (ncclSystemError): a system or library call inside \
                 NCCL failed; here it follows from {root}."
            );
        }
        f.fix = format!(
            "Fix {root} first: this error follows from it, and its own remedies would not \
             help."
        );
        f.avoid.clear();
    }
}
