//! NVML's NVLink calls: each GPU of an NVLink topology (`nvlink`, `nvswitch`) has
//! [`crate::topo::NVLINKS_PER_GPU`] links, all active; a GPU on PCIe has none and answers
//! `NVML_ERROR_NOT_SUPPORTED`, and a link index past the last
//! `NVML_ERROR_INVALID_ARGUMENT`, which is where a caller that loops over link
//! indices stops. Error counters are zero but for the `nvlink-errors` fault's
//! replays and recoveries ([`timed::replays`]): GPU a's link to GPU b is its link
//! `b % 18`. On an NVSwitch (`nvswitch`) every GPU has registered with the NVLink
//! fabric (`nvmlDeviceGetGpuFabricInfo`: completed, success, clique 0) but for those of
//! the `fabric-incomplete` fault, whose registration is still in progress, as while
//! Fabric Manager is not running; elsewhere the call is not supported.

use std::ffi::{c_int, c_uint, c_ulonglong};

use super::{answer, machine, NvmlDevice, NvmlReturn, INVALID_ARGUMENT, NOT_SUPPORTED, SUCCESS};
use crate::fault::{self, clock, timed, Fault};

/// `nvmlGpuFabricInfo_t` (nvml.h): the fabric's cluster, the registration's status
/// (valid once completed), the GPU's clique and the registration's state.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricInfo {
    pub cluster_uuid: [u8; 16],
    pub status: NvmlReturn,
    pub clique_id: c_uint,
    pub state: u8,
}

/// `NVML_GPU_FABRIC_STATE_IN_PROGRESS` and `_COMPLETED`.
pub const FABRIC_IN_PROGRESS: u8 = 2;
pub const FABRIC_COMPLETED: u8 = 3;

/// `NVML_NVLINK_ERROR_DL_REPLAY`.
pub const DL_REPLAY: c_int = 0;
/// `NVML_NVLINK_ERROR_DL_RECOVERY`.
pub const DL_RECOVERY: c_int = 1;
/// `NVML_NVLINK_ERROR_DL_ECC_DATA`, the last counter (CRC_FLIT 2, CRC_DATA 3 between).
pub const DL_ECC_DATA: c_int = 4;

/// `NVML_FEATURE_ENABLED`.
const ENABLED: c_int = 1;

/// Link `link` of a GPU, where the machine's GPUs have it.
fn check_link(link: c_uint) -> Result<usize, NvmlReturn> {
    match machine().1.nvlinks() {
        0 => Err(NOT_SUPPORTED),
        n if (link as usize) < n => Ok(link as usize),
        _ => Err(INVALID_ARGUMENT),
    }
}

/// The value of counter `counter` of link `link` of GPU `gpu` at `t` under
/// `faults`.
pub fn counter_at(
    faults: &[timed::Timed],
    gpu: usize,
    link: usize,
    counter: c_int,
    t: f64,
) -> Result<u64, NvmlReturn> {
    match counter {
        DL_REPLAY => Ok(timed::replays(faults, gpu, link, t)),
        DL_RECOVERY => Ok(timed::recoveries(faults, gpu, link, t)),
        2..=DL_ECC_DATA => Ok(0),
        _ => Err(INVALID_ARGUMENT),
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: NvmlDevice,
    link: c_uint,
    is_active: *mut c_int,
) -> NvmlReturn {
    answer(device, is_active, |_| check_link(link).map(|_| ENABLED))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkErrorCounter(
    device: NvmlDevice,
    link: c_uint,
    counter: c_int,
    value: *mut c_ulonglong,
) -> NvmlReturn {
    answer(device, value, |gpu| {
        let link = check_link(link)?;
        clock::with_now(|faults, t| counter_at(faults, gpu, link, counter, t))
    })
}

/// # Safety
/// `info` is null or valid for a write of [`FabricInfo`].
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfo(
    device: NvmlDevice,
    info: *mut FabricInfo,
) -> NvmlReturn {
    if info.is_null() {
        return INVALID_ARGUMENT;
    }
    answer(device, info, |gpu| {
        if !machine().1.multicast() {
            return Err(NOT_SUPPORTED);
        }
        let registered = !fault::active(Fault::FabricIncomplete, gpu as u32);
        Ok(FabricInfo {
            cluster_uuid: [0x5a; 16],
            status: SUCCESS,
            clique_id: 0,
            state: if registered {
                FABRIC_COMPLETED
            } else {
                FABRIC_IN_PROGRESS
            },
        })
    })
}
