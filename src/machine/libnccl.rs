//! Finding libnccl, in the order a user would look: `--nccl-lib`, the
//! `NCCL_BENCH_NCCL_LIB` variable, the dynamic loader's own search, `ldconfig -p`, the
//! usual install directories, and Python site-packages (`nvidia/nccl/lib`, where the
//! `nvidia-nccl-cu12` wheel PyTorch depends on puts it). Every place tried is kept, for
//! `--verbose` and for the error when nothing is found. The machine is reached through
//! the `Machine` trait so that tests can build fake trees.

use std::ffi::c_int;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::nccl::NcclVersion;

pub const ENV_VAR: &str = "NCCL_BENCH_NCCL_LIB";
const SONAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// What discovery needs from the machine.
pub trait Machine {
    fn env(&self, name: &str) -> Option<String>;
    fn is_file(&self, path: &Path) -> bool;
    /// Directories matching `pattern` (a path whose last component may end in `*`).
    fn glob_dirs(&self, parent: &Path, prefix: &str) -> Vec<PathBuf>;
    /// `ldconfig -p` output, empty when unavailable.
    fn ldconfig(&self) -> String;
    /// Python's site-packages directories, empty when there is no python3.
    fn site_packages(&self) -> Vec<PathBuf>;
    /// Tries to load a library (a path, or a bare name for the loader's search);
    /// `Ok` carries the version and the path the file was loaded from.
    fn load(&self, what: &Path) -> Result<(NcclVersion, PathBuf), String>;
}

/// One place looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub place: String,
    pub outcome: String,
}

/// A usable libnccl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub version: NcclVersion,
    /// Which step found it.
    pub how: String,
    pub tried: Vec<Attempt>,
}

/// Nothing usable anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    pub tried: Vec<Attempt>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "no usable libnccl found; tried, in order:")?;
        for a in &self.tried {
            writeln!(f, "  - {}: {}", a.place, a.outcome)?;
        }
        write!(
            f,
            "hint: pip install nvidia-nccl-cu12 (PyTorch's NCCL), or pass --nccl-lib /path/to/libnccl.so.2 or set {ENV_VAR}"
        )
    }
}

impl std::error::Error for NotFound {}

struct Search<'m> {
    machine: &'m dyn Machine,
    tried: Vec<Attempt>,
}

impl Search<'_> {
    /// Tries one candidate file; `Some` when it loads.
    fn try_file(&mut self, place: &str, path: &Path) -> Option<Found> {
        if !path.as_os_str().is_empty() && path.is_absolute() && !self.machine.is_file(path) {
            self.note(place, format!("{} does not exist", path.display()));
            return None;
        }
        match self.machine.load(path) {
            Ok((version, loaded)) => Some(Found {
                path: loaded,
                version,
                how: place.to_string(),
                tried: std::mem::take(&mut self.tried),
            }),
            Err(e) => {
                // dlopen's messages already start with the file name.
                let shown = path.display().to_string();
                let outcome = if e.contains(&shown) {
                    e
                } else {
                    format!("{shown}: {e}")
                };
                self.note(place, outcome);
                None
            }
        }
    }

    fn note(&mut self, place: &str, outcome: String) {
        self.tried.push(Attempt {
            place: place.to_string(),
            outcome,
        });
    }
}

/// Finds libnccl. An explicit `--nccl-lib` (or the variable) that does not load is an
/// error, not a reason to pick another library behind the user's back.
pub fn discover(explicit: Option<&Path>, machine: &dyn Machine) -> Result<Found, NotFound> {
    let mut s = Search {
        machine,
        tried: Vec::new(),
    };
    if let Some(path) = explicit {
        return s
            .try_file("--nccl-lib", path)
            .ok_or(NotFound { tried: s.tried });
    }
    if let Some(path) = machine.env(ENV_VAR).filter(|v| !v.trim().is_empty()) {
        return s
            .try_file(ENV_VAR, Path::new(path.trim()))
            .ok_or(NotFound { tried: s.tried });
    }
    for name in SONAMES {
        if let Some(found) = s.try_file("dynamic loader search", Path::new(name)) {
            return Ok(found);
        }
    }
    let ldconfig = machine.ldconfig();
    let listed: Vec<PathBuf> = ldconfig
        .lines()
        .filter(|l| l.trim_start().starts_with("libnccl.so"))
        .filter_map(|l| l.split("=>").nth(1).map(|p| PathBuf::from(p.trim())))
        .collect();
    if listed.is_empty() {
        s.note("ldconfig -p", "no libnccl listed".into());
    }
    for path in listed {
        if let Some(found) = s.try_file("ldconfig -p", &path) {
            return Ok(found);
        }
    }
    let mut dirs = vec![PathBuf::from("/usr/lib/x86_64-linux-gnu")];
    dirs.extend(
        machine
            .glob_dirs(Path::new("/usr/local"), "cuda")
            .into_iter()
            .map(|d| d.join("lib64")),
    );
    dirs.extend(
        machine
            .glob_dirs(Path::new("/usr/local"), "nccl")
            .into_iter()
            .map(|d| d.join("lib")),
    );
    for dir in dirs {
        if let Some(found) = s.try_file("install directories", &dir.join(SONAMES[0])) {
            return Ok(found);
        }
    }
    let sites = machine.site_packages();
    if sites.is_empty() {
        s.note(
            "python3 site-packages",
            "python3 not found or has no site-packages".into(),
        );
    }
    for site in sites {
        let path = site.join("nvidia/nccl/lib/libnccl.so.2");
        if let Some(found) = s.try_file("python3 site-packages", &path) {
            return Ok(found);
        }
    }
    Err(NotFound { tried: s.tried })
}

/// The site-packages of the Python environment an executable at `exe` belongs to:
/// `<env>/lib/python3*/site-packages` for `exe` in `<env>/bin`, when they exist.
fn sites_beside(exe: &Path) -> Vec<PathBuf> {
    let Some(env) = exe
        .parent()
        .filter(|b| b.ends_with("bin"))
        .and_then(Path::parent)
    else {
        return Vec::new();
    };
    let mut sites: Vec<PathBuf> = std::fs::read_dir(env.join("lib"))
        .map(|it| {
            it.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| e.path().join("site-packages"))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    sites.sort();
    sites
}

/// The real machine.
pub struct ThisMachine;

impl Machine for ThisMachine {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn glob_dirs(&self, parent: &Path, prefix: &str) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent)
            .map(|it| {
                it.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    fn ldconfig(&self) -> String {
        ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .iter()
            .find_map(|exe| Command::new(exe).arg("-p").output().ok())
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The site-packages beside this executable first (`pip install nccl-bench` put it
    /// in `<env>/bin`, and `nvidia-nccl-cu12` in `<env>/lib/python3.X/site-packages`,
    /// whether or not the environment is activated), then python3's.
    fn site_packages(&self) -> Vec<PathBuf> {
        let mut seen: Vec<PathBuf> = std::env::current_exe()
            .map(|exe| sites_beside(&exe))
            .unwrap_or_default();
        let script = "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]+sys.path: print(p)";
        let output = Command::new("python3")
            .args(["-c", script])
            .output()
            .ok()
            .filter(|o| o.status.success());
        if let Some(o) = output {
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let p = PathBuf::from(line.trim());
                let is_site = p.ends_with("site-packages") || p.ends_with("dist-packages");
                if is_site && !seen.contains(&p) {
                    seen.push(p);
                }
            }
        }
        seen
    }

    fn load(&self, what: &Path) -> Result<(NcclVersion, PathBuf), String> {
        let version = version_of(what)?;
        let path = if what.is_absolute() {
            what.to_path_buf()
        } else {
            loaded_path().unwrap_or_else(|| what.to_path_buf())
        };
        Ok((version, path))
    }
}

/// Opens a libnccl and asks its version (`ncclGetVersion`, the first entry point of
/// every release): enough to know the file is a libnccl and which. The backend loads
/// every symbol it calls when it runs (`backend::nccl::Nccl::load`). The library stays
/// loaded, as the backend's does: unloading NCCL is never safe once it has run.
fn version_of(what: &Path) -> Result<NcclVersion, String> {
    type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: loading libnccl runs its initializers, which have no preconditions.
    let library = unsafe { libloading::Library::new(what.as_os_str()) }
        .map_err(|e| format!("cannot load {}: {e}", what.display()))?;
    // SAFETY: looked up with the type of its declaration in nccl.h.
    let get_version: GetVersion = unsafe { library.get::<GetVersion>(b"ncclGetVersion\0") }
        .map(|s| *s)
        .map_err(|_| {
            format!(
                "{} has no symbol ncclGetVersion: it is not a usable libnccl",
                what.display()
            )
        })?;
    let mut code: c_int = 0;
    // SAFETY: writes one int.
    let rc = unsafe { get_version(&mut code) };
    std::mem::forget(library);
    if rc != 0 {
        return Err(format!("ncclGetVersion failed: ncclResult_t {rc}"));
    }
    Ok(NcclVersion::from_code(code))
}

/// Where the dynamic loader found libnccl, read from this process's mappings.
fn loaded_path() -> Option<PathBuf> {
    std::fs::read_to_string("/proc/self/maps")
        .ok()?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libnccl.so"))
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executable_in_a_python_environment_finds_its_site_packages() {
        let env = tempfile::tempdir().unwrap();
        let site = env.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(env.path().join("bin")).unwrap();
        assert_eq!(sites_beside(&env.path().join("bin/nccl-bench")), [site]);
        assert!(sites_beside(&env.path().join("nccl-bench")).is_empty());
        assert!(sites_beside(&env.path().join("lib/nccl-bench")).is_empty());
    }
    use std::collections::{HashMap, HashSet};

    /// A fake machine: files that exist, files that load (with a version), and what
    /// ldconfig and python report.
    #[derive(Default)]
    struct Fake {
        env: HashMap<String, String>,
        files: HashSet<PathBuf>,
        loadable: HashMap<PathBuf, i32>,
        loader_finds: Option<PathBuf>,
        ldconfig: String,
        sites: Vec<PathBuf>,
        cuda_dirs: Vec<PathBuf>,
    }

    impl Machine for Fake {
        fn env(&self, name: &str) -> Option<String> {
            self.env.get(name).cloned()
        }
        fn is_file(&self, path: &Path) -> bool {
            self.files.contains(path)
        }
        fn glob_dirs(&self, _: &Path, prefix: &str) -> Vec<PathBuf> {
            if prefix == "cuda" {
                self.cuda_dirs.clone()
            } else {
                Vec::new()
            }
        }
        fn ldconfig(&self) -> String {
            self.ldconfig.clone()
        }
        fn site_packages(&self) -> Vec<PathBuf> {
            self.sites.clone()
        }
        fn load(&self, what: &Path) -> Result<(NcclVersion, PathBuf), String> {
            if !what.is_absolute() {
                return self
                    .loader_finds
                    .clone()
                    .map(|p| (NcclVersion::from_code(22105), p))
                    .ok_or_else(|| format!("{}: cannot open shared object file", what.display()));
            }
            self.loadable
                .get(what)
                .map(|&code| (NcclVersion::from_code(code), what.to_path_buf()))
                .ok_or_else(|| "invalid ELF header".to_string())
        }
    }

    #[test]
    fn site_packages_is_the_last_resort_and_is_found() {
        let mut m = Fake::default();
        let site = PathBuf::from("/venv/lib/python3.11/site-packages");
        let lib = site.join("nvidia/nccl/lib/libnccl.so.2");
        m.sites = vec![PathBuf::from("/usr/lib/python3/dist-packages"), site];
        m.files.insert(lib.clone());
        m.loadable.insert(lib.clone(), 23203);
        let found = discover(None, &m).unwrap();
        assert_eq!(found.path, lib);
        assert_eq!(found.version.to_string(), "2.32.3");
        assert_eq!(found.how, "python3 site-packages");
        let places: Vec<&str> = found.tried.iter().map(|a| a.place.as_str()).collect();
        assert_eq!(
            places,
            [
                "dynamic loader search",
                "dynamic loader search",
                "ldconfig -p",
                "install directories",
                "python3 site-packages"
            ]
        );
    }

    #[test]
    fn ldconfig_entries_come_before_install_directories() {
        let mut m = Fake::default();
        let lib = PathBuf::from("/opt/nccl/lib/libnccl.so.2");
        m.ldconfig = format!(
            "12 libs found in cache\n\tlibnccl.so.2 (libc6,x86-64) => {}\n",
            lib.display()
        );
        m.files.insert(lib.clone());
        m.loadable.insert(lib.clone(), 21903);
        let cuda = PathBuf::from("/usr/local/cuda-12.4");
        m.cuda_dirs = vec![cuda.clone()];
        m.files.insert(cuda.join("lib64/libnccl.so.2"));
        m.loadable.insert(cuda.join("lib64/libnccl.so.2"), 22105);
        let found = discover(None, &m).unwrap();
        assert_eq!((found.path, found.how.as_str()), (lib, "ldconfig -p"));
    }

    #[test]
    fn the_loader_search_wins_when_it_finds_one() {
        let m = Fake {
            loader_finds: Some(PathBuf::from("/usr/lib/x86_64-linux-gnu/libnccl.so.2")),
            ..Fake::default()
        };
        let found = discover(None, &m).unwrap();
        assert_eq!(found.how, "dynamic loader search");
        assert!(found.tried.is_empty());
    }

    #[test]
    fn an_explicit_library_that_fails_is_an_error_not_a_fallback() {
        let mut m = Fake {
            loader_finds: Some(PathBuf::from("/usr/lib/libnccl.so.2")),
            ..Fake::default()
        };
        let bad = PathBuf::from("/tmp/libnccl.so.2");
        m.files.insert(bad.clone());
        let err = discover(Some(&bad), &m).unwrap_err();
        assert_eq!(err.tried.len(), 1);
        assert_eq!(err.tried[0].place, "--nccl-lib");
        assert!(err.tried[0].outcome.contains("invalid ELF header"));
        m.env.insert(ENV_VAR.into(), "/missing/libnccl.so.2".into());
        let err = discover(None, &m).unwrap_err();
        assert_eq!(err.tried[0].place, ENV_VAR);
        assert!(err.tried[0].outcome.contains("does not exist"));
    }

    #[test]
    fn nothing_found_lists_every_place_and_the_pip_hint() {
        let m = Fake {
            cuda_dirs: vec![PathBuf::from("/usr/local/cuda-12.4")],
            ..Fake::default()
        };
        let text = discover(None, &m).unwrap_err().to_string();
        for expected in [
            "no usable libnccl found; tried, in order:",
            "dynamic loader search: libnccl.so.2: cannot open shared object file",
            "ldconfig -p: no libnccl listed",
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2 does not exist",
            "/usr/local/cuda-12.4/lib64/libnccl.so.2 does not exist",
            "python3 site-packages: python3 not found",
            "hint: pip install nvidia-nccl-cu12",
        ] {
            assert!(
                text.contains(expected),
                "{expected:?} missing from:\n{text}"
            );
        }
    }
}
