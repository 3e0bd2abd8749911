//! The report's section of `analysis::nccl_logs`.

pub use crate::analysis::nccl_logs::markdown;
