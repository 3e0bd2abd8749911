//! The fault specs as `NCCL_BENCH_SIM_FAULT` gives them, and what the timed faults
//! do at each moment of their windows.

use super::timed::{self, Timed, TimedKind};
use super::{clock, read, Fault};

fn timed(text: &str) -> Timed {
    timed::parse(text).unwrap_or_else(|| panic!("{text} parses"))
}

#[test]
fn timed_specs_parse_with_their_defaults() {
    assert_eq!(
        timed("throttle@3+10"),
        Timed {
            kind: TimedKind::Throttle { gpu: 3 },
            start_s: 10.0,
            duration_s: 5.0,
            factor: 1.6,
        }
    );
    let t = timed("throttle@3x2+1.5/0.25");
    assert_eq!((t.factor, t.start_s, t.duration_s), (2.0, 1.5, 0.25));
    assert_eq!(timed("throttle@0").start_s, 0.0, "from the epoch");
    assert_eq!(
        timed("nvlink-errors@0-1+2/3"),
        Timed {
            kind: TimedKind::NvlinkErrors { a: 0, b: 1 },
            start_s: 2.0,
            duration_s: 3.0,
            factor: 1.3,
        }
    );
    assert_eq!(timed(" nvlink-errors@6-2x1.5+0.5").factor, 1.5);
    assert_eq!(
        timed("xid@2+7"),
        Timed {
            kind: TimedKind::Xid { gpu: 2, code: 79 },
            start_s: 7.0,
            duration_s: 0.0,
            factor: 1.0,
        }
    );
    assert_eq!(
        timed("xid@2+7.5:48").kind,
        TimedKind::Xid { gpu: 2, code: 48 }
    );
}

#[test]
fn bad_timed_specs_do_not_parse() {
    for bad in [
        "throttle+5",
        "throttle@+5",
        "throttle@a+5",
        "throttle@1x0.5+1",
        "throttle@1xfast+1",
        "throttle@1+-1",
        "throttle@1+1/0",
        "throttle@1+1/-2",
        "throttle@1+1:79",
        "throttle@1+nan",
        "throttle@1+inf",
        "nvlink-errors@1-1+2",
        "nvlink-errors@1+2",
        "nvlink-errors@1-b+2",
        "xid@1x2+3",
        "xid@1+3/2",
        "xid@1+3:abc",
        "xid+3",
        "overheat@1+3",
    ] {
        assert_eq!(timed::parse(bad), None, "{bad}");
    }
}

#[test]
fn a_list_keeps_both_families_and_ignores_what_does_not_parse() {
    let (counted, timed) =
        read("hang@1+40,throttle@2+1,xid@1x2+3,explode,mispredictx3,xid@0+1,nvlink-errors@1-1");
    // The counted kinds keep `+` as a number of collectives.
    assert_eq!(
        counted
            .iter()
            .map(|s| (s.fault, s.rank, s.after, s.factor))
            .collect::<Vec<_>>(),
        [
            (Fault::Hang, Some(1), 40, 1.0),
            (Fault::Mispredict, None, 0, 3.0)
        ]
    );
    assert_eq!(
        timed.iter().map(|t| t.kind).collect::<Vec<_>>(),
        [
            TimedKind::Throttle { gpu: 2 },
            TimedKind::Xid { gpu: 0, code: 79 }
        ]
    );
    assert_eq!(read(""), (Vec::new(), Vec::new()));
}

#[test]
fn a_window_holds_from_its_start_for_its_duration() {
    let faults = [timed("throttle@1+10/2")];
    let at = |gpus: &[usize], t| timed::slowdown(&faults, gpus, t);
    assert_eq!(at(&[0, 1], 9.999), 1.0, "before");
    assert_eq!(at(&[0, 1], 10.0), 1.6, "at the start");
    assert_eq!(at(&[0, 1], 11.999), 1.6, "in");
    assert_eq!(at(&[0, 1], 12.0), 1.0, "after");
    assert_eq!(at(&[0, 2], 11.0), 1.0, "no rank on GPU 1");
    assert_eq!(at(&[1], 11.0), 1.6, "one rank is enough");
    assert!(!timed::throttled(&faults, 1, 9.0));
    assert!(timed::throttled(&faults, 1, 10.5));
    assert!(!timed::throttled(&faults, 0, 10.5));
    assert!(!timed::throttled(&faults, 1, 12.5));
}

#[test]
fn an_nvlink_fault_slows_communicators_on_both_ends_and_the_largest_factor_wins() {
    let faults = [
        timed("nvlink-errors@0-1+10"),
        timed("throttle@2x1.2+10"),
        timed("xid@0+10"),
    ];
    let at = |gpus: &[usize]| timed::slowdown(&faults, gpus, 12.0);
    assert_eq!(at(&[0]), 1.0, "an XID slows nothing");
    assert_eq!(at(&[0, 3]), 1.0, "one end only");
    assert_eq!(at(&[1, 0, 3]), 1.3);
    assert_eq!(at(&[2, 3]), 1.2);
    assert_eq!(at(&[0, 1, 2]), 1.3, "the largest, not the product");
    assert_eq!(timed::slowdown(&faults, &[0, 1], 15.0), 1.0, "5 s later");
}

#[test]
fn replays_grow_40_a_second_of_the_window_on_the_two_ends_links() {
    let faults = [timed("nvlink-errors@2-5+10/5")];
    let replays = |gpu, link, t| timed::replays(&faults, gpu, link, t);
    for (t, count) in [
        (0.0, 0),
        (9.9, 0),
        (10.0, 0),
        (10.5, 20),
        (10.51, 20),
        (12.025, 81),
        (15.0, 200),
        (100.0, 200),
    ] {
        assert_eq!(replays(2, 5, t), count, "GPU 2's link 5 at {t}");
        assert_eq!(replays(5, 2, t), count, "GPU 5's link 2 at {t}");
    }
    assert_eq!(replays(2, 4, 12.0), 0, "another link");
    assert_eq!(replays(3, 5, 12.0), 0, "another GPU");
    let recoveries = |t| timed::recoveries(&faults, 2, 5, t);
    assert_eq!(
        (recoveries(9.0), recoveries(10.0), recoveries(30.0)),
        (0, 1, 1)
    );
    // Link indices wrap at 18 links.
    let wide = [timed("nvlink-errors@1-19+0/1")];
    assert_eq!(timed::replays(&wide, 1, 1, 1.0), 40);
    assert_eq!(timed::replays(&wide, 19, 1, 1.0), 40);
    // Two faults on one link add up.
    let twice = [
        timed("nvlink-errors@0-1+0/1"),
        timed("nvlink-errors@1-0+5/1"),
    ];
    assert_eq!(timed::replays(&twice, 0, 1, 10.0), 80);
    assert_eq!(timed::recoveries(&twice, 1, 0, 10.0), 2);
}

#[test]
fn xids_fall_due_in_order_of_time() {
    let faults = [
        timed("xid@3+20:48"),
        timed("throttle@0+1"),
        timed("xid@1+10"),
    ];
    assert_eq!(timed::xids_due(&faults, 9.0), []);
    assert_eq!(timed::xids_due(&faults, 10.0), [(2, 1, 79)]);
    assert_eq!(timed::xids_due(&faults, 25.0), [(2, 1, 79), (0, 3, 48)]);
}

#[test]
fn the_timed_factor_reads_real_time_against_the_epoch() {
    clock::inject(&[timed("throttle@1+10/5")], 0.0);
    let ns = |s: f64| ((clock::epoch_s() + s) * 1e9) as u64;
    assert_eq!(super::timed_factor(&[0, 1], ns(9.0)), 1.0);
    assert_eq!(super::timed_factor(&[0, 1], ns(12.0)), 1.6);
    assert_eq!(super::timed_factor(&[0, 1], ns(16.0)), 1.0);
    clock::inject(&[], 12.0);
    assert_eq!(super::timed_factor(&[0, 1], ns(12.0)), 1.0, "no fault");
}
