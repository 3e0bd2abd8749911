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
    // IB devices are not socket interfaces, and an OOB interface on a routable
    // address says nothing by itself.
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
    // One host without IB is no finding of IB's; the log stops in set-up (a warning).
    let single = explain(&parse(text));
    assert_eq!(
        kinds(&single),
        [(FindingKind::InitStops, Severity::Warning)]
    );
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
            .map(|h| h.starts_with("cudaErrorMemoryAllocation (2, `out of memory`)")),
        Some(true)
    );
    assert!(
        cuda_hint("Cuda failure 'no kernel image is available for execution on the device'")
            .unwrap()
            .starts_with("cudaErrorNoKernelImageForDevice (209, `no kernel image")
    );
    let other = explain(&parse(
        "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n",
    ));
    assert!(finding(&other, FindingKind::CudaFailure)
        .cause
        .contains("Here: cudaErrorIllegalAddress (700, `an illegal memory access"));
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
    assert!(
        system.cause.contains("follows from shm-no-space"),
        "{}",
        system.cause
    );
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
    // 2.7 to 2.23: every 1000th refusal at INFO, no address.
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

    // 2.24 to 2.26: the error and the attempt count, no address.
    let counted = explain(&parse(
        "zgiot:1:2 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (33/34) after sleep for 3300 msec\n\
         zgiot:1:2 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (34/34) after sleep for 3400 msec\n",
    ));
    let f = finding(&counted, FindingKind::SocketConnectRetries);
    assert!(
        f.cause
            .contains("the last one `No route to host` at attempt 34 of 34"),
        "{}",
        f.cause
    );
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME"));

    // 2.27 and later: the address, the error and the attempt count.
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
/// 2.24+: `exceeded error retry count`): a failed connect, its address named from 2.27.
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
