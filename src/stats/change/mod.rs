//! The one decision model: every answer nccl-bench gives about a change (the SHM
//! verdict, `compare` of two configs or two runs, `check` against a baseline,
//! `history`, a job's time) is read from [`decide`]. docs/guide/statistics.md
//! states the method for users; this is the same in brief.
//!
//! **Data.** A case's evidence is its rounds: each round is a fresh process group,
//! summed up by its median iteration time. The change is on the log scale,
//! ln(candidate / base) ([`estimate`]):
//! - two configs of one sweep ran round `i` side by side: the mean of the per-round
//!   log ratios, with the paired t's standard error (what a round did to both sides
//!   cancels);
//! - two runs: each run's mean log round median, with each side's own spread
//!   (Welch's t, Welch-Satterthwaite degrees of freedom), so that a quiet base run of
//!   15 rounds does not lend its precision to a noisy candidate of 7;
//! - a run against a baseline of several runs: the same, the baseline's mean over its
//!   runs, whose uncertainty holds the spread between its runs (a run effect shared
//!   by every case, estimated jointly over the cases: [`estimate::run_to_run`]);
//! - one measurement a side (an import's mean, a sweep of one round): the change
//!   alone, judged against the threshold with no error rate.
//!
//! **Family.** A decision rests on all its cases at once: K cases with a standard
//! error, at L looks of a sequential design. Each case's interval for a direction
//! (slower, faster) is its t interval at 1 - alpha / (K L) (Bonferroni over cases and
//! looks; Dunn 1961): every direction claimed, at any look, holds at once with at
//! least 1 - alpha.
//!
//! **Within.** "Within +-margin" rests on each case's own interval with each end at
//! alpha / L: the two one-sided tests of equivalence (Schuirmann 1987). "Every case
//! within" then holds at 1 - alpha however many cases there are (the intersection-
//! union test, Berger 1982): a case truly beyond would have had to show inside its
//! own interval. A gate asks only "not slower than +margin" (`Design::upper_only`):
//! the upper end alone.
//!
//! **Looks.** A sweep measuring until settled looks at the rounds the plan fixed
//! ([`looks`]) and spends alpha evenly over them (Bonferroni over the looks: the
//! repeated confidence intervals of Jennison and Turnbull 2000, valid whatever rule
//! stops the rounds). The manifest records the design; every reader decides at it.
//!
//! **Nothing set aside.** A case flagged by the quality rules stays in the family
//! (its rounds' medians are robust to what flagged it); it may be slower or faster,
//! but neither it nor the family is called within while it is flagged. A failed or
//! missing case is a case of the family too: a family with one is never within.
//!
//! Pure: no I/O.

use serde::{Deserialize, Serialize};

pub mod estimate;

pub use estimate::{
    between, of_rounds, paired, point, run_to_run, Basis, Estimate, Level, RunToRun,
};

/// The band a change must clear to be called slower or faster (and the margin of
/// "within"), unless asked otherwise: 2 %.
pub const DEFAULT_THRESHOLD: f64 = 0.02;

/// A gate's band (`check`, `history`): 5 %, as run-to-run variation between nights
/// is wider than between the rounds of one sweep.
pub const GATE_THRESHOLD: f64 = 0.05;

/// The family-wise error rate of a decision, unless asked otherwise.
pub const ALPHA: f64 = 0.05;

/// The error rate of a gate (`check`): a nightly gate that fails identical runs
/// once a month is ignored.
pub const GATE_ALPHA: f64 = 0.01;

/// The rounds of the first look of a sweep measuring until settled.
pub const FIRST_LOOK: u32 = 6;

/// The most looks a sweep takes.
pub const MOST_LOOKS: usize = 4;

/// What a decision is made at: its error rate, its looks, the band a change must
/// clear to be slower or faster, and the margin of "within".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The chance that any claim of the decision is wrong.
    pub alpha: f64,
    /// L: the looks of the sequential design (1 for a fixed number of rounds).
    pub looks: usize,
    /// Slower or faster only beyond +-threshold (a fraction).
    pub threshold: f64,
    /// Within +-margin (a fraction).
    pub margin: f64,
    /// "Within" means not slower than +margin: a gate's question.
    #[serde(default)]
    pub upper_only: bool,
}

impl Design {
    /// A comparison at `threshold`, its margin the same, at the default rate.
    pub fn new(threshold: f64, looks: usize) -> Design {
        Design {
            alpha: ALPHA,
            looks: looks.max(1),
            threshold,
            margin: threshold,
            upper_only: false,
        }
    }

    /// A gate: slower beyond `threshold`, else not slower than it, at [`GATE_ALPHA`].
    pub fn gate(threshold: f64, looks: usize) -> Design {
        Design {
            alpha: GATE_ALPHA,
            upper_only: true,
            ..Design::new(threshold, looks)
        }
    }

    /// The level of each case's interval for a direction, with `k` cases.
    pub fn family_level(&self, k: usize) -> f64 {
        1.0 - self.alpha / (k.max(1) * self.looks.max(1)) as f64
    }

    /// The level of each end of each case's own interval.
    pub fn own_level(&self) -> f64 {
        1.0 - self.alpha / self.looks.max(1) as f64
    }
}

/// How a case (or a job) changed. One word for each in every output ([`Change::word`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Slower beyond the threshold.
    Slower,
    /// Faster beyond the threshold.
    Faster,
    /// Within the margin (for a gate: not slower than it).
    Within,
    /// None of these: more rounds, or a quieter machine, would tell.
    NotSettled,
    /// The candidate did not pass (failed, timed out, wrong).
    Failed,
    /// No measurement to compare on one side.
    Missing,
}

impl Change {
    pub fn word(self) -> &'static str {
        match self {
            Change::Slower => "slower",
            Change::Faster => "faster",
            Change::Within => "within",
            Change::NotSettled => "not settled",
            Change::Failed => "failed",
            Change::Missing => "missing",
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// What the model is given for one case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Evidence {
    Measured(Estimate),
    Failed,
    Missing,
}

/// One case of a decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Input {
    pub evidence: Evidence,
    /// A quality rule flagged a side.
    pub flagged: bool,
}

/// One case as decided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Case {
    pub change: Change,
    pub estimate: Option<Estimate>,
    /// The interval a direction is claimed on (the family's level), as fractions.
    pub interval: Option<(f64, f64)>,
    /// The case's own interval (each end at 1 - alpha / L), on which "within" rests.
    pub own: Option<(f64, f64)>,
    pub flagged: bool,
}

impl Case {
    /// The estimated change as a fraction.
    pub fn relative(&self) -> Option<f64> {
        self.estimate.map(|e| e.relative())
    }
}

/// The answer of a decision over all its cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// Some case slower or faster beyond the threshold, or failed.
    Different,
    /// Every case within the margin, none flagged, failed or missing.
    Within,
    /// Neither.
    NotSettled,
    /// No case.
    Empty,
}

/// A decision over the cases given, in their order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub design: Design,
    pub cases: Vec<Case>,
    /// K: the cases with a standard error (the family the levels are for).
    pub members: usize,
    pub answer: Answer,
    /// The level of each case's interval for a direction, 1 - alpha / (K L).
    pub family_level: f64,
    /// About how many rounds would settle a decision that is not settled (`None`:
    /// settled, or nothing to scale from).
    pub rounds_to_settle: Option<usize>,
}

impl Decision {
    pub fn count(&self, change: Change) -> usize {
        self.cases.iter().filter(|c| c.change == change).count()
    }

    /// Cases judged on one measurement a side, with no error rate.
    pub fn points(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| c.estimate.is_some_and(|e| e.basis == Basis::Point))
            .count()
    }

    pub fn flagged(&self) -> usize {
        self.cases.iter().filter(|c| c.flagged).count()
    }

    /// What the cases come to for a question of cost: [`overall`].
    pub fn overall(&self) -> Change {
        overall(self.cases.iter().map(|c| c.change))
    }

    /// The most rounds a case of the decision stands on (per side).
    pub fn rounds(&self) -> usize {
        self.cases
            .iter()
            .filter_map(|c| c.estimate.map(|e| e.cand_rounds.min(e.base_rounds)))
            .max()
            .unwrap_or(0)
    }
}

/// What cases come to for a question of cost (what disabling SHM costs, a job's time):
/// slower where any case is slower or failed, within where every case is, faster where
/// some case is and every other is within, else (or with no case) not settled.
pub fn overall(changes: impl IntoIterator<Item = Change>) -> Change {
    let all: Vec<Change> = changes.into_iter().collect();
    let any = |c: Change| all.contains(&c);
    let only = |ok: &[Change]| all.iter().all(|c| ok.contains(c));
    if any(Change::Slower) || any(Change::Failed) {
        Change::Slower
    } else if all.is_empty() {
        Change::NotSettled
    } else if only(&[Change::Within]) {
        Change::Within
    } else if any(Change::Faster) && only(&[Change::Faster, Change::Within]) {
        Change::Faster
    } else {
        Change::NotSettled
    }
}

/// The Student t quantile at `p` with `df` degrees of freedom (the normal's for
/// infinite `df`).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let p = p.clamp(1e-15, 1.0 - 1e-15);
    if !df.is_finite() || df > 1e5 {
        return Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p));
    }
    StudentsT::new(0.0, 1.0, df.max(0.5)).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// The interval of `e` with each end at `level`, as fractions; a point for a point.
fn interval(e: &Estimate, level: f64) -> (f64, f64) {
    let half = e.se.map_or(0.0, |se| se * t_quantile(level, e.df));
    ((e.log - half).exp() - 1.0, (e.log + half).exp() - 1.0)
}

/// One case's change from its intervals: slower or faster where the interval for a
/// direction lies wholly beyond +-threshold, within where its own interval lies
/// inside the margin (and it is not flagged), else not settled.
pub fn classify(interval: (f64, f64), own: (f64, f64), flagged: bool, design: &Design) -> Change {
    let (t, m) = (design.threshold, design.margin);
    if interval.0 > t {
        Change::Slower
    } else if interval.1 < -t {
        Change::Faster
    } else if !flagged && own.1 <= m && (design.upper_only || own.0 >= -m) {
        Change::Within
    } else {
        Change::NotSettled
    }
}

/// Each case decided at `design`, and the answer over all of them.
pub fn decide(inputs: &[Input], design: &Design) -> Decision {
    decide_in(inputs, design, 0)
}

/// [`decide`] for cases that are part of a family of at least `family` cases (a
/// look at one rank count of a sweep whose decision spans them all): each level is
/// the whole family's.
pub fn decide_in(inputs: &[Input], design: &Design, family: usize) -> Decision {
    let members = inputs
        .iter()
        .filter(|i| matches!(i.evidence, Evidence::Measured(e) if e.se.is_some()))
        .count();
    let family_level = design.family_level(members.max(family));
    // Each end of a direction's interval at alpha / (2 K L): a case within the band
    // can be wrongly called slower or faster.
    let two_sided = 1.0 - (1.0 - family_level) / 2.0;
    let cases: Vec<Case> = inputs
        .iter()
        .map(|input| match input.evidence {
            Evidence::Measured(e) => {
                let fam = interval(&e, two_sided);
                let own = interval(&e, design.own_level());
                Case {
                    change: classify(fam, own, input.flagged, design),
                    estimate: Some(e),
                    interval: Some(fam),
                    own: Some(own),
                    flagged: input.flagged,
                }
            }
            Evidence::Failed | Evidence::Missing => Case {
                change: if input.evidence == Evidence::Failed {
                    Change::Failed
                } else {
                    Change::Missing
                },
                estimate: None,
                interval: None,
                own: None,
                flagged: input.flagged,
            },
        })
        .collect();
    let any = |c: Change| cases.iter().any(|x| x.change == c);
    let answer = if cases.is_empty() {
        Answer::Empty
    } else if any(Change::Slower) || any(Change::Faster) || any(Change::Failed) {
        Answer::Different
    } else if cases.iter().all(|c| c.change == Change::Within) {
        Answer::Within
    } else {
        Answer::NotSettled
    };
    let rounds_to_settle = (answer == Answer::NotSettled)
        .then(|| rounds_to_settle(&cases, design, two_sided))
        .flatten();
    Decision {
        design: *design,
        cases,
        members,
        answer,
        family_level,
        rounds_to_settle,
    }
}

/// Estimates of rounds needed stop here ("more than this").
pub const MOST_ROUNDS: usize = 100;

/// The most rounds an estimate of the rounds to settle names: [`MOST_ROUNDS`], or the
/// rounds a case already has where it has more. One more stands for more.
pub fn most_rounds(cases: &[Case]) -> usize {
    cases
        .iter()
        .filter_map(|c| c.estimate.map(|e| e.cand_rounds))
        .fold(MOST_ROUNDS, usize::max)
}

/// About how many rounds a decision that is not settled needs: the fewest that show
/// some case beyond the threshold, or the most that show every case within,
/// whichever is fewer, each case's interval narrowing as 1 / sqrt(rounds) about its
/// estimate as it stands. [`most_rounds`] + 1 stands for more.
fn rounds_to_settle(cases: &[Case], design: &Design, two_sided: f64) -> Option<usize> {
    let most = most_rounds(cases);
    let mut differ: Option<usize> = None;
    let mut within: Option<usize> = Some(0);
    for c in cases {
        let Some(e) = c.estimate.filter(|e| e.se.is_some_and(|s| s > 0.0)) else {
            if c.change != Change::Within {
                within = None;
            }
            continue;
        };
        let n = e.cand_rounds.max(2);
        let needed = |room: f64, level: f64| -> Option<usize> {
            (room > 0.0).then(|| {
                let half = e.se.unwrap_or(0.0) * t_quantile(level, e.df);
                let r = (n as f64 * (half / room).powi(2)).ceil() as usize;
                r.clamp(n + 1, most + 1)
            })
        };
        let size = e.log.abs();
        let threshold = design.threshold.ln_1p();
        if c.change != Change::Slower && c.change != Change::Faster {
            if let Some(r) = needed(size - threshold, two_sided) {
                differ = Some(differ.map_or(r, |d| d.min(r)));
            }
        }
        if c.change != Change::Within {
            let margin = design.margin.ln_1p();
            let room = if design.upper_only {
                margin - e.log
            } else {
                margin - size
            };
            within = match (within, needed(room, design.own_level())) {
                (Some(w), Some(r)) if !c.flagged => Some(w.max(r)),
                _ => None,
            };
        }
    }
    [differ, within.filter(|&w| w > 0)]
        .into_iter()
        .flatten()
        .min()
}

/// Whether more rounds could not settle the case: at its estimate as it stands,
/// after `most` rounds its intervals would still leave it not settled. Stopping a
/// pair whose every open case is futile only ever declares less, so the error rates
/// hold.
pub fn futile(case: &Case, most: usize, family_level: f64, design: &Design) -> bool {
    let Some(e) = case.estimate.filter(|e| e.se.is_some()) else {
        return true;
    };
    if case.change != Change::NotSettled {
        return false;
    }
    let later = e.at_rounds(most);
    let two_sided = 1.0 - (1.0 - family_level) / 2.0;
    classify(
        interval(&later, two_sided),
        interval(&later, design.own_level()),
        case.flagged,
        design,
    ) == Change::NotSettled
}

/// Whether a sweep may stop measuring the cases of `d`: every one is slower, faster,
/// within, failed or missing, or not settled where even `most` rounds would leave it
/// so.
pub fn settled(d: &Decision, most: usize) -> bool {
    d.cases
        .iter()
        .all(|c| c.change != Change::NotSettled || futile(c, most, d.family_level, &d.design))
}

/// The rounds at which a sweep measuring until settled looks, the last at
/// `max_rounds`: the first after [`FIRST_LOOK`] rounds, then up to [`MOST_LOOKS`] in
/// all, at least 2 rounds apart, evenly on a log scale (each look's intervals about
/// as much narrower than the last's). One look at `max_rounds` where the first would
/// come no earlier.
pub fn looks(max_rounds: u32) -> Vec<u32> {
    if max_rounds <= FIRST_LOOK + 1 {
        return vec![max_rounds.max(1)];
    }
    let count = MOST_LOOKS.min(1 + (max_rounds - FIRST_LOOK) as usize / 2);
    let (first, last) = (f64::from(FIRST_LOOK), f64::from(max_rounds));
    let steps = (count - 1) as f64;
    let mut at: Vec<u32> = (0..count)
        .map(|i| (first * (last / first).powf(i as f64 / steps)).round() as u32)
        .collect();
    at.dedup();
    at
}

#[cfg(test)]
mod tests;
