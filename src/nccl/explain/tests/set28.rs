//! Tests of the rules written from blind set 28: a variable NCCL shows with another value
//! than the one set, a line quoted whole, all_gather wrong from 4 GiB, CUDA refusing the
//! SHM segment, a failure through the UCX network plugin, a port that goes down and up,
//! the retry that hid a refused connect, and IB advice kept from runs without IB. Each
//! both ways: the failure, and a near miss.

use super::*;

fn with_env(text: &str, name: &str, value: &str) -> Explanation {
    explain_inputs(
        &[Input { name: "-", text }],
        &Options {
            env: vec![(name.into(), value.into())],
        },
    )
}

#[test]
fn a_word_nccl_reads_as_a_number_is_named_with_the_release_that_reads_it() {
    let shown = "\"NCCL INFO NCCL_P2P_LEVEL set by environment to 0\"\n";
    let e = with_env(shown, "NCCL_P2P_LEVEL", "NVL");
    let f = finding_by_id(&e, "env-read-otherwise").clone();
    assert_eq!(f.title, "NCCL read NCCL_P2P_LEVEL as 0, not NVL");
    assert!(
        f.cause.contains("NCCL 2.6") && f.cause.contains("as a number"),
        "{}",
        f.cause
    );
    assert!(f.cause.contains("NVLink included"), "{}", f.cause);
    assert!(f.fix.starts_with("Unset NCCL_P2P_LEVEL"), "{}", f.fix);
    // The value NCCL shows is the one set (in another case): nothing to say.
    let same = with_env(shown, "NCCL_P2P_LEVEL", "0");
    assert!(!ids(&same).contains(&"env-read-otherwise"));
    let word = with_env(
        "h:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to nvl\n",
        "NCCL_P2P_LEVEL",
        "NVL",
    );
    assert!(!ids(&word).contains(&"env-read-otherwise"));
}

#[test]
fn a_word_shown_as_another_word_was_set_again() {
    let text = "h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n";
    let e = with_env(text, "NCCL_SOCKET_IFNAME", "ib0");
    let f = finding_by_id(&e, "env-read-otherwise").clone();
    assert!(f.cause.contains("set it again"), "{}", f.cause);
    assert!(f.fix.contains("env | grep NCCL_SOCKET_IFNAME"), "{}", f.fix);
    assert!(!f.cause.contains("as a number"), "{}", f.cause);
    // Set and never shown is the other finding.
    let other = "h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0\n";
    let e = with_env(other, "NCCL_SOCKET_IFNAME", "ib0");
    assert!(ids(&e).contains(&"env-not-shown"));
    assert!(!ids(&e).contains(&"env-read-otherwise"));
}

#[test]
fn a_value_set_is_compared_as_nccl_reads_it() {
    let shown = |name: &str, value: &str| {
        format!("h:1:2 [0] NCCL INFO {name} set by environment to {value}\n")
    };
    // Quotes and a closing `;` of an export are not part of the value.
    let text = format!(
        "$ export NCCL_IB_HCA=\"mlx5_0\"; export NCCL_SOCKET_IFNAME='eth0'\n{}{}",
        shown("NCCL_IB_HCA", "mlx5_0"),
        shown("NCCL_SOCKET_IFNAME", "eth0")
    );
    assert!(!ids(&pasted(&text)).contains(&"env-read-otherwise"));
    // An integer NCCL reads in base 0, and -1 as an old NCCL prints it.
    let hex = with_env(&shown("NCCL_IB_TC", "104"), "NCCL_IB_TC", "0x68");
    assert!(!ids(&hex).contains(&"env-read-otherwise"));
    let minus = with_env(
        &shown("NCCL_MAX_NCHANNELS", "18446744073709551615"),
        "NCCL_MAX_NCHANNELS",
        "-1",
    );
    assert!(!ids(&minus).contains(&"env-read-otherwise"));
    let other = with_env(&shown("NCCL_IB_TC", "106"), "NCCL_IB_TC", "0x68");
    assert!(ids(&other).contains(&"env-read-otherwise"));
    // A legacy level number NCCL shows as its word, but not one word as another.
    let level = with_env(&shown("NCCL_P2P_LEVEL", "PXB"), "NCCL_P2P_LEVEL", "2");
    assert!(!ids(&level).contains(&"env-read-otherwise"));
    let word = with_env(&shown("NCCL_P2P_LEVEL", "PXB"), "NCCL_P2P_LEVEL", "NVL");
    assert!(ids(&word).contains(&"env-read-otherwise"));
    // Two values set in one paste: which one the log ran with is unknown.
    let twice = format!(
        "export NCCL_SOCKET_IFNAME=ib0\nexport NCCL_SOCKET_IFNAME=eth0\n{}",
        shown("NCCL_SOCKET_IFNAME", "eth0")
    );
    assert!(!ids(&pasted(&twice)).contains(&"env-read-otherwise"));
    let once = format!(
        "export NCCL_SOCKET_IFNAME=ib0\n{}",
        shown("NCCL_SOCKET_IFNAME", "eth0")
    );
    assert!(ids(&pasted(&once)).contains(&"env-read-otherwise"));
}

#[test]
fn a_line_quoted_whole_is_read_without_its_quotes() {
    let log =
        crate::nccl::log::parse("`h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0`\n");
    assert_eq!(log.env, [("NCCL_IB_HCA".to_string(), "mlx5_0".to_string())]);
    // Quotes inside a line stay.
    let log = crate::nccl::log::parse(
        "h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to \"a\" and \"b\"\n",
    );
    assert_eq!(log.env[0].1, "\"a\" and \"b\"");
}

const GATHER_4G: &str = "all_gather_perf -g 8 -b 4294967296 -e 4294967296 -n 100\n\
    #       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n\
      4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00\n\
     Out of bounds values : 2 FAILED\n";

#[test]
fn all_gather_wrong_only_from_4_gib_is_the_offset_bug_before_2_6_4() {
    let f = finding_by_id(&pasted(GATHER_4G), "tests-wrong").clone();
    assert!(f.cause.contains("1 of 1 sizes"), "{}", f.cause);
    assert!(
        f.fix.contains("If this NCCL is older than 2.6.4"),
        "{}",
        f.fix
    );
    let old = format!("# NCCL version 2.5.6+cuda10.1\n{GATHER_4G}");
    let f = finding_by_id(&pasted(&old), "tests-wrong").clone();
    assert!(f.fix.contains("Upgrade NCCL to 2.6.4"), "{}", f.fix);
    // A release with the fix, or a smaller size wrong too: not this bug.
    let fixed = format!("# NCCL version 2.18.3+cuda12.2\n{GATHER_4G}");
    let f = finding_by_id(&pasted(&fixed), "tests-wrong").clone();
    assert!(!f.fix.contains("2.6.4"), "{}", f.fix);
    let small = GATHER_4G.replace("4294967296     134217728", "1048576     32768");
    let f = finding_by_id(&pasted(&small), "tests-wrong").clone();
    assert!(!f.fix.contains("2.6.4"), "{}", f.fix);
}

#[test]
fn an_old_row_without_a_redop_is_read() {
    use super::super::tests_output::row_of;
    let row = "  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00";
    let r = row_of(row).unwrap();
    assert_eq!((r.bytes, r.busbw, r.wrong), (4294967296, 129.05, 1.0));
    // With a root first (12 words), busbw is one word further on.
    let r = row_of(
        "  1048576  262144  float  0  100.1  10.48  10.49  0e+00  99.8  10.51  10.52  0e+00",
    )
    .unwrap();
    assert_eq!((r.bytes, r.busbw, r.wrong), (1048576, 10.49, 0.0));
    // A line of figures without a type is not a row.
    assert!(row_of("  1048576  262144  12  100.1  10.48  10.48  0e+00  99.8  10.51").is_none());
}

#[test]
fn cuda_refusing_the_shm_segment_is_an_shm_finding() {
    let text = "h:151780:151928 [2] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'\n\
                h:151780:151928 [2] NCCL INFO transport/shm.cu:187 -> 1\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "shm-cuda-register").clone();
    assert!(f.cause.contains("cudaHostRegister") && f.fix.contains("NCCL_SHM_DISABLE=1"));
    assert!(!ids(&e).contains(&"cuda-failure"));
    // Another CUDA error on the SHM path (cuMem's peer access): not this reading.
    let peer = "h:1:2 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'\n";
    assert!(!ids(&pasted(peer)).contains(&"shm-cuda-register"));
}

#[test]
fn a_failure_through_the_ucx_plugin_names_it_and_the_socket_error_follows() {
    let text = "h:87529:87613 [4] socket.c:540 NCCL WARN Net : Connection closed by remote peer 172.27.20.148<33806>\n\
                h:87529:87613 [4] NCCL INFO socket.c:548 -> 6\n\
                h:87529:87613 [4] NCCL INFO ucx_plugin.c:485 -> 6\n\
                h:87529:87613 [4] NCCL INFO transport/net.cc:701 -> 6\n";
    let e = pasted(text);
    let f = finding_by_id(&e, "net-plugin-ucx").clone();
    assert!(f.fix.contains("NCCL_PLUGIN_P2P=ib"), "{}", f.fix);
    let s = finding_by_id(&e, "socket-error");
    assert_eq!(s.follows, Some("net-plugin-ucx"));
    assert!(!s.fix.contains("NCCL_SOCKET_IFNAME"), "{}", s.fix);
    // The plugin's own warnings (a UCX_TLS it cannot use, a worker's close) are not
    // failures.
    let warning = "h:1:2 [0] ucx_plugin.c:344 NCCL WARN Cannot use cuda/gdr transports as part of specified UCX_TLS\n";
    assert!(!ids(&pasted(warning)).contains(&"net-plugin-ucx"));
    let rd = text.replace("ucx_plugin.c", "ucx_uct_rd_plugin.c");
    assert!(ids(&pasted(&rd)).contains(&"net-plugin-ucx"));
    // The plugin's IB path: not the UCX finding.
    let ib = text.replace("ucx_plugin.c", "ib_plugin.c");
    assert!(!ids(&pasted(&ib)).contains(&"net-plugin-ucx"));
}

#[test]
fn a_port_that_goes_down_and_up_is_read_in_newer_wording() {
    let text = "h:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async error event: port error\n\
                h:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async error event: port active\n";
    let e = pasted(text);
    let down = finding_by_id(&e, "ib-port-error").clone();
    assert!(down.cause.contains("mlx5_32:1"), "{}", down.cause);
    assert!(ids(&e).contains(&"ib-port-active"));
    // Neither leaves a line for the generic IB finding and its memlock advice.
    assert!(!ids(&e).contains(&"ib-error"), "{:?}", ids(&e));
    let up = text.lines().nth(1).unwrap();
    let e = pasted(up);
    assert!(ids(&e).contains(&"ib-port-active"));
    assert!(!ids(&e).contains(&"ib-port-error"));
    // NCCL 2.29's wording of the same events, and 2.23's of a queue pair's fatal one.
    let newer = "h:1:2 [0] transport/net_ib/common.cc:179 NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)\n";
    assert!(ids(&pasted(newer)).contains(&"ib-port-error"));
    let qp = "h:1:2 [0] transport/net_ib.cc:152 NCCL WARN NET/IB : mlx5_0:1 async fatal event on QP (0x5581): local access violation work queue error\n";
    assert!(ids(&pasted(qp)).contains(&"ib-access-violation"));
    let other = qp.replace("local access violation", "invalid request");
    assert!(!ids(&pasted(&other)).contains(&"ib-access-violation"));
}

#[test]
fn a_connect_abort_alone_is_read_and_names_the_retry_fixed_in_2_24_3() {
    let text = "`socketStartConnect: Connect to 10.45.234.83<47527> failed : Software caused connection abort`\n";
    let inputs = [Input { name: "-", text }];
    assert!(is_explainable(&inputs));
    let e = pasted(text);
    assert!(e
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::KnownBug
            && f.title.contains("socket-retry-connection-abort")));
    let hedge = e
        .findings
        .iter()
        .find(|f| f.title.contains("socket-retry-connection-abort"))
        .unwrap();
    assert!(
        hedge
            .cause
            .starts_with("If this NCCL is older than 2.24.3 (its version is not shown)"),
        "{}",
        hedge.cause
    );
    // PyTorch's TCPStore says the same words: not NCCL's retry.
    let store = "torch.distributed.DistNetworkError: Connection reset by peer, errno: 103 - Software caused connection abort\n";
    assert!(!pasted(store)
        .findings
        .iter()
        .any(|f| f.title.contains("socket-retry-connection-abort")));
    // At a release with the fix: no such bug.
    let fixed = format!("h:1:2 [0] NCCL INFO NCCL version 2.26.2+cuda12.2\n{text}");
    let e = pasted(&fixed);
    assert!(!e
        .findings
        .iter()
        .any(|f| f.title.contains("socket-retry-connection-abort")));
}

#[test]
fn ib_advice_stays_out_of_runs_on_the_ofi_plugin_and_names_set_hcas_only() {
    let efa = "h:954:3133 [6] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
               h:954:3133 [6] NCCL INFO NET/IB : No device found.\n\
               h:954:3133 [6] NCCL INFO NET/Socket : Using [0]eth0:10.67.132.202<0>\n\
               h:954:3133 [6] NCCL INFO Using network Socket\n\
               g:944:3818 [0] NCCL INFO NET/Socket : Using [0]eth0:10.67.132.117<0>\n";
    let e = pasted(efa);
    assert!(ids(&e).contains(&"ofi-no-efa"));
    assert!(!ids(&e).contains(&"ib-no-device"), "{:?}", ids(&e));
    // Without the plugin's line, the same run gets the IB finding, and it sends nobody
    // to NCCL_IB_HCA.
    let plain: String = efa.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let f = finding_by_id(&pasted(&plain), "ib-no-device").clone();
    assert!(!f.fix.contains("NCCL_IB_HCA"), "{}", f.fix);
}

#[test]
fn nccl_2_3_without_an_ib_port_is_said_once_and_names_a_set_hca() {
    let old = "srv4:314:320 [0] NCCL INFO NET/IB : Using interface ens5f0.3003 for sideband communication\n\
               srv4:314:320 [0] NCCL INFO Using internal Network Socket\n\
               srv5:938:944 [0] NCCL INFO Using internal Network Socket\n";
    let f = finding_by_id(&pasted(old), "ib-no-device").clone();
    assert!(f.title.contains("no active InfiniBand port"), "{}", f.title);
    assert!(!f.fix.contains("NCCL_IB_HCA"), "{}", f.fix);
    let set = with_env(old, "NCCL_IB_HCA", "mlx5_0");
    let f = finding_by_id(&set, "ib-no-device").clone();
    assert!(
        f.fix.contains("NCCL_IB_HCA=mlx5_0 must name them"),
        "{}",
        f.fix
    );
    // With libibverbs missing on the other host as well: one IB finding, not two.
    let both = format!(
        "{old}srv5:938:944 [0] misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    );
    let e = pasted(&both);
    let n = e
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::IbNoDevice)
        .count();
    assert_eq!(n, 1, "{:?}", ids(&e));
}
