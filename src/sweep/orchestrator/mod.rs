//! The orchestrator: for each (GPU count, config) it spawns one worker per rank with
//! the config's environment, relays rank 0's unique id, then drives every size
//! (warm-up, timed batches until the stop rule is met, correctness check), folds the
//! ranks' iteration times (mean over ranks) into a histogram and records the case.
//!
//! Failures are data. When a rank reports an error, dies, or a case exceeds its
//! timeout, the whole process group is killed and the case is recorded as `failed` or
//! `timeout` with the reason (the rank's error, its last lines of output). A failure
//! during communicator set-up fails every size of that group (they would all fail the
//! same way); a failure at one size fails that size, and fresh processes take the
//! remaining sizes. SIGINT/SIGTERM stop the sweep after killing the current group;
//! every finished case is already on disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::failure::{Failure, Tails};
use super::group::{Launch, RankGroup};
use super::merge::{fold_mean, merge_transports};
use super::observer::SweepObserver;
use super::plan::{Group, Plan};
use super::protocol::{Command, Event};
use super::remeasure::{self, Measurement};
use crate::config::{IterationPolicy, SweepSettings};
use crate::export::RunWriter;
use crate::model::{CaseCounts, CaseKey, CaseResult, CaseStatus, RunManifest, RunStatus};
use crate::stats::adaptive::{BatchDecision, StopRule};
use crate::stats::quality::{CaseShape, Drift};
use crate::stats::{Bandwidth, LatencyRecorder};
use crate::units::Bytes;

mod quality;
mod spawn;
mod wait;

/// Everything a sweep needs from its caller.
pub struct Orchestrator<'a> {
    pub settings: &'a SweepSettings,
    /// Starts the worker processes of each group.
    pub launch: &'a mut dyn Launch,
    /// `host` or `nccl`, as the worker's `--backend` and the CSV's `backend`.
    /// The workers' `--backend` (`host`, `nccl`).
    pub backend: String,
    /// The CSV's `backend`: the backend, or `nccl-sim` on the simulated GPUs.
    pub label: String,
    /// The libnccl every NCCL worker loads (one library for the whole sweep).
    pub nccl_lib: Option<PathBuf>,
    /// Configurations that load a libnccl of their own.
    pub nccl_lib_per_config: Vec<(String, PathBuf)>,
    pub writer: &'a RunWriter,
    pub manifest: RunManifest,
    pub observer: &'a mut dyn SweepObserver,
    pub interrupted: Arc<AtomicBool>,
    pub run_start: Instant,
}

/// How a sweep ended.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    pub counts: CaseCounts,
    pub interrupted: bool,
}

/// A group that did not run all its sizes: where it stopped, why, and (once the
/// group is cleaned up) the reason as recorded.
struct GroupStop {
    /// Sizes completed (and recorded) before the failure.
    done: usize,
    /// The failure came during communicator set-up (every size would fail alike).
    in_init: bool,
    failure: Failure,
    transports: String,
    reason: String,
}

/// A case measured by `drive`: the measurement, and for a re-measurement (not
/// written as it is taken) its histogram and when it started.
pub(super) struct Taken {
    measurement: Measurement,
    histogram: Option<hdrhistogram::Histogram<u64>>,
    offset: Duration,
}

/// The measurements a group run collects, and which take they are.
pub(super) struct Takes {
    pub(super) take: Take,
    pub(super) taken: Vec<Taken>,
}

impl Takes {
    pub(super) fn new(take: Take) -> Takes {
        Takes {
            take,
            taken: Vec::new(),
        }
    }
}

/// Which measurement of its sizes a group takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    /// The sweep's own: each case is written as soon as it is measured.
    First,
    /// Flagged cases again, in fresh processes: kept aside for the quality pass.
    Second,
}

impl Orchestrator<'_> {
    pub fn run(mut self, plan: &Plan) -> Result<SweepOutcome> {
        self.manifest.cases.total = plan.total_cases();
        self.writer.write_manifest(&self.manifest)?;
        let note = self.manifest.backend.note.clone();
        self.observer.sweep_started(plan.total_cases(), &note);
        let interrupted = match self.run_groups(plan) {
            Ok(interrupted) => interrupted,
            Err(e) => {
                // The sweep itself broke (a file could not be written, a worker could
                // not be started): say so in the manifest, keep what is on disk.
                self.manifest.status = RunStatus::Aborted;
                self.manifest.error = Some(format!("{e:#}"));
                self.manifest.finished_at = Some(crate::units::now_rfc3339());
                let _ = self.writer.write_manifest(&self.manifest);
                return Err(e);
            }
        };
        self.manifest.status = if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        };
        self.manifest.finished_at = Some(crate::units::now_rfc3339());
        self.writer.write_manifest(&self.manifest)?;
        self.observer
            .sweep_finished(&self.manifest.cases, &self.writer.dir().path, interrupted);
        Ok(SweepOutcome {
            counts: self.manifest.cases.clone(),
            interrupted,
        })
    }

    /// Runs every group; `Ok(true)` when interrupted.
    fn run_groups(&mut self, plan: &Plan) -> Result<bool> {
        let mut sequence = 0u32;
        for group in &plan.groups {
            let mut remaining: &[u64] = &plan.sizes;
            let mut attempt = 1;
            let mut firsts = Takes::new(Take::First);
            while !remaining.is_empty() {
                if self.interrupted.load(Ordering::SeqCst) {
                    self.assess_group(group, firsts.taken, &mut sequence, true)?;
                    return Ok(true);
                }
                sequence += 1;
                let stop = self.run_group(group, remaining, attempt, sequence, &mut firsts)?;
                let Some(f) = stop else {
                    break;
                };
                match &f.failure {
                    Failure::Interrupted => {
                        self.assess_group(group, firsts.taken, &mut sequence, true)?;
                        return Ok(true);
                    }
                    // Results could not be written: the sweep cannot go on.
                    Failure::Write(e) => anyhow::bail!(e.clone()),
                    _ => {}
                }
                let failed = if f.in_init {
                    remaining.len() - f.done
                } else {
                    1
                };
                for &bytes in &remaining[f.done..f.done + failed] {
                    self.record_failure(group, bytes, &f)?;
                }
                remaining = &remaining[f.done + failed..];
                attempt += 1;
            }
            if self.assess_group(group, firsts.taken, &mut sequence, false)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn key(&self, group: &Group, bytes: u64) -> CaseKey {
        CaseKey {
            config: group.config.name.clone(),
            nranks: group.nranks,
            bytes,
            dtype: self.settings.dtype,
            op: self.settings.op,
        }
    }

    fn stop_rule(&self) -> StopRule {
        match self.settings.iterations {
            IterationPolicy::Fixed { iters } => StopRule::Fixed(iters),
            IterationPolicy::Adaptive {
                min_iters,
                precision,
                max_time,
            } => StopRule::Adaptive {
                min_iters,
                precision,
                max_time,
                max_iters: 10_000_000,
            },
        }
    }

    fn drive(
        &mut self,
        processes: &mut dyn RankGroup,
        tails: &mut Tails,
        group: &Group,
        sizes: &[u64],
        log_stem: &str,
        takes: &mut Takes,
    ) -> Result<(), GroupStop> {
        let take = takes.take;
        let n = group.nranks;
        let timeout = self.settings.timeout;
        let fail = |done, in_init, failure, transports: &str| GroupStop {
            done,
            in_init,
            failure,
            transports: transports.to_string(),
            reason: String::new(),
        };
        let init = "communicator set-up";
        if take == Take::First {
            self.observer.case_started(&self.key(group, sizes[0]));
        }
        let deadline = Instant::now() + timeout;
        let id = self
            .wait_for(processes, tails, &[0], deadline, init, |e| match e {
                Event::UniqueId { id } => Some(id),
                _ => None,
            })
            .map_err(|f| fail(0, true, f, ""))?
            .remove(0);
        for rank in 1..n {
            if processes
                .send(rank, &Command::UniqueId { id: id.clone() })
                .is_err()
            {
                return Err(fail(0, true, self.dead(processes, rank, init), ""));
            }
        }
        let all: Vec<u32> = (0..n).collect();
        let ready = self
            .wait_for(processes, tails, &all, deadline, init, |e| match e {
                Event::Ready { transports, .. } => Some(transports),
                _ => None,
            })
            .map_err(|f| fail(0, true, f, ""))?;
        let transports = merge_transports(&ready);

        let rule = self.stop_rule();
        for (done, &bytes) in sizes.iter().enumerate() {
            let key = self.key(group, bytes);
            if done > 0 && take == Take::First {
                self.observer.case_started(&key);
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
            self.wait_for(processes, tails, &all, deadline, &phase, |e| {
                matches!(e, Event::Warm { .. }).then_some(())
            })
            .map_err(failed)?;
            let mut recorder = LatencyRecorder::new();
            let mut drift = Drift::new();
            // Iterations per timestamp, the most any rank's batch had, and the most
            // a calibration asked for.
            let (mut every, mut wanted) = (1u64, 1u64);
            let timing_start = Instant::now();
            let stop = loop {
                match rule.next_in_launches(&recorder, timing_start.elapsed(), self.settings.graph)
                {
                    BatchDecision::Stop(reason) => break reason,
                    BatchDecision::Run(iters) => {
                        self.broadcast(processes, &Command::Time { iters }, &phase)
                            .map_err(failed)?;
                        let batches: Vec<Vec<u64>> = self
                            .wait_for(processes, tails, &all, deadline, &phase, |e| match e {
                                Event::Batch {
                                    durations_ns,
                                    every,
                                    wanted,
                                } => Some((durations_ns.into_owned(), every, wanted)),
                                _ => None,
                            })
                            .map_err(failed)?
                            .into_iter()
                            .map(|(d, e, w)| {
                                every = every.max(e);
                                wanted = wanted.max(w);
                                d
                            })
                            .collect();
                        let steps = fold_mean(&batches, iters, self.settings.graph, &mut recorder)
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
            let summary = recorder.summary();
            let shape = CaseShape::of(&recorder, &drift);
            // Only a correct case is judged for trust: a wrong one is a failure.
            let (quality, quality_note) = if wrong == 0 {
                let (q, note) = remeasure::first_quality(&shape);
                (Some(q), note)
            } else {
                (None, String::new())
            };
            let timing_note = timing_note(every, wanted);
            // NCCL connects lazily (at the first collective since 2.22): its log has
            // the connections once the case has run.
            let (logged, _) = self.nccl_log_findings(log_stem);
            let transports = if logged.is_empty() {
                transports.clone()
            } else {
                logged
            };
            let ceiling_gbps = self.ceiling(group, &transports);
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
                bandwidth: Some(Bandwidth::allreduce(bytes, n, summary.mean_us)),
                latency: Some(summary),
                stop: Some(stop),
                wrong,
                transports,
                error,
                started_at,
                duration_s: case_start.elapsed().as_secs_f64(),
                quality,
                quality_note,
                timing_note,
                second_take: take == Take::Second,
                ceiling_gbps,
            };
            let offset = case_start.duration_since(self.run_start);
            let histogram = match take {
                Take::First => {
                    self.record(&result, Some(&recorder), offset)
                        .map_err(|e| failed(Failure::Write(format!("{e:#}"))))?;
                    None
                }
                Take::Second => Some(recorder.histogram().clone()),
            };
            takes.taken.push(Taken {
                measurement: Measurement { result, shape },
                histogram,
                offset,
            });
        }
        // Best effort: a rank that does not say goodbye is killed by `finish`.
        if self.broadcast(processes, &Command::Exit, "exit").is_ok() {
            let _ = self.wait_for(
                processes,
                tails,
                &all,
                Instant::now() + Duration::from_secs(5),
                "exit",
                |e| matches!(e, Event::Bye).then_some(()),
            );
        }
        Ok(())
    }

    fn record(
        &mut self,
        result: &CaseResult,
        recorder: Option<&LatencyRecorder>,
        offset: Duration,
    ) -> Result<()> {
        self.writer
            .record(result, recorder.map(LatencyRecorder::histogram), offset)?;
        self.manifest.cases.add(result.status);
        if let Some(q) = result.quality {
            self.manifest.cases.add_quality(q);
        }
        self.writer.write_manifest(&self.manifest)?;
        self.observer.case_finished(result);
        Ok(())
    }

    /// The ceiling of a case of `group` over `transports`, from the link rates
    /// measured before the sweep: over the group's own devices (a pair of
    /// `--pairs`), else over devices 0..nranks.
    fn ceiling(&self, group: &Group, transports: &str) -> Option<f64> {
        let ceilings = self.manifest.ceilings.as_ref()?;
        let devices = group
            .config
            .devices
            .clone()
            .unwrap_or_else(|| (0..group.nranks as usize).collect());
        crate::analysis::ceiling::for_devices(
            ceilings,
            self.backend == "host",
            &devices,
            transports,
        )
        .map(|c| c.gbps)
    }

    fn record_failure(&mut self, group: &Group, bytes: u64, f: &GroupStop) -> Result<()> {
        let result = CaseResult {
            key: self.key(group, bytes),
            backend: self.label.clone(),
            status: f.failure.status(),
            warmup: self.settings.warmup,
            graph: self.settings.graph,
            latency: None,
            bandwidth: None,
            stop: None,
            wrong: 0,
            transports: f.transports.clone(),
            error: f.reason.clone(),
            started_at: crate::units::now_rfc3339(),
            duration_s: 0.0,
            quality: None,
            quality_note: String::new(),
            timing_note: String::new(),
            second_take: false,
            ceiling_gbps: None,
        };
        let offset = self.run_start.elapsed();
        self.record(&result, None, offset)
    }
}

/// What results.csv says about a case's timestamps: `every` iterations shared
/// one, the calibration asked for `wanted`.
fn timing_note(every: u64, wanted: u64) -> String {
    let strided = format!(
        "a timestamp every {every} iterations (one per iteration would have let the host set the pace): percentiles are of {every}-iteration means"
    );
    let held = format!(
        "a timestamp every {wanted} iterations would have kept the host from setting the pace, but the case had too few for 100 timestamps at that (adaptive iterations keep one per iteration): the times may include the host's event cost; -n N with N >= {} measures it strided",
        wanted * 100
    );
    match (every > 1, wanted > every) {
        (false, false) => String::new(),
        (true, false) => strided,
        (false, true) => held,
        (true, true) => format!("{strided}; {held}"),
    }
}
