//! Active NVLinks per GPU, asked of NVML (`libnvidia-ml.so.1`, which ships with the
//! driver) through libloading: `nvmlDeviceGetNvLinkState` for each link index until
//! NVML says the index is invalid or the GPU has no NVLink. The P2P matrix cannot
//! tell NVLink from PCIe peer access; NVML can. Only called where the driver loaded.
//! NVSwitch systems also show their switches under /proc/driver/nvidia-nvswitch, and
//! NVML says whether each GPU registered with their fabric ([`fabric`]).

use std::ffi::c_void;
use std::path::Path;

use libloading::{Library, Symbol};

use crate::machine::Root;

/// `NVML_NVLINK_MAX_LINKS` of current NVML headers.
const MAX_LINKS: u32 = 18;
const NVML_SUCCESS: i32 = 0;
const NVML_ERROR_INVALID_ARGUMENT: i32 = 2;
const NVML_ERROR_NOT_SUPPORTED: i32 = 3;
const NVML_FEATURE_ENABLED: i32 = 1;

type NvmlDevice = *mut c_void;

/// Active NVLinks of each GPU, in NVML's (PCI bus) order.
pub fn active_links() -> Result<Vec<u32>, String> {
    over_gpus(|lib, dev| {
        // SAFETY: nvml.h's signature.
        let state: Symbol<unsafe extern "C" fn(NvmlDevice, u32, *mut i32) -> i32> =
            unsafe { sym(lib, b"nvmlDeviceGetNvLinkState\0") }?;
        let mut active = 0;
        for link in 0..MAX_LINKS {
            let mut enabled = 0i32;
            // SAFETY: `dev` is NVML's handle; `enabled` outlives the call.
            match unsafe { state(dev, link, &mut enabled) } {
                NVML_SUCCESS if enabled == NVML_FEATURE_ENABLED => active += 1,
                NVML_SUCCESS => {}
                NVML_ERROR_NOT_SUPPORTED | NVML_ERROR_INVALID_ARGUMENT => break,
                _ => {}
            }
        }
        Ok(active)
    })
}

/// `nvmlGpuFabricInfo_t` (nvml.h, r525 on).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawFabricInfo {
    cluster_uuid: [u8; 16],
    status: i32,
    clique_id: u32,
    state: u8,
}

/// How far a GPU got registering with the NVLink fabric of an NVSwitch machine
/// (`nvmlDeviceGetGpuFabricInfo`); `None` where NVML does not support the call for
/// it (no such fabric, or a driver before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fabric {
    /// `NVML_GPU_FABRIC_STATE_*`: 1 not started, 2 in progress, 3 completed.
    pub state: u8,
    /// The registration's NVML status, meaningful once completed (0: success).
    pub status: i32,
    pub clique: u32,
}

pub const FABRIC_NOT_STARTED: u8 = 1;
pub const FABRIC_IN_PROGRESS: u8 = 2;
pub const FABRIC_COMPLETED: u8 = 3;

/// Each GPU's fabric registration, in NVML's order.
pub fn fabric() -> Result<Vec<Option<Fabric>>, String> {
    over_gpus(|lib, dev| {
        // SAFETY: nvml.h's signature.
        let info: Symbol<unsafe extern "C" fn(NvmlDevice, *mut RawFabricInfo) -> i32> =
            unsafe { sym(lib, b"nvmlDeviceGetGpuFabricInfo\0") }?;
        let mut raw = RawFabricInfo::default();
        // SAFETY: `dev` is NVML's handle; `raw` outlives the call.
        match unsafe { info(dev, &mut raw) } {
            NVML_SUCCESS if raw.state > 0 => Ok(Some(Fabric {
                state: raw.state,
                status: raw.status,
                clique: raw.clique_id,
            })),
            NVML_SUCCESS | NVML_ERROR_NOT_SUPPORTED => Ok(None),
            rc => Err(format!(
                "nvmlDeviceGetGpuFabricInfo failed (NVML error {rc})"
            )),
        }
    })
}

/// `per_gpu` of each GPU NVML lists, in its order, between `nvmlInit` and
/// `nvmlShutdown`.
fn over_gpus<T>(
    per_gpu: impl Fn(&Library, NvmlDevice) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    // SAFETY: loading NVML runs its initializers, which have no preconditions.
    let lib = unsafe { Library::new("libnvidia-ml.so.1") }
        .map_err(|e| format!("libnvidia-ml.so.1: {e}"))?;
    // SAFETY: the signatures are NVML's public C API (nvml.h).
    unsafe {
        let init: Symbol<unsafe extern "C" fn() -> i32> = sym(&lib, b"nvmlInit_v2\0")?;
        let shutdown: Symbol<unsafe extern "C" fn() -> i32> = sym(&lib, b"nvmlShutdown\0")?;
        let count: Symbol<unsafe extern "C" fn(*mut u32) -> i32> =
            sym(&lib, b"nvmlDeviceGetCount_v2\0")?;
        let handle: Symbol<unsafe extern "C" fn(u32, *mut NvmlDevice) -> i32> =
            sym(&lib, b"nvmlDeviceGetHandleByIndex_v2\0")?;
        let rc = init();
        if rc != NVML_SUCCESS {
            return Err(format!("nvmlInit failed (NVML error {rc})"));
        }
        let result = (|| {
            let mut n = 0u32;
            let rc = count(&mut n);
            if rc != NVML_SUCCESS {
                return Err(format!("nvmlDeviceGetCount failed (NVML error {rc})"));
            }
            let mut out = Vec::with_capacity(n as usize);
            for index in 0..n {
                let mut dev: NvmlDevice = std::ptr::null_mut();
                let rc = handle(index, &mut dev);
                if rc != NVML_SUCCESS {
                    return Err(format!(
                        "nvmlDeviceGetHandleByIndex({index}) failed (NVML error {rc})"
                    ));
                }
                out.push(per_gpu(&lib, dev)?);
            }
            Ok(out)
        })();
        shutdown();
        result
    }
}

/// # Safety
/// `T` must be the symbol's real type.
unsafe fn sym<'l, T>(lib: &'l Library, name: &[u8]) -> Result<Symbol<'l, T>, String> {
    // SAFETY: the caller guarantees the type.
    unsafe { lib.get(name) }.map_err(|e| {
        let shown = String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name)).into_owned();
        format!("{shown}: {e}")
    })
}

/// NVSwitch devices the driver shows (`/proc/driver/nvidia-nvswitch/devices/*` or
/// `/dev/nvidia-nvswitch<N>`).
pub fn nvswitches(root: &Root) -> usize {
    let count = |dir: &str, keep: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(root.path(Path::new(dir)))
            .map(|d| {
                d.flatten()
                    .filter(|e| keep(&e.file_name().to_string_lossy()))
                    .count()
            })
            .unwrap_or(0)
    };
    let proc_devices = count("/proc/driver/nvidia-nvswitch/devices", &|_| true);
    let nodes = count("/dev", &|n| {
        n.strip_prefix("nvidia-nvswitch")
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    });
    proc_devices.max(nodes)
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeMachine;
    use super::*;

    #[test]
    fn nvswitches_are_counted_from_proc_or_dev() {
        assert_eq!(nvswitches(&FakeMachine::new().root()), 0);
        let m = FakeMachine::new()
            .dir("/proc/driver/nvidia-nvswitch/devices/0000:05:00.0")
            .dir("/proc/driver/nvidia-nvswitch/devices/0000:06:00.0")
            .file("/dev/nvidia-nvswitch0", "")
            .file("/dev/nvidia-nvswitchctl", "");
        assert_eq!(nvswitches(&m.root()), 2);
    }

    #[test]
    fn nvml_answers_with_one_count_per_gpu_or_says_it_is_missing() {
        // SAFETY: only tries to load the library.
        if unsafe { Library::new("libnvidia-ml.so.1") }.is_err() {
            let e = active_links().unwrap_err();
            assert!(e.starts_with("libnvidia-ml.so.1"), "{e}");
            return;
        }
        // A machine with the driver: one count per GPU the driver lists, each no
        // more than NVML's link indices.
        let links = active_links().unwrap();
        assert!(links.iter().all(|&n| n <= MAX_LINKS), "{links:?}");
        if let Ok(gpus) = std::fs::read_dir("/proc/driver/nvidia/gpus") {
            assert_eq!(links.len(), gpus.count(), "{links:?}");
        }
    }
}
