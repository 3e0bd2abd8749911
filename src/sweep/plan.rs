//! The order in which cases run. GPU counts are the outer loop and configurations the
//! inner one, so that the configurations being compared at one rank count run close
//! together in time (machine drift affects them alike). Each (count, config) pair is
//! a group: one set of worker processes per round runs every size, and the rounds of
//! one rank count's groups interleave (`sweep::rounds`).

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

    /// The groups in runs of one rank count: the groups whose rounds interleave.
    pub fn blocks(&self) -> impl Iterator<Item = &[Group]> {
        self.groups.chunk_by(|a, b| a.nranks == b.nranks)
    }

    pub fn total_cases(&self) -> u64 {
        (self.groups.len() * self.sizes.len()) as u64
    }
}
