//! The `nccl.env` check: the `NCCL_*` settings NCCL will see ([`Settings`]), names no
//! NCCL release reads, lines NCCL would misread, and [`super::advice`] on settings that
//! usually hurt.

use std::collections::BTreeSet;

use super::advice::{self, Facts};
use super::settings::{Settings, Source};
use crate::model::{Check, Status};
use crate::nccl::vars;
use crate::units::plural;

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

impl Settings {
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
            check = check.with_fix(crate::units::capitalized(&fixes.join("; ")));
        }
        check
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::super::gpu::P2pSummary;
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
    fn advice_depends_on_what_the_machine_has() {
        let m = FakeMachine::new()
            .env("NCCL_SHM_DISABLE", "1")
            .env("NCCL_IB_DISABLE", "1");
        let s = Settings::read(&m.root());
        let all_p2p = Facts {
            ib_ports: vec![],
            p2p: Some(P2pSummary {
                gpus: 8,
                missing: vec![],
            }),
        };
        let c = s.check(&all_p2p);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.details.iter().any(|d| d.contains("changes nothing here")));
        let pcie = Facts {
            ib_ports: vec!["mlx5_0:1".into()],
            p2p: Some(P2pSummary {
                gpus: 2,
                missing: vec![(0, 1)],
            }),
        };
        let c = s.check(&pcie);
        assert_eq!(c.status, Status::Warn);
        let text = c.details.join("\n");
        assert!(text.contains("1 GPU pair(s) here lack P2P (0-1)"), "{text}");
        assert!(
            text.contains("NCCL_IB_DISABLE=1 on a host with active"),
            "{text}"
        );
        let trace = FakeMachine::new().env("NCCL_DEBUG", "trace");
        let c = Settings::read(&trace.root()).check(&Facts::default());
        assert_eq!(c.status, Status::Warn);
        assert!(c.fix.unwrap().contains("NCCL_DEBUG=INFO"));
    }
}
