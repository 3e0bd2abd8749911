//! Carry-over on the host backend: what a config 25 % slower leaves behind for the
//! process group that follows it, and what the chained Williams order makes of that
//! in an A/A pair. One sweep of `default`, `same-as-default` and `slow`
//! (`NCCL_BENCH_FAULT=slow:pct=25`) at fixed iterations, then per size:
//!
//! - **follows slow:** how much slower a group is when it follows `slow` rather than
//!   another config. In each round one config of the A/A pair may follow `slow`; the
//!   round's log ratio of the pair then holds the carry-over with that config's sign.
//!   Half the difference of the mean ratios of the two kinds of round, with a Welch
//!   t interval (95 %), estimates it with each round's drift cancelled. This is the
//!   bias a fixed order would put on one config of the pair.
//! - **A/A pair:** `same-as-default` against `default`, paired by round as the
//!   decision reads it (`stats::change::paired`), with its 95 % t interval. This is the
//!   bias the chained order leaves.
//!
//! Run with `cargo bench --bench carry_over -- [--rounds 600] [-b 256K] [-e 4M]
//! [--keep DIR]` (at most 1,000 rounds, as `sweep --rounds` takes; sizes from `-b`
//! to `-e`, 4x apart); `--from RUN_DIR` reads a run it made.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nccl_bench::export::reader::RunData;
use nccl_bench::stats::change::paired;
use statrs::distribution::{ContinuousCDF, StudentsT};

const CONFIGS: &str = r#"[[config]]
name = "default"
description = "NCCL's own choice"

[[config]]
name = "same-as-default"
description = "the same as default"

[[config]]
name = "slow"
description = "25 % slower"
env = { NCCL_BENCH_FAULT = "slow:pct=25" }
"#;

fn usage() -> ! {
    eprintln!("usage: carry_over [--rounds N] [-b SIZE] [-e SIZE] [--keep DIR] [--from RUN_DIR]");
    std::process::exit(2)
}

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom.
fn t95(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(f64::NAN)
}

/// A log difference with its interval, as percent: `+0.21 % (-0.08 to +0.51)`.
fn pct(log: f64, half: f64) -> String {
    let p = |x: f64| 100.0 * x.exp_m1();
    format!(
        "{:+.2} % ({:+.2} to {:+.2})",
        p(log),
        p(log - half),
        p(log + half)
    )
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0)
}

/// The difference of two means with a Welch interval (Welch 1947).
fn welch(a: &[f64], b: &[f64]) -> (f64, f64) {
    let (va, vb) = (var(a) / a.len() as f64, var(b) / b.len() as f64);
    let df = (va + vb).powi(2)
        / (va.powi(2) / (a.len() as f64 - 1.0) + vb.powi(2) / (b.len() as f64 - 1.0));
    (mean(a) - mean(b), t95(df) * (va + vb).sqrt())
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let (mut rounds, mut keep, mut from) = (600u32, None::<PathBuf>, None::<PathBuf>);
    let (mut begin, mut end) = ("256K".to_string(), "4M".to_string());
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--rounds" => rounds = value().parse().unwrap_or_else(|_| usage()),
            "-b" => begin = value(),
            "-e" => end = value(),
            "--keep" => keep = Some(PathBuf::from(value())),
            "--from" => from = Some(PathBuf::from(value())),
            _ => usage(),
        }
    }
    if let Some(dir) = from {
        return report(&dir, 0.0);
    }
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let toml = scratch.path().join("configs.toml");
    std::fs::write(&toml, CONFIGS).expect("write the configs");
    let dir = keep.unwrap_or_else(|| scratch.path().join("run"));
    let started = Instant::now();
    let mut c = Command::new(env!("CARGO_BIN_EXE_nccl-bench"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")) {
        c.env_remove(k);
    }
    let rounds_arg = rounds.to_string();
    let o = c
        .args([
            "sweep",
            "--plain",
            "--backend",
            "host",
            "--gpus",
            "2",
            "--config",
        ])
        .arg(&toml)
        .args(["-b", &begin, "-e", &end, "-f", "4", "-n", "50", "--rounds"])
        .arg(&rounds_arg)
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .expect("start nccl-bench");
    assert!(
        o.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    report(&dir, started.elapsed().as_secs_f64());
}

fn report(dir: &Path, seconds: f64) {
    let run = RunData::load(dir).expect("the run reads back");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let rows: Vec<Vec<String>> =
        serde_json::from_value(manifest["design"]["rows"][0]["rows"].clone())
            .expect("the manifest's order rows");
    println!(
        "carry-over on the host: {} rounds of default, same-as-default and slow (25 %), {seconds:.0} s",
        run.manifest.rounds
    );
    let mut sizes: Vec<u64> = run.cases.iter().map(|c| c.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for bytes in sizes {
        let medians = |config: &str| {
            run.cases
                .iter()
                .find(|c| c.bytes == bytes && c.config == config)
                .map(|c| c.round_medians())
                .unwrap_or_default()
        };
        let (base, same) = (medians("default"), medians("same-as-default"));
        let n = base.len().min(same.len());
        // The groups in the order they ran, each with the config before it.
        let order: Vec<(usize, &str)> = (0..n)
            .flat_map(|r| rows[r % rows.len()].iter().map(move |c| (r, c.as_str())))
            .collect();
        // Per round, which of the pair follows slow: +1 same-as-default, -1 default.
        let mut follows = vec![0i32; n];
        for w in order.windows(2).filter(|w| w[0].1 == "slow") {
            match w[1].1 {
                "same-as-default" => follows[w[1].0] += 1,
                "default" => follows[w[1].0] -= 1,
                _ => {}
            }
        }
        let ratio = |r: usize| same[r].ln() - base[r].ln();
        let of =
            |side: i32| -> Vec<f64> { (0..n).filter(|&r| follows[r] == side).map(ratio).collect() };
        let (after_slow, after_other) = (of(1), of(-1));
        // Each round's ratio holds +carry where same-as-default follows slow, -carry
        // where default does: half their difference, the round's drift cancelled.
        let (twice, twice_half) = welch(&after_slow, &after_other);
        let (carry, carry_half) = (twice / 2.0, twice_half / 2.0);
        let aa = paired(&base[..n], &same[..n]).expect("an A/A estimate");
        let aa_half = aa.se.map_or(f64::NAN, |se| t95(aa.df) * se);
        println!(
            "{:>9}: follows slow {}; A/A pair {}",
            nccl_bench::units::Bytes(bytes).to_string(),
            pct(carry, carry_half),
            pct(aa.log, aa_half)
        );
    }
}
