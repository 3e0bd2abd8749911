//! The collectives nccl-tests measures, with nccl-tests' own semantics so that a
//! number from us and one from its `*_perf` binary on the same machine are the same
//! quantity (read from nccl-tests 2.19's `src/*.cu` and `common.cu`):
//!
//! - **Sizes.** The size asked for (`-b/-e`) is split into element counts by each
//!   test's `GetCollByteCount` ([`Collective::counts`]): per-rank chunks are
//!   `(count / nranks)` rounded down to a multiple of 16 bytes, so the size a case really moves can
//!   be a little smaller than asked. The `size` column is `max(send, recv)` bytes of
//!   one rank, as nccl-tests prints it ([`Counts::size_bytes`]).
//! - **Bandwidth.** `algbw = size / time` and `busbw = algbw x` [`Collective::bus_factor`]:
//!   2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall, gather
//!   and scatter; 1 for broadcast, reduce and sendrecv.
//! - **What each rank's output holds** ([`Collective::layout`]), for the exact check:
//!   stretches of the reduced result (ops/pattern's expected table) or of one rank's
//!   input, and for the ranks that are not the root of reduce and gather, nothing
//!   (their receive buffer is not written).
//!
//! Pure: no I/O.

use std::fmt;
use std::ops::Range;

/// A collective operation, named as nccl-tests' binaries without `_perf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    SendRecv,
    Gather,
    Scatter,
}

/// Element counts of one rank, as nccl-tests' `GetCollByteCount` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Elements each rank sends (its input buffer).
    pub send: u64,
    /// Elements each rank receives (its output buffer).
    pub recv: u64,
    /// The count passed to the NCCL call (per peer for all_gather, reduce_scatter,
    /// alltoall, gather and scatter); nccl-tests prints it as `count`.
    pub param: u64,
}

impl Counts {
    /// The `size` of the case, bytes: the larger of the two buffers of one rank.
    pub fn size_bytes(&self, element: u64) -> u64 {
        self.send.max(self.recv) * element
    }
}

/// Where a stretch of a rank's output comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The reduction of every rank's input, from this input index on.
    Reduced { from: u64 },
    /// One rank's input, from this index on.
    Input { rank: u32, from: u64 },
    /// Not written by the collective (the receive buffer of a non-root rank).
    Untouched,
}

impl Collective {
    /// Every collective, in nccl-tests' order.
    pub const ALL: [Collective; 9] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::SendRecv,
        Collective::Gather,
        Collective::Scatter,
    ];

    /// The name of nccl-tests' binary without `_perf` (`all_reduce`).
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::AllToAll => "alltoall",
            Collective::SendRecv => "sendrecv",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
        }
    }

    /// NCCL's name of the operation, as its logs write it (`AllReduce`, `AlltoAll`).
    pub fn nccl_name(self) -> &'static str {
        match self {
            Collective::AllReduce => "AllReduce",
            Collective::AllGather => "AllGather",
            Collective::ReduceScatter => "ReduceScatter",
            Collective::Broadcast => "Broadcast",
            Collective::Reduce => "Reduce",
            Collective::AllToAll => "AlltoAll",
            Collective::SendRecv => "SendRecv",
            Collective::Gather => "Gather",
            Collective::Scatter => "Scatter",
        }
    }

    /// Its name in a title (`All-reduce`, `Send/recv`).
    pub fn title(self) -> &'static str {
        match self {
            Collective::AllReduce => "All-reduce",
            Collective::AllGather => "All-gather",
            Collective::ReduceScatter => "Reduce-scatter",
            Collective::Broadcast => "Broadcast",
            Collective::Reduce => "Reduce",
            Collective::AllToAll => "All-to-all",
            Collective::SendRecv => "Send/recv",
            Collective::Gather => "Gather",
            Collective::Scatter => "Scatter",
        }
    }

    /// One operation of it in a sentence (`all-reduce`, `send/recv`).
    pub fn op_word(self) -> String {
        self.title().to_lowercase()
    }

    /// A collective from its name (`all_reduce`, also `allreduce` and `all-reduce`).
    pub fn parse(text: &str) -> Result<Collective, String> {
        let wanted: String = text
            .trim()
            .chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect();
        Collective::ALL
            .into_iter()
            .find(|c| c.name().replace('_', "") == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown collective {text:?} (expected {}, or all)",
                    names.join(", ")
                )
            })
    }

    /// A comma-separated list (`all` for every collective), in the order given,
    /// without repeats.
    pub fn parse_list(text: &str) -> Result<Vec<Collective>, String> {
        let mut out: Vec<Collective> = Vec::new();
        for item in text.split(',') {
            let found = if item.trim() == "all" {
                Collective::ALL.to_vec()
            } else {
                vec![Collective::parse(item)?]
            };
            for c in found {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        if out.is_empty() {
            return Err("no collective given".into());
        }
        Ok(out)
    }

    /// Whether a root rank is part of the operation (`-r/--root`).
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter
        )
    }

    /// Whether the reduction operator matters (the others move data only).
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce
        )
    }

    /// Whether each rank's part is the size split over the ranks (and so rounded
    /// down to whole 16-byte groups, possibly to nothing).
    pub fn splits(self) -> bool {
        !matches!(
            self,
            Collective::AllReduce
                | Collective::Broadcast
                | Collective::Reduce
                | Collective::SendRecv
        )
    }

    /// nccl-tests' element counts for a case of `bytes` of elements of `element`
    /// bytes on `nranks` ranks: per-rank chunks rounded down to whole 16-byte groups.
    pub fn counts(self, bytes: u64, element: u64, nranks: u32) -> Counts {
        let count = bytes / element.max(1);
        let n = u64::from(nranks.max(1));
        // `& ~(16/eltSize - 1)`: a whole number of 16-byte groups (elements of 16
        // bytes or more are not rounded).
        let per_group = (16 / element.max(1)).max(1);
        let chunk = (count / n) / per_group * per_group;
        let (send, recv, param) = match self {
            Collective::AllReduce
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv => (count, count, count),
            Collective::AllGather | Collective::Gather => (chunk, chunk * n, chunk),
            Collective::ReduceScatter | Collective::Scatter => (chunk * n, chunk, chunk),
            Collective::AllToAll => (chunk * n, chunk * n, chunk),
        };
        Counts { send, recv, param }
    }

    /// busbw / algbw for `nranks` ranks (nccl-tests' `GetBw`).
    pub fn bus_factor(self, nranks: u32) -> f64 {
        let n = f64::from(nranks.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// What `rank`'s output holds, stretch by stretch over its `counts.recv`
    /// elements, with `root` the root of a rooted collective.
    pub fn layout(
        self,
        rank: u32,
        nranks: u32,
        root: u32,
        counts: Counts,
    ) -> Vec<(Range<u64>, Source)> {
        let (p, all) = (counts.param, 0..counts.recv);
        let chunks = |source: &dyn Fn(u32) -> Source| -> Vec<(Range<u64>, Source)> {
            (0..nranks)
                .map(|j| (u64::from(j) * p..u64::from(j + 1) * p, source(j)))
                .filter(|(r, _)| !r.is_empty())
                .collect()
        };
        let mine = u64::from(rank) * p;
        let stretches = match self {
            Collective::AllReduce => vec![(all, Source::Reduced { from: 0 })],
            Collective::ReduceScatter => vec![(all, Source::Reduced { from: mine })],
            Collective::Reduce if rank == root => vec![(all, Source::Reduced { from: 0 })],
            Collective::Reduce | Collective::Gather => vec![(all, Source::Untouched)],
            Collective::Broadcast => vec![(
                all,
                Source::Input {
                    rank: root,
                    from: 0,
                },
            )],
            Collective::SendRecv => {
                let from = (rank + nranks - 1) % nranks.max(1);
                vec![(
                    all,
                    Source::Input {
                        rank: from,
                        from: 0,
                    },
                )]
            }
            Collective::Scatter => vec![(
                all,
                Source::Input {
                    rank: root,
                    from: mine,
                },
            )],
            Collective::AllGather => chunks(&|j| Source::Input { rank: j, from: 0 }),
            Collective::AllToAll => chunks(&|j| Source::Input {
                rank: j,
                from: mine,
            }),
        };
        // Gather writes the root's buffer only (the arm above is for the others).
        if self == Collective::Gather && rank == root {
            return chunks(&|j| Source::Input { rank: j, from: 0 });
        }
        stretches
            .into_iter()
            .filter(|(r, _)| !r.is_empty())
            .collect()
    }
}

/// A config's name with the collective after it where that is not all_reduce
/// (`shm-off alltoall`), as tables of several collectives name their rows.
pub fn labelled(config: &str, collective: &str) -> String {
    match collective {
        "" | "all_reduce" => config.to_string(),
        coll => format!("{config} {coll}"),
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Collective {
    type Err = String;

    fn from_str(text: &str) -> Result<Collective, String> {
        Collective::parse(text)
    }
}

impl serde::Serialize for Collective {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Collective {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Collective, D::Error> {
        let name = String::deserialize(d)?;
        Collective::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collectives_that_split_a_size_are_those_whose_parts_shrink() {
        for c in Collective::ALL {
            let part = c.counts(64, 1, 2).param;
            assert_eq!(c.splits(), part < 64, "{c}: part {part}");
        }
    }

    #[test]
    fn names_parse_both_ways_and_all_means_every_one() {
        for c in Collective::ALL {
            assert_eq!(Collective::parse(c.name()), Ok(c));
        }
        assert_eq!(Collective::parse("AllReduce"), Ok(Collective::AllReduce));
        assert_eq!(Collective::parse("all-to-all"), Ok(Collective::AllToAll));
        assert_eq!(
            Collective::parse_list("alltoall, all_reduce,alltoall"),
            Ok(vec![Collective::AllToAll, Collective::AllReduce])
        );
        assert_eq!(Collective::parse_list("all").unwrap().len(), 9);
        let e = Collective::parse("allgatherv").unwrap_err();
        assert!(
            e.contains("unknown collective \"allgatherv\" (expected all_reduce, all_gather"),
            "{e}"
        );
    }

    /// nccl-tests' own numbers: the `size` and `count` columns it prints for 1 MiB
    /// of float on 8 ranks, and for sizes that do not divide evenly.
    #[test]
    fn counts_and_sizes_as_nccl_tests_prints_them() {
        let c = |coll: Collective, bytes: u64, elt: u64, n: u32| {
            let k = coll.counts(bytes, elt, n);
            (k.size_bytes(elt), k.param)
        };
        let mib = 1 << 20;
        assert_eq!(c(Collective::AllReduce, mib, 4, 8), (mib, 262144));
        assert_eq!(c(Collective::AllGather, mib, 4, 8), (mib, 32768));
        assert_eq!(c(Collective::ReduceScatter, mib, 4, 8), (mib, 32768));
        assert_eq!(c(Collective::AllToAll, mib, 4, 8), (mib, 32768));
        assert_eq!(c(Collective::Broadcast, mib, 4, 8), (mib, 262144));
        // 1000 B of float on 3 ranks: 83 elements each, rounded down to 80 (16 B
        // groups of 4 floats): 960 B moved.
        assert_eq!(c(Collective::AllGather, 1000, 4, 3), (960, 80));
        assert_eq!(c(Collective::Scatter, 1000, 4, 3), (960, 80));
        // Doubles come in pairs; 8 B on 8 ranks is no element at all.
        assert_eq!(c(Collective::AllToAll, 1000, 8, 3), (960, 40));
        assert_eq!(c(Collective::AllGather, 8, 4, 8), (0, 0));
        let g = Collective::Gather.counts(mib, 4, 8);
        assert_eq!((g.send, g.recv), (32768, 262144));
        let s = Collective::Scatter.counts(mib, 4, 8);
        assert_eq!((s.send, s.recv), (262144, 32768));
    }

    #[test]
    fn bus_factors_are_nccl_tests() {
        assert_eq!(Collective::AllReduce.bus_factor(8), 1.75);
        for c in [
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::AllToAll,
            Collective::Gather,
            Collective::Scatter,
        ] {
            assert_eq!(c.bus_factor(8), 0.875, "{c}");
            assert_eq!(c.bus_factor(1), 0.0, "{c}");
        }
        for c in [
            Collective::Broadcast,
            Collective::Reduce,
            Collective::SendRecv,
        ] {
            assert_eq!(c.bus_factor(8), 1.0, "{c}");
        }
    }

    #[test]
    fn each_output_is_laid_out_from_the_right_inputs() {
        let counts = |c: Collective| c.counts(3 * 4 * 4, 4, 3); // 4 floats per chunk
        use Source::*;
        let l = |c: Collective, rank| c.layout(rank, 3, 1, counts(c));
        assert_eq!(
            l(Collective::AllReduce, 2),
            vec![(0..12, Reduced { from: 0 })]
        );
        assert_eq!(
            l(Collective::ReduceScatter, 2),
            vec![(0..4, Reduced { from: 8 })]
        );
        assert_eq!(
            l(Collective::AllGather, 0),
            vec![
                (0..4, Input { rank: 0, from: 0 }),
                (4..8, Input { rank: 1, from: 0 }),
                (8..12, Input { rank: 2, from: 0 })
            ]
        );
        assert_eq!(
            l(Collective::AllToAll, 2),
            vec![
                (0..4, Input { rank: 0, from: 8 }),
                (4..8, Input { rank: 1, from: 8 }),
                (8..12, Input { rank: 2, from: 8 })
            ]
        );
        assert_eq!(
            l(Collective::Broadcast, 0),
            vec![(0..12, Input { rank: 1, from: 0 })]
        );
        assert_eq!(l(Collective::Reduce, 1), vec![(0..12, Reduced { from: 0 })]);
        assert_eq!(l(Collective::Reduce, 0), vec![(0..12, Untouched)]);
        assert_eq!(
            l(Collective::SendRecv, 0),
            vec![(0..12, Input { rank: 2, from: 0 })]
        );
        assert_eq!(
            l(Collective::Scatter, 2),
            vec![(0..4, Input { rank: 1, from: 8 })]
        );
        assert_eq!(l(Collective::Gather, 1).len(), 3);
        assert_eq!(l(Collective::Gather, 2), vec![(0..12, Untouched)]);
        assert!(Collective::AllGather
            .layout(0, 8, 0, Collective::AllGather.counts(8, 4, 8))
            .is_empty());
    }
}
