//! A job's collectives: which collectives of which sizes a training job sends, and how
//! often, so that the answers nccl-bench gives per message size can be weighed by
//! what the job really sends. Read from a file in one of these forms:
//!
//! - **NCCL's own log** with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL`: one line per
//!   call on every rank (`AllReduce: opCount 3 ... count 262144 datatype 7 op 0 root 0
//!   comm 0x55.. [nranks=8] stream ..`, `nccl::log::coll_call`). Every rank logs the
//!   same calls of a communicator, so a call is counted once: per (collective, ranks,
//!   size), the calls of the communicator (process and `comm`) that made the most.
//!   A `Send` is one call of `sendrecv`; its matching `Recv` on the peer is not
//!   counted again.
//! - **The NCCL Inspector plugin's JSON** (2.28+): one object per completed call of
//!   each communicator and rank ([`inspector`]), counted once per call.
//! - **A PyTorch profiler (Kineto) trace** with PyTorch's NCCL metadata on its
//!   collectives ([`kineto`]), counted once per call.
//! - **A plain CSV** with the header `collective,bytes,count` and optionally
//!   `nranks`: the collective (`all_reduce`, or NCCL's `AllReduce`), the size as
//!   nccl-tests and nccl-bench give it (`25M` or bytes), and the calls per step.
//!
//! Sizes are nccl-tests' `size`, the larger buffer of one rank
//! ([`crate::ops::collective`]): a COLL line's count is the user's, per rank for
//! all-gather (its send count) and reduce-scatter (its receive count), so their size is
//! count x ranks x the type's size. A file that is neither, or a line or field that
//! does not read, is an error that names it, never a partial workload.

use std::collections::BTreeMap;
use std::path::Path;

use crate::nccl::log::{coll_call, CollCall};
use crate::ops::collective::Collective;
use crate::units::Bytes;

/// Where the calls came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// NCCL's `COLL` debug lines: the calls of the whole log.
    NcclColl,
    /// The NCCL Inspector plugin's JSON: the calls it recorded ([`inspector`]).
    Inspector,
    /// A PyTorch profiler (Kineto) trace: the collectives it recorded ([`kineto`]).
    Kineto,
    /// A CSV of calls per step.
    Csv,
}

impl Format {
    pub fn words(self) -> &'static str {
        match self {
            Format::NcclColl => "NCCL's COLL lines (calls in the log)",
            Format::Inspector => {
                "the NCCL Inspector's JSON (calls it recorded; none under its minimum size, 8 KiB by default)"
            }
            Format::Kineto => "a PyTorch profiler (Kineto) trace (calls in the trace)",
            Format::Csv => "a CSV (calls per step)",
        }
    }
}

/// One (collective, ranks, size) of the job and how often it is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub collective: Collective,
    /// The communicator's ranks; `None` where the CSV does not say.
    pub nranks: Option<u32>,
    /// nccl-tests' size, bytes.
    pub bytes: u64,
    pub calls: u64,
}

impl Entry {
    /// The bytes these calls move, at nccl-tests' size each.
    pub fn total_bytes(&self) -> u64 {
        self.bytes.saturating_mul(self.calls)
    }
}

/// A job's collectives, largest share of bytes first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub source: String,
    pub format: Format,
    pub entries: Vec<Entry>,
}

impl Workload {
    /// Reads `path` (`-` is not taken: a workload is a file).
    pub fn read(path: &Path) -> Result<Workload, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Workload::parse(
            &String::from_utf8_lossy(&bytes),
            &path.display().to_string(),
        )
    }

    /// Reads a workload's text; `name` says where it came from in messages.
    pub fn parse(text: &str, name: &str) -> Result<Workload, String> {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        let is_csv =
            first.is_some_and(|l| l.split(',').next().map(str::trim) == Some("collective"));
        let (format, entries) = if is_csv {
            (Format::Csv, from_csv(text, name)?)
        } else if kineto::looks_like(text) {
            (Format::Kineto, entries_of(kineto::calls(text, name)?))
        } else if inspector::looks_like(text) {
            (Format::Inspector, entries_of(inspector::calls(text, name)?))
        } else {
            (Format::NcclColl, from_coll_lines(text, name)?)
        };
        let mut entries = entries;
        entries.sort_by(|a, b| {
            b.total_bytes()
                .cmp(&a.total_bytes())
                .then(a.collective.cmp(&b.collective))
                .then(a.bytes.cmp(&b.bytes))
        });
        Ok(Workload {
            source: name.to_string(),
            format,
            entries,
        })
    }

    /// The calls as a sweep's manifest keeps them.
    pub fn calls(&self) -> Vec<crate::config::JobCall> {
        self.entries
            .iter()
            .map(|e| crate::config::JobCall {
                collective: e.collective,
                nranks: e.nranks,
                bytes: e.bytes,
                calls: e.calls,
            })
            .collect()
    }

    /// The job as a report weighs it (`compare --workload`, `report --workload`): its
    /// calls, read from `file`.
    pub fn as_job(&self, file: &std::path::Path) -> crate::config::SizesFrom {
        crate::config::SizesFrom {
            file: file.display().to_string(),
            sizes: Default::default(),
            calls: self.calls(),
            per: self.per().to_string(),
        }
    }

    /// What the calls count: `per step` (a CSV) or `in the log` (COLL lines).
    pub fn per(&self) -> &'static str {
        match self.format {
            Format::Csv => "per step",
            Format::NcclColl => "in the log",
            Format::Inspector | Format::Kineto => "in the trace",
        }
    }

    /// Every call's bytes.
    pub fn total_bytes(&self) -> u64 {
        self.entries.iter().map(Entry::total_bytes).sum()
    }

    pub fn total_calls(&self) -> u64 {
        self.entries.iter().map(|e| e.calls).sum()
    }
}

/// The collective a COLL line's function is, and its nccl-tests size.
fn size_of_call(call: &CollCall) -> Result<(Collective, u64), String> {
    let collective = match call.func.as_str() {
        "Send" => Collective::SendRecv,
        other => Collective::parse(other)
            .map_err(|_| format!("`{other}` is not a collective nccl-bench measures"))?,
    };
    let element = call
        .type_size()
        .ok_or_else(|| format!("datatype {} is not one NCCL 2.30 has", call.datatype))?;
    let n = u64::from(call.nranks.max(1));
    let per_rank = match collective {
        Collective::AllGather
        | Collective::ReduceScatter
        | Collective::AllToAll
        | Collective::Gather
        | Collective::Scatter => call.count * n,
        _ => call.count,
    };
    Ok((collective, per_rank * element))
}

fn from_coll_lines(text: &str, name: &str) -> Result<Vec<Entry>, String> {
    // (process, comm) -> (collective, ranks, size) -> calls.
    use count::Key;
    let mut per_comm: BTreeMap<(String, String), BTreeMap<Key, u64>> = BTreeMap::new();
    let mut seen = 0usize;
    for (i, line) in text.lines().enumerate() {
        let Some((process, call)) = coll_call(line) else {
            continue;
        };
        seen += 1;
        if call.func == "Recv" {
            continue;
        }
        let (collective, bytes) =
            size_of_call(&call).map_err(|e| format!("{name}:{}: {e}", i + 1))?;
        let comm = (process.unwrap_or_default(), call.comm.clone());
        *per_comm
            .entry(comm)
            .or_default()
            .entry((collective, call.nranks, bytes))
            .or_default() += 1;
    }
    if seen == 0 {
        return Err(format!(
            "{name} holds no NCCL COLL line (`AllReduce: opCount ... count ... [nranks=N]`; run \
             the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL) and is no CSV with the header \
             collective,bytes,count[,nranks]"
        ));
    }
    Ok(entries_of(count::busiest(&per_comm)))
}

/// Entries of calls whose ranks are known.
fn entries_of(calls: Vec<count::Calls>) -> Vec<Entry> {
    calls
        .into_iter()
        .map(|(collective, nranks, bytes, calls)| Entry {
            collective,
            nranks: Some(nranks),
            bytes,
            calls,
        })
        .collect()
}

fn from_csv(text: &str, name: &str) -> Result<Vec<Entry>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let (head_at, head) = lines.next().ok_or_else(|| format!("{name}: empty"))?;
    let columns: Vec<&str> = head.split(',').map(str::trim).collect();
    let at = |col: &str| columns.iter().position(|c| *c == col);
    let (Some(coll_at), Some(bytes_at), Some(count_at)) =
        (at("collective"), at("bytes"), at("count"))
    else {
        return Err(format!(
            "{name}:{}: the header must name collective, bytes and count (and may name nranks), \
             not `{}`",
            head_at + 1,
            head.trim()
        ));
    };
    if let Some(other) = columns
        .iter()
        .find(|c| !["collective", "bytes", "count", "nranks"].contains(c))
    {
        return Err(format!("{name}:{}: unknown column `{other}`", head_at + 1));
    }
    let nranks_at = at("nranks");
    let mut merged: BTreeMap<(Collective, Option<u32>, u64), u64> = BTreeMap::new();
    for (i, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let here = |what: &str| format!("{name}:{}: {what}", i + 1);
        if fields.len() != columns.len() {
            return Err(here(&format!(
                "{} fields where the header has {}",
                fields.len(),
                columns.len()
            )));
        }
        let collective = Collective::parse(fields[coll_at])
            .map_err(|e| here(&format!("field `collective`: {e}")))?;
        let bytes = Bytes::parse(fields[bytes_at])
            .map_err(|e| here(&format!("field `bytes`: {e}")))?
            .0;
        if bytes == 0 {
            return Err(here("field `bytes`: a call moves at least one byte"));
        }
        let calls: u64 = fields[count_at]
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                here(&format!(
                    "field `count`: `{}` is not a number of calls (1 or more)",
                    fields[count_at]
                ))
            })?;
        let nranks =
            match nranks_at.map(|a| fields[a]) {
                None | Some("") => None,
                Some(v) => Some(v.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    here(&format!("field `nranks`: `{v}` is not a number of ranks"))
                })?),
            };
        *merged.entry((collective, nranks, bytes)).or_default() += calls;
    }
    if merged.is_empty() {
        return Err(format!("{name}: a header and no call"));
    }
    Ok(merged
        .into_iter()
        .map(|((collective, nranks, bytes), calls)| Entry {
            collective,
            nranks,
            bytes,
            calls,
        })
        .collect())
}

mod count;
pub mod inspector;
pub mod kineto;
pub mod render;
#[cfg(test)]
mod tests;
