//! The verdict rules on constructed runs, one per branch.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use crate::export::reader::{ConfigHead, ManifestHead};
use crate::stats::change::Change;

pub(crate) const OPTIONS: CompareOptions = CompareOptions {
    threshold: 0.02,
    margin: 0.02,
    alpha: 0.05,
};

pub(crate) struct Case {
    pub config: &'static str,
    pub bytes: u64,
    pub status: &'static str,
    pub transports: &'static str,
    pub error: &'static str,
    /// Latency scale against the reference time.
    pub scale: f64,
    /// Rounds (process groups) and how much a round's median varies (a fraction).
    pub rounds: usize,
    pub spread: f64,
    /// The `quality` column.
    pub quality: &'static str,
}

pub(crate) fn ok(config: &'static str, bytes: u64, transports: &'static str, scale: f64) -> Case {
    Case {
        config,
        bytes,
        status: "ok",
        transports,
        error: "",
        scale,
        rounds: 15,
        spread: 0.01,
        quality: "ok",
    }
}

pub(crate) fn failed(config: &'static str, transports: &'static str, error: &'static str) -> Case {
    Case {
        status: "failed",
        transports,
        error,
        rounds: 0,
        spread: 0.0,
        quality: "",
        ..ok(config, 1024, "", 1.0)
    }
}

pub(crate) fn run(configs: &[(&str, &[(&str, &str)])], cases: Vec<Case>) -> RunData {
    let rows = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let median = 10.0 * c.scale;
            let ok = c.status == "ok";
            CaseRow {
                config: c.config.into(),
                backend: "nccl".into(),
                nranks: 2,
                bytes: c.bytes,
                dtype: "float".into(),
                op: "sum".into(),
                iters: 2000,
                status: c.status.into(),
                time_us: ok.then_some(median),
                p50_us: ok.then_some(median),
                wrong: 0,
                transports: c.transports.into(),
                error: c.error.into(),
                quality: c.quality.into(),
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
    }
}

pub(crate) const SHM_DECISION: [(&str, &[(&str, &str)]); 2] =
    [("default", &[]), ("shm-off", &[("NCCL_SHM_DISABLE", "1")])];

/// The change of a measured verdict; panics on another.
fn measured(v: &Verdict) -> (&Difference, bool) {
    match v {
        Verdict::Measured {
            difference,
            shm_seen,
        } => (difference, *shm_seen),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_shm_disabled_config_cannot_tell() {
    let r = run(&[("default", &[])], vec![ok("default", 1024, "SHM", 1.0)]);
    assert!(matches!(
        decide(&r, "default", OPTIONS),
        Verdict::CannotTell {
            why: Unanswerable::NoShmOff
        }
    ));
}

#[test]
fn an_enospc_failure_in_the_baseline_is_shm_failing() {
    let mut r = run(
        &SHM_DECISION,
        vec![
            failed("default", "", "rank 0: host backend: error while creating shared memory segment /dev/shm/x (size 4198400): posix_fallocate failed: No space left on device (os error 28)"),
            ok("shm-off", 1024, "NET/Socket", 1.0),
        ],
    );
    for c in &mut r.cases {
        c.backend = "host".into();
    }
    match decide(&r, "default", OPTIONS) {
        Verdict::ShmFails { need, .. } => {
            let need = need.unwrap();
            assert_eq!(need.bytes, 2 * 4_198_400);
            assert_eq!((need.segment, need.ranks, need.nccl), (4_198_400, 2, None));
        }
        other => panic!("{other:?}"),
    }
}

/// A size-0 attach of a name NCCL never makes (one rank's SHM in cuMem host memory,
/// another's in /dev/shm) is not a full /dev/shm; an ordinary attach ENOENT of the
/// same words but a real name and size stays /dev/shm's.
#[test]
fn a_cumem_mismatch_in_the_baseline_is_not_dev_shm() {
    let with = |error: &'static str| {
        let r = run(
            &SHM_DECISION,
            vec![
                failed("default", "SHM:100%", error),
                ok("shm-off", 1024, "NET/Socket", 1.0),
            ],
        );
        decide(&r, "default", OPTIONS)
    };
    let v = with("rank 1: ncclAllReduce failed: ncclSystemError (2): unhandled system error; last error: Error while attaching to shared memory segment /dev/shm/nccl-\u{40c} (size 0), error: No such file or directory (2)");
    assert!(matches!(v, Verdict::CumemMismatch { .. }), "{v:?}");
    let v = with("rank 1: ncclAllReduce failed: ncclSystemError (2): unhandled system error; last error: Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 9637888), error: No such file or directory (2)");
    assert!(matches!(v, Verdict::ShmFails { .. }), "{v:?}");
}

/// With NCCL the verdict sizes /dev/shm as the doctor does.
#[test]
fn an_nccl_enospc_verdict_needs_what_the_doctor_says() {
    let mut r = run(
        &SHM_DECISION,
        vec![
            failed("default", "", "rank 0: ncclCommInitRank failed: unhandled system error; last error: Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)"),
            ok("shm-off", 1024, "NET/Socket", 1.0),
        ],
    );
    r.cases[0].nranks = 4;
    let doctor = crate::nccl::shm::node_need(
        crate::nccl::shm::DEFAULT_SHM_SEGMENT_BYTES,
        crate::nccl::shm::USUAL_SHM_CHANNELS,
        4,
    );
    match decide(&r, "default", OPTIONS) {
        Verdict::ShmFails { need, .. } => {
            assert_eq!(need.as_ref().map(|n| n.bytes), Some(doctor.total_bytes));
            assert_eq!(doctor.total_bytes, 9_637_888 * 2 * 4);
        }
        other => panic!("{other:?}"),
    }
    // The config's own channel limits count (the doctor reads the machine's).
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
    match decide(&r, "default", OPTIONS) {
        Verdict::NotOnDataPath {
            carried_by,
            difference,
        } => {
            assert_eq!(carried_by, ["P2P/CUMEM"]);
            assert_eq!(difference.pair.rows.len(), 2);
            assert_eq!(difference.change(), Change::Within);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_measured_cost_says_keep_shm_with_the_largest_and_smallest_sizes() {
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
    let (d, shm_seen) = measured(&v);
    assert!(shm_seen);
    assert_eq!(d.change(), Change::Slower);
    assert_eq!(d.pair.decision.count(Change::Slower), 2);
    let (large, small) = d.headline().unwrap();
    assert_eq!((large.bytes, small.bytes), (1 << 20, 1024));
    assert!((large.case.relative().unwrap() - 0.2).abs() < 0.01);
    assert!((small.case.relative().unwrap() - 2.0).abs() < 0.05);
    assert_eq!(d.instead, ["NET/Socket"]);
}

/// Logs that named no transport: the cost is still measured, but the verdict does
/// not claim SHM carried the traffic.
#[test]
fn a_cost_without_transports_does_not_claim_shm_carried_traffic() {
    let r = run(
        &SHM_DECISION,
        vec![ok("default", 1024, "", 1.0), ok("shm-off", 1024, "", 3.0)],
    );
    let v = decide(&r, "default", OPTIONS);
    let (d, shm_seen) = measured(&v);
    assert!(!shm_seen);
    assert_eq!(d.change(), Change::Slower);
}

/// One GPU has no peer: a one-rank sweep cannot answer, and one-rank cases of a
/// larger sweep do not sway the answer.
#[test]
fn one_rank_cases_do_not_decide() {
    let mut r = run(
        &SHM_DECISION,
        vec![ok("default", 1024, "", 1.0), ok("shm-off", 1024, "", 3.0)],
    );
    for c in &mut r.cases {
        c.nranks = 1;
    }
    match decide(&r, "default", OPTIONS) {
        Verdict::CannotTell { why } => assert_eq!(
            why,
            Unanswerable::OneRank {
                baseline: "default".into()
            }
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
    let v = decide(&r, "default", OPTIONS);
    let (d, _) = measured(&v);
    assert_eq!((d.pair.rows.len(), d.change()), (1, Change::Within));
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
    let (d, _) = measured(&v);
    assert_eq!(d.change(), Change::NotSettled);
    assert!(
        d.pair.decision.rounds_to_settle.is_some_and(|r| r > 6),
        "{d:?}"
    );
}

/// A case of one round a side is a point: judged against the threshold with no
/// error rate, as the decision says.
#[test]
fn one_round_is_judged_on_its_change_alone() {
    let once = |config, scale| Case {
        rounds: 1,
        ..ok(config, 1024, "SHM", scale)
    };
    let r = run(
        &SHM_DECISION,
        vec![once("default", 1.0), once("shm-off", 2.0)],
    );
    let v = decide(&r, "default", OPTIONS);
    let (d, _) = measured(&v);
    assert_eq!(d.change(), Change::Slower);
    assert_eq!((d.pair.decision.members, d.pair.decision.points()), (0, 1));
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

/// A flagged case stays in the family: a 3x cost there is a cost, and a family
/// with a flagged case is never "no measurable cost".
#[test]
fn flagged_cases_stay_in_the_family() {
    let noisy = |config, bytes, scale, quality| Case {
        quality,
        ..ok(config, bytes, "NET/Socket", scale)
    };
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            ok("default", 1 << 20, "SHM", 1.0),
            noisy("shm-off", 1024, 3.0, "noisy"),
            ok("shm-off", 1 << 20, "NET/Socket", 1.0),
        ],
    );
    let v = decide(&r, "default", OPTIONS);
    let (d, _) = measured(&v);
    assert_eq!(d.change(), Change::Slower);
    assert_eq!(d.pair.decision.flagged(), 1);
    // The same times unflagged are no cost at all; flagged, not within.
    let r = run(
        &SHM_DECISION,
        vec![
            ok("default", 1024, "SHM", 1.0),
            noisy("shm-off", 1024, 1.0, "outlier"),
        ],
    );
    let v = decide(&r, "default", OPTIONS);
    let (d, _) = measured(&v);
    assert_eq!(d.change(), Change::NotSettled);
}
