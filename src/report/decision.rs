//! A decision in words: a change and its interval in the unit that reads best
//! (`3.1x slower`, `+12.0 %`), one sentence per decision, and the method line under
//! it. Every answer about a change (the verdict, `compare`, `check`, `history`, a
//! job) is said with these.

use crate::stats::change::{Answer, Basis, Case, Change, Decision};

/// A relative change with its sign: `+12.0 %`.
pub fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

/// A ratio where it reads better than a percentage: `3.1x`, `54x`.
fn times(ratio: f64) -> String {
    if ratio >= 10.0 {
        format!("{ratio:.0}x")
    } else {
        format!("{ratio:.1}x")
    }
}

/// Whether a change reads as a ratio: twice as slow, or twice as fast, or more.
fn as_ratio(change: f64) -> bool {
    !(-0.5..1.0).contains(&change)
}

/// `3.1x slower`, `12.0 % slower`, `3.1 % faster`, `0.0 %` (under 0.05 % either way).
pub fn how_much(change: f64) -> String {
    let r = 1.0 + change;
    if as_ratio(change) && r >= 1.0 {
        format!("{} slower", times(r))
    } else if as_ratio(change) {
        format!("{} faster", times(1.0 / r))
    } else if change * 100.0 >= 0.05 {
        format!("{:.1} % slower", change * 100.0)
    } else if change * 100.0 <= -0.05 {
        format!("{:.1} % faster", -change * 100.0)
    } else {
        // Below the last digit shown: neither way.
        "0.0 %".into()
    }
}

/// A second change after `first` in one sentence: its direction left out where it
/// is the first's (`54x`, `3.1 %`).
pub fn again(change: Option<f64>, first: Option<f64>) -> String {
    let Some(c) = change else {
        return "-".into();
    };
    let words = how_much(c);
    let same = first.is_some_and(|f| (f > 0.0) == (c > 0.0) && f != 0.0 && c != 0.0);
    match words.rsplit_once(' ') {
        Some((amount, _)) if same => amount.to_string(),
        _ => words,
    }
}

/// An interval in the unit of its estimate `like`: `2.5x-3.7x`, `+9.1 % to +15.0 %`.
pub fn range((lo, hi): (f64, f64), like: f64) -> String {
    if as_ratio(like) && lo < 0.0 && hi > 0.0 {
        // Across no change: each end in its own direction.
        format!(
            "{} faster to {} slower",
            times(1.0 / (1.0 + lo)),
            times(1.0 + hi)
        )
    } else if as_ratio(like) && like > 0.0 {
        format!("{}-{}", times(1.0 + lo), times(1.0 + hi))
    } else if as_ratio(like) {
        format!(
            "{}-{} faster",
            times(1.0 / (1.0 + hi)),
            times(1.0 / (1.0 + lo))
        )
    } else {
        format!("{} to {}", pct(lo), pct(hi))
    }
}

/// A case's change with its interval: `3.1x slower (2.5x-3.7x)`; a point has none.
pub fn case_words(case: &Case) -> String {
    let Some(change) = case.relative() else {
        return case.change.word().to_string();
    };
    match (case.interval, case.estimate.map(|e| e.basis)) {
        (Some(i), Some(b)) if b != Basis::Point => {
            format!("{} ({})", how_much(change), range(i, change))
        }
        _ => how_much(change),
    }
}

/// `+-2.0 %`.
pub fn band(x: f64) -> String {
    format!("+-{:.1} %", x * 100.0)
}

/// The lowest and highest own-interval end over the cases: every change lies
/// between them.
pub fn spread(d: &Decision) -> Option<(f64, f64)> {
    let ends: Vec<(f64, f64)> = d.cases.iter().filter_map(|c| c.own).collect();
    let lo = ends.iter().map(|e| e.0).reduce(f64::min)?;
    let hi = ends.iter().map(|e| e.1).reduce(f64::max)?;
    Some((lo, hi))
}

/// A level as a percentage with two significant digits of what it falls short of
/// 100 %: `95`, `99.9`, `99.969`.
pub fn level(x: f64) -> String {
    let v = x * 100.0;
    let gap = 100.0 - v;
    if gap <= 0.0 {
        return "100".into();
    }
    let d = (1 - gap.log10().floor() as i32).max(0) as usize;
    let t = format!("{v:.d$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// What a decision's cases come to, counted: `slower at 12 of 40 cases`.
pub fn tally(d: &Decision) -> String {
    if d.cases.is_empty() {
        return "no case that both measured".into();
    }
    let parts: Vec<String> = [
        Change::Slower,
        Change::Faster,
        Change::Within,
        Change::NotSettled,
        Change::Failed,
        Change::Missing,
    ]
    .into_iter()
    .filter(|&c| d.count(c) > 0)
    .map(|c| format!("{} at {}", c.word(), d.count(c)))
    .collect();
    format!("{} of {} cases", parts.join(", "), d.cases.len())
}

/// Why a group stopped measuring until settled (the manifest's `group_rounds`).
pub enum Stop {
    /// Every case it is part of is settled.
    Settled,
    /// Some cases are not settled, and even the most rounds would not settle them.
    WouldNotSettle { most: usize },
    /// Stopped with nothing decided: no case both configs measured, or no partner.
    Stopped,
    /// It ran every round, settled.
    AllRounds,
    /// It ran every round, the most, and cases are still not settled.
    NotSettledAtMost,
}

/// Where a group's pair stood when it stopped.
pub enum PairEnd<'a> {
    /// Decided against the config it is compared with.
    Against(&'a str, &'a Decision),
    /// No config of its block to compare it with.
    Alone,
    /// Every config compared with it stopped.
    PartnersStopped,
    /// A config compared with it went on to the last round.
    PartnerWentOn,
}

/// The manifest's `why` of a group that stopped after `rounds`:
/// `settled after 7 rounds: against default: slower at 12 of 12 cases`.
pub fn group_stop(stop: &Stop, rounds: u32, pair: &PairEnd, gate: Option<&Decision>) -> String {
    let when = match stop {
        Stop::Settled => format!("settled after {rounds} rounds"),
        Stop::WouldNotSettle { most } => {
            format!("stopped after {rounds} rounds, as {most} would not settle the rest")
        }
        Stop::Stopped => format!("stopped after {rounds} rounds"),
        Stop::AllRounds => format!("all {rounds} rounds"),
        Stop::NotSettledAtMost => {
            format!("not settled after {rounds} rounds, the most (--max-rounds)")
        }
    };
    let pair = match pair {
        PairEnd::Against(base, d) => format!("against {base}: {}", tally(d)),
        PairEnd::Alone => "no config to compare it with".into(),
        PairEnd::PartnersStopped => "every config compared with it stopped".into(),
        PairEnd::PartnerWentOn => "a config compared with it went on".into(),
    };
    let gate = gate.map_or(String::new(), |d| {
        format!("; against the baseline: {}", tally(d))
    });
    format!("{when}: {pair}{gate}")
}

/// The rounds that would settle a decision, in words: `; about 20 rounds would
/// settle it`.
pub fn to_settle(d: &Decision) -> String {
    let most = crate::stats::change::most_rounds(&d.cases);
    match d.rounds_to_settle {
        Some(r) if r > most => format!(
            "; more than {most} rounds would be needed (a wider --threshold, or a quieter machine, would do)"
        ),
        Some(r) => format!("; about {r} rounds would settle it (--rounds {r})"),
        None => String::new(),
    }
}

/// The method under a decision, in one line.
pub fn method(d: &Decision) -> String {
    let basis: Vec<Basis> = d
        .cases
        .iter()
        .filter_map(|c| c.estimate.map(|e| e.basis))
        .collect();
    let how = if basis.contains(&Basis::Paired) {
        "paired t over each case's rounds"
    } else if basis.contains(&Basis::Runs) {
        "Welch t over each run's rounds"
    } else {
        "one measurement a side, no error rate"
    };
    if d.members == 0 {
        return format!("Method: {how} (docs/guide/statistics.md).");
    }
    let looks = if d.design.looks > 1 {
        format!(", {} looks", d.design.looks)
    } else {
        String::new()
    };
    let within = if d.design.upper_only {
        "not slower"
    } else {
        "within"
    };
    format!(
        "Method: {how}; slower or faster at {} % a case (Bonferroni over {} cases{looks}: {} % for all at once); {within}: each case's own interval, {} % an end (docs/guide/statistics.md).",
        level(d.family_level),
        d.members,
        level(1.0 - d.design.alpha),
        level(d.design.own_level()),
    )
}

/// A decision over cases in one sentence: the answer, the number that matters and
/// its interval. `names[i]` names case `i` (`1 MiB on 8 ranks`); `subject` is what
/// changed (`the candidate`).
pub fn sentence(d: &Decision, names: &[String], subject: &str) -> String {
    let point = if d.points() > 0 && d.members == 0 {
        "; one measurement a side, no error rate"
    } else {
        ""
    };
    let worst = |change: Change, pick: fn(f64, f64) -> bool| {
        d.cases
            .iter()
            .zip(names)
            .filter(|(c, _)| c.change == change)
            .filter(|(c, _)| c.relative().is_some())
            .reduce(|a, b| {
                if pick(b.0.relative().unwrap_or(0.0), a.0.relative().unwrap_or(0.0)) {
                    b
                } else {
                    a
                }
            })
    };
    let total = d.cases.len();
    match d.answer {
        Answer::Empty => format!("No case to compare{point}."),
        Answer::Different => {
            let most =
                worst(Change::Slower, |a, b| a > b).or_else(|| worst(Change::Faster, |a, b| a < b));
            let mut s = match most {
                Some((c, name)) => format!(
                    "{} is {} at {} of {total} cases, most at {name}: {}",
                    crate::units::capitalized(subject),
                    c.change.word(),
                    d.count(c.change),
                    case_words(c)
                ),
                None => format!(
                    "{} fails at {} of {total} cases",
                    crate::units::capitalized(subject),
                    d.count(Change::Failed)
                ),
            };
            let (faster, failed) = (d.count(Change::Faster), d.count(Change::Failed));
            if faster > 0 && d.count(Change::Slower) > 0 {
                s.push_str(&format!("; faster at {faster}"));
            }
            if failed > 0 && most.is_some() {
                s.push_str(&format!("; {failed} failing now"));
            }
            let missing = d.count(Change::Missing);
            if missing > 0 {
                s.push_str(&format!("; {missing} missing"));
            }
            format!("{s}{point}.")
        }
        Answer::Within => {
            let range = spread(d)
                .map(|(lo, hi)| format!(": every change between {} and {}", pct(lo), pct(hi)))
                .unwrap_or_default();
            let within = if d.design.upper_only {
                format!("not slower than {}", pct(d.design.margin))
            } else {
                format!("within {}", band(d.design.margin))
            };
            format!(
                "{} is {within} at all {total} cases{range}{point}.",
                crate::units::capitalized(subject)
            )
        }
        Answer::NotSettled => {
            let open = d.count(Change::NotSettled) + d.count(Change::Missing);
            let range = spread(d)
                .map(|(lo, hi)| format!("; changes between {} and {}", pct(lo), pct(hi)))
                .unwrap_or_default();
            format!(
                "Not settled at {open} of {total} cases{range}{}{point}.",
                to_settle(d)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_ratios_from_twice_and_as_percentages_below() {
        assert_eq!(how_much(2.1), "3.1x slower");
        assert_eq!(how_much(53.0), "54x slower");
        assert_eq!(how_much(0.12), "12.0 % slower");
        assert_eq!(how_much(-0.031), "3.1 % faster");
        assert_eq!(how_much(-0.75), "4.0x faster");
        assert_eq!(range((1.5, 2.7), 2.1), "2.5x-3.7x");
        assert_eq!(range((0.091, 0.15), 0.12), "+9.1 % to +15.0 %");
    }

    #[test]
    fn levels_keep_the_decimals_they_need() {
        assert_eq!(level(0.95), "95");
        assert_eq!(level(0.999), "99.9");
        assert_eq!(level(0.9996875), "99.969");
    }

    #[test]
    fn a_group_stop_says_when_against_what_and_the_gate() {
        use crate::stats::change::{decide, Design, Evidence, Input};
        let failed = Input {
            evidence: Evidence::Failed,
            flagged: false,
        };
        let d = decide(&[failed], &Design::new(0.05, 1));
        let pair = PairEnd::Against("default", &d);
        assert_eq!(
            group_stop(&Stop::Settled, 7, &pair, Some(&d)),
            "settled after 7 rounds: against default: failed at 1 of 1 cases; \
             against the baseline: failed at 1 of 1 cases"
        );
        assert_eq!(
            group_stop(&Stop::WouldNotSettle { most: 9 }, 6, &PairEnd::Alone, None),
            "stopped after 6 rounds, as 9 would not settle the rest: no config to compare it with"
        );
        assert_eq!(
            group_stop(&Stop::NotSettledAtMost, 9, &PairEnd::PartnerWentOn, None),
            "not settled after 9 rounds, the most (--max-rounds): a config compared with it went on"
        );
    }
}
