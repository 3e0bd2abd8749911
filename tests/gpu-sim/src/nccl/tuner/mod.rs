//! Which algorithm an all-reduce runs, as NCCL's tuner decides: the one its model
//! gives the least time among those `NCCL_ALGO` allows and the machine supports.
//! The stand-in knows two: the ring (Tree is modelled as the ring) and NVLink SHARP
//! (NVLS), which only NVSwitch machines with multicast have.

use crate::env;
use crate::topo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Ring,
    Nvls,
}

/// The algorithms `NCCL_ALGO` allows: a list of names, or `^` and the names it
/// excludes; unset allows all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Algos {
    pub ring: bool,
    pub nvls: bool,
}

impl Algos {
    pub fn from_env() -> Algos {
        match env("NCCL_ALGO") {
            Some(v) => Algos::parse(&v),
            None => Algos {
                ring: true,
                nvls: true,
            },
        }
    }

    pub fn parse(text: &str) -> Algos {
        let (exclude, list) = match text.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let named = |want: &[&str]| {
            list.split(',')
                .map(|n| n.trim().to_ascii_lowercase())
                .any(|n| want.contains(&n.as_str()))
        };
        let ring = named(&["ring", "tree"]);
        let nvls = named(&["nvls", "nvlstree"]);
        Algos {
            ring: ring != exclude,
            nvls: nvls != exclude,
        }
    }
}

/// What the tuner works from.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    /// The ring's slowest step (latency, bandwidth); `None` on one rank.
    pub ring: Option<(f64, f64)>,
    /// NVLS set up for this communicator.
    pub nvls: bool,
    pub allowed: Algos,
}

/// The algorithm for an all-reduce of `bytes` on `nranks`; `None` when what
/// `NCCL_ALGO` allows is not available here.
pub fn choose(m: &Machine, bytes: u64, nranks: u32) -> Option<Algo> {
    let mut options = Vec::new();
    if m.allowed.ring {
        options.push(Algo::Ring);
    }
    if m.allowed.nvls && m.nvls {
        options.push(Algo::Nvls);
    }
    options
        .into_iter()
        .min_by(|a, b| cost_ns(m, *a, bytes, nranks).total_cmp(&cost_ns(m, *b, bytes, nranks)))
}

/// Device time of the all-reduce with `algo`.
pub fn cost_ns(m: &Machine, algo: Algo, bytes: u64, nranks: u32) -> f64 {
    match algo {
        Algo::Ring => topo::all_reduce_ns(m.ring, bytes, nranks),
        Algo::Nvls => topo::nvls_all_reduce_ns(bytes, nranks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_algo_lists_and_exclusions() {
        assert_eq!(
            Algos::parse("Ring"),
            Algos {
                ring: true,
                nvls: false
            }
        );
        assert_eq!(
            Algos::parse("NVLS,NVLSTree"),
            Algos {
                ring: false,
                nvls: true
            }
        );
        assert_eq!(
            Algos::parse("^NVLS"),
            Algos {
                ring: true,
                nvls: false
            }
        );
        assert_eq!(
            Algos::parse("tree,nvls"),
            Algos {
                ring: true,
                nvls: true
            }
        );
    }

    #[test]
    fn nvls_takes_the_large_all_reduces_of_eight_gpus() {
        let m = Machine {
            ring: Some((1_000.0, 370.0)),
            nvls: true,
            allowed: Algos::parse("ring,nvls"),
        };
        assert_eq!(choose(&m, 8, 8), Some(Algo::Ring));
        assert_eq!(choose(&m, 256 << 10, 8), Some(Algo::Ring));
        assert_eq!(choose(&m, 1 << 20, 8), Some(Algo::Nvls));
        assert_eq!(choose(&m, 1 << 30, 8), Some(Algo::Nvls));
        let off = Machine { nvls: false, ..m };
        assert_eq!(choose(&off, 1 << 30, 8), Some(Algo::Ring));
        let nvls_only = Machine {
            allowed: Algos::parse("NVLS"),
            ..off
        };
        assert_eq!(choose(&nvls_only, 1 << 30, 8), None);
        // At 4 GiB the bus bandwidths are the published ones: ring ~370, NVLS ~480.
        let busbw = |algo| {
            let t = cost_ns(&m, algo, 4 << 30, 8);
            (4u64 << 30) as f64 / t * 2.0 * 7.0 / 8.0
        };
        assert!(
            (busbw(Algo::Ring) - 370.0).abs() < 2.0,
            "{}",
            busbw(Algo::Ring)
        );
        assert!(
            (busbw(Algo::Nvls) - 480.0).abs() < 2.0,
            "{}",
            busbw(Algo::Nvls)
        );
    }
}
