//! MPI's own part of a launch: an MPI program without NCCL (a hello world, Open MPI's
//! examples, `hostname`) that hangs under mpirun too. Then the launch or MPI's own
//! transport is what is broken, and no NCCL setting helps.

use super::evidence::distinct;
use super::finding::{Finding, FindingKind};
use super::pasted::{Pasted, PastedLine};
use crate::nccl::log::NcclLog;

/// Words that say a run hangs (lower case, whole words).
const HANG: &[&str] = &[
    "hang", "hangs", "hanging", "hung", "stuck", "freezes", "frozen",
];

/// Words that, just before a hang word, say the opposite (`does not hang`, `doesn't`).
const NEGATION: &[&str] = &["not", "no", "never", "without", "t"];

/// The launcher's word of a command line: `mpirun`, `mpiexec` or a path to one.
fn launcher_at(words: &[&str]) -> Option<usize> {
    words.iter().position(|w| {
        let name = w.rsplit('/').next().unwrap_or(w);
        name == "mpirun" || name == "mpiexec"
    })
}

/// The program a launch line starts, where it uses MPI alone: a hello world, Open MPI's
/// `ring_c` or `connectivity_c`, or `hostname`.
fn mpi_only_program(line: &PastedLine) -> Option<String> {
    let words: Vec<&str> = line.text.split_whitespace().collect();
    let at = launcher_at(&words)?;
    words[at + 1..].iter().find_map(|w| {
        let name = w.trim_matches(['`', '"', '\'']);
        let base = name.rsplit('/').next().unwrap_or(name);
        let alone = base.to_ascii_lowercase().contains("hello")
            || matches!(base, "ring_c" | "connectivity_c" | "hostname");
        (alone && !base.starts_with('-')).then(|| name.to_string())
    })
}

/// Whether a line says that something hangs, not that it does not.
fn says_hang(line: &PastedLine) -> bool {
    let words: Vec<&str> = line
        .lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        HANG.contains(w)
            && !words[i.saturating_sub(2)..i]
                .iter()
                .any(|p| NEGATION.contains(p))
    })
}

/// `mpirun ... ./hello_world` and, on its line or after it (before the next launch), a
/// line saying it hangs, in a paste with no NCCL line at all: MPI alone does not run.
pub(super) fn mpi_hangs_rule(pasted: &Pasted, log: &NcclLog) -> Option<Finding> {
    if log.nccl_lines > 0 || !log.failures.is_empty() {
        return None;
    }
    let lines = &pasted.lines;
    let is_launch = |l: &PastedLine| launcher_at(&l.text.split_whitespace().collect::<Vec<_>>());
    for (i, line) in lines.iter().enumerate() {
        let Some(program) = mpi_only_program(line) else {
            continue;
        };
        // What follows a command, up to the next launch, is about that command.
        let after = lines[i + 1..].iter().take_while(|l| is_launch(l).is_none());
        if let Some(hang) = std::iter::once(line).chain(after).find(|l| says_hang(l)) {
            let evidence = distinct([line, hang].into_iter().map(|l| pasted.evidence(l)));
            return Some(Finding::new(
                FindingKind::MpiHangs,
                evidence,
                &[("program", program)],
            ));
        }
    }
    None
}

/// `mpirun ... -x NCCL_DEBUG=INFO <program>` and a line after it saying it hangs, in a
/// paste with no NCCL line at all: NCCL prints at its first call, so MPI's start-up or
/// the launch hangs before it.
pub(super) fn mpi_launch_hangs_rule(pasted: &Pasted, log: &NcclLog) -> Option<Finding> {
    if log.nccl_lines > 0 || !log.failures.is_empty() {
        return None;
    }
    // nccl-tests prints its header once MPI has started.
    if pasted.contains("# nthread") || pasted.contains("#  rank") {
        return None;
    }
    let lines = &pasted.lines;
    let is_launch = |l: &PastedLine| launcher_at(&l.text.split_whitespace().collect::<Vec<_>>());
    let hpcx = if pasted.contains("hpc-x") || pasted.contains("hpcx") {
        " HPC-X must be the build for the installed MLNX OFED."
    } else {
        ""
    };
    for (i, line) in lines.iter().enumerate() {
        let debug = line.lower.contains("nccl_debug=info");
        if is_launch(line).is_none() || !debug || mpi_only_program(line).is_some() {
            continue;
        }
        // The hang said at once, on the command's line or the two after it.
        let after = lines[i + 1..]
            .iter()
            .take(2)
            .take_while(|l| is_launch(l).is_none());
        if let Some(hang) = std::iter::once(line).chain(after).find(|l| says_hang(l)) {
            let evidence = distinct([line, hang].into_iter().map(|l| pasted.evidence(l)));
            return Some(Finding::new(
                FindingKind::MpiLaunchHangs,
                evidence,
                &[
                    ("evidence", super::pasted::cut(hang.text.trim())),
                    ("hpcx", hpcx.to_string()),
                ],
            ));
        }
    }
    None
}
