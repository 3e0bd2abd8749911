//! What the run's own NCCL logs say: `explain`'s errors and warnings on each case's
//! logs (`logs/<config>.n<N>[.try<k>].nccl.<host>.<pid>.log`), each with the cases it
//! concerns; and where NVLS failed and NCCL went on without it, what that cost against
//! the published NVLS figure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::expected::{platform_rows, RunPlatform};
use crate::config::expected::Platform;
use crate::export::reader::RunData;
use crate::nccl::explain::{explain, Severity};
use crate::ops::collective::Collective;
use crate::units::Bytes;

/// One finding of the logs and the cases (config, GPU count) whose logs show it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFinding {
    pub id: &'static str,
    pub severity: Severity,
    pub title: String,
    pub fix: String,
    pub cases: Vec<(String, u32)>,
}

/// `shm-off.n8.try1.nccl.host.123.log` -> (`shm-off`, 8).
fn case_of(name: &str) -> Option<(String, u32)> {
    let (prefix, _) = name.split_once(".nccl.")?;
    let prefix = match prefix.rsplit_once(".try") {
        Some((head, k)) if k.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => prefix,
    };
    let (config, n) = prefix.rsplit_once(".n")?;
    Some((config.to_string(), n.parse().ok()?))
}

/// The NCCL log files of each case, in name order.
fn logs_by_case(dir: &Path) -> BTreeMap<(String, u32), Vec<PathBuf>> {
    let mut out: BTreeMap<(String, u32), Vec<PathBuf>> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join(crate::export::run_dir::LOGS)) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(case) = case_of(&name) {
            out.entry(case).or_default().push(e.path());
        }
    }
    for paths in out.values_mut() {
        paths.sort();
    }
    out
}

/// The errors and warnings `explain` finds in each case's logs, the same finding of
/// several cases once.
pub fn findings(run: &RunData) -> Vec<LogFinding> {
    let mut out: Vec<LogFinding> = Vec::new();
    for (case, paths) in logs_by_case(&run.dir) {
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let Ok(log) = crate::nccl::log::parse_files(&refs) else {
            continue;
        };
        for f in explain(&log).findings {
            if f.severity == Severity::Info {
                continue;
            }
            let id = f.kind.as_str();
            match out.iter_mut().find(|o| o.id == id && o.title == f.title) {
                Some(o) => o.cases.push(case.clone()),
                None => out.push(LogFinding {
                    id,
                    severity: f.severity,
                    title: f.title,
                    fix: f.fix,
                    cases: vec![case.clone()],
                }),
            }
        }
    }
    out.sort_by_key(|f| f.severity);
    out
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

/// What NVLS falling back cost for `nranks` GPUs of `config`: the largest ok size's
/// busbw on rings against the published NVLS figure for this machine.
fn fallback_cost(run: &RunData, rows: &[Platform], config: &str, nranks: u32) -> Option<String> {
    let case = run
        .cases
        .iter()
        .filter(|c| {
            c.config == config
                && c.nranks == nranks
                && c.is_ok()
                && c.coll() == Collective::AllReduce
        })
        .max_by_key(|c| c.bytes)?;
    let busbw = case.busbw_gbps?;
    let platform = RunPlatform::of(run);
    let nvls = platform_rows(&platform, rows, nranks)
        .ok()?
        .into_iter()
        .find(|r| r.nvls)?;
    // A figure published for larger sizes says nothing of a small one.
    if case.bytes < nvls.from_bytes {
        return Some(format!(
            "Cost: {busbw:.0} GB/s busbw at {} without NVLS; {} publishes {:.0} GB/s from {} up, so sweep to {} (`-e {}`) to compare.",
            Bytes(case.bytes),
            nvls.name,
            nvls.busbw_gbps,
            Bytes(nvls.from_bytes),
            Bytes(nvls.from_bytes),
            size_flag(nvls.from_bytes)
        ));
    }
    let less = (1.0 - busbw / nvls.busbw_gbps) * 100.0;
    let side = if less >= 0.0 {
        format!("{less:.0} % below")
    } else {
        format!("{:.0} % above", -less)
    };
    Some(format!(
        "Cost: at {} the {nranks}-GPU all-reduce ran {busbw:.0} GB/s busbw without NVLS, {side} the {:.0} GB/s published for {}.",
        Bytes(case.bytes),
        nvls.busbw_gbps,
        nvls.name
    ))
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
                    writeln!(s, "  {cost}")?;
                }
            }
        }
    }
    writeln!(s)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names_give_their_case() {
        assert_eq!(
            case_of("shm-off.n8.try1.nccl.host.123.log"),
            Some(("shm-off".to_string(), 8))
        );
        assert_eq!(
            case_of("my.config.n2.nccl.h.1.log"),
            Some(("my.config".to_string(), 2))
        );
        assert_eq!(case_of("default.n2.rank0.log"), None);
    }

    #[test]
    fn sizes_read_as_the_flag_takes_them() {
        assert_eq!(size_flag(4 << 30), "4G");
        assert_eq!(size_flag(512 << 20), "512M");
        assert_eq!(size_flag(1000), "1000");
    }
}
