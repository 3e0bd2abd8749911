//! Pure statistics: bandwidth formulas, latency summaries built from HdrHistograms, and
//! the adaptive stopping rule. Nothing here does I/O or prints.

pub mod adaptive;
pub mod alpha_beta;
pub mod bandwidth;
pub mod compare;
pub mod distribution;
pub mod latency;
pub mod quality;
mod splitmix;

pub use adaptive::{BatchDecision, StopReason, StopRule};
pub use bandwidth::Bandwidth;
pub use latency::{LatencyRecorder, LatencySummary};
