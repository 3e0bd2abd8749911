//! The report's sections that read one part of `analysis` each: what the published
//! figures expect, what NCCL's logs say, what NVLS gained, NCCL's tuning choices, the
//! fitted model and the pairs. `analysis` returns the data; each section here writes
//! its sentences and tables.

pub mod expected;
pub mod model_table;
pub mod nccl_logs;
pub mod nvls;
pub mod pairs;
pub mod tuning;
