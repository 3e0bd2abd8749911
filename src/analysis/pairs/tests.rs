//! The pairs' tables and verdicts on constructed runs; the runs are shared with the
//! section's tests (`report::sections::pairs`).

use super::*;
use crate::export::reader::{ConfigHead, ManifestHead};
use crate::model::{ClusterInfo, RankInfo};

/// Four GPUs whose pair 1-2 is 50 % slower, the others within noise.
pub(crate) const ONE_SLOW_LINK: [((usize, usize), f64); 6] = [
    ((0, 1), 100.0),
    ((0, 2), 103.0),
    ((0, 3), 98.0),
    ((1, 2), 150.0),
    ((1, 3), 101.0),
    ((2, 3), 99.0),
];

/// Four GPUs whose GPU 3 is slow in every one of its pairs.
pub(crate) const ONE_SLOW_GPU: [((usize, usize), f64); 6] = [
    ((0, 1), 100.0),
    ((0, 2), 102.0),
    ((0, 3), 160.0),
    ((1, 2), 99.0),
    ((1, 3), 150.0),
    ((2, 3), 170.0),
];

/// A run of pairs at 1 KiB and 1 MiB, with these median times at 1 MiB, each
/// known to the manifest by its devices.
pub(crate) fn run(times: &[((usize, usize), f64)]) -> RunData {
    let cases = times
        .iter()
        .flat_map(|&((a, b), t)| {
            [1024u64, 1 << 20].map(|bytes| {
                let p50 = if bytes == 1 << 20 { t } else { 5.0 };
                CaseRow {
                    config: format!("default.pair{a}-{b}"),
                    backend: "host".into(),
                    nranks: 2,
                    bytes,
                    status: "ok".into(),
                    time_us: Some(p50),
                    p50_us: Some(p50),
                    median_ci_low_us: Some(p50 * 0.99),
                    median_ci_high_us: Some(p50 * 1.01),
                    busbw_gbps: Some(bytes as f64 / p50 / 1e3),
                    ..CaseRow::default()
                }
            })
        })
        .collect();
    let configs = times
        .iter()
        .map(|&((a, b), _)| ConfigHead {
            name: format!("default.pair{a}-{b}"),
            devices: Some(vec![a, b]),
            ..ConfigHead::default()
        })
        .collect();
    RunData {
        dir: "run".into(),
        manifest: ManifestHead {
            configs,
            ..ManifestHead::default()
        },
        cases,
    }
}

/// 3 nodes (hosts a, b and c), 2 ranks each, paired by `run --pairs`; node c's
/// pairs are twice as slow.
pub(crate) fn node_run() -> RunData {
    let hosts = ["a", "b", "c"];
    let mut r = run(&[((0, 1), 100.0), ((0, 2), 200.0), ((1, 2), 210.0)]);
    for config in &mut r.manifest.configs {
        let d = config.devices.take().unwrap();
        config.ranks = Some(
            d.iter()
                .flat_map(|&n| [2 * n as u32, 2 * n as u32 + 1])
                .collect(),
        );
    }
    for c in &mut r.cases {
        c.nranks = 4;
    }
    r.manifest.cluster = Some(ClusterInfo {
        launcher: "slurm".into(),
        rendezvous: "a:29500".into(),
        world_size: 6,
        hosts: hosts.map(String::from).to_vec(),
        ranks: (0..6)
            .map(|rank| RankInfo {
                rank,
                host: hosts[rank as usize / 2].into(),
                local_rank: rank % 2,
                device: (rank % 2) as usize,
                pid: 1000 + rank,
                nccl_version: None,
            })
            .collect(),
    });
    r
}

#[test]
fn the_slow_pair_is_named_and_noise_is_not() {
    let t = tables(&run(&ONE_SLOW_LINK), 0.05);
    assert_eq!(t.len(), 1);
    let t = &t[0];
    assert_eq!(
        (t.config.as_str(), t.bytes, t.size(), t.unit),
        ("default", 1 << 20, 4, "GPU")
    );
    let slow: Vec<(usize, usize)> = t.slow().map(|c| (c.a, c.b)).collect();
    assert_eq!(slow, [(1, 2)]);
    let by = t.cell(2, 1).unwrap().slow_by.unwrap();
    assert!((by - 0.5).abs() < 0.01, "{by}");
    // One slow link: neither of its GPUs is slow in all its pairs.
    assert_eq!(t.slow_members().count(), 0);
}

#[test]
fn a_gpu_whose_every_pair_is_slow_is_named_itself() {
    let t = &tables(&run(&ONE_SLOW_GPU), 0.05)[0];
    let slow: Vec<usize> = t.slow_members().map(|m| m.index).collect();
    assert_eq!(slow, [3]);
    let m = &t.members[3];
    assert_eq!((m.pairs_ok, m.pairs), (3, 3));
    assert!((m.versus_others.unwrap() - 0.6).abs() < 0.01, "{m:?}");
    // One of its pairs back at the others' level: a link, not the GPU.
    let r = run(&[
        ((0, 1), 100.0),
        ((0, 2), 102.0),
        ((0, 3), 160.0),
        ((1, 2), 99.0),
        ((1, 3), 101.0),
        ((2, 3), 170.0),
    ]);
    assert_eq!(tables(&r, 0.05)[0].slow_members().count(), 0);
}

#[test]
fn node_pairs_are_known_by_their_ranks_and_named_by_host() {
    let t = &tables(&node_run(), 0.05)[0];
    assert_eq!((t.unit, t.nranks), ("node", 4));
    assert_eq!(t.names, ["a", "b", "c"]);
    let slow: Vec<usize> = t.slow_members().map(|m| m.index).collect();
    assert_eq!(slow, [2]);
    let slow: Vec<(usize, usize)> = t.slow().map(|c| (c.a, c.b)).collect();
    assert!(slow.contains(&(1, 2)), "{slow:?}");
}

#[test]
fn no_pairs_no_tables_and_two_pairs_judge_nothing() {
    let mut plain = run(&[((0, 1), 100.0)]);
    for c in &mut plain.cases {
        c.config = "default".into();
    }
    plain.manifest.configs = vec![ConfigHead {
        name: "default".into(),
        ..ConfigHead::default()
    }];
    assert!(tables(&plain, 0.05).is_empty());
    // A name like a pair's is not a pair: the manifest says what it is.
    let mut named = run(&[((0, 1), 100.0)]);
    named.manifest.configs[0].devices = None;
    assert!(tables(&named, 0.05).is_empty());
    let two = run(&[((0, 1), 100.0), ((0, 2), 300.0)]);
    let t = &tables(&two, 0.05)[0];
    assert_eq!(t.slow().count(), 0);
    assert_eq!(t.slow_members().count(), 0);
}
