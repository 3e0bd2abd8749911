//! The "Algorithms and protocols" section's words on constructed runs: where NCCL
//! switches, the tuning finding, the cases beyond the prediction, why there is none,
//! and the sentence that locates a slow link.

use super::mispredict::slow_link;
use super::*;
use crate::analysis::tuning::mispredict::locate;
use crate::analysis::tuning::tests::{case, options, over_counts, run, switching};

#[test]
fn the_section_says_the_switch_the_faster_forced_choice_and_the_wrong_prediction() {
    let r = switching();
    let mut s = String::new();
    markdown(&mut s, &r, "default", options()).unwrap();
    assert!(
        s.contains("NCCL switches from Ring/LL to Ring/LL128 between 256 KiB and 1 MiB"),
        "{s}"
    );
    assert!(
        s.contains("| 64 KiB | Ring/LL (16 ch) | 5.00 us | 4.80 us | 1.04 | - |"),
        "{s}"
    );
    assert!(s.contains("**Tuning finding:** `ring-ll128` (NCCL_ALGO=Ring NCCL_PROTO=LL128) beats NCCL's own choice at 256 KiB"), "{s}");
    assert!(
        s.contains("- default, 8 GPUs: 1 of 3 cases with a prediction (1 MiB: 12.00 us measured, 5.00 us predicted), 2.4 x the predicted time"),
        "{s}"
    );
}

#[test]
fn old_nccl_says_why_there_is_no_prediction_and_the_host_backend_has_no_section() {
    let r = run(
        vec![
            case("default", 65536, 5.0, ("Ring", "LL"), None),
            case("ring-ll128", 65536, 5.0, ("Ring", "LL"), None),
        ],
        "2.19.3",
    );
    let mut s = String::new();
    markdown(&mut s, &r, "default", options()).unwrap();
    assert!(
        s.contains("No forced choice was faster than NCCL's own at any size here."),
        "{s}"
    );
    assert!(
        s.contains("No predicted times: NCCL 2.19.3 logs no TUNING line (from 2.20)"),
        "{s}"
    );
    let mut host = case("default", 8, 1.0, ("Ring", "ordinary stores"), None);
    host.backend = "host".into();
    let mut s = String::new();
    markdown(&mut s, &run(vec![host], "2.28.9"), "default", options()).unwrap();
    assert_eq!(s, "");
}

/// The slow-link sentence of `r`, where its GPU counts locate one.
fn sentence(r: &RunData) -> Option<String> {
    let t = tuning(r, "default", options()).unwrap();
    locate(r, &t.mispredicted).map(|link| slow_link(r, &link))
}

#[test]
fn the_slow_link_sentence_names_its_ranks_and_the_command_that_finds_it() {
    // A slow link at rank 3: groups of 2 keep to the prediction, 4 and 8 do not.
    let r = over_counts(&[2, 4, 8], |n| if n > 3 { 2.0 } else { 1.0 });
    let line = sentence(&r).unwrap();
    assert!(
        line.contains("groups of 2 GPUs keep to NCCL's prediction and groups of 4 and more do not: the link NCCL overrates is at ranks 2 to 3 (in a sweep, GPUs 2 to 3)"),
        "{line}"
    );
    assert!(
        line.contains("`nccl-bench sweep --pairs --gpus 8`"),
        "{line}"
    );
    let mut s = String::new();
    markdown(&mut s, &r, "default", options()).unwrap();
    assert!(
        s.contains("- default, 4 GPUs: 4 of 4 cases with a prediction (4 sizes from 8 B to 32 KiB), 2.0 x the predicted time"),
        "{s}"
    );
    assert!(s.contains("**Slow link:**"), "{s}");
    // With 3 ranks measured too, the one rank the 4-rank groups add.
    let r = over_counts(&[2, 3, 4, 8], |n| if n > 3 { 2.0 } else { 1.0 });
    assert!(
        sentence(&r)
            .unwrap()
            .contains("at rank 3 (in a sweep, GPU 3)"),
        "{r:?}"
    );
    // Every count: a link every group uses, or the model.
    let r = over_counts(&[2, 4, 8], |_| 2.0);
    assert!(
        sentence(&r).unwrap().starts_with("Every GPU count measured (2, 4, 8) is slower than NCCL predicts: a link that every group uses (ranks 0 to 1)"),
        "{r:?}"
    );
    // One GPU count cannot locate anything, and says so.
    let r = over_counts(&[8], |_| 2.0);
    assert!(
        sentence(&r)
            .unwrap()
            .contains("One GPU count cannot tell which"),
        "{r:?}"
    );
}
