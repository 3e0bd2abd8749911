//! The SHM verdict in words: one sentence that answers (the action, then the numbers
//! that matter: the change at the largest size and at the smallest, and how many
//! cases), the method in a line under it, then what a person needs to act.

use super::decision::{self, case_words, how_much, level};
use crate::analysis::compare::CompareOptions;
use crate::analysis::verdict::each::decide_each;
use crate::analysis::verdict::job::{for_job, JobShm};
use crate::analysis::verdict::{At, Difference, ShmNeed, Unanswerable, Verdict};
use crate::export::reader::RunData;
use crate::nccl::shm::shm_size_gib;
use crate::ops::collective::Collective;
use crate::stats::change::{Basis, Change};
use crate::units::{plural, Bytes};

/// `8 MiB`: the size a headline case ran at.
fn size(at: &At) -> String {
    Bytes(at.bytes).to_string()
}

/// How the rate reads after a count: `(95 %, all at once)`, or for cases of one
/// measurement a side, that there is no error rate.
fn rate(d: &Difference) -> String {
    let decision = &d.pair.decision;
    if decision.members == 0 {
        "(one measurement a side, no error rate)".into()
    } else {
        format!("({} %, all at once)", level(1.0 - decision.design.alpha))
    }
}

/// What disabling SHM does, in one sentence (Markdown), `coll` naming the
/// collective.
fn measured(d: &Difference, coll: Collective) -> String {
    let decision = &d.pair.decision;
    let k = decision.cases.len();
    let Some((large, small)) = d.headline() else {
        return "**Cannot tell**: no case of both configs to compare.".into();
    };
    let on = plural(large.nranks as usize, "rank", "ranks");
    let both = || {
        let mut s = format!(
            "{coll} on {on} is {} at {}",
            case_words(&large.case),
            size(&large)
        );
        if small.bytes != large.bytes {
            let again = decision::again(small.case.relative(), large.case.relative());
            s.push_str(&format!(" and {again} at {}", size(&small)));
        }
        s
    };
    let failed = decision.count(Change::Failed);
    let fails = if failed > 0 {
        format!(
            "; {} only without it",
            plural(failed, "case fails", "cases fail")
        )
    } else {
        String::new()
    };
    match d.change() {
        Change::Slower => format!(
            "**Keep SHM**: without it {}; slower at {} of {k} cases{fails} {}.",
            both(),
            decision.count(Change::Slower),
            rate(d)
        ),
        Change::Within => {
            let (lo, hi) = decision::spread(decision).unwrap_or((0.0, 0.0));
            format!(
                "**Disabling SHM costs nothing measurable**: {coll} changes by {} to {} at all {k} cases, within {} {}.",
                decision::pct(lo),
                decision::pct(hi),
                decision::band(decision.design.margin),
                rate(d)
            )
        }
        Change::Faster => format!(
            "**Disabling SHM is faster here**: without it {}; faster at {} of {k} cases, slower at none {}.",
            both(),
            decision.count(Change::Faster),
            rate(d)
        ),
        _ => format!(
            "**Not settled**: without SHM {}; {} of {k} cases open{}.",
            both(),
            decision.count(Change::NotSettled) + decision.count(Change::Missing),
            decision::to_settle(decision)
        ),
    }
}

/// The verdict in Markdown: its sentence, the method line, and what to do.
pub fn explain(v: &Verdict, baseline: &str, coll: Collective) -> String {
    match v {
        Verdict::CannotTell { why } => format!("**Cannot tell**: {}.", why_words(why)),
        Verdict::ShmFails {
            error,
            need,
            disabled_busbw,
            ..
        } => {
            // The cause as NCCL's log names it where it does: the ranks' own errors
            // are mostly the consequences (a peer that went away).
            let error = match crate::nccl::log::logged_cause(error) {
                Some(cause) => cause.to_string(),
                None => crate::units::clip(error, 240),
            };
            let mut lines = vec![
                format!("**{}.**", crate::units::capitalized(&answer(v))),
                format!("`{baseline}` failed creating NCCL's shared-memory segments: `{error}`."),
            ];
            if let Some(n) = need {
                lines.push(format!(
                    "/dev/shm needs about {} on {} per node.",
                    Bytes(n.bytes),
                    plural(n.ranks, "rank", "ranks")
                ));
                lines.push(format!("The estimate: {}.", need_words(n)));
                lines.push(format!(
                    "Run the container with `--shm-size={}g` or `--ipc=host`; on Kubernetes mount an `emptyDir` with `medium: Memory` at /dev/shm.",
                    shm_size_gib(Some(n.bytes))
                ));
            }
            if let Some((bytes, bw)) = disabled_busbw {
                lines.push(format!(
                    "Disabling SHM moves this traffic to the network path: {bw:.2} GB/s busbw at {}.",
                    Bytes(*bytes)
                ));
            }
            lines.join("\n\n")
        }
        Verdict::CumemMismatch { error } => format!(
            "**Set NCCL_CUMEM_HOST_ENABLE=0 on every rank; do not disable SHM**: `{baseline}` failed attaching a peer's SHM buffers.\n\n`{error}`\n\n\
             A segment of size 0 with a name NCCL never makes is a peer's cuMem handle read as a /dev/shm file name: one rank keeps SHM in cuMem host memory, \
             another fell back to /dev/shm (from NCCL 2.26.3 each process probes cuMem host memory on its own). /dev/shm's size is not the cause; \
             a driver of r595 or newer fixes the probe. `nccl-bench explain` on the run's NCCL logs shows which rank fell back."
        ),
        Verdict::NotOnDataPath {
            carried_by,
            difference,
        } => format!(
            "**SHM is not on the data path**: NCCL carried `{baseline}`'s {coll} over {}, so disabling SHM changes nothing here.\n\nMeasured: {}\n\n{}",
            carried_by.join(", "),
            measured(difference, coll).replace("**", ""),
            decision::method(&difference.pair.decision)
        ),
        Verdict::Measured {
            difference,
            shm_seen,
        } => {
            let mut s = measured(difference, coll);
            s.push_str("\n\n");
            s.push_str(&decision::method(&difference.pair.decision));
            if !shm_seen {
                s.push_str(" NCCL's logs named no transport, so which one carried the traffic is not known.");
            }
            if !difference.instead.is_empty() {
                s.push_str(&format!(
                    " Without SHM the traffic went over {}.",
                    difference.instead.join(", ")
                ));
            }
            let flagged = difference.pair.decision.flagged();
            if flagged > 0 {
                s.push_str(&format!(
                    " {} flagged by the quality rules: in the family, never called within.",
                    plural(flagged, "case is", "cases are")
                ));
            }
            s
        }
    }
}

/// Why the run cannot answer, as the clause after `**Cannot tell**: `.
fn why_words(why: &Unanswerable) -> String {
    match why {
        Unanswerable::NoBaseline { baseline } => {
            format!("the run has no '{baseline}' config to compare against")
        }
        Unanswerable::OneRank { baseline } => format!(
            "every '{baseline}' case ran on one rank, and one GPU has no peer: no transport carries data, so NCCL_SHM_DISABLE cannot matter; sweep with --gpus 2 or more"
        ),
        Unanswerable::NoShmOff => "the run has no config that sets NCCL_SHM_DISABLE=1 (sweep with --transports default,shm-off)".into(),
        Unanswerable::Compare { error } => error.clone(),
    }
}

/// How a /dev/shm need is made up: `9637888 B per segment x 2 channels (...) x 1 SHM
/// peer per rank x 4 ranks per node`.
pub fn need_words(n: &ShmNeed) -> String {
    let (segment, ranks) = (n.segment, n.ranks);
    match &n.nccl {
        None => format!(
            "{segment} B per segment x {ranks} ranks: the host backend's ring, one segment per rank"
        ),
        Some(c) => format!(
            "{segment} B per segment x {} channels ({}) x {} SHM peer per rank x {ranks} ranks per node, as `nccl-bench doctor` estimates it; trees and more channels need more",
            c.channels, c.channels_why, c.peers
        ),
    }
}

/// The verdict's answer in a few words, for a table of collectives and the sweep's
/// last line.
pub fn answer(v: &Verdict) -> String {
    match v {
        Verdict::CannotTell { .. } => "cannot tell".into(),
        Verdict::ShmFails {
            shm_total_bytes,
            need,
            ..
        } => match (shm_total_bytes, need) {
            (Some(has), Some(need)) => format!(
                "keep SHM and give /dev/shm more room: it has {}, {} need about {}",
                Bytes(*has),
                plural(need.ranks, "rank", "ranks"),
                Bytes(need.bytes)
            ),
            _ => "keep SHM and give /dev/shm more room: SHM ran out of it".into(),
        },
        Verdict::CumemMismatch { .. } => "set NCCL_CUMEM_HOST_ENABLE=0: SHM failed".into(),
        Verdict::NotOnDataPath { carried_by, .. } => {
            format!("SHM is not on the data path ({})", carried_by.join(", "))
        }
        Verdict::Measured { difference, .. } => {
            let numbers = difference
                .headline()
                .map(|(large, small)| {
                    let at_large = format!(
                        "{} at {}",
                        large.case.relative().map_or("-".into(), how_much),
                        size(&large)
                    );
                    // One size measured: said once.
                    let at_small = if small.bytes == large.bytes {
                        String::new()
                    } else {
                        format!(
                            " and {} at {}",
                            decision::again(small.case.relative(), large.case.relative()),
                            size(&small)
                        )
                    };
                    format!(
                        "{at_large}{at_small} on {} without it",
                        plural(large.nranks as usize, "rank", "ranks")
                    )
                })
                .unwrap_or_default();
            let what = match difference.change() {
                Change::Slower => "keep SHM",
                Change::Within => "disabling SHM costs nothing measurable",
                Change::Faster => "disabling SHM is faster",
                _ => "not settled",
            };
            let points = difference
                .pair
                .decision
                .cases
                .iter()
                .all(|c| c.estimate.is_none_or(|e| e.basis == Basis::Point));
            let points = if points {
                " (one measurement a side)"
            } else {
                ""
            };
            format!("{what}: {numbers}{points}")
        }
    }
}

/// The answer over every collective, in Markdown: SHM is kept where any collective
/// pays for disabling it.
pub fn overall(each: &[(Collective, Verdict)]) -> String {
    let names = |pick: &dyn Fn(&Verdict) -> bool| -> Vec<String> {
        each.iter()
            .filter(|(_, v)| pick(v))
            .map(|(c, _)| c.to_string())
            .collect()
    };
    let change = |want: Change| move |v: &Verdict| v.change() == Some(want);
    let fails = names(&|v| matches!(v, Verdict::ShmFails { .. } | Verdict::CumemMismatch { .. }));
    let costs = names(&change(Change::Slower));
    let free = names(&|v| {
        matches!(v, Verdict::NotOnDataPath { .. }) || v.change() == Some(Change::Within)
    });
    let open = names(&|v| {
        v.change()
            .is_some_and(|c| matches!(c, Change::NotSettled | Change::Missing))
    });
    let answer = if !fails.is_empty() {
        format!(
            "**Fix SHM, do not disable it**: it failed for {}",
            join(&fails)
        )
    } else if !costs.is_empty() {
        format!("**Keep SHM**: disabling it costs {}", join(&costs))
    } else if !open.is_empty() {
        format!("**Not settled** for {}", join(&open))
    } else if !free.is_empty() {
        format!(
            "**Disabling SHM costs nothing measurable** for {}",
            join(&free)
        )
    } else {
        "**Cannot tell** for any collective".into()
    };
    format!("{answer}; each collective's line below says why.")
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The job's answer in one sentence: what disabling SHM costs its communication
/// time at the rank count that decides.
pub fn job_words(job: &JobShm) -> String {
    let Some(c) = job.deciding() else {
        return "your job: nothing to weigh".into();
    };
    let on = plural(c.nranks as usize, "rank", "ranks");
    let what = case_words(&c.case);
    match job.change() {
        Change::Slower if c.failed > 0 => {
            format!("your job: keep SHM: a size it sends fails without it on {on}")
        }
        Change::Slower => {
            format!("your job: keep SHM: without it its communication is {what} on {on}")
        }
        Change::Within => {
            format!("your job: disabling SHM costs nothing measurable: {what} on {on}")
        }
        Change::Faster => format!("your job: disabling SHM is faster: {what} on {on}"),
        _ => format!("your job: not settled: {what} on {on}"),
    }
}

/// The SHM question's answer for a run in one line, for the last lines of a sweep;
/// `None` where no collective can tell.
pub fn one_line(run: &RunData, baseline: &str, threshold: f64) -> Option<String> {
    let each = decide_each(run, baseline, CompareOptions::new(threshold));
    if each
        .iter()
        .all(|(_, v)| matches!(v, Verdict::CannotTell { .. }))
    {
        return None;
    }
    let per_size = match each.as_slice() {
        [(_, v)] => answer(v),
        _ => each
            .iter()
            .map(|(c, v)| format!("{}: {}", c.name(), answer(v)))
            .collect::<Vec<_>>()
            .join("; "),
    };
    let shm_works = each.iter().all(|(_, v)| v.compares_times());
    Some(
        match for_job(run, baseline, threshold).filter(|_| shm_works) {
            Some(job) => format!("{}; per size: {per_size}", job_words(&job)),
            None => per_size,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::verdict::decide;
    use crate::analysis::verdict::tests::{failed, ok, run, OPTIONS, SHM_DECISION};

    /// Words, not signs: `%` alone does not count.
    fn words(s: &str) -> usize {
        s.split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .count()
    }

    fn verdict(cases: Vec<crate::analysis::verdict::tests::Case>) -> Verdict {
        decide(&run(&SHM_DECISION, cases), "default", OPTIONS)
    }

    #[test]
    fn the_verdict_is_one_sentence_of_at_most_30_words_the_numbers_then_the_action() {
        let v = verdict(vec![
            ok("default", 8, "SHM", 1.0),
            ok("default", 8 << 20, "SHM", 1.0),
            ok("shm-off", 8, "NET/Socket", 54.0),
            ok("shm-off", 8 << 20, "NET/Socket", 3.1),
        ]);
        let text = explain(&v, "default", Collective::AllReduce);
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("**Keep SHM**: without it all_reduce on 2 ranks is 3.1x slower (")
                && first.ends_with(
                    " at 8 MiB and 54x at 8 B; slower at 2 of 2 cases (95 %, all at once)."
                ),
            "{first}"
        );
        assert!(words(first) <= 30, "{} words: {first}", words(first));
        assert!(
            text.contains("\n\nMethod: paired t over each case's rounds;"),
            "{text}"
        );
        assert_eq!(
            answer(&v),
            "keep SHM: 3.1x slower at 8 MiB and 54x at 8 B on 2 ranks without it"
        );
        let same = verdict(vec![
            ok("default", 8, "SHM", 1.0),
            ok("shm-off", 8, "NET/Socket", 1.001),
        ]);
        let first = explain(&same, "default", Collective::AllReduce);
        let first = first.lines().next().unwrap();
        assert!(
            first.starts_with("**Disabling SHM costs nothing measurable**: all_reduce changes by "),
            "{first}"
        );
        assert!(words(first) <= 30, "{first}");
    }

    #[test]
    fn a_run_that_cannot_answer_says_why() {
        let mut one_rank = run(
            &SHM_DECISION,
            vec![ok("default", 1024, "", 1.0), ok("shm-off", 1024, "", 3.0)],
        );
        for c in &mut one_rank.cases {
            c.nranks = 1;
        }
        let v = decide(&one_rank, "default", OPTIONS);
        assert_eq!(
            explain(&v, "default", Collective::AllReduce),
            "**Cannot tell**: every 'default' case ran on one rank, and one GPU has no peer: no transport carries data, so NCCL_SHM_DISABLE cannot matter; sweep with --gpus 2 or more."
        );
        let none = decide(
            &run(&SHM_DECISION, vec![ok("default", 1024, "SHM", 1.0)]),
            "nccl",
            OPTIONS,
        );
        assert_eq!(
            explain(&none, "nccl", Collective::AllReduce),
            "**Cannot tell**: the run has no 'nccl' config to compare against."
        );
        assert_eq!(answer(&none), "cannot tell");
    }

    #[test]
    fn failing_shm_says_fix_it_and_the_answer_over_collectives_keeps_shm_where_any_pays() {
        let fails = verdict(vec![
            failed(
                "default",
                "",
                "posix_fallocate failed: No space left on device (size 9637888)",
            ),
            ok("shm-off", 8, "NET/Socket", 1.0),
        ]);
        let text = explain(&fails, "default", Collective::AllReduce);
        assert!(
            text.starts_with("**Keep SHM and give /dev/shm more room"),
            "{text}"
        );
        let costs = verdict(vec![
            ok("default", 8, "SHM", 1.0),
            ok("shm-off", 8, "NET/Socket", 3.0),
        ]);
        let free = verdict(vec![
            ok("default", 8, "SHM", 1.0),
            ok("shm-off", 8, "NET/Socket", 1.0),
        ]);
        let each = vec![(Collective::AllReduce, free), (Collective::AllToAll, costs)];
        assert_eq!(
            overall(&each),
            "**Keep SHM**: disabling it costs alltoall; each collective's line below says why."
        );
        let each = vec![
            (Collective::Broadcast, fails),
            (Collective::AllReduce, each.into_iter().next().unwrap().1),
        ];
        assert!(
            overall(&each).starts_with("**Fix SHM, do not disable it**: it failed for broadcast")
        );
    }
}
