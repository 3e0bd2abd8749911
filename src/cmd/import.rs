//! `nccl-bench import`: the output of an nccl-tests `*_perf` binary (text or `-J` JSON) read
//! (`import::parse`) and written as a run directory (`import::write_run`), with its
//! report.

use anyhow::{anyhow, Context, Result};

use crate::cli::ImportArgs;
use crate::import::{self, ImportRequest};
use crate::sweep::session::write_report;

pub fn run(args: &ImportArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut parsed = import::parse(&text)
        .map_err(|e| e.with_path_hint(args.file.display().to_string()))
        .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    if let Some(collective) = args.coll {
        import::name_collective(&mut parsed, collective)
            .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    }
    let request = ImportRequest {
        file: args.file.clone(),
        out: args.out.clone(),
        config: args.config.clone(),
        nranks: args.nranks,
        started_at: args.started_at.clone(),
    };
    let (dir, said) = import::write_run(&parsed, &request)?;
    println!("{said}");
    write_report(&dir);
    Ok(0)
}
