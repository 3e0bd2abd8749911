//! A test stand-in for the CUDA driver (`libcuda.so.1`), NCCL (`libnccl.so.2`) and
//! NVML (`libnvidia-ml.so.1`), so that nccl-bench's NCCL backend runs end to end on
//! machines without a GPU. It is a test double, never a measurement: it exports
//! `ncclBenchSimulated`, and nccl-bench labels every run on it as simulated.
//!
//! One library holds all three: `scripts/build-gpu-sim.sh` links `libcuda.so`,
//! `libcuda.so.1`, `libnccl.so.2` and `libnvidia-ml.so.1` to the one file, and the
//! dynamic loader maps a file once however many names it is opened by, so NCCL's
//! half enqueues on the driver half's streams as the real NCCL does on real CUDA
//! streams.
//!
//! Faithful where nccl-bench depends on the real libraries' behaviour:
//! - the driver ([`driver`]): devices (those `CUDA_VISIBLE_DEVICES` names, renumbered
//!   from 0, their bus ids kept), primary contexts and the current context per
//!   thread, device memory with CUDA's errors for bad pointers and exhaustion,
//!   asynchronous streams (a thread per stream drains its queue), events stamped when
//!   the stream reaches them, stream capture into graphs and their replay, and the
//!   errors of operations that capture forbids; peer access between contexts where
//!   the topology has it, copies between GPUs (over the P2P link once enabled, else
//!   staged through the host) and pinned host memory, at the links' configured speeds;
//! - NCCL ([`nccl`]): a unique id that names a rendezvous, `ncclCommInitRank` blocking
//!   until every rank (each in its own process) has joined, every collective
//!   nccl-tests measures computed exactly across processes for every type and
//!   operator (point-to-point calls too, matched as NCCL matches them), asynchronous errors, abort, NCCL's error
//!   strings and its `NCCL_DEBUG` log lines, from which nccl-bench reads transports,
//!   in the words and at the moments of the release it plays; group calls and
//!   `ncclGroupSimulateEnd`; the tuner's choice of algorithm and protocol
//!   (`NCCL_ALGO`, `NCCL_PROTO`, TUNING lines) with a model of its own, which a
//!   deliberate mis-tuning and the `mispredict` fault make differ from the device;
//! - NVML ([`nvml`]): every GPU of the machine in bus order (as NVML lists them,
//!   whatever `CUDA_VISIBLE_DEVICES` says), their memory, NVLinks and error
//!   counters, fixed healthy clocks, power, temperature and throttle reasons, and
//!   XID events; the timed faults throttle a GPU, make an NVLink replay or raise an
//!   XID at a given second, and slow the collectives they touch ([`fault`]);
//! - the transports NCCL would pick on a topology (`NCCL_BENCH_SIM_TOPO`) and a cost
//!   model per transport ([`topo`]): times come from a virtual device clock, so they
//!   show the shape of real results without the noise of a loaded CI machine.
//!
//! Configuration (all optional): `NCCL_BENCH_SIM_GPUS` (8), `NCCL_BENCH_SIM_TOPO`
//! (`nvlink`, `nvswitch`, `pcie`, `pcie-2switch`, `pcie-nop2p`; see [`topo`]),
//! `NCCL_BENCH_SIM_MEM_GIB` (80),
//! `NCCL_BENCH_SIM_VERSION` (2.28.9), `NCCL_BENCH_SIM_DRIVER` (12040),
//! `NCCL_BENCH_SIM_FAULT` (see [`fault`]), `NCCL_BENCH_SIM_EPOCH` (Unix seconds from
//! which the timed faults count; by default when the process first asks, see
//! [`fault::clock`]), `NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN` (1: a
//! factor on every all-reduce's time while copies keep the links' speed; with 1.3
//! every all-reduce takes 30 % longer than the ceilings measured by copies allow),
//! `NCCL_BENCH_SIM_SLOW_LINK` (`a-b[:factor]`: the link between GPUs a and b at
//! 1/factor of its bandwidth, default 4; see [`topo::link_factor`]),
//! `NCCL_BENCH_SIM_GROUP_JITTER` (`s`: each communicator, one process group of a
//! sweep, at its own speed exp(s z), z standard normal from its id; 0),
//! `NCCL_BENCH_SIM_HOST_PACED` (1: no operation starts on the device before the host
//! enqueued it, as on a GPU; off by default so that times do not depend on how busy
//! the test machine is), `NCCL_BENCH_SIM_EVENT_RECORD_NS` (host time each
//! `cuEventRecord` takes, spun; 0): with both, a host slower than the device sets
//! the pace, as a real driver's per-call cost can; and
//! `NCCL_BENCH_SIM_EVENT_GRAIN_NS` (500: event times resolve to half a
//! microsecond, as CUDA documents).
//!
//! What NCCL does differently by release (lazy connection from 2.22, non-blocking
//! collectives from 2.23, NVLS from 2.17, log formats) is in [`nccl`].

#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)]

pub mod driver;
pub mod fault;
pub mod log;
pub mod nccl;
pub mod nvml;
pub mod reduce;
pub mod rendezvous;
pub mod stream;
pub mod topo;

/// The marker nccl-bench looks for: present only in this stand-in.
#[no_mangle]
pub static ncclBenchSimulated: [u8; 50] = *b"simulated GPUs (test stand-in), not a measurement\0";

/// An environment variable, trimmed; `None` when unset or empty.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A number from the environment, or `default` when unset or not a number.
pub(crate) fn env_u64(name: &str, default: u64) -> u64 {
    env(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Nanoseconds of the real-time clock: comparable between processes on one host.
pub(crate) fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
