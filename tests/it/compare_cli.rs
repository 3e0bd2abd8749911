//! `nccl-bench compare` on synthetic runs written by the real run writer: identical
//! runs, a 10 % slowdown at large sizes, noise inside the band, a new failure, two
//! configs of one run, and the errors that must exit 2.

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use nccl_bench::export::{RunDir, RunWriter};
use nccl_bench::model::{CaseKey, CaseResult, CaseStatus};
use nccl_bench::ops::{DataType, ReduceOp};
use nccl_bench::stats::quality::Quality;
use nccl_bench::stats::{Bandwidth, LatencyRecorder};

/// A case: config, bytes, and a latency scale (1.0 = the base distribution), or None
/// for a failed case.
type Spec<'a> = (&'a str, u64, Option<f64>);

/// Writes a run of 2-rank cases whose iteration times are a fixed noisy distribution
/// around 10 us + 1 us per 10 KiB, multiplied by the case's scale, each measured in
/// [`ROUNDS`] rounds whose medians differ by up to 1 % (comparisons decide on
/// rounds).
fn write_run(parent: &Path, name: &str, specs: &[Spec]) -> std::path::PathBuf {
    write_graph_run(parent, name, specs, 0)
}

/// `write_run` with every case launched in CUDA graphs of `graph` all-reduces.
fn write_graph_run(parent: &Path, name: &str, specs: &[Spec], graph: u64) -> std::path::PathBuf {
    write_run_with(parent, name, specs, graph, &|_| Quality::Ok)
}

/// `write_graph_run` with each ok case's `quality` column from `quality(bytes)`.
fn write_run_with(
    parent: &Path,
    name: &str,
    specs: &[Spec],
    graph: u64,
    quality: &dyn Fn(u64) -> Quality,
) -> std::path::PathBuf {
    let dir = RunDir::create(parent, name, "synthetic", None).unwrap();
    let path = dir.path.clone();
    let writer = RunWriter::new(dir, SystemTime::now()).unwrap();
    let mut manifest = common::synthetic_manifest("host");
    manifest.graph_iters = graph;
    writer.write_manifest(&manifest).unwrap();
    for (i, (config, bytes, scale)) in specs.iter().enumerate() {
        let key = CaseKey {
            config: config.to_string(),
            collective: nccl_bench::ops::collective::Collective::AllReduce,
            nranks: 2,
            bytes: *bytes,
            dtype: DataType::Float,
            op: ReduceOp::Sum,
        };
        let mut rec = LatencyRecorder::new();
        let base_ns = 10_000.0 + *bytes as f64 / 10.0;
        let result = match scale {
            Some(scale) => {
                // Independent noise per run and case (seeded by the run's name):
                // up to +10 %, uniform.
                let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                }) ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                for j in 0..2000u64 {
                    let mut z = seed.wrapping_add(j.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    let noise = 1.0 + (z >> 11) as f64 / (1u64 << 53) as f64 / 10.0;
                    rec.record((base_ns * noise * scale) as u64);
                }
                let s = rec.summary();
                let mix = |z: u64| {
                    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    (z ^ (z >> 31)) >> 11
                };
                let rounds: Vec<f64> = (0..ROUNDS)
                    .map(|r| {
                        let u = mix(seed ^ (r + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)) as f64
                            / (1u64 << 53) as f64;
                        s.p50_us * (1.0 + 0.01 * (u - 0.5))
                    })
                    .collect();
                CaseResult {
                    key,
                    backend: "host".into(),
                    status: CaseStatus::Ok,
                    warmup: 5,
                    graph,
                    latency: Some(s),
                    bandwidth: Some(Bandwidth::allreduce(*bytes, 2, s.mean_us)),
                    stop: None,
                    wrong: 0,
                    transports: "SHM".into(),
                    error: String::new(),
                    started_at: String::new(),
                    duration_s: 0.1,
                    quality: Some(quality(*bytes)),
                    quality_note: String::new(),
                    timing_note: String::new(),
                    ceiling_gbps: None,
                    round_p50_us: rounds,
                    tuning: Default::default(),
                    shm_backing: String::new(),
                }
            }
            None => CaseResult {
                key,
                backend: "host".into(),
                status: CaseStatus::Failed,
                warmup: 5,
                graph,
                latency: None,
                bandwidth: None,
                stop: None,
                wrong: 0,
                transports: String::new(),
                error: "rank 1 exited with status 3".into(),
                started_at: String::new(),
                duration_s: 0.0,
                quality: None,
                quality_note: String::new(),
                timing_note: String::new(),
                ceiling_gbps: None,
                round_p50_us: Vec::new(),
                tuning: Default::default(),
                shm_backing: String::new(),
            },
        };
        writer
            .record(
                &result,
                Some(rec.histogram()),
                Duration::from_secs(i as u64),
            )
            .unwrap();
    }
    path
}

const SIZES: [u64; 4] = [1024, 65536, 1 << 20, 16 << 20];

/// Rounds per case: enough for the paired interval of a family of 4 (2^(1-8) is
/// under 0.05 / 4).
const ROUNDS: u64 = 8;

fn uniform(config: &str, scale: impl Fn(u64) -> Option<f64>) -> Vec<(&str, u64, Option<f64>)> {
    SIZES.iter().map(|&b| (config, b, scale(b))).collect()
}

fn compare(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(common::bin())
        .arg("compare")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_run_compared_with_itself_reports_no_change() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "a", &uniform("default", |_| Some(1.0)));
    let o = compare(&[run.as_os_str(), run.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("The candidate is within +-2.0 % at all 4 cases: every change between +0.0 % and +0.0 %."),
        "{out}"
    );
}

#[test]
fn a_ten_percent_slowdown_at_large_sizes_fails_the_gate() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = write_run(tmp.path(), "base", &uniform("default", |_| Some(1.0)));
    let cand = write_run(
        tmp.path(),
        "cand",
        &uniform("default", |b| Some(if b >= 1 << 20 { 1.1 } else { 1.0 })),
    );
    let o = compare(&[
        base.as_os_str(),
        cand.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let mut reader = csv::Reader::from_reader(o.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let outcome: Vec<(&str, &str)> = rows.iter().map(|r| (&r[3], &r[17])).collect();
    assert_eq!(
        outcome,
        [
            ("1024", "within"),
            ("65536", "within"),
            ("1048576", "slower"),
            ("16777216", "slower")
        ]
    );
    let change: f64 = rows[3][10].parse().unwrap();
    assert!((change - 0.10).abs() < 0.01, "{change}");
    let table = compare(&[base.as_os_str(), cand.as_os_str()]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("The candidate is slower at 2 of 4 cases, most at "),
        "{text}"
    );
}

/// The same slowdown, the candidate's 16 MiB case flagged noisy: a flagged case
/// stays in the decision with its flag shown, slower as measured; a flagged case
/// that did not change is never within.
#[test]
fn a_flagged_case_stays_in_the_decision_with_its_flag() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = write_run(tmp.path(), "base", &uniform("default", |_| Some(1.0)));
    let noisy_at = |big: u64| {
        move |b: u64| {
            if b == big {
                Quality::Noisy
            } else {
                Quality::Ok
            }
        }
    };
    let cand = write_run_with(
        tmp.path(),
        "cand",
        &uniform("default", |b| Some(if b >= 1 << 20 { 1.1 } else { 1.0 })),
        0,
        &noisy_at(16 << 20),
    );
    let csv_out = compare(&[
        base.as_os_str(),
        cand.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    assert_eq!(csv_out.status.code(), Some(1), "{}", common::text(&csv_out));
    let mut reader = csv::Reader::from_reader(csv_out.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let outcome: Vec<(&str, &str, &str)> = rows.iter().map(|r| (&r[3], &r[17], &r[18])).collect();
    assert_eq!(
        outcome,
        [
            ("1024", "within", ""),
            ("65536", "within", ""),
            ("1048576", "slower", ""),
            ("16777216", "slower", "candidate noisy")
        ]
    );
    let same = write_run_with(
        tmp.path(),
        "same",
        &uniform("default", |_| Some(1.0)),
        0,
        &noisy_at(1024),
    );
    let o = compare(&[base.as_os_str(), same.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("not settled (candidate noisy)"), "{text}");
    assert!(text.contains("Not settled at 1 of 4 cases"), "{text}");
}

#[test]
fn runs_launched_differently_are_said_to_be() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = write_run(tmp.path(), "base", &uniform("default", |_| Some(1.0)));
    let cand = write_graph_run(tmp.path(), "cand", &uniform("default", |_| Some(1.0)), 20);
    let out = compare(&[base.as_os_str(), cand.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("4 cases launched differently (one launch each in the base, CUDA graphs of 20 in the candidate)"),
        "{stdout}"
    );
    let same = compare(&[base.as_os_str(), base.as_os_str()]);
    assert!(!String::from_utf8_lossy(&same.stdout).contains("launched differently"));
}

#[test]
fn noise_inside_the_band_is_unchanged() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = write_run(tmp.path(), "base", &uniform("default", |_| Some(1.0)));
    let cand = write_run(tmp.path(), "cand", &uniform("default", |_| Some(1.005)));
    let o = compare(&[
        base.as_os_str(),
        cand.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for row in report["rows"].as_array().unwrap() {
        assert_eq!(row["case"]["change"], "within", "{row}");
    }
    assert_eq!(report["decision"]["answer"], "within");
}

#[test]
fn a_case_that_now_fails_is_a_regression() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = write_run(tmp.path(), "base", &uniform("default", |_| Some(1.0)));
    let cand = write_run(
        tmp.path(),
        "cand",
        &uniform("default", |b| if b == 65536 { None } else { Some(1.0) }),
    );
    let o = compare(&[
        base.as_os_str(),
        cand.as_os_str(),
        "--format".as_ref(),
        "markdown".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| failed |"), "{md}");
    assert!(
        md.contains("- The candidate fails at 1 of 4 cases."),
        "{md}"
    );
}

#[test]
fn two_configs_of_one_run() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let mut specs = uniform("default", |_| Some(1.0));
    specs.extend(uniform("shm-off", |_| Some(1.5)));
    let run = write_run(tmp.path(), "both", &specs);
    let o = compare(&[
        run.as_os_str(),
        "--config-a".as_ref(),
        "default".as_ref(),
        "--config-b".as_ref(),
        "shm-off".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("The candidate is slower at 4 of 4 cases"),
        "{out}"
    );
    assert!(
        out.contains("Method: paired t over each case's rounds"),
        "{out}"
    );
    // Each change is the 50 % the runs were written with, give or take their rounds'
    // 1 % of noise.
    let changes: Vec<f64> = out
        .lines()
        // The table's rows (one config pair: named once above them): `2  1 MiB ...
        // 50.0 % slower ...`.
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "%").unwrap();
            words[at - 1].parse::<f64>().unwrap()
        })
        .collect();
    assert!(
        changes.len() == 4 && changes.iter().all(|c| (49.0..51.0).contains(c)),
        "{changes:?} {out}"
    );
}

#[test]
fn errors_exit_2() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "a", &uniform("default", |_| Some(1.0)));
    let other = write_run(tmp.path(), "b", &uniform("other", |_| Some(1.0)));
    for (args, message) in [
        (
            vec![
                run.as_os_str(),
                tmp.path().join("nope").as_os_str().to_owned().as_os_str(),
            ],
            "is not a directory",
        ),
        (
            vec![run.as_os_str(), tmp.path().as_os_str()],
            "is not a run directory (no results.csv)",
        ),
        (vec![run.as_os_str(), other.as_os_str()], "no case of"),
        (
            vec![run.as_os_str()],
            "give a candidate run, or --config-a and --config-b",
        ),
        (
            vec![
                run.as_os_str(),
                "--config-a".as_ref(),
                "default".as_ref(),
                "--config-b".as_ref(),
                "shm-of".as_ref(),
            ],
            "has no config 'shm-of' (it has: default)",
        ),
    ] {
        let owned: Vec<std::ffi::OsString> = args.iter().map(|a| a.to_os_string()).collect();
        let refs: Vec<&std::ffi::OsStr> = owned.iter().map(|a| a.as_os_str()).collect();
        let o = compare(&refs);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

fn nccl_bench(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(common::bin())
        .args(args)
        .output()
        .unwrap()
}

/// A baseline from three runs, then `check`: a run like them passes (exit 0); a run
/// 10 % slower at the two largest sizes, and missing one case, fails those three
/// (exit 1), in a table and in JUnit XML that a JUnit reader parses.
#[test]
fn a_baseline_gates_a_run_case_by_case_and_junit_shows_each_case() {
    let _machine = crate::common::shared();
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<std::path::PathBuf> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| write_run(tmp.path(), n, &uniform("default", |_| Some(1.0))))
        .collect();
    let baseline = tmp.path().join("baseline.json");
    let mut args: Vec<&std::ffi::OsStr> = vec!["baseline".as_ref()];
    args.extend(runs.iter().map(|r| r.as_os_str()));
    args.extend(["-o".as_ref(), baseline.as_os_str()]);
    let o = nccl_bench(&args);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stdout)
        .starts_with("baseline: 4 cases from 3 run(s) (host) in "));
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    assert_eq!(b["cases"].as_array().unwrap().len(), 4);
    assert!(b["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["levels"].as_array().unwrap().len() == 3));
    // Never overwritten.
    let o = nccl_bench(&args);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));

    let check = |run: &Path, extra: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = vec![
            "check".as_ref(),
            run.as_os_str(),
            "--baseline".as_ref(),
            baseline.as_os_str(),
        ];
        a.extend(extra.iter().map(std::ffi::OsStr::new));
        nccl_bench(&a)
    };
    let same = write_run(tmp.path(), "n4", &uniform("default", |_| Some(1.0)));
    let o = check(&same, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("The run is not slower than +5.0 % at all 4 cases"),
        "{}",
        common::text(&o)
    );

    let slower: Vec<Spec> = uniform("default", |b| Some(if b >= 1 << 20 { 1.1 } else { 1.0 }))
        .into_iter()
        .filter(|s| s.1 != 1024)
        .collect();
    let slower = write_run(tmp.path(), "n5", &slower);
    let o = check(&slower, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("The run is slower at 2 of 4 cases"), "{out}");
    let first: Vec<&str> = out
        .lines()
        .take(3)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(first, ["missing", "slower", "slower"], "{out}");

    let xml = tmp.path().join("check.xml");
    let o = check(&slower, &["--format", "junit", "-o", xml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let suites =
        junit_parser::from_reader(std::io::BufReader::new(std::fs::File::open(&xml).unwrap()))
            .unwrap();
    assert_eq!((suites.tests, suites.failures), (4, 3));
    let cases = &suites.suites[0].cases;
    assert_eq!(cases.len(), 4);
    let failed: Vec<&str> = cases
        .iter()
        .filter(|c| c.status.is_failure())
        .map(|c| c.original_name.as_str())
        .collect();
    assert_eq!(
        failed,
        ["1 KiB float sum", "1 MiB float sum", "16 MiB float sum"]
    );
    assert!(cases
        .iter()
        .all(|c| c.classname.as_deref() == Some("nccl-bench.default.n2")));

    let o = check(&slower, &["--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cases"][3]["case"]["change"], "slower");

    // A baseline that is not one, and a run of another platform, are exit 2.
    std::fs::write(&baseline, "{}").unwrap();
    let o = check(&same, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("not a baseline written by `nccl-bench baseline`"));
}

/// The decision on the committed host example (measured until settled, 4 looks, 42
/// cases per config pair): SHM off is slower at every case; an identical config
/// (p2p-off moves nothing on the host) is not settled at +-2 % on this VM, with the
/// range its intervals allow and what would settle it.
#[test]
fn the_decision_on_the_host_example_is_slower_or_not_settled_with_its_method() {
    let run =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/examples/host-backend-2cpu");
    let summary = |config: &str| {
        let o = std::process::Command::new(common::bin())
            .arg("compare")
            .arg(&run)
            .args(["--config-a", "default", "--config-b", config])
            .output()
            .unwrap();
        // Its sentences wrap at the terminal's width: read as one line.
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let method = "Method: paired t over each case's rounds; slower or faster at 99.97 % a case (Bonferroni over 42 cases, 4 looks: 95 % for all at once)";
    let off = summary("shm-off");
    assert!(
        off.contains("The candidate is slower at 42 of 42 cases, most at "),
        "{off}"
    );
    assert!(off.contains(method), "{off}");
    let same = summary("p2p-off");
    assert!(
        same.contains("Not settled at 42 of 42 cases; changes between -"),
        "{same}"
    );
    assert!(same.contains(" rounds would "), "{same}");
    assert!(same.contains(method), "{same}");
}

/// The terminal's tables fit 100 columns, on the committed example runs (whose noisy
/// host cases make wide rows): a row too wide puts its outcome on a line under it.
#[test]
fn compare_and_check_fit_the_terminal() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/examples");
    let (a, b) = (
        examples.join("host-backend-2cpu"),
        examples.join("host-run-2ranks"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("baseline.json");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(common::bin())
            .args(args)
            .output()
            .unwrap()
    };
    let made = run(&[
        "baseline".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "-o".as_ref(),
        file.as_os_str(),
    ]);
    assert!(made.status.success(), "{}", common::text(&made));
    let compared = compare(&[a.as_os_str(), b.as_os_str()]);
    let checked = run(&[
        "check".as_ref(),
        "--baseline".as_ref(),
        file.as_os_str(),
        a.as_os_str(),
    ]);
    for out in [&compared, &checked] {
        let text = common::text(out);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }
    let text = common::text(&compared);
    assert!(
        text.lines()
            .any(|l| l.starts_with("    ") && l.contains("(base noisy)")),
        "{text}"
    );
}
