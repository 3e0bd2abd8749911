//! NCCL's choices, a faster forced choice, wrong predictions and the ranks they
//! point at, on constructed runs (the fixtures serve `report::sections::tuning`'s
//! tests too).

use super::*;
use crate::export::reader::{ConfigHead, ManifestHead, NcclHead};

/// A case of 9 rounds around `p50` (each round within +-1 %).
pub fn case(
    config: &str,
    bytes: u64,
    p50: f64,
    choice: (&str, &str),
    predicted: Option<f64>,
) -> CaseRow {
    let rounds: Vec<String> = (0..9)
        .map(|i| format!("{:.3}", p50 * (1.0 + 0.0025 * (i as f64 - 4.0))))
        .collect();
    CaseRow {
        config: config.into(),
        backend: "nccl".into(),
        nranks: 8,
        bytes,
        dtype: "float".into(),
        op: "sum".into(),
        status: "ok".into(),
        p50_us: Some(p50),
        time_us: Some(p50),
        round_p50_us: rounds.join(";"),
        quality: "ok".into(),
        algo: choice.0.into(),
        proto: choice.1.into(),
        channels: "16".into(),
        nccl_predicted_us: predicted,
        ..CaseRow::default()
    }
}

/// A run of NCCL `version` with `ring-ll128` forcing Ring/LL128.
pub fn run(cases: Vec<CaseRow>, version: &str) -> RunData {
    let mut manifest = ManifestHead::default();
    manifest.backend.used = "nccl".into();
    manifest.nccl = Some(NcclHead {
        version: version.into(),
        path: "/usr/lib/libnccl.so.2".into(),
    });
    manifest.configs = vec![ConfigHead {
        name: "ring-ll128".into(),
        env: [
            ("NCCL_ALGO".to_string(), "Ring".to_string()),
            ("NCCL_PROTO".to_string(), "LL128".to_string()),
        ]
        .into(),
        ..ConfigHead::default()
    }];
    RunData {
        dir: "results/run".into(),
        manifest,
        cases,
    }
}

pub fn options() -> CompareOptions {
    CompareOptions::new(0.02)
}

/// NCCL 2.28.9 switching from Ring/LL to Ring/LL128 between 256 KiB and 1 MiB, a
/// forced Ring/LL128 faster at 256 KiB, and 1 MiB beyond its prediction.
pub fn switching() -> RunData {
    run(
        vec![
            case("default", 65536, 5.0, ("Ring", "LL"), Some(4.8)),
            case("default", 262144, 7.25, ("Ring", "LL"), Some(6.0)),
            case("default", 1 << 20, 12.0, ("Ring", "LL128"), Some(5.0)),
            case("ring-ll128", 65536, 5.1, ("Ring", "LL128"), None),
            case("ring-ll128", 262144, 6.0, ("Ring", "LL128"), None),
            case("ring-ll128", 1 << 20, 12.0, ("Ring", "LL128"), None),
        ],
        "2.28.9",
    )
}

#[test]
fn choices_switches_a_faster_forced_choice_and_a_wrong_prediction() {
    let r = switching();
    let t = tuning(&r, "default", options()).unwrap();
    let rows = &t.per_gpus[0].1;
    assert_eq!(
        (rows[0].choice.as_str(), rows[0].channels.as_str()),
        ("Ring/LL", "16")
    );
    assert_eq!(
        switches(rows),
        vec![(262144, 1 << 20, "Ring/LL".into(), "Ring/LL128".into())]
    );
    // Faster only at 256 KiB, by compare's rule; the same time at 1 MiB is not.
    let faster: Vec<(u64, &str)> = rows
        .iter()
        .filter_map(|r| Some((r.bytes, r.faster.as_ref()?.0.as_str())))
        .collect();
    assert_eq!(faster, vec![(262144, "ring-ll128")]);
    // 12 us against 5 predicted: beyond 1.5 x; 7.25 against 6 is not.
    assert_eq!(t.mispredicted.len(), 1);
    assert_eq!(t.mispredicted[0].bytes, 1 << 20);
    assert_eq!(t.no_prediction, None);
}

#[test]
fn identical_configs_give_no_finding_and_old_nccl_has_no_prediction() {
    let r = run(
        vec![
            case("default", 65536, 5.0, ("Ring", "LL"), None),
            case("ring-ll128", 65536, 5.0, ("Ring", "LL"), None),
        ],
        "2.19.3",
    );
    let t = tuning(&r, "default", options()).unwrap();
    assert!(t.per_gpus[0].1[0].faster.is_none());
    assert!(t.mispredicted.is_empty());
    assert_eq!(t.no_prediction, Some(NoPrediction::TooOld("2.19.3".into())));
    // The host backend has no NCCL choices: no section.
    let mut host = case("default", 8, 1.0, ("Ring", "ordinary stores"), None);
    host.backend = "host".into();
    assert_eq!(
        tuning(&run(vec![host], "2.28.9"), "default", options()),
        None
    );
}

/// `default` at each GPU count in `counts`, 4 sizes, measured at `factor(n)` x the
/// prediction.
pub fn over_counts(counts: &[u32], factor: impl Fn(u32) -> f64) -> RunData {
    let mut cases = Vec::new();
    for &n in counts {
        for k in 0..4 {
            let bytes = 8u64 << (4 * k);
            let predicted = 5.0 + k as f64;
            cases.push(CaseRow {
                nranks: n,
                ..case(
                    "default",
                    bytes,
                    predicted * factor(n),
                    ("Ring", "LL"),
                    Some(predicted),
                )
            });
        }
    }
    run(cases, "2.28.9")
}

fn slow_link(r: &RunData) -> Option<SlowLink> {
    let t = tuning(r, "default", options()).unwrap();
    mispredict::locate(r, &t.mispredicted)
}

#[test]
fn the_gpu_counts_beyond_the_prediction_point_at_the_ranks_of_the_slow_link() {
    // A slow link at rank 3: groups of 2 keep to the prediction, 4 and 8 do not.
    let r = over_counts(&[2, 4, 8], |n| if n > 3 { 2.0 } else { 1.0 });
    assert_eq!(
        slow_link(&r),
        Some(SlowLink::Ranks {
            fine: 2,
            slow: 4,
            largest: 8
        })
    );
    let t = tuning(&r, "default", options()).unwrap();
    let four = mispredict::groups(&r, &t.mispredicted)
        .into_iter()
        .find(|g| g.nranks == 4)
        .unwrap();
    assert_eq!(
        (four.beyond, four.predicted, four.sizes),
        (4, 4, vec![8, 128, 2048, 32768])
    );
    // The geometric mean of rounds within +-1 % of twice the prediction.
    let (low, high) = four.ratios;
    assert!(
        (low - 2.0).abs() < 1e-3 && (high - 2.0).abs() < 1e-3,
        "{low} {high}"
    );
    // With 3 ranks measured too, the one rank the 4-rank groups add.
    let r = over_counts(&[2, 3, 4, 8], |n| if n > 3 { 2.0 } else { 1.0 });
    assert_eq!(
        slow_link(&r),
        Some(SlowLink::Ranks {
            fine: 3,
            slow: 4,
            largest: 8
        })
    );
    // Every count: a link every group uses, or the model.
    let r = over_counts(&[2, 4, 8], |_| 2.0);
    assert_eq!(slow_link(&r), Some(SlowLink::EveryCount(vec![2, 4, 8])));
    // One GPU count cannot locate anything.
    let r = over_counts(&[8], |_| 2.0);
    assert_eq!(slow_link(&r), Some(SlowLink::OneCount(8)));
    // No pattern (4 slow, 8 not), or no case beyond: nothing is located.
    assert_eq!(
        slow_link(&over_counts(&[2, 4, 8], |n| if n == 4 { 2.0 } else { 1.0 })),
        None
    );
    assert_eq!(slow_link(&over_counts(&[2, 4, 8], |_| 1.2)), None);
}
