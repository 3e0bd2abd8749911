//! Tests of the rules written from blind set 24: P2P set-up failing between hosts NCCL
//! joined over multi-node NVLink, NVML unable to see a peer's GPU at init, a /dev/shm
//! error wrapped mid-errno, a bootstrap failure the application reports only as a
//! system error, an exclusion list that leaves no interface, and PyTorch's watchdog
//! stopping on a CUDA error. Each both ways: the failure, and a near miss it leaves alone.

use super::*;

/// Two pods with their own host names that NCCL joined (or not) over MNNVL, then a
/// failed P2P connection.
fn two_pods(mnnvl: &str, nnodes: &str) -> String {
    format!(
        "pod-0:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n\
         pod-0:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:192.168.33.51<0>\n\
         pod-0:1:1 [0] NCCL INFO comm 0x2 rank 0 nRanks 2 nNodes {nnodes} localRanks 2 localRank 0 MNNVL {mnnvl}\n\
         pod-1:1:1 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes {nnodes} localRanks 2 localRank 1 MNNVL {mnnvl}\n\
         pod-0:1:92 [0] NCCL INFO transport/p2p.cc:352 -> 1\n\
         pod-0:1:92 [0] NCCL INFO transport.cc:197 -> 1\n"
    )
}

#[test]
fn p2p_failing_between_hosts_joined_over_mnnvl_points_at_imex() {
    let e = pasted(&two_pods("1", "1"));
    let f = finding_by_id(&e, "mnnvl-p2p-setup");
    assert!(f.fix.contains("IMEX") && f.fix.contains("NCCL_MNNVL_ENABLE=0"));
    // One NVLink domain: no network between the hosts, so no IB or interface advice.
    let found = ids(&e);
    assert!(!found.contains(&"ib-no-device"), "{found:?}");
    assert!(!found.contains(&"socket-interface-ambiguous"), "{found:?}");
    // Without MNNVL, or with it across two of NCCL's nodes, the hosts talk over the
    // network: neither the finding nor the silence.
    for (mnnvl, nnodes) in [("0", "2"), ("0", "1"), ("1", "2")] {
        let found = ids(&pasted(&two_pods(mnnvl, nnodes)));
        assert_eq!(
            found.contains(&"mnnvl-p2p-setup"),
            mnnvl == "1",
            "{mnnvl} {nnodes}: {found:?}"
        );
        assert!(
            found.contains(&"ib-no-device"),
            "{mnnvl} {nnodes}: {found:?}"
        );
        assert!(
            found.contains(&"socket-interface-ambiguous"),
            "{mnnvl} {nnodes}: {found:?}"
        );
    }
    // A P2P buffer that did not fit is memory, not the fabric.
    let oom = two_pods("1", "1").replace(
        "pod-0:1:92 [0] NCCL INFO transport/p2p.cc:352 -> 1\n",
        "pod-0:1:92 [0] transport/p2p.cc:190 NCCL WARN Cuda failure 2 'out of memory'\n\
         pod-0:1:92 [0] NCCL INFO transport/p2p.cc:352 -> 1\n",
    );
    assert!(!ids(&pasted(&oom)).contains(&"mnnvl-p2p-setup"));
}

#[test]
fn nvml_not_seeing_a_peer_gpu_at_init_is_an_error_naming_containers() {
    let warn = "h:6896:7103 [1] misc/nvmlwrap.cc:187 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: Not Found\n";
    let fails = format!(
        "{warn}h:6896:7103 [1] NCCL INFO graph/xml.cc:850 -> 2\n\
         h:6896:7103 [1] NCCL INFO graph/topo.cc:696 -> 2\n"
    );
    let e = pasted(&fails);
    let f = finding_by_id(&e, "gpus-hidden-init-fails");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.cause.contains("pods") && f.fix.contains("one container or pod per node"));
    assert!(!ids(&e).contains(&"gpus-hidden-from-nvml"));
    // Without the trace lines (NCCL_DEBUG=WARN), the application's report says init failed.
    let reported = format!(
        "{warn}RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1333, unhandled system error\n"
    );
    assert!(ids(&pasted(&reported)).contains(&"gpus-hidden-init-fails"));
    // The warning alone, with init going on: the NVLink goes unused, init did not fail.
    let alone = pasted(warn);
    assert!(ids(&alone).contains(&"gpus-hidden-from-nvml"));
    assert!(!ids(&alone).contains(&"gpus-hidden-init-fails"));
}

#[test]
fn a_dev_shm_error_wrapped_mid_errno_is_still_no_space() {
    let text = "failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error. Last NCCL warning 'Error\n\
                while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No space\n\
                left on device (28)'.\n";
    assert!(ids(&pasted(text)).contains(&"shm-no-space"));
    // Another errno, wrapped the same way, is not ENOSPC.
    let other = text.replace(
        "error: No space\nleft on device (28)",
        "error: Permission\ndenied (13)",
    );
    assert!(!ids(&pasted(&other)).contains(&"shm-no-space"));
    // Too short a start to tell.
    let short = text.replace(
        "error: No space\nleft on device (28)",
        "error: No\nspace left",
    );
    assert!(!ids(&pasted(&short)).contains(&"shm-no-space"));
}

#[test]
fn a_bootstrap_failure_reported_only_as_a_system_error_names_the_interface() {
    let trace = "h:275204:275658 [4] NCCL INFO Bootstrap : Using eno2:66.181.42.143<0>\n\
                 h:275204:275658 [4] NCCL INFO misc/socket.cc:666 -> 2\n\
                 h:275204:275658 [4] NCCL INFO bootstrap.cc:280 -> 2\n";
    let report = "INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error\n";
    let e = pasted(&format!("{trace}{report}"));
    let f = finding_by_id(&e, "bootstrap-failed");
    assert!(f.title.contains("eno2"), "{}", f.title);
    // A WARN line with its own cause: that failure is the finding, not the bootstrap's.
    let warned = format!(
        "{trace}h:275204:275658 [4] misc/shmutils.cc:87 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888), error: No space left on device (28)\n{report}"
    );
    assert!(!ids(&pasted(&warned)).contains(&"bootstrap-failed"));
    // The system error quoting a peer that went away: not the interface's.
    let gone = format!(
        "{trace}INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error. Last NCCL warning(error) log entry (may be unrelated) 'socketProgress: Connection closed by remote peer h2<41234>'.\n"
    );
    assert!(!ids(&pasted(&gone)).contains(&"bootstrap-failed"));
    // One host in the log: `lo` is offered for a job that runs there alone.
    assert!(f.fix.contains("`lo` will do"), "{}", f.fix);
    let two =
        format!("{trace}h2:1:1 [0] NCCL INFO Bootstrap : Using eno2:66.181.42.144<0>\n{report}");
    let f = finding_by_id(&pasted(&two), "bootstrap-failed").clone();
    assert!(!f.fix.contains("`lo`"), "{}", f.fix);
}

#[test]
fn an_exclusion_list_is_said_to_leave_no_interface() {
    let said = |value: &str| {
        let text = format!(
            "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {value}\n\
             h:1:1 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found\n"
        );
        finding_by_id(&pasted(&text), "ifname-no-match").clone()
    };
    let excluded = said("^lo,docker,veth");
    assert!(
        excluded.title.contains("leaves no interface"),
        "{}",
        excluded.title
    );
    assert!(excluded.cause.contains("no socket interface"));
    let named = said("ens5");
    assert!(
        named.title.contains("matches no interface"),
        "{}",
        named.title
    );
    assert!(!named.cause.contains("excludes every interface"));
}

#[test]
fn the_watchdog_stopping_on_a_cuda_error_points_at_the_gpu_not_the_transport() {
    let text = "[E ProcessGroupNCCL.cpp:915] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: unknown error\n\
                For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n\
                Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n";
    let f = finding_by_id(&pasted(text), "torch-watchdog-cuda-error").clone();
    assert!(f.fix.contains("CUDA_LAUNCH_BLOCKING=1") && f.fix.contains("Xid"));
    assert!(f.cause.contains("driver"));
    // A collective that timed out is the watchdog's other stop, not this one.
    let timeout = "[E ProcessGroupNCCL.cpp:474] [Rank 1] Watchdog caught collective operation timeout: \
                   WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) \
                   ran for 1800108 milliseconds before timing out.\n";
    assert!(!ids(&pasted(timeout)).contains(&"torch-watchdog-cuda-error"));
    let stops = |exception: &str| {
        let line = format!(
            "[E ProcessGroupNCCL.cpp:915] [Rank 2] NCCL watchdog thread terminated with exception: {exception}\n"
        );
        ids(&pasted(&line)).contains(&"torch-watchdog-cuda-error")
    };
    assert!(stops(
        "CUDA error: an illegal memory access was encountered"
    ));
    // The timeout, NCCL's own CUDA error, and the model's assert are other stops.
    assert!(!stops("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE)"));
    assert!(!stops("NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"));
    assert!(!stops("CUDA error: device-side assert triggered"));
}
