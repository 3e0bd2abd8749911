//! The simulated machine's clock for the timed faults: seconds since its epoch.
//!
//! The epoch is `NCCL_BENCH_SIM_EPOCH` (Unix time in seconds, fractions allowed)
//! where it is set to a number; tests set it to the moment they start a command, so
//! that the process that reads NVML and the worker processes that run collectives
//! see a fault at the same moment. Unset (or not a number), it is the moment this
//! process first asked for it (its first `nvmlInit`, or its first collective while
//! timed faults are asked for), so each process has its own.
//!
//! Tests of this crate inject the faults and the time instead (`inject`), per
//! thread, so that they never sleep to reach a window.

use std::sync::OnceLock;

use super::timed::Timed;
use crate::env;

/// The epoch, Unix seconds.
pub fn epoch_s() -> f64 {
    static EPOCH: OnceLock<f64> = OnceLock::new();
    *EPOCH.get_or_init(|| {
        env("NCCL_BENCH_SIM_EPOCH")
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .unwrap_or_else(|| crate::realtime_ns() as f64 / 1e9)
    })
}

/// Seconds since the epoch at `realtime_ns` (nanoseconds of the real-time clock).
pub fn since_epoch(realtime_ns: u64) -> f64 {
    let epoch = epoch_s();
    realtime_ns as f64 / 1e9 - epoch
}

/// Runs `f` with the timed faults asked for (`NCCL_BENCH_SIM_FAULT`).
pub fn with_faults<R>(f: impl FnOnce(&[Timed]) -> R) -> R {
    #[cfg(test)]
    if let Some((faults, _)) = INJECTED.with(|i| i.borrow().clone()) {
        return f(&faults);
    }
    f(super::timed_specs())
}

/// Runs `f` with the timed faults asked for and the time now, seconds since the
/// epoch.
pub fn with_now<R>(f: impl FnOnce(&[Timed], f64) -> R) -> R {
    #[cfg(test)]
    if let Some((faults, t)) = INJECTED.with(|i| i.borrow().clone()) {
        return f(&faults, t);
    }
    f(super::timed_specs(), since_epoch(crate::realtime_ns()))
}

#[cfg(test)]
thread_local! {
    static INJECTED: std::cell::RefCell<Option<(Vec<Timed>, f64)>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes this thread see `faults` at time `t` (seconds since the epoch) in place of
/// the environment and the real clock.
#[cfg(test)]
pub fn inject(faults: &[Timed], t: f64) {
    INJECTED.with(|i| *i.borrow_mut() = Some((faults.to_vec(), t)));
}
