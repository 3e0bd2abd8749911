//! The host backend's speed goals, measured side by side in one run (not a timed
//! test): SHM all-reduce busbw at 64 MiB with 2 ranks against this machine's
//! single-core memcpy bandwidth, TCP loopback beside it, the 8-byte latency on the SHM
//! path, how much of an iteration is the harness's own bookkeeping, whether the
//! orchestrator's memory stays flat over thousands of cases, and all_reduce,
//! all_gather, reduce_scatter and alltoall at 64 MiB against Open MPI's shared-memory
//! path (vader) on the same 2 cores (`benches/mpi/collectives.c`, built with mpicc).
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

/// The median time of each collective at 64 MiB on 2 ranks, ours (SHM ring) and Open
/// MPI's (`MPI_Allreduce`, `MPI_Allgather`, `MPI_Reduce_scatter_block`,
/// `MPI_Alltoall` over vader), measured one after the other in this run, and their
/// ratio. Said and skipped where Open MPI (mpicc and mpirun) is not installed.
fn against_open_mpi(memcpy_gbps: f64) {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("collectives");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/mpi/collectives.c");
    let built = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(&prog)
        .arg(source)
        .output();
    match built {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            println!("Open MPI comparison skipped: mpicc failed: {}", why.trim());
            return;
        }
        Err(e) => {
            println!("Open MPI comparison skipped: no mpicc ({e}); apt-get install libopenmpi-dev");
            return;
        }
    }
    let size = (64u64 << 20).to_string();
    let mut mpirun = Command::new("mpirun");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        mpirun.arg("--allow-run-as-root");
    }
    let o = mpirun
        .args([
            "--oversubscribe",
            "--bind-to",
            "core",
            "--mca",
            "btl",
            "self,vader",
        ])
        .args(["-np", "2"])
        .arg(&prog)
        .args([size.as_str(), "20", "3"])
        .output()
        .expect("mpirun");
    if !o.status.success() {
        println!(
            "Open MPI comparison skipped: mpirun failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return;
    }
    let theirs: Vec<(String, f64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect();
    let (rows, _keep) = sweep(&[
        "--gpus",
        "2",
        "--transports",
        "default",
        "--coll",
        "all_reduce,all_gather,reduce_scatter,alltoall",
        "-b",
        "64M",
        "-e",
        "64M",
        "-n",
        "20",
        "-w",
        "3",
    ]);
    let header = String::from_utf8(nccl_bench::export::csv::header().unwrap()).unwrap();
    let column = header
        .trim_end()
        .split(',')
        .position(|c| c == "collective")
        .unwrap();
    println!("\n64 MiB of float on 2 ranks, median time (ours: SHM ring; Open MPI 'mpirun --mca btl self,vader'):");
    for (name, mpi_us) in theirs {
        let Some(ours) = rows.iter().find(|r| r[column] == *name) else {
            continue;
        };
        let us: f64 = ours[P50].parse().unwrap();
        // Every rank writes its whole output (64 MiB for all_gather and alltoall,
        // 32 MiB for reduce_scatter) on its own core: at memcpy's rate that alone
        // takes this long, whatever the algorithm.
        let out_bytes = if name == "reduce_scatter" {
            32 << 20
        } else {
            64 << 20
        } as f64;
        let floor_us = out_bytes / (memcpy_gbps * 1e3);
        println!(
            "  {name:<15} ours {us:10.1} us   Open MPI {mpi_us:10.1} us   = {:.2} x Open MPI's speed (goal >= 2; writing the output alone: {floor_us:.0} us, at most {:.2} x)",
            mpi_us / us,
            mpi_us / floor_us
        );
    }
    println!();
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

    against_open_mpi(memcpy);

    let (early, late, max, cases) = orchestrator_memory();
    println!(
        "orchestrator RSS over {cases} cases:       {early} KiB after 10 %, {late} KiB at the last case ({:+.1} %), {max} KiB peak with the report",
        (late as f64 - early as f64) / early as f64 * 100.0
    );
}
