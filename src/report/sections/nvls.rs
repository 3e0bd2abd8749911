//! The report's section of `analysis::nvls`.

pub use crate::analysis::nvls::markdown;
