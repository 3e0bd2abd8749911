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
