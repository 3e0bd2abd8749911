//! What NCCL's logs say, as the report says it: each error and warning `explain`
//! finds in the run's NCCL logs (`analysis::nccl_logs::findings`) with the cases it
//! concerns and its fix, and under an NVLS fallback what it cost against the
//! published NVLS figure.

use std::fmt::Write as _;

use anyhow::Result;

use crate::analysis::nccl_logs::{fallback_cost, findings, FallbackCost};
use crate::config::expected::Platform;
use crate::export::reader::RunData;
use crate::units::Bytes;

/// The report's section; nothing where the logs hold no error or warning.
pub fn markdown(s: &mut String, run: &RunData, rows: &[Platform]) -> Result<()> {
    let found = findings(run);
    if found.is_empty() {
        return Ok(());
    }
    writeln!(s, "## What NCCL's logs say\n")?;
    writeln!(
        s,
        "`nccl-bench explain` on each case's NCCL logs (`logs/*.nccl.*.log`) finds:\n"
    )?;
    for f in &found {
        writeln!(
            s,
            "- **{}** ({}, {}). {}",
            f.title,
            f.severity.as_str().to_ascii_lowercase(),
            cases_words(&f.cases),
            f.fix
        )?;
        if f.id == "nvls-fallback" {
            for (config, nranks) in &f.cases {
                if let Some(cost) = fallback_cost(run, rows, config, *nranks) {
                    writeln!(s, "  {}", cost_words(&cost, *nranks))?;
                }
            }
        }
    }
    writeln!(s)?;
    Ok(())
}

/// `default n8, shm-off n8`.
fn cases_words(cases: &[(String, u32)]) -> String {
    let words: Vec<String> = cases
        .iter()
        .take(6)
        .map(|(c, n)| format!("{c} n{n}"))
        .collect();
    match cases.len() {
        n if n > 6 => format!("{} and {} more", words.join(", "), n - 6),
        _ => words.join(", "),
    }
}

/// What NVLS falling back cost `nranks` GPUs, in one sentence.
fn cost_words(cost: &FallbackCost, nranks: u32) -> String {
    let FallbackCost {
        bytes,
        busbw_gbps: busbw,
        nvls,
    } = cost;
    // A figure published for larger sizes says nothing of a small one.
    if *bytes < nvls.from_bytes {
        return format!(
            "Cost: {busbw:.0} GB/s busbw at {} without NVLS; {} publishes {:.0} GB/s from {} up, so sweep to {} (`-e {}`) to compare.",
            Bytes(*bytes),
            nvls.name,
            nvls.busbw_gbps,
            Bytes(nvls.from_bytes),
            Bytes(nvls.from_bytes),
            size_flag(nvls.from_bytes)
        );
    }
    let less = (1.0 - busbw / nvls.busbw_gbps) * 100.0;
    let side = if less >= 0.0 {
        format!("{less:.0} % below")
    } else {
        format!("{:.0} % above", -less)
    };
    format!(
        "Cost: at {} the {nranks}-GPU all-reduce ran {busbw:.0} GB/s busbw without NVLS, {side} the {:.0} GB/s published for {}.",
        Bytes(*bytes),
        nvls.busbw_gbps,
        nvls.name
    )
}

/// A size as `-e` takes it: `4G`, `512M`, `64K`, else bytes.
fn size_flag(bytes: u64) -> String {
    [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")]
        .iter()
        .find(|(unit, _)| bytes % unit == 0)
        .map_or(bytes.to_string(), |(unit, suffix)| {
            format!("{}{suffix}", bytes / unit)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_flag_takes_them() {
        assert_eq!(size_flag(4 << 30), "4G");
        assert_eq!(size_flag(512 << 20), "512M");
        assert_eq!(size_flag(1000), "1000");
    }
}
