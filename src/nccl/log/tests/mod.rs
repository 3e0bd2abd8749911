//! Tests of the NCCL log parser: small logs written here, one per format, then every real
//! log in `../shared/fixtures/nccl-logs/` with findings checked by hand.

use std::path::PathBuf;

use super::*;

fn labels(log: &NcclLog) -> Vec<&str> {
    log.connections
        .iter()
        .map(|c| c.transport.label.as_str())
        .collect()
}

pub(super) fn kinds(log: &NcclLog) -> Vec<(FailureKind, usize)> {
    log.failures.iter().map(|f| (f.kind, f.line)).collect()
}

#[test]
fn ring_lines_of_2_4_without_brackets_parse_and_ring_order_lines_do_not() {
    let log = parse(
        "node1:100:200 [0] NCCL INFO NCCL version 2.4.8+cuda10.1\n\
         node1:100:200 [0] NCCL INFO Ring 00 : 0 -> 1 via P2P/IPC\n\
         node1:100:200 [0] NCCL INFO Ring 01 : 1 -> 0 [receive] via NET/Socket/0\n\
         node1:100:200 [0] NCCL INFO Ring 00 : 3 -> 0 -> 1\n\
         node1:100:200 [0] NCCL INFO Channel 00/02 :    0   1\n",
    );
    assert_eq!(log.versions, ["2.4.8+cuda10.1"]);
    assert_eq!(labels(&log), ["P2P/IPC", "NET/Socket"]);
    let first = &log.connections[0];
    assert_eq!(
        (
            first.channel,
            first.conn_index,
            first.from_rank,
            first.to_rank
        ),
        (0, None, 0, 1)
    );
    assert_eq!((first.from_dev.as_str(), first.to_dev.as_str()), ("", ""));
    assert_eq!(first.direction, None);
    assert_eq!(first.host.as_deref(), Some("node1"));
    assert_eq!((first.pid, first.line), (Some(100), 2));
    assert_eq!(log.connections[1].direction, Some(Direction::Receive));
    assert_eq!(log.connections[1].transport.kind, TransportKind::Net);
    assert_eq!(log.transports_cell(), "NET/Socket:50%;P2P/IPC:50%");
    assert_eq!(log.nccl_lines, 5);
}

#[test]
fn bus_id_brackets_up_to_2_18_parse_with_every_old_spelling() {
    let log = parse(
        "gpu1:2144:2556 [2] NCCL INFO Ring 05 : 2[3d000] -> 3[3e000] via direct shared memory\n\
         gpu1:2144:2556 [2] NCCL INFO Channel 00 : 2[89000] -> 3[b2000] via direct shared memory\n\
         gpu1:2144:2556 [2] NCCL INFO Channel 01 : 2[89000] -> 1[1c000] via P2P/direct pointer\n\
         gpu1:2144:2556 [2] NCCL INFO Channel 02/0 : 2[89000] -> 5[1c000] [send] via NET/IB/0/GDRDMA\n\
         gpu1:2144:2556 [2] NCCL INFO comm 0x7f00 rank 2 nranks 4 cudaDev 2 busId 89000 - Init COMPLETE\n",
    );
    assert_eq!(labels(&log), ["SHM", "SHM", "P2P/direct", "NET/IB"]);
    assert_eq!(log.connections[1].from_dev, "89000");
    assert_eq!(log.connections[1].to_dev, "b2000");
    assert_eq!(log.connections[3].conn_index, Some(0));
    assert_eq!(log.connections[3].direction, Some(Direction::Send));
    assert_eq!(log.connections[3].transport.raw, "NET/IB/0/GDRDMA");
    assert_eq!(log.transports_cell(), "SHM:50%;NET/IB:25%;P2P/direct:25%");
    assert_eq!(
        log.ranks,
        [RankInfo {
            host: "gpu1".into(),
            pid: 2144,
            rank: 2,
            nranks: 4,
            cuda_dev: Some(2),
            nvml_dev: None,
            bus_id: Some("89000".into()),
            comm: Some("0x7f00".into()),
            comm_id: None,
            init_complete: true,
        }]
    );
}

#[test]
fn current_spellings_normalise_to_their_labels() {
    let line = |via: &str| format!("h:1:2 [0] NCCL INFO Channel 00/1 : 0[0] -> 7[7] via {via}\n");
    let cases = [
        ("P2P/CUMEM", "P2P/CUMEM"),
        ("P2P/CUMEM/read/CE", "P2P/CUMEM"),
        ("P2P/IPC/read", "P2P/IPC"),
        ("P2P/IPC/CE", "P2P/IPC"),
        ("P2P/direct pointer/read", "P2P/direct"),
        ("P2P/MNNVL", "P2P/MNNVL"),
        ("P2P/indirect/3[3]/read", "P2P/indirect"),
        ("SHM/direct/direct", "SHM"),
        ("SHM/CE/direct", "SHM"),
        ("SHM/direct", "SHM"),
        ("NET/Socket/0", "NET/Socket"),
        ("NET/IB/9/GDRDMA/Shared", "NET/IB"),
        ("NET/IB/0(1)/GDRDMA(PCI)", "NET/IB"),
        ("NET/AWS Libfabric/1/GDRDMA", "NET/AWS Libfabric"),
        ("NVLS", "NVLS"),
        ("Carrier pigeon", "Carrier pigeon"),
    ];
    for (via, label) in cases {
        let log = parse(&line(via));
        assert_eq!(labels(&log), [label], "{via}");
        assert_eq!(log.connections[0].transport.raw, via);
    }
    assert_eq!(
        parse(&line("SHM/CE/direct")).connections[0].transport.kind,
        TransportKind::Shm
    );
    assert_eq!(
        parse(&line("NVLS")).connections[0].transport.kind,
        TransportKind::Nvls
    );
    assert_eq!(
        parse(&line("Carrier")).connections[0].transport.kind,
        TransportKind::Other
    );
}

#[test]
fn launcher_and_timestamp_prefixes_are_skipped() {
    let log = parse(
        "[2025-11-11 16:54:54] nodea:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n\
         [1,1]<stdout>:nodea:12:13 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n\
         0: nodeb:14:15 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[1] via SHM/direct/direct\n\
         [3] nodeb:16:17 [1] NCCL INFO Channel 00/0 : 3[1] -> 2[0] via SHM/direct/direct\n\
         [2025-11-11 16:54:55] NCCL version 2.28.3+cuda12.9\n\
         [1,0]<stdout>:NCCL INFO Using network IB\n",
    );
    let hosts: Vec<_> = log
        .connections
        .iter()
        .map(|c| (c.host.as_deref(), c.pid))
        .collect();
    assert_eq!(
        hosts,
        [
            (Some("nodea"), Some(10)),
            (Some("nodea"), Some(12)),
            (Some("nodeb"), Some(14)),
            (Some("nodeb"), Some(16))
        ]
    );
    assert_eq!(log.versions, ["2.28.3+cuda12.9"]);
    assert_eq!(log.networks, ["IB"]);
    assert_eq!(log.transports_cell(), "SHM:100%");
    assert_eq!(log.nccl_lines, 6);
}

#[test]
fn duplicated_lines_count_once_but_connection_indices_are_distinct() {
    let line = "n:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n";
    let other_index = "n:1:2 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via P2P/CUMEM\n";
    let other_pid = "n:9:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n";
    let log = parse(&[line, line, other_index, other_pid, line].concat());
    assert_eq!(log.connections.len(), 3);
    assert_eq!(log.nccl_lines, 5);
    // Send and receive of one NET connection are two connection lines.
    let log = parse(
        "n:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
         n:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n",
    );
    assert_eq!(log.connections.len(), 2);
}

#[test]
fn collnet_lines_of_every_version_are_their_own_kind() {
    let log = parse(
        "n:1:2 [0] NCCL INFO Coll 00 : 0 [receive] via COLLNET/SHARP/0\n\
         n:1:2 [0] NCCL INFO CollNet 01 : 0 [send] via COLLNET/SHARP/0/GDRDMA\n\
         n:1:2 [0] NCCL INFO CollNet 02/0 : 0 [send] via COLLNET/SHARP/1/GDRDMA\n\
         n:1:2 [0] NCCL INFO CollNet Channel 0 rank 0 up 1 down 2\n\
         n:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM\n",
    );
    assert_eq!(
        labels(&log),
        [
            "COLLNET/SHARP",
            "COLLNET/SHARP",
            "COLLNET/SHARP",
            "P2P/CUMEM"
        ]
    );
    assert!(log.collnet);
    let c = &log.connections[2];
    assert_eq!(
        (c.channel, c.conn_index, c.from_rank, c.to_rank),
        (2, Some(0), 0, 0)
    );
    assert_eq!(c.transport.kind, TransportKind::CollNet);
    assert_eq!(log.transports_cell(), "COLLNET/SHARP:75%;P2P/CUMEM:25%");
    assert!(parse("n:1:2 [0] NCCL INFO rank 0 Connected CollNet\n").collnet);
    assert!(
        !parse("n:1:2 [0] NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels\n")
            .collnet
    );
}

#[test]
fn nvls_keeps_the_strongest_evidence() {
    let info = |m: &str| format!("n:1:2 [0] NCCL INFO {m}\n");
    let not = info("NVLS multicast support is not available on dev 0");
    let avail = info("NVLS multicast support is available on dev 5");
    assert_eq!(parse("").nvls, NvlsUse::Unknown);
    assert_eq!(parse(&not).nvls, NvlsUse::NotAvailable);
    assert_eq!(parse(&(not.clone() + &avail)).nvls, NvlsUse::Available);
    assert_eq!(
        parse(&info("2 coll channels, 0 nvls channels, 2 p2p channels")).nvls,
        NvlsUse::NotAvailable
    );
    // Init's plan says NVLS is available, not that anything used it.
    for planned in [
        "2 coll channels, 2 collnet channels, 16 nvls channels, 2 p2p channels",
        "NVLS Head  0:  0  8 16",
        "NVLS Trees : 0/-1/-1->1->-1 1/-1/-1->0->-1",
    ] {
        assert_eq!(parse(&info(planned)).nvls, NvlsUse::Available, "{planned}");
    }
    // The set-up a collective that uses it does (at init before 2.22), in the
    // words of 2.21 and 2.28.
    for used in [
        "NVLS comm 0x55 headRank 0 nHeads 8 buffSize 1048576 memSize 2097152 nvlsPerRankSize 100663296 nvlsTotalSize 805306368",
        "NVLS comm 0x55 headRank 0 nHeads 8 nvlsRanks 8 buffSize 1048576 nvlsPerRankSize 33554432 nvlsTotalSize 268435456",
        "NVLS Creating Multicast group nranks 8 size 268435456 on rank 0",
        "Connected NVLS tree",
    ] {
        assert_eq!(
            parse(&(avail.clone() + &info(used))).nvls,
            NvlsUse::Used,
            "{used}"
        );
    }
}

#[test]
fn init_start_then_complete_is_one_rank() {
    let log = parse(
        "h:7:8 [1] NCCL INFO ncclCommInitRank comm 0xaa rank 1 nranks 2 cudaDev 1 nvmlDev 3 busId 4c000 commId 0x99 - Init START\n\
         h:7:8 [1] NCCL INFO comm 0xaa rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n\
         h:7:8 [1] NCCL INFO ncclCommInitRank comm 0xaa rank 1 nranks 2 cudaDev 1 nvmlDev 3 busId 4c000 commId 0x99 - Init COMPLETE\n\
         h:7:8 [1] NCCL INFO Init timings - ncclCommInitRank: rank 1 nranks 2 total 0.29\n\
         h:7:8 [1] NCCL INFO ncclCommInitRank comm 0xbb rank 0 nranks 1 cudaDev 1 nvmlDev 3 busId 4c000 commId 0x98 - Init START\n",
    );
    assert_eq!(log.ranks.len(), 2);
    let r = &log.ranks[0];
    assert_eq!((r.host.as_str(), r.pid, r.rank, r.nranks), ("h", 7, 1, 2));
    assert_eq!(
        (r.cuda_dev, r.nvml_dev, r.bus_id.as_deref()),
        (Some(1), Some(3), Some("4c000"))
    );
    assert_eq!(
        (r.comm.as_deref(), r.comm_id.as_deref()),
        (Some("0xaa"), Some("0x99"))
    );
    assert!(r.init_complete);
    assert!(!log.ranks[1].init_complete);
}

#[test]
fn failure_signatures_map_to_their_kinds() {
    let warn = |m: &str| parse(&format!("h:1:2 [0] misc/x.cc:1 NCCL WARN {m}\n"));
    let cases = [
        ("Call to posix_fallocate failed : No space left on device", FailureKind::ShmEnospc),
        ("Error while creating shared memory segment nccl-shm-recv-b3d5 (size 9637888)", FailureKind::ShmEnospc),
        ("Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)", FailureKind::ShmEnospc),
        ("Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)", FailureKind::ShmAttachEnoent),
        // A peer's cuMem handle read as a name (NVIDIA/nccl PR 2388): size 0, a name
        // NCCL's mkstemp never makes.
        ("Error while attaching to shared memory segment /dev/shm/nccl-\u{40c} (size 0), error: No such file or directory (2)", FailureKind::ShmCumemMismatch),
        ("Error while attaching to shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)", FailureKind::ShmCumemMismatch),
        ("Error while creating shared memory segment /dev/shm/nccl-ab (size 9637892), error: Permission denied (13)", FailureKind::Other),
        ("Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'", FailureKind::CudaFailure),
        ("Connect to 10.0.0.2<45763> failed : Connection refused", FailureKind::ConnectionRefused),
        ("socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort", FailureKind::ConnectionRefused),
        ("socketProgress: Connection closed by remote peer node1<57557>", FailureKind::SocketError),
        ("Net : Connection closed by remote peer", FailureKind::SocketError),
        ("Call to recv failed : Connection reset by peer", FailureKind::SocketError),
        ("socketFinalizeAccept: wrong type 4 != 3", FailureKind::SocketError),
    ];
    for (message, kind) in cases {
        let log = warn(message);
        assert_eq!(kinds(&log), [(kind, 1)], "{message}");
        assert_eq!(log.failures[0].text, message);
        assert_eq!(
            log.warnings,
            [format!("h:1:2 [0] misc/x.cc:1 NCCL WARN {message}")]
        );
    }
    let app = parse(
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n\
         torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error\n\
         [rank0]: ncclUnhandledCudaError: Call to CUDA function failed.\n",
    );
    assert_eq!(
        kinds(&app),
        [
            (FailureKind::SystemError, 1),
            (FailureKind::RemoteError, 2),
            (FailureKind::CudaFailure, 3)
        ]
    );
    // The version PyTorch names is the library's; its lines are not NCCL's own.
    assert_eq!(app.versions, ["2.21.5"]);
    assert!(app.warnings.is_empty() && app.nccl_lines == 0);
}

#[test]
fn benign_warnings_and_retries_are_not_failures() {
    let log = parse(
        "misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n\
         h:1:2 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4, falling back to simple order\n\
         h:1:2 [0] NCCL INFO Call to connect returned Connection refused, retrying\n\
         h:1:2 [0] NCCL INFO RAS client listening socket at 127.0.0.1<28028>\n",
    );
    assert!(log.failures.is_empty(), "{:?}", log.failures);
    assert_eq!(log.warnings.len(), 2);
    assert_eq!(log.error_cell(), None);
}

#[test]
fn an_unknown_warning_is_a_failure_when_its_thread_returns_an_error() {
    let log = parse(
        "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion with error 12\n\
         h:1:3 [0] NCCL INFO proxy.cc:1 -> 3\n\
         h:1:4 [0] graph/search.cc:1 NCCL WARN Could not find a path for pattern 4\n\
         h:1:2 [0] NCCL INFO transport/net.cc:1 -> 3\n\
         h:1:2 [0] NCCL INFO init.cc:1358 -> 3 [Async thread]\n\
         \n\
         h:1:5 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-a to 9637892 bytes\n",
    );
    assert_eq!(
        kinds(&log),
        [(FailureKind::Other, 1), (FailureKind::ShmEnospc, 7)]
    );
    // A known kind wins the error cell over an earlier Other.
    assert_eq!(
        log.error_cell().as_deref(),
        Some("shm-enospc: Error: failed to extend /dev/shm/nccl-a to 9637892 bytes")
    );
    let alone =
        parse("h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion with error 12\n");
    assert!(alone.failures.is_empty(), "no error return followed it");
}

#[test]
fn error_cell_is_one_bounded_line() {
    let long = "x".repeat(500);
    let log = parse(&format!(
        "h:1:2 [0] a.cc:1 NCCL WARN Cuda failure 'bad\tthing' {long}\n"
    ));
    let cell = log.error_cell().unwrap_or_default();
    assert!(
        cell.starts_with("cuda-failure: Cuda failure 'bad thing' xxx"),
        "{cell}"
    );
    assert!(
        cell.ends_with("...") && cell.chars().count() < 270,
        "{}",
        cell.len()
    );
}

#[test]
fn transports_cell_rounds_to_exactly_100() {
    let mk = |counts: &[(&str, usize)]| {
        let mut text = String::new();
        let mut channel = 0;
        for (via, n) in counts {
            for _ in 0..*n {
                text +=
                    &format!("h:1:2 [0] NCCL INFO Channel {channel:02} : 0[0] -> 1[1] via {via}\n");
                channel += 1;
            }
        }
        parse(&text)
    };
    assert_eq!(mk(&[]).transports_cell(), "");
    assert!(mk(&[]).transport_shares().is_empty());
    let thirds = mk(&[
        ("SHM/direct/direct", 1),
        ("P2P/IPC", 1),
        ("NET/Socket/0", 1),
    ]);
    assert_eq!(
        thirds.transports_cell(),
        "NET/Socket:34%;P2P/IPC:33%;SHM:33%"
    );
    let shares = thirds.transport_shares();
    assert_eq!(shares.len(), 3);
    assert!(shares.iter().all(|(_, s)| (s - 1.0 / 3.0).abs() < 1e-12));
    let quarter = mk(&[("NET/Socket/0", 1), ("SHM/direct/direct", 3)]);
    assert_eq!(quarter.transports_cell(), "SHM:75%;NET/Socket:25%");
    assert_eq!(
        quarter.transport_shares(),
        [("SHM".to_string(), 0.75), ("NET/Socket".to_string(), 0.25)]
    );
    // 200/201 and 1/201: the floors are 99 and 0; the larger remainder gets the point.
    assert_eq!(
        mk(&[("P2P/CUMEM", 200), ("SHM/direct", 1)]).transports_cell(),
        "P2P/CUMEM:100%;SHM:0%"
    );
    assert_eq!(
        mk(&[("P2P/CUMEM", 2), ("SHM/direct", 1)]).transports_cell(),
        "P2P/CUMEM:67%;SHM:33%"
    );
}

#[test]
fn crlf_garbage_and_empty_input_do_not_break_parsing() {
    let log = parse("n:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read \r\n\u{0}\u{fffd}NCCL\r\nNCCL INFO\n: : ->\nChannel 99999999999 : 1 -> 2 via X\n");
    assert_eq!(labels(&log), ["P2P/IPC"]);
    assert_eq!(log.connections[0].transport.raw, "P2P/IPC/read");
    assert_eq!(parse(""), NcclLog::default());
}

#[test]
fn parse_files_merges_ranks_and_counts_a_repeated_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("nccl.h.1");
    let b = dir.path().join("nccl.h.2");
    std::fs::write(
        &a,
        "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
         h:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        b"h:2:3 [1] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
          h:2:3 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n\
          h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
          h:2:3 [1] NCCL INFO NVLS multicast support is available on dev 1\n\
          h:2:3 [1] a.cc:1 NCCL WARN Call to posix_fallocate failed : No space left on device \xff\n",
    )
    .unwrap();
    let log = parse_files(&[&a, &b]).unwrap();
    assert_eq!(log.versions, ["2.21.5+cuda12.4"]);
    assert_eq!(log.connections.len(), 2);
    assert_eq!(log.nvls, NvlsUse::Available);
    assert_eq!(kinds(&log), [(FailureKind::ShmEnospc, 5)]);
    assert_eq!(log.nccl_lines, 8);
    let missing = dir.path().join("absent");
    let err = parse_files(&[&a, &missing]).unwrap_err();
    assert!(err.to_string().contains("absent"), "{err}");
}

mod extra;

// ---- Real logs from ../shared/fixtures/nccl-logs (read in place, never copied). ----

/// What a fixture must yield; every field checked by reading the file.
struct Expected {
    cell: &'static str,
    connections: usize,
    versions: &'static [&'static str],
    networks: &'static [&'static str],
    failures: &'static [(FailureKind, usize)],
    warnings: usize,
    nvls: NvlsUse,
    nccl_lines: usize,
}

fn fixture_dir() -> Option<PathBuf> {
    crate::test_inputs::need(crate::test_inputs::Need::Fixtures("nccl-logs"))
}

/// Parses one fixture and checks `expected`; `None` when the folder is absent outside CI.
fn check_fixture(name: &str, expected: Expected) -> Option<NcclLog> {
    let path = fixture_dir()?.join(name);
    let log = parse_files(&[&path]).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(log.transports_cell(), expected.cell, "{name}: transports");
    assert_eq!(
        log.connections.len(),
        expected.connections,
        "{name}: connections"
    );
    assert_eq!(log.versions, expected.versions, "{name}: versions");
    assert_eq!(log.networks, expected.networks, "{name}: networks");
    assert_eq!(kinds(&log), expected.failures, "{name}: failures");
    assert_eq!(log.warnings.len(), expected.warnings, "{name}: warnings");
    assert_eq!(log.nvls, expected.nvls, "{name}: nvls");
    assert_eq!(log.nccl_lines, expected.nccl_lines, "{name}: NCCL lines");
    assert!(!log.collnet, "{name}: no fixture uses CollNet");
    Some(log)
}

mod fixtures;
