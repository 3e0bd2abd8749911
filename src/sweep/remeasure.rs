//! The quality pass over one group (a config at one rank count) once its sizes are
//! measured: which cases to distrust, and, after flagged cases were measured again in
//! fresh processes, which of the two measurements each keeps and what its `quality`
//! and `quality_note` say. Pure: the orchestrator runs the processes and writes.

use crate::model::{CaseResult, CaseStatus};
use crate::stats::quality::{
    case_flags, neighbour_flags, reasons, second_is_better, verdict, CaseShape, Flag, Point,
    Quality, Take,
};
use crate::units::format_us;

/// One measurement of a case, with what the rules on it need.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub result: CaseResult,
    pub shape: CaseShape,
}

impl Measurement {
    fn p50(&self) -> Option<f64> {
        self.result.latency.map(|l| l.p50_us)
    }

    fn assessed(&self) -> bool {
        self.result.status == CaseStatus::Ok && self.p50().is_some()
    }
}

/// The quality a case gets from the rules on itself alone, as its row first says.
pub fn first_quality(shape: &CaseShape) -> (Quality, String) {
    let flags = case_flags(shape);
    (verdict(&flags), reasons(&flags))
}

/// Every flag of each measurement: its own, and the neighbour rules among the
/// assessed ones (ok cases with timings). Others get none.
pub fn group_flags(takes: &[&Measurement]) -> Vec<Vec<Flag>> {
    let assessed: Vec<usize> = (0..takes.len()).filter(|&i| takes[i].assessed()).collect();
    let points: Vec<Point> = assessed
        .iter()
        .filter_map(|&i| {
            let l = takes[i].result.latency?;
            Some(Point {
                bytes: takes[i].result.key.bytes,
                p50_us: l.p50_us,
                ci_us: l.median_ci_us,
            })
        })
        .collect();
    let mut flags = vec![Vec::new(); takes.len()];
    for (&i, neighbours) in assessed.iter().zip(neighbour_flags(&points)) {
        flags[i] = case_flags(&takes[i].shape);
        flags[i].extend(neighbours);
    }
    flags
}

/// Why a flagged case kept its first measurement without a second one.
#[derive(Debug, Clone, PartialEq)]
pub enum NoSecond {
    /// `--no-remeasure`.
    Disabled,
    /// The sweep was interrupted first.
    Interrupted,
    /// The re-measurement failed at this size (its reason).
    Failed(String),
    /// The re-measurement stopped before this size (why).
    NotReached(String),
}

/// What a case ends with: the result to keep (quality and note filled in) and
/// whether it replaces the first row.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub kept: CaseResult,
    pub second_kept: bool,
}

/// Decides every flagged case of a group. `firsts` are the group's measurements in
/// the order they ran; `flagged` the indices to decide; `seconds[k]` the
/// re-measurement of `flagged[k]`, or why there is none.
pub fn decide(
    firsts: &[Measurement],
    flagged: &[usize],
    seconds: &[Result<Measurement, NoSecond>],
) -> Vec<Outcome> {
    let first_refs: Vec<&Measurement> = firsts.iter().collect();
    let first_flags = group_flags(&first_refs);
    // The group as it stands with every second take in place of its first.
    let mut current = first_refs.clone();
    for (&i, second) in flagged.iter().zip(seconds) {
        if let Ok(m) = second {
            current[i] = m;
        }
    }
    let current_flags = group_flags(&current);
    flagged
        .iter()
        .zip(seconds)
        .map(|(&i, second)| {
            let first = &firsts[i];
            let f1 = &first_flags[i];
            let p1 = first.p50().unwrap_or(0.0);
            match second {
                Err(why) => {
                    let tail = match why {
                        NoSecond::Disabled => "not re-measured (--no-remeasure)".to_string(),
                        NoSecond::Interrupted => "not re-measured (interrupted)".to_string(),
                        NoSecond::Failed(reason) => format!("re-measuring failed: {reason}"),
                        NoSecond::NotReached(why) => format!("not re-measured: {why}"),
                    };
                    let mut kept = first.result.clone();
                    kept.quality = Some(verdict(f1));
                    kept.quality_note = join(&reasons(f1), &tail);
                    Outcome {
                        kept,
                        second_kept: false,
                    }
                }
                Ok(second) => {
                    let f2 = &current_flags[i];
                    let p2 = second.p50().unwrap_or(f64::INFINITY);
                    // A wrong answer is never set aside for a better-looking time.
                    let take2 = second.result.status == CaseStatus::Wrong
                        || (second.result.status == CaseStatus::Ok
                            && second_is_better(
                                Take {
                                    flags: f1.len(),
                                    p50_us: p1,
                                },
                                Take {
                                    flags: f2.len(),
                                    p50_us: p2,
                                },
                            ));
                    let first_said =
                        format!("first measurement p50 {}: {}", format_us(p1), reasons(f1));
                    let second_said = match (&second.result.status, f2.is_empty()) {
                        (CaseStatus::Ok, true) => {
                            format!("re-measured in fresh processes: p50 {}", format_us(p2))
                        }
                        (CaseStatus::Ok, false) => format!(
                            "re-measured in fresh processes: p50 {}: {}",
                            format_us(p2),
                            reasons(f2)
                        ),
                        (status, _) => format!(
                            "re-measured in fresh processes: {status}: {}",
                            second.result.error
                        ),
                    };
                    let (mut kept, flags, which) = if take2 {
                        (second.result.clone(), f2, "kept the re-measurement")
                    } else {
                        (first.result.clone(), f1, "kept the first measurement")
                    };
                    kept.quality = if kept.status != CaseStatus::Ok {
                        // A wrong result is a failure, not a measurement to trust.
                        None
                    } else if take2 && flags.is_empty() {
                        Some(Quality::Remeasured)
                    } else {
                        Some(verdict(flags))
                    };
                    kept.quality_note = format!("{first_said}; {second_said}; {which}");
                    Outcome {
                        kept,
                        second_kept: take2,
                    }
                }
            }
        })
        .collect()
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CaseKey;
    use crate::ops::{DataType, ReduceOp};
    use crate::stats::LatencySummary;

    fn m(bytes: u64, p50: f64) -> Measurement {
        Measurement {
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
                latency: Some(LatencySummary {
                    count: 1000,
                    p50_us: p50,
                    p99_us: p50 * 2.0,
                    median_ci_us: (p50 * 0.99, p50 * 1.01),
                    ..LatencySummary::default()
                }),
                bandwidth: None,
                stop: None,
                wrong: 0,
                transports: String::new(),
                error: String::new(),
                started_at: String::new(),
                duration_s: 0.1,
                quality: Some(Quality::Ok),
                quality_note: String::new(),
                timing_note: String::new(),
                second_take: false,
                ceiling_gbps: None,
                round_p50_us: vec![p50],
                tuning: Default::default(),
                shm_backing: String::new(),
            },
            shape: CaseShape {
                samples: 1000,
                p50_us: p50,
                p99_us: p50 * 2.0,
                far_share: 0.0,
                ends_us: None,
            },
        }
    }

    fn group(p50s: &[f64]) -> Vec<Measurement> {
        p50s.iter()
            .enumerate()
            .map(|(i, &p)| m(8 << i, p))
            .collect()
    }

    fn flagged(firsts: &[Measurement]) -> Vec<usize> {
        let refs: Vec<&Measurement> = firsts.iter().collect();
        group_flags(&refs)
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.is_empty())
            .map(|(i, _)| i)
            .collect()
    }

    fn second(bytes: u64, p50: f64) -> Measurement {
        let mut s = m(bytes, p50);
        s.result.second_take = true;
        s
    }

    #[test]
    fn a_stall_cleared_by_the_second_take_is_remeasured() {
        let firsts = group(&[0.3, 1170.0, 0.3, 0.31, 0.33]);
        assert_eq!(flagged(&firsts), [1]);
        let out = decide(&firsts, &[1], &[Ok(second(16, 0.29))]);
        assert!(out[0].second_kept);
        assert_eq!(out[0].kept.quality, Some(Quality::Remeasured));
        assert!(out[0].kept.second_take);
        let note = &out[0].kept.quality_note;
        assert!(
            note.starts_with("first measurement p50 1.17 ms: median 1.17 ms is slower than"),
            "{note}"
        );
        assert!(
            note.ends_with("re-measured in fresh processes: p50 0.29 us; kept the re-measurement"),
            "{note}"
        );
    }

    #[test]
    fn a_case_that_stays_out_of_line_keeps_its_flag() {
        let firsts = group(&[0.3, 1170.0, 0.3, 0.31, 0.33]);
        // Slow again, but less so: as flagged as the first, so the first is kept (a
        // lower time alone is no reason), still an outlier, the note giving both.
        let out = decide(&firsts, &[1], &[Ok(second(16, 900.0))]);
        assert!(!out[0].second_kept);
        assert_eq!(out[0].kept.quality, Some(Quality::Outlier));
        assert!(out[0]
            .kept
            .quality_note
            .contains("p50 900.00 us: median 900.00 us is slower"));
        // Slower again: the first is kept.
        let out = decide(&firsts, &[1], &[Ok(second(16, 2000.0))]);
        assert!(!out[0].second_kept);
        assert_eq!(out[0].kept.quality, Some(Quality::Outlier));
        assert!(out[0]
            .kept
            .quality_note
            .ends_with("kept the first measurement"));
    }

    #[test]
    fn a_noisy_case_with_a_quiet_second_take_is_remeasured_even_when_slower() {
        let mut firsts = group(&[0.3, 0.3, 0.31, 0.33]);
        firsts[2].shape.p99_us = 500.0;
        assert_eq!(flagged(&firsts), [2]);
        let out = decide(&firsts, &[2], &[Ok(second(32, 0.32))]);
        assert!(out[0].second_kept, "fewer flags wins over a lower median");
        assert_eq!(out[0].kept.quality, Some(Quality::Remeasured));
        assert!(out[0]
            .kept
            .quality_note
            .contains("p99 500.00 us is 1613 x the median"));
    }

    #[test]
    fn without_a_second_take_the_note_says_why() {
        let firsts = group(&[0.3, 1170.0, 0.3, 0.31]);
        for (why, says) in [
            (NoSecond::Disabled, "not re-measured (--no-remeasure)"),
            (NoSecond::Interrupted, "not re-measured (interrupted)"),
            (
                NoSecond::Failed("rank 1 timed out".into()),
                "re-measuring failed: rank 1 timed out",
            ),
        ] {
            let out = decide(&firsts, &[1], &[Err(why)]);
            assert_eq!(out[0].kept.quality, Some(Quality::Outlier));
            assert!(
                out[0].kept.quality_note.ends_with(says),
                "{}",
                out[0].kept.quality_note
            );
            assert!(!out[0].second_kept);
        }
    }

    #[test]
    fn a_wrong_second_take_is_kept() {
        let firsts = group(&[0.3, 1170.0, 0.3, 0.31]);
        let mut s = second(16, 0.3);
        s.result.status = CaseStatus::Wrong;
        s.result.error = "2 wrong element(s) in total".into();
        let out = decide(&firsts, &[1], &[Ok(s)]);
        assert!(out[0].second_kept);
        assert_eq!(out[0].kept.status, CaseStatus::Wrong);
        assert_eq!(
            out[0].kept.quality, None,
            "a wrong case is not `remeasured`"
        );
        assert!(out[0]
            .kept
            .quality_note
            .contains("re-measured in fresh processes: wrong: 2 wrong element(s) in total"));
    }

    #[test]
    fn two_neighbouring_stalls_are_judged_with_each_others_second_take() {
        // 16 B and 32 B both stalled: each second take is judged next to the other's.
        let firsts = group(&[0.3, 900.0, 1000.0, 0.3, 0.31, 0.33]);
        assert_eq!(flagged(&firsts), [1, 2]);
        let out = decide(
            &firsts,
            &[1, 2],
            &[Ok(second(16, 0.3)), Ok(second(32, 0.31))],
        );
        assert!(out
            .iter()
            .all(|o| o.kept.quality == Some(Quality::Remeasured)));
    }

    #[test]
    fn failed_cases_are_not_assessed() {
        let mut firsts = group(&[0.3, 0.3, 0.3]);
        firsts[1].result.status = CaseStatus::Timeout;
        firsts[1].result.latency = None;
        assert!(flagged(&firsts).is_empty());
        assert_eq!(
            first_quality(&firsts[0].shape),
            (Quality::Ok, String::new())
        );
    }
}
