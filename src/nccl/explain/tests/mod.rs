//! Tests of `explain`: the helpers every test here shares, the host and rank-pair summaries
//! and the text report on small logs written here, and the harness that checks a real log
//! of `../shared/fixtures/nccl-logs/` against what was read off the file by hand. Each rule
//! is tested in `rules.rs` (and `readings.rs`, `pastes.rs`), each real log in `fixtures.rs`.

use std::path::PathBuf;

use super::render::WIDTH;
use super::*;
use crate::nccl::log::{parse, parse_files, TransportKind};

mod rules;

mod pastes;

mod fixtures;

mod readings;

mod around;

mod set17;

mod set18;

mod set19;

mod set20;

mod set21;
mod set22;
mod set23;
mod set24;
mod set25;
mod set26;
mod set27;
mod set28;

/// What explain makes of one pasted text.
fn pasted(text: &str) -> Explanation {
    explain_inputs(&[Input { name: "-", text }], &Options::default())
}

/// PyTorch's watchdog line for an ALLREDUCE, collective number `seq` of its process
/// group, that ran into the 30-minute timeout.
fn watchdog_timeout(seq: u32) -> String {
    format!(
        "[E ProcessGroupNCCL.cpp:474] [Rank 1] Watchdog caught collective operation timeout: \
         WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) \
         ran for 1800108 milliseconds before timing out.\n"
    )
}

/// The ids of an explanation's findings, in order.
fn ids(e: &Explanation) -> Vec<&'static str> {
    e.findings.iter().map(|f| f.kind.as_str()).collect()
}

/// The finding whose id is `id`.
fn finding_by_id<'a>(e: &'a Explanation, id: &str) -> &'a Finding {
    e.findings
        .iter()
        .find(|f| f.kind.as_str() == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(e)))
}

fn kinds(e: &Explanation) -> Vec<(FindingKind, Severity)> {
    e.findings.iter().map(|f| (f.kind, f.severity)).collect()
}

fn finding(e: &Explanation, kind: FindingKind) -> &Finding {
    e.findings
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {:#?}", e.findings))
}

/// (from rank, to rank, [(transport label, connections)]).
type PairView<'a> = (u32, u32, Vec<(&'a str, usize)>);

/// (host, pids, ranks, GPUs).
type HostView<'a> = (&'a str, &'a [u32], &'a [u32], &'a [u32]);

fn pairs(e: &Explanation) -> Vec<PairView<'_>> {
    e.pairs
        .iter()
        .map(|p| {
            let t = p
                .transports
                .iter()
                .map(|t| (t.label.as_str(), t.connections))
                .collect();
            (p.from_rank, p.to_rank, t)
        })
        .collect()
}

// ---- Summaries and text on small logs ----

#[test]
fn hosts_collect_ranks_gpus_and_pids_from_prefixes_init_and_connection_lines() {
    let log = parse(
        "[0] a:10:11 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n\
         [1] a:20:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n\
         [2] b:30:31 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [receive] via NET/Socket/0\n\
         [3] b:40:41 [2] NCCL INFO Setting affinity for GPU 2 to ff\n\
         NCCL INFO comm 0x2 rank 3 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE\n",
    );
    let e = explain(&log);
    assert_eq!(
        e.hosts,
        [
            HostSummary {
                host: String::new(),
                pids: vec![],
                ranks: vec![3],
                devices: vec![1],
            },
            HostSummary {
                host: "a".into(),
                pids: vec![10, 20],
                ranks: vec![0, 1],
                devices: vec![0, 1],
            },
            HostSummary {
                host: "b".into(),
                pids: vec![30, 40],
                ranks: vec![2],
                devices: vec![0, 2],
            },
        ]
    );
    assert_eq!(e.nranks, [4]);
}

#[test]
fn pairs_count_each_channel_connection_once_over_send_and_receive_lines() {
    let e = explain(&parse(
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
         b:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n\
         b:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n\
         a:1:2 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[0] via P2P/IPC/read\n\
         a:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[0] via SHM/direct/direct\n\
         a:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[0] via SHM/direct/direct\n\
         a:1:3 [1] NCCL INFO CollNet 00/0 : 1 [send] via COLLNET/SHARP/0\n",
    ));
    assert_eq!(
        pairs(&e),
        [
            (0, 1, vec![("NET/Socket", 2), ("SHM", 2), ("P2P/IPC", 1)]),
            (1, 1, vec![("COLLNET/SHARP", 1)]),
        ]
    );
    assert_eq!(e.pairs[0].transports[0].kind, TransportKind::Net);
    assert!(e.collnet);
}

#[test]
fn text_that_is_not_an_nccl_log_is_recognised_and_explains_to_nothing() {
    let log = parse(
        "Epoch 1/10\nloss: 0.3412 - accuracy: 0.8811\nConnection refused, retrying in 5 s\n\
         # NCCL INFO in a comment\n[2025-01-01 10:00:00] INFO starting worker\n",
    );
    assert!(!is_nccl_log(&log));
    let e = explain(&log);
    assert!(e.findings.is_empty() && e.hosts.is_empty() && e.pairs.is_empty());
    assert!(!is_nccl_log(&parse("")));
    assert!(is_nccl_log(&parse(
        "h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    )));
}

#[test]
fn render_text_prints_every_section_in_order_plain_and_wrapped() {
    let e = explain(&parse(
        "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
         h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n\
         h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         h:1:2 [0] NCCL INFO Using network Socket\n\
         h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
         h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
         h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
         h:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0\n\
         h:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\n",
    ));
    let text = render_text(&e);
    let summary = "\
NCCL
  version: 2.21.5+cuda12.4
  set by environment: NCCL_SOCKET_IFNAME=eth0

Ranks
  communicator size: 2 ranks
  h: rank 0; GPU 0; pid 1

Network
  using network: Socket
  NET/Socket interfaces: eth0

Transports (per rank pair)
  0 -> 1  P2P/CUMEM x2
  (xN: channel connections; all lines: P2P/CUMEM:100%)
  NVLS: not available
  SHM buffers: not in the log
  CollNet: not in the log
";
    assert!(
        text.starts_with(
            "Findings\n  1. [ERROR] a GPU ran out of memory while NCCL allocated its buffers\n     > line 9: Cuda failure 'out of memory'\n     Cause: NCCL could not allocate"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("\n{summary}")), "{text}");
    assert!(
        text.contains("  2. [INFO] SHM is not on the data path\n"),
        "{text}"
    );
    assert!(text.contains("     Fix: "));
    assert!(!text.contains('\x1b'));
    for line in text.lines() {
        assert!(line.chars().count() <= WIDTH, "too long: {line}");
    }
    assert!(text.ends_with('\n'));
}

#[test]
fn render_text_says_what_the_log_lacks() {
    let text = render_text(&explain(&parse("h:1:2 [0] NCCL INFO Setting affinity\n")));
    for part in [
        "  version: not in the log\n",
        "  h: GPU 0; pid 1\n",
        "Network\n  not in the log\n",
        "  no connection lines in the log\n",
        "  NVLS: not in the log\n",
        "  no known failure signature in the text\n",
    ] {
        assert!(text.contains(part), "{part:?} in\n{text}");
    }
    let empty = render_text(&explain(&parse("")));
    assert!(empty.contains("  no host or rank in the log\n"), "{empty}");
}

#[test]
fn render_text_counts_lines_beyond_the_evidence() {
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!(
            "h:1:2 [0] x.cc:1 NCCL WARN Error: failed to extend /dev/shm/nccl-{i} to 9637892 bytes\n"
        ));
    }
    let out = render_text(&explain(&parse(&text)));
    assert!(
        out.contains("1. [ERROR] /dev/shm too small for NCCL's SHM segments (5 lines)\n"),
        "{out}"
    );
    assert!(out.contains("     > ... 2 more\n"), "{out}");
}

// ---- Real logs from ../shared/fixtures/nccl-logs (read in place, never copied) ----

fn fixture_dir() -> Option<PathBuf> {
    crate::test_inputs::need(crate::test_inputs::Need::Fixtures("nccl-logs"))
}

type Pair = (u32, u32, &'static [(&'static str, usize)]);
type Host = (&'static str, &'static [u32], &'static [u32], &'static [u32]);

/// What `explain` must make of a fixture; every field read off the file by hand.
struct Expected {
    findings: &'static [(FindingKind, Severity)],
    versions: &'static [&'static str],
    networks: &'static [&'static str],
    /// (source, interface names).
    interfaces: &'static [(&'static str, &'static [&'static str])],
    /// (host, pids, ranks, GPUs).
    hosts: &'static [Host],
    pairs: &'static [Pair],
    nvls: NvlsUse,
}

const NONE: &[&str] = &[];

fn check_fixture(name: &str, expected: Expected) -> Option<Explanation> {
    let path = fixture_dir()?.join(name);
    let log = parse_files(&[&path]).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(is_nccl_log(&log), "{name}");
    let e = explain(&log);
    assert_eq!(kinds(&e), expected.findings, "{name}: findings");
    assert_eq!(e.versions, expected.versions, "{name}: versions");
    assert_eq!(e.networks, expected.networks, "{name}: networks");
    let interfaces: Vec<(&str, Vec<&str>)> = e
        .interfaces
        .iter()
        .map(|i| {
            (
                i.source.as_str(),
                i.names.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let want: Vec<(&str, Vec<&str>)> = expected
        .interfaces
        .iter()
        .map(|(s, n)| (*s, n.to_vec()))
        .collect();
    assert_eq!(interfaces, want, "{name}: interfaces");
    let hosts: Vec<HostView> = e
        .hosts
        .iter()
        .map(|h| {
            (
                h.host.as_str(),
                h.pids.as_slice(),
                h.ranks.as_slice(),
                h.devices.as_slice(),
            )
        })
        .collect();
    assert_eq!(hosts, expected.hosts, "{name}: hosts");
    let want: Vec<PairView> = expected
        .pairs
        .iter()
        .map(|(f, t, tr)| (*f, *t, tr.to_vec()))
        .collect();
    assert_eq!(pairs(&e), want, "{name}: pairs");
    assert_eq!(e.nvls, expected.nvls, "{name}: nvls");
    assert!(!e.collnet, "{name}: no fixture uses CollNet");
    // Every fixture renders, within the width except quoted log lines.
    let text = render_text(&e);
    assert!(
        text.starts_with("Findings\n"),
        "{name}: the findings come first"
    );
    for section in [
        "\nNCCL\n",
        "\nRanks\n",
        "\nNetwork\n",
        "\nTransports (per rank pair)\n",
    ] {
        assert!(text.contains(section), "{name}: {section:?}");
    }
    let quoted = |l: &&str| l.trim_start().starts_with('>') || l.contains("https://");
    for line in text.lines().filter(|l| !quoted(l)) {
        assert!(line.chars().count() <= WIDTH, "{name}: too long: {line}");
    }
    Some(e)
}

/// `explain` lists NCCL's choices in every wording (lines as NCCL's format strings
/// write them, behind its `host:pid:tid [dev] NCCL INFO` tag) and the model's table.
#[test]
fn tuning_lines_of_every_wording_are_listed_in_order() {
    let tag = "node1:4242:4250 [0] NCCL INFO";
    let log = [
        "node1:4242:4242 [0] NCCL INFO NCCL version 2.28.9+cuda12.4".to_string(),
        format!("{tag}   Algorithm   | {:>14}   {:>14}   {:>14} |", "", "Tree", ""),
        format!("{tag}   Protocol    | {:>14} | {:>14} | {:>14} |", "LL", "LL128", "Simple"),
        format!("{tag}  Max NThreads | {:>14} | {:>14} | {:>14} |", 512, 640, 512),
        format!("{tag}     AllReduce |{:>8.1}/{:>6.1} |", 6.8, 120.5),
        // 2.20-2.22, 2.23, 2.24+, 2.27+ symmetric
        format!("{tag} 8 Bytes -> Algo 1 proto 0 time {:.6}", 10.25),
        format!("{tag} 8 Bytes -> Algo 1 proto 0 time {:.6}", 10.25),
        format!("{tag} AllReduce: 65536 Bytes -> Algo 0 proto 1 time {:.6}", 21.5),
        format!("{tag} AllReduce: 1048576 Bytes -> Algo NVLS proto SIMPLE channel{{Lo..Hi}}={{0..15}}"),
        format!("{tag} AllReduce [Symmetric]: 4096 Bytes -> Kernel AllReduce_AGxLL_R nchannels 4 nthreads 512"),
    ]
    .join("\n");
    let e = explain(&parse(&log));
    let seen: Vec<(String, u64, String, String, Option<u32>, usize)> = e
        .tuning
        .iter()
        .map(|t| {
            (
                t.func.clone(),
                t.bytes,
                t.algo.clone(),
                t.proto.clone(),
                t.channels,
                t.count,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("".into(), 8, "Ring".into(), "LL".into(), None, 2),
            (
                "AllReduce".into(),
                65536,
                "Tree".into(),
                "LL128".into(),
                None,
                1
            ),
            (
                "AllReduce".into(),
                1048576,
                "NVLS".into(),
                "Simple".into(),
                Some(16),
                1
            ),
            (
                "AllReduce".into(),
                4096,
                "Symmetric".into(),
                "".into(),
                Some(4),
                1
            ),
        ]
    );
    assert_eq!(e.tuning_table.len(), 4);
    let text = render_text(&e);
    for want in [
        "Tuning (algorithm and protocol NCCL chose, in order)",
        "  collective 8 B: Ring/LL, predicted 10.25 us (x2)",
        "  AllReduce 64 KiB: Tree/LL128, predicted 21.50 us",
        "  AllReduce 1 MiB: NVLS/Simple, 16 channels",
        "  AllReduce 4 KiB: Symmetric kernel AllReduce_AGxLL_R, 4 channels",
        "AllReduce |     6.8/ 120.5 |",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    // The table's rows line up as NCCL printed them (labels right-aligned).
    let bar = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label) && l.contains('|'))
            .and_then(|l| l.find('|'))
    };
    assert!(bar("Algorithm").is_some(), "{text}");
    for label in ["Protocol", "Max NThreads", "AllReduce"] {
        assert_eq!(bar("Algorithm"), bar(label), "{label}: {text}");
    }
}
