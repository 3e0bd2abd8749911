//! One config's soak: fresh processes run the collective back to back at one size
//! for the soak's duration, in timed batches a quarter of an interval long; every
//! step (an iteration, or those between two timing events) lands in the interval it
//! ended in (`stats::soak::IntervalBins`), and each interval goes to the `SoakSink`
//! as soon as it closes. The whole soak is also one case (its histogram and row in
//! results.csv), so `compare` and `history` read soaks as they read sweeps. A rank
//! that fails or hangs ends the soak with its reason; what was measured is kept.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::super::failure::{Failure, Tails};
use super::super::group::{remove_segments, Incoming};
use super::super::merge::{fold_mean, merge_transports};
use super::super::plan::Group;
use super::super::protocol::{Command, Event};
use super::Orchestrator;
use crate::model::{CaseResult, CaseStatus};
use crate::stats::adaptive::{launch_steps, StopReason, MAX_BATCH};
use crate::stats::soak::{Interval, IntervalBins};
use crate::stats::{Bandwidth, LatencyRecorder};

/// How long a soak runs and how it is cut.
#[derive(Debug, Clone, Copy)]
pub struct SoakPlan {
    pub duration: Duration,
    pub interval: Duration,
}

/// Where a soak's intervals go as they close.
pub trait SoakSink {
    /// `interval` of `group`'s soak, which began `offset` after the run started.
    fn interval(
        &mut self,
        group: &Group,
        bytes: u64,
        offset: Duration,
        interval: &Interval,
    ) -> Result<()>;
}

/// The longest a timed batch should take: a quarter interval, at most 250 ms, so
/// that intervals close on time and a stop comes quickly.
fn batch_target(interval: Duration) -> Duration {
    (interval / 4).min(Duration::from_millis(250))
}

impl Orchestrator<'_> {
    /// Soaks `group` at `bytes`; returns the whole soak as one case, already
    /// recorded in results.csv and the histogram log.
    pub fn soak(
        &mut self,
        group: &Group,
        bytes: u64,
        plan: SoakPlan,
        sink: &mut dyn SoakSink,
    ) -> Result<CaseResult> {
        let prefix = format!("nccl-bench-{}-soak-{}", std::process::id(), group.stem());
        let log_stem = format!("{}.soak", group.stem());
        let logs = self.rank_logs(&log_stem, group.nranks);
        let specs = (0..group.nranks)
            .map(|r| self.worker_spec(group, r, &prefix, &log_stem))
            .collect();
        let offset = self.run_start.elapsed();
        let started_at = crate::units::now_rfc3339();
        let mut processes = self.launch.start(specs, logs)?;
        let mut tails = Tails::new(group.nranks);
        let mut total = LatencyRecorder::new();
        let mut transports = String::new();
        let outcome = self.soak_in(
            processes.as_mut(),
            &mut tails,
            group,
            bytes,
            plan,
            sink,
            &mut total,
            &mut transports,
        );
        match &outcome {
            Ok(_) => processes.finish(Duration::from_secs(2)),
            Err(_) => processes.kill(),
        }
        for message in processes.drain() {
            if let Incoming::Text(rank, line) = message {
                tails.push(rank, line);
            }
        }
        remove_segments(&self.settings.shm_dir, &prefix);
        let logged = self.nccl_log_findings(&log_stem);
        let logged_backing = logged.shm_backing.clone();
        if !logged.transports.is_empty() {
            transports = logged.transports;
        }
        let mut timing_note = format!(
            "soak of {} in {} intervals",
            crate::units::format_duration(plan.duration),
            crate::units::format_duration(plan.interval)
        );
        let (status, wrong, error) = match outcome {
            // Ctrl-C ends a soak early: what it measured stands, unchecked.
            Err(Failure::Interrupted) if total.count() > 0 => {
                timing_note.push_str(&format!(
                    "; interrupted after {}, the output not checked",
                    crate::units::format_duration(self.run_start.elapsed().saturating_sub(offset))
                ));
                (CaseStatus::Ok, 0, String::new())
            }
            Ok((0, _)) => (CaseStatus::Ok, 0, String::new()),
            Ok((wrong, first)) => (CaseStatus::Wrong, wrong, first),
            Err(f) => {
                let mut reason = f.describe(self.settings.timeout, &tails);
                if let Some(e) = logged.error {
                    crate::nccl::log::append_cause(&mut reason, &e);
                }
                (f.status(), 0, reason)
            }
        };
        let summary = (total.count() > 0).then(|| total.summary());
        let result = CaseResult {
            key: self.key(group, bytes),
            backend: self.label.clone(),
            status,
            warmup: self.settings.warmup,
            graph: self.settings.graph,
            bandwidth: summary
                .map(|s| Bandwidth::of(group.collective, bytes, group.nranks, s.mean_us)),
            latency: summary,
            stop: summary.map(|_| StopReason::Budget),
            wrong,
            transports,
            error,
            started_at,
            duration_s: self
                .run_start
                .elapsed()
                .saturating_sub(offset)
                .as_secs_f64(),
            quality: None,
            quality_note: String::new(),
            timing_note,
            ceiling_gbps: None,
            round_p50_us: summary.map(|s| vec![s.p50_us]).unwrap_or_default(),
            tuning: Default::default(),
            shm_backing: logged_backing,
        };
        self.writer
            .record(&result, Some(total.histogram()), offset)?;
        Ok(result)
    }

    /// The soak itself: set-up, warm-up, batches until the time is up (or a stop
    /// is asked), the check. `Ok` holds the wrong elements and the first one's words.
    #[allow(clippy::too_many_arguments)]
    fn soak_in(
        &mut self,
        processes: &mut dyn super::super::group::RankGroup,
        tails: &mut Tails,
        group: &Group,
        bytes: u64,
        plan: SoakPlan,
        sink: &mut dyn SoakSink,
        total: &mut LatencyRecorder,
        transports: &mut String,
    ) -> Result<(u64, String), Failure> {
        let n = group.nranks;
        let all: Vec<u32> = (0..n).collect();
        let timeout = self.settings.timeout;
        let ready = self.connect(processes, tails, n)?;
        *transports = merge_transports(&ready.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
        let phase = "soak";
        let warm = Command::Size {
            bytes,
            warmup: self.settings.warmup,
        };
        self.broadcast(processes, &warm, phase)?;
        let every = self
            .wait_for(
                processes,
                tails,
                &all,
                Instant::now() + timeout,
                phase,
                |e| match e {
                    Event::Warm { wanted, .. } => Some(wanted),
                    _ => None,
                },
            )?
            .into_iter()
            .max()
            .unwrap_or(1)
            .max(1);
        let per_step = if self.settings.graph > 0 {
            self.settings.graph
        } else {
            every
        };
        let group_offset = self.run_start.elapsed();
        let start = Instant::now();
        let mut bins = IntervalBins::new(plan.interval);
        let mut iters = per_step;
        let write = |sink: &mut dyn SoakSink, closed: Vec<Interval>| {
            for i in &closed {
                sink.interval(group, bytes, group_offset, i)
                    .map_err(|e| Failure::Write(format!("{e:#}")))?;
            }
            Ok::<(), Failure>(())
        };
        let whole = (MAX_BATCH - MAX_BATCH % per_step).max(per_step);
        while start.elapsed() < plan.duration && !self.interrupted.load(Ordering::SeqCst) {
            let batch = self.soak_batch(processes, tails, &all, iters, every, per_step, total);
            let (steps, sent, ended) = match batch {
                Ok(b) => b,
                // Ctrl-C during a batch: the intervals so far stand.
                Err(Failure::Interrupted) => break,
                Err(f) => {
                    // A failed or stalled batch: the intervals it left empty are data.
                    write(sink, bins.finish(start.elapsed()))?;
                    return Err(f);
                }
            };
            let ended = ended.duration_since(start);
            // The batch's steps ran back to back up to `ended`: each ended where the
            // ones after it began.
            let counts = launch_steps(iters as usize, per_step as usize);
            let mut at = ended;
            let mut placed: Vec<(Duration, u64, u64)> = Vec::with_capacity(steps.len());
            for (per_iteration, count) in steps.iter().zip(&counts).rev() {
                let ns = per_iteration * *count as u64;
                placed.push((at, ns, *count as u64));
                at = at.saturating_sub(Duration::from_nanos(ns));
            }
            for (end, ns, count) in placed.into_iter().rev() {
                write(sink, bins.add(end, ns, count))?;
            }
            // Batches are sized on the host's clock: the GPU's time per iteration
            // can be far below what a batch takes end to end (a stand-in, a host
            // that sets the pace). The worker takes at most MAX_BATCH at a time.
            let reported = steps.iter().sum::<u64>() as f64 / steps.len().max(1) as f64;
            let mean_ns = reported.max(sent.as_nanos() as f64 / iters as f64);
            let target = batch_target(plan.interval).as_nanos() as f64;
            let wanted = (target / mean_ns.max(1.0)) as u64;
            iters = ((wanted / per_step).max(1) * per_step).min(whole);
        }
        write(sink, bins.finish(start.elapsed()))?;
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(Failure::Interrupted);
        }
        self.broadcast(processes, &Command::Check, phase)?;
        let checks = self.wait_for(
            processes,
            tails,
            &all,
            Instant::now() + timeout,
            phase,
            |e| match e {
                Event::Checked { wrong, first_wrong } => Some((wrong, first_wrong)),
                _ => None,
            },
        )?;
        let (wrong, first) = super::drive::wrong_elements(&checks);
        self.say_goodbye(processes, tails, n);
        Ok((wrong, first))
    }

    /// One timed batch of `iters`: each step's time per iteration (mean over the
    /// ranks, folded into `total`), how long the batch took end to end, and when it
    /// ended.
    #[allow(clippy::too_many_arguments)]
    fn soak_batch(
        &mut self,
        processes: &mut dyn super::super::group::RankGroup,
        tails: &mut Tails,
        all: &[u32],
        iters: u64,
        every: u64,
        per_step: u64,
        total: &mut LatencyRecorder,
    ) -> Result<(Vec<u64>, Duration, Instant), Failure> {
        let phase = "soak";
        self.broadcast(processes, &Command::Renew, phase)?;
        let sent = Instant::now();
        self.broadcast(processes, &Command::Time { iters, every }, phase)?;
        let deadline = Instant::now() + self.settings.timeout;
        let batches: Vec<Vec<u64>> =
            self.wait_for(processes, tails, all, deadline, phase, |e| match e {
                Event::Batch { durations_ns } => Some(durations_ns.into_owned()),
                _ => None,
            })?;
        let ended = Instant::now();
        let steps = fold_mean(&batches, iters, per_step, total)?;
        Ok((steps, ended - sent, ended))
    }
}
