//! NVML's calls as nccl-bench makes them, on the default machine (8 GPUs on NVLink),
//! with the faults and the time injected: healthy and throttled readings, NVLink
//! counters, XIDs delivered once.

use std::ffi::{c_char, CStr};
use std::time::{Duration, Instant};

use super::events::*;
use super::links::*;
use super::*;
use crate::fault::timed::{parse, Timed};
use crate::topo::Topology;

fn faults(specs: &[&str]) -> Vec<Timed> {
    specs.iter().map(|s| parse(s).unwrap()).collect()
}

/// Initializes NVML (each test balances it) and GPU `index`'s handle.
fn device(index: u32) -> NvmlDevice {
    // SAFETY: out-parameters are locals.
    unsafe {
        assert_eq!(nvmlInit_v2(), SUCCESS);
        let mut dev = std::ptr::null_mut();
        assert_eq!(nvmlDeviceGetHandleByIndex_v2(index, &mut dev), SUCCESS);
        dev
    }
}

/// Clocks (graphics, SM, memory), power, temperature and both throttle reasons.
fn read(dev: NvmlDevice) -> (u32, u32, u32, u32, u32, u64, u64) {
    let (mut g, mut sm, mut mem, mut mw, mut c, mut r, mut e) = (0, 0, 0, 0, 0, 0, 0);
    // SAFETY: out-parameters are locals.
    unsafe {
        assert_eq!(nvmlDeviceGetClockInfo(dev, 0, &mut g), SUCCESS);
        assert_eq!(nvmlDeviceGetClockInfo(dev, 1, &mut sm), SUCCESS);
        assert_eq!(nvmlDeviceGetClockInfo(dev, 2, &mut mem), SUCCESS);
        assert_eq!(nvmlDeviceGetPowerUsage(dev, &mut mw), SUCCESS);
        assert_eq!(nvmlDeviceGetTemperature(dev, 0, &mut c), SUCCESS);
        assert_eq!(
            nvmlDeviceGetCurrentClocksThrottleReasons(dev, &mut r),
            SUCCESS
        );
        assert_eq!(nvmlDeviceGetCurrentClocksEventReasons(dev, &mut e), SUCCESS);
    }
    (g, sm, mem, mw, c, r, e)
}

const HEALTHY_READ: (u32, u32, u32, u32, u32, u64, u64) = (1980, 1980, 2619, 400_000, 45, 0, 0);
const THROTTLED_READ: (u32, u32, u32, u32, u32, u64, u64) =
    (1275, 1275, 2619, 300_000, 89, 0x48, 0x48);

#[test]
fn every_gpu_of_the_machine_in_bus_order_with_the_drivers_memory_and_bus_ids() {
    let gpus = topo::machine_gpus();
    let dev = device(1);
    // SAFETY: out-parameters are locals; strings are NUL-terminated.
    unsafe {
        let mut count = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut count), SUCCESS);
        assert_eq!(count as usize, gpus.len());
        let mut index = 9;
        assert_eq!(nvmlDeviceGetIndex(dev, &mut index), SUCCESS);
        assert_eq!(index, 1);
        let mut none = std::ptr::null_mut();
        assert_eq!(
            nvmlDeviceGetHandleByIndex_v2(count, &mut none),
            INVALID_ARGUMENT
        );
        assert_eq!(nvmlDeviceGetIndex(none, &mut index), INVALID_ARGUMENT);
        assert_eq!(gpus[1].bus_id(), "0000:28:00.0");
        for id in [c"0000:28:00.0", c"00000000:28:00.0", c"28:00.0"] {
            let mut by_bus = std::ptr::null_mut();
            assert_eq!(
                nvmlDeviceGetHandleByPciBusId_v2(id.as_ptr(), &mut by_bus),
                SUCCESS
            );
            assert_eq!(by_bus, dev, "{id:?}");
        }
        let mut by_bus = std::ptr::null_mut();
        assert_eq!(
            nvmlDeviceGetHandleByPciBusId_v2(c"0000:99:00.0".as_ptr(), &mut by_bus),
            NOT_FOUND
        );
        assert_eq!(
            nvmlDeviceGetHandleByPciBusId_v2(c"GPU-1".as_ptr(), &mut by_bus),
            INVALID_ARGUMENT
        );
        let mut memory = NvmlMemory::default();
        assert_eq!(nvmlDeviceGetMemoryInfo(dev, &mut memory), SUCCESS);
        assert_eq!(memory.total, gpus[1].total_bytes);
        assert_eq!((memory.free, memory.used), (memory.total, 0));
        let mut text = [0 as c_char; 96];
        assert_eq!(nvmlDeviceGetUUID(dev, text.as_mut_ptr(), 96), SUCCESS);
        assert_eq!(CStr::from_ptr(text.as_ptr()).to_str(), Ok(&*gpus[1].uuid()));
        assert_eq!(
            nvmlDeviceGetName(dev, text.as_mut_ptr(), 4),
            INSUFFICIENT_SIZE
        );
        assert_eq!(nvmlSystemGetDriverVersion(text.as_mut_ptr(), 96), SUCCESS);
        assert_eq!(CStr::from_ptr(text.as_ptr()).to_str(), Ok("550.54.15"));
        assert_eq!(
            CStr::from_ptr(nvmlErrorString(TIMEOUT)).to_str(),
            Ok("Timeout")
        );
        assert_eq!(nvmlShutdown(), SUCCESS);
    }
}

#[test]
fn a_throttle_window_switches_one_gpus_readings() {
    let (dev, other) = (device(2), device(3));
    let window = faults(&["throttle@2+10/5"]);
    for (t, expected) in [
        (9.9, HEALTHY_READ),
        (10.0, THROTTLED_READ),
        (14.9, THROTTLED_READ),
        (15.0, HEALTHY_READ),
    ] {
        clock::inject(&window, t);
        assert_eq!(read(dev), expected, "GPU 2 at {t}");
        assert_eq!(read(other), HEALTHY_READ, "GPU 3 at {t}");
    }
    // SAFETY: out-parameters are locals.
    unsafe {
        let mut value = 0;
        assert_eq!(nvmlDeviceGetClockInfo(dev, 3, &mut value), NOT_SUPPORTED);
        assert_eq!(nvmlDeviceGetClockInfo(dev, 4, &mut value), INVALID_ARGUMENT);
        assert_eq!(
            nvmlDeviceGetTemperature(dev, 1, &mut value),
            INVALID_ARGUMENT
        );
        let mut ecc = 7;
        assert_eq!(nvmlDeviceGetTotalEccErrors(dev, 1, 1, &mut ecc), SUCCESS);
        assert_eq!(ecc, 0);
        assert_eq!(
            nvmlDeviceGetTotalEccErrors(dev, 2, 0, &mut ecc),
            INVALID_ARGUMENT
        );
        assert_eq!(
            nvmlDeviceGetPowerUsage(dev, std::ptr::null_mut()),
            INVALID_ARGUMENT
        );
        assert_eq!(nvmlShutdown(), SUCCESS);
        assert_eq!(nvmlShutdown(), SUCCESS);
    }
}

#[test]
fn nvlink_gpus_have_18_active_links_whose_counters_follow_the_fault() {
    assert_eq!(machine().1, Topology::NvLink, "the default topology");
    assert_eq!(Topology::NvSwitch.nvlinks(), 18);
    for pcie in [Topology::Pcie, Topology::Pcie2Switch, Topology::PcieNoP2p] {
        assert_eq!(pcie.nvlinks(), 0, "{pcie:?}: NOT_SUPPORTED");
    }
    let (gpu0, gpu3) = (device(0), device(3));
    clock::inject(&faults(&["nvlink-errors@0-3+10/5"]), 12.5);
    // SAFETY: out-parameters are locals.
    unsafe {
        let mut active = 0;
        for link in 0..18 {
            assert_eq!(nvmlDeviceGetNvLinkState(gpu0, link, &mut active), SUCCESS);
            assert_eq!(active, 1);
        }
        assert_eq!(
            nvmlDeviceGetNvLinkState(gpu0, 18, &mut active),
            INVALID_ARGUMENT
        );
        let counter = |dev, link, counter| {
            let mut value = u64::MAX;
            let rc = nvmlDeviceGetNvLinkErrorCounter(dev, link, counter, &mut value);
            (rc == SUCCESS).then_some(value).ok_or(rc)
        };
        assert_eq!(counter(gpu0, 3, DL_REPLAY), Ok(100));
        assert_eq!(counter(gpu3, 0, DL_REPLAY), Ok(100));
        assert_eq!(counter(gpu0, 3, DL_RECOVERY), Ok(1));
        for other in 2..=DL_ECC_DATA {
            assert_eq!(counter(gpu0, 3, other), Ok(0));
        }
        assert_eq!(counter(gpu0, 2, DL_REPLAY), Ok(0), "another link");
        assert_eq!(counter(gpu0, 3, 5), Err(INVALID_ARGUMENT));
        assert_eq!(counter(gpu0, 18, DL_REPLAY), Err(INVALID_ARGUMENT));
        clock::inject(&faults(&["nvlink-errors@0-3+10/5"]), 9.0);
        assert_eq!(counter(gpu0, 3, DL_REPLAY), Ok(0), "before the window");
        assert_eq!(counter(gpu0, 3, DL_RECOVERY), Ok(0));
        assert_eq!(nvmlShutdown(), SUCCESS);
        assert_eq!(nvmlShutdown(), SUCCESS);
    }
}

#[test]
fn an_xid_reaches_each_set_that_registered_its_gpu_once() {
    let (gpu1, gpu4) = (device(1), device(4));
    let xids = faults(&["xid@1+10:48", "xid@4+20"]);
    let empty = || NvmlEventData {
        device: std::ptr::null_mut(),
        eventType: 0,
        eventData: 0,
        gpuInstanceId: 0,
        computeInstanceId: 0,
    };
    // SAFETY: out-parameters are locals; sets are made here.
    unsafe {
        let (mut set, mut other, mut deaf) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        for s in [&mut set, &mut other, &mut deaf] {
            assert_eq!(nvmlEventSetCreate(s), SUCCESS);
        }
        assert_eq!(
            nvmlDeviceRegisterEvents(gpu1, XID_CRITICAL_ERROR, set),
            SUCCESS
        );
        assert_eq!(nvmlDeviceRegisterEvents(gpu1, 0x8 | 0x1, other), SUCCESS);
        assert_eq!(nvmlDeviceRegisterEvents(gpu4, 0x1, deaf), SUCCESS);
        let mut data = empty();
        clock::inject(&xids, 9.0);
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 0), TIMEOUT, "not yet");
        let waited = Instant::now();
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 30), TIMEOUT);
        assert!(waited.elapsed() >= Duration::from_millis(30));
        clock::inject(&xids, 25.0);
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 0), SUCCESS);
        assert_eq!(
            (data.device, data.eventType, data.eventData),
            (gpu1, XID_CRITICAL_ERROR, 48)
        );
        assert_eq!(
            (data.gpuInstanceId, data.computeInstanceId),
            (u32::MAX, u32::MAX)
        );
        assert_eq!(
            nvmlEventSetWait_v2(set, &mut data, 0),
            TIMEOUT,
            "once, and GPU 4 is not registered"
        );
        assert_eq!(
            nvmlEventSetWait_v2(other, &mut data, 0),
            SUCCESS,
            "each set gets its own"
        );
        assert_eq!(
            nvmlEventSetWait_v2(deaf, &mut data, 0),
            TIMEOUT,
            "not registered for XIDs"
        );
        assert_eq!(
            nvmlDeviceRegisterEvents(gpu4, XID_CRITICAL_ERROR, set),
            SUCCESS
        );
        assert_eq!(
            nvmlEventSetWait_v2(set, &mut data, 0),
            SUCCESS,
            "one due before it registered"
        );
        assert_eq!((data.device, data.eventData), (gpu4, 79));
        for s in [set, other, deaf] {
            assert_eq!(nvmlEventSetFree(s), SUCCESS);
        }
        assert_eq!(nvmlEventSetFree(set), INVALID_ARGUMENT);
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 0), INVALID_ARGUMENT);
        assert_eq!(nvmlShutdown(), SUCCESS);
        assert_eq!(nvmlShutdown(), SUCCESS);
    }
}

#[test]
fn fabric_info_is_for_nvswitch_machines_only() {
    // The default machine's GPUs are joined by NVLink bridges, not an NVSwitch fabric
    // (the `nvswitch` topology's answers are checked end to end by doctor's test).
    assert!(!machine().1.multicast());
    let dev = device(1);
    // SAFETY: out-parameters are locals or null.
    unsafe {
        let mut info = FabricInfo {
            cluster_uuid: [0; 16],
            status: UNKNOWN,
            clique_id: 7,
            state: 0,
        };
        assert_eq!(nvmlDeviceGetGpuFabricInfo(dev, &mut info), NOT_SUPPORTED);
        assert_eq!(
            nvmlDeviceGetGpuFabricInfo(dev, std::ptr::null_mut()),
            INVALID_ARGUMENT
        );
        assert_eq!(nvmlShutdown(), SUCCESS);
    }
}
