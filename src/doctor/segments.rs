//! Leftover NCCL segments in /dev/shm: `nccl-XXXXXX` (NCCL 2.12+) and
//! `nccl-shm-recv-*` (older) files, with their size, age and the live processes that
//! map them (`/proc/<pid>/maps`) or hold them open (`/proc/<pid>/fd`). A crashed job
//! leaves its segments behind and they keep their memory until removed; `--clean`
//! removes those no live process uses, never one that is in use or was created in the
//! last minute (a job may be starting and its peer not attached yet).

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::machine::Root;
use crate::model::{Check, Status};
use crate::units::human_bytes;
use crate::units::plural;

pub const ID: &str = "shm.leftovers";
pub const TITLE: &str = "Leftover segments";

/// A segment younger than this with no user may belong to a job starting up.
const RECENT: Duration = Duration::from_secs(60);

/// A live process that maps or holds a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    /// The path on the machine (under the root).
    pub path: PathBuf,
    pub bytes: u64,
    pub age: Option<Duration>,
    pub holders: Vec<Holder>,
}

impl Segment {
    fn is_recent(&self) -> bool {
        self.age.is_some_and(|a| a < RECENT)
    }

    /// No live process uses it and it is old enough to be a crashed job's.
    fn is_orphaned(&self) -> bool {
        self.holders.is_empty() && !self.is_recent()
    }

    fn describe(&self) -> String {
        let age = self
            .age
            .map(|a| format!(", {} old", human_age(a)))
            .unwrap_or_default();
        let use_ = if !self.holders.is_empty() {
            let pids: Vec<String> = self
                .holders
                .iter()
                .map(|h| format!("{} ({})", h.pid, h.command))
                .collect();
            format!("in use by pid {}", pids.join(", "))
        } else if self.is_recent() {
            "no user yet, but created in the last minute: kept (a job may be starting)".into()
        } else {
            "orphaned: no live process maps or holds it".into()
        };
        format!("{} {}{age}, {use_}", self.name, human_bytes(self.bytes))
    }
}

/// What /dev/shm holds of NCCL's, and what `--clean` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    pub segments: Vec<Segment>,
    /// Why the directory could not be listed.
    pub list_error: Option<String>,
    /// Why /proc could not be read (then nothing can be called orphaned).
    pub proc_error: Option<String>,
    /// Processes whose maps or fds could not be read.
    pub unreadable: Vec<u32>,
    pub cleaned: bool,
    pub removed: Vec<Segment>,
    pub remove_errors: Vec<String>,
}

impl Leftovers {
    pub fn scan(root: &Root, shm_dir: &Path) -> Leftovers {
        let mut out = Leftovers::default();
        let entries = match std::fs::read_dir(root.path(shm_dir)) {
            Ok(e) => e,
            Err(e) => {
                out.list_error = Some(format!("cannot list {}: {e}", shm_dir.display()));
                return out;
            }
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("nccl-") {
                continue;
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            out.segments.push(Segment {
                path: shm_dir.join(&name),
                name,
                bytes: meta.len(),
                age: meta
                    .modified()
                    .ok()
                    .and_then(|m| now.duration_since(m).ok()),
                holders: Vec::new(),
            });
        }
        out.segments.sort_by(|a, b| a.name.cmp(&b.name));
        if !out.segments.is_empty() {
            let targets: BTreeSet<PathBuf> = out.segments.iter().map(|s| s.path.clone()).collect();
            match users(root, &targets) {
                Ok((users, unreadable)) => {
                    out.unreadable = unreadable;
                    for s in &mut out.segments {
                        s.holders = users.get(&s.path).cloned().unwrap_or_default();
                    }
                }
                Err(e) => out.proc_error = Some(e),
            }
        }
        out
    }

    fn orphans(&self) -> impl Iterator<Item = &Segment> {
        let known = self.proc_error.is_none();
        self.segments
            .iter()
            .filter(move |s| known && s.is_orphaned())
    }

    /// Bytes held by segments no live process uses (after `--clean`, what is left).
    pub fn orphaned_bytes(&self) -> u64 {
        self.orphans().map(|s| s.bytes).sum()
    }

    /// Removes the orphaned segments, keeping a record of what went and what could not.
    pub fn clean(&mut self, root: &Root) {
        self.cleaned = true;
        let orphans: Vec<Segment> = self.orphans().cloned().collect();
        for s in orphans {
            match std::fs::remove_file(root.path(&s.path)) {
                Ok(()) => {
                    self.segments.retain(|k| k.path != s.path);
                    self.removed.push(s);
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    self.segments.retain(|k| k.path != s.path);
                }
                Err(e) => self
                    .remove_errors
                    .push(format!("cannot remove {}: {e}", s.path.display())),
            }
        }
    }

    pub fn check(&self, shm_dir: &Path) -> Check {
        let dir = shm_dir.display();
        if let Some(e) = &self.list_error {
            return Check::new(ID, TITLE, Status::Warn, e.clone());
        }
        let mut details: Vec<String> = self
            .removed
            .iter()
            .map(|s| format!("removed {}", s.describe()))
            .collect();
        details.extend(self.segments.iter().map(Segment::describe));
        details.extend(self.remove_errors.iter().cloned());
        if let Some(e) = &self.proc_error {
            details.push(format!(
                "{e}: cannot tell which segments are in use, so none is called orphaned"
            ));
        }
        if !self.unreadable.is_empty() && !self.segments.is_empty() {
            details.push(format!(
                "{} could not be inspected (permission denied; root sees all): a segment \
                 called orphaned may be theirs",
                plural(self.unreadable.len(), "process", "processes")
            ));
        }
        let orphans: Vec<&Segment> = self.orphans().collect();
        let in_use = self
            .segments
            .iter()
            .filter(|s| !s.holders.is_empty())
            .count();
        let total: u64 = self.segments.iter().map(|s| s.bytes).sum();
        let mut parts = Vec::new();
        if self.cleaned {
            let freed: u64 = self.removed.iter().map(|s| s.bytes).sum();
            parts.push(format!(
                "removed {} ({})",
                plural(self.removed.len(), "orphaned segment", "orphaned segments"),
                human_bytes(freed)
            ));
        }
        if self.segments.is_empty() {
            if !self.cleaned {
                parts.push(format!("no nccl-* segments in {dir}"));
            }
        } else {
            let mut what = format!(
                "{} ({})",
                plural(self.segments.len(), "segment", "segments"),
                human_bytes(total)
            );
            if self.cleaned {
                what.insert_str(0, "kept ");
            }
            let mut uses = Vec::new();
            if in_use > 0 {
                uses.push(format!("{in_use} in use"));
            }
            if !orphans.is_empty() {
                uses.push(format!("{} orphaned", orphans.len()));
            }
            if !uses.is_empty() {
                what.push_str(&format!(": {}", uses.join(", ")));
            }
            parts.push(what);
        }
        let status = if orphans.is_empty() && self.remove_errors.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        };
        let mut check = Check::new(ID, TITLE, status, parts.join("; ")).with_details(details);
        if !orphans.is_empty() {
            let bytes: u64 = orphans.iter().map(|s| s.bytes).sum();
            let fix = if self.cleaned {
                format!(
                    "Remove them as their owner or root (`rm {dir}/nccl-...`); they hold {}",
                    human_bytes(bytes)
                )
            } else {
                format!(
                    "`nccl-bench doctor --clean` removes the orphaned ones (or `rm {dir}/<name>` \
                     while no NCCL job runs here); they hold {}",
                    human_bytes(bytes)
                )
            };
            check = check.with_fix(fix);
        }
        check
    }
}

/// Each segment's users, and the pids whose maps or fds could not be read.
type Users = (BTreeMap<PathBuf, Vec<Holder>>, Vec<u32>);

/// For each target path, the live processes that map it or hold it open; and the pids
/// whose maps or fds could not be read.
fn users(root: &Root, targets: &BTreeSet<PathBuf>) -> Result<Users, String> {
    let proc_dir = Path::new("/proc");
    let entries =
        std::fs::read_dir(root.path(proc_dir)).map_err(|e| format!("cannot read /proc: {e}"))?;
    let mut found: BTreeMap<PathBuf, Vec<Holder>> = BTreeMap::new();
    let mut unreadable = Vec::new();
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let dir = proc_dir.join(pid.to_string());
        let mut used: BTreeSet<PathBuf> = BTreeSet::new();
        let mut denied = false;
        match root.read(&dir.join("maps")) {
            Ok(maps) => {
                for line in maps.lines() {
                    let path: Vec<&str> = line.split_whitespace().skip(5).collect();
                    let path = path.join(" ");
                    let path = path.strip_suffix(" (deleted)").unwrap_or(&path);
                    if targets.contains(Path::new(path)) {
                        used.insert(PathBuf::from(path));
                    }
                }
            }
            Err(e) => denied |= e.kind() == ErrorKind::PermissionDenied,
        }
        match std::fs::read_dir(root.path(&dir.join("fd"))) {
            Ok(fds) => {
                for fd in fds.flatten() {
                    if let Ok(target) = std::fs::read_link(fd.path()) {
                        if targets.contains(&target) {
                            used.insert(target);
                        }
                    }
                }
            }
            Err(e) => denied |= e.kind() == ErrorKind::PermissionDenied,
        }
        if denied {
            unreadable.push(pid);
        }
        if used.is_empty() {
            continue;
        }
        let command = root
            .read(&dir.join("comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_else(|_| "?".to_string());
        for path in used {
            found.entry(path).or_default().push(Holder {
                pid,
                command: command.clone(),
            });
        }
    }
    Ok((found, unreadable))
}

/// `45 s`, `12 min`, `3 h`, `2 d`.
fn human_age(age: Duration) -> String {
    let s = age.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn machine() -> FakeMachine {
        FakeMachine::new()
            .aged_file("/dev/shm/nccl-AbC123", 4096, 3 * HOUR)
            .aged_file("/dev/shm/nccl-Orphan", 8192, 5 * HOUR)
            .aged_file("/dev/shm/nccl-shm-recv-old", 100, 50 * HOUR)
            .aged_file("/dev/shm/nccl-ViaFd", 10, HOUR)
            .file("/dev/shm/nccl-New", "")
            .file("/dev/shm/other-app", "")
            .file(
                "/proc/4242/maps",
                "7f0000000000-7f0000001000 rw-s 00000000 00:1a 77 /dev/shm/nccl-AbC123\n\
                 7f0000002000-7f0000003000 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n",
            )
            .file("/proc/4242/comm", "python3\n")
            .symlink("/proc/777/fd/9", "/dev/shm/nccl-ViaFd")
            .file("/proc/777/comm", "torchrun\n")
            .dir("/proc/self")
    }

    #[test]
    fn segments_held_by_live_processes_are_told_from_orphans() {
        let m = machine();
        let l = Leftovers::scan(&m.root(), Path::new("/dev/shm"));
        let names: Vec<&str> = l.segments.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "nccl-AbC123",
                "nccl-New",
                "nccl-Orphan",
                "nccl-ViaFd",
                "nccl-shm-recv-old"
            ]
        );
        assert_eq!(
            l.segments[0].holders,
            [Holder {
                pid: 4242,
                command: "python3".into()
            }]
        );
        assert_eq!(l.segments[3].holders[0].pid, 777);
        assert_eq!(l.orphaned_bytes(), 8192 + 100);
        let c = l.check(Path::new("/dev/shm"));
        assert_eq!(c.status, Status::Warn);
        assert_eq!(c.value, "5 segments (12.1 KiB): 2 in use, 2 orphaned");
        let text = c.details.join("\n");
        assert!(
            text.contains("nccl-AbC123 4.0 KiB, 3 h old, in use by pid 4242 (python3)"),
            "{text}"
        );
        assert!(
            text.contains("nccl-Orphan 8.0 KiB, 5 h old, orphaned"),
            "{text}"
        );
        assert!(
            text.contains("nccl-New 0 B, 0 s old, no user yet"),
            "{text}"
        );
        assert!(
            text.contains("nccl-shm-recv-old 100 B, 2 d old, orphaned"),
            "{text}"
        );
        assert!(c.fix.unwrap().contains("--clean"));
    }

    #[test]
    fn clean_removes_only_the_orphans_and_says_so() {
        let m = machine();
        let root = m.root();
        let mut l = Leftovers::scan(&root, Path::new("/dev/shm"));
        l.clean(&root);
        assert!(!m.path("/dev/shm/nccl-Orphan").exists());
        assert!(!m.path("/dev/shm/nccl-shm-recv-old").exists());
        for kept in ["nccl-AbC123", "nccl-ViaFd", "nccl-New", "other-app"] {
            assert!(m.path(&format!("/dev/shm/{kept}")).exists(), "{kept}");
        }
        let c = l.check(Path::new("/dev/shm"));
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert_eq!(
            c.value,
            "removed 2 orphaned segments (8.1 KiB); kept 3 segments (4.0 KiB): 2 in use"
        );
        assert!(
            c.details[0].starts_with("removed nccl-Orphan 8.0 KiB"),
            "{:?}",
            c.details
        );
        assert!(c.fix.is_none());
    }

    #[test]
    fn without_proc_nothing_is_called_orphaned_or_removed() {
        let m = FakeMachine::new().aged_file("/dev/shm/nccl-X", 10, HOUR);
        let root = m.root();
        let mut l = Leftovers::scan(&root, Path::new("/dev/shm"));
        l.clean(&root);
        assert!(m.path("/dev/shm/nccl-X").exists());
        let c = l.check(Path::new("/dev/shm"));
        assert_eq!(c.status, Status::Ok);
        assert!(c.details.iter().any(|d| d.starts_with("cannot read /proc")));
    }

    #[test]
    fn an_empty_or_missing_directory_is_said() {
        let m = FakeMachine::new().dir("/dev/shm");
        let c = Leftovers::scan(&m.root(), Path::new("/dev/shm")).check(Path::new("/dev/shm"));
        assert_eq!(
            (c.status, c.value.as_str()),
            (Status::Ok, "no nccl-* segments in /dev/shm")
        );
        let c = Leftovers::scan(&m.root(), Path::new("/nope")).check(Path::new("/nope"));
        assert_eq!(c.status, Status::Warn);
        assert!(c.value.starts_with("cannot list /nope"));
    }
}
