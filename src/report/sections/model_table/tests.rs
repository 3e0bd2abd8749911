//! The model section's words on synthetic runs with known alpha and beta: the SHM
//! sentence, the crossover cell, and the table per NCCL choice.

use super::*;
use crate::analysis::model_table::models;
use crate::analysis::model_table::tests::{choices_run, low_latency_run, run, same_run};

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
