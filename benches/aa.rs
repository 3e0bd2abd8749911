//! The decision model judged on things that are the same and on known differences,
//! each rate counted per sweep (the unit of independence) with its exact
//! (Clopper-Pearson) 95 % bounds:
//!
//! - config sweeps: one sweep of `default`, `same-as-default` (the same but for a
//!   variable nothing reads), `edge` (every all-reduce 2 % slower: exactly at the
//!   threshold) and `slow` (10 % slower), repeated. Per sweep: whether `compare
//!   --config-a default --config-b same-as-default` would exit 1; whether `edge` is
//!   called slower anywhere (the claim under test: at most 5 %); whether `slow` is
//!   found at every size from 64 KiB; on the simulated GPUs (NVLink, where SHM is not
//!   on the data path), whether the verdict on `shm-off` says keep SHM.
//! - the nightly recipe: sweeps of `default` one after the other; a baseline of the
//!   first 3, and each later one swept as a gate against it (`sweep --baseline`): its
//!   exit (0 pass, 1 fail, 3 not settled); consecutive runs compared (`compare` exit
//!   1); `history` over them (steps, one-offs); then gate sweeps of a run slower by
//!   `--nightly-slow` (host: 100 %, twice as slow; simulated GPUs: 10 %), each of
//!   which must exit 1.
//!
//! `--backend host` (default) measures this machine's CPU transports; `--backend sim
//! --sim-dir DIR` the simulated GPUs (scripts/build-gpu-sim.sh), each process group
//! at its own speed (`--jitter`, default 0.01).
//!
//! Run with `scripts/bench-aa.sh [--backend host|sim] [--repeats N]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nccl_bench::analysis::baseline;
use nccl_bench::analysis::compare::{compare, CompareOptions, CompareReport, Side};
use nccl_bench::analysis::history::{self, Options, DEFAULT_SIZES, DEFAULT_WINDOW};
use nccl_bench::analysis::verdict;
use nccl_bench::export::reader::RunData;
use nccl_bench::stats::change::{Change, DEFAULT_THRESHOLD, GATE_THRESHOLD};

/// Runs a baseline is built from, of the consecutive runs.
const BASELINE_RUNS: usize = 3;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nccl-bench"))
}

/// Where the collectives run.
enum Target {
    Host,
    Sim { dir: PathBuf, jitter: f64 },
}

struct Settings {
    target: Target,
    repeats: usize,
    keep: Option<PathBuf>,
    /// The config sweeps' largest size (`-e`).
    largest: String,
    /// How much slower the nightly recipe's slow runs are, percent.
    nightly_slow: u32,
}

fn usage() -> ! {
    eprintln!(
        "usage: bench-aa [--backend host|sim] [--sim-dir DIR] [--jitter S] [--repeats N] [--largest 128M] [--nightly-slow PCT] [--keep DIR]"
    );
    std::process::exit(2)
}

fn settings() -> Settings {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let (mut backend, mut sim_dir, mut jitter) = ("host".to_string(), None, 0.01);
    let mut s = Settings {
        target: Target::Host,
        repeats: 10,
        keep: None,
        largest: "128M".into(),
        nightly_slow: 0,
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--backend" => backend = value(),
            "--sim-dir" => sim_dir = Some(PathBuf::from(value())),
            "--jitter" => jitter = value().parse().unwrap_or_else(|_| usage()),
            "--repeats" => s.repeats = value().parse().unwrap_or_else(|_| usage()),
            "--keep" => s.keep = Some(PathBuf::from(value())),
            "--largest" => s.largest = value(),
            "--nightly-slow" => s.nightly_slow = value().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    s.target = match (backend.as_str(), sim_dir) {
        ("host", _) => Target::Host,
        ("sim", Some(dir)) => Target::Sim { dir, jitter },
        _ => usage(),
    };
    if s.nightly_slow == 0 {
        s.nightly_slow = match s.target {
            Target::Host => 100,
            Target::Sim { .. } => 10,
        };
    }
    if s.repeats < BASELINE_RUNS + 2 {
        usage();
    }
    s
}

/// A sweep command writing under `out`, on the target.
fn sweep(target: &Target, out: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") {
            c.env_remove(k);
        }
    }
    c.args(["sweep", "--plain", "--out"]).arg(out).args(args);
    match target {
        Target::Host => {
            c.args(["--backend", "host"]);
        }
        Target::Sim { dir, jitter } => {
            c.args(["--backend", "nccl", "--ceiling-bytes", "0", "--nccl-lib"])
                .arg(dir.join("libnccl.so.2"))
                .env("LD_LIBRARY_PATH", dir)
                .env("NCCL_BENCH_SIM_TOPO", "nvlink")
                .env("NCCL_BENCH_SIM_GPUS", "2")
                .env("NCCL_BENCH_SIM_GROUP_JITTER", jitter.to_string());
        }
    }
    c
}

/// Runs a sweep; returns its run directory (the newest under `out`) and its exit.
fn run(mut c: Command, out: &Path) -> (PathBuf, i32) {
    let before: Vec<PathBuf> = entries(out);
    let o = c.output().expect("start nccl-bench");
    let code = o.status.code().unwrap_or(-1);
    assert!(
        matches!(code, 0 | 1 | 3),
        "sweep failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = entries(out)
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new run directory");
    (dir, code)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn configs(run: &RunData, a: &str, b: &str) -> CompareReport {
    let opts = CompareOptions::new(DEFAULT_THRESHOLD);
    compare(&Side::config(run, a), &Side::config(run, b), opts).expect("the configs compare")
}

fn whole(run: &RunData) -> Side<'_> {
    Side {
        run,
        config: None,
        label: run.dir.display().to_string(),
    }
}

/// Per-sweep counts: (count, sweeps).
#[derive(Default)]
struct Rate(usize, usize);

impl Rate {
    fn add(&mut self, yes: bool) {
        self.0 += usize::from(yes);
        self.1 += 1;
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&nccl_bench::stats::proportion::rate_words(
            self.0 as u64,
            self.1 as u64,
        ))
    }
}

#[derive(Default)]
struct Rates {
    aa_exit: Rate,
    edge_slower: Rate,
    slow_found: Rate,
    verdict_keep: Rate,
    pair_exit: Rate,
    gate_fail: Rate,
    gate_open: Rate,
    gate_pass: Rate,
    slow_gate_fail: Rate,
    steps: usize,
    one_offs: usize,
    series: usize,
    /// The rounds each config took to its decision, over the config sweeps.
    rounds_taken: Vec<(String, u32)>,
}

impl Rates {
    /// The median rounds `config` took, and the fewest and most.
    fn rounds_of(&self, config: &str) -> String {
        let mut r: Vec<u32> = self
            .rounds_taken
            .iter()
            .filter(|(c, _)| c == config)
            .map(|(_, r)| *r)
            .collect();
        r.sort_unstable();
        match (r.first(), r.last()) {
            (Some(lo), Some(hi)) => format!("{} ({lo} to {hi})", r[(r.len() - 1) / 2]),
            _ => "-".into(),
        }
    }
}

/// A config TOML with these (name, env) configs.
fn toml(configs: &[(&str, Option<String>)]) -> String {
    configs
        .iter()
        .map(|(name, env)| match env {
            Some(env) => format!("[[config]]\nname = \"{name}\"\nenv = {{ {env} }}\n\n"),
            None => format!("[[config]]\nname = \"{name}\"\n\n"),
        })
        .collect()
}

fn measure(s: &Settings, scratch: &Path) -> Rates {
    let mut rates = Rates::default();
    let slower = |pct: f64| match s.target {
        Target::Host => format!(r#"NCCL_BENCH_FAULT = "slow:pct={pct}""#),
        Target::Sim { .. } => format!(
            r#"NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN = "{}""#,
            1.0 + pct / 100.0
        ),
    };
    let sim = matches!(s.target, Target::Sim { .. });
    let mut list = vec![
        ("default", None),
        (
            "same-as-default",
            Some(r#"NCCL_BENCH_AA = "1""#.to_string()),
        ),
        ("edge", Some(slower(DEFAULT_THRESHOLD * 100.0))),
        ("slow", Some(slower(10.0))),
    ];
    // On NVLink SHM carries nothing: disabling it is an A/A pair for the verdict.
    if sim {
        list.push(("shm-off", Some(r#"NCCL_SHM_DISABLE = "1""#.to_string())));
    }
    let config = scratch.join("configs.toml");
    std::fs::write(&config, toml(&list)).unwrap();
    let out = scratch.join("configs");
    for i in 0..s.repeats {
        let args = [
            "--config",
            config.to_str().unwrap(),
            "-b",
            "8",
            "-e",
            &s.largest,
            "-f",
            "4",
        ];
        let (dir, _) = run(sweep(&s.target, &out, &args), &out);
        let data = RunData::load(&dir).unwrap();
        for g in &data.manifest.group_rounds {
            rates.rounds_taken.push((g.config.clone(), g.rounds));
        }
        rates
            .aa_exit
            .add(configs(&data, "default", "same-as-default").fails());
        let edge = configs(&data, "default", "edge");
        rates
            .edge_slower
            .add(edge.decision.count(Change::Slower) > 0);
        let slow = configs(&data, "default", "slow");
        let large: Vec<_> = slow.rows.iter().filter(|r| r.bytes >= 64 << 10).collect();
        rates
            .slow_found
            .add(large.iter().all(|r| r.case.change == Change::Slower));
        if sim {
            let v = verdict::decide(&data, "default", CompareOptions::new(DEFAULT_THRESHOLD));
            rates.verdict_keep.add(v.change() == Some(Change::Slower));
        }
        eprint!("\r  config sweep {}/{}", i + 1, s.repeats);
    }
    eprintln!();
    // The nightly recipe: a baseline of the first runs, then gate sweeps.
    let nightly = scratch.join("nightly");
    let plain = ["--transports", "default", "-b", "1K", "-e", "4M", "-f", "4"];
    let mut runs: Vec<RunData> = Vec::new();
    let base_file = scratch.join("baseline.json");
    for i in 0..s.repeats {
        let mut args: Vec<&str> = plain.to_vec();
        let gated = i >= BASELINE_RUNS;
        if gated && !base_file.exists() {
            let base = baseline::build(&runs[..BASELINE_RUNS], "bench".into()).unwrap();
            std::fs::write(&base_file, serde_json::to_vec_pretty(&base).unwrap()).unwrap();
        }
        let base_arg = base_file.to_string_lossy().into_owned();
        if gated {
            args.extend(["--baseline", &base_arg]);
        }
        let (dir, code) = run(sweep(&s.target, &nightly, &args), &nightly);
        if gated {
            rates.gate_pass.add(code == 0);
            rates.gate_fail.add(code == 1);
            rates.gate_open.add(code == 3);
        }
        runs.push(RunData::load(&dir).unwrap());
        eprint!("\r  nightly run {}/{}   ", i + 1, s.repeats);
    }
    eprintln!();
    for pair in runs.windows(2) {
        let opts = CompareOptions::new(DEFAULT_THRESHOLD);
        let r = compare(&whole(&pair[0]), &whole(&pair[1]), opts).unwrap();
        rates.pair_exit.add(r.fails());
    }
    let h = history::build(
        &runs,
        &Options {
            sizes: DEFAULT_SIZES.to_vec(),
            threshold: GATE_THRESHOLD,
            window: DEFAULT_WINDOW,
        },
    );
    rates.series = h.series.len();
    rates.steps = h.series.iter().map(|s| s.steps.len()).sum();
    rates.one_offs = h.series.iter().map(|s| s.one_offs.len()).sum();
    // Slow nights: the same sweep with every all-reduce slower, as `default`.
    let slow_config = scratch.join("slow-night.toml");
    std::fs::write(
        &slow_config,
        toml(&[("default", Some(slower(f64::from(s.nightly_slow))))]),
    )
    .unwrap();
    let tries = (s.repeats / 2).max(3);
    for i in 0..tries {
        let base_arg = base_file.to_string_lossy().into_owned();
        let args = [
            "--config",
            slow_config.to_str().unwrap(),
            "-b",
            "1K",
            "-e",
            "4M",
            "-f",
            "4",
            "--baseline",
            &base_arg,
        ];
        let (_, code) = run(sweep(&s.target, &nightly, &args), &nightly);
        rates.slow_gate_fail.add(code == 1);
        eprint!("\r  slow night {}/{}   ", i + 1, tries);
    }
    eprintln!();
    rates
}

fn main() {
    let s = settings();
    let scratch = match &s.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).unwrap();
            dir.clone()
        }
        None => tempfile::tempdir().unwrap().keep(),
    };
    let what = match &s.target {
        Target::Host => "host backend (CPU processes), this machine".to_string(),
        Target::Sim { jitter, .. } => format!(
            "simulated GPUs, 2 on NVLink, process groups {:.1} % apart",
            jitter * 100.0
        ),
    };
    println!(
        "The decision model, {what}; {} sweeps of each kind; threshold {:.0} % (gate {:.0} %)",
        s.repeats,
        DEFAULT_THRESHOLD * 100.0,
        GATE_THRESHOLD * 100.0
    );
    let start = Instant::now();
    let r = measure(&s, &scratch);
    let line = |name: &str, cell: String, goal: &str| println!("{name:<58}{cell:>28}  {goal}");
    println!();
    line(
        "A/A configs: compare exits 1",
        r.aa_exit.to_string(),
        "<= 5 %",
    );
    line(
        "a config 2 % slower (at the threshold): called slower",
        r.edge_slower.to_string(),
        "<= 5 %",
    );
    line(
        "a config 10 % slower: slower at every size from 64 KiB",
        r.slow_found.to_string(),
        ">= 95 %",
    );
    if matches!(s.target, Target::Sim { .. }) {
        line(
            "A/A SHM verdict (shm-off on NVLink): keep SHM",
            r.verdict_keep.to_string(),
            "<= 5 %",
        );
    }
    line(
        "nightly, identical runs: the gate fails (exit 1)",
        r.gate_fail.to_string(),
        "<= 1 %",
    );
    line(
        "nightly, identical runs: not settled (exit 3)",
        r.gate_open.to_string(),
        "",
    );
    line(
        "nightly, identical runs: the gate passes (exit 0)",
        r.gate_pass.to_string(),
        "",
    );
    line(
        &format!("nightly, a run {} % slower: the gate fails", s.nightly_slow),
        r.slow_gate_fail.to_string(),
        "every try",
    );
    line(
        "consecutive runs: compare exits 1",
        r.pair_exit.to_string(),
        "",
    );
    line(
        "history of the nightly runs: steps, one-offs",
        format!("{}, {} ({} series)", r.steps, r.one_offs, r.series),
        "0, 0",
    );
    for config in ["same-as-default", "edge", "slow", "shm-off"] {
        line(
            &format!("rounds to a decision, median: {config}"),
            r.rounds_of(config),
            "",
        );
    }
    line(
        "time",
        format!("{:.0} s", start.elapsed().as_secs_f64()),
        "",
    );
    println!("\nrun directories: {}", scratch.display());
}
