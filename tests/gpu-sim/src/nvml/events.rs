//! NVML's event sets, for XIDs: which GPUs each set registered for which event
//! types, and which `xid` faults it has delivered. Each `xid` fault is delivered
//! once to each set that registered its GPU for `nvmlEventTypeXidCriticalError`,
//! once its time has come, earliest first; one whose time came before the set
//! registered is delivered too (the real NVML reports only later ones; a test then
//! need not race its registration). No other event type ever fires.

use std::collections::BTreeMap;
use std::ffi::{c_uint, c_ulonglong, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{
    gpu_of, handle_of, initialized, put, NvmlDevice, NvmlReturn, INVALID_ARGUMENT, SUCCESS, TIMEOUT,
};
use crate::fault::{clock, timed};

/// `nvmlEventSet_t`: a number from 1, cast to a pointer.
pub type NvmlEventSet = *mut c_void;

/// `nvmlEventTypeXidCriticalError`.
pub const XID_CRITICAL_ERROR: u64 = 0x8;

/// `nvmlEventData_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvmlEventData {
    pub device: NvmlDevice,
    pub eventType: c_ulonglong,
    /// The XID.
    pub eventData: c_ulonglong,
    /// 0xFFFFFFFF: the GPU is not partitioned (MIG).
    pub gpuInstanceId: c_uint,
    pub computeInstanceId: c_uint,
}

/// What one event set has asked for and been given.
#[derive(Debug, Default)]
pub struct EventSet {
    /// (GPU, event type bits) as registered.
    registered: Vec<(usize, u64)>,
    /// Indices of the `xid` faults delivered.
    delivered: Vec<usize>,
}

impl EventSet {
    /// Registers GPU `gpu` for the event types `types`.
    pub fn register(&mut self, gpu: usize, types: u64) {
        self.registered.push((gpu, types));
    }

    /// The next XID of `faults` due at `t` that this set registered for and has
    /// not delivered: (GPU, code), marked delivered.
    pub fn take_due(&mut self, faults: &[timed::Timed], t: f64) -> Option<(usize, u64)> {
        let (i, gpu, code) = timed::xids_due(faults, t)
            .into_iter()
            .find(|&(i, gpu, _)| {
                !self.delivered.contains(&i)
                    && self
                        .registered
                        .iter()
                        .any(|&(g, types)| g == gpu && types & XID_CRITICAL_ERROR != 0)
            })?;
        self.delivered.push(i);
        Some((gpu, code))
    }
}

static SETS: Mutex<BTreeMap<usize, EventSet>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicUsize = AtomicUsize::new(1);

/// Runs `f` on the set a handle names.
fn with_set<R>(set: NvmlEventSet, f: impl FnOnce(&mut EventSet) -> R) -> Result<R, NvmlReturn> {
    let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
    sets.get_mut(&(set as usize)).map(f).ok_or(INVALID_ARGUMENT)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut NvmlEventSet) -> NvmlReturn {
    if let Err(e) = initialized() {
        return e;
    }
    if set.is_null() {
        return INVALID_ARGUMENT;
    }
    let id = NEXT.fetch_add(1, Ordering::AcqRel);
    SETS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, EventSet::default());
    put(set, id as NvmlEventSet)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: NvmlDevice,
    types: *mut c_ulonglong,
) -> NvmlReturn {
    super::answer(device, types, |_| Ok(XID_CRITICAL_ERROR))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: NvmlDevice,
    types: c_ulonglong,
    set: NvmlEventSet,
) -> NvmlReturn {
    let registered = gpu_of(device).and_then(|gpu| with_set(set, |s| s.register(gpu, types)));
    match registered {
        Ok(()) => SUCCESS,
        Err(e) => e,
    }
}

/// Waits up to `timeout_ms` (real time; 0 polls) for an XID due to the set.
#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: NvmlEventSet,
    data: *mut NvmlEventData,
    timeout_ms: c_uint,
) -> NvmlReturn {
    if let Err(e) = initialized() {
        return e;
    }
    if data.is_null() {
        return INVALID_ARGUMENT;
    }
    let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
    loop {
        let due = with_set(set, |s| clock::with_now(|faults, t| s.take_due(faults, t)));
        match due {
            Err(e) => return e,
            Ok(Some((gpu, code))) => {
                return put(
                    data,
                    NvmlEventData {
                        device: handle_of(gpu),
                        eventType: XID_CRITICAL_ERROR,
                        eventData: code,
                        gpuInstanceId: u32::MAX,
                        computeInstanceId: u32::MAX,
                    },
                );
            }
            Ok(None) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return TIMEOUT;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetFree(set: NvmlEventSet) -> NvmlReturn {
    let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
    match sets.remove(&(set as usize)) {
        Some(_) => SUCCESS,
        None => INVALID_ARGUMENT,
    }
}
