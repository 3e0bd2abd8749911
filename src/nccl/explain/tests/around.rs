//! Tests of the rules for what a paste shows around NCCL's own lines: a build string in a
//! report's environment list, NCCL 2.18's internal error, a 2.25.1 kernel launch on
//! Blackwell, MPI's UCC, EFA's failed sends, PyTorch's collective check, a SIGBUS beside
//! /dev/shm, srun starting torchrun, NVLink in pairs or quoted both ways, a device list
//! cut short, a hang between hosts, NVLS on a node that stops in set-up, and the set-10
//! signatures (a setting's known bug, libfabric's sync memops, /dev/shm refused, MPI
//! alone hanging, NCCL's unknown code, no libnccl), and set 11's (an illegal access on a
//! new architecture, libfabric older than aws-ofi-nccl needs, NCCL_IB_* with no device,
//! a refused memory registration). Each both ways: the failure, and healthy text or a
//! near miss it leaves alone.

use super::*;

fn bug<'a>(e: &'a Explanation, id: &str) -> Option<&'a Finding> {
    e.findings
        .iter()
        .find(|f| f.kind == FindingKind::KnownBug && f.title.contains(id))
}

/// Healthy lines of runs that worked: NCCL's INFO lines on four H100s of one node, an
/// nccl-tests table, a topology with NVLink between every pair, srun under one task.
const HEALTHY: &str = "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n\
    h:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.1\n\
    h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n\
    h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
    h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n\
    #  Rank  0 Group  0 Pid  1 on h device  0 [0x01] NVIDIA H100 80GB HBM3\n\
    #  Rank  1 Group  0 Pid  1 on h device  1 [0x02] NVIDIA H100 80GB HBM3\n\
    #  Rank  2 Group  0 Pid  1 on h device  2 [0x03] NVIDIA H100 80GB HBM3\n\
    #  Rank  3 Group  0 Pid  1 on h device  3 [0x04] NVIDIA H100 80GB HBM3\n\
    \x20   134217728      33554432     float     sum      -1   900.1  149.1  223.7      0   899.8  149.2  223.8      0\n\
    # Avg bus bandwidth    : 120.5\n\
    \tGPU0\tGPU1\tGPU2\n\
    GPU0\t X \tNV18\tNV18\n\
    GPU1\tNV18\t X \tNV18\n\
    GPU2\tNV18\tNV18\t X \n\
    #SBATCH --ntasks-per-node=1\n\
    srun torchrun --nproc_per_node=8 train.py\n";

#[test]
fn healthy_text_raises_none_of_these_rules() {
    let e = pasted(HEALTHY);
    for id in [
        "mpi-ucc-error",
        "efa-send-failed",
        "torch-debug-mismatch",
        "shm-sigbus",
        "srun-torchrun",
        "nvlink-pairs",
        "nvlink-bidirectional",
        "tests-hang-hosts",
        "tests-hang-init",
        "nvls-init-stops",
        "known-bug",
        "shm-permission",
        "efa-cuda-sync-memops",
        "mpi-hangs",
        "nccl-unknown-result-code",
        "nccl-library-missing",
        "new-arch-illegal-access",
        "ofi-libfabric-too-old",
        "ib-settings-no-device",
        "ib-memlock",
    ] {
        assert!(!ids(&e).contains(&id), "{id} in {:?}", ids(&e));
    }
}

#[test]
fn a_build_string_in_an_environment_list_gives_the_version_and_its_cuda() {
    let text = "- GPU: 2 x NVIDIA RTX PRO 6000 Blackwell Workstation Edition\n\
                - Failing NCCL runtime: 2.26.2+cuda12.2\n\
                all_reduce_perf -b 8 -e 16M -f 2 -g 2\n";
    let f = finding_by_id(&pasted(text), "nccl-too-old-for-gpu").clone();
    assert!(f.title.contains("CUDA 12.2"), "{}", f.title);
    assert!(f.fix.starts_with("Upgrade"), "{}", f.fix);
    // cuDNN's and TensorRT's packages have four numbers: not NCCL's.
    let other = "libcudnn8 8.9.7.29-1+cuda12.2 on an RTX 5090\nnccl-tests\n";
    assert!(!ids(&pasted(other)).contains(&"nccl-too-old-for-gpu"));
}

#[test]
fn nccl_2_18_internal_error_says_to_read_the_warn_lines() {
    let text = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, \
                internal error - please report this issue to the NCCL developers, NCCL version 2.18.1\n";
    let e = pasted(text);
    let f = bug(&e, "internal-error-2.18").expect("the 2.18 bug");
    assert!(f.fix.contains("NCCL_DEBUG=WARN"));
    // The H100 corruption of 2.18.1 needs an H100 in the text.
    assert!(
        bug(&e, "h100-tree-ll128-corruption").is_none(),
        "{:?}",
        ids(&e)
    );
    let later = text.replace("2.18.1", "2.21.5");
    assert!(bug(&pasted(&later), "internal-error-2.18").is_none());
}

#[test]
fn a_kernel_launch_that_fails_under_2_25_1_on_blackwell_is_the_shared_memory_bug() {
    let text = "- GPU: NVIDIA Blackwell\n- Libraries: `2.25.1-1+cuda12.8`\n\
                [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'\n\
                [1] NCCL INFO group.cc:242 -> 1\n";
    let e = pasted(text);
    let f = bug(&e, "blackwell-shared-mem-launch").expect("the bug");
    assert!(f.fix.contains("2.26.2"));
    let fixed = text.replace("2.25.1-1", "2.26.2-1");
    assert!(bug(&pasted(&fixed), "blackwell-shared-mem-launch").is_none());
}

#[test]
fn ucc_errors_are_mpi_s_not_nccl_s() {
    let text = "mpirun -np 3 -x NCCL_DEBUG=INFO ./all_reduce_perf\n\
                [1723337199.099229] [w3:1382 :0] tl_shm_team.c:617 TL_SHM ERROR Child failed to attach to shmseg, errno: Invalid argument\n";
    let f = finding_by_id(&pasted(text), "mpi-ucc-error").clone();
    assert!(f.cause.contains("MPI") && f.fix.contains("coll_ucc_enable 0"));
}

#[test]
fn an_efa_send_that_fails_names_the_security_group() {
    let text = "w1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x1 completed with error. RC: 20. Error: unknown error.\n\
                libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn> rxr_cq_write_tx_error: err: 20, prov_err: Not a directory (20)\n";
    let f = finding_by_id(&pasted(text), "efa-send-failed").clone();
    assert!(f.fix.contains("security group"));
}

#[test]
fn pytorch_s_collective_check_is_a_mismatch_between_ranks() {
    let text = "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=21, OpType=BROADCAST)\n";
    let f = finding_by_id(&pasted(text), "torch-debug-mismatch").clone();
    assert!(f.title.contains("mismatch") && f.title.contains("ranks"));
}

#[test]
fn a_sigbus_is_named_and_read_as_dev_shm_beside_a_listing_of_it() {
    let crash = "(RayWorker pid=4711) *** SIGBUS received at time=1692322557 on cpu 5 ***\n\
                 (RayWorker pid=4711) Fatal Python error: Bus error\n";
    let alone = pasted(crash);
    assert!(finding_by_id(&alone, "crash").cause.contains("SIGBUS"));
    let with_df = format!("{crash}shm              64M   20M   45M  31% /dev/shm\n");
    assert!(ids(&pasted(&with_df)).contains(&"shm-sigbus"));
    let mpi = "call ncclCommInitRank got Signal: Bus error (7)\n";
    assert!(ids(&pasted(mpi)).contains(&"shm-sigbus"));
}

#[test]
fn srun_starting_torchrun_per_task_says_one_task_per_node() {
    let text = "#SBATCH --ntasks-per-node=8\n\
                srun torchrun --nproc_per_node=$SLURM_NTASKS_PER_NODE scripts/pretrain.py\n\
                Duplicate GPU detected : rank 2 and rank 10 both on CUDA device 50000\n";
    let e = pasted(text);
    assert!(finding_by_id(&e, "srun-torchrun")
        .fix
        .contains("--ntasks-per-node=1"));
    assert!(ids(&e).contains(&"duplicate-gpu"), "{:?}", ids(&e));
}

#[test]
fn nvlink_in_pairs_says_a_larger_ring_crosses_pcie() {
    let text = "\tGPU0\tGPU1\tGPU2\tGPU3\n\
                GPU0\t X \tNV12\tNODE\tNODE\n\
                GPU1\tNV12\t X \tNODE\tNODE\n\
                GPU2\tNODE\tNODE\t X \tNV12\n\
                GPU3\tNODE\tNODE\tNV12\t X \n\
                ./build/all_reduce_perf -b 8 -e 12G -f 2 -g 1 -t 3\n";
    let f = finding_by_id(&pasted(text), "nvlink-pairs").clone();
    assert!(f.cause.contains("PCIe") && f.cause.contains("0-1 (NV12)"));
}

#[test]
fn an_nvlink_figure_in_prose_is_said_to_count_both_directions() {
    let text = "I believe each NVLink is capable of 600 GB/s transfers\n\
                ./build/all_reduce_perf -b 8 -e 1G -f 4 -g 1 -t 8\n";
    assert!(finding_by_id(&pasted(text), "nvlink-bidirectional")
        .cause
        .contains("bidirectional"));
}

#[test]
fn a_device_list_cut_short_says_nothing_of_a_hang() {
    let head = "# nThread 8 nGpus 1 minBytes 8 maxBytes 1073741824 step: 4(factor)\n\
                # Using devices\n\
                #  Rank  0 Group  0 Pid 78 on h device  0 [0x07] NVIDIA A100-SXM4-80GB\n\
                #  Rank  1 Group  0 Pid 78 on h device  1 [0x0b] NVIDIA A100-SXM4-80GB\n";
    let cut = format!("{head}#  Rank  2 Group  0 Pid 78 on h device\n[...]\n");
    assert!(!ids(&pasted(&cut)).contains(&"tests-hang-init"));
    assert!(ids(&pasted(head)).contains(&"tests-hang-init"));
}

#[test]
fn a_test_that_stops_with_one_gpu_per_host_is_the_network_s() {
    let text = "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor)\n\
                # Using devices\n\
                #  Rank  0 Group  0 Pid 180172 on gh1 device  0 [0x01] NVIDIA GH200 480GB\n\
                #  Rank  1 Group  0 Pid   9746 on gh2 device  0 [0x01] NVIDIA GH200 480GB\n\
                gh2:9746:9746 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.2<0>\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "tests-hang-hosts").clone();
    assert!(f.fix.contains("NCCL_SOCKET_IFNAME") && !f.fix.contains("NCCL_P2P_DISABLE"));
    assert!(!ids(&e).contains(&"tests-hang-init"));
}

#[test]
fn a_node_of_four_hoppers_that_stops_in_set_up_names_nvls() {
    let text = "#  Rank  0 Group  0 Pid 1 on d device  0 [0000:0f:00] NVIDIA H800\n\
                #  Rank  1 Group  0 Pid 1 on d device  1 [0000:34:00] NVIDIA H800\n\
                #  Rank  2 Group  0 Pid 1 on d device  2 [0000:48:00] NVIDIA H800\n\
                #  Rank  3 Group  0 Pid 1 on d device  3 [0000:5a:00] NVIDIA H800\n\
                d:1:1 [0] NCCL INFO Bootstrap: Using ens14f0np0:192.168.1.252<0>\n\
                d:1:1 [0] NCCL INFO NCCL version 2.26.5+cuda12.4\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "nvls-init-stops").clone();
    assert!(f.fix.contains("NCCL_NVLS_ENABLE=0"));
    assert!(!f.fix.contains("NCCL_SOCKET_IFNAME") && !f.fix.contains("NCCL_P2P_DISABLE"));
    // Two GPUs never set NVLS up: the general reading stays.
    let two: String = text
        .lines()
        .filter(|l| !l.contains("device  2") && !l.contains("device  3"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!ids(&pasted(&two)).contains(&"nvls-init-stops"));
}

#[test]
fn a_version_named_in_prose_or_a_path_is_the_logs_version() {
    let e = pasted(
        "I tested alltoall_perf with nccl version 2.19.1 2.19.3, and it will hang at init.\n",
    );
    let f = bug(&e, "cumem-alltoall-connect-hang-2.19").expect("the 2.19 bug");
    assert!(f.fix.contains("NCCL_CUMEM_ENABLE=0"), "{}", f.fix);
    let path = "mpirun -x LD_PRELOAD=/home/nccl2.19.4/libnccl.so.2 alltoall_perf\nit hangs\n";
    assert!(bug(&pasted(path), "cumem-alltoall-connect-hang-2.19").is_some());
    // 2.20.3 has the fix; `libnccl.so.2` alone names no version.
    let fixed = "alltoall_perf with NCCL 2.20.3 hangs\n";
    assert!(bug(&pasted(fixed), "cumem-alltoall-connect-hang-2.19").is_none());
    let bare = "LD_PRELOAD=/usr/lib/libnccl.so.2 alltoall_perf hangs\n";
    assert!(bug(&pasted(bare), "cumem-alltoall-connect-hang-2.19").is_none());
}

#[test]
fn a_script_that_sets_a_variable_per_local_rank_differs_between_ranks() {
    let script = "case $OMPI_COMM_WORLD_LOCAL_RANK in\n\
                  0) export NCCL_IB_HCA=mlx5_0:1 ;;\n\
                  1) export NCCL_IB_HCA=mlx5_1:1 ;;\n\
                  esac\n";
    let f = finding_by_id(&pasted(script), "env-differs").clone();
    assert!(
        f.cause.contains("NCCL_IB_HCA per local rank"),
        "{}",
        f.cause
    );
    assert_eq!(f.evidence.len(), 2);
    // One value for every rank is not a difference; nor is a script with no rank in it.
    let same = script.replace("mlx5_1:1", "mlx5_0:1");
    assert!(!ids(&pasted(&same)).contains(&"env-differs"));
    let tries = "export NCCL_IB_HCA=mlx5_0\nexport NCCL_IB_HCA=mlx5_1\n";
    assert!(!ids(&pasted(tries)).contains(&"env-differs"));
}

#[test]
fn p2p_disabled_making_it_run_points_at_acs_and_a_failed_fabric_manager_is_named() {
    let e = pasted("Setting `NCCL_P2P_DISABLE=1` resolves the deadlock completely.\n");
    assert!(finding_by_id(&e, "p2p-blocked").fix.contains("ACS"));
    let e = pasted("NCCL_P2P_DISABLE=1 did not help, it still hangs\n");
    assert!(!ids(&e).contains(&"p2p-blocked"), "{:?}", ids(&e));
    let fm = "Process: 444114 ExecStart=/usr/bin/nv-fabricmanager -c fabricmanager.cfg \
              (code=exited, status=1/FAILURE)\n";
    assert!(finding_by_id(&pasted(fm), "fabric-manager-down")
        .fix
        .contains("exact version"));
}

#[test]
fn set_8_signatures_are_read() {
    let prefix = "$ NCCL_SHM_DISABLE=1 mpirun -H ddp-0,ddp-1 -np 2 ./all_reduce_perf\n\
                  ddp-0:263:263 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n";
    let f = finding_by_id(&pasted(prefix), "env-not-forwarded").clone();
    assert!(f.fix.contains("-x NCCL_SHM_DISABLE=1"), "{}", f.fix);
    assert!(f.cause.contains("ranks on ddp-1"), "{}", f.cause);
    assert_eq!(f.severity, Severity::Error);
    // Passed with -x, it reaches every node.
    let passed = "NCCL_DEBUG=INFO mpirun -x NCCL_DEBUG -H a,b ./t\n";
    assert!(!ids(&pasted(passed)).contains(&"env-not-forwarded"));
    let graph = "NCCL version 2.19.3+cuda11.0\nh:1:1 [0] misc/strongstream.cc:53 NCCL WARN NCCL \
                 cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3\n";
    let f = finding_by_id(&pasted(graph), "graph-capture-old-build").clone();
    assert!(f.cause.contains("2.19.3+cuda11.0"), "{}", f.cause);
    let sharp = "h:1:2 [3] sharp_plugin.c:354 NCCL WARN SHARP group create: Streaming Tree lock failed (-18)\n";
    assert!(finding_by_id(&pasted(sharp), "sharp-sat-lock")
        .fix
        .contains("SHARP_COLL_SAT_LOCK_BATCH_SIZE=1"));
    let timeout =
        "Running tokenizer on dataset:   9%| 280000/2969526\n[E ProcessGroupNCCL.cpp:475] \
                   [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, \
                   OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 \
                   milliseconds before timing out.\n";
    let f = finding_by_id(&pasted(timeout), "torch-timeout").clone();
    assert!(f.cause.contains("tokenizing the dataset"), "{}", f.cause);
}

#[test]
fn a_job_that_stalls_after_set_up_on_one_host_points_at_p2p() {
    let log = "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n\
               h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 47000 - Init COMPLETE\n\
               h:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 61000 - Init COMPLETE\n";
    let stalled = format!("{log}Processed prompts:   0%|          | 0/16 [00:00<?, ?it/s]\n");
    assert!(finding_by_id(&pasted(&stalled), "stalls-after-init")
        .fix
        .contains("ACS"));
    // Progress, or a log that simply ends, is no stall.
    let moving = format!("{log}Processed prompts: 100%|##########| 16/16 [00:03<00:00]\n");
    assert!(!ids(&pasted(&moving)).contains(&"stalls-after-init"));
    assert!(!ids(&pasted(log)).contains(&"stalls-after-init"));
}

#[test]
fn set_9_signatures_are_read() {
    let gid =
        "h:1:1 [0] NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n";
    let f = finding_by_id(&pasted(gid), "ib-roce-gid-type-unreadable").clone();
    assert!(
        f.fix.contains("2.26") && f.fix.contains("NCCL_IB_GID_INDEX"),
        "{}",
        f.fix
    );
    assert_eq!(f.severity, Severity::Error);
    let sanitizer = "========= Invalid __global__ write of size 16 bytes\n\
                     =========     at ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440\n";
    let f = finding_by_id(&pasted(sanitizer), "nccl-kernel-bad-access").clone();
    assert!(
        f.fix.contains("upgrade NCCL") && f.fix.contains("nranks x count"),
        "{}",
        f.fix
    );
    // A kernel named in a backtrace that is not compute-sanitizer's, or in its race
    // report, is no such finding.
    let trace = "#3 0x7f in ncclDevFunc_AllReduce_Sum_f32_RING_LL () from libnccl.so.2\n";
    assert!(!ids(&pasted(trace)).contains(&"nccl-kernel-bad-access"));
    let race = "========= Race reported between Write access at ncclDevFunc_AllReduce()+0x10\n";
    assert!(!ids(&pasted(race)).contains(&"nccl-kernel-bad-access"));
    // Another errno from the same probe is no missing GID.
    let other =
        "h:1:1 [0] NCCL WARN NET/IB: open failed in ncclIbRoceGetVersionNum: Permission denied\n";
    assert!(!ids(&pasted(other)).contains(&"ib-roce-gid-type-unreadable"));
}

#[test]
fn set_10_signatures_are_read() {
    // A proxy Connect that fails under NCCL_IB_ROCE_VERSION_NUM before 2.26: the GID bug.
    let connect = "h:1:1 [2] NCCL INFO NCCL version 2.22.3+cuda12.6\n\
                   h:1:9 [2] proxy.cc:1521 NCCL WARN [Proxy Service 2] Failed to execute \
                   operation Connect from rank 2, retcode 3\n";
    let roce = |text: &str| {
        let env = vec![("NCCL_IB_ROCE_VERSION_NUM".to_string(), "2".to_string())];
        explain_inputs(&[Input { name: "-", text }], &Options { env })
    };
    let e = roce(connect);
    let f = bug(&e, "roce-version-num-gid-container").expect("the GID bug");
    assert!(
        f.fix.contains("NCCL_IB_GID_INDEX") && f.fix.contains("upgrade"),
        "{}",
        f.fix
    );
    // NCCL's own line for the setting counts as setting it; no setting, or 2.26, is not it.
    let shown =
        format!("h:1:1 [2] NCCL INFO NCCL_IB_ROCE_VERSION_NUM set by environment to 2.\n{connect}");
    assert!(bug(&pasted(&shown), "roce-version-num-gid-container").is_some());
    assert!(bug(&pasted(connect), "roce-version-num-gid-container").is_none());
    let fixed = connect.replace("2.22.3", "2.26.2");
    assert!(bug(&roce(&fixed), "roce-version-num-gid-container").is_none());

    // libfabric's EFA lines alone, no NCCL line: read, and the sync-memops fix.
    let memops = "libfabric:65:17::core:core:cuda_set_sync_memops():207<warn> Failed to perform \
                  cuPointerSetAttribute: CUDA_ERROR_NOT_SUPPORTED:operation not supported\n\
                  libfabric:65:17::efa:mr:efa_mr_hmem_setup():254<warn> unable to set memops for cuda ptr\n";
    assert!(is_explainable(&[Input {
        name: "-",
        text: memops
    }]));
    let f = finding_by_id(&pasted(memops), "efa-cuda-sync-memops").clone();
    assert!(f.fix.contains("FI_EFA_SET_CUDA_SYNC_MEMOPS=0"), "{}", f.fix);
    // A registration that fails for another reason names no memops.
    let mr = "libfabric:65:17::efa:mr:efa_mr_regattr():1014<warn> Unable to register MR: Invalid argument\n";
    assert!(!ids(&pasted(mr)).contains(&"efa-cuda-sync-memops"));

    // /dev/shm refused (EACCES) is a permission, not a full /dev/shm, in both wordings.
    let denied =
        "n:1:2 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n\
                  n:1:2 [0] NCCL INFO include/shm.h:41 -> 2\n\
                  n:1:2 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment \
                  nccl-shm-recv-b79-0-3-0 (size 4460544)\n";
    let e = pasted(denied);
    assert!(finding_by_id(&e, "shm-permission")
        .fix
        .contains("chmod 1777 /dev/shm"));
    assert!(!ids(&e).contains(&"shm-no-space"), "{:?}", ids(&e));
    let errno = "n:1:2 [0] misc/shmutils.cc:128 NCCL WARN Error while creating shared memory \
                 segment /dev/shm/nccl-Ab12Cd (size 9637888), error: Permission denied (13)\n";
    assert!(ids(&pasted(errno)).contains(&"shm-permission"));
    let full = denied.replace(
        "Call to shm_open failed : Permission denied",
        "Call to posix_fallocate failed : No space left on device",
    );
    let e = pasted(&full);
    assert!(ids(&e).contains(&"shm-no-space") && !ids(&e).contains(&"shm-permission"));

    // An MPI hello world that hangs as the test does, with no NCCL line: MPI first.
    let hello = "mpirun -hostfile hosts -np 2 --mca pml ucx ./hello_world\n\
                 Hello world from rank 1 out of 2 processors\n\
                 the process hangs after the hello world\n";
    let f = finding_by_id(&pasted(hello), "mpi-hangs").clone();
    assert!(
        f.cause.contains("MPI") && f.fix.contains("hostname"),
        "{}",
        f.fix
    );
    // The hello world that runs, then a test that hangs; a test alone; "does not hang".
    let runs = "mpirun -np 2 ./hello_world\nHello world from rank 0 out of 2\n\
                Hello world from rank 1 out of 2\nmpirun -np 2 ./all_reduce_perf -g 1\nit hangs\n";
    let test = "mpirun -np 2 --hostfile hosts ./build/all_reduce_perf -b 8 -e 8 -g 1\nThe process hangs.\n";
    let fine = "mpirun -np 2 ./hello_world\nit does not hang\n";
    for near in [runs, test, fine] {
        assert!(!ids(&pasted(near)).contains(&"mpi-hangs"), "{near}");
    }

    // NCCL's string for a code it does not know: the versions differ.
    let unknown = "Failed, NCCL error /src/plugins/allreducePlugin.cpp:183 'unknown result code'\n";
    let f = finding_by_id(&pasted(unknown), "nccl-unknown-result-code").clone();
    assert!(
        f.fix.contains("NCCL_DEBUG=INFO") && f.cause.contains("version"),
        "{}",
        f.cause
    );
    let other = "SPIRV-Reflect: Unknown result code\n";
    assert!(!ids(&pasted(other)).contains(&"nccl-unknown-result-code"));

    // No libnccl at run time, in jax's words and the loader's; a missing plugin is fine.
    let missing = "nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: Unable to load \
                   NCCL library. Multi-GPU collectives will not work.\n";
    let f = finding_by_id(&pasted(missing), "nccl-library-missing").clone();
    assert!(
        f.fix.contains("install") && f.cause.contains("libnccl"),
        "{}",
        f.fix
    );
    let loader =
        "OSError: libnccl.so.2: cannot open shared object file: No such file or directory\n";
    assert!(ids(&pasted(loader)).contains(&"nccl-library-missing"));
    let plugin =
        "h:1:1 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object \
                  file: No such file or directory No plugin found (libnccl-net.so)\n";
    assert!(!ids(&pasted(plugin)).contains(&"nccl-library-missing"));
}

#[test]
fn set_11_signatures_are_read() {
    // An illegal access inside NCCL on an RTX 5090 with no version shown: check, upgrade.
    let fault = "enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory access was \
                 encountered'\nGPU 0: NVIDIA GeForce RTX 5090\n";
    let f = finding_by_id(&pasted(fault), "new-arch-illegal-access").clone();
    assert!(
        f.fix.contains("pip install -U nvidia-nccl-cu12")
            && f.fix.contains("Check the NCCL version"),
        "{}",
        f.fix
    );
    assert!(f.cause.contains("sm_120") && f.severity == Severity::Warning);
    // At one of sm_120's early releases it is said as the cause.
    let early = format!("h:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.8\n{fault}");
    let f = finding_by_id(&pasted(&early), "new-arch-illegal-access").clone();
    assert!(f.cause.contains("2.26.2") && f.severity == Severity::Error);
    // Not on an A100 (with a recent NCCL or none shown), not on sm_120 past its early
    // releases, not for another CUDA error.
    let a100 = fault.replace("GeForce RTX 5090", "A100-SXM4-80GB");
    let a100_recent = format!("h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n{a100}");
    let later = early.replace("2.26.2", "2.29.2");
    let other = fault.replace(
        "700 'an illegal memory access was encountered'",
        "1 'invalid argument'",
    );
    for near in [&a100, &a100_recent, &later, &other] {
        assert!(
            !ids(&pasted(near)).contains(&"new-arch-illegal-access"),
            "{near}"
        );
    }

    // aws-ofi-nccl built for a newer libfabric than the one it loads.
    let fabric = "[0] NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version \
                  `FABRIC_1.7' not found (required by /env/lib/libnccl-net.so) No plugin found \
                  (libnccl-net.so), using internal implementation\n";
    let e = pasted(fabric);
    let f = finding_by_id(&e, "ofi-libfabric-too-old").clone();
    assert!(f.title.contains("FABRIC_1.7") && f.fix.contains("aws-ofi-nccl"));
    assert!(f.cause.contains("/opt/amazon/efa/lib/libfabric.so.1"));
    assert!(!ids(&e).contains(&"net-plugin-load"), "{:?}", ids(&e));
    // Another library's symbol version, or libfabric's under MPI: not this finding.
    let glibc = fabric.replace(
        "/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.7'",
        "/lib64/libc.so.6: version `GLIBC_2.34'",
    );
    let e = pasted(&glibc);
    assert!(!ids(&e).contains(&"ofi-libfabric-too-old") && ids(&e).contains(&"net-plugin-load"));
    let mpi = "mpirun: /usr/lib/libfabric.so.1: version `FABRIC_1.7' not found (required by \
               /opt/openmpi/lib/libmpi.so.40)\n";
    assert!(!ids(&pasted(mpi)).contains(&"ofi-libfabric-too-old"));

    // NCCL_IB_* set, NET/IB without a device: RDMA is missing, sockets carry the traffic.
    let no_device = "h:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1\n\
                     h:1:1 [0] NCCL INFO NET/IB : No device found.\n\
                     h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
                     h:1:1 [0] NCCL INFO Using network Socket\n";
    let e = pasted(no_device);
    let f = finding_by_id(&e, "ib-settings-no-device").clone();
    assert!(f.cause.contains("RDMA") && f.cause.contains("sockets") && f.fix.contains("rdma-core"));
    assert!(!ids(&e).contains(&"ib-no-device"), "{:?}", ids(&e));
    // Set in a command line the poster quotes.
    let quoted = no_device.replace(
        "h:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1",
        "export NCCL_IB_HCA=mlx5_0,mlx5_1",
    );
    assert!(ids(&pasted(&quoted)).contains(&"ib-settings-no-device"));
    // IB turned off on purpose, NET/IB with a device, or no IB variable at all.
    let disabled =
        format!("h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n{no_device}");
    let found = no_device.replace(
        "No device found.",
        "Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
    );
    let unset = no_device.replace(
        "NCCL_IB_HCA set by environment to mlx5_0,mlx5_1",
        "Bootstrap : Using eth0:10.0.0.1<0>",
    );
    for near in [&disabled, &found, &unset] {
        assert!(
            !ids(&pasted(near)).contains(&"ib-settings-no-device"),
            "{near}"
        );
    }

    // A memory registration that fails, with no errno or with ENOMEM: the memlock limit.
    let plain = "ibvwrap.c: 106 NCCL WARN Call to ibv_reg_mr failed\n\
                 NCCL INFO ib_plugin.c:448 -> 2\n";
    let f = finding_by_id(&pasted(plain), "ib-memlock").clone();
    assert!(f.fix.contains("ulimit -l unlimited") && f.fix.contains("IPC_LOCK"));
    assert!(!f.fix.contains("NCCL_IB_GID_INDEX") && !f.cause.contains("GID"));
    // Another errno is not the limit, and no GID advice either way.
    let bad = "h:1:2 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr failed with error Bad \
               address\n";
    let e = pasted(bad);
    assert!(!ids(&e).contains(&"ib-memlock"), "{:?}", ids(&e));
    let f = finding_by_id(&e, "ib-error");
    assert!(!f.fix.contains("NCCL_IB_GID_INDEX"), "{}", f.fix);
}
