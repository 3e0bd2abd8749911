//! Tests of `explain`: each rule on small logs written here, then every real log in
//! `../shared/fixtures/nccl-logs/` with its findings, versions, networks, hosts and rank-pair
//! transports read off the file by hand.

use std::path::{Path, PathBuf};

use super::*;
use crate::analysis::nccl_log::{parse, parse_files};

fn kinds(e: &Explanation) -> Vec<(FindingKind, Severity)> {
    e.findings.iter().map(|f| (f.kind, f.severity)).collect()
}

fn finding(e: &Explanation, kind: FindingKind) -> &Finding {
    e.findings
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {:#?}", e.findings))
}

/// (from rank, to rank, [(transport label, connections)]).
type PairView<'a> = (u32, u32, Vec<(&'a str, usize)>);

/// (host, pids, ranks, GPUs).
type HostView<'a> = (&'a str, &'a [u32], &'a [u32], &'a [u32]);

fn pairs(e: &Explanation) -> Vec<PairView<'_>> {
    e.pairs
        .iter()
        .map(|p| {
            let t = p
                .transports
                .iter()
                .map(|t| (t.label.as_str(), t.connections))
                .collect();
            (p.from_rank, p.to_rank, t)
        })
        .collect()
}

// ---- Rules on small logs ----

#[test]
fn shm_no_space_estimates_the_need_from_segment_channels_peers_and_local_ranks() {
    let e = explain(&parse(
        "h:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n\
         h:20:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n\
         h:10:11 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct\n\
         h:20:21 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct\n\
         h:20:22 [1] misc/shmutils.cc:129 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-ab (size 9637888), error: No space left on device (28)\n\
         h:20:22 [1] NCCL INFO transport/shm.cc:114 -> 2\n",
    ));
    assert_eq!(kinds(&e), [(FindingKind::ShmNoSpace, Severity::Error)]);
    let f = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(
        f.evidence,
        ["line 5: Error while creating shared memory segment /dev/shm/nccl-ab (size 9637888), error: No space left on device (28)"]
    );
    assert_eq!(f.occurrences, 1);
    // 9637888 x 2 channels x 1 SHM peer x 2 local ranks = 38551552 B.
    assert!(
        f.diagnosis.contains(
            "Needed: about 36.8 MiB = 9637888 B x 2 channel(s) x 1 SHM peer(s) per rank x 2 local rank(s)"
        ),
        "{}",
        f.diagnosis
    );
    assert!(f.diagnosis.contains("the most SHM senders one rank had"));
    assert!(f.diagnosis.contains("2 rank(s) on h"));
    assert!(!f
        .diagnosis
        .contains("No connection in this log used the SHM"));
    for part in [
        "--shm-size=1g",
        "--ipc=host",
        "emptyDir: {medium: Memory}",
        "/dev/shm",
        "NCCL_SHM_DISABLE=1 only hides",
        "network path",
    ] {
        assert!(f.fix.contains(part), "{part}: {}", f.fix);
    }
}

#[test]
fn shm_estimate_and_shm_size_are_plain_arithmetic() {
    let e = shm_estimate(DEFAULT_SHM_SEGMENT_BYTES, 16, 2, 8);
    assert_eq!(e.total_bytes, 9_637_888 * 16 * 2 * 8);
    assert_eq!((e.channels, e.shm_peers, e.local_ranks), (16, 2, 8));
    // 2.3 GiB, twice that rounded up: 5 GiB.
    assert_eq!(shm_size_gib(Some(e.total_bytes)), 5);
    assert_eq!(shm_size_gib(Some(1)), 1);
    assert_eq!(shm_size_gib(Some(GIB / 2)), 1);
    assert_eq!(shm_size_gib(Some(GIB / 2 + 1)), 2);
    assert_eq!(shm_size_gib(None), 1);
    assert_eq!(shm_estimate(u64::MAX, 2, 2, 2).total_bytes, u64::MAX);
}

#[test]
fn shm_no_space_without_sizes_or_channels_says_what_is_missing() {
    let no_size = explain(&parse(
        "h:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n",
    ));
    let d = &finding(&no_size, FindingKind::ShmNoSpace).diagnosis;
    assert!(d.contains("does not give the segment size"), "{d}");
    assert!(d.contains("9637888 B (9.2 MiB)"), "{d}");
    assert!(!d.contains("Needed:"), "{d}");

    let no_channels = explain(&parse(
        "h:1:2 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 5967872)\n",
    ));
    let d = &finding(&no_channels, FindingKind::ShmNoSpace).diagnosis;
    assert!(d.contains("5967872 B (5.7 MiB)"), "{d}");
    assert!(d.contains("does not show the channel count."), "{d}");
    let f = finding(&no_channels, FindingKind::ShmNoSpace);
    assert!(f.fix.contains("--shm-size=1g"));
}

#[test]
fn attach_enoent_points_at_ipc_namespaces_not_at_disabling_shm() {
    let e = explain(&parse(
        "h:1:2 [0] misc/shmutils.cc:1 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-ab (size 0), error: No such file or directory (2)\n",
    ));
    assert_eq!(
        kinds(&e),
        [(FindingKind::ShmAttachMissing, Severity::Error)]
    );
    let f = finding(&e, FindingKind::ShmAttachMissing);
    assert!(f.diagnosis.contains("IPC namespaces"));
    assert!(f.diagnosis.contains("not a reason to disable SHM"));
    assert!(f.fix.contains("--ipc=host"));
    assert!(f.fix.contains("/dev/shm/nccl-*"));
}

#[test]
fn connect_failures_and_timeouts_point_at_the_socket_interface() {
    let e = explain(&parse(
        "h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth\n\
         h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         h:1:2 [0] misc/socket.cc:1 NCCL WARN Connect to 10.0.0.2<45763> failed : Connection refused\n\
         h:1:2 [0] misc/socket.cc:2 NCCL WARN socketPollConnect: connect returned Connection timed out, exceeded error retry count (35)\n",
    ));
    assert_eq!(kinds(&e), [(FindingKind::SocketConnect, Severity::Error)]);
    let f = finding(&e, FindingKind::SocketConnect);
    assert_eq!(f.occurrences, 2);
    assert!(f.diagnosis.contains("(10.0.0.2<45763>)"), "{}", f.diagnosis);
    assert!(f.diagnosis.contains("Socket interfaces in this log: eth0."));
    assert!(f.diagnosis.contains("NCCL_SOCKET_IFNAME is set to `eth`"));
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME=eth0"));
    assert!(f.fix.contains("`^docker0,lo` excludes"));
    assert!(f.fix.contains("ports"));
}

#[test]
fn socket_errors_after_connecting_say_whether_the_peer_died_or_something_else_answered() {
    let closed = explain(&parse(
        "h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<57557>\n",
    ));
    let f = finding(&closed, FindingKind::SocketError);
    assert!(f.diagnosis.contains("this rank is a victim"));
    assert!(!f.diagnosis.contains("wrong type"));
    let wrong = explain(&parse(
        "h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3\n",
    ));
    let f = finding(&wrong, FindingKind::SocketError);
    assert!(f.diagnosis.contains("something else answered"));
    assert!(!f.diagnosis.contains("victim"));
    assert!(f.fix.contains("same NCCL version"));
}

fn interface_rule(text: &str, multi_node: bool) -> Option<Finding> {
    let log = parse(text);
    socket_interface_rule(&log.interfaces, &log.env, multi_node)
}

#[test]
fn socket_interface_rule_warns_on_multi_host_logs_and_virtual_interfaces_only() {
    let eth0 = "a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>\n";
    // One host, a real interface: nothing to say.
    assert_eq!(interface_rule(eth0, false), None);
    // Several hosts and NCCL chose: a warning naming what it chose.
    let f = interface_rule(eth0, true).unwrap();
    assert_eq!(
        (f.kind, f.severity),
        (FindingKind::SocketInterfaceAmbiguous, Severity::Warning)
    );
    assert!(f.diagnosis.contains("(eth0, eth1)"), "{}", f.diagnosis);
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME"));
    assert_eq!(
        f.evidence,
        ["line 1: NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>"]
    );
    // Chosen explicitly: nothing to say.
    let set = format!("a:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n{eth0}");
    assert_eq!(interface_rule(&set, true), None);
    // ... unless it selects a virtual interface.
    let docker = "a:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to docker\n\
                  a:1:2 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.2<0>\n";
    let f = interface_rule(docker, true).unwrap();
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.diagnosis.contains("docker0"));
    assert!(f
        .diagnosis
        .contains("NCCL_SOCKET_IFNAME=`docker` selects it"));
    // lo on one host: a note, since it only breaks runs across hosts.
    let lo = "Bootstrap : Using lo:127.0.0.1<0>\nNCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n";
    let f = interface_rule(lo, false).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.diagnosis.contains("is lo (loopback or virtual"));
    assert!(f.fix.contains("Only needed for runs across hosts"));
    // IB interface lines are not socket interfaces.
    let ib = "a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE; OOB eth0:10.0.0.1<0>\n";
    assert_eq!(interface_rule(ib, true), None);
}

#[test]
fn virtual_interfaces_are_recognised_by_name() {
    for name in [
        "lo",
        "docker0",
        "virbr0",
        "veth12ab",
        "br-3f2a",
        "cni0",
        "flannel.1",
    ] {
        assert!(is_virtual_interface(name), "{name}");
    }
    for name in ["eth0", "ens5", "enp227s0f0", "ib0", "bond0", "low0"] {
        assert!(!is_virtual_interface(name), "{name}");
    }
}

#[test]
fn socket_interface_rule_runs_in_explain_with_hosts_or_net_connections_as_multi_node() {
    let e = explain(&parse(
        "a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         b:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n",
    ));
    assert_eq!(
        kinds(&e),
        [(FindingKind::SocketInterfaceAmbiguous, Severity::Warning)]
    );
    // The two lines differ by address: both kept as evidence.
    assert_eq!(
        finding(&e, FindingKind::SocketInterfaceAmbiguous)
            .evidence
            .len(),
        2
    );
    let one_host_with_net = explain(&parse(
        "a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n",
    ));
    assert_eq!(
        kinds(&one_host_with_net),
        [
            (FindingKind::SocketInterfaceAmbiguous, Severity::Warning),
            (FindingKind::ShmNotOnDataPath, Severity::Info)
        ]
    );
}

#[test]
fn ib_failures_become_ib_errors_with_or_without_an_error_return() {
    let returned = explain(&parse(
        "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with error 12, opcode 0, len 0, vendor err 129\n\
         h:1:2 [0] NCCL INFO transport/net.cc:1 -> 6\n",
    ));
    assert_eq!(kinds(&returned), [(FindingKind::IbError, Severity::Error)]);
    let f = finding(&returned, FindingKind::IbError);
    assert_eq!(
        f.evidence,
        ["line 1: NET/IB : Got completion from peer 10.0.0.2<1234> with error 12, opcode 0, len 0, vendor err 129"]
    );
    assert!(f
        .diagnosis
        .contains("`error 12` is a transport retry timeout"));
    for part in ["NCCL_IB_HCA", "NCCL_IB_DISABLE=1", "NCCL_IB_GID_INDEX"] {
        assert!(f.fix.contains(part), "{part}");
    }
    // No error return followed: the parser has no failure, the WARN line still counts.
    let alone = explain(&parse(
        "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : ibv_modify_qp failed with 110 Connection timed out\n",
    ));
    assert_eq!(kinds(&alone), [(FindingKind::IbError, Severity::Error)]);
    assert_eq!(
        finding(&alone, FindingKind::IbError).evidence,
        ["h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : ibv_modify_qp failed with 110 Connection timed out"]
    );
    assert!(is_ib_error_text("Call to ibv_reg_mr failed"));
    assert!(!is_ib_error_text("Failed to open libibverbs.so[.1]"));
    assert!(!is_ib_error_text("NET/IB : No device found."));
}

#[test]
fn no_ib_device_is_a_warning_only_across_hosts_that_did_not_use_ib() {
    let text = "a:1:2 [0] NCCL INFO NET/IB : No device found.\n\
                a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
                a:1:2 [0] NCCL INFO Using network Socket\n\
                a:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n";
    let single = explain(&parse(text));
    assert!(single.findings.is_empty(), "{:#?}", single.findings);
    let multi = format!("{text}b:1:2 [0] NCCL INFO NET/IB : No device found.\n");
    let e = explain(&parse(&multi));
    assert_eq!(kinds(&e), [(FindingKind::IbError, Severity::Warning)]);
    let f = finding(&e, FindingKind::IbError);
    assert_eq!(f.occurrences, 2);
    assert_eq!(f.evidence, ["line 1: NET/IB : No device found."]);
    assert!(f.diagnosis.contains("TCP sockets (`Using network Socket`)"));
    assert!(f.fix.contains("NCCL_IB_DISABLE=1"));
    let used =
        format!("{multi}a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
    assert!(!kinds(&explain(&parse(&used)))
        .iter()
        .any(|(k, _)| *k == FindingKind::IbError));
}

#[test]
fn cuda_failures_get_the_hint_of_their_cuda_error() {
    let e = explain(&parse(
        "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'\n",
    ));
    assert_eq!(kinds(&e), [(FindingKind::CudaFailure, Severity::Error)]);
    let f = finding(&e, FindingKind::CudaFailure);
    assert!(
        f.diagnosis.contains("Here: the NVIDIA driver is older"),
        "{}",
        f.diagnosis
    );
    assert!(f.fix.contains("nvidia-smi"));
    assert_eq!(
        cuda_hint("Cuda failure 'out of memory'").map(|h| h.starts_with("the GPU ran out")),
        Some(true)
    );
    assert!(
        cuda_hint("Cuda failure 'no kernel image is available for execution on the device'")
            .unwrap()
            .contains("architecture")
    );
    assert_eq!(cuda_hint("Cuda failure 'something new'"), None);
    let unknown = explain(&parse(
        "h:1:2 [0] a.cc:1 NCCL WARN Cuda failure 'something new'\n",
    ));
    assert!(finding(&unknown, FindingKind::CudaFailure)
        .diagnosis
        .contains("Common causes"));
}

#[test]
fn a_pytorch_traceback_explains_the_system_error_by_the_last_error_line() {
    let log = parse(
        "Traceback (most recent call last):\n\
         \x20 File \"train.py\", line 10, in <module>\n\
         torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n\
         ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n\
         Last error:\n\
         Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n",
    );
    assert_eq!(log.nccl_lines, 0);
    assert!(is_nccl_log(&log));
    let e = explain(&log);
    assert_eq!(
        kinds(&e),
        [
            (FindingKind::SystemError, Severity::Error),
            (FindingKind::ShmNoSpace, Severity::Error)
        ]
    );
    let system = finding(&e, FindingKind::SystemError);
    assert_eq!(system.occurrences, 2);
    assert!(system
        .diagnosis
        .contains("(shm-no-space) are the likely cause"));
    assert!(system
        .fix
        .contains("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"));
    let shm = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(
        shm.evidence,
        ["line 6: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)"]
    );
    // No channel or rank in a traceback.
    assert!(shm
        .diagnosis
        .contains("does not show the channel count or how many ranks share a node"));
}

#[test]
fn remote_and_unknown_errors_have_their_own_findings() {
    let e = explain(&parse(
        "[rank1]: torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error\n\
         h:1:2 [0] proxy.cc:1 NCCL WARN Something nobody has seen\n\
         h:1:2 [0] NCCL INFO proxy.cc:2 -> 3\n",
    ));
    assert_eq!(
        kinds(&e),
        [
            (FindingKind::RemoteError, Severity::Error),
            (FindingKind::OtherError, Severity::Error)
        ]
    );
    let remote = finding(&e, FindingKind::RemoteError);
    assert!(remote.fix.contains("other ranks' logs first"));
    // The `: ` the `[rank1]` prefix left is not part of the evidence.
    assert_eq!(
        remote.evidence,
        ["line 1: torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error"]
    );
    assert_eq!(
        finding(&e, FindingKind::OtherError).evidence,
        ["line 2: Something nobody has seen"]
    );
}

#[test]
fn failure_kinds_map_to_findings() {
    let f = |kind, text: &str| Failure {
        kind,
        line: 1,
        text: text.to_string(),
    };
    let cases = [
        (f(FailureKind::ShmEnospc, "x"), FindingKind::ShmNoSpace),
        (
            f(FailureKind::ShmAttachEnoent, "x"),
            FindingKind::ShmAttachMissing,
        ),
        (f(FailureKind::CudaFailure, "x"), FindingKind::CudaFailure),
        (f(FailureKind::SystemError, "x"), FindingKind::SystemError),
        (f(FailureKind::RemoteError, "x"), FindingKind::RemoteError),
        (
            f(FailureKind::ConnectionRefused, "Connect to a failed"),
            FindingKind::SocketConnect,
        ),
        (
            f(FailureKind::SocketError, "socketPollConnect: timed out"),
            FindingKind::SocketConnect,
        ),
        (
            f(FailureKind::SocketError, "Connection closed by remote peer"),
            FindingKind::SocketError,
        ),
        (
            f(FailureKind::SocketError, "NET/IB : recv failed"),
            FindingKind::IbError,
        ),
        (
            f(FailureKind::Other, "ibv_create_qp failed"),
            FindingKind::IbError,
        ),
        (f(FailureKind::Other, "something"), FindingKind::OtherError),
    ];
    for (failure, kind) in cases {
        assert_eq!(finding_kind_of(&failure), kind, "{failure:?}");
    }
}

#[test]
fn shm_not_on_data_path_needs_connections_none_of_them_shm_and_shm_not_disabled() {
    let p2p = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
               h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
               h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 2[0] [send] via NET/IB/0\n";
    let f = shm_not_on_data_path_rule(&parse(p2p)).unwrap();
    assert_eq!(
        (f.kind, f.severity),
        (FindingKind::ShmNotOnDataPath, Severity::Info)
    );
    assert_eq!(
        f.evidence,
        ["3 connection line(s): P2P/CUMEM:67%, NET/IB:33%"]
    );
    assert!(f
        .diagnosis
        .contains("P2P/CUMEM and NET/IB carried all 3 connection line(s)"));
    assert!(f
        .diagnosis
        .contains("disabling SHM does not change the data path here"));
    let disabled = format!("h:1:2 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n{p2p}");
    assert_eq!(shm_not_on_data_path_rule(&parse(&disabled)), None);
    let enabled = format!("h:1:2 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 0.\n{p2p}");
    assert!(shm_not_on_data_path_rule(&parse(&enabled)).is_some());
    let shm = format!("{p2p}h:1:2 [0] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct\n");
    assert_eq!(shm_not_on_data_path_rule(&parse(&shm)), None);
    assert_eq!(shm_not_on_data_path_rule(&parse("")), None);
}

#[test]
fn findings_are_ordered_by_severity_then_appearance() {
    let e = explain(&parse(
        "a:1:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n\
         a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n\
         a:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\n\
         a:1:2 [0] x.cc:1 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-a (size 0)\n",
    ));
    assert_eq!(
        kinds(&e),
        [
            (FindingKind::CudaFailure, Severity::Error),
            (FindingKind::ShmAttachMissing, Severity::Error),
            (FindingKind::SocketInterfaceAmbiguous, Severity::Info),
            (FindingKind::ShmNotOnDataPath, Severity::Info)
        ]
    );
}

#[test]
fn evidence_keeps_three_distinct_lines_cut_to_length() {
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!(
            "h:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\nh:1:2 [0] x.cc:1 NCCL WARN Cuda failure {i} '{}'\n",
            "x".repeat(300)
        ));
    }
    let e = explain(&parse(&text));
    let f = finding(&e, FindingKind::CudaFailure);
    assert_eq!(f.occurrences, 10);
    assert_eq!(f.evidence.len(), 3);
    assert_eq!(f.evidence[0], "line 1: Cuda failure 'out of memory'");
    assert!(f.evidence[1].starts_with("line 2: Cuda failure 0 'xxx"));
    assert!(f.evidence[1].ends_with("..."));
    assert_eq!(f.evidence[1].chars().count(), MAX_EVIDENCE_CHARS + 3);
    assert!(f.evidence[2].starts_with("line 4: Cuda failure 1 "));
}

#[test]
fn hosts_collect_ranks_gpus_and_pids_from_prefixes_init_and_connection_lines() {
    let log = parse(
        "[0] a:10:11 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n\
         [1] a:20:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n\
         [2] b:30:31 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [receive] via NET/Socket/0\n\
         [3] b:40:41 [2] NCCL INFO Setting affinity for GPU 2 to ff\n\
         NCCL INFO comm 0x2 rank 3 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE\n",
    );
    let e = explain(&log);
    assert_eq!(
        e.hosts,
        [
            HostSummary {
                host: String::new(),
                pids: vec![],
                ranks: vec![3],
                devices: vec![1],
            },
            HostSummary {
                host: "a".into(),
                pids: vec![10, 20],
                ranks: vec![0, 1],
                devices: vec![0, 1],
            },
            HostSummary {
                host: "b".into(),
                pids: vec![30, 40],
                ranks: vec![2],
                devices: vec![0, 2],
            },
        ]
    );
    assert_eq!(e.nranks, [4]);
}

#[test]
fn pairs_count_each_channel_connection_once_over_send_and_receive_lines() {
    let e = explain(&parse(
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
         b:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n\
         b:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n\
         a:1:2 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[0] via P2P/IPC/read\n\
         a:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[0] via SHM/direct/direct\n\
         a:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[0] via SHM/direct/direct\n\
         a:1:3 [1] NCCL INFO CollNet 00/0 : 1 [send] via COLLNET/SHARP/0\n",
    ));
    assert_eq!(
        pairs(&e),
        [
            (0, 1, vec![("NET/Socket", 2), ("SHM", 2), ("P2P/IPC", 1)]),
            (1, 1, vec![("COLLNET/SHARP", 1)]),
        ]
    );
    assert_eq!(e.pairs[0].transports[0].kind, TransportKind::Net);
    assert!(e.collnet);
}

#[test]
fn text_that_is_not_an_nccl_log_is_recognised_and_explains_to_nothing() {
    let log = parse(
        "Epoch 1/10\nloss: 0.3412 - accuracy: 0.8811\nConnection refused, retrying in 5 s\n\
         # NCCL INFO in a comment\n[2025-01-01 10:00:00] INFO starting worker\n",
    );
    assert!(!is_nccl_log(&log));
    let e = explain(&log);
    assert!(e.findings.is_empty() && e.hosts.is_empty() && e.pairs.is_empty());
    assert!(!is_nccl_log(&parse("")));
    assert!(is_nccl_log(&parse(
        "h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    )));
}

#[test]
fn render_text_prints_every_section_in_order_plain_and_wrapped() {
    let e = explain(&parse(
        "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n\
         h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         h:1:2 [0] NCCL INFO Using network Socket\n\
         h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
         h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
         h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
         h:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0\n\
         h:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\n",
    ));
    let text = render_text(&e);
    let expected_start = "\
NCCL
  version: 2.21.5+cuda12.4
  set by environment: NCCL_SOCKET_IFNAME=eth0

Ranks
  communicator size: 2 ranks
  h: rank 0; GPU 0; pid 1

Network
  using network: Socket
  NET/Socket interfaces: eth0

Transports (per rank pair)
  0 -> 1  P2P/CUMEM x2
  (xN: channel connections; all lines: P2P/CUMEM:100%)
  NVLS: not available
  CollNet: not in the log

Findings
  1. [ERROR] CUDA failure inside NCCL
     > line 9: Cuda failure 'out of memory'
     Diagnosis: A CUDA call inside NCCL failed";
    assert!(text.starts_with(expected_start), "{text}");
    assert!(
        text.contains("  2. [INFO] SHM is not on the data path\n"),
        "{text}"
    );
    assert!(text.contains("     Fix: "));
    assert!(!text.contains('\x1b'));
    for line in text.lines() {
        assert!(line.chars().count() <= WIDTH, "too long: {line}");
    }
    assert!(text.ends_with('\n'));
}

#[test]
fn render_text_says_what_the_log_lacks() {
    let text = render_text(&explain(&parse("h:1:2 [0] NCCL INFO Setting affinity\n")));
    for part in [
        "  version: not in the log\n",
        "  h: GPU 0; pid 1\n",
        "Network\n  not in the log\n",
        "  no connection lines in the log\n",
        "  NVLS: not in the log\n",
        "  no known failure signature in the log\n",
    ] {
        assert!(text.contains(part), "{part:?} in\n{text}");
    }
    let empty = render_text(&explain(&parse("")));
    assert!(empty.contains("  no host or rank in the log\n"), "{empty}");
}

#[test]
fn render_text_counts_lines_beyond_the_evidence() {
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!(
            "h:1:2 [0] x.cc:1 NCCL WARN Error: failed to extend /dev/shm/nccl-{i} to 9637892 bytes\n"
        ));
    }
    let out = render_text(&explain(&parse(&text)));
    assert!(
        out.contains("1. [ERROR] /dev/shm too small for NCCL's SHM segments (5 lines)\n"),
        "{out}"
    );
    assert!(out.contains("     > ... 2 more\n"), "{out}");
}

#[test]
fn ranges_and_byte_sizes_read_well() {
    assert_eq!(ranges(&[7, 0, 1, 2, 3, 5, 8, 3]), "0-3, 5, 7-8");
    assert_eq!(ranges(&[]), "");
    assert_eq!(ranges(&[4]), "4");
    assert_eq!(human_bytes(512), "512 B");
    assert_eq!(human_bytes(4096), "4.0 KiB");
    assert_eq!(human_bytes(9_637_888), "9.2 MiB");
    assert_eq!(human_bytes(3 * GIB / 2), "1.5 GiB");
}

// ---- Real logs from ../shared/fixtures/nccl-logs (read in place, never copied) ----

fn fixture_dir() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/nccl-logs"
    ));
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    assert!(!ci, "fixture folder {} is missing under CI", dir.display());
    eprintln!("skipping: fixture folder {} not found", dir.display());
    None
}

type Pair = (u32, u32, &'static [(&'static str, usize)]);
type Host = (&'static str, &'static [u32], &'static [u32], &'static [u32]);

/// What `explain` must make of a fixture; every field read off the file by hand.
struct Expected {
    findings: &'static [(FindingKind, Severity)],
    versions: &'static [&'static str],
    networks: &'static [&'static str],
    /// (source, interface names).
    interfaces: &'static [(&'static str, &'static [&'static str])],
    /// (host, pids, ranks, GPUs).
    hosts: &'static [Host],
    pairs: &'static [Pair],
    nvls: NvlsUse,
}

const NONE: &[&str] = &[];

fn check_fixture(name: &str, expected: Expected) -> Option<Explanation> {
    let path = fixture_dir()?.join(name);
    let log = parse_files(&[&path]).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(is_nccl_log(&log), "{name}");
    let e = explain(&log);
    assert_eq!(kinds(&e), expected.findings, "{name}: findings");
    assert_eq!(e.versions, expected.versions, "{name}: versions");
    assert_eq!(e.networks, expected.networks, "{name}: networks");
    let interfaces: Vec<(&str, Vec<&str>)> = e
        .interfaces
        .iter()
        .map(|i| {
            (
                i.source.as_str(),
                i.names.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let want: Vec<(&str, Vec<&str>)> = expected
        .interfaces
        .iter()
        .map(|(s, n)| (*s, n.to_vec()))
        .collect();
    assert_eq!(interfaces, want, "{name}: interfaces");
    let hosts: Vec<HostView> = e
        .hosts
        .iter()
        .map(|h| {
            (
                h.host.as_str(),
                h.pids.as_slice(),
                h.ranks.as_slice(),
                h.devices.as_slice(),
            )
        })
        .collect();
    assert_eq!(hosts, expected.hosts, "{name}: hosts");
    let want: Vec<PairView> = expected
        .pairs
        .iter()
        .map(|(f, t, tr)| (*f, *t, tr.to_vec()))
        .collect();
    assert_eq!(pairs(&e), want, "{name}: pairs");
    assert_eq!(e.nvls, expected.nvls, "{name}: nvls");
    assert!(!e.collnet, "{name}: no fixture uses CollNet");
    // Every fixture renders, within the width except quoted log lines.
    let text = render_text(&e);
    for section in [
        "NCCL\n",
        "\nRanks\n",
        "\nNetwork\n",
        "\nTransports (per rank pair)\n",
        "\nFindings\n",
    ] {
        assert!(text.contains(section), "{name}: {section:?}");
    }
    for line in text.lines().filter(|l| !l.trim_start().starts_with('>')) {
        assert!(line.chars().count() <= WIDTH, "{name}: too long: {line}");
    }
    Some(e)
}

#[test]
fn fixture_1_direct_shm_old_noprefix() {
    let Some(e) = check_fixture(
        "nccl-log-1-direct-shm-old-noprefix.txt",
        Expected {
            findings: &[(FindingKind::SocketInterfaceAmbiguous, Severity::Info)],
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
    let f = finding(&e, FindingKind::SocketInterfaceAmbiguous);
    assert_eq!(f.occurrences, 4);
    assert_eq!(
        f.evidence,
        [
            "line 3: Bootstrap : Using lo:127.0.0.1<0>",
            "line 6: NET/Socket : Using [0]lo:127.0.0.1<0>"
        ]
    );
    assert!(f.diagnosis.contains("socket interface is lo"));
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
            nvls: NvlsUse::Unknown,
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
        f.diagnosis.contains("Here: at a kernel launch"),
        "{}",
        f.diagnosis
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
        f.diagnosis.contains(
            "Needed: about 126.0 MiB = 33030528 B x 2 channel(s) x 1 SHM peer(s) per rank x 2 local rank(s)"
        ),
        "{}",
        f.diagnosis
    );
    assert!(f.diagnosis.contains("as in a ring"));
    assert!(f.diagnosis.contains("on ucwlai-k8snode-12-123"));
    assert!(f
        .diagnosis
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
    assert!(f
        .diagnosis
        .contains("One segment here is 5967872 B (5.7 MiB)."));
    assert!(f
        .diagnosis
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
    assert!(f.diagnosis.contains("does not give the segment size"));
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
            nvls: NvlsUse::Used,
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
    assert!(connect.diagnosis.contains("(10.0.0.2<45763>)"));
    let socket = finding(&e, FindingKind::SocketError);
    assert_eq!(
        socket.evidence,
        [
            "line 15: socketProgress: Connection closed by remote peer node1<57557>",
            "line 18: Socket recv failed while polling for opId=0x7f6f18cb7f40"
        ]
    );
    assert!(socket.diagnosis.contains("this rank is a victim"));
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
            nvls: NvlsUse::Unknown,
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
            nvls: NvlsUse::Unknown,
        },
    ) else {
        return;
    };
    let f = finding(&e, FindingKind::SocketError);
    assert_eq!(
        f.evidence,
        ["line 17: socketFinalizeAccept: wrong type 4 != 3"]
    );
    assert!(f.diagnosis.contains("something else answered"));
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
