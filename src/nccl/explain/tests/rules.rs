//! Tests of the finding rules on small logs written here: each failure signature with its
//! diagnosis and fix, the rules on the log as a whole, the order of the findings and their
//! evidence.

use super::super::evidence::MAX_EVIDENCE_CHARS;
use super::*;
use crate::nccl::log::{Failure, FailureKind};

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
        f.cause.contains(
            "Needed: about 36.8 MiB = 9637888 B x 2 channel(s) x 1 SHM peer(s) per rank x 2 local rank(s)"
        ),
        "{}",
        f.cause
    );
    assert!(f.cause.contains("the most SHM senders one rank had"));
    assert!(f.cause.contains("2 rank(s) on h"));
    assert!(!f.cause.contains("No connection in this log used the SHM"));
    for part in [
        "--shm-size=1g",
        "--ipc=host",
        "emptyDir: {medium: Memory}",
        "/dev/shm",
    ] {
        assert!(f.fix.contains(part), "{part}: {}", f.fix);
    }
    // Disabling SHM is what not to do, and said apart from the fix.
    assert!(!f.fix.contains("NCCL_SHM_DISABLE"), "{}", f.fix);
    for part in ["NCCL_SHM_DISABLE=1 only hides", "network path"] {
        assert!(f.avoid.contains(part), "{part}: {}", f.avoid);
    }
}

#[test]
fn shm_no_space_without_sizes_or_channels_says_what_is_missing() {
    let no_size = explain(&parse(
        "h:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n",
    ));
    let d = &finding(&no_size, FindingKind::ShmNoSpace).cause;
    assert!(d.contains("does not give the segment size"), "{d}");
    assert!(d.contains("9637888 B (9.2 MiB)"), "{d}");
    assert!(!d.contains("Needed:"), "{d}");

    let no_channels = explain(&parse(
        "h:1:2 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 5967872)\n",
    ));
    let d = &finding(&no_channels, FindingKind::ShmNoSpace).cause;
    assert!(d.contains("5967872 B (5.7 MiB)"), "{d}");
    assert!(d.contains("does not show the channel count."), "{d}");
    let f = finding(&no_channels, FindingKind::ShmNoSpace);
    assert!(f.fix.contains("--shm-size=1g"));
}

#[test]
fn attach_enoent_points_at_ipc_namespaces_not_at_disabling_shm() {
    let e = explain(&parse(
        "h:1:2 [0] misc/shmutils.cc:1 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 9637888), error: No such file or directory (2)\n",
    ));
    assert_eq!(
        kinds(&e),
        [(FindingKind::ShmAttachMissing, Severity::Error)]
    );
    let f = finding(&e, FindingKind::ShmAttachMissing);
    assert!(f.cause.contains("IPC namespaces"));
    assert!(f.avoid.starts_with("Disabling SHM"), "{}", f.avoid);
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
    assert!(f.cause.contains("(10.0.0.2<45763>)"), "{}", f.cause);
    assert!(f.cause.contains("Socket interfaces in this log: eth0."));
    assert!(f.cause.contains("NCCL_SOCKET_IFNAME is set to `eth`"));
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
    assert!(f.cause.contains("this rank is a victim"));
    assert!(!f.cause.contains("wrong type"));
    let wrong = explain(&parse(
        "h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3\n",
    ));
    let f = finding(&wrong, FindingKind::SocketError);
    assert!(f.cause.contains("something else answered"));
    assert!(!f.cause.contains("victim"));
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
    assert!(f.cause.contains("(eth0, eth1)"), "{}", f.cause);
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
    assert!(f.cause.contains("docker0"));
    assert!(f.cause.contains("NCCL_SOCKET_IFNAME=`docker` selects it"));
    // lo on one host: a note, since it only breaks runs across hosts.
    let lo = "Bootstrap : Using lo:127.0.0.1<0>\nNCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n";
    let f = interface_rule(lo, false).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.kind, FindingKind::SocketInterfaceVirtual);
    assert!(
        f.cause.contains("includes lo (loopback or virtual"),
        "{}",
        f.cause
    );
    assert!(f.cause.contains("works while every rank runs on this host"));
    // IB interface lines are not socket interfaces.
    let ib = "a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE; OOB eth0:10.0.0.1<0>\n";
    assert_eq!(interface_rule(ib, true), None);
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
    assert!(f.cause.contains("`error 12` is a transport retry timeout"));
    for part in ["NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "ib_write_bw"] {
        assert!(f.fix.contains(part), "{part}");
    }
    // Sockets are no fix for IB: said as what not to do.
    assert!(!f.fix.contains("NCCL_IB_DISABLE=1") && f.avoid.contains("NCCL_IB_DISABLE=1"));
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
    assert_eq!(kinds(&e), [(FindingKind::IbNoDevice, Severity::Warning)]);
    let f = finding(&e, FindingKind::IbNoDevice);
    assert_eq!(f.occurrences, 2);
    assert_eq!(f.evidence, ["line 1: NET/IB : No device found."]);
    assert!(f.cause.contains("TCP sockets (`Using network Socket`)"));
    // Without IB hardware NCCL takes sockets by itself: nothing to set.
    assert!(!f.fix.contains("NCCL_IB_DISABLE=1") && f.fix.contains("nothing needs setting"));
    let used =
        format!("{multi}a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
    assert!(!kinds(&explain(&parse(&used)))
        .iter()
        .any(|(k, _)| *k == FindingKind::IbNoDevice));
}

#[test]
fn cuda_failures_get_the_hint_of_their_cuda_error() {
    let e = explain(&parse(
        "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'\n",
    ));
    // A driver older than the runtime is a finding of its own.
    assert_eq!(kinds(&e), [(FindingKind::DriverTooOld, Severity::Error)]);
    let f = finding(&e, FindingKind::DriverTooOld);
    assert!(
        f.title.contains("driver is older than the CUDA runtime"),
        "{}",
        f.title
    );
    assert!(f.fix.contains("nvidia-smi"));
    // The hint: the error's name and number and what it means (cuda.toml).
    assert_eq!(
        cuda_hint("Cuda failure 'out of memory'")
            .map(|h| h.starts_with("cudaErrorMemoryAllocation (2)")),
        Some(true)
    );
    assert!(
        cuda_hint("Cuda failure 'no kernel image is available for execution on the device'")
            .unwrap()
            .starts_with("cudaErrorNoKernelImageForDevice (209)")
    );
    let other = explain(&parse(
        "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n",
    ));
    assert!(finding(&other, FindingKind::CudaFailure)
        .cause
        .contains("Here: cudaErrorIllegalAddress (700)"));
    assert_eq!(cuda_hint("Cuda failure 'something new'"), None);
    let unknown = explain(&parse(
        "h:1:2 [0] a.cc:1 NCCL WARN Cuda failure 'something new'\n",
    ));
    assert!(finding(&unknown, FindingKind::CudaFailure)
        .cause
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
            (FindingKind::ShmNoSpace, Severity::Error),
            (FindingKind::SystemError, Severity::Error)
        ]
    );
    // The system error follows from the /dev/shm one: said so, and its fix is that one's.
    let system = finding(&e, FindingKind::SystemError);
    assert_eq!(system.occurrences, 2);
    assert_eq!(system.follows, Some("shm-no-space"));
    assert!(system.cause.contains("(shm-no-space) are the likely cause"));
    assert!(
        system.fix.starts_with("Fix shm-no-space first"),
        "{}",
        system.fix
    );
    let shm = finding(&e, FindingKind::ShmNoSpace);
    assert_eq!(
        shm.evidence,
        ["line 6: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)"]
    );
    // No channel or rank in a traceback.
    assert!(shm
        .cause
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
        .cause
        .contains("P2P/CUMEM and NET/IB carried all 3 connection line(s)"));
    assert!(f
        .cause
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
         a:1:2 [0] x.cc:1 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-aB3dE5 (size 9637888)\n",
    ));
    assert_eq!(
        kinds(&e),
        [
            (FindingKind::GpuOutOfMemory, Severity::Error),
            (FindingKind::ShmAttachMissing, Severity::Error),
            (FindingKind::SocketInterfaceVirtual, Severity::Info),
            (FindingKind::ShmNotOnDataPath, Severity::Info)
        ]
    );
}

#[test]
fn evidence_keeps_three_distinct_lines_cut_to_length() {
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!(
            "h:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'an illegal memory access was encountered'\nh:1:2 [0] x.cc:1 NCCL WARN Cuda failure 90{i} '{}'\n",
            "x".repeat(300)
        ));
    }
    let e = explain(&parse(&text));
    let f = finding(&e, FindingKind::CudaFailure);
    assert_eq!(f.occurrences, 10);
    assert_eq!(f.evidence.len(), 3);
    assert_eq!(
        f.evidence[0],
        "line 1: Cuda failure 'an illegal memory access was encountered'"
    );
    assert!(f.evidence[1].starts_with("line 2: Cuda failure 900 'xxx"));
    assert!(f.evidence[1].ends_with("..."));
    assert_eq!(f.evidence[1].chars().count(), MAX_EVIDENCE_CHARS + 3);
    assert!(f.evidence[2].starts_with("line 4: Cuda failure 901 "));
}

/// A start-up hang that shows only as connect retries, in the wording of each NCCL
/// (from src/include/socket.h of 2.7-2.11 and src/misc/socket.cc of 2.12-2.28).
#[test]
fn a_hang_that_shows_only_as_connect_retries_is_named() {
    // 2.7 to 2.21: every 1000th refusal at INFO, no address.
    let old = explain(&parse(
        "node1:1234:1250 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
         node1:1234:1250 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         node1:1234:1250 [0] NCCL INFO Call to connect returned Connection refused, retrying\n\
         node1:1234:1250 [0] NCCL INFO Call to connect returned Connection refused, retrying\n",
    ));
    assert_eq!(
        kinds(&old),
        [(FindingKind::SocketConnectRetries, Severity::Error)]
    );
    let f = finding(&old, FindingKind::SocketConnectRetries);
    assert_eq!(f.occurrences, 2);
    assert_eq!(
        f.evidence,
        ["line 3: connect returned Connection refused, retrying"]
    );
    for part in [
        "NCCL kept retrying to connect to a peer (this NCCL does not name the address",
        "2 retry line(s), the last one `Connection refused`",
        "Socket interfaces in this log: eth0.",
    ] {
        assert!(f.cause.contains(part), "{part}: {}", f.cause);
    }
    for part in [
        "nc -vz",
        "NCCL_SOCKET_IFNAME=eth0",
        "Bootstrap : Using",
        "docker0",
    ] {
        assert!(f.fix.contains(part), "{part}: {}", f.fix);
    }

    // 2.22 and later: the address, the error and the attempt count.
    let new = explain(&parse(
        "node1:1234:1250 [0] NCCL INFO socketStartConnect: connect to 10.0.0.2<43211> returned Connection timed out, retrying (1/34) after sleep for 100 msec\n\
         node1:1234:1250 [0] NCCL INFO socketStartConnect: connect to 10.0.0.2<43211> returned Connection timed out, retrying (2/34) after sleep for 200 msec\n",
    ));
    let f = finding(&new, FindingKind::SocketConnectRetries);
    assert_eq!(f.occurrences, 2);
    assert!(
        f.cause.contains(
            "NCCL kept retrying to connect to 10.0.0.2<43211>: 2 retry line(s), the last one `Connection timed out` at attempt 2 of 34"
        ),
        "{}",
        f.cause
    );
    assert_eq!(
        f.evidence,
        [
            "line 1: connect to 10.0.0.2<43211> returned Connection timed out, retrying (attempt 1 of 34)",
            "line 2: connect to 10.0.0.2<43211> returned Connection timed out, retrying (attempt 2 of 34)"
        ]
    );
}

/// When the retries are used up NCCL says so in a WARN (2.18: `exceeded retries`,
/// 2.22+: `exceeded error retry count`): a failed connect, its address named.
#[test]
fn spent_connect_retries_are_a_failed_connect() {
    for (warn, target) in [
        ("socketStartConnect: exceeded retries (20000)", None),
        ("socketStartConnect: exceeded timeouts (20)", None),
        (
            "socketStartConnect: connect to 10.0.0.2<43211> returned Connection timed out, exceeded error retry count after 35 attempts",
            Some("10.0.0.2<43211>"),
        ),
    ] {
        let log = parse(&format!("node1:1:2 [0] misc/socket.cc:582 NCCL WARN {warn}\n"));
        assert_eq!(log.failures.len(), 1, "{warn}");
        assert_eq!(log.failures[0].kind, FailureKind::ConnectionRefused, "{warn}");
        assert_eq!(log.failures[0].connect_target(), target, "{warn}");
        let e = explain(&log);
        assert_eq!(kinds(&e), [(FindingKind::SocketConnect, Severity::Error)], "{warn}");
    }
}

// ---- Identities, addresses, builds, crashes (each read both ways) ----

fn pasted(files: &[(&str, &str)]) -> Explanation {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(name, text)| Input { name, text })
        .collect();
    explain_inputs(&inputs, &Options::default())
}

fn ids(e: &Explanation) -> Vec<&'static str> {
    e.findings.iter().map(|f| f.kind.as_str()).collect()
}

#[test]
fn two_ranks_on_one_gpu_of_one_node_are_named_but_not_two_nodes_with_one_hostname() {
    // NCCL 2.3 (no `NCCL` tag): ranks 2 and 10 both on GPU [2] of learngpu060, joined by P2P.
    let one_node = "learngpu060:1:9 [2] INFO Ring 00 : 2[2] -> 3[3] via P2P/IPC\n\
                    learngpu060:2:9 [6] INFO Ring 00 : 6[6] -> 10[2] via P2P/IPC\n";
    let e = pasted(&[("-", one_node)]);
    let f = finding(&e, FindingKind::HostIdentity);
    assert!(f.title.contains("learngpu060") && f.cause.contains("Ranks 2 and 10 both use GPU [2]"));
    assert!(f.fix.contains("hostname") && f.fix.contains("NCCL_HOSTID"));
    // Two nodes named `user`, joined by the network: NCCL told them apart.
    let two_nodes = "user:1:9 [6] NCCL INFO Channel 00/0 : 6[6] -> 7[7] via P2P/IPC/read\n\
                     user:2:9 [7] NCCL INFO Channel 00/0 : 15[7] -> 14[6] via P2P/IPC/read\n\
                     user:3:9 [0] NCCL INFO Channel 01/0 : 9[1] -> 0[0] [receive] via NET/Socket/0\n";
    assert!(!ids(&pasted(&[("-", two_nodes)])).contains(&"host-identity"));
    // NCCL 2.4: every process sees one GPU, `[0]`, so the device says nothing.
    let one_gpu_each = "c6:1:9 [0] NCCL INFO Ring 00 : 1[0] -> 2[0] via direct shared memory\n\
                        c6:2:9 [0] NCCL INFO Ring 00 : 2[0] -> 3[0] via direct shared memory\n";
    assert!(!ids(&pasted(&[("-", one_gpu_each)])).contains(&"host-identity"));
}

#[test]
fn hosts_announcing_one_address_are_named_and_distinct_addresses_are_not() {
    let a = "c6ad:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.2<0>\n";
    let b = "26a4:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.2<0>\n";
    let e = pasted(&[("m1.log", a), ("m2.log", b)]);
    let f = finding(&e, FindingKind::SameAddress);
    assert!(f.title.contains("172.17.0.2") && f.cause.contains("Docker's default bridge"));
    assert!(f.fix.contains("--network=host"));
    let c = "26a4:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n";
    assert!(!ids(&pasted(&[("m1.log", a), ("m2.log", c)])).contains(&"same-address"));
}

#[test]
fn a_bootstrap_system_error_names_the_interface_it_used() {
    let text = "h:1:2 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [RO]; OOB ibp75s0:192.168.0.103<0>\n\
                h:1:2 [3] NCCL INFO misc/socket.cc:567 -> 2\n\
                h:1:2 [3] NCCL INFO bootstrap.cc:270 -> 2\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::BootstrapFailed);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("ibp75s0") && f.cause.contains("192.168.0.103"));
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME") && f.avoid.contains("NCCL_IB_DISABLE=1"));
    // Another file's `-> 2` is not the bootstrap's.
    let other = text.replace("bootstrap.cc:270", "transport/net.cc:100");
    assert!(!ids(&pasted(&[("-", &other)])).contains(&"bootstrap-failed"));
}

#[test]
fn a_log_that_ends_binding_nvls_memory_points_at_nvls_and_one_that_ends_later_does_not() {
    let bind = "c2:1:2 [0] NCCL INFO NVLS Bind mem 0xac0000000 UC handle 0x7f MC handle 0x7e size 1073741824\n";
    let e = pasted(&[("-", bind)]);
    let f = finding(&e, FindingKind::NvlsStops);
    assert!(f.fix.contains("NCCL_NVLS_ENABLE=0") && f.avoid.contains("NCCL_SHM_DISABLE=1"));
    let later = format!(
        "{bind}c2:1:2 [0] NCCL INFO AllReduce: 33554432 Bytes -> Algo NVLS_TREE proto SIMPLE\n"
    );
    assert!(!ids(&pasted(&[("-", &later)])).contains(&"nvls-stops"));
}

#[test]
fn a_node_on_a_network_plugin_and_one_on_the_internal_network_differ() {
    let with =
        "n04:1:2 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n";
    let without =
        "n11:1:2 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n";
    let e = pasted(&[("node04.log", with), ("node11.log", without)]);
    let f = finding(&e, FindingKind::PluginsDiffer);
    assert!(f
        .cause
        .contains("libnccl-net.so in node04.log; NCCL's internal network in node11.log"));
    // The same plugin named by its path on one node and by its load line on another.
    let loaded = "n05:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)\n";
    assert!(
        !ids(&pasted(&[("node04.log", with), ("node05.log", loaded)])).contains(&"plugins-differ")
    );
}

#[test]
fn a_bus_error_inside_nccl_is_dev_shm_and_a_segfault_is_a_crash() {
    let bus = "Thread 787 received signal SIGBUS, Bus error.\n\
               #0 0x00007f in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) ()\n";
    let e = pasted(&[("-", bus)]);
    let f = finding(&e, FindingKind::ShmSigbus);
    assert!(f.fix.contains("--shm-size") && f.avoid.contains("NCCL_SHM_DISABLE=1"));
    let segv = bus.replace(
        "signal SIGBUS, Bus error",
        "signal SIGSEGV, Segmentation fault",
    );
    let e = pasted(&[("-", &segv)]);
    assert!(ids(&e).contains(&"crash") && !ids(&e).contains(&"shm-sigbus"));
}

#[test]
fn an_invalid_argument_quotes_the_argument_nccl_refused() {
    let text = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2777, invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n\
                ncclInvalidArgument: Invalid value for an argument.\n\
                Last error:\n\
                Broadcast : sendbuff (nil) is not a valid pointer\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::InvalidArgument);
    assert!(f
        .cause
        .contains("`Broadcast : sendbuff (nil) is not a valid pointer`"));
    assert!(f.fix.contains("allocated CUDA tensor"));
    let other = text.replace("invalid argument", "unhandled system error");
    let other = other.replace("ncclInvalidArgument: Invalid value for an argument.", "");
    assert!(!ids(&pasted(&[("-", &other)])).contains(&"invalid-argument"));
}

#[test]
fn nccl_tests_built_against_nccl_1_or_older_library_are_named() {
    let one = "# NCCL Tests compiled with NCCL 1.0\n# Using devices\n";
    let f = finding(&pasted(&[("-", one)]), FindingKind::TestsNcclBuild).clone();
    assert!(f.title.contains("NCCL 1.0") && f.fix.contains("NCCL 2"));
    let older = "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22703\n";
    let f = finding(&pasted(&[("-", older)]), FindingKind::TestsNcclBuild).clone();
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.title.contains("NCCL 2.28.9 but runs with 2.27.3"),
        "{}",
        f.title
    );
    let same = "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n";
    assert!(!ids(&pasted(&[("-", same)])).contains(&"tests-nccl-build"));
}

#[test]
fn a_cuda_ipc_handle_refused_with_217_says_to_disable_p2p() {
    let text = "z:1:2 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC\n\
                z:1:2 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported between these two devices\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::CudaFailure);
    assert!(f.fix.starts_with("Set NCCL_P2P_DISABLE=1"), "{}", f.fix);
    assert!(!ids(&e).contains(&"other-error"), "{:?}", ids(&e));
}

#[test]
fn a_connect_to_a_docker_bridge_address_is_named_as_such() {
    let text = "e5:1203:1227 [0] misc/socket.cc:480 NCCL WARN socketStartConnect: Connect to 172.17.0.2<38847> failed : Software caused connection abort\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::DockerBridgeAddress);
    assert!(f.cause.contains("172.17.0.2<38847>") && f.fix.contains("--network host"));
    let routed = text.replace("172.17.0.2", "10.1.0.2");
    let e = pasted(&[("-", &routed)]);
    assert!(ids(&e).contains(&"socket-connect") && !ids(&e).contains(&"docker-bridge-address"));
}

#[test]
fn pods_counted_as_one_node_each_point_at_nccl_hostid_and_named_nodes_do_not() {
    let text = "job-worker-0:298:306 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 8000 commId 0xe4 - Init START\n\
                job-worker-1:225:232 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 2 busId a2000 commId 0xe4 - Init START\n\
                job-worker-1:225:232 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n";
    let f = finding(&pasted(&[("-", text)]), FindingKind::NetInsideNode).clone();
    assert!(f.cause.contains("NCCL counts 2 nodes for 2 ranks") && f.fix.contains("NCCL_HOSTID"));
    let nodes = text.replace("job-worker-", "gpu-node-");
    assert!(!ids(&pasted(&[("-", &nodes)])).contains(&"net-inside-node"));
}

#[test]
fn a_link_local_address_matters_for_the_bootstrap_or_sockets_but_not_one_node() {
    let boot = "h:97:221 [0] NCCL INFO Bootstrap : Using [0]ip6tnl0:fe80::e866:19ff:fe1e:a688%ip6tnl0<0> [1]veth0:2a02:6b8::600a<0>\n";
    let f = finding(
        &pasted(&[("-", boot)]),
        FindingKind::SocketInterfaceLinkLocal,
    )
    .clone();
    assert!(
        f.title.contains("ip6tnl0")
            && f.fix.contains("veth0")
            && f.fix.contains("NCCL_SOCKET_IFNAME")
    );
    // A second socket interface on one node that never sends over sockets.
    let one_node = "h:1:2 [0] NCCL INFO Bootstrap: Using enp227s0f0:192.168.1.250<0>\n\
                    h:1:2 [0] NCCL INFO NET/Socket : Using [0]enp227s0f0:192.168.1.250<0> [1]enx1:fe80::52b1%enx1<0>\n";
    assert!(!ids(&pasted(&[("-", one_node)])).contains(&"socket-interface-link-local"));
}

#[test]
fn gpudirect_rdma_on_one_node_only_is_named_and_on_both_is_not() {
    let a = "gpu32:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [send] via NET/IB/1/GDRDMA\n";
    let b = "gpu37:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [receive] via NET/IB/0\n";
    let f = finding(
        &pasted(&[("gpu32.log", a), ("gpu37.log", b)]),
        FindingKind::GdrDiffers,
    )
    .clone();
    assert!(f.title.contains("on gpu32 but not on gpu37") && f.fix.contains("nvidia-peermem"));
    let both = b.replace("NET/IB/0", "NET/IB/0/GDRDMA");
    assert!(!ids(&pasted(&[("gpu32.log", a), ("gpu37.log", &both)])).contains(&"gdr-differs"));
}

#[test]
fn a_cuda_217_in_shm_is_cumem_host_memory_and_in_p2p_is_peer_access() {
    let shm = "9b:774:854 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'\n";
    let e = pasted(&[("-", shm)]);
    let f = finding(&e, FindingKind::Line("shm-cumem-host-p2p"));
    assert!(f.fix.contains("NCCL_CUMEM_HOST_ENABLE=0"));
    assert!(!ids(&e).contains(&"cuda-failure"), "{:?}", ids(&e));
    let p2p = shm.replace("transport/shm.cc:590", "transport/p2p.cc:238");
    assert!(!ids(&pasted(&[("-", &p2p)])).contains(&"shm-cumem-host-p2p"));
}

#[test]
fn one_gpu_that_hangs_is_not_told_to_disable_p2p() {
    let text = "#nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432\n#Using devices\n\
                #Rank 0 Group 0 Pid 12225 on node device 0 [0000:16:00] NVIDIA GeForce RTX 5090\n\
                node:12225:12225 [0] NCCL INFO NCCL version 2.25.1+cuda12.4\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::TestsHangInit);
    assert!(!f.fix.contains("NCCL_P2P_DISABLE") && f.cause.contains("no peer traffic"));
    // 2.25.1 built with CUDA 12.4 on an RTX 5090: too old a CUDA, and a known bug.
    let arch = finding(&e, FindingKind::NcclTooOldForGpu);
    assert!(arch.title.contains("built with CUDA 12.4") && arch.fix.contains("CUDA 12.8"));
    assert!(
        finding(&e, FindingKind::KnownBug).cause.contains("2.26.2")
            || finding(&e, FindingKind::KnownBug).fix.contains("2.26.2")
    );
    let fixed = text.replace("2.25.1+cuda12.4", "2.26.2+cuda12.8");
    let e = pasted(&[("-", &fixed)]);
    assert!(!ids(&e).contains(&"known-bug") && !ids(&e).contains(&"nccl-too-old-for-gpu"));
}

#[test]
fn an_ib_registration_out_of_memory_is_the_memlock_limit() {
    let text = "h:1:2 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n";
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::IbError);
    assert!(f.cause.contains("locked-memory limit") && f.fix.contains("ulimit -l unlimited"));
    assert!(!f.fix.contains("NCCL_IB_DISABLE"));
    let other = text.replace("Cannot allocate memory", "Invalid argument");
    let f = finding(&pasted(&[("-", &other)]), FindingKind::IbError).clone();
    assert!(!f.cause.contains("locked-memory limit"));
}
