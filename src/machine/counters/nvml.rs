//! The GPU counters NVML (`libnvidia-ml.so.1`, loaded with libloading) reports, read
//! for every GPU in NVML's (PCI bus) order: SM clock, power, temperature, the clock
//! throttle reasons, aggregate ECC errors, XID events (an event set polled without
//! waiting), and per NVLink its state and DL error counters (replay, recovery, CRC).
//! A call NVML does not support on a GPU is left out, never an error.

use std::ffi::c_void;

use libloading::Library;

use super::reading::{Kind, Reading};

const SUCCESS: i32 = 0;
const ERROR_NOT_SUPPORTED: i32 = 3;
const ERROR_INVALID_ARGUMENT: i32 = 2;
const CLOCK_SM: i32 = 1;
const TEMPERATURE_GPU: i32 = 0;
const EVENT_XID: u64 = 0x8;
/// `NVML_NVLINK_MAX_LINKS` of current NVML headers.
const MAX_LINKS: u32 = 18;

/// The throttle reasons a soak explains dips with, by bit (nvml.h's
/// `nvmlClocksThrottleReason*`), with their counter names and words.
pub const THROTTLE_REASONS: [(u64, &str, &str); 5] = [
    (0x4, "throttle.sw_power_cap", "software power cap"),
    (0x8, "throttle.hw_slowdown", "HW slowdown"),
    (0x20, "throttle.sw_thermal", "software thermal slowdown"),
    (0x40, "throttle.hw_thermal", "HW thermal slowdown"),
    (0x80, "throttle.hw_power_brake", "HW power brake"),
];

/// The NVLink DL error counters (`nvmlNvLinkErrorCounter_t`) with their names.
const NVLINK_COUNTERS: [(i32, &str); 4] = [
    (0, "nvlink.replay"),
    (1, "nvlink.recovery"),
    (2, "nvlink.crc_flit"),
    (3, "nvlink.crc_data"),
];

type Device = *mut c_void;

/// `nvmlEventData_t`.
#[repr(C)]
struct EventData {
    device: Device,
    event_type: u64,
    event_data: u64,
    gpu_instance_id: u32,
    compute_instance_id: u32,
}

type Fn0 = unsafe extern "C" fn() -> i32;
type GetU32 = unsafe extern "C" fn(Device, *mut u32) -> i32;
type GetTyped = unsafe extern "C" fn(Device, i32, *mut u32) -> i32;
type GetU64 = unsafe extern "C" fn(Device, *mut u64) -> i32;
type LinkState = unsafe extern "C" fn(Device, u32, *mut i32) -> i32;
type LinkCounter = unsafe extern "C" fn(Device, u32, i32, *mut u64) -> i32;
type Ecc = unsafe extern "C" fn(Device, i32, i32, *mut u64) -> i32;
type SetCreate = unsafe extern "C" fn(*mut *mut c_void) -> i32;
type Register = unsafe extern "C" fn(Device, u64, *mut c_void) -> i32;
type SetWait = unsafe extern "C" fn(*mut c_void, *mut EventData, u32) -> i32;

/// NVML, initialised, with the GPUs' handles; shut down when dropped.
pub struct Nvml {
    /// The GPUs read: NVML's index (nvidia-smi's numbering) and handle.
    devices: Vec<(usize, Device)>,
    /// Links NVML answered for, per GPU (found at the first read).
    links: Vec<u32>,
    events: Option<*mut c_void>,
    xids: Vec<(u64, u64)>,
    /// The PCI bus ids asked for that NVML could not open (a device cgroup that
    /// hides the GPU from this process): not read.
    pub unseen: Vec<String>,
    calls: Calls,
    _lib: Library,
}

struct Calls {
    shutdown: Fn0,
    clock: GetTyped,
    power: GetU32,
    temperature: GetTyped,
    throttle: GetU64,
    link_state: LinkState,
    link_counter: Option<LinkCounter>,
    ecc: Option<Ecc>,
    wait: Option<SetWait>,
    free: Option<SetFree>,
    index: Option<GetU32>,
}

// SAFETY: NVML is thread-safe (nvml.h); the handles are only used by the thread that
// owns the `Nvml`, which may be another than the one that made it.
unsafe impl Send for Nvml {}

impl Nvml {
    /// Loads and initialises NVML; an error says why not (no driver, no library).
    /// With `keep` (PCI bus ids), only those GPUs are read: NVML lists every GPU
    /// of the machine, whatever `CUDA_VISIBLE_DEVICES` says.
    pub fn open(keep: Option<&[String]>) -> Result<Nvml, String> {
        // SAFETY: loading NVML runs its initializers, which have no preconditions;
        // every symbol is taken with the signature nvml.h declares and only used
        // while `_lib` (kept in the value) is loaded.
        unsafe {
            let lib =
                Library::new("libnvidia-ml.so.1").map_err(|e| format!("libnvidia-ml.so.1: {e}"))?;
            let init: Fn0 = get(&lib, b"nvmlInit_v2\0")?;
            let count: GetU32Plain = get(&lib, b"nvmlDeviceGetCount_v2\0")?;
            let handle: Handle = get(&lib, b"nvmlDeviceGetHandleByIndex_v2\0")?;
            let calls = Calls {
                shutdown: get(&lib, b"nvmlShutdown\0")?,
                clock: get(&lib, b"nvmlDeviceGetClockInfo\0")?,
                power: get(&lib, b"nvmlDeviceGetPowerUsage\0")?,
                temperature: get(&lib, b"nvmlDeviceGetTemperature\0")?,
                throttle: get(&lib, b"nvmlDeviceGetCurrentClocksEventReasons\0")
                    .or_else(|_| get(&lib, b"nvmlDeviceGetCurrentClocksThrottleReasons\0"))?,
                link_state: get(&lib, b"nvmlDeviceGetNvLinkState\0")?,
                link_counter: get(&lib, b"nvmlDeviceGetNvLinkErrorCounter\0").ok(),
                ecc: get(&lib, b"nvmlDeviceGetTotalEccErrors\0").ok(),
                wait: get(&lib, b"nvmlEventSetWait_v2\0").ok(),
                free: get(&lib, b"nvmlEventSetFree\0").ok(),
                index: get(&lib, b"nvmlDeviceGetIndex\0").ok(),
            };
            let rc = init();
            if rc != SUCCESS {
                return Err(format!("nvmlInit failed (NVML error {rc})"));
            }
            let mut n = 0u32;
            if count(&mut n) != SUCCESS {
                (calls.shutdown)();
                return Err("nvmlDeviceGetCount failed".into());
            }
            let mut devices = Vec::new();
            for i in 0..n {
                let mut d: Device = std::ptr::null_mut();
                if handle(i, &mut d) == SUCCESS {
                    devices.push((i as usize, d));
                }
            }
            let by_bus: Result<ByBusId, _> = get(&lib, b"nvmlDeviceGetHandleByPciBusId_v2\0");
            let mut unseen = Vec::new();
            if let (Some(keep), Ok(by_bus)) = (keep, by_bus) {
                let mut wanted: Vec<Device> = Vec::new();
                for id in keep {
                    let mut d: Device = std::ptr::null_mut();
                    match std::ffi::CString::new(id.as_str()) {
                        Ok(c) if by_bus(c.as_ptr(), &mut d) == SUCCESS => wanted.push(d),
                        _ => unseen.push(id.clone()),
                    }
                }
                // Where no bus id matches (ids written differently), all are read.
                if wanted.is_empty() {
                    unseen.clear();
                } else {
                    devices.retain(|(_, d)| wanted.contains(d));
                }
            }
            let create: Result<SetCreate, _> = get(&lib, b"nvmlEventSetCreate\0");
            let register: Result<Register, _> = get(&lib, b"nvmlDeviceRegisterEvents\0");
            let events = match (create, register) {
                (Ok(create), Ok(register)) => {
                    let mut set: *mut c_void = std::ptr::null_mut();
                    (create(&mut set) == SUCCESS).then(|| {
                        for (_, d) in &devices {
                            register(*d, EVENT_XID, set);
                        }
                        set
                    })
                }
                _ => None,
            };
            Ok(Nvml {
                links: vec![MAX_LINKS; devices.len()],
                devices,
                events,
                xids: Vec::new(),
                unseen,
                calls,
                _lib: lib,
            })
        }
    }

    /// How many GPUs NVML shows.
    pub fn gpus(&self) -> usize {
        self.devices.len()
    }

    /// Every counter of every GPU now.
    pub fn read(&mut self) -> Vec<Reading> {
        self.poll_xids();
        let mut out = Vec::new();
        for (slot, &(i, d)) in self.devices.iter().enumerate() {
            let gpu = format!("gpu{i}");
            let mut push = |source: &str, counter: &str, value: f64, kind| {
                out.push(Reading::new(source, counter, value, kind));
            };
            let c = &self.calls;
            // SAFETY: `d` is a handle NVML gave, used with nvml.h's signatures while
            // NVML is initialised.
            unsafe {
                let mut v = 0u32;
                if (c.clock)(d, CLOCK_SM, &mut v) == SUCCESS {
                    push(&gpu, "sm_clock_mhz", f64::from(v), Kind::Gauge);
                }
                if (c.power)(d, &mut v) == SUCCESS {
                    push(&gpu, "power_w", f64::from(v) / 1000.0, Kind::Gauge);
                }
                if (c.temperature)(d, TEMPERATURE_GPU, &mut v) == SUCCESS {
                    push(&gpu, "temperature_c", f64::from(v), Kind::Gauge);
                }
                let mut reasons = 0u64;
                if (c.throttle)(d, &mut reasons) == SUCCESS {
                    for (bit, name, _) in THROTTLE_REASONS {
                        push(
                            &gpu,
                            name,
                            f64::from(u8::from(reasons & bit != 0)),
                            Kind::Flag,
                        );
                    }
                }
                if let Some(ecc) = c.ecc {
                    for (kind, name) in [(0, "ecc.corrected"), (1, "ecc.uncorrected")] {
                        let mut n = 0u64;
                        // Aggregate (1): since the counters were last cleared.
                        if ecc(d, kind, 1, &mut n) == SUCCESS {
                            push(&gpu, name, n as f64, Kind::Count);
                        }
                    }
                }
                let mut xids = self.xids.iter().filter(|(g, _)| *g == i as u64);
                push(&gpu, "xid.events", xids.clone().count() as f64, Kind::Count);
                if let Some((_, code)) = xids.next_back() {
                    push(&gpu, "xid.last", *code as f64, Kind::Gauge);
                }
                for link in 0..self.links[slot] {
                    let mut active = 0i32;
                    match (c.link_state)(d, link, &mut active) {
                        SUCCESS => {}
                        // Past the GPU's last link, or a GPU without NVLink.
                        ERROR_INVALID_ARGUMENT => {
                            self.links[slot] = link;
                            break;
                        }
                        ERROR_NOT_SUPPORTED if link == 0 => {
                            self.links[slot] = 0;
                            break;
                        }
                        // A link that is off says so and the next may not be.
                        _ => continue,
                    }
                    let source = format!("{gpu}.nvlink{link}");
                    push(&source, "nvlink.active", f64::from(active), Kind::Gauge);
                    if let Some(counter) = c.link_counter {
                        for (which, name) in NVLINK_COUNTERS {
                            let mut n = 0u64;
                            if counter(d, link, which, &mut n) == SUCCESS {
                                push(&source, name, n as f64, Kind::Count);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Takes the XID events that arrived since the last poll.
    fn poll_xids(&mut self) {
        let (Some(set), Some(wait)) = (self.events, self.calls.wait) else {
            return;
        };
        for _ in 0..64 {
            let mut data = EventData {
                device: std::ptr::null_mut(),
                event_type: 0,
                event_data: 0,
                gpu_instance_id: 0,
                compute_instance_id: 0,
            };
            // SAFETY: `set` is the event set NVML created; `data` is an
            // `nvmlEventData_t`.
            if unsafe { wait(set, &mut data, 0) } != SUCCESS {
                return;
            }
            let gpu = self
                .devices
                .iter()
                .find(|(_, d)| *d == data.device)
                .map(|(i, _)| *i)
                .or_else(|| {
                    let index = self.calls.index?;
                    let mut i = 0u32;
                    // SAFETY: a handle from the event, asked with nvml.h's signature.
                    (unsafe { index(data.device, &mut i) } == SUCCESS).then_some(i as usize)
                });
            if let Some(g) = gpu {
                self.xids.push((g as u64, data.event_data));
            }
        }
    }
}

type GetU32Plain = unsafe extern "C" fn(*mut u32) -> i32;
type ByBusId = unsafe extern "C" fn(*const std::ffi::c_char, *mut Device) -> i32;
type SetFree = unsafe extern "C" fn(*mut c_void) -> i32;

/// A symbol of NVML as the function pointer type `T`.
///
/// # Safety
/// `T` must be the symbol's real type, and the pointer is only used while `lib` is
/// loaded.
unsafe fn get<T: Copy>(lib: &Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: the caller guarantees the type.
    unsafe { lib.get::<T>(name) }.map(|s| *s).map_err(|e| {
        let shown = String::from_utf8_lossy(&name[..name.len() - 1]).into_owned();
        format!("{shown}: {e}")
    })
}
type Handle = unsafe extern "C" fn(u32, *mut Device) -> i32;

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: frees the event set NVML made and balances the successful
        // nvmlInit_v2 of `open`.
        unsafe {
            if let (Some(set), Some(free)) = (self.events, self.calls.free) {
                free(set);
            }
            (self.calls.shutdown)();
        }
    }
}
