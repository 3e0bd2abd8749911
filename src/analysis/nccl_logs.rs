//! What the run's own NCCL logs say: `explain`'s errors and warnings on each case's
//! logs (`logs/<config>.n<N>[.try<k>].nccl.<host>.<pid>.log`), each with the cases it
//! concerns; and where NVLS failed and NCCL went on without it, what that cost against
//! the published NVLS figure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::expected::{platform_rows, RunPlatform};
use crate::config::expected::Platform;
use crate::export::reader::RunData;
use crate::nccl::explain::{explain, Severity};
use crate::ops::collective::Collective;

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

/// What NVLS falling back cost one case: its largest ok all-reduce on rings against
/// the published NVLS figure for this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackCost<'a> {
    /// The largest size the case measured ok.
    pub bytes: u64,
    /// Its busbw there, without NVLS.
    pub busbw_gbps: f64,
    /// The figure published for NVLS on this machine.
    pub nvls: &'a Platform,
}

/// What NVLS falling back cost for `nranks` GPUs of `config`; `None` where the case
/// has no ok all-reduce or the machine no published NVLS figure.
pub fn fallback_cost<'a>(
    run: &RunData,
    rows: &'a [Platform],
    config: &str,
    nranks: u32,
) -> Option<FallbackCost<'a>> {
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
    let busbw_gbps = case.busbw_gbps?;
    let platform = RunPlatform::of(run);
    let nvls = platform_rows(&platform, rows, nranks)
        .ok()?
        .into_iter()
        .find(|r| r.nvls)?;
    Some(FallbackCost {
        bytes: case.bytes,
        busbw_gbps,
        nvls,
    })
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
}
