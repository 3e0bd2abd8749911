//! `nccl-bench sweep`: the checked settings, a progress display for this terminal, and
//! the sweep itself (`sweep::session`).

use anyhow::Result;

use super::progress;
use super::settings::sweep_settings;
use crate::cli::SweepArgs;
use crate::sweep::session;

pub fn run(args: &SweepArgs) -> Result<u8> {
    let settings = sweep_settings(args)?;
    let mut observer = progress::for_terminal(settings.plain_output);
    session::run(&settings, observer.as_mut(), std::env::args().collect())
}
