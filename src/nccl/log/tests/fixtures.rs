//! One test per real log in `../shared/fixtures/nccl-logs/`. Every expected value was read
//! off the file by hand: connection lines counted per transport, the line numbers of the
//! WARN lines, the tagged lines (metadata `#` lines, blank lines and non-NCCL lines left
//! out). These tests fail under `CI=true` when the folder is missing.

use super::*;

const NONE: &[&str] = &[];

#[test]
fn fixture_1_direct_shm_old_noprefix() {
    let Some(log) = check_fixture(
        "nccl-log-1-direct-shm-old-noprefix.txt",
        Expected {
            cell: "SHM:100%",
            connections: 2,
            versions: NONE,
            networks: &["Socket"],
            failures: &[],
            warnings: 2,
            nvls: NvlsUse::Unknown,
            nccl_lines: 22,
        },
    ) else {
        return;
    };
    let c = &log.connections[0];
    assert_eq!(
        (
            c.from_rank,
            c.to_rank,
            c.from_dev.as_str(),
            c.to_dev.as_str()
        ),
        (1, 0, "89000", "3d000")
    );
    assert_eq!((c.host.as_deref(), c.pid, c.line), (None, None, 9));
    assert_eq!(
        log.ranks,
        [RankInfo {
            host: String::new(),
            pid: 0,
            rank: 1,
            nranks: 2,
            cuda_dev: Some(0),
            nvml_dev: None,
            bus_id: Some("89000".into()),
            comm: Some("0x7fac840181a0".into()),
            comm_id: None,
            init_complete: true,
        }]
    );
    assert_eq!(
        log.warnings[0],
        "misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"
    );
}

#[test]
fn fixture_2_shm_direct_2_25_rtx5090() {
    let Some(log) = check_fixture(
        "nccl-log-2-shm-direct-2.25-rtx5090.txt",
        Expected {
            cell: "SHM:100%",
            connections: 4,
            versions: &["2.25.1+cuda12.8"],
            networks: &["Socket"],
            failures: &[
                (FailureKind::CudaFailure, 69),
                (FailureKind::CudaFailure, 74),
            ],
            warnings: 5,
            nvls: NvlsUse::NotAvailable,
            nccl_lines: 56,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.error_cell().as_deref(),
        Some("cuda-failure: Cuda failure 1 'invalid argument'")
    );
    let ranks: Vec<_> = log
        .ranks
        .iter()
        .map(|r| {
            (
                r.host.as_str(),
                r.pid,
                r.rank,
                r.nranks,
                r.cuda_dev,
                r.bus_id.as_deref(),
                r.init_complete,
            )
        })
        .collect();
    assert_eq!(
        ranks,
        [
            ("GENOA-06", 4766, 1, 2, Some(1), Some("61000"), true),
            ("GENOA-06", 4766, 0, 2, Some(0), Some("21000"), true),
        ]
    );
    assert!(log
        .ranks
        .iter()
        .all(|r| r.comm_id.as_deref() == Some("0x726fb0d348b9154b")));
    assert!(log
        .connections
        .iter()
        .all(|c| c.transport.raw == "SHM/direct/direct"));
}

#[test]
fn fixture_3_p2p_cumem_2_21_5() {
    let Some(log) = check_fixture(
        "nccl-log-3-p2p-cumem-2.21.5.txt",
        Expected {
            cell: "P2P/CUMEM:100%",
            connections: 17,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::Unknown,
            nccl_lines: 17,
        },
    ) else {
        return;
    };
    let c = &log.connections[0];
    assert_eq!(
        (c.host.as_deref(), c.pid, c.channel, c.conn_index),
        (Some("kolyoz2"), Some(25148), 3, Some(0))
    );
    assert_eq!(
        (
            c.from_rank,
            c.from_dev.as_str(),
            c.to_rank,
            c.to_dev.as_str()
        ),
        (7, "3", 5, "1")
    );
    assert_eq!(
        log.connections
            .iter()
            .filter(|c| c.host.as_deref() == Some("kolyoz1"))
            .count(),
        7
    );
}

#[test]
fn fixture_3b_p2p_cumem_ib_gdrdma_h20() {
    let Some(log) = check_fixture(
        "nccl-log-3b-p2p-cumem-ib-gdrdma-h20.txt",
        Expected {
            cell: "NET/IB:64%;P2P/CUMEM:36%",
            connections: 14,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::Unknown,
            nccl_lines: 14,
        },
    ) else {
        return;
    };
    let directions: Vec<_> = log.connections.iter().map(|c| c.direction).collect();
    let count = |d| directions.iter().filter(|&&x| x == d).count();
    assert_eq!(
        (
            count(Some(Direction::Receive)),
            count(Some(Direction::Send)),
            count(None)
        ),
        (5, 4, 5)
    );
    assert_eq!(log.connections[0].transport.raw, "NET/IB/3/GDRDMA");
}

#[test]
fn fixture_4_multinode_efa_gdrdma_p2p_ipc_2_8_3() {
    let Some(log) = check_fixture(
        "nccl-log-4-multinode-efa-gdrdma-p2p-ipc-2.8.3.txt",
        Expected {
            cell: "NET/AWS Libfabric:50%;P2P/IPC:50%",
            connections: 47,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::Unknown,
            nccl_lines: 58,
        },
    ) else {
        return;
    };
    let sends = log
        .connections
        .iter()
        .filter(|c| c.direction == Some(Direction::Send))
        .count();
    let receives = log
        .connections
        .iter()
        .filter(|c| c.direction == Some(Direction::Receive))
        .count();
    assert_eq!((sends, receives), (16, 15));
    // The mpirun `[1,N]<stdout>:` tag is not part of the host.
    assert!(log.connections.iter().all(|c| matches!(
        c.host.as_deref(),
        Some("nccl-tests-efa-worker-0" | "nccl-tests-efa-worker-1")
    )));
    let c = &log.connections[0];
    assert_eq!(
        (
            c.pid,
            c.channel,
            c.conn_index,
            c.from_dev.as_str(),
            c.to_dev.as_str()
        ),
        (Some(28), 1, None, "201c0", "a01d0")
    );
    assert_eq!(c.transport.raw, "P2P/IPC/read");
}

#[test]
fn fixture_4b_multinode_ib_gdrdma_2_10_3() {
    let Some(log) = check_fixture(
        "nccl-log-4b-multinode-ib-gdrdma-2.10.3.txt",
        Expected {
            cell: "P2P/direct:83%;NET/IB:17%",
            connections: 12,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::Unknown,
            nccl_lines: 16,
        },
    ) else {
        return;
    };
    assert_eq!(log.connections[0].transport.raw, "P2P/direct pointer/read");
    assert_eq!(log.connections[1].direction, Some(Direction::Send));
}

#[test]
fn fixture_5a_shm_enospc_errno28_p2p_ipc() {
    let Some(log) = check_fixture(
        "nccl-log-5a-shm-enospc-errno28-p2p-ipc.txt",
        Expected {
            cell: "P2P/IPC:100%",
            connections: 4,
            versions: NONE,
            networks: NONE,
            failures: &[(FailureKind::ShmEnospc, 15), (FailureKind::ShmEnospc, 17)],
            warnings: 2,
            nvls: NvlsUse::Unknown,
            nccl_lines: 12,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.error_cell().as_deref(),
        Some("shm-enospc: Error: failed to extend /dev/shm/nccl-YrFC5V to 33030532 bytes, error: No space left on device (28)")
    );
    assert!(
        log.warnings[0].starts_with("[2025-06-06 09:52:01] ucwlai-k8snode-12-123:15016:15201 [1]")
    );
}

#[test]
fn fixture_5b_shm_failed_to_extend_multinode() {
    use FailureKind::ShmEnospc;
    let Some(log) = check_fixture(
        "nccl-log-5b-shm-failed-to-extend-multinode.txt",
        Expected {
            cell: "",
            connections: 0,
            versions: NONE,
            networks: NONE,
            failures: &[
                (ShmEnospc, 3),
                (ShmEnospc, 11),
                (ShmEnospc, 13),
                (ShmEnospc, 21),
                (ShmEnospc, 23),
            ],
            warnings: 5,
            nvls: NvlsUse::Unknown,
            nccl_lines: 17,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.error_cell().as_deref(),
        Some("shm-enospc: Error while creating shared memory segment /dev/shm/nccl-KWfVyt (size 5967872)")
    );
}

#[test]
fn fixture_5c_posix_fallocate_ring_2_5() {
    let Some(log) = check_fixture(
        "nccl-log-5c-posix-fallocate-ring-2.5.txt",
        Expected {
            cell: "SHM:100%",
            connections: 5,
            versions: NONE,
            networks: NONE,
            failures: &[(FailureKind::ShmEnospc, 9)],
            warnings: 1,
            nvls: NvlsUse::Unknown,
            nccl_lines: 7,
        },
    ) else {
        return;
    };
    assert!(log
        .connections
        .iter()
        .all(|c| c.channel == 0 && c.conn_index.is_none()));
    assert_eq!(log.connections[0].from_dev, "3d000");
    assert_eq!(
        log.error_cell().as_deref(),
        Some("shm-enospc: Call to posix_fallocate failed : No space left on device")
    );
}

#[test]
fn fixture_7_nvls_2_24_3_noprefix() {
    let Some(log) = check_fixture(
        "nccl-log-7-nvls-2.24.3-noprefix.txt",
        Expected {
            cell: "",
            connections: 0,
            versions: &["2.24.3+cuda12.2"],
            networks: &["IBext_v8"],
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::Available,
            // Untagged: the version, network, Init START and NVLS lines are recognised,
            // and the driver's CUDA version, the two plugins loaded (net, P2P) and the
            // plugin's path.
            nccl_lines: 8,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.ranks,
        [RankInfo {
            host: String::new(),
            pid: 0,
            rank: 0,
            nranks: 8,
            cuda_dev: Some(0),
            nvml_dev: Some(0),
            bus_id: Some("1a000".into()),
            comm: Some("0x596c4b4edb80".into()),
            comm_id: Some("0xd134602cf80e4ea2".into()),
            init_complete: false,
        }]
    );
}

#[test]
fn fixture_7b_nvls_not_available_multinode() {
    check_fixture(
        "nccl-log-7b-nvls-not-available-multinode.txt",
        Expected {
            cell: "",
            connections: 0,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::NotAvailable,
            nccl_lines: 16,
        },
    );
}

#[test]
fn fixture_7c_nvls_heads_multinode_rank_prefix() {
    let Some(log) = check_fixture(
        "nccl-log-7c-nvls-heads-multinode-rank-prefix.txt",
        Expected {
            cell: "",
            connections: 0,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            // `NVLS Head` is init's plan: nothing in this chunk shows NVLS set up.
            nvls: NvlsUse::Available,
            nccl_lines: 14,
        },
    ) else {
        return;
    };
    // `comm ... rank 0 nRanks 24 nNodes 3` is not an Init line.
    assert!(log.ranks.is_empty());
}

#[test]
fn fixture_8_multinode_socket_connect_abort() {
    let Some(log) = check_fixture(
        "nccl-log-8-multinode-socket-connect-abort.txt",
        Expected {
            cell: "SHM:100%",
            connections: 2,
            versions: NONE,
            networks: NONE,
            failures: &[
                (FailureKind::ConnectionRefused, 3),
                (FailureKind::SocketError, 15),
                (FailureKind::SocketError, 18),
            ],
            warnings: 4,
            nvls: NvlsUse::Unknown,
            nccl_lines: 17,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.error_cell().as_deref(),
        Some("connection-refused: socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort")
    );
    assert_eq!(
        (
            log.connections[0].channel,
            log.connections[0].from_dev.as_str()
        ),
        (20, "5")
    );
}

#[test]
fn fixture_8b_multinode_net_socket_rank_prefix() {
    let Some(log) = check_fixture(
        "nccl-log-8b-multinode-net-socket-rank-prefix.txt",
        Expected {
            cell: "NET/Socket:75%;SHM:25%",
            connections: 11,
            versions: NONE,
            networks: NONE,
            failures: &[],
            warnings: 0,
            nvls: NvlsUse::NotAvailable,
            nccl_lines: 16,
        },
    ) else {
        return;
    };
    let origins: Vec<_> = log
        .connections
        .iter()
        .map(|c| (c.host.as_deref(), c.pid))
        .collect();
    assert_eq!(origins[0], (Some("node0"), Some(13571)));
    assert_eq!(origins[6], (Some("node0"), Some(13572)));
    assert_eq!(origins.iter().filter(|o| o.0 == Some("node2")).count(), 6);
    let sends = log
        .connections
        .iter()
        .filter(|c| c.direction == Some(Direction::Send))
        .count();
    assert_eq!(sends, 4);
}

#[test]
fn fixture_8d_p2p_ipc_read_net_socket_finalize_accept() {
    let Some(log) = check_fixture(
        "nccl-log-8d-p2p-ipc-read-net-socket-finalize-accept.txt",
        Expected {
            cell: "P2P/IPC:90%;NET/Socket:10%",
            connections: 10,
            versions: NONE,
            networks: NONE,
            failures: &[(FailureKind::SocketError, 17)],
            warnings: 1,
            nvls: NvlsUse::NotAvailable,
            nccl_lines: 17,
        },
    ) else {
        return;
    };
    assert_eq!(
        log.error_cell().as_deref(),
        Some("socket-error: socketFinalizeAccept: wrong type 4 != 3")
    );
}

/// Every file in the folder has its test above (its name is quoted in this file,
/// which only the tests do): a new fixture must get one.
#[test]
fn every_fixture_file_has_a_test() {
    let Some(dir) = fixture_dir() else {
        return;
    };
    let source = include_str!("fixtures.rs");
    let untested: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !source.contains(&format!("\"{name}\"")))
        .collect();
    assert!(untested.is_empty(), "fixtures without a test: {untested:?}");
}
