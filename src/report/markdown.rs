//! `report.md`: what a person reads after a sweep. The machine and backend, the SHM
//! verdict with its evidence, one table per GPU count in the style of the well-known
//! SHM analysis (per config: busbw at the largest size, typical latency at 8 B and
//! 64 KiB (the geometric mean of the round medians), change against the baseline, significance, transports, status), and the
//! cases that failed with their reasons. Renders on GitHub.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::Result;

use super::verdict::{answer, explain, overall};
use crate::analysis::compare::{compare, CompareOptions, CompareReport, Side};
use crate::analysis::verdict::decide;
use crate::analysis::verdict::each::decide_each;
use crate::export::reader::{CaseRow, RunData};
use crate::model::SIMULATED_LABEL;
use crate::ops::collective::Collective;
use crate::units::{format_us, Bytes};

/// Builds the Markdown of a run's report.
/// `plots` are the files drawn for the run (their SVGs are embedded), or why none were.
pub fn markdown(
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
    plots: &std::result::Result<Vec<std::path::PathBuf>, String>,
    expected: &[crate::config::expected::Platform],
) -> Result<String> {
    let mut s = String::new();
    let name = run
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    writeln!(s, "# nccl-bench report: {name}\n")?;
    let m = &run.manifest;
    if m.backend.used == "host" {
        writeln!(
            s,
            "> **Host backend (CPU), not NCCL.** These numbers measure this machine's CPU transports (shared memory, TCP) between processes, not NCCL on GPUs.\n"
        )?;
    }
    if m.backend.used == SIMULATED_LABEL {
        writeln!(
            s,
            "> **Simulated GPUs (test stand-in), not a measurement.** The libnccl and libcuda of this run are nccl-bench's test stand-in (tests/gpu-sim): its times come from a cost model, to test nccl-bench, and say nothing about any hardware.\n"
        )?;
    }
    // The machine and the run's facts come last: a person decides from the verdict
    // and the tables first.
    let mut facts = String::new();
    super::machine::machine_section(&mut facts, run)?;

    // The charts, by their path under plots/ (a folder per collective when several).
    let drawn: Vec<String> = match plots {
        Ok(files) => files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "svg"))
            .filter_map(|f| {
                let name = f.file_name()?.to_string_lossy().into_owned();
                let folder = f.parent()?.file_name()?.to_string_lossy().into_owned();
                Some(if folder == crate::plot::PLOTS {
                    name
                } else {
                    format!("{folder}/{name}")
                })
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    let collectives = run.collectives();
    // The first screen: all-reduce's numbers where the run has it, else its first
    // collective's.
    let main = match collectives.as_slice() {
        [_, _, ..] => Some(
            run.of_collective(
                collectives
                    .iter()
                    .copied()
                    .find(|c| *c == Collective::AllReduce)
                    .unwrap_or(collectives[0]),
            ),
        ),
        _ => None,
    };
    let main = main.as_ref().unwrap_or(run);
    let answer = super::verdict::one_line(run, baseline, options.threshold);
    super::glance::section(
        &mut s,
        run,
        main,
        baseline,
        answer.as_deref(),
        &pair_reports(main, baseline, options),
    )?;
    verdict_section(&mut s, run, baseline, options)?;
    let job_charts = super::job::section(&mut s, run, baseline, options.threshold, &drawn)?;
    // Published figures are all-reduce's.
    run.for_collective(Collective::AllReduce, |one| {
        super::sections::expected::markdown(&mut s, one, expected)
    })?;
    cases_apart(&mut s, run)?;
    super::sections::nccl_logs::markdown(&mut s, run, expected)?;

    // What the NCCL logs of each (config, rank count) show, beside its row.
    let log_findings = crate::analysis::nccl_logs::findings(run);
    let mut shown: Vec<&str> = job_charts;
    for &collective in &collectives {
        let (mut chapter, folder) = if collectives.len() > 1 {
            (String::new(), format!("{}/", collective.name()))
        } else {
            (String::new(), String::new())
        };
        let owned;
        let one = if collectives.len() > 1 {
            owned = run.of_collective(collective);
            &owned
        } else {
            run
        };
        let counts: BTreeSet<u32> = one.cases.iter().map(|c| c.nranks).collect();
        // Each config against the baseline once, over every rank count: its family.
        let pairs = pair_reports(one, baseline, options);
        for nranks in counts {
            gpu_count_table(&mut chapter, one, nranks, baseline, &pairs, &log_findings)?;
            // This GPU count's charts under its table.
            let mine: Vec<String> = ["busbw", "latency", "relative"]
                .iter()
                .map(|kind| format!("{folder}{kind}-n{nranks}.svg"))
                .collect();
            for name in drawn.iter().filter(|n| mine.contains(n)) {
                writeln!(chapter, "![{name}](plots/{name})\n")?;
                shown.push(name);
            }
        }
        super::sections::nvls::markdown(&mut chapter, one, options)?;
        super::sections::tuning::markdown(&mut chapter, one, baseline, options)?;
        let shm_off = crate::analysis::verdict::shm_off_config(one);
        super::sections::model_table::markdown(
            &mut chapter,
            &crate::analysis::model_table::models(one),
            baseline,
            shm_off.as_deref(),
        )?;
        super::sections::pairs::markdown(
            &mut chapter,
            &crate::analysis::pairs::tables(one, options.threshold),
            options.threshold,
            (m.backend.used == "host").then_some(m.host.cpus),
        )?;
        if collectives.len() > 1 {
            chapter = retitle(&chapter, collective);
        }
        s.push_str(&chapter);
    }
    ceilings_section(&mut s, run)?;
    super::machine::rounds_section(&mut s, run)?;
    let rest: Vec<&String> = drawn
        .iter()
        .filter(|n| !shown.contains(&n.as_str()))
        .collect();
    match plots {
        Ok(_) if rest.is_empty() => {}
        Ok(_) => {
            writeln!(s, "## Plots\n")?;
            for name in rest {
                writeln!(s, "![{name}](plots/{name})\n")?;
            }
        }
        Err(why) => writeln!(s, "## Plots\n\nNo plots: {why}\n")?,
    }
    s.push_str(&facts);
    Ok(s)
}

/// "Keep SHM enabled?": the verdict, or for a run of several collectives the answer
/// over all of them, a line per collective, and each one's verdict in full.
fn verdict_section(
    s: &mut String,
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
) -> Result<()> {
    let each = decide_each(run, baseline, options);
    // With a job's collectives, the job's time leads while SHM works at all.
    let shm_works = !each.is_empty() && each.iter().all(|(_, v)| v.compares_times());
    let lead = super::job::verdict_lead(run, baseline, options.threshold).filter(|_| shm_works);
    let heading = |s: &mut String, title: &str| -> std::fmt::Result {
        writeln!(s, "{title}\n")?;
        match &lead {
            Some(lead) => writeln!(s, "{lead}"),
            None => Ok(()),
        }
    };
    match &each[..] {
        [] => {
            writeln!(s, "## Keep SHM enabled?\n")?;
            let v = decide(run, baseline, options);
            writeln!(s, "{}\n", explain(&v, baseline, Collective::AllReduce))?;
        }
        [(c, v)] => {
            let title = match c {
                Collective::AllReduce => "## Keep SHM enabled?".to_string(),
                c => format!("## Keep SHM enabled? ({c})"),
            };
            heading(s, &title)?;
            writeln!(s, "{}\n", explain(v, baseline, *c))?;
        }
        several => {
            heading(s, "## Keep SHM enabled?")?;
            writeln!(s, "{}\n", overall(several))?;
            writeln!(s, "| collective | answer |\n|---|---|")?;
            for (c, v) in several {
                writeln!(s, "| {c} | {} |", answer(v).replace('|', "\\|"))?;
            }
            writeln!(s)?;
            for (c, v) in several {
                writeln!(s, "### {c}\n\n{}\n", explain(v, baseline, *c))?;
            }
        }
    }
    Ok(())
}

/// A collective's chapter of a run of several: its `##` headings name it.
fn retitle(chapter: &str, collective: Collective) -> String {
    chapter
        .lines()
        .map(|line| match line.strip_prefix("## ") {
            Some(title) => format!("## {collective}: {title}\n"),
            None => format!("{line}\n"),
        })
        .collect()
}

/// The cases that did not pass, with their reasons, and the cases the quality rules
/// set apart: what not to read as evidence before reading the tables.
fn cases_apart(s: &mut String, run: &RunData) -> Result<()> {
    // Sizes too small for a collective to give each rank an element: no case.
    let not_run = &run.manifest.sizes_not_run;
    if !not_run.is_empty() {
        writeln!(s, "## Sizes not run\n")?;
        for why in not_run {
            writeln!(s, "- {why}")?;
        }
        writeln!(s)?;
    }
    let failed: Vec<&CaseRow> = run.cases.iter().filter(|c| !c.is_ok()).collect();
    // The config, and the collective where the run has several.
    let several = run.collectives().len() > 1;
    let config = |c: &CaseRow| {
        if several {
            format!("{} ({})", c.config, c.coll())
        } else {
            c.config.clone()
        }
    };
    if !failed.is_empty() {
        writeln!(s, "## Cases that did not pass\n")?;
        writeln!(
            s,
            "| config | ranks | size | status | reason |\n|---|---|---|---|---|"
        )?;
        for c in failed {
            writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                config(c),
                c.nranks,
                Bytes(c.bytes),
                c.status,
                c.error.replace('|', "\\|")
            )?;
        }
        writeln!(s)?;
    }

    let flagged: Vec<&CaseRow> = run
        .cases
        .iter()
        .filter(|c| c.is_ok() && !c.is_trusted())
        .collect();
    if !flagged.is_empty() {
        writeln!(s, "## Cases flagged\n")?;
        writeln!(
            s,
            "Flagged by the quality rules (docs/guide/run-directory.md, \"Trusting the numbers\"). They stay in every decision, marked, and are never called within.\n"
        )?;
        writeln!(
            s,
            "| config | ranks | size | quality | why |\n|---|---|---|---|---|"
        )?;
        for c in flagged {
            writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                config(c),
                c.nranks,
                Bytes(c.bytes),
                c.quality,
                c.quality_note.replace('|', "\\|")
            )?;
        }
        writeln!(s)?;
    }
    Ok(())
}

/// The link rates measured before the sweep, and the ring ceiling per rank count.
fn ceilings_section(s: &mut String, run: &RunData) -> Result<()> {
    let Some(c) = &run.manifest.ceilings else {
        return Ok(());
    };
    writeln!(s, "## Link ceilings\n")?;
    writeln!(
        s,
        "Measured just before the sweep. A ring collective's busbw cannot exceed the slowest link of its ring, so each case's busbw is also given as a percentage of its ring's ceiling (`ceiling_pct` in results.csv).\n"
    )?;
    if let Some(cache) = c
        .cache_bytes
        .filter(|_| run.manifest.backend.used == "host")
    {
        writeln!(
            s,
            "Cases whose ranks' buffers fit in the {} last-level cache have no ceiling: they copy at the cache's rate.\n",
            Bytes(cache)
        )?;
    }
    if !c.links.is_empty() {
        writeln!(s, "| link | between | rate | how |\n|---|---|---|---|")?;
        for l in &c.links {
            let between = if l.gpus.is_empty() {
                "this host".to_string()
            } else {
                let gpus: Vec<String> = l.gpus.iter().map(|g| format!("GPU {g}")).collect();
                gpus.join(" and ")
            };
            let kind = l.kind.as_str();
            writeln!(s, "| {kind} | {between} | {:.2} GB/s | {} |", l.gbps, l.how)?;
        }
        writeln!(s)?;
    }
    let counts: Vec<u32> = run
        .cases
        .iter()
        .map(|c| c.nranks)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let host = run.manifest.backend.used == "host";
    let rings = crate::analysis::ceiling::rings(c, host, &counts);
    if !rings.is_empty() {
        writeln!(s, "| ranks | ring over | busbw ceiling |\n|---|---|---|")?;
        for (n, what, gbps) in rings {
            writeln!(s, "| {n} | {what} | {gbps:.2} GB/s |")?;
        }
        writeln!(s)?;
    }
    for e in &c.errors {
        writeln!(s, "- Not measured: {e}")?;
    }
    if !c.errors.is_empty() {
        writeln!(s)?;
    }
    Ok(())
}

/// A table cell with the case's quality flag when it is not to be trusted.
fn marked(cell: String, row: Option<&CaseRow>) -> String {
    match row {
        Some(r) if r.is_ok() && !r.is_trusted() => format!("{cell} ({})", r.quality),
        _ => cell,
    }
}

/// The case of `rows` whose size is closest to `bytes`.
fn nearest<'a>(rows: &[&'a CaseRow], bytes: u64) -> Option<&'a CaseRow> {
    rows.iter().copied().min_by_key(|r| r.bytes.abs_diff(bytes))
}

fn gpu_count_table(
    s: &mut String,
    run: &RunData,
    nranks: u32,
    baseline: &str,
    pairs: &[(String, CompareReport)],
    log_findings: &[crate::analysis::nccl_logs::LogFinding],
) -> Result<()> {
    let rows: Vec<&CaseRow> = run.cases.iter().filter(|c| c.nranks == nranks).collect();
    let largest = rows.iter().map(|r| r.bytes).max().unwrap_or(0);
    let small = nearest(&rows, 8).map(|r| r.bytes).unwrap_or(8);
    let medium = nearest(&rows, 65536).map(|r| r.bytes).unwrap_or(65536);
    // The latency near 8 B and near 64 KiB: one column where they are one size.
    let mut latency_sizes = vec![small, medium];
    latency_sizes.dedup();
    writeln!(s, "## {}\n", run.ranks(nranks))?;
    let latency_heads: String = latency_sizes
        .iter()
        .map(|b| format!(" latency at {} |", Bytes(*b)))
        .collect();
    writeln!(
        s,
        "| config | busbw at {} | of ceiling |{latency_heads} vs {baseline} at {} | change | transports | status |",
        Bytes(largest),
        Bytes(largest)
    )?;
    writeln!(
        s,
        "|---|---|---|{}---|---|---|---|",
        "---|".repeat(latency_sizes.len())
    )?;
    let mut configs: Vec<&str> = Vec::new();
    for r in &rows {
        if !configs.contains(&r.config.as_str()) {
            configs.push(&r.config);
        }
    }
    for config in configs {
        let mine: Vec<&CaseRow> = rows
            .iter()
            .copied()
            .filter(|r| r.config == config)
            .collect();
        let at = |bytes: u64| mine.iter().copied().find(|r| r.bytes == bytes);
        let busbw = marked(
            at(largest)
                .and_then(|r| r.busbw_gbps)
                .map(|b| format!("{b:.2} GB/s"))
                .unwrap_or_else(|| "-".into()),
            at(largest),
        );
        let latency = |bytes| {
            marked(
                at(bytes)
                    .and_then(CaseRow::typical_us)
                    .map(format_us)
                    .unwrap_or_else(|| "-".into()),
                at(bytes),
            )
        };
        let (change, significant) = if config == baseline {
            ("baseline".to_string(), String::new())
        } else {
            let pair = pairs.iter().find(|(c, _)| c == config).map(|(_, r)| r);
            versus_baseline(pair, nranks, largest)
        };
        let transports: BTreeSet<&str> = mine
            .iter()
            .map(|r| r.transports.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        let bad = mine.iter().filter(|r| !r.is_ok()).count();
        let mut status = if bad == 0 {
            "ok".to_string()
        } else {
            format!("{bad} of {} not ok", mine.len())
        };
        // The findings of this row's NCCL logs, by id ("What NCCL's logs say").
        let logged: Vec<&str> = log_findings
            .iter()
            .filter(|f| f.cases.iter().any(|(c, n)| c == config && *n == nranks))
            .map(|f| f.id)
            .collect();
        if !logged.is_empty() {
            status.push_str(&format!("; NCCL log: {}", logged.join(", ")));
        }
        let of_ceiling = at(largest)
            .and_then(|r| r.ceiling_pct)
            .map(|p| format!("{p:.0} %"))
            .unwrap_or_else(|| "-".into());
        let latencies: String = latency_sizes
            .iter()
            .map(|b| format!(" {} |", latency(*b)))
            .collect();
        writeln!(
            s,
            "| {config} | {busbw} | {of_ceiling} |{latencies} {change} | {significant} | {} | {status} |",
            transports.into_iter().collect::<Vec<_>>().join(" "),
        )?;
    }
    writeln!(s)?;
    Ok(())
}

/// Every config of `run` but the baseline, compared with it over all its cases (the
/// pair's family, `analysis::family`), as `compare --config-a/--config-b` does.
fn pair_reports(
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
) -> Vec<(String, CompareReport)> {
    fn side<'a>(run: &'a RunData, name: &'a str) -> Side<'a> {
        Side {
            run,
            config: Some(name),
            label: name.to_string(),
        }
    }
    let mut configs: Vec<&str> = Vec::new();
    for c in &run.cases {
        if c.config != baseline && !configs.contains(&c.config.as_str()) {
            configs.push(&c.config);
        }
    }
    configs
        .into_iter()
        .filter_map(|config| {
            let pair = compare(&side(run, baseline), &side(run, config), options).ok()?;
            Some((config.to_string(), pair))
        })
        .collect()
}

/// The change against the baseline at one size, with the interval it is decided on
/// (the pair's family over every case of the two configs), and its word.
fn versus_baseline(pair: Option<&CompareReport>, nranks: u32, bytes: u64) -> (String, String) {
    let Some(row) = pair.and_then(|p| {
        p.rows
            .iter()
            .find(|r| r.nranks == nranks && r.bytes == bytes)
    }) else {
        return ("-".into(), String::new());
    };
    let change = match (row.case.relative(), row.case.interval) {
        (Some(c), Some((lo, hi))) if lo != hi => format!(
            "{:+.1}% [{:+.1}, {:+.1}]",
            c * 100.0,
            lo * 100.0,
            hi * 100.0
        ),
        (Some(c), _) => format!("{:+.1}%", c * 100.0),
        _ => "-".into(),
    };
    let word = super::compare::outcome(row);
    (change, word)
}
