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
    // A workload that does not read is exit 2 before anything is written.
    let job = super::workload::job_of(args.workload.as_deref())?;
    let path = report::write_with(&args.run, &args.baseline, args.threshold, user, job)?;
    println!("report: {}", path.display());
    Ok(0)
}
