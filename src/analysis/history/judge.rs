//! How a series is judged (the rules in `history`'s module comment): each run
//! against the level before it, steps where two runs move the same way, one-offs
//! where a run does not last, and what the manifests say changed at a step.

use super::facts::differences;
use super::series::{OneOff, Options, Series, Step};
use crate::export::reader::RunData;
use crate::stats::change::{self, Change, Design, Evidence, Input, Level};
use crate::stats::median;

/// Runs a level needs before a run can step away from it: with fewer, the level's
/// spread is not known yet, and runs that agree against it make its runs, not them,
/// the ones that stood out.
const MIN_LEVEL: usize = 3;

/// A run judged against a level: the change and its interval.
#[derive(Debug, Clone, Copy)]
struct Judged {
    point: usize,
    change: f64,
    ci: (f64, f64),
    verdict: Change,
}

/// Finds the series' steps and one-offs (module comment).
pub(super) fn judge(series: &mut Series, runs: &[RunData], opts: &Options) {
    // A run against the level: the model's change of its level against the level
    // runs' (each run's rounds, and how those runs differ from one another).
    let interval = |level: &[usize], i: usize| -> (f64, (f64, f64), Change) {
        let points = &series.points;
        let levels: Vec<Level> = level.iter().filter_map(|&j| points[j].level).collect();
        let spread = change::run_to_run(&[levels.as_slice()]);
        let evidence = points[i]
            .level
            .and_then(|l| change::between(&levels, spread, &l))
            .map_or(Evidence::Missing, Evidence::Measured);
        let design = Design::new(opts.threshold, 1);
        let case = change::decide(
            &[Input {
                evidence,
                flagged: false,
            }],
            &design,
        )
        .cases[0];
        let ci = case.interval.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        (case.relative().unwrap_or(f64::NAN), ci, case.change)
    };
    let eligible: Vec<usize> = (0..series.points.len())
        .filter(|&i| series.points[i].trusted)
        .collect();
    let beyond = |v: Change| matches!(v, Change::Slower | Change::Faster);
    let one_off = |p: &Judged| OneOff {
        run: series.points[p.point].run,
        verdict: p.verdict,
        change: p.change,
        ci: p.ci,
    };
    // The level: runs unchanged against it (its first run, and after a step the
    // runs of the new level). Pending: the runs since that were not unchanged.
    let mut level: Vec<usize> = Vec::new();
    let mut pending: Vec<Judged> = Vec::new();
    let mut steps = Vec::new();
    let mut one_offs = Vec::new();
    // The latest confirmed step and the old level's window it was judged against:
    // sized once its new level is known (the first `window` runs of it, median).
    let mut open: Option<(usize, Vec<usize>)> = None;
    let size = |step: &mut Step, old: &[usize], new_level: &[usize]| {
        let mut judged: Vec<(f64, (f64, f64))> = new_level
            .iter()
            .take(opts.window.max(1))
            .map(|&j| {
                let (change, ci, _) = interval(old, j);
                (change, ci)
            })
            .collect();
        judged.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = judged.len();
        if n == 0 {
            return;
        }
        // The middle run, or the two middle ones: their mean and both intervals.
        let (lo, hi) = (&judged[(n - 1) / 2], &judged[n / 2]);
        step.change = (lo.0 + hi.0) / 2.0;
        step.ci = (lo.1 .0.min(hi.1 .0), lo.1 .1.max(hi.1 .1));
    };
    for &i in &eligible {
        if level.is_empty() {
            level.push(i);
            continue;
        }
        // The level's first runs: a drift away from them adds up to a step.
        let window = &level[..level.len().min(opts.window.max(1))];
        let (change, ci, verdict) = interval(window, i);
        let judged = Judged {
            point: i,
            change,
            ci,
            verdict,
        };
        // At the level: unchanged, or an interval too wide to call that still holds
        // no change (runs noisier than the threshold must still make a level, or
        // no step could ever be named after them).
        let at_level = judged.verdict == Change::Within
            || (judged.verdict == Change::NotSettled && ci.0 <= 0.0 && ci.1 >= 0.0);
        if at_level {
            // What was pending did not last: runs beyond the threshold were
            // one-offs, the unsure ones stay out of the level.
            one_offs.extend(
                pending
                    .drain(..)
                    .filter(|p| beyond(p.verdict))
                    .map(|p| one_off(&p)),
            );
            level.push(i);
            continue;
        }
        if beyond(judged.verdict)
            && pending
                .iter()
                .any(|p| beyond(p.verdict) && p.verdict != judged.verdict)
        {
            // Beyond the other way: what was pending did not last either.
            one_offs.extend(
                pending
                    .drain(..)
                    .filter(|p| beyond(p.verdict))
                    .map(|p| one_off(&p)),
            );
        }
        pending.push(judged);
        let same: Vec<Judged> = pending
            .iter()
            .filter(|p| beyond(judged.verdict) && p.verdict == judged.verdict)
            .copied()
            .collect();
        if same.len() < 2 {
            continue;
        }
        // Two runs beyond the threshold the same way with none back at the level:
        // it moved, from the first pending run on that side (an unsure one too).
        // The new level is the runs since then not beyond the latest one: a
        // spike before a smaller step is a one-off, not part of the level.
        let up = judged.verdict == Change::Slower;
        let start = pending
            .iter()
            .position(|p| (p.change > 0.0) == up)
            .unwrap_or(0);
        // Out of line: further from the old level than the latest run, by more
        // than the threshold, interval against interval (a run between the two is
        // part of the move, and so is one whose interval reaches the latest's).
        let in_line = |p: &Judged| {
            if up {
                (1.0 + p.ci.0) / (1.0 + judged.ci.1) <= 1.0 + opts.threshold
            } else {
                (1.0 + p.ci.1) / (1.0 + judged.ci.0) >= 1.0 / (1.0 + opts.threshold)
            }
        };
        let new_level: Vec<usize> = pending[start..]
            .iter()
            .filter(|p| in_line(p))
            .map(|p| p.point)
            .collect();
        one_offs.extend(
            pending[start..]
                .iter()
                .filter(|p| beyond(p.verdict) && !in_line(p))
                .map(one_off),
        );
        if level.len() < MIN_LEVEL {
            // Too few runs to know the level's spread, and the runs after them agree
            // with each other, not with them: the level's runs beyond the new level
            // are the ones that stood out; no step is named.
            let mut joined = Vec::new();
            for &j in &level {
                let (change, ci, verdict) = interval(&new_level, j);
                if beyond(verdict) {
                    one_offs.push(OneOff {
                        run: series.points[j].run,
                        verdict,
                        change,
                        ci,
                    });
                } else {
                    joined.push(j);
                }
            }
            joined.extend(new_level);
            level = joined;
            pending.clear();
            continue;
        } else {
            if let Some((k, old)) = open.take() {
                size(&mut steps[k], &old, &level);
            }
            // From the old level's last run to the new level's first: a spike
            // between them is a one-off, and the manifests' differences span it.
            let before = *level.last().unwrap_or(&new_level[0]);
            steps.push(step(series, runs, before, new_level[0], &same, true));
            open = Some((steps.len() - 1, window.to_vec()));
        }
        level = new_level;
        pending.clear();
    }
    if let Some((k, old)) = open.take() {
        size(&mut steps[k], &old, &level);
    }
    if let Some(p) = pending.iter().find(|p| beyond(p.verdict)).copied() {
        let before = *level.last().unwrap_or(&p.point);
        steps.push(step(series, runs, before, p.point, &[p], false));
    }
    series.steps = steps;
    series.one_offs = one_offs;
}

/// A step between points `before` and `after`, its size from the runs beyond the
/// threshold that made it (`beyond`: the median of their changes, the span of
/// their intervals).
fn step(
    series: &Series,
    runs: &[RunData],
    before: usize,
    after: usize,
    beyond: &[Judged],
    confirmed: bool,
) -> Step {
    let (b, a) = (series.points[before].run, series.points[after].run);
    let lo = beyond.iter().map(|p| p.ci.0).fold(f64::INFINITY, f64::min);
    let hi = beyond
        .iter()
        .map(|p| p.ci.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut differences = differences(&runs[b], &runs[a], &series.config);
    let (from, to) = (&series.points[before].choice, &series.points[after].choice);
    if !from.is_empty() && !to.is_empty() && from != to {
        differences.push(super::Difference {
            what: super::Fact::Choice,
            before: from.clone(),
            after: to.clone(),
        });
    }
    Step {
        before: b,
        after: a,
        verdict: beyond[0].verdict,
        change: median(beyond.iter().map(|p| p.change)).unwrap_or(f64::NAN),
        ci: (lo, hi),
        confirmed,
        differences,
    }
}
