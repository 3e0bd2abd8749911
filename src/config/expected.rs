//! The table of published all-reduce busbw per platform (`configs/expected.toml`,
//! shipped inside the binary) and the user's own rows (`--expected FILE`): parsed,
//! checked, merged. Matching a run against it is `analysis::expected`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::transport::ConfigError;
use crate::units::Bytes;

/// The shipped table's text.
pub const SHIPPED: &str = include_str!("../../configs/expected.toml");
const SHIPPED_ORIGIN: &str = "configs/expected.toml (shipped)";

/// What a figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FigureKind {
    /// A published measurement or an NCCL maintainer's figure.
    Measured,
    /// Arithmetic on such figures.
    Derived,
    /// NCCL's own link model: an upper bound, not a typical result.
    Model,
}

/// One row.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub name: String,
    /// Alternatives; each a list of words that must be words of the GPU name, and
    /// words (written "-X") that must not.
    pub gpu: Vec<GpuPattern>,
    pub gpus: Option<u32>,
    pub nodes: u32,
    pub transports: Vec<String>,
    pub nvls: bool,
    pub busbw_gbps: f64,
    pub from_bytes: u64,
    pub kind: FigureKind,
    pub source: String,
    pub url: String,
    pub check: String,
    /// The file the row came from.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPattern {
    pub text: String,
    pub with: Vec<String>,
    pub without: Vec<String>,
}

impl GpuPattern {
    fn parse(text: &str) -> Option<GpuPattern> {
        let mut p = GpuPattern {
            text: text.to_string(),
            with: Vec::new(),
            without: Vec::new(),
        };
        for word in text.split_whitespace() {
            match word.strip_prefix('-') {
                Some(w) if !w.is_empty() => p.without.push(w.to_lowercase()),
                Some(_) => return None,
                None => p.with.push(word.to_lowercase()),
            }
        }
        (!p.with.is_empty()).then_some(p)
    }

    /// Whether a GPU name (as the driver reports it) matches.
    pub fn matches(&self, gpu_name: &str) -> bool {
        let words: Vec<String> = gpu_name
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        self.with.iter().all(|w| words.contains(w))
            && !self.without.iter().any(|w| words.contains(w))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    platform: Vec<Spanned<RawPlatform>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlatform {
    name: String,
    gpu: Vec<String>,
    gpus: Option<u32>,
    nodes: Option<u32>,
    transports: Vec<String>,
    #[serde(default)]
    nvls: bool,
    busbw_gbps: f64,
    from_bytes: Option<String>,
    kind: FigureKind,
    source: String,
    url: String,
    check: String,
}

/// Reads and checks a user's table.
pub fn load(path: &Path) -> Result<Vec<Platform>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse(&text, &path.display().to_string())
}

/// The shipped table (checked by a test, so it always parses).
pub fn shipped() -> Vec<Platform> {
    parse(SHIPPED, SHIPPED_ORIGIN).unwrap_or_default()
}

/// The rows to match, in order: the user's (first file first), then the shipped
/// ones that no user row replaces by name.
pub fn merged(user: &[Vec<Platform>]) -> Vec<Platform> {
    let mut rows: Vec<Platform> = Vec::new();
    for p in user.iter().flatten() {
        if !rows.iter().any(|r| r.name == p.name) {
            rows.push(p.clone());
        }
    }
    for p in shipped() {
        if !rows.iter().any(|r| r.name == p.name) {
            rows.push(p);
        }
    }
    rows
}

/// Parses and checks the text of a table.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Platform>, ConfigError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| ConfigError::Toml {
        origin: origin.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    if raw.platform.is_empty() {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            line: 1,
            message: "no [[platform]] entries".into(),
        });
    }
    let mut rows: Vec<Platform> = Vec::new();
    for spanned in raw.platform {
        let line = text[..spanned.span().start.min(text.len())]
            .matches('\n')
            .count()
            + 1;
        let invalid = |message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            line,
            message,
        };
        let r = spanned.into_inner();
        let name = r.name.trim().to_string();
        if name.is_empty() {
            return Err(invalid("platform name is empty".into()));
        }
        if rows.iter().any(|p| p.name == name) {
            return Err(invalid(format!(
                "platform '{name}' is defined twice in this file"
            )));
        }
        let mut gpu = Vec::new();
        for text in &r.gpu {
            gpu.push(GpuPattern::parse(text).ok_or_else(|| {
                invalid(format!(
                    "platform '{name}': gpu pattern '{text}' needs at least one word the GPU name must have (and '-' only before a word)"
                ))
            })?);
        }
        if gpu.is_empty() {
            return Err(invalid(format!("platform '{name}': gpu lists no pattern")));
        }
        if r.gpus == Some(0) || r.nodes == Some(0) {
            return Err(invalid(format!(
                "platform '{name}': gpus and nodes must be at least 1"
            )));
        }
        if r.transports.iter().all(|t| t.trim().is_empty()) {
            return Err(invalid(format!(
                "platform '{name}': transports lists none (for example [\"P2P\"])"
            )));
        }
        if !(r.busbw_gbps.is_finite() && r.busbw_gbps > 0.0) {
            return Err(invalid(format!(
                "platform '{name}': busbw_gbps must be a positive number of GB/s, not {}",
                r.busbw_gbps
            )));
        }
        let from_bytes = match &r.from_bytes {
            None => 0,
            Some(text) => {
                Bytes::parse(text)
                    .map_err(|e| invalid(format!("platform '{name}': from_bytes: {e}")))?
                    .0
            }
        };
        for (field, value) in [("source", &r.source), ("url", &r.url), ("check", &r.check)] {
            if value.trim().is_empty() {
                return Err(invalid(format!(
                    "platform '{name}': {field} is empty (every figure says where it comes from and what to check)"
                )));
            }
        }
        rows.push(Platform {
            name,
            gpu,
            gpus: r.gpus,
            nodes: r.nodes.unwrap_or(1),
            transports: r.transports.iter().map(|t| t.trim().to_string()).collect(),
            nvls: r.nvls,
            busbw_gbps: r.busbw_gbps,
            from_bytes,
            kind: r.kind,
            source: r.source,
            url: r.url,
            check: r.check,
            origin: origin.to_string(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_every_row_says_where_it_comes_from() {
        let rows = parse(SHIPPED, SHIPPED_ORIGIN).unwrap();
        assert!(rows.len() >= 12, "{}", rows.len());
        for r in &rows {
            assert!(r.url.starts_with("https://github.com/"), "{r:?}");
            assert!(!r.source.is_empty() && !r.check.is_empty(), "{r:?}");
        }
        let h100 = rows
            .iter()
            .find(|r| r.name == "8 x H100 SXM, ring")
            .unwrap();
        assert_eq!((h100.busbw_gbps, h100.from_bytes), (370.0, 2 << 30));
        assert_eq!(shipped(), rows);
    }

    #[test]
    fn gpu_patterns_match_whole_words_and_exclusions() {
        let p = |t: &str| GpuPattern::parse(t).unwrap();
        assert!(p("A100 SXM4").matches("NVIDIA A100-SXM4-80GB"));
        assert!(!p("A10").matches("NVIDIA A100-SXM4-80GB"));
        assert!(p("A10").matches("NVIDIA A10"));
        assert!(p("h100 hbm3").matches("NVIDIA H100 80GB HBM3"));
        assert!(p("H200 -NVL").matches("NVIDIA H200"));
        assert!(!p("H200 -NVL").matches("NVIDIA H200 NVL"));
        assert!(p("RTX 4090").matches("NVIDIA GeForce RTX 4090"));
        assert_eq!(GpuPattern::parse("-NVL"), None);
        assert_eq!(GpuPattern::parse("H100 -"), None);
    }

    #[test]
    fn bad_rows_say_which_line_and_what_is_wrong() {
        let row = |extra: &str| {
            format!(
                "# a comment\n\n[[platform]]\nname = \"mine\"\ngpu = [\"H100\"]\ntransports = [\"P2P\"]\nbusbw_gbps = 300\nkind = \"measured\"\nsource = \"our lab\"\nurl = \"https://example.com\"\ncheck = \"links\"\n{extra}"
            )
        };
        assert_eq!(parse(&row(""), "f.toml").unwrap().len(), 1);
        let err = |extra: &str| parse(&row(extra), "f.toml").unwrap_err().to_string();
        assert_eq!(
            err("from_bytes = \"lots\""),
            format!(
                "f.toml:3: platform 'mine': from_bytes: {}",
                Bytes::parse("lots").unwrap_err()
            )
        );
        assert!(err("gpus = 0").starts_with("f.toml:3: platform 'mine': gpus and nodes"));
        assert!(
            err("nvls = \"yes\"").starts_with("f.toml: "),
            "{}",
            err("nvls = \"yes\"")
        );
        assert!(err("colour = 1").contains("unknown field `colour`"));
        let twice = format!("{}\n{}", row(""), row("").replace("# a comment\n\n", ""));
        let e = parse(&twice, "f.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("f.toml:13: platform 'mine' is defined twice"),
            "{e}"
        );
        let no_source = row("").replace("source = \"our lab\"", "source = \" \"");
        let e = parse(&no_source, "f.toml").unwrap_err().to_string();
        assert!(e.contains("source is empty"), "{e}");
        let e = parse("", "f.toml").unwrap_err().to_string();
        assert_eq!(e, "f.toml:1: no [[platform]] entries");
    }

    #[test]
    fn a_user_row_comes_first_and_replaces_the_shipped_row_of_its_name() {
        let mut mine = shipped()
            .into_iter()
            .find(|r| r.name == "8 x H100 SXM, ring")
            .unwrap();
        mine.busbw_gbps = 355.0;
        mine.origin = "ours.toml".into();
        let rows = merged(&[vec![mine.clone()]]);
        assert_eq!(rows[0], mine);
        assert_eq!(rows.iter().filter(|r| r.name == mine.name).count(), 1);
        assert_eq!(rows.len(), shipped().len());
    }
}
