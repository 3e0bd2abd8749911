//! The SHM verdict of a run of several collectives: one per collective (each decided
//! from that collective's cases alone, as if the run had measured it alone), and the
//! answer over all of them. SHM matters where any collective pays for disabling it:
//! "disabling SHM costs all_reduce nothing here but alltoall +35 % at 1 MiB" keeps SHM
//! for the job that runs alltoall.

use super::{decide, tally, Difference, Verdict};
use crate::analysis::compare::CompareOptions;
use crate::export::reader::RunData;
use crate::ops::collective::Collective;
use crate::units::{plural, Bytes};

/// Each collective of the run with its own verdict, in the run's order. The answer
/// over all of them rests on every collective's family at once, so each family gets
/// its share of the rate (Bonferroni over the collectives): all hold together with
/// the rate asked.
pub fn decide_each(
    run: &RunData,
    baseline: &str,
    options: CompareOptions,
) -> Vec<(Collective, Verdict)> {
    let collectives = run.collectives();
    let options = CompareOptions {
        family_alpha: options.family_alpha / collectives.len().max(1) as f64,
        ..options
    };
    collectives
        .into_iter()
        .map(|c| {
            (
                c,
                run.for_collective(c, |one| decide(one, baseline, options)),
            )
        })
        .collect()
}

/// The SHM question's answer for a run in one line (`keep SHM: disabling it costs
/// +12.0 % at 1 MiB on 2 ranks`; one clause per collective of a run of several), for
/// the last lines of a sweep; `None` where no collective can tell (no config without
/// SHM, or one rank only).
pub fn one_line(run: &RunData, baseline: &str, threshold: f64) -> Option<String> {
    let options = CompareOptions {
        threshold,
        resamples: crate::stats::compare::DEFAULT_RESAMPLES,
        margin: threshold,
        family_alpha: crate::analysis::family::FAMILY_ALPHA,
    };
    let each = decide_each(run, baseline, options);
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
    // With a job's collectives, the job's time decides (while SHM works at all).
    let shm_works = each.iter().all(|(_, v)| v.compares_times());
    Some(
        match super::job::for_job(run, baseline, threshold).filter(|_| shm_works) {
            Some(job) => format!("{}; per size: {per_size}", job.words()),
            None => per_size,
        },
    )
}

/// The verdict's answer in a few words, for the table of collectives.
pub fn answer(v: &Verdict) -> String {
    match v {
        Verdict::CannotTell { .. } => "cannot tell".into(),
        Verdict::ShmFails { .. } => "fix /dev/shm: SHM failed".into(),
        Verdict::CumemMismatch { .. } => "set NCCL_CUMEM_HOST_ENABLE=0: SHM failed".into(),
        Verdict::NotOnDataPath { carried_by, .. } => {
            format!("SHM not on the data path ({})", carried_by.join(", "))
        }
        Verdict::KeepShm { difference, .. } => {
            format!("keep SHM: disabling it costs {}", cost(difference))
        }
        Verdict::NoMeasurableCost { .. } => "no measurable cost".into(),
        Verdict::Inconclusive { .. } => "not settled yet".into(),
    }
}

/// What the verdict rests on, in a few words.
pub fn evidence(v: &Verdict) -> String {
    let d = match v {
        Verdict::CannotTell { why } => return why.clone(),
        Verdict::ShmFails { error, .. } | Verdict::CumemMismatch { error } => {
            return format!("`{error}`")
        }
        Verdict::NotOnDataPath { difference, .. }
        | Verdict::KeepShm { difference, .. }
        | Verdict::NoMeasurableCost { difference, .. }
        | Verdict::Inconclusive { difference, .. } => difference,
    };
    tally(d, "cases")
}

/// What disabling SHM cost: its worst slowdown, or the cases that failed only
/// without it.
fn cost(d: &Difference) -> String {
    match worst(d) {
        Some(w) => w,
        None if d.new_failures > 0 => format!(
            "{} failing only with SHM disabled",
            plural(d.new_failures, "case", "cases")
        ),
        None => "time".into(),
    }
}

/// The worst slowdown of a difference: `+35.0 % at 1 MiB on 8 ranks`.
fn worst(d: &Difference) -> Option<String> {
    let (bytes, nranks, change, _) = d.worst?;
    Some(format!(
        "{:+.1} % at {} on {}",
        change * 100.0,
        Bytes(bytes),
        plural(nranks as usize, "rank", "ranks")
    ))
}

/// The answer over every collective, in Markdown: SHM is kept where any collective
/// pays for disabling it, and the sentence names which and by how much.
pub fn overall(each: &[(Collective, Verdict)]) -> String {
    let names = |pick: &dyn Fn(&Verdict) -> bool| -> Vec<String> {
        each.iter()
            .filter(|(_, v)| pick(v))
            .map(|(c, _)| format!("{c}"))
            .collect()
    };
    let fails = names(&|v| matches!(v, Verdict::ShmFails { .. }));
    let mismatched = names(&|v| matches!(v, Verdict::CumemMismatch { .. }));
    let free = names(&|v| {
        matches!(
            v,
            Verdict::NoMeasurableCost { .. } | Verdict::NotOnDataPath { .. }
        )
    });
    let open = names(&|v| matches!(v, Verdict::Inconclusive { .. }));
    let unknown = names(&|v| matches!(v, Verdict::CannotTell { .. }));
    let costs: Vec<String> = each
        .iter()
        .filter_map(|(c, v)| match v {
            Verdict::KeepShm { difference, .. } => Some(format!("{c} {}", cost(difference))),
            _ => None,
        })
        .collect();
    let and_the_rest = |s: &mut String| {
        if !free.is_empty() {
            s.push_str(&format!("; it costs {} nothing measurable", join(&free)));
        }
        if !open.is_empty() {
            s.push_str(&format!("; {} not settled yet", join(&open)));
        }
        if !unknown.is_empty() {
            s.push_str(&format!("; {}: cannot tell", join(&unknown)));
        }
        s.push('.');
    };
    if !mismatched.is_empty() {
        let mut s = format!(
            "**Set NCCL_CUMEM_HOST_ENABLE=0 on every rank; do not disable SHM.** SHM failed for {}: one rank's buffers in cuMem host memory, another's in /dev/shm (its section below says more)",
            join(&mismatched)
        );
        and_the_rest(&mut s);
        return s;
    }
    if !fails.is_empty() {
        let mut s = format!(
            "**Fix /dev/shm, do not disable SHM.** SHM failed for {}: its section below says what /dev/shm needs",
            join(&fails)
        );
        if !costs.is_empty() {
            s.push_str(&format!(
                "; where it ran, disabling it costs {}",
                join(&costs)
            ));
        }
        s.push('.');
        s
    } else if !costs.is_empty() {
        let mut s = format!(
            "**Keep SHM enabled.** Disabling it costs {} (median time, worst case)",
            join(&costs)
        );
        and_the_rest(&mut s);
        s
    } else if !open.is_empty() {
        let mut s = format!("**Not settled yet** for {}", join(&open));
        if !free.is_empty() {
            s.push_str(&format!(
                "; disabling SHM costs {} nothing measurable",
                join(&free)
            ));
        }
        if !unknown.is_empty() {
            s.push_str(&format!("; {}: cannot tell", join(&unknown)));
        }
        s.push_str(". Each collective's section below says what would settle it.");
        s
    } else if !free.is_empty() {
        let mut s = format!(
            "**Disabling SHM costs nothing measurable here** for {}",
            join(&free)
        );
        if !unknown.is_empty() {
            s.push_str(&format!("; {}: cannot tell", join(&unknown)));
        }
        s.push('.');
        s
    } else {
        "**Cannot tell** for any collective: each one's section below says why.".into()
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn difference(worst: Option<(u64, u32, f64)>) -> Difference {
        Difference {
            cases: 10,
            regressed: usize::from(worst.is_some()) * 4,
            improved: 0,
            unchanged: 6,
            inconclusive: 0,
            worst: worst.map(|(b, n, c)| (b, n, c, (c - 0.05, c + 0.05))),
            at_largest: None,
            new_failures: 0,
            distrusted: 0,
            family: None,
            instead: Vec::new(),
        }
    }

    #[test]
    fn shm_is_kept_where_any_collective_pays_and_the_sentence_names_it() {
        let each = vec![
            (
                Collective::AllReduce,
                Verdict::NoMeasurableCost {
                    difference: difference(None),
                    shm_seen: true,
                },
            ),
            (
                Collective::AllToAll,
                Verdict::KeepShm {
                    difference: difference(Some((1 << 20, 8, 0.35))),
                    shm_seen: true,
                },
            ),
        ];
        let s = overall(&each);
        assert!(
            s.starts_with(
                "**Keep SHM enabled.** Disabling it costs alltoall +35.0 % at 1 MiB on 8 ranks"
            ),
            "{s}"
        );
        assert!(s.contains("it costs all_reduce nothing measurable."), "{s}");
        assert_eq!(
            answer(&each[1].1),
            "keep SHM: disabling it costs +35.0 % at 1 MiB on 8 ranks"
        );
    }

    #[test]
    fn failures_only_without_shm_are_the_cost_and_a_collective_that_cannot_tell_is_named() {
        let mut failing = difference(None);
        failing.new_failures = 3;
        let each = vec![
            (
                Collective::Gather,
                Verdict::KeepShm {
                    difference: failing,
                    shm_seen: true,
                },
            ),
            (
                Collective::Scatter,
                Verdict::CannotTell {
                    why: "the run has no 'default' config".into(),
                },
            ),
        ];
        assert_eq!(
            overall(&each),
            "**Keep SHM enabled.** Disabling it costs gather 3 cases failing only with SHM disabled (median time, worst case); scatter: cannot tell."
        );
    }

    #[test]
    fn no_cost_anywhere_says_so_and_a_failure_comes_first() {
        let free = |c| {
            (
                c,
                Verdict::NoMeasurableCost {
                    difference: difference(None),
                    shm_seen: true,
                },
            )
        };
        let each = vec![free(Collective::AllReduce), free(Collective::AllGather)];
        assert_eq!(
            overall(&each),
            "**Disabling SHM costs nothing measurable here** for all_reduce and all_gather."
        );
        let mut each = each;
        each.push((
            Collective::Broadcast,
            Verdict::ShmFails {
                error: "No space left on device".into(),
                shm_total_bytes: None,
                need: None,
                disabled_busbw: None,
            },
        ));
        assert!(overall(&each)
            .starts_with("**Fix /dev/shm, do not disable SHM.** SHM failed for broadcast"));
        let open = vec![
            free(Collective::AllReduce),
            (
                Collective::Scatter,
                Verdict::Inconclusive {
                    difference: difference(None),
                    rounds: 1,
                },
            ),
        ];
        assert!(overall(&open).starts_with(
            "**Not settled yet** for scatter; disabling SHM costs all_reduce nothing measurable."
        ));
    }
}
