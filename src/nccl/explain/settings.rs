//! Variables the user set against what NCCL's log then shows: set but never shown (the
//! variable did not reach NCCL), or shown with another value than the one set (NCCL
//! parsed it otherwise, or something set it again).

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;
use crate::nccl::log::NcclLog;

/// The NCCL variables the user set: `--env`, then `export NAME=V` and `-x NAME=V` in
/// the paste (the first value of each name).
fn user_set(pasted: &Pasted, given: &[(String, String)]) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = given.to_vec();
    for l in &pasted.lines {
        let exported = l.text.contains("export ") || l.text.contains("-x ");
        for word in l.text.split_whitespace() {
            let word = word.trim_matches(['"', '\'', '`']);
            if let Some((name, value)) = word.split_once('=') {
                if exported && name.starts_with("NCCL_") && !set.iter().any(|(n, _)| n == name) {
                    set.push((name.to_string(), value.to_string()));
                }
            }
        }
    }
    set.retain(|(name, _)| name.starts_with("NCCL_") && !name.starts_with("NCCL_DEBUG"));
    set
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
        } else if values.iter().all(|v| !v.eq_ignore_ascii_case(&value)) {
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
/// NCCL takes a number there (NCCL_P2P_LEVEL's words came with 2.6, NVIDIA/nccl#332).
/// Another word: something set it again after the user did.
fn read_otherwise(name: String, value: String, shown: &str) -> Finding {
    let number = |v: &str| {
        !v.is_empty()
            && v.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
    };
    let (why, fix) = if number(shown) && !number(&value) {
        let level = if name == "NCCL_P2P_LEVEL" {
            " Its words (LOC, NVL, PIX, PXB, PHB, SYS) are read from NCCL 2.6 on; older releases \
             take only a number."
        } else {
            ""
        };
        (
            format!("This NCCL reads {name} as a number, and `{value}` is not one.{level}"),
            format!(
                "Set {name} to the number this NCCL version's documentation gives for the \
                 setting you want, or upgrade NCCL. Then the log shows that value."
            ),
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
