//! The report's section of `analysis::tuning`.

pub use crate::analysis::tuning::markdown;
