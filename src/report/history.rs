//! The history as people and programs read it: the steps first (each with the two
//! runs around it and what changed), then one line per series, as an aligned table
//! for the terminal or Markdown; JSON of everything; CSV with a row per point.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::history::{Fact, History, Series, Step};
use crate::stats::change::Change;
use crate::units::{format_us, plural, Bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    /// One page for a browser, with the charts drawn into a folder when given one
    /// ([`page`]).
    Html,
    Json,
    Csv,
}

pub fn render(h: &History, format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(h)? + "\n",
        Format::Csv => csv(h)?,
        Format::Table | Format::Markdown => text(h, format == Format::Markdown)?,
        Format::Html => page(h, &[], None)?,
    })
}

/// The history as one page: its Markdown, then `charts` (SVG files in `dir`) inline.
pub fn page(
    h: &History,
    charts: &[std::path::PathBuf],
    dir: Option<&std::path::Path>,
) -> Result<String> {
    let mut md = text(h, true)?;
    let svgs: Vec<String> = charts
        .iter()
        .filter(|c| c.extension().is_some_and(|e| e == "svg"))
        .filter_map(|c| Some(c.file_name()?.to_string_lossy().into_owned()))
        .collect();
    if !svgs.is_empty() {
        writeln!(md, "\n### Charts\n")?;
        for name in svgs {
            writeln!(md, "![{name}]({name})\n")?;
        }
    }
    let title = format!(
        "nccl-bench history of {}",
        plural(h.runs.len(), "run", "runs")
    );
    Ok(super::html::page(&title, &md, dir))
}

/// "default, 2 ranks, 1 GiB" (the backend too when the history has several, and
/// the datatype and op when it has several of them: "default, 2 ranks, 1 GiB, half
/// max").
fn series_name(h: &History, s: &Series) -> String {
    let several = h.series.iter().any(|o| o.backend != s.backend);
    let backend = if several {
        format!("{} ", s.backend)
    } else {
        String::new()
    };
    let kind = if h.several_kinds() {
        format!(", {} {}", s.dtype, s.op)
    } else {
        String::new()
    };
    format!(
        "{backend}{}, {}, {}{kind}",
        crate::ops::collective::labelled(&s.config, &s.collective),
        plural(s.nranks as usize, "rank", "ranks"),
        Bytes(s.bytes)
    )
}

fn run_name(h: &History, i: usize) -> String {
    let r = &h.runs[i];
    if r.started_at.is_empty() {
        r.name.clone()
    } else {
        format!("{} ({})", r.name, r.started_at)
    }
}

/// The change as every answer says it: `17.9 % slower (+5.3 % to +31.9 %)`, `2.1x
/// faster (...)`; the word where the estimate alone would not say it.
fn change(verdict: Change, change: f64, ci: (f64, f64)) -> String {
    let words = format!(
        "{} ({})",
        super::decision::how_much(change),
        super::decision::range(ci, change)
    );
    match verdict {
        Change::Slower | Change::Faster => words,
        other => format!("{other}: {words}"),
    }
}

/// A fact's name: `NCCL`, `shm-off's variables`.
pub fn fact_words(fact: Fact, config: &str) -> String {
    match fact {
        Fact::Nccl => "NCCL".into(),
        Fact::NcclLibrary => "NCCL library".into(),
        Fact::Driver => "driver".into(),
        Fact::Cuda => "CUDA".into(),
        Fact::Gpus => "GPUs".into(),
        Fact::Hosts => "hosts".into(),
        Fact::Variables => format!("{config}'s variables"),
        Fact::Registration => format!("{config}'s buffer registration"),
        Fact::Tool => "nccl-bench".into(),
        Fact::Choice => "NCCL's choice".into(),
    }
}

fn what_changed(step: &Step, config: &str) -> String {
    if step.differences.is_empty() {
        return "the manifests record no difference (look at the nodes, firmware, load)".into();
    }
    step.differences
        .iter()
        .map(|d| format!("{} {} -> {}", fact_words(d.what, config), d.before, d.after))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The step lines: series, change, the two runs, what changed.
fn step_lines(h: &History) -> Vec<String> {
    let mut steps: Vec<(&Series, &Step)> = h.steps().collect();
    steps.sort_by_key(|(_, st)| (st.after, st.verdict != Change::Slower));
    steps
        .into_iter()
        .map(|(s, st)| {
            format!(
                "{}: {} between {} and {}{}: {}",
                series_name(h, s),
                change(st.verdict, st.change, st.ci),
                run_name(h, st.before),
                run_name(h, st.after),
                if st.confirmed {
                    ""
                } else {
                    " (the latest run: not confirmed by a later one yet)"
                },
                what_changed(st, &s.config)
            )
        })
        .collect()
}

fn one_off_lines(h: &History) -> Vec<String> {
    h.series
        .iter()
        .flat_map(|s| {
            s.one_offs.iter().map(move |o| {
                format!(
                    "{}: {} in {}, back in the next run",
                    series_name(h, s),
                    change(o.verdict, o.change, o.ci),
                    run_name(h, o.run)
                )
            })
        })
        .collect()
}

/// Three significant digits (at least two decimals): 9.70, 0.000781.
fn gbps(v: f64) -> String {
    let decimals = if v > 0.0 {
        (2 - v.log10().floor() as i32).max(2) as usize
    } else {
        2
    };
    format!("{v:.decimals$}")
}

const HEADERS: [&str; 10] = [
    "series", "runs", "first", "last", "busbw", "min", "max", "steps", "one-off", "not ok",
];

/// One row per series: its median and busbw in the first and last run it has, the
/// busbw range, and its counts.
fn series_row(h: &History, s: &Series) -> Vec<String> {
    let measured: Vec<_> = s.points.iter().filter(|p| p.median_us.is_some()).collect();
    let time = |p: Option<&&crate::analysis::history::Point>| {
        p.and_then(|p| p.median_us)
            .map(format_us)
            .unwrap_or_else(|| "-".into())
    };
    let bw: Vec<f64> = measured.iter().filter_map(|p| p.busbw_gbps).collect();
    let gb = |v: Option<f64>| v.map(gbps).unwrap_or_else(|| "-".into());
    let first_last_bw = match (
        measured.first().and_then(|p| p.busbw_gbps),
        measured.last().and_then(|p| p.busbw_gbps),
    ) {
        (Some(a), Some(b)) => format!("{} -> {} GB/s", gbps(a), gbps(b)),
        _ => "-".into(),
    };
    vec![
        series_name(h, s),
        s.points.len().to_string(),
        time(measured.first()),
        time(measured.last()),
        first_last_bw,
        gb(bw.iter().copied().reduce(f64::min)),
        gb(bw.iter().copied().reduce(f64::max)),
        s.steps.len().to_string(),
        s.one_offs.len().to_string(),
        s.points
            .iter()
            .filter(|p| p.status != "ok")
            .count()
            .to_string(),
    ]
}

fn text(h: &History, markdown: bool) -> Result<String> {
    let mut s = String::new();
    let (first, last) = (h.runs.first(), h.runs.last());
    let span = match (first, last) {
        (Some(a), Some(b)) if !a.started_at.is_empty() => {
            format!(", {} to {}", a.started_at, b.started_at)
        }
        _ => String::new(),
    };
    let head = format!(
        "history of {}{span}: {}, each run against up to {} runs of the level before it, threshold +-{:.1} %",
        plural(h.runs.len(), "run", "runs"),
        plural(h.series.len(), "series", "series"),
        h.window,
        h.threshold * 100.0
    );
    let steps = step_lines(h);
    let one_offs = one_off_lines(h);
    let rows: Vec<Vec<String>> = h.series.iter().map(|x| series_row(h, x)).collect();
    if markdown {
        writeln!(s, "## nccl-bench history\n\n{head}\n")?;
        writeln!(s, "### {}\n", plural(steps.len(), "step", "steps"))?;
        for l in &steps {
            writeln!(s, "- {l}")?;
        }
        if !one_offs.is_empty() {
            writeln!(s, "\n### One-off runs\n")?;
            for l in &one_offs {
                writeln!(s, "- {l}")?;
            }
        }
        writeln!(s, "\n### Series\n")?;
        writeln!(s, "| {} |", HEADERS.join(" | "))?;
        writeln!(s, "|{}", "---|".repeat(HEADERS.len()))?;
        for r in &rows {
            writeln!(s, "| {} |", r.join(" | "))?;
        }
    } else {
        let width = crate::units::TERMINAL_WIDTH;
        crate::units::wrap_into(&mut s, &head, width, "", "  ");
        writeln!(s, "\n{}:", plural(steps.len(), "step", "steps"))?;
        for l in &steps {
            crate::units::wrap_into(&mut s, l, width, "  ", "    ");
        }
        if !one_offs.is_empty() {
            writeln!(s, "\none-off runs:")?;
            for l in &one_offs {
                crate::units::wrap_into(&mut s, l, width, "  ", "    ");
            }
        }
        writeln!(s)?;
        // The terminal's table leaves out the busbw columns (the Markdown and the CSV
        // have them), so that it fits the width.
        let keep = [0, 1, 2, 3, 7, 8, 9];
        let headers: Vec<&str> = keep.iter().map(|&i| HEADERS[i]).collect();
        let narrow: Vec<Vec<String>> = rows
            .iter()
            .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
            .collect();
        s.push_str(&aligned(&headers, &narrow));
    }
    Ok(s)
}

/// An aligned text table: the first column left-aligned, the others right-aligned.
fn aligned(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut s = line(headers.to_vec());
    for r in rows {
        s.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    s
}

/// A row per point: the run, the series, the measurement and what the history made
/// of it (`step` on a step's first run, `one-off`).
fn csv(h: &History) -> Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "run",
        "started_at",
        "backend",
        "config",
        "nranks",
        "bytes",
        "dtype",
        "op",
        "status",
        "median_us",
        "median_ci_low_us",
        "median_ci_high_us",
        "busbw_gbps",
        "trusted",
        "event",
        "change",
        "collective",
    ])?;
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_default();
    for s in &h.series {
        for p in &s.points {
            let step = s.steps.iter().find(|st| st.after == p.run);
            let one_off = s.one_offs.iter().find(|o| o.run == p.run);
            let (event, change) = match (step, one_off) {
                (Some(st), _) => (format!("step {}", st.verdict), Some(st.change)),
                (_, Some(o)) => (format!("one-off {}", o.verdict), Some(o.change)),
                _ => (String::new(), None),
            };
            let run = &h.runs[p.run];
            w.write_record([
                run.name.clone(),
                run.started_at.clone(),
                s.backend.clone(),
                s.config.clone(),
                s.nranks.to_string(),
                s.bytes.to_string(),
                s.dtype.clone(),
                s.op.clone(),
                p.status.clone(),
                opt(p.median_us),
                opt(p.ci_us.map(|c| c.0)),
                opt(p.ci_us.map(|c| c.1)),
                opt(p.busbw_gbps),
                p.trusted.to_string(),
                event,
                change.map(|c| format!("{c:.5}")).unwrap_or_default(),
                s.collective.clone(),
            ])?;
        }
    }
    Ok(String::from_utf8(
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::history::build;
    use crate::analysis::history::tests::{opts, run, several_kinds};

    #[test]
    fn series_are_named_with_their_datatype_and_op_when_there_are_several() {
        let runs: Vec<_> = (0..3).map(|i| run(i, 1.0, "2.21.5")).collect();
        let table = render(&build(&runs, &opts()), Format::Table).unwrap();
        assert!(table.contains("default, 2 ranks, 1 GiB"), "{table}");
        assert!(!table.contains("float sum"), "{table}");
        let table = render(&build(&several_kinds(runs), &opts()), Format::Table).unwrap();
        assert!(
            table.contains("default, 2 ranks, 1 GiB, float sum"),
            "{table}"
        );
        assert!(
            table.contains("default, 2 ranks, 1 GiB, half max"),
            "{table}"
        );
    }
}
