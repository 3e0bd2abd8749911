//! The result table of nccl-tests' text output: its column-name header (every layout
//! nccl-tests has printed), its rows and its footer (`Out of bounds values`, `Avg bus
//! bandwidth`), read for the first launcher prefix that prints a header. The rows of
//! every binary read alike (`none` and root `-1` are words like any other); a row
//! whose redop was printed blank is one word short and is read with an empty op.

use std::collections::HashSet;

use super::lines::{is_fence, is_nccl_log, Line};
use crate::import::run::{ImportError, ImportedRow, IterStats, Timing};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    Size,
    Count,
    Type,
    Op,
    Root,
    Time,
    AlgBw,
    BusBw,
    Wrong,
    Error,
    IMin,
    IMax,
    IP99,
    ICv,
    /// `-S 1`: date and time, two words.
    Timestamp,
    Other,
}

pub(super) struct Schema {
    cols: Vec<Col>,
    /// Multiplier to microseconds (1000 for the 2017 millisecond table).
    time_scale: f64,
    pub(super) cpu_time: bool,
    pub(super) per_iter: bool,
}

/// Recognizes the column-name line of the table.
fn parse_header(t: &str) -> Option<Schema> {
    let names: Vec<&str> = t.strip_prefix('#')?.split_whitespace().collect();
    if !matches!(names.first(), Some(&"size" | &"bytes")) {
        return None;
    }
    let cols: Vec<Col> = names
        .iter()
        .map(|n| match *n {
            "size" | "bytes" => Col::Size,
            "count" | "N" => Col::Count,
            "type" => Col::Type,
            "redop" | "op" => Col::Op,
            "root" => Col::Root,
            "time" | "cputime" => Col::Time,
            "algbw" => Col::AlgBw,
            "busbw" => Col::BusBw,
            "#wrong" | "wrong" => Col::Wrong,
            "error" | "res" => Col::Error,
            "i_min" => Col::IMin,
            "i_max" => Col::IMax,
            "i_p99" => Col::IP99,
            "i_cv%" => Col::ICv,
            "timestamp" => Col::Timestamp,
            _ => Col::Other,
        })
        .collect();
    let first_time = cols.iter().position(|c| *c == Col::Time)?;
    let timing_col = |c: &Col| {
        use Col::*;
        matches!(c, AlgBw | BusBw | Wrong | Error | IMin | IMax | IP99 | ICv)
    };
    let times = cols.iter().filter(|c| **c == Col::Time).count();
    let ok = cols.contains(&Col::Count)
        && cols.contains(&Col::AlgBw)
        && cols.contains(&Col::BusBw)
        && times <= 2
        && !cols[..first_time].iter().any(timing_col);
    ok.then(|| Schema {
        per_iter: cols.contains(&Col::IMin),
        cpu_time: names.contains(&"cputime"),
        time_scale: if names[0] == "bytes" { 1000.0 } else { 1.0 },
        cols,
    })
}

enum Footer {
    OutOfBounds(Option<u64>),
    AvgBusBw(Option<f64>),
}

fn parse_footer(t: &str) -> Option<Footer> {
    let t = t.strip_prefix('#').unwrap_or(t).trim_start();
    let value = || {
        t.split_once(':')
            .and_then(|(_, v)| v.split_whitespace().next())
    };
    if t.starts_with("Out of bounds values") {
        Some(Footer::OutOfBounds(value().and_then(|v| v.parse().ok())))
    } else if t.starts_with("Avg bus bandwidth") {
        Some(Footer::AvgBusBw(value().and_then(|v| v.parse().ok())))
    } else {
        None
    }
}

/// A line that starts like a result row: a size, then a count (or nothing).
fn looks_like_row(t: &str) -> bool {
    let digits = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    let mut w = t.split_whitespace();
    w.next().is_some_and(digits) && w.next().is_none_or(digits)
}

pub(super) struct Table {
    pub(super) schema: Schema,
    pub(super) rows: Vec<ImportedRow>,
    pub(super) avg: Option<f64>,
    pub(super) oob: Option<u64>,
    /// The first row's `-S` timestamp, as `2026-07-10T12:00:01`.
    pub(super) first_stamp: Option<String>,
}

/// Reads the first table of the first prefix that prints a header. The table is open
/// from its header to its footer, a code fence or the end of the input; another header
/// of the same prefix ends the reading.
pub(super) fn read_table(lines: &[Line]) -> Result<Option<Table>, ImportError> {
    let mut found: Option<(Table, &str)> = None;
    let mut open = false;
    let mut seen = HashSet::new();
    for l in lines {
        let t = l.body.trim();
        if is_nccl_log(t) {
            continue;
        }
        let Some((table, owner)) = &mut found else {
            if let Some(schema) = parse_header(t) {
                let table = Table {
                    schema,
                    rows: Vec::new(),
                    avg: None,
                    oob: None,
                    first_stamp: None,
                };
                found = Some((table, l.key));
                open = true;
            }
            continue;
        };
        if l.key != *owner {
            continue;
        }
        if parse_header(t).is_some() {
            break;
        }
        if let Some(footer) = parse_footer(t) {
            match footer {
                Footer::OutOfBounds(v) => table.oob = table.oob.or(v),
                Footer::AvgBusBw(v) => table.avg = table.avg.or(v),
            }
            open = false;
        } else if is_fence(t) {
            open = false;
        } else if open && looks_like_row(t) {
            let row = parse_row(t, &table.schema, l.no).map_err(|why| ImportError::BadRow {
                line: l.no,
                text: l.body.trim().to_string(),
                why,
            })?;
            let key = (row.bytes, row.dtype.clone(), row.op.clone(), row.root);
            if seen.insert(key) {
                table.rows.push(row);
            }
            if table.first_stamp.is_none() && table.schema.cols.contains(&Col::Timestamp) {
                // `%Y-%m-%d %H:%M:%S`: the row's last two words.
                let words: Vec<&str> = t.split_whitespace().collect();
                if let [.., date, time] = words[..] {
                    table.first_stamp = crate::import::local_time(&format!("{date} {time}"));
                }
            }
        }
    }
    Ok(found.map(|(table, _)| table))
}

fn number(word: &str, what: &str) -> Result<f64, String> {
    word.parse()
        .map_err(|_| format!("{what} '{word}' is not a number"))
}

fn integer<T: std::str::FromStr>(word: &str, what: &str) -> Result<T, String> {
    word.parse()
        .map_err(|_| format!("{what} '{word}' is not an integer"))
}

fn new_timing(time_us: f64) -> Timing {
    Timing {
        time_us,
        algbw_gbps: 0.0,
        busbw_gbps: 0.0,
        wrong: None,
        error: None,
        per_iter: None,
    }
}

fn parse_row(t: &str, schema: &Schema, line: usize) -> Result<ImportedRow, String> {
    let mut words: Vec<&str> = t.split_whitespace().collect();
    let has_ts = schema.cols.contains(&Col::Timestamp);
    let width = schema.cols.len() + usize::from(has_ts);
    // Before 2022 alltoall printed an empty redop under the header's `redop` (and in
    // 2022 all_gather did, for a month): one word short, a number where the op is.
    // No op is a number, so the blank is put back.
    if let Some(at) = schema.cols.iter().position(|c| *c == Col::Op) {
        let short = words.len() + 1 == width || (has_ts && words.len() + 3 == width);
        if short && words.get(at).is_some_and(|w| w.parse::<f64>().is_ok()) {
            words.insert(at, "");
        }
    }
    if words.len() != width && !(has_ts && words.len() + 2 == width) {
        return Err(format!(
            "{} columns where the header has {width}",
            words.len()
        ));
    }
    let mut row = ImportedRow {
        line,
        bytes: 0,
        count: 0,
        dtype: String::new(),
        op: String::new(),
        root: None,
        out_of_place: new_timing(0.0),
        in_place: None,
        iteration_times_us: Vec::new(),
    };
    let mut timings: Vec<Timing> = Vec::new();
    let mut words = words.into_iter();
    for col in &schema.cols {
        let Some(word) = words.next() else { break };
        if *col == Col::Time {
            timings.push(new_timing(number(word, "time")? * schema.time_scale));
            continue;
        }
        match col {
            Col::Size => row.bytes = integer(word, "size")?,
            Col::Count => row.count = integer(word, "count")?,
            Col::Type => row.dtype = word.to_string(),
            Col::Op => row.op = word.to_string(),
            Col::Root => row.root = Some(integer(word, "root")?),
            Col::Timestamp => {
                words.next();
            }
            Col::Time | Col::Other => {}
            _ => {
                // the header puts every timing column after a time column
                let Some(timing) = timings.last_mut() else {
                    continue;
                };
                match col {
                    Col::AlgBw => timing.algbw_gbps = number(word, "algbw")?,
                    Col::BusBw => timing.busbw_gbps = number(word, "busbw")?,
                    Col::Wrong if word != "N/A" => {
                        let v = number(word, "#wrong")?;
                        if !(v.is_finite() && v >= 0.0) {
                            return Err(format!("#wrong '{word}' is not a count"));
                        }
                        timing.wrong = Some(v.round() as u64);
                    }
                    Col::Error if word != "N/A" => timing.error = Some(number(word, "error")?),
                    Col::IMin | Col::IMax | Col::IP99 | Col::ICv => {
                        let v = number(word, "per-iteration value")?;
                        let s = timing.per_iter.get_or_insert_with(IterStats::default);
                        match col {
                            Col::IMin => s.min_us = v,
                            Col::IMax => s.max_us = v,
                            Col::IP99 => s.p99_us = v,
                            _ => s.cv_pct = v,
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut timings = timings.into_iter();
    row.out_of_place = timings.next().ok_or("no time column")?;
    row.in_place = timings.next();
    Ok(row)
}
