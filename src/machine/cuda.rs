//! The CUDA driver: whether its library loads (cudarc panics without it, so this is
//! asked first), and the GPU facts for the run manifest, read through the driver API
//! without creating a context (no GPU memory is taken): driver and CUDA versions, each GPU's name, PCI
//! bus id and memory, and the peer-access matrix (`cuDeviceCanAccessPeer`), which says
//! whether NCCL can use P2P between two GPUs or must fall back to SHM or the network.
//! Free memory comes from NVML (`libnvidia-ml.so.1`), which, unlike `cuMemGetInfo`,
//! needs no context and counts what other processes hold on the GPU.

use std::ffi::{c_char, c_int, CString};

use anyhow::{bail, Context, Result};
use cudarc::driver::{result, sys};

pub use crate::model::{GpuFacts, GpuInfo};

/// Turns cudarc's absence-of-driver panic into an error: ask first.
pub fn require_driver() -> Result<()> {
    // SAFETY: only tries to load the driver library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        bail!("no NVIDIA driver found (libcuda.so.1)")
    }
}

/// Whether the NVIDIA driver's library can be loaded (cudarc panics without it, so
/// this is asked before CUDA is touched).
pub fn cuda_driver() -> std::result::Result<(), String> {
    if require_driver().is_ok() {
        return Ok(());
    }
    // cudarc found no driver under any name; the loader says why for the usual one.
    // SAFETY: loading libcuda runs its initializers, which have no preconditions.
    match unsafe { libloading::Library::new("libcuda.so.1") } {
        Ok(_) => Err("cudarc cannot load the driver library".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads the facts; needs the driver library (see [`require_driver`]).
pub fn read() -> Result<GpuFacts> {
    require_driver()?;
    result::init().context("cuInit failed")?;
    let mut cuda = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut cuda) }
        .result()
        .context("cuDriverGetVersion failed")?;
    let count = result::device::get_count()
        .context("cuDeviceGetCount failed")?
        .max(0) as usize;
    let mut devices = Vec::with_capacity(count);
    let mut gpus = Vec::with_capacity(count);
    for index in 0..count {
        let dev = result::device::get(index as i32)?;
        devices.push(dev);
        let mut bus = [0 as c_char; 32];
        // SAFETY: the buffer is 32 bytes, as passed.
        unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), bus.len() as i32, dev) }.result()?;
        // SAFETY: NUL-terminated by the driver within the buffer.
        let bus_id = unsafe { std::ffi::CStr::from_ptr(bus.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        gpus.push(GpuInfo {
            index,
            free_bytes: nvml_free_bytes(&bus_id),
            name: result::device::get_name(dev)?,
            bus_id,
            // SAFETY: dev comes from cuDeviceGet.
            memory_bytes: unsafe { result::device::total_mem(dev) }? as u64,
        });
    }
    let mut p2p = vec![vec![false; count]; count];
    for (i, &a) in devices.iter().enumerate() {
        for (j, &b) in devices.iter().enumerate() {
            if i != j {
                let mut can = 0;
                // SAFETY: both devices come from cuDeviceGet.
                unsafe { sys::cuDeviceCanAccessPeer(&mut can, a, b) }.result()?;
                p2p[i][j] = can != 0;
            }
        }
    }
    Ok(GpuFacts {
        driver_version: Some(kernel_driver_version(
            &std::fs::read_to_string("/proc/driver/nvidia/version").unwrap_or_default(),
        ))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".into()),
        cuda_version: format!("{}.{}", cuda / 1000, (cuda % 1000) / 10),
        gpus,
        p2p,
    })
}

/// `nvmlMemory_t`.
#[repr(C)]
struct NvmlMemory {
    total: u64,
    free: u64,
    used: u64,
}

/// Free memory of the GPU at `bus_id` (`0000:00:06.0`), from NVML; `None` when NVML is
/// missing or says nothing (the memory check then uses the total).
fn nvml_free_bytes(bus_id: &str) -> Option<u64> {
    type Init = unsafe extern "C" fn() -> c_int;
    type ByBusId = unsafe extern "C" fn(*const c_char, *mut *mut std::ffi::c_void) -> c_int;
    type MemoryInfo = unsafe extern "C" fn(*mut std::ffi::c_void, *mut NvmlMemory) -> c_int;
    let id = CString::new(bus_id).ok()?;
    // SAFETY: loading NVML runs its initializers, which have no preconditions; the
    // symbols are used with the signatures nvml.h declares, while the library is
    // loaded; nvmlShutdown balances the successful nvmlInit_v2.
    unsafe {
        let lib = libloading::Library::new("libnvidia-ml.so.1").ok()?;
        let init: libloading::Symbol<Init> = lib.get(b"nvmlInit_v2\0").ok()?;
        let shutdown: libloading::Symbol<Init> = lib.get(b"nvmlShutdown\0").ok()?;
        let by_bus: libloading::Symbol<ByBusId> =
            lib.get(b"nvmlDeviceGetHandleByPciBusId_v2\0").ok()?;
        let info: libloading::Symbol<MemoryInfo> = lib.get(b"nvmlDeviceGetMemoryInfo\0").ok()?;
        if init() != 0 {
            return None;
        }
        let mut device = std::ptr::null_mut();
        let mut memory = NvmlMemory {
            total: 0,
            free: 0,
            used: 0,
        };
        let ok = by_bus(id.as_ptr(), &mut device) == 0 && info(device, &mut memory) == 0;
        shutdown();
        (ok && memory.total > 0).then_some(memory.free)
    }
}

/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ...` -> 550.54.15.
pub fn kernel_driver_version(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("NVRM version"))
        .and_then(|l| {
            l.split_whitespace()
                .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        })
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_from_proc() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(kernel_driver_version(text), "550.54.15");
        assert_eq!(kernel_driver_version(""), "");
    }

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            // A machine with the driver: its facts, a square P2P matrix with no GPU
            // its own peer, and a CUDA version of the form major.minor.
            let facts = read().unwrap();
            let n = facts.gpus.len();
            assert!(n > 0, "{facts:?}");
            assert_eq!(facts.p2p.len(), n, "{facts:?}");
            assert!(facts.p2p.iter().all(|row| row.len() == n), "{facts:?}");
            assert!((0..n).all(|i| !facts.p2p[i][i]), "{facts:?}");
            let (major, minor) = facts.cuda_version.split_once('.').unwrap();
            assert!(major.parse::<u32>().unwrap() >= 11, "{facts:?}");
            minor.parse::<u32>().unwrap();
            return;
        }
        let err = read().unwrap_err().to_string();
        assert_eq!(err, "no NVIDIA driver found (libcuda.so.1)");
    }
}
