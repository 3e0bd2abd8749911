//! `nccl-bench workload`: reads a job's collectives (NCCL's COLL lines, in one file or
//! one per rank, or a CSV of calls per step) and prints what the job sends. A file
//! that does not read is exit 2, naming the line and field.

use anyhow::{bail, Result};

use crate::cli::WorkloadArgs;
use crate::workload::{render, Format, Workload};

pub fn run(args: &WorkloadArgs) -> Result<u8> {
    let mut text = String::new();
    let mut names = Vec::new();
    for path in &args.files {
        let bytes = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        text.push_str(&String::from_utf8_lossy(&bytes));
        if !text.ends_with('\n') {
            text.push('\n');
        }
        names.push(path.display().to_string());
    }
    let name = names.join(", ");
    let workload = Workload::parse(&text, &name).map_err(anyhow::Error::msg)?;
    if workload.format == Format::Csv && args.files.len() > 1 {
        bail!("{name}: one CSV at a time (several files are one job's NCCL logs)");
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&render::json(&workload))?
        );
    } else {
        print!("{}", render::text(&workload));
    }
    Ok(0)
}

/// The job of `--workload FILE` (`compare`, `report`) as a report weighs it; an error
/// naming the flag where the file does not read, so that nothing is printed or
/// written before exit 2.
pub fn job_of(path: Option<&std::path::Path>) -> Result<Option<crate::config::SizesFrom>> {
    path.map(|p| {
        Workload::read(p)
            .map(|w| w.as_job(p))
            .map_err(|e| anyhow::anyhow!("--workload: {e}"))
    })
    .transpose()
}
