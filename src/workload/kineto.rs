//! A PyTorch profiler (Kineto) trace: Chrome trace JSON (`{"traceEvents": [...]}`), one
//! file per rank, whose collective events carry PyTorch's NCCL metadata in `args`
//! (`record_param_comms`, PyTorch 2.1+): `Collective name` (`allreduce`,
//! `_allgather_base`, `reduce_scatter_tensor_coalesced`, `all_to_all`, `send`, ...),
//! `In msg nelems`, `Out msg nelems`, `Group size`, `dtype` (`Float`, `BFloat16`,
//! ...), `Process Group Name` and, in newer traces, `Rank`. The same metadata is on the
//! CPU op and on the GPU kernel it launched: the kernels are counted where a trace has
//! them, else the CPU ops. A collective's nccl-tests size is its larger buffer, so the
//! larger of the two element counts times the type's size. Every rank of a process
//! group records the same calls: per (collective, ranks, size), the calls of the
//! (process group, rank) with the most. `barrier`, `wait` (a DDP trace's wait on a
//! work object: 0 elements, group size 1, on the CPU op only) and `recv` (the other
//! end of a `send`) add nothing.

use std::collections::BTreeMap;

use serde_json::Value;

use super::count::{busiest, Calls, Key};
use crate::ops::collective::Collective;

/// Whether `text` looks like a Chrome trace.
pub fn looks_like(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"traceEvents\"")
}

/// The collective a PyTorch collective name is; `None` for the ones that move no data
/// of their own (`barrier`, `wait`, `recv`).
fn collective_of(name: &str) -> Result<Option<Collective>, String> {
    let n = name.to_ascii_lowercase();
    let has = |s: &str| n.contains(s);
    Ok(Some(
        if has("barrier") || n == "wait" || n == "recv" || n == "irecv" {
            return Ok(None);
        } else if has("allreduce") || has("all_reduce") {
            Collective::AllReduce
        } else if has("reduce_scatter") || has("reducescatter") {
            Collective::ReduceScatter
        } else if has("allgather") || has("all_gather") {
            Collective::AllGather
        } else if has("all_to_all") || has("alltoall") {
            Collective::AllToAll
        } else if has("broadcast") {
            Collective::Broadcast
        } else if n == "reduce" {
            Collective::Reduce
        } else if n == "gather" {
            Collective::Gather
        } else if n == "scatter" {
            Collective::Scatter
        } else if n == "send" || n == "isend" {
            Collective::SendRecv
        } else {
            return Err(format!("`{name}` is not a collective nccl-bench measures"));
        },
    ))
}

/// Bytes of one element of PyTorch's dtype `name` (`c10::toString`).
fn element_size(name: &str) -> Option<u64> {
    Some(match name {
        "Bool" | "Byte" | "Char" | "UInt8" | "Int8" => 1,
        n if n.starts_with("Float8") => 1,
        "Half" | "BFloat16" | "Short" | "UInt16" => 2,
        "Float" | "Int" | "UInt32" | "ComplexHalf" => 4,
        "Double" | "Long" | "UInt64" | "ComplexFloat" => 8,
        "ComplexDouble" => 16,
        _ => return None,
    })
}

/// The calls of the traces in `text` (several ranks' files, concatenated).
pub fn calls(text: &str, name: &str) -> Result<Vec<Calls>, String> {
    let mut per_rank: BTreeMap<(String, i64), BTreeMap<Key, u64>> = BTreeMap::new();
    let mut traces = 0usize;
    let mut collectives = 0usize;
    for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let doc = doc.map_err(|e| {
            format!(
                "{name}:{}:{}: not a trace's JSON: {e}",
                e.line(),
                e.column()
            )
        })?;
        traces += 1;
        let events = doc
            .get("traceEvents")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{name}: trace {traces}: no `traceEvents` list"))?;
        let trace_rank = doc
            .pointer("/distributedInfo/rank")
            .and_then(Value::as_i64)
            .unwrap_or(traces as i64 - 1);
        let is_coll = |e: &&Value| e.pointer("/args/Collective name").is_some();
        let on_gpu = |e: &&Value| e.get("cat").and_then(Value::as_str) == Some("kernel");
        let kernels = events.iter().filter(is_coll).any(|e| on_gpu(&e));
        for (i, event) in events.iter().enumerate().filter(|(_, e)| is_coll(e)) {
            if kernels && !on_gpu(&event) {
                continue;
            }
            let at = |what: &str| format!("{name}: trace {traces}, event {i}: {what}");
            let args = &event["args"];
            let coll_name = args["Collective name"]
                .as_str()
                .ok_or_else(|| at("`Collective name` is not a name"))?;
            let Some(collective) = collective_of(coll_name).map_err(|e| at(&e))? else {
                continue;
            };
            let count = |key: &str| {
                let v = &args[key];
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    .ok_or_else(|| at(&format!("`{key}` is not a number of elements")))
            };
            let elements = count("In msg nelems")?.max(count("Out msg nelems")?);
            let dtype = args["dtype"].as_str().unwrap_or_default();
            let element = element_size(dtype)
                .ok_or_else(|| at(&format!("dtype `{dtype}` is not one PyTorch names")))?;
            let ranks = args["Group size"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| at("`Group size` is not a number of ranks"))?;
            let group = match &args["Process Group Name"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let rank = args["Rank"].as_i64().unwrap_or(trace_rank);
            collectives += 1;
            let bytes = elements * element;
            if bytes == 0 {
                continue;
            }
            *per_rank
                .entry((group, rank))
                .or_default()
                .entry((collective, ranks, bytes))
                .or_default() += 1;
        }
    }
    if collectives == 0 {
        return Err(format!(
            "{name}: no collective with PyTorch's NCCL metadata (`Collective name`, `In msg \
             nelems`, ...) in {traces} trace(s): profile with PyTorch 2.1 or newer, with the \
             CUDA activities on"
        ));
    }
    Ok(busiest(&per_rank))
}
