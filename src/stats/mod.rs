//! Pure statistics: bandwidth formulas, latency summaries built from HdrHistograms, and
//! the adaptive stopping rule. Nothing here does I/O or prints.

pub mod adaptive;
pub mod alpha_beta;
pub mod bandwidth;
pub mod change;
pub mod latency;
pub mod normal;
pub mod proportion;
pub mod quality;
pub mod rounds;
pub mod soak;
pub(crate) mod splitmix;

pub use adaptive::{BatchDecision, StopReason, StopRule};

/// The median of `values` (the mean of the middle two for an even count); `None`
/// for none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}
pub use bandwidth::Bandwidth;
pub use latency::{grouped_median_ns, LatencyRecorder, LatencySummary};
