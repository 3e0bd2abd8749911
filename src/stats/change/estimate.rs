//! One case's change and its standard error, on the log scale, from what each side
//! measured: rounds side by side (two configs of one sweep), the rounds of two or more
//! runs (two runs, or a run against a baseline's runs), or one measurement a side.

use serde::Serialize;

/// How a case's change was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Two configs of one sweep: round i of each side ran in the same round of the
    /// sweep, so the change is the mean of the per-round log ratios (paired t).
    Paired,
    /// Independent runs: each side's own spread over its rounds (Welch), and with a
    /// baseline of several runs the spread between them too.
    Runs,
    /// One measurement a side (an import's mean, a sweep of one round): the change
    /// alone, with no error rate.
    Point,
}

/// One case's change: `log` = ln(candidate / base) of its typical time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub log: f64,
    /// The standard error of `log`; `None` on one measurement a side.
    pub se: Option<f64>,
    /// Degrees of freedom of the t interval (Welch-Satterthwaite between runs).
    pub df: f64,
    pub basis: Basis,
    /// Rounds of the base side (the baseline's runs' rounds summed) and of the
    /// candidate.
    pub base_rounds: usize,
    pub cand_rounds: usize,
    /// The part of se^2 that more rounds of the candidate (of the pair, paired)
    /// would shrink, as 1 / rounds.
    #[serde(skip)]
    pub shrinking: f64,
}

impl Estimate {
    /// The change as a fraction: +0.10 is 10 % slower.
    pub fn relative(&self) -> f64 {
        self.log.exp() - 1.0
    }

    /// The same estimate as it would stand after `rounds` rounds of the candidate (of
    /// the pair), its spread as now: how far more rounds could take it.
    pub fn at_rounds(&self, rounds: usize) -> Estimate {
        let Some(se) = self.se else { return *self };
        let now = self.cand_rounds.max(1) as f64;
        let scale = now / rounds.max(1) as f64;
        let var = se * se - self.shrinking + self.shrinking * scale;
        Estimate {
            se: Some(var.max(0.0).sqrt()),
            df: self.df + rounds.saturating_sub(self.cand_rounds) as f64,
            cand_rounds: rounds,
            base_rounds: if self.basis == Basis::Paired {
                rounds
            } else {
                self.base_rounds
            },
            shrinking: self.shrinking * scale,
            ..*self
        }
    }
}

/// A run's typical time for one case: the mean of its rounds' log medians, and the
/// variance of that mean (s^2 / n; `None` for one round).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Level {
    pub log: f64,
    pub var: Option<f64>,
    pub rounds: usize,
}

fn valid(v: &[f64]) -> bool {
    !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0)
}

/// Mean and sample variance.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

impl Level {
    /// From each round's median (any unit, positive); `None` without one.
    pub fn of_rounds(rounds: &[f64]) -> Option<Level> {
        if !valid(rounds) {
            return None;
        }
        let logs: Vec<f64> = rounds.iter().map(|r| r.ln()).collect();
        let (log, var) = mean_var(&logs);
        Some(Level {
            log,
            var: (logs.len() > 1).then(|| var / logs.len() as f64),
            rounds: logs.len(),
        })
    }

    /// One measurement (an import's mean time).
    pub fn of_point(time: f64) -> Option<Level> {
        (time.is_finite() && time > 0.0).then(|| Level {
            log: time.ln(),
            var: None,
            rounds: 1,
        })
    }

    /// The typical time, in the unit of the rounds (their geometric mean).
    pub fn time(&self) -> f64 {
        self.log.exp()
    }
}

/// Two configs of one sweep, round `i` of each side in round `i` of the sweep: the
/// mean of the per-round log ratios over the rounds both ran, with the paired t's
/// standard error. `None` with fewer than 2 such rounds (or a value that is not
/// positive).
pub fn paired(base: &[f64], cand: &[f64]) -> Option<Estimate> {
    let n = base.len().min(cand.len());
    if n < 2 || !valid(&base[..n]) || !valid(&cand[..n]) {
        return None;
    }
    let d: Vec<f64> = (0..n).map(|i| cand[i].ln() - base[i].ln()).collect();
    let (log, var) = mean_var(&d);
    let se2 = var / n as f64;
    Some(Estimate {
        log,
        se: Some(se2.sqrt()),
        df: (n - 1) as f64,
        basis: Basis::Paired,
        base_rounds: n,
        cand_rounds: n,
        shrinking: se2,
    })
}

/// The change between two sides' round medians, and each side's typical time that the
/// change is the ratio of: over the rounds both ran, paired, where they ran side by side
/// (`paired`: two configs of one sweep), else each run's own rounds and spread (Welch).
/// `None` with fewer than 2 rounds on a side or a value that is not positive: the
/// caller then has one measurement a side ([`point`]).
pub fn of_rounds(base: &[f64], cand: &[f64], paired: bool) -> Option<(Estimate, f64, f64)> {
    if paired {
        let k = base.len().min(cand.len());
        let e = self::paired(base, cand)?;
        let time = |r: &[f64]| Level::of_rounds(&r[..k]).map(|l| l.time());
        return Some((e, time(base)?, time(cand)?));
    }
    let (b, c) = (Level::of_rounds(base)?, Level::of_rounds(cand)?);
    if b.rounds.min(c.rounds) < 2 {
        return None;
    }
    Some((between(&[b], None, &c)?, b.time(), c.time()))
}

/// One measurement a side.
pub fn point(base: f64, cand: f64) -> Option<Estimate> {
    let (b, c) = (Level::of_point(base)?, Level::of_point(cand)?);
    Some(Estimate {
        log: c.log - b.log,
        se: None,
        df: f64::INFINITY,
        basis: Basis::Point,
        base_rounds: 1,
        cand_rounds: 1,
        shrinking: 0.0,
    })
}

/// How much a run's level varies from run to run beyond what its rounds explain,
/// estimated jointly over the cases of a baseline's runs (a run effect, in relative
/// terms): the variance and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct RunToRun {
    /// tau^2, on the log scale.
    pub var: f64,
    pub df: f64,
    /// The runs it was estimated from.
    pub runs: usize,
}

impl RunToRun {
    /// tau as a fraction: 0.01 is 1 % run to run.
    pub fn relative(&self) -> f64 {
        self.var.sqrt().exp() - 1.0
    }
}

/// tau^2 from each case's levels in the baseline's runs: the method of moments of a
/// random-effects model (DerSimonian and Laird 1986), pooled over the cases. For
/// a case, the sample variance of its runs' levels estimates tau^2 plus the mean of
/// their variances within; the pooled estimate weighs each case by its degrees of
/// freedom (runs less one) and is floored at zero, and its degrees of freedom are
/// their sum: the cases' run-to-run deviations are taken as independent. Where a run
/// effect moves every case alike, the estimate has fewer degrees of freedom than
/// that (the bench measures what this does to the gate's rate). `None` with fewer
/// than 2 runs.
pub fn run_to_run(cases: &[&[Level]]) -> Option<RunToRun> {
    let mut weighted = 0.0;
    let mut weight = 0.0;
    let mut runs = 0;
    for levels in cases.iter().filter(|l| l.len() > 1) {
        let logs: Vec<f64> = levels.iter().map(|l| l.log).collect();
        let (_, between) = mean_var(&logs);
        let within = levels.iter().map(|l| l.var.unwrap_or(0.0)).sum::<f64>() / logs.len() as f64;
        let df = (logs.len() - 1) as f64;
        weighted += df * (between - within);
        weight += df;
        runs = runs.max(levels.len());
    }
    (weight > 0.0).then(|| RunToRun {
        var: (weighted / weight).max(0.0),
        df: weight,
        runs,
    })
}

/// A candidate run's level against the levels of one or more base runs (two runs:
/// one base run; a check: the baseline's runs). The change is the candidate's level
/// less the base runs' mean. Its variance: the candidate's own (its rounds), and the
/// base mean's, the base runs' own and `run_to_run` between them, each over the
/// runs; what the candidate run itself is (tonight's machine) is what is measured,
/// not noise. Degrees of freedom by Welch-Satterthwaite. With one base run this is
/// Welch's two-sample t on the rounds. A point (no error rate) where the candidate
/// has one round, or the only base run has.
pub fn between(base: &[Level], run_to_run: Option<RunToRun>, cand: &Level) -> Option<Estimate> {
    if base.is_empty() {
        return None;
    }
    let b = base.len() as f64;
    let base_log = base.iter().map(|l| l.log).sum::<f64>() / b;
    let base_rounds = base.iter().map(|l| l.rounds).sum();
    let point = Estimate {
        log: cand.log - base_log,
        se: None,
        df: f64::INFINITY,
        basis: Basis::Point,
        base_rounds,
        cand_rounds: cand.rounds,
        shrinking: 0.0,
    };
    let Some(own) = cand.var else {
        return Some(point);
    };
    if base.len() == 1 && base[0].var.is_none() {
        return Some(point);
    }
    if base == [*cand] {
        // The very same measurement on both sides (a run checked against a
        // baseline made of it): no change, with certainty.
        return Some(Estimate {
            se: Some(0.0),
            df: f64::INFINITY,
            basis: Basis::Runs,
            ..point
        });
    }
    // (variance, degrees of freedom) of each independent part.
    let mut parts = vec![(own, (cand.rounds - 1) as f64)];
    for l in base {
        if let Some(v) = l.var {
            parts.push((v / (b * b), (l.rounds - 1) as f64));
        }
    }
    if let Some(t) = run_to_run.filter(|_| base.len() > 1) {
        parts.push((t.var / b, t.df.max(1.0)));
    }
    let var: f64 = parts.iter().map(|p| p.0).sum();
    let denominator: f64 = parts
        .iter()
        .filter(|p| p.0 > 0.0)
        .map(|p| p.0 * p.0 / p.1)
        .sum();
    let df = if denominator > 0.0 {
        var * var / denominator
    } else {
        parts.iter().map(|p| p.1).sum()
    };
    Some(Estimate {
        se: Some(var.sqrt()),
        df,
        basis: Basis::Runs,
        shrinking: own,
        ..point
    })
}
