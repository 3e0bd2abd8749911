//! The pairs of `sweep --pairs` (every pair of GPUs, or cores on the host backend,
//! 2 ranks each) and of `run --pairs` (every pair of a cluster job's nodes, all
//! ranks of both): each config's result per pair at the largest size, as a
//! matrix, the pairs slower than the others, and per GPU or node whether all its
//! pairs are slow.
//!
//! A GPU or node is slow when the whole 95 % interval of every one of its pairs'
//! median times is above the median of the pairs without it by more than the
//! threshold (compare's rule, against the others' typical value): the trouble is
//! then that GPU or node (its NIC, its links, its clocks), not one link. A pair is
//! slow when its whole interval is that far above the median of the other pairs,
//! leaving out those of a slow GPU or node (with three nodes, one slow node's two
//! pairs would otherwise be the norm): one slow link, or two ranks sharing a core
//! on the host backend, stands out; noise within the threshold does not. Several
//! slow members at once can hide each other: the rule is relative, the ceilings
//! and published figures are the absolute checks. Pairs are known by the
//! manifest's configs (`devices`, or `ranks` with the cluster's hosts), not by
//! their names. `report::sections::pairs` writes the section from these tables.

use serde::Serialize;

use crate::config::pair_of;
use crate::export::reader::{CaseRow, RunData};
use crate::stats::median;

/// One pair's result at the table's size.
#[derive(Debug, Clone, Serialize)]
pub struct PairCell {
    pub a: usize,
    pub b: usize,
    pub status: String,
    pub busbw_gbps: Option<f64>,
    pub median_us: Option<f64>,
    /// The low end of the 95 % interval of its median time.
    pub median_ci_low_us: Option<f64>,
    /// Slower than the other pairs' median by this fraction (+0.25: 25 % slower),
    /// when the whole interval is beyond the threshold.
    pub slow_by: Option<f64>,
}

/// One GPU, core or node across its pairs.
#[derive(Debug, Clone, Serialize)]
pub struct MemberSummary {
    pub index: usize,
    /// Its pairs measured ok, and all its pairs.
    pub pairs_ok: usize,
    pub pairs: usize,
    /// The median bus bandwidth of its ok pairs.
    pub busbw_gbps: Option<f64>,
    /// The median time of its pairs against the median of the pairs without it
    /// (+0.25: 25 % slower); none when there is no pair without it.
    pub versus_others: Option<f64>,
    /// Every one of its pairs is slow against the pairs without it.
    pub slow: bool,
}

/// A config's pairs at its largest size.
#[derive(Debug, Clone, Serialize)]
pub struct PairTable {
    /// The config the pairs were made from (`default` for `default.pair0-1`).
    pub config: String,
    pub bytes: u64,
    /// What the pairs are made of: `GPU`, `core` or `node`.
    pub unit: &'static str,
    /// Each member's name, index by index: `GPU 0`, `core 3`, or a node's host.
    pub names: Vec<String>,
    /// Ranks per pair (2, or every rank of two nodes).
    pub nranks: u32,
    pub cells: Vec<PairCell>,
    /// Per member, when there are 3 or more (2 are one pair: nothing to compare).
    pub members: Vec<MemberSummary>,
}

impl PairTable {
    pub fn size(&self) -> usize {
        self.names.len()
    }

    pub fn cell(&self, a: usize, b: usize) -> Option<&PairCell> {
        let (a, b) = (a.min(b), a.max(b));
        self.cells.iter().find(|c| c.a == a && c.b == b)
    }

    pub fn slow(&self) -> impl Iterator<Item = &PairCell> {
        self.cells.iter().filter(|c| c.slow_by.is_some())
    }

    pub fn slow_members(&self) -> impl Iterator<Item = &MemberSummary> {
        self.members.iter().filter(|m| m.slow)
    }
}

/// A pair config of the run: what it was made from and its two members.
struct PairConfig<'a> {
    base: &'a str,
    a: usize,
    b: usize,
}

/// What a config of the run pairs, from its manifest entry: two devices
/// (`sweep --pairs`) or the ranks of two nodes (`run --pairs`).
fn pair_config<'a>(run: &RunData, name: &'a str) -> Option<(PairConfig<'a>, &'static str)> {
    let head = run.manifest.configs.iter().find(|c| c.name == name)?;
    let base = pair_of(name).map_or(name, |(base, ..)| base);
    let (a, b, unit) = match (&head.devices, &head.ranks) {
        (Some(d), _) if d.len() == 2 => {
            let unit = if run.manifest.backend.used == "host" {
                "core"
            } else {
                "GPU"
            };
            (d[0], d[1], unit)
        }
        (_, Some(ranks)) => {
            let cluster = run.manifest.cluster.as_ref()?;
            let node = |rank: u32| {
                let host = &cluster.ranks.iter().find(|r| r.rank == rank)?.host;
                cluster.hosts.iter().position(|h| h == host)
            };
            let mut nodes: Vec<usize> = ranks.iter().filter_map(|&r| node(r)).collect();
            nodes.sort_unstable();
            nodes.dedup();
            let [a, b] = nodes[..] else {
                return None;
            };
            (a, b, "node")
        }
        _ => return None,
    };
    Some((
        PairConfig {
            base,
            a: a.min(b),
            b: a.max(b),
        },
        unit,
    ))
}

/// The rows of one config's pairs.
struct PairRows<'a> {
    base: &'a str,
    unit: &'static str,
    rows: Vec<(PairConfig<'a>, &'a CaseRow)>,
}

/// Every config's pair table; empty when the run has no pairs.
pub fn tables(run: &RunData, threshold: f64) -> Vec<PairTable> {
    let mut groups: Vec<PairRows> = Vec::new();
    for c in &run.cases {
        let Some((pair, unit)) = pair_config(run, &c.config) else {
            continue;
        };
        match groups.iter_mut().find(|g| g.base == pair.base) {
            Some(g) => g.rows.push((pair, c)),
            None => groups.push(PairRows {
                base: pair.base,
                unit,
                rows: vec![(pair, c)],
            }),
        }
    }
    groups
        .into_iter()
        .filter_map(|g| table(run, g, threshold))
        .collect()
}

/// A pair's median time and the low end of its interval, when it is ok.
fn time_of(c: &CaseRow) -> Option<(f64, f64)> {
    let median = c.p50_us.or(c.time_us).filter(|_| c.is_ok())?;
    Some((median, c.median_ci_low_us.unwrap_or(median)))
}

fn table(run: &RunData, pairs: PairRows, threshold: f64) -> Option<PairTable> {
    let PairRows { base, unit, rows } = pairs;
    let bytes = rows.iter().map(|r| r.1.bytes).max()?;
    let rows: Vec<(PairConfig, &CaseRow)> =
        rows.into_iter().filter(|r| r.1.bytes == bytes).collect();
    let mut cells: Vec<PairCell> = rows
        .iter()
        .map(|(p, c)| {
            let time = time_of(c);
            PairCell {
                a: p.a,
                b: p.b,
                status: c.status.clone(),
                busbw_gbps: c.busbw_gbps.filter(|_| c.is_ok()),
                median_us: time.map(|t| t.0),
                median_ci_low_us: time.map(|t| t.1),
                slow_by: None,
            }
        })
        .collect();
    cells.sort_by_key(|c| (c.a, c.b));
    let size = cells.iter().map(|c| c.b + 1).max().unwrap_or(0);
    let names = (0..size)
        .map(|i| match &run.manifest.cluster {
            Some(cluster) if unit == "node" => cluster
                .hosts
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("node {i}")),
            _ => format!("{unit} {i}"),
        })
        .collect();
    let members = if size >= 3 {
        members(&cells, size, threshold)
    } else {
        Vec::new()
    };
    // The pairs of a slow member are no norm for the others.
    let slow: Vec<usize> = members.iter().filter(|m| m.slow).map(|m| m.index).collect();
    let healthy = |c: &PairCell| !slow.contains(&c.a) && !slow.contains(&c.b);
    let verdicts: Vec<Option<f64>> = cells
        .iter()
        .enumerate()
        .map(|(k, cell)| {
            let others: Vec<f64> = cells
                .iter()
                .enumerate()
                .filter(|&(o, c)| o != k && healthy(c))
                .filter_map(|(_, c)| c.median_us)
                .collect();
            // One other pair is no typical value, unless the members said which
            // pairs are the norm.
            let enough = if slow.is_empty() { 2 } else { 1 };
            let typical = median(others.iter().copied()).filter(|_| others.len() >= enough)?;
            let (m, low) = (cell.median_us?, cell.median_ci_low_us?);
            (low > typical * (1.0 + threshold)).then(|| m / typical - 1.0)
        })
        .collect();
    for (cell, verdict) in cells.iter_mut().zip(verdicts) {
        cell.slow_by = verdict;
    }
    Some(PairTable {
        config: base.to_string(),
        bytes,
        unit,
        names,
        nranks: rows.iter().map(|r| r.1.nranks).max().unwrap_or(2),
        cells,
        members,
    })
}

/// Each member against the pairs without it: slow when every one of its pairs
/// is, whole interval, beyond the threshold. Its time against the others leaves
/// out the pairs of the other slow members.
fn members(cells: &[PairCell], size: usize, threshold: f64) -> Vec<MemberSummary> {
    let without = |i: usize, skip: &[usize]| {
        median(
            cells
                .iter()
                .filter(|c| ![c.a, c.b].iter().any(|m| *m == i || skip.contains(m)))
                .filter_map(|c| c.median_us),
        )
    };
    let mine = |i: usize| cells.iter().filter(move |c| c.a == i || c.b == i);
    let slow: Vec<usize> = (0..size)
        .filter(|&i| {
            let ok: Vec<f64> = mine(i).filter_map(|c| c.median_ci_low_us).collect();
            // One slow link makes one of its pairs slow; the member itself, all.
            ok.len() >= 2
                && without(i, &[])
                    .is_some_and(|t| ok.iter().all(|&low| low > t * (1.0 + threshold)))
        })
        .collect();
    (0..size)
        .map(|i| {
            let ok = mine(i).filter(|c| c.median_us.is_some());
            let versus_others = without(i, &slow)
                .and_then(|t| Some(median(ok.clone().filter_map(|c| c.median_us))? / t - 1.0));
            MemberSummary {
                index: i,
                pairs_ok: ok.clone().count(),
                pairs: mine(i).count(),
                busbw_gbps: median(ok.filter_map(|c| c.busbw_gbps)),
                versus_others,
                slow: slow.contains(&i),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
