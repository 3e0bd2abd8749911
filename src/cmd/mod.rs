//! Commands that work on finished run directories.

pub mod compare;
pub mod import;
