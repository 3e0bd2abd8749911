//! The latency-bandwidth model of every config and rank count of a run (fitted by
//! `stats::alpha_beta` to the trusted ok cases' mean times): `model.csv` and the
//! report's section, which turns the SHM decision into two numbers ("disabling SHM
//! adds X us per all-reduce and lowers the bandwidth term from Y to Z GB/s") and
//! names the size where two configs cross.

use std::fmt::Write as _;

use anyhow::Result;

use crate::export::reader::{CaseRow, RunData};
use crate::stats::alpha_beta::{crossover_bytes, fit, AlphaBeta, NoFit, Point};
use crate::units::{format_us, Bytes};

/// Columns of `model.csv`, in order. README.md documents each.
pub const COLUMNS: [&str; 21] = [
    "config",
    "nranks",
    "dtype",
    "op",
    "status",
    "sizes",
    "sizes_kept",
    "min_bytes_kept",
    "max_bytes_kept",
    "alpha_us",
    "alpha_ci_low_us",
    "alpha_ci_high_us",
    "beta_algbw_gbps",
    "beta_algbw_ci_low_gbps",
    "beta_algbw_ci_high_gbps",
    "beta_busbw_gbps",
    "rms_residual_pct",
    "max_residual_pct",
    "alpha_determined",
    "beta_determined",
    "note",
];

/// The model of one config at one rank count.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigModel {
    pub config: String,
    pub nranks: u32,
    pub dtype: String,
    pub op: String,
    /// Sizes with a trusted ok mean time (the fit's input).
    pub sizes: usize,
    pub fit: Result<AlphaBeta, NoFit>,
}

impl ConfigModel {
    /// busbw / algbw for this rank count: 2(n-1)/n, nccl-tests' all-reduce factor.
    pub fn bus_factor(&self) -> f64 {
        if self.nranks == 0 {
            0.0
        } else {
            2.0 * (self.nranks as f64 - 1.0) / self.nranks as f64
        }
    }
}

/// Every (config, rank count, datatype, operator) of the run, in the run's order.
pub fn models(run: &RunData) -> Vec<ConfigModel> {
    let mut groups: Vec<(&str, u32, &str, &str)> = Vec::new();
    for c in &run.cases {
        let key = (c.config.as_str(), c.nranks, c.dtype.as_str(), c.op.as_str());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups
        .into_iter()
        .map(|(config, nranks, dtype, op)| {
            let points: Vec<Point> = run
                .cases
                .iter()
                .filter(|c| {
                    c.config == config && c.nranks == nranks && c.dtype == dtype && c.op == op
                })
                .filter(|c| c.is_ok() && c.is_trusted())
                .filter_map(point)
                .collect();
            ConfigModel {
                config: config.to_string(),
                nranks,
                dtype: dtype.to_string(),
                op: op.to_string(),
                sizes: points.len(),
                fit: fit(&points),
            }
        })
        .collect()
}

fn point(c: &CaseRow) -> Option<Point> {
    Some(Point {
        bytes: c.bytes as f64,
        time_us: c.time_us?,
    })
}

/// The text of `model.csv`.
pub fn csv(models: &[ConfigModel]) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    for m in models {
        let mut row = vec![
            m.config.clone(),
            m.nranks.to_string(),
            m.dtype.clone(),
            m.op.clone(),
        ];
        match &m.fit {
            Ok(f) => {
                let kept = |i: usize| f.kept.get(i).map(|b| format!("{b:.0}")).unwrap_or_default();
                let left_out: Vec<String> = f
                    .left_out
                    .iter()
                    .map(|&b| Bytes(b as u64).to_string())
                    .collect();
                row.extend([
                    "fit".to_string(),
                    m.sizes.to_string(),
                    f.kept.len().to_string(),
                    kept(0),
                    kept(f.kept.len().saturating_sub(1)),
                    format!("{:.3}", f.alpha_us),
                    format!("{:.3}", f.alpha_ci.0),
                    format!("{:.3}", f.alpha_ci.1),
                    rate(f.beta_gbps),
                    rate(f.beta_ci.0),
                    rate(f.beta_ci.1),
                    rate(f.beta_gbps * m.bus_factor()),
                    format!("{:.2}", f.rms_residual * 100.0),
                    format!("{:.2}", f.max_residual * 100.0),
                    f.alpha_determined.to_string(),
                    f.beta_determined.to_string(),
                    if left_out.is_empty() {
                        String::new()
                    } else {
                        format!("does not hold at {}", left_out.join(" "))
                    },
                ]);
            }
            Err(why) => {
                row.extend(["not possible".to_string(), m.sizes.to_string()]);
                row.extend(std::iter::repeat_n(String::new(), 14));
                row.push(why.to_string());
            }
        }
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// A rate cell: GB/s with three decimals, `inf` where the interval is unbounded.
fn rate(gbps: f64) -> String {
    if gbps.is_finite() {
        format!("{gbps:.3}")
    } else {
        "inf".to_string()
    }
}

/// The report's section: per rank count, each config's fixed cost and bandwidth
/// term (bus bandwidth, so it reads against busbw), where the model holds, and the
/// crossover size against the baseline; then the SHM sentence where the run has
/// both sides.
pub fn markdown(
    s: &mut String,
    models: &[ConfigModel],
    baseline: &str,
    shm_off: Option<&str>,
) -> Result<()> {
    if models.is_empty() {
        return Ok(());
    }
    writeln!(s, "## Latency and bandwidth model\n")?;
    writeln!(
        s,
        "Each config's mean times fitted to time = alpha + bytes / beta (robust weighted least squares on relative errors; sizes where the line misses, as where NCCL changes protocol, are left out and named). Alpha is the fixed cost of every all-reduce; beta, shown as bus bandwidth (x 2(n-1)/n), is the rate of the size-dependent term over the sizes where the line holds. Where the largest sizes are left out (they outgrow a cache, or NCCL changes algorithm), beta describes the sizes kept, and busbw at the largest size is the rate there. 95 % intervals in brackets; model.csv has every number.\n"
    )?;
    let mut counts: Vec<u32> = models.iter().map(|m| m.nranks).collect();
    counts.sort_unstable();
    counts.dedup();
    for nranks in counts {
        let here: Vec<&ConfigModel> = models.iter().filter(|m| m.nranks == nranks).collect();
        let base = here
            .iter()
            .find(|m| m.config == baseline)
            .and_then(|m| m.fit.as_ref().ok());
        writeln!(s, "### {nranks} rank(s)\n")?;
        writeln!(
            s,
            "| config | alpha (fixed cost) | beta (bus bandwidth) | holds for | residual (rms) | crossover vs {baseline} |\n|---|---|---|---|---|---|"
        )?;
        for m in &here {
            let Ok(f) = &m.fit else {
                let why = m
                    .fit
                    .as_ref()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                writeln!(s, "| {} | {why} | | | | |", m.config)?;
                continue;
            };
            let crossing = match base {
                Some(b) if m.config != baseline => crossing_text(b, f, baseline, &m.config),
                _ => String::new(),
            };
            writeln!(
                s,
                "| {} | {} | {} | {} | {:.1} % | {crossing} |",
                m.config,
                alpha_cell(f),
                beta_cell(f, m.bus_factor()),
                holds_for(f),
                f.rms_residual * 100.0,
            )?;
        }
        writeln!(s)?;
        if let (Some(base_model), Some(off)) = (
            here.iter().find(|m| m.config == baseline),
            shm_off.and_then(|off| here.iter().find(|m| m.config == off)),
        ) {
            if let Some(line) = shm_sentence(base_model, off) {
                writeln!(s, "{line}\n")?;
            }
        }
    }
    Ok(())
}

fn alpha_cell(f: &AlphaBeta) -> String {
    let cell = format!(
        "{} [{}, {}]",
        format_us(f.alpha_us),
        format_us(f.alpha_ci.0),
        format_us(f.alpha_ci.1)
    );
    if f.alpha_determined {
        cell
    } else {
        format!("{cell} (not determined: no size kept is latency-bound)")
    }
}

fn beta_cell(f: &AlphaBeta, bus: f64) -> String {
    let cell = format!(
        "{} GB/s [{}, {}]",
        rate(f.beta_gbps * bus),
        rate(f.beta_ci.0 * bus),
        rate(f.beta_ci.1 * bus)
    );
    if f.beta_determined {
        cell
    } else {
        format!("{cell} (not determined: no size kept is bandwidth-bound)")
    }
}

fn holds_for(f: &AlphaBeta) -> String {
    let (Some(first), Some(last)) = (f.kept.first(), f.kept.last()) else {
        return String::new();
    };
    let mut text = format!(
        "{} of {} sizes, {} to {}",
        f.kept.len(),
        f.kept.len() + f.left_out.len(),
        Bytes(*first as u64),
        Bytes(*last as u64)
    );
    if !f.left_out.is_empty() {
        let out: Vec<String> = f
            .left_out
            .iter()
            .map(|&b| Bytes(b as u64).to_string())
            .collect();
        write!(text, " (not at {})", out.join(", ")).ok();
    }
    text
}

fn crossing_text(base: &AlphaBeta, other: &AlphaBeta, baseline: &str, config: &str) -> String {
    let overlap = |a: (f64, f64), b: (f64, f64)| a.0 <= b.1 && b.0 <= a.1;
    if overlap(base.alpha_ci, other.alpha_ci) && overlap(base.beta_ci, other.beta_ci) {
        return "none: the two models do not differ (both intervals overlap)".to_string();
    }
    let measured = |x: f64| {
        let lo = base.kept.first().copied().unwrap_or(0.0);
        let hi = base.kept.last().copied().unwrap_or(0.0);
        if (lo..=hi).contains(&x) {
            ""
        } else {
            " (outside the sizes measured)"
        }
    };
    match crossover_bytes(base, other) {
        Some(x) => {
            let other_faster_above = other.beta_gbps > base.beta_gbps;
            let (below, above) = if other_faster_above {
                (baseline, config)
            } else {
                (config, baseline)
            };
            format!(
                "{}: {below} faster below, {above} above{}",
                Bytes(x.round() as u64),
                measured(x)
            )
        }
        None => {
            let faster = if other.time_us(1.0) < base.time_us(1.0) {
                config
            } else {
                baseline
            };
            format!("none: {faster} faster at every size")
        }
    }
}

/// "With N ranks, disabling SHM adds X per all-reduce and lowers the bandwidth term
/// from Y to Z GB/s", when both fits determine what the sentence says.
fn shm_sentence(base: &ConfigModel, off: &ConfigModel) -> Option<String> {
    let (Ok(b), Ok(o)) = (&base.fit, &off.fit) else {
        return None;
    };
    if !(b.alpha_determined && o.alpha_determined && b.beta_determined && o.beta_determined) {
        return None;
    }
    let bus = base.bus_factor();
    let d_alpha = o.alpha_us - b.alpha_us;
    let fixed = if d_alpha >= 0.0 {
        format!("adds {} to every all-reduce", format_us(d_alpha))
    } else {
        format!("takes {} off every all-reduce", format_us(-d_alpha))
    };
    let direction = if o.beta_gbps < b.beta_gbps {
        "lowers"
    } else {
        "raises"
    };
    Some(format!(
        "**With {} ranks, disabling SHM ({}) {fixed} and {direction} the bandwidth term from {} to {} GB/s** (bus bandwidth; fixed cost {} against {}; the models hold for {} and {}).",
        base.nranks,
        off.config,
        rate(b.beta_gbps * bus),
        rate(o.beta_gbps * bus),
        format_us(o.alpha_us),
        format_us(b.alpha_us),
        span(b),
        span(o),
    ))
}

/// "8 B to 4 MiB": the sizes a model was fitted over.
fn span(f: &AlphaBeta) -> String {
    match (f.kept.first(), f.kept.last()) {
        (Some(a), Some(b)) => format!("{} to {}", Bytes(*a as u64), Bytes(*b as u64)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::reader::ManifestHead;

    fn row(config: &str, nranks: u32, bytes: u64, time_us: f64) -> CaseRow {
        CaseRow {
            config: config.into(),
            backend: "host".into(),
            nranks,
            bytes,
            dtype: "float".into(),
            op: "sum".into(),
            iters: 100,
            status: "ok".into(),
            time_us: Some(time_us),
            ..CaseRow::default()
        }
    }

    /// default: 5 us + bytes at 20 GB/s; shm-off: 30 us + bytes at 2 GB/s.
    fn run() -> RunData {
        let mut cases = Vec::new();
        for (config, alpha, beta) in [("default", 5.0, 20.0), ("shm-off", 30.0, 2.0)] {
            for k in (3..=26).step_by(2) {
                let bytes = 1u64 << k;
                cases.push(row(config, 2, bytes, alpha + bytes as f64 / (beta * 1e3)));
            }
        }
        RunData {
            dir: "run".into(),
            manifest: ManifestHead::default(),
            cases,
            distributions: Default::default(),
        }
    }

    #[test]
    fn each_config_gets_its_alpha_and_beta_and_the_shm_sentence_carries_them() {
        let models = models(&run());
        assert_eq!(models.len(), 2);
        let f = models[1].fit.as_ref().unwrap();
        assert!((f.alpha_us - 30.0).abs() < 0.01, "{f:?}");
        assert!((f.beta_gbps - 2.0).abs() < 0.001, "{f:?}");
        let mut s = String::new();
        markdown(&mut s, &models, "default", Some("shm-off")).unwrap();
        assert!(
            s.contains("**With 2 ranks, disabling SHM (shm-off) adds 25.00 us to every all-reduce and lowers the bandwidth term from 20.000 to 2.000 GB/s**"),
            "{s}"
        );
        assert!(
            s.contains("the models hold for 8 B to 32 MiB and 8 B to 32 MiB)."),
            "{s}"
        );
        // The lines cross where 5 + x/2e4 = 30 + x/2e3: never at a positive size.
        assert!(s.contains("| none: default faster at every size |"), "{s}");
    }

    #[test]
    fn model_csv_has_a_row_per_config_and_says_why_a_fit_is_missing() {
        let mut r = run();
        r.cases.push(row("one-size", 2, 8, 4.0));
        let failed = row("failing", 2, 8, 4.0);
        r.cases.push(CaseRow {
            status: "failed".into(),
            ..failed
        });
        let text = String::from_utf8(csv(&models(&r)).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[1].starts_with("default,2,float,sum,fit,12,12,8,33554432,5.000,"),
            "{text}"
        );
        // busbw = algbw x 2(n-1)/n = 20 GB/s x 1 with two ranks.
        assert!(lines[1].contains(",20.000,0.00,0.00,true,true,"), "{text}");
        assert!(
            lines[3].starts_with("one-size,2,float,sum,not possible,1,"),
            "{text}"
        );
        assert!(
            lines[3].ends_with(",\"not possible: 1 size(s) measured, the fit needs at least 3\""),
            "{text}"
        );
        assert!(lines[4].contains("not possible: 0 size(s)"), "{text}");
    }

    #[test]
    fn the_crossover_names_which_config_wins_on_each_side() {
        // A config with a lower fixed cost but a slower rate: faster below the
        // crossing, the baseline above.
        let mut r = run();
        r.cases.retain(|c| c.config == "default");
        for k in (3..=26).step_by(2) {
            let bytes = 1u64 << k;
            r.cases
                .push(row("low-latency", 2, bytes, 2.0 + bytes as f64 / 10e3));
        }
        let mut s = String::new();
        markdown(&mut s, &models(&r), "default", None).unwrap();
        // 5 + x/2e4 = 2 + x/1e4: x = 3 / (1e-4 - 5e-5) = 60,000 bytes.
        assert!(
            s.contains("| 58.59 KiB: low-latency faster below, default above |"),
            "{s}"
        );
        assert!(!s.contains("disabling SHM"), "{s}");
        // A copy of the baseline within its noise crosses nowhere that means anything.
        let mut r = run();
        r.cases.retain(|c| c.config == "default");
        let copies: Vec<CaseRow> = r
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| CaseRow {
                config: "same".into(),
                time_us: c.time_us.map(|t| t * if i % 2 == 0 { 1.02 } else { 0.98 }),
                ..c.clone()
            })
            .collect();
        r.cases.extend(copies);
        let mut s = String::new();
        markdown(&mut s, &models(&r), "default", None).unwrap();
        assert!(
            s.contains("| none: the two models do not differ (both intervals overlap) |"),
            "{s}"
        );
    }
}
