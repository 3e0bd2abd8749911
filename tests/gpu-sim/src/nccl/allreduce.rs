//! An all-reduce on a stream (or in a graph: each launch runs it again): computed
//! exactly across the ranks' processes through the shared file, one chunk at a
//! time, and timed by the device time of the algorithm and protocol the tuner gave
//! it ([`tuner::model::device_ns`]: the model's, but for its deliberate mis-tuning),
//! times the `mispredict` fault's factor, the communicator's speed and a jitter.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::comm::Comm;
use super::shared::CHUNK;
use super::tuner::{model, Algo, Proto};
use super::{IN_PROGRESS, REMOTE_ERROR, SUCCESS};
use crate::driver::{self, CUdeviceptr};
use crate::env;
use crate::fault::{self, Fault};
use crate::log;
use crate::reduce;
use crate::stream::Work;

pub struct AllReduce {
    pub comm: Arc<Comm>,
    pub send: CUdeviceptr,
    pub recv: CUdeviceptr,
    pub bytes: usize,
    pub dtype: i32,
    pub op: i32,
    pub algo: Algo,
    pub proto: Proto,
}

/// `NCCL_BENCH_SIM_GROUP_JITTER=s`: each communicator (one process group of a sweep)
/// runs at its own speed, exp(s z) for a standard normal z drawn from its id, as fresh
/// processes on real hardware land on other cores, pages, clocks and links. Every rank
/// of the communicator draws the same z (from the id they share). 1 (no spread) by
/// default and where `s` is not a positive number.
pub fn group_speed(hash: u64) -> f64 {
    let spread = env("NCCL_BENCH_SIM_GROUP_JITTER")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0);
    spread.map_or(1.0, |spread| speed_of(hash, spread))
}

/// exp(spread z), z a standard normal drawn from `hash`.
pub fn speed_of(hash: u64, spread: f64) -> f64 {
    let uniform = |salt: u64| {
        let mut x = hash ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 31;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 29;
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    // Box-Muller: a standard normal from two uniforms in (0, 1).
    let z = (-2.0 * uniform(1).ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform(2)).cos();
    (spread * z).exp()
}

/// A spread of +-1% on modelled times, the same on every rank for one collective.
fn jitter(hash: u64, seq: u64) -> f64 {
    let mut x = hash ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    1.0 + ((x % 2001) as f64 - 1000.0) / 100_000.0
}

impl Work for AllReduce {
    fn run(&self, start: u64) -> u64 {
        let c = &self.comm;
        let state = c.state.load(Ordering::Acquire);
        if c.aborted.load(Ordering::Acquire) || !matches!(state, SUCCESS | IN_PROGRESS) {
            return start;
        }
        // A pointer freed since the enqueue (or a graph replayed after a free), or
        // memory of another GPU this one has no access to, is the device's illegal
        // address, as on a GPU.
        let unreachable = [self.send, self.recv].iter().any(|&p| {
            self.bytes > 0
                && match driver::check_range(p, self.bytes) {
                    Ok(dev) => dev != c.device && !driver::peer_direct(c.device, dev),
                    Err(_) => true,
                }
        });
        if unreachable {
            driver::fault_device(c.device, driver::code::ILLEGAL_ADDRESS);
            return start;
        }
        let seq = c.seq.fetch_add(1, Ordering::AcqRel);
        match fault::collective(c.rank, seq) {
            Some(Fault::Hang) => {
                while !c.aborted.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                return start;
            }
            Some(Fault::RemoteError) => {
                c.fail_async(
                    REMOTE_ERROR,
                    "misc/socket.cc:49",
                    "socketProgress: Connection closed by remote peer (simulated network failure)",
                );
                return start;
            }
            Some(Fault::Crash) => {
                log::warn(
                    c.device,
                    "enqueue.cc:1500",
                    "simulated crash of this rank's process",
                );
                std::process::abort();
            }
            _ => {}
        }
        let Some(latest) = self.exchange(start, seq) else {
            return start;
        };
        if fault::collective(c.rank, seq) == Some(Fault::Wrong) && self.bytes > 0 {
            // SAFETY: recv holds at least one byte.
            unsafe { *(self.recv as *mut u8) ^= 0x5a };
        }
        let plan = c.plan();
        let cost = model::device_ns(&plan.machine, self.algo, self.proto, self.bytes as u64)
            * fault::mispredict_factor(c.nranks, seq);
        latest + (cost * jitter(c.hash, seq) * c.speed) as u64
    }
}

impl AllReduce {
    /// Reduces the ranks' inputs into this rank's output, chunk by chunk through
    /// the shared file; the latest arrival among the ranks (device time), or `None`
    /// when a wait stopped (the error is recorded).
    fn exchange(&self, start: u64, seq: u64) -> Option<u64> {
        let c = &self.comm;
        let shared = c.shared();
        let h = shared.header();
        shared
            .slot(c.rank as usize)
            .arrival
            .store(start, Ordering::Release);
        let mut latest = start;
        let mut offset = 0;
        let width = reduce::size(self.dtype).unwrap_or(1);
        let step = CHUNK / width * width;
        loop {
            let len = step.min(self.bytes - offset);
            // SAFETY: send and recv hold `bytes` (checked at enqueue; the caller keeps
            // them alive until the stream is synchronized); slots hold CHUNK bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (self.send as usize + offset) as *const u8,
                    shared.slot_ptr(c.rank as usize),
                    len,
                );
            }
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return None;
            }
            if offset == 0 {
                latest = (0..c.nranks as usize)
                    .map(|r| h.slots[r].arrival.load(Ordering::Acquire))
                    .max()
                    .unwrap_or(start);
            }
            // SAFETY: between the two barriers no rank writes a slot; recv holds
            // offset + len bytes.
            unsafe {
                // NCCL's order of combining ranks differs by algorithm and chunk:
                // start at another rank for every chunk of every collective.
                let n = c.nranks as usize;
                let first = (seq as usize + offset / step) % n;
                let inputs: Vec<&[u8]> = (0..n)
                    .map(|i| std::slice::from_raw_parts(shared.slot_ptr((first + i) % n), len))
                    .collect();
                let out =
                    std::slice::from_raw_parts_mut((self.recv as usize + offset) as *mut u8, len);
                reduce::reduce(self.dtype, self.op, &inputs, out);
            }
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return None;
            }
            offset += len;
            if offset >= self.bytes {
                return Some(latest);
            }
        }
    }
}
