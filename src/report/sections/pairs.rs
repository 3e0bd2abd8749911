//! The report's section on the pairs of `sweep --pairs` and `run --pairs`: per
//! config, the bus bandwidth matrix at the largest size, each GPU, core or node
//! against the pairs without it, and the sentences that name the slow members and
//! the slow pairs. `analysis::pairs` computes the tables; this writes them.

use std::fmt::Write as _;

use crate::analysis::pairs::PairTable;
use crate::units::Bytes;

/// How the report names a pair: `GPUs 1 and 2`, `cores 0 and 2`, `nodes a and b`.
fn pair_name(t: &PairTable, a: usize, b: usize) -> String {
    if t.unit == "node" {
        format!("nodes {} and {}", t.names[a], t.names[b])
    } else {
        format!("{}s {a} and {b}", t.unit)
    }
}

/// How the report names a member: `GPU 3`, `core 1`, `node gpu-node-07`.
fn member_name(t: &PairTable, i: usize) -> String {
    if t.unit == "node" {
        format!("node {}", t.names[i])
    } else {
        t.names[i].clone()
    }
}

/// The report's section: per config, the busbw matrix, the slow pairs, and per
/// member whether all its pairs are slow. `cpus` is the CPUs of the machine on
/// the host backend: core indices past it wrap.
pub fn markdown(
    s: &mut String,
    tables: &[PairTable],
    threshold: f64,
    cpus: Option<usize>,
) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(s, "## Pairs\n")?;
    writeln!(
        s,
        "Each pair measured on its own: bus bandwidth at the largest size, GB/s. A GPU, core or node is named slow when the whole 95 % interval of every one of its pairs' median times is more than {:.1} % above the median of the pairs without it: the trouble is then that GPU or node, not one link. A pair is named slow when its whole interval is that far above the other pairs' median (leaving out the pairs of a slow GPU or node).\n",
        threshold * 100.0
    )?;
    let cores = tables
        .iter()
        .filter(|t| t.unit == "core")
        .map(PairTable::size)
        .max()
        .unwrap_or(0);
    if let Some(n) = cpus.filter(|&n| n > 0 && cores > n) {
        writeln!(
            s,
            "This machine has {n} CPUs for {cores} cores: core i is the (i mod {n})-th CPU the process may use, so a pair like 0 and {n} puts both ranks on one CPU, where they take turns (and spin waiting for each other): those pairs measure that oversubscription, not a link.\n"
        )?;
    }
    for t in tables {
        table_markdown(s, t)?;
    }
    Ok(())
}

fn table_markdown(s: &mut String, t: &PairTable) -> std::fmt::Result {
    writeln!(s, "### {} at {}\n", t.config, Bytes(t.bytes))?;
    let how = if t.unit == "node" {
        format!("`run --pairs`: the {} ranks of both nodes", t.nranks)
    } else {
        format!("`sweep --pairs`: {} ranks", t.nranks)
    };
    writeln!(s, "Pairs of {}s ({how}).\n", t.unit)?;
    writeln!(s, "| | {} |", t.names.join(" | "))?;
    writeln!(s, "|---|{}", "---|".repeat(t.size()))?;
    for a in 0..t.size() {
        let row: Vec<String> = (0..t.size())
            .map(|b| match t.cell(a, b) {
                _ if a == b => "-".to_string(),
                None => String::new(),
                Some(c) => match (c.busbw_gbps, c.slow_by) {
                    (Some(bw), Some(_)) => format!("**{bw:.2}** (slow)"),
                    (Some(bw), None) => format!("{bw:.2}"),
                    (None, _) => c.status.clone(),
                },
            })
            .collect();
        writeln!(s, "| **{}** | {} |", t.names[a], row.join(" | "))?;
    }
    writeln!(s)?;
    if !t.members.is_empty() {
        writeln!(
            s,
            "| {} | pairs ok | busbw of its pairs (median) | time of its pairs against the others |",
            t.unit
        )?;
        writeln!(s, "|---|---|---|---|")?;
        for m in &t.members {
            let versus = m
                .versus_others
                .map(|v| format!("{:+.0} %", v * 100.0))
                .unwrap_or_else(|| "-".into());
            writeln!(
                s,
                "| {} | {}/{} | {} | {}{} |",
                t.names[m.index],
                m.pairs_ok,
                m.pairs,
                m.busbw_gbps.map(|b| format!("{b:.2}")).unwrap_or_default(),
                versus,
                if m.slow { " **slow**" } else { "" }
            )?;
        }
        writeln!(s)?;
    }
    for m in t.slow_members() {
        writeln!(
            s,
            "**Slow {}**: every one of its {} pairs is slower than the pairs without it ({:+.0} % time): look at the {} itself (its links, NIC, clocks, errors), not one link.\n",
            member_name(t, m.index),
            m.pairs_ok,
            m.versus_others.unwrap_or(0.0) * 100.0,
            t.unit
        )?;
    }
    let slow: Vec<String> = t
        .slow()
        .map(|c| {
            format!(
                "{} ({:+.0} % time)",
                pair_name(t, c.a, c.b),
                c.slow_by.unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    let failed: Vec<String> = t
        .cells
        .iter()
        .filter(|c| c.status != "ok")
        .map(|c| format!("{} ({})", pair_name(t, c.a, c.b), c.status))
        .collect();
    if slow.is_empty() {
        writeln!(s, "No pair is slower than the others beyond the threshold.")?;
    } else {
        writeln!(s, "**Slow: {}.**", slow.join(", "))?;
    }
    if !failed.is_empty() {
        writeln!(s, " Not ok: {}.", failed.join(", "))?;
    }
    writeln!(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::pairs::tables;
    use crate::analysis::pairs::tests::{node_run, run, ONE_SLOW_GPU, ONE_SLOW_LINK};

    /// The section of one table, at a threshold of 5 %.
    fn section(t: &PairTable) -> String {
        let mut s = String::new();
        markdown(&mut s, std::slice::from_ref(t), 0.05, None).unwrap();
        s
    }

    #[test]
    fn the_slow_pair_is_named_and_marked_in_the_matrix() {
        let s = section(&tables(&run(&ONE_SLOW_LINK), 0.05)[0]);
        assert!(s.contains("**Slow: GPUs 1 and 2 (+50 % time).**"), "{s}");
        assert!(
            s.contains("| **GPU 1** | 10.49 | - | **6.99** (slow) | 10.38 |"),
            "{s}"
        );
        assert!(s.contains("| GPU 1 | 3/3 | 10.38 | +2 % |"), "{s}");
        assert!(!s.contains("**Slow GPU"), "{s}");
    }

    #[test]
    fn a_gpu_whose_every_pair_is_slow_gets_its_own_sentence() {
        let s = section(&tables(&run(&ONE_SLOW_GPU), 0.05)[0]);
        assert!(
            s.contains("**Slow GPU 3**: every one of its 3 pairs is slower than the pairs without it (+60 % time)"),
            "{s}"
        );
    }

    #[test]
    fn node_pairs_are_named_by_host() {
        let s = section(&tables(&node_run(), 0.05)[0]);
        assert!(
            s.contains("Pairs of nodes (`run --pairs`: the 4 ranks of both nodes)."),
            "{s}"
        );
        assert!(s.contains("| | a | b | c |"), "{s}");
        assert!(
            s.contains("**Slow node c**: every one of its 2 pairs"),
            "{s}"
        );
        assert!(s.contains("nodes b and c (+"), "{s}");
    }

    #[test]
    fn no_pairs_no_section() {
        let mut s = String::new();
        markdown(&mut s, &[], 0.05, Some(4)).unwrap();
        assert_eq!(s, "");
    }
}
