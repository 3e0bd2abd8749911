//! The model of synthetic runs with known alpha and beta: the fit, the crossover, and the fits per NCCL choice (the fixtures serve
//! `report::sections::model_table`'s tests too).

use super::*;
use crate::export::reader::ManifestHead;

/// An ok case of the host backend taking `time_us`.
pub fn row(config: &str, nranks: u32, bytes: u64, time_us: f64) -> CaseRow {
    CaseRow {
        config: config.into(),
        backend: "host".into(),
        nranks,
        bytes,
        dtype: "float".into(),
        op: "sum".into(),
        iters: 100,
        status: "ok".into(),
        time_us: Some(time_us),
        ..CaseRow::default()
    }
}

/// default: 5 us + bytes at 20 GB/s; shm-off: 30 us + bytes at 2 GB/s.
pub fn run() -> RunData {
    let mut cases = Vec::new();
    for (config, alpha, beta) in [("default", 5.0, 20.0), ("shm-off", 30.0, 2.0)] {
        for k in (3..=26).step_by(2) {
            let bytes = 1u64 << k;
            cases.push(row(config, 2, bytes, alpha + bytes as f64 / (beta * 1e3)));
        }
    }
    RunData {
        dir: "run".into(),
        manifest: ManifestHead::default(),
        cases,
    }
}

#[test]
fn each_config_gets_its_alpha_and_beta() {
    let models = models(&run());
    assert_eq!(models.len(), 2);
    let f = models[1].fit.as_ref().unwrap();
    assert!((f.alpha_us - 30.0).abs() < 0.01, "{f:?}");
    assert!((f.beta_gbps - 2.0).abs() < 0.001, "{f:?}");
    // The lines cross where 5 + x/2e4 = 30 + x/2e3: never at a positive size.
    let base = models[0].fit.as_ref().unwrap();
    assert_eq!(
        crossing(base, f),
        Crossing::Never {
            other_faster: false
        }
    );
}

/// `default` and `other`: one model each.
fn fits(r: &RunData, other: &str) -> (AlphaBeta, AlphaBeta) {
    let models = models(r);
    let fit_of = |config: &str| {
        let m = models.iter().find(|m| m.config == config).unwrap();
        m.fit.clone().unwrap()
    };
    (fit_of("default"), fit_of(other))
}

/// `default` and a config with a lower fixed cost but a slower rate.
pub fn low_latency_run() -> RunData {
    let mut r = run();
    r.cases.retain(|c| c.config == "default");
    for k in (3..=26).step_by(2) {
        let bytes = 1u64 << k;
        r.cases
            .push(row("low-latency", 2, bytes, 2.0 + bytes as f64 / 10e3));
    }
    r
}

/// `default` and `same`, a copy within its noise (+-2 %).
pub fn same_run() -> RunData {
    let mut r = run();
    r.cases.retain(|c| c.config == "default");
    let copies: Vec<CaseRow> = r
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| CaseRow {
            config: "same".into(),
            time_us: c.time_us.map(|t| t * if i % 2 == 0 { 1.02 } else { 0.98 }),
            ..c.clone()
        })
        .collect();
    r.cases.extend(copies);
    r
}

#[test]
fn the_crossover_says_which_config_wins_on_each_side() {
    // Faster below the crossing, the baseline above: 5 + x/2e4 = 2 + x/1e4 at
    // x = 3 / (1e-4 - 5e-5) = 60,000 bytes.
    let (base, other) = fits(&low_latency_run(), "low-latency");
    let Crossing::At {
        bytes,
        other_faster_above,
        measured,
    } = crossing(&base, &other)
    else {
        panic!("{base:?} {other:?}");
    };
    assert!((bytes - 60e3).abs() < 1.0, "{bytes}");
    assert!(!other_faster_above && measured);
    // A copy of the baseline within its noise crosses nowhere that means anything.
    let (base, other) = fits(&same_run(), "same");
    assert_eq!(crossing(&base, &other), Crossing::NoDifference);
}

/// NCCL's choice per size: LL to 64 KiB (2 us + bytes at 4 GB/s), Simple above
/// (20 us + bytes at 40 GB/s).
pub fn choices_run() -> RunData {
    let mut cases = Vec::new();
    for k in 3..=26 {
        let bytes = 1u64 << k;
        let (proto, alpha, beta) = if k <= 16 {
            ("LL", 2.0, 4.0)
        } else {
            ("Simple", 20.0, 40.0)
        };
        cases.push(CaseRow {
            backend: "nccl".into(),
            algo: "Ring".into(),
            proto: proto.into(),
            ..row("default", 8, bytes, alpha + bytes as f64 / (beta * 1e3))
        });
    }
    RunData { cases, ..run() }
}

/// One line over every size misses the switch; a fit per choice recovers both
/// lines.
#[test]
fn each_nccl_choice_gets_its_own_line() {
    let r = choices_run();
    let models = models(&r);
    let segs = &models[0].segments;
    assert_eq!(segs.len(), 2, "{segs:?}");
    let ll = segs[0].fit.as_ref().unwrap();
    let simple = segs[1].fit.as_ref().unwrap();
    assert_eq!((segs[0].choice.as_str(), segs[0].sizes), ("Ring/LL", 14));
    assert_eq!(
        (segs[1].first_bytes, segs[1].last_bytes),
        (128 << 10, 64 << 20)
    );
    assert!(
        (ll.alpha_us - 2.0).abs() < 0.01 && (ll.beta_gbps - 4.0).abs() < 0.01,
        "{ll:?}"
    );
    assert!(
        (simple.alpha_us - 20.0).abs() < 0.05 && (simple.beta_gbps - 40.0).abs() < 0.05,
        "{simple:?}"
    );
    // One choice over every size, or none known (the host backend): no segments.
    let one: Vec<CaseRow> = r
        .cases
        .iter()
        .map(|c| CaseRow {
            proto: "LL".into(),
            ..c.clone()
        })
        .collect();
    assert!(models_of(one)[0].segments.is_empty());
    // The host backend's store modes are not NCCL's choices.
    let host: Vec<CaseRow> = r
        .cases
        .iter()
        .map(|c| CaseRow {
            backend: "host".into(),
            ..c.clone()
        })
        .collect();
    assert!(models_of(host)[0].segments.is_empty());
    assert!(models_of(run().cases)[0].segments.is_empty());
}

pub fn models_of(cases: Vec<CaseRow>) -> Vec<ConfigModel> {
    models(&RunData { cases, ..run() })
}
