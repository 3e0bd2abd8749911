//! `analysis::compare` on constructed rounds.

use std::path::PathBuf;

use hdrhistogram::Histogram;

use super::*;
use crate::stats::distribution::Distribution;

fn row(time_us: f64, p50_us: Option<f64>, hist_tag: Option<&str>) -> CaseRow {
    CaseRow {
        config: "default".into(),
        backend: "nccl".into(),
        nranks: 1,
        bytes: 65536,
        dtype: "float".into(),
        op: "sum".into(),
        iters: 1000,
        status: "ok".into(),
        time_us: Some(time_us),
        algbw_gbps: None,
        busbw_gbps: None,
        p50_us,
        p99_us: None,
        max_us: None,
        wrong: Some(0),
        transports: String::new(),
        error: String::new(),
        hist_tag: hist_tag.map(str::to_string),
        graph_iters: 0,
        quality: "ok".into(),
        quality_note: String::new(),
        ceiling_pct: None,
        round_p50_us: String::new(),
        median_ci_low_us: None,
        median_ci_high_us: None,
        ..Default::default()
    }
}

#[test]
fn a_changed_choice_is_nccls_only() {
    let choice = |backend: &str, algo: &str, proto: &str| CaseRow {
        backend: backend.into(),
        algo: algo.into(),
        proto: proto.into(),
        ..row(10.0, None, None)
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

/// Our run (median 7.89 us, mean 12.5 us: a few slow iterations) against an
/// imported nccl-tests run (its mean, 7.97 us): the pair is compared on means,
/// and the times shown must be the means the change was computed from (a real
/// H100 run showed 7.89 -> 7.97 beside a change computed from 12.5).
#[test]
fn a_pair_compared_on_means_shows_the_means() {
    let mut h = Histogram::<u64>::new(3).unwrap();
    h.record_n(7_890, 1000).unwrap();
    let ours = RunData {
        dir: PathBuf::from("ours"),
        manifest: Default::default(),
        cases: vec![row(12.5, Some(7.89), Some("t"))],
        distributions: [("t".to_string(), Distribution::from_histogram(&h))]
            .into_iter()
            .collect(),
    };
    let imported = RunData {
        dir: PathBuf::from("imported"),
        manifest: Default::default(),
        cases: vec![row(7.97, None, None)],
        distributions: Default::default(),
    };
    let side = |run, label: &str| Side {
        run,
        config: None,
        label: label.into(),
    };
    let opts = CompareOptions {
        threshold: 0.02,
        resamples: 100,
        margin: 0.02,
        family_alpha: crate::analysis::family::FAMILY_ALPHA,
    };
    let report = compare(&side(&ours, "ours"), &side(&imported, "nccl-tests"), opts).unwrap();
    assert!(report.means_only);
    let r = &report.rows[0];
    assert_eq!((r.base_time_us, r.cand_time_us), (Some(12.5), Some(7.97)));
    let change = r.comparison.as_ref().unwrap().change;
    assert!((change - (7.97 / 12.5 - 1.0)).abs() < 1e-9, "{change}");

    // Two runs with histograms: medians, as before.
    let report = compare(&side(&ours, "a"), &side(&ours, "b"), opts).unwrap();
    assert!(!report.means_only);
    assert_eq!(report.rows[0].base_time_us, Some(7.89));
}
