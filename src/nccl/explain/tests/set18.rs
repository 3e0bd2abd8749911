//! Tests of the rules written from blind set 18: EFA out of locked memory, a libnccl.so.2
//! older than the program, IB set-up failing while it picks the RoCE GID, the first
//! collective timing out, a weight-sync group that mixes cuMem settings, and an invalid
//! device ordinal after a too-old driver, and (from its review) a RoCE GID type file that
//! does not open. Each both ways: the failure, and a near miss it leaves alone.

use super::*;

#[test]
fn efa_out_of_memory_for_its_queues_is_the_locked_memory_limit() {
    let text = "Libfabric error: (-12) Cannot allocate memory\n\
                EFA internal error: (4112) Failure to post internal receive buffers\n";
    let f = finding_by_id(&pasted(text), "efa-memlock").clone();
    assert!(f.fix.contains("ulimit -l"), "{}", f.fix);
    // The plugin that then fails to start follows from it.
    let cq = "libfabric:1:2::efa:cq:efa_cq_open():92<warn> Unable to create extended CQ: Cannot allocate memory\n\
              h:1:2 [5] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n";
    let e = pasted(cq);
    assert_eq!(ids(&e)[0], "efa-memlock", "{:?}", ids(&e));
    assert_eq!(finding_by_id(&e, "ofi-no-efa").follows, Some("efa-memlock"));
    // Another libfabric error, or the OFI plugin failing alone: not this finding.
    let other = "Libfabric error: (-22) Invalid argument\n";
    let alone = cq.lines().nth(1).unwrap_or_default();
    for near in [other, alone] {
        assert!(!ids(&pasted(near)).contains(&"efa-memlock"), "{near}");
    }
}

#[test]
fn an_nccl_symbol_missing_at_import_is_an_older_libnccl_loaded() {
    let text = "ImportError: /x/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree\n";
    let f = finding_by_id(&pasted(text), "nccl-symbol-missing").clone();
    assert!(f.fix.contains("nvidia-nccl") && f.title.contains("libnccl.so.2"));
    let other = "ImportError: /x/libfoo.so: undefined symbol: cudaFoo\n";
    assert!(!ids(&pasted(other)).contains(&"nccl-symbol-missing"));
}

/// A run that steers the RoCE GID choice and fails in NET/IB with no WARN.
const GID: &str = "p:1:2 [3] NCCL INFO NCCL_IB_ADDR_RANGE set by environment to 192.168.64.0/24\n\
    p:1:2 [3] NCCL INFO transport/net_ib.cc:282 -> 2\n\
    p:1:2 [3] NCCL INFO transport/net.cc:687 -> 2\n\
    p: Test NCCL failure common.cu:961 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n";

#[test]
fn an_ib_system_error_while_the_gid_choice_is_steered_points_at_show_gids() {
    let e = pasted(GID);
    let f = finding_by_id(&e, "ib-gid-selection").clone();
    assert!(f.fix.contains("show_gids") && f.fix.contains("NCCL_IB_GID_INDEX"));
    assert!(f.title.contains("NCCL_IB_ADDR_RANGE"), "{}", f.title);
    // The system error follows from it, without its usual suspects.
    let system = finding_by_id(&e, "system-error");
    assert_eq!(system.follows, Some("ib-gid-selection"));
    assert!(!system.fix.contains("ulimit"), "{}", system.fix);
    // A GID index named, a WARN before (its own finding says why), or no steering
    // variable: not this finding.
    let named = format!("p:1:2 [3] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3\n{GID}");
    let warned = GID.replace(
        "p:1:2 [3] NCCL INFO transport/net_ib.cc:282 -> 2",
        "p:1:2 [3] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_create_qp failed\n\
         p:1:2 [3] NCCL INFO transport/net_ib.cc:282 -> 2",
    );
    let plain = GID.lines().skip(1).collect::<Vec<_>>().join("\n");
    for near in [&named, &warned, &plain] {
        assert!(!ids(&pasted(near)).contains(&"ib-gid-selection"), "{near}");
    }
}

#[test]
fn the_first_collective_timing_out_points_at_the_path_between_the_gpus() {
    let line = watchdog_timeout;
    let f = finding_by_id(&pasted(&line(1)), "torch-timeout").clone();
    assert!(
        f.cause.contains("first collective") && f.cause.contains("driver"),
        "{}",
        f.cause
    );
    let later = finding_by_id(&pasted(&line(812)), "torch-timeout").clone();
    assert!(!later.cause.contains("first collective"), "{}", later.cause);
}

#[test]
fn a_weight_sync_group_failing_in_p2p_setup_is_a_cumem_mismatch() {
    let text = "(LLMRayActor pid=1) h:1:2 [0] transport/p2p.cc:272 NCCL WARN Cuda failure 'invalid argument'\n\
                (LLMRayActor pid=1) ERROR worker_base.py:148] Error executing method update_weight.\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "cumem-mixed-weight-sync").clone();
    assert!(f.fix.contains("NCCL_CUMEM_ENABLE"));
    // The same failure outside a weight-sync group: not this finding.
    let alone = "h:1:2 [0] transport/p2p.cc:272 NCCL WARN Cuda failure 'invalid argument'\n";
    assert!(!ids(&pasted(alone)).contains(&"cumem-mixed-weight-sync"));
}

#[test]
fn an_invalid_device_ordinal_after_a_too_old_driver_follows_from_it() {
    let text = "h:1:2 [0] NCCL INFO cudaDriverVersion 11020\n\
                h:1:2 [0] NCCL INFO NCCL version 2.9.8+cuda11.3\n\
                h:1:2 [0] enqueue.cc:802 NCCL WARN Cuda failure 'API call is not supported in the installed CUDA driver'\n\
                h:1:2 [0] init.cc:895 NCCL WARN Cuda failure 'invalid device ordinal'\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "invalid-device-ordinal").clone();
    assert_eq!(f.follows, Some("driver-too-old"), "{:?}", ids(&e));
    // Its own guess at a cause (the GPUs a process sees) gives way to the driver.
    let said = format!("{} {}", f.cause, f.fix);
    assert!(!said.contains("CUDA_VISIBLE_DEVICES"), "{said}");
    // Alone it is its own cause.
    let alone = text.lines().nth(3).unwrap_or_default();
    let f = finding_by_id(&pasted(alone), "invalid-device-ordinal").clone();
    assert_eq!(f.follows, None);
    let said = format!("{} {}", f.cause, f.fix);
    assert!(said.contains("CUDA_VISIBLE_DEVICES"), "{said}");
}

#[test]
fn a_gid_type_file_that_does_not_open_points_at_the_gid_index() {
    for errno in ["No such file or directory", "Permission denied"] {
        let text = format!(
            "h:1:1 [0] transport/net_ib.cc:472 NCCL WARN NET/IB: open failed in ncclIbRoceGetVersionNum: {errno}\n"
        );
        let e = pasted(&text);
        let f = finding_by_id(&e, "ib-roce-gid-type-missing").clone();
        assert!(f.fix.contains("NCCL_IB_GID_INDEX") && f.fix.contains("show_gids"));
        // Not the read failure's finding, whose fix is an upgrade.
        assert!(
            !ids(&e).contains(&"ib-roce-gid-type-unreadable"),
            "{:?}",
            ids(&e)
        );
    }
    let read =
        "h:1:1 [0] NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n";
    assert!(!ids(&pasted(read)).contains(&"ib-roce-gid-type-missing"));
}
