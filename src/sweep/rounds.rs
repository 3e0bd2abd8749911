//! Rounds: every (config, rank count) is measured in `--rounds` independent process
//! groups, interleaved across the configs of a rank count (default, shm-off, default,
//! shm-off, ...) so that a machine drifting during the sweep moves every config alike.
//! Each case collects one measurement per round; its last round combines them. The
//! combined case pools the rounds' iterations (percentiles, mean, bandwidth) and
//! takes the interval of its median over the rounds
//! (`stats::rounds::median_interval`): the variation between process groups is in
//! it. The rules on the case itself (heavy tail, two modes, drift) judge a typical
//! round ([`typical_shape`]): pooled, a fast and a slow process group look bimodal
//! or drifted, a variation between rounds that their interval already holds. A case
//! that fails in a round is recorded as failed at once and left out of the
//! later rounds.

use std::time::Duration;

use super::merge::merge_transports;
use crate::model::{CaseKey, CaseResult, CaseStatus, TuningCells};
use crate::stats::quality::{case_flags, CaseShape, Drift};
use crate::stats::rounds::{median_interval, MIN_ROUNDS};
use crate::stats::{Bandwidth, LatencyRecorder, StopReason};

/// One round's measurement of a case.
pub(crate) struct RoundTake {
    /// The case as this round alone measured it.
    pub result: CaseResult,
    pub recorder: LatencyRecorder,
    pub drift: Drift,
    /// When the round's case began, from the run's start.
    pub offset: Duration,
}

/// A case's rounds so far, folded as they arrive: each round's result and the shape
/// the rules on one case see in it, and every round's iterations pooled in one
/// histogram. A round's own histogram is in the log already; keeping each would hold
/// one histogram (tens of KiB) per round for every case in flight, a GiB for a
/// 2,048-size sweep of 15 rounds.
pub(crate) struct Rounds {
    pub taken: Vec<Folded>,
    pub recorder: LatencyRecorder,
    pub drift: Drift,
}

/// What a case keeps of one round.
pub(crate) struct Folded {
    pub result: CaseResult,
    pub shape: CaseShape,
    /// When the round's case began, from the run's start.
    pub offset: Duration,
}

impl Rounds {
    pub(crate) fn new() -> Rounds {
        Rounds {
            taken: Vec::new(),
            recorder: LatencyRecorder::new(),
            drift: Drift::new(),
        }
    }

    /// Folds one more round in (its histogram is dropped once pooled).
    pub(crate) fn push(&mut self, take: RoundTake) {
        self.recorder.merge(&take.recorder);
        self.drift.extend(&take.drift);
        self.taken.push(Folded {
            shape: CaseShape::of(&take.recorder, &take.drift),
            result: take.result,
            offset: take.offset,
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.taken.len()
    }
}

impl From<Vec<RoundTake>> for Rounds {
    fn from(takes: Vec<RoundTake>) -> Rounds {
        let mut rounds = Rounds::new();
        for t in takes {
            rounds.push(t);
        }
        rounds
    }
}

/// A case combined from its rounds.
pub(crate) struct Combined {
    /// The case's result: quality and note from the rules on its pooled iterations.
    pub result: CaseResult,
    pub shape: CaseShape,
    /// Every round's iterations.
    pub recorder: LatencyRecorder,
    /// When its first round began.
    pub offset: Duration,
}

/// Combines the rounds of one case (at least one, in the order they ran).
/// The shape of a typical round of a case: among the rounds with the median number
/// of flags from the rules on one case, the one whose median is nearest the pooled
/// one. Most rounds flagged: the case is; one round in a slow mode: it is not (the
/// interval over the rounds holds that).
fn typical_shape(takes: &[Folded], pooled_p50_us: f64) -> CaseShape {
    let shapes: Vec<(usize, CaseShape)> = takes
        .iter()
        .map(|t| (case_flags(&t.shape).len(), t.shape))
        .collect();
    let mut counts: Vec<usize> = shapes.iter().map(|(n, _)| *n).collect();
    counts.sort_unstable();
    let typical = counts[(counts.len() - 1) / 2];
    shapes
        .into_iter()
        .filter(|(n, _)| *n == typical)
        .map(|(_, s)| s)
        .min_by(|a, b| {
            let off = |s: &CaseShape| (s.p50_us - pooled_p50_us).abs();
            off(a).total_cmp(&off(b))
        })
        .expect("a round has the median count")
}

pub(crate) fn combine(rounds: impl Into<Rounds>) -> Combined {
    let Rounds {
        taken: takes,
        recorder,
        drift,
    } = rounds.into();
    let shape = if takes.len() > 1 {
        typical_shape(&takes, recorder.summary().p50_us)
    } else {
        CaseShape::of(&recorder, &drift)
    };
    let round_p50_us: Vec<f64> = takes
        .iter()
        .filter_map(|t| t.result.latency.map(|l| l.p50_us))
        .collect();
    let mut notes: Vec<String> = Vec::new();
    for t in &takes {
        if !t.result.timing_note.is_empty() && !notes.contains(&t.result.timing_note) {
            notes.push(t.result.timing_note.clone());
        }
    }
    let mut summary = recorder.summary();
    let samples = recorder.summary().samples;
    notes.extend(summary.tail_note(crate::stats::latency::SWEEP_REMEDY));
    if samples < MIN_ROUNDS as u64 && takes.len() < MIN_ROUNDS {
        notes.push(format!(
            "{samples} samples: too few for a 95 % interval of the median ({MIN_ROUNDS} needed)"
        ));
    }
    if takes.len() > 1 {
        // Never narrower than the pooled iterations alone say, and always around the
        // pooled median.
        let (mut lo, mut hi) = summary.median_ci_us;
        match median_interval(&round_p50_us) {
            Some((a, b)) => {
                lo = lo.min(a);
                hi = hi.max(b);
            }
            None => {
                let min = round_p50_us.iter().copied().fold(f64::INFINITY, f64::min);
                let max = round_p50_us.iter().copied().fold(0.0, f64::max);
                lo = lo.min(min);
                hi = hi.max(max);
                notes.push(format!(
                    "{} rounds, fewer than {MIN_ROUNDS}: the median's interval spans them but is not a 95 % interval over process groups",
                    takes.len()
                ));
            }
        }
        summary.median_ci_us = (lo.min(summary.p50_us), hi.max(summary.p50_us));
    }
    let transports = most_common(takes.iter().map(|t| t.result.transports.as_str()));
    let disagree: Vec<&str> = distinct(takes.iter().map(|t| t.result.transports.as_str()));
    if disagree.len() > 1 {
        notes.push(format!(
            "the rounds' transports differ: {}",
            disagree.join(", ")
        ));
    }
    // A wrong round makes the case wrong; its count is the worst round's, as one
    // process group's check counts them.
    let wrong = takes.iter().map(|t| t.result.wrong).max().unwrap_or(0);
    let wrong_rounds = takes.iter().filter(|t| t.result.wrong > 0).count();
    if wrong_rounds > 0 && takes.len() > 1 {
        notes.push(format!("wrong in {wrong_rounds} of {} rounds", takes.len()));
    }
    let first = &takes[0].result;
    let key = first.key.clone();
    // What each round ran: one probe's choice for NCCL, so the same in every round;
    // on the host backend each round's communicator picks its store mode, and
    // rounds that differ give a mix with each one's share of the rounds.
    let of_rounds = |cell: fn(&TuningCells) -> &String| {
        let values: Vec<String> = takes
            .iter()
            .map(|t| cell(&t.result.tuning).clone())
            .collect();
        merge_transports(&values)
    };
    let tuning = TuningCells {
        algo: of_rounds(|t| &t.algo),
        proto: of_rounds(|t| &t.proto),
        ..first.tuning.clone()
    };
    let result = CaseResult {
        bandwidth: Some(Bandwidth::of(
            key.collective,
            key.bytes,
            key.nranks,
            summary.mean_us,
        )),
        latency: Some(summary),
        status: if wrong > 0 {
            CaseStatus::Wrong
        } else {
            CaseStatus::Ok
        },
        stop: takes
            .iter()
            .filter_map(|t| t.result.stop)
            .max_by_key(|s| limit(*s)),
        wrong,
        transports,
        error: takes
            .iter()
            .map(|t| t.result.error.as_str())
            .find(|e| !e.is_empty())
            .unwrap_or_default()
            .to_string(),
        duration_s: takes.iter().map(|t| t.result.duration_s).sum(),
        timing_note: notes.join("; "),
        round_p50_us,
        key,
        tuning,
        quality: None,
        quality_note: String::new(),
        ..first.clone()
    };
    let (quality, quality_note) = if result.wrong == 0 {
        let (q, note) = crate::stats::quality::first_quality(&shape);
        (Some(q), note)
    } else {
        (None, String::new())
    };
    Combined {
        result: CaseResult {
            quality,
            quality_note,
            ..result
        },
        shape,
        offset: takes[0].offset,
        recorder,
    }
}

/// What stopped the rounds, the most limiting first: a round that ran out of time
/// or hit the cap says more than one that converged.
fn limit(stop: StopReason) -> u8 {
    match stop {
        StopReason::Count => 0,
        StopReason::Converged => 1,
        StopReason::Budget => 2,
        StopReason::Cap => 3,
    }
}

fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The most frequent value (the first seen among equals).
fn most_common<'a>(values: impl Iterator<Item = &'a str> + Clone) -> String {
    let all: Vec<&str> = values.collect();
    distinct(all.iter().copied())
        .into_iter()
        .max_by_key(|v| {
            let count = all.iter().filter(|x| *x == v).count();
            // Earlier first among equals: max_by_key keeps the last maximum.
            (count, std::cmp::Reverse(all.iter().position(|x| x == v)))
        })
        .unwrap_or_default()
        .to_string()
}

/// The cases of a block of groups in flight: their rounds so far, and the cases
/// that failed (left out of the later rounds).
#[derive(Default)]
pub(crate) struct Book {
    /// (case, its rounds so far), in the order the cases started.
    pending: Vec<(CaseKey, Rounds)>,
    failed: Vec<CaseKey>,
}

impl Book {
    /// Adds a round; returns every round of the case once it has `rounds` of them.
    pub(crate) fn add(&mut self, take: RoundTake, rounds: u32) -> Option<Rounds> {
        let key = take.result.key.clone();
        let at = match self.pending.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                self.pending.push((key, Rounds::new()));
                self.pending.len() - 1
            }
        };
        self.pending[at].1.push(take);
        if self.pending[at].1.len() >= rounds as usize {
            Some(self.pending.remove(at).1)
        } else {
            None
        }
    }

    /// A case failed: its rounds so far are dropped (their histograms are in the
    /// log already) and later rounds leave it out. Returns how many rounds it had.
    pub(crate) fn fail(&mut self, key: &CaseKey) -> usize {
        if !self.failed.contains(key) {
            self.failed.push(key.clone());
        }
        match self.pending.iter().position(|(k, _)| k == key) {
            Some(at) => self.pending.remove(at).1.len(),
            None => 0,
        }
    }

    pub(crate) fn failed(&self, key: &CaseKey) -> bool {
        self.failed.contains(key)
    }

    /// The round medians of a case so far (None: not in flight).
    pub(crate) fn medians(&self, key: &CaseKey) -> Option<Vec<f64>> {
        let (_, rounds) = self.pending.iter().find(|(k, _)| k == key)?;
        rounds
            .taken
            .iter()
            .map(|t| t.result.latency.map(|l| l.p50_us))
            .collect()
    }

    /// Every case in flight of which `of` holds, with its rounds so far (its group
    /// stopped measuring), in the order they started.
    pub(crate) fn take_where(&mut self, of: impl Fn(&CaseKey) -> bool) -> Vec<Rounds> {
        let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(k, _)| of(k));
        self.pending = kept;
        taken.into_iter().map(|(_, r)| r).collect()
    }

    /// Every case with rounds but not all of them (the sweep was interrupted), in
    /// the order they started.
    pub(crate) fn take_unfinished(&mut self) -> Vec<Rounds> {
        self.take_where(|_| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{DataType, ReduceOp};

    fn take(bytes: u64, round_ns: &[u64], transports: &str) -> RoundTake {
        let mut recorder = LatencyRecorder::new();
        let mut drift = Drift::new();
        for &ns in round_ns {
            recorder.record(ns);
        }
        drift.add_batch(round_ns.iter().copied());
        let summary = recorder.summary();
        RoundTake {
            result: CaseResult {
                key: CaseKey {
                    config: "default".into(),
                    collective: crate::ops::collective::Collective::AllReduce,
                    nranks: 2,
                    bytes,
                    dtype: DataType::Float,
                    op: ReduceOp::Sum,
                },
                backend: "host".into(),
                status: CaseStatus::Ok,
                warmup: 5,
                graph: 0,
                latency: Some(summary),
                bandwidth: None,
                stop: Some(StopReason::Converged),
                wrong: 0,
                transports: transports.into(),
                error: String::new(),
                started_at: "t0".into(),
                duration_s: 0.5,
                quality: None,
                quality_note: String::new(),
                timing_note: String::new(),
                ceiling_gbps: None,
                round_p50_us: vec![summary.p50_us],
                tuning: Default::default(),
                shm_backing: String::new(),
            },
            recorder,
            drift,
            offset: Duration::from_secs(1),
        }
    }

    #[test]
    fn rounds_pool_their_iterations_and_bound_the_median_over_rounds() {
        // Nine rounds whose medians are 10.0 .. 10.8 us, each very steady inside.
        let takes: Vec<RoundTake> = (0..9u64)
            .map(|r| take(1024, &[10_000 + 100 * r; 50], "SHM"))
            .collect();
        let c = combine(takes);
        let l = c.result.latency.unwrap();
        assert_eq!(l.count, 450);
        assert_eq!(c.result.rounds(), 9);
        // Histogram values: the top of a 0.1 % bucket.
        let near = |a: f64, b: f64| (a - b).abs() < 0.011;
        assert!(
            near(c.result.round_p50_us[8], 10.8),
            "{:?}",
            c.result.round_p50_us
        );
        assert!((l.mean_us - 10.4).abs() < 1e-9, "{l:?}");
        // Ranks 2 and 8 of nine: 10.1 and 10.7 us, where one round alone would
        // claim a width of 0.
        let (lo, hi) = l.median_ci_us;
        assert!(near(lo, 10.1) && near(hi, 10.7), "{lo} {hi}");
        assert_eq!(c.result.duration_s, 4.5);
        assert_eq!(c.result.quality, Some(crate::stats::quality::Quality::Ok));
        // 450 samples: p90 is estimated, p99 is not.
        assert!(
            c.result
                .timing_note
                .starts_with("p99 left empty: 450 samples"),
            "{}",
            c.result.timing_note
        );
        assert_eq!(c.offset, Duration::from_secs(1));
        assert!(c.result.bandwidth.is_some());
    }

    #[test]
    fn the_rules_on_a_case_judge_a_typical_round_not_the_pooled_rounds() {
        let flags = |takes: Vec<RoundTake>| case_flags(&combine(takes).shape).len();
        // Steady rounds, half of them twice as slow: pooled, a third of the
        // iterations are twice the median (bimodal) and the last quarter is slower
        // (drifted); each round is clean, and the rounds' interval holds the spread.
        let halves: Vec<RoundTake> = (0..8u64)
            .map(|r| take(1024, &[10_000 * (1 + r / 5); 200], "SHM"))
            .collect();
        let pooled = {
            let mut recorder = LatencyRecorder::new();
            let mut drift = Drift::new();
            for t in &halves {
                recorder.merge(&t.recorder);
                drift.extend(&t.drift);
            }
            case_flags(&CaseShape::of(&recorder, &drift)).len()
        };
        assert!(pooled > 0, "pooled, the rounds look noisy");
        assert_eq!(flags(halves), 0);
        // Most rounds bimodal inside: the case is.
        let bimodal: Vec<u64> = (0..200)
            .map(|i| if i % 3 == 0 { 30_000 } else { 10_000 })
            .collect();
        let mut takes: Vec<RoundTake> = (0..5).map(|_| take(1024, &bimodal, "SHM")).collect();
        takes.extend((0..3).map(|_| take(1024, &[10_000; 200], "SHM")));
        assert_eq!(flags(takes), 1);
    }

    #[test]
    fn few_rounds_say_so_and_disagreeing_transports_are_named() {
        let takes = vec![
            take(8, &[1_000; 30], "SHM"),
            take(8, &[1_200; 30], "NET/Socket"),
            take(8, &[1_100; 30], "SHM"),
        ];
        let c = combine(takes);
        let (lo, hi) = c.result.latency.unwrap().median_ci_us;
        assert!(
            (lo - 1.0).abs() < 0.002 && (hi - 1.2).abs() < 0.002,
            "{lo} {hi}"
        );
        assert_eq!(c.result.transports, "SHM");
        let note = &c.result.timing_note;
        assert!(note.contains("3 rounds, fewer than 6"), "{note}");
        assert!(
            note.contains("the rounds' transports differ: SHM, NET/Socket"),
            "{note}"
        );
    }

    #[test]
    fn rounds_that_ran_differently_give_a_mix_of_their_choices() {
        let takes = |protos: [&str; 3]| -> Vec<RoundTake> {
            protos
                .iter()
                .map(|proto| {
                    let mut t = take(8, &[1_000; 30], "SHM");
                    t.result.tuning.algo = "ring".into();
                    t.result.tuning.proto = proto.to_string();
                    t
                })
                .collect()
        };
        let (o, s) = ("ordinary stores", "streaming stores");
        let c = combine(takes([o, s, o]));
        assert_eq!(c.result.tuning.algo, "ring");
        assert_eq!(
            c.result.tuning.proto,
            "ordinary stores:67%;streaming stores:33%"
        );
        assert_eq!(combine(takes([o, o, o])).result.tuning.proto, o);
    }

    #[test]
    fn a_wrong_round_makes_the_case_wrong() {
        let mut bad = take(8, &[1_000; 30], "SHM");
        bad.result.wrong = 3;
        bad.result.status = CaseStatus::Wrong;
        bad.result.error = "3 wrong element(s)".into();
        let c = combine(vec![take(8, &[1_000; 30], "SHM"), bad]);
        assert_eq!(c.result.status, CaseStatus::Wrong);
        assert_eq!(c.result.wrong, 3);
        assert!(c.result.timing_note.contains("wrong in 1 of 2 rounds"));
        assert_eq!(c.result.error, "3 wrong element(s)");
        assert_eq!(c.result.quality, None);
    }

    #[test]
    fn the_book_completes_a_case_at_its_last_round_and_forgets_failures() {
        let mut book = Book::default();
        assert!(book.add(take(8, &[1_000], "SHM"), 3).is_none());
        assert!(book.add(take(16, &[1_000], "SHM"), 3).is_none());
        assert!(book.add(take(32, &[1_000], "SHM"), 3).is_none());
        assert!(book.add(take(8, &[1_000], "SHM"), 3).is_none());
        let done = book.add(take(8, &[1_000], "SHM"), 3).unwrap();
        assert_eq!(done.len(), 3);
        let key16 = take(16, &[1], "").result.key;
        assert_eq!(book.fail(&key16), 1);
        assert!(book.failed(&key16));
        assert_eq!(book.take_unfinished().len(), 1);
        assert_eq!(book.take_unfinished().len(), 0);
    }
}
