//! Measuring until settled. At each look of the plan's design (`stats::change::looks`),
//! every config of a rank count is decided against the block's baseline config
//! (`default`, else the first), collective by collective, over the rounds so far:
//! one decision of the model at the whole pair's family level (`stats::change`).
//! With `--baseline FILE` every group is also decided against that baseline, as
//! `check` will (the gate). A group stops once every decision it is part of is
//! settled: every case slower, faster or within, or not settled where even the most
//! rounds would leave it so. The baseline config goes on while a config compared
//! with it does, so that every pair keeps its rounds side by side. The rounds each
//! group took, and why it stopped, go to the manifest (`group_rounds`).

use anyhow::Result;

use super::{Orchestrator, Takes};
use crate::analysis::baseline::CaseId;
use crate::model::GroupRounds;
use crate::report::decision::{group_stop, PairEnd, Stop};
use crate::stats::change::{self, Change, Decision, Design, Evidence, Input};
use crate::sweep::plan::Group;
use crate::sweep::rounds::combine;

/// The config the others are compared with, where a block has it.
const BASELINE: &str = "default";

/// For each group of a block, the group it is compared with: the baseline config's
/// of the same collective; None for that group itself.
pub(super) fn partners(block: &[Group]) -> Vec<Option<usize>> {
    block
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let same = |h: &Group| h.collective == g.collective;
            let base = block
                .iter()
                .position(|h| same(h) && h.config.name == BASELINE)
                .or_else(|| block.iter().position(same))?;
            (base != i).then_some(base)
        })
        .collect()
}

/// A pair's cases while it measures, each size's rounds side by side (`rounds`: the
/// base's and the candidate's round medians so far). The flags of the quality rules
/// come when a case is combined, after its last round.
fn paired_inputs(
    sizes: &[u64],
    rounds: impl Fn(u64) -> Option<(Vec<f64>, Vec<f64>)>,
) -> Vec<Input> {
    sizes
        .iter()
        .filter_map(|&bytes| {
            let (base, cand) = rounds(bytes)?;
            Some(Input {
                evidence: Evidence::Measured(change::paired(&base, &cand)?),
                flagged: false,
            })
        })
        .collect()
}

/// A group's pair once it is done measuring.
enum Done {
    /// Settled against the group at this index.
    Against(usize, Decision),
    Alone,
    PartnersStopped,
}

impl Done {
    fn decision(&self) -> Option<&Decision> {
        match self {
            Done::Against(_, d) => Some(d),
            _ => None,
        }
    }

    fn end<'a>(&'a self, block: &'a [Group]) -> PairEnd<'a> {
        match self {
            Done::Against(b, d) => PairEnd::Against(&block[*b].config.name, d),
            Done::Alone => PairEnd::Alone,
            Done::PartnersStopped => PairEnd::PartnersStopped,
        }
    }
}

/// Whether a decision that may stop left cases not settled.
fn open(d: &Decision) -> bool {
    d.count(Change::NotSettled) > 0
}

impl Orchestrator<'_> {
    /// The design a pair is decided at.
    fn pair_design(&self) -> Design {
        let looks = self.manifest.looks.len().max(1);
        Design::new(change::DEFAULT_THRESHOLD, looks)
    }

    /// The pair (`g` against its partner `b`) over the rounds so far.
    fn pair_decision(
        &self,
        block: &[Group],
        firsts: &[Takes],
        g: usize,
        b: usize,
        family: usize,
    ) -> Decision {
        let inputs = paired_inputs(&block[g].sizes, |bytes| {
            let base = firsts[b].book.medians(&self.key(&block[b], bytes))?;
            Some((base, firsts[g].book.medians(&self.key(&block[g], bytes))?))
        });
        change::decide_in(&inputs, &self.pair_design(), family)
    }

    /// The gate's decision on group `g` over the rounds so far; `None` without
    /// `--baseline` or where the baseline has none of its cases.
    fn gate_decision(&self, group: &Group, takes: &Takes) -> Option<Decision> {
        let gate = self.gate.as_ref()?;
        let cases: Vec<(CaseId, Vec<f64>)> = group
            .sizes
            .iter()
            .filter_map(|&bytes| {
                let key = self.key(group, bytes);
                Some((CaseId::of_key(&key), takes.book.medians(&key)?))
            })
            .collect();
        gate.look(&cases, self.manifest.looks.len().max(1))
    }

    /// One look after `round`: the groups whose every decision is settled stop.
    /// `family`: the cases a pair's family has over the whole sweep.
    pub(super) fn look(
        &mut self,
        block: &[Group],
        firsts: &mut [Takes],
        going: &mut [bool],
        round: u32,
        family: usize,
    ) -> Result<()> {
        let partners = partners(block);
        let most = self.rounds() as usize;
        // Each group's pair once it is done; None: measure on.
        let mut pair_done: Vec<Option<Done>> = (0..block.len()).map(|_| None).collect();
        for (i, partner) in partners.iter().enumerate() {
            let Some(b) = partner.filter(|_| going[i]) else {
                continue;
            };
            let d = self.pair_decision(block, firsts, i, b, family);
            if change::settled(&d, most) {
                pair_done[i] = Some(Done::Against(b, d));
            }
        }
        // A config compared with none, or whose every compared config is done.
        for b in 0..block.len() {
            if partners[b].is_some() || !going[b] {
                continue;
            }
            let compared: Vec<usize> = (0..block.len())
                .filter(|&i| partners[i] == Some(b))
                .collect();
            if compared
                .iter()
                .all(|&i| !going[i] || pair_done[i].is_some())
            {
                pair_done[b] = Some(if compared.is_empty() {
                    Done::Alone
                } else {
                    Done::PartnersStopped
                });
            }
        }
        let mut stops = Vec::new();
        for (i, group) in block.iter().enumerate() {
            let Some(done) = pair_done[i].as_ref().filter(|_| going[i]) else {
                continue;
            };
            let gate = self.gate_decision(group, &firsts[i]);
            if gate.as_ref().is_some_and(|d| !change::settled(d, most)) {
                continue;
            }
            let decisions = [done.decision(), gate.as_ref()];
            let decisions = decisions.iter().flatten();
            let stop = if decisions.clone().any(|d| open(d)) {
                Stop::WouldNotSettle { most }
            } else if decisions.clone().any(|d| !d.cases.is_empty()) {
                Stop::Settled
            } else {
                Stop::Stopped
            };
            let pair = done.end(block);
            stops.push((i, group_stop(&stop, round, &pair, gate.as_ref())));
        }
        for (i, why) in stops {
            going[i] = false;
            self.stop_group(&block[i], &mut firsts[i], round, why)?;
        }
        Ok(())
    }

    /// A group stops after `round`: its cases are combined from the rounds they
    /// have, and the rounds it will not run are done for the progress.
    fn stop_group(
        &mut self,
        group: &Group,
        takes: &mut Takes,
        round: u32,
        why: String,
    ) -> Result<()> {
        let pending = takes.book.take_where(|_| true);
        let left = u64::from(takes.rounds.saturating_sub(round));
        self.observer.measured(pending.len() as u64 * left);
        for rounds in pending {
            self.keep(combine(rounds), takes)?;
        }
        self.group_rounds(group, round, why);
        Ok(())
    }

    /// The groups that went on to the last round, measuring until settled: each
    /// pair as its last round leaves it.
    pub(super) fn record_last_rounds(
        &mut self,
        block: &[Group],
        firsts: &[Takes],
        going: &[bool],
        (rounds, family): (u32, usize),
    ) -> Result<()> {
        if self.manifest.looks.is_empty() {
            return Ok(());
        }
        let partners = partners(block);
        for (i, group) in block.iter().enumerate().filter(|&(i, _)| going[i]) {
            let Some(b) = partners[i] else {
                let why = group_stop(&Stop::AllRounds, rounds, &PairEnd::PartnerWentOn, None);
                self.group_rounds(group, rounds, why);
                continue;
            };
            let rounds_of = |takes: &Takes, bytes: u64| {
                let m = takes.taken.iter().find(|m| m.result.key.bytes == bytes)?;
                Some(m.result.round_p50_us.clone())
            };
            let inputs = paired_inputs(&group.sizes, |bytes| {
                Some((rounds_of(&firsts[b], bytes)?, rounds_of(&firsts[i], bytes)?))
            });
            let d = change::decide_in(&inputs, &self.pair_design(), family);
            let stop = if open(&d) {
                Stop::NotSettledAtMost
            } else if d.cases.is_empty() {
                Stop::AllRounds
            } else {
                Stop::Settled
            };
            let pair = PairEnd::Against(&block[b].config.name, &d);
            let why = group_stop(&stop, rounds, &pair, None);
            self.group_rounds(group, rounds, why);
        }
        Ok(())
    }

    fn group_rounds(&mut self, group: &Group, rounds: u32, why: String) {
        let label = crate::ops::collective::labelled(&group.config.name, group.collective.name());
        self.observer
            .note(&format!("{label} n={}: {why}", group.nranks));
        self.manifest.group_rounds.push(GroupRounds {
            config: group.config.name.clone(),
            collective: group.collective,
            nranks: group.nranks,
            rounds,
            why,
        });
    }
}
