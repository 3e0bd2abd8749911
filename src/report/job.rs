//! The report's "Your job": for a sweep made with `--sizes-from`, what each config
//! costs the job whose collectives it measured (`analysis::job`): its communication
//! time under the baseline, the change under every other config with its interval
//! over the rounds, and which of the job's collectives and sizes take the time.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::job::{costs, JobCost};
use crate::config::SizesFrom;
use crate::export::reader::RunData;
use crate::stats::change::Change;
use crate::units::{format_us, Bytes};

/// Appends the section; nothing for a run without a job's calls in its manifest.
/// `threshold`: the noise band the answers use (a change within it is none);
/// `drawn`: the charts under plots/, of which the section shows the job's
/// (`plot::job`) and returns their names.
pub fn section<'a>(
    s: &mut String,
    run: &RunData,
    baseline: &str,
    threshold: f64,
    drawn: &'a [String],
) -> Result<Vec<&'a str>> {
    let Some(job) = run
        .manifest
        .sizes_from
        .as_ref()
        .filter(|j| !j.calls.is_empty())
    else {
        return Ok(Vec::new());
    };
    let mut shown = Vec::new();
    let others: Vec<&str> = run
        .manifest
        .configs
        .iter()
        .map(|c| c.name.as_str())
        .filter(|c| *c != baseline)
        .collect();
    let all: Vec<JobCost> = others
        .iter()
        .flat_map(|c| costs(run, job, baseline, c, threshold))
        .collect();
    writeln!(s, "## Your job\n")?;
    writeln!(
        s,
        "The job of `{}`: {} (collective, size) with their calls {}. Its communication time is the calls x each case's time, round by round; the change under another config is decided as one case per rank count (docs/guide/statistics.md).\n",
        job.file,
        job.calls.len(),
        job.per
    )?;
    if all.is_empty() {
        writeln!(
            s,
            "No config other than `{baseline}` measured the job's sizes: nothing to weigh.\n"
        )?;
        return Ok(shown);
    }
    let shm_off = crate::analysis::verdict::shm_off_config(run);
    let mut counts: Vec<u32> = all.iter().map(|c| c.nranks).collect();
    counts.dedup();
    for n in counts {
        let here: Vec<&JobCost> = all.iter().filter(|c| c.nranks == n).collect();
        writeln!(
            s,
            "### {}\n",
            crate::units::plural(n as usize, "rank", "ranks")
        )?;
        let chart = format!("job-n{n}.svg");
        if let Some(name) = drawn.iter().find(|d| **d == chart) {
            writeln!(s, "![{name}](plots/{name})\n")?;
            shown.push(name.as_str());
        }
        let base_us = here[0].base_us;
        writeln!(
            s,
            "With `{baseline}` the job spends {} {} in these collectives.\n",
            format_us(base_us),
            job.per
        )?;
        writeln!(
            s,
            "| config | job's time | change | interval | rounds | answer |"
        )?;
        writeln!(s, "|---|---|---|---|---|---|")?;
        for c in &here {
            let (interval, rounds) = match (c.case.interval, c.case.estimate) {
                (Some(i), Some(e)) if e.se.is_some() => (
                    super::decision::range(i, c.change()),
                    e.cand_rounds.to_string(),
                ),
                _ => ("-".to_string(), "-".to_string()),
            };
            writeln!(
                s,
                "| {} | {} | {} ({}) | {interval} | {rounds} | {} |",
                c.cand,
                format_us(c.cand_us),
                super::decision::how_much(c.change()),
                signed_us(c.cand_us - c.base_us),
                c.case.change.word(),
            )?;
        }
        writeln!(s)?;
        // The table for the config that disables SHM where there is one, else the
        // one that changes the job most.
        let first = here
            .iter()
            .find(|c| Some(&c.cand) == shm_off.as_ref())
            .or_else(|| {
                here.iter()
                    .max_by(|a, b| a.change().abs().total_cmp(&b.change().abs()))
            })
            .copied()
            .unwrap_or(here[0]);
        writeln!(
            s,
            "Where the time goes, with `{baseline}` and `{}`:\n",
            first.cand
        )?;
        writeln!(
            s,
            "| collective | size | calls | `{baseline}` | `{}` | share |",
            first.cand
        )?;
        writeln!(s, "|---|---|---|---|---|---|")?;
        for e in &first.entries {
            let share = e
                .base_us
                .filter(|_| first.base_us > 0.0)
                .map(|t| format!("{:.0} %", 100.0 * t / first.base_us))
                .unwrap_or_else(|| "-".into());
            let time = |t: Option<f64>| t.map(format_us).unwrap_or_else(|| "not measured".into());
            writeln!(
                s,
                "| {} | {}{} | {} | {} | {} | {share} |",
                e.collective,
                Bytes(e.bytes),
                if e.interpolated {
                    " (interpolated)"
                } else {
                    ""
                },
                e.calls,
                time(e.base_us),
                time(e.cand_us)
            )?;
        }
        writeln!(s)?;
        if first.interpolated > 0 {
            writeln!(s, "{}.\n", interpolated_words(first.interpolated))?;
        }
        if first.unmeasured > 0 {
            writeln!(
                s,
                "{} of the job's sizes have no ok case in both configs at {n} ranks, nor measured sizes on both sides of them, and are left out of the totals.\n",
                first.unmeasured
            )?;
        }
    }
    Ok(shown)
}

/// The SHM verdict on the job's time (`analysis::verdict::job`), as the lead of the
/// report's verdict: the answer for the job, then what disabling SHM costs it at each
/// rank count. None without a job or a config that disables SHM.
pub fn verdict_lead(run: &RunData, baseline: &str, threshold: f64) -> Option<String> {
    let v = crate::analysis::verdict::job::for_job(run, baseline, threshold)?;
    let job = run.manifest.sizes_from.as_ref()?;
    let words = super::verdict::job_words(&v);
    let mut s = format!(
        "**{}** (the job of `{}`, {} (collective, size) with their calls {}).\n",
        crate::units::capitalized(words.trim_start_matches("your job: ")),
        job.file,
        job.calls.len(),
        job.per
    );
    let subject = format!("Disabling SHM (`{}`)", v.shm_off);
    for c in &v.costs {
        let on = crate::units::plural(c.nranks as usize, "rank", "ranks");
        s.push_str(&format!("\n- On {on}: {}", headline(c, &subject, &job.per)));
    }
    s.push_str("\n\nPer size, over every size measured:\n");
    Some(s)
}

/// What a comparison costs a job, for `compare --workload`: a line per config pair
/// and rank count with the job's times, the change and its answer against the
/// threshold.
pub fn compare_lines(costs: &[JobCost], job: &SizesFrom) -> Vec<String> {
    let mut lines = vec![format!(
        "your job ({}: {} (collective, size) with their calls {}):",
        job.file,
        job.calls.len(),
        job.per
    )];
    if costs.is_empty() {
        lines.push("  no case of both sides matches the job's sizes: nothing to weigh".into());
    } else if costs.iter().any(|c| c.base == c.cand) {
        lines.push("  (two runs: each interval holds the variation between process groups within each run, not between runs; a baseline of several runs tells those apart)".into());
    }
    for c in costs {
        let pair = if c.base == c.cand {
            c.base.clone()
        } else {
            format!("{} -> {}", c.base, c.cand)
        };
        lines.push(format!(
            "  {pair}, {}: {} -> {} {}",
            crate::units::plural(c.nranks as usize, "rank", "ranks"),
            format_us(c.base_us),
            format_us(c.cand_us),
            job.per
        ));
        let subject = if c.base == c.cand {
            "the candidate".to_string()
        } else {
            format!("`{}`", c.cand)
        };
        lines.push(format!("    {}", headline(c, &subject, &job.per)));
        if c.interpolated > 0 {
            lines.push(format!("    {}", interpolated_words(c.interpolated)));
        }
        if c.unmeasured > 0 {
            lines.push(format!(
                "    {} of the job's sizes have no ok case on both sides, nor measured sizes around them, and are left out",
                c.unmeasured
            ));
        }
    }
    lines
}

/// What an interpolated size is, in words.
fn interpolated_words(n: usize) -> String {
    let (was, whose) = if n == 1 {
        ("was", "its time is")
    } else {
        ("were", "each one's time is")
    };
    format!(
        "{n} of the job's sizes {was} not measured: {whose} interpolated on the latency-bandwidth line (alpha + bytes / beta) through the measured sizes on either side, round by round"
    )
}

fn signed_us(us: f64) -> String {
    if us < 0.0 {
        format!("-{}", format_us(-us))
    } else {
        format!("+{}", format_us(us))
    }
}

/// The answer for one config in a sentence: the job's change with its interval,
/// the time it makes, and its word.
fn headline(c: &JobCost, subject: &str, per: &str) -> String {
    let change = super::decision::case_words(&c.case);
    let failed = if c.failed > 0 {
        format!(", {} of its sizes failed", c.failed)
    } else {
        String::new()
    };
    // "slower" and "faster" are in the change's words already.
    let answer = match c.case.change {
        Change::Slower | Change::Faster => String::new(),
        other => format!(": {}", other.word()),
    };
    format!(
        "{subject}: {change}, {} {per}{failed}{answer}.",
        signed_us(c.cand_us - c.base_us),
    )
}
