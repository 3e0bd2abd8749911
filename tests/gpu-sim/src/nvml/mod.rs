//! NVML (`libnvidia-ml.so.1`) for the simulated GPUs: the calls nccl-bench makes to
//! read a GPU's memory, clocks, power, temperature, throttle reasons, NVLinks and
//! their error counters, ECC counts and XID events, with nvml.h's signatures and
//! return codes. The readings are fixed healthy values, or throttled ones while a
//! timed fault says so ([`crate::fault::timed`]): a test double, it measures
//! nothing.
//!
//! As the real NVML does, it ignores `CUDA_VISIBLE_DEVICES` and lists every GPU of
//! the machine in PCI bus order, which is the order of the machine's indices
//! ([`topo::machine_gpus`]: bus ids rise with the index); the bus ids and memory
//! sizes are those the CUDA driver half reports. A device handle is the GPU's index
//! plus one, cast to a pointer. Device calls answer `NVML_ERROR_UNINITIALIZED`
//! until `nvmlInit` (counted: each needs its `nvmlShutdown`), a null out-parameter
//! or unknown handle `NVML_ERROR_INVALID_ARGUMENT`.
//!
//! Memory reads as all free: NVML in one process cannot see what the simulated GPUs
//! of other processes hold. [`links`] has the NVLink calls, [`events`] the XIDs.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use crate::fault::{clock, timed};
use crate::topo::{self, Gpu, Topology};

pub mod events;
pub mod links;
#[cfg(test)]
mod tests;

pub type NvmlReturn = c_int;
/// `nvmlDevice_t`: the GPU's index plus one.
pub type NvmlDevice = *mut c_void;

pub const SUCCESS: NvmlReturn = 0;
pub const UNINITIALIZED: NvmlReturn = 1;
pub const INVALID_ARGUMENT: NvmlReturn = 2;
pub const NOT_SUPPORTED: NvmlReturn = 3;
pub const NOT_FOUND: NvmlReturn = 6;
pub const INSUFFICIENT_SIZE: NvmlReturn = 7;
pub const TIMEOUT: NvmlReturn = 10;
pub const UNKNOWN: NvmlReturn = 999;

/// `nvmlClocksThrottleReasonHwSlowdown`.
pub const HW_SLOWDOWN: u64 = 0x8;
/// `nvmlClocksThrottleReasonHwThermalSlowdown`.
pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;

/// What a GPU's sensors read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The graphics and SM clocks.
    pub sm_mhz: u32,
    pub mem_mhz: u32,
    pub power_mw: u32,
    pub temperature_c: u32,
    /// `nvmlDeviceGetCurrentClocksThrottleReasons`' bits.
    pub reasons: u64,
}

/// An H100 SXM at work: boost clocks, below its power limit, cool.
pub const HEALTHY: Reading = Reading {
    sm_mhz: 1980,
    mem_mhz: 2619,
    power_mw: 400_000,
    temperature_c: 45,
    reasons: 0,
};

/// A throttled one: slowed down by the hardware, hot, power capped.
pub const THROTTLED: Reading = Reading {
    sm_mhz: 1275,
    mem_mhz: 2619,
    power_mw: 300_000,
    temperature_c: 89,
    reasons: HW_SLOWDOWN | HW_THERMAL_SLOWDOWN,
};

/// What GPU `gpu` reads at `t` (seconds since the epoch) under `faults`.
pub fn reading_at(faults: &[timed::Timed], gpu: usize, t: f64) -> Reading {
    if timed::throttled(faults, gpu, t) {
        THROTTLED
    } else {
        HEALTHY
    }
}

/// The driver version NVML reports (a release of CUDA 12.4's driver branch, as the
/// driver half's default `NCCL_BENCH_SIM_DRIVER`).
const DRIVER_VERSION: &str = "550.54.15";

/// `nvmlInit` calls not yet balanced by `nvmlShutdown`.
static INITS: AtomicU32 = AtomicU32::new(0);

/// The machine as NVML sees it, read once: every GPU, and how they are connected.
pub(crate) fn machine() -> &'static (Vec<Gpu>, Topology) {
    static MACHINE: OnceLock<(Vec<Gpu>, Topology)> = OnceLock::new();
    MACHINE.get_or_init(|| (topo::machine_gpus(), Topology::from_env()))
}

/// `NVML_ERROR_UNINITIALIZED` until `nvmlInit`, and after the last `nvmlShutdown`.
pub(crate) fn initialized() -> Result<(), NvmlReturn> {
    match INITS.load(Ordering::Acquire) {
        0 => Err(UNINITIALIZED),
        _ => Ok(()),
    }
}

/// The GPU a handle names (its machine index), while NVML is initialized.
pub(crate) fn gpu_of(dev: NvmlDevice) -> Result<usize, NvmlReturn> {
    initialized()?;
    (dev as usize)
        .checked_sub(1)
        .filter(|&i| i < machine().0.len())
        .ok_or(INVALID_ARGUMENT)
}

/// The handle of GPU `index`.
pub(crate) fn handle_of(index: usize) -> NvmlDevice {
    (index + 1) as NvmlDevice
}

/// Writes `v` to a caller's out-parameter.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) -> NvmlReturn {
    if p.is_null() {
        return INVALID_ARGUMENT;
    }
    p.write(v);
    SUCCESS
}

/// Answers a query about device `dev` into `out`: `f` of its machine index.
///
/// # Safety
/// As [`put`].
pub(crate) unsafe fn answer<T>(
    dev: NvmlDevice,
    out: *mut T,
    f: impl FnOnce(usize) -> Result<T, NvmlReturn>,
) -> NvmlReturn {
    match gpu_of(dev).and_then(f) {
        Ok(v) => put(out, v),
        Err(e) => e,
    }
}

/// Copies `text` and its terminating NUL into a caller's buffer of `len` bytes.
///
/// # Safety
/// `buf` is null or valid for writes of `len` bytes.
unsafe fn put_str(buf: *mut c_char, len: c_uint, text: &str) -> NvmlReturn {
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if text.len() + 1 > len as usize {
        return INSUFFICIENT_SIZE;
    }
    std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, text.len());
    *buf.add(text.len()) = 0;
    SUCCESS
}

/// What GPU `gpu` reads now.
fn reading(gpu: usize) -> Reading {
    clock::with_now(|faults, t| reading_at(faults, gpu, t))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlInit_v2() -> NvmlReturn {
    machine();
    // The epoch of a process that was given none starts here.
    clock::epoch_s();
    INITS.fetch_add(1, Ordering::AcqRel);
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn nvmlInit() -> NvmlReturn {
    nvmlInit_v2()
}

#[no_mangle]
pub unsafe extern "C" fn nvmlShutdown() -> NvmlReturn {
    match INITS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
        Ok(_) => SUCCESS,
        Err(_) => UNINITIALIZED,
    }
}

/// NVML's text for a return code; a static string, valid without `nvmlInit`.
#[no_mangle]
pub unsafe extern "C" fn nvmlErrorString(result: NvmlReturn) -> *const c_char {
    let text: &CStr = match result {
        SUCCESS => c"Success",
        UNINITIALIZED => c"Uninitialized",
        INVALID_ARGUMENT => c"Invalid Argument",
        NOT_SUPPORTED => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        NOT_FOUND => c"Not Found",
        INSUFFICIENT_SIZE => c"Insufficient Size",
        9 => c"Driver Not Loaded",
        TIMEOUT => c"Timeout",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    match initialized() {
        Ok(()) => put_str(version, length, DRIVER_VERSION),
        Err(e) => e,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> NvmlReturn {
    match initialized() {
        Ok(()) => put(count, machine().0.len() as c_uint),
        Err(e) => e,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut NvmlDevice,
) -> NvmlReturn {
    answer(handle_of(index as usize), device, |i| Ok(handle_of(i)))
}

/// `[domain:]bus:device.function`, hexadecimal, as NVML takes a bus id (its own
/// `00000000:18:00.0` and the driver's `0000:18:00.0` alike).
fn parse_bus_id(text: &str) -> Option<(u32, u32, u32, u32)> {
    let (rest, function) = text.trim().rsplit_once('.')?;
    let mut parts = rest.rsplit(':');
    let hex = |p: Option<&str>| u32::from_str_radix(p?, 16).ok();
    let device = hex(parts.next())?;
    let bus = hex(parts.next())?;
    let domain = hex(parts.next().or(Some("0")))?;
    if parts.next().is_some() {
        return None;
    }
    Some((domain, bus, device, hex(Some(function))?))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    bus_id: *const c_char,
    device: *mut NvmlDevice,
) -> NvmlReturn {
    if let Err(e) = initialized() {
        return e;
    }
    if bus_id.is_null() {
        return INVALID_ARGUMENT;
    }
    let Some(wanted) = CStr::from_ptr(bus_id).to_str().ok().and_then(parse_bus_id) else {
        return INVALID_ARGUMENT;
    };
    match machine().0.iter().find(|g| (0, g.bus, 0, 0) == wanted) {
        Some(g) => put(device, handle_of(g.index)),
        None => NOT_FOUND,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetIndex(device: NvmlDevice, index: *mut c_uint) -> NvmlReturn {
    answer(device, index, |i| Ok(i as c_uint))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: NvmlDevice,
    name: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    match gpu_of(device) {
        Ok(i) => put_str(name, length, &machine().0[i].name),
        Err(e) => e,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: NvmlDevice,
    uuid: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    match gpu_of(device) {
        Ok(i) => put_str(uuid, length, &machine().0[i].uuid()),
        Err(e) => e,
    }
}

/// `nvmlMemory_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvmlMemory {
    pub total: u64,
    pub free: u64,
    pub used: u64,
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: NvmlDevice,
    memory: *mut NvmlMemory,
) -> NvmlReturn {
    answer(device, memory, |i| {
        let total = machine().0[i].total_bytes;
        Ok(NvmlMemory {
            total,
            free: total,
            used: 0,
        })
    })
}

/// `NVML_CLOCK_GRAPHICS`, `NVML_CLOCK_SM`, `NVML_CLOCK_MEM`; `NVML_CLOCK_VIDEO` (3)
/// is not played.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: NvmlDevice,
    kind: c_int,
    mhz: *mut c_uint,
) -> NvmlReturn {
    answer(device, mhz, |i| match kind {
        0 | 1 => Ok(reading(i).sm_mhz),
        2 => Ok(reading(i).mem_mhz),
        3 => Err(NOT_SUPPORTED),
        _ => Err(INVALID_ARGUMENT),
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: NvmlDevice,
    milliwatts: *mut c_uint,
) -> NvmlReturn {
    answer(device, milliwatts, |i| Ok(reading(i).power_mw))
}

/// `NVML_TEMPERATURE_GPU` (0), the only sensor.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: NvmlDevice,
    sensor: c_int,
    celsius: *mut c_uint,
) -> NvmlReturn {
    answer(device, celsius, |i| match sensor {
        0 => Ok(reading(i).temperature_c),
        _ => Err(INVALID_ARGUMENT),
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: NvmlDevice,
    reasons: *mut c_ulonglong,
) -> NvmlReturn {
    answer(device, reasons, |i| Ok(reading(i).reasons))
}

/// The newer name of [`nvmlDeviceGetCurrentClocksThrottleReasons`] (NVML 12.2).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: NvmlDevice,
    reasons: *mut c_ulonglong,
) -> NvmlReturn {
    nvmlDeviceGetCurrentClocksThrottleReasons(device, reasons)
}

/// ECC errors: none, corrected (0) or not (1), volatile (0) or aggregate (1).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: NvmlDevice,
    error_type: c_int,
    counter_type: c_int,
    count: *mut c_ulonglong,
) -> NvmlReturn {
    answer(device, count, |_| {
        if (0..=1).contains(&error_type) && (0..=1).contains(&counter_type) {
            Ok(0)
        } else {
            Err(INVALID_ARGUMENT)
        }
    })
}
