//! Commands that work on finished run directories.

pub mod baseline;
pub mod ceilings;
pub mod check;
pub mod compare;
pub mod configs;
pub mod doctor;
pub mod explain;
pub mod history;
pub mod import;
pub mod report;
