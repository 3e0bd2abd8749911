//! Which rank failed first: the earliest timestamped error line of each rank (one file
//! each, or NCCL's `host:pid` in one file), NCCL 2.26+'s `[2025-09-09 23:51:24]` or
//! PyTorch's `[E626 06:24:44.903881913 ...]`. The others' errors most likely follow
//! from the first.

use std::collections::BTreeMap;

use super::finding::{Finding, FindingKind};
use super::pasted::{Pasted, PastedLine};

/// A time of day within a date, comparable within one format: (format, month, day,
/// seconds of the day).
type Stamp = (u8, u32, u32, f64);

fn digits(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `06:24:44.903881913` -> seconds of the day.
fn clock(s: &str) -> Option<f64> {
    let mut parts = s.splitn(3, ':');
    let (h, m, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let sec: f64 = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .parse()
        .ok()?;
    Some(f64::from(digits(h)?) * 3600.0 + f64::from(digits(m)?) * 60.0 + sec)
}

/// The timestamp a line starts with (after a `[rank3]:` prefix), if any.
fn stamp(text: &str) -> Option<Stamp> {
    let t = text.trim_start();
    let t = match t.strip_prefix("[rank") {
        Some(rest) => rest.split_once("]:").map_or(t, |(_, r)| r),
        None => t,
    };
    let inner = t.strip_prefix('[')?.split(']').next()?;
    // NCCL: `2025-09-09 23:51:24`.
    if let Some((date, time)) = inner.split_once(' ') {
        let d: Vec<&str> = date.split('-').collect();
        if d.len() == 3 && digits(d[0]).is_some() {
            return Some((0, digits(d[1])?, digits(d[2])?, clock(time)?));
        }
        // PyTorch (glog): `E626 06:24:44.903881913`, level then MMDD.
        let mmdd = date.strip_prefix(['E', 'W', 'I', 'F']).unwrap_or("");
        if (3..=4).contains(&mmdd.len()) {
            let n = digits(mmdd)?;
            return Some((1, n / 100, n % 100, clock(time)?));
        }
    }
    None
}

fn is_error_line(l: &PastedLine) -> bool {
    l.text.contains("NCCL WARN")
        || l.text
            .contains("Watchdog caught collective operation timeout")
        || l.lower.contains("nccl error")
}

/// The rank a line is of: its file where several were given, else NCCL's `host:pid`,
/// else PyTorch's `[rankN]`.
fn who(pasted: &Pasted, l: &PastedLine) -> Option<String> {
    if pasted.names.len() > 1 {
        return Some(pasted.names[l.file].to_string());
    }
    let t = l.text.trim_start();
    if let Some(rest) = t.strip_prefix("[rank") {
        return rest.split_once(']').map(|(n, _)| format!("rank {n}"));
    }
    host_pid(t)
}

/// `host:pid` of NCCL's `host:pid:tid` prefix, after a launcher's `[...] ` if any.
pub(super) fn host_pid(text: &str) -> Option<String> {
    let t = text.trim_start();
    let after = t
        .strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .map_or(t, |(_, r)| r);
    let token = after.split_whitespace().next()?;
    let mut parts = token.rsplitn(3, ':');
    let (_, pid, host) = (parts.next()?, parts.next()?, parts.next()?);
    digits(pid).map(|_| format!("{host}:{pid}"))
}

fn gap_words(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{:.0} ms", seconds * 1e3)
    }
}

/// The rank whose first error line comes first, where two ranks or more have one with a
/// timestamp of the same format.
pub(super) fn first_to_fail(pasted: &Pasted) -> Option<Finding> {
    let mut first: BTreeMap<String, (Stamp, &PastedLine)> = BTreeMap::new();
    for l in pasted.lines.iter().filter(|l| is_error_line(l)) {
        let (Some(s), Some(w)) = (stamp(l.text), who(pasted, l)) else {
            continue;
        };
        first
            .entry(w)
            .and_modify(|e| {
                if e.0.partial_cmp(&s) == Some(std::cmp::Ordering::Greater) {
                    *e = (s, l);
                }
            })
            .or_insert((s, l));
    }
    let format = first.values().next()?.0 .0;
    if first.len() < 2 || first.values().any(|(s, _)| s.0 != format) {
        return None;
    }
    let mut order: Vec<(&String, &(Stamp, &PastedLine))> = first.iter().collect();
    order.sort_by(|a, b| {
        a.1 .0
            .partial_cmp(&b.1 .0)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let ((w1, (s1, l1)), (w2, (s2, l2))) = (order[0], order[1]);
    if s1.1 != s2.1 || s1.2 != s2.2 || s2.3 <= s1.3 {
        return None;
    }
    Some(Finding::new(
        FindingKind::FirstToFail,
        vec![pasted.evidence(l1), pasted.evidence(l2)],
        &[
            ("who", w1.clone()),
            ("gap", gap_words(s2.3 - s1.3)),
            ("next", w2.clone()),
            ("n", first.len().to_string()),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::pasted::Input;
    use super::*;

    #[test]
    fn nccl_and_pytorch_timestamps_are_read() {
        assert_eq!(
            stamp("[2025-09-09 23:51:24] 9b:774:854 [0] transport/shm.cc:590 NCCL WARN x"),
            Some((0, 9, 9, 23.0 * 3600.0 + 51.0 * 60.0 + 24.0))
        );
        let s =
            stamp("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] x").unwrap();
        assert_eq!((s.0, s.1, s.2), (1, 6, 26));
        assert!((s.3 - (6.0 * 3600.0 + 24.0 * 60.0 + 44.903881913)).abs() < 1e-6);
        assert_eq!(stamp("h:1:2 [0] NCCL WARN no time"), None);
        assert_eq!(
            stamp("[\u{e9}t\u{e9} 12:00:00] h:1:2 [0] x.cc:1 NCCL WARN y"),
            None
        );
    }

    #[test]
    fn the_rank_that_failed_first_is_named_and_one_rank_alone_is_not() {
        let a = "[2025-09-09 23:51:24] a:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer\n";
        let b = "[2025-09-09 23:51:20] b:3:4 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion with error 12\n";
        let inputs = [
            Input {
                name: "a.log",
                text: a,
            },
            Input {
                name: "b.log",
                text: b,
            },
        ];
        let f = first_to_fail(&Pasted::new(&inputs)).unwrap();
        assert!(
            f.title.contains("b.log") && f.title.contains("4.0 s"),
            "{}",
            f.title
        );
        let one = [Input {
            name: "a.log",
            text: a,
        }];
        assert!(first_to_fail(&Pasted::new(&one)).is_none());
    }
}
