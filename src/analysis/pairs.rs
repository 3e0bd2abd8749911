//! The pairs of `sweep --pairs`: each config's 2-rank result on every pair of
//! devices at the largest size, as a matrix, and the pairs slower than the others.
//!
//! A pair is slow when the whole 95 % interval of its median time is above the
//! median of the other pairs' medians by more than the threshold (compare's rule,
//! against the others' typical value): one slow link, or two ranks sharing a core
//! on the host backend, stands out; noise within the threshold does not.

use std::fmt::Write as _;

use serde::Serialize;

use crate::config::pair_of;
use crate::export::reader::RunData;
use crate::stats::median;
use crate::units::Bytes;

/// One pair's result at the table's size.
#[derive(Debug, Clone, Serialize)]
pub struct PairCell {
    pub a: usize,
    pub b: usize,
    pub status: String,
    pub busbw_gbps: Option<f64>,
    pub median_us: Option<f64>,
    /// Slower than the other pairs' median by this fraction (+0.25: 25 % slower),
    /// when the whole interval is beyond the threshold.
    pub slow_by: Option<f64>,
}

/// A config's pairs at its largest size.
#[derive(Debug, Clone, Serialize)]
pub struct PairTable {
    /// The config the pairs were made from (`default` for `default.pair0-1`).
    pub config: String,
    pub bytes: u64,
    /// Devices 0..devices.
    pub devices: usize,
    pub cells: Vec<PairCell>,
}

impl PairTable {
    pub fn cell(&self, a: usize, b: usize) -> Option<&PairCell> {
        let (a, b) = (a.min(b), a.max(b));
        self.cells.iter().find(|c| c.a == a && c.b == b)
    }

    pub fn slow(&self) -> impl Iterator<Item = &PairCell> {
        self.cells.iter().filter(|c| c.slow_by.is_some())
    }
}

/// What a device of the run is: a core on the host backend, else a GPU.
pub fn unit(run: &RunData) -> &'static str {
    if run.manifest.backend.used == "host" {
        "core"
    } else {
        "GPU"
    }
}

/// Every config's pair table; empty when the run has no pairs.
pub fn tables(run: &RunData, threshold: f64) -> Vec<PairTable> {
    let mut bases: Vec<&str> = Vec::new();
    for c in &run.cases {
        if let Some((base, _, _)) = pair_of(&c.config) {
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
    }
    bases
        .into_iter()
        .filter_map(|base| table(run, base, threshold))
        .collect()
}

fn table(run: &RunData, base: &str, threshold: f64) -> Option<PairTable> {
    let rows: Vec<(usize, usize, &crate::export::reader::CaseRow)> = run
        .cases
        .iter()
        .filter_map(|c| {
            let (b, i, j) = pair_of(&c.config)?;
            (b == base && c.nranks == 2).then_some((i, j, c))
        })
        .collect();
    let bytes = rows.iter().map(|r| r.2.bytes).max()?;
    let mut cells: Vec<(PairCell, Option<(f64, f64)>)> = rows
        .iter()
        .filter(|r| r.2.bytes == bytes)
        .map(|&(a, b, c)| {
            let median = c.p50_us.or(c.time_us).filter(|_| c.is_ok());
            let ci = median.map(|m| {
                (
                    c.median_ci_low_us.unwrap_or(m),
                    c.median_ci_high_us.unwrap_or(m),
                )
            });
            let cell = PairCell {
                a: a.min(b),
                b: a.max(b),
                status: c.status.clone(),
                busbw_gbps: c.busbw_gbps.filter(|_| c.is_ok()),
                median_us: median,
                slow_by: None,
            };
            (cell, ci)
        })
        .collect();
    let medians: Vec<(usize, f64)> = cells
        .iter()
        .enumerate()
        .filter_map(|(k, (c, _))| Some((k, c.median_us?)))
        .collect();
    for (k, (cell, ci)) in cells.iter_mut().enumerate() {
        let others: Vec<f64> = medians
            .iter()
            .filter(|(o, _)| *o != k)
            .map(|(_, m)| *m)
            .collect();
        // One other pair is no typical value.
        let typical = median(others.iter().copied()).filter(|_| others.len() >= 2);
        let (Some(typical), Some((low, _))) = (typical, *ci) else {
            continue;
        };
        if low > typical * (1.0 + threshold) {
            cell.slow_by = cell.median_us.map(|m| m / typical - 1.0);
        }
    }
    let devices = cells.iter().map(|(c, _)| c.b + 1).max().unwrap_or(0);
    let mut cells: Vec<PairCell> = cells.into_iter().map(|(c, _)| c).collect();
    cells.sort_by_key(|c| (c.a, c.b));
    Some(PairTable {
        config: base.to_string(),
        bytes,
        devices,
        cells,
    })
}

/// The report's section: per config, the busbw matrix and the slow pairs named.
/// `unit` is what a device is ("GPU", or "core" on the host backend).
/// `cpus` is the CPUs of the machine on the host backend: indices past it wrap.
pub fn markdown(
    s: &mut String,
    tables: &[PairTable],
    unit: &str,
    threshold: f64,
    cpus: Option<usize>,
) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(s, "## Pairs\n")?;
    writeln!(
        s,
        "Every pair of {unit}s measured on its own (2 ranks, `sweep --pairs`): bus bandwidth at the largest size, GB/s. A pair is named slow when the whole 95 % interval of its median time is more than {:.1} % above the other pairs' median.\n",
        threshold * 100.0
    )?;
    let devices = tables.iter().map(|t| t.devices).max().unwrap_or(0);
    if let Some(n) = cpus.filter(|&n| n > 0 && devices > n) {
        writeln!(
            s,
            "This machine has {n} CPUs for {devices} cores: core i is the (i mod {n})-th CPU the process may use, so a pair like 0 and {n} puts both ranks on one CPU, where they take turns (and spin waiting for each other): those pairs measure that oversubscription, not a link.\n"
        )?;
    }
    for t in tables {
        writeln!(s, "### {} at {}\n", t.config, Bytes(t.bytes))?;
        let header: Vec<String> = (0..t.devices).map(|d| format!("{unit} {d}")).collect();
        writeln!(s, "| | {} |", header.join(" | "))?;
        writeln!(s, "|---|{}", "---|".repeat(t.devices))?;
        for a in 0..t.devices {
            let row: Vec<String> = (0..t.devices)
                .map(|b| match t.cell(a, b) {
                    _ if a == b => "-".to_string(),
                    None => String::new(),
                    Some(c) => match (c.busbw_gbps, c.slow_by) {
                        (Some(bw), Some(_)) => format!("**{bw:.2}** (slow)"),
                        (Some(bw), None) => format!("{bw:.2}"),
                        (None, _) => c.status.clone(),
                    },
                })
                .collect();
            writeln!(s, "| **{unit} {a}** | {} |", row.join(" | "))?;
        }
        writeln!(s)?;
        let slow: Vec<String> = t
            .slow()
            .map(|c| {
                format!(
                    "{unit}s {} and {} ({:+.0} % time)",
                    c.a,
                    c.b,
                    c.slow_by.unwrap_or(0.0) * 100.0
                )
            })
            .collect();
        let failed: Vec<String> = t
            .cells
            .iter()
            .filter(|c| c.status != "ok")
            .map(|c| format!("{unit}s {} and {} ({})", c.a, c.b, c.status))
            .collect();
        if slow.is_empty() {
            writeln!(s, "No pair is slower than the others beyond the threshold.")?;
        } else {
            writeln!(s, "**Slow: {}.**", slow.join(", "))?;
        }
        if !failed.is_empty() {
            writeln!(s, " Not ok: {}.", failed.join(", "))?;
        }
        writeln!(s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::reader::{CaseRow, ManifestHead};

    fn run(times: &[((usize, usize), f64)]) -> RunData {
        let cases = times
            .iter()
            .flat_map(|&((a, b), t)| {
                [1024u64, 1 << 20].map(|bytes| {
                    let p50 = if bytes == 1 << 20 { t } else { 5.0 };
                    CaseRow {
                        config: format!("default.pair{a}-{b}"),
                        backend: "host".into(),
                        nranks: 2,
                        bytes,
                        status: "ok".into(),
                        time_us: Some(p50),
                        p50_us: Some(p50),
                        median_ci_low_us: Some(p50 * 0.99),
                        median_ci_high_us: Some(p50 * 1.01),
                        busbw_gbps: Some(bytes as f64 / p50 / 1e3),
                        ..CaseRow::default()
                    }
                })
            })
            .collect();
        RunData {
            dir: "run".into(),
            manifest: ManifestHead::default(),
            cases,
            distributions: Default::default(),
        }
    }

    #[test]
    fn the_slow_pair_is_named_and_noise_is_not() {
        let r = run(&[
            ((0, 1), 100.0),
            ((0, 2), 103.0),
            ((0, 3), 98.0),
            ((1, 2), 150.0),
            ((1, 3), 101.0),
            ((2, 3), 99.0),
        ]);
        let t = tables(&r, 0.05);
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(
            (t.config.as_str(), t.bytes, t.devices),
            ("default", 1 << 20, 4)
        );
        let slow: Vec<(usize, usize)> = t.slow().map(|c| (c.a, c.b)).collect();
        assert_eq!(slow, [(1, 2)]);
        let by = t.cell(2, 1).unwrap().slow_by.unwrap();
        assert!((by - 0.5).abs() < 0.01, "{by}");
        let mut s = String::new();
        markdown(&mut s, std::slice::from_ref(t), "GPU", 0.05, None).unwrap();
        assert!(s.contains("**Slow: GPUs 1 and 2 (+50 % time).**"), "{s}");
        assert!(
            s.contains("| **GPU 1** | 10.49 | - | **6.99** (slow) | 10.38 |"),
            "{s}"
        );
    }

    #[test]
    fn no_pairs_no_section_and_two_pairs_judge_nothing() {
        let mut plain = run(&[((0, 1), 100.0)]);
        for c in &mut plain.cases {
            c.config = "default".into();
        }
        assert!(tables(&plain, 0.05).is_empty());
        let two = run(&[((0, 1), 100.0), ((0, 2), 300.0)]);
        assert_eq!(tables(&two, 0.05)[0].slow().count(), 0);
    }
}
