//! Tests of the rules written from blind set 21: NCCL's invalid usage, a CUDA failure in
//! NVLS set-up, a P2P/CUMEM import that fails, EFA's event queue out of memory,
//! cuda-gdb's report of peer access already enabled, and ranks at different sequence
//! numbers of the same collective. Each both ways: the failure, and a near miss it
//! leaves alone.

use super::*;

#[test]
fn invalid_usage_points_at_nccl_debug_and_the_gpus() {
    let text = "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n";
    let f = finding_by_id(&pasted(text), "nccl-invalid-usage").clone();
    assert!(f.fix.contains("NCCL_DEBUG=WARN") && f.fix.contains("CUDA_VISIBLE_DEVICES"));
    // Two ranks on one GPU explain it.
    let dup = format!(
        "h:1:2 [0] init.cc:1 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n{text}"
    );
    let e = pasted(&dup);
    assert_eq!(
        finding_by_id(&e, "nccl-invalid-usage").follows,
        Some("duplicate-gpu")
    );
    let other = "RuntimeError: NCCL error: unhandled system error\n";
    // A list of NCCL's result codes names it without NCCL returning it.
    let listed =
        "ncclResult_t: ncclSuccess, ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError\n";
    for near in [other, listed] {
        assert!(
            !ids(&pasted(near)).contains(&"nccl-invalid-usage"),
            "{near}"
        );
    }
    // nccl-tests' wording, and NCCL 2.30's for two ranks on one GPU.
    let tests =
        "h: Test NCCL failure common.cu:1 'invalid usage (run with NCCL_DEBUG=WARN for details)'\n";
    assert!(ids(&pasted(tests)).contains(&"nccl-invalid-usage"));
    let shared = "h:1:2 [0] init.cc:1 NCCL WARN Multiple ranks detected using the same GPU\n";
    assert!(ids(&pasted(shared)).contains(&"duplicate-gpu"));
}

#[test]
fn an_initialization_error_in_nvls_set_up_alone_points_at_nvls() {
    let text = "h:1:2 [2] transport/nvls.cc:246 NCCL WARN Cuda failure 3 'initialization error'\n";
    let f = finding_by_id(&pasted(text), "nvls-setup-cuda").clone();
    assert!(f.fix.contains("NCCL_NVLS_ENABLE=0") && f.fix.contains("spawn"));
    // The same error outside NVLS, or where CUDA failed to start everywhere (cudawrap.cc
    // too): not NVLS's.
    let other = "h:1:2 [2] transport/p2p.cc:246 NCCL WARN Cuda failure 3 'initialization error'\n";
    let everywhere = format!(
        "h:1:2 [2] misc/cudawrap.cc:90 NCCL WARN Cuda failure 3 'initialization error'\n{text}"
    );
    for near in [other.to_string(), everywhere] {
        assert!(!ids(&pasted(&near)).contains(&"nvls-setup-cuda"), "{near}");
    }
}

#[test]
fn a_p2p_cumem_import_that_fails_points_at_cumem() {
    let failed = "h:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid argument'\n";
    let text = format!("h:1:3 [1] NCCL INFO Channel 20/0 : 1[1] -> 0[0] via P2P/CUMEM\n{failed}");
    let f = finding_by_id(&pasted(&text), "p2p-cumem-import").clone();
    assert!(f.fix.contains("NCCL_CUMEM_ENABLE=0"), "{}", f.fix);
    // Without cuMem's connections, or in a weight-sync group (its own finding): not this.
    let ipc = text.replace("P2P/CUMEM", "P2P/IPC");
    let sync = format!("{text}(LLMRayActor pid=1) ERROR Error executing method update_weight.\n");
    for near in [ipc, sync] {
        assert!(!ids(&pasted(&near)).contains(&"p2p-cumem-import"), "{near}");
    }
}

#[test]
fn efas_event_queue_out_of_memory_is_the_locked_memory_limit() {
    let text =
        "[0]:Unable to write to EQ: Missing or unavailable event queue. err: Unknown error -12 \
                (-12) prov_errno: Unknown error -12 (-12) prov/efa/src/rxr/rxr.h:993\n";
    let f = finding_by_id(&pasted(text), "efa-memlock").clone();
    assert!(f.fix.contains("ulimit -l"), "{}", f.fix);
    let other = text.replace("-12", "-120");
    assert!(!ids(&pasted(&other)).contains(&"efa-memlock"));
}

#[test]
fn cuda_gdbs_peer_access_already_enabled_is_no_failure() {
    let text = "warning: Cuda API error detected: cudaDeviceEnablePeerAccess returned (0x2c0)\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "cuda-gdb-peer-access").clone();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.cause.contains("already enabled"), "{}", f.cause);
    let other = "warning: Cuda API error detected: cudaDeviceEnablePeerAccess returned (0xd9)\n";
    assert!(!ids(&pasted(other)).contains(&"cuda-gdb-peer-access"));
}

#[test]
fn ranks_at_different_sequence_numbers_were_not_in_step() {
    let line = |rank: u32, seq: u32, numel: u32| {
        format!(
            "[rank{rank}]:[E1123 00:52:57.66 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught \
             collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, \
             NumelOut={numel}, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
        )
    };
    let apart = format!("{}{}", line(0, 1516, 25427968), line(1, 1517, 1));
    let f = finding_by_id(&pasted(&apart), "torch-mismatch").clone();
    assert!(
        f.cause.contains("SeqNum=1516") && f.cause.contains("SeqNum=1517"),
        "{}",
        f.cause
    );
    // Every rank in the same collective, ranks at different numbers of one collective of
    // one size, or one rank in two process groups: not ranks out of step.
    let together = format!("{}{}", line(0, 1516, 25427968), line(1, 1516, 25427968));
    let same_size = format!("{}{}", line(0, 1516, 1), line(1, 1517, 1));
    let groups = format!("{}{}", line(0, 2001, 25427968), line(0, 57, 1));
    for near in [together, same_size, groups] {
        assert!(!ids(&pasted(&near)).contains(&"torch-mismatch"), "{near}");
    }
}
