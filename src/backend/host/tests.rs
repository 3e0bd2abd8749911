//! Tests of the host backend: rings on threads (each rank its own communicator,
//! as separate processes would be), SHM, TCP and mixed, exact for every size.

use super::*;
use crate::ops::collective::Collective;
use crate::ops::pattern::PERIOD;

fn options(dir: &std::path::Path, use_shm: bool, dtype: DataType, op: ReduceOp) -> HostOptions {
    HostOptions {
        shm_dir: dir.to_path_buf(),
        segment_prefix: "test".into(),
        use_shm,
        buffsize: 64 * 1024,
        max_bytes: (PERIOD * 3 + 5) * 8,
        dtype,
        op,
        init_timeout: Duration::from_secs(20),
        corrupt: false,
        hang_with_segment: false,
        slowdown: 0.0,
        stores: Stores::Measured,
        collective: Collective::AllReduce,
        root: 0,
        pin_cpus: false,
        cpu: None,
        bind: LOOPBACK,
    }
}

/// Runs an all-reduce on `nranks` threads (each its own communicator, as separate
/// processes would be) and returns every rank's check report.
fn run_ranks(
    nranks: u32,
    use_shm: bool,
    dtype: DataType,
    op: ReduceOp,
    count: usize,
) -> Vec<CheckReport> {
    run_ranks_storing(nranks, use_shm, dtype, op, count, Stores::Measured)
}

/// `run_ranks` with the way SHM slots are written set.
fn run_ranks_storing(
    nranks: u32,
    use_shm: bool,
    dtype: DataType,
    op: ReduceOp,
    count: usize,
    stores: Stores,
) -> Vec<CheckReport> {
    let dir = tempfile::tempdir().unwrap();
    let opts = || HostOptions {
        stores,
        ..options(dir.path(), use_shm, dtype, op)
    };
    let mut root = HostBackend::new(opts());
    let id = root.unique_id().unwrap();
    let mut threads = Vec::new();
    for rank in 1..nranks {
        let (id, opts) = (id.clone(), opts());
        threads.push(std::thread::spawn(move || {
            let mut comm = HostBackend::new(opts).init(&id, rank, nranks).unwrap();
            exercise(comm.as_mut(), dtype, op, rank, nranks, count)
        }));
    }
    let mut comm = root.init(&id, 0, nranks).unwrap();
    let mut reports = vec![exercise(comm.as_mut(), dtype, op, 0, nranks, count)];
    reports.extend(threads.into_iter().map(|t| t.join().unwrap()));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "segments left behind"
    );
    reports
}

fn exercise(
    comm: &mut dyn Communicator,
    dt: DataType,
    op: ReduceOp,
    rank: u32,
    n: u32,
    count: usize,
) -> CheckReport {
    let bytes = count * dt.size();
    let pattern = Pattern::new(dt, op, rank, n);
    comm.fill_input(&pattern, bytes).unwrap();
    comm.poison_output(bytes).unwrap();
    let mut d = [0u64; 3];
    comm.timed_batch(bytes, 1, &mut d).unwrap();
    assert!(d.iter().all(|&ns| ns > 0));
    comm.check_output(&pattern, bytes).unwrap()
}

#[test]
fn shm_ring_is_exact_for_odd_sizes_and_rank_counts() {
    for nranks in [1, 2, 3, 4] {
        for count in [1, 7, 2 * PERIOD + 3] {
            for r in run_ranks(nranks, true, DataType::Float, ReduceOp::Sum, count) {
                assert_eq!(r.wrong, 0, "n={nranks} count={count}: {:?}", r.first);
            }
        }
    }
}

/// Both ways of writing SHM slots are exact, where slices are streamed (2 KiB and
/// more, across 4 KiB reduce blocks) and where they are not, with a reduce into
/// the slot (3 and 4 ranks) and without (2).
#[test]
fn ordinary_and_streaming_stores_are_both_exact() {
    for stores in [Stores::Ordinary, Stores::Streaming] {
        for nranks in [2, 3, 4] {
            for (dtype, op) in [
                (DataType::Float, ReduceOp::Sum),
                (DataType::Int8, ReduceOp::Max),
            ] {
                for count in [1, 600, 3001, 2 * PERIOD + 3] {
                    for r in run_ranks_storing(nranks, true, dtype, op, count, stores) {
                        assert_eq!(
                            r.wrong, 0,
                            "{stores:?} n={nranks} {dtype:?} {op:?} count={count}: {:?}",
                            r.first
                        );
                    }
                }
            }
        }
    }
}

/// The choice between the two is made on times summed over ranks, so every rank
/// makes the same one, and the communicator says which it made.
#[test]
fn every_rank_makes_the_same_store_choice() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || options(dir.path(), true, DataType::Float, ReduceOp::Sum);
    let mut root = HostBackend::new(opts());
    let id = root.unique_id().unwrap();
    let threads: Vec<_> = (1..3)
        .map(|rank| {
            let (id, o) = (id.clone(), opts());
            std::thread::spawn(move || HostBackend::new(o).init(&id, rank, 3).unwrap().detail())
        })
        .collect();
    let mut details = vec![root.init(&id, 0, 3).unwrap().detail()];
    details.extend(threads.into_iter().map(|t| t.join().unwrap()));
    let way = |d: &str| {
        let end = d
            .find(" stores into SHM slots (1 MiB all-reduce")
            .unwrap_or_else(|| panic!("{d}"));
        d[..end].rsplit(' ').next().unwrap().to_string()
    };
    let ways: Vec<String> = details.iter().map(|d| way(d)).collect();
    assert!(
        ["ordinary", "streaming"].contains(&ways[0].as_str()),
        "{details:?}"
    );
    assert!(ways.iter().all(|w| w == &ways[0]), "{details:?}");
    // Forced, and a bad value refused.
    let mut forced = opts();
    forced
        .apply_env(|k| (k == STORES_ENV).then(|| "streaming".to_string()))
        .unwrap();
    assert_eq!(forced.stores, Stores::Streaming);
    let err = forced
        .apply_env(|k| (k == STORES_ENV).then(|| "fast".to_string()))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "NCCL_BENCH_HOST_STORES='fast' is not one of auto, ordinary, streaming"
    );
}

/// A rank told to stream and a rank left to measure still run the timing
/// collective together (neither waits for the other for ever), and the ring is
/// exact with the two writing their slots differently.
#[test]
fn ranks_set_up_differently_still_agree_to_time_the_stores() {
    let dir = tempfile::tempdir().unwrap();
    let count = 2 * PERIOD + 3;
    let opts = |stores| HostOptions {
        stores,
        ..options(dir.path(), true, DataType::Float, ReduceOp::Sum)
    };
    let mut root = HostBackend::new(opts(Stores::Streaming));
    let id = root.unique_id().unwrap();
    let peer = {
        let (id, o) = (id.clone(), opts(Stores::Measured));
        std::thread::spawn(move || {
            let mut comm = HostBackend::new(o).init(&id, 1, 2).unwrap();
            let detail = comm.detail();
            let r = exercise(comm.as_mut(), DataType::Float, ReduceOp::Sum, 1, 2, count);
            (detail, r)
        })
    };
    let mut comm = root.init(&id, 0, 2).unwrap();
    let detail = comm.detail();
    let mine = exercise(comm.as_mut(), DataType::Float, ReduceOp::Sum, 0, 2, count);
    let (peer_detail, theirs) = peer.join().unwrap();
    assert!(
        detail.ends_with("streaming stores into SHM slots (forced)"),
        "{detail}"
    );
    assert!(peer_detail.contains("(1 MiB all-reduce"), "{peer_detail}");
    assert_eq!((mine.wrong, theirs.wrong), (0, 0));
}

/// Ranks 0-1 on 127.0.0.1 and 2-3 on 127.0.0.2 (all of 127/8 is this machine's):
/// two "machines", SHM within each and TCP between them in one ring, with a
/// FIFO larger than a TCP slice.
#[test]
fn a_ring_across_two_addresses_mixes_shm_and_tcp_and_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let count = 3 * PERIOD + 5;
    let opts = |rank: u32| HostOptions {
        buffsize: 4 << 20,
        bind: if rank < 2 {
            LOOPBACK
        } else {
            "127.0.0.2".parse().unwrap()
        },
        ..options(dir.path(), true, DataType::Float, ReduceOp::Sum)
    };
    let mut root = HostBackend::new(opts(0));
    let id = root.unique_id().unwrap();
    let threads: Vec<_> = (1..4)
        .map(|rank| {
            let (id, o) = (id.clone(), opts(rank));
            std::thread::spawn(move || {
                let mut comm = HostBackend::new(o).init(&id, rank, 4).unwrap();
                let t = comm.transports();
                (
                    t,
                    exercise(
                        comm.as_mut(),
                        DataType::Float,
                        ReduceOp::Sum,
                        rank,
                        4,
                        count,
                    ),
                )
            })
        })
        .collect();
    let mut comm = root.init(&id, 0, 4).unwrap();
    let mut results = vec![(
        comm.transports(),
        exercise(comm.as_mut(), DataType::Float, ReduceOp::Sum, 0, 4, count),
    )];
    results.extend(threads.into_iter().map(|t| t.join().unwrap()));
    let transports: Vec<&str> = results.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(transports, ["SHM", "NET/Socket", "SHM", "NET/Socket"]);
    for (_, r) in &results {
        assert_eq!(r.wrong, 0, "{:?}", r.first);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn tcp_ring_is_exact() {
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg] {
        for r in run_ranks(3, false, DataType::Int32, op, PERIOD + 11) {
            assert_eq!(r.wrong, 0, "{op}: {:?}", r.first);
        }
    }
}

#[test]
fn tcp_with_a_huge_buffsize_does_not_deadlock() {
    // 32 MiB FIFOs would mean 4 MiB socket writes that no loopback buffer absorbs
    // while every rank is writing (seen: a timeout with NCCL_BUFFSIZE=33554432).
    let dir = tempfile::tempdir().unwrap();
    let count = 4 << 20;
    let opts = |_: ()| HostOptions {
        buffsize: 32 << 20,
        max_bytes: count * 4,
        ..options(dir.path(), false, DataType::Float, ReduceOp::Sum)
    };
    let mut root = HostBackend::new(opts(()));
    let id = root.unique_id().unwrap();
    let (id2, o2) = (id.clone(), opts(()));
    let peer = std::thread::spawn(move || {
        let mut c = HostBackend::new(o2).init(&id2, 1, 2).unwrap();
        exercise(c.as_mut(), DataType::Float, ReduceOp::Sum, 1, 2, count)
    });
    let mut c = root.init(&id, 0, 2).unwrap();
    assert_eq!(
        exercise(c.as_mut(), DataType::Float, ReduceOp::Sum, 0, 2, count).wrong,
        0
    );
    assert_eq!(peer.join().unwrap().wrong, 0);
}

#[test]
fn every_type_reduces_correctly_over_shm() {
    for dt in DataType::ALL {
        for r in run_ranks(2, true, dt, ReduceOp::Prod, 5000) {
            assert_eq!(r.wrong, 0, "{dt}: {:?}", r.first);
        }
    }
}

#[test]
fn environment_selects_the_transport() {
    let mut o = options(
        std::path::Path::new("/tmp"),
        true,
        DataType::Float,
        ReduceOp::Sum,
    );
    o.apply_env(|k| (k == "NCCL_SHM_DISABLE").then(|| "1".to_string()))
        .unwrap();
    assert!(!o.use_shm);
    o.apply_env(|k| (k == "NCCL_SHM_DISABLE").then(|| "0".to_string()))
        .unwrap();
    assert!(o.use_shm);
    o.apply_env(|k| (k == "NCCL_BUFFSIZE").then(|| "1048576".to_string()))
        .unwrap();
    assert_eq!(o.buffsize, 1 << 20);
    let err = o
        .apply_env(|k| (k == "NCCL_NET").then(|| "IB".to_string()))
        .unwrap_err();
    assert!(err.to_string().contains("network IB not found"), "{err}");
    assert!(o
        .apply_env(|k| (k == "NCCL_BUFFSIZE").then(|| "lots".to_string()))
        .is_err());
}

#[test]
fn a_full_shm_dir_fails_with_enospc_like_nccl() {
    // A segment larger than the whole disk cannot be reserved anywhere.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge");
    let err = Segment::create(&path, 1 << 50).err().unwrap().to_string();
    assert!(err.contains("posix_fallocate failed"), "{err}");
    assert!(!path.exists(), "a failed segment must not be left behind");
}

/// Runs `collective` (root `root`) on `nranks` threads over SHM or TCP with a
/// case of `bytes`, floats summed; returns every rank's check report.
fn run_collective(
    nranks: u32,
    use_shm: bool,
    collective: Collective,
    root: u32,
    bytes: usize,
    corrupt: bool,
) -> Vec<CheckReport> {
    let dir = tempfile::tempdir().unwrap();
    let (dt, op) = (DataType::Float, ReduceOp::Sum);
    let opts = || HostOptions {
        collective,
        root,
        corrupt,
        stores: Stores::Ordinary,
        ..options(dir.path(), use_shm, dt, op)
    };
    let mut first = HostBackend::new(opts());
    let id = first.unique_id().unwrap();
    let count = bytes / dt.size();
    let threads: Vec<_> = (1..nranks)
        .map(|rank| {
            let (id, opts) = (id.clone(), opts());
            std::thread::spawn(move || {
                let mut comm = HostBackend::new(opts).init(&id, rank, nranks).unwrap();
                exercise(comm.as_mut(), dt, op, rank, nranks, count)
            })
        })
        .collect();
    let mut comm = first.init(&id, 0, nranks).unwrap();
    let mut reports = vec![exercise(comm.as_mut(), dt, op, 0, nranks, count)];
    reports.extend(threads.into_iter().map(|t| t.join().unwrap()));
    reports
}

/// Every collective is exact on 1 to 4 ranks over SHM and TCP, from a case smaller
/// than one slice to one of many slices past the pattern's period, with the root
/// not at rank 0; and a flipped output element is caught on every rank whose
/// output the collective writes.
#[test]
fn every_collective_is_exact_over_shm_and_tcp() {
    for collective in Collective::ALL {
        for nranks in [1, 2, 3, 4] {
            for use_shm in [true, false] {
                for bytes in [4 * 16, 3 * PERIOD * 4 + 48] {
                    let root = 1 % nranks;
                    let reports = run_collective(nranks, use_shm, collective, root, bytes, false);
                    for (rank, r) in reports.iter().enumerate() {
                        assert_eq!(
                            r.wrong, 0,
                            "{collective} n={nranks} shm={use_shm} bytes={bytes} rank {rank}: {:?}",
                            r.first
                        );
                    }
                }
            }
        }
        let reports = run_collective(3, true, collective, 1, 4096, true);
        let counts = collective.counts(4096, 4, 3);
        for (rank, r) in reports.iter().enumerate() {
            let written = collective
                .layout(rank as u32, 3, 1, counts)
                .iter()
                .any(|(_, s)| *s != crate::ops::collective::Source::Untouched);
            assert_eq!(r.wrong > 0, written, "{collective} rank {rank}: {r:?}");
        }
    }
}
