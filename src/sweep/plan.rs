//! The order in which cases run. GPU counts are the outer loop, then collectives, and
//! configurations the inner one, so that the configurations being compared at one
//! rank count run close together in time (machine drift affects them alike). Each
//! (count, collective, config) is a group: one set of worker processes per round runs
//! every size, and the rounds of one rank count's groups interleave
//! (`sweep::rounds`).
//!
//! Each group's sizes are nccl-tests' for its collective (`Collective::counts`): an
//! asked size whose per-rank chunk rounds down to nothing is no case of that
//! collective; the plan says which ([`Plan::not_run`]), and the manifest keeps it.

use crate::config::{SweepSettings, TransportConfig};
use crate::ops::collective::Collective;
use crate::units::Bytes;

/// One set of worker processes: a configuration at a rank count, for one collective.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub config: TransportConfig,
    pub nranks: u32,
    pub collective: Collective,
    /// The sizes it runs: nccl-tests' `size` of each asked size, without repeats.
    pub sizes: Vec<u64>,
    /// The asked sizes that hold no whole element per rank for this collective.
    pub empty: Vec<u64>,
}

impl Group {
    /// A group with the sizes nccl-tests would run for `asked` (`element`-byte
    /// elements).
    pub fn new(
        config: TransportConfig,
        nranks: u32,
        collective: Collective,
        asked: &[u64],
        element: u64,
    ) -> Group {
        let mut sizes: Vec<u64> = Vec::new();
        let mut empty = Vec::new();
        for &bytes in asked {
            match collective
                .counts(bytes, element, nranks)
                .size_bytes(element)
            {
                0 => empty.push(bytes),
                size if !sizes.contains(&size) => sizes.push(size),
                _ => {}
            }
        }
        Group {
            config,
            nranks,
            collective,
            sizes,
            empty,
        }
    }

    /// The stem of its processes' log files: `<config>.n<count>`, with the collective
    /// after the config where it is not all_reduce.
    pub fn stem(&self) -> String {
        match self.collective {
            Collective::AllReduce => format!("{}.n{}", self.config.name, self.nranks),
            c => format!("{}.{c}.n{}", self.config.name, self.nranks),
        }
    }

    /// Why the asked sizes in `empty` are not run (`None` when every size runs).
    pub fn empty_reason(&self) -> Option<String> {
        let (first, last) = (self.empty.first()?, self.empty.last()?);
        let sizes = if first == last {
            Bytes(*first).to_string()
        } else {
            format!("{} to {}", Bytes(*first), Bytes(*last))
        };
        Some(format!(
            "{}: {sizes} split over {} ranks leaves no element per rank (nccl-tests rounds each rank's part down to a multiple of 16 bytes): not run",
            self.collective, self.nranks
        ))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub groups: Vec<Group>,
    /// The sizes asked for (each group runs its collective's rounding of them).
    pub sizes: Vec<u64>,
}

impl Plan {
    pub fn new(settings: &SweepSettings) -> Plan {
        let pairs: Vec<(TransportConfig, u32)> = settings
            .gpu_counts
            .iter()
            .flat_map(|&n| settings.configs.iter().map(move |c| (c.clone(), n)))
            .collect();
        Plan::of(pairs, settings)
    }

    /// Every (config, rank count) in the order given, once per collective of the
    /// settings: collectives outside configs, within one rank count.
    pub fn of(pairs: Vec<(TransportConfig, u32)>, settings: &SweepSettings) -> Plan {
        let element = settings.dtype.size() as u64;
        let mut groups = Vec::new();
        for same_count in pairs.chunk_by(|a, b| a.1 == b.1) {
            for &collective in &settings.collectives {
                for (config, nranks) in same_count {
                    let (config, nranks) = (config.clone(), *nranks);
                    let sizes = settings
                        .sizes_from
                        .as_ref()
                        .and_then(|f| f.sizes.get(&collective))
                        .unwrap_or(&settings.sizes);
                    groups.push(Group::new(config, nranks, collective, sizes, element));
                }
            }
        }
        Plan {
            groups,
            sizes: settings.sizes.clone(),
        }
    }

    /// The groups in runs of one rank count: the groups whose rounds interleave.
    pub fn blocks(&self) -> impl Iterator<Item = &[Group]> {
        self.groups.chunk_by(|a, b| a.nranks == b.nranks)
    }

    /// The plan in a sentence, for the first screen: the configs, rank counts, sizes
    /// and collectives, the cases and process groups they make, and the timing budget
    /// (`max_time` a size over all its rounds, where iterations are adaptive).
    pub fn describe(
        &self,
        rounds: u32,
        looks: &[u32],
        max_time: Option<std::time::Duration>,
    ) -> String {
        let mut configs: Vec<&str> = Vec::new();
        let mut counts: Vec<String> = Vec::new();
        let mut collectives: Vec<&str> = Vec::new();
        for g in &self.groups {
            if !configs.contains(&g.config.name.as_str()) {
                configs.push(&g.config.name);
            }
            if !counts.contains(&g.nranks.to_string()) {
                counts.push(g.nranks.to_string());
            }
            if !collectives.contains(&g.collective.name()) {
                collectives.push(g.collective.name());
            }
        }
        let mut sizes: Vec<u64> = self.groups.iter().flat_map(|g| g.sizes.clone()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let span = match sizes.as_slice() {
            [] => String::new(),
            [one] => format!(" ({})", Bytes(*one)),
            [lo, .., hi] => format!(" ({} to {})", Bytes(*lo), Bytes(*hi)),
        };
        use crate::units::plural;
        let cases = self.total_cases();
        let rounds = rounds.max(1);
        let groups = self.groups.len() as u64 * u64::from(rounds);
        // Each case's --max-time is shared among its rounds.
        let bound = max_time
            .map(|t| {
                format!(
                    "\n  time: a timing budget of {} (--max-time per size), plus warm-ups and \
                     process start-up",
                    crate::units::duration_words(t.as_secs_f64() * cases as f64),
                )
            })
            .unwrap_or_default();
        let (each, settle) = match looks {
            [first, .., _] => (
                format!("{first} to {rounds} rounds"),
                format!(
                    "\n  looks after rounds {}: a config settled against the baseline stops \
                     (--rounds N fixes them)",
                    looks[..looks.len() - 1]
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            _ => (plural(rounds as usize, "round", "rounds"), String::new()),
        };
        let most = if settle.is_empty() { "" } else { "at most " };
        format!(
            "plan: {} ({}) x {} ({}) x {}{span}\n  of {} = {}, each in {each} of fresh \
             processes ({most}{}){settle}{bound}",
            plural(configs.len(), "config", "configs"),
            configs.join(", "),
            plural(counts.len(), "rank count", "rank counts"),
            counts.join(", "),
            plural(sizes.len(), "size", "sizes"),
            collectives.join(", "),
            plural(cases as usize, "case", "cases"),
            plural(groups as usize, "process group", "process groups"),
        )
    }

    /// The rounds at which a sweep measuring until settled looks
    /// (`stats::change::looks`): none for fixed rounds (`--rounds`).
    pub fn looks(&self, settings: &SweepSettings) -> Vec<u32> {
        if !settings.until_settled() {
            return Vec::new();
        }
        crate::stats::change::looks(settings.rounds())
    }

    /// The cases of a pair of configs, over every rank count and collective (the
    /// most cases any config has): the family a pair's comparison is decided in.
    pub fn pair_cases(&self) -> usize {
        let mut per_config: Vec<(&str, usize)> = Vec::new();
        for g in &self.groups {
            match per_config.iter_mut().find(|(c, _)| *c == g.config.name) {
                Some((_, n)) => *n += g.sizes.len(),
                None => per_config.push((&g.config.name, g.sizes.len())),
            }
        }
        per_config.iter().map(|(_, n)| *n).max().unwrap_or(1)
    }

    pub fn total_cases(&self) -> u64 {
        self.groups.iter().map(|g| g.sizes.len() as u64).sum()
    }

    /// The asked sizes some collective cannot run, a line per collective and rank
    /// count (the configs share it).
    pub fn not_run(&self) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for why in self.groups.iter().filter_map(Group::empty_reason) {
            if !lines.contains(&why) {
                lines.push(why);
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str) -> TransportConfig {
        TransportConfig {
            name: name.into(),
            ..TransportConfig::default()
        }
    }

    #[test]
    fn the_plan_in_a_sentence_names_what_runs_and_bounds_the_time() {
        let groups: Vec<Group> = [2, 4]
            .iter()
            .flat_map(|&n| {
                ["default", "shm-off"].map(|c| {
                    Group::new(config(c), n, Collective::AllReduce, &[8, 1024, 1 << 20], 4)
                })
            })
            .collect();
        let plan = Plan {
            groups,
            sizes: vec![8, 1024, 1 << 20],
        };
        assert_eq!(
            plan.describe(15, &[], Some(std::time::Duration::from_secs(1))),
            "plan: 2 configs (default, shm-off) x 2 rank counts (2, 4) x 3 sizes (8 B to 1 MiB)\n  \
             of all_reduce = 12 cases, each in 15 rounds of fresh processes (60 process groups)\n  \
             time: a timing budget of 12 s (--max-time per size), plus warm-ups and process \
             start-up"
        );
        assert!(plan
            .describe(1, &[], None)
            .ends_with("= 12 cases, each in 1 round of fresh processes (4 process groups)"));
        let settled = plan.describe(15, &[8, 11, 15], None);
        assert!(settled.ends_with(
            "= 12 cases, each in 8 to 15 rounds of fresh processes (at most 60 process \
             groups)\n  looks after rounds 8, 11: a config settled against the baseline stops \
             (--rounds N fixes them)"
        ));
        assert!(
            settled.lines().all(|l| l.chars().count() <= 100),
            "{settled}"
        );
        assert_eq!(crate::units::duration_words(40.0), "40 s");
        assert_eq!(crate::units::duration_words(7_530.0), "2 h 6 min");
    }

    #[test]
    fn each_collective_runs_nccl_tests_sizes_and_says_which_hold_nothing() {
        let asked = [8, 16, 32, 64, 1000, 1024];
        // all_reduce runs every size asked.
        let g = Group::new(config("default"), 8, Collective::AllReduce, &asked, 4);
        assert_eq!(g.sizes, asked);
        assert!(g.empty.is_empty() && g.empty_reason().is_none());
        assert_eq!(g.stem(), "default.n8");
        // all_gather on 8 ranks: 16-byte chunks per rank, so 128 B at least; 1000 B
        // rounds down to 896 and 1024 B stays.
        let g = Group::new(config("default"), 8, Collective::AllGather, &asked, 4);
        assert_eq!(g.sizes, [896, 1024]);
        assert_eq!(g.empty, [8, 16, 32, 64]);
        assert_eq!(g.stem(), "default.all_gather.n8");
        let why = g.empty_reason().unwrap();
        assert!(
            why.starts_with("all_gather: 8 B to 64 B split over 8 ranks leaves no element"),
            "{why}"
        );
        // Two asked sizes that round alike run once.
        let g = Group::new(config("x"), 3, Collective::AllToAll, &[96, 100], 4);
        assert_eq!(g.sizes, [96]);
    }
}
