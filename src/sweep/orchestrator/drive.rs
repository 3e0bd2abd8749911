//! Driving one group's processes through its sizes in one round: the communicator
//! set-up (rank 0's unique id relayed), then per size the warm-up, timed batches
//! until the round's stop rule is met (folded over ranks into its histogram), the
//! correctness check, and the round's measurement handed to `take_round`.

use std::time::{Duration, Instant};

use super::super::failure::{Failure, Tails};
use super::super::group::RankGroup;
use super::super::merge::{fold_mean, merge_transports};
use super::super::plan::Group;
use super::super::protocol::{Command, Event, WrongElement};
use super::super::rounds::RoundTake;
use super::{GroupStop, Orchestrator, Takes};
use crate::config::IterationPolicy;
use crate::model::{CaseResult, CaseStatus};
use crate::stats::adaptive::{BatchDecision, StopRule};
use crate::stats::quality::Drift;
use crate::stats::{Bandwidth, LatencyRecorder};
use crate::units::Bytes;

/// What a rank says once its communicator is up: its transports, and the algorithm
/// and protocol of a backend that decides them itself.
pub(super) type Ready = (String, Option<(String, String)>);

impl Orchestrator<'_> {
    /// The stop rule of one round: `-n` iterations each, or the adaptive rule with
    /// its time budget and minimum shared among the rounds.
    fn stop_rule(&self) -> StopRule {
        let rounds = self.rounds().max(1);
        match self.settings.iterations {
            IterationPolicy::Fixed { iters } => StopRule::Fixed(iters),
            IterationPolicy::Adaptive {
                min_iters,
                precision,
                max_time,
            } => StopRule::Adaptive {
                min_iters: min_iters.div_ceil(u64::from(rounds)).max(2),
                precision,
                max_time: max_time / rounds,
                max_iters: 10_000_000,
            },
        }
    }

    /// The case's stride from the largest one its ranks' calibrations asked for:
    /// as asked with adaptive iterations (they count timestamps), and with `-n`
    /// at most its iterations / 100, so that the case keeps 100 timestamps.
    fn stride(&self, wanted: u64) -> u64 {
        match self.settings.iterations {
            IterationPolicy::Fixed { iters } => wanted.min((iters / 100).max(1)),
            IterationPolicy::Adaptive { .. } => wanted,
        }
    }

    /// Relays rank 0's unique id and waits until every rank's communicator is up;
    /// each rank's transports and (where its backend decides it) algorithm.
    pub(super) fn connect(
        &mut self,
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        n: u32,
    ) -> Result<Vec<Ready>, Failure> {
        let init = "communicator set-up";
        let deadline = Instant::now() + self.settings.timeout;
        let id = self
            .wait_for(processes, tails, &[0], deadline, init, |e| match e {
                Event::UniqueId { id } => Some(id),
                _ => None,
            })?
            .remove(0);
        for rank in 1..n {
            if processes
                .send(rank, &Command::UniqueId { id: id.clone() })
                .is_err()
            {
                return Err(self.dead(processes, rank, init));
            }
        }
        let all: Vec<u32> = (0..n).collect();
        self.wait_for(processes, tails, &all, deadline, init, |e| match e {
            Event::Ready {
                transports,
                algorithm,
                ..
            } => Some((transports, algorithm)),
            _ => None,
        })
    }

    pub(super) fn drive(
        &mut self,
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        group: &Group,
        sizes: &[u64],
        log_stem: &str,
        takes: &mut Takes,
    ) -> Result<(), GroupStop> {
        let n = group.nranks;
        let timeout = self.settings.timeout;
        let fail = |done, in_init, failure, transports: &str| GroupStop {
            done,
            in_init,
            in_setup: false,
            failure,
            transports: transports.to_string(),
            reason: String::new(),
        };
        self.observer
            .case_started(&self.key(group, sizes[0]), takes.round);
        let ready = self
            .connect(processes, tails, n)
            .map_err(|f| fail(0, true, f, ""))?;
        let all: Vec<u32> = (0..n).collect();
        let transports = merge_transports(&ready.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
        // A backend that decides its algorithm itself says it once (rank 0's).
        let own = ready
            .first()
            .and_then(|r| r.1.clone())
            .map(|(algo, proto)| crate::model::TuningCells {
                algo,
                proto,
                ..Default::default()
            });

        let rule = self.stop_rule();
        for (done, &bytes) in sizes.iter().enumerate() {
            let key = self.key(group, bytes);
            if done > 0 {
                self.observer.case_started(&key, takes.round);
            }
            let phase = Bytes(bytes).to_string();
            let started_at = crate::units::now_rfc3339();
            let case_start = Instant::now();
            let deadline = case_start + timeout;
            let failed = |f| fail(done, false, f, &transports);
            self.broadcast(
                processes,
                &Command::Size {
                    bytes,
                    warmup: self.settings.warmup,
                },
                &phase,
            )
            .map_err(failed)?;
            // Iterations per timestamp: the most any rank's calibration asked for
            // in the case's first round, and what the case gives (one stride for
            // all ranks and rounds).
            let asked = self
                .wait_for(processes, tails, &all, deadline, &phase, |e| match e {
                    Event::Warm { wanted, .. } => Some(wanted),
                    _ => None,
                })
                .map_err(failed)?
                .into_iter()
                .max()
                .unwrap_or(1)
                .max(1);
            let (every, wanted) = *takes
                .strides
                .entry(bytes)
                .or_insert_with(|| (self.stride(asked), asked));
            let per_sample = if self.settings.graph > 0 {
                self.settings.graph
            } else {
                every
            };
            let mut recorder = LatencyRecorder::new();
            let mut drift = Drift::new();
            let timing_start = Instant::now();
            let stop = loop {
                match rule.next(&recorder, timing_start.elapsed(), per_sample) {
                    BatchDecision::Stop(reason) => break reason,
                    BatchDecision::Run(iters) => {
                        self.broadcast(processes, &Command::Time { iters, every }, &phase)
                            .map_err(failed)?;
                        let batches: Vec<Vec<u64>> = self
                            .wait_for(processes, tails, &all, deadline, &phase, |e| match e {
                                Event::Batch { durations_ns } => Some(durations_ns.into_owned()),
                                _ => None,
                            })
                            .map_err(failed)?;
                        let steps = fold_mean(&batches, iters, per_sample, &mut recorder)
                            .map_err(failed)?;
                        drift.add_batch(steps);
                    }
                }
            };
            self.broadcast(processes, &Command::Check, &phase)
                .map_err(failed)?;
            let checks = self
                .wait_for(processes, tails, &all, deadline, &phase, |e| match e {
                    Event::Checked { wrong, first_wrong } => Some((wrong, first_wrong)),
                    _ => None,
                })
                .map_err(failed)?;
            let (wrong, error) = wrong_elements(&checks);
            let summary = recorder.summary();
            let timing_note = timing_note(every, wanted, self.settings.graph);
            // NCCL connects lazily (at the first collective since 2.22): its log has
            // the connections once the case has run.
            let findings = self.nccl_log_findings(log_stem);
            let shm_backing = findings.shm_backing.clone();
            self.manifest.note_nccl_env(&key.config, &findings.env);
            let transports = if findings.transports.is_empty() {
                transports.clone()
            } else {
                findings.transports
            };
            let ceiling_gbps = self.ceiling(group, bytes, &transports);
            let mut tuning = takes
                .tuning(bytes)
                .or_else(|| own.clone())
                .unwrap_or_default();
            if let Some(note) = findings.nvls_note {
                tuning.note = match tuning.note.as_str() {
                    "" => note,
                    other => format!("{other}; {note}"),
                };
            }
            let bandwidth = Bandwidth::of(key.collective, bytes, n, summary.mean_us);
            let result = CaseResult {
                key,
                backend: self.label.clone(),
                status: if wrong > 0 {
                    CaseStatus::Wrong
                } else {
                    CaseStatus::Ok
                },
                warmup: self.settings.warmup,
                graph: self.settings.graph,
                bandwidth: Some(bandwidth),
                latency: Some(summary),
                stop: Some(stop),
                wrong,
                transports,
                error,
                started_at,
                duration_s: case_start.elapsed().as_secs_f64(),
                quality: None,
                quality_note: String::new(),
                timing_note,
                ceiling_gbps,
                round_p50_us: vec![summary.p50_us],
                tuning,
                shm_backing,
            };
            let round = RoundTake {
                result,
                recorder,
                drift,
                offset: case_start.duration_since(self.run_start),
            };
            self.take_round(round, takes)
                .map_err(|e| failed(Failure::Write(format!("{e:#}"))))?;
        }
        self.say_goodbye(processes, tails, n);
        Ok(())
    }

    /// Tells every rank to exit and waits a little for its goodbye. Best effort: a
    /// rank that does not say it is killed by `finish`. `false` when the command
    /// could not be sent.
    pub(super) fn say_goodbye(
        &self,
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        n: u32,
    ) -> bool {
        if self.broadcast(processes, &Command::Exit, "exit").is_err() {
            return false;
        }
        let all: Vec<u32> = (0..n).collect();
        let _ = self.wait_for(
            processes,
            tails,
            &all,
            Instant::now() + Duration::from_secs(5),
            "exit",
            |e| matches!(e, Event::Bye).then_some(()),
        );
        true
    }
}

/// The ranks' check answers as the case's wrong elements and its `error` words (the
/// first rank that found one, where).
pub(super) fn wrong_elements(checks: &[(u64, Option<WrongElement>)]) -> (u64, String) {
    let wrong: u64 = checks.iter().map(|c| c.0).sum();
    let error = checks
        .iter()
        .enumerate()
        .find_map(|(rank, (w, first))| {
            first.as_ref().map(|m| {
                format!(
                    "{wrong} wrong element(s) in total; rank {rank} has {w}, the first at index {}: got {}, expected {}",
                    m.index, m.got, m.expected
                )
            })
        })
        .unwrap_or_default();
    (wrong, error)
}

/// What results.csv says about a case's timestamps: `every` iterations shared
/// one, the calibration asked for `wanted` (neither applies to graph launches).
fn timing_note(every: u64, wanted: u64, graph: u64) -> String {
    if graph > 0 {
        return String::new();
    }
    // Why each stride is taken: docs/guide/sweeps.md.
    let strided =
        format!("a timestamp every {every} iterations: percentiles are of {every}-iteration means");
    let held = format!(
        "too few iterations to stride timestamps by {wanted}: times may include the host's event cost; -n {} or more strides them",
        wanted * 100
    );
    match (every > 1, wanted > every) {
        (false, false) => String::new(),
        (true, false) => strided,
        (false, true) => held,
        (true, true) => format!("{strided}; {held}"),
    }
}
