//! What NVLink SHARP gained: for each GPU count whose cases show NVLS set up (the
//! `transports` cell starts with `NVLS`), the config with NVLS against a config
//! with `NCCL_NVLS_ENABLE=0` (the shipped `nvls-off`) at the largest size both
//! measured, in busbw and in median time with its interval over the rounds. Users
//! ask this when they see a busbw above the ring's link rate (nccl-tests#153).

use std::collections::BTreeMap;

use super::compare::{one_pair, CompareOptions};
use crate::config::transport::env_falsy;
use crate::export::reader::{CaseRow, RunData};
use crate::nccl::cell::TransportsCell;
use crate::stats::change::Case;

/// NVLS against NVLS off, for one GPU count.
#[derive(Debug, Clone, PartialEq)]
pub struct Gain {
    pub nranks: u32,
    pub with: String,
    /// The config with NVLS off; `None` where the run has none.
    pub without: Option<String>,
    pub bytes: u64,
    pub busbw_with: f64,
    pub busbw_without: Option<f64>,
    /// The time with NVLS against without (negative: faster), as decided.
    pub time_change: Option<Case>,
}

/// A config of the run that turns NVLS off (`NCCL_NVLS_ENABLE=0`), the one that
/// changes nothing else first.
pub fn nvls_off_config(run: &RunData) -> Option<String> {
    let disables =
        |env: &BTreeMap<String, String>| env.get("NCCL_NVLS_ENABLE").is_some_and(|v| env_falsy(v));
    let configs = &run.manifest.configs;
    configs
        .iter()
        .filter(|c| disables(&c.env))
        .min_by_key(|c| c.env.len())
        .map(|c| c.name.clone())
}

/// One gain per GPU count whose ok cases used NVLS.
pub fn gains(run: &RunData, options: CompareOptions) -> Vec<Gain> {
    let off = nvls_off_config(run);
    let mut by_count: BTreeMap<u32, Vec<&CaseRow>> = BTreeMap::new();
    for c in run.cases.iter().filter(|c| c.is_ok()) {
        by_count.entry(c.nranks).or_default().push(c);
    }
    let mut out = Vec::new();
    for (nranks, rows) in by_count {
        let nvls = |r: &&&CaseRow| TransportsCell::parse(&r.transports).nvls;
        // The config with NVLS: the one with the most NVLS cases (ties: by name).
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in rows.iter().filter(nvls) {
            *counts.entry(r.config.as_str()).or_default() += 1;
        }
        let Some(with) = counts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(c, _)| c.to_string())
        else {
            continue;
        };
        let of = |config: &str| -> BTreeMap<u64, &CaseRow> {
            rows.iter()
                .filter(|r| r.config == config)
                .map(|r| (r.bytes, *r))
                .collect()
        };
        let mine = of(&with);
        let theirs = off.as_deref().map(of).unwrap_or_default();
        // The largest size both measured, else the largest NVLS size.
        let both = mine.keys().rev().find(|b| theirs.contains_key(b)).copied();
        let Some(bytes) = both.or_else(|| {
            mine.iter()
                .rev()
                .find(|(_, r)| TransportsCell::parse(&r.transports).nvls)
                .map(|(b, _)| *b)
        }) else {
            continue;
        };
        let a = mine[&bytes];
        let b = theirs.get(&bytes).copied();
        let time_change = b.map(|b| one_pair(run, b, a, options));
        out.push(Gain {
            nranks,
            with,
            without: b.map(|b| b.config.clone()),
            bytes,
            busbw_with: a.busbw_gbps.unwrap_or(0.0),
            busbw_without: b.and_then(|b| b.busbw_gbps),
            time_change,
        });
    }
    out
}

/// The gains found per GPU count; its runs are also those the report's section is
/// tested on.
#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::export::reader::{ConfigHead, ManifestHead};

    pub(crate) const OPTIONS: CompareOptions = CompareOptions {
        threshold: 0.02,
        margin: 0.02,
        alpha: 0.05,
    };

    /// A case over 9 rounds whose medians are `us` x (1 + small spread).
    pub(crate) fn case(
        config: &str,
        nranks: u32,
        bytes: u64,
        transports: &str,
        us: f64,
    ) -> CaseRow {
        let rounds: Vec<String> = (0..9)
            .map(|i| format!("{:.3}", us * (1.0 + f64::from(i) * 0.001)))
            .collect();
        CaseRow {
            config: config.into(),
            nranks,
            bytes,
            status: "ok".into(),
            time_us: Some(us),
            p50_us: Some(us),
            busbw_gbps: Some(bytes as f64 / us / 1e3),
            transports: transports.into(),
            quality: "ok".into(),
            round_p50_us: rounds.join(";"),
            ..CaseRow::default()
        }
    }

    pub(crate) fn run(configs: &[(&str, &[(&str, &str)])], cases: Vec<CaseRow>) -> RunData {
        RunData {
            dir: PathBuf::from("synthetic"),
            manifest: ManifestHead {
                configs: configs
                    .iter()
                    .map(|(name, env)| ConfigHead {
                        name: name.to_string(),
                        env: env
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                        ..ConfigHead::default()
                    })
                    .collect(),
                ..ManifestHead::default()
            },
            cases,
        }
    }

    pub(crate) const CONFIGS: [(&str, &[(&str, &str)]); 2] =
        [("default", &[]), ("nvls-off", &[("NCCL_NVLS_ENABLE", "0")])];

    /// 8 GPUs with NVLS and NVLS off, up to 1 GiB both and 2 GiB with NVLS; 2 GPUs
    /// that never used NVLS (no gain for them).
    pub(crate) fn gained() -> RunData {
        run(
            &CONFIGS,
            vec![
                case("default", 8, 1 << 20, "P2P/CUMEM:100%", 20.0),
                case("default", 8, 1 << 30, "NVLS;P2P/CUMEM:100%", 4000.0),
                case("default", 8, 1 << 31, "NVLS;P2P/CUMEM:100%", 8000.0),
                case("nvls-off", 8, 1 << 20, "P2P/CUMEM:100%", 20.0),
                case("nvls-off", 8, 1 << 30, "P2P/CUMEM:100%", 5200.0),
                case("default", 2, 1 << 30, "P2P/CUMEM:100%", 3000.0),
            ],
        )
    }

    #[test]
    fn nvls_against_nvls_off_at_the_largest_size_both_measured() {
        let r = gained();
        assert_eq!(nvls_off_config(&r).as_deref(), Some("nvls-off"));
        let g = gains(&r, OPTIONS);
        assert_eq!(g.len(), 1, "{g:?}");
        let g = &g[0];
        assert_eq!((g.nranks, g.bytes), (8, 1 << 30));
        assert_eq!(
            (g.with.as_str(), g.without.as_deref()),
            ("default", Some("nvls-off"))
        );
        let t = g.time_change.unwrap();
        assert_eq!(t.change, crate::stats::change::Change::Faster);
        let change = t.relative().unwrap();
        assert!((change - (4000.0 / 5200.0 - 1.0)).abs() < 0.01, "{change}");
    }

    #[test]
    fn the_same_speed_with_and_without_nvls_is_no_difference() {
        let r = run(
            &CONFIGS,
            vec![
                case("default", 8, 1 << 30, "NVLS;P2P/CUMEM:100%", 4000.0),
                case("nvls-off", 8, 1 << 30, "P2P/CUMEM:100%", 4000.0),
            ],
        );
        let g = gains(&r, OPTIONS);
        let within = crate::stats::change::Change::Within;
        assert_eq!(g[0].time_change.map(|c| c.change), Some(within));
    }
}
