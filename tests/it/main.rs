//! The integration tests, one binary: each module is the tests of one area (they were
//! one binary each, and each linked the whole crate). `common` holds the helpers they
//! share; `common::lock` keeps the tests that measure time from running beside others.

mod common;

mod architecture;
mod bad_input;
mod bandwidth_normal_cli;
mod collectives_cli;
mod compare_cli;
mod comparisons_cli;
mod docs;
mod doctor_cli;
mod explain_cli;
mod explain_corpus;
mod history_cli;
mod import_cli;
mod nccl_library;
mod node_pairs;
mod pairs_cli;
mod quality_cli;
mod real_launchers;
mod real_logs;
mod real_slurm;
mod report_cli;
mod report_html;
mod run_cli;
mod scripts_cli;
mod sim_fabric;
mod sim_gpus;
mod sim_register;
mod sim_speaks_real;
mod sim_today;
mod sim_tuning;
mod soak_cli;
mod sweep_end_to_end;
mod sweep_faults;
mod two_nodes;
mod workload_cli;
