//! Counting a job's calls once when every rank records them: each source (a rank, or
//! a communicator's process) counts its calls per (collective, ranks, size), and the
//! job made as many of each as the source that recorded the most (a source whose file
//! ends early, or that sat out a sub-group, counts fewer).

use std::collections::BTreeMap;

use crate::ops::collective::Collective;

/// (collective, the communicator's ranks, nccl-tests size).
pub type Key = (Collective, u32, u64);

/// One (collective, ranks, nccl-tests size) and its calls.
pub type Calls = (Collective, u32, u64, u64);

/// Calls per source and key -> calls per key, the most any source recorded.
pub fn busiest<S>(per_source: &BTreeMap<S, BTreeMap<Key, u64>>) -> Vec<Calls> {
    let mut most: BTreeMap<Key, u64> = BTreeMap::new();
    for calls in per_source.values() {
        for (key, n) in calls {
            let m = most.entry(*key).or_default();
            *m = (*m).max(*n);
        }
    }
    most.into_iter()
        .map(|((collective, nranks, bytes), calls)| (collective, nranks, bytes, calls))
        .collect()
}
