//! Tests of the rules for failures that show outside NCCL's own error lines: CUDA's `no
//! kernel image` from a framework, libfabric's address vector and completion errors, an
//! IB queue pair stopped for an access violation, the Fabric Manager's multicast teams,
//! NCCL 2.3 falling back to sockets, a socket interface on 127.0.0.1, an IB transport whose
//! out-of-band interface is lo, a one-GPU test that stops under an old driver. Each both
//! ways: the failure, and healthy text it leaves alone.

use super::*;

/// Healthy NCCL INFO lines of a run that worked, for the rules to leave alone.
const HEALTHY: &str = "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n\
    h:1:1 [0] NCCL INFO cudaDriverVersion 12040\n\
    h:1:1 [0] NCCL INFO NCCL version 2.25.1+cuda12.4\n\
    h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n\
    h:1:2 [0] NCCL INFO Using network IB\n\
    h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n\
    h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n\
    h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n\
    h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n";

#[test]
fn healthy_info_lines_raise_none_of_these_rules() {
    let e = pasted(HEALTHY);
    for id in [
        "no-kernel-image",
        "ofi-av-open",
        "ofi-plugin-error",
        "ib-access-violation",
        "fabric-manager-multicast",
        "ib-no-device",
        "socket-interface-virtual",
        "socket-connect-retries",
        "gdr-disabled",
        "init-stops",
    ] {
        assert!(!ids(&e).contains(&id), "{id} in {:?}", ids(&e));
    }
}

#[test]
fn no_kernel_image_from_a_framework_says_to_compare_the_arch_lists() {
    let text = "ERROR 07-28 15:07:22 [core.py:632]     _ = torch.zeros(1, device=device)\n\
                ERROR 07-28 15:07:22 [core.py:632] RuntimeError: CUDA error: no kernel image is available for execution on the device\n";
    let f = finding_by_id(&pasted(text), "no-kernel-image").clone();
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("architecture"));
    assert!(f.fix.contains("torch.cuda.get_arch_list()"));
    // PyTorch's own warning names the GPU: torch-arch reads it, this one stays silent.
    let named = format!(
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n{text}"
    );
    let e = pasted(&named);
    assert!(ids(&e).contains(&"torch-arch") && !ids(&e).contains(&"no-kernel-image"));
    // A healthy list of architectures is no failure.
    let listed = "CUDA error checks passed\n['sm_80', 'sm_86', 'sm_90', 'sm_120']\n";
    assert!(!ids(&pasted(listed)).contains(&"no-kernel-image"));
}

#[test]
fn libfabric_failures_are_named_for_libfabric_and_efa() {
    let av = "INFO: Function: ofi_init Line: 686: NET/OFI Selected Provider is efa\n\
              WARN: Function: create_nccl_ofi_component Line: 459: NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument\n\
              [ 1632.420957] infiniband efa_0: Failed to allocate pd[-12]\n";
    let e = pasted(av);
    let f = finding_by_id(&e, "ofi-av-open");
    assert_eq!(f.occurrences, 2);
    assert!(f.title.contains("EFA") && f.cause.contains("libfabric"));
    assert!(!f.fix.contains("NCCL_SOCKET_IFNAME"));
    // A completion error quoted by PyTorch (no `NCCL WARN`, the request's address between).
    let completion = "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n\
                      [rank3]: Last error:\n\
                      [rank3]: NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). Completed length: 0\n";
    let e = pasted(completion);
    assert!(finding_by_id(&e, "ofi-plugin-error")
        .cause
        .contains("libfabric"));
    assert_eq!(
        finding(&e, FindingKind::RemoteError).follows,
        Some("ofi-plugin-error")
    );
    // The plugin starting up is not a failure.
    let healthy = "h:1:2 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.9.1\n\
                   h:1:2 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)\n\
                   h:1:2 [0] NCCL INFO NET/OFI Creating one domain per process\n";
    let e = pasted(healthy);
    assert!(!ids(&e).contains(&"ofi-av-open") && !ids(&e).contains(&"ofi-plugin-error"));
}

#[test]
fn an_access_violation_on_a_queue_pair_is_the_cause_of_the_flushes_after_it() {
    let text = "s:1:2 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : local access violation work queue error\n\
                s:1:3 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 192.168.1.2<57888> with status=5 opcode=1 len=0 vendor err 249 (Recv)\n\
                s:1:3 [0] NCCL INFO transport/net.cc:1298 -> 6\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "ib-access-violation");
    assert!(f.cause.contains("IBV_EVENT_QP_ACCESS_ERR") && f.fix.contains("NCCL_DEBUG=INFO"));
    assert_eq!(e.findings[0].kind.as_str(), "ib-access-violation");
    let flush = finding(&e, FindingKind::IbCompletion);
    assert_eq!(flush.follows, Some("ib-access-violation"));
    assert!(e.unplaced.is_empty(), "{:?}", e.unplaced);
    // Another async event leaves the flushes' own reading alone.
    let other = text.replace("local access violation work queue error", "port active");
    let e = pasted(&other);
    assert!(!ids(&e).contains(&"ib-access-violation"));
    assert_eq!(finding(&e, FindingKind::IbCompletion).follows, None);
}

#[test]
fn a_fabric_manager_log_that_refused_a_multicast_team_is_read() {
    let refused = "[Oct 31 2023 21:11:20] [INFO] [tid 527113] Received an inband message:  Message header details: magic Id:adbc request Id:3b79 status:0 type:2 length:46\n\
                   Message payload details:Team setup request: Allocation Size:60000000 Flags:0 Number of GPUs:6\n\
                   [Oct 31 2023 21:11:20] [ERROR] [tid 527118] failed to find the GPU handle 12766911663723876521 in the multicast team request setup 4285537028137661651.\n\
                   [Oct 31 2023 21:11:20] [INFO] [tid 526859] Sending inband response message:  Message header details: magic Id:adbc request Id:3b79 status:57 type:3 length:24\n";
    let inputs = [Input {
        name: "-",
        text: refused,
    }];
    assert!(is_explainable(&inputs));
    let e = pasted(refused);
    let f = finding_by_id(&e, "fabric-manager-multicast");
    assert!(f.cause.contains("NVLS") && f.fix.contains("NCCL_NVLS_ENABLE=0"));
    // A team set up (status 0) and its response: nothing to say.
    let healthy = "[Oct 31 2023 21:10:07] [INFO] [tid 1] Received an inband message: Team setup request: Number of GPUs:8\n\
                   [Oct 31 2023 21:10:07] [INFO] [tid 1] Sending inband response message: status:0 type:3\n";
    assert!(!ids(&pasted(healthy)).contains(&"fabric-manager-multicast"));
}

#[test]
fn nccl_2_3_without_an_active_ib_port_goes_over_sockets() {
    let ipoib = "gpu2:1:1 [0] NCCL INFO NET : Using interface ib0:12.12.12.102<0>\n\
                 gpu2:1:1 [0] NCCL INFO NET/IB : Using interface ib0 for sideband communication\n\
                 gpu2:1:1 [0] NCCL INFO Using internal Network Socket\n\
                 NCCL version 2.3.7+cuda9.0\n";
    let e = pasted(ipoib);
    assert_eq!(e.networks, ["Socket"]);
    // The sideband line names an IP interface, not an IB device.
    assert!(e.interfaces.iter().all(|i| i.source != "NET/IB"));
    let f = finding(&e, FindingKind::IbNoDevice);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.contains("sockets") && f.cause.contains("IPoIB"));
    assert!(!ids(&e).contains(&"init-stops"));
    // Over eth0 on one host it is a note, and the stop is still read.
    let eth = "a:1:1 [0] INFO NET/IB : Using interface eth0 for sideband communication\n\
               a:1:1 [0] INFO Using internal Network Socket\n";
    let e = pasted(eth);
    assert_eq!(
        finding(&e, FindingKind::IbNoDevice).severity,
        Severity::Info
    );
    assert!(finding(&e, FindingKind::IbNoDevice)
        .cause
        .contains("`NET/IB : Using"));
    assert!(ids(&e).contains(&"init-stops"));
    // IB found its port: nothing to say.
    let ib = "a:1:1 [0] NCCL INFO NET/IB : Using interface ib0 for sideband communication\n\
              a:1:1 [0] NCCL INFO NET/IB: [0] mlx5_0:1/IB\n\
              a:1:1 [0] NCCL INFO Using internal Network IB\n";
    assert!(!ids(&pasted(ib)).contains(&"ib-no-device"));
}

#[test]
fn a_socket_interface_on_127_0_0_1_names_the_address_nccl_keeps() {
    let lo = "axa:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n\
              axa:1:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n\
              axa:1:2 [0] NCCL INFO Using network Socket\n\
              axa:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lo'\n";
    let e = pasted(lo);
    let f = finding(&e, FindingKind::SocketInterfaceVirtual);
    assert!(f.cause.contains("127.0.0.1") && f.cause.contains("first address"));
    // Sockets never carry GPU memory directly: their `Disabled` line is no finding.
    assert!(!ids(&e).contains(&"gdr-disabled"));
    // A virtual interface without a loopback address says nothing of it.
    let docker = "h:1:2 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>\n";
    let e = pasted(docker);
    let f = finding(&e, FindingKind::SocketInterfaceVirtual);
    assert!(!f.cause.contains("first address"));
    // IB's own line still warns.
    let ib = "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n";
    assert!(ids(&pasted(ib)).contains(&"gdr-disabled"));
}

#[test]
fn a_one_gpu_test_that_stops_names_the_cuda_its_driver_supports() {
    let head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
                # Using devices\n\
                #  Rank  0 Group  0 Pid 3447253 on host device  0 [0x00] NVIDIA A10\n\
                host:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.26.217.142<0>\n";
    let old = format!("{head}host:1:1 [0] NCCL INFO cudaDriverVersion 11040\n");
    let f = finding(&pasted(&old), FindingKind::TestsHangInit).clone();
    assert!(f.cause.contains("The driver supports CUDA 11.4 at most"));
    assert!(f.fix.contains("driver supports the CUDA"));
    let f = finding(&pasted(head), FindingKind::TestsHangInit).clone();
    assert!(!f.cause.contains("cudaDriverVersion"));
    // A test that printed its rows did not stop.
    let ran = format!(
        "{old}           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n\
         # Avg bus bandwidth    : 0.0\n"
    );
    assert!(!ids(&pasted(&ran)).contains(&"tests-hang-init"));
}

#[test]
fn a_refused_registration_quoted_twice_is_one_finding_and_ucxs_is_not_nccls() {
    let warn = "h:1:2 [0] misc/ibvwrap.cc:122 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n\
                RuntimeError: NCCL error: unhandled system error\n\
                Last error:\nCall to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n";
    let e = pasted(warn);
    let memlock = ids(&e).iter().filter(|i| **i == "ib-memlock").count();
    assert_eq!(memlock, 1, "{:?}", ids(&e));
    // The same words quoted alone are read too.
    let alone = pasted(
        "startup fails:\nCall to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n",
    );
    assert_eq!(ids(&alone), ["ib-memlock"]);
    // UCX's registration under mpirun is MPI's.
    let ucx = pasted("mpirun -np 2 ./all_reduce_perf\n\
                      ib_md.c:309 UCX  ERROR ibv_reg_mr(address=0x7f, length=4096) failed: Cannot allocate memory\n");
    assert_eq!(ids(&ucx), ["mpi-ucx-error"]);
    // A UCX error with no MPI in the text (NIXL, NCCL's UCX plugin) is not MPI's.
    let nixl = pasted(
        "vllm worker: ucp_context.c:1 UCX  ERROR no active messages transport to <no debug data>\n",
    );
    assert!(!ids(&nixl).contains(&"mpi-ucx-error"), "{:?}", ids(&nixl));
}

#[test]
fn nccls_own_p2p_failure_is_not_blamed_on_the_frameworks_all_reduce() {
    let vllm = "WARNING custom_all_reduce.py:1 Custom allreduce is disabled because your platform lacks GPU P2P capability\n\
                h:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'\n";
    assert!(!ids(&pasted(vllm)).contains(&"custom-allreduce-no-p2p"));
    let trt = "[TensorRT-LLM][ERROR] CUDA runtime error in error: peer access is not supported between these two devices\n";
    assert_eq!(ids(&pasted(trt)), ["custom-allreduce-no-p2p"]);
}

#[test]
fn a_wrong_result_alone_is_not_a_hang() {
    let text = format!("{HEALTHY}# Out of bounds values : 4 FAILED\n");
    let e = pasted(&text);
    assert!(ids(&e).contains(&"tests-wrong"), "{:?}", ids(&e));
    assert!(!ids(&e).contains(&"tests-hang-init"), "{:?}", ids(&e));
    // hypercube_perf's note comes only where the failing run is hypercube_perf.
    let make = format!("Linking ../build/hypercube_perf\n{text}");
    assert!(!pasted(&make)
        .findings
        .iter()
        .any(|f| f.fix.contains("hypercube_perf")));
    let run = format!("./hypercube_perf -b 8 -e 8g -f 2 -g 4\n{text}");
    let e = pasted(&run);
    let f = finding_by_id(&e, "tests-wrong");
    assert!(f.fix.contains("all_reduce_perf"), "{}", f.fix);
}

/// The socket-interface rule on a log of several hosts, as explain calls it there.
fn oob_rule(text: &str) -> Finding {
    let log = parse(text);
    socket_interface_rule(&log.interfaces, &log.env, true).unwrap()
}

#[test]
fn an_ib_transport_whose_oob_interface_is_lo_is_a_loopback_finding() {
    // The IB transport's out-of-band interface on lo: a peer on another host cannot
    // reach it to exchange queue-pair details. A note where one host is named: a run
    // on one host put onto NET/IB connects over lo all the same.
    let oob_lo = "a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB lo:127.0.0.1<0>\n";
    let f = oob_rule(oob_lo);
    assert_eq!(
        (f.kind, f.severity),
        (FindingKind::SocketInterfaceVirtual, Severity::Info)
    );
    let two_hosts = format!(
        "{oob_lo}b:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB lo:127.0.0.1<0>\n"
    );
    let f = oob_rule(&two_hosts);
    assert_eq!(
        (f.kind, f.severity),
        (FindingKind::SocketInterfaceVirtual, Severity::Warning)
    );
    assert!(
        f.cause.contains("includes lo (loopback or virtual"),
        "{}",
        f.cause
    );
    assert!(
        f.cause.contains("Its address there is 127.0.0.1"),
        "{}",
        f.cause
    );
    assert_eq!(
        f.evidence,
        ["line 1: NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB lo:127.0.0.1<0>"]
    );
}
