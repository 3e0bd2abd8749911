//! The statistics judged on things that are the same, and on a known difference:
//!
//! - A/A configs: one sweep of `default`, `same-as-default` (the same but for a
//!   variable nothing reads) and `slow` (every all-reduce 10 % slower), repeated;
//!   `compare RUN --config-a default --config-b same-as-default` must flag nothing
//!   (the cases flagged, and the compares that would exit 1), and `default` against
//!   `slow` must find the slowdown at 64 KiB and above (the detection rate);
//! - consecutive identical runs: sweeps of `default` one after the other; `compare`
//!   of each pair must not exit 1, and `history` over them must find no step and no
//!   one-off; `check` of each later run against a baseline of the first 3 (what
//!   `compare` of two runs points to for run-to-run variation) must not exit 1.
//!
//! - equivalence: a config 1 % slower (`slight`) must be declared equivalent within
//!   the 2 % margin over its family (goal: in at least 80 % of sweeps);
//! - the SHM verdict on an A/A pair (simulated GPUs on NVLink only, where SHM is not
//!   on the data path, so `shm-off` moves the same bytes the same way): "Keep SHM"
//!   is a false alarm (goal: at most 5 %).
//!
//! Every rate is printed with its exact (Clopper-Pearson) 95 % bounds.
//!
//! Each measurement is made for every `--rounds` setting asked for (default
//! `1,default`: one process group per config, and the sweep's own default), side by
//! side, so the
//! effect of measuring the variation between process groups shows in one run. Goals
//! (issue: comparisons that hold up): at most 5 % of A/A cases flagged, at most 1 in
//! 10 A/A compares exiting 1, a 10 % slowdown found in at least 95 % of the cases at
//! 64 KiB and above, no step or one-off in the history of identical runs.
//!
//! `--backend host` (default) measures this machine's CPU transports; `--backend sim
//! --sim-dir DIR` the simulated GPUs (scripts/build-gpu-sim.sh) with
//! `NCCL_BENCH_SIM_GROUP_JITTER` giving each process group its own speed (`--jitter`,
//! default 0.03) and the stand-in's all-reduce slowdown for `slow`.
//!
//! Run with `scripts/bench-aa.sh [--backend host|sim] [--repeats N] [--rounds LIST]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nccl_bench::analysis::baseline;
use nccl_bench::analysis::compare::{compare, CompareOptions, CompareReport, Outcome, Side};
use nccl_bench::analysis::family::Answer;
use nccl_bench::analysis::history::{self, Options, DEFAULT_SIZES, DEFAULT_WINDOW};
use nccl_bench::analysis::verdict::{self, Verdict};
use nccl_bench::export::reader::RunData;
use nccl_bench::stats::compare::{DEFAULT_RESAMPLES, DEFAULT_THRESHOLD};

/// Runs a baseline is built from, of the consecutive runs; `check` needs 3 or more.
const BASELINE_RUNS: usize = 3;
/// `check --threshold`'s default.
const CHECK_THRESHOLD: f64 = 0.05;

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
    /// `--rounds` values; `None` for the sweep's default.
    rounds: Vec<Option<u32>>,
    keep: Option<PathBuf>,
    /// The config sweeps' largest size (`-e`): 128M, the default grid's end.
    largest: String,
}

fn usage() -> ! {
    eprintln!(
        "usage: bench-aa [--backend host|sim] [--sim-dir DIR] [--jitter S] [--repeats N] [--rounds 1,default] [--largest 128M] [--keep DIR]"
    );
    std::process::exit(2)
}

fn settings() -> Settings {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let (mut backend, mut sim_dir, mut jitter) = ("host".to_string(), None, 0.03);
    let mut s = Settings {
        target: Target::Host,
        repeats: 10,
        rounds: vec![Some(1), None],
        keep: None,
        largest: "128M".into(),
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--backend" => backend = value(),
            "--sim-dir" => sim_dir = Some(PathBuf::from(value())),
            "--jitter" => jitter = value().parse().unwrap_or_else(|_| usage()),
            "--repeats" => s.repeats = value().parse().unwrap_or_else(|_| usage()),
            "--rounds" => {
                s.rounds = value()
                    .split(',')
                    .map(|r| match r.trim() {
                        "default" => None,
                        n => Some(n.parse().unwrap_or_else(|_| usage())),
                    })
                    .collect()
            }
            "--keep" => s.keep = Some(PathBuf::from(value())),
            "--largest" => s.largest = value(),
            _ => usage(),
        }
    }
    s.target = match (backend.as_str(), sim_dir) {
        ("host", _) => Target::Host,
        ("sim", Some(dir)) => Target::Sim { dir, jitter },
        _ => usage(),
    };
    if s.repeats < 2 || s.rounds.is_empty() {
        usage();
    }
    s
}

/// A sweep command writing under `out`, on the target.
fn sweep(target: &Target, out: &Path, rounds: Option<u32>, args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") {
            c.env_remove(k);
        }
    }
    c.args(["sweep", "--plain", "--out"]).arg(out).args(args);
    if let Some(r) = rounds {
        c.args(["--rounds", &r.to_string()]);
    }
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

/// Runs a sweep; returns its run directory (the newest under `out`).
fn run(mut c: Command, out: &Path) -> PathBuf {
    let before: Vec<PathBuf> = entries(out);
    let o = c.output().expect("start nccl-bench");
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "sweep failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    entries(out)
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new run directory")
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn options() -> CompareOptions {
    CompareOptions {
        threshold: DEFAULT_THRESHOLD,
        resamples: DEFAULT_RESAMPLES,
        margin: DEFAULT_THRESHOLD,
        family_alpha: nccl_bench::analysis::family::FAMILY_ALPHA,
    }
}

fn configs(run: &RunData, a: &str, b: &str) -> CompareReport {
    let side = |config, label: &str| Side {
        run,
        config: Some(config),
        label: label.to_string(),
    };
    compare(&side(a, a), &side(b, b), options()).expect("the configs compare")
}

fn whole(run: &RunData) -> Side<'_> {
    Side {
        run,
        config: None,
        label: run.dir.display().to_string(),
    }
}

fn flagged(r: &CompareReport) -> usize {
    r.count(Outcome::Regressed) + r.count(Outcome::Improved)
}

/// What one rounds setting gave.
#[derive(Default)]
struct Rates {
    aa_cases: usize,
    aa_flagged: usize,
    aa_compares: usize,
    aa_exits: usize,
    slow_cases: usize,
    slow_found: usize,
    slight_sweeps: usize,
    slight_equivalent: usize,
    verdict_sweeps: usize,
    verdict_keep: usize,
    pair_compares: usize,
    pair_exits: usize,
    pair_cases: usize,
    pair_flagged: usize,
    checks: usize,
    check_exits: usize,
    check_cases: usize,
    check_failed: usize,
    steps: usize,
    one_offs: usize,
    series: usize,
    /// Measured until settled: the rounds each config's comparison with `default`
    /// took, per config, over the config sweeps.
    rounds_taken: Vec<(String, u32)>,
    seconds: f64,
}

impl Rates {
    /// The median rounds `config` took to its decision, and the fewest and most.
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

fn name(rounds: Option<u32>) -> String {
    rounds.map_or("default".to_string(), |r| r.to_string())
}

fn measure(s: &Settings, rounds: Option<u32>, scratch: &Path) -> Rates {
    let start = Instant::now();
    let mut rates = Rates::default();
    let out = scratch.join(format!("rounds-{}", name(rounds)));
    std::fs::create_dir_all(&out).unwrap();
    let slower = |pct: u32| match s.target {
        Target::Host => format!(r#"NCCL_BENCH_FAULT = "slow:pct={pct}""#),
        Target::Sim { .. } => format!(
            r#"NCCL_BENCH_SIM_ALLREDUCE_SLOWDOWN = "{}""#,
            1.0 + f64::from(pct) / 100.0
        ),
    };
    let config = out.join("aa.toml");
    let mut toml = format!(
        "[[config]]\nname = \"default\"\n\n[[config]]\nname = \"same-as-default\"\nenv = {{ NCCL_BENCH_AA = \"1\" }}\n\n[[config]]\nname = \"slow\"\nenv = {{ {} }}\n\n[[config]]\nname = \"slight\"\nenv = {{ {} }}\n",
        slower(10),
        slower(1)
    );
    // On NVLink SHM carries nothing: disabling it is an A/A pair for the verdict.
    let verdict_aa = matches!(s.target, Target::Sim { .. });
    if verdict_aa {
        toml.push_str("\n[[config]]\nname = \"shm-off\"\nenv = { NCCL_SHM_DISABLE = \"1\" }\n");
    }
    std::fs::write(&config, toml).unwrap();
    let configs_out = out.join("configs");
    for i in 0..s.repeats {
        let c = sweep(
            &s.target,
            &configs_out,
            rounds,
            &[
                "--config",
                config.to_str().unwrap(),
                "-b",
                "8",
                "-e",
                &s.largest,
                "-f",
                "4",
            ],
        );
        let dir = run(c, &configs_out);
        let data = RunData::load(&dir).unwrap();
        for g in &data.manifest.group_rounds {
            rates.rounds_taken.push((g.config.clone(), g.rounds));
        }
        let aa = configs(&data, "default", "same-as-default");
        rates.aa_cases += aa.rows.len();
        rates.aa_flagged += flagged(&aa);
        rates.aa_compares += 1;
        rates.aa_exits += usize::from(aa.regressions().next().is_some());
        let slow = configs(&data, "default", "slow");
        for r in slow.rows.iter().filter(|r| r.bytes >= 64 << 10) {
            rates.slow_cases += 1;
            rates.slow_found += usize::from(r.outcome == Outcome::Regressed);
        }
        let slight = configs(&data, "default", "slight");
        rates.slight_sweeps += 1;
        rates.slight_equivalent += usize::from(slight.family.answer == Answer::Equivalent);
        if verdict_aa {
            rates.verdict_sweeps += 1;
            let v = verdict::decide(&data, "default", options());
            rates.verdict_keep += usize::from(matches!(v, Verdict::KeepShm { .. }));
        }
        eprint!(
            "\r  rounds {}: config sweep {}/{}",
            name(rounds),
            i + 1,
            s.repeats
        );
    }
    let runs_out = out.join("consecutive");
    let mut runs: Vec<RunData> = Vec::new();
    for i in 0..s.repeats {
        let c = sweep(
            &s.target,
            &runs_out,
            rounds,
            &["--transports", "default", "-b", "1K", "-e", "4M", "-f", "4"],
        );
        let dir = run(c, &runs_out);
        runs.push(RunData::load(&dir).unwrap());
        eprint!(
            "\r  rounds {}: consecutive run {}/{}   ",
            name(rounds),
            i + 1,
            s.repeats
        );
    }
    eprintln!();
    for pair in runs.windows(2) {
        let r = compare(&whole(&pair[0]), &whole(&pair[1]), options()).unwrap();
        rates.pair_compares += 1;
        rates.pair_exits += usize::from(r.regressions().next().is_some());
        rates.pair_cases += r.rows.len();
        rates.pair_flagged += flagged(&r);
    }
    // `check` of each later run against a baseline of the first three, at check's
    // default threshold (5 %).
    if runs.len() > BASELINE_RUNS {
        let base = baseline::build(&runs[..BASELINE_RUNS], "bench".into())
            .expect("a baseline of the first runs");
        for run in &runs[BASELINE_RUNS..] {
            let r = baseline::check(&base, run, CHECK_THRESHOLD).expect("the runs check");
            rates.checks += 1;
            rates.check_exits += usize::from(r.failures() > 0);
            rates.check_cases += r.cases.len();
            rates.check_failed += r.failures();
        }
    }
    let h = history::build(
        &runs,
        &Options {
            sizes: DEFAULT_SIZES.to_vec(),
            threshold: 0.05,
            window: DEFAULT_WINDOW,
            bootstrap: false,
        },
    );
    rates.series = h.series.len();
    rates.steps = h.series.iter().map(|s| s.steps.len()).sum();
    rates.one_offs = h.series.iter().map(|s| s.one_offs.len()).sum();
    rates.seconds = start.elapsed().as_secs_f64();
    rates
}

/// `k/n (x %, lo-hi)`: the rate with its exact 95 % bounds.
fn pct(k: usize, n: usize) -> String {
    nccl_bench::stats::proportion::rate_words(k as u64, n as u64)
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
            "simulated GPUs, 2 on NVLink, each process group at its own speed (spread {:.1} %)",
            jitter * 100.0
        ),
    };
    println!(
        "A/A and detection, {what}; {} sweeps of each kind; threshold {:.0} %",
        s.repeats,
        DEFAULT_THRESHOLD * 100.0
    );
    let all: Vec<(Option<u32>, Rates)> = s
        .rounds
        .iter()
        .map(|&r| (r, measure(&s, r, &scratch)))
        .collect();
    let width = 30;
    let header: String = all
        .iter()
        .map(|(r, _)| format!("{:>width$}", format!("--rounds {}", name(*r))))
        .collect();
    println!("\n{:<52}{header}  goal", "");
    let line = |name: &str, cell: &dyn Fn(&Rates) -> String, goal: &str| {
        let cells: String = all
            .iter()
            .map(|(_, r)| format!("{:>width$}", cell(r)))
            .collect();
        println!("{name:<52}{cells}  {goal}");
    };
    line(
        "A/A configs: cases flagged",
        &|r| pct(r.aa_flagged, r.aa_cases),
        "<= 5 %",
    );
    line(
        "A/A configs: compares exiting 1",
        &|r| pct(r.aa_exits, r.aa_compares),
        "<= 10 %",
    );
    line(
        "a config 10 % slower: found at 64 KiB and above",
        &|r| pct(r.slow_found, r.slow_cases),
        ">= 95 %",
    );
    line(
        "a config 1 % slower: equivalent within 2 % (family)",
        &|r| pct(r.slight_equivalent, r.slight_sweeps),
        ">= 80 %",
    );
    line(
        "A/A SHM verdict (shm-off on NVLink): keep SHM",
        &|r| pct(r.verdict_keep, r.verdict_sweeps),
        "<= 5 %",
    );
    line(
        "consecutive identical runs: compares exiting 1",
        &|r| pct(r.pair_exits, r.pair_compares),
        "<= 10 %",
    );
    line(
        "consecutive identical runs: cases flagged",
        &|r| pct(r.pair_flagged, r.pair_cases),
        "<= 5 %",
    );
    line(
        "identical runs: `check` against a baseline of 3, exiting 1",
        &|r| pct(r.check_exits, r.checks),
        "<= 5 %",
    );
    line(
        "identical runs: `check` against a baseline of 3, cases failed",
        &|r| pct(r.check_failed, r.check_cases),
        "<= 5 %",
    );
    line(
        "history of the identical runs: steps, one-offs",
        &|r| format!("{}, {} ({} series)", r.steps, r.one_offs, r.series),
        "0, 0",
    );
    for config in ["slow", "same-as-default", "slight", "shm-off"] {
        line(
            &format!("rounds to a decision, median: {config}"),
            &|r| r.rounds_of(config),
            if config == "slow" { "<= 8" } else { "" },
        );
    }
    line("time", &|r| format!("{:.0} s", r.seconds), "");
    println!("\nrun directories: {}", scratch.display());
}
