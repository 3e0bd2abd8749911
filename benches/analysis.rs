//! How long the commands that read finished runs take on a large synthetic run:
//! 10,000 cases (10 configs x 4 rank counts x 250 sizes), each with a histogram of
//! 2,000 iterations: compare with itself and with a copy 3 % slower, and report
//! (tables, verdict and every plot), and the size and rendering time of its
//! report.html.
//!
//! Run with `cargo bench --bench analysis`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use nccl_bench::export::csv::{self, CaseRow};
use nccl_bench::export::hlog;
use nccl_bench::stats::{Bandwidth, LatencyRecorder};

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nccl-bench"))
}

/// Writes the run in one pass (the sweep's per-case atomic rewrite is for crash
/// safety during hours of measuring, not for generating test data).
fn write_run(dir: &Path, scale: f64) -> usize {
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        r#"{"schema_version":1,"status":"complete","backend":{"used":"host","note":"synthetic"}}"#,
    )
    .unwrap();
    let mut csv_out =
        std::io::BufWriter::new(std::fs::File::create(dir.join("results.csv")).unwrap());
    let mut hlog_out =
        std::io::BufWriter::new(std::fs::File::create(dir.join("histograms.hlog")).unwrap());
    csv_out.write_all(&csv::header().unwrap()).unwrap();
    hlog_out
        .write_all(&hlog::header(SystemTime::UNIX_EPOCH).unwrap())
        .unwrap();
    let mut cases = 0;
    for c in 0..10 {
        for nranks in [2u32, 4, 8, 16] {
            for s in 0..250u64 {
                let bytes = 1024 * (s + 1);
                let mut rec = LatencyRecorder::new();
                let base = 5_000.0 + bytes as f64 / 8.0;
                for j in 0..2000u64 {
                    let noise = 1.0 + ((j * 7919 + s * 13 + c) % 100) as f64 / 2000.0;
                    rec.record((base * noise * scale) as u64);
                }
                let sum = rec.summary();
                let bw = Bandwidth::allreduce(bytes, nranks, sum.mean_us);
                let config = match c {
                    0 => "default".to_string(),
                    1 => "shm-off".to_string(),
                    _ => format!("config{c}"),
                };
                let tag = format!("{config}/n{nranks}/{bytes}/float/sum");
                let cells = CaseRow {
                    config,
                    backend: "host".into(),
                    nranks,
                    bytes,
                    dtype: "float".into(),
                    op: "sum".into(),
                    iters: sum.count,
                    status: "ok".into(),
                    time_us: Some(sum.mean_us),
                    algbw_gbps: Some(bw.algbw.0),
                    busbw_gbps: Some(bw.busbw.0),
                    p50_us: Some(sum.p50_us),
                    p99_us: Some(sum.p99_us),
                    max_us: Some(sum.max_us),
                    hist_tag: tag.clone(),
                    ..CaseRow::default()
                };
                csv_out
                    .write_all(&csv::encode_row(&cells).unwrap())
                    .unwrap();
                hlog_out
                    .write_all(
                        &hlog::line(
                            rec.histogram(),
                            &tag,
                            Duration::ZERO,
                            Duration::from_millis(100),
                        )
                        .unwrap(),
                    )
                    .unwrap();
                cases += 1;
            }
        }
    }
    cases
}

fn time_compare(base: &Path, cand: &Path) -> (Duration, i32) {
    let start = Instant::now();
    let o = Command::new(exe())
        .args(["compare", "--format", "csv"])
        .arg(base)
        .arg(cand)
        .output()
        .unwrap();
    (start.elapsed(), o.status.code().unwrap_or(-1))
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let t = Instant::now();
    let n = write_run(&a, 1.0);
    write_run(&b, 1.03);
    println!(
        "synthetic runs: 2 x {n} cases, 2,000 iterations each, written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (same, code_same) = time_compare(&a, &a);
    println!(
        "compare, run with itself:     {:6.2} s for {n} cases (exit {code_same})",
        same.as_secs_f64()
    );
    let (slower, code_slower) = time_compare(&a, &b);
    println!(
        "compare, run vs 3 % slower:   {:6.2} s for {n} cases (exit {code_slower})",
        slower.as_secs_f64()
    );
    let start = Instant::now();
    let o = Command::new(exe()).arg("report").arg(&a).output().unwrap();
    let plots = std::fs::read_dir(a.join("plots"))
        .map(|d| d.count())
        .unwrap_or(0);
    println!(
        "report (tables, verdict, {plots} plot files): {:6.2} s for {n} cases (exit {:?})",
        start.elapsed().as_secs_f64(),
        o.status.code()
    );
    // report.html on its own: the page from report.md and the charts it inlines.
    let md = std::fs::read_to_string(a.join("report.md")).unwrap_or_default();
    let start = Instant::now();
    let page = nccl_bench::report::html::page("bench", &md, Some(&a));
    let took = start.elapsed();
    let written = std::fs::metadata(a.join("report.html"))
        .map(|m| m.len())
        .unwrap_or(0);
    let charts: usize = page
        .match_indices("<svg")
        .map(|(at, _)| page[at..].find("</svg>").unwrap_or(0))
        .sum();
    println!(
        "report.html: {:.2} MB ({:.2} MB of it {} inline charts), rendered in {:.3} s from report.md (goals: under 10 MB, under 1 s; the file report wrote: {:.2} MB)",
        page.len() as f64 / 1e6,
        charts as f64 / 1e6,
        page.matches("<svg").count(),
        took.as_secs_f64(),
        written as f64 / 1e6
    );
}
