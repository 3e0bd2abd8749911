//! The orchestrator: for each (GPU count, config), in each round (`sweep::rounds`,
//! interleaved across the configs of a GPU count), it spawns one worker per rank with
//! the config's environment, relays rank 0's unique id, then drives every size
//! (warm-up, timed batches until the stop rule is met, correctness check), folds the
//! ranks' iteration times (mean over ranks) into a histogram, and records each case
//! when its last round has combined its rounds.
//!
//! Failures are data. When a rank reports an error, dies, or a case exceeds its
//! timeout, the whole process group is killed and the case is recorded as `failed` or
//! `timeout` with the reason (the rank's error, its last lines of output). A failure
//! during communicator set-up, or in NCCL's connection set-up (a /dev/shm segment, a
//! refused connect: from 2.22 in the first collective), fails every remaining size of
//! that group at once (fresh processes would all fail the same way); a failure at one
//! size fails that size, and fresh processes take the remaining sizes. After two sizes
//! in a row timed out, the group's remaining sizes are recorded as `skipped` with the
//! reason (`--try-every-size` runs them): a hang costs at most two timeouts per group.
//! SIGINT/SIGTERM stop the sweep after killing the current group; every finished case
//! is already on disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::failure::Failure;
use super::group::Launch;
use super::observer::SweepObserver;
use super::plan::{Group, Plan};
use super::rounds::{combine, Book, Combined, RoundTake};
use crate::config::SweepSettings;
use crate::export::RunWriter;
use crate::model::{CaseCounts, CaseKey, CaseResult, CaseStatus, RunManifest, RunStatus};
use crate::stats::LatencyRecorder;
use crate::units::Bytes;

mod drive;
mod probe;
mod quality;
mod settle;
pub mod soak;
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
    /// A baseline the sweep measures each group against until `check` could decide
    /// it (`sweep --baseline`).
    pub gate: Option<crate::analysis::baseline::Gate>,
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
    /// NCCL's log shows a connection set-up failure (in the first collective from
    /// 2.22): every size of fresh processes would meet it again.
    in_setup: bool,
    failure: Failure,
    transports: String,
    reason: String,
}

/// One measurement of a case, all its rounds combined, with what the rules across
/// sizes need.
#[derive(Debug, Clone)]
pub(crate) struct Measurement {
    pub result: CaseResult,
    pub shape: crate::stats::quality::CaseShape,
}

/// The measurements a group's rounds collect.
pub(super) struct Takes {
    /// Cases with every round done, combined.
    pub(super) taken: Vec<Measurement>,
    /// Cases in flight: their rounds so far, and the cases that failed.
    pub(super) book: Book,
    /// The round being run (1-based).
    pub(super) round: u32,
    /// The rounds a case takes before it is combined: the sweep's (the most, where
    /// it measures until settled).
    pub(super) rounds: u32,
    /// Each size's event stride and what its calibration asked for, decided in
    /// its first round and kept by the later ones: one stride per case.
    pub(super) strides: std::collections::HashMap<u64, (u64, u64)>,
    /// What the probe group learnt about each size (NCCL backend).
    pub(super) probes: std::collections::HashMap<u64, SizeProbe>,
}

impl Takes {
    pub(super) fn new(rounds: u32) -> Takes {
        Takes {
            taken: Vec::new(),
            book: Book::default(),
            round: 1,
            rounds,
            strides: std::collections::HashMap::new(),
            probes: std::collections::HashMap::new(),
        }
    }
}

/// What the probe group (`probe`) learnt about one size.
#[derive(Debug, Clone, Default)]
pub(super) struct SizeProbe {
    pub(super) tuning: crate::model::TuningCells,
    /// NCCL refused the all-reduce (a forced choice it cannot follow), in its words.
    pub(super) refused: Option<String>,
}

impl Takes {
    /// What the probe found about a size, where it found something.
    pub(super) fn tuning(&self, bytes: u64) -> Option<crate::model::TuningCells> {
        self.probes.get(&bytes).map(|p| p.tuning.clone())
    }
}

impl Orchestrator<'_> {
    pub fn run(mut self, plan: &Plan) -> Result<SweepOutcome> {
        self.manifest.cases.total = plan.total_cases();
        self.manifest.sizes_not_run = plan.not_run();
        for line in &self.manifest.sizes_not_run {
            self.observer.warning(line);
        }
        self.writer.write_manifest(&self.manifest)?;
        let note = self.manifest.backend.note.clone();
        self.observer
            .sweep_started(plan.total_cases(), self.rounds(), &note);
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

    /// Runs every group, the groups of each rank count round by round; `Ok(true)`
    /// when interrupted.
    fn run_groups(&mut self, plan: &Plan) -> Result<bool> {
        let mut sequence = 0u32;
        for block in plan.blocks() {
            // The block's rows land in the order its last round completes them:
            // results.csv gets them back in the plan's order once it is done.
            let mark = self.writer.rows_mark()?;
            let rounds = self.rounds();
            let mut firsts: Vec<Takes> = block.iter().map(|_| Takes::new(rounds)).collect();
            // NCCL's decisions per size, from one untimed probe group per config.
            for (group, takes) in block.iter().zip(firsts.iter_mut()) {
                if self.interrupted.load(Ordering::SeqCst) {
                    return Ok(true);
                }
                takes.probes = self.probe(group, &group.sizes, &mut sequence)?;
                let mut refused: Vec<(u64, String)> = takes
                    .probes
                    .iter()
                    .filter_map(|(b, p)| Some((*b, p.refused.clone()?)))
                    .collect();
                refused.sort();
                for (bytes, words) in refused {
                    let status = CaseStatus::Unsupported;
                    let reason = format!("NCCL refused the forced choice: {words}");
                    self.record_not_run(group, bytes, status, "", reason, takes)?;
                }
            }
            let mut interrupted = false;
            // The round orders' seed: the start time, so each sweep draws its own.
            let seed = crate::stats::splitmix::seed_of(&self.manifest.started_at);
            self.record_order(block, seed);
            // Measuring until settled: the groups that go on to the next round.
            let mut going = vec![true; block.len()];
            'rounds: for round in 1..=rounds {
                let round_start = Instant::now();
                // One round: every config once, in an order of its own, the last
                // round too (a fixed order there would put each config after the
                // same other one in one round of every pair).
                for i in crate::stats::rounds::round_order(block.len(), seed, round) {
                    if !going[i] {
                        continue;
                    }
                    let (group, takes) = (&block[i], &mut firsts[i]);
                    takes.round = round;
                    if self.run_round(group, &group.sizes, &mut sequence, takes)? {
                        interrupted = true;
                        break 'rounds;
                    }
                }
                if round == 1 && rounds > 1 {
                    let note =
                        time_note(block, round_start.elapsed(), &self.manifest.looks, rounds);
                    self.observer.note(&note);
                }
                if round < rounds && self.manifest.looks.contains(&round) {
                    let family = plan.pair_cases();
                    self.look(block, &mut firsts, &mut going, round, family)?;
                }
            }
            if !interrupted {
                self.record_last_rounds(block, &firsts, &going, (rounds, plan.pair_cases()))?;
            }
            for (group, mut takes) in block.iter().zip(firsts) {
                if interrupted {
                    // What the interrupted rounds measured is kept, with fewer rounds.
                    for rounds in takes.book.take_unfinished() {
                        let mut combined = combine(rounds);
                        let note = format!(
                            "interrupted after {} of {} rounds",
                            combined.result.rounds(),
                            self.rounds()
                        );
                        let t = &mut combined.result.timing_note;
                        *t = if t.is_empty() {
                            note
                        } else {
                            format!("{t}; {note}")
                        };
                        self.keep(combined, &mut takes)?;
                    }
                }
                self.assess_group(group, &takes.taken)?;
            }
            let plan_order = |config: &str, collective: &str, bytes: u64| {
                let g = block
                    .iter()
                    .position(|g| g.config.name == config && g.collective.name() == collective)
                    .unwrap_or(block.len());
                let size = block
                    .get(g)
                    .and_then(|g| g.sizes.iter().position(|&b| b == bytes))
                    .unwrap_or(usize::MAX);
                (g, size)
            };
            self.writer.order_rows_from(mark, plan_order)?;
            if interrupted {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One round of a group: every size it has not failed, in fresh processes (again
    /// after a failure, from the next size). `Ok(true)` when interrupted.
    fn run_round(
        &mut self,
        group: &Group,
        sizes: &[u64],
        sequence: &mut u32,
        takes: &mut Takes,
    ) -> Result<bool> {
        let pending: Vec<u64> = sizes
            .iter()
            .copied()
            .filter(|&b| !takes.book.failed(&self.key(group, b)))
            .collect();
        let mut remaining: &[u64] = &pending;
        let mut attempt = 1;
        // The sizes that timed out in a row, in order.
        let mut timed_out: Vec<u64> = Vec::new();
        while !remaining.is_empty() {
            if self.interrupted.load(Ordering::SeqCst) {
                return Ok(true);
            }
            *sequence += 1;
            let stop = self.run_group(group, remaining, attempt, *sequence, takes)?;
            let Some(f) = stop else {
                break;
            };
            match &f.failure {
                Failure::Interrupted => return Ok(true),
                // Results could not be written: the sweep cannot go on.
                Failure::Write(e) => anyhow::bail!(e.clone()),
                _ => {}
            }
            let failed = if f.in_init || f.in_setup {
                remaining.len() - f.done
            } else {
                1
            };
            let first = remaining[f.done];
            for &bytes in &remaining[f.done..f.done + failed] {
                if bytes == first || f.in_init {
                    self.record_failure(group, bytes, &f, takes)?;
                } else {
                    let reason = format!(
                        "not run: NCCL's connection set-up failed at {} and would fail again in fresh processes: {}",
                        Bytes(first),
                        f.reason
                    );
                    let status = f.failure.status();
                    self.record_not_run(group, bytes, status, &f.transports, reason, takes)?;
                }
            }
            remaining = &remaining[f.done + failed..];
            if f.done > 0 {
                timed_out.clear();
            }
            if f.failure.status() == CaseStatus::Timeout {
                timed_out.push(first);
            } else {
                timed_out.clear();
            }
            if let [.., a, b] = timed_out[..] {
                if !self.settings.try_every_size {
                    let reason = format!(
                        "skipped: {} and {}, the two sizes before, timed out (--timeout {}); --try-every-size runs every size",
                        Bytes(a),
                        Bytes(b),
                        super::failure::seconds(self.settings.timeout)
                    );
                    for &bytes in remaining {
                        let status = CaseStatus::Skipped;
                        self.record_not_run(group, bytes, status, "", reason.clone(), takes)?;
                    }
                    break;
                }
            }
            attempt += 1;
        }
        Ok(false)
    }

    /// The rows of the chained Williams order this block's rounds take, into the
    /// manifest's design.
    fn record_order(&mut self, block: &[Group], seed: u64) {
        let Some(design) = self.manifest.design.as_mut() else {
            return;
        };
        let name =
            |g: &Group| crate::ops::collective::labelled(&g.config.name, g.collective.name());
        let count = crate::stats::rounds::chained(block.len()).len() as u32;
        let rows = (1..=count)
            .map(|r| {
                crate::stats::rounds::round_order(block.len(), seed, r)
                    .into_iter()
                    .map(|i| name(&block[i]))
                    .collect()
            })
            .collect();
        design.rows.push(crate::model::OrderRows {
            nranks: block.first().map_or(0, |g| g.nranks),
            rows,
        });
    }

    /// The sweep's rounds: `--rounds`, else the most measuring until settled takes.
    pub(super) fn rounds(&self) -> u32 {
        self.settings.rounds()
    }

    fn key(&self, group: &Group, bytes: u64) -> CaseKey {
        CaseKey {
            config: group.config.name.clone(),
            collective: group.collective,
            nranks: group.nranks,
            bytes,
            dtype: self.settings.dtype,
            op: self.settings.op,
        }
    }

    /// One round of a case: its histogram goes to the log at once (tagged with the
    /// round, when there are several), and its last round combines the case, which
    /// a first take then records.
    fn take_round(&mut self, round: RoundTake, takes: &mut Takes) -> Result<()> {
        let rounds = takes.rounds;
        if rounds > 1 {
            let tag = crate::export::hlog::round_tag(&round.result.hist_tag(), takes.round);
            self.writer.record_tagged_histogram(
                round.recorder.histogram(),
                &tag,
                round.offset,
                Duration::from_secs_f64(round.result.duration_s),
            )?;
        }
        self.observer.measured(1);
        if let Some(all) = takes.book.add(round, rounds) {
            self.keep(combine(all), takes)?;
        }
        Ok(())
    }

    /// A combined case: recorded now, and kept for the quality pass.
    fn keep(&mut self, combined: Combined, takes: &mut Takes) -> Result<()> {
        let Combined {
            result,
            shape,
            recorder,
            offset,
        } = combined;
        self.record(&result, Some(&recorder), offset)?;
        takes.taken.push(Measurement { result, shape });
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
        self.manifest.record_case(result);
        self.writer.update_manifest(&self.manifest)?;
        self.observer.case_finished(result);
        Ok(())
    }

    /// The ceiling of a case of `group` of `bytes` over `transports`, from the link
    /// rates measured before the sweep: over the group's own devices (a pair of
    /// `--pairs`), else over devices 0..nranks.
    fn ceiling(&self, group: &Group, bytes: u64, transports: &str) -> Option<f64> {
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
            bytes,
            transports,
        )
        .map(|c| c.gbps)
    }

    /// A case that failed in this round: recorded as failed, and left out of the
    /// later rounds (their share of the progress is done).
    fn record_failure(
        &mut self,
        group: &Group,
        bytes: u64,
        f: &GroupStop,
        takes: &mut Takes,
    ) -> Result<()> {
        // A forced algorithm or protocol NCCL refused is no failure.
        let status = if crate::nccl::tuning::is_refused_choice(&f.reason) {
            CaseStatus::Unsupported
        } else {
            f.failure.status()
        };
        self.record_not_run(group, bytes, status, &f.transports, f.reason.clone(), takes)
    }

    /// A case recorded without a measurement (failed, timed out, skipped), and left
    /// out of the later rounds.
    fn record_not_run(
        &mut self,
        group: &Group,
        bytes: u64,
        status: CaseStatus,
        transports: &str,
        reason: String,
        takes: &mut Takes,
    ) -> Result<()> {
        let key = self.key(group, bytes);
        takes.book.fail(&key);
        self.observer
            .measured(u64::from(takes.rounds.saturating_sub(takes.round) + 1));
        let result = CaseResult {
            key,
            backend: self.label.clone(),
            status,
            warmup: self.settings.warmup,
            graph: self.settings.graph,
            latency: None,
            bandwidth: None,
            stop: None,
            wrong: 0,
            transports: transports.to_string(),
            error: reason,
            started_at: crate::units::now_rfc3339(),
            duration_s: 0.0,
            quality: None,
            quality_note: String::new(),
            timing_note: String::new(),
            ceiling_gbps: None,
            round_p50_us: Vec::new(),
            tuning: takes.tuning(bytes).unwrap_or_default(),
            shm_backing: String::new(),
        };
        let offset = self.run_start.elapsed();
        self.record(&result, None, offset)
    }
}

/// What the first round of a block says of its time, start-up included: `round 1 on
/// 8 ranks took 7 s: 8 ranks take about 43 s (6 rounds), at most 58 s (8 rounds)`;
/// the first figure holds where every config settles at the first look.
fn time_note(block: &[Group], first: Duration, looks: &[u32], rounds: u32) -> String {
    let secs = first.as_secs_f64();
    let words = crate::units::duration_words;
    let ranks = crate::units::plural(
        block.first().map_or(0, |g| g.nranks) as usize,
        "rank",
        "ranks",
    );
    let expected = match looks.first() {
        Some(&look) if look < rounds => {
            format!("about {} ({look} rounds), ", words(secs * f64::from(look)))
        }
        _ => String::new(),
    };
    format!(
        "round 1 on {ranks} took {}: {ranks} take {expected}at most {} ({rounds} rounds)",
        words(secs),
        words(secs * f64::from(rounds))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_round_says_the_time_to_the_first_look_and_at_most() {
        let config = crate::config::TransportConfig {
            name: "default".into(),
            ..Default::default()
        };
        let block = [Group::new(
            config,
            8,
            crate::ops::collective::Collective::AllReduce,
            &[8],
            4,
        )];
        let note = time_note(&block, Duration::from_secs(7), &[6, 8], 8);
        assert_eq!(
            note,
            "round 1 on 8 ranks took 7 s: 8 ranks take about 42 s (6 rounds), at most 56 s (8 rounds)"
        );
        // Fixed rounds: no first look to name.
        let fixed = time_note(&block, Duration::from_secs(2), &[], 10);
        assert_eq!(
            fixed,
            "round 1 on 8 ranks took 2 s: 8 ranks take at most 20 s (10 rounds)"
        );
    }
}
