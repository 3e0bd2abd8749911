//! Tests of the rules written from blind set 23: connection lines with NCCL's `Channel`
//! prefix cut off (and GPUDirect RDMA told apart by the rank that logs them),
//! NCCL_NET=Socket set from Python on a RoCE cluster, `NCCL_P2P_DISABLE=1` named as the
//! workaround, and an mpirun that hangs before NCCL prints a line. Each both ways: the
//! failure, and a near miss it leaves alone.

use super::*;

#[test]
fn connection_lines_without_their_channel_still_show_gdr_per_rank() {
    let text = "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n\
                9[1a000] -> 2[6b000] [receive] via NET/IB/1\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "gdr-differs");
    assert!(
        f.title.contains("on rank 9 but not on rank 2"),
        "{}",
        f.title
    );
    assert!(f.fix.contains("peermem"));
    // Both sides with GDRDMA: nothing differs.
    let both = text.replace("NET/IB/1", "NET/IB/1/GDRDMA");
    assert!(!ids(&pasted(&both)).contains(&"gdr-differs"));
    // Lines with a host beside lines without: ranks are not compared with hosts.
    let mixed =
        "h1:1:1 [0] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n\
                 9[1a000] -> 2[6b000] [receive] via NET/IB/1\n";
    assert!(!ids(&pasted(mixed)).contains(&"gdr-differs"));
    // A bare pair of ranks that is no connection line is not read as one.
    assert!(!ids(&pasted("9[1a000] -> 2[6b000] is the pair\n")).contains(&"gdr-differs"));
}

#[test]
fn nccl_net_socket_set_from_python_on_roce_is_read_as_sockets_forced() {
    let text = "I would like to use RoCE network cards.\n\
                `os.environ[\"NCCL_NET\"]=\"Socket\"`\n\
                With NCCL_NET=IB the log says NET/IB : No device found.\n";
    let f = finding_by_id(&pasted(text), "net-socket-forced").clone();
    assert!(f.fix.contains("Unset NCCL_NET") && f.fix.contains("ibv_devinfo"));
    // Single quotes and spaces read alike.
    let single = "os.environ['NCCL_NET'] = 'Socket'  # RoCE\n";
    assert!(ids(&pasted(single)).contains(&"net-socket-forced"));
    // Sockets chosen where there is no IB or RoCE to speak of: a choice, not a mistake.
    let plain = "export NCCL_NET=Socket\nRuntimeError: NCCL error: unhandled system error\n";
    assert!(!ids(&pasted(plain)).contains(&"net-socket-forced"));
    // IB asked for: not this finding.
    let ib = "os.environ[\"NCCL_NET\"]=\"IB\"  # RoCE\n";
    assert!(!ids(&pasted(ib)).contains(&"net-socket-forced"));
    // NCCL says `No device found` on Ethernet machines too; IB disabled is a choice.
    let ethernet = "export NCCL_NET=Socket\nh:1:1 [0] NCCL INFO NET/IB : No device found.\n";
    let disabled = "export NCCL_NET=Socket NCCL_IB_DISABLE=1  # RoCE\n";
    // A comparison is not a setting.
    let compared = "if os.environ[\"NCCL_NET\"] == \"Socket\":  # RoCE\n";
    for near in [ethernet, disabled, compared] {
        assert!(!ids(&pasted(near)).contains(&"net-socket-forced"), "{near}");
    }
}

#[test]
fn p2p_disable_named_as_the_workaround_is_p2p_blocked() {
    let text = "all_reduce_perf hangs for GPUs behind one PCIe switch.\n\
                Setting NCCL_P2P_DISABLE=1 did workaround but got really low speed.\n";
    assert!(ids(&pasted(text)).contains(&"p2p-blocked"));
    let tried = "all_reduce_perf hangs.\nI tried NCCL_P2P_DISABLE=1 and it still hangs.\n";
    let asked = "all_reduce_perf hangs.\nIs NCCL_P2P_DISABLE=1 as a workaround OK?\n";
    for near in [tried, asked] {
        assert!(!ids(&pasted(near)).contains(&"p2p-blocked"), "{near}");
    }
}

#[test]
fn mpirun_with_nccl_debug_that_hangs_silent_is_mpi_start_up() {
    let text = "# mpirun --allow-run-as-root -np 2 -H host1,host2 -x NCCL_DEBUG=INFO /nccl-tests/build/all_reduce_perf -b 8 -e 128M -g 8\n\
                (hang here)\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "mpi-launch-hangs");
    assert!(f.fix.contains("ofed_info") && f.fix.contains("hostname"));
    // HPC-X is named where the paste names it.
    assert!(!f.cause.contains("HPC-X must"), "{}", f.cause);
    let hpcx = format!("{text}HPC-X version: 2.17.1\n");
    assert!(finding_by_id(&pasted(&hpcx), "mpi-launch-hangs")
        .cause
        .contains("HPC-X must"));
    // nccl-tests printed its header: MPI started.
    let header = format!("{text}# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728\n");
    assert!(!ids(&pasted(&header)).contains(&"mpi-launch-hangs"));
    // NCCL printed: it started, so the hang is NCCL's to explain.
    let started = format!("{text}host1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n");
    assert!(!ids(&pasted(&started)).contains(&"mpi-launch-hangs"));
    // Without NCCL_DEBUG=INFO, a silent NCCL says nothing.
    let quiet = text.replace(" -x NCCL_DEBUG=INFO", "");
    assert!(!ids(&pasted(&quiet)).contains(&"mpi-launch-hangs"));
}
