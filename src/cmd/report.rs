//! `nccl-bench report`: writes `report.md` and `model.csv` into a run directory
//! (`report::write_with`) and prints where it is. `sweep` writes the same when it
//! finishes.

use anyhow::Result;

use crate::cli::ReportArgs;
use crate::report;

pub fn run(args: &ReportArgs) -> Result<u8> {
    let user = match &args.expected {
        Some(path) => vec![crate::config::expected::load(path)?],
        None => Vec::new(),
    };
    let path = report::write_with(&args.run, &args.baseline, args.threshold, user)?;
    println!("report: {}", path.display());
    Ok(0)
}
