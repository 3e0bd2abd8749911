//! What an imported output says about the run around its rows: the GPUs and hosts
//! nccl-tests listed, the config its NCCL variables match, the datatype, op and root
//! every row shares, and its iteration count. Read by `write` into the manifest.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use super::{ImportedRank, ImportedRun};
use crate::config::transport::builtin_configs;
use crate::model::{ClusterInfo, GpuFacts, GpuInfo, RankInfo};
use crate::nccl::vars;
use crate::ops::{DataType, ReduceOp};

/// The GPUs nccl-tests listed, one per rank in rank order (what the report matches
/// against published figures); nothing else about them is known.
pub(super) fn gpu_facts(ranks: &[ImportedRank]) -> Option<GpuFacts> {
    if ranks.is_empty() {
        return None;
    }
    Some(GpuFacts {
        driver_version: "unknown".into(),
        cuda_version: "unknown".into(),
        gpus: ranks
            .iter()
            .map(|r| GpuInfo {
                index: r.device,
                name: r.gpu.clone(),
                bus_id: r.bus_id.clone(),
                memory_bytes: 0,
                free_bytes: None,
            })
            .collect(),
        p2p: Vec::new(),
    })
}

/// The ranks' hosts, when nccl-tests listed them.
pub(super) fn cluster(ranks: &[ImportedRank]) -> Option<ClusterInfo> {
    if ranks.is_empty() {
        return None;
    }
    let mut hosts: Vec<String> = Vec::new();
    for r in ranks {
        if !hosts.contains(&r.host) {
            hosts.push(r.host.clone());
        }
    }
    Some(ClusterInfo {
        launcher: "nccl-tests (imported)".into(),
        rendezvous: String::new(),
        world_size: ranks.len() as u32,
        hosts,
        ranks: ranks
            .iter()
            .map(|r| RankInfo {
                rank: r.rank,
                host: r.host.clone(),
                local_rank: r.device as u32,
                device: r.device,
                pid: r.pid,
                nccl_version: None,
            })
            .collect(),
    })
}

/// The built-in preset whose NCCL settings the output shows; `default` when it
/// shows none; `imported` otherwise (the variables are in the manifest). Not
/// settings: `NCCL_DEBUG*` (logging), nccl-bench's own `NCCL_BENCH*`, and an image's
/// `NCCL_VERSION` label (seen in a real -J document's env on an NVIDIA image).
pub(super) fn config_from_env(env: &[(String, String)]) -> String {
    let shown: Vec<&(String, String)> = env
        .iter()
        .filter(|(k, _)| {
            k.starts_with("NCCL_")
                && !k.starts_with("NCCL_DEBUG")
                && !vars::is_ours(k)
                && vars::image_label(k).is_none()
        })
        .collect();
    if shown.is_empty() {
        return "default".into();
    }
    builtin_configs()
        .into_iter()
        .find(|c| c.env.len() == shown.len() && shown.iter().all(|(k, v)| c.env.get(k) == Some(v)))
        .map(|c| c.name)
        .unwrap_or_else(|| "imported".into())
}

/// The datatype, op and root every row shares. A collective that does not reduce
/// keeps the op nccl-tests printed where that is one (sendrecv prints the op it was
/// given); where it printed `none` (or, before 2022, nothing) the op is `sum`, what a
/// sweep of that collective records without `--op`: results.csv needs a valid op,
/// and compare matches cases on it.
pub(super) fn checked_types(run: &ImportedRun, file: &Path) -> Result<(DataType, ReduceOp, u32)> {
    let first = &run.rows[0];
    let at = |line: usize| format!("{}:{line}", file.display());
    let dtype: DataType = first
        .dtype
        .parse()
        .map_err(|e| anyhow!("{}: {e}", at(first.line)))?;
    let op: ReduceOp = if run.collective.reduces() {
        match first.op.parse() {
            Ok(op) => op,
            // A table of a binary that does not reduce, and nothing names it.
            Err(_) if run.binary.is_none() => bail!(
                "{}: the rows' redop is {} where all_reduce_perf always names its op, and \
                 nothing in the output names the nccl-tests binary that printed them: give \
                 its collective (`--coll alltoall`), or put the command line that ran it \
                 (e.g. `./build/alltoall_perf -b 8 -e 128M`) on a line before the table",
                at(first.line),
                if first.op.is_empty() {
                    "empty".to_string()
                } else {
                    format!("`{}`", first.op)
                }
            ),
            Err(e) => bail!("{}: {e}", at(first.line)),
        }
    } else {
        first.op.parse().unwrap_or(ReduceOp::Sum)
    };
    if let Some(other) = run
        .rows
        .iter()
        .find(|r| r.dtype != first.dtype || r.op != first.op)
    {
        bail!(
            "{}: rows of several types or ops ({} {} and {} {}); import them separately",
            at(other.line),
            first.dtype,
            first.op,
            other.dtype,
            other.op
        );
    }
    // A case is one (size, type, op) of one root: `-r -1` runs every root in turn.
    if let Some(other) = run.rows.iter().find(|r| r.root != first.root) {
        let root = |r: Option<i64>| r.map_or("none".to_string(), |r| r.to_string());
        bail!(
            "{}: rows of several roots ({} and {}); import each root's rows separately",
            at(other.line),
            root(first.root),
            root(other.root)
        );
    }
    // nccl-tests prints -1 for the collectives without a root.
    let root = first.root.and_then(|r| u32::try_from(r).ok()).unwrap_or(0);
    Ok((dtype, op, root))
}

/// `-n N` / `--iters N` from the command line nccl-tests was run with, else its default 20.
pub(super) fn iters_from_command(command: Option<&str>) -> u64 {
    let words: Vec<&str> = command.unwrap_or("").split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[0] == "-n" || w[0] == "--iters")
        .and_then(|w| w[1].parse().ok())
        .unwrap_or(20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_come_from_the_recorded_environment() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(config_from_env(&env(&[("NCCL_DEBUG", "INFO")])), "default");
        assert_eq!(
            config_from_env(&env(&[("NCCL_SHM_DISABLE", "1")])),
            "shm-off"
        );
        assert_eq!(
            config_from_env(&env(&[
                ("NCCL_SHM_DISABLE", "1"),
                ("NCCL_P2P_DISABLE", "1")
            ])),
            "net-only"
        );
        assert_eq!(
            config_from_env(&env(&[("NCCL_MIN_NCHANNELS", "4")])),
            "imported"
        );
        assert_eq!(
            iters_from_command(Some("./all_reduce_perf -b 8 -e 1G -n 50 -g 1")),
            50
        );
        assert_eq!(iters_from_command(None), 20);
    }
}
