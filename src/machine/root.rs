//! The machine the checks look at. Every file read goes through [`Root::path`], which
//! puts a machine path (`/dev/shm`, `/proc/1/cgroup`) under a base directory: `/` on
//! the real machine, a directory tree in tests (`doctor --root DIR`). What is not a
//! file is injected: the environment, interface addresses (`getifaddrs`), the memlock
//! limit (`getrlimit`), file-system sizes (`statvfs`) and the host name.
//!
//! A fake root provides those from files of its own, under `<root>/.doctor/`:
//!
//! - `statvfs/<machine path>`: `TOTAL FREE` in bytes, e.g. `.doctor/statvfs/dev/shm`
//!   holding `67108864 67108864` for a 64 MiB /dev/shm;
//! - `addresses`: one `IFNAME ADDRESS` per line (`ens5 10.0.0.5`, `lo ::1`);
//! - `memlock`: `unlimited` or a number of bytes;
//!
//! and the host name from `<root>/etc/hostname`. A missing file reads as "cannot read".

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};

/// Size and free space of a file system, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsSpace {
    pub total: u64,
    pub free: u64,
}

/// One address of one network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfAddr {
    pub interface: String,
    pub addr: IpAddr,
}

/// The locked-memory limit (`ulimit -l`) of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memlock {
    Unlimited,
    Bytes(u64),
}

/// A machine to check: a base directory plus what cannot be read from files.
#[derive(Debug, Clone)]
pub struct Root {
    base: PathBuf,
    real: bool,
    env: BTreeMap<String, String>,
    addresses: Result<Vec<IfAddr>, String>,
    memlock: Result<Memlock, String>,
    hostname: String,
}

impl Root {
    /// The machine this process runs on.
    pub fn this_machine() -> Root {
        Root {
            base: PathBuf::from("/"),
            real: true,
            env: process_env(),
            addresses: real_addresses(),
            memlock: real_memlock(),
            hostname: crate::machine::host::hostname(),
        }
    }

    /// A machine described by the tree under `base` (see the module documentation),
    /// with the given environment.
    pub fn fake(base: &Path, env: impl IntoIterator<Item = (String, String)>) -> Root {
        let dir = base.join(".doctor");
        let read = |name: &str| read_text(&dir.join(name)).map_err(|e| describe(name, &e));
        let addresses = read("addresses").and_then(|text| parse_addresses(&text));
        let memlock = read("memlock").and_then(|text| parse_memlock(&text));
        let hostname = read_text(&base.join("etc/hostname"))
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "unknown-host".to_string());
        Root {
            base: base.to_path_buf(),
            real: false,
            env: env.into_iter().collect(),
            addresses,
            memlock,
            hostname,
        }
    }

    /// A fake machine with this process's environment (`doctor --root DIR`).
    pub fn fake_with_process_env(base: &Path) -> Root {
        Root::fake(base, process_env())
    }

    /// Whether this is the machine the process runs on (libraries may be loaded and
    /// the driver asked) rather than a tree of files.
    pub fn is_real(&self) -> bool {
        self.real
    }

    /// Where the machine path `path` is on this process's file system.
    pub fn path(&self, path: &Path) -> PathBuf {
        let relative: PathBuf = path
            .components()
            .filter(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
            .collect();
        self.base.join(relative)
    }

    /// A machine file as text (invalid UTF-8 replaced).
    pub fn read(&self, path: &Path) -> io::Result<String> {
        read_text(&self.path(path))
    }

    /// An environment variable of the checked processes.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// Every environment variable, sorted by name.
    pub fn env_vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn addresses(&self) -> Result<&[IfAddr], &str> {
        self.addresses.as_deref().map_err(|e: &String| e.as_str())
    }

    pub fn memlock(&self) -> Result<Memlock, &str> {
        self.memlock.as_ref().copied().map_err(String::as_str)
    }

    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// Size and free space of the file system holding the machine path `path`.
    pub fn fs_space(&self, path: &Path) -> Result<FsSpace, String> {
        if self.real {
            return crate::machine::host::fs_space(path)
                .map(|(total, free)| FsSpace { total, free })
                .ok_or_else(|| {
                    let why = io::Error::last_os_error();
                    format!(
                        "cannot read the size of {} (statvfs: {why})",
                        path.display()
                    )
                });
        }
        let file = self.base.join(".doctor/statvfs").join(
            self.path(path)
                .strip_prefix(&self.base)
                .unwrap_or(Path::new("")),
        );
        let text = read_text(&file).map_err(|e| {
            format!(
                "cannot read the size of {} ({}: {e})",
                path.display(),
                file.display()
            )
        })?;
        let numbers: Vec<u64> = text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        match numbers[..] {
            [total, free] => Ok(FsSpace { total, free }),
            _ => Err(format!(
                "cannot read the size of {}: {} does not hold `TOTAL FREE`",
                path.display(),
                file.display()
            )),
        }
    }
}

/// A file as text; invalid UTF-8 is replaced rather than refused.
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn describe(name: &str, e: &io::Error) -> String {
    format!("cannot read .doctor/{name} of the fake root: {e}")
}

fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

fn parse_addresses(text: &str) -> Result<Vec<IfAddr>, String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(interface), Some(addr)) = (words.next(), words.next()) else {
            return Err(format!("addresses: `{line}` is not `IFNAME ADDRESS`"));
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("addresses: `{addr}` is not an IP address"))?;
        out.push(IfAddr {
            interface: interface.to_string(),
            addr,
        });
    }
    Ok(out)
}

fn parse_memlock(text: &str) -> Result<Memlock, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("unlimited") {
        return Ok(Memlock::Unlimited);
    }
    t.parse()
        .map(Memlock::Bytes)
        .map_err(|_| format!("memlock: `{t}` is neither `unlimited` nor a number of bytes"))
}

/// Addresses of this machine's interfaces (IPv4 and IPv6 only), from `getifaddrs`.
fn real_addresses() -> Result<Vec<IfAddr>, String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(format!("getifaddrs: {}", io::Error::last_os_error()));
    }
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let entry = unsafe { &*cur };
        cur = entry.ifa_next;
        if entry.ifa_addr.is_null() || entry.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr points to a sockaddr whose family says its real type.
        let addr = unsafe {
            match i32::from((*entry.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*(entry.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(
                        u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                    ))
                }
                libc::AF_INET6 => {
                    let sin6 = &*(entry.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(sin6.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if let Some(addr) = addr {
            out.push(IfAddr {
                interface: name,
                addr,
            });
        }
    }
    // SAFETY: frees the list getifaddrs allocated; no reference into it remains.
    unsafe { libc::freeifaddrs(list) };
    Ok(out)
}

/// The soft `RLIMIT_MEMLOCK` of this process: the limit ibverbs registration meets.
fn real_memlock() -> Result<Memlock, String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 {
        return Err(format!(
            "getrlimit(RLIMIT_MEMLOCK): {}",
            io::Error::last_os_error()
        ));
    }
    Ok(if limit.rlim_cur == libc::RLIM_INFINITY {
        Memlock::Unlimited
    } else {
        Memlock::Bytes(limit.rlim_cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_paths_stay_under_the_base() {
        let root = Root::fake(Path::new("/tmp/fake"), Vec::new());
        assert_eq!(
            root.path(Path::new("/dev/shm")),
            PathBuf::from("/tmp/fake/dev/shm")
        );
        assert_eq!(
            root.path(Path::new("proc/1/maps")),
            PathBuf::from("/tmp/fake/proc/1/maps")
        );
    }

    #[test]
    fn a_fake_root_reads_its_injected_facts_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::fake(dir.path(), Vec::new());
        assert!(root
            .addresses()
            .unwrap_err()
            .contains("cannot read .doctor/addresses"));
        assert!(root.memlock().is_err());
        let err = root.fs_space(Path::new("/dev/shm")).unwrap_err();
        assert!(err.starts_with("cannot read the size of /dev/shm"), "{err}");

        let d = dir.path().join(".doctor");
        std::fs::create_dir_all(d.join("statvfs/dev")).unwrap();
        std::fs::write(d.join("statvfs/dev/shm"), "67108864 1048576\n").unwrap();
        std::fs::write(d.join("addresses"), "ens5 10.0.0.5\nlo ::1\n").unwrap();
        std::fs::write(d.join("memlock"), "65536").unwrap();
        let root = Root::fake(dir.path(), vec![("NCCL_DEBUG".into(), "INFO".into())]);
        assert_eq!(
            root.fs_space(Path::new("/dev/shm")).unwrap(),
            FsSpace {
                total: 64 << 20,
                free: 1 << 20
            }
        );
        assert_eq!(root.addresses().unwrap().len(), 2);
        assert_eq!(root.memlock().unwrap(), Memlock::Bytes(65536));
        assert_eq!(root.env("NCCL_DEBUG"), Some("INFO"));

        std::fs::write(d.join("addresses"), "ens5 not-an-ip\n").unwrap();
        std::fs::write(d.join("memlock"), "lots").unwrap();
        let root = Root::fake(dir.path(), Vec::new());
        assert!(root.addresses().unwrap_err().contains("not an IP address"));
        assert!(root.memlock().unwrap_err().contains("neither"));
    }

    #[test]
    fn this_machine_answers_without_panicking() {
        let root = Root::this_machine();
        assert!(root.is_real());
        assert!(root.fs_space(Path::new("/")).is_ok());
        assert!(root.memlock().is_ok());
        // getifaddrs answers on every Linux machine; where the kernel shows the
        // loopback interface up, its 127.0.0.1 is among the addresses.
        let addrs = root.addresses().unwrap();
        assert!(addrs.iter().all(|a| !a.interface.is_empty()), "{addrs:?}");
        let lo_up = std::fs::read_to_string("/sys/class/net/lo/operstate")
            .is_ok_and(|s| s.trim() != "down");
        if lo_up {
            assert!(
                addrs
                    .iter()
                    .any(|a| a.addr == std::net::Ipv4Addr::LOCALHOST),
                "{addrs:?}"
            );
        }
    }
}
