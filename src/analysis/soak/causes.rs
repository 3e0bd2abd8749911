//! What changed while bandwidth dipped: each counter of counters.csv judged inside
//! an episode's window against the rest of its soak. A count (errors, replays, XID
//! events) moved when it grew in the window faster than three times its rate
//! outside; a flag (a throttle reason) when it was on for at least half the
//! window's readings and for under a fifth of the others; a gauge (clock,
//! temperature, CPU load) when the window's median differs from the others' by
//! more than 10 % and more than three robust spreads of the others.

use std::collections::BTreeMap;

use crate::export::soak::CounterRow;
use crate::machine::counters::{Kind, THROTTLE_REASONS};
use crate::stats::soak::median_and_spread;

/// A counter that moved with a dip (`report::soak` words it).
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    pub node: String,
    pub source: String,
    pub counter: String,
    pub moved: Moved,
    /// For ordering: flags and counts before gauges, bigger moves first.
    pub weight: f64,
}

/// How a counter moved in the window.
#[derive(Debug, Clone, PartialEq)]
pub enum Moved {
    /// A count grew by this much.
    Counted(f64),
    /// Flags (throttle reasons) were on, in words (`HW slowdown`); one cause holds
    /// every flag of its source.
    Reported(Vec<String>),
    /// A gauge's median moved from the rest of the soak's to the window's.
    Changed { from: f64, to: f64 },
}

/// One counter's readings, in time order.
pub struct Series<'a> {
    pub node: &'a str,
    pub source: &'a str,
    pub counter: &'a str,
    pub kind: Kind,
    /// (seconds since the run's start, value); only changes are stored, so a value
    /// holds until the next one.
    pub points: Vec<(f64, f64)>,
}

/// counters.csv's rows as one series per (node, source, counter).
pub fn series(rows: &[CounterRow]) -> Vec<Series<'_>> {
    let mut by: BTreeMap<(&str, &str, &str), Series> = BTreeMap::new();
    for r in rows {
        let Some(kind) = Kind::parse(&r.kind) else {
            continue;
        };
        by.entry((&r.node, &r.source, &r.counter))
            .or_insert_with(|| Series {
                node: &r.node,
                source: &r.source,
                counter: &r.counter,
                kind,
                points: Vec::new(),
            })
            .points
            .push((r.t_s, r.value));
    }
    by.into_values().collect()
}

impl Series<'_> {
    /// The value at `t`: the last reading at or before it.
    fn at(&self, t: f64) -> Option<f64> {
        self.points
            .iter()
            .rev()
            .find(|(ts, _)| *ts <= t)
            .map(|p| p.1)
    }

    /// The value at each of `times` (forward-filled), where known.
    fn sampled(&self, times: &[f64]) -> Vec<f64> {
        times.iter().filter_map(|t| self.at(*t)).collect()
    }
}

/// The counters among `all` that moved in `[from, to]` (seconds since the run's
/// start) compared with the rest of `[span_from, span_to]`, where readings came at
/// `times`; strongest first.
pub fn causes(all: &[Series], times: &[f64], window: (f64, f64), span: (f64, f64)) -> Vec<Cause> {
    let (from, to) = window;
    let inside: Vec<f64> = times
        .iter()
        .copied()
        .filter(|t| *t >= from && *t <= to)
        .collect();
    let outside: Vec<f64> = times
        .iter()
        .copied()
        .filter(|t| (*t < from || *t > to) && *t >= span.0 && *t <= span.1)
        .collect();
    let mut out = Vec::new();
    for s in all {
        let moved = match s.kind {
            Kind::Count => {
                let (Some(a), Some(b)) = (s.at(from), s.at(to)) else {
                    continue;
                };
                let grew = b - a;
                let total = s.at(span.1).zip(s.at(span.0)).map_or(0.0, |(e, b0)| e - b0);
                let rest = (total - grew).max(0.0);
                let rest_len = ((span.1 - span.0) - (to - from)).max(1e-9);
                let len = (to - from).max(1e-9);
                (grew > 0.0 && grew / len > 3.0 * rest / rest_len).then(|| {
                    (
                        Moved::Counted(grew),
                        2.0 + (grew.log10() / 10.0).clamp(0.0, 0.99),
                    )
                })
            }
            Kind::Flag => {
                let share = |ts: &[f64]| {
                    let v = s.sampled(ts);
                    (!v.is_empty())
                        .then(|| v.iter().filter(|x| **x > 0.5).count() as f64 / v.len() as f64)
                };
                let (Some(i), o) = (share(&inside), share(&outside).unwrap_or(0.0)) else {
                    continue;
                };
                let reason = THROTTLE_REASONS
                    .iter()
                    .find(|(_, name, _)| *name == s.counter)
                    .map_or(s.counter, |r| r.2);
                (i >= 0.5 && o < 0.2).then(|| (Moved::Reported(vec![reason.to_string()]), 3.0 + i))
            }
            Kind::Gauge => {
                let (i, o) = (s.sampled(&inside), s.sampled(&outside));
                let (Some((mi, _)), Some((mo, spread))) =
                    (median_and_spread(&i), median_and_spread(&o))
                else {
                    continue;
                };
                let change = mi - mo;
                let big = change.abs() > 0.1 * mo.abs().max(0.1) && change.abs() > 3.0 * spread;
                big.then(|| {
                    (
                        Moved::Changed { from: mo, to: mi },
                        1.0 + (change.abs() / mo.abs().max(0.1)).min(1.0),
                    )
                })
            }
        };
        if let Some((moved, weight)) = moved {
            out.push(Cause {
                node: s.node.to_string(),
                source: s.source.to_string(),
                counter: s.counter.to_string(),
                moved,
                weight,
            });
        }
    }
    out.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    merge_flags(out)
}

/// One cause per source for its flags: `GPU 3 reported HW slowdown and HW thermal
/// slowdown`.
fn merge_flags(causes: Vec<Cause>) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::new();
    for c in causes {
        let same = out.iter_mut().find(|o| {
            o.node == c.node && o.source == c.source && matches!(o.moved, Moved::Reported(_))
        });
        match (c.moved, same) {
            (Moved::Reported(more), Some(o)) => {
                if let Moved::Reported(reasons) = &mut o.moved {
                    reasons.extend(more);
                }
            }
            (moved, _) => out.push(Cause { moved, ..c }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, source: &str, counter: &str, kind: &str, value: f64) -> CounterRow {
        CounterRow {
            t_s: t,
            node: "n1".into(),
            source: source.into(),
            counter: counter.into(),
            kind: kind.into(),
            value,
        }
    }

    #[test]
    fn throttles_replays_and_clocks_that_move_with_a_dip_are_named_and_steady_ones_not() {
        let times: Vec<f64> = (0..30).map(f64::from).collect();
        let mut rows = Vec::new();
        for &t in &times {
            let dip = (10.0..15.0).contains(&t);
            rows.push(row(
                t,
                "gpu3",
                "throttle.hw_slowdown",
                "flag",
                f64::from(u8::from(dip)),
            ));
            rows.push(row(
                t,
                "gpu3",
                "sm_clock_mhz",
                "gauge",
                if dip { 1275.0 } else { 1980.0 },
            ));
            rows.push(row(t, "gpu1", "sm_clock_mhz", "gauge", 1980.0 + (t % 3.0)));
            rows.push(row(
                t,
                "gpu5.nvlink3",
                "nvlink.replay",
                "count",
                40.0 * (t - 10.0).clamp(0.0, 5.0),
            ));
            // Grows all along: not a cause of this dip.
            rows.push(row(t, "eth0", "rx_errors", "count", t));
        }
        let all = series(&rows);
        let c = causes(&all, &times, (10.0, 14.0), (0.0, 29.0));
        let moved: Vec<(&str, &str, &Moved)> = c
            .iter()
            .map(|c| (c.source.as_str(), c.counter.as_str(), &c.moved))
            .collect();
        assert_eq!(
            moved,
            [
                (
                    "gpu3",
                    "throttle.hw_slowdown",
                    &Moved::Reported(vec!["HW slowdown".into()])
                ),
                ("gpu5.nvlink3", "nvlink.replay", &Moved::Counted(160.0)),
                (
                    "gpu3",
                    "sm_clock_mhz",
                    &Moved::Changed {
                        from: 1980.0,
                        to: 1275.0
                    }
                ),
            ]
        );
        // A window without a dip: nothing moved.
        assert!(causes(&all, &times, (20.0, 24.0), (0.0, 29.0)).is_empty());
    }
}
