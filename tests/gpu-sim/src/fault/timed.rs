//! Faults that come and go with time, for the tests of `nccl-bench soak`: a
//! throttled GPU, an NVLink that replays, an XID error. Each is a window of seconds
//! since the simulated machine's epoch ([`super::clock`]), and what it does at a
//! moment is a pure function of that moment: the process that reads NVML and the
//! processes that run collectives agree on it without talking to each other.

use crate::topo::NVLINKS_PER_GPU;

/// What a timed fault does, to GPUs named by their machine index (NVML's order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimedKind {
    /// GPU `gpu` runs at throttled clocks.
    Throttle { gpu: usize },
    /// The NVLink between GPUs `a` and `b` replays.
    NvlinkErrors { a: usize, b: usize },
    /// GPU `gpu` reports XID `code` (an instant: no window).
    Xid { gpu: usize, code: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub kind: TimedKind,
    /// When it starts, seconds since the epoch.
    pub start_s: f64,
    /// How long it lasts, seconds; 0 for an XID.
    pub duration_s: f64,
    /// The slowdown of the collectives it touches; 1 for an XID.
    pub factor: f64,
}

/// `throttle`'s slowdown when the spec does not give one.
pub const THROTTLE_FACTOR: f64 = 1.6;
/// `nvlink-errors`' slowdown when the spec does not give one.
pub const NVLINK_FACTOR: f64 = 1.3;
/// How long a window lasts when the spec does not say.
pub const DURATION_S: f64 = 5.0;
/// `xid`'s code when the spec does not give one: 79, "GPU has fallen off the bus".
pub const XID_CODE: u64 = 79;
/// DL_REPLAY counts per second of an `nvlink-errors` window, on each end.
pub const REPLAYS_PER_S: f64 = 40.0;

/// A finite number.
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `throttle@GPU[x<factor>][+SECONDS[/DURATION]]`,
/// `nvlink-errors@A-B[x<factor>][+SECONDS[/DURATION]]` or `xid@GPU[+SECONDS[:CODE]]`;
/// `None` for any other text, and for a factor below 1, a negative start, a
/// duration that is not positive, or a link from a GPU to itself.
pub fn parse(text: &str) -> Option<Timed> {
    let (name, rest) = text.split_once('@')?;
    let (target, when) = rest.split_once('+').unwrap_or((rest, "0"));
    let (target, factor) = match target.split_once('x') {
        Some((t, f)) => (t, Some(number(f).filter(|f| *f >= 1.0)?)),
        None => (target, None),
    };
    let gpu = || target.trim().parse::<usize>().ok();
    let (kind, default_factor, when, duration) = match name.trim() {
        "throttle" | "nvlink-errors" => {
            let (when, duration) = match when.split_once('/') {
                Some((w, d)) => (w, number(d).filter(|d| *d > 0.0)?),
                None => (when, DURATION_S),
            };
            if name.trim() == "throttle" {
                let kind = TimedKind::Throttle { gpu: gpu()? };
                (kind, THROTTLE_FACTOR, when, duration)
            } else {
                let (a, b) = target.split_once('-')?;
                let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a == b {
                    return None;
                }
                (
                    TimedKind::NvlinkErrors { a, b },
                    NVLINK_FACTOR,
                    when,
                    duration,
                )
            }
        }
        "xid" if factor.is_none() => {
            let (when, code) = match when.split_once(':') {
                Some((w, c)) => (w, c.trim().parse().ok()?),
                None => (when, XID_CODE),
            };
            (TimedKind::Xid { gpu: gpu()?, code }, 1.0, when, 0.0)
        }
        _ => return None,
    };
    Some(Timed {
        kind,
        start_s: number(when).filter(|s| *s >= 0.0)?,
        duration_s: duration,
        factor: factor.unwrap_or(default_factor),
    })
}

impl Timed {
    /// Whether its window holds `t`: from its start, for its duration.
    pub fn covers(&self, t: f64) -> bool {
        t >= self.start_s && t < self.start_s + self.duration_s
    }

    /// Whether it is the NVLink fault of link `link` of GPU `gpu`: GPU a's link to b
    /// is its link `b % 18`, and b's to a its link `a % 18`.
    fn on_link(&self, gpu: usize, link: usize) -> bool {
        match self.kind {
            TimedKind::NvlinkErrors { a, b } => {
                (gpu == a && link == b % NVLINKS_PER_GPU)
                    || (gpu == b && link == a % NVLINKS_PER_GPU)
            }
            _ => false,
        }
    }
}

/// The factor on the device time of a collective begun at `t` on a communicator
/// whose ranks use GPUs `gpus`: the largest of the throttles of its GPUs and the
/// NVLink faults between two of them (a ring goes at its slowest member's pace); 1
/// when none applies.
pub fn slowdown(faults: &[Timed], gpus: &[usize], t: f64) -> f64 {
    faults
        .iter()
        .filter(|f| f.covers(t))
        .filter(|f| match f.kind {
            TimedKind::Throttle { gpu } => gpus.contains(&gpu),
            TimedKind::NvlinkErrors { a, b } => gpus.contains(&a) && gpus.contains(&b),
            TimedKind::Xid { .. } => false,
        })
        .map(|f| f.factor)
        .fold(1.0, f64::max)
}

/// Whether GPU `gpu` is throttled at `t`.
pub fn throttled(faults: &[Timed], gpu: usize, t: f64) -> bool {
    faults
        .iter()
        .any(|f| f.kind == TimedKind::Throttle { gpu } && f.covers(t))
}

/// NVML's DL_REPLAY counter of link `link` of GPU `gpu` at `t`: 40 a second of each
/// NVLink fault on it, floor(40 * clamp(t - start, 0, duration)), kept after the
/// window as a real counter is.
pub fn replays(faults: &[Timed], gpu: usize, link: usize, t: f64) -> u64 {
    faults
        .iter()
        .filter(|f| f.on_link(gpu, link))
        .map(|f| (REPLAYS_PER_S * (t - f.start_s).clamp(0.0, f.duration_s)).floor() as u64)
        .sum()
}

/// NVML's DL_RECOVERY counter of link `link` of GPU `gpu` at `t`: one for each NVLink
/// fault on it whose window has begun.
pub fn recoveries(faults: &[Timed], gpu: usize, link: usize, t: f64) -> u64 {
    faults
        .iter()
        .filter(|f| f.on_link(gpu, link) && t >= f.start_s)
        .count() as u64
}

/// The XIDs whose time has come at `t`, earliest first: (the fault's index in
/// `faults`, its GPU, its code).
pub fn xids_due(faults: &[Timed], t: f64) -> Vec<(usize, usize, u64)> {
    let mut due: Vec<(f64, usize, usize, u64)> = faults
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f.kind {
            TimedKind::Xid { gpu, code } if t >= f.start_s => Some((f.start_s, i, gpu, code)),
            _ => None,
        })
        .collect();
    due.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    due.into_iter()
        .map(|(_, i, gpu, code)| (i, gpu, code))
        .collect()
}
