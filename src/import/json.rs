//! The nccl-tests `-J` JSON document (one document, or a list of them), read into the
//! same `ImportedRun` as the text table. Field names and quirks follow nccl-tests'
//! writer (numbers written as strings, `"nan"`, the first version's misspelt
//! `bandwidith`); row line numbers come from a scan of the text, for error messages.
//! The binary, and so the collective, is the one its `args` ran (nccl-tests records
//! no other name of it).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, Unexpected, Visitor};
use serde::Deserialize;

use crate::ops::collective::Collective;

use super::binary::{binary_name, named_binary, Mention};
use super::run::{
    is_nccl_var, local_time, version_from_code, Format, ImportError, ImportedRow, ImportedRun,
    IterStats, Timing, NO_PATH,
};

/// Reads the document nccl-tests writes with `-J file.json`, or a JSON list of them
/// (rows of all documents, run details from the first).
pub fn parse_json(text: &str) -> Result<ImportedRun, ImportError> {
    let json_err = |e: serde_json::Error| ImportError::Json {
        line: e.line(),
        message: e.to_string(),
    };
    let text = text.trim_start_matches('\u{feff}');
    let docs: Vec<JsonDoc> = if text.trim_start().starts_with('[') {
        serde_json::from_str(text).map_err(json_err)?
    } else {
        vec![serde_json::from_str(text).map_err(json_err)?]
    };
    if docs.iter().all(|d| d.results.is_none()) {
        return Err(ImportError::NoTable {
            path_hint: NO_PATH.to_string(),
        });
    }
    let row_lines = result_lines(text);
    // Each document's binary: the first of its `args` that names one (`args[0]`).
    let mentions: Vec<Mention> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let (at, binary) = d
                .args
                .iter()
                .enumerate()
                .find_map(|(j, a)| binary_name(a).map(|b| (j, b)))?;
            let document = match docs.len() {
                1 => String::new(),
                _ => format!(" of document {}", i + 1),
            };
            Some(Mention {
                at: format!("args[{at}]{document}"),
                binary: binary.to_string(),
            })
        })
        .collect();
    let named = named_binary(&mentions)?;
    let mut run = ImportedRun {
        rows: Vec::new(),
        nranks: None,
        nccl_version: None,
        nccl_tests_version: None,
        env: Vec::new(),
        command: None,
        collective: named.as_ref().map_or(Collective::AllReduce, |n| n.0),
        binary: named.map(|n| n.1),
        format: Format::Json,
        per_iteration: false,
        cpu_time: false,
        avg_busbw_gbps: None,
        out_of_bounds: None,
        ranks: Vec::new(),
        started_at: None,
    };
    if let Some(doc) = docs.first() {
        run.started_at = doc.start_time.as_deref().and_then(local_time);
        run.nccl_version = doc.nccl_version.map(version_from_code);
        if !doc.args.is_empty() {
            run.command = Some(
                doc.args
                    .iter()
                    .map(|a| shell_word(a))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        for entry in &doc.env {
            if let Some((name, value)) = entry.split_once('=') {
                if is_nccl_var(name) && !run.env.iter().any(|(n, _)| n == name) {
                    run.env.push((name.to_string(), value.to_string()));
                }
            }
        }
        if let Some(config) = &doc.config {
            run.per_iteration = config.per_iter_timing.is_some_and(|f| f.0);
            if !config.devices.is_empty() {
                let per_process = config.nthreads.unwrap_or(1) * config.ngpus.unwrap_or(1);
                run.nranks = Some(config.devices.len() as u32 * per_process);
            }
        }
        run.avg_busbw_gbps = doc
            .average_bus_bandwidth
            .as_ref()
            .and_then(|a| a.bandwidth.map(|b| b.0));
        run.out_of_bounds = doc.out_of_bounds.as_ref().and_then(|o| o.count);
    }
    let mut seen = HashSet::new();
    let rows = docs.into_iter().flat_map(|d| d.results.unwrap_or_default());
    for (i, r) in rows.enumerate() {
        let line = row_lines.get(i).copied().unwrap_or(1);
        let missing = |what: &str| ImportError::Json {
            line,
            message: format!("result {} (size {}) has no {what}", i + 1, r.size),
        };
        let out = r
            .out_of_place
            .as_ref()
            .ok_or_else(|| missing("out_of_place timing"))?;
        run.cpu_time |= out.cpu_time.is_some();
        let out_of_place =
            json_timing(out, r.out_of_place_per_iter.as_ref()).ok_or_else(|| missing("time"))?;
        let in_place = match &r.in_place {
            Some(t) => Some(
                json_timing(t, r.in_place_per_iter.as_ref())
                    .ok_or_else(|| missing("in-place time"))?,
            ),
            None => None,
        };
        run.per_iteration |= out_of_place.per_iter.is_some();
        let row = ImportedRow {
            line,
            bytes: r.size,
            count: r.count,
            iteration_times_us: out_of_place
                .per_iter
                .as_ref()
                .map(|s| s.times_us.clone())
                .unwrap_or_default(),
            dtype: r.dtype,
            op: r.redop,
            root: r.root.map(|r| r.0),
            out_of_place,
            in_place,
        };
        if seen.insert((row.bytes, row.dtype.clone(), row.op.clone(), row.root)) {
            run.rows.push(row);
        }
    }
    Ok(run)
}

fn shell_word(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

fn json_timing(t: &JsonTiming, per_iter: Option<&JsonIter>) -> Option<Timing> {
    let time = t.time.or(t.cpu_time)?.0;
    Some(Timing {
        time_us: time,
        algbw_gbps: t.alg_bw.0,
        busbw_gbps: t.bus_bw.0,
        wrong: t.nwrong.map(|n| n.0.max(0.0).round() as u64),
        error: None,
        per_iter: per_iter.map(|p| IterStats {
            min_us: p.min_us.0,
            max_us: p.max_us.0,
            p99_us: p.p99_us.0,
            cv_pct: p.cv_pct.0,
            avg_us: p.avg_us.map(|v| v.0),
            p50_us: p.p50_us.map(|v| v.0),
            p95_us: p.p95_us.map(|v| v.0),
            stdev_us: p.stdev_us.map(|v| v.0),
            skipped_iterations: p.skipped_iterations,
            times_us: p.times_us.iter().map(|v| v.0).collect(),
            process_times_us: p
                .per_process_max_times_us
                .iter()
                .map(|times| times.iter().map(|v| v.0).collect())
                .collect(),
        }),
    })
}

/// 1-based lines where the elements of each document's `"results"` list start, in order
/// (nccl-tests writes the whole document on one line; reformatted files have more).
fn result_lines(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut line = 1;
    // (is a list, is a document's results list)
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut last_string = (0, 0);
    let mut key_is_results = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                last_string = (start, i.min(bytes.len()));
            }
            b':' => key_is_results = &bytes[last_string.0..last_string.1] == b"results",
            b'{' | b'[' => {
                if stack.last().is_some_and(|s| s.1) && bytes[i] == b'{' {
                    lines.push(line);
                }
                let in_document =
                    matches!(stack.as_slice(), [(false, _)] | [(true, _), (false, _)]);
                let list = bytes[i] == b'[';
                stack.push((list, list && key_is_results && in_document));
                key_is_results = false;
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => key_is_results = false,
            _ => {}
        }
        i += 1;
    }
    lines
}

#[derive(Deserialize)]
struct JsonDoc {
    /// When the run started, in the local time of its machine (`%Y-%m-%d %H:%M:%S`).
    start_time: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    nccl_version: Option<u64>,
    config: Option<JsonConfig>,
    results: Option<Vec<JsonRow>>,
    out_of_bounds: Option<JsonOutOfBounds>,
    // nccl-tests' first JSON version spelled it "bandwidith"
    #[serde(alias = "average_bus_bandwidith")]
    average_bus_bandwidth: Option<JsonAvg>,
}

#[derive(Deserialize)]
struct JsonConfig {
    nthreads: Option<u32>,
    ngpus: Option<u32>,
    per_iter_timing: Option<Flag>,
    #[serde(default)]
    devices: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
struct JsonOutOfBounds {
    count: Option<u64>,
}

#[derive(Deserialize)]
struct JsonAvg {
    #[serde(alias = "bandwidith")]
    bandwidth: Option<Num>,
}

#[derive(Deserialize)]
struct JsonRow {
    size: u64,
    count: u64,
    #[serde(rename = "type")]
    dtype: String,
    redop: String,
    root: Option<Root>,
    out_of_place: Option<JsonTiming>,
    in_place: Option<JsonTiming>,
    out_of_place_per_iter: Option<JsonIter>,
    in_place_per_iter: Option<JsonIter>,
}

#[derive(Deserialize)]
struct JsonTiming {
    time: Option<Num>,
    cpu_time: Option<Num>,
    alg_bw: Num,
    bus_bw: Num,
    nwrong: Option<Num>,
}

#[derive(Deserialize)]
struct JsonIter {
    skipped_iterations: Option<u32>,
    min_us: Num,
    max_us: Num,
    avg_us: Option<Num>,
    p50_us: Option<Num>,
    p95_us: Option<Num>,
    p99_us: Num,
    stdev_us: Option<Num>,
    cv_pct: Num,
    #[serde(default)]
    times_us: Vec<Num>,
    /// Each process's own per-iteration times (the max over its GPUs), with more
    /// than one process.
    #[serde(default)]
    per_process_max_times_us: Vec<Vec<Num>>,
}

/// A number; nccl-tests writes NaN as the string "nan".
#[derive(Debug, Clone, Copy)]
struct Num(f64);

/// nccl-tests writes its booleans as the strings "true"/"false".
#[derive(Debug, Clone, Copy)]
struct Flag(bool);

/// nccl-tests writes the root as a padded string ("    -1").
#[derive(Debug, Clone, Copy)]
struct Root(i64);

macro_rules! lenient_visitor {
    ($ty:ident, $expecting:literal, |$v:ident| $from_f64:expr, |$s:ident| $from_str:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_f64<E: de::Error>(self, $v: f64) -> Result<$ty, E> {
                        $from_f64.ok_or_else(|| E::invalid_value(Unexpected::Float($v), &self))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                    fn visit_bool<E: de::Error>(self, v: bool) -> Result<$ty, E> {
                        self.visit_str(if v { "true" } else { "false" })
                    }
                    fn visit_str<E: de::Error>(self, $s: &str) -> Result<$ty, E> {
                        $from_str.ok_or_else(|| E::invalid_value(Unexpected::Str($s), &self))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

lenient_visitor!(Num, "a number or \"nan\"", |v| Some(Num(v)), |s| s
    .trim()
    .parse()
    .ok()
    .map(Num));
lenient_visitor!(
    Flag,
    "true, false, \"true\" or \"false\"",
    |v| Some(Flag(v != 0.0)),
    |s| match s.trim() {
        "true" => Some(Flag(true)),
        "false" => Some(Flag(false)),
        _ => None,
    }
);
lenient_visitor!(
    Root,
    "an integer or a string holding one",
    |v| (v.fract() == 0.0).then_some(Root(v as i64)),
    |s| s.trim().parse().ok().map(Root)
);
