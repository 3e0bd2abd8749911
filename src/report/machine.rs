//! `report.md`'s machine section: the host, GPUs, backend and library, /dev/shm and
//! where NCCL's SHM transport kept its buffers, the run's status and what its intervals
//! rest on.

use std::fmt::Write as _;

use anyhow::Result;

use crate::export::reader::RunData;
use crate::units::Bytes;

/// What the run's intervals rest on: its rounds (process groups per config and rank
/// count), or one group's iterations; nothing for rows without per-round medians
/// (imports).
fn rounds_line(run: &RunData) -> Option<String> {
    let counts: Vec<usize> = run
        .cases
        .iter()
        .map(|c| c.round_medians().len())
        .filter(|&n| n > 0)
        .collect();
    let rounds = counts.iter().copied().max().unwrap_or(0);
    let fewest = counts.iter().copied().min().unwrap_or(0);
    if !run.manifest.looks.is_empty() && rounds > 1 {
        let span = if fewest == rounds {
            rounds.to_string()
        } else {
            format!("{fewest} to {rounds}")
        };
        return Some(format!(
            "- Rounds: measured until settled, {span} process groups per config and rank count (of at most {}; see Rounds each group took), interleaved across the configs: medians' intervals and comparisons are over them, so they include the variation between groups of processes",
            run.manifest.rounds
        ));
    }
    Some(match rounds {
        0 => return None,
        1 => "- Rounds: 1 process group per config and rank count: intervals cover the variation between its iterations only, often smaller than between groups of processes (`--rounds 6` or more measures that)".to_string(),
        n => format!(
            "- Rounds: {n} process groups per config and rank count, interleaved across the configs: medians' intervals and comparisons are over them, so they include the variation between groups of processes"
        ),
    })
}

/// A sweep that measured until settled: its looks, and how many rounds each group
/// took and why it stopped there (the manifest's `group_rounds`).
pub(super) fn rounds_section(s: &mut String, run: &RunData) -> Result<()> {
    let m = &run.manifest;
    if m.looks.is_empty() || m.group_rounds.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "## Rounds each group took
"
    )?;
    let at: Vec<String> = m.looks.iter().map(u32::to_string).collect();
    writeln!(
        s,
        "Looks after rounds {}: a group stopped once every case was slower, faster or within, or could not be settled in {} rounds (docs/guide/statistics.md).\n",
        at.join(", "),
        m.rounds
    )?;
    writeln!(s, "| config | ranks | rounds | why it stopped |")?;
    writeln!(s, "|---|---|---|---|")?;
    for g in &m.group_rounds {
        writeln!(
            s,
            "| {} | {} | {} | {} |",
            crate::ops::collective::labelled(&g.config, g.collective.name()),
            g.nranks,
            g.rounds,
            g.why
        )?;
    }
    let taken: u32 = m.group_rounds.iter().map(|g| g.rounds).sum();
    let most = m.rounds * m.group_rounds.len() as u32;
    writeln!(
        s,
        "\n{taken} process groups of the most {most} ({:.0} %).\n",
        100.0 * f64::from(taken) / f64::from(most.max(1))
    )?;
    Ok(())
}

/// The machine and backend, the NCCL and GPUs, and the run's facts (start, status,
/// rounds).
pub(super) fn machine_section(s: &mut String, run: &RunData) -> Result<()> {
    let m = &run.manifest;
    writeln!(s, "## Machine and run\n")?;
    writeln!(
        s,
        "- Host: {} ({}, {} CPUs)",
        or_unknown(&m.host.hostname),
        or_unknown(&m.host.cpu_model),
        m.host.cpus
    )?;
    writeln!(
        s,
        "- Backend: {} ({})",
        or_unknown(&m.backend.used),
        m.backend.note
    )?;
    if let Some(c) = &m.cluster {
        writeln!(
            s,
            "- Ranks: {} under {} on {} host(s): {} (rendezvous {})",
            c.world_size,
            c.launcher,
            c.hosts.len(),
            c.hosts.join(", "),
            c.rendezvous
        )?;
        let paired = m.configs.iter().any(|c| c.ranks.is_some());
        if c.hosts.len() > 1 && !paired {
            writeln!(
                s,
                "- Per node: every rank of a collective waits for the slowest, so one time is shared by all nodes and this run cannot say which node is slow; `nccl-bench run --pairs` measures every pair of nodes and names a slow node or link"
            )?;
        }
    }
    if let Some(n) = &m.nccl {
        writeln!(s, "- NCCL: {}", n.version)?;
    }
    if let Some(gpu) = &m.gpu {
        let names: Vec<String> = gpu["gpus"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|g| {
                        format!(
                            "{} ({})",
                            g["name"].as_str().unwrap_or("?"),
                            g["bus_id"].as_str().unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        writeln!(
            s,
            "- GPUs: {}; driver {}, CUDA {}",
            names.join(", "),
            gpu["driver_version"].as_str().unwrap_or("?"),
            gpu["cuda_version"].as_str().unwrap_or("?")
        )?;
    }
    if let Some(total) = m.host.shm_total_bytes {
        writeln!(s, "- /dev/shm: {}", Bytes(total))?;
    }
    if let Some(line) = shm_backing_line(run) {
        writeln!(s, "{line}")?;
    }
    writeln!(
        s,
        "- Run: started {}, status {}",
        or_unknown(&m.started_at),
        or_unknown(&m.status)
    )?;
    if let Some(line) = rounds_line(run) {
        writeln!(s, "{line}")?;
    }
    writeln!(s)?;
    Ok(())
}

/// Where NCCL's SHM transport kept its buffers, over the cases whose logs say
/// (`shm_backing`): cuMem host memory makes /dev/shm's size moot for SHM.
fn shm_backing_line(run: &RunData) -> Option<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for c in run.cases.iter().filter(|c| !c.shm_backing.is_empty()) {
        *counts.entry(c.shm_backing.as_str()).or_default() += 1;
    }
    if counts.is_empty() {
        return None;
    }
    let words = crate::nccl::log::ShmBacking::label_words;
    let parts: Vec<String> = counts
        .iter()
        .map(|(b, n)| {
            format!(
                "{} in {}",
                words(b),
                crate::units::plural(*n, "case", "cases")
            )
        })
        .collect();
    Some(format!(
        "- SHM's buffers (NCCL's log): {}",
        parts.join("; ")
    ))
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "unknown"
    } else {
        s
    }
}
