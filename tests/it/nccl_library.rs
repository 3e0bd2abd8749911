//! The real libnccl (from the nvidia-nccl-cu12 wheel, fetched by scripts/fetch-nccl.sh)
//! through our FFI, on a machine without GPUs: what loads, what NCCL says, and how the
//! sweep refuses the NCCL backend. `scripts/test.sh` (and CI) set
//! NCCL_BENCH_TEST_NCCL_LIB; without it these tests fail unless
//! NCCL_BENCH_TEST_SKIP names `nccl` (see `nccl_bench::test_inputs`).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nccl_bench::backend::nccl::comm::NcclComm;
use nccl_bench::backend::nccl::{Nccl, NcclError};
use nccl_bench::machine::libnccl::{self, ThisMachine};
use nccl_bench::test_inputs::{need, Need};

fn library() -> Option<PathBuf> {
    need(Need::Nccl)
}

#[test]
fn version_unique_id_and_error_strings_through_our_ffi() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    let nccl = Nccl::load(&path).unwrap();
    let version = nccl.version().unwrap();
    assert_eq!(version.major, 2);
    assert!(version.minor >= 19, "{version}");
    assert_eq!(
        version.code as u32,
        version.major * 10000 + version.minor * 100 + version.patch
    );

    let a = nccl.unique_id().unwrap().to_hex();
    let b = nccl.unique_id().unwrap().to_hex();
    assert_eq!(a.len(), 256);
    assert_ne!(a, "0".repeat(256));
    assert_ne!(a, b, "two unique ids must differ");

    assert!(
        nccl.error_string(0).starts_with("no error"),
        "{}",
        nccl.error_string(0)
    );
    assert!(
        nccl.error_string(1).starts_with("unhandled cuda error"),
        "{}",
        nccl.error_string(1)
    );
    assert!(
        nccl.error_string(2).starts_with("unhandled system error"),
        "{}",
        nccl.error_string(2)
    );
    assert!(
        nccl.error_string(4).starts_with("invalid argument"),
        "{}",
        nccl.error_string(4)
    );
}

/// Every collective nccl-tests measures resolves in the real library: its own call,
/// with alltoall, gather and scatter NCCL's own from 2.28 on and grouped send/recv
/// before (as nccl-tests builds them), sendrecv always grouped.
#[test]
fn every_collective_has_its_symbols_in_the_real_library() {
    let _machine = crate::common::shared();
    use nccl_bench::backend::nccl::Runs;
    use nccl_bench::ops::collective::Collective;
    let Some(path) = library() else { return };
    let nccl = Nccl::load(&path).unwrap();
    let version = nccl.version().unwrap();
    let own_since_2_28 = if (version.major, version.minor) >= (2, 28) {
        Runs::Native
    } else {
        Runs::Grouped
    };
    for c in Collective::ALL {
        let want = match c {
            Collective::SendRecv => Runs::Grouped,
            Collective::AllToAll | Collective::Gather | Collective::Scatter => own_since_2_28,
            _ => Runs::Native,
        };
        assert_eq!(nccl.runs(c), want, "{c} in NCCL {version}");
    }
    // Every registration's calls resolve too (the wheel is 2.27 or newer), so the
    // names in `Registration::calls` are NCCL's.
    use nccl_bench::nccl::register::Registration;
    assert!((version.major, version.minor) >= (2, 27), "{version}");
    for r in Registration::ALL {
        assert_eq!(nccl.lacks(r), Vec::<&str>::new(), "{r} in NCCL {version}");
    }
}

#[test]
fn communicator_init_without_a_gpu_fails_with_nccls_own_words() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    if nccl_bench::machine::cuda::cuda_driver().is_ok() {
        // A machine with a driver: the positive path instead.
        common::one_rank_all_reduce_checks_out(&path);
        return;
    }
    let nccl = Arc::new(Nccl::load(&path).unwrap());
    let id = nccl.unique_id().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let err = NcclComm::init(nccl.clone(), 1, &id, 0, deadline)
        .err()
        .expect("init must fail without a GPU");
    match &err {
        NcclError::Call {
            call,
            code,
            name,
            text,
            last_error,
        } => {
            assert_eq!(*call, "ncclCommInitRank");
            assert_eq!(*code, 1);
            assert_eq!(*name, "ncclUnhandledCudaError");
            assert!(text.starts_with("unhandled cuda error"), "{text}");
            let last = last_error.as_deref().unwrap_or("");
            assert!(last.contains("Cuda failure"), "{err}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn discovery_finds_the_explicit_library_and_reports_its_version() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    let found = libnccl::discover(Some(&path), &ThisMachine).unwrap();
    assert_eq!(found.path, path);
    assert_eq!(found.how, "--nccl-lib");
    assert_eq!(found.version.major, 2);
}

#[test]
fn sweep_with_the_nccl_backend_and_no_gpu_is_a_clear_exit_2() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    if nccl_bench::machine::cuda::cuda_driver().is_ok() {
        // A machine with a driver: the positive path instead.
        common::one_gpu_nccl_sweep_is_ok(&path);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = std::process::Command::new(common::bin())
        .args(["sweep", "--backend", "nccl", "--nccl-lib"])
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--shm-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.starts_with("error: no NVIDIA driver found (libcuda.so.1"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!out.exists(), "nothing written");
    let marker = tmp.path().to_string_lossy().into_owned();
    assert!(
        common::processes_mentioning(&marker).is_empty(),
        "leftover processes"
    );
}

#[test]
fn an_nccl_worker_without_a_gpu_reports_over_the_protocol() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    if nccl_bench::machine::cuda::cuda_driver().is_ok() {
        // A machine with a driver: the positive path instead.
        common::one_nccl_worker_gets_ready(&path);
        return;
    }
    let o = common::one_nccl_worker(&path);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["event"], "hello");
    assert_eq!(events[1]["event"], "unique_id");
    let id = events[1]["id"].as_str().unwrap();
    assert_eq!(id.len(), 256, "NCCL's 128-byte unique id in hex");
    assert_eq!(events[2]["event"], "error");
    assert_eq!(
        events[2]["message"],
        "communicator initialization failed: no NVIDIA driver found (libcuda.so.1)"
    );
}

#[test]
fn the_init_preflight_is_one_line_with_a_hint() {
    let _machine = crate::common::shared();
    let Some(path) = library() else { return };
    let exe = common::bin();
    let target = nccl_bench::sweep::preflight::Target {
        exe: &exe,
        nccl_lib: &path,
        device: 0,
    };
    if nccl_bench::machine::cuda::cuda_driver().is_ok() {
        // A machine with a driver: one rank initializes within the time allowed.
        nccl_bench::sweep::preflight::check_nccl_init(&target, Duration::from_secs(60)).unwrap();
        return;
    }
    let err = nccl_bench::sweep::preflight::check_nccl_init(&target, Duration::from_secs(60))
        .expect_err("no GPU here")
        .to_string();
    let expected = format!(
        "NCCL cannot initialize even one rank on GPU 0 with {}: communicator initialization failed: no NVIDIA driver found (libcuda.so.1); hint: run `nccl-bench doctor`",
        path.display()
    );
    assert!(err.starts_with(&expected), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let scratch = std::env::temp_dir().join(format!("nccl-bench-preflight-{}", std::process::id()));
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}

/// A machine whose file system is a temporary tree: absolute paths are looked up
/// under `root`, and libraries are really loaded from there.
struct Tree {
    root: tempfile::TempDir,
}

impl Tree {
    fn at(&self, path: &std::path::Path) -> PathBuf {
        self.root
            .path()
            .join(path.strip_prefix("/").unwrap_or(path))
    }
}

impl libnccl::Machine for Tree {
    fn env(&self, _: &str) -> Option<String> {
        None
    }
    fn is_file(&self, path: &std::path::Path) -> bool {
        self.at(path).is_file()
    }
    fn glob_dirs(&self, parent: &std::path::Path, prefix: &str) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.at(parent))
            .map(|it| {
                it.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                    .map(|e| parent.join(e.file_name()))
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }
    fn ldconfig(&self) -> String {
        String::new()
    }
    fn site_packages(&self) -> Vec<PathBuf> {
        vec![PathBuf::from("/venv/lib/python3.11/site-packages")]
    }
    fn load(
        &self,
        what: &std::path::Path,
    ) -> Result<(nccl_bench::nccl::NcclVersion, PathBuf), String> {
        if !what.is_absolute() {
            return Err(format!(
                "{}: cannot open shared object file",
                what.display()
            ));
        }
        let nccl = Nccl::load(&self.at(what)).map_err(|e| e.to_string())?;
        Ok((
            nccl.version().map_err(|e| e.to_string())?,
            what.to_path_buf(),
        ))
    }
}

#[test]
fn discovery_in_a_tree_skips_a_broken_library_and_finds_site_packages() {
    let _machine = crate::common::shared();
    let Some(real) = library() else { return };
    let tree = Tree {
        root: tempfile::tempdir().unwrap(),
    };
    let broken = tree.at(std::path::Path::new(
        "/usr/local/cuda-12.4/lib64/libnccl.so.2",
    ));
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, b"not an ELF file").unwrap();
    let site = PathBuf::from("/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
    std::fs::create_dir_all(tree.at(&site).parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, tree.at(&site)).unwrap();

    let found = libnccl::discover(None, &tree).unwrap();
    assert_eq!(found.path, site);
    assert_eq!(found.how, "python3 site-packages");
    assert_eq!(found.version.major, 2);
    let cuda = found
        .tried
        .iter()
        .find(|a| a.outcome.contains("cuda-12.4"))
        .expect("the broken library is listed");
    assert_eq!(cuda.place, "install directories");
    assert!(cuda.outcome.contains("cannot load"), "{cuda:?}");

    std::fs::remove_file(tree.at(&site)).unwrap();
    let text = libnccl::discover(None, &tree).unwrap_err().to_string();
    assert!(text.contains("python3 site-packages: /venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2 does not exist"), "{text}");
    assert!(
        text.contains("hint: pip install nvidia-nccl-cu12"),
        "{text}"
    );
}
