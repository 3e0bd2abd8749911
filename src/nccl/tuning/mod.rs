//! NCCL's tuning decisions: which algorithm and protocol it chose for a collective,
//! on how many channels, and (where it says) the time its cost model predicted.
//!
//! With `NCCL_DEBUG_SUBSYS` including `TUNING`, rank 0 logs one line per collective.
//! The wording, from NCCL's `src/enqueue.cc`:
//! - before 2.20: none (the line is commented out; only TRACE builds print it);
//! - 2.20 to 2.22: `%ld Bytes -> Algo %d proto %d time %f` (numeric codes, the model's
//!   time in microseconds);
//! - 2.23: `%s: %ld Bytes -> Algo %d proto %d time %f` (the function first);
//! - 2.24 on: `%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}` (names,
//!   no time), logged when the collective is scheduled;
//! - 2.27 on, symmetric kernels: `%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d
//!   nthreads %d` (2.28 appends ` nWorks %d`);
//! - 2.29 on, copy-engine collectives: `%s [Copy Engine]: %ld Bytes -> cudaMemcpy` (with
//!   `; CE synchronization with NVLS` where NVLS is up); 2.30.7 adds `%s [Hierarchical
//!   CE]: %ld Bytes -> RMA proxy + CE`. 2.28 runs copy-engine collectives (symmetric
//!   windows and `NCCL_CTA_POLICY=2`) without any line.
//!
//! The bytes are the total (count x type size x ranks for all-gather and
//! reduce-scatter) up to 2.23, and the task's count x type size from 2.24: per rank for
//! all-gather, reduce-scatter, all-to-all, gather and scatter ([`logged_bytes`]).
//!
//! At initialization rank 0 also prints the model's table (`src/graph/tuning.cc`): a
//! block of `  Algorithm   |`, `  Protocol    |`, ` Max NThreads |` lines and one
//! `latency/bandwidth` line per function, for three algorithms at a time.
//!
//! `NCCL_ALGO` / `NCCL_PROTO` force choices. Before 2.24 they are a comma list (a
//! leading `^` excludes), unknown names are ignored, and an impossible choice falls
//! back silently to Ring; from 2.24 a list may be given per function
//! (`ring;allreduce:tree`), unknown names are an error, and an impossible choice fails
//! the collective (`no algorithm/protocol available`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::NcclVersion;

/// NCCL's algorithms, in its numbering (`NCCL_ALGO_TREE` 0 ... `NCCL_ALGO_PAT` 6), and
/// the symmetric kernels of 2.27+ (no number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Algorithm {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
    Symmetric,
    /// A copy-engine collective (2.28+): `cudaMemcpy`s, no kernel, no protocol.
    CopyEngine,
}

pub const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::Tree,
    Algorithm::Ring,
    Algorithm::CollNetDirect,
    Algorithm::CollNetChain,
    Algorithm::Nvls,
    Algorithm::NvlsTree,
    Algorithm::Pat,
];

impl Algorithm {
    /// The name `NCCL_ALGO` takes (and the CSV writes).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Tree => "Tree",
            Algorithm::Ring => "Ring",
            Algorithm::CollNetDirect => "CollNetDirect",
            Algorithm::CollNetChain => "CollNetChain",
            Algorithm::Nvls => "NVLS",
            Algorithm::NvlsTree => "NVLSTree",
            Algorithm::Pat => "PAT",
            Algorithm::Symmetric => "Symmetric",
            Algorithm::CopyEngine => "CE",
        }
    }

    fn from_code(code: i64) -> Option<Algorithm> {
        ALGORITHMS.get(usize::try_from(code).ok()?).copied()
    }

    /// Any spelling NCCL uses: `NCCL_ALGO`'s (`NVLSTree`), the log's (`NVLS_TREE`).
    pub fn parse(text: &str) -> Option<Algorithm> {
        let key = text.trim().replace('_', "").to_ascii_lowercase();
        ALGORITHMS
            .into_iter()
            .find(|a| a.name().to_ascii_lowercase() == key)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// NCCL's protocols, in its numbering (`NCCL_PROTO_LL` 0, `LL128` 1, `SIMPLE` 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Protocol {
    Ll,
    Ll128,
    Simple,
}

pub const PROTOCOLS: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

impl Protocol {
    /// The name `NCCL_PROTO` takes (and the CSV writes).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    fn from_code(code: i64) -> Option<Protocol> {
        PROTOCOLS.get(usize::try_from(code).ok()?).copied()
    }

    pub fn parse(text: &str) -> Option<Protocol> {
        let key = text.trim().to_ascii_lowercase();
        PROTOCOLS
            .into_iter()
            .find(|p| p.name().to_ascii_lowercase() == key)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One collective's tuning line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// `AllReduce`, ...; `None` in the 2.20-2.22 wording, which does not say.
    pub func: Option<String>,
    pub bytes: u64,
    pub algo: Algorithm,
    /// `None` for a symmetric kernel, which has no protocol.
    pub proto: Option<Protocol>,
    /// Channels the collective ran on (`channel{Lo..Hi}`, or `nchannels`).
    pub channels: Option<u32>,
    /// The model's time, microseconds (2.20-2.23 only).
    pub predicted_us: Option<f64>,
    /// A symmetric kernel's name (2.27+).
    pub kernel: Option<String>,
}

/// Reads a tuning line's message (after `NCCL INFO`); `None` for any other line.
pub fn parse_choice(message: &str) -> Option<Choice> {
    let (head, rest) = message.split_once(" Bytes -> ")?;
    let (func, bytes) = match head.rsplit_once(':') {
        Some((func, bytes)) => (Some(func.trim()), bytes.trim()),
        None => (None, head.trim()),
    };
    let bytes: u64 = bytes.parse().ok()?;
    let copy_engine = func.and_then(|f| {
        f.strip_suffix("[Copy Engine]")
            .or_else(|| f.strip_suffix("[Hierarchical CE]"))
    });
    if let Some(func) = copy_engine {
        return Some(Choice {
            func: Some(func.trim().to_string()),
            bytes,
            algo: Algorithm::CopyEngine,
            proto: None,
            channels: None,
            predicted_us: None,
            kernel: None,
        });
    }
    if let Some(func) = func.and_then(|f| f.strip_suffix("[Symmetric]")) {
        // `Kernel %s nchannels %d nthreads %d[ nWorks %d]`
        let words: Vec<&str> = rest.split_whitespace().collect();
        let kernel = match words.as_slice() {
            ["Kernel", name, ..] => name.to_string(),
            _ => return None,
        };
        return Some(Choice {
            func: Some(func.trim().to_string()),
            bytes,
            algo: Algorithm::Symmetric,
            proto: None,
            channels: value_after(&words, "nchannels"),
            predicted_us: None,
            kernel: Some(kernel),
        });
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (algo, proto) = match words.as_slice() {
        ["Algo", a, "proto", p, ..] => {
            let algo = match a.parse::<i64>() {
                Ok(code) => Algorithm::from_code(code)?,
                Err(_) => Algorithm::parse(a)?,
            };
            let proto = match p.parse::<i64>() {
                Ok(code) => Protocol::from_code(code)?,
                Err(_) => Protocol::parse(p)?,
            };
            (algo, proto)
        }
        _ => return None,
    };
    let predicted_us = value_after::<f64>(&words, "time").filter(|t| t.is_finite() && *t >= 0.0);
    // `channel{Lo..Hi}={0..15}`
    let channels = words
        .iter()
        .find_map(|w| w.strip_prefix("channel{Lo..Hi}={"))
        .and_then(|r| r.strip_suffix('}'))
        .and_then(|r| r.split_once(".."))
        .and_then(|(lo, hi)| Some((lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?)))
        .filter(|(lo, hi)| hi >= lo)
        .map(|(lo, hi)| hi - lo + 1);
    Some(Choice {
        func: func.map(str::to_string),
        bytes,
        algo,
        proto: Some(proto),
        channels,
        predicted_us,
        kernel: None,
    })
}

fn value_after<T: std::str::FromStr>(words: &[&str], key: &str) -> Option<T> {
    let at = words.iter().position(|w| *w == key)?;
    words.get(at + 1)?.parse().ok()
}

/// Whether a message is a line of the model's table printed at initialization.
pub fn is_table_line(message: &str) -> bool {
    let head = message.split('|').next().unwrap_or_default().trim();
    if !message.contains('|') {
        return false;
    }
    matches!(head, "Algorithm" | "Protocol" | "Max NThreads")
        || ([
            "Broadcast",
            "Reduce",
            "AllGather",
            "ReduceScatter",
            "AllReduce",
        ]
        .contains(&head)
            && message.contains('/'))
}

/// The decisions of one case: the algorithm, protocol and channel cells, the model's
/// time, and what to say about them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// `Ring`, or a mix with shares (`Ring:50%;Tree:50%`) when the lines disagree.
    pub algo: String,
    pub proto: String,
    pub channels: String,
    pub predicted_us: Option<f64>,
    /// A forced choice NCCL did not follow (before 2.24, silently).
    pub note: String,
}

/// The decisions of the lines about `bytes` of `func` (NCCL's name of the operation,
/// `AllReduce`; a line that names none, before 2.23, counts for all-reduces only),
/// with what the config forced (`NCCL_ALGO`, `NCCL_PROTO`) held against them; `None`
/// when no line is about that size.
pub fn decision(
    choices: &[Choice],
    func: &str,
    bytes: u64,
    forced_algo: Option<&str>,
    forced_proto: Option<&str>,
) -> Option<Decision> {
    let mine: Vec<&Choice> = choices
        .iter()
        .filter(|c| {
            c.bytes == bytes
                && match c.func.as_deref() {
                    Some(f) => f == func,
                    None => func == "AllReduce",
                }
        })
        .collect();
    if mine.is_empty() {
        return None;
    }
    let algo = shares(mine.iter().map(|c| c.algo.name().to_string()));
    // A symmetric kernel has no protocol: its name says how it moves the bytes.
    let proto = shares(mine.iter().map(|c| match (c.proto, &c.kernel) {
        (Some(p), _) => p.name().to_string(),
        (None, Some(kernel)) => kernel.clone(),
        (None, None) => String::new(),
    }));
    let channels = shares(
        mine.iter()
            .map(|c| c.channels.map(|n| n.to_string()).unwrap_or_default()),
    );
    let predicted_us = mine.iter().rev().find_map(|c| c.predicted_us);
    let mut notes = Vec::new();
    let last = mine[mine.len() - 1];
    if let Some(list) = forced_algo {
        if allowed_names(list, &ALGORITHMS.map(Algorithm::name))
            .is_some_and(|allowed| !allowed.contains(&last.algo.name()))
            && !matches!(last.algo, Algorithm::Symmetric | Algorithm::CopyEngine)
        {
            notes.push(format!(
                "fell back to {}: NCCL_ALGO={list} is not available here",
                last.algo.name().to_ascii_uppercase()
            ));
        }
    }
    if let (Some(list), Some(proto)) = (forced_proto, last.proto) {
        if allowed_names(list, &PROTOCOLS.map(Protocol::name))
            .is_some_and(|allowed| !allowed.contains(&proto.name()))
        {
            notes.push(format!(
                "fell back to {}: NCCL_PROTO={list} is not available here",
                proto.name()
            ));
        }
    }
    Some(Decision {
        algo,
        proto,
        channels,
        predicted_us,
        note: notes.join("; "),
    })
}

/// The names of `all` a forcing variable allows for all-reduce, in either syntax
/// (the per-function one of 2.24+ included); `None` when it cannot be read.
pub fn allowed_names<'a>(value: &str, all: &[&'a str]) -> Option<Vec<&'a str>> {
    let mut allowed: Option<Vec<&'a str>> = None;
    for (i, entry) in value.split(';').enumerate() {
        let (prefix, list) = match entry.split_once(':') {
            Some((p, l)) => (Some(p.trim()), l),
            None => (None, entry),
        };
        if prefix.is_some_and(|p| !p.eq_ignore_ascii_case("allreduce")) {
            continue;
        }
        if prefix.is_none() && i > 0 {
            return None;
        }
        let (exclude, list) = match list.trim().strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, list.trim()),
        };
        let named: Vec<String> = list
            .split(',')
            .map(|n| n.trim().replace('_', "").to_ascii_lowercase())
            .collect();
        let set = all
            .iter()
            .copied()
            .filter(|a| named.contains(&a.to_ascii_lowercase()) != exclude)
            .collect();
        allowed = Some(set);
    }
    allowed
}

/// `value` when every item says it, else each distinct value with its share in
/// order of first appearance (`Ring:75%;Tree:25%`); empty items are left out.
fn shares(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.filter(|s| !s.is_empty()).collect();
    let mut distinct: Vec<(String, usize)> = Vec::new();
    for item in &items {
        match distinct.iter_mut().find(|(v, _)| v == item) {
            Some((_, n)) => *n += 1,
            None => distinct.push((item.clone(), 1)),
        }
    }
    match distinct.as_slice() {
        [] => String::new(),
        [(only, _)] => only.clone(),
        _ => distinct
            .iter()
            .map(|(v, n)| format!("{v}:{:.0}%", *n as f64 * 100.0 / items.len() as f64))
            .collect::<Vec<_>>()
            .join(";"),
    }
}

/// What NCCL does with a forced choice it cannot follow: from 2.24 the collective
/// fails (`no algorithm/protocol available`), before it falls back to Ring silently.
pub fn refuses_impossible_choice(version: NcclVersion) -> bool {
    (version.major, version.minor) >= (2, 24)
}

/// The bytes NCCL's tuning line names for a case of `case_bytes` (nccl-tests' size: the
/// whole buffer, all-gather's output, reduce-scatter's input) on `nranks` ranks: the
/// total up to 2.23; from 2.24 the task's count x type size, which for all-gather,
/// reduce-scatter, all-to-all, gather and scatter is one rank's share.
pub fn logged_bytes(version: NcclVersion, func: &str, case_bytes: u64, nranks: u32) -> u64 {
    let per_rank = [
        "AllGather",
        "ReduceScatter",
        "AlltoAll",
        "Gather",
        "Scatter",
    ];
    if (version.major, version.minor) >= (2, 24) && per_rank.contains(&func) && nranks > 0 {
        case_bytes / u64::from(nranks)
    } else {
        case_bytes
    }
}

/// Whether NCCL's tuner chooses for `func` (its name in the log): the collectives with
/// algorithms and protocols, not point-to-point work (send/recv, and all-to-all,
/// gather and scatter, which NCCL runs as such or on copy engines).
pub fn is_tuned(func: &str) -> bool {
    [
        "AllReduce",
        "AllGather",
        "ReduceScatter",
        "Broadcast",
        "Reduce",
    ]
    .contains(&func)
}

/// Whether NCCL logs a line per collective at all (from 2.20).
pub fn logs_choices(version: NcclVersion) -> bool {
    (version.major, version.minor) >= (2, 20)
}

/// Whether the library has `ncclGroupSimulateEnd` (from 2.22).
pub fn has_simulate(version: NcclVersion) -> bool {
    (version.major, version.minor) >= (2, 22)
}

/// NCCL's words when a forced choice is impossible here: the case is `unsupported`,
/// not failed. A forcing variable NCCL cannot parse (`Unrecognized element token`, a
/// typo) is a failure: the config is wrong, not the machine.
pub fn is_refused_choice(text: &str) -> bool {
    text.contains("no algorithm/protocol available")
}

#[cfg(test)]
mod tests;
