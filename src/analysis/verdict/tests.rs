//! The verdict rules on constructed runs, one per branch.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use hdrhistogram::Histogram;

use super::*;
use crate::analysis::family::Answer;
use crate::export::reader::{ConfigHead, ManifestHead};
use crate::stats::distribution::Distribution;

const OPTIONS: CompareOptions = CompareOptions {
    threshold: 0.02,
    resamples: 300,
    margin: 0.02,
    family_alpha: crate::analysis::family::FAMILY_ALPHA,
};

struct Case {
    config: &'static str,
    bytes: u64,
    status: &'static str,
    transports: &'static str,
    error: &'static str,
    /// Latency scale against the reference distribution, and the sample count.
    scale: f64,
    samples: u64,
    /// Rounds (process groups) and how much a round's median varies (a fraction):
    /// the verdict decides on rounds.
    rounds: usize,
    spread: f64,
    /// The `quality` column.
    quality: &'static str,
}

fn ok(config: &'static str, bytes: u64, transports: &'static str, scale: f64) -> Case {
    Case {
        config,
        bytes,
        status: "ok",
        transports,
        error: "",
        scale,
        samples: 2000,
        rounds: 15,
        spread: 0.01,
        quality: "ok",
    }
}

fn run(configs: &[(&str, &[(&str, &str)])], cases: Vec<Case>) -> RunData {
    let mut distributions = HashMap::new();
    let rows = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let tag = format!("{}/n2/{}/float/sum", c.config, c.bytes);
            let mut h = Histogram::<u64>::new(3).unwrap();
            for j in 0..c.samples {
                let noise = 1.0 + ((j * 7919 + i as u64) % 100) as f64 / 500.0;
                h.record((10_000.0 * noise * c.scale) as u64).unwrap();
            }
            let median = h.value_at_quantile(0.5) as f64 / 1e3;
            let ok = c.status == "ok";
            if ok {
                distributions.insert(tag.clone(), Distribution::from_histogram(&h));
            }
            CaseRow {
                config: c.config.into(),
                backend: "nccl".into(),
                nranks: 2,
                bytes: c.bytes,
                dtype: "float".into(),
                op: "sum".into(),
                iters: c.samples,
                status: c.status.into(),
                time_us: ok.then_some(median),
                algbw_gbps: None,
                busbw_gbps: None,
                p50_us: ok.then_some(median),
                p99_us: None,
                max_us: None,
                wrong: Some(0),
                transports: c.transports.into(),
                error: c.error.into(),
                hist_tag: ok.then_some(tag),
                graph_iters: 0,
                quality: c.quality.into(),
                quality_note: String::new(),
                ceiling_pct: None,
                // Round r's median: the same pattern in every config (a round runs
                // them back to back), a little of its own per case.
                round_p50_us: (0..c.rounds)
                    .map(|r| {
                        let wobble = ((r * 7 + i * 3) % 5) as f64 / 4.0 - 0.5;
                        let round = ((r * 13) % 7) as f64 / 6.0 - 0.5;
                        (median * (1.0 + c.spread * (wobble + round))).to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(";"),
                median_ci_low_us: None,
                median_ci_high_us: None,
                ..Default::default()
            }
        })
        .collect();
    RunData {
        dir: PathBuf::from("synthetic"),
        manifest: ManifestHead {
            configs: configs
                .iter()
                .map(|(name, env)| ConfigHead {
                    name: name.to_string(),
                    env: env
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect::<BTreeMap<_, _>>(),
                    ..ConfigHead::default()
                })
                .collect(),
            ..ManifestHead::default()
        },
        cases: rows,
        distributions,
    }
}

const SHM_DECISION: [(&str, &[(&str, &str)]); 2] =
    [("default", &[]), ("shm-off", &[("NCCL_SHM_DISABLE", "1")])];

#[test]
fn no_shm_disabled_config_cannot_tell() {
    let r = run(&[("default", &[])], vec![ok("default", 1024, "SHM", 1.0)]);
    assert!(matches!(
        decide(&r, "default", OPTIONS),
        Verdict::CannotTell { .. }
    ));
}

#[test]
fn an_enospc_failure_in_the_baseline_says_fix_dev_shm() {
    let failed = Case {
        config: "default",
        bytes: 1024,
        status: "failed",
        transports: "",
        error: "rank 0: host backend: error while creating shared memory segment /dev/shm/x (size 4198400): posix_fallocate failed: No space left on device (os error 28)",
        scale: 1.0,
        samples: 0,
        rounds: 0,
        spread: 0.0,
        quality: "",
    };
    let mut r = run(
        &SHM_DECISION,
        vec![failed, ok("shm-off", 1024, "NET/Socket", 1.0)],
    );
    for c in &mut r.cases {
        c.backend = "host".into();
    }
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::ShmFails { need, .. } => {
            assert_eq!(need.as_ref().map(|n| n.bytes), Some(2 * 4_198_400))
        }
        other => panic!("{other:?}"),
    }
    let words = explain(&v, "default");
    assert!(
        words.contains("It needs about 8.01 MiB (4198400 B per segment x 2 ranks: the host backend's ring, one segment per rank)"),
        "{words}"
    );
    assert!(words.contains("--shm-size=1g"), "{words}");
    assert!(
        words.contains("Fix /dev/shm")
            && words.contains("--shm-size")
            && words.contains("--ipc=host"),
        "{words}"
    );
}

/// A size-0 attach of a name NCCL never makes (one rank's SHM in cuMem host memory,
/// another's in /dev/shm) is not a full /dev/shm: the verdict says
/// NCCL_CUMEM_HOST_ENABLE=0, neither --shm-size nor disabling SHM; an ordinary attach
/// ENOENT of the same words but a real name and size stays /dev/shm's.
#[test]
fn a_cumem_mismatch_in_the_baseline_says_cumem_host_enable_0_not_dev_shm() {
    let with = |error: &'static str| {
        let failed = Case {
            config: "default",
            bytes: 1024,
            status: "failed",
            transports: "SHM:100%",
            error,
            scale: 1.0,
            samples: 0,
            rounds: 0,
            spread: 0.0,
            quality: "",
        };
        let r = run(
            &SHM_DECISION,
            vec![failed, ok("shm-off", 1024, "NET/Socket", 1.0)],
        );
        decide(&r, "default", OPTIONS)
    };
    let v = with("rank 1: ncclAllReduce failed: ncclSystemError (2): unhandled system error; last error: Error while attaching to shared memory segment /dev/shm/nccl-\u{40c} (size 0), error: No such file or directory (2)");
    assert!(matches!(v, Verdict::CumemMismatch { .. }), "{v:?}");
    let words = explain(&v, "default");
    assert!(
        words.starts_with("**Set NCCL_CUMEM_HOST_ENABLE=0 on every rank; do not disable SHM.**")
            && !words.contains("--shm-size"),
        "{words}"
    );
    let v = with("rank 1: ncclAllReduce failed: ncclSystemError (2): unhandled system error; last error: Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 9637888), error: No such file or directory (2)");
    assert!(matches!(v, Verdict::ShmFails { .. }), "{v:?}");
}

/// With NCCL the verdict sizes /dev/shm as the doctor does: the same figure for the
/// same ranks and variables (the doctor's line read "need 73.5 MiB" where the verdict
/// said "at least 11.38 MiB").
#[test]
fn an_nccl_enospc_verdict_needs_what_the_doctor_says() {
    let failed = Case {
        config: "default",
        bytes: 1024,
        status: "failed",
        transports: "",
        error: "rank 0: ncclCommInitRank failed: unhandled system error; last error: Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
        scale: 1.0,
        samples: 0,
        rounds: 0,
        spread: 0.0,
        quality: "",
    };
    let mut r = run(
        &SHM_DECISION,
        vec![failed, ok("shm-off", 1024, "NET/Socket", 1.0)],
    );
    r.cases[0].nranks = 4;
    let v = decide(&r, "default", OPTIONS);
    let doctor = crate::nccl::shm::node_need(
        crate::nccl::shm::DEFAULT_SHM_SEGMENT_BYTES,
        crate::nccl::shm::USUAL_SHM_CHANNELS,
        4,
    );
    match &v {
        Verdict::ShmFails { need, .. } => {
            assert_eq!(need.as_ref().map(|n| n.bytes), Some(doctor.total_bytes));
            assert_eq!(doctor.total_bytes, 9_637_888 * 2 * 4);
        }
        other => panic!("{other:?}"),
    }
    let words = explain(&v, "default");
    assert!(
        words.contains("It needs about 73.53 MiB (9637888 B per segment x 2 channels (what NCCL usually builds where GPUs talk over SHM) x 1 SHM peer per rank x 4 ranks per node, as `nccl-bench doctor` estimates it"),
        "{words}"
    );
    // The config's own channel limits count (the doctor reads the machine's).
    let mut r = r.clone();
    r.manifest.configs[0]
        .env
        .insert("NCCL_MIN_NCHANNELS".into(), "4".into());
    match decide(&r, "default", OPTIONS) {
        Verdict::ShmFails { need, .. } => {
            assert_eq!(need.map(|n| n.bytes), Some(9_637_888 * 4 * 4))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn shm_not_on_the_data_path_says_so_with_the_transport() {
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "P2P/CUMEM:100%", 1.0),
            ok("default", 1 << 20, "P2P/CUMEM:100%", 1.0),
            ok("shm-off", 1024, "P2P/CUMEM:100%", 1.001),
            ok("shm-off", 1 << 20, "P2P/CUMEM:100%", 1.0),
        ],
    );
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::NotOnDataPath {
            carried_by,
            difference,
        } => {
            assert_eq!(carried_by, &["P2P/CUMEM"]);
            assert_eq!(difference.regressed, 0);
            assert_eq!(difference.cases, 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(explain(&v, "default").contains("went over P2P/CUMEM"));
}

#[test]
fn a_measured_cost_says_keep_shm() {
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            ok("default", 1 << 20, "SHM", 1.0),
            ok("shm-off", 1024, "NET/Socket", 3.0),
            ok("shm-off", 1 << 20, "NET/Socket", 1.2),
        ],
    );
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::KeepShm {
            difference,
            shm_seen,
        } => {
            assert!(shm_seen);
            assert_eq!(difference.regressed, 2);
            let (bytes, change, ci) = difference.at_largest.unwrap();
            assert_eq!(bytes, 1 << 20);
            assert!(
                (change - 0.2).abs() < 0.01 && ci.0 > 0.02,
                "{change} {ci:?}"
            );
            assert_eq!(
                difference.worst.unwrap().0,
                1024,
                "the 3x slowdown is the worst"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(explain(&v, "default").starts_with(
        "**Keep SHM enabled.** SHM carries traffic here and disabling it costs time \
         (without it, the traffic went over NET/Socket): "
    ));
}

/// Logs that named no transport (an NCCL too old or too quiet): the cost is still
/// measured, but the verdict must not claim SHM carried the traffic.
#[test]
fn a_cost_without_transports_does_not_claim_shm_carried_traffic() {
    let r = run(
        &SHM_DECISION,
        vec![ok("default", 1024, "", 1.0), ok("shm-off", 1024, "", 3.0)],
    );
    let v = decide(&r, "default", OPTIONS);
    assert!(
        matches!(
            v,
            Verdict::KeepShm {
                shm_seen: false,
                ..
            }
        ),
        "{v:?}"
    );
    let words = explain(&v, "default");
    assert!(!words.contains("SHM carries traffic"), "{words}");
    assert!(words.contains("named no transport"), "{words}");
}

/// One GPU has no peer: a one-rank sweep cannot answer, and one-rank cases of a
/// larger sweep (noise, whatever they show) do not sway the answer.
#[test]
fn one_rank_cases_do_not_decide() {
    let one_rank = |mut r: RunData| {
        for c in &mut r.cases {
            c.nranks = 1;
        }
        r
    };
    let r = one_rank(run(
        &SHM_DECISION,
        vec![ok("default", 1024, "", 1.0), ok("shm-off", 1024, "", 3.0)],
    ));
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::CannotTell { why } => assert!(
            why.contains("every 'default' case ran on one rank"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }

    let mut r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "", 1.0),
            ok("shm-off", 1024, "", 3.0),
            ok("default", 4096, "SHM", 1.0),
            ok("shm-off", 4096, "NET/Socket", 1.0),
        ],
    );
    r.cases[0].nranks = 1;
    r.cases[1].nranks = 1;
    match decide(&r, "default", OPTIONS) {
        Verdict::NoMeasurableCost {
            difference,
            shm_seen: true,
        } => assert_eq!(difference.cases, 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn shm_used_without_cost_is_said_plainly() {
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            ok("shm-off", 1024, "NET/Socket", 1.0),
        ],
    );
    assert!(matches!(
        decide(&r, "default", OPTIONS),
        Verdict::NoMeasurableCost { .. }
    ));
}

#[test]
fn too_few_rounds_is_not_settled_with_how_many_more() {
    let few = |config, scale| Case {
        rounds: 6,
        spread: 0.05,
        ..ok(config, 1024, "SHM", scale)
    };
    let r = run(
        &SHM_DECISION,
        vec![few("default", 1.0), few("shm-off", 1.03)],
    );
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::Inconclusive {
            difference, rounds, ..
        } => {
            assert_eq!(*rounds, 6);
            let family = difference.family.as_ref().unwrap();
            assert!(
                matches!(family.answer, Answer::NotSettled { rounds: Some(r) } if r > 6),
                "{family:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(explain(&v, "default").contains("would settle it"), "{v:?}");
}

/// A case of one round sees one process group's iterations: however far apart the
/// configs, it decides nothing, and the verdict says to measure rounds.
#[test]
fn one_round_decides_nothing() {
    let once = |config, scale| Case {
        rounds: 1,
        ..ok(config, 1024, "SHM", scale)
    };
    let r = run(
        &SHM_DECISION,
        vec![once("default", 1.0), once("shm-off", 2.0)],
    );
    let v = decide(&r, "default", OPTIONS);
    assert!(
        matches!(&v, Verdict::Inconclusive { rounds, difference } if *rounds <= 1 && difference.inconclusive == 1),
        "{v:?}"
    );
    assert!(
        explain(&v, "default").contains("sweep with --rounds 6 or more"),
        "{}",
        explain(&v, "default")
    );
}

#[test]
fn the_shm_off_config_is_found_by_its_environment() {
    let r = run(
        &[
            ("default", &[]),
            (
                "net-only",
                &[("NCCL_SHM_DISABLE", "1"), ("NCCL_P2P_DISABLE", "1")],
            ),
            ("no-shm", &[("NCCL_SHM_DISABLE", "1")]),
        ],
        vec![],
    );
    assert_eq!(shm_off_config(&r).as_deref(), Some("no-shm"));
}

/// A cost seen only where the SHM-disabled case is flagged noisy or an outlier is no
/// evidence: set aside, and the rest decides.
#[test]
fn flagged_cases_are_not_evidence() {
    let noisy = |config, bytes, quality| Case {
        quality,
        ..ok(config, bytes, "NET/Socket", 3.0)
    };
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            ok("default", 1 << 20, "SHM", 1.0),
            noisy("shm-off", 1024, "noisy"),
            ok("shm-off", 1 << 20, "NET/Socket", 1.0),
        ],
    );
    let v = decide(&r, "default", OPTIONS);
    match &v {
        Verdict::NoMeasurableCost { difference, .. } => {
            assert_eq!((difference.regressed, difference.distrusted), (0, 1));
            assert_eq!(difference.inconclusive, 0);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        explain(&v, "default").contains(
            "1 set aside (a side flagged noisy or outlier, or re-measured alone: not evidence)"
        ),
        "{}",
        explain(&v, "default")
    );
    // The same cost in a re-measured case is set aside too: the re-measurement it
    // kept ran its rounds alone, not side by side with the default's.
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            noisy("shm-off", 1024, "remeasured"),
        ],
    );
    assert!(
        !matches!(decide(&r, "default", OPTIONS), Verdict::KeepShm { .. }),
        "{:?}",
        decide(&r, "default", OPTIONS)
    );
    // Nothing but flagged pairs: not settled, and more iterations would not help.
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            noisy("shm-off", 1024, "outlier"),
        ],
    );
    match decide(&r, "default", OPTIONS) {
        Verdict::Inconclusive { difference, .. } => {
            assert_eq!(difference.distrusted, 1);
            assert_eq!(difference.family.as_ref().unwrap().cases, 0);
        }
        other => panic!("{other:?}"),
    }
}
