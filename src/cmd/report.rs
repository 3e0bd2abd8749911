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
    let job = match &args.workload {
        Some(path) => Some(
            crate::workload::Workload::read(path)
                .map_err(|e| anyhow::anyhow!("--workload: {e}"))?
                .as_job(path),
        ),
        None => None,
    };
    let path = report::write_with(&args.run, &args.baseline, args.threshold, user, job)?;
    println!("report: {}", path.display());
    Ok(0)
}
