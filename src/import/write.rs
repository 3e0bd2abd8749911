//! An imported nccl-tests output (text or `-J` JSON) written as a normal run
//! directory (backend `nccl-tests`), so that compare (and report) read
//! the numbers people already have next to nccl-bench's own. The rows carry the
//! collective of the binary the output names (all_reduce, said to be assumed, when it
//! names none), with busbw as nccl-tests printed it (each binary's own factor).
//! Out-of-place rows go under the config's name, in-place rows under
//! `<config>-inplace`. Where the output
//! has per-iteration times (`-I 1` with `-J`), each case gets a histogram of them
//! and the percentile, median-interval and quality columns, so compare, check and
//! history treat it like a sweep's; otherwise only the mean is known and those
//! columns stay empty.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Result};

use super::facts::{checked_types, cluster, config_from_env, gpu_facts, iters_from_command};
use super::{ImportedRun, IterStats, Timing};
use crate::config::transport::{check_name, TransportConfig};
use crate::config::IterationPolicy;
use crate::export::csv::CaseRow;
use crate::export::{RunDir, RunWriter};
use crate::model::{
    BackendInfo, CaseCounts, CaseKey, CaseStatus, HostInfo, NcclChoice, RunManifest, RunStatus,
    ToolInfo, SCHEMA_VERSION,
};
use crate::ops::ReduceOp;
use crate::stats::quality::{
    case_flags, neighbour_flags, reasons, verdict, CaseShape, Drift, Flag, Point, Quality,
};
use crate::stats::LatencyRecorder;

pub const BACKEND: &str = "nccl-tests";

/// What to import, and where to (`import`'s flags).
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The nccl-tests output read.
    pub file: PathBuf,
    /// The run directory to create (never an existing one).
    pub out: PathBuf,
    /// The rows' config name [default: the preset the output's variables match].
    pub config: Option<String>,
    /// The rank count, where the output does not show it.
    pub nranks: Option<u32>,
    /// When nccl-tests ran, RFC 3339 (`--started-at`).
    pub started_at: Option<String>,
}

/// Writes the run directory of `parsed`, read from `args.file`; returns it and a line
/// saying what was imported.
pub fn write_run(parsed: &ImportedRun, args: &ImportRequest) -> Result<(PathBuf, String)> {
    if parsed.rows.is_empty() {
        bail!(
            "{}: the table has no rows (did the run crash before its first size?)",
            args.file.display()
        );
    }
    if parsed.rows.iter().all(|r| r.bytes == 0) {
        bail!(
            "{}: every row has size 0 (each rank's part of every size was rounded down to nothing): nothing to import; run nccl-tests with a larger -b",
            args.file.display()
        );
    }
    let nranks = args.nranks.or(parsed.nranks).ok_or_else(|| {
        anyhow!(
            "{}: the output does not show the rank count; give --nranks",
            args.file.display()
        )
    })?;
    let config = match &args.config {
        Some(name) => {
            check_name(name).map_err(anyhow::Error::msg)?;
            name.clone()
        }
        None => config_from_env(&parsed.env),
    };
    let (dtype, op, root) = checked_types(parsed, &args.file)?;
    let collective = parsed.collective;
    let iters = iters_from_command(parsed.command.as_deref());

    let started = started_at(args, parsed);

    let dir = RunDir::create_at(&args.out)?;
    let writer = RunWriter::new(dir, SystemTime::now())?;
    let mut counts = CaseCounts::default();
    let mut configs = vec![config.clone()];
    let mut cases: Vec<Imported> = Vec::new();
    for row in parsed.rows.iter().filter(|r| r.bytes > 0) {
        let mut sides = vec![(config.clone(), &row.out_of_place)];
        if let Some(in_place) = &row.in_place {
            let name = format!("{config}-inplace");
            if !configs.contains(&name) {
                configs.push(name.clone());
            }
            sides.push((name, in_place));
        }
        for (name, timing) in sides {
            let mut cells = cells(
                &name, nranks, row.bytes, &row.dtype, op, timing, &args.file, row.line,
            );
            cells.collective = collective.name().to_string();
            cells.iters = iters;
            // Times that are not a number (a failed iteration) are left out.
            let times: Vec<f64> = timing
                .per_iter
                .as_ref()
                .map(timed)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .collect();
            // nccl-tests' own tail figures, kept as it printed them and labelled as its.
            if let Some(stats) = &timing.per_iter {
                cells.nccl_tests_p95_us = stats.p95_us;
                cells.nccl_tests_p99_us = Some(stats.p99_us).filter(|v| v.is_finite());
            }
            let (recorder, flags, notes) = if times.is_empty() {
                (None, Vec::new(), Vec::new())
            } else {
                let (recorder, flags, notes) = per_iteration(&mut cells, &times);
                cells.hist_tag = CaseKey {
                    config: name.clone(),
                    collective,
                    nranks,
                    bytes: row.bytes,
                    dtype,
                    op,
                }
                .tag();
                (Some(recorder), flags, notes)
            };
            cases.push(Imported {
                cells,
                recorder,
                flags,
                notes,
            });
        }
    }
    assess(&mut cases);
    let per_iteration_cases = cases.iter().filter(|c| c.recorder.is_some()).count();
    for case in &cases {
        counts.total += 1;
        counts.add(if case.cells.status == "ok" {
            CaseStatus::Ok
        } else {
            CaseStatus::Wrong
        });
        if let Some(q) = Quality::parse(&case.cells.quality) {
            counts.add_quality(q);
        }
        if let Some(recorder) = &case.recorder {
            writer.record_tagged_histogram(
                recorder.histogram(),
                &case.cells.hist_tag,
                Duration::ZERO,
                Duration::ZERO,
            )?;
        }
        writer.record_row(&case.cells)?;
    }
    let env: std::collections::BTreeMap<String, String> = parsed.env.iter().cloned().collect();
    let manifest = RunManifest {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::this(),
        command_line: std::env::args().collect(),
        label: None,
        status: RunStatus::Complete,
        // When nccl-tests ran: history sorts runs by it.
        started_at: started.0.clone(),
        finished_at: Some(crate::units::now_rfc3339()),
        error: None,
        backend: BackendInfo {
            requested: "import".into(),
            used: BACKEND.into(),
            note: format!(
                "imported from {} (nccl-tests {}{}{}{}): {}; {}",
                args.file.display(),
                parsed.binary.as_deref().unwrap_or("all_reduce_perf"),
                parsed
                    .nccl_tests_version
                    .as_deref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default(),
                if parsed.binary.is_none() {
                    ", all_reduce assumed: the output names no nccl-tests binary"
                } else {
                    ""
                },
                parsed
                    .command
                    .as_deref()
                    .map(|c| format!(", `{c}`"))
                    .unwrap_or_default(),
                timing_note(per_iteration_cases, cases.len()),
                started.1,
            ),
        },
        nccl: parsed.nccl_version.clone().map(|version| NcclChoice {
            path: Default::default(),
            version,
            found_by: "reported by nccl-tests".into(),
            simulated: false,
        }),
        nccl_per_config: Default::default(),
        gpu: gpu_facts(&parsed.ranks),
        host: HostInfo::default(),
        configs: configs
            .iter()
            .map(|name| TransportConfig {
                name: name.clone(),
                description: format!("imported from {}", args.file.display()),
                env: env.clone(),
                nccl_lib: None,
                source: args.file.display().to_string(),
                devices: None,
                ranks: None,
                register: None,
            })
            .collect(),
        gpu_counts: vec![nranks],
        sizes: parsed
            .rows
            .iter()
            .map(|r| r.bytes)
            .filter(|&b| b > 0)
            .collect(),
        dtype,
        op,
        collectives: vec![collective],
        root,
        sizes_not_run: sizes_not_run(parsed, nranks),
        iterations: IterationPolicy::Fixed { iters },
        rounds: 1,
        looks: Vec::new(),
        design: None,
        group_rounds: Vec::new(),
        warmup_iters: 0,
        graph_iters: 0,
        timeout_s: 0.0,
        cases: counts.clone(),
        warnings: vec![],
        cluster: cluster(&parsed.ranks),
        doctor: Vec::new(),
        ceilings: None,
        soak: None,
        shm_backing: Default::default(),
        sizes_from: None,
        nccl_env: Default::default(),
    };
    writer.write_manifest(&manifest)?;
    let said = format!(
        "imported {} rows of {} ({} ranks, {}) from {} into {}",
        counts.done,
        collective,
        nranks,
        configs.join(", "),
        args.file.display(),
        writer.dir().path.display()
    );
    Ok((writer.dir().path.clone(), said))
}

/// Rows of size 0: nccl-tests prints one where a size split over the ranks leaves no
/// element per rank (alltoall_perf -b 8), and times nothing. A sweep does not run such
/// a size and lists it in the manifest; an import does the same.
fn sizes_not_run(parsed: &ImportedRun, nranks: u32) -> Vec<String> {
    let empty = parsed.rows.iter().filter(|r| r.bytes == 0).count();
    if empty == 0 {
        return Vec::new();
    }
    let c = parsed.collective;
    let why = if c.splits() {
        format!("a size split over {nranks} ranks that leaves no element per rank (nccl-tests rounds each rank's part down to a multiple of 16 bytes)")
    } else {
        "a size of 0 asked for (-b 0)".to_string()
    };
    vec![format!(
        "{c}: {empty} row(s) of size 0 B, {why}, where nccl-tests times nothing: not imported"
    )]
}

/// One imported case: its row and, with per-iteration times (`-I 1`, JSON), their
/// histogram and the quality rules' flags.
struct Imported {
    cells: CaseRow,
    recorder: Option<LatencyRecorder>,
    flags: Vec<Flag>,
    /// Why our own tails or the median's interval are left empty (too few
    /// iterations for them).
    notes: Vec<String>,
}

/// Where an import's tails come from when its iterations cannot support ours.
const IMPORT_REMEDY: &str =
    "nccl-tests' own p95 and p99 are in nccl_tests_p95_us and nccl_tests_p99_us";

/// The iterations nccl-tests' own `-I` summary counts: all but the first
/// `skipped_iterations` (`-K`, left out as warm-up).
fn timed(stats: &IterStats) -> Vec<f64> {
    let skip = stats.skipped_iterations.unwrap_or(0) as usize;
    stats.times_us.iter().skip(skip).copied().collect()
}

/// Puts every iteration time (the max over ranks, as nccl-tests measures it) into a
/// histogram like the sweep's own and fills the row's percentiles, spread and median
/// interval from it (the tails and the interval only where the iterations support
/// them); returns the histogram, the quality rules' flags on the case itself and the
/// notes on what was left empty. The mean, algbw and busbw stay nccl-tests' own
/// (from its batch time).
fn per_iteration(
    cells: &mut CaseRow,
    times_us: &[f64],
) -> (LatencyRecorder, Vec<Flag>, Vec<String>) {
    let mut recorder = LatencyRecorder::new();
    let mut drift = Drift::new();
    let ns: Vec<u64> = times_us.iter().map(|t| (t * 1e3).round() as u64).collect();
    for &v in &ns {
        recorder.record(v);
    }
    drift.add_batch(ns);
    let s = recorder.summary();
    cells.min_us = Some(s.min_us);
    cells.p50_us = Some(s.p50_us);
    // Tails and the median's interval only where the iterations support them.
    cells.p90_us = s.tail(0.9, s.p90_us);
    cells.p99_us = s.tail(0.99, s.p99_us);
    cells.max_us = Some(s.max_us);
    cells.stddev_us = Some(s.stddev_us);
    let ci = Some(s.median_ci_us).filter(|ci| ci.1.is_finite());
    cells.median_ci_low_us = ci.map(|c| c.0);
    cells.median_ci_high_us = ci.map(|c| c.1);
    let flags = case_flags(&CaseShape::of(&recorder, &drift));
    let mut notes: Vec<String> = s.tail_note(IMPORT_REMEDY).into_iter().collect();
    if cells.median_ci_low_us.is_none() {
        notes.push(format!(
            "{} iterations: too few for a 95 % interval of the median ({} needed)",
            s.samples,
            crate::stats::rounds::MIN_ROUNDS
        ));
    }
    (recorder, flags, notes)
}

/// The quality of every case with a histogram: the rules on the case itself and,
/// among the ok ones of a config, the rules across sizes (the sweep's quality pass,
/// without the second measurement it can make).
fn assess(cases: &mut [Imported]) {
    let mut names: Vec<String> = cases.iter().map(|c| c.cells.config.clone()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let members: Vec<usize> = (0..cases.len())
            .filter(|&i| {
                let c = &cases[i].cells;
                c.config == name && c.status == "ok" && cases[i].recorder.is_some()
            })
            .collect();
        let points: Vec<Point> = members
            .iter()
            .map(|&i| {
                let c = &cases[i].cells;
                Point {
                    bytes: c.bytes,
                    p50_us: c.p50_us.unwrap_or(0.0),
                    ci_us: c
                        .median_ci_low_us
                        .zip(c.median_ci_high_us)
                        .unwrap_or((0.0, f64::INFINITY)),
                }
            })
            .collect();
        for (&i, extra) in members.iter().zip(neighbour_flags(&points)) {
            cases[i].flags.extend(extra);
        }
    }
    // As for a sweep's cases, only ok ones get a quality.
    for case in cases
        .iter_mut()
        .filter(|c| c.recorder.is_some() && c.cells.status == "ok")
    {
        case.cells.quality = verdict(&case.flags).name().into();
        let flagged = reasons(&case.flags);
        case.cells.quality_note = std::iter::once(flagged)
            .filter(|r| !r.is_empty())
            .chain(case.notes.iter().cloned())
            .collect::<Vec<_>>()
            .join("; ");
    }
}

/// When the imported run started, and where that comes from.
fn started_at(args: &ImportRequest, parsed: &ImportedRun) -> (String, &'static str) {
    if let Some(t) = &args.started_at {
        return (t.clone(), "started at the time given (--started-at)");
    }
    if let Some(t) = &parsed.started_at {
        return (
            t.clone(),
            match parsed.format {
                super::Format::Json => "started at the JSON's start_time",
                super::Format::Text => "started at the first row's -S timestamp",
            },
        );
    }
    match crate::units::modified_rfc3339(&args.file) {
        Some(t) => (
            t,
            "the output gives no time: dated by the file's modification time (--started-at sets it)",
        ),
        None => (
            crate::units::now_rfc3339(),
            "the output gives no time: dated by the import (--started-at sets it)",
        ),
    }
}

/// What the manifest says about the timings an import holds.
fn timing_note(with_iterations: usize, cases: usize) -> String {
    match with_iterations {
        0 => "mean times only, no per-iteration data".into(),
        n if n == cases => "per-iteration times (-I 1) as histograms".into(),
        n => format!("per-iteration times (-I 1) as histograms for {n} of {cases} cases, mean times only for the rest"),
    }
}

#[allow(clippy::too_many_arguments)]
fn cells(
    config: &str,
    nranks: u32,
    bytes: u64,
    dtype: &str,
    op: ReduceOp,
    t: &Timing,
    file: &Path,
    line: usize,
) -> CaseRow {
    let wrong = t.wrong.unwrap_or(0);
    CaseRow {
        config: config.to_string(),
        backend: BACKEND.into(),
        nranks,
        bytes,
        dtype: dtype.to_string(),
        op: op.name().to_string(),
        status: if wrong > 0 {
            "wrong".into()
        } else {
            "ok".into()
        },
        time_us: Some(t.time_us),
        algbw_gbps: Some(t.algbw_gbps),
        busbw_gbps: Some(t.busbw_gbps),
        wrong,
        error: if wrong > 0 {
            format!(
                "{wrong} wrong element(s) reported by nccl-tests ({}:{line})",
                file.display()
            )
        } else {
            String::new()
        },
        ..CaseRow::default()
    }
}
