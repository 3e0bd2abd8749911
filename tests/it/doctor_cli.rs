//! `doctor` from the command line, on fake machines (`--root DIR`, hidden) and on this
//! one: a 64 MiB /dev/shm for 8 ranks, leftover segments and `--clean`, an interface
//! name that matches nothing, unknown NCCL variables, the JSON schema, and a smoke run
//! on the real machine that must end with 0 or 1, never 2.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

const TITLES: [&str; 10] = [
    "/dev/shm",
    "Leftover segments",
    "Container",
    "NCCL environment",
    "Socket interfaces",
    "InfiniBand",
    "GPUs",
    "libnccl",
    "Error counters",
    "NVLink fabric",
];

const IDS: [&str; 10] = [
    "shm.size",
    "shm.leftovers",
    "container",
    "nccl.env",
    "net.socket",
    "net.ib",
    "gpu",
    "nccl.lib",
    "counters",
    "fabric",
];

/// A fake machine for `doctor --root`. Ordinary paths (`/dev/shm/...`, `/proc/<pid>/maps`,
/// `/sys/class/net/<if>/operstate`, `/etc/nccl.conf`) are files under the directory;
/// what is not a file comes from `<root>/.doctor/`:
///
/// - `statvfs/<path>`: `TOTAL FREE` bytes of the file system at `<path>` (`statvfs/dev/shm`);
/// - `addresses`: `IFNAME ADDRESS` lines (what `getifaddrs` returns on a real machine);
/// - `memlock`: `unlimited` or bytes (`ulimit -l`, `getrlimit` on a real machine).
struct FakeRoot {
    dir: tempfile::TempDir,
}

impl FakeRoot {
    /// A plain host: ens5 with an address, loopback, an empty /dev/shm of `shm_bytes`.
    fn host(shm_bytes: u64) -> FakeRoot {
        let r = FakeRoot {
            dir: tempfile::tempdir().unwrap(),
        };
        r.file("/sys/class/net/ens5/operstate", "up\n");
        r.file("/sys/class/net/ens5/flags", "0x1003\n");
        r.file("/sys/class/net/lo/operstate", "unknown\n");
        r.file("/sys/class/net/lo/flags", "0x9\n");
        r.file("/.doctor/addresses", "lo 127.0.0.1\nens5 10.0.0.5\n");
        r.file("/.doctor/memlock", "unlimited\n");
        r.file("/etc/hostname", "fake-node\n");
        r.file(
            "/.doctor/statvfs/dev/shm",
            &format!("{shm_bytes} {shm_bytes}\n"),
        );
        std::fs::create_dir_all(r.path("/dev/shm")).unwrap();
        std::fs::create_dir_all(r.path("/proc")).unwrap();
        r
    }

    fn path(&self, machine_path: &str) -> PathBuf {
        self.dir.path().join(machine_path.trim_start_matches('/'))
    }

    fn file(&self, machine_path: &str, content: &str) {
        let p = self.path(machine_path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// A /dev/shm segment last written `age` ago.
    fn segment(&self, name: &str, bytes: usize, age: Duration) {
        let machine_path = format!("/dev/shm/{name}");
        self.file(&machine_path, &"s".repeat(bytes));
        std::fs::File::options()
            .write(true)
            .open(self.path(&machine_path))
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    }

    /// `doctor --root` with a clean environment: only HOME and what the test adds.
    fn doctor(&self) -> Command {
        let mut c = Command::new(common::bin());
        c.arg("doctor")
            .arg("--root")
            .arg(self.dir.path())
            .env_clear()
            .env("HOME", "/home/u");
        c
    }
}

/// The text report with its wrapped lines joined again: a line indented by eight
/// spaces continues the one before it.
fn stdout(o: &Output) -> String {
    let mut out = String::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        match l.strip_prefix("        ") {
            Some(more) if !out.is_empty() => {
                out.pop();
                out.push(' ');
                out.push_str(more);
            }
            _ => out.push_str(l),
        }
        out.push('\n');
    }
    out
}

/// The status line of the check titled `title`.
fn line<'a>(out: &'a str, title: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(6..).is_some_and(|rest| rest.starts_with(title)))
        .unwrap_or_else(|| panic!("no line for {title} in:\n{out}"))
}

#[test]
fn doctor_a_64_mib_shm_fails_for_8_ranks_with_the_need_in_mib() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(64 << 20);
    let o = root.doctor().args(["--gpus", "8"]).output().unwrap();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    assert_eq!(
        line(&out, "/dev/shm"),
        "FAIL  /dev/shm           64.0 MiB free of 64.0 MiB; need 147.1 MiB for 8 local ranks"
    );
    assert!(
        out.contains("need = 9637888 B per segment x 2 channels"),
        "{out}"
    );
    assert!(
        out.contains("fix: Give /dev/shm at least 1 GiB: `docker run --shm-size=1g ...`"),
        "{out}"
    );
    assert!(
        out.contains("--ipc=host") && out.contains("medium: Memory"),
        "{out}"
    );
    // Two ranks fit in 64 MiB: the verdict follows --gpus.
    let o = root.doctor().args(["--gpus", "2"]).output().unwrap();
    assert!(
        line(&stdout(&o), "/dev/shm").starts_with("WARN "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn doctor_a_host_sized_shm_is_ok_and_nothing_fails() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(126 << 30);
    let o = root.doctor().output().unwrap();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    assert!(
        line(&out, "/dev/shm")
            .starts_with("OK    /dev/shm           126.0 GiB free of 126.0 GiB; need 147.1 MiB"),
        "{out}"
    );
    assert!(
        line(&out, "GPUs").starts_with("WARN  GPUs               no NVIDIA GPU found"),
        "{out}"
    );
    assert!(out.ends_with("(fake-node)\n"), "{out}");
}

#[test]
fn doctor_leftover_segments_in_use_are_kept_and_clean_removes_only_orphans() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(1 << 30);
    let hour = Duration::from_secs(3600);
    root.segment("nccl-Held01", 4096, 2 * hour);
    root.segment("nccl-shm-recv-orphan", 9_637_888, 30 * hour);
    root.file(
        "/proc/4242/maps",
        "7f1c00000000-7f1c00932000 rw-s 00000000 00:1a 991 /dev/shm/nccl-Held01\n",
    );
    root.file("/proc/4242/comm", "python3\n");

    let o = root.doctor().output().unwrap();
    let out = stdout(&o);
    assert_eq!(
        line(&out, "Leftover segments"),
        "WARN  Leftover segments  2 segments (9.2 MiB): 1 in use, 1 orphaned"
    );
    assert!(
        out.contains("nccl-Held01 4.0 KiB, 2 h old, in use by pid 4242 (python3)"),
        "{out}"
    );
    assert!(
        out.contains("nccl-shm-recv-orphan 9.2 MiB, 30 h old, orphaned"),
        "{out}"
    );
    assert!(
        out.contains("fix: `nccl-bench doctor --clean` removes the orphaned ones"),
        "{out}"
    );
    assert!(
        root.path("/dev/shm/nccl-shm-recv-orphan").exists(),
        "doctor without --clean removed a file"
    );

    let o = root.doctor().arg("--clean").output().unwrap();
    let out = stdout(&o);
    assert_eq!(
        line(&out, "Leftover segments"),
        "OK    Leftover segments  removed 1 orphaned segment (9.2 MiB); kept 1 segment (4.0 KiB): 1 in use"
    );
    assert!(
        out.contains("removed nccl-shm-recv-orphan 9.2 MiB, 30 h old"),
        "{out}"
    );
    assert!(!root.path("/dev/shm/nccl-shm-recv-orphan").exists());
    assert!(root.path("/dev/shm/nccl-Held01").exists());
}

#[test]
fn doctor_a_socket_ifname_matching_no_interface_fails_with_the_one_to_use() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(1 << 30);
    let o = root
        .doctor()
        .env("NCCL_SOCKET_IFNAME", "eth0")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    assert_eq!(
        line(&out, "Socket interfaces"),
        "FAIL  Socket interfaces  NCCL_SOCKET_IFNAME=eth0 matches no interface with an address (here: ens5, lo)"
    );
    assert!(
        out.contains("fix: Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on, e.g. `NCCL_SOCKET_IFNAME=ens5`"),
        "{out}"
    );
    let o = root
        .doctor()
        .env("NCCL_SOCKET_IFNAME", "ens")
        .output()
        .unwrap();
    assert_eq!(
        line(&stdout(&o), "Socket interfaces"),
        "OK    Socket interfaces  NCCL would use ens5 (10.0.0.5) (NCCL_SOCKET_IFNAME=ens)"
    );
}

#[test]
fn doctor_unknown_nccl_variables_are_flagged_from_the_environment_and_nccl_conf() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(1 << 30);
    root.file(
        "/etc/nccl.conf",
        "# site\nNCCL_MADE_UP_KNOB=1\nNCCL_DEBUG=WARN\n",
    );
    root.file("/home/u/.nccl.conf", "NCCL_DEBUG=INFO\n");
    let o = root
        .doctor()
        .env("NCCL_SHM_USE_CUDA_MEMORY", "1")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(
        line(&out, "NCCL environment").starts_with(
            "WARN  NCCL environment   4 NCCL_* settings (1 from the environment, 3 from 2 files); 2 warnings"
        ),
        "{out}"
    );
    assert!(
        out.contains("NCCL_SHM_USE_CUDA_MEMORY=1 (environment)"),
        "{out}"
    );
    assert!(out.contains("NCCL_SHM_USE_CUDA_MEMORY is not a variable any NCCL release reads: NCCL ignores it (did you mean NCCL_SHM_USE_CUDA_MEMCPY?)"), "{out}");
    assert!(
        out.contains("NCCL_MADE_UP_KNOB=1 (/etc/nccl.conf)"),
        "{out}"
    );
    assert!(out.contains("NCCL_MADE_UP_KNOB is not a variable"), "{out}");
    assert!(
        out.contains("NCCL_DEBUG=WARN (/etc/nccl.conf; overridden by the value above)"),
        "{out}"
    );
    // Nothing flagged without them.
    let clean = FakeRoot::host(1 << 30);
    let o = clean.doctor().env("NCCL_DEBUG", "INFO").output().unwrap();
    assert!(
        line(&stdout(&o), "NCCL environment").starts_with("OK "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn doctor_json_output_parses_and_has_the_documented_keys() {
    let _machine = crate::common::shared();
    let root = FakeRoot::host(64 << 20);
    let o = root.doctor().arg("--json").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["schema"], 1);
    assert_eq!(v["host"], "fake-node");
    let checks = v["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, IDS);
    let mut counts = [0u64; 3];
    for (c, title) in checks.iter().zip(TITLES) {
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["details", "fix", "id", "status", "title", "value"],
            "{c}"
        );
        assert_eq!(c["title"], title);
        assert!(c["value"].is_string() && c["details"].is_array(), "{c}");
        assert!(c["fix"].is_null() || c["fix"].is_string(), "{c}");
        let i = ["ok", "warn", "fail"]
            .iter()
            .position(|s| c["status"] == *s)
            .unwrap_or_else(|| panic!("bad status in {c}"));
        counts[i] += 1;
    }
    let s = &v["summary"];
    assert_eq!(
        [s["ok"].as_u64(), s["warn"].as_u64(), s["fail"].as_u64()],
        counts.map(Some)
    );
    assert_eq!(checks[0]["status"], "fail");
    assert!(checks[0]["fix"].as_str().unwrap().contains("--shm-size"));
}

#[test]
fn doctor_a_root_that_is_not_a_directory_is_an_error() {
    let _machine = crate::common::shared();
    let o = Command::new(common::bin())
        .args(["doctor", "--root", "/nonexistent/doctor-root"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("--root /nonexistent/doctor-root is not a directory"));
}

#[test]
fn doctor_this_machine_exits_0_or_1_and_prints_every_check() {
    let _machine = crate::common::shared();
    let o = Command::new(common::bin()).arg("doctor").output().unwrap();
    let out = stdout(&o);
    let mut failed = false;
    for title in TITLES {
        let l = line(&out, title);
        assert!(
            ["OK ", "WARN ", "FAIL "].iter().any(|s| l.starts_with(s)),
            "{l}"
        );
        failed |= l.starts_with("FAIL ");
    }
    // 1 exactly when a check failed.
    assert_eq!(
        o.status.code(),
        Some(i32::from(failed)),
        "{}",
        common::text(&o)
    );
    let o = Command::new(common::bin())
        .args(["doctor", "--json", "--gpus", "2"])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        common::text(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let fails = v["summary"]["fail"].as_u64().unwrap();
    assert_eq!(o.status.code(), Some(i32::from(fails > 0)));
    assert!(
        o.status.code().is_some_and(|c| c < 2),
        "{}",
        common::text(&o)
    );
}
