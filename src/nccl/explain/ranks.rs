//! Several files at once, one per rank or node: the NCCL versions, network plugins and
//! variables each shows, and where they differ.

use std::collections::BTreeSet;

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::{Input, Pasted};
use crate::nccl::log::{self, NcclLog};

/// Each input's own log, for what differs between them.
pub(super) fn across_files(inputs: &[Input]) -> Vec<Finding> {
    if inputs.len() < 2 {
        return Vec::new();
    }
    let logs: Vec<(&str, NcclLog)> = inputs
        .iter()
        .map(|i| (i.name, log::parse(i.text)))
        .collect();
    let mut out = Vec::new();
    let versions: Vec<(&str, &str)> = logs
        .iter()
        .filter_map(|(n, l)| l.versions.first().map(|v| (*n, v.as_str())))
        .collect();
    let distinct: BTreeSet<&str> = versions.iter().map(|(_, v)| core_version(v)).collect();
    if distinct.len() > 1 {
        let detail = versions
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Finding::new(
            FindingKind::VersionsDiffer,
            Vec::new(),
            &[("detail", detail)],
        ));
    }
    let sides: Vec<(&str, Vec<&str>)> = logs
        .iter()
        .map(|(n, l)| (*n, l.plugins.iter().map(String::as_str).collect()))
        .collect();
    out.extend(plugins_differ(&sides, "in"));
    // A variable every file shows, with values that differ.
    let names: BTreeSet<&str> = logs
        .iter()
        .flat_map(|(_, l)| l.env.iter().map(|(n, _)| n.as_str()))
        .collect();
    for name in names {
        let values: Vec<(&str, &str)> = logs
            .iter()
            .filter_map(|(f, l)| {
                l.env
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| (*f, v.as_str()))
            })
            .collect();
        let distinct: BTreeSet<&str> = values.iter().map(|(_, v)| *v).collect();
        if distinct.len() > 1 {
            let detail = format!(
                "{name} is {}",
                values
                    .iter()
                    .map(|(f, v)| format!("`{v}` in {f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            out.push(Finding::new(
                FindingKind::EnvDiffers,
                Vec::new(),
                &[("detail", detail)],
            ));
        }
    }
    out
}

/// Variables a launcher or MPI names for a process's rank on its node.
const LOCAL_RANK: &[&str] = &[
    "local_rank",
    "ompi_comm_world_local_rank",
    "slurm_localid",
    "mpi_localrankid",
    "pmi_local_rank",
];

/// A launch script that exports an NCCL variable with another value for each local rank
/// (`case $OMPI_COMM_WORLD_LOCAL_RANK in 0) export NCCL_IB_HCA=mlx5_0:1 ...`): the ranks
/// then disagree on what NCCL must see alike on all of them.
pub(super) fn per_rank_script(pasted: &Pasted) -> Option<Finding> {
    // A branch on the local rank: `case $OMPI_COMM_WORLD_LOCAL_RANK in`, `if [ $LOCAL_RANK`.
    let branches = pasted.lines.iter().any(|l| {
        let t = l.lower.trim_start();
        (t.starts_with("case ") || t.starts_with("if ") || t.starts_with("elif "))
            && LOCAL_RANK.iter().any(|v| t.contains(v))
    });
    if !branches {
        return None;
    }
    // (name, value, line) of every `export NCCL_...=...` outside a comment.
    let exports: Vec<(&str, &str, usize)> = pasted
        .lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            if l.text.trim_start().starts_with('#') {
                return None;
            }
            let at = l.text.find("export NCCL_")?;
            let (name, value) = l.text[at + "export ".len()..].split_once('=')?;
            let value = value.split([' ', ';']).next()?.trim_matches(['"', '\'']);
            // Debug output may differ per rank (NCCL_DEBUG_FILE per rank is usual).
            let kept = name.starts_with("NCCL_") && !name.starts_with("NCCL_DEBUG");
            (kept && !value.is_empty()).then_some((name, value, i))
        })
        .collect();
    let names: BTreeSet<&str> = exports.iter().map(|e| e.0).collect();
    let name = names.into_iter().find(|n| {
        let values: BTreeSet<&str> = exports.iter().filter(|e| e.0 == *n).map(|e| e.1).collect();
        values.len() > 1
    })?;
    let mine: Vec<&(&str, &str, usize)> = exports.iter().filter(|e| e.0 == name).collect();
    let mut values: Vec<String> = Vec::new();
    for e in &mine {
        let v = format!("`{}`", e.1);
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let mut detail = format!(
        "A launch script sets {name} per local rank: {}",
        values.join(", ")
    );
    if name == "NCCL_IB_HCA" {
        detail.push_str(
            ". NCCL picks the HCA nearest each GPU itself from the list it is given; a \
             different list on each rank leaves the ranks unable to agree on rings",
        );
    }
    let evidence =
        super::evidence::distinct(mine.iter().map(|e| pasted.evidence(&pasted.lines[e.2])));
    let mut f = Finding::new(FindingKind::EnvDiffers, evidence, &[("detail", detail)])
        .with_occurrences(mine.len());
    f.sources
        .push("https://github.com/NVIDIA/nccl/issues/1478".into());
    Some(f)
}

/// `NCCL_SHM_DISABLE=1 mpirun -H ddp-0,ddp-1 ...`: NCCL variables given to mpirun as a
/// prefix reach only the processes it starts on its own node. The hosts of `-H` (or
/// `--host`) whose ranks print no NCCL line are named.
pub(super) fn mpirun_prefix_rule(pasted: &Pasted, log: &NcclLog) -> Option<Finding> {
    let line = pasted.lines.iter().find(|l| {
        let words: Vec<&str> = l.text.split_whitespace().collect();
        words.iter().position(|w| *w == "mpirun").is_some_and(|at| {
            words[..at]
                .iter()
                .any(|w| w.starts_with("NCCL_") && w.contains('='))
        })
    })?;
    let words: Vec<&str> = line.text.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "mpirun")?;
    let forwarded = |name: &str| {
        words[at..]
            .windows(2)
            .any(|x| x[0] == "-x" && (x[1] == name || x[1].starts_with(&format!("{name}="))))
    };
    let names: Vec<&str> = words[..at]
        .iter()
        .filter(|w| w.starts_with("NCCL_"))
        .filter_map(|w| w.split_once('='))
        .filter(|(name, _)| !forwarded(name))
        .map(|(name, _)| name)
        .collect();
    if names.is_empty() {
        return None;
    }
    let flags: Vec<String> = words[..at]
        .iter()
        .filter(|w| names.iter().any(|n| w.starts_with(&format!("{n}="))))
        .map(|w| format!("-x {}", w.trim_end_matches([';', '&'])))
        .collect();
    let hosts: BTreeSet<&str> = words[at..]
        .windows(2)
        .find(|x| matches!(x[0], "-H" | "--host" | "-host"))
        .map(|x| {
            x[1].split(',')
                .map(|h| h.split(':').next().unwrap_or(h))
                .collect()
        })
        .unwrap_or_default();
    let hostfile = words[at..].iter().any(|w| {
        matches!(
            *w,
            "--hostfile" | "-hostfile" | "--machinefile" | "-machinefile"
        )
    });
    let logged: BTreeSet<&str> = log.processes.iter().map(|p| p.host.as_str()).collect();
    // Only a launch onto other nodes: two hosts named, a host file, or two in the log.
    let local = |h: &&str| matches!(*h, "localhost" | "127.0.0.1");
    if hosts.iter().filter(|h| !local(h)).count() < 2 && !hostfile && logged.len() < 2 {
        return None;
    }
    // The hosts named that print nothing, where the log names hosts as `-H` does.
    let silent: Vec<&str> = if hosts.iter().any(|h| logged.contains(h)) {
        hosts
            .iter()
            .copied()
            .filter(|h| !logged.contains(h))
            .collect()
    } else {
        Vec::new()
    };
    let others = match silent.as_slice() {
        [] => String::new(),
        s => format!(
            "The ranks on {} print no NCCL line here: they ran without these settings.",
            s.join(", ")
        ),
    };
    // An error where ranks on other hosts ran without them; else a warning.
    let debug_only = names.iter().all(|n| n.starts_with("NCCL_DEBUG"));
    let severity = if silent.is_empty() || debug_only {
        Severity::Warning
    } else {
        Severity::Error
    };
    Some(
        Finding::new(
            FindingKind::EnvNotForwarded,
            vec![pasted.evidence(line)],
            &[
                ("names", names.join(", ")),
                ("others", others),
                ("flags", flags.join(" ")),
            ],
        )
        .with_severity(severity),
    )
}

/// `2.19.3+cuda12.3` -> `2.19.3`.
fn core_version(v: &str) -> &str {
    v.split(['+', '-']).next().unwrap_or(v)
}

/// A network plugin on some sides (files, or the hosts of one file) and NCCL's internal
/// one on others; `on`: `in` for files, `on` for hosts. The names are not compared:
/// one plugin is named by its path, its `Loaded net plugin` line, or both.
fn plugins_differ(sides: &[(&str, Vec<&str>)], on: &str) -> Option<Finding> {
    let external: Vec<(&str, Vec<&str>)> = sides
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(n, p)| (*n, p.iter().copied().filter(|p| *p != "internal").collect()))
        .collect();
    let (with, without): (Vec<_>, Vec<_>) = external.iter().partition(|(_, p)| !p.is_empty());
    if with.is_empty() || without.is_empty() {
        return None;
    }
    let names =
        |side: &[&(&str, Vec<&str>)]| side.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    let detail = format!(
        "{} {on} {}; NCCL's internal network {on} {}",
        with[0].1.join(", "),
        names(&with),
        names(&without)
    );
    Some(Finding::new(
        FindingKind::PluginsDiffer,
        Vec::new(),
        &[("detail", detail)],
    ))
}

/// One file whose lines, tagged with their hosts, show a network plugin on some hosts
/// and NCCL's internal network on others.
pub(super) fn plugins_across_hosts(log: &NcclLog) -> Option<Finding> {
    let mut hosts: Vec<(&str, Vec<&str>)> = Vec::new();
    for (host, plugin) in &log.host_plugins {
        match hosts.iter_mut().find(|(h, _)| h == host) {
            Some((_, p)) => p.push(plugin),
            None => hosts.push((host, vec![plugin])),
        }
    }
    plugins_differ(&hosts, "on")
}
