//! Files of a run directory: CSV rows, the HdrHistogram log, the manifest. One
//! manager (`RunWriter`) owns them and writes after every case: rows and histograms
//! are appended in place in whole lines (a line a crash cut short is cut off when the
//! run is continued), the manifest is replaced atomically (temp file + rename), so an
//! interrupted or crashed sweep leaves every finished case readable.

pub mod atomic;
pub mod csv;
pub mod hlog;
pub mod merge;
pub mod reader;
pub mod run_dir;
pub mod soak;

pub use run_dir::{RunDir, RunWriter};
