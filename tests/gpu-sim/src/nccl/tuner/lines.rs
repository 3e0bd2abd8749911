//! The tuner's log lines, as each release writes them (TUNING subsystem, rank 0,
//! `NCCL_DEBUG=INFO`; the matrix is ENV):
//! - one per collective (`src/enqueue.cc`): none before 2.20 (the INFO is commented
//!   out), `%ld Bytes -> Algo %d proto %d time %f` in 2.20-2.22 (logged when the
//!   algorithm is chosen, also for `ncclGroupSimulateEnd`), `%s: ` and the same in
//!   2.23, and from 2.24 `%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}`
//!   (logged when the collective is scheduled, so not for a simulated one);
//! - the model's table at init (`src/graph/tuning.cc`): up to 2.17 one
//!   `Latency/AlgBw |` header, 2.18-2.22 two blocks of half the algorithms, from
//!   2.23 blocks of three; each with a ` Max NThreads |` line and a
//!   `%8.1f/%6.1f |` latency/bandwidth line per function;
//! - from 2.24, when `NCCL_ALGO` or `NCCL_PROTO` is set, `Enabled NCCL Func/Proto/Algo
//!   Matrix:` and the settings as parsed.

use super::{algos, Algo, Choice, Enabled, Func, Machine, FUNCS, PROTOS};
use crate::nccl::Version;

/// The TUNING line of a collective of function `f` and `bytes` (the total, as the
/// tuner weighs it) on `nranks` ranks that `c` chose; `None` where release `v` logs
/// none. Up to 2.23 the line names the total; from 2.24 the task's count x type size,
/// one rank's share for all-gather and reduce-scatter (`enqueue.cc`).
pub fn choice(v: Version, f: Func, bytes: u64, nranks: u64, c: &Choice) -> Option<String> {
    let (a, p) = (c.algo.code(), c.proto.code());
    let time = f64::from(c.time_us);
    if v >= (2, 24, 0) {
        let bytes = match f {
            Func::AllGather | Func::ReduceScatter => bytes / nranks.max(1),
            _ => bytes,
        };
        Some(format!(
            "{}: {bytes} Bytes -> Algo {} proto {} channel{{Lo..Hi}}={{0..{}}}",
            f.name(),
            c.algo.log_name(),
            c.proto.log_name(),
            c.channels.max(1) - 1
        ))
    } else if v >= (2, 23, 0) {
        Some(format!(
            "{}: {bytes} Bytes -> Algo {a} proto {p} time {time:.6}",
            f.name()
        ))
    } else if v >= (2, 20, 0) {
        Some(format!(
            "{bytes} Bytes -> Algo {a} proto {p} time {time:.6}"
        ))
    } else {
        None
    }
}

/// Whether release `v` logs the TUNING line of a collective that
/// `ncclGroupSimulateEnd` only simulates (2.22 and 2.23: the line is logged where
/// the algorithm is chosen; from 2.24 where the collective is scheduled).
pub fn logs_simulated(v: Version) -> bool {
    ((2, 22, 0)..(2, 24, 0)).contains(&v)
}

fn entries(m: &Machine, f: Func, block: &[Algo]) -> String {
    let fi = f as usize;
    let mut line = format!("{:>13} |", f.name());
    for a in block {
        for p in PROTOS {
            let (lat, bw) = (m.lat[fi][a.code()][p.code()], m.bw[fi][a.code()][p.code()]);
            line += &format!("{:8.1}/{:6.1} |", f64::from(lat), f64::from(bw));
        }
    }
    line
}

fn threads(m: &Machine, block: &[Algo]) -> String {
    let mut line = String::from(" Max NThreads |");
    for &a in block {
        for p in PROTOS {
            line += &format!(" {:14} |", m.max_threads(a, p));
        }
    }
    line
}

/// The model's table of a tuned machine, line by line, as release `v` prints it at
/// init on rank 0 (NCCL prints none for one rank).
pub fn table(v: Version, m: &Machine) -> Vec<String> {
    let all = algos(v);
    let mut lines = Vec::new();
    if v < (2, 18, 0) {
        let mut head = String::from("Latency/AlgBw |");
        for a in all {
            for p in PROTOS {
                head += &format!(" {:>7}/{:>6} |", a.name(v), p.name());
            }
        }
        lines.push(head);
        lines.push(threads(m, all));
        lines.extend(FUNCS.iter().map(|&f| entries(m, f, all)));
        return lines;
    }
    // 2.18-2.22: two blocks of half; 2.23 on: blocks of three. The protocol line
    // always has three algorithms' worth from 2.23 (NCCL's loop does not skip).
    let per_block = if v >= (2, 23, 0) { 3 } else { all.len() / 2 };
    for block in all.chunks(per_block) {
        let mut head = String::from("  Algorithm   |");
        for a in block {
            head += &format!(" {:>14}   {:>14}   {:>14} |", "", a.name(v), "");
        }
        lines.push(head);
        let mut protocols = String::from("  Protocol    |");
        for _ in 0..per_block {
            for p in PROTOS {
                protocols += &format!(" {:>14} |", p.name());
            }
        }
        lines.push(protocols);
        lines.push(threads(m, block));
        lines.extend(FUNCS.iter().map(|&f| entries(m, f, block)));
    }
    lines
}

/// 2.24+: the message of `Enabled NCCL Func/Proto/Algo Matrix:` with the settings
/// as parsed (several lines in one message, as NCCL logs it).
pub fn matrix(v: Version, e: &Enabled) -> String {
    let mut s = String::from("Enabled NCCL Func/Proto/Algo Matrix:\n     Function | ");
    for p in PROTOS {
        s += &format!("{:>8}  ", p.name());
    }
    s += " | ";
    for a in algos(v) {
        s += &format!("{:>13}  ", a.name(v));
    }
    s += "\n";
    for f in FUNCS {
        s += &format!("{:>13} | ", f.name());
        for p in PROTOS {
            s += &format!("{:>8}  ", e.proto[f as usize][p.code()]);
        }
        s += " | ";
        for a in algos(v) {
            s += &format!("{:>13}  ", e.algo[f as usize][a.code()]);
        }
        s += "\n";
    }
    s
}
