//! The stand-in (tests/gpu-sim) speaks NCCL as real NCCL does: every kind of INFO and
//! WARN line it prints in a few sweeps that cover today's releases (2.21 to 2.29, SHM
//! in cuMem host memory and in /dev/shm, NVLS used and failing to bind, one rank's
//! cuMem probe failing, the tuner's lines) has a twin in a real log, in
//! `tests/fixtures/real/` or `../shared/fixtures/nccl-logs/`: the same words with only
//! numbers, names (algorithms, protocols, collectives, NCCL_* variables) and
//! /dev/shm file names free to differ. So what nccl-bench reads from the stand-in is
//! what it reads from NCCL, not a dialect the two share. The few lines no public log
//! holds are listed with where their text comes from; the list is checked both ways
//! (each is still printed, and none has meanwhile found a twin).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nccl_bench::test_inputs::{need, Need};

use crate::common::sim::{sim_dir, sim_sweep};
use crate::common::text;

/// Lines of the stand-in no public log shows, and where their words come from.
const NOT_IN_A_PUBLIC_LOG: [(&str, &str); 11] = [
    (
        "NCCL INFO CUMEM allocated shareable buffer # size #",
        "SHM subsystem (NCCL_DEBUG_SUBSYS=SHM), src/transport/shm.cc of 2.24-2.29",
    ),
    (
        "NCCL INFO MMAP allocated shareable host buffer /dev/shm/nccl-X size # ptr #",
        "SHM subsystem, src/transport/shm.cc of 2.24-2.29",
    ),
    (
        "NCCL INFO ALGO comm # headRank # nHeads # buffSize # nvlsPerRankSize # nvlsTotalSize #",
        "src/transport/nvls.cc of 2.20-2.24 (the bind-failure logs end before it)",
    ),
    (
        "NCCL INFO ALGO comm # headRank # nHeads # nvlsRanks # buffSize # nvlsPerRankSize # nvlsTotalSize #",
        "src/transport/nvls.cc of 2.25 on",
    ),
    (
        "NCCL INFO ALGO multicast support is available on dev # (NVLS_NCHANNELS #)",
        "src/transport/nvls.cc from 2.27 (public logs of NVLS available are 2.24)",
    ),
    (
        "NCCL INFO ALGO multicast support is not available on dev # (NVLS_NCHANNELS #)",
        "src/transport/nvls.cc from 2.27",
    ),
    (
        "NCCL INFO COLL | #/ # | #/ # | #/ # | #/ # | #/ # | #/ # | #/ # | #/ # | #/ # |",
        "the tuning table's rows, a block of three algorithms (src/graph/tuning.cc): the one \
         public table (tune-01) elides them",
    ),
    (
        "NCCL INFO Algorithm | ALGO |",
        "the tuning table's last block, PAT alone (seven algorithms from 2.23, in blocks of \
         three)",
    ),
    (
        "NCCL INFO Max NThreads | # | # | # |",
        "the tuning table's last block, PAT alone",
    ),
    (
        "NCCL INFO COLL | #/ # | #/ # | #/ # |",
        "the tuning table's last block, PAT alone",
    ),
    (
        "NCCL WARN socketProgress: Connection closed by remote peer (rank # failed or aborted while connecting)",
        "the stand-in's own words for a peer that left during set-up: NCCL names the peer's address (socket.cc), \
         which a simulated rank does not have",
    ),
];

/// The part of a log line after `NCCL INFO` or `NCCL WARN`, with its tag.
fn body(line: &str) -> Option<String> {
    ["NCCL INFO ", "NCCL WARN "].iter().find_map(|tag| {
        line.find(tag)
            .map(|at| format!("{}{}", tag, line[at + tag.len()..].trim()))
    })
}

const COLLECTIVES: [&str; 9] = [
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "Broadcast",
    "Reduce",
    "AllToAll",
    "Send",
    "Recv",
    "SendRecv",
];
const ALGORITHMS: [&str; 14] = [
    "RING",
    "TREE",
    "NVLS",
    "NVLS_TREE",
    "COLLNET_DIRECT",
    "COLLNET_CHAIN",
    "PAT",
    "Ring",
    "Tree",
    "NVLSTree",
    "CollNetDirect",
    "CollNetChain",
    "CollnetDirect",
    "CollnetChain",
];
const PROTOCOLS: [&str; 4] = ["LL", "LL128", "SIMPLE", "Simple"];

/// A word as the shape keeps it: numbers (decimal, hex, `0x...`) become `#`, digits
/// inside other words `#`, and the names that vary from line to line a class.
fn word(w: &str) -> String {
    let hex = w.chars().all(|c| c.is_ascii_hexdigit()) && w.chars().any(|c| c.is_ascii_digit());
    if hex || (w.starts_with("0x") && w.len() > 2) {
        "#".into()
    } else if w.starts_with("NCCL_") && w.len() > 5 {
        "VAR".into()
    } else if COLLECTIVES.contains(&w) {
        "COLL".into()
    } else if ALGORITHMS.contains(&w) {
        "ALGO".into()
    } else if PROTOCOLS.contains(&w) {
        "PROTO".into()
    } else {
        let mut out = String::new();
        for c in w.chars() {
            if c.is_ascii_digit() {
                if !out.ends_with('#') {
                    out.push('#');
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// The shape of a line's body: its words through [`word`], any run of spaces one
/// space, a /dev/shm segment's name `X`, and `#.#` (versions, decimals, addresses) `#`.
fn shape(body: &str) -> String {
    let mut text = body.to_string();
    let mut from = 0;
    while let Some(at) = text[from..].find("/dev/shm/nccl-") {
        let start = from + at + "/dev/shm/nccl-".len();
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || c == ')')
            .map_or(text.len(), |e| start + e);
        text.replace_range(start..end, "X");
        from = start;
    }
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            out.push(' ');
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut w = c.to_string();
            while let Some(&n) = chars
                .peek()
                .filter(|n| n.is_ascii_alphanumeric() || **n == '_')
            {
                w.push(n);
                chars.next();
            }
            out.push_str(&word(&w));
        } else {
            out.push(c);
        }
    }
    while out.contains("#.#") {
        out = out.replace("#.#", "#");
    }
    out.trim().to_string()
}

/// Every line shape of the real logs, with a file that holds it.
fn real_shapes() -> BTreeMap<String, String> {
    let mut files: Vec<PathBuf> = Vec::new();
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real");
    let shared = need(Need::Fixtures("nccl-logs"));
    for dir in std::iter::once(real).chain(shared) {
        let mut here: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log" || e == "txt"))
            .collect();
        here.sort();
        files.extend(here);
    }
    let mut shapes = BTreeMap::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(b) = body(line) {
                shapes
                    .entry(shape(&b))
                    .or_insert_with(|| f.file_name().unwrap().to_string_lossy().to_string());
            }
        }
    }
    shapes
}

/// The NCCL logs of a sweep on the stand-in: each shape with a line that has it.
fn sim_shapes(
    dir: &Path,
    topo: &str,
    gpus: &str,
    env: &[(&str, &str)],
    into: &mut BTreeMap<String, String>,
) {
    let out = tempfile::tempdir().unwrap();
    let o = sim_sweep(
        dir,
        topo,
        env,
        out.path(),
        &[
            "--gpus",
            gpus,
            "-b",
            "1M",
            "-e",
            "1M",
            "-n",
            "5",
            "--transports",
            "default,shm-off,p2p-off",
        ],
    );
    // Faults fail cases (exit 1); a refused command line would be exit 2.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{env:?}: {}",
        text(&o)
    );
    let logs = crate::common::run_dir(out.path()).join("logs");
    for e in std::fs::read_dir(&logs).unwrap() {
        let path = e.unwrap().path();
        if !path.to_string_lossy().contains(".nccl.") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if let Some(b) = body(line) {
                into.entry(shape(&b)).or_insert_with(|| line.to_string());
            }
        }
    }
}

#[test]
fn the_shape_keeps_words_and_frees_numbers_and_names() {
    assert_eq!(
        shape("NCCL INFO Channel 03/0 : 0[0] -> 1[4c000] via P2P/CUMEM"),
        shape("NCCL INFO Channel 12/1 : 7[7] -> 0[18000] via P2P/CUMEM"),
    );
    assert_ne!(
        shape("NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM"),
        shape("NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/IPC"),
        "a transport is a word"
    );
    assert_eq!(
        shape(
            "NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}"
        ),
        "NCCL INFO COLL: # Bytes -> Algo ALGO proto PROTO channel{Lo..Hi}={#..#}"
    );
    assert_eq!(
        shape("NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-\u{1}\u{2} (size 0)"),
        "NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-X (size #)"
    );
    assert_eq!(
        shape("NCCL INFO NCCL version 2.27.7+cuda12.4"),
        "NCCL INFO NCCL version #+cuda#"
    );
    assert_eq!(
        body("host:1:1 [0] transport/nvls.cc:12 NCCL WARN  Cuda failure 401 'x'").as_deref(),
        Some("NCCL WARN Cuda failure 401 'x'")
    );
}

#[test]
fn every_line_the_stand_in_prints_has_a_twin_in_a_real_log() {
    let Some(dir) = sim_dir() else { return };
    let _machine = crate::common::shared();
    let real = real_shapes();
    let mut sim = BTreeMap::new();
    for env in [
        // Today's NVSwitch node: SHM in cuMem host memory, NVLS, the tuner's lines.
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.28.9"),
            ("NCCL_BENCH_SIM_DRIVER", "12080"),
        ][..],
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.24.3"),
            ("NCCL_BENCH_SIM_DRIVER", "12080"),
        ],
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.29.3"),
            ("NCCL_BENCH_SIM_FAULT", "nvls-bind"),
        ],
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.26.2"),
            ("NCCL_BENCH_SIM_FAULT", "nvls-bind"),
        ],
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.27.7"),
            ("NCCL_BENCH_SIM_DRIVER", "12080"),
            ("NCCL_BENCH_SIM_FAULT", "cumem-host-probe@1"),
        ],
        // A PCIe node with an InfiniBand NIC: SHM off goes over NET/IB.
        &[
            ("NCCL_BENCH_SIM_VERSION", "2.21.5"),
            ("NCCL_BENCH_SIM_NIC", "ib"),
        ],
    ] {
        let topo = if env.iter().any(|(_, v)| v.starts_with("cumem")) || env[0].1 == "2.21.5" {
            "pcie-nop2p"
        } else {
            "nvswitch"
        };
        // NCCL looks for NVLS (and says whether it found it) with three GPUs or
        // more before 2.28.7, two after.
        let gpus = if topo == "nvswitch" && env[0].1 >= "2.28.7" {
            "2"
        } else {
            "4"
        };
        sim_shapes(&dir, topo, gpus, env, &mut sim);
    }
    assert!(sim.len() >= 25, "{} shapes: {sim:#?}", sim.len());
    let listed: BTreeSet<&str> = NOT_IN_A_PUBLIC_LOG.iter().map(|(s, _)| *s).collect();
    let strays: Vec<String> = sim
        .iter()
        .filter(|(s, _)| !real.contains_key(*s) && !listed.contains(s.as_str()))
        .map(|(s, line)| format!("{s}\n    e.g. {line}"))
        .collect();
    assert!(
        strays.is_empty(),
        "lines of the stand-in that no real log holds (fix the stand-in, or add a real log, \
         or list them with where their words come from):\n{}",
        strays.join("\n")
    );
    for (s, _) in NOT_IN_A_PUBLIC_LOG {
        assert!(sim.contains_key(s), "listed but no longer printed: {s}");
        if let Some(file) = real.get(s) {
            panic!("listed as in no public log, but {file} holds it: {s}");
        }
    }
}
