//! Where the SHM transport keeps its buffers, as each release decides
//! (`transport/shm.cc`, `misc/cudawrap.cc`), for [`super::setup`]:
//! - up to 2.23.3, /dev/shm files (`ncclShmOpen`);
//! - 2.23.4: cuMem host memory when `NCCL_CUMEM_HOST_ENABLE=1` (off by default) and
//!   cuMem is on;
//! - from 2.24: cuMem host memory by default where cuMem is on and the driver is CUDA
//!   12.6 or newer (`NCCL_CUMEM_HOST_ENABLE` unset; 0 or 1 decide, from a 12.2 driver);
//! - from 2.26.3 each process first probes a cuMem host allocation; where it fails
//!   (fault `cumem-host-probe`, as in a container that hides NUMA) the process logs
//!   `cuMem host allocations do not appear to be working; falling back to a /dev/shm/
//!   based implementation...` and uses /dev/shm files. A rank on /dev/shm that imports
//!   a peer's cuMem handle reads it as a file name: `Error while attaching to shared
//!   memory segment /dev/shm/nccl-<unprintable> (size 0)` (NVIDIA/nccl PR 2388).
//!
//! Each SHM connection's buffers are logged at `NCCL_DEBUG_SUBSYS=SHM` (2.23.4+):
//! `CUMEM allocated shareable buffer %p size %zi` or `MMAP allocated shareable host
//! buffer %s size %zi ptr %p`.

use super::{Version, SYSTEM_ERROR};
use crate::fault::{self, Fault};

/// One SHM receive buffer with the default buffer sizes: a 4096 B header and the LL
/// (512 KiB), LL128 (4,800 KiB) and Simple (4 MiB) buffers, in every release since
/// 2.12 (`init.cc` computeBuffSizes); real logs show `(size 9637888)`.
pub const SEGMENT_BYTES: u64 = 9_637_888;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    CumemHost,
    DevShm,
}

/// The driver version the stand-in reports (`cuDriverGetVersion`).
fn driver() -> i32 {
    let mut v = 0;
    crate::driver::cuDriverGetVersion(&mut v);
    v
}

/// Whether release `v` would put SHM in cuMem host memory on this process, before the
/// probe: `cumem` is `NCCL_CUMEM_ENABLE`'s outcome.
fn host_enabled(v: Version, cumem: bool) -> bool {
    let set = crate::env("NCCL_CUMEM_HOST_ENABLE").and_then(|s| s.parse::<i64>().ok());
    if !cumem || v < (2, 23, 4) {
        return false;
    }
    if v < (2, 24, 0) {
        return set == Some(1);
    }
    let d = driver();
    match set {
        _ if d < 12020 => false,
        Some(n) if n != -1 => n != 0,
        _ => d >= 12060,
    }
}

/// Whether rank `rank`'s probe of cuMem host memory fails (2.26.3+).
fn probe_fails(v: Version, rank: u32) -> bool {
    v >= (2, 26, 3) && fault::active(Fault::CumemHostProbe, rank)
}

/// The backing of rank `rank`'s SHM buffers in release `v`.
pub fn backing(v: Version, cumem: bool, rank: u32) -> Backing {
    if host_enabled(v, cumem) && !probe_fails(v, rank) {
        Backing::CumemHost
    } else {
        Backing::DevShm
    }
}

/// The INFO line of a failed probe, where rank `rank` logs one (at init, once).
pub fn fallback_line(v: Version, cumem: bool, rank: u32) -> Option<&'static str> {
    (host_enabled(v, cumem) && probe_fails(v, rank)).then_some(
        "cuMem host allocations do not appear to be working; falling back to a /dev/shm/ \
         based implementation. This could be due to the container runtime disabling NUMA \
         support. To disable this warning, set NCCL_CUMEM_HOST_ENABLE=0",
    )
}

/// The SHM line of a cuMem host buffer this rank allocated (`ptr` its address).
pub fn cumem_allocated(ptr: u64) -> String {
    format!("CUMEM allocated shareable buffer {ptr:#x} size {SEGMENT_BYTES}")
}

/// The SHM line of a /dev/shm buffer this rank allocated.
pub fn mmap_allocated(name: &str, ptr: u64) -> String {
    format!("MMAP allocated shareable host buffer {name} size {SEGMENT_BYTES} ptr {ptr:#x}")
}

/// The source lines of the two WARNs of a segment NCCL could not make or attach
/// (`failed to extend`, `Error while creating/attaching to shared memory segment`)
/// from 2.22.3: `misc/shmutils.cc` up to 2.29, `os/linux.cc` from 2.30. A WARN
/// written over two lines logs the second (`__LINE__` of the macro's last line: the
/// real 2.27 logs say 129 where the statement starts at 128).
pub fn shm_open_lines(v: Version) -> (&'static str, &'static str) {
    if v >= (2, 30, 7) {
        ("os/linux.cc:795", "os/linux.cc:843")
    } else if v >= (2, 30, 0) {
        ("os/linux.cc:670", "os/linux.cc:715")
    } else if v >= (2, 29, 7) {
        ("misc/shmutils.cc:88", "misc/shmutils.cc:133")
    } else if v >= (2, 28, 0) {
        ("misc/shmutils.cc:87", "misc/shmutils.cc:132")
    } else {
        ("misc/shmutils.cc:87", "misc/shmutils.cc:129")
    }
}

/// What a rank on /dev/shm reports when it imports a peer's cuMem descriptor: the
/// handle's bytes as the name, the zeroed tail as the size (`handle` picks the
/// unprintable character); with the source line of release `v`.
pub fn mismatch_failure(v: Version, handle: u64) -> (i32, String, &'static str) {
    let garbage = char::from_u32(0x400 + (handle % 0x60) as u32).unwrap_or('\u{40c}');
    let origin = shm_open_lines(v).1;
    (
        SYSTEM_ERROR,
        format!(
            "Error while attaching to shared memory segment /dev/shm/nccl-{garbage} (size 0), \
             error: No such file or directory (2)"
        ),
        origin,
    )
}
