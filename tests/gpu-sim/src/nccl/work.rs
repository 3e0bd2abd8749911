//! One operation on a stream (or in a graph: each launch runs it again): a
//! collective or a group's point-to-point calls, computed exactly across the ranks'
//! processes through the shared file, one window of each rank's send buffers at a
//! time, and timed by its modelled device time (the tuner's algorithm and protocol
//! for the functions NCCL tunes, [`tuner::model::device_ns`]; the links to each peer
//! for the point-to-point ones), times the `mispredict` or timed faults' factor
//! (the largest), the communicator's speed and a jitter.
//!
//! Every operation is the same exchange. Each rank publishes what it sends (its
//! bytes in all; for point-to-point calls each send's peer and size), and knows from
//! NCCL's semantics which stretch of its receive buffers comes from which rank's
//! send bytes, copied or reduced over all ranks. Then, window by window of
//! [`CHUNK`] bytes, every rank stages its send bytes, and each fills the stretches
//! that window holds.
//!
//! Where every rank repeats the last operation it computed with nothing written
//! since ([`super::repeat`]), the receive buffers hold the result already: the
//! windows are skipped, the modelled time is the same.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::comm::Comm;
use super::repeat::{self, Computed};
use super::shared::{Slot, CHUNK, MAX_SENDS};
use super::tuner::{model, Algo, Func, Proto};
use super::{IN_PROGRESS, REMOTE_ERROR, SUCCESS};
use crate::driver::{self, CUdeviceptr};
use crate::env;
use crate::fault::{self, Fault};
use crate::reduce;
use crate::stream::Work;
use crate::topo;

/// NCCL's collective functions, as their calls name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollFunc {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AlltoAll,
    Gather,
    Scatter,
}

impl CollFunc {
    /// The function's name in NCCL's messages (`AllGather`).
    pub fn name(self) -> &'static str {
        match self {
            CollFunc::AllReduce => "AllReduce",
            CollFunc::AllGather => "AllGather",
            CollFunc::ReduceScatter => "ReduceScatter",
            CollFunc::Broadcast => "Broadcast",
            CollFunc::Reduce => "Reduce",
            CollFunc::AlltoAll => "AlltoAll",
            CollFunc::Gather => "Gather",
            CollFunc::Scatter => "Scatter",
        }
    }

    /// The tuner's function, for the ones NCCL tunes; the others move their data
    /// between peers, as grouped sends and receives do.
    pub fn tuned(self) -> Option<Func> {
        match self {
            CollFunc::AllReduce => Some(Func::AllReduce),
            CollFunc::AllGather => Some(Func::AllGather),
            CollFunc::ReduceScatter => Some(Func::ReduceScatter),
            CollFunc::Broadcast => Some(Func::Broadcast),
            CollFunc::Reduce => Some(Func::Reduce),
            _ => None,
        }
    }

    /// Whether the operator matters.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            CollFunc::AllReduce | CollFunc::ReduceScatter | CollFunc::Reduce
        )
    }

    /// Bytes one rank sends, for `count` elements of `width` bytes on `n` ranks
    /// (the count is per peer where NCCL's is), `root` whether it is the root: a
    /// non-root rank's send buffer of broadcast and scatter is not read (NCCL does
    /// not check it either).
    pub fn send_bytes(self, count: usize, width: usize, n: usize, root: bool) -> usize {
        match self {
            CollFunc::Broadcast | CollFunc::Scatter if !root => 0,
            CollFunc::ReduceScatter | CollFunc::AlltoAll | CollFunc::Scatter => count * width * n,
            _ => count * width,
        }
    }

    /// Bytes one rank receives: nothing on a non-root rank of reduce and gather.
    pub fn recv_bytes(self, count: usize, width: usize, n: usize, root: bool) -> usize {
        match self {
            CollFunc::Reduce | CollFunc::Gather if !root => 0,
            CollFunc::AllGather | CollFunc::AlltoAll | CollFunc::Gather => count * width * n,
            _ => count * width,
        }
    }

    /// The peers one rank exchanges data with (itself included where it does),
    /// for the functions built from point-to-point work.
    pub fn peers(self, rank: u32, root: u32, n: u32) -> Vec<u32> {
        match self {
            CollFunc::Gather | CollFunc::Scatter if rank != root => vec![root],
            _ => (0..n).collect(),
        }
    }

    /// NCCL's `nBytes` of the operation (what its TUNING line names): the whole
    /// gathered or scattered buffer for AllGather and ReduceScatter.
    pub fn tuned_bytes(self, count: usize, width: usize, n: usize) -> u64 {
        match self {
            CollFunc::AllGather | CollFunc::ReduceScatter => (count * width * n) as u64,
            _ => (count * width) as u64,
        }
    }
}

/// One `ncclSend` or `ncclRecv` of a group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerCall {
    pub send: bool,
    pub buf: u64,
    pub bytes: usize,
    pub peer: u32,
}

/// What an operation does.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Coll {
        func: CollFunc,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        count: usize,
        root: u32,
    },
    /// A group's point-to-point calls on one communicator, in call order.
    P2p(Vec<PeerCall>),
}

/// Where a stretch of a receive buffer comes from: one rank's send bytes from an
/// offset, or their reduction over every rank.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    Input { rank: u32, from: usize },
    Reduced { from: usize },
}

pub struct Operation {
    pub comm: Arc<Comm>,
    pub kind: Kind,
    pub dtype: i32,
    pub op: i32,
    pub algo: Algo,
    pub proto: Proto,
    /// What it runs instead of NCCL's algorithm, if anything.
    pub route: Option<Route>,
}

/// A collective that does not run NCCL's tuned algorithms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route {
    /// A symmetric kernel ([`super::symmetric`]).
    Symmetric(super::symmetric::Pick),
    /// Copies on the copy engines ([`super::copy_engine`]), of this many bytes a peer.
    CopyEngine { bytes: u64 },
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

impl Work for Operation {
    fn run(&self, start: u64) -> u64 {
        let c = &self.comm;
        let state = c.state.load(Ordering::Acquire);
        if c.aborted.load(Ordering::Acquire) || !matches!(state, SUCCESS | IN_PROGRESS) {
            return start;
        }
        // A pointer freed since the enqueue (or a graph replayed after a free), or
        // memory of another GPU this one has no access to, is the device's illegal
        // address, as on a GPU.
        let unreachable = self.buffers().iter().any(|&(p, bytes)| {
            bytes > 0
                && match driver::check_range(p, bytes) {
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
                super::warn(
                    c.device,
                    "enqueue.cc:1500",
                    "simulated crash of this rank's process",
                );
                std::process::abort();
            }
            _ => {}
        }
        let Some((latest, wall, first_out)) = self.exchange(start, seq) else {
            return start;
        };
        if let (Some(Fault::Wrong), Some(out)) = (fault::collective(c.rank, seq), first_out) {
            // SAFETY: the first byte the operation wrote in a receive buffer.
            unsafe { *(out as *mut u8) ^= 0x5a };
            // The next operation computes the buffer anew, as a GPU would.
            repeat::forget();
        }
        let gpus: Vec<usize> = (0..c.nranks as usize).map(|r| c.nvml_of(r)).collect();
        let timed = fault::timed_factor(&gpus, latest.max(wall));
        let cost = self.device_ns() * fault::mispredict_factor(c.nranks, seq).max(timed);
        latest + (cost * jitter(c.hash, seq) * c.speed) as u64
    }
}

impl Operation {
    fn width(&self) -> usize {
        reduce::size(self.dtype).unwrap_or(1)
    }

    /// The buffers it reads and writes, (address, bytes): the send buffers first
    /// ([`Operation::sends`] of them), then the receive buffers.
    fn buffers(&self) -> Vec<(u64, usize)> {
        let n = self.comm.nranks as usize;
        match &self.kind {
            Kind::Coll {
                func,
                send,
                recv,
                count,
                root,
            } => {
                let is_root = *root == self.comm.rank;
                vec![
                    (*send, func.send_bytes(*count, self.width(), n, is_root)),
                    (*recv, func.recv_bytes(*count, self.width(), n, is_root)),
                ]
            }
            Kind::P2p(calls) => {
                let (mut sends, recvs): (Vec<&PeerCall>, Vec<&PeerCall>) =
                    calls.iter().partition(|c| c.send);
                sends.extend(recvs);
                sends.iter().map(|c| (c.buf, c.bytes)).collect()
            }
        }
    }

    /// What this operation is, for [`repeat::is_last`]; `None` where repeating it
    /// changes the result: a receive buffer overlaps a send buffer (in place).
    fn computed(&self) -> Option<Computed> {
        let buffers = self.buffers();
        let (sends, recvs) = buffers.split_at(self.sends());
        let overlap = |a: &(u64, usize), b: &(u64, usize)| {
            a.1 > 0 && b.1 > 0 && a.0 < b.0 + b.1 as u64 && b.0 < a.0 + a.1 as u64
        };
        if sends.iter().any(|s| recvs.iter().any(|r| overlap(s, r))) {
            return None;
        }
        Some(Computed {
            comm: Arc::as_ptr(&self.comm) as usize,
            kind: self.kind.clone(),
            dtype: self.dtype,
            op: self.op,
            writes: driver::device_writes(),
        })
    }

    fn sends(&self) -> usize {
        match &self.kind {
            Kind::Coll { .. } => 1,
            Kind::P2p(calls) => calls.iter().filter(|c| c.send).count(),
        }
    }

    /// The modelled device time, ns: the tuner's cost of the functions NCCL tunes;
    /// for the others, a launch and each peer's traffic over the link to it (sends
    /// and receives to one peer at once, peers one after another), its own part a
    /// local copy.
    fn device_ns(&self) -> f64 {
        let c = &self.comm;
        let n = c.nranks as usize;
        let machine = &c.plan().machine;
        match self.route {
            Some(Route::Symmetric(pick)) => return pick.time_us * 1e3 * topo::slowdown(),
            Some(Route::CopyEngine { bytes }) => return super::copy_engine::device_ns(c, bytes),
            None => {}
        }
        if let Kind::Coll { func, count, .. } = &self.kind {
            if let Some(f) = func.tuned() {
                let bytes = func.tuned_bytes(*count, self.width(), n);
                return model::func_device_ns(machine, f, self.algo, self.proto, bytes);
            }
        }
        let me = c.rank as usize;
        let mut out = vec![0usize; n];
        let mut into = vec![0usize; n];
        for (peer, bytes) in self.peer_traffic() {
            if peer.1 {
                out[peer.0] += bytes;
            } else {
                into[peer.0] += bytes;
            }
        }
        let mut ns = topo::LAUNCH_NS / 2.0;
        for j in 0..n {
            let bytes = out[j].max(into[j]);
            if bytes == 0 {
                continue;
            }
            ns += if j == me {
                bytes as f64 / 1_500.0
            } else {
                let (latency, bandwidth) = c.peer_link(j);
                latency + bytes as f64 / bandwidth
            };
        }
        ns * topo::slowdown()
    }

    /// Bytes to and from each peer: ((peer, sent?), bytes).
    fn peer_traffic(&self) -> Vec<((usize, bool), usize)> {
        let c = &self.comm;
        let (n, me) = (c.nranks as usize, c.rank as usize);
        let w = self.width();
        match &self.kind {
            Kind::Coll {
                func, count, root, ..
            } => {
                let (part, root) = (count * w, *root as usize);
                let peers = 0..n;
                match func {
                    CollFunc::AlltoAll => peers
                        .flat_map(|j| [((j, true), part), ((j, false), part)])
                        .collect(),
                    CollFunc::Gather if me == root => peers.map(|j| ((j, false), part)).collect(),
                    CollFunc::Scatter if me == root => peers.map(|j| ((j, true), part)).collect(),
                    CollFunc::Gather => vec![((root, true), part)],
                    CollFunc::Scatter => vec![((root, false), part)],
                    _ => Vec::new(),
                }
            }
            Kind::P2p(calls) => calls
                .iter()
                .map(|p| ((p.peer as usize, p.send), p.bytes))
                .collect(),
        }
    }

    /// This rank's send bytes as one space: (address, bytes) pieces in order.
    fn send_space(&self) -> Vec<(u64, usize)> {
        self.buffers().into_iter().take(self.sends()).collect()
    }

    /// Publishes what this rank sends (its total, and its point-to-point sends).
    fn publish(&self) {
        let c = &self.comm;
        let mine = &c.shared().header().sends[c.rank as usize];
        let total: usize = self.send_space().iter().map(|s| s.1).sum();
        mine.total.store(total as u64, Ordering::Release);
        let mut count = 0;
        if let Kind::P2p(calls) = &self.kind {
            for call in calls.iter().filter(|c| c.send).take(MAX_SENDS) {
                mine.sends[count][0].store(u64::from(call.peer), Ordering::Relaxed);
                mine.sends[count][1].store(call.bytes as u64, Ordering::Relaxed);
                count += 1;
            }
        }
        mine.count.store(count as u64, Ordering::Release);
    }

    /// The stretches of this rank's receive buffers: (address, bytes, source), as
    /// NCCL's semantics of the call give them; for point-to-point receives, the k-th
    /// receive from a peer takes that peer's k-th send to this rank (read from what
    /// it published).
    fn stretches(&self) -> Vec<(u64, usize, Source)> {
        let c = &self.comm;
        let (n, me) = (c.nranks, c.rank);
        let w = self.width();
        match &self.kind {
            Kind::Coll {
                func,
                recv,
                count,
                root,
                ..
            } => {
                let part = count * w;
                let at = |j: u32| recv + u64::from(j) * part as u64;
                let from_each = |from: &dyn Fn(u32) -> usize| -> Vec<(u64, usize, Source)> {
                    (0..n)
                        .map(|j| {
                            (
                                at(j),
                                part,
                                Source::Input {
                                    rank: j,
                                    from: from(j),
                                },
                            )
                        })
                        .collect()
                };
                let mine = me as usize * part;
                match func {
                    CollFunc::AllReduce => vec![(*recv, part, Source::Reduced { from: 0 })],
                    CollFunc::ReduceScatter => vec![(*recv, part, Source::Reduced { from: mine })],
                    CollFunc::Reduce if me == *root => {
                        vec![(*recv, part, Source::Reduced { from: 0 })]
                    }
                    CollFunc::Reduce => Vec::new(),
                    CollFunc::Broadcast => vec![(
                        *recv,
                        part,
                        Source::Input {
                            rank: *root,
                            from: 0,
                        },
                    )],
                    CollFunc::AllGather => from_each(&|_| 0),
                    CollFunc::AlltoAll => from_each(&|_| mine),
                    CollFunc::Gather if me == *root => from_each(&|_| 0),
                    CollFunc::Gather => Vec::new(),
                    CollFunc::Scatter => vec![(
                        *recv,
                        part,
                        Source::Input {
                            rank: *root,
                            from: mine,
                        },
                    )],
                }
            }
            Kind::P2p(calls) => {
                let header = c.shared().header();
                let mut taken = vec![0usize; n as usize];
                let mut out = Vec::new();
                for call in calls.iter().filter(|c| !c.send) {
                    let j = call.peer as usize;
                    let theirs = &header.sends[j];
                    let count = theirs.count.load(Ordering::Acquire) as usize;
                    let mut offset = 0;
                    let mut seen = 0;
                    for k in 0..count.min(MAX_SENDS) {
                        let peer = theirs.sends[k][0].load(Ordering::Relaxed) as u32;
                        let bytes = theirs.sends[k][1].load(Ordering::Relaxed) as usize;
                        if peer == me {
                            if seen == taken[j] {
                                let len = bytes.min(call.bytes);
                                out.push((
                                    call.buf,
                                    len,
                                    Source::Input {
                                        rank: j as u32,
                                        from: offset,
                                    },
                                ));
                                break;
                            }
                            seen += 1;
                        }
                        offset += bytes;
                    }
                    taken[j] += 1;
                }
                out
            }
        }
    }

    /// Computes this rank's receive buffers through the shared file; the latest
    /// arrival among the ranks (device time), the latest in real time, and the
    /// first byte it wrote (none on a rank that receives nothing), or `None` when a
    /// wait stopped (the error is recorded).
    fn exchange(&self, start: u64, seq: u64) -> Option<(u64, u64, Option<u64>)> {
        let c = &self.comm;
        let shared = c.shared();
        let h = shared.header();
        let n = c.nranks as usize;
        let mine = shared.slot(c.rank as usize);
        mine.arrival.store(start, Ordering::Release);
        mine.wall.store(crate::realtime_ns(), Ordering::Release);
        // What this operation is, with the device writes counted before it starts: a
        // write during the exchange makes the next one compute in full.
        let computed = self.computed();
        mine.repeat
            .store(u32::from(repeat::is_last(&computed)), Ordering::Release);
        self.publish();
        if let Err(stop) = c.barrier() {
            c.stopped(stop);
            return None;
        }
        let latest_of = |of: fn(&Slot) -> u64| (0..n).map(|r| of(&h.slots[r])).max();
        let latest = latest_of(|s| s.arrival.load(Ordering::Acquire)).unwrap_or(start);
        let wall = latest_of(|s| s.wall.load(Ordering::Acquire)).unwrap_or(0);
        let stretches = self.stretches();
        let first_out = stretches.iter().find(|s| s.1 > 0).map(|s| s.0);
        let space = self.send_space();
        let most = (0..n)
            .map(|r| h.sends[r].total.load(Ordering::Acquire) as usize)
            .max()
            .unwrap_or(0);
        let width = self.width();
        let step = CHUNK / width * width;
        let repeated = (0..n).all(|r| h.slots[r].repeat.load(Ordering::Acquire) != 0);
        // Repeated: no window, but the last barrier still (no rank may publish its
        // next operation before every rank has read this one's slots).
        let windows = if repeated {
            0
        } else {
            repeat::forget();
            most.div_ceil(step).max(1)
        };
        for window in 0..windows {
            let lo = window * step;
            let hi = lo + step;
            // SAFETY: the send buffers hold their bytes (checked at enqueue; the
            // caller keeps them alive until the stream is synchronized); the slot
            // holds CHUNK bytes, and hi - lo <= CHUNK.
            unsafe { stage(&space, lo, hi, shared.slot_ptr(c.rank as usize)) };
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return None;
            }
            for &(dst, len, source) in &stretches {
                let from = match source {
                    Source::Input { from, .. } | Source::Reduced { from } => from,
                };
                let (a, b) = (from.max(lo), (from + len).min(hi));
                if a >= b {
                    continue;
                }
                let out = (dst + (a - from) as u64) as *mut u8;
                // SAFETY: between the two barriers no rank writes a slot; the
                // stretch lies within this rank's receive buffer.
                unsafe {
                    let out = std::slice::from_raw_parts_mut(out, b - a);
                    match source {
                        Source::Input { rank, .. } => {
                            let slot = shared.slot_ptr(rank as usize).add(a - lo);
                            out.copy_from_slice(std::slice::from_raw_parts(slot, b - a));
                        }
                        Source::Reduced { .. } => {
                            // NCCL's order of combining ranks differs by algorithm
                            // and chunk: start at another rank every window.
                            let first = (seq as usize + window) % n;
                            let inputs: Vec<&[u8]> = (0..n)
                                .map(|i| {
                                    let slot = shared.slot_ptr((first + i) % n).add(a - lo);
                                    std::slice::from_raw_parts(slot, b - a)
                                })
                                .collect();
                            reduce::reduce(self.dtype, self.op, &inputs, out);
                        }
                    }
                }
            }
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return None;
            }
        }
        if repeated {
            if let Err(stop) = c.barrier() {
                c.stopped(stop);
                return None;
            }
        } else {
            repeat::remember(computed);
        }
        Some((latest, wall, first_out))
    }
}

/// Copies bytes `lo..hi` of the send space (pieces in order; short of `hi` where
/// the space ends) to `slot`.
///
/// # Safety
/// Each piece is readable for its bytes; `slot` is writable for `hi - lo` bytes.
unsafe fn stage(space: &[(u64, usize)], lo: usize, hi: usize, slot: *mut u8) {
    let mut at = 0;
    for &(ptr, bytes) in space {
        let (a, b) = (lo.max(at), hi.min(at + bytes));
        if a < b {
            std::ptr::copy_nonoverlapping(
                (ptr as usize + (a - at)) as *const u8,
                slot.add(a - lo),
                b - a,
            );
        }
        at += bytes;
    }
}
