//! The `NCCL_*` settings NCCL will see, from the environment and from its configuration
//! files, read the way NCCL reads them (`initEnv`/`setEnvFile`): the file named by
//! `NCCL_CONF_FILE`, else `$HOME/.nccl.conf` (NCCL asks the password database for the
//! home directory; we take `$HOME`), then `/etc/nccl.conf`. Lines are `NAME=value`,
//! split at the first `=` with nothing trimmed; a variable already set is never
//! overwritten, so the environment wins over the user's file, which wins over
//! /etc/nccl.conf. The check flags names no NCCL release reads and lines NCCL would
//! misread, and adds [`super::advice`] on settings that usually hurt.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::advice;
use super::{plural, Check, Root, Status};
use crate::nccl::vars;

pub const ID: &str = "nccl.env";
pub const TITLE: &str = "NCCL environment";

/// `NCCL_*` names PyTorch reads (older spellings of its `TORCH_NCCL_*` variables);
/// NCCL itself ignores them.
const PYTORCH_NAMES: [(&str, &str); 4] = [
    (
        "NCCL_ASYNC_ERROR_HANDLING",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    ),
    ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
    ("NCCL_DESYNC_DEBUG", "TORCH_NCCL_DESYNC_DEBUG"),
    ("NCCL_ENABLE_TIMING", "TORCH_NCCL_ENABLE_TIMING"),
];

/// Where a setting comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Environment,
    File(PathBuf),
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::Environment => "environment".to_string(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub source: Source,
}

/// Every `NCCL_*` setting found, in NCCL's order of precedence (the first of a name is
/// the one NCCL uses), and what could not be read or parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub settings: Vec<Setting>,
    /// Configuration files that exist and were read.
    pub files: Vec<PathBuf>,
    /// Unreadable files and lines NCCL would misread.
    pub problems: Vec<String>,
}

/// What the other checks know that changes the advice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Active InfiniBand/RoCE ports (`mlx5_0:1`).
    pub ib_ports: Vec<String>,
    /// GPU pairs without peer-to-peer access, when the driver was asked.
    pub p2p: Option<super::gpu::P2pSummary>,
}

impl Facts {
    /// What `quick_checks` knows: no GPU facts.
    pub fn quick(ib: &super::infiniband::IbPorts) -> Facts {
        Facts {
            ib_ports: ib.active_names(),
            p2p: None,
        }
    }
}

impl Settings {
    pub fn read(root: &Root) -> Settings {
        let mut s = Settings::default();
        // NCCL_BENCH_* are this tool's own (cargo also exports NCCL_BENCH_GIT_REV
        // to `cargo run`): not NCCL settings.
        let nccl = |n: &str| n.starts_with("NCCL_") && !vars::is_ours(n);
        for (name, value) in root.env_vars().filter(|(n, _)| nccl(n)) {
            s.settings.push(Setting {
                name: name.to_string(),
                value: value.to_string(),
                source: Source::Environment,
            });
        }
        let user_file = match root.env("NCCL_CONF_FILE").filter(|f| !f.is_empty()) {
            Some(f) => Some(PathBuf::from(f)),
            None => root
                .env("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| Path::new(h).join(".nccl.conf")),
        };
        for file in user_file
            .into_iter()
            .chain([PathBuf::from("/etc/nccl.conf")])
        {
            match root.read(&file) {
                Ok(text) => {
                    s.read_file(&file, &text);
                    s.files.push(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => s
                    .problems
                    .push(format!("cannot read {}: {e}", file.display())),
            }
        }
        s
    }

    fn read_file(&mut self, file: &Path, text: &str) {
        for line in text.lines() {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let shown = format!("`{line}` in {}", file.display());
            let Some((name, value)) = line.split_once('=') else {
                if line.contains("NCCL_") {
                    self.problems
                        .push(format!("{shown}: no `=`, so NCCL ignores the line"));
                }
                continue;
            };
            let clean_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if !clean_name {
                if name.contains("NCCL_") {
                    self.problems.push(format!(
                        "{shown}: NCCL takes `{name}` as the variable's name, so the line sets \
                         nothing NCCL reads (write `NAME=value`, no spaces, no `export`)"
                    ));
                }
                continue;
            }
            if !name.starts_with("NCCL_") {
                continue;
            }
            if value.trim() != value {
                self.problems.push(format!(
                    "{shown}: the value has spaces around it, which NCCL keeps as part of it"
                ));
            }
            self.settings.push(Setting {
                name: name.to_string(),
                value: value.to_string(),
                source: Source::File(file.to_path_buf()),
            });
        }
    }

    /// The value NCCL will use for `name`, if any.
    pub fn effective(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.as_str())
    }

    /// Whether `name` is set to a non-zero integer, as NCCL's integer parameters read it.
    pub fn is_on(&self, name: &str) -> bool {
        self.effective(name)
            .and_then(parse_nccl_int)
            .is_some_and(|v| v != 0)
    }

    /// Whether P2P is off: `NCCL_P2P_DISABLE=1` or `NCCL_P2P_LEVEL=LOC` (or 0).
    pub fn p2p_disabled(&self) -> bool {
        let level = self
            .effective("NCCL_P2P_LEVEL")
            .map(str::to_ascii_uppercase);
        self.is_on("NCCL_P2P_DISABLE") || matches!(level.as_deref(), Some("LOC" | "0"))
    }

    pub fn check(&self, facts: &Facts) -> Check {
        let mut warnings: Vec<String> = self.problems.clone();
        let mut fixes: Vec<String> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let names: BTreeSet<&str> = self.settings.iter().map(|s| s.name.as_str()).collect();
        for name in &names {
            if let Some((_, torch)) = PYTORCH_NAMES.iter().find(|(n, _)| n == name) {
                notes.push(format!(
                    "{name} is read by PyTorch (older name of {torch}), not by NCCL"
                ));
            } else if let Some(note) = vars::image_label(name) {
                notes.push(note);
            } else if let Some(w) = vars::check(name) {
                warnings.push(w);
                fixes.push(format!("remove or correct {name}"));
            }
        }
        if !self.problems.is_empty() {
            fixes.push("write nccl.conf lines as `NAME=value`".to_string());
        }
        for a in advice::advice(self, facts) {
            if a.warn {
                warnings.push(a.text);
                fixes.extend(a.fix);
            } else {
                notes.push(a.text);
            }
        }
        let mut details: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        for s in &self.settings {
            let winner = seen.insert(s.name.as_str());
            details.push(if winner {
                format!("{}={} ({})", s.name, s.value, s.source.describe())
            } else {
                format!(
                    "{}={} ({}; overridden by the value above)",
                    s.name,
                    s.value,
                    s.source.describe()
                )
            });
        }
        details.extend(warnings.iter().cloned());
        details.extend(notes);
        let value = if self.settings.is_empty() {
            "no NCCL_* variable set (environment, nccl.conf files)".to_string()
        } else {
            let from_env = self
                .settings
                .iter()
                .filter(|s| s.source == Source::Environment)
                .count();
            format!(
                "{} ({} from the environment, {} from {})",
                plural(self.settings.len(), "NCCL_* setting", "NCCL_* settings"),
                from_env,
                self.settings.len() - from_env,
                plural(self.files.len(), "file", "files")
            )
        };
        let status = if warnings.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        };
        let value = if warnings.is_empty() {
            value
        } else {
            format!("{value}; {}", plural(warnings.len(), "warning", "warnings"))
        };
        let mut check = Check::new(ID, TITLE, status, value).with_details(details);
        let mut unique: Vec<String> = Vec::new();
        for f in fixes {
            if !unique.contains(&f) {
                unique.push(f);
            }
        }
        let fixes = unique;
        if !fixes.is_empty() {
            check = check.with_fix(capitalize(&fixes.join("; ")));
        }
        check
    }
}

/// NCCL's integer parameters: `strtoll(value, &end, 0)` with nothing left over
/// (leading spaces skipped; decimal, `0x` hex, leading `0` octal). `None` is what NCCL
/// rejects and replaces with the default.
pub fn parse_nccl_int(value: &str) -> Option<i64> {
    let value = value.trim_start();
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value.strip_prefix('+').unwrap_or(value)),
    };
    let parsed = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse::<i64>().ok()
    }?;
    Some(if negative { -parsed } else { parsed })
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    #[test]
    fn the_environment_wins_over_the_files_and_the_user_file_over_etc() {
        let m = FakeMachine::new()
            .env("NCCL_DEBUG", "INFO")
            .env("HOME", "/home/u")
            .file(
                "/home/u/.nccl.conf",
                "NCCL_DEBUG=WARN\nNCCL_BUFFSIZE=8388608\n",
            )
            .file(
                "/etc/nccl.conf",
                "# site defaults\nNCCL_BUFFSIZE=2097152\nNCCL_IB_HCA=mlx5\nPATH=/x\n",
            );
        let s = Settings::read(&m.root());
        assert_eq!(s.effective("NCCL_DEBUG"), Some("INFO"));
        assert_eq!(s.effective("NCCL_BUFFSIZE"), Some("8388608"));
        assert_eq!(s.effective("NCCL_IB_HCA"), Some("mlx5"));
        assert_eq!(s.effective("PATH"), None);
        assert_eq!(s.settings.len(), 5);
        let c = s.check(&Facts::default());
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.details.contains(
            &"NCCL_DEBUG=WARN (/home/u/.nccl.conf; overridden by the value above)".into()
        ));
    }

    #[test]
    fn this_tools_own_variables_are_not_nccl_settings() {
        let m = FakeMachine::new()
            .env("NCCL_BENCH_GIT_REV", "6ff87f937bdd")
            .env("NCCL_BENCH_NCCL_LIB", "/opt/nccl/libnccl.so.2")
            .env("NCCL_BENCH", "/opt/bin/nccl-bench");
        let s = Settings::read(&m.root());
        assert!(s.settings.is_empty(), "{:?}", s.settings);
        assert_eq!(s.check(&Facts::default()).status, Status::Ok);
    }

    /// NVIDIA's images export NCCL_VERSION: a note, not an unknown-variable warning.
    #[test]
    fn an_image_label_is_noted_not_flagged() {
        let m = FakeMachine::new().env("NCCL_VERSION", "2.28.3-1");
        let c = Settings::read(&m.root()).check(&Facts::default());
        assert_eq!(c.status, Status::Ok, "{c:?}");
        let all = format!("{c:?}");
        assert!(
            all.contains("NCCL_VERSION is set by the container image"),
            "{all}"
        );
        assert!(
            !all.contains("not a variable any NCCL release reads"),
            "{all}"
        );
    }

    #[test]
    fn nccl_conf_file_replaces_the_home_file() {
        let m = FakeMachine::new()
            .env("HOME", "/home/u")
            .env("NCCL_CONF_FILE", "/opt/job/nccl.conf")
            .file("/home/u/.nccl.conf", "NCCL_ALGO=Tree\n")
            .file("/opt/job/nccl.conf", "NCCL_PROTO=Simple\n");
        let s = Settings::read(&m.root());
        assert_eq!(s.effective("NCCL_ALGO"), None);
        assert_eq!(s.effective("NCCL_PROTO"), Some("Simple"));
    }

    #[test]
    fn unknown_names_are_flagged_from_the_environment_and_from_files() {
        let m = FakeMachine::new()
            .env("NCCL_SHM_USE_CUDA_MEMORY", "1")
            .file("/etc/nccl.conf", "NCCL_TOTALLY_MADE_UP=3\n");
        let c = Settings::read(&m.root()).check(&Facts::default());
        assert_eq!(c.status, Status::Warn);
        let text = c.details.join("\n");
        assert!(
            text.contains("did you mean NCCL_SHM_USE_CUDA_MEMCPY?"),
            "{text}"
        );
        assert!(
            text.contains("NCCL_TOTALLY_MADE_UP is not a variable"),
            "{text}"
        );
        assert!(c.fix.unwrap().contains("NCCL_SHM_USE_CUDA_MEMORY"));
        assert!(c.value.contains("2 warnings"), "{}", c.value);
    }

    #[test]
    fn lines_nccl_would_misread_are_reported() {
        let m = FakeMachine::new().file(
            "/etc/nccl.conf",
            "export NCCL_DEBUG=INFO\nNCCL_ALGO = Ring\nNCCL_PROTO\nNCCL_BUFFSIZE= 4194304\n",
        );
        let s = Settings::read(&m.root());
        assert_eq!(s.effective("NCCL_DEBUG"), None);
        assert_eq!(s.effective("NCCL_BUFFSIZE"), Some(" 4194304"));
        assert_eq!(s.problems.len(), 4, "{:?}", s.problems);
        assert!(s.problems[0].contains("`export NCCL_DEBUG`"));
        assert_eq!(s.check(&Facts::default()).status, Status::Warn);
    }

    #[test]
    fn an_unreadable_file_is_said_not_skipped() {
        let m = FakeMachine::new().dir("/etc/nccl.conf");
        let c = Settings::read(&m.root()).check(&Facts::default());
        assert_eq!(c.status, Status::Warn);
        assert!(c
            .details
            .iter()
            .any(|d| d.starts_with("cannot read /etc/nccl.conf")));
    }

    #[test]
    fn integers_parse_as_strtoll_does() {
        assert_eq!(parse_nccl_int("1"), Some(1));
        assert_eq!(parse_nccl_int("0x400000"), Some(4_194_304));
        assert_eq!(parse_nccl_int("010"), Some(8));
        assert_eq!(parse_nccl_int("-2"), Some(-2));
        assert_eq!(parse_nccl_int("4M"), None);
        assert_eq!(parse_nccl_int(""), None);
        assert_eq!(parse_nccl_int(" 1"), Some(1));
        assert_eq!(parse_nccl_int("1 "), None);
    }
}
