//! NCCL's device-list syntax, shared by `NCCL_SOCKET_IFNAME` and `NCCL_IB_HCA`, parsed
//! the way NCCL parses it (`parseStringList`, `matchIfList`): a comma-separated list of
//! name prefixes, each with an optional `:port`; a `^` at the very start of the whole
//! list excludes instead of selecting, and a `=` at the start (after a `^`, if any)
//! makes every entry an exact name instead of a prefix (`^=eth0`: anything but exactly
//! eth0). NCCL trims nothing: a space is part of the name it looks for.

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfEntry {
    pub name: String,
    /// `mlx5_0:1` -> 1; `None` matches every port.
    pub port: Option<u32>,
}

/// A parsed `NCCL_SOCKET_IFNAME` or `NCCL_IB_HCA` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfList {
    pub exclude: bool,
    pub exact: bool,
    pub entries: Vec<IfEntry>,
}

impl IfList {
    pub fn parse(text: &str) -> IfList {
        let mut rest = text;
        let exclude = rest.starts_with('^');
        if exclude {
            rest = &rest[1..];
        }
        let exact = rest.starts_with('=');
        if exact {
            rest = &rest[1..];
        }
        let entries = rest
            .split(',')
            .filter_map(|item| {
                let (name, port) = match item.split_once(':') {
                    Some((name, port)) => (name, Some(atoi(port))),
                    None => (item, None),
                };
                (!name.is_empty()).then(|| IfEntry {
                    name: name.to_string(),
                    port,
                })
            })
            .collect();
        IfList {
            exclude,
            exact,
            entries,
        }
    }

    /// Whether NCCL would use the device `name` (port `port`, `None` for interfaces).
    /// An empty list matches every name, so `^` alone selects nothing, as in NCCL.
    pub fn selects(&self, name: &str, port: Option<u32>) -> bool {
        let listed = self.entries.is_empty()
            || self.entries.iter().any(|e| {
                let name_matches = if self.exact {
                    name == e.name
                } else {
                    name.starts_with(&e.name)
                };
                let port_matches = match (port, e.port) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                };
                name_matches && port_matches
            });
        listed != self.exclude
    }

    /// Mistakes NCCL accepts silently: `^` or `=` inside the list (only the start of
    /// the whole list counts) and names with spaces (kept, so they match nothing).
    pub fn mistakes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.name.starts_with('^') || e.name.starts_with('=') {
                out.push(format!(
                    "`{}`: NCCL reads `^` and `=` only at the start of the whole list, so \
                     this entry looks for a name starting with `{}`",
                    e.name,
                    &e.name[..1]
                ));
            }
            if e.name.chars().any(char::is_whitespace) {
                out.push(format!(
                    "`{}` contains a space: NCCL keeps it, so no device name matches this entry",
                    e.name
                ));
            }
        }
        out
    }
}

/// C's `atoi`: leading digits, 0 when there are none.
fn atoi(text: &str) -> u32 {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_select_by_default() {
        let l = IfList::parse("eth,ens5");
        assert!(l.selects("eth0", None));
        assert!(l.selects("ens5", None));
        assert!(l.selects("ens5f1", None));
        assert!(!l.selects("ens4", None));
        assert!(!l.selects("lo", None));
    }

    #[test]
    fn a_caret_excludes_the_listed_prefixes() {
        let l = IfList::parse("^docker,lo");
        assert!(l.exclude && !l.exact);
        assert!(!l.selects("docker0", None));
        assert!(!l.selects("lo", None));
        assert!(l.selects("ens5", None));
        assert!(l.selects("eth0", None));
    }

    #[test]
    fn an_equals_sign_matches_whole_names_only() {
        let l = IfList::parse("=ens5");
        assert!(l.exact && !l.exclude);
        assert!(l.selects("ens5", None));
        assert!(!l.selects("ens5f0", None));
        assert!(!l.selects("ens", None));
        let l = IfList::parse("^=eth0");
        assert!(l.exclude && l.exact);
        assert!(!l.selects("eth0", None));
        assert!(l.selects("eth01", None));
        assert!(l.selects("ens5", None));
    }

    #[test]
    fn ports_follow_a_colon_and_match_any_port_when_absent() {
        let l = IfList::parse("mlx5_0:1,mlx5_1");
        assert_eq!(
            l.entries,
            [
                IfEntry {
                    name: "mlx5_0".into(),
                    port: Some(1)
                },
                IfEntry {
                    name: "mlx5_1".into(),
                    port: None
                }
            ]
        );
        assert!(l.selects("mlx5_0", Some(1)));
        assert!(!l.selects("mlx5_0", Some(2)));
        assert!(l.selects("mlx5_1", Some(2)));
        // A prefix: mlx5_10 starts with mlx5_1.
        assert!(l.selects("mlx5_10", Some(1)));
        assert!(!IfList::parse("=mlx5_1").selects("mlx5_10", Some(1)));
    }

    #[test]
    fn odd_lists_do_what_nccl_does() {
        // Empty entries are skipped; an empty list selects all, so `^` selects nothing.
        assert!(IfList::parse(",,eth0,").selects("eth0", None));
        assert!(IfList::parse("").selects("anything", None));
        assert!(!IfList::parse("^").selects("eth0", None));
        // `=` after the first character is part of a name.
        let l = IfList::parse("eth0,=ens5");
        assert!(!l.exact);
        assert!(!l.selects("ens5", None));
        assert!(
            l.mistakes()[0].contains("only at the start"),
            "{:?}",
            l.mistakes()
        );
        let l = IfList::parse("eth0, ens5");
        assert!(!l.selects("ens5", None));
        assert!(l.mistakes()[0].contains("contains a space"));
        assert!(IfList::parse("mlx5_0:x").entries[0].port == Some(0));
    }
}
