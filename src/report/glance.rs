//! The report's first screen: the answer and its action, then per rank count the two
//! numbers that matter for each config side by side (busbw at the largest size,
//! latency at the smallest, each against the baseline as the decision model reads
//! it), the transports that carried the traffic, and what is not trusted. The
//! `answer:` line a sweep prints is the same answer.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::Result;

use super::decision::how_much;
use crate::analysis::compare::CompareReport;
use crate::analysis::verdict::transports_used;
use crate::export::reader::{CaseRow, RunData};
use crate::units::{format_us, Bytes};

/// ` (2.3x slower)`: the change at (`nranks`, `bytes`) of the pair, as decided; empty
/// where the pair has no such case.
fn against(pair: Option<&CompareReport>, nranks: u32, bytes: u64) -> String {
    pair.and_then(|p| {
        p.rows
            .iter()
            .find(|r| r.nranks == nranks && r.bytes == bytes)
    })
    .and_then(|r| r.case.relative())
    .map(|c| format!(" ({})", how_much(c)))
    .unwrap_or_default()
}

/// One config at one rank count: `2.27 GB/s (2.3x slower), 18.04 us (67x slower);
/// NET/Socket`, or why it has no number.
fn cell(
    rows: &[&CaseRow],
    pair: Option<&CompareReport>,
    nranks: u32,
    (small, large): (u64, u64),
) -> String {
    let at = |bytes: u64| rows.iter().find(|r| r.bytes == bytes);
    // A flagged value says so, as in the tables below.
    let flag = |r: &CaseRow| {
        if r.is_trusted() {
            String::new()
        } else {
            format!(" {}", r.quality)
        }
    };
    let bw = match at(large) {
        Some(r) if r.is_ok() => r.busbw_gbps.map_or("-".to_string(), |b| {
            format!("{b:.2} GB/s{}{}", flag(r), against(pair, nranks, large))
        }),
        Some(r) => r.status.clone(),
        None => "-".into(),
    };
    let latency = match at(small) {
        Some(r) if r.is_ok() => r.typical_us().map_or("-".to_string(), |t| {
            format!(
                "{}{}{}",
                format_us(t),
                flag(r),
                against(pair, nranks, small)
            )
        }),
        Some(r) => r.status.clone(),
        None => "-".into(),
    };
    let transports = transports_used(rows);
    let via = if transports.is_empty() {
        String::new()
    } else {
        format!("; {}", transports.join(", "))
    };
    format!("{bw}, {latency}{via}")
}

/// The first screen, in Markdown: `answer` (the verdict in a few words), a table of
/// rank counts by configs of `main` (the run's all-reduce, or its one collective), and
/// a line on what is not trusted over the whole `run`. `pairs` are each config
/// against `baseline`, decided over all its cases.
pub fn section(
    s: &mut String,
    run: &RunData,
    main: &RunData,
    baseline: &str,
    answer: Option<&str>,
    pairs: &[(String, CompareReport)],
) -> Result<()> {
    let ok: Vec<&CaseRow> = main.cases.iter().filter(|c| !c.is_unsupported()).collect();
    if ok.is_empty() {
        return Ok(());
    }
    writeln!(s, "## At a glance\n")?;
    if let Some(answer) = answer {
        writeln!(s, "**Answer: {answer}.**\n")?;
    }
    let mut configs: Vec<&str> = Vec::new();
    if ok.iter().any(|c| c.config == baseline) {
        configs.push(baseline);
    }
    for c in &ok {
        if !configs.contains(&c.config.as_str()) {
            configs.push(&c.config);
        }
    }
    let heads: String = configs.iter().map(|c| format!(" {c} |")).collect();
    writeln!(s, "| ranks |{heads}\n|---|{}", "---|".repeat(configs.len()))?;
    let counts: BTreeSet<u32> = ok.iter().map(|c| c.nranks).collect();
    let mut sizes = Vec::new();
    for n in counts {
        let at_n: Vec<&CaseRow> = ok.iter().copied().filter(|c| c.nranks == n).collect();
        let small = at_n.iter().map(|c| c.bytes).min().unwrap_or(0);
        let large = at_n.iter().map(|c| c.bytes).max().unwrap_or(0);
        if !sizes.contains(&(small, large)) {
            sizes.push((small, large));
        }
        let cells: String = configs
            .iter()
            .map(|config| {
                let mine: Vec<&CaseRow> = at_n
                    .iter()
                    .copied()
                    .filter(|c| c.config == *config)
                    .collect();
                let pair = pairs.iter().find(|(c, _)| c == config).map(|(_, p)| p);
                format!(" {} |", cell(&mine, pair, n, (small, large)))
            })
            .collect();
        writeln!(s, "| {n} |{cells}")?;
    }
    let sizes = match sizes.as_slice() {
        [(small, large)] => format!("busbw at {}, latency at {}", Bytes(*large), Bytes(*small)),
        _ => "busbw at the largest size, latency at the smallest".to_string(),
    };
    let against = if pairs.is_empty() {
        String::new()
    } else {
        format!("; in brackets, the change against {baseline} over the rounds both ran")
    };
    let of = match run.collectives().as_slice() {
        [_, _, ..] => format!(
            " of {}",
            main.collectives().first().map_or("", |c| c.name())
        ),
        _ => String::new(),
    };
    writeln!(
        s,
        "\nEach cell{of}: {sizes}{against}; then the transports NCCL used."
    )?;
    let all = run.cases.len();
    let not_run = run
        .cases
        .iter()
        .filter(|c| c.is_unsupported() || c.status == "skipped")
        .count();
    let failed = run.cases.iter().filter(|c| !c.is_ok()).count() - not_run;
    let flagged = run
        .cases
        .iter()
        .filter(|c| c.is_ok() && !c.is_trusted())
        .count();
    if failed + flagged + not_run == 0 {
        writeln!(
            s,
            "All {all} cases passed their check; the quality rules flagged none.\n"
        )?;
    } else {
        writeln!(
            s,
            "Not trusted: of {all} cases, {failed} failed, {not_run} did not run and {flagged} are flagged by the quality rules (listed below).\n"
        )?;
    }
    Ok(())
}
