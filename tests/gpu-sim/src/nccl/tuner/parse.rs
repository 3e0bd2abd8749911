//! `NCCL_ALGO` and `NCCL_PROTO`, read at communicator init (`ncclTopoTuneModel`,
//! NCCL_PROTO first), as each release reads them (`parseList` in
//! `src/graph/tuning.cc`):
//! - before 2.24: `[^]name[,name]...` for every function; names compared without
//!   case (`strcasecmp`), tokens not trimmed, unknown tokens silently ignored, a
//!   leading `^` excludes the names (`Ring,^Tree` is two tokens, the second
//!   unknown). Then, with no CollNet, an `NCCL_ALGO` that leaves none of Ring,
//!   Tree, NVLS and NVLSTree (Ring and Tree up to 2.17) is ignored: Ring and Tree
//!   are enabled again, with `WARN CollNet is not supported or fails to initialize,
//!   ignoring NCCL_ALGO=COLLNET` on rank 0 up to 2.19;
//! - from 2.24: `[list][;prefix:list]...`, the prefix a function (`Broadcast`,
//!   `Reduce`, `AllGather`, `ReduceScatter`, `AllReduce`, without case), the first
//!   entry optionally without one (then for every function), each list optionally
//!   `^`-led; an unknown element, an unknown prefix, or a later entry without a
//!   prefix is a WARN and `ncclInvalidUsage` from `ncclCommInitRank`. Nothing is
//!   enabled again.
//!
//! Both: LL128 is "2" by default, on only where the paths allow it ([`super::Machine`]);
//! naming it turns it on anywhere. NVLSTree is off on one node, CollNet off without
//! CollNet (and NVLS across nodes).

use super::{algos, FUNCS, PROTOS};
use crate::nccl::comm::Failure;
use crate::nccl::{Version, INVALID_USAGE};

/// NCCL's `algoEnable` and `protoEnable` per function: 0 off, 1 on, 2 (LL128's
/// default) on where safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enabled {
    pub algo: [[u8; 7]; 5],
    pub proto: [[u8; 3]; 5],
}

impl Default for Enabled {
    fn default() -> Enabled {
        Enabled {
            algo: [[1; 7]; 5],
            proto: [[1, 2, 1]; 5],
        }
    }
}

/// What [`Enabled::read`] found besides the settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notes {
    /// Up to 2.19: NCCL's WARN that it ignores an `NCCL_ALGO` that left nothing.
    pub ignored_algo_warning: bool,
    /// 2.24+: `Enabled NCCL Func/Proto/Algo Matrix:...`, the settings as parsed
    /// (before NCCL's own disabling), logged (ENV) when either variable is set.
    pub matrix: Option<Enabled>,
}

impl Enabled {
    /// The settings of release `v` from `NCCL_ALGO` and `NCCL_PROTO` (`None`:
    /// unset) on `nodes` hosts; a parse error of 2.24+ as NCCL reports it.
    pub fn read(
        v: Version,
        algo: Option<&str>,
        proto: Option<&str>,
        nodes: u32,
    ) -> Result<(Enabled, Notes), Failure> {
        let mut e = Enabled::default();
        let algo_names: Vec<&str> = algos(v).iter().map(|a| a.name(v)).collect();
        let proto_names: Vec<&str> = PROTOS.iter().map(|p| p.name()).collect();
        let mut notes = Notes::default();
        if v >= (2, 24, 0) {
            if let Some(text) = proto {
                per_function(text, &proto_names, &mut e.proto)?;
            }
            if let Some(text) = algo {
                per_function(text, &algo_names, &mut e.algo)?;
            }
            if algo.is_some() || proto.is_some() {
                notes.matrix = Some(e);
            }
        } else {
            if let Some(text) = proto {
                let row = legacy(text, &proto_names);
                for f in &mut e.proto {
                    f.copy_from_slice(&row);
                }
            }
            if let Some(text) = algo {
                let row = legacy(text, &algo_names);
                for f in &mut e.algo {
                    f[..row.len()].copy_from_slice(&row);
                    f[row.len()..].fill(0);
                }
            }
        }
        for f in &mut e.algo {
            let [tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, _pat] = f;
            if nodes == 1 {
                *nvls_tree = 0;
            }
            *collnet_direct = 0;
            *collnet_chain = 0;
            if nodes > 1 {
                *nvls = 0;
            }
            if v < (2, 24, 0) {
                let none_left = if v >= (2, 18, 0) {
                    *ring == 0 && *tree == 0 && *nvls == 0 && *nvls_tree == 0
                } else {
                    *ring == 0 && *tree == 0
                };
                if none_left {
                    *ring = 1;
                    *tree = 1;
                    notes.ignored_algo_warning = v < (2, 20, 0);
                }
            }
        }
        Ok((e, notes))
    }
}

/// `strtok`: the non-empty pieces of `text` between `delim`s, with their offsets.
fn strtok(text: &str, delim: char) -> impl Iterator<Item = (usize, &str)> {
    text.split(delim)
        .scan(0, |at, piece| {
            let start = *at;
            *at += piece.len() + 1;
            Some((start, piece))
        })
        .filter(|(_, piece)| !piece.is_empty())
}

/// The position of `token` among `names`, compared without case.
fn find(names: &[&str], token: &str) -> Option<usize> {
    names.iter().position(|n| n.eq_ignore_ascii_case(token))
}

/// Up to 2.23: a comma list, or `^` and the names it turns off; unknown tokens
/// ignored. One value per name.
pub fn legacy(text: &str, names: &[&str]) -> Vec<u8> {
    let (default, set, list) = match text.strip_prefix('^') {
        Some(rest) => (1, 0, rest),
        None => (0, 1, text),
    };
    let mut row = vec![default; names.len()];
    for (_, token) in strtok(list, ',') {
        if let Some(i) = find(names, token) {
            row[i] = set;
        }
    }
    row
}

/// From 2.24: `[list][;prefix:list]...` into `table` (a row per function, which
/// holds the defaults on entry); NCCL's WARN and `ncclInvalidUsage` for what it
/// does not take.
pub fn per_function<const N: usize>(
    text: &str,
    names: &[&str],
    table: &mut [[u8; N]; 5],
) -> Result<(), Failure> {
    let func_names: Vec<&str> = FUNCS.iter().map(|f| f.name()).collect();
    for (offset, entry) in strtok(text, ';') {
        let mut parts = strtok(entry, ':').map(|(_, p)| p);
        let first = parts.next().unwrap_or_default();
        let (prefix, list) = match parts.next() {
            Some(list) => (Some(first), list),
            None if offset != 0 => {
                return Err((
                    INVALID_USAGE,
                    format!("All entries except the first must have a prefix: \"{text}\""),
                    "graph/tuning.cc:71",
                ))
            }
            None => (None, first),
        };
        let (unset, set, list) = match list.strip_prefix('^') {
            Some(rest) => (1, 0, rest),
            None => (0, 1, list),
        };
        let mut found = false;
        for (f, row) in table.iter_mut().enumerate() {
            if prefix.is_some_and(|p| !p.eq_ignore_ascii_case(func_names[f])) {
                continue;
            }
            found = true;
            row[..names.len()].fill(unset);
            for (_, elem) in strtok(list, ',') {
                match find(names, elem) {
                    Some(i) => row[i] = set,
                    None => {
                        return Err((
                            INVALID_USAGE,
                            format!(
                                "Unrecognized element token \"{elem}\" when parsing \"{text}\""
                            ),
                            "graph/tuning.cc:104",
                        ))
                    }
                }
            }
        }
        if !found {
            return Err((
                INVALID_USAGE,
                format!(
                    "Unrecognized prefix token \"{}\" when parsing \"{text}\"",
                    prefix.unwrap_or_default()
                ),
                "graph/tuning.cc:114",
            ));
        }
    }
    Ok(())
}
