//! The gate at the end of `sweep --baseline`: the run checked against the baseline
//! it was measured against, as `check` does.

use std::path::Path;

use anyhow::{Context, Result};

use crate::analysis::baseline::Gate;
use crate::units::now_rfc3339;

/// The gate at the end of a sweep made with `--baseline`: the run checked against
/// the baseline as `check` does, written into the run (check.md, check.xml), its
/// sentence printed; returns check's exit code.
pub(crate) fn check(run_dir: &Path, gate: &Gate) -> Result<u8> {
    let run = crate::export::reader::RunData::load(run_dir)?;
    let report = crate::analysis::baseline::check(&gate.baseline, &run, gate.threshold)
        .map_err(|e| anyhow::anyhow!(e))?;
    let name = "the baseline";
    let md = crate::report::check::table(&report, name, true);
    let xml = crate::report::junit::render(&report, name, &now_rfc3339());
    for (file, text) in [("check.md", md), ("check.xml", xml)] {
        let path = run_dir.join(file);
        crate::export::atomic::write(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!(
        "check: {} (exit {}; check.md, check.xml)",
        crate::report::check::sentence(&report),
        report.exit_code()
    );
    Ok(report.exit_code())
}
