//! The baseline's build and check on hand-made runs.

use super::*;
use crate::export::reader::ManifestHead;

fn row(config: &str, bytes: u64, p50: f64) -> CaseRow {
    CaseRow {
        config: config.into(),
        backend: "host".into(),
        nranks: 2,
        bytes,
        dtype: "float".into(),
        op: "sum".into(),
        iters: 100,
        status: "ok".into(),
        time_us: Some(p50),
        p50_us: Some(p50),
        median_ci_low_us: Some(p50 * 0.99),
        median_ci_high_us: Some(p50 * 1.01),
        round_p50_us: rounds_around(p50),
        quality: "ok".into(),
        ..CaseRow::default()
    }
}

/// 15 round medians within +-1 % of `p50`: a check decides on rounds.
fn rounds_around(p50: f64) -> String {
    (0..15)
        .map(|k| (p50 * (1.0 + 0.01 * (k as f64 - 7.0) / 7.0)).to_string())
        .collect::<Vec<_>>()
        .join(";")
}

/// The case `factor` times slower: its median, interval and rounds.
fn slow_down(c: &mut CaseRow, factor: f64) {
    for v in [
        &mut c.p50_us,
        &mut c.median_ci_low_us,
        &mut c.median_ci_high_us,
    ] {
        *v = v.map(|x| x * factor);
    }
    c.round_p50_us = rounds_around(c.p50_us.unwrap());
}

fn run(name: &str, scale: f64) -> RunData {
    let mut manifest = ManifestHead::default();
    manifest.backend.used = "host".into();
    manifest.host.hostname = "node1".into();
    RunData {
        dir: name.into(),
        manifest,
        cases: [8u64, 65536, 1 << 26]
            .iter()
            .map(|&b| row("default", b, (5.0 + b as f64 / 1e4) * scale))
            .collect(),
        distributions: Default::default(),
    }
}

#[test]
fn a_baseline_keeps_the_median_and_the_spread_of_its_runs() {
    let b = build(
        &[run("a", 1.0), run("b", 1.02), run("c", 0.99)],
        "now".into(),
    )
    .unwrap();
    assert_eq!(b.cases.len(), 3);
    let c = &b.cases[0];
    assert_eq!((c.bytes, c.runs), (8, 3));
    let t = 5.0 + 8.0 / 1e4;
    assert!((c.median_us - t).abs() < 1e-12, "{c:?}");
    assert!((c.low_us - t * 0.99 * 0.99).abs() < 1e-12, "{c:?}");
    assert!((c.high_us - t * 1.02 * 1.01).abs() < 1e-12, "{c:?}");
    assert_eq!(b.platform.hosts, ["node1"]);
}

#[test]
fn the_same_run_passes_a_slower_one_fails_and_a_missing_case_fails() {
    let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
    let same = check(&base, &run("c", 1.0), 0.05).unwrap();
    assert_eq!(same.failures(), 0, "{same:?}");
    assert!(same.cases.iter().all(|c| c.outcome == Outcome::Pass));

    // 10 % slower than run "a" at the largest size (9.5 % over the baseline's
    // median of 1.0 and 1.01).
    let mut slower = run("d", 1.0);
    slow_down(slower.cases.last_mut().unwrap(), 1.1);
    slower.cases.remove(1);
    let r = check(&base, &slower, 0.05).unwrap();
    let outcomes: Vec<Outcome> = r.cases.iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, [Outcome::Pass, Outcome::Missing, Outcome::Slower]);
    assert_eq!(r.failures(), 2);
    assert!(
        r.cases[2]
            .message
            .starts_with("slower (+9.5 %) beyond the threshold +5.0 %"),
        "{:?}",
        r.cases[2]
    );
}

/// A run of one round (process group) is checked case by case but decides nothing:
/// its interval sees one group's iterations. Twice as slow, it is inconclusive and
/// says why, and the check does not fail on it.
#[test]
fn a_case_of_one_round_decides_nothing() {
    let base = build(&[run("a", 1.0), run("b", 1.01)], "now".into()).unwrap();
    let mut once = run("c", 2.0);
    for c in &mut once.cases {
        c.round_p50_us = c.p50_us.unwrap().to_string();
    }
    let r = check(&base, &once, 0.05).unwrap();
    assert_eq!(r.failures(), 0, "{r:?}");
    assert!(r
        .cases
        .iter()
        .all(|c| c.outcome == Outcome::Inconclusive && c.message.starts_with("one round (+")));
    assert_eq!(r.family.cases, 0);
}

/// A case flagged noisy in every baseline run is no expectation, but it is not
/// new: the check says it was measured without a trusted timing (and a run where
/// it fails still fails); a case a baseline run timed and trusted once is kept.
#[test]
fn a_case_never_trusted_in_the_baseline_is_undecided_not_new() {
    let mut a = run("a", 1.0);
    a.cases[0].quality = "noisy".into();
    a.cases[1].quality = "outlier".into();
    let mut b = run("b", 1.0);
    b.cases[0].quality = "noisy".into();
    let base = build(&[a, b], "now".into()).unwrap();
    assert_eq!(base.cases.len(), 2, "{:?}", base.cases);
    assert_eq!(base.untrusted.len(), 1, "{:?}", base.untrusted);
    assert_eq!(base.untrusted[0].bytes, 8);
    assert_eq!(base.untrusted[0].why, ["noisy"]);
    let c = check(&base, &run("c", 1.0), 0.05).unwrap();
    let first = c.cases.iter().find(|x| x.bytes == 8).unwrap();
    assert_eq!(first.outcome, Outcome::Inconclusive);
    assert_eq!(
        first.message,
        "no trusted timing in the baseline's runs (noisy)"
    );
    let mut failing = run("d", 1.0);
    failing.cases[0].status = "timeout".into();
    let c = check(&base, &failing, 0.05).unwrap();
    let first = c.cases.iter().find(|x| x.bytes == 8).unwrap();
    assert_eq!(first.outcome, Outcome::NotOk, "{first:?}");
    // The JSON of a baseline made before the list reads as one without it.
    let mut json = serde_json::to_value(&base).unwrap();
    json.as_object_mut().unwrap().remove("untrusted");
    let old: Baseline = serde_json::from_value(json).unwrap();
    assert!(old.untrusted.is_empty());
}

#[test]
fn flagged_failed_and_new_cases_are_said_and_other_platforms_refused() {
    let base = build(&[run("a", 1.0)], "now".into()).unwrap();
    let mut r = run("b", 2.0);
    r.cases[0].quality = "noisy".into();
    r.cases[1].status = "timeout".into();
    r.cases.push(row("shm-off", 8, 9.0));
    let c = check(&base, &r, 0.05).unwrap();
    let outcomes: Vec<Outcome> = c.cases.iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Inconclusive,
            Outcome::NotOk,
            Outcome::Slower,
            Outcome::New
        ]
    );
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
