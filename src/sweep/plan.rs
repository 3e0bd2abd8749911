//! The order in which cases run. GPU counts are the outer loop and configurations the
//! inner one, so that the configurations being compared at one rank count run close
//! together in time (machine drift affects them alike). Each (count, config) pair is
//! one group of worker processes that runs every size.

use crate::config::{SweepSettings, TransportConfig};

/// One set of worker processes: a configuration at a rank count.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub config: TransportConfig,
    pub nranks: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub groups: Vec<Group>,
    pub sizes: Vec<u64>,
}

impl Plan {
    pub fn new(settings: &SweepSettings) -> Plan {
        let mut groups = Vec::new();
        for &nranks in &settings.gpu_counts {
            for config in &settings.configs {
                groups.push(Group {
                    config: config.clone(),
                    nranks,
                });
            }
        }
        Plan {
            groups,
            sizes: settings.sizes.clone(),
        }
    }

    pub fn total_cases(&self) -> u64 {
        (self.groups.len() * self.sizes.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(args: &[&str]) -> SweepSettings {
        let mut argv = vec!["nccl-bench", "sweep"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Sweep(a) => SweepSettings::from_args(&a).unwrap(),
            _ => unreachable!("parsed as sweep"),
        }
    }

    #[test]
    fn defaults_plan_the_shm_decision_sweep() {
        let s = settings(&[]);
        assert_eq!(s.sizes.first(), Some(&8));
        assert_eq!(s.sizes.last(), Some(&(128 << 20)));
        assert_eq!(s.sizes.len(), 25);
        assert_eq!(s.gpu_counts, [2]);
        let plan = Plan::new(&s);
        let names: Vec<&str> = plan.groups.iter().map(|g| g.config.name.as_str()).collect();
        assert_eq!(names, ["default", "shm-off", "p2p-off", "net-only"]);
        assert_eq!(plan.total_cases(), 4 * 25);
        assert!(matches!(
            s.iterations,
            crate::config::IterationPolicy::Adaptive { min_iters: 20, .. }
        ));
    }

    #[test]
    fn rank_counts_are_the_outer_loop() {
        let s = settings(&[
            "--gpus",
            "8",
            "--transports",
            "shm-off,default",
            "-b",
            "1K",
            "-e",
            "4K",
            "-n",
            "7",
        ]);
        let plan = Plan::new(&s);
        let order: Vec<(u32, &str)> = plan
            .groups
            .iter()
            .map(|g| (g.nranks, g.config.name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (2, "shm-off"),
                (2, "default"),
                (4, "shm-off"),
                (4, "default"),
                (8, "shm-off"),
                (8, "default")
            ]
        );
        assert_eq!(plan.sizes, [1024, 2048, 4096]);
        assert_eq!(plan.total_cases(), 18);
        assert_eq!(
            s.iterations,
            crate::config::IterationPolicy::Fixed { iters: 7 }
        );
    }

    #[test]
    fn a_config_file_supplies_every_entry_unless_names_pick() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\nenv = { NCCL_SHM_DISABLE = 1 }\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let all = settings(&["--config", f]);
        assert_eq!(
            all.configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        let picked = settings(&["--config", f, "--transports", "b,ib-off"]);
        assert_eq!(
            picked
                .configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["b", "ib-off"]
        );
    }
}
