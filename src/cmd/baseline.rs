//! `nccl-bench baseline RUN_DIR... -o baseline.json`: every case's level in each run
//! of one platform, and how much the runs differ as whole runs
//! (`analysis::baseline`), written atomically to a new file.

use anyhow::{anyhow, bail, Context, Result};

use crate::analysis::baseline::build;
use crate::cli::BaselineArgs;
use crate::export::atomic;
use crate::export::reader::RunData;

pub fn run(args: &BaselineArgs) -> Result<u8> {
    if args.output.exists() {
        bail!(
            "{} already exists: a baseline is never overwritten (remove it, or write another file)",
            args.output.display()
        );
    }
    let runs = args
        .runs
        .iter()
        .map(|d| RunData::load(d))
        .collect::<Result<Vec<_>>>()?;
    let baseline = build(&runs, crate::units::now_rfc3339()).map_err(|e| anyhow!(e))?;
    if baseline.cases.is_empty() {
        bail!("the runs have no ok case: nothing to make a baseline of");
    }
    let text = serde_json::to_string_pretty(&baseline)?;
    atomic::write(&args.output, format!("{text}\n").as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    println!(
        "baseline: {} cases from {} run(s) ({}{}) in {}",
        baseline.cases.len(),
        runs.len(),
        baseline.platform.backend,
        baseline
            .platform
            .gpu
            .as_deref()
            .map(|g| format!(", {g}"))
            .unwrap_or_default(),
        args.output.display()
    );
    let mut said = String::new();
    let mut say = |text: &str| {
        crate::units::wrap_into(&mut said, text, crate::units::TERMINAL_WIDTH, "", "  ");
    };
    if let Some(t) = baseline.run_to_run {
        say(&crate::report::check::run_to_run_words(&t));
    }
    let rounds = crate::config::DEFAULT_MAX_ROUNDS;
    let looks = crate::stats::change::looks(rounds).len();
    if let Some(reach) = crate::analysis::baseline::reach(&baseline, rounds as usize, looks) {
        say(&crate::report::check::reach_words(reach, rounds));
    }
    print!("{said}");
    Ok(0)
}
