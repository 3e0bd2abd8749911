//! `nccl-bench doctor`: checks of the machine NCCL is about to run on, each with a
//! status, the value measured and a one-line fix ([`Check`], a record of the run's
//! manifest, so `model` owns it). This module owns the report and the order of the checks; each check lives in its own file and reads the machine
//! only through a [`Root`], so that tests can build fake machines in a directory.
//!
//! | id              | title             | what it looks at                                            |
//! |-----------------|-------------------|-------------------------------------------------------------|
//! | `shm.size`      | /dev/shm          | size and free space vs NCCL's SHM segments for N local ranks |
//! | `shm.leftovers` | Leftover segments | `nccl-*` files in /dev/shm, who maps or holds them (`--clean`) |
//! | `container`     | Container         | Docker/Podman/Kubernetes markers, IPC namespace              |
//! | `nccl.env`      | NCCL environment  | `NCCL_*` in the environment and nccl.conf files              |
//! | `net.socket`    | Socket interfaces | interfaces, addresses, what `NCCL_SOCKET_IFNAME` selects     |
//! | `net.ib`        | InfiniBand        | IB/RoCE ports, `NCCL_IB_HCA`, `ulimit -l`, /dev/infiniband   |
//! | `gpu`           | GPUs              | NVIDIA GPUs, driver, P2P matrix, NVLink                      |
//! | `nccl.lib`      | libnccl           | which libnccl `sweep` would load, and its version            |
//! | `counters`      | Error counters    | GPU throttle reasons, NVLink/ECC/XID, IB port and NIC errors  |
//! | `fabric`        | NVLink fabric     | each GPU's registration with an NVSwitch fabric (NVML)        |
//!
//! # JSON output (`--json`), schema 1
//!
//! ```json
//! {
//!   "schema": 1,
//!   "host": "node-17",
//!   "checks": [
//!     {
//!       "id": "shm.size",
//!       "title": "/dev/shm",
//!       "status": "fail",
//!       "value": "64.0 MiB free of 64.0 MiB; need 147.1 MiB for 8 local ranks",
//!       "fix": "Give /dev/shm more room: `docker run --shm-size=1g ...` ...",
//!       "details": ["need = 9637888 B segment x 2 channels x ...", "..."]
//!     }
//!   ],
//!   "summary": { "ok": 6, "warn": 1, "fail": 1 }
//! }
//! ```
//!
//! - `schema`: 1; a new key may be added without changing it, a key is never renamed
//!   or removed without raising it.
//! - `checks`: in the order of the table above (`quick_checks` returns a subset).
//!   `id` and `title` are stable; `status` is `ok`, `warn` or `fail`; `value` is the
//!   measured value in words; `fix` is one line or `null` when there is nothing to
//!   fix; `details` are the lines behind the value (formula, assumptions, one line per
//!   interface, segment or setting), possibly empty.
//! - `summary`: the number of checks with each status. The exit status is 1 when
//!   `fail` is not 0, else 0.

mod advice;
mod container;
mod counters;
mod fabric;
mod gpu;
mod infiniband;
mod nccl_env;
pub mod network;
mod nvlink;
mod render;
mod segments;
mod settings;
mod shm;

pub use shm::Sizing;

#[cfg(test)]
mod fake;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::machine::{FsSpace, IfAddr, Memlock, Root};
pub use crate::model::{Check, Status};
pub use render::{render_json, render_text};

/// The version of the JSON document `--json` prints.
pub const SCHEMA_VERSION: u32 = 1;

/// How many checks came out with each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
}

impl Summary {
    pub fn of(checks: &[Check]) -> Summary {
        let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
        Summary {
            ok: count(Status::Ok),
            warn: count(Status::Warn),
            fail: count(Status::Fail),
        }
    }
}

/// Everything `doctor` found: the JSON document of `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub schema: u32,
    pub host: String,
    pub checks: Vec<Check>,
    pub summary: Summary,
}

impl Report {
    fn new(host: &str, checks: Vec<Check>) -> Report {
        Report {
            schema: SCHEMA_VERSION,
            host: host.to_string(),
            summary: Summary::of(&checks),
            checks,
        }
    }

    /// 1 when any check failed, else 0.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.summary.fail > 0)
    }
}

/// What the full set of checks is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Local ranks (GPUs of one node) to size /dev/shm for.
    pub local_ranks: u32,
    /// The shared-memory directory, as a path on the machine (under the root).
    pub shm_dir: PathBuf,
    /// Remove leftover `nccl-*` segments no live process uses.
    pub clean: bool,
    /// An explicit libnccl, as `sweep --nccl-lib` takes it.
    pub nccl_lib: Option<PathBuf>,
}

/// The checks that are fast and need no GPU: /dev/shm size, leftover segments (never
/// removed here), NCCL environment, socket interfaces and InfiniBand. `sweep` stores
/// them in its manifest.
pub fn quick_checks(
    root: &Root,
    shm_dir: &Path,
    local_ranks: u32,
    sizing: shm::Sizing,
) -> Vec<Check> {
    let settings = settings::Settings::read(root);
    let ib = infiniband::IbPorts::read(root);
    let leftovers = segments::Leftovers::scan(root, shm_dir);
    vec![
        shm::check(
            root,
            shm_dir,
            local_ranks,
            sizing,
            &settings,
            &leftovers,
            None,
        ),
        leftovers.check(shm_dir),
        settings.check(&advice::Facts::quick(&ib)),
        network::check(root, &settings),
        ib.check(root, &settings),
    ]
}

/// Every check, in the documented order. With `clean`, leftover segments are removed
/// before /dev/shm is measured, so that its free space counts what was freed.
pub fn run_checks(root: &Root, options: &Options) -> Report {
    let settings = settings::Settings::read(root);
    let ib = infiniband::IbPorts::read(root);
    let mut leftovers = segments::Leftovers::scan(root, &options.shm_dir);
    if options.clean {
        leftovers.clean(root);
    }
    let gpus = gpu::GpuSurvey::probe(root);
    let facts = advice::Facts {
        ib_ports: ib.active_names(),
        p2p: gpus.p2p_summary(),
    };
    // Where SHM keeps its buffers with this library, driver and settings.
    let cumem_host = gpu::library_version(root, options.nccl_lib.as_deref())
        .zip(gpus.cuda_driver())
        .and_then(|(version, driver)| {
            crate::nccl::shm::cumem_host_reason(
                version,
                driver,
                settings.effective("NCCL_CUMEM_ENABLE"),
                settings.effective("NCCL_CUMEM_HOST_ENABLE"),
            )
        });
    let checks = vec![
        shm::where_shm_lives(
            shm::check(
                root,
                &options.shm_dir,
                options.local_ranks,
                shm::Sizing::Nccl,
                &settings,
                &leftovers,
                facts.p2p.as_ref(),
            ),
            cumem_host,
        ),
        leftovers.check(&options.shm_dir),
        container::check(root, &options.shm_dir),
        settings.check(&facts),
        network::check(root, &settings),
        ib.check(root, &settings),
        gpus.check(options.local_ranks),
        gpu::library_check(root, options.nccl_lib.as_deref(), gpus.has_gpus()),
        // NVML is asked even where no GPU showed: it answers for itself.
        counters::check(root, true),
        fabric::check(root),
    ];
    Report::new(root.hostname(), checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_serialize_lowercase_and_order_by_severity() {
        assert_eq!(serde_json::to_string(&Status::Warn).unwrap(), "\"warn\"");
        assert!(Status::Fail > Status::Warn && Status::Warn > Status::Ok);
        let checks = vec![
            Check::new("a", "A", Status::Ok, "fine"),
            Check::new("b", "B", Status::Fail, "broken").with_fix("mend it"),
        ];
        let report = Report::new("h", checks);
        assert_eq!(
            report.summary,
            Summary {
                ok: 1,
                warn: 0,
                fail: 1
            }
        );
        assert_eq!(report.exit_code(), 1);
        let back: Report = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn quick_checks_are_the_gpu_free_subset_and_never_remove_anything() {
        let m = fake::FakeMachine::new()
            .dir("/dev/shm")
            .dir("/proc")
            .space("/dev/shm", 64 << 20, 64 << 20)
            .aged_file(
                "/dev/shm/nccl-Orphan",
                10,
                std::time::Duration::from_secs(7200),
            )
            .interface("ens5", "up", "0x1003")
            .addresses("ens5 10.0.0.5\n");
        let root = m.root();
        let checks = quick_checks(&root, Path::new("/dev/shm"), 8, shm::Sizing::Nccl);
        let ids: Vec<&str> = checks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "shm.size",
                "shm.leftovers",
                "nccl.env",
                "net.socket",
                "net.ib"
            ]
        );
        assert_eq!(checks[0].status, Status::Fail);
        assert_eq!(checks[1].status, Status::Warn);
        assert!(m.path("/dev/shm/nccl-Orphan").exists());

        let options = Options {
            local_ranks: 8,
            shm_dir: PathBuf::from("/dev/shm"),
            clean: true,
            nccl_lib: None,
        };
        let report = run_checks(&root, &options);
        let ids: Vec<&str> = report.checks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "shm.size",
                "shm.leftovers",
                "container",
                "nccl.env",
                "net.socket",
                "net.ib",
                "gpu",
                "nccl.lib",
                "counters",
                "fabric"
            ]
        );
        assert!(!m.path("/dev/shm/nccl-Orphan").exists());
        assert_eq!(report.exit_code(), 1);
    }
}
