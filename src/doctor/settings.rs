//! The `NCCL_*` settings NCCL will see, from the environment and from its configuration
//! files, read the way NCCL reads them (`initEnv`/`setEnvFile`): the file named by
//! `NCCL_CONF_FILE`, else `$HOME/.nccl.conf` (NCCL asks the password database for the
//! home directory; we take `$HOME`), then `/etc/nccl.conf`. Lines are `NAME=value`,
//! split at the first `=` with nothing trimmed; a variable already set is never
//! overwritten, so the environment wins over the user's file, which wins over
//! /etc/nccl.conf. Lines NCCL would misread are kept as problems for the check.

use std::path::{Path, PathBuf};

use crate::machine::Root;
use crate::nccl::vars::{self, parse_nccl_int};

/// Where a setting comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Environment,
    File(PathBuf),
}

impl Source {
    pub fn describe(&self) -> String {
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
}
