//! `analysis::compare` on constructed rounds.

use std::path::PathBuf;

use super::*;

fn run(dir: &str, cases: Vec<CaseRow>) -> RunData {
    RunData {
        dir: PathBuf::from(dir),
        manifest: Default::default(),
        cases,
    }
}

fn side<'a>(run: &'a RunData, config: Option<&'a str>) -> Side<'a> {
    Side {
        run,
        config,
        label: config.unwrap_or("run").into(),
    }
}

/// Seven rounds about 10 us, 1 % apart, times `by`.
fn rounds(by: f64) -> Vec<f64> {
    [10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98]
        .iter()
        .map(|r| r * by)
        .collect()
}

fn sizes(config: &str, by: f64) -> Vec<CaseRow> {
    [1024, 65536, 1 << 20]
        .iter()
        .map(|&b| CaseRow::with_rounds(config, b, &rounds(by)))
        .collect()
}

#[test]
fn two_configs_of_a_run_are_paired_and_a_slower_one_fails() {
    let mut cases = sizes("default", 1.0);
    cases.extend(sizes("slow", 1.10));
    cases.extend(sizes("same", 1.0));
    let r = run("r", cases);
    let opts = CompareOptions::new(0.02);
    let slow = compare(&side(&r, Some("default")), &side(&r, Some("slow")), opts).unwrap();
    assert!(slow.same_run);
    assert!(slow.rows.iter().all(|p| p.case.change == Change::Slower));
    assert_eq!(slow.decision.answer, change::Answer::Different);
    assert!(slow.fails());
    let e = slow.rows[0].case.estimate.unwrap();
    assert_eq!(e.basis, change::Basis::Paired);
    assert!((e.relative() - 0.10).abs() < 1e-9, "{e:?}");
    let same = compare(&side(&r, Some("default")), &side(&r, Some("same")), opts).unwrap();
    assert!(same.rows.iter().all(|p| p.case.change == Change::Within));
    assert_eq!(same.decision.answer, change::Answer::Within);
    assert!(!same.fails());
}

#[test]
fn two_runs_are_judged_on_each_sides_rounds() {
    let base = run("a", sizes("default", 1.0));
    let again = run("b", sizes("default", 1.0));
    let slower = run("c", sizes("default", 1.10));
    let opts = CompareOptions::new(0.02);
    let same = compare(&side(&base, None), &side(&again, None), opts).unwrap();
    assert!(!same.same_run);
    assert_eq!(same.decision.answer, change::Answer::Within);
    let e = same.rows[0].case.estimate.unwrap();
    assert_eq!(e.basis, change::Basis::Runs);
    let worse = compare(&side(&base, None), &side(&slower, None), opts).unwrap();
    assert!(worse.rows.iter().all(|p| p.case.change == Change::Slower));
    assert!(worse.fails());
    // The times shown are the ones the change is the ratio of.
    let p = &worse.rows[0];
    let ratio = p.cand_time_us.unwrap() / p.base_time_us.unwrap() - 1.0;
    assert!((ratio - p.case.relative().unwrap()).abs() < 1e-9);
}

/// Imports have one mean a side: judged against the threshold, with no error rate,
/// and a gate fails on them as nccl-tests' own NCCL_TESTS_MIN_BW does.
#[test]
fn means_only_are_judged_against_the_threshold_and_fail_the_gate() {
    let mean = |t: f64| CaseRow {
        time_us: Some(t),
        round_p50_us: String::new(),
        p50_us: None,
        ..CaseRow::with_rounds("default", 1024, &[1.0])
    };
    let base = run("a", vec![mean(100.0)]);
    let cand = run("b", vec![mean(110.0)]);
    let report = compare(
        &side(&base, None),
        &side(&cand, None),
        CompareOptions::new(0.05),
    )
    .unwrap();
    let p = &report.rows[0];
    assert_eq!(p.case.change, Change::Slower);
    assert_eq!(p.case.estimate.unwrap().basis, change::Basis::Point);
    assert_eq!((p.base_time_us, p.cand_time_us), (Some(100.0), Some(110.0)));
    assert_eq!(report.decision.members, 0);
    assert!(report.fails());
    let close = run("c", vec![mean(102.0)]);
    let report = compare(
        &side(&base, None),
        &side(&close, None),
        CompareOptions::new(0.05),
    )
    .unwrap();
    assert_eq!(report.rows[0].case.change, Change::Within);
    assert!(!report.fails());
}

/// Our run (median 7.89 us, mean 12.5 us) against an import (its mean, 7.97 us):
/// one measurement a side, the means, and the times shown are the ones compared.
#[test]
fn a_pair_on_means_shows_the_means_it_compared() {
    let ours = CaseRow {
        time_us: Some(12.5),
        p50_us: Some(7.89),
        round_p50_us: String::new(),
        ..CaseRow::with_rounds("default", 1024, &[1.0])
    };
    let imported = CaseRow {
        time_us: Some(7.97),
        p50_us: None,
        round_p50_us: String::new(),
        ..ours.clone()
    };
    let (a, b) = (run("ours", vec![ours]), run("import", vec![imported]));
    let report = compare(&side(&a, None), &side(&b, None), CompareOptions::new(0.02)).unwrap();
    let p = &report.rows[0];
    assert_eq!((p.base_time_us, p.cand_time_us), (Some(12.5), Some(7.97)));
    assert!((p.case.relative().unwrap() - (7.97 / 12.5 - 1.0)).abs() < 1e-9);
}

#[test]
fn a_case_failing_now_fails_and_a_flagged_one_stays_with_its_flag() {
    let base = run("a", sizes("default", 1.0));
    let mut now = sizes("default", 1.0);
    now[0].status = "failed".into();
    now[1].quality = "noisy".into();
    let cand = run("b", now);
    let report = compare(
        &side(&base, None),
        &side(&cand, None),
        CompareOptions::new(0.02),
    )
    .unwrap();
    assert_eq!(report.rows[0].case.change, Change::Failed);
    assert!(report.rows[0].fails());
    let flagged = &report.rows[1];
    assert_eq!(flagged.flags.candidate.as_deref(), Some("noisy"));
    assert_eq!(flagged.flags.base, None);
    assert_eq!(
        flagged.case.change,
        Change::NotSettled,
        "never within while flagged"
    );
    assert_ne!(report.decision.answer, change::Answer::Within);
    // Failing on both sides is no regression; ok only in the candidate is missing a base.
    let mut both = sizes("default", 1.0);
    both[0].status = "failed".into();
    let both = run("c", both);
    let report = compare(
        &side(&both, None),
        &side(&cand, None),
        CompareOptions::new(0.02),
    )
    .unwrap();
    assert!(!report.rows[0].fails());
    let report = compare(
        &side(&both, None),
        &side(&base, None),
        CompareOptions::new(0.02),
    )
    .unwrap();
    assert_eq!(report.rows[0].case.change, Change::Missing);
}

#[test]
fn a_changed_choice_is_nccls_only() {
    let choice = |backend: &str, algo: &str, proto: &str| CaseRow {
        backend: backend.into(),
        algo: algo.into(),
        proto: proto.into(),
        ..CaseRow::default()
    };
    assert_eq!(
        choice_change(
            &choice("nccl", "Ring", "LL128"),
            &choice("nccl", "Tree", "LL")
        ),
        Some(("Ring/LL128".into(), "Tree/LL".into()))
    );
    assert_eq!(
        choice_change(&choice("nccl", "Ring", "LL"), &choice("nccl", "Ring", "LL")),
        None
    );
    // The host backend's store mode changes from round to round by itself.
    let stores = "ordinary stores:67%;streaming stores:33%";
    assert_eq!(
        choice_change(
            &choice("host", "ring", "ordinary stores"),
            &choice("host", "ring", stores)
        ),
        None
    );
}
