//! Tests of what the log parser reads beyond connections: interfaces, environment
//! settings, processes, and the details of SHM and connect failures.

use super::super::*;
use super::kinds;

#[test]
fn interface_lines_of_every_spelling_are_read_without_counting_as_nccl_lines() {
    let log = parse(
        "h:1:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n\
         h:1:2 [0] NCCL INFO Bootstrap: Using ib0:10.1.0.1<0>\n\
         h:1:2 [0] NCCL INFO NET/Socket : Using [0]enp1s0:192.168.1.2<0> [1]enx02:fe80::52b1:b1f3%enx02<0>\n\
         h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB/SHARP [RO]; OOB eth0:10.0.0.1<0>\n\
         h:1:2 [0] NCCL INFO NET/IB : No device found.\n\
         h:1:2 [0] NCCL INFO Failed to open libibverbs.so[.1]\n\
         h:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n\
         h:1:2 [0] NCCL INFO Using network Socket\n\
         h:1:2 [0] NCCL INFO Bootstrap timings total 0.001151 (create 0.000048)\n\
         NET/Socket : Using [0]lo:127.0.0.1<0>\n",
    );
    let read: Vec<(&str, Vec<&str>, Option<&str>, usize)> = log
        .interfaces
        .iter()
        .map(|i| {
            (
                i.source.as_str(),
                i.names.iter().map(String::as_str).collect(),
                i.host.as_deref(),
                i.line,
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            ("Bootstrap", vec!["eth0"], Some("h"), 1),
            ("Bootstrap", vec!["ib0"], Some("h"), 2),
            ("NET/Socket", vec!["enp1s0", "enx02"], Some("h"), 3),
            ("NET/IB", vec!["mlx5_0:1", "mlx5_1:1"], Some("h"), 4),
            ("NET/IB", vec![], Some("h"), 5),
            ("NET/IB", vec![], Some("h"), 6),
            ("NET/Socket", vec!["lo"], None, 10),
        ]
    );
    assert_eq!(log.interfaces[4].text, "NET/IB : No device found.");
    // The untagged interface line is kept but does not make the text an NCCL log.
    assert_eq!(log.nccl_lines, 9);
    assert_eq!(
        parse("NET/Socket : Using [0]lo:127.0.0.1<0>\n").nccl_lines,
        0
    );
}

#[test]
fn environment_lines_give_distinct_name_value_pairs() {
    let log = parse(
        "h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0,lo\n\
         h:1:2 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n\
         h:1:3 [1] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n\
         NCCL_IB_HCA set by environment to =mlx5_0:1\n\
         h:1:2 [0] NCCL INFO my_var set by environment to 3\n",
    );
    let env: Vec<(&str, &str)> = log
        .env
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env,
        [
            ("NCCL_SOCKET_IFNAME", "^docker0,lo"),
            ("NCCL_SHM_DISABLE", "1"),
            ("NCCL_IB_HCA", "=mlx5_0:1"),
        ]
    );
}

#[test]
fn processes_collect_the_devices_their_prefixes_name() {
    let log = parse(
        "[1,0]<stdout>:w0:26:67 [0] NCCL INFO Setting affinity\n\
         [2025-06-06 09:52:01] w0:26:68 [2] NCCL INFO x\n\
         [1] w1:30:31 [1] NCCL INFO y\n\
         w0:26:69 [0] misc/a.cc:1 NCCL WARN z\n\
         NCCL INFO no prefix\n",
    );
    let seen: Vec<(&str, u32, &[u32])> = log
        .processes
        .iter()
        .map(|p| (p.host.as_str(), p.pid, p.devices.as_slice()))
        .collect();
    assert_eq!(seen, [("w0", 26, &[0, 2][..]), ("w1", 30, &[1][..])]);
}

#[test]
fn shm_failures_name_their_segment_size_and_connect_failures_their_peer() {
    let failure = |text: &str| Failure {
        kind: FailureKind::Other,
        line: 1,
        text: text.to_string(),
    };
    let sizes = [
        ("Error while creating shared memory segment /dev/shm/nccl-a (size 9637888)", Some(9637888)),
        ("Error while creating shared memory segment /dev/shm/nccl-a (size 33030528), error: No space left on device (28)", Some(33030528)),
        ("Error: failed to extend /dev/shm/nccl-a to 9637892 bytes, error: No space left on device (28)", Some(9637892)),
        ("Error while attaching to shared memory segment /dev/shm/nccl-a (size 0)", None),
        ("Call to posix_fallocate failed : No space left on device", None),
        ("Error: failed to extend /dev/shm/nccl-a to many bytes", None),
    ];
    for (text, size) in sizes {
        assert_eq!(failure(text).shm_segment_size(), size, "{text}");
    }
    assert_eq!(
        failure("socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort")
            .connect_target(),
        Some("10.0.0.2<45763>")
    );
    assert_eq!(
        failure("Connection closed by remote peer").connect_target(),
        None
    );
}

#[test]
fn shm_failures_are_recognised_untagged_as_pytorch_prints_the_last_error() {
    let log = parse(
        "Last error:\n\
         Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n\
         Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 9637888), error: No such file or directory (2)\n",
    );
    assert_eq!(
        kinds(&log),
        [
            (FailureKind::ShmEnospc, 2),
            (FailureKind::ShmAttachEnoent, 3)
        ]
    );
    assert_eq!(log.nccl_lines, 0);
}

/// NCCL turns `%%` into `%` and `%h`/`%p` into the host and pid anywhere in
/// `NCCL_DEBUG_FILE`: a `%` of the directory must come out as it went in.
#[test]
fn a_percent_in_the_log_path_is_escaped_for_nccl() {
    let file = debug_file(Path::new("/runs/50%h/logs/default.n2.nccl"));
    assert_eq!(file, "/runs/50%%h/logs/default.n2.nccl.%h.%p.log");
    // NCCL's expansion (debug.cc): %% -> %, %h -> host, %p -> pid.
    let (mut out, mut chars) = (String::new(), file.chars());
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('h') => out.push_str("node7"),
            Some('p') => out.push_str("42"),
            other => {
                out.push('%');
                out.extend(other);
            }
        }
    }
    assert_eq!(out, "/runs/50%h/logs/default.n2.nccl.node7.42.log");
    assert_eq!(
        debug_file(Path::new("/tmp/x/nccl")),
        "/tmp/x/nccl.%h.%p.log"
    );
}

#[test]
fn nvls_counts_as_used_only_when_its_bind_did_not_fail() {
    let info = |m: &str| format!("h:1:2 [0] NCCL INFO {m}\n");
    let comm = info("NVLS comm 0x55 headRank 0 nHeads 8 nvlsRanks 8 buffSize 1048576 nvlsPerRankSize 33554432 nvlsTotalSize 268435456");
    // 2.27.3-2.28.9 with NCCL_NVLS_ENABLE unset (transport/nvls.cc): NCCL goes on
    // without NVLS; no failure.
    let proceeding = info("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'. Proceeding without NVLS support.");
    let log = parse(&(comm.clone() + &proceeding));
    assert_eq!((log.nvls, log.failures.len()), (NvlsUse::Failed, 0));
    assert_eq!(log.transports_cell(), "");
    // 2.29+: the WARN, and the job fails; `NVLS comm` came first and proves nothing.
    let warn = "h:1:2 [0] transport/nvls.cc:284 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'.\n";
    let log = parse(&(comm.clone() + warn));
    assert_eq!(log.nvls, NvlsUse::Failed);
    assert_eq!(kinds(&log), [(FailureKind::NvlsBind, 2)]);
    // Before 2.27 only the CUDA error, from transport/nvls.cc; a CUDA failure elsewhere
    // is not NVLS's.
    let old = "h:1:2 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot be performed in the present state'\n";
    assert_eq!(kinds(&parse(old)), [(FailureKind::NvlsBind, 1)]);
    let elsewhere = "h:1:2 [0] misc/alloc.cc:9 NCCL WARN Cuda failure 2 'out of memory'\n";
    assert_eq!(kinds(&parse(elsewhere)), [(FailureKind::CudaFailure, 1)]);
    assert_eq!(parse(elsewhere).nvls, NvlsUse::Unknown);
    // 2.30.7 names the function after the source line.
    let named = "h:1:2 [5] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Cuda failure 802 'system not yet initialized'\n";
    assert_eq!(kinds(&parse(named)), [(FailureKind::NvlsBind, 1)]);
    // Set up and bound: used.
    assert_eq!(parse(&comm).nvls, NvlsUse::Used);
}

#[test]
fn shm_backing_is_read_from_the_shm_lines_not_from_other_dev_shm_users() {
    let info = |m: &str| format!("h:1:2 [0] NCCL INFO {m}\n");
    let cumem = info("CUMEM allocated shareable buffer 0x7f0000000000 size 9637888");
    let imported = info("CUMEM imported shareable host buffer from proxyRank 2 size 4096 ptr 0x7f6e33400000, granularity 2097152");
    let mmap = info(
        "MMAP imported shareable host buffer /dev/shm/nccl-I9oUed size 13832192 ptr 0x7f802659c000",
    );
    let fallback = info("cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based implementation. This could be due to the container runtime disabling NUMA support. To disable this warning, set NCCL_CUMEM_HOST_ENABLE=0");
    // The proxy's ops pool is a /dev/shm file whatever SHM uses.
    let pool = info("Allocated 33554436 bytes of shared memory in /dev/shm/nccl-AbCdEf");
    let b = parse(&(cumem.clone() + &imported + &pool)).shm_backing;
    assert_eq!((b.label(), b.dev_shm), (Some("cumem-host"), 0));
    assert_eq!(parse(&mmap).shm_backing.label(), Some("dev-shm"));
    let b = parse(&(fallback.clone() + &mmap)).shm_backing;
    assert_eq!((b.label(), b.fallback_line), (Some("dev-shm"), Some(1)));
    assert_eq!(
        parse(&(cumem + &fallback)).shm_backing.label(),
        Some("mixed")
    );
    assert_eq!(parse(&pool).shm_backing.label(), None);
    // A full /dev/shm at SHM's own segment size is SHM on /dev/shm; another size may
    // be the proxy's pool.
    let full = "h:1:2 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)\n";
    assert_eq!(parse(full).shm_backing.label(), Some("dev-shm"));
    let other = "h:1:2 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE to 33554436 bytes, error: No space left on device (28)\n";
    assert_eq!(parse(other).shm_backing.label(), None);
}

/// 2.30 names the function in its WARN prefix and in the error-return trail
/// (`nccl/src/dev_runtime.cc:602 (symMemoryObtain) -> 3`): an unknown WARN whose thread
/// returns an error that way is a failure, and a full symmetric space is its own kind.
#[test]
fn the_2_30_trail_with_function_names_is_read() {
    let log = parse(
        "h:1:2 [0] nccl/src/foo.cc:12 (fooBar) NCCL WARN Something unheard of\n\
         h:1:2 [0] NCCL INFO nccl/src/init.cc:88 (ncclCommInitRank) -> 3\n\
         h:1:3 [0] nccl/src/allocator.cc:229 (ncclSpaceAlloc) NCCL WARN Allocation failed. No suitable space found to accommodate size=0x2171600000 within limit=0x2d00000000\n",
    );
    let kinds: Vec<FailureKind> = log.failures.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FailureKind::Other, FailureKind::WindowSpace]);
    // A parenthesised word alone is no trail.
    let alone = parse(
        "h:1:2 [0] nccl/src/foo.cc:12 (fooBar) NCCL WARN Something unheard of\n\
         h:1:2 [0] NCCL INFO (ncclCommInitRank) -> 3\n",
    );
    assert!(alone.failures.is_empty());
}

#[test]
fn nccl_2_3_lines_without_the_nccl_word_are_read_and_other_info_is_not() {
    let log = parse(
        "learngpu060:3728593:3730444 [6] INFO Ring 00 : 6[6] -> 10[2] via P2P/IPC\n\
         learngpu060:3728593:3730444 [6] misc/ibvwrap.cc:63 WARN Failed to open libibverbs.so[.1]\n\
         INFO:root:Ring 00 : 1[1] -> 2[2] via P2P/IPC\n\
         2021-03-01 INFO Ring 00 : 3[3] -> 4[4] via P2P/IPC\n",
    );
    assert_eq!(log.connections.len(), 1, "{:?}", log.connections);
    let c = &log.connections[0];
    assert_eq!((c.from_rank, c.to_rank, c.to_dev.as_str()), (6, 10, "2"));
    assert_eq!(c.host.as_deref(), Some("learngpu060"));
    assert_eq!(
        log.interfaces.len(),
        1,
        "the WARN line with its source is read"
    );
}

#[test]
fn network_plugins_are_named_from_each_spelling_and_none_is_internal() {
    let log = parse(
        "h:1:2 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n",
    );
    assert_eq!(
        log.plugins,
        ["/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"]
    );
    for line in [
        "h:1:2 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
        "h:1:2 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
    ] {
        assert_eq!(parse(line).plugins, ["internal"], "{line}");
    }
}

#[test]
fn nccl_2_3_names_its_network_and_its_ib_sideband_interface_in_its_own_words() {
    let log = parse(
        "gpu2:1:1 [0] NCCL INFO NET/IB : Using interface ib0 for sideband communication\n\
         gpu2:1:1 [0] NCCL INFO Using internal Network Socket\n\
         gpu3:1:1 [0] NCCL INFO Using external Network AWS Libfabric\n",
    );
    // The sideband interface is an IP interface, not an IB device.
    assert!(log.interfaces.is_empty(), "{:?}", log.interfaces);
    assert_eq!(log.networks, ["Socket", "AWS Libfabric"]);
}

#[test]
fn connect_retries_of_2_24_count_their_attempts_without_an_address() {
    let log = parse(
        "z:1:2 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (26/34) after sleep for 2600 msec\n",
    );
    let r = &log.connect_retries[0];
    assert_eq!(
        (r.target.as_deref(), r.error.as_str(), r.attempt),
        (None, "No route to host", Some((26, 34)))
    );
}
