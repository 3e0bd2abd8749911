//! Tests of the rules written from blind set 17: an RDMA plugin with no IB device, the
//! OFI plugin finding no provider, GPUs of a data-center node joined by SHM only, IB
//! connections without GPUDirect RDMA, network plugins that differ between the hosts of
//! one file, nccl-tests' device picked by host name, and CUDA IPC between processes
//! that each see one GPU. Each both ways: the failure, and a near miss it leaves alone.

use super::*;

#[test]
fn an_rdma_plugin_with_no_ib_device_says_how_to_make_rdma_visible() {
    let text = "h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)\n\
                h:1:2 [0] NCCL INFO P2P plugin IBext\n\
                h:1:2 [0] NCCL INFO NET/IB : No device found.\n\
                h:1:2 [0] NCCL INFO NET/Socket : Using [0]ens5f0np0:10.0.0.1<0>\n\
                h:1:2 [0] NCCL INFO Using network Socket\n";
    let f = finding_by_id(&pasted(text), "ib-no-device").clone();
    assert!(f.fix.contains("/dev/infiniband"), "{}", f.fix);
    // One host and only the plugin to say IB was expected (NGC images load it on
    // single-node machines too): a note. A job that spans hosts: a warning.
    assert_eq!(f.severity, Severity::Info);
    let two = format!("{text}{}", text.replace("h:1:", "g:7:"));
    assert_eq!(
        finding_by_id(&pasted(&two), "ib-no-device").severity,
        Severity::Warning
    );
    // No plugin, one host, no IB asked for: sockets are NCCL's choice, nothing to say.
    let plain = text
        .lines()
        .filter(|l| !l.contains("plugin"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!ids(&pasted(&plain)).contains(&"ib-no-device"));
}

#[test]
fn the_ofi_plugin_finding_no_provider_names_the_devices_and_fi_info() {
    let text = "find_ofi_provider:543 NCCL WARN NET/OFI Couldn't find any optimal provider\n";
    let f = finding_by_id(&pasted(text), "ofi-no-efa").clone();
    assert!(f.fix.contains("/dev/infiniband") && f.fix.contains("fi_info"));
    assert!(!ids(&pasted("NET/OFI Using provider efa\n")).contains(&"ofi-no-efa"));
}

/// Two GPUs of a node joined by SHM, on a node whose NET/IB lists HCAs.
const SHM_ONLY: &str =
    "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/IB [RO]; OOB ib0:10.0.0.1<0>\n\
    h:1:2 [0] NCCL INFO Channel 00 : 0[27000] -> 1[2a000] via SHM/direct/direct\n\
    h:1:3 [1] NCCL INFO Channel 00 : 1[2a000] -> 0[27000] via SHM/direct/direct\n";

#[test]
fn gpus_of_a_data_center_node_joined_by_shm_only_point_at_the_p2p_settings() {
    let f = finding_by_id(&pasted(SHM_ONLY), "shm-instead-of-p2p").clone();
    assert!(f.fix.contains("NCCL_P2P_LEVEL") && f.cause.contains("SHM"));
    assert_eq!(f.severity, Severity::Info);
    // The setting NCCL shows is named in the cause, with no HCA needed.
    let set = format!(
        "h:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n{}",
        SHM_ONLY.lines().skip(1).collect::<Vec<_>>().join("\n")
    );
    let f = finding_by_id(&pasted(&set), "shm-instead-of-p2p").clone();
    assert!(f.cause.contains("NCCL_P2P_LEVEL=LOC"), "{}", f.cause);
    // A P2P connection beside them, or SHM on a node with no HCA and no setting (GeForce
    // cards, VMs): nothing to say.
    let with_p2p =
        format!("{SHM_ONLY}h:1:2 [0] NCCL INFO Channel 01 : 0[27000] -> 1[2a000] via P2P/IPC\n");
    let no_hca = SHM_ONLY.lines().skip(1).collect::<Vec<_>>().join("\n");
    // NCCL_P2P_LEVEL=SYS allows P2P everywhere: no setting to blame.
    let sys = set.replace("to LOC", "to SYS");
    for near in [&with_p2p, &no_hca, &sys] {
        assert!(
            !ids(&pasted(near)).contains(&"shm-instead-of-p2p"),
            "{near}"
        );
    }
}

#[test]
fn ib_connections_without_gdrdma_point_at_the_peer_memory_module() {
    let text = "h:1:1 [5] NCCL INFO Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3\n\
                h:1:2 [4] NCCL INFO Channel 03/0 : 13[5] -> 4[4] [receive] via NET/IB/3\n";
    let f = finding_by_id(&pasted(text), "gdr-unused").clone();
    assert!(f.fix.contains("nvidia-peermem") && f.cause.contains("2 IB connection"));
    assert_eq!(f.severity, Severity::Warning);
    // NCCL says GPUDirect is enabled for the HCAs: the module is there, the GPU-NIC
    // distance is why.
    let enabled =
        format!("h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n{text}");
    let f = finding_by_id(&pasted(&enabled), "gdr-unused").clone();
    assert!(
        f.cause.contains("module is loaded")
            && f.fix.contains("topo")
            && !f.fix.contains("modprobe"),
        "{}",
        f.fix
    );
    // Beside an error it is a note, not the cause.
    let failed = format!(
        "{text}h:1:2 [4] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer \
         10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n"
    );
    assert_eq!(
        finding_by_id(&pasted(&failed), "gdr-unused").severity,
        Severity::Info
    );
    // GPUDirect on the receive side, only send lines (reads can be off by default), or
    // NCCL's own line saying it is disabled (gdr-disabled reads that), or a run that set
    // where GPUDirect applies: not this finding.
    let gdr = text.replace("[receive] via NET/IB/3", "[receive] via NET/IB/3/GDRDMA");
    let sends = text.lines().next().unwrap_or_default().to_string();
    let disabled =
        format!("h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n{text}");
    let chosen =
        format!("h:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to LOC\n{text}");
    for near in [&gdr, &sends, &disabled, &chosen] {
        assert!(!ids(&pasted(near)).contains(&"gdr-unused"), "{near}");
    }
}

#[test]
fn hosts_of_one_file_that_load_different_net_plugins_are_named() {
    let text = "node-11:1:2 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n\
                node-04:3:4 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n";
    let f = finding_by_id(&pasted(text), "plugins-differ").clone();
    assert!(
        f.cause.contains("libnccl-net.so on node-04") && f.cause.contains("network on node-11"),
        "{}",
        f.cause
    );
    let same = text.replace("node-11", "node-04");
    let both = format!(
        "{}node-11:1:2 [5] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n",
        text.lines().nth(1).unwrap_or_default()
    );
    for near in [&same, &both] {
        assert!(!ids(&pasted(near)).contains(&"plugins-differ"), "{near}");
    }
}

#[test]
fn nccl_tests_asking_for_a_gpu_it_lacks_under_mpirun_checks_host_names() {
    let text = "mpirun -np 16 -H a:8,b:8 all_reduce_perf -g 1\n\
                [1,13]<stdout>:a: Test CUDA failure common.cu:732 'invalid device ordinal'\n";
    let f = finding_by_id(&pasted(text), "invalid-device-ordinal").clone();
    assert!(
        f.fix.contains("hostname") && f.fix.contains("nvidia-smi -L"),
        "{}",
        f.fix
    );
    // One node under srun: what each task sees, not host names.
    let one = "$ srun -N 1 -n 4 ./all_reduce_perf -g 1\n\
               node01: Test CUDA failure common.cu:892 'invalid device ordinal'\n";
    let f = finding_by_id(&pasted(one), "invalid-device-ordinal").clone();
    assert!(
        !f.fix.contains("hostname") && f.cause.contains("CUDA_VISIBLE_DEVICES"),
        "{}",
        f.cause
    );
    // A program of its own, not nccl-tests: the local rank words.
    let own = "mpirun -np 2 python train.py\nRuntimeError: CUDA error: invalid device ordinal\n";
    let f = finding_by_id(&pasted(own), "invalid-device-ordinal").clone();
    assert!(
        !f.fix.contains("hostname") && f.fix.contains("local rank"),
        "{}",
        f.fix
    );
}

#[test]
fn cuda_ipc_failing_between_processes_that_each_show_device_0_is_an_identity() {
    let text = "HOST:2:3 [0] transport/p2p.cu:548 NCCL WARN failed to open CUDA IPC handle : 64 peer access is not supported between these two devices\n\
                HOST:4:5 [0] NCCL INFO Ring 00 : 0[0] -> 1[0] via P2P/IPC\n\
                HOST:2:3 [0] NCCL INFO Ring 00 : 1[0] -> 0[0] via P2P/IPC\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "host-identity").clone();
    assert!(
        f.cause.contains("CUDA_VISIBLE_DEVICES") && f.fix.contains("see all its GPUs"),
        "{}",
        f.cause
    );
    // The CUDA failure follows from it and is listed after it.
    assert_eq!(ids(&e)[0], "host-identity", "{:?}", ids(&e));
    assert_eq!(
        finding_by_id(&e, "cuda-failure").follows,
        Some("host-identity")
    );
    // Every process on device 0 with no IPC failure (before 2.5 the brackets are CUDA
    // devices): nothing to say.
    let fine = text.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert!(!ids(&pasted(&fine)).contains(&"host-identity"));
    // Two ranks on one bus id and a CUDA failure of their own: the failure keeps its
    // remedies, and the identity stays a warning.
    let launch = "h:10:20 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1b000] via P2P/IPC\n\
                  h:11:21 [0] NCCL INFO Channel 00 : 1[1b000] -> 2[1c000] via P2P/IPC\n\
                  h:12:22 [1] NCCL INFO Channel 00 : 2[1c000] -> 0[1b000] via P2P/IPC\n\
                  h:12:22 [1] enqueue.cc:215 NCCL WARN Cuda failure 'unspecified launch failure'\n";
    let e = pasted(launch);
    assert_eq!(finding_by_id(&e, "cuda-failure").follows, None);
    assert_eq!(
        finding_by_id(&e, "host-identity").severity,
        Severity::Warning
    );
}
