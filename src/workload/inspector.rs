//! The NCCL Inspector profiler plugin's JSON (`plugins/profiler/inspector`, NCCL 2.28+,
//! `NCCL_INSPECTOR_ENABLE=1`): one file per process, a stream of objects, one per
//! completed collective (`coll_perf`) or point-to-point call (`p2p_perf`) of each
//! communicator, each with a `header` naming the communicator (`id`), this process's
//! `rank` and the communicator's `n_ranks`. `coll_msg_size_bytes` is the call's count x
//! type size: one rank's share for all-gather and reduce-scatter (the plugin's own
//! busbw multiplies it by the ranks), the whole buffer for all-reduce, broadcast and
//! reduce. Every rank records the same calls of a communicator, so a call is counted
//! once: per (collective, ranks, size), the calls of the (communicator, rank) that
//! recorded the most. The plugin skips calls smaller than
//! `NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES` (8 KiB by default).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::count::{busiest, Calls, Key};
use crate::ops::collective::Collective;

/// Whether `text` looks like the plugin's output: JSON objects, the first with a
/// `header`.
pub fn looks_like(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"header\"")
}

/// The calls of the objects in `text` (several processes' files, concatenated).
pub fn calls(text: &str, name: &str) -> Result<Vec<Calls>, String> {
    let mut per_rank: BTreeMap<(String, i64), BTreeMap<Key, u64>> = BTreeMap::new();
    let mut seen: BTreeSet<(String, i64, &'static str, u64)> = BTreeSet::new();
    let mut objects = 0usize;
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for value in stream {
        let value = value.map_err(|e| {
            format!(
                "{name}:{}:{}: not the Inspector's JSON: {e}",
                e.line(),
                e.column()
            )
        })?;
        objects += 1;
        let at = |what: &str| format!("{name}: object {objects}: {what}");
        let header = value
            .get("header")
            .ok_or_else(|| at("no `header` (the Inspector writes one in every object)"))?;
        let comm = header
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| at("`header.id` is not the communicator's id"))?
            .to_string();
        let rank = header
            .get("rank")
            .and_then(Value::as_i64)
            .ok_or_else(|| at("`header.rank` is not a rank"))?;
        let nranks = header
            .get("n_ranks")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| at("`header.n_ranks` is not a number of ranks"))?;
        let (kind, perf, func_key, size_key, sn_key) = if let Some(p) = value.get("coll_perf") {
            ("coll", p, "coll", "coll_msg_size_bytes", "coll_sn")
        } else if let Some(p) = value.get("p2p_perf") {
            ("p2p", p, "p2p", "p2p_msg_size_bytes", "p2p_sn")
        } else {
            return Err(at("neither `coll_perf` nor `p2p_perf`"));
        };
        let field = |key: &str| format!("`{kind}_perf.{key}`");
        let func = perf
            .get(func_key)
            .and_then(Value::as_str)
            .ok_or_else(|| at(&format!("{} is not a function name", field(func_key))))?;
        let size = perf
            .get(size_key)
            .and_then(Value::as_u64)
            .ok_or_else(|| at(&format!("{} is not a byte count", field(size_key))))?;
        let sn = perf
            .get(sn_key)
            .and_then(Value::as_u64)
            .ok_or_else(|| at(&format!("{} is not a sequence number", field(sn_key))))?;
        // A dump may write a call again; the receiving side of a send is the same
        // transfer.
        if !seen.insert((comm.clone(), rank, kind, sn)) || func == "Recv" {
            continue;
        }
        let collective = match func {
            "Send" | "SendRecv" => Collective::SendRecv,
            other => Collective::parse(other).map_err(|_| {
                at(&format!(
                    "`{other}` is not a collective nccl-bench measures"
                ))
            })?,
        };
        let n = u64::from(nranks);
        let bytes = match collective {
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter => size * n,
            _ => size,
        };
        if bytes == 0 {
            continue;
        }
        *per_rank
            .entry((comm, rank))
            .or_default()
            .entry((collective, nranks, bytes))
            .or_default() += 1;
    }
    if objects == 0 {
        return Err(format!("{name}: no Inspector object"));
    }
    Ok(busiest(&per_rank))
}
