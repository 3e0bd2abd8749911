//! The cells the model's tables and `model.csv` share: alpha and beta with their
//! intervals and whether the sizes kept determine them, a rate, and why there is no
//! fit.

use crate::stats::alpha_beta::{AlphaBeta, NoFit, MIN_SIZES};
use crate::units::format_us;

/// Alpha with its interval, marked where no size kept determines it.
pub fn alpha_cell(f: &AlphaBeta) -> String {
    let cell = format!(
        "{} [{}, {}]",
        format_us(f.alpha_us),
        format_us(f.alpha_ci.0),
        format_us(f.alpha_ci.1)
    );
    if f.alpha_determined {
        cell
    } else if f.alpha_us <= 0.0 {
        format!("{cell} (not determined: below zero, the line misses the small sizes)")
    } else {
        format!("{cell} (not determined: no size kept is latency-bound)")
    }
}

/// Beta as bus bandwidth (x `bus`) with its interval, marked where no size kept
/// determines it.
pub fn beta_cell(f: &AlphaBeta, bus: f64) -> String {
    let cell = format!(
        "{} GB/s [{}, {}]",
        rate(f.beta_gbps * bus),
        rate(f.beta_ci.0 * bus),
        rate(f.beta_ci.1 * bus)
    );
    if f.beta_determined {
        cell
    } else {
        format!("{cell} (not determined: no size kept is bandwidth-bound)")
    }
}

/// A rate cell: GB/s with three decimals, `inf` where the interval is unbounded.
pub fn rate(gbps: f64) -> String {
    if gbps.is_finite() {
        format!("{gbps:.3}")
    } else {
        "inf".to_string()
    }
}

/// Why a config has no model.
pub fn no_fit(why: &NoFit) -> String {
    match why {
        NoFit::TooFewSizes(n) => {
            format!("not possible: {n} size(s) measured, the fit needs at least {MIN_SIZES}")
        }
        NoFit::NoLine => "not possible: no straight line time = alpha + bytes/beta holds over 3 or more of the sizes".into(),
    }
}
