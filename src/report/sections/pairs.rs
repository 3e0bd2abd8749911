//! The report's section of `analysis::pairs`.

pub use crate::analysis::pairs::markdown;
