//! One test per real log in `../shared/fixtures/nccl-logs/`, with its findings, versions,
//! networks, hosts and rank-pair transports read off the file by hand (checked by
//! `check_fixture`), and a test that no file in the folder goes without one. These tests fail
//! under `CI=true` when the folder is missing.

use super::*;

#[test]
fn fixture_1_direct_shm_old_noprefix() {
    let Some(e) = check_fixture(
        "nccl-log-1-direct-shm-old-noprefix.txt",
        Expected {
            findings: &[(FindingKind::SocketInterfaceVirtual, Severity::Info)],
            versions: NONE,
            networks: &["Socket"],
            interfaces: &[
                ("Bootstrap", &["lo"]),
                ("NET/IB", NONE),
                ("NET/Socket", &["lo"]),
            ],
            hosts: &[("", &[], &[1], &[0])],
            pairs: &[(1, 0, &[("SHM", 2)])],
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    assert_eq!(e.nranks, [2]);
    let f = finding(&e, FindingKind::SocketInterfaceVirtual);
    assert_eq!(f.occurrences, 4);
    assert_eq!(
        f.evidence,
        [
            "line 3: Bootstrap : Using lo:127.0.0.1<0>",
            "line 6: NET/Socket : Using [0]lo:127.0.0.1<0>"
        ]
    );
    assert!(
        f.cause.contains("socket interface includes lo"),
        "{}",
        f.cause
    );
}

#[test]
fn fixture_2_shm_direct_2_25_rtx5090() {
    let Some(e) = check_fixture(
        "nccl-log-2-shm-direct-2.25-rtx5090.txt",
        Expected {
            findings: &[(FindingKind::CudaFailure, Severity::Error)],
            versions: &["2.25.1+cuda12.8"],
            networks: &["Socket"],
            interfaces: &[
                ("Bootstrap", &["enp227s0f0"]),
                ("NET/IB", NONE),
                ("NET/Socket", &["enp227s0f0", "enxfe1dc2e063ea"]),
            ],
            hosts: &[("GENOA-06", &[4766], &[0, 1], &[0, 1])],
            pairs: &[(0, 1, &[("SHM", 2)]), (1, 0, &[("SHM", 2)])],
            nvls: NvlsUse::NotAvailable,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::CudaFailure);
    assert_eq!(f.occurrences, 2);
    assert_eq!(
        f.evidence,
        [
            "line 69: Cuda failure 1 'invalid argument'",
            "line 74: GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"
        ]
    );
    assert!(
        f.cause
            .contains("Here: CUDA_ERROR_INVALID_VALUE (1, `invalid argument`)"),
        "{}",
        f.cause
    );
}

#[test]
fn fixture_3_p2p_cumem_2_21_5() {
    check_fixture(
        "nccl-log-3-p2p-cumem-2.21.5.txt",
        Expected {
            findings: &[(FindingKind::ShmNotOnDataPath, Severity::Info)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[
                ("kolyoz1", &[27223, 27224, 27225], &[1, 2, 3], &[1, 2, 3]),
                ("kolyoz2", &[25148, 25169, 25172], &[5, 6, 7], &[1, 2, 3]),
            ],
            pairs: &[
                (1, 0, &[("P2P/CUMEM", 1)]),
                (2, 0, &[("P2P/CUMEM", 1)]),
                (2, 1, &[("P2P/CUMEM", 2)]),
                (3, 1, &[("P2P/CUMEM", 1)]),
                (3, 2, &[("P2P/CUMEM", 2)]),
                (5, 4, &[("P2P/CUMEM", 3)]),
                (6, 4, &[("P2P/CUMEM", 1)]),
                (6, 5, &[("P2P/CUMEM", 2)]),
                (7, 5, &[("P2P/CUMEM", 2)]),
                (7, 6, &[("P2P/CUMEM", 2)]),
            ],
            nvls: NvlsUse::Unknown,
        },
    );
}

#[test]
fn fixture_3b_p2p_cumem_ib_gdrdma_h20() {
    check_fixture(
        "nccl-log-3b-p2p-cumem-ib-gdrdma-h20.txt",
        Expected {
            findings: &[(FindingKind::ShmNotOnDataPath, Severity::Info)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[
                ("H20-GPU-05", &[1789225], &[1], &[1]),
                ("H20-GPU-06", &[4015539, 4015540], &[2, 3], &[0, 1]),
            ],
            pairs: &[
                (0, 2, &[("NET/IB", 1)]),
                (1, 0, &[("P2P/CUMEM", 4)]),
                (1, 3, &[("NET/IB", 4)]),
                (3, 1, &[("NET/IB", 4)]),
                (3, 2, &[("P2P/CUMEM", 1)]),
            ],
            nvls: NvlsUse::Unknown,
        },
    );
}

#[test]
fn fixture_4_multinode_efa_gdrdma_p2p_ipc_2_8_3() {
    const EFA: &[(&str, usize)] = &[("NET/AWS Libfabric", 2)];
    const IPC: &[(&str, usize)] = &[("P2P/IPC", 2)];
    check_fixture(
        "nccl-log-4-multinode-efa-gdrdma-p2p-ipc-2.8.3.txt",
        Expected {
            findings: &[(FindingKind::ShmNotOnDataPath, Severity::Info)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[
                (
                    "nccl-tests-efa-worker-0",
                    &[26, 27, 28, 29, 30, 31, 33, 35],
                    &[0, 1, 2, 3, 4, 5, 6, 7],
                    &[0, 1, 2, 3, 4, 5, 6, 7],
                ),
                (
                    "nccl-tests-efa-worker-1",
                    &[25, 26, 27, 28, 29, 30, 31, 32],
                    &[8, 9, 10, 11, 12, 13, 14, 15],
                    &[0, 1, 2, 3, 4, 5, 6, 7],
                ),
            ],
            // 16 intra-node pairs over P2P/IPC and 8 inter-node ones over EFA, two channels
            // each; the 31 send/receive lines of the NET pairs are 16 connections.
            pairs: &[
                (0, 3, IPC),
                (0, 5, IPC),
                (1, 8, EFA),
                (2, 7, IPC),
                (3, 10, EFA),
                (4, 7, IPC),
                (5, 12, EFA),
                (7, 14, EFA),
                (8, 11, IPC),
                (8, 13, IPC),
                (9, 0, EFA),
                (10, 15, IPC),
                (11, 2, EFA),
                (12, 15, IPC),
                (13, 4, EFA),
                (15, 6, EFA),
            ],
            nvls: NvlsUse::Unknown,
        },
    );
}

#[test]
fn fixture_4b_multinode_ib_gdrdma_2_10_3() {
    check_fixture(
        "nccl-log-4b-multinode-ib-gdrdma-2.10.3.txt",
        Expected {
            findings: &[(FindingKind::ShmNotOnDataPath, Severity::Info)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[
                ("nodea", &[26799], &[4], &[3, 4]),
                (
                    "nodeb",
                    &[65671],
                    &[8, 9, 11, 12, 13, 14],
                    &[0, 1, 3, 4, 5, 6],
                ),
            ],
            pairs: &[
                (4, 3, &[("P2P/direct", 2)]),
                (4, 5, &[("P2P/direct", 2)]),
                (5, 12, &[("NET/IB", 1)]),
                (8, 15, &[("P2P/direct", 2)]),
                (9, 8, &[("P2P/direct", 1)]),
                (11, 10, &[("P2P/direct", 2)]),
                (13, 4, &[("NET/IB", 1)]),
                (14, 13, &[("P2P/direct", 1)]),
            ],
            nvls: NvlsUse::Unknown,
        },
    );
}

#[test]
fn fixture_5a_shm_enospc_errno28_p2p_ipc() {
    let Some(e) = check_fixture(
        "nccl-log-5a-shm-enospc-errno28-p2p-ipc.txt",
        Expected {
            findings: &[
                (FindingKind::ShmNoSpace, Severity::Error),
                (FindingKind::ShmNotOnDataPath, Severity::Info),
            ],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[("ucwlai-k8snode-12-123", &[15015, 15016], &[0, 1], &[0, 1])],
            pairs: &[(0, 1, &[("P2P/IPC", 2)]), (1, 0, &[("P2P/IPC", 2)])],
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(f.occurrences, 2);
    assert_eq!(
        f.evidence,
        [
            "line 15: Error: failed to extend /dev/shm/nccl-YrFC5V to 33030532 bytes, error: No space left on device (28)",
            "line 17: Error while creating shared memory segment /dev/shm/nccl-YrFC5V (size 33030528), error: No space left on device (28)"
        ]
    );
    // The segment size of the `(size N)` line; 2 channels, no SHM peer seen (1 assumed),
    // 2 GPUs on the node: 33030528 x 2 x 1 x 2 = 132122112 B.
    assert!(
        f.cause.contains(
            "Needed: about 126.0 MiB = 33030528 B x 2 channel(s) x 1 SHM peer(s) per rank x 2 local rank(s)"
        ),
        "{}",
        f.cause
    );
    assert!(f.cause.contains("as in a ring"));
    assert!(f.cause.contains("on ucwlai-k8snode-12-123"));
    assert!(f
        .cause
        .contains("No connection in this log used the SHM transport"));
    assert!(f.fix.contains("--shm-size=1g"));
    assert_eq!(
        finding(&e, FindingKind::ShmNotOnDataPath).evidence,
        ["4 connection line(s): P2P/IPC:100%"]
    );
}

#[test]
fn fixture_5b_shm_failed_to_extend_multinode() {
    let Some(e) = check_fixture(
        "nccl-log-5b-shm-failed-to-extend-multinode.txt",
        Expected {
            findings: &[(FindingKind::ShmNoSpace, Severity::Error)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[("ubuntu", &[9621], &[], &[3, 4, 6])],
            pairs: &[],
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(f.occurrences, 5);
    assert_eq!(
        f.evidence,
        [
            "line 3: Error while creating shared memory segment /dev/shm/nccl-KWfVyt (size 5967872)",
            "line 11: Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes",
            "line 13: Error while creating shared memory segment /dev/shm/nccl-fjwOOB (size 5967872)"
        ]
    );
    assert!(f.cause.contains("One segment here is 5967872 B (5.7 MiB)."));
    assert!(f
        .cause
        .contains("this log does not show the channel count."));
}

#[test]
fn fixture_5c_posix_fallocate_ring_2_5() {
    let Some(e) = check_fixture(
        "nccl-log-5c-posix-fallocate-ring-2.5.txt",
        Expected {
            findings: &[(FindingKind::ShmNoSpace, Severity::Error)],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[(
                "gpu2-ru7",
                &[2142, 2143, 2144, 2145],
                &[0, 1, 2, 3],
                &[0, 1, 2, 3],
            )],
            pairs: &[
                (0, 1, &[("SHM", 1)]),
                (1, 2, &[("SHM", 1)]),
                (2, 3, &[("SHM", 1)]),
                (3, 0, &[("SHM", 1)]),
                (3, 2, &[("SHM", 1)]),
            ],
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(
        f.evidence,
        ["line 9: Call to posix_fallocate failed : No space left on device"]
    );
    assert!(f.cause.contains("does not give the segment size"));
}

#[test]
fn fixture_7_nvls_2_24_3_noprefix() {
    let Some(e) = check_fixture(
        "nccl-log-7-nvls-2.24.3-noprefix.txt",
        Expected {
            findings: &[],
            versions: &["2.24.3+cuda12.2"],
            networks: &["IBext_v8"],
            interfaces: &[
                ("Bootstrap", &["eth0"]),
                (
                    "NET/IB",
                    &[
                        "ibp0:1", "ibp1:1", "ibp2:1", "ibp3:1", "ibp4:1", "ibp5:1", "ibp6:1",
                        "ibp7:1",
                    ],
                ),
            ],
            hosts: &[("", &[], &[0], &[0])],
            pairs: &[],
            nvls: NvlsUse::Available,
        },
    ) else {
        return;
    };
    assert_eq!(
        e.env,
        [
            ("NCCL_SOCKET_IFNAME".to_string(), "eth0".to_string()),
            ("NCCL_IB_PCI_RELAXED_ORDERING".to_string(), "1".to_string())
        ]
    );
    assert_eq!(e.nranks, [8]);
}

#[test]
fn fixture_7b_nvls_not_available_multinode() {
    check_fixture(
        "nccl-log-7b-nvls-not-available-multinode.txt",
        Expected {
            findings: &[],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[(
                "user",
                &[16899, 16901, 16902, 16903, 16905, 16906],
                &[],
                &[0, 2, 3, 4, 6, 7],
            )],
            pairs: &[],
            nvls: NvlsUse::NotAvailable,
        },
    );
}

#[test]
fn fixture_7c_nvls_heads_multinode_rank_prefix() {
    check_fixture(
        "nccl-log-7c-nvls-heads-multinode-rank-prefix.txt",
        Expected {
            findings: &[],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[("h100clust-worker-1", &[227602], &[], &[0])],
            pairs: &[],
            nvls: NvlsUse::Available,
        },
    );
}

#[test]
fn fixture_8_multinode_socket_connect_abort() {
    let Some(e) = check_fixture(
        "nccl-log-8-multinode-socket-connect-abort.txt",
        Expected {
            findings: &[
                (FindingKind::SocketConnect, Severity::Error),
                (FindingKind::SocketError, Severity::Error),
            ],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[("ubuntu", &[39964], &[5], &[0, 5])],
            pairs: &[(5, 4, &[("SHM", 2)])],
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    let connect = finding(&e, FindingKind::SocketConnect);
    assert_eq!(
        connect.evidence,
        ["line 3: socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort"]
    );
    assert!(connect.cause.contains("(10.0.0.2<45763>)"));
    let socket = finding(&e, FindingKind::SocketError);
    assert_eq!(
        socket.evidence,
        [
            "line 15: socketProgress: Connection closed by remote peer node1<57557>",
            "line 18: Socket recv failed while polling for opId=0x7f6f18cb7f40"
        ]
    );
    assert!(socket.cause.contains("this rank is a victim"));
}

#[test]
fn fixture_8b_multinode_net_socket_rank_prefix() {
    check_fixture(
        "nccl-log-8b-multinode-net-socket-rank-prefix.txt",
        Expected {
            findings: &[],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[
                ("node0", &[13571, 13572], &[0, 2], &[0, 1]),
                ("node2", &[22555, 22556], &[1], &[0, 1]),
            ],
            pairs: &[
                (0, 1, &[("NET/Socket", 2)]),
                (1, 0, &[("NET/Socket", 2)]),
                (2, 0, &[("SHM", 2)]),
                (2, 1, &[("NET/Socket", 2)]),
            ],
            nvls: NvlsUse::NotAvailable,
        },
    );
}

#[test]
fn fixture_8d_p2p_ipc_read_net_socket_finalize_accept() {
    let Some(e) = check_fixture(
        "nccl-log-8d-p2p-ipc-read-net-socket-finalize-accept.txt",
        Expected {
            findings: &[
                (FindingKind::SocketError, Severity::Error),
                (FindingKind::ShmNotOnDataPath, Severity::Info),
            ],
            versions: NONE,
            networks: NONE,
            interfaces: &[],
            hosts: &[(
                "user",
                &[16899, 16905, 695831, 695834, 695835, 695838],
                &[0, 6, 8, 11, 12, 15],
                &[0, 3, 4, 6, 7],
            )],
            pairs: &[
                (6, 7, &[("P2P/IPC", 2)]),
                (8, 15, &[("P2P/IPC", 1)]),
                (9, 0, &[("NET/Socket", 1)]),
                (11, 12, &[("P2P/IPC", 2)]),
                (12, 13, &[("P2P/IPC", 2)]),
                (15, 14, &[("P2P/IPC", 2)]),
            ],
            nvls: NvlsUse::NotAvailable,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::SocketError);
    assert_eq!(
        f.evidence,
        ["line 17: socketFinalizeAccept: wrong type 4 != 3"]
    );
    assert!(f.cause.contains("something else answered"));
}

/// Every file in the folder has its test above: a new fixture must get one.
#[test]
fn every_fixture_file_has_an_explain_test() {
    let Some(dir) = fixture_dir() else {
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let tested = [
        "nccl-log-1-direct-shm-old-noprefix.txt",
        "nccl-log-2-shm-direct-2.25-rtx5090.txt",
        "nccl-log-3-p2p-cumem-2.21.5.txt",
        "nccl-log-3b-p2p-cumem-ib-gdrdma-h20.txt",
        "nccl-log-4-multinode-efa-gdrdma-p2p-ipc-2.8.3.txt",
        "nccl-log-4b-multinode-ib-gdrdma-2.10.3.txt",
        "nccl-log-5a-shm-enospc-errno28-p2p-ipc.txt",
        "nccl-log-5b-shm-failed-to-extend-multinode.txt",
        "nccl-log-5c-posix-fallocate-ring-2.5.txt",
        "nccl-log-7-nvls-2.24.3-noprefix.txt",
        "nccl-log-7b-nvls-not-available-multinode.txt",
        "nccl-log-7c-nvls-heads-multinode-rank-prefix.txt",
        "nccl-log-8-multinode-socket-connect-abort.txt",
        "nccl-log-8b-multinode-net-socket-rank-prefix.txt",
        "nccl-log-8d-p2p-ipc-read-net-socket-finalize-accept.txt",
    ];
    assert_eq!(names, tested);
}
