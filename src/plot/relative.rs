//! Each config's median latency relative to the baseline config, per message size,
//! one chart per GPU count (`relative-n{N}`): the change in percent (positive is
//! slower) with the interval it is decided on as a band, over a grey +-threshold
//! band around 0. The numbers come from the same decision as `nccl-bench compare`.
//! Pairs where one side did not succeed are red crosses at the bottom.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::analysis::compare::{compare, CompareOptions, Side};
use crate::export::reader::RunData;

/// One config's changes against the baseline: runs of `(x, change %, ci lo %,
/// ci hi %)`, split where a pair failed so no line bridges a failure.
struct Relative {
    config_index: usize,
    config: String,
    segments: Vec<Vec<(f64, f64, f64, f64)>>,
    failed: Vec<f64>,
}

/// Draws `relative-n{N}.svg` and `.png` for every GPU count at which the baseline
/// config ran; nothing when the run has no such config.
pub fn draw(run: &RunData, baseline: &str, threshold: f64, out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let mut written = Vec::new();
    for nranks in common::gpu_counts(run) {
        let series = relatives(run, baseline, threshold, nranks);
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            run,
            baseline,
            threshold,
            nranks,
            series: &series,
        };
        written.extend(common::svg_and_png!(
            out_dir,
            format!("relative-n{nranks}"),
            |area, tips| chart.plot(area, tips)
        ));
    }
    Ok(written)
}

/// The comparisons of every other config against the baseline at one GPU count
/// (each config's pair decided over all its cases, as the report's tables);
/// empty when the baseline did not run there.
fn relatives(run: &RunData, baseline: &str, threshold: f64, nranks: u32) -> Vec<Relative> {
    if common::rows(run, baseline, nranks).is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (config_index, config) in common::configs(run).into_iter().enumerate() {
        if config == baseline {
            continue;
        }
        let (base, cand) = (Side::config(run, baseline), Side::config(run, &config));
        let Ok(pair) = compare(&base, &cand, CompareOptions::new(threshold)) else {
            continue;
        };
        let mut rel = Relative {
            config_index,
            config: config.clone(),
            segments: vec![Vec::new()],
            failed: Vec::new(),
        };
        let mut rows: Vec<_> = pair.rows.iter().filter(|r| r.nranks == nranks).collect();
        rows.sort_by_key(|r| r.bytes);
        for r in rows {
            let x = common::size_x(r.bytes);
            let (Some(change), Some((lo, hi))) = (r.case.relative(), r.case.interval) else {
                rel.failed.push(x);
                rel.segments.push(Vec::new());
                continue;
            };
            if let Some(segment) = rel.segments.last_mut() {
                segment.push((x, change * 100.0, lo * 100.0, hi * 100.0));
            }
        }
        rel.segments.retain(|s| !s.is_empty());
        out.push(rel);
    }
    out
}

struct Chart<'a> {
    run: &'a RunData,
    baseline: &'a str,
    threshold: f64,
    nranks: u32,
    series: &'a [Relative],
}

impl Chart<'_> {
    fn plot<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        tips: &mut common::Tips,
    ) -> Result<()> {
        let t = self.threshold.abs() * 100.0;
        let (lo, hi) = self
            .series
            .iter()
            .flat_map(|s| s.segments.iter().flatten())
            .fold((-t, t), |(lo, hi), &(_, _, l, h)| (lo.min(l), hi.max(h)));
        let pad = ((hi - lo) * 0.08).max(1.0);
        let y_range = (lo - pad)..(hi + pad);
        let bottom = y_range.start;
        let x_range = common::size_range(self.run);
        let area = common::titled(
            &root,
            &format!(
                "Time vs '{}' (the decision's interval; above 0 is slower), {}",
                self.baseline,
                self.run.ranks(self.nranks)
            ),
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d(x_range.clone(), y_range)
            .map_err(err)?;
        common::style_mesh(
            &mut chart,
            "message size",
            "change of median latency (%)",
            &common::size_label,
            &common::number_label,
            24,
        )?;

        let grey = RGBColor(120, 120, 120);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x_range.start, -t), (x_range.end, t)],
                grey.mix(0.15).filled(),
            )))
            .map_err(err)?
            .label(format!("noise band ±{} %", common::number_label(&t)))
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 20, y + 5)], grey.mix(0.3).filled())
            });
        chart
            .draw_series(LineSeries::new(
                [(x_range.start, 0.0), (x_range.end, 0.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?
            .label(format!("{} (baseline)", self.baseline))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));

        let mut failed = Vec::new();
        for s in self.series {
            let color = common::color(s.config_index);
            failed.extend(s.failed.iter().map(|&x| (x, bottom)));
            let bands = s.segments.iter().filter(|g| g.len() >= 2).map(|g| {
                let outline: Vec<(f64, f64)> = g
                    .iter()
                    .map(|&(x, _, lo, _)| (x, lo))
                    .chain(g.iter().rev().map(|&(x, _, _, hi)| (x, hi)))
                    .collect();
                Polygon::new(outline, color.mix(0.2).filled())
            });
            chart.draw_series(bands).map_err(err)?;
            let lines: Vec<Vec<(f64, f64)>> = s
                .segments
                .iter()
                .map(|g| g.iter().map(|&(x, c, _, _)| (x, c)).collect())
                .collect();
            common::config_line(&mut chart, lines, color, &s.config)?;
            for &(x, change, lo, hi) in s.segments.iter().flatten() {
                let size = crate::units::Bytes(2f64.powf(x).round() as u64);
                // `relatives` draws an unbounded interval as the point alone.
                let interval = if lo == hi {
                    "(no interval: too few samples)".to_string()
                } else {
                    format!("[{lo:+.1}, {hi:+.1}] (95 %)")
                };
                let tip = format!(
                    "{} vs {}, {}, {size}: median {change:+.1} % {interval}",
                    s.config,
                    self.baseline,
                    self.run.ranks(self.nranks)
                );
                tips.add(&chart, &(x, change), tip);
            }
        }
        common::failed_markers(&mut chart, failed)?;
        common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(err)
    }
}
