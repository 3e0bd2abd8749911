//! nccl-bench: all-reduce throughput per NCCL transport configuration.

pub mod analysis;
pub mod backend;
pub mod cli;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod doctor;
pub mod export;
pub mod import;
pub mod machine;
pub mod model;
pub mod nccl;
pub mod ops;
pub mod parallel;
pub mod plot;
pub mod report;
pub mod stats;
pub mod sweep;
#[doc(hidden)]
pub mod test_inputs;
pub mod units;
