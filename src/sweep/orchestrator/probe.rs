//! The probe group: on the NCCL backend, before the rounds of a (config, GPU count),
//! one untimed process group asks NCCL about every size. Its workers log with
//! `NCCL_DEBUG_SUBSYS` including `TUNING`, so rank 0's log says which algorithm,
//! protocol and channels NCCL chose for each all-reduce; each size runs once, after
//! `ncclGroupSimulateEnd` (2.22+) gave NCCL's own estimate; and a forced choice NCCL
//! refuses (2.24+) is learnt here, so that the rounds record it as `unsupported`
//! instead of starting processes to fail on it. The timed rounds never log per
//! collective: NCCL reads `NCCL_DEBUG_SUBSYS` once per process, and a line per
//! all-reduce is a file write on rank 0 inside the timed loop.
//!
//! A probe that fails is no failure of the sweep: the sizes it did not reach get no
//! tuning cells, and the rounds measure (or fail) them as always.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::super::failure::Tails;
use super::super::group::{remove_segments, WorkerSpec};
use super::super::plan::Group;
use super::super::protocol::{Command, Event};
use super::{Orchestrator, SizeProbe};
use crate::model::TuningCells;
use crate::nccl::{register, tuning, NcclVersion};

impl Orchestrator<'_> {
    /// Probes `sizes` of `group` in one untimed process group (NCCL backend only;
    /// nothing for the host backend, whose workers say their algorithm themselves).
    pub(super) fn probe(
        &mut self,
        group: &Group,
        sizes: &[u64],
        sequence: &mut u32,
    ) -> Result<HashMap<u64, SizeProbe>> {
        if self.nccl_lib.is_none() || sizes.is_empty() || !self.settings.probe {
            return Ok(HashMap::new());
        }
        *sequence += 1;
        let prefix = format!("nccl-bench-{}-{sequence}", std::process::id());
        let log_stem = format!("{}.probe", group.stem());
        let logs = self.rank_logs(&log_stem, group.nranks);
        let specs = (0..group.nranks)
            .map(|r| with_tuning(self.worker_spec(group, r, &prefix, &log_stem)))
            .collect();
        let mut processes = self.launch.start(specs, logs)?;
        let mut tails = Tails::new(group.nranks);
        let n = group.nranks;
        let mut answers: Vec<(u64, Option<f64>, Option<String>)> = Vec::new();
        let outcome = self
            .connect(processes.as_mut(), &mut tails, n)
            .and_then(|_| {
                let all: Vec<u32> = (0..n).collect();
                for &bytes in sizes {
                    let phase = format!("probe of {}", crate::units::Bytes(bytes));
                    self.broadcast(processes.as_mut(), &Command::Probe { bytes }, &phase)?;
                    let deadline = Instant::now() + self.settings.timeout;
                    let said = self.wait_for(
                        processes.as_mut(),
                        &mut tails,
                        &all,
                        deadline,
                        &phase,
                        |e| match e {
                            Event::Probed {
                                predicted_us,
                                refused,
                            } => Some((predicted_us, refused)),
                            _ => None,
                        },
                    )?;
                    let predicted = said.first().and_then(|s| s.0);
                    let refused = said.into_iter().find_map(|s| s.1);
                    answers.push((bytes, predicted, refused));
                }
                Ok(())
            });
        if outcome.is_ok() && self.say_goodbye(processes.as_mut(), &mut tails, n) {
            processes.finish(Duration::from_secs(2));
        } else {
            processes.kill();
        }
        let _ = processes.drain();
        remove_segments(&self.settings.shm_dir, &prefix);

        let log = self.nccl_log(&log_stem);
        let version = log
            .as_ref()
            .and_then(|l| l.versions.first())
            .and_then(|v| NcclVersion::parse(v));
        let choices = log.map(|log| log.choices).unwrap_or_default();
        let env = &group.config.env;
        let forced_algo = env.get("NCCL_ALGO").map(String::as_str);
        let forced_proto = env.get("NCCL_PROTO").map(String::as_str);
        let windows = group.config.register == Some(register::Registration::Symmetric);
        let copy_engine_silent = version.is_some_and(|v| (v.major, v.minor) == (2, 28));
        Ok(answers
            .into_iter()
            .map(|(bytes, predicted, refused)| {
                let func = group.collective.nccl_name();
                let logged = version.map_or(bytes, |v| tuning::logged_bytes(v, func, bytes, n));
                let decision = tuning::decision(&choices, func, logged, forced_algo, forced_proto);
                let tuning = match decision {
                    Some(d) => TuningCells {
                        algo: d.algo,
                        proto: d.proto,
                        channels: d.channels,
                        predicted_us: predicted.or(d.predicted_us),
                        note: d.note,
                    },
                    // NCCL chose for other sizes of a collective it tunes but logged
                    // nothing for this one: a copy-engine collective of 2.28 prints
                    // no line. (Point-to-point work never has one.)
                    // (Buffers in windows: a copy-engine collective of 2.28 may be
                    // the only collective of the probe, so no line at all.)
                    None if tuning::is_tuned(func)
                        && (!choices.is_empty() || windows && copy_engine_silent)
                        && refused.is_none() =>
                    {
                        TuningCells {
                            predicted_us: predicted,
                            note: format!("NCCL logged no choice for {func} of {logged} B"),
                            ..Default::default()
                        }
                    }
                    None => TuningCells {
                        predicted_us: predicted,
                        ..Default::default()
                    },
                };
                let mut tuning = tuning;
                let register = group.config.register.unwrap_or_default();
                if let Some(note) =
                    register::unused_windows_note(register, version, func, &tuning.algo)
                {
                    tuning.note = match tuning.note.as_str() {
                        "" => note,
                        other => format!("{other}; {note}"),
                    };
                }
                (bytes, SizeProbe { tuning, refused })
            })
            .collect())
    }
}

/// The worker's environment with NCCL's `TUNING` lines on (unless the config's own
/// `NCCL_DEBUG_SUBSYS` already has them, or all).
fn with_tuning(mut spec: WorkerSpec) -> WorkerSpec {
    let subsys = spec
        .env
        .entry("NCCL_DEBUG_SUBSYS".to_string())
        .or_insert_with(|| "INIT,ENV,SHM".to_string());
    let has = subsys
        .split(',')
        .any(|s| s.trim().eq_ignore_ascii_case("TUNING") || s.trim().eq_ignore_ascii_case("ALL"));
    if !has && !subsys.starts_with('^') {
        subsys.push_str(",TUNING");
    }
    spec
}
