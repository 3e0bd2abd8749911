//! Measuring until settled. At each look (`analysis::family::looks`), every config
//! of a rank count is compared with the block's baseline config (`default`, else the
//! first), collective by collective, over the rounds so far: its cases' intervals
//! together at their share of the family's rate (its planned cases and looks), the
//! pair settled when every case is decided, or when some case is beyond the noise
//! band and no undecided one looks beyond it where the rounds left could show it
//! (`family::settled_at`); also when it is not settled and, by the rounds' spread,
//! would not be by the last round. A config that stops has its cases combined from the
//! rounds they have. The baseline goes on while a config compared with it does, so that every pair
//! keeps its rounds side by side. The rounds each group took, and why it stopped,
//! go to the manifest (`group_rounds`).

use anyhow::Result;

use super::{Orchestrator, Takes};
use crate::analysis::family::{self, Answer, Member};
use crate::model::GroupRounds;
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

/// Why a pair stops at `round` of the `most`, in words.
fn why_stopped(
    answer: &Answer,
    cases: usize,
    base: &str,
    threshold: f64,
    (round, most): (u32, usize),
) -> String {
    let band = format!("+-{:.1}%", threshold * 100.0);
    let what = match answer {
        Answer::NotSettled { rounds } => {
            let needed = match rounds {
                Some(r) if *r <= family::MOST_ROUNDS => format!("about {r} rounds"),
                _ => format!("more than {} rounds", family::MOST_ROUNDS),
            };
            return format!(
                "stopped after {round} rounds, not settled against {base}: settling it within \
                 {band} would take {needed}, far more than the most ({most}, --max-rounds)"
            );
        }
        Answer::Empty => "no case measured in every round".to_string(),
        Answer::Equivalent => format!("within {band} of {base} at all {cases} cases"),
        Answer::Different { slower, faster } => {
            let mut parts = Vec::new();
            if *slower > 0 {
                parts.push(format!("slower than {base} beyond {band} at {slower}"));
            }
            if *faster > 0 {
                parts.push(format!("faster than {base} beyond {band} at {faster}"));
            }
            format!("{} of {cases} cases", parts.join(" and "))
        }
    };
    format!("settled after {round} rounds: {what}")
}

impl Orchestrator<'_> {
    /// One look after `round`: the groups whose comparison is settled stop, and a
    /// baseline whose every compared config stopped. `family`: the cases a pair's
    /// family has over the whole sweep.
    pub(super) fn look(
        &mut self,
        block: &[Group],
        firsts: &mut [Takes],
        going: &mut [bool],
        round: u32,
        family: usize,
    ) -> Result<()> {
        let partners = partners(block);
        let looks = self.manifest.looks.len().max(1);
        // Each pair's cases get their share of the family's rate at each look.
        let share = |cases: usize| {
            family::FAMILY_ALPHA * cases as f64 / (family.max(cases).max(1) * looks) as f64
        };
        let threshold = crate::stats::compare::DEFAULT_THRESHOLD;
        let mut stops: Vec<(usize, String)> = Vec::new();
        for (i, g) in block.iter().enumerate() {
            let Some(b) = partners[i].filter(|_| going[i]) else {
                continue;
            };
            // The cases both sides measured in every round so far.
            let sides: Vec<(Vec<f64>, Vec<f64>)> = g
                .sizes
                .iter()
                .filter_map(|&bytes| {
                    let base = firsts[b].book.medians(&self.key(&block[b], bytes))?;
                    let cand = firsts[i].book.medians(&self.key(g, bytes))?;
                    (base.len() == cand.len()).then_some((base, cand))
                })
                .collect();
            let members: Vec<Member> = sides
                .iter()
                .map(|(base, cand)| Member {
                    base,
                    cand,
                    paired: true,
                })
                .collect();
            let base = &block[b].config.name;
            let most = self.manifest.looks.last().copied().unwrap_or(round) as usize;
            let alpha = share(members.len());
            let own = family::own_alpha(family::FAMILY_ALPHA, looks);
            let at = family::settled_at(&members, threshold, threshold, alpha, own, most);
            if let Some(answer) = at {
                let why = why_stopped(&answer, members.len(), base, threshold, (round, most));
                stops.push((i, why));
            }
        }
        for (i, why) in stops {
            going[i] = false;
            self.stop_group(&block[i], &mut firsts[i], round, why)?;
        }
        for b in 0..block.len() {
            let compared: Vec<usize> = (0..block.len())
                .filter(|&i| partners[i] == Some(b))
                .collect();
            if going[b] && !compared.is_empty() && compared.iter().all(|&i| !going[i]) {
                going[b] = false;
                let why =
                    format!("stopped after {round} rounds: every config compared with it stopped");
                self.stop_group(&block[b], &mut firsts[b], round, why)?;
            }
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

    /// The groups that went on to the last round, measuring until settled.
    pub(super) fn record_last_rounds(
        &mut self,
        block: &[Group],
        going: &[bool],
        rounds: u32,
    ) -> Result<()> {
        if self.manifest.looks.is_empty() {
            return Ok(());
        }
        let partners = partners(block);
        for (i, group) in block.iter().enumerate().filter(|&(i, _)| going[i]) {
            let compared = partners.contains(&Some(i));
            let why = match partners[i] {
                Some(b) => format!(
                    "not settled against {} after {rounds} rounds, the most (--max-rounds)",
                    block[b].config.name
                ),
                None if compared => {
                    format!("all {rounds} rounds: a config compared with it was not settled")
                }
                None => format!("all {rounds} rounds: no config to compare it with"),
            };
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
