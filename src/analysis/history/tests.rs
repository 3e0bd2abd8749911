//! Tests of `history` on synthetic nights: steady levels, real steps and one-off runs,
//! flagged and failed runs, series per datatype and op.

use super::*;
use crate::export::reader::ManifestHead;
use crate::stats::change::Change;

/// Seven rounds within +-`spread` of the case's median, and the median's interval.
pub(crate) fn set_rounds(c: &mut CaseRow, spread: f64) {
    let p50 = c.p50_us.unwrap_or(1.0);
    let rounds: Vec<String> = (0..7)
        .map(|k| (p50 * (1.0 + spread * (k as f64 - 3.0) / 3.0)).to_string())
        .collect();
    c.round_p50_us = rounds.join(";");
    c.median_ci_low_us = Some(p50 * (1.0 - spread));
    c.median_ci_high_us = Some(p50 * (1.0 + spread));
}

/// A run at `level` (1.0 = the base), each case's rounds within +-0.3 %.
pub(crate) fn run(i: usize, level: f64, nccl: &str) -> RunData {
    let mut manifest = ManifestHead::default();
    manifest.backend.used = "host".into();
    manifest.host.hostname = "node1".into();
    manifest.started_at = format!("2026-10-{:02}T02:00:00Z", i + 1);
    manifest.nccl = Some(crate::export::reader::NcclHead {
        version: nccl.into(),
        path: "/usr/lib/libnccl.so.2".into(),
    });
    let cases = [8u64, 65536, 1 << 30]
        .iter()
        .map(|&bytes| {
            let p50 = (5.0 + bytes as f64 / 1e4) * level;
            let mut c = CaseRow {
                config: "default".into(),
                backend: "host".into(),
                nranks: 2,
                bytes,
                dtype: "float".into(),
                op: "sum".into(),
                status: "ok".into(),
                time_us: Some(p50),
                p50_us: Some(p50),
                busbw_gbps: Some(bytes as f64 / p50 / 1e3),
                quality: "ok".into(),
                ..CaseRow::default()
            };
            set_rounds(&mut c, 0.003);
            c
        })
        .collect();
    RunData {
        dir: format!("results/night-{i:02}").into(),
        manifest,
        cases,
    }
}

/// Night-to-night noise of +-1.5 %, a fixed pattern.
fn noise(i: usize) -> f64 {
    1.0 + [0.0, 0.012, -0.009, 0.015, -0.015, 0.004, -0.006, 0.009][i % 8]
}

pub(crate) fn opts() -> Options {
    Options {
        sizes: DEFAULT_SIZES.to_vec(),
        threshold: 0.05,
        window: DEFAULT_WINDOW,
    }
}

#[test]
fn a_ten_percent_step_is_the_one_step_found_with_its_two_runs_and_what_changed() {
    let runs: Vec<RunData> = (0..30)
        .map(|i| {
            let (level, nccl) = if i >= 20 {
                (1.10, "2.23.4")
            } else {
                (1.0, "2.21.5")
            };
            run(i, level * noise(i), nccl)
        })
        .collect();
    let h = build(&runs, &opts());
    assert_eq!(h.series.len(), 3, "largest, 64 KiB, 8 B");
    assert_eq!(
        h.series.iter().map(|s| s.bytes).collect::<Vec<_>>(),
        [1 << 30, 65536, 8]
    );
    for s in &h.series {
        assert_eq!(s.points.len(), 30);
        assert_eq!(s.steps.len(), 1, "{}: {:?}", s.bytes, s.steps);
        assert!(s.one_offs.is_empty(), "{:?}", s.one_offs);
        let step = &s.steps[0];
        assert_eq!((step.before, step.after), (19, 20));
        assert_eq!(step.verdict, Change::Slower);
        assert!(step.confirmed);
        assert!(step.ci.0 > 0.05 && step.ci.0 <= step.change && step.change <= step.ci.1);
        assert!((step.change - 0.10).abs() < 0.03, "{}", step.change);
        assert_eq!(
            step.differences,
            vec![Difference {
                what: Fact::Nccl,
                before: "2.21.5".into(),
                after: "2.23.4".into()
            }]
        );
    }
}

#[test]
fn a_one_night_blip_is_a_one_off_and_the_latest_run_is_an_unconfirmed_step() {
    let levels = [1.0, 1.01, 0.99, 1.0, 1.2, 1.0, 1.01, 0.99, 1.0, 0.85];
    let runs: Vec<RunData> = levels
        .iter()
        .enumerate()
        .map(|(i, &l)| run(i, l, "2.21.5"))
        .collect();
    let h = build(&runs, &opts());
    let s = &h.series[0];
    assert_eq!(s.one_offs.len(), 1);
    assert_eq!(s.one_offs[0].run, 4);
    assert_eq!(s.one_offs[0].verdict, Change::Slower);
    assert_eq!(s.steps.len(), 1);
    let step = &s.steps[0];
    assert_eq!((step.before, step.after), (8, 9));
    assert_eq!(step.verdict, Change::Faster);
    assert!(!step.confirmed);
    assert!(step.differences.is_empty());
}

/// A level at 1.00, then a lasting move that each case sees through its interval.
fn series_of(levels: &[f64]) -> Series {
    let runs: Vec<RunData> = levels
        .iter()
        .enumerate()
        .map(|(i, &l)| run(i, l, "2.21.5"))
        .collect();
    build(&runs, &opts()).series.remove(0)
}

#[test]
fn an_unsure_night_before_a_step_does_not_hide_it() {
    // 10 nights at 1.00, one at 1.052 (its interval straddles 5 %), then 1.10.
    let mut levels = vec![1.0; 10];
    levels.push(1.052);
    levels.extend([1.10; 12]);
    let s = series_of(&levels);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    let step = &s.steps[0];
    assert_eq!((step.before, step.after, step.confirmed), (9, 10, true));
    assert_eq!(step.verdict, Change::Slower);
    assert!((step.change - 0.10).abs() < 0.01, "{}", step.change);
    assert!(s.one_offs.is_empty());
}

#[test]
fn a_drift_is_a_step_once_it_passes_the_threshold() {
    let levels: Vec<f64> = (0..30).map(|i| 1.0 + 0.01 * i as f64).collect();
    let s = series_of(&levels);
    assert!(!s.steps.is_empty(), "+29 % over 30 nights");
    assert!(s.steps.iter().all(|st| st.verdict == Change::Slower));
}

#[test]
fn a_first_run_out_of_line_is_a_one_off_not_a_step() {
    let mut levels = vec![1.2];
    levels.extend([1.0; 9]);
    let s = series_of(&levels);
    assert!(s.steps.is_empty(), "{:?}", s.steps);
    assert_eq!(s.one_offs.len(), 1);
    assert_eq!(s.one_offs[0].run, 0);
    assert_eq!(s.one_offs[0].verdict, Change::Slower);
    assert!((s.one_offs[0].change - 0.2).abs() < 0.01);
}

#[test]
fn failed_and_flagged_runs_are_shown_but_never_judged() {
    let mut runs: Vec<RunData> = (0..8).map(|i| run(i, noise(i), "2.21.5")).collect();
    runs[3].cases[2].status = "timeout".into();
    runs[5].cases[2].quality = "noisy".into();
    for c in &mut runs[5].cases {
        c.p50_us = c.p50_us.map(|t| t * 1.5);
        set_rounds(c, 0.003);
    }
    let h = build(&runs, &opts());
    let s = &h.series[0];
    assert_eq!(s.bytes, 1 << 30);
    assert!(s.steps.is_empty() && s.one_offs.is_empty(), "{s:?}");
    assert!(!s.points[3].trusted && s.points[3].median_us.is_none());
    assert!(!s.points[5].trusted && s.points[5].median_us.is_some());
    // The 64 KiB series of run 5 is 50 % slower and trusted: a one-off.
    assert_eq!(h.series[1].one_offs.len(), 1);
}

#[test]
fn backends_configs_and_rank_counts_are_kept_apart_and_sizes_chosen_per_group() {
    let mut runs: Vec<RunData> = (0..4).map(|i| run(i, 1.0, "2.21.5")).collect();
    let mut other = run(4, 2.0, "2.21.5");
    for c in &mut other.cases {
        c.backend = "nccl".into();
        c.nranks = 8;
    }
    other.cases.truncate(2);
    runs.push(other);
    order(&mut runs);
    let h = build(
        &runs,
        &Options {
            sizes: vec![SizeChoice::Largest, SizeChoice::Near(100)],
            ..opts()
        },
    );
    let keys: Vec<(&str, u32, u64, usize)> = h
        .series
        .iter()
        .map(|s| (s.backend.as_str(), s.nranks, s.bytes, s.points.len()))
        .collect();
    assert_eq!(
        keys,
        [
            ("host", 2, 1 << 30, 4),
            ("host", 2, 8, 4),
            ("nccl", 8, 65536, 1),
            ("nccl", 8, 8, 1)
        ]
    );
    assert!(h.steps().next().is_none());
}

#[test]
fn runs_are_ordered_by_their_start_time_across_offsets_and_imports() {
    let mut runs: Vec<RunData> = (0..4).map(|i| run(i, 1.0, "2.21.5")).collect();
    runs[0].manifest.started_at = "2026-10-05T03:00:00+02:00".into(); // 01:00 UTC
    runs[1].manifest.started_at = "2026-10-05T02:00:00+00:00".into();
    runs[2].manifest.started_at = "2026-10-04T23:30:00-00:00".into();
    runs[3].manifest.started_at = "not a time".into();
    order(&mut runs);
    let names: Vec<String> = runs.iter().map(|r| r.dir.display().to_string()).collect();
    assert_eq!(
        names,
        [
            "results/night-03",
            "results/night-02",
            "results/night-00",
            "results/night-01"
        ]
    );
    assert_eq!(
        start_seconds("2026-10-05T01:00:00Z"),
        start_seconds("2026-10-05T03:00:00+02:00")
    );
    assert!(start_seconds("2026-07-10T12:00:00").is_some());
}

#[test]
fn facts_and_their_differences() {
    let mut a = run(0, 1.0, "2.21.5");
    let mut b = run(1, 1.0, "2.21.5");
    a.manifest.gpu = Some(serde_json::json!({
        "driver_version": "550.54.15", "cuda_version": "12.4",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}]
    }));
    b.manifest.gpu = Some(serde_json::json!({
        "driver_version": "555.42.02", "cuda_version": "12.4",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}]
    }));
    b.manifest.host.hostname = "node7".into();
    b.manifest.configs = vec![crate::export::reader::ConfigHead {
        name: "default".into(),
        env: [("NCCL_SHM_DISABLE".to_string(), "1".to_string())].into(),
        ..Default::default()
    }];
    let f = facts(&a, "default");
    assert!(f.contains(&(Fact::Gpus, "2 x NVIDIA H100 80GB HBM3".into())));
    let d = differences(&a, &b, "default");
    let what: Vec<(Fact, &str, &str)> = d
        .iter()
        .map(|d| (d.what, d.before.as_str(), d.after.as_str()))
        .collect();
    assert_eq!(
        what,
        [
            (Fact::Driver, "550.54.15", "555.42.02"),
            (Fact::Hosts, "node1", "node7"),
            (Fact::Variables, "-", "NCCL_SHM_DISABLE=1"),
        ]
    );
}

#[test]
fn datatypes_and_ops_are_kept_apart() {
    let runs: Vec<RunData> = (0..3).map(|i| run(i, 1.0, "2.21.5")).collect();
    assert!(!build(&runs, &opts()).several_kinds());
    let h = build(&several_kinds(runs), &opts());
    assert!(h.several_kinds());
    // Twice the time for half/max is another series, not a step.
    assert_eq!(h.series.len(), 6);
    assert!(h.steps().next().is_none());
}

/// `runs` and three more of half/max at twice the time.
pub(crate) fn several_kinds(mut runs: Vec<RunData>) -> Vec<RunData> {
    for mut r in (3..6).map(|i| run(i, 2.0, "2.21.5")) {
        for c in &mut r.cases {
            c.dtype = "half".into();
            c.op = "max".into();
        }
        runs.push(r);
    }
    runs
}

#[test]
fn a_spike_before_a_smaller_step_is_a_one_off_and_the_step_is_sized_by_its_level() {
    // 8 nights at 1.00, a night at 1.30, then a lasting 1.10.
    let mut levels = vec![1.0; 8];
    levels.push(1.30);
    levels.extend([1.10; 8]);
    let s = series_of(&levels);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    let step = &s.steps[0];
    // Between the old level's last run and the new level's first, the spike a
    // one-off between them.
    assert_eq!((step.before, step.after, step.confirmed), (7, 9, true));
    assert_eq!(step.verdict, Change::Slower);
    assert!((step.change - 0.10).abs() < 0.005, "{step:?}");
    assert!(step.ci.0 > 0.05 && step.ci.1 < 0.15, "{step:?}");
    let spikes: Vec<usize> = s.one_offs.iter().map(|o| o.run).collect();
    // The runs at 1.10 are the new level, not judged against the spike: no
    // improvement after it.
    assert_eq!(spikes, [8]);
}

#[test]
fn a_ramp_is_part_of_the_move_not_a_one_off() {
    // 8 nights at 1.00, then 1.10, then 1.20 for good.
    let mut levels = vec![1.0; 8];
    levels.push(1.10);
    levels.extend([1.20; 6]);
    let s = series_of(&levels);
    assert!(s.one_offs.is_empty(), "{:?}", s.one_offs);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    let step = &s.steps[0];
    assert_eq!((step.before, step.after), (7, 8));
    // Sized by the new level, whose first two runs are the ramp's: its interval
    // reaches the +20 % where it settled.
    assert!(step.change > 0.10 && step.ci.1 >= 0.19, "{step:?}");
}

/// Runs whose own intervals are wider than the threshold (each median +-6 %, as
/// few rounds on a jittery machine give) still make a level: ten of them are quiet,
/// and a 25 % slowdown from the eighth on is one step.
#[test]
fn runs_noisier_than_the_threshold_make_a_level_a_step_can_leave() {
    let wide = |levels: &[f64]| {
        let runs: Vec<RunData> = levels
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let mut r = run(i, l * noise(i), "2.21.5");
                for c in &mut r.cases {
                    set_rounds(c, 0.06);
                }
                r
            })
            .collect();
        build(&runs, &opts()).series.remove(0)
    };
    let quiet = wide(&[1.0; 10]);
    assert!(quiet.steps.is_empty(), "{:?}", quiet.steps);
    assert!(quiet.one_offs.is_empty(), "{:?}", quiet.one_offs);
    let mut levels = vec![1.0; 7];
    levels.extend([1.25; 3]);
    let s = wide(&levels);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    assert_eq!((s.steps[0].before, s.steps[0].after), (6, 7));
    assert_eq!(s.steps[0].verdict, Change::Slower);
    assert!(s.one_offs.is_empty(), "{:?}", s.one_offs);
}

/// A step's first run a little further out than the next ones, within their noise,
/// is part of the step, not a spike before it.
#[test]
fn a_noisy_first_run_of_a_step_is_part_of_it() {
    let mut runs: Vec<RunData> = (0..10).map(|i| run(i, 1.0, "2.21.5")).collect();
    for (i, r) in runs.iter_mut().enumerate() {
        let level = match i {
            7 => 1.31,
            8 | 9 => 1.245,
            _ => 1.0,
        };
        for c in &mut r.cases {
            c.p50_us = c.p50_us.map(|t| t * level);
            set_rounds(c, 0.04);
        }
    }
    let s = build(&runs, &opts()).series.remove(0);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    assert_eq!((s.steps[0].before, s.steps[0].after), (6, 7));
    assert!(s.one_offs.is_empty(), "{:?}", s.one_offs);
}

/// A step where NCCL changed its algorithm or protocol names the change.
#[test]
fn a_step_names_a_change_of_nccls_choice() {
    let mut runs: Vec<RunData> = (0..8)
        .map(|i| run(i, if i < 5 { 1.0 } else { 1.2 }, "2.27.3"))
        .collect();
    for (i, r) in runs.iter_mut().enumerate() {
        for c in &mut r.cases {
            c.algo = if i < 5 { "Ring" } else { "Tree" }.into();
            c.proto = "LL128".into();
        }
    }
    // The host backend's store mode is not NCCL's choice: no such difference.
    let s = build(&runs, &opts()).series.remove(0);
    assert!(
        s.steps[0]
            .differences
            .iter()
            .all(|d| d.what != Fact::Choice),
        "{:?}",
        s.steps
    );
    for r in runs.iter_mut() {
        r.manifest.backend.used = "nccl".into();
        for c in &mut r.cases {
            c.backend = "nccl".into();
        }
    }
    let s = build(&runs, &opts()).series.remove(0);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    let d = &s.steps[0].differences;
    assert!(
        d.iter()
            .any(|d| d.what == Fact::Choice && d.before == "Ring/LL128" && d.after == "Tree/LL128"),
        "{d:?}"
    );
}
