//! Lists NCCL reads with one prefix for the whole list: NCCL_IB_HCA and
//! NCCL_SOCKET_IFNAME take `^` (exclude) and `=` (exact names) once, before the first
//! entry (`^=mlx5_8,mlx5_14`). A prefix written again inside the list is read as part
//! of that entry's name, which then matches nothing.

use super::finding::{Finding, FindingKind};
use super::pasted::Pasted;
use crate::nccl::log::NcclLog;

/// The variables whose value is such a list.
const LISTS: [&str; 2] = ["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"];

/// The list's prefix as NCCL strips it (`^`, then `=`, once each: `^`, `=`, `^=` or
/// none) and its entries, empty ones left out.
fn split(value: &str) -> (&str, Vec<&str>) {
    let value = value.trim().trim_matches(['"', '\'']);
    let after_not = value.strip_prefix('^').unwrap_or(value);
    let body = after_not.strip_prefix('=').unwrap_or(after_not);
    let prefix = &value[..value.len() - body.len()];
    let entries = body
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    (prefix, entries)
}

/// A list variable (from `--env`, NCCL's lines or the paste) with `^` or `=` inside
/// the list, after its first entry.
pub(super) fn prefix_inside_rule(
    log: &NcclLog,
    pasted: &Pasted,
    env: &[(String, String)],
) -> Vec<Finding> {
    LISTS
        .iter()
        .filter_map(|&name| {
            let value = super::reason::given_setting(env, log, pasted, name)?;
            let (prefix, entries) = split(&value);
            let inside: Vec<&str> = entries
                .iter()
                .skip(1)
                .copied()
                .filter(|e| e.starts_with(['^', '=']))
                .collect();
            let first = inside.first()?;
            let fix = if prefix.is_empty() {
                // A list selects or excludes, never both: keep what it selects.
                let selected: Vec<&str> = entries
                    .iter()
                    .copied()
                    .filter(|e| !e.starts_with(['^', '=']))
                    .collect();
                format!(
                    "A list either selects or excludes, with `^` once before its first entry. \
                     {name}={} selects only those.",
                    selected.join(",")
                )
            } else {
                let bare: Vec<&str> = entries
                    .iter()
                    .map(|e| e.trim_start_matches(['^', '=']))
                    .collect();
                format!("Write the prefix once: {name}={prefix}{}.", bare.join(","))
            };
            let evidence = pasted
                .lines
                .iter()
                .find(|l| l.text.contains(name) && l.text.contains(*first))
                .map(|l| vec![pasted.evidence(l)])
                .unwrap_or_else(|| vec![format!("{name}={value}")]);
            let mut f = Finding::new(
                FindingKind::ListPrefixInside,
                evidence,
                &[
                    ("name", name.to_string()),
                    ("value", value.clone()),
                    ("entry", first.to_string()),
                ],
            );
            f.fix = fix;
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::explain::pasted::Input;

    #[test]
    fn a_prefix_belongs_before_the_first_entry_only() {
        assert_eq!(
            split("^=mlx5_8,^=mlx5_14"),
            ("^=", vec!["mlx5_8", "^=mlx5_14"])
        );
        assert_eq!(split("eth0,ib0"), ("", vec!["eth0", "ib0"]));
        let read = |value: &str| {
            let text = format!("NCCL_DEBUG=INFO NCCL_IB_HCA='{value}' srun all_reduce_perf -g 1");
            let pasted = Pasted::new(&[Input {
                name: "-",
                text: &text,
            }]);
            prefix_inside_rule(&NcclLog::default(), &pasted, &[])
        };
        let found = read("^=mlx5_8,^=mlx5_14");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].fix.contains("NCCL_IB_HCA=^=mlx5_8,mlx5_14"),
            "{}",
            found[0].fix
        );
        assert!(found[0].title.contains("^=mlx5_14"), "{}", found[0].title);
        let mixed = read("mlx5_0,^mlx5_1");
        assert!(
            mixed[0].fix.contains("NCCL_IB_HCA=mlx5_0 selects"),
            "{}",
            mixed[0].fix
        );
        // NCCL strips `^`, then `=`: `=^` keeps its `^` as part of the first name.
        assert_eq!(split("=^a,^b"), ("=", vec!["^a", "^b"]));
        assert_eq!(split("'^,^mlx5_1'"), ("^", vec!["^mlx5_1"]));
        assert!(read("^,,mlx5_1").is_empty());
        assert!(read("^=mlx5_8,mlx5_14").is_empty());
        assert!(read("mlx5_0:1,mlx5_1:1").is_empty());
    }
}
