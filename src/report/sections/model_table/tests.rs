//! The model section's words on synthetic runs with known alpha and beta: the SHM
//! sentence, the crossover cell, and the table per NCCL choice.

use super::*;
use crate::analysis::model_table::models;
use crate::analysis::model_table::tests::{choices_run, low_latency_run, row, run, same_run};
use crate::export::reader::CaseRow;

#[test]
fn the_shm_sentence_carries_both_models_numbers() {
    let mut s = String::new();
    markdown(&mut s, &models(&run()), "default", Some("shm-off")).unwrap();
    assert!(
        s.contains("**With 2 ranks, disabling SHM (shm-off) adds 25.00 us to every all-reduce and lowers the bandwidth term from 20.000 to 2.000 GB/s**"),
        "{s}"
    );
    assert!(
        s.contains("the models hold for 8 B to 32 MiB and 8 B to 32 MiB)."),
        "{s}"
    );
    // The lines cross where 5 + x/2e4 = 30 + x/2e3: never at a positive size.
    assert!(s.contains("| none: default faster at every size |"), "{s}");
}

#[test]
fn the_crossover_names_which_config_wins_on_each_side() {
    let mut s = String::new();
    markdown(&mut s, &models(&low_latency_run()), "default", None).unwrap();
    // 5 + x/2e4 = 2 + x/1e4: x = 3 / (1e-4 - 5e-5) = 60,000 bytes.
    assert!(
        s.contains("| 58.59 KiB: low-latency faster below, default above |"),
        "{s}"
    );
    assert!(!s.contains("disabling SHM"), "{s}");
    let mut s = String::new();
    markdown(&mut s, &models(&same_run()), "default", None).unwrap();
    assert!(
        s.contains("| none: the two models do not differ (both intervals overlap) |"),
        "{s}"
    );
}

#[test]
fn each_nccl_choice_gets_its_own_row() {
    let mut s = String::new();
    markdown(&mut s, &models(&choices_run()), "default", None).unwrap();
    assert!(
        s.contains("| default | Ring/LL | 8 B to 64 KiB (14) | 2.00 us ["),
        "{s}"
    );
    assert!(
        s.contains("| default | Ring/Simple | 128 KiB to 64 MiB (10) | 20.00 us ["),
        "{s}"
    );
}

/// `model.csv`'s columns, as docs/guide/is-this-normal.md names them.
const COLUMNS: [&str; 23] = [
    "config",
    "nranks",
    "dtype",
    "op",
    "status",
    "sizes",
    "sizes_kept",
    "min_bytes_kept",
    "max_bytes_kept",
    "alpha_us",
    "alpha_ci_low_us",
    "alpha_ci_high_us",
    "beta_algbw_gbps",
    "beta_algbw_ci_low_gbps",
    "beta_algbw_ci_high_gbps",
    "beta_busbw_gbps",
    "rms_residual_pct",
    "max_residual_pct",
    "alpha_determined",
    "beta_determined",
    "note",
    "choice",
    "collective",
];

#[test]
fn model_csv_has_a_row_per_config_and_says_why_a_fit_is_missing() {
    let mut r = run();
    r.cases.push(row("one-size", 2, 8, 4.0));
    let failed = row("failing", 2, 8, 4.0);
    r.cases.push(CaseRow {
        status: "failed".into(),
        ..failed
    });
    let text = String::from_utf8(csv(&models(&r)).unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], COLUMNS.join(","));
    assert_eq!(
        csv(&[]).unwrap(),
        format!("{}\n", COLUMNS.join(",")).into_bytes()
    );
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[1].starts_with("default,2,float,sum,fit,12,12,8,33554432,5.000,"),
        "{text}"
    );
    // busbw = algbw x 2(n-1)/n = 20 GB/s x 1 with two ranks.
    assert!(lines[1].contains(",20.000,0.00,0.00,true,true,"), "{text}");
    assert!(
        lines[3].starts_with("one-size,2,float,sum,not possible,1,"),
        "{text}"
    );
    assert!(
        lines[3].ends_with(
            ",\"not possible: 1 size(s) measured, the fit needs at least 3\",,all_reduce"
        ),
        "{text}"
    );
    assert!(lines[4].contains("not possible: 0 size(s)"), "{text}");
}

#[test]
fn the_guide_names_every_column_of_model_csv() {
    let guide = include_str!("../../../../docs/guide/is-this-normal.md").replace('\n', " ");
    let missing: Vec<&str> = COLUMNS
        .iter()
        .filter(|c| !guide.contains(&format!("`{c}`")))
        .copied()
        .collect();
    assert!(missing.is_empty(), "the guide lacks {missing:?}");
}

#[test]
fn model_csv_has_a_row_per_nccl_choice() {
    let models = models(&choices_run());
    let text = String::from_utf8(csv(&models).unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].ends_with(",,all_reduce"),
        "the fit over every size: {text}"
    );
    assert!(lines[2].ends_with(",Ring/LL,all_reduce"), "{text}");
    assert!(
        lines[3].starts_with("default,8,float,sum,fit,10,10,131072,67108864,20.000,"),
        "{text}"
    );
}
