//! Files of a run directory: CSV rows, the HdrHistogram log, the manifest. One
//! manager (`RunWriter`) owns them and writes after every case, each file replaced
//! atomically (temp file + rename), so an interrupted or crashed sweep leaves every
//! finished case readable and never a half-written file.

pub mod atomic;
pub mod csv;
pub mod hlog;
pub mod reader;
pub mod run_dir;
pub mod soak;

pub use run_dir::{RunDir, RunWriter};
