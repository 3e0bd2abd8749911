//! Tests of the rules written from blind set 25: the NET id 0 bug at 2.25.1, PyTorch's
//! c10d client dialling a Docker bridge address, an EFA peer whose queue pair is gone,
//! ibv_create_qp under a low memlock limit, a timeout right after a training epoch, a
//! rank waiting for rank 0's ncclUniqueId, and an NVLSTree figure read, not refused.
//! Each both ways: the failure, and a near miss it leaves alone.

use super::*;

#[test]
fn net_id_0_at_2_25_1_is_the_known_bug_not_a_log_that_stops() {
    let text = "graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order\n\
                graph/topo.h:230 NCCL WARN Could not find NET with id 0\n\
                torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3376, internal error - please report this issue to the NCCL developers, NCCL version 2.25.1\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "known-bug");
    assert!(f.fix.contains("2.27.3"), "{}", f.fix);
    // PyTorch's internal error follows from the bug.
    let other = e
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::OtherError);
    assert_eq!(other.and_then(|f| f.follows), Some("known-bug"));
    // At a release with the fix, the same line is not that bug, and the internal
    // error is still an error: not "no error", as a log that stops would say.
    let fixed = pasted(&text.replace("NCCL version 2.25.1", "NCCL version 2.27.3"));
    let found = ids(&fixed);
    assert!(
        !found.contains(&"known-bug") && !found.contains(&"init-stops"),
        "{found:?}"
    );
    assert!(found.contains(&"other-error"), "{found:?}");
}

#[test]
fn a_c10d_client_dialling_a_docker_bridge_address_asks_for_host_networking() {
    let text = "(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to connect to (172.17.0.2\n\
                , 44737).\n";
    let f = finding_by_id(&pasted(text), "docker-bridge-address").clone();
    assert!(f.cause.contains("c10d") && f.cause.contains("172.17.0.2"));
    assert!(f.fix.contains("host networking") && f.fix.contains("MASTER_ADDR"));
    // A routable address: the bridge is not the problem.
    let routable = text.replace("172.17.0.2", "10.0.1.74");
    assert!(!ids(&pasted(&routable)).contains(&"docker-bridge-address"));
    // No sign of a second host: containers of one host reach each other's bridge.
    let alone = text.replace("(RayWorkerVllm pid=207931, ip=10.0.1.75) ", "");
    assert!(!ids(&pasted(&alone)).contains(&"docker-bridge-address"));
    // The exception's own words, without `[c10d]`, in a two-node job.
    let thrown = "torchrun --nnodes=2 --nproc_per_node=8 train.py\n\
                  torch.distributed.DistNetworkError: The client socket has timed out after 600s while trying to connect to (172.17.0.2, 29500).\n";
    assert!(ids(&pasted(thrown)).contains(&"docker-bridge-address"));
    // c10d's warning that IPv6 is missing is no failure.
    let warning = "(RayWorkerVllm pid=1, ip=10.0.1.75) [W socket.cpp:767] [c10d] The client socket cannot be initialized to connect to [::ffff:172.17.0.2]:29500 (errno: 97 - Address family not supported by protocol).\n";
    assert!(!ids(&pasted(warning)).contains(&"docker-bridge-address"));
    // NCCL's own connect to a bridge address still says NCCL.
    let nccl = "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.3<43551> failed : Connection refused\n";
    let f = finding_by_id(&pasted(nccl), "docker-bridge-address").clone();
    assert!(
        f.cause.contains("The address NCCL connects to"),
        "{}",
        f.cause
    );
}

#[test]
fn an_efa_queue_pair_that_is_gone_points_at_the_peer_that_exited() {
    let text = "[1,2]<stdout>:w0:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f08c0001d30 completed with error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: fi_addr_efa://[fe80::1]:0:6571\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "efa-peer-gone");
    assert!(f.fix.contains("OOMKilled") && f.cause.contains("crashed peer"));
    assert!(!ids(&e).contains(&"ofi-plugin-error"));
    // Another completion error is the plugin's, as before.
    let other = text.replace(
        "Invalid receiver queue pair number (QPN)",
        "Unexpected status received from remote",
    );
    let found = ids(&pasted(&other));
    assert!(found.contains(&"ofi-plugin-error") && !found.contains(&"efa-peer-gone"));
}

#[test]
fn ibv_create_qp_failing_reads_as_the_memlock_limit() {
    let text = "hai:3778851:3779883 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed\n\
                hai:3778851:3779883 [4] NCCL INFO ib_plugin.c:196 -> 2\n";
    let f = finding_by_id(&pasted(text), "ib-error").clone();
    assert!(f.cause.contains("ulimit -l") && f.fix.contains("LimitMEMLOCK=infinity"));
    assert!(!f.fix.contains("NCCL_IB_GID_INDEX"), "{}", f.fix);
    // NCCL 2.19+ names ENOMEM: the same reading.
    let enomem = text.replace("failed", "failed with error Cannot allocate memory");
    let f = finding_by_id(&pasted(&enomem), "ib-error").clone();
    assert!(f.cause.contains("locked-memory limit"), "{}", f.cause);
    // Another errno is not the limit.
    let einval = text.replace("failed", "failed with error Invalid argument");
    let f = finding_by_id(&pasted(&einval), "ib-error").clone();
    assert!(!f.cause.contains("locked-memory limit"), "{}", f.cause);
}

#[test]
fn a_timeout_right_after_a_training_epoch_names_the_checkpoint() {
    let timeout = "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: \
                   WorkNCCL(SeqNum=15037, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=4, Timeout(ms)=600000) \
                   ran for 600055 milliseconds before timing out.\n";
    let bar = "1|16|Loss: 2.572175979614258: 100%|██████████| 16/16\n";
    let f = finding_by_id(&pasted(&format!("{bar}{timeout}")), "torch-timeout").clone();
    assert!(f.cause.contains("saves a checkpoint"), "{}", f.cause);
    // A bar that finished loading, one after the timeout, another finished bar, or
    // the next epoch under way says nothing of an epoch's end.
    let loaded = "Loading checkpoint shards: 100%|██████████| 38/38\n";
    let graphs = "Capturing CUDA graph shapes: 100%|██████████| 67/67 [00:25<00:00, 2.65it/s]\n";
    let next = "Epoch 2:  37%|███▋      | 185/500 [03:40<06:15, 1.2it/s]\n";
    for text in [
        format!("{loaded}{timeout}"),
        format!("{timeout}{bar}"),
        format!("{graphs}{timeout}"),
        format!("{bar}{next}{timeout}"),
    ] {
        let f = finding_by_id(&pasted(&text), "torch-timeout").clone();
        assert!(!f.cause.contains("training bar"), "{}", f.cause);
    }
}

#[test]
fn a_rank_waiting_for_rank_0s_unique_id_points_at_rank_0() {
    let text = "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n";
    let f = finding_by_id(&pasted(text), "torch-unique-id-timeout").clone();
    assert!(f.cause.contains("rank 0") && f.fix.contains("same order"));
    // The store gone (rank 0's process died) is not a wait that timed out.
    let reset = text.replace("Socket Timeout", "Connection reset by peer");
    assert!(!ids(&pasted(&reset)).contains(&"torch-unique-id-timeout"));
    // A store that cannot be reached at all is another failure.
    let unreachable = "[E socket.cpp:922] [c10d] The client socket has timed out after 600s while trying to connect to (10.0.0.1, 29500).\n";
    assert!(!ids(&pasted(unreachable)).contains(&"torch-unique-id-timeout"));
}

#[test]
fn an_nvlstree_figure_is_read_not_refused() {
    let input = |text| Input { name: "-", text };
    assert!(is_explainable(&[input(
        "NVLSTree:\n4/8/16 Nodes ==> 200GBps +\n"
    )]));
    assert!(!is_explainable(&[input(
        "Tree:\n4/8/16 Nodes ==> 200GBps +\n"
    )]));
}
