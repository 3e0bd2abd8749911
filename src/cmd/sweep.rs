//! `nccl-bench sweep`: the checked settings, a progress display for this terminal, and
//! the sweep itself (`sweep::session`).

use anyhow::{anyhow, Result};

use super::progress;
use super::settings::sweep_settings;
use crate::cli::SweepArgs;
use crate::sweep::session;

pub fn run(args: &SweepArgs) -> Result<u8> {
    let settings = sweep_settings(args)?;
    // A bad baseline is exit 2 before anything is measured.
    let gate = match &args.baseline {
        Some(path) => Some(crate::analysis::baseline::Gate {
            baseline: crate::analysis::baseline::load(path).map_err(|e| anyhow!(e))?,
            path: path.clone(),
            threshold: args.baseline_threshold,
        }),
        None => None,
    };
    let mut observer = progress::for_terminal(settings.plain_output);
    session::run(
        &settings,
        observer.as_mut(),
        std::env::args().collect(),
        gate,
    )
}
