//! The report's section of `analysis::model_table`.

pub use crate::analysis::model_table::markdown;
