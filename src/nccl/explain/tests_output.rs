//! What an nccl-tests output says: its devices, its result rows (`#wrong` and the bus
//! bandwidth), `Out of bounds values`, how many jobs printed a summary, where it stopped,
//! and the protocol or algorithm it was forced to. `nccl-bench import` reads the table in
//! full; this reads only what a diagnosis needs.

use super::finding::{Finding, FindingKind, Severity};
use super::pasted::{message, Pasted, PastedLine};
use super::signatures::Placed;
use crate::nccl::NcclVersion;
use crate::units::human_bytes;

/// A result row: the size, the out-of-place bus bandwidth and the wrong counts (or
/// errors) of both halves.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub bytes: u64,
    pub busbw: f64,
    pub wrong: f64,
}

/// The reductions nccl-tests prints (`none` for the collectives without one).
const OPS: &[&str] = &[
    "sum",
    "prod",
    "min",
    "max",
    "avg",
    "mulsum",
    "premulsum",
    "none",
];

const TYPES: &[&str] = &[
    "float", "half", "double", "bfloat16", "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "fp8_e4m3", "fp8_e5m2", "int", "char",
];

/// `text` without the launcher's prefix (`nccl::log`'s: mpirun's `[1,0]<stdout>:`,
/// `[0] `, srun's `0: `) and without the rank tags pasted tables can carry inside their
/// rows (`-1[0]    1626.5`).
fn untagged(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = crate::nccl::log::strip_launcher_prefixes(text);
    while let Some(at) = rest.find('[') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        match tail.find(']') {
            Some(end)
                if end > 0 && tail[..end].bytes().all(|b| b.is_ascii_digit() || b == b',') =>
            {
                out.push(' ');
                rest = &tail[end + 1..];
            }
            _ => {
                out.push('[');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a line is an nccl-tests result row (a bare table is an nccl-tests output).
pub(super) fn is_row(text: &str) -> bool {
    row_of(text).is_some()
}

fn row(line: &PastedLine) -> Option<Row> {
    row_of(line.text)
}

/// `  8388608  2097152  float  sum  -1  5729.5  1.46  1.46  0e+00  5477.3 ...`.
pub(super) fn row_of(text: &str) -> Option<Row> {
    let text = untagged(text);
    let words: Vec<&str> = text
        .trim_start_matches(['#', '`', ' '])
        .split_whitespace()
        .collect();
    if words.len() < 8 {
        return None;
    }
    let bytes: u64 = words[0].parse().ok()?;
    words[1].parse::<u64>().ok()?;
    if !TYPES.contains(&words[2]) {
        return None;
    }
    let at = if OPS.contains(&words[3]) {
        // redop, then an optional root, then time, algbw, busbw, #wrong / error.
        let mut at = 4;
        if words.get(at).is_some_and(|w| w.parse::<i64>().is_ok())
            && words.get(at + 4).is_some()
            && !words[at].contains('.')
        {
            at += 1;
        }
        at
    } else if words[3].parse::<f64>().is_ok() {
        // Older nccl-tests printed no redop for collectives without one: both halves'
        // time, algbw, busbw and error (11 words), after a root where there is one.
        if words.len() >= 12 {
            4
        } else {
            3
        }
    } else {
        return None;
    };
    let num = |i: usize| words.get(i).and_then(|w| w.parse::<f64>().ok());
    let busbw = num(at + 2)?;
    let wrong = num(at + 3).unwrap_or(0.0).max(num(at + 7).unwrap_or(0.0));
    Some(Row {
        bytes,
        busbw,
        wrong,
    })
}

/// The facts of an nccl-tests output, if the paste holds one.
struct Output<'p, 'a> {
    headers: Vec<&'p PastedLine<'a>>,
    using_devices: Option<&'p PastedLine<'a>>,
    devices: Vec<&'p PastedLine<'a>>,
    rows: Vec<(&'p PastedLine<'a>, Row)>,
    out_of_bounds: Vec<&'p PastedLine<'a>>,
    summaries: Vec<&'p PastedLine<'a>>,
}

fn read<'p, 'a>(pasted: &'p Pasted<'a>) -> Option<Output<'p, 'a>> {
    let lines = &pasted.lines;
    let headers: Vec<&PastedLine> = lines
        .iter()
        .filter(|l| l.lower.contains("nthread") && l.lower.contains("ngpus"))
        .collect();
    let using_devices = lines.iter().find(|l| l.lower.contains("using devices"));
    let devices: Vec<&PastedLine> = lines
        .iter()
        .filter(|l| {
            let t = l.text.trim_start_matches(['#', ' ']);
            // `Rank  0 Group  0 Pid 123 on host device  0 [..] GPU`; NCCL 1's
            // `Rank  0 uses device  0 [0x02] GPU`.
            t.starts_with("Rank ")
                && l.text.contains(" device ")
                && (l.text.contains(" Pid ") || l.text.contains(" uses device "))
        })
        .collect();
    let rows: Vec<(&PastedLine, Row)> = lines
        .iter()
        .filter_map(|l| row(l).map(|r| (l, r)))
        .collect();
    let out_of_bounds: Vec<&PastedLine> = lines
        .iter()
        .filter(|l| l.lower.contains("out of bounds values"))
        .collect();
    let summaries: Vec<&PastedLine> = lines
        .iter()
        .filter(|l| l.lower.contains("avg bus bandwidth"))
        .collect();
    let any = !headers.is_empty()
        || using_devices.is_some()
        || !rows.is_empty()
        || !summaries.is_empty()
        || !out_of_bounds.is_empty();
    any.then_some(Output {
        headers,
        using_devices,
        devices,
        rows,
        out_of_bounds,
        summaries,
    })
}

/// The devices' GPU names in words: ` on 4 x GeForce GTX 1080 Ti`.
fn gpu_words(devices: &[&PastedLine]) -> String {
    let names: Vec<&str> = devices
        .iter()
        .filter_map(|l| l.text.split_once(']').map(|(_, n)| n.trim()))
        .collect();
    match names.first() {
        Some(n) => format!(" on {} x {n}", names.len()),
        None => String::new(),
    }
}

/// Whether the paste's NCCL or launcher lines show it got past NCCL's start.
fn nccl_started(pasted: &Pasted) -> bool {
    pasted
        .lines
        .iter()
        .any(|l| l.text.contains("NCCL INFO") || l.text.contains("NCCL version"))
}

/// The forced protocol or algorithm of the paste (`-x NCCL_PROTO=LL128`, `NCCL_ALGO=Ring`).
fn forced(pasted: &Pasted) -> Option<String> {
    ["NCCL_PROTO", "NCCL_ALGO"]
        .iter()
        .find_map(|n| super::reason::pasted_setting(pasted, n).map(|v| format!("{n}={v}")))
}

/// The findings of an nccl-tests output: wrong results (with a forced protocol, its
/// own), separate one-rank jobs, a stop before the devices or before any result, and
/// the peak bus bandwidth.
pub(super) fn tests_findings(
    pasted: &Pasted,
    has_error: bool,
    driver: Option<u32>,
    version: Option<NcclVersion>,
) -> Vec<Placed> {
    let built = built_against(pasted);
    let Some(o) = read(pasted) else {
        return built.into_iter().collect();
    };
    let has_error = has_error
        || built
            .as_ref()
            .is_some_and(|b| b.finding.severity == Severity::Error);
    let mut out: Vec<Placed> = built.into_iter().collect();
    let wrong_rows: Vec<&(&PastedLine, Row)> =
        o.rows.iter().filter(|(_, r)| r.wrong > 0.01).collect();
    let failed_bounds: Vec<&&PastedLine> = o
        .out_of_bounds
        .iter()
        .filter(|l| l.lower.contains("failed"))
        .collect();
    if !wrong_rows.is_empty() || !failed_bounds.is_empty() {
        let detail = match (wrong_rows.first(), failed_bounds.first()) {
            (Some((_, r)), _) => format!(
                "{} of {} sizes had wrong values, from {} B ({})",
                wrong_rows.len(),
                o.rows.len(),
                r.bytes,
                human_bytes(r.bytes)
            ),
            (None, Some(l)) => l.text.trim().trim_start_matches("# ").to_string(),
            (None, None) => unreachable!("one of them is there"),
        };
        let lines: Vec<&PastedLine> = wrong_rows
            .iter()
            .map(|(l, _)| *l)
            .chain(failed_bounds.iter().map(|l| **l))
            .collect();
        let evidence = super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l)));
        let mut finding = match forced(pasted) {
            Some(setting) => Finding::new(
                FindingKind::ProtoForced,
                evidence,
                &[("setting", setting), ("detail", detail)],
            ),
            None => Finding::new(FindingKind::TestsWrong, evidence, &[("detail", detail)]),
        };
        // The test that failed: its command line or nccl-tests' own header names it.
        let hypercube = pasted.lines.iter().any(|l| {
            l.lower.contains("hypercube_perf")
                && (l.lower.contains(" -b ")
                    || l.lower.contains(" -g ")
                    || l.lower.contains("collective test starting"))
        });
        if hypercube && finding.kind == FindingKind::TestsWrong {
            // A maintainer on nccl-tests#356: the least used test, not for every count.
            finding.fix.push_str(
                " hypercube_perf is the least used of nccl-tests and does not support every rank \
                 count: check the same GPUs with all_reduce_perf; where it passes, suspect the \
                 test.",
            );
            finding
                .sources
                .push("https://github.com/NVIDIA/nccl-tests/issues/356".to_string());
        }
        // c38f174 (NCCL 2.6.4, for nccl-tests#37): all_gather's direct offsets were 32
        // bits, so with several GPUs a process it was wrong from 4 GiB on.
        let from_4g = !wrong_rows.is_empty() && wrong_rows.iter().all(|(_, r)| r.bytes >= 1 << 32);
        let before_fix = version.is_none_or(|v| NcclVersion::parse("2.6.4").is_some_and(|f| v < f));
        if from_4g
            && before_fix
            && finding.kind == FindingKind::TestsWrong
            && pasted.contains("all_gather")
        {
            let upgrade = if version.is_some() {
                "Upgrade NCCL to 2.6.4 or later and rerun."
            } else {
                "If this NCCL is older than 2.6.4, upgrade it and rerun."
            };
            finding.fix = format!(
                "Wrong only at 4 GiB and above: before NCCL 2.6.4, all_gather with several \
                 GPUs a process overflowed 32-bit offsets there. {upgrade}"
            );
            finding.sources.push(
                "https://github.com/NVIDIA/nccl/commit/c38f174bd436031dbc79dce19ff969f377976a8a"
                    .to_string(),
            );
        }
        out.push(Placed {
            finding,
            lines: lines.iter().map(|l| (l.file, l.number)).collect(),
        });
    }
    // Two headers or two summaries for one launch, or every device line a rank 0 of its
    // own: each process ran alone.
    let rank0: Vec<&&PastedLine> = o
        .devices
        .iter()
        .filter(|l| {
            l.text.trim_start_matches(['#', ' ']).starts_with("Rank  0")
                || l.text.trim_start_matches(['#', ' ']).starts_with("Rank 0 ")
        })
        .collect();
    let separate = if o.summaries.len() > 1 {
        Some((
            format!(
                "the output holds {} separate summaries (`Avg bus bandwidth`)",
                o.summaries.len()
            ),
            o.summaries.clone(),
        ))
    } else if rank0.len() > 1 {
        Some((
            format!("{} processes each call themselves Rank 0", rank0.len()),
            rank0.iter().map(|l| **l).collect(),
        ))
    } else if o.headers.len() > 1 && o.rows.is_empty() {
        Some((
            format!("the test header is printed {} times", o.headers.len()),
            o.headers.clone(),
        ))
    } else {
        None
    };
    let alone = separate.is_some();
    if let Some((detail, lines)) = separate {
        let evidence = super::evidence::distinct(lines.iter().map(|l| pasted.evidence(l)));
        out.push(Placed {
            finding: Finding::new(FindingKind::SeparateJobs, evidence, &[("detail", detail)]),
            lines: Vec::new(),
        });
    }
    // Processes that each ran alone say nothing of a hang, nor does a wrong result, nor
    // a test that reports its own failure.
    let failed = pasted.contains("test nccl failure") || pasted.contains("test cuda failure");
    if o.rows.is_empty() && !has_error && !alone && !failed && o.out_of_bounds.is_empty() {
        if let Some(u) = o
            .using_devices
            .filter(|_| o.devices.is_empty() && !nccl_started(pasted))
        {
            out.push(Placed {
                finding: Finding::new(FindingKind::TestsHangCuda, vec![pasted.evidence(u)], &[]),
                lines: Vec::new(),
            });
        } else if (nccl_started(pasted) || !o.devices.is_empty())
            && o.summaries.is_empty()
            && !devices_cut(pasted, &o)
        {
            let shown: Vec<&PastedLine> = o.devices.iter().copied().take(2).collect();
            let evidence = super::evidence::distinct(shown.iter().map(|l| pasted.evidence(l)));
            let (hosts, most) = hosts_of(&o.devices);
            let mut finding = if hosts > 1 && most == 1 {
                // No two ranks on a host: the first collective is the network's.
                Finding::new(
                    FindingKind::TestsHangHosts,
                    evidence,
                    &[("hosts", hosts.to_string())],
                )
            } else {
                Finding::new(
                    FindingKind::TestsHangInit,
                    evidence,
                    &[("gpus", gpu_words(&o.devices))],
                )
            };
            // One GPU has no peer: the hang is the GPU's, the driver's or this NCCL's on it.
            if o.devices.len() == 1 {
                finding = finding.with_texts(
                    format!(
                        "The test printed no result row{}: the first collective never \
                         completed. With one GPU there is no peer traffic, so the GPU itself \
                         or this NCCL's support for it is in question.{}",
                        gpu_words(&o.devices),
                        driver_words(driver)
                    ),
                    "Check that this NCCL release supports the GPU (its release notes, and \
                     the known bugs explain lists), and that the driver supports the CUDA it \
                     was built with (`nvidia-smi` against `nvcc --version`). Look for Xid \
                     errors in `dmesg`, and rerun with NCCL_DEBUG=INFO \
                     NCCL_DEBUG_SUBSYS=INIT,COLL to see the last step."
                        .to_string(),
                );
                if driver.is_some() {
                    finding
                        .sources
                        .push(MINOR_VERSION_COMPATIBILITY.to_string());
                }
            }
            out.push(Placed {
                finding,
                lines: Vec::new(),
            });
        }
    }
    out.extend(busbw_step(pasted, &o.rows));
    if let Some((line, peak)) = o.rows.iter().max_by(|a, b| a.1.busbw.total_cmp(&b.1.busbw)) {
        out.push(Placed {
            finding: Finding::new(
                FindingKind::TestsBusbw,
                vec![pasted.evidence(line)],
                &[
                    ("busbw", format!("{:.1} GB/s", peak.busbw)),
                    ("size", human_bytes(peak.bytes)),
                    ("gpus", gpu_words(&o.devices)),
                ],
            ),
            lines: Vec::new(),
        });
    }
    out
}

/// A step down in bus bandwidth that stays: in one table (sizes rising), at a size of
/// 1 MiB or more, busbw falls to half the size before it or less, and every size from
/// there (two at least, not rising back by more than 20 %) stays under half the best
/// before. The best is no lone row: another before the step comes within 25 % of it.
fn busbw_step(pasted: &Pasted, rows: &[(&PastedLine, Row)]) -> Option<Placed> {
    if rows.windows(2).any(|w| w[1].1.bytes <= w[0].1.bytes) {
        return None;
    }
    let busbw: Vec<f64> = rows.iter().map(|r| r.1.busbw).collect();
    let step = (1..rows.len().saturating_sub(1)).find(|&i| {
        let before = &busbw[..i];
        let best = before.iter().copied().fold(0.0, f64::max);
        let near_best = before.iter().filter(|&&b| b >= 0.75 * best).count();
        let after = &busbw[i..];
        rows[i].1.bytes >= 1 << 20
            && busbw[i - 1] >= 2.0 * busbw[i]
            && near_best >= 2
            && after.iter().all(|&b| b < 0.5 * best)
            && after.last().is_some_and(|&b| b <= 1.2 * busbw[i])
    })?;
    let (peak_line, peak) = rows[..step]
        .iter()
        .max_by(|a, b| a.1.busbw.total_cmp(&b.1.busbw))?;
    let (low_line, low) = &rows[step];
    let gbs = |r: &Row| format!("{:.1} GB/s", r.busbw);
    Some(Placed {
        finding: Finding::new(
            FindingKind::TestsBusbwStep,
            vec![pasted.evidence(peak_line), pasted.evidence(low_line)],
            &[
                ("peak", gbs(peak)),
                ("at", crate::units::Bytes(peak.bytes).to_string()),
                ("low", gbs(low)),
                ("from", crate::units::Bytes(low.bytes).to_string()),
            ],
        ),
        lines: Vec::new(),
    })
}

/// Whether the paste leaves out lines in the device list itself (`[...]` or `...` right
/// after its last device line, or after a device line cut short): the rows may be in the
/// part left out, so their absence says nothing of a hang.
fn devices_cut(pasted: &Pasted, o: &Output) -> bool {
    let Some(last) = o.devices.last().or(o.using_devices.as_ref()) else {
        return false;
    };
    let Some(at) = pasted
        .lines
        .iter()
        .position(|l| l.file == last.file && l.number == last.number)
    else {
        return false;
    };
    pasted.lines[at + 1..]
        .iter()
        .find(|l| !l.text.trim_start_matches(['#', ' ']).starts_with("Rank "))
        .is_some_and(|l| matches!(l.text.trim(), "[...]" | "..." | "\u{2026}" | "[\u{2026}]"))
}

/// The hosts nccl-tests' device lines name (`Pid 123 on host device 0`), and the most
/// devices on one of them.
fn hosts_of(devices: &[&PastedLine]) -> (usize, usize) {
    let mut per_host: std::collections::BTreeMap<&str, usize> = Default::default();
    for d in devices {
        let host = d
            .text
            .split_once(" on ")
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if let Some(h) = host {
            *per_host.entry(h).or_default() += 1;
        }
    }
    (
        per_host.len(),
        per_host.values().copied().max().unwrap_or(0),
    )
}

/// Where CUDA says which builds run on an older driver: within a major release only.
const MINOR_VERSION_COMPATIBILITY: &str =
    "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html";

/// The CUDA the driver supports (`cudaDriverVersion 11040`), in a sentence; empty where
/// the log does not show it.
fn driver_words(driver: Option<u32>) -> String {
    let Some(d) = driver else {
        return String::new();
    };
    format!(
        " The driver supports CUDA {}.{} at most (`cudaDriverVersion {d}`): a build for a \
         newer CUDA major release does not run on it.",
        d / 1000,
        (d % 1000) / 10
    )
}

/// `22809` (NCCL_VERSION_CODE, 2.9 and later; `2708` before) -> `2.28.9`.
fn version_of_code(code: u32) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100)
    }
}

/// The NCCL nccl-tests was built against: NCCL 1 (`# NCCL Tests compiled with NCCL
/// 1.0`), or headers newer than the library it runs with (`nccl-headers=22809
/// nccl-library=22703`).
fn built_against(pasted: &Pasted) -> Option<Placed> {
    let (line, finding) =
        pasted.lines.iter().find_map(|l| {
            if let Some((_, v)) = l.text.split_once("compiled with NCCL ") {
                let v = v.trim();
                if !v.starts_with("1.") {
                    return None;
                }
                let f = Finding::new(
                FindingKind::TestsNcclBuild,
                vec![pasted.evidence(l)],
                &[
                    ("build", format!("NCCL {v}")),
                    ("evidence", message(l.text).trim_start_matches("# ").to_string()),
                    (
                        "meaning",
                        "NCCL 1 is the single-process library of 2016-2017; nccl-tests and \
                         today's frameworks need NCCL 2."
                            .to_string(),
                    ),
                    (
                        "fix",
                        "Rebuild nccl-tests against NCCL 2 (`make NCCL_HOME=<NCCL 2 install>`) \
                         and run it with that library first on LD_LIBRARY_PATH."
                            .to_string(),
                    ),
                ],
            );
                return Some((l, f));
            }
            let code = |key: &str| -> Option<u32> {
                let rest = &l.text[l.text.find(key)? + key.len()..];
                rest.split_whitespace().next()?.parse().ok()
            };
            let (headers, library) = (code("nccl-headers=")?, code("nccl-library=")?);
            if library >= headers {
                return None;
            }
            let (h, lib) = (version_of_code(headers), version_of_code(library));
            let f = Finding::new(
                FindingKind::TestsNcclBuild,
                vec![pasted.evidence(l)],
                &[
                    ("build", format!("NCCL {h} but runs with {lib}")),
                    (
                        "evidence",
                        message(l.text).trim_start_matches("# ").to_string(),
                    ),
                    (
                        "meaning",
                        format!(
                            "it was compiled with NCCL {h}'s headers and loaded the older NCCL \
                         {lib} library, which lacks what newer headers may call."
                        ),
                    ),
                    (
                        "fix",
                        format!(
                            "Run it with the NCCL {h} library first on LD_LIBRARY_PATH, or \
                         rebuild it with NCCL_HOME pointing at {lib}."
                        ),
                    ),
                ],
            )
            .with_severity(Severity::Warning);
            Some((l, f))
        })?;
    Some(Placed {
        finding,
        lines: vec![(line.file, line.number)],
    })
}
