//! Tests of the rules that read what people paste, each both ways (the case it names
//! and a near miss it leaves alone): ranks and GPUs, addresses and interfaces, GPUDirect
//! RDMA, crashes, PyTorch's invalid arguments, nccl-tests builds, CUDA errors in SHM and
//! P2P, pods counted as nodes, one GPU that hangs.

use super::*;

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
    let f = finding(&e, FindingKind::IbMemlock);
    assert!(f.cause.contains("locked-memory limit") && f.fix.contains("ulimit -l unlimited"));
    assert!(f.cause.contains("ENOMEM") && !f.fix.contains("NCCL_IB_DISABLE"));
    let other = text.replace("Cannot allocate memory", "Invalid argument");
    let f = finding(&pasted(&[("-", &other)]), FindingKind::IbError).clone();
    assert!(!f.cause.contains("locked-memory limit"));
}

#[test]
fn nnodes_against_the_host_names_of_a_whole_communicator() {
    let log = |h0: &str, h1: &str, nodes: u32| {
        format!(
            "{h0}:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
             {h1}:3:4 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
             {h1}:3:4 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes {nodes} localRanks 1 localRank 0 MNNVL 0\n"
        )
    };
    // Two machines both named `user`: NCCL told them apart, the names do not.
    let shared = log("user", "user", 2);
    let e = pasted(&[("-", &shared)]);
    let f = finding(&e, FindingKind::NodesVsHosts);
    assert_eq!(f.severity, Severity::Info);
    assert!(f.cause.contains("several machines share a name"));
    // Two names, one node: an NCCL_HOSTID set alike (without it, multi-node NVLink).
    let without = log("a", "b", 1);
    assert!(!ids(&pasted(&[("-", &without)])).contains(&"nodes-vs-hosts"));
    let one = format!("{without}a:1:2 [0] NCCL INFO NCCL_HOSTID set by environment to rack1\n");
    let f = finding(&pasted(&[("-", &one)]), FindingKind::NodesVsHosts).clone();
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.fix.contains("NCCL_HOSTID"));
    // As many nodes as names, or a communicator the logs show only part of: nothing.
    assert!(!ids(&pasted(&[("-", &log("a", "b", 2))])).contains(&"nodes-vs-hosts"));
    let part: String = shared.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert!(!ids(&pasted(&[("-", &part)])).contains(&"nodes-vs-hosts"));
}

/// Healthy texts that once read as failures: a host named like a GPU, dmesg's PCIe bus
/// errors, a pip upgrade, GPUs told apart by bus id, NVLink across trays, GPUDirect
/// reads off while writes are on.
#[test]
fn healthy_texts_that_look_like_failures_raise_nothing() {
    let none = |text: &str, id: &str| {
        let e = pasted(&[("-", text)]);
        assert!(!ids(&e).contains(&id), "{id} in {:?} for {text}", ids(&e));
    };
    none(
        "thor:123:456 [0] NCCL INFO NCCL version 2.20.5+cuda12.2\n",
        "nccl-too-old-for-gpu",
    );
    // From 2.10 the topology tolerates a missing path and logs it as INFO (WSL2).
    none(
        "w:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         w:1:3 [0] NCCL INFO Could not find real path of /sys/class/pci_bus/0000:01/../../0000:01:00.0\n\
         w:1:3 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n",
        "topology-pci-path",
    );
    // A peer that died during set-up before 2.27.3 is a possibility for the bug, a
    // warning, never an error blaming it.
    let died = pasted(&[(
        "-",
        "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         h:1:2 [0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer 10.0.0.2<36138>\n\
         h:1:2 [0] NCCL INFO bootstrap.cc:701 -> 6\n",
    )]);
    assert!(died
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::KnownBug)
        .all(|f| f.severity == Severity::Warning && f.cause.contains("other ranks")));
    none(
        "[ 12.3] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer\nlibnccl.so.2 loaded\n",
        "shm-sigbus",
    );
    none(
        "Found existing installation: nvidia-nccl-cu12 2.20.5\nSuccessfully installed nvidia-nccl-cu12-2.21.5\n",
        "nccl-builds",
    );
    // 2.18.3+: the brackets are NVML indices, `[0]` in each 4-GPU container; the Init
    // lines' bus ids differ.
    none(
        "h:1:9 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE\n\
         h:5:9 [0] NCCL INFO comm 0x5 rank 4 nranks 8 cudaDev 0 busId 9a000 - Init COMPLETE\n\
         h:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n\
         h:5:9 [0] NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/IPC\n",
        "host-identity",
    );
    none(
        "t1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL\n\
         t1:2:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n",
        "host-identity",
    );
    // GPUDirect reads off (a's send line), writes on (b's receive line).
    none(
        "a:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [send] via NET/IB/1\n\
         b:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [receive] via NET/IB/0/GDRDMA\n",
        "gdr-differs",
    );
}

#[test]
fn a_queue_pair_timing_out_to_rtr_points_at_the_rails() {
    let line = "h:1:2 [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR\n";
    let f = finding(&pasted(&[("-", line)]), FindingKind::IbError).clone();
    assert!(f.fix.contains("NCCL_CROSS_NIC=0") && f.cause.contains("RTR"));
    let other = line.replace("110 Connection timed out", "22 Invalid argument");
    let f = finding(&pasted(&[("-", &other)]), FindingKind::IbError).clone();
    assert!(!f.fix.contains("NCCL_CROSS_NIC"));
}

#[test]
fn pytorch_without_code_for_the_gpu_names_its_architecture_and_cuda() {
    let text = "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n\
                The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n";
    let inputs = [Input { name: "-", text }];
    assert!(is_explainable(&inputs));
    let e = pasted(&[("-", text)]);
    let f = finding(&e, FindingKind::TorchArch);
    assert!(f.title.contains("NVIDIA GeForce RTX 5090") && f.title.contains("sm_120"));
    assert!(f
        .cause
        .contains("sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"));
    assert!(f.fix.contains("CUDA 12.8") && f.fix.contains("whl/cu128"));
    // A GPU the build does support says nothing of the kind.
    let fine = "The current PyTorch install supports CUDA capabilities sm_50 sm_90.\nNCCL INFO NCCL version 2.21.5+cuda12.4\n";
    assert!(pasted(&[("-", fine)])
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::TorchArch));
}

#[test]
fn a_process_without_a_gpu_is_not_nccl_finding_no_ib_device() {
    let none = "PROC_ID=0 No devices found.\nsrun --gpus-per-task=1 --container-image x bash\n";
    let e = pasted(&[("-", none)]);
    assert!(e
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::Line("task-no-gpu")));
    let ib = "h:1:2 [0] NCCL INFO NET/IB : No device found.\nh:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n";
    let e = pasted(&[("-", ib)]);
    assert!(e
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::Line("task-no-gpu")));
}

#[test]
fn a_log_that_stops_after_the_bootstrap_names_the_interface_and_tests_p2p_only_between_gpus() {
    let one = "h:1:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n\
               h:1:2 [0] NCCL INFO NET/IB : No device found.\n";
    let e = pasted(&[("-", one)]);
    let f = finding(&e, FindingKind::InitStops);
    assert!(f.fix.contains("(the log shows eth0)"), "{}", f.fix);
    assert!(!f.fix.contains("NCCL_P2P_DISABLE"));
    let two = format!("{one}h:1:3 [1] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n");
    let f = finding(&pasted(&[("-", &two)]), FindingKind::InitStops).clone();
    assert!(f.fix.contains("NCCL_P2P_DISABLE=1"), "{}", f.fix);
}

#[test]
fn an_nccl_error_pasted_without_nccl_lines_asks_for_them() {
    let error = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1347, remote process exited or there was a network error, NCCL version 2.18.5\n\
                 ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n";
    let e = pasted(&[("-", error)]);
    assert!(e
        .collect
        .as_deref()
        .is_some_and(|c| c.contains("NCCL_DEBUG=INFO")));
    let with_log = format!(
        "{error}h:1:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n\
         h:1:2 [0] transport/net_socket.cc:1 NCCL WARN NET/Socket : peer 10.0.0.2<1234> closed the connection\n"
    );
    let e = pasted(&[("-", &with_log)]);
    assert!(e
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::RemoteError));
    assert!(e.collect.is_none(), "{:?}", e.collect);
}

#[test]
fn a_socket_type_of_ib_against_sockets_is_a_network_mismatch_not_a_stranger() {
    let ib = "h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3\n";
    let e = pasted(&[("-", ib)]);
    assert!(ids(&e).contains(&"net-transport-mismatch"), "{:?}", ids(&e));
    assert!(!ids(&e).contains(&"wrong-handshake"), "{:?}", ids(&e));
    // Another pair of types is still something other than a peer.
    let other = ib.replace("4 != 3", "2 != 1");
    let e = pasted(&[("-", &other)]);
    assert!(ids(&e).contains(&"wrong-handshake") && !ids(&e).contains(&"net-transport-mismatch"));
}

#[test]
fn nccls_min_comp_cap_names_the_gpus_an_old_build_lacks() {
    let log = "NCCL version 2.4.8+cuda10.2\n\
               node01:1:1 [7] NCCL INFO Using 256 threads, Min Comp Cap 8, Trees disabled\n";
    let e = pasted(&[("-", log)]);
    let f = finding(&e, FindingKind::NcclTooOldForGpu);
    assert!(
        f.title.contains("sm_80") && f.fix.contains("CUDA 11.0"),
        "{f:?}"
    );
    // Compute capability 7 is older than 2.4.8's kernels: nothing to say.
    let volta = log.replace("Min Comp Cap 8", "Min Comp Cap 7");
    assert!(pasted(&[("-", &volta)])
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::NcclTooOldForGpu));
}

#[test]
fn a_run_that_stops_after_a_known_bug_follows_from_it() {
    let log = "# Using devices\n\
               #  Rank  0 Group  0 Pid   4766 on   GENOA-06 device  0 [0x21] NVIDIA GeForce RTX 5090\n\
               #  Rank  1 Group  0 Pid   4766 on   GENOA-06 device  1 [0x61] NVIDIA GeForce RTX 5090\n\
               GENOA-06:4766:4766 [0] NCCL INFO NCCL version 2.25.1+cuda12.8\n\
               GENOA-06:4766:4780 [0] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856\n";
    let e = pasted(&[("-", log)]);
    assert!(ids(&e).contains(&"known-bug"), "{:?}", ids(&e));
    let hang = finding(&e, FindingKind::TestsHangInit);
    assert_eq!(hang.follows, Some("known-bug"));
    assert!(!hang.fix.contains("NCCL_P2P_DISABLE"), "{}", hang.fix);
}

#[test]
fn the_cuda_stub_library_is_named_with_its_fix() {
    let line = "[1] c940b4ae7a81:36:37 [1] init.cc:255 NCCL WARN Cuda failure 'CUDA driver is a stub library'\n";
    let f = finding(&pasted(&[("-", line)]), FindingKind::CudaFailure).clone();
    assert!(
        f.cause.contains("cudaErrorStubLibrary") && f.fix.contains("stubs"),
        "{f:?}"
    );
}

#[test]
fn a_rank_beyond_the_world_and_an_algorithm_restriction_are_read() {
    let e = pasted(&[(
        "-",
        "u:6861:6861 [7] init.cc:981 NCCL WARN Invalid rank requested : 7/4\n",
    )]);
    let f = finding(&e, FindingKind::Line("rank-beyond-world"));
    assert!(f.cause.contains("7/4") && f.fix.contains("world size"));
    let e = pasted(&[(
        "-",
        "Error : no algorithm/protocol available for function Broadcast with datatype ncclInt8. NCCL_ALGO was set to NVLS.\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n",
    )]);
    assert!(finding(&e, FindingKind::Line("algo-unavailable"))
        .fix
        .contains("Unset NCCL_ALGO"));
}

#[test]
fn a_crash_after_mpis_libfabric_aborted_follows_from_the_abort() {
    let log = "[node:820212] mtl_ofi_endpoint.h:49: *** The Open MPI OFI MTL is aborting the MPI job (via exit(3)).\n\
               [node:820212] *** Process received signal ***\n\
               [node:820212] Signal: Aborted (6)\n\
               rank0:  Mismatched address format: remote EP (Invalid Fmt): Unknown (2) Local EP: IPv4 (4)\n";
    let e = pasted(&[("-", log)]);
    let abort = finding_by_id(&e, "mpi-ofi-mtl-abort");
    assert!(abort.fix.contains("FI_PROVIDER"), "{}", abort.fix);
    let crash = finding(&e, FindingKind::Crash);
    assert_eq!(crash.follows, Some("mpi-ofi-mtl-abort"));
    // Without the abort the crash stands alone.
    let alone = pasted(&[(
        "-",
        "[node:1] *** Process received signal ***\n[node:1] Signal: Aborted (6)\n",
    )]);
    assert_eq!(finding(&alone, FindingKind::Crash).follows, None);
}
