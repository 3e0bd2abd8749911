//! What the host-backend benchmarks share: the nccl-bench binary, a sweep run into a
//! temporary directory and its CSV rows, and this machine's single-core memcpy rate.
//! (Each bench uses part of it.)

#![allow(dead_code)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

pub const MIB64: usize = 64 << 20;

/// Column indices in results.csv (the stable schema).
pub const CONFIG: usize = 0;
pub const BYTES: usize = 3;
pub const ITERS: usize = 6;
pub const TIME_US: usize = 8;
pub const BUSBW: usize = 10;
pub const P50: usize = 11;

pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nccl-bench"))
}

/// Best-of-N single-core memcpy bandwidth of a 64 MiB buffer, GB/s (bytes copied / s).
pub fn memcpy_gbps() -> f64 {
    let src = vec![1u8; MIB64];
    let mut dst = vec![0u8; MIB64];
    dst.copy_from_slice(&src); // fault the pages in
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let t = Instant::now();
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
    }
    MIB64 as f64 / best / 1e9
}

pub fn csv_rows(run_parent: &Path) -> Vec<csv::StringRecord> {
    let run = std::fs::read_dir(run_parent)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut r = csv::Reader::from_path(run.join("results.csv")).unwrap();
    r.records().map(Result::unwrap).collect()
}

/// Runs a host-backend sweep with `args` and returns its rows; the directory lives
/// as long as the returned guard. Cases are not re-measured: a benchmark of the
/// backend must see every first measurement, stalls included.
pub fn sweep(args: &[&str]) -> (Vec<csv::StringRecord>, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(exe())
        .args(["sweep", "--backend", "host", "--plain", "--out"])
        .arg(out.path())
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (csv_rows(out.path()), out)
}

/// The 64 MiB SHM all-reduce busbw of 2 ranks, GB/s.
pub fn shm_busbw_64m(iters: &str) -> f64 {
    let (rows, _keep) = sweep(&[
        "--gpus",
        "2",
        "--transports",
        "default",
        "-b",
        "64M",
        "-e",
        "64M",
        "-n",
        iters,
        "-w",
        "3",
    ]);
    rows[0][BUSBW].parse().unwrap()
}
