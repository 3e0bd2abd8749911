//! What recording a case costs as a run directory grows: a synthetic run of 10,000
//! cases written through `RunWriter` as a sweep writes them (15 rounds' histograms,
//! then the case's row and histogram, then the manifest update), and the time of cases
//! 100 and 10,000 side by side (the median of the 21 cases around each). Goal: within
//! 2x of each other, where rewriting whole files made it grow with the run.
//!
//! Usage: cargo bench --bench run_dir [-- CASES]   (default 10000)

use std::time::{Duration, Instant, SystemTime};

use nccl_bench::export::{RunDir, RunWriter};
use nccl_bench::model::{CaseKey, CaseResult, CaseStatus, RunManifest};
use nccl_bench::ops::collective::Collective;
use nccl_bench::ops::datatype::{DataType, ReduceOp};
use nccl_bench::stats::{LatencyRecorder, StopReason};

const ROUNDS: u32 = 15;

fn case(i: usize, recorder: &LatencyRecorder) -> CaseResult {
    let summary = recorder.summary();
    CaseResult {
        key: CaseKey {
            config: format!("config{}", i % 4),
            collective: Collective::AllReduce,
            nranks: 2 + (i / 4 % 3) as u32,
            bytes: 8 << (i % 28),
            dtype: DataType::Float,
            op: ReduceOp::Sum,
        },
        backend: "host".into(),
        status: CaseStatus::Ok,
        warmup: 5,
        graph: 0,
        latency: Some(summary),
        bandwidth: None,
        stop: Some(StopReason::Converged),
        wrong: 0,
        transports: "SHM:100%".into(),
        error: String::new(),
        started_at: "2026-11-27T12:00:00+00:00".into(),
        duration_s: 0.5,
        quality: None,
        quality_note: String::new(),
        timing_note: String::new(),
        ceiling_gbps: None,
        round_p50_us: vec![summary.p50_us; ROUNDS as usize],
        tuning: Default::default(),
        shm_backing: String::new(),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let cases: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let mut manifest = RunManifest::synthetic("host");
    let out = tempfile::tempdir().unwrap();
    let dir = RunDir::create(out.path(), "20261127-120000", "bench", None).unwrap();
    let writer = RunWriter::new(dir, SystemTime::now()).unwrap();
    writer.write_manifest(&manifest).unwrap();
    let mut recorder = LatencyRecorder::new();
    for i in 0..1000u64 {
        recorder.record(10_000 + (i * 7919) % 5_000);
    }
    let mut times = Vec::with_capacity(cases);
    let started = Instant::now();
    for i in 0..cases {
        let result = case(i, &recorder);
        let t = Instant::now();
        for round in 0..ROUNDS {
            let tag = nccl_bench::export::hlog::round_tag(&result.hist_tag(), round);
            writer
                .record_tagged_histogram(
                    recorder.histogram(),
                    &tag,
                    Duration::from_secs(i as u64),
                    Duration::from_millis(30),
                )
                .unwrap();
        }
        writer
            .record(
                &result,
                Some(recorder.histogram()),
                Duration::from_secs(i as u64),
            )
            .unwrap();
        manifest.cases.add(result.status);
        writer.update_manifest(&manifest).unwrap();
        times.push(t.elapsed());
    }
    writer.write_manifest(&manifest).unwrap();
    let total = started.elapsed();
    let around = |n: usize| {
        let n = n.clamp(11, cases - 10);
        median(times[n - 11..n + 10].to_vec())
    };
    let (early, late) = (around(100), around(cases));
    let size = |name: &str| {
        std::fs::metadata(writer.dir().file(name))
            .map(|m| m.len() as f64 / 1e6)
            .unwrap_or(0.0)
    };
    println!(
        "{cases} cases of {ROUNDS} rounds in {:.1} s; results.csv {:.1} MB, histograms.hlog {:.1} MB",
        total.as_secs_f64(),
        size("results.csv"),
        size("histograms.hlog")
    );
    println!(
        "record case 100:     {:>8.1} us (median of 21)",
        early.as_secs_f64() * 1e6
    );
    println!(
        "record case {cases}: {:>8.1} us (median of 21)",
        late.as_secs_f64() * 1e6
    );
    println!(
        "ratio: {:.2} (goal: at most 2)",
        late.as_secs_f64() / early.as_secs_f64()
    );
}
