//! Lines as NCCL's format strings write them, one wording per version range.

use super::*;

/// printf's `%f`: six decimals.
fn f(v: f64) -> String {
    format!("{v:.6}")
}

#[test]
fn numeric_wording_of_2_20_to_2_22_with_the_models_time() {
    // "%ld Bytes -> Algo %d proto %d time %f"
    let line = format!(
        "{} Bytes -> Algo {} proto {} time {}",
        1048576,
        1,
        2,
        f(36.592)
    );
    let c = parse_choice(&line).unwrap();
    assert_eq!(c.func, None);
    assert_eq!(
        (c.bytes, c.algo, c.proto),
        (1048576, Algorithm::Ring, Some(Protocol::Simple))
    );
    assert_eq!(c.predicted_us, Some(36.592));
    assert_eq!(c.channels, None);
    let tree_ll = parse_choice("8 Bytes -> Algo 0 proto 0 time 10.200000").unwrap();
    assert_eq!(
        (tree_ll.algo, tree_ll.proto),
        (Algorithm::Tree, Some(Protocol::Ll))
    );
    // NVLS (4) and PAT (6) by number; 7 is no algorithm.
    assert_eq!(
        parse_choice("1 Bytes -> Algo 4 proto 2 time 1.0")
            .unwrap()
            .algo,
        Algorithm::Nvls
    );
    assert_eq!(
        parse_choice("1 Bytes -> Algo 6 proto 2 time 1.0")
            .unwrap()
            .algo,
        Algorithm::Pat
    );
    assert_eq!(parse_choice("1 Bytes -> Algo 7 proto 2 time 1.0"), None);
}

#[test]
fn function_first_wording_of_2_23() {
    // "%s: %ld Bytes -> Algo %d proto %d time %f"
    let line = format!(
        "{}: {} Bytes -> Algo {} proto {} time {}",
        "AllReduce",
        65536,
        5,
        1,
        f(20.5)
    );
    let c = parse_choice(&line).unwrap();
    assert_eq!(c.func.as_deref(), Some("AllReduce"));
    assert_eq!(
        (c.algo, c.proto, c.predicted_us),
        (Algorithm::NvlsTree, Some(Protocol::Ll128), Some(20.5))
    );
}

#[test]
fn named_wording_of_2_24_on_with_channels() {
    // "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}"
    for (algo, want) in [
        ("TREE", Algorithm::Tree),
        ("RING", Algorithm::Ring),
        ("COLLNET_DIRECT", Algorithm::CollNetDirect),
        ("COLLNET_CHAIN", Algorithm::CollNetChain),
        ("NVLS", Algorithm::Nvls),
        ("NVLS_TREE", Algorithm::NvlsTree),
        ("PAT", Algorithm::Pat),
    ] {
        let line = format!(
            "{}: {} Bytes -> Algo {} proto {} channel{{Lo..Hi}}={{{}..{}}}",
            "AllReduce", 4194304, algo, "SIMPLE", 0, 15
        );
        let c = parse_choice(&line).unwrap();
        assert_eq!((c.algo, c.proto), (want, Some(Protocol::Simple)), "{line}");
        assert_eq!((c.channels, c.predicted_us), (Some(16), None));
    }
    let c =
        parse_choice("AllGather: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={2..3}").unwrap();
    assert_eq!(
        (c.func.as_deref(), c.proto, c.channels),
        (Some("AllGather"), Some(Protocol::Ll), Some(2))
    );
}

#[test]
fn symmetric_kernels_of_2_27_and_2_28() {
    // 2.27: "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d"
    let c = parse_choice(
        "AllReduce [Symmetric]: 4096 Bytes -> Kernel AllReduce_AGxLL_R nchannels 4 nthreads 512",
    )
    .unwrap();
    assert_eq!(c.algo, Algorithm::Symmetric);
    assert_eq!((c.proto, c.channels), (None, Some(4)));
    assert_eq!(c.kernel.as_deref(), Some("AllReduce_AGxLL_R"));
    assert_eq!(c.func.as_deref(), Some("AllReduce"));
    // 2.28 adds " nWorks %d".
    let c = parse_choice("AllReduce [Symmetric]: 8 Bytes -> Kernel AllReduce_RSxLD_AGxST nchannels 2 nthreads 256 nWorks 1").unwrap();
    assert_eq!((c.bytes, c.channels), (8, Some(2)));
}

#[test]
fn other_lines_are_not_choices() {
    for line in [
        "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "comm 0x5 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
        "12 Bytes -> somewhere",
        "AllReduce: x Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}",
        "AllReduce: 8 Bytes -> Algo WARP proto SIMPLE channel{Lo..Hi}={0..1}",
    ] {
        assert_eq!(parse_choice(line), None, "{line}");
    }
}

#[test]
fn the_init_table_lines_are_recognised() {
    // tuning.cc: "  Algorithm   |" " %14s   %14s   %14s |", "%13s |" "%8.1f/%6.1f |"
    let header = format!("  Algorithm   | {:>14}   {:>14}   {:>14} |", "", "Tree", "");
    let row = format!("{:>13} |{:>8.1}/{:>6.1} |", "AllReduce", 6.8, 120.5);
    assert!(is_table_line(&header));
    assert!(is_table_line(&row));
    assert!(is_table_line(" Max NThreads |            512 |"));
    assert!(!is_table_line(
        "AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"
    ));
}

fn choice(bytes: u64, algo: Algorithm, proto: Protocol) -> Choice {
    Choice {
        func: Some("AllReduce".into()),
        bytes,
        algo,
        proto: Some(proto),
        channels: Some(2),
        predicted_us: None,
        kernel: None,
    }
}

#[test]
fn a_case_reads_its_own_size_and_says_a_silent_fall_back() {
    let lines = vec![
        choice(8, Algorithm::Ring, Protocol::Ll),
        choice(1024, Algorithm::Ring, Protocol::Ll),
        choice(1024, Algorithm::Tree, Protocol::Ll),
    ];
    let d = decision(&lines, "AllReduce", 8, None, None).unwrap();
    assert_eq!(
        (d.algo.as_str(), d.proto.as_str(), d.channels.as_str()),
        ("Ring", "LL", "2")
    );
    assert!(d.note.is_empty());
    let mixed = decision(&lines, "AllReduce", 1024, None, None).unwrap();
    assert_eq!(mixed.algo, "Ring:50%;Tree:50%");
    assert_eq!(mixed.proto, "LL");
    assert_eq!(decision(&lines, "AllReduce", 16, None, None), None);
    // NCCL_ALGO=nvls before 2.24 where NVLS is not available: Ring, said.
    let d = decision(&lines, "AllReduce", 8, Some("nvls"), None).unwrap();
    assert_eq!(
        d.note,
        "fell back to RING: NCCL_ALGO=nvls is not available here"
    );
    // Allowed choices are no fall-back, in either syntax.
    assert!(
        decision(&lines, "AllReduce", 8, Some("ring,tree"), Some("LL"))
            .unwrap()
            .note
            .is_empty()
    );
    assert!(
        decision(&lines, "AllReduce", 8, Some("tree;allreduce:ring"), None)
            .unwrap()
            .note
            .is_empty()
    );
    assert!(
        decision(&lines, "AllReduce", 8, Some("^tree"), Some("^LL128"))
            .unwrap()
            .note
            .is_empty()
    );
    let d = decision(&lines, "AllReduce", 8, None, Some("Simple")).unwrap();
    assert_eq!(
        d.note,
        "fell back to LL: NCCL_PROTO=Simple is not available here"
    );
    // Other functions' lines are not the all-reduce's, but their own; a line that
    // names no function (before 2.23) is an all-reduce's.
    let gather = Choice {
        func: Some("AllGather".into()),
        ..choice(64, Algorithm::Pat, Protocol::Simple)
    };
    assert_eq!(
        decision(std::slice::from_ref(&gather), "AllReduce", 64, None, None),
        None
    );
    let d = decision(&[gather], "AllGather", 64, None, None).unwrap();
    assert_eq!((d.algo.as_str(), d.proto.as_str()), ("PAT", "Simple"));
    let unnamed = Choice {
        func: None,
        ..choice(64, Algorithm::Ring, Protocol::Ll)
    };
    assert_eq!(
        decision(std::slice::from_ref(&unnamed), "AllGather", 64, None, None),
        None
    );
    assert!(decision(&[unnamed], "AllReduce", 64, None, None).is_some());
}

#[test]
fn forcing_lists_in_both_syntaxes() {
    let all = ALGORITHMS.map(Algorithm::name);
    assert_eq!(allowed_names("ring", &all), Some(vec!["Ring"]));
    assert_eq!(
        allowed_names("NVLS_TREE,nvls", &all),
        Some(vec!["NVLS", "NVLSTree"])
    );
    assert_eq!(allowed_names("^ring,tree", &all).unwrap().len(), 5);
    assert_eq!(
        allowed_names("ring;allreduce:tree", &all),
        Some(vec!["Tree"])
    );
    assert_eq!(
        allowed_names("ring;broadcast:tree", &all),
        Some(vec!["Ring"])
    );
    assert_eq!(allowed_names("allreduce:^ring", &all).unwrap().len(), 6);
    assert_eq!(allowed_names("ring;tree", &all), None);
}

#[test]
fn refusals_in_nccls_words() {
    assert!(is_refused_choice("Error : no algorithm/protocol available for function AllReduce with datatype ncclFloat32. NCCL_ALGO was set to NVLS."));
    // A typo in the variable is the config's fault: failed, not unsupported.
    assert!(!is_refused_choice(
        "Unrecognized element token \"rng\" when parsing \"rng\""
    ));
    assert!(!is_refused_choice("Cuda failure 'out of memory'"));
    let v = |code| NcclVersion::from_code(code);
    assert!(refuses_impossible_choice(v(22403)) && !refuses_impossible_choice(v(22304)));
    assert!(logs_choices(v(22005)) && !logs_choices(v(21903)));
    assert!(has_simulate(v(22203)) && !has_simulate(v(22105)));
}

#[test]
fn copy_engine_lines_are_a_choice_without_protocol() {
    // 2.29.2+ (enqueue.cc): "%s [Copy Engine]: %ld Bytes -> cudaMemcpy%s".
    let c = parse_choice(
        "AllGather [Copy Engine]: 16777216 Bytes -> cudaMemcpy; CE synchronization with NVLS",
    )
    .unwrap();
    assert_eq!(
        (c.func.as_deref(), c.bytes, c.algo, c.proto),
        (Some("AllGather"), 16777216, Algorithm::CopyEngine, None)
    );
    assert_eq!(c.algo.name(), "CE");
    // 2.30.7's hierarchical form.
    let c = parse_choice("AllGather [Hierarchical CE]: 4096 Bytes -> RMA proxy + CE").unwrap();
    assert_eq!(c.algo, Algorithm::CopyEngine);
    // A forced NCCL_ALGO does not make a copy-engine collective a fall-back.
    let d = decision(&[c], "AllGather", 4096, Some("ring"), None).unwrap();
    assert_eq!(
        (d.algo.as_str(), d.proto.as_str(), d.note.as_str()),
        ("CE", "", "")
    );
}

#[test]
fn all_gather_bytes_are_per_rank_from_2_24() {
    let v = |s: &str| crate::nccl::NcclVersion::parse(s).unwrap();
    // nccl-tests' size is all-gather's whole output: 8 ranks x 1 MiB.
    assert_eq!(logged_bytes(v("2.23.4"), "AllGather", 8 << 20, 8), 8 << 20);
    assert_eq!(logged_bytes(v("2.24.3"), "AllGather", 8 << 20, 8), 1 << 20);
    assert_eq!(
        logged_bytes(v("2.28.9"), "ReduceScatter", 8 << 20, 8),
        1 << 20
    );
    assert_eq!(logged_bytes(v("2.28.9"), "AllReduce", 8 << 20, 8), 8 << 20);
    assert_eq!(logged_bytes(v("2.28.9"), "Broadcast", 8 << 20, 8), 8 << 20);
}
