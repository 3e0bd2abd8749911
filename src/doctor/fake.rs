//! Fake machines for the unit tests: a temporary directory laid out as [`Root::fake`]
//! reads it, built one file at a time.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::machine::Root;

pub struct FakeMachine {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl FakeMachine {
    pub fn new() -> FakeMachine {
        FakeMachine {
            dir: tempfile::tempdir().expect("temporary directory"),
            env: Vec::new(),
        }
    }

    pub fn root(&self) -> Root {
        Root::fake(self.dir.path(), self.env.clone())
    }

    /// Where the machine path `path` lies in the fake tree.
    pub fn path(&self, path: &str) -> PathBuf {
        self.dir.path().join(path.trim_start_matches('/'))
    }

    pub fn env(mut self, name: &str, value: &str) -> FakeMachine {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    pub fn file(self, path: &str, content: &str) -> FakeMachine {
        let p = self.path(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        self
    }

    /// A file whose modification time lies `age` in the past.
    pub fn aged_file(self, path: &str, size: usize, age: Duration) -> FakeMachine {
        let m = self.file(path, &"x".repeat(size));
        let f = std::fs::File::options()
            .write(true)
            .open(m.path(path))
            .unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
        m
    }

    pub fn dir(self, path: &str) -> FakeMachine {
        std::fs::create_dir_all(self.path(path)).unwrap();
        self
    }

    /// A symbolic link at `path` whose target is `target` as written (may dangle).
    pub fn symlink(self, path: &str, target: &str) -> FakeMachine {
        let p = self.path(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(Path::new(target), p).unwrap();
        self
    }

    /// `statvfs` of `path`: total and free bytes.
    pub fn space(self, path: &str, total: u64, free: u64) -> FakeMachine {
        let p = format!("/.doctor/statvfs/{}", path.trim_start_matches('/'));
        self.file(&p, &format!("{total} {free}\n"))
    }

    pub fn addresses(self, lines: &str) -> FakeMachine {
        self.file("/.doctor/addresses", lines)
    }

    pub fn memlock(self, text: &str) -> FakeMachine {
        self.file("/.doctor/memlock", text)
    }

    /// `/sys/class/net/<name>` with its operstate and flags (hex, 0x1 = up, 0x8 = loopback).
    pub fn interface(self, name: &str, operstate: &str, flags: &str) -> FakeMachine {
        self.file(&format!("/sys/class/net/{name}/operstate"), operstate)
            .file(&format!("/sys/class/net/{name}/flags"), flags)
    }

    /// `/sys/class/infiniband/<dev>/ports/<port>` with its state and link layer.
    pub fn ib_port(self, dev: &str, port: u32, state: &str, link_layer: &str) -> FakeMachine {
        let base = format!("/sys/class/infiniband/{dev}/ports/{port}");
        self.file(&format!("{base}/state"), state)
            .file(&format!("{base}/link_layer"), link_layer)
    }
}
