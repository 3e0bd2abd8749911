//! Counters that explain a dip, read beside the traffic (`Sampler::sample`, once per
//! soak interval, on the soak's own thread) and once by `doctor`: the GPUs' through
//! NVML (`nvml`), InfiniBand/RoCE ports' and Ethernet NICs' error counters from sysfs
//! and the host's CPU load and frequency from /proc and /sys (`files`), every file
//! read through `Root` so that tests make a port count errors in a tree of their own.
//! A counter that cannot be read is said once (`Sampler::notes`), never an error.

use std::collections::BTreeSet;

use super::Root;

pub mod files;
pub mod nvml;
pub mod reading;

pub use nvml::THROTTLE_REASONS;
pub use reading::{source_words, Kind, Reading};

/// Reads every counter this machine has, again and again.
pub struct Sampler {
    root: Root,
    nvml: Option<nvml::Nvml>,
    host: files::HostCpu,
    /// What could not be read, each said once.
    notes: BTreeSet<String>,
    fresh: Vec<String>,
}

impl Sampler {
    /// A sampler of `root`'s files; with `gpus`, NVML's counters too (on the real
    /// machine), of the GPUs with the PCI bus ids `only` where given. The CPU time
    /// of this process and its descendants (the ranks) is the measurement's own:
    /// the rest is other processes' load.
    pub fn new(root: Root, gpus: bool, only: Option<Vec<String>>) -> Sampler {
        let mut notes = BTreeSet::new();
        let nvml = if gpus && root.is_real() {
            match nvml::Nvml::open(only.as_deref()) {
                Ok(n) => {
                    for id in &n.unseen {
                        notes.insert(format!(
                            "GPU {id}: NVML cannot open it from this process (a device cgroup?): its counters are not read"
                        ));
                    }
                    Some(n)
                }
                Err(e) => {
                    notes.insert(format!("no GPU counters: NVML: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let fresh = notes.iter().cloned().collect();
        Sampler {
            host: files::HostCpu::new(vec![std::process::id()]),
            root,
            nvml,
            notes,
            fresh,
        }
    }

    /// The measurement's processes are `pids` and their descendants (the ranks'
    /// `run` processes of a node), not only this one.
    pub fn owning(mut self, pids: Vec<u32>) -> Sampler {
        self.host = files::HostCpu::new(pids);
        self
    }

    /// Every counter now.
    pub fn sample(&mut self) -> Vec<Reading> {
        let mut out = Vec::new();
        let mut missing = Vec::new();
        if let Some(n) = &mut self.nvml {
            out.extend(n.read());
        }
        out.extend(files::ports(&self.root, &mut missing));
        out.extend(files::nics(&self.root, &mut missing));
        out.extend(self.host.read(&self.root, &mut missing));
        for m in missing {
            if self.notes.insert(m.clone()) {
                self.fresh.push(m);
            }
        }
        out
    }

    /// What could not be read since the last call, each thing once per sampler.
    pub fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.fresh)
    }
}
