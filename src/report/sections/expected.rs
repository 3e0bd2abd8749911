//! The report's section of `analysis::expected`.

pub use crate::analysis::expected::markdown;
