//! The host backend's speed goals, measured side by side in one run (not a timed
//! test): SHM all-reduce busbw at 64 MiB with 2 ranks against this machine's
//! single-core memcpy bandwidth, TCP loopback beside it, the 8-byte latency on the SHM
//! path, how much of an iteration is the harness's own bookkeeping, and whether the
//! orchestrator's memory stays flat over thousands of cases.
//!
//! Run with `scripts/bench-host.sh` (or `cargo bench --bench host_backend`).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{csv_rows, exe, memcpy_gbps, sweep, BUSBW, BYTES, CONFIG, ITERS, P50, TIME_US};
use nccl_bench::backend::host::{HostBackend, HostOptions, DEFAULT_BUFFSIZE};
use nccl_bench::backend::Backend;
use nccl_bench::ops::pattern::Pattern;
use nccl_bench::ops::{DataType, ReduceOp};

/// Nanoseconds per iteration of the timing loop around a 1-rank, 8-byte all-reduce
/// (an 8-byte copy): the harness's own cost per measured iteration.
fn harness_overhead_ns() -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let opts = HostOptions {
        shm_dir: dir.path().to_path_buf(),
        segment_prefix: "bench".into(),
        use_shm: true,
        buffsize: DEFAULT_BUFFSIZE,
        max_bytes: 8,
        dtype: DataType::Float,
        op: ReduceOp::Sum,
        init_timeout: Duration::from_secs(10),
        corrupt: false,
        hang_with_segment: false,
        slowdown: 0.0,
        stores: nccl_bench::backend::host::ring::Stores::Measured,
        collective: nccl_bench::ops::collective::Collective::AllReduce,
        root: 0,
        pin_cpus: false,
        cpu: None,
        bind: nccl_bench::backend::host::LOOPBACK,
    };
    let mut backend = HostBackend::new(opts);
    let id = backend.unique_id().unwrap();
    let mut comm = backend.init(&id, 0, 1).unwrap();
    comm.fill_input(&Pattern::new(DataType::Float, ReduceOp::Sum, 0, 1), 8)
        .unwrap();
    let mut durations = vec![0u64; 1 << 16];
    let mut best = f64::INFINITY;
    for _ in 0..20 {
        comm.timed_batch(8, 1, &mut durations).unwrap();
        let mean = durations.iter().sum::<u64>() as f64 / durations.len() as f64;
        best = best.min(mean);
    }
    best
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs 2,048 tiny cases and samples the orchestrator's resident memory.
fn orchestrator_memory() -> (u64, u64, u64, usize) {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(exe())
        .args([
            "sweep",
            "--backend",
            "host",
            "--plain",
            "--gpus",
            "2",
            "--transports",
            "default",
        ])
        .args([
            "-b", "8", "-e", "16K", "-i", "8", "-n", "3", "-w", "1", "--out",
        ])
        .arg(out.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // (RSS, CSV lines so far): "late" is the last sample taken while cases were
    // still being measured, not the report written at the end (which decodes every
    // histogram at once).
    let lines = || -> usize {
        std::fs::read_dir(out.path())
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("results.csv")).ok())
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let mut samples: Vec<(u64, usize)> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        if let Some(kib) = rss_kib(child.id()) {
            samples.push((kib, lines()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cases = csv_rows(out.path()).len();
    let measuring: Vec<u64> = samples
        .iter()
        .filter(|(_, n)| *n > 1 && *n <= cases)
        .map(|s| s.0)
        .collect();
    let early = measuring[measuring.len() / 10];
    let late = *measuring.last().unwrap();
    let max = samples.iter().map(|s| s.0).max().unwrap();
    (early, late, max, cases)
}

fn main() {
    println!("host backend (CPU), not NCCL: speed goals measured side by side\n");
    let memcpy = memcpy_gbps();
    println!("single-core memcpy, 64 MiB:            {memcpy:8.2} GB/s");

    let (rows, _keep) = sweep(&[
        "--gpus",
        "2",
        "--transports",
        "default,shm-off",
        "-b",
        "64M",
        "-e",
        "64M",
        "-n",
        "30",
        "-w",
        "3",
    ]);
    let busbw = |config: &str| -> f64 {
        rows.iter()
            .find(|r| &r[CONFIG] == config)
            .map(|r| r[BUSBW].parse().unwrap())
            .unwrap()
    };
    let (shm, tcp) = (busbw("default"), busbw("shm-off"));
    println!(
        "SHM all-reduce, 2 ranks, 64 MiB busbw:  {shm:8.2} GB/s  = {:.2} x memcpy (goal >= 0.40)",
        shm / memcpy
    );
    println!(
        "TCP loopback all-reduce, 64 MiB busbw:  {tcp:8.2} GB/s  = {:.2} x memcpy",
        tcp / memcpy
    );

    let (rows, _keep) = sweep(&[
        "--gpus",
        "2",
        "--transports",
        "default",
        "-b",
        "8",
        "-e",
        "8",
        "-n",
        "200000",
        "-w",
        "1000",
    ]);
    let p50: f64 = rows[0][P50].parse().unwrap();
    let mean: f64 = rows[0][TIME_US].parse().unwrap();
    println!(
        "SHM all-reduce, 2 ranks, 8 B:           p50 {p50:.3} us, mean {mean:.3} us over {} iterations (goal p50 <= 1 us)",
        &rows[0][ITERS]
    );
    let overhead = harness_overhead_ns();
    println!(
        "harness bookkeeping per iteration:      {overhead:8.1} ns  = {:.1} % of the 8 B p50 (timestamp + store, 1-rank 8-byte copy included)",
        overhead / (p50 * 1e3) * 100.0
    );
    assert_eq!(&rows[0][BYTES], "8");

    let (early, late, max, cases) = orchestrator_memory();
    println!(
        "orchestrator RSS over {cases} cases:       {early} KiB after 10 %, {late} KiB at the last case ({:+.1} %), {max} KiB peak with the report",
        (late as f64 - early as f64) / early as f64 * 100.0
    );
}
