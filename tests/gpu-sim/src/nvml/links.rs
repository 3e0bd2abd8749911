//! NVML's NVLink calls: each GPU of an NVLink topology (`nvlink`, `nvswitch`) has
//! [`crate::topo::NVLINKS_PER_GPU`] links, all active; a GPU on PCIe has none and answers
//! `NVML_ERROR_NOT_SUPPORTED`, and a link index past the last
//! `NVML_ERROR_INVALID_ARGUMENT`, which is where a caller that loops over link
//! indices stops. Error counters are zero but for the `nvlink-errors` fault's
//! replays and recoveries ([`timed::replays`]): GPU a's link to GPU b is its link
//! `b % 18`.

use std::ffi::{c_int, c_uint, c_ulonglong};

use super::{answer, machine, NvmlDevice, NvmlReturn, INVALID_ARGUMENT, NOT_SUPPORTED};
use crate::fault::{clock, timed};

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
