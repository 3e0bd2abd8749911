//! How long `history` takes over many nightly runs: 500 synthetic runs of 300 cases
//! each (4 configs x 3 rank counts x 25 sizes), written as results.csv and manifest
//! only (history reads no histogram unless asked), with a 10 % step at run 400.
//! Prints the time and the steps found, with the time for 50 runs beside it. The
//! goal: under 5 s for 500 runs on the 2-core development machine.
//!
//! Run with `cargo bench --bench history`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nccl_bench::export::csv::{self, CaseRow};
use nccl_bench::stats::Bandwidth;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nccl-bench"))
}

/// Run `i` of a nightly series, in one pass.
fn write_run(dir: &Path, i: usize, slow: f64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        format!(
            r#"{{"schema_version":1,"status":"complete","started_at":"2026-01-01T00:00:{i:05}Z","backend":{{"used":"host","note":"synthetic"}},"nccl":{{"version":"{}","path":"/opt/nccl/libnccl.so.2"}}}}"#,
            if slow > 1.0 { "2.23.4" } else { "2.21.5" }
        ),
    )
    .unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("results.csv")).unwrap());
    out.write_all(&csv::header().unwrap()).unwrap();
    let noise = 1.0 + ((i * 7919) % 30) as f64 / 1000.0;
    for c in 0..4 {
        for nranks in [2u32, 4, 8] {
            for s in 0..25u32 {
                let bytes = 8u64 << s;
                let scale = if bytes >= 1 << 20 { slow } else { 1.0 };
                let p50 = (5.0 + bytes as f64 / 1e4) * noise * scale;
                let bw = Bandwidth::allreduce(bytes, nranks, p50);
                let cells = CaseRow {
                    config: format!("config{c}"),
                    backend: "host".into(),
                    nranks,
                    bytes,
                    dtype: "float".into(),
                    op: "sum".into(),
                    iters: 1000,
                    status: "ok".into(),
                    time_us: Some(p50),
                    algbw_gbps: Some(bw.algbw.0),
                    busbw_gbps: Some(bw.busbw.0),
                    p50_us: Some(p50),
                    median_ci_low_us: Some(p50 * 0.997),
                    median_ci_high_us: Some(p50 * 1.003),
                    quality: "ok".into(),
                    ..CaseRow::default()
                };
                out.write_all(&csv::encode_row(&cells).unwrap()).unwrap();
            }
        }
    }
}

fn time_history(dir: &Path) -> (f64, usize) {
    let start = Instant::now();
    let o = Command::new(exe())
        .args(["history", "--format", "json"])
        .arg(dir)
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = h["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["steps"].as_array().unwrap().len())
        .sum();
    (secs, steps)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let (many, few) = (tmp.path().join("many"), tmp.path().join("few"));
    let t = Instant::now();
    for i in 0..500 {
        let slow = if i >= 400 { 1.10 } else { 1.0 };
        write_run(&many.join(format!("run-{i:03}")), i, slow);
        if i < 50 {
            write_run(&few.join(format!("run-{i:03}")), i, 1.0);
        }
    }
    println!(
        "synthetic runs: 500 x 300 cases written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (t_few, _) = time_history(&few);
    let (t_many, steps) = time_history(&many);
    println!("history of  50 runs: {t_few:6.2} s");
    println!(
        "history of 500 runs: {t_many:6.2} s ({steps} steps found: the step at run 400 in each config and rank count's largest size, 12 expected); {:.1} x the time of 50 runs",
        t_many / t_few
    );
}
