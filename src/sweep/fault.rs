//! Test-only fault injection, so that the sweep's failure handling is exercised by
//! real processes failing for real. A worker reads `NCCL_BENCH_FAULT`, a
//! comma-separated list of `KIND[:rank=R][:bytes=B]`:
//!
//! - `hang`    the rank stops responding (sleeps forever) at size B, or during init;
//! - `exit`    the rank exits with status 3 at size B, or during init;
//! - `crash`   the rank aborts (SIGABRT) at size B, or during init;
//! - `corrupt` the rank's all-reduce output is corrupted (every size);
//! - `segment` the rank hangs once its shared-memory segment exists and before it is
//!   unlinked (host backend), so only the orchestrator's clean-up can remove it;
//! - `stall`   the rank pauses `us=U` microseconds (default 2000) before every timed
//!   all-reduce at size B: a disturbance inside the case, for the quality rules;
//! - `slow`    every timed all-reduce of the rank takes `pct=P` percent longer (host
//!   backend; default 10): a known slowdown, set in one config's environment, for
//!   the statistics to find (`scripts/bench-aa.sh`).
//!
//! Without `rank=` a fault applies to every rank; without `bytes=` to init (hang,
//! exit, crash). Nothing outside the tests sets it.

use anyhow::{bail, Result};

pub const ENV: &str = "NCCL_BENCH_FAULT";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Hang,
    Exit,
    Crash,
    Corrupt,
    Segment,
    Stall,
    Slow,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    pub rank: Option<u32>,
    pub bytes: Option<u64>,
    /// The pause of a `stall`, microseconds.
    pub us: Option<u64>,
    /// The slowdown of a `slow`, percent.
    pub pct: Option<f64>,
}

/// Where in its life a worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Init,
    Size(u64),
}

/// The faults that apply to one rank.
#[derive(Debug, Clone, Default)]
pub struct Faults(Vec<Fault>);

impl Faults {
    pub fn parse(spec: &str, rank: u32) -> Result<Faults> {
        let mut faults = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let mut parts = item.split(':');
            let kind = match parts.next().unwrap_or("") {
                "hang" => FaultKind::Hang,
                "exit" => FaultKind::Exit,
                "crash" => FaultKind::Crash,
                "corrupt" => FaultKind::Corrupt,
                "segment" => FaultKind::Segment,
                "stall" => FaultKind::Stall,
                "slow" => FaultKind::Slow,
                other => bail!("{ENV}: unknown fault '{other}'"),
            };
            let mut fault = Fault {
                kind,
                rank: None,
                bytes: None,
                us: None,
                pct: None,
            };
            for kv in parts {
                match kv.split_once('=') {
                    Some(("rank", v)) => fault.rank = Some(v.parse()?),
                    Some(("bytes", v)) => fault.bytes = Some(crate::units::Bytes::parse(v)?.0),
                    Some(("us", v)) => fault.us = Some(v.parse()?),
                    Some(("pct", v)) => {
                        fault.pct =
                            Some(v.parse::<f64>().ok().filter(|p| *p >= 0.0).ok_or_else(|| {
                                anyhow::anyhow!("{ENV}: pct must be a percentage, got '{v}'")
                            })?)
                    }
                    _ => bail!("{ENV}: bad field '{kv}' in '{item}'"),
                }
            }
            if fault.rank.is_none_or(|r| r == rank) {
                faults.push(fault);
            }
        }
        Ok(Faults(faults))
    }

    pub fn from_env(rank: u32) -> Result<Faults> {
        match std::env::var(ENV) {
            Ok(spec) => Faults::parse(&spec, rank),
            Err(_) => Ok(Faults::default()),
        }
    }

    pub fn corrupts(&self) -> bool {
        self.0.iter().any(|f| f.kind == FaultKind::Corrupt)
    }

    /// Whether the rank hangs between creating its segment and unlinking it.
    pub fn hangs_with_segment(&self) -> bool {
        self.0.iter().any(|f| f.kind == FaultKind::Segment)
    }

    /// The fraction a `slow` adds to every timed all-reduce (0 without one).
    pub fn slowdown(&self) -> f64 {
        self.0
            .iter()
            .find(|f| f.kind == FaultKind::Slow)
            .map_or(0.0, |f| f.pct.unwrap_or(10.0) / 100.0)
    }

    /// Whether a `stall` is due at some size.
    pub fn has_stall(&self) -> bool {
        self.0.iter().any(|f| f.kind == FaultKind::Stall)
    }

    /// The pause before each timed all-reduce at `bytes`, when a `stall` is due there.
    pub fn stall_at(&self, bytes: u64) -> Option<std::time::Duration> {
        self.0
            .iter()
            .find(|f| f.kind == FaultKind::Stall && f.bytes == Some(bytes))
            .map(|f| std::time::Duration::from_micros(f.us.unwrap_or(2000)))
    }

    /// Carries out a hang, exit or crash due at this point; returns otherwise.
    pub fn trigger(&self, phase: Phase) {
        for f in &self.0 {
            let due = match (f.bytes, phase) {
                (None, Phase::Init) => true,
                (Some(b), Phase::Size(s)) => b == s,
                _ => false,
            };
            if !due {
                continue;
            }
            match f.kind {
                FaultKind::Hang => loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                },
                FaultKind::Exit => {
                    eprintln!("fault injection: exiting with status 3 at {phase:?}");
                    std::process::exit(3)
                }
                FaultKind::Crash => {
                    eprintln!("fault injection: aborting at {phase:?}");
                    std::process::abort()
                }
                FaultKind::Corrupt | FaultKind::Segment | FaultKind::Stall | FaultKind::Slow => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_select_ranks_and_sizes() {
        let f = Faults::parse("hang:rank=1:bytes=4K, corrupt:rank=0", 1).unwrap();
        assert_eq!(
            f.0,
            [Fault {
                kind: FaultKind::Hang,
                rank: Some(1),
                bytes: Some(4096),
                us: None,
                pct: None,
            }]
        );
        assert_eq!(Faults::parse("slow:pct=25", 0).unwrap().slowdown(), 0.25);
        assert_eq!(Faults::parse("slow", 0).unwrap().slowdown(), 0.10);
        assert_eq!(f.slowdown(), 0.0);
        assert!(Faults::parse("slow:pct=-3", 0).is_err());
        let stall = Faults::parse("stall:bytes=16:us=500", 0).unwrap();
        assert_eq!(
            stall.stall_at(16),
            Some(std::time::Duration::from_micros(500))
        );
        assert_eq!(stall.stall_at(32), None);
        let default = Faults::parse("stall:bytes=16", 0).unwrap();
        assert_eq!(
            default.stall_at(16),
            Some(std::time::Duration::from_millis(2))
        );
        assert!(!f.corrupts());
        assert!(Faults::parse("corrupt", 3).unwrap().corrupts());
        assert!(Faults::parse("explode", 0).is_err());
        assert!(Faults::parse("hang:when=now", 0).is_err());
        // Not due: returns.
        Faults::parse("exit:bytes=8", 0)
            .unwrap()
            .trigger(Phase::Size(16));
        Faults::parse("exit:bytes=8", 0)
            .unwrap()
            .trigger(Phase::Init);
    }
}
