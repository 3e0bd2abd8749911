//! Expansion of Slurm host lists (`SLURM_JOB_NODELIST`, `SLURM_STEP_NODELIST`):
//! `node[01-04,07],gpu7` into `node01 node02 node03 node04 node07 gpu7`. The syntax
//! follows Slurm's `hostlist_create`: hosts are separated by commas or whitespace
//! outside brackets; a bracket group holds comma-separated numbers and `lo-hi`
//! ranges whose zero padding is the width of the range's start; a name with several
//! groups (`a[1-2]b[3-4]`) is their cartesian product with the first group varying
//! slowest, as Slurm orders it.

use thiserror::Error;

/// More hosts than any cluster has: a list that expands past this is a mistake (or
/// hostile) and would only exhaust memory.
pub const MAX_HOSTS: usize = 1_000_000;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum HostlistError {
    #[error("empty host list")]
    Empty,
    #[error("empty host name in host list '{list}' (two separators in a row, or one at an end)")]
    EmptyHost { list: String },
    #[error("unbalanced brackets in host list '{list}': {problem}")]
    Unbalanced { list: String, problem: &'static str },
    #[error("empty brackets '[]' in host name '{host}'")]
    EmptyBrackets { host: String },
    #[error("invalid range '{range}' in host name '{host}': expected numbers or lo-hi ranges, e.g. [1-4,7]")]
    NotNumeric { host: String, range: String },
    #[error("reversed range '{range}' in host name '{host}': the start must not exceed the end")]
    Reversed { host: String, range: String },
    #[error("host list '{list}' expands to more than {MAX_HOSTS} hosts")]
    TooMany { list: String },
}

/// Every host `list` names, in Slurm's order (duplicates kept).
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let names = split_names(list)?;
    if names.is_empty() {
        return Err(HostlistError::Empty);
    }
    let patterns = names
        .iter()
        .map(|name| Pattern::parse(list, name))
        .collect::<Result<Vec<_>, _>>()?;
    // Count before expanding, so that `n[1-999999999]` fails fast instead of
    // allocating.
    let total = patterns
        .iter()
        .try_fold(0usize, |sum, p| sum.checked_add(p.count()?))
        .filter(|&n| n <= MAX_HOSTS)
        .ok_or_else(|| HostlistError::TooMany {
            list: list.to_string(),
        })?;
    let mut hosts = Vec::with_capacity(total);
    for pattern in &patterns {
        pattern.expand_into(&mut hosts);
    }
    Ok(hosts)
}

/// Splits at commas outside brackets, then each piece at whitespace: "a, b" is two
/// hosts, "a,,b" has an empty one.
fn split_names(list: &str) -> Result<Vec<&str>, HostlistError> {
    if list.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for item in split_outside_brackets(list, |c| c == ',') {
        let before = names.len();
        names.extend(split_outside_brackets(item, char::is_whitespace).filter(|n| !n.is_empty()));
        if names.len() == before {
            return Err(HostlistError::EmptyHost {
                list: list.to_string(),
            });
        }
    }
    Ok(names)
}

/// Pieces of `text` between separators that are not inside brackets. Unbalanced
/// brackets are left for `Pattern::parse` to report.
fn split_outside_brackets(text: &str, is_sep: impl Fn(char) -> bool) -> impl Iterator<Item = &str> {
    let mut in_brackets = false;
    text.split(move |c: char| {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            _ => {}
        }
        !in_brackets && is_sep(c)
    })
}

/// One host name with its bracket groups parsed.
struct Pattern {
    parts: Vec<Part>,
}

enum Part {
    Text(String),
    Numbers(Vec<NumberRange>),
}

/// `lo-hi` (or a single number when `lo == hi`), printed `width` digits wide.
struct NumberRange {
    lo: u64,
    hi: u64,
    width: usize,
}

impl Pattern {
    /// Parses one host name of `list` (named in errors).
    fn parse(list: &str, name: &str) -> Result<Pattern, HostlistError> {
        let unbalanced = |problem| HostlistError::Unbalanced {
            list: list.to_string(),
            problem,
        };
        let mut parts = Vec::new();
        let mut text = String::new();
        // The contents of the open bracket group, if one is open.
        let mut group: Option<String> = None;
        for c in name.chars() {
            match (c, group.as_mut()) {
                ('[', Some(_)) => return Err(unbalanced("'[' inside brackets")),
                ('[', None) => {
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    group = Some(String::new());
                }
                (']', None) => return Err(unbalanced("']' without a matching '['")),
                (']', Some(inner)) => {
                    parts.push(Part::Numbers(NumberRange::parse_group(name, inner)?));
                    group = None;
                }
                (c, Some(inner)) => inner.push(c),
                (c, None) => text.push(c),
            }
        }
        if group.is_some() {
            return Err(unbalanced("'[' is never closed"));
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Pattern { parts })
    }

    /// How many hosts this name expands to; `None` on overflow.
    fn count(&self) -> Option<usize> {
        self.parts
            .iter()
            .try_fold(1usize, |product, part| match part {
                Part::Text(_) => Some(product),
                Part::Numbers(ranges) => {
                    let n = ranges
                        .iter()
                        .try_fold(0u64, |sum, r| sum.checked_add(r.hi - r.lo)?.checked_add(1))?;
                    product.checked_mul(usize::try_from(n).ok()?)
                }
            })
    }

    /// Appends the hosts, first bracket group varying slowest.
    fn expand_into(&self, hosts: &mut Vec<String>) {
        let mut names = vec![String::new()];
        for part in &self.parts {
            names = match part {
                Part::Text(text) => names.into_iter().map(|n| n + text).collect(),
                Part::Numbers(ranges) => names
                    .iter()
                    .flat_map(|n| {
                        ranges.iter().flat_map(move |r| {
                            (r.lo..=r.hi).map(move |i| format!("{n}{i:0width$}", width = r.width))
                        })
                    })
                    .collect(),
            };
        }
        hosts.extend(names);
    }
}

impl NumberRange {
    /// Parses the inside of one bracket group of `host`: `01-04,07`.
    fn parse_group(host: &str, inner: &str) -> Result<Vec<NumberRange>, HostlistError> {
        if inner.is_empty() {
            return Err(HostlistError::EmptyBrackets {
                host: host.to_string(),
            });
        }
        inner
            .split(',')
            .map(|r| NumberRange::parse(host, r))
            .collect()
    }

    fn parse(host: &str, text: &str) -> Result<NumberRange, HostlistError> {
        let not_numeric = || HostlistError::NotNumeric {
            host: host.to_string(),
            range: text.to_string(),
        };
        let (lo_text, hi_text) = text.split_once('-').unwrap_or((text, text));
        let number = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(not_numeric());
            }
            s.parse::<u64>().map_err(|_| not_numeric())
        };
        let (lo, hi) = (number(lo_text)?, number(hi_text)?);
        if lo > hi {
            return Err(HostlistError::Reversed {
                host: host.to_string(),
                range: text.to_string(),
            });
        }
        Ok(NumberRange {
            lo,
            hi,
            width: lo_text.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    #[test]
    fn plain_name_is_itself() {
        assert_eq!(hosts("node01"), ["node01"]);
    }

    #[test]
    fn range_keeps_the_zero_padding_of_its_start() {
        assert_eq!(
            hosts("node[01-04]"),
            ["node01", "node02", "node03", "node04"]
        );
        assert_eq!(hosts("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(hosts("n[098-101]"), ["n098", "n099", "n100", "n101"]);
    }

    #[test]
    fn ranges_and_single_numbers_mix_in_one_group() {
        assert_eq!(
            hosts("node[01-02,07,10-11]"),
            ["node01", "node02", "node07", "node10", "node11"]
        );
    }

    #[test]
    fn several_groups_expand_first_group_slowest() {
        assert_eq!(hosts("a[1-2]b[3-4]"), ["a1b3", "a1b4", "a2b3", "a2b4"]);
        assert_eq!(
            hosts("rack[1-2]-n[01]-ib"),
            ["rack1-n01-ib", "rack2-n01-ib"]
        );
    }

    #[test]
    fn commas_outside_brackets_separate_hosts() {
        assert_eq!(hosts("n[1-2],gpu7,x-ib[3]"), ["n1", "n2", "gpu7", "x-ib3"]);
    }

    #[test]
    fn whitespace_separates_hosts_like_a_comma() {
        assert_eq!(hosts(" a, b[1-2]\tc "), ["a", "b1", "b2", "c"]);
    }

    #[test]
    fn empty_list_is_an_error() {
        assert_eq!(expand(""), Err(HostlistError::Empty));
        assert_eq!(expand("  "), Err(HostlistError::Empty));
        assert_eq!(expand("").unwrap_err().to_string(), "empty host list");
    }

    #[test]
    fn empty_name_between_commas_is_an_error() {
        for list in ["a,,b", "a,", ",a", "a, ,b"] {
            assert_eq!(
                expand(list).unwrap_err().to_string(),
                format!(
                    "empty host name in host list '{list}' (two separators in a row, or one at an end)"
                )
            );
        }
    }

    #[test]
    fn unclosed_bracket_is_an_error() {
        assert_eq!(
            expand("node[1-2").unwrap_err().to_string(),
            "unbalanced brackets in host list 'node[1-2': '[' is never closed"
        );
    }

    #[test]
    fn stray_closing_bracket_is_an_error() {
        assert_eq!(
            expand("node1-2],b").unwrap_err().to_string(),
            "unbalanced brackets in host list 'node1-2],b': ']' without a matching '['"
        );
    }

    #[test]
    fn nested_brackets_are_an_error() {
        assert_eq!(
            expand("n[1[2]]").unwrap_err().to_string(),
            "unbalanced brackets in host list 'n[1[2]]': '[' inside brackets"
        );
    }

    #[test]
    fn reversed_range_is_an_error() {
        assert_eq!(
            expand("a,node[1,5-2]").unwrap_err().to_string(),
            "reversed range '5-2' in host name 'node[1,5-2]': the start must not exceed the end"
        );
    }

    #[test]
    fn empty_brackets_are_an_error() {
        assert_eq!(
            expand("node[]").unwrap_err().to_string(),
            "empty brackets '[]' in host name 'node[]'"
        );
    }

    #[test]
    fn non_numeric_ranges_are_errors() {
        for (list, range) in [
            ("n[a-c]", "a-c"),
            ("n[1-]", "1-"),
            ("n[-3]", "-3"),
            ("n[1,,2]", ""),
            ("n[1-2-3]", "1-2-3"),
            ("n[+1]", "+1"),
        ] {
            assert_eq!(
                expand(list).unwrap_err(),
                HostlistError::NotNumeric {
                    host: list.to_string(),
                    range: range.to_string()
                },
                "{list}"
            );
        }
        assert_eq!(
            expand("n[x]").unwrap_err().to_string(),
            "invalid range 'x' in host name 'n[x]': expected numbers or lo-hi ranges, e.g. [1-4,7]"
        );
    }

    #[test]
    fn number_too_large_for_u64_is_not_numeric() {
        assert!(matches!(
            expand("n[99999999999999999999]"),
            Err(HostlistError::NotNumeric { .. })
        ));
    }

    #[test]
    fn absurd_expansion_is_refused_before_allocating() {
        let list = "n[0-18446744073709551615]";
        assert_eq!(
            expand(list).unwrap_err().to_string(),
            format!("host list '{list}' expands to more than 1000000 hosts")
        );
        assert!(matches!(
            expand("a[1-1000]b[1-1001]"),
            Err(HostlistError::TooMany { .. })
        ));
        assert_eq!(expand("a[1-1000]b[1-1000]").map(|h| h.len()), Ok(MAX_HOSTS));
    }
}
