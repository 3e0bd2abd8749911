use super::model::{device_ns, model_ns, MISTUNED_BYTES};
use super::*;
use crate::topo::{ring_link, Topology, Transport};

const V: Version = (2, 28, 9);
const FLOAT: i32 = 7;
const SUM: i32 = 0;
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A machine of `n` ranks on one host of topology `topo`, tuned for `v` with
/// `NCCL_ALGO`/`NCCL_PROTO` as given (as `setup` builds it).
fn machine(topo: Topology, n: u32, v: Version, algo: Option<&str>, proto: Option<&str>) -> Machine {
    let t = match topo {
        Topology::PcieNoP2p => Transport::Shm,
        _ => Transport::P2p,
    };
    let edges: Vec<_> = (0..n as usize)
        .map(|r| (t, r, (r + 1) % n as usize))
        .collect();
    let mut m = Machine::new(n, ring_link(topo, &edges));
    let nvlink = matches!(topo, Topology::NvLink | Topology::NvSwitch);
    m.nvlink = nvlink;
    m.channels = match topo {
        Topology::NvSwitch => 24,
        _ if nvlink => 16,
        _ => 2,
    };
    m.hopper = topo == Topology::NvSwitch;
    m.nvls = topo == Topology::NvSwitch && n >= 3 && v >= (2, 17, 0);
    m.nvls_channels = if m.nvls { 16 } else { 0 };
    m.mistuned = topo == Topology::NvLink;
    let (e, _) = Enabled::read(v, algo, proto, 1).unwrap();
    m.tuned(v, &e)
}

fn default(topo: Topology, n: u32) -> Machine {
    machine(topo, n, V, None, None)
}

fn pick(m: &Machine, v: Version, bytes: u64) -> Option<(Algo, Proto)> {
    choose(m, v, bytes, FLOAT, SUM).map(|c| (c.algo, c.proto))
}

use Algo::{Nvls, Ring, Tree};
use Proto::{Ll, Ll128, Simple};

#[test]
fn nccl_algo_and_proto_before_2_24_are_lenient_lists() {
    let names = ["Tree", "Ring", "CollNetDirect"];
    assert_eq!(parse::legacy("ring", &names), [0, 1, 0]);
    assert_eq!(parse::legacy("^RING", &names), [1, 0, 1]);
    // Unknown tokens, prefixes and untrimmed names are ignored.
    assert_eq!(parse::legacy("Ring,bogus, Tree", &names), [0, 1, 0]);
    assert_eq!(parse::legacy("allreduce:tree", &names), [0, 0, 0]);
    let ar = Func::AllReduce as usize;
    let read = |v, algo, proto| Enabled::read(v, algo, proto, 1).unwrap();
    let (e, notes) = read((2, 23, 4), Some("ring,nvls"), Some("LL128"));
    assert_eq!(e.algo[ar], [0, 1, 0, 0, 1, 0, 0]);
    assert_eq!(e.proto[ar], [0, 1, 0]);
    assert_eq!(notes, parse::Notes::default());
    // Nothing left of Ring, Tree, NVLS: Ring and Tree again, said up to 2.19.
    let (e, notes) = read((2, 23, 4), Some("allreduce:tree"), None);
    assert_eq!(e.algo[ar], [1, 1, 0, 0, 0, 0, 0]);
    assert!(!notes.ignored_algo_warning);
    let (_, notes) = read((2, 19, 4), Some("CollNetDirect"), None);
    assert!(notes.ignored_algo_warning);
    // PAT is a name from 2.23 only; before it is an unknown token.
    assert_eq!(read((2, 23, 4), Some("PAT"), None).0.algo[ar][6], 1);
    assert_eq!(
        read((2, 22, 3), Some("PAT"), None).0.algo[ar],
        [1, 1, 0, 0, 0, 0, 0]
    );
}

#[test]
fn nccl_algo_and_proto_from_2_24_are_per_function_and_strict() {
    let ar = Func::AllReduce as usize;
    let bc = Func::Broadcast as usize;
    let (e, notes) = Enabled::read(
        V,
        Some("ring;ALLREDUCE:tree,nvlstree"),
        Some("^LL128;allreduce:LL128"),
        1,
    )
    .unwrap();
    assert_eq!(e.algo[bc], [0, 1, 0, 0, 0, 0, 0]);
    // NVLSTree is named but off on one node.
    assert_eq!(e.algo[ar], [1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(e.proto[bc], [1, 0, 1]);
    assert_eq!(e.proto[ar], [0, 1, 0]);
    let parsed = notes.matrix.unwrap();
    assert_eq!(parsed.algo[ar], [1, 0, 0, 0, 0, 1, 0]);
    let err = |algo: &str| Enabled::read(V, Some(algo), None, 1).unwrap_err();
    assert_eq!(
        err("ring,bogus"),
        (
            INVALID_USAGE,
            "Unrecognized element token \"bogus\" when parsing \"ring,bogus\"".to_string(),
            "graph/tuning.cc:104"
        )
    );
    assert_eq!(
        err("allreduce:ring;gather:tree").1,
        "Unrecognized prefix token \"gather\" when parsing \"allreduce:ring;gather:tree\""
    );
    assert_eq!(
        err("ring;tree").1,
        "All entries except the first must have a prefix: \"ring;tree\""
    );
    // strtok skips the leading ';': the first entry is not at the start.
    assert_eq!(
        err(";ring").1,
        "All entries except the first must have a prefix: \";ring\""
    );
    assert_eq!(
        Enabled::read(V, None, Some("LL,Simple,LL129"), 1)
            .unwrap_err()
            .1,
        "Unrecognized element token \"LL129\" when parsing \"LL,Simple,LL129\""
    );
    assert!(lines::matrix(V, &parsed).starts_with(
        "Enabled NCCL Func/Proto/Algo Matrix:\n     Function |       LL     LL128    Simple   |          Tree           Ring  "
    ));
}

#[test]
fn the_default_follows_the_size_ll_then_ll128_then_simple() {
    for n in 2..=8 {
        let m = default(Topology::NvLink, n);
        assert_eq!(pick(&m, V, 8), Some((Ring, Ll)), "{n}");
        assert_eq!(pick(&m, V, 16 * KIB), Some((Ring, Ll)), "{n}");
        // 64-512 KiB: LL or Simple, the model overstating LL128 (the mis-tuning).
        assert_eq!(pick(&m, V, 64 * KIB), Some((Ring, Ll)), "{n}");
        assert_eq!(pick(&m, V, 256 * KIB), Some((Ring, Ll)), "{n}");
        assert_eq!(pick(&m, V, 512 * KIB), Some((Ring, Simple)), "{n}");
        assert_eq!(pick(&m, V, MIB), Some((Ring, Ll128)), "{n}");
        assert_eq!(pick(&m, V, 2 * MIB), Some((Ring, Ll128)), "{n}");
        assert_eq!(pick(&m, V, 64 * MIB), Some((Ring, Simple)), "{n}");
    }
    // 8 H100s: LL straight to NVLS (NCCL's 25 us beats LL128's 40.6 and Simple's
    // 56); 2 H100s, without NVLS before 2.28.7: LL, then Simple.
    let m = default(Topology::NvSwitch, 8);
    assert_eq!(pick(&m, V, 8), Some((Ring, Ll)));
    assert_eq!(pick(&m, V, 256 * KIB), Some((Ring, Ll)));
    assert_eq!(pick(&m, V, MIB), Some((Ring, Ll)));
    assert_eq!(pick(&m, V, 2 * MIB), Some((Nvls, Simple)));
    assert_eq!(pick(&m, V, 64 * MIB), Some((Nvls, Simple)));
    let two = machine(Topology::NvSwitch, 2, (2, 27, 7), None, None);
    assert_eq!(pick(&two, (2, 27, 7), MIB), Some((Ring, Ll)));
    assert_eq!(pick(&two, (2, 27, 7), 2 * MIB), Some((Ring, Simple)));
    let mut b = 8;
    while b <= 4 << 30 {
        assert_ne!(pick(&m, V, b).unwrap().1, Ll128, "{b}");
        assert_ne!(pick(&two, (2, 27, 7), b).unwrap().1, Ll128, "{b}");
        b *= 2;
    }
    // PCIe: no LL128 unless NCCL_PROTO names it.
    for topo in [Topology::Pcie, Topology::Pcie2Switch, Topology::PcieNoP2p] {
        let m = machine(topo, 2, V, None, None);
        let mut b = 8;
        while b <= 256 * MIB {
            assert_ne!(pick(&m, V, b).unwrap().1, Ll128, "{topo:?} {b}");
            b *= 2;
        }
        assert_eq!(pick(&m, V, 8), Some((Ring, Ll)));
        assert_eq!(pick(&m, V, 64 * KIB), Some((Ring, Simple)));
        let forced = machine(topo, 2, V, None, Some("LL128"));
        assert_eq!(pick(&forced, V, 256 * KIB), Some((Ring, Ll128)));
    }
    // Tree only when forced; on one rank NCCL tunes nothing.
    let tree = machine(Topology::NvLink, 4, V, Some("Tree"), None);
    assert_eq!(pick(&tree, V, 8), Some((Tree, Ll)));
    assert_eq!(pick(&tree, V, 64 * MIB), Some((Tree, Simple)));
    // Small all-reduces use fewer channels.
    let m = default(Topology::NvLink, 2);
    assert_eq!(choose(&m, V, 8, FLOAT, SUM).unwrap().channels, 1);
    assert_eq!(choose(&m, V, 64 * MIB, FLOAT, SUM).unwrap().channels, 16);
}

#[test]
fn nvls_takes_the_large_all_reduces_of_eight_gpus() {
    let m = default(Topology::NvSwitch, 8);
    assert_eq!(pick(&m, V, 8).unwrap().0, Ring);
    assert_eq!(pick(&m, V, MIB).unwrap().0, Ring);
    assert_eq!(pick(&m, V, 2 * MIB).unwrap().0, Nvls);
    assert_eq!(pick(&m, V, 1 << 30).unwrap().0, Nvls);
    // Not where NVLS does not reduce (float max), nor without NVLS.
    assert_eq!(choose(&m, V, 1 << 30, FLOAT, 2).unwrap().algo, Ring);
    let mut off = m;
    off.nvls = false;
    assert_eq!(pick(&off, V, 1 << 30).unwrap().0, Ring);
    // At 4 GiB the bus bandwidths are the published ones: ring ~370, NVLS ~480.
    let busbw = |a, p| {
        let t = device_ns(&m, a, p, 4 << 30);
        (4u64 << 30) as f64 / t * 2.0 * 7.0 / 8.0
    };
    assert!(
        (busbw(Ring, Simple) - 370.0).abs() < 2.0,
        "{}",
        busbw(Ring, Simple)
    );
    assert!(
        (busbw(Nvls, Simple) - 480.0).abs() < 2.0,
        "{}",
        busbw(Nvls, Simple)
    );
    // On 4 GPUs NVLS gives about the ring's 370, and its 25 us still beat the
    // ring's Simple (8.4 + 6 x 3.4 us): NVLS from LL on.
    let four = default(Topology::NvSwitch, 4);
    let t = device_ns(&four, Nvls, Simple, 4 << 30);
    let busbw4 = (4u64 << 30) as f64 / t * 2.0 * 3.0 / 4.0;
    assert!((busbw4 - 370.0).abs() < 2.0, "{busbw4}");
    assert_eq!(pick(&four, V, 4 << 30), Some((Nvls, Simple)));
    // The H100's latencies are NCCL's: 8 ranks, 14 steps.
    let lat = |a, p| device_ns(&m, a, p, 0) / 1000.0;
    for (a, p, us) in [
        (Ring, Ll, 6.6 + 14.0 * 0.6),
        (Ring, Ll128, 14.0 + 14.0 * 1.9),
        (Ring, Simple, 8.4 + 14.0 * 3.4),
        (Tree, Ll, 6.8 + 14.0 * 0.6),
        (Tree, Ll128, 14.0 + 14.0 * 1.25),
        (Tree, Simple, 8.4 + 14.0 * 4.0),
        (Nvls, Simple, 25.0),
    ] {
        assert!(
            (lat(a, p) - us).abs() < 1e-9,
            "{a:?} {p:?}: {} us",
            lat(a, p)
        );
    }
}

#[test]
fn large_rings_keep_the_old_model_and_the_prediction_is_the_models() {
    for (topo, n) in [(Topology::NvLink, 8), (Topology::Pcie, 4)] {
        let m = default(topo, n);
        let (latency, bw) = m.ring.unwrap();
        let bytes = 64 * MIB;
        let steps = 2.0 * (f64::from(n) - 1.0);
        let old = 4_000.0 + steps * (latency + bytes as f64 / f64::from(n) / bw);
        assert!((device_ns(&m, Ring, Simple, bytes) / old - 1.0).abs() < 1e-12);
        let c = choose(&m, V, bytes, FLOAT, SUM).unwrap();
        let model = model_ns(&m, c.algo, c.proto, bytes) / 1000.0;
        assert!(
            (f64::from(c.time_us) / model - 1.0).abs() < 1e-5,
            "{topo:?}"
        );
    }
}

/// Device time of what `m` chooses for `bytes` (tuned with the forcing it was built
/// with).
fn device_of_choice(m: &Machine, bytes: u64) -> f64 {
    let c = choose(m, V, bytes, FLOAT, SUM).unwrap();
    device_ns(m, c.algo, c.proto, bytes)
}

#[test]
fn forced_ll128_beats_the_default_in_the_mistuned_window_of_nvlink() {
    for n in 2..=8 {
        let default = default(Topology::NvLink, n);
        let forced = machine(Topology::NvLink, n, V, None, Some("LL128"));
        let mut bytes = *MISTUNED_BYTES.start();
        while bytes <= *MISTUNED_BYTES.end() {
            let gain = device_of_choice(&default, bytes) / device_of_choice(&forced, bytes);
            assert!(gain > 1.0, "{n} ranks, {bytes} B: {gain}");
            if bytes >= 256 * KIB {
                assert!(gain > 1.1, "{n} ranks, {bytes} B: {gain}");
            }
            // The model says the opposite.
            let (d, f) = (
                choose(&default, V, bytes, FLOAT, SUM).unwrap(),
                choose(&forced, V, bytes, FLOAT, SUM).unwrap(),
            );
            assert!(d.time_us < f.time_us);
            bytes *= 2;
        }
        // Outside the window the default is as fast or faster.
        for bytes in [8, 32 * KIB, MIB, 4 * MIB, 64 * MIB] {
            assert!(device_of_choice(&default, bytes) <= device_of_choice(&forced, bytes));
        }
        let nvswitch = default_of(Topology::NvSwitch, n);
        let b = 128 * KIB;
        assert_eq!(
            device_ns(&nvswitch, Ring, Ll128, b),
            model_ns(&nvswitch, Ring, Ll128, b)
        );
    }
}

fn default_of(topo: Topology, n: u32) -> Machine {
    default(topo, n)
}

#[test]
fn tuning_lines_follow_the_release() {
    let m = default(Topology::NvLink, 2);
    let c = choose(&m, V, MIB, FLOAT, SUM).unwrap();
    assert_eq!((c.algo, c.proto, c.channels), (Ring, Ll128, 16));
    let line = |v| lines::choice(v, Func::AllReduce, MIB, 8, &c);
    assert_eq!(line((2, 19, 4)), None);
    assert_eq!(
        line((2, 21, 5)).unwrap(),
        "1048576 Bytes -> Algo 1 proto 1 time 11.698377"
    );
    assert_eq!(
        line((2, 23, 4)).unwrap(),
        "AllReduce: 1048576 Bytes -> Algo 1 proto 1 time 11.698377"
    );
    assert_eq!(
        line((2, 28, 9)).unwrap(),
        "AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}"
    );
    let small = choose(&m, V, 4096, FLOAT, SUM).unwrap();
    assert_eq!(
        lines::choice(V, Func::AllReduce, 4096, 8, &small).unwrap(),
        "AllReduce: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"
    );
    assert!(lines::logs_simulated((2, 23, 4)) && !lines::logs_simulated(V));
    // All-gather: the total up to 2.23, one rank's share from 2.24 (8 ranks here).
    let ag = |v| lines::choice(v, Func::AllGather, 8 * MIB, 8, &c).unwrap();
    assert!(
        ag((2, 23, 4)).starts_with("AllGather: 8388608 Bytes -> "),
        "{}",
        ag((2, 23, 4))
    );
    assert!(
        ag((2, 24, 3)).starts_with("AllGather: 1048576 Bytes -> "),
        "{}",
        ag((2, 24, 3))
    );
}

#[test]
fn the_table_is_printed_as_nccl_prints_it() {
    let m = default(Topology::NvLink, 2);
    let table = lines::table(V, &m);
    // Three blocks (Tree Ring CollNetDirect | CollNetChain NVLS NVLSTree | PAT), each
    // of a header, protocols, threads and five functions.
    assert_eq!(table.len(), 3 * 8);
    assert_eq!(
        table[0],
        format!(
            "  Algorithm   | {:14}   {:>14}   {:14} | {:14}   {:>14}   {:14} | {:14}   {:>14}   {:14} |",
            "", "Tree", "", "", "Ring", "", "", "CollNetDirect", ""
        )
    );
    assert_eq!(
        table[1],
        format!(
            "  Protocol    |{}",
            " {:>14} |          LL128 |         Simple |"
                .repeat(3)
                .replace("{:>14}", "            LL")
        )
    );
    assert_eq!(
        table[2],
        " Max NThreads |            512 |            640 |            512 |            512 |            640 |            512 |              0 |              0 |            640 |"
    );
    assert_eq!(
        table[7],
        "    AllReduce |     4.0/  36.3 |     4.3/ 107.3 |     6.2/ 138.0 |     3.8/  75.0 |     4.1/ 138.0 |     6.0/ 150.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |"
    );
    assert_eq!(
        table[16],
        "  Algorithm   |                             PAT                  |"
    );
    // Up to 2.22 two blocks of half the algorithms; up to 2.17 one header.
    assert_eq!(lines::table((2, 21, 5), &m).len(), 2 * 8);
    assert!(lines::table((2, 16, 5), &m)[0].starts_with("Latency/AlgBw |    Tree/    LL |"));
    // PCIe: LL128 off, its latency still printed.
    let pcie = default(Topology::Pcie, 2);
    assert!(lines::table(V, &pcie)[7].contains(&format!("{:8.1}/{:6.1} |", pcie.lat[4][1][1], 0.0)));
}

#[test]
fn an_impossible_choice_falls_back_before_2_24_and_fails_from_2_24() {
    // NVLS on the A100 board, which has none.
    for (v, want) in [
        ((2, 18, 6), None),
        ((2, 19, 4), Some((Ring, Ll))),
        ((2, 23, 4), Some((Ring, Ll))),
        ((2, 24, 3), None),
        (V, None),
    ] {
        let m = machine(Topology::NvLink, 8, v, Some("NVLS"), None);
        assert_eq!(pick(&m, v, 8), want, "{v:?}");
    }
    // NVLS has Simple only: with LL the ring (2.23), nothing (2.28).
    let m = machine(Topology::NvSwitch, 8, (2, 23, 4), Some("NVLS"), Some("LL"));
    assert_eq!(pick(&m, (2, 23, 4), 64 * MIB), Some((Ring, Ll)));
    let m = machine(Topology::NvSwitch, 8, V, Some("NVLS"), Some("LL"));
    assert_eq!(pick(&m, V, 64 * MIB), None);
    // No protocol at all: nothing before 2.24 either.
    let m = machine(
        Topology::NvLink,
        2,
        (2, 23, 4),
        None,
        Some("^LL,LL128,Simple"),
    );
    assert_eq!(pick(&m, (2, 23, 4), 8), None);
    // PAT is not for all-reduces; CollNet never here; NVLSTree needs nodes.
    for algo in ["PAT", "CollNetDirect", "NVLSTree"] {
        let m = machine(Topology::NvSwitch, 8, V, Some(algo), None);
        assert_eq!(pick(&m, V, MIB), None, "{algo}");
    }
    // Before 2.24 an NCCL_ALGO leaving nothing is ignored.
    let m = machine(Topology::NvLink, 2, (2, 23, 4), Some("PAT"), None);
    assert_eq!(pick(&m, (2, 23, 4), 8), Some((Ring, Ll)));
    assert_eq!(
        refusal(V, FLOAT, Some("NVLS"), Some("LL")),
        (
            INVALID_USAGE,
            "Error : no algorithm/protocol available for function AllReduce with datatype ncclFloat32. NCCL_ALGO was set to NVLS. NCCL_PROTO was set to LL.".to_string(),
            "enqueue.cc:1859"
        )
    );
    assert_eq!(
        refusal(V, 1, None, Some("LL")).1,
        "Error : no algorithm/protocol available for function AllReduce with datatype Unknown. NCCL_PROTO was set to LL."
    );
    assert_eq!(refusal(V, FLOAT, None, None).0, INTERNAL_ERROR);
    assert_eq!(
        refusal((2, 23, 4), FLOAT, Some("NVLS"), None),
        (
            INTERNAL_ERROR,
            "Error : no algorithm/protocol available".to_string(),
            "enqueue.cc:1848"
        )
    );
}

#[test]
fn mispredict_slows_the_device_and_not_the_model() {
    use crate::fault::{factor_in, parse};
    let m = default(Topology::NvLink, 8);
    let spec = |s: &str| parse(s).unwrap();
    let factor = factor_in(&[spec("mispredict@3")], 8, 0);
    assert_eq!(factor, 2.0);
    for bytes in [8, 4 * MIB, 64 * MIB] {
        let c = choose(&m, V, bytes, FLOAT, SUM).unwrap();
        let device = device_ns(&m, c.algo, c.proto, bytes) * factor;
        assert!((device / model_ns(&m, c.algo, c.proto, bytes) - 2.0).abs() < 1e-12);
        // The prediction is the model's, not the device's.
        assert!(
            (f64::from(c.time_us) * 1000.0 / model_ns(&m, c.algo, c.proto, bytes) - 1.0).abs()
                < 1e-5
        );
    }
    assert_eq!(factor_in(&[spec("mispredict@3")], 2, 0), 1.0, "no rank 3");
    assert_eq!(factor_in(&[spec("mispredict@3x1.5")], 8, 0), 1.5);
    assert_eq!(factor_in(&[spec("mispredictx3")], 2, 0), 3.0);
    assert_eq!(factor_in(&[spec("mispredict+5")], 2, 4), 1.0);
    assert_eq!(factor_in(&[spec("mispredict+5")], 2, 5), 2.0);
    assert_eq!(
        factor_in(&[spec("mispredict")], 1, 0),
        1.0,
        "one rank has no link"
    );
    assert_eq!(parse("mispredict@1x0.5"), None);
    assert_eq!(parse("hang@1x2"), None);
}
