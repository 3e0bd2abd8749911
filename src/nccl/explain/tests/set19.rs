//! Tests of the rules written from blind set 19: EFA refused by the security group, Ray
//! Train's own NCCL_SOCKET_IFNAME, a verbs device without its provider library, an
//! exclusion list that lets NCCL take the loopback interface, a test that reports its
//! own failure (no hang), and more ranks than a node has GPUs. Each both ways: the
//! failure, and a near miss it leaves alone.

use super::*;

#[test]
fn an_efa_address_the_plugin_cannot_insert_points_at_the_security_group() {
    let text = "[rank1]: Last error:\n\
                [rank1]: NET/OFI Unable to insert remote address into address vector for device 1. RC: 0\n";
    let f = finding_by_id(&pasted(text), "ofi-av-insert").clone();
    assert!(f.fix.contains("security group") && f.fix.contains("inbound"));
    let other = "[rank1]: NET/OFI Unable to register memory (type 2) for device 1. RC: -22\n";
    assert!(!ids(&pasted(other)).contains(&"ofi-av-insert"));
}

#[test]
fn ray_trains_own_socket_ifname_is_named() {
    let line = |value: &str| {
        format!(
            "(RayTrainWorker pid=1, ip=n1) n1:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {value}\n"
        )
    };
    let f = finding_by_id(&pasted(&line("^lo,docker,veth")), "ray-train-socket-ifname").clone();
    assert!(f.fix.contains("runtime_env"), "{}", f.fix);
    assert!(ids(&pasted(&line("en,eth,bond"))).contains(&"ray-train-socket-ifname"));
    // A value the site chose is not Ray's default, nor is Ray's value set outside Ray.
    assert!(!ids(&pasted(&line("ib0"))).contains(&"ray-train-socket-ifname"));
    let alone = line("^lo,docker,veth").replace("(RayTrainWorker pid=1, ip=n1) ", "");
    assert!(!ids(&pasted(&alone)).contains(&"ray-train-socket-ifname"));
}

/// nccl-tests in a container whose image has no verbs provider: it fails at once.
const NO_PROVIDER: &str = "# Using devices\n\
    #   Rank  0 Pid 1 on h device  0 [0x00] Tesla V100-PCIE-16GB\n\
    #   Rank  1 Pid 1 on h device  1 [0x00] Tesla V100-PCIE-16GB\n\
    libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0\n\
    h: Test NCCL failure common.cu:775 'internal error'\n";

#[test]
fn a_verbs_device_without_its_provider_points_at_libmlx5() {
    let e = pasted(NO_PROVIDER);
    let f = finding_by_id(&e, "ibverbs-no-provider").clone();
    assert!(f.fix.contains("ibverbs-providers") && f.fix.contains("NCCL_DEBUG=INFO"));
    // A test that reports its failure did not hang in its first collective.
    assert!(!ids(&e).contains(&"tests-hang-init"), "{:?}", ids(&e));
    let other = "libibverbs: Warning: couldn't load driver 'libhfi1verbs-rdmav34.so'\n";
    assert!(!ids(&pasted(other)).contains(&"ibverbs-no-provider"));
}

#[test]
fn a_test_that_prints_nothing_after_its_devices_still_reads_as_a_hang() {
    // Every line but the test's own failure.
    let hung = NO_PROVIDER.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(
        ids(&pasted(&hung)).contains(&"tests-hang-init"),
        "{:?}",
        ids(&pasted(&hung))
    );
}

/// NCCL 2.3 listing lo beside eth1 under an exclusion list that leaves lo in.
const LOOPBACK: &str = "node01:1:1 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>\n\
    node01:1:1 [0] NCCL INFO NET : Using interface eth1:9.73.128.149<0>\n\
    node01:1:1 [0] NCCL INFO NET/Socket : 2 interfaces found\n";

#[test]
fn an_exclusion_list_that_leaves_lo_in_is_named() {
    let with = |value: &str, text: &str| {
        explain_inputs(
            &[Input { name: "-", text }],
            &Options {
                env: vec![("NCCL_SOCKET_IFNAME".into(), value.into())],
            },
        )
    };
    let e = with("^docker0", LOOPBACK);
    let f = finding_by_id(&e, "socket-interface-virtual").clone();
    assert!(f.title.contains("loopback"), "{}", f.title);
    assert!(f.cause.contains("replaces NCCL's default"), "{}", f.cause);
    assert!(
        f.fix.contains("NCCL_SOCKET_IFNAME=^docker0,lo"),
        "{}",
        f.fix
    );
    // The newer listing reads the same.
    let newer = "h:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth1:10.0.0.2<0>\n";
    let f = finding_by_id(&with("^docker", newer), "socket-interface-virtual").clone();
    assert!(f.fix.contains("^docker,lo"), "{}", f.fix);
    // lo not in use: not this finding; a value NCCL reads as unset is no exclusion list.
    let eth = LOOPBACK.lines().skip(1).collect::<Vec<_>>().join("\n");
    for e in [with("^docker0,lo", &eth), with("^docker0", &eth)] {
        assert!(
            !ids(&e).contains(&"socket-interface-virtual"),
            "{:?}",
            ids(&e)
        );
    }
    let f = finding_by_id(&with("^", LOOPBACK), "socket-interface-virtual").clone();
    assert!(!f.cause.contains("replaces"), "{}", f.cause);
}

#[test]
fn more_processes_than_gpus_under_mpirun_points_at_np() {
    let text = "mpirun -np 40 ./build/all_gather_perf -b 8 -e 128M -f 2 -g 4\n\
                h: Test CUDA failure common.cu:732 'invalid device ordinal'\n";
    let f = finding_by_id(&pasted(text), "invalid-device-ordinal").clone();
    assert!(f.fix.contains("-np") && f.fix.contains("-g 1"), "{}", f.fix);
    // One process asking for more GPUs than there are: not the launcher's count.
    let alone = "./build/all_gather_perf -b 8 -e 128M -f 2 -g 4\n\
                 h: Test CUDA failure common.cu:732 'invalid device ordinal'\n";
    let f = finding_by_id(&pasted(alone), "invalid-device-ordinal").clone();
    assert!(!f.fix.contains("-np"), "{}", f.fix);
}

#[test]
fn the_wsl2_pci_path_failure_says_to_upgrade() {
    let text = "h:1:2 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:01/../../0000:01:00.0\n";
    let f = finding_by_id(&pasted(text), "topology-pci-path").clone();
    assert!(f.fix.contains("upgrade NCCL to 2.10"), "{}", f.fix);
    let other = "h:1:2 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /dev/foo\n";
    assert!(!ids(&pasted(other)).contains(&"topology-pci-path"));
}
