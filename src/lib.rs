//! nccl-bench: all-reduce throughput per NCCL transport configuration.

pub mod backend;
pub mod cli;
pub mod config;
pub mod ops;
pub mod stats;
pub mod units;
