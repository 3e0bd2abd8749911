//! The decision model on constructed data, and its error rates and power on seeded
//! simulated sweeps: the claims docs/guide/statistics.md states.

use super::*;
use crate::stats::splitmix::SplitMix64;

fn near(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn t_quantiles_are_the_tables() {
    assert!(near(t_quantile(0.975, 5.0), 2.5706, 1e-3));
    assert!(near(t_quantile(0.995, 30.0), 2.7500, 1e-3));
    assert!(near(t_quantile(0.975, f64::INFINITY), 1.95996, 1e-4));
    assert!(near(t_quantile(0.025, 10.0), -2.2281, 1e-3));
}

#[test]
fn paired_rounds_give_the_mean_log_ratio_and_its_standard_error() {
    let base = [10.0, 12.0, 11.0, 9.0];
    let cand = [11.0, 13.2, 12.1, 9.9];
    let e = paired(&base, &cand).unwrap();
    assert!(near(e.log, 1.1f64.ln(), 1e-12), "{e:?}");
    assert!(e.se.unwrap() < 1e-12, "a constant ratio has no spread");
    assert_eq!((e.df, e.basis, e.cand_rounds), (3.0, Basis::Paired, 4));
    // The rounds both ran: a side that stopped earlier bounds the pair.
    assert_eq!(paired(&base, &cand[..3]).unwrap().cand_rounds, 3);
    assert!(paired(&base[..1], &cand[..1]).is_none());
    assert!(paired(&[1.0, -1.0], &[1.0, 1.0]).is_none());
}

#[test]
fn two_runs_are_welch_with_each_sides_own_spread() {
    // Base 15 rounds at 1 %, candidate 7 at 5 % (log sd): the candidate's spread
    // dominates and its 6 degrees of freedom with it.
    let mut rng = SplitMix64::new(7, 0);
    let draw = |n: usize, sd: f64, rng: &mut SplitMix64| -> Vec<f64> {
        (0..n).map(|_| (sd * rng.normal()).exp() * 100.0).collect()
    };
    let (b, c) = (draw(15, 0.01, &mut rng), draw(7, 0.05, &mut rng));
    let (lb, lc) = (Level::of_rounds(&b).unwrap(), Level::of_rounds(&c).unwrap());
    let e = between(&[lb], None, &lc).unwrap();
    let se2 = lb.var.unwrap() + lc.var.unwrap();
    assert!(near(e.se.unwrap(), se2.sqrt(), 1e-12));
    assert!(e.df > 5.0 && e.df < 9.0, "{e:?}");
    assert_eq!(e.basis, Basis::Runs);
    // One round a side: a point, no error rate.
    let p = between(
        &[Level::of_point(100.0).unwrap()],
        None,
        &Level::of_point(110.0).unwrap(),
    );
    assert_eq!(p.unwrap().basis, Basis::Point);
}

#[test]
fn a_point_is_judged_against_the_threshold_with_no_interval() {
    let design = Design::new(0.05, 1);
    let d = decide(
        &[
            Input {
                evidence: Evidence::Measured(point(100.0, 110.0).unwrap()),
                flagged: false,
            },
            Input {
                evidence: Evidence::Measured(point(100.0, 101.0).unwrap()),
                flagged: false,
            },
        ],
        &design,
    );
    assert_eq!(d.cases[0].change, Change::Slower);
    assert_eq!(d.cases[1].change, Change::Within);
    assert_eq!((d.members, d.points()), (0, 2));
    assert_eq!(d.answer, Answer::Different);
}

#[test]
fn flagged_failed_and_missing_cases_stay_in_the_family_and_refuse_within() {
    let design = Design::new(0.02, 1);
    let same = paired(
        &[10.0, 10.1, 9.9, 10.0, 10.05, 9.95],
        &[10.0, 10.1, 9.9, 10.0, 10.05, 9.95],
    );
    let e = same.unwrap();
    let measured = |flagged| Input {
        evidence: Evidence::Measured(e),
        flagged,
    };
    assert_eq!(decide(&[measured(false)], &design).answer, Answer::Within);
    let d = decide(&[measured(false), measured(true)], &design);
    assert_eq!(d.cases[1].change, Change::NotSettled);
    assert_eq!(d.answer, Answer::NotSettled);
    for other in [Evidence::Missing, Evidence::Failed] {
        let d = decide(
            &[
                measured(false),
                Input {
                    evidence: other,
                    flagged: false,
                },
            ],
            &design,
        );
        assert_ne!(d.answer, Answer::Within, "{other:?}");
        assert_eq!(d.members, 1);
    }
    // A 3x cost at a flagged case is a cost: the family says different.
    let slow = paired(
        &[10.0, 10.1, 9.9, 10.0, 10.05, 9.95],
        &[30.0, 30.3, 29.7, 30.0, 30.1, 29.9],
    );
    let d = decide(
        &[
            measured(false),
            Input {
                evidence: Evidence::Measured(slow.unwrap()),
                flagged: true,
            },
        ],
        &design,
    );
    assert_eq!(
        (d.cases[1].change, d.answer),
        (Change::Slower, Answer::Different)
    );
}

/// Rounds to settle are named up to the most a case already has: 600 rounds at the
/// threshold ask for more than 600, not a panic or "more than 100".
#[test]
fn rounds_to_settle_past_the_rounds_already_run_say_more() {
    let mut rng = SplitMix64::new(3, 0);
    let base: Vec<f64> = (0..600).map(|_| (0.05 * rng.normal()).exp()).collect();
    let cand: Vec<f64> = base
        .iter()
        .map(|b| b * 1.02 * (0.05 * rng.normal()).exp())
        .collect();
    let d = decide(&[measured(paired(&base, &cand))], &Design::new(0.02, 1));
    assert_eq!(d.answer, Answer::NotSettled, "{d:?}");
    assert_eq!(most_rounds(&d.cases), 600);
    let r = d.rounds_to_settle.unwrap();
    assert!(r > 600, "{r}");
    // Few rounds: named up to MOST_ROUNDS.
    let d = decide(
        &[measured(paired(&base[..6], &cand[..6]))],
        &Design::new(0.02, 1),
    );
    assert!(d.rounds_to_settle.unwrap() <= MOST_ROUNDS + 1);
}

#[test]
fn looks_are_spread_from_the_first_to_the_most() {
    assert_eq!(looks(15), vec![6, 8, 11, 15]);
    assert_eq!(looks(9), vec![6, 9]);
    assert_eq!(looks(10), vec![6, 8, 10]);
    assert_eq!(looks(7), vec![7]);
    assert_eq!(looks(1), vec![1]);
    assert_eq!(looks(30), vec![6, 10, 18, 30]);
}

/// A simulated sweep's rounds: `k` cases, each round a process group whose speed
/// moves every case alike (sd `group`), each case its own noise (sd `own`), the
/// candidate `change` slower in log terms at every case.
struct Sim {
    k: usize,
    group: f64,
    own: f64,
    change: f64,
}

impl Sim {
    /// Round medians of base and candidate, `n` rounds side by side.
    fn paired(&self, n: usize, rng: &mut SplitMix64) -> Vec<(Vec<f64>, Vec<f64>)> {
        let groups: Vec<(f64, f64)> = (0..n)
            .map(|_| (self.group * rng.normal(), self.group * rng.normal()))
            .collect();
        (0..self.k)
            .map(|_| {
                let base = groups
                    .iter()
                    .map(|g| (g.0 + self.own * rng.normal()).exp())
                    .collect();
                let cand = groups
                    .iter()
                    .map(|g| (g.1 + self.change + self.own * rng.normal()).exp())
                    .collect();
                (base, cand)
            })
            .collect()
    }
}

fn measured(e: Option<Estimate>) -> Input {
    Input {
        evidence: e.map_or(Evidence::Missing, Evidence::Measured),
        flagged: false,
    }
}

/// A sweep measuring until settled: at each look, stop once every case is settled
/// or futile; the decision at the look that stopped it.
fn sequential(sim: &Sim, most: u32, design: &Design, rng: &mut SplitMix64) -> Decision {
    let rounds = sim.paired(most as usize, rng);
    let at = looks(most);
    let design = Design {
        looks: at.len(),
        ..*design
    };
    for &n in &at {
        let n = n as usize;
        let inputs: Vec<Input> = rounds
            .iter()
            .map(|(b, c)| measured(paired(&b[..n], &c[..n])))
            .collect();
        let d = decide(&inputs, &design);
        if settled(&d, most as usize) || n == most as usize {
            return d;
        }
    }
    unreachable!("the last look decides")
}

/// The claim under test: a config exactly at the threshold (2 % slower at every
/// size) is called slower in at most 5 % of sweeps, measured until settled.
#[test]
fn a_change_at_the_threshold_is_called_slower_in_at_most_5_percent_of_sweeps() {
    let mut rng = SplitMix64::new(1, 1);
    let design = Design::new(0.02, 1);
    let sim = Sim {
        k: 13,
        group: 0.01,
        own: 0.003,
        change: 0.02f64.ln_1p(),
    };
    let sweeps = 2000;
    let slower = (0..sweeps)
        .filter(|_| sequential(&sim, 15, &design, &mut rng).count(Change::Slower) > 0)
        .count();
    assert!(slower * 20 <= sweeps, "{slower} of {sweeps}");
}

/// A/A: identical configs are never called different beyond the family's rate.
#[test]
fn identical_configs_differ_in_at_most_5_percent_of_sweeps() {
    let mut rng = SplitMix64::new(2, 2);
    let design = Design::new(0.02, 1);
    let sim = Sim {
        k: 13,
        group: 0.03,
        own: 0.01,
        change: 0.0,
    };
    let sweeps = 2000;
    let different = (0..sweeps)
        .filter(|_| sequential(&sim, 15, &design, &mut rng).answer == Answer::Different)
        .count();
    assert!(different * 20 <= sweeps, "{different} of {sweeps}");
}

/// The family is what holds the rate at the threshold where the cases move on
/// their own: 13 independent cases exactly 2 % slower are called slower somewhere
/// in at most 5 % of sweeps, where each case decided at its own 95 % would be in
/// far more.
#[test]
fn the_family_holds_the_rate_over_independent_cases() {
    let sim = Sim {
        k: 13,
        group: 0.0,
        own: 0.01,
        change: 0.02f64.ln_1p(),
    };
    let sweeps = 2000;
    let rate = |design: Design| {
        let mut rng = SplitMix64::new(6, 6);
        (0..sweeps)
            .filter(|_| sequential(&sim, 15, &design, &mut rng).count(Change::Slower) > 0)
            .count()
    };
    let design = Design::new(0.02, 1);
    let family = rate(design);
    assert!(family * 20 <= sweeps, "{family} of {sweeps}");
    let alone = rate(Design {
        alpha: 0.05 * 13.0,
        ..design
    });
    assert!(
        alone * 20 > sweeps,
        "without the family: {alone} of {sweeps}"
    );
}

/// Spending alpha over the looks is what keeps a sequential sweep's rate: one case
/// at the threshold, looked at four times, each look at the full rate, is called
/// slower more often than the rate; at alpha / L it is not.
#[test]
fn the_looks_share_the_rate() {
    let sim = Sim {
        k: 1,
        group: 0.01,
        own: 0.0,
        change: 0.02f64.ln_1p(),
    };
    let count = |design: Design, spend: bool| {
        let mut rng = SplitMix64::new(3, 3);
        let runs = 20_000;
        let slower = (0..runs)
            .filter(|_| {
                let rounds = sim.paired(15, &mut rng);
                let at = looks(15);
                let d = Design {
                    looks: if spend { at.len() } else { 1 },
                    ..design
                };
                at.iter().any(|&n| {
                    let n = n as usize;
                    let (b, c) = &rounds[0];
                    let e = paired(&b[..n], &c[..n]);
                    decide(&[measured(e)], &d).count(Change::Slower) > 0
                })
            })
            .count();
        slower as f64 / runs as f64
    };
    let design = Design {
        alpha: 0.1,
        ..Design::new(0.02, 1)
    };
    let spent = count(design, true);
    let not = count(design, false);
    // One-sided, each look's lower end at alpha / 2 (a case inside the band may be
    // called either way): at most 5 % over the looks when spent.
    assert!(spent <= 0.05, "{spent}");
    assert!(not > 0.06, "{not}");
}

/// Coverage over at least 2,000 families with unequal spreads and counts between
/// runs: every case's interval at the family's level holds at once in at least
/// 95 % of families (within the simulation's error); pooling the two runs' variances
/// (no Welch term) would not.
#[test]
fn welch_intervals_cover_with_unequal_spreads_and_counts() {
    let mut rng = SplitMix64::new(4, 4);
    let design = Design::new(0.02, 1);
    let families = 2000;
    let k = 13;
    let truth = 0.03f64.ln_1p();
    let (mut covered, mut pooled_covered) = (0, 0);
    for _ in 0..families {
        let mut all = true;
        let mut pooled_all = true;
        let mut inputs = Vec::new();
        let mut pooled = Vec::new();
        for _ in 0..k {
            let b: Vec<f64> = (0..15).map(|_| (0.01 * rng.normal()).exp()).collect();
            let c: Vec<f64> = (0..7)
                .map(|_| (truth + 0.05 * rng.normal()).exp())
                .collect();
            let (lb, lc) = (Level::of_rounds(&b).unwrap(), Level::of_rounds(&c).unwrap());
            let e = between(&[lb], None, &lc).unwrap();
            inputs.push(measured(Some(e)));
            // Pooled variance, n + m - 2 degrees of freedom.
            let (vb, vc) = (lb.var.unwrap() * 15.0, lc.var.unwrap() * 7.0);
            let sp = (14.0 * vb + 6.0 * vc) / 20.0;
            pooled.push(measured(Some(Estimate {
                se: Some((sp * (1.0 / 15.0 + 1.0 / 7.0)).sqrt()),
                df: 20.0,
                ..e
            })));
        }
        for (d, all) in [
            (decide(&inputs, &design), &mut all),
            (decide(&pooled, &design), &mut pooled_all),
        ] {
            *all = d.cases.iter().all(|c| {
                let (lo, hi) = c.interval.unwrap();
                (lo.ln_1p()..=hi.ln_1p()).contains(&truth)
            });
        }
        covered += usize::from(all);
        pooled_covered += usize::from(pooled_all);
    }
    let rate = covered as f64 / families as f64;
    let pooled_rate = pooled_covered as f64 / families as f64;
    // 95 % over 2,000 families: a standard error of 0.5 %. Welch is a little
    // liberal this far in the tails with spreads this unequal (94.0 to 95.1 % over
    // five seeds); pooling the variances covers 44 %.
    assert!(rate >= 0.93, "Welch: {rate}");
    assert!(pooled_rate < 0.6, "pooled: {pooled_rate}");
}

/// Power: a config 10 % slower, process groups 1 % apart, is found at every case
/// in at least 95 % of sweeps.
#[test]
fn a_config_10_percent_slower_is_found_at_every_case() {
    let mut rng = SplitMix64::new(5, 5);
    let design = Design::new(0.02, 1);
    let sim = Sim {
        k: 13,
        group: 0.01,
        own: 0.003,
        change: 0.10f64.ln_1p(),
    };
    let sweeps = 500;
    let found = (0..sweeps)
        .filter(|_| sequential(&sim, 15, &design, &mut rng).count(Change::Slower) == 13)
        .count();
    assert!(found * 100 >= 95 * sweeps, "{found} of {sweeps}");
}
