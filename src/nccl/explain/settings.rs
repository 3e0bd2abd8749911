//! Variables the user set against what NCCL's log then shows: set but never shown (the
//! variable did not reach NCCL), or shown with another value than the one set (NCCL
//! parsed it otherwise, or something set it again).

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;
use super::reason::assigned_value;
use crate::nccl::log::NcclLog;

/// The NCCL variables the user set: `--env`, then `export NAME=V` and `-x NAME=V` in
/// the paste, their quotes and a closing `;` left out. A name the paste sets to two
/// values (two attempts in one paste) is left out: which one the log ran with is
/// unknown.
fn user_set(pasted: &Pasted, given: &[(String, String)]) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = given.to_vec();
    let mut found: Vec<(String, String)> = Vec::new();
    for l in &pasted.lines {
        if !(l.text.contains("export ") || l.text.contains("-x ")) {
            continue;
        }
        for word in l.text.split_whitespace() {
            let Some((name, rest)) = word.trim_start_matches(['"', '\'', '`']).split_once('=')
            else {
                continue;
            };
            if let Some(value) = assigned_value(rest) {
                if !found.iter().any(|(n, v)| n == name && *v == value) {
                    found.push((name.to_string(), value));
                }
            }
        }
    }
    for (name, value) in &found {
        let once = found.iter().filter(|(n, _)| n == name).count() == 1;
        if once && !set.iter().any(|(n, _)| n == name) {
            set.push((name.clone(), value.clone()));
        }
    }
    set.retain(|(name, _)| name.starts_with("NCCL_") && !name.starts_with("NCCL_DEBUG"));
    set
}

/// An integer as NCCL reads one (`strtoll` in base 0: `0x68`, `017`, `-1`), modulo
/// 2^64, so that `-1` and the `18446744073709551615` an old NCCL prints for it agree.
fn integer(v: &str) -> Option<u64> {
    let (negative, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let (radix, digits) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let n = u64::from_str_radix(digits, radix).ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// Whether NCCL showing `shown` for `name` is the `value` set: the same text, the
/// same integer, or a legacy number of a path level (`NCCL_P2P_LEVEL=2`) that NCCL
/// 2.7 and later show as the word it stands for (`PXB`).
fn same_setting(name: &str, value: &str, shown: &str) -> bool {
    if value.eq_ignore_ascii_case(shown) {
        return true;
    }
    match (integer(value), integer(shown)) {
        (Some(a), Some(b)) => a == b,
        (Some(_), None) => name.ends_with("_LEVEL"),
        _ => false,
    }
}

/// What the user set, as NCCL logs it: each value it shows for `name`.
fn shown<'a>(log: &'a NcclLog, name: &str) -> Vec<&'a str> {
    log.env
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.trim_matches(['"', '\'', '`']))
        .collect()
}

/// Variables the user set that no rank's log shows, in a log that shows other
/// variables (they did not reach NCCL), and those every rank shows with another value
/// than the one set.
pub(super) fn env_findings(
    log: &NcclLog,
    pasted: &Pasted,
    given: &[(String, String)],
) -> Vec<Finding> {
    if log.env.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, value) in user_set(pasted, given) {
        let values = shown(log, &name);
        if values.is_empty() {
            out.push(not_shown(log, name, value));
        } else if !values.iter().any(|v| same_setting(&name, &value, v)) {
            out.push(read_otherwise(name, value, values[0]));
        }
    }
    out
}

fn not_shown(log: &NcclLog, name: String, value: String) -> Finding {
    let why = if log.plugins.is_empty() {
        String::new()
    } else {
        format!(
            ". This run loads the network plugin {}: it is the plugin, not NCCL's own \
             transport, that carries the traffic",
            log.plugins.join(", ")
        )
    };
    let shown: Vec<String> = log
        .env
        .iter()
        .take(2)
        .map(|(n, v)| format!("shown: {n} set by environment to {v}"))
        .collect();
    Finding::new(
        FindingKind::EnvNotShown,
        shown,
        &[("name", name), ("value", value), ("why", why)],
    )
}

/// NCCL shows `name` with `shown`, not the `value` set. A word read as a number: this
/// NCCL takes a number there, and `strtoll` reads a word as 0 (NCCL_P2P_LEVEL's words
/// came with 2.6, NVIDIA/nccl#332). Another value: something set it again after the
/// user did.
fn read_otherwise(name: String, value: String, shown: &str) -> Finding {
    let (why, fix) = if integer(shown).is_some() && integer(&value).is_none() {
        let p2p = name == "NCCL_P2P_LEVEL";
        let level = if p2p {
            " Its words (LOC, NVL, PIX, PXB, PHB, SYS) are read from NCCL 2.6 on. Level 0 turns \
             P2P off, NVLink included."
        } else {
            ""
        };
        let fix = if p2p {
            "Unset NCCL_P2P_LEVEL: NCCL then uses P2P over NVLink by itself. Or upgrade to NCCL \
             2.6 or later, which reads the words."
                .to_string()
        } else {
            format!(
                "Set {name} to the number this NCCL version's documentation gives for the \
                 setting you want, or upgrade NCCL. Then the log shows that value."
            )
        };
        (
            format!("This NCCL reads {name} as a number, and `{value}` is not one.{level}"),
            fix,
        )
    } else {
        (
            "Something set it again after you did: a launcher script, the container image's \
             environment, or a framework that sets it for its workers."
                .to_string(),
            format!(
                "Find what sets {name} last: run `env | grep {name}` inside a rank, and set it \
                 there."
            ),
        )
    };
    let evidence = vec![format!("shown: {name} set by environment to {shown}")];
    Finding::new(
        FindingKind::EnvReadOtherwise,
        evidence,
        &[
            ("name", name),
            ("value", value),
            ("shown", shown.to_string()),
            ("why", why),
            ("fix", fix),
        ],
    )
}
