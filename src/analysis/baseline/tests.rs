//! The baseline's build and check on hand-made runs, and the gate's error rate and
//! power on seeded simulated ones.

use super::*;
use crate::export::reader::ManifestHead;
use crate::stats::splitmix::SplitMix64;

fn row(config: &str, bytes: u64, rounds: &[f64]) -> CaseRow {
    let mut sorted = rounds.to_vec();
    sorted.sort_by(f64::total_cmp);
    let text: Vec<String> = rounds.iter().map(|r| r.to_string()).collect();
    CaseRow {
        config: config.into(),
        backend: "host".into(),
        nranks: 2,
        bytes,
        dtype: "float".into(),
        op: "sum".into(),
        iters: 100,
        status: "ok".into(),
        time_us: sorted.get(sorted.len() / 2).copied(),
        p50_us: sorted.get(sorted.len() / 2).copied(),
        round_p50_us: text.join(";"),
        quality: "ok".into(),
        ..CaseRow::default()
    }
}

/// 15 round medians within +-1 % of `t`.
fn around(t: f64) -> Vec<f64> {
    (0..15)
        .map(|k| t * (1.0 + 0.01 * (k as f64 - 7.0) / 7.0))
        .collect()
}

fn run_of(name: &str, cases: Vec<CaseRow>) -> RunData {
    let mut manifest = ManifestHead::default();
    manifest.backend.used = "host".into();
    manifest.host.hostname = "node1".into();
    RunData {
        dir: name.into(),
        manifest,
        cases,
    }
}

fn run(name: &str, scale: f64) -> RunData {
    let cases = [8u64, 65536, 1 << 26]
        .iter()
        .map(|&b| row("default", b, &around((5.0 + b as f64 / 1e4) * scale)))
        .collect();
    run_of(name, cases)
}

fn changes(r: &CheckReport) -> Vec<&'static str> {
    r.cases.iter().map(CaseCheck::word).collect()
}

#[test]
fn a_baseline_keeps_each_runs_level_and_the_spread_between_them() {
    let b = build(
        &[run("a", 1.0), run("b", 1.02), run("c", 0.99)],
        "now".into(),
    )
    .unwrap();
    assert_eq!(b.cases.len(), 3);
    let c = &b.cases[0];
    assert_eq!((c.id.bytes, c.levels.len()), (8, 3));
    // The geometric mean of the three runs' levels.
    let t = 5.0 + 8.0 / 1e4;
    let levels: f64 = [1.0f64, 1.02, 0.99]
        .iter()
        .map(|s| (t * s).ln())
        .sum::<f64>()
        / 3.0;
    assert!((c.median_us.ln() - levels).abs() < 1e-3, "{c:?}");
    let spread = b.run_to_run.unwrap();
    assert_eq!((spread.runs, spread.df), (3, 6.0));
    // The runs differ by about 1.5 % as whole runs, far beyond their rounds.
    assert!((0.01..0.02).contains(&spread.relative()), "{spread:?}");
    assert_eq!(b.platform.hosts, ["node1"]);
}

#[test]
fn the_same_run_passes_a_slower_one_fails_and_a_missing_case_fails() {
    let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
    let same = check(&base, &run("c", 1.005), 0.05).unwrap();
    assert_eq!(changes(&same), ["within"; 3], "{same:?}");
    assert_eq!(same.exit_code(), 0);

    let mut slower = run("d", 1.0);
    let last = slower.cases.last_mut().unwrap();
    let t = last.p50_us.unwrap();
    *last = row("default", 1 << 26, &around(t * 1.2));
    slower.cases.remove(1);
    let r = check(&base, &slower, 0.05).unwrap();
    assert_eq!(changes(&r), ["within", "missing", "slower"]);
    assert_eq!((r.failures(), r.exit_code()), (2, EXIT_FAILS));
}

/// `check --workload` finds a job's size where the sweep ran it: an all_gather of
/// 1,000 B on 2 ranks runs as 992 B (whole 16-byte groups a rank). The same run
/// passes, one twice as slow fails. Its run-to-run spread is the baseline's, of
/// all its cases.
#[test]
fn the_jobs_rounded_size_is_checked_both_ways() {
    use crate::config::{JobCall, SizesFrom};
    let gather = |name: &str, scale: f64| {
        let mut c = row("default", 992, &around(7.0 * scale));
        c.collective = "all_gather".into();
        let mut r = run(name, scale);
        r.cases.push(c);
        r
    };
    let base = build(&[gather("a", 1.0), gather("b", 1.01)], "now".into()).unwrap();
    let job = SizesFrom {
        file: "job.csv".into(),
        sizes: Default::default(),
        calls: vec![JobCall {
            collective: crate::ops::collective::Collective::AllGather,
            nranks: None,
            bytes: 1000,
            calls: 10,
        }],
        per: "per step".into(),
    };
    let verdict = |scale: f64| {
        let c = job::job_check(&base, &gather("c", scale), &job, 0.05);
        assert_eq!((c.len(), c[0].matched, c[0].left_out), (1, 1, 0), "{c:?}");
        c[0].case.change
    };
    assert_eq!(verdict(1.005), Change::Within);
    assert_eq!(verdict(2.0), Change::Slower);
}

/// A gate never passes on what it could not tell: rounds too noisy for the
/// threshold are not settled, exit 3.
#[test]
fn a_case_the_gate_cannot_tell_is_not_settled_and_exits_3() {
    let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
    let noisy: Vec<f64> = (0..6)
        .map(|k| 5.0008 * if k % 2 == 0 { 0.8 } else { 1.25 })
        .collect();
    let mut r = run("c", 1.0);
    r.cases[0] = row("default", 8, &noisy);
    let c = check(&base, &r, 0.05).unwrap();
    assert_eq!(changes(&c)[0], "not settled");
    assert_eq!(c.exit_code(), EXIT_NOT_SETTLED);
}

/// One measurement a side (imports, one round) is judged against the threshold,
/// with no error rate, and a gate fails on it.
#[test]
fn one_round_is_judged_on_its_change_and_fails_beyond_the_threshold() {
    let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
    let mut once = run("c", 2.0);
    for c in &mut once.cases {
        c.round_p50_us = c.p50_us.unwrap().to_string();
    }
    let r = check(&base, &once, 0.05).unwrap();
    assert_eq!(changes(&r), ["slower"; 3]);
    assert_eq!(r.decision.points(), 3);
    assert_eq!(r.exit_code(), EXIT_FAILS);
}

/// A flagged case stays in the baseline and in the check: it may fail, it never
/// passes as within. A case never ok in the baseline's runs is not new.
#[test]
fn flagged_cases_stay_and_a_case_never_ok_is_not_new() {
    let mut a = run("a", 1.0);
    a.cases[0].quality = "noisy".into();
    a.cases[1].status = "timeout".into();
    let mut b = run("b", 1.0);
    b.cases[1].status = "failed".into();
    let base = build(&[a, b], "now".into()).unwrap();
    assert_eq!(base.cases.len(), 2);
    assert!(base.cases[0].flagged);
    assert_eq!(base.failing[0].id.bytes, 65536);
    assert_eq!(base.failing[0].why, ["timeout", "failed"]);
    let c = check(&base, &run("c", 1.0), 0.05).unwrap();
    assert_eq!(changes(&c), ["not settled", "within", "new"]);
    assert_eq!(
        c.cases[2].note,
        Note::FailingInBaseline(vec!["timeout".into(), "failed".into()])
    );
    let mut failing = run("d", 1.0);
    failing.cases[1].status = "timeout".into();
    let c = check(&base, &failing, 0.05).unwrap();
    assert_eq!(changes(&c)[2], "failed");
    assert_eq!(c.exit_code(), EXIT_FAILS);
}

#[test]
fn other_platforms_are_refused() {
    let base = build(&[run("a", 1.0)], "now".into()).unwrap();
    let mut gpu = run("g", 1.0);
    gpu.manifest.backend.used = "nccl".into();
    gpu.manifest.gpu = Some(serde_json::json!({"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}));
    let e = check(&base, &gpu, 0.05).unwrap_err();
    assert_eq!(
        e,
        "g is a nccl run on NVIDIA H100 80GB HBM3; the baseline holds for host"
    );
    let e = build(&[run("a", 1.0), gpu], "now".into()).unwrap_err();
    assert!(e.ends_with("a baseline holds for one platform"), "{e}");
}

/// Simulated runs of 13 cases: each round a process group whose speed moves every
/// case alike (sd `group`), each run a run effect on every case (sd `runs`), each
/// case its own noise (sd `own`), every case `change` slower.
struct Nightly {
    group: f64,
    runs: f64,
    own: f64,
}

impl Nightly {
    fn run(&self, name: &str, rounds: usize, change: f64, rng: &mut SplitMix64) -> RunData {
        let run = self.runs * rng.normal();
        let groups: Vec<f64> = (0..rounds).map(|_| self.group * rng.normal()).collect();
        let cases = (0..13)
            .map(|k| {
                let t = 2.0f64.powi(k);
                let rounds: Vec<f64> = groups
                    .iter()
                    .map(|g| t * (run + g + change + self.own * rng.normal()).exp())
                    .collect();
                row("default", 8 << (2 * k), &rounds)
            })
            .collect();
        run_of(name, cases)
    }
}

/// The gate's claims: identical runs fail (exit 1) in at most 1 % of 10,000 nights,
/// and with groups 1 % apart and runs 0.3 % apart they pass (exit 0) in at least
/// 99 %; a run 10 % slower fails in every night of 1,000, and so does one twice as
/// slow on a machine whose groups are 10 % apart.
#[test]
fn the_gate_fails_identical_runs_at_most_1_percent_and_finds_a_slower_one() {
    let quiet = Nightly {
        group: 0.01,
        runs: 0.003,
        own: 0.003,
    };
    let mut rng = SplitMix64::new(61, 1);
    let nights = 10_000;
    let (mut fails, mut passes) = (0, 0);
    let mut base = build(
        &(0..3)
            .map(|j| quiet.run(&format!("b{j}"), 7, 0.0, &mut rng))
            .collect::<Vec<_>>(),
        "now".into(),
    )
    .unwrap();
    for night in 0..nights {
        // A new baseline every 100 nights: the baseline's own luck is part of the rate.
        if night % 100 == 0 {
            let runs: Vec<RunData> = (0..3)
                .map(|j| quiet.run(&format!("b{j}"), 7, 0.0, &mut rng))
                .collect();
            base = build(&runs, "now".into()).unwrap();
        }
        let r = check(&base, &quiet.run("n", 7, 0.0, &mut rng), 0.05).unwrap();
        match r.exit_code() {
            0 => passes += 1,
            EXIT_FAILS => fails += 1,
            _ => {}
        }
    }
    assert!(
        fails * 100 <= nights,
        "identical runs failed {fails} of {nights}"
    );
    assert!(
        passes * 100 >= 99 * nights,
        "identical runs passed {passes} of {nights}"
    );
    for (machine, change) in [
        (&quiet, 0.10f64.ln_1p()),
        (
            &Nightly {
                group: 0.10,
                runs: 0.02,
                own: 0.03,
            },
            2.0f64.ln(),
        ),
    ] {
        let (mut failed, mut everywhere) = (0, 0);
        for _ in 0..1000 {
            let runs: Vec<RunData> = (0..3)
                .map(|j| machine.run(&format!("b{j}"), 7, 0.0, &mut rng))
                .collect();
            let base = build(&runs, "now".into()).unwrap();
            let r = check(&base, &machine.run("n", 7, change, &mut rng), 0.05).unwrap();
            failed += usize::from(r.exit_code() == EXIT_FAILS);
            everywhere += usize::from(r.decision.count(Change::Slower) == 13);
        }
        assert_eq!(failed, 1000, "{change}");
        assert!(
            everywhere >= 990,
            "slower at every case in {everywhere} of 1000"
        );
    }
}

/// Round medians spread by `spread` (a fraction, each side) about `t`, over 15 rounds.
fn spread_about(t: f64, spread: f64) -> Vec<f64> {
    (0..15)
        .map(|k| t * (1.0 + spread * (k as f64 - 7.0) / 7.0))
        .collect()
}

#[test]
fn the_gates_reach_says_the_threshold_an_identical_run_can_pass_at() {
    let runs_at = |spread: f64| -> Vec<RunData> {
        ["a", "b", "c"]
            .iter()
            .zip([1.0, 1.002, 0.998])
            .map(|(name, scale)| {
                let cases = [8u64, 1 << 20]
                    .iter()
                    .map(|&b| row("default", b, &spread_about(10.0 * scale, spread)))
                    .collect();
                run_of(name, cases)
            })
            .collect()
    };
    let quiet = build(&runs_at(0.01), "t".into()).unwrap();
    let noisy = build(&runs_at(0.3), "t".into()).unwrap();
    let (q, _) = reach(&quiet, 15, 4).unwrap();
    let (n, _) = reach(&noisy, 15, 4).unwrap();
    assert!(q > 0.0 && q < 0.02, "{q}");
    assert!(n > 0.05, "{n}");
    // More rounds narrow it.
    assert!(reach(&noisy, 60, 4).unwrap().0 < n);
    // The same run checked against the noisy baseline passes above the reach and
    // is not settled below it.
    let tonight = &runs_at(0.3)[0];
    let above = check(&noisy, tonight, n * 1.5).unwrap();
    let below = check(&noisy, tonight, n / 3.0).unwrap();
    assert_eq!(above.exit_code(), 0, "{:?}", changes(&above));
    assert_eq!(below.exit_code(), EXIT_NOT_SETTLED, "{:?}", changes(&below));
}
