//! A workload as `nccl-bench workload` prints it: a table with each (collective,
//! ranks, size)'s calls and share of the bytes, or JSON.

use serde_json::json;

use super::{Format, Workload};
use crate::units::{plural, Bytes};

/// The table, largest share of bytes first.
pub fn text(w: &Workload) -> String {
    let total = w.total_bytes().max(1) as f64;
    let mut s = format!(
        "Workload: {}, from {}\n{}, {}, {} in all\n\n",
        w.source,
        w.format.words(),
        plural(w.entries.len(), "collective size", "collective sizes"),
        plural(w.total_calls() as usize, "call", "calls"),
        Bytes(w.total_bytes())
    );
    let rows: Vec<[String; 6]> = w
        .entries
        .iter()
        .map(|e| {
            [
                e.collective.name().to_string(),
                e.nranks.map_or("-".into(), |n| n.to_string()),
                Bytes(e.bytes).to_string(),
                e.calls.to_string(),
                Bytes(e.total_bytes()).to_string(),
                format!("{:.1} %", 100.0 * e.total_bytes() as f64 / total),
            ]
        })
        .collect();
    let head = ["collective", "ranks", "size", "calls", "bytes", "share"];
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    s += &line(&head);
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        s += &line(&cells);
    }
    if w.format == Format::NcclColl {
        s += "\nCounts are calls in the log (each logged by every rank, counted once): the calls of as many steps as the log holds.\n";
    }
    s
}

/// The JSON document of `--json`.
pub fn json(w: &Workload) -> serde_json::Value {
    let total = w.total_bytes().max(1) as f64;
    json!({
        "source": w.source,
        "format": match w.format {
            Format::NcclColl => "nccl-coll",
            Format::Inspector => "nccl-inspector",
            Format::Kineto => "kineto",
            Format::Csv => "csv",
        },
        "calls": w.total_calls(),
        "bytes": w.total_bytes(),
        "entries": w.entries.iter().map(|e| json!({
            "collective": e.collective.name(),
            "nranks": e.nranks,
            "bytes": e.bytes,
            "calls": e.calls,
            "total_bytes": e.total_bytes(),
            "share": e.total_bytes() as f64 / total,
        })).collect::<Vec<_>>(),
    })
}
