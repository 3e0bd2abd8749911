//! Bus bandwidth against GPU count (`scaling`), at the run's largest message size
//! (solid lines, dots) and at the size nearest to 64 KiB (thin lines, triangles), one
//! pair of lines per config. Only drawn when the run has two or more GPU counts.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::export::reader::RunData;
use crate::units::Bytes;

/// The small size the chart shows: the run's size nearest to this one.
const SMALL_TARGET: u64 = 64 * 1024;

/// Draws `scaling.svg` and `.png`; nothing when the run has fewer than 2 GPU counts.
pub fn draw(run: &RunData, out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let counts = common::gpu_counts(run);
    if counts.len() < 2 {
        return Ok(Vec::new());
    }
    Ok(common::svg_and_png!(out_dir, "scaling", |area, tips| plot(
        area, run, &counts, tips
    ))
    .to_vec())
}

/// The largest size and the size nearest to 64 KiB (on a log scale), in that order,
/// without repeating one size.
fn sizes(run: &RunData) -> Vec<u64> {
    let largest = run.cases.iter().map(|c| c.bytes).max();
    let distance = |b: u64| (common::size_x(b) - common::size_x(SMALL_TARGET)).abs();
    let small = run
        .cases
        .iter()
        .map(|c| c.bytes)
        .min_by(|a, b| distance(*a).total_cmp(&distance(*b)).then(a.cmp(b)));
    let mut out: Vec<u64> = largest.into_iter().collect();
    if let Some(s) = small.filter(|s| Some(*s) != largest) {
        out.push(s);
    }
    out
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    run: &RunData,
    counts: &[u32],
    tips: &mut common::Tips,
) -> Result<()> {
    let sizes = sizes(run);
    let y_max = run
        .cases
        .iter()
        .filter(|c| c.is_ok() && sizes.contains(&c.bytes))
        .filter_map(|c| c.busbw_gbps)
        .fold(0.0f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let first = counts.first().copied().unwrap_or(1) as f64;
    let last = counts.last().copied().unwrap_or(2) as f64;
    let x_range = (first - 0.5)..(last + 0.5);
    let label_sizes: Vec<String> = sizes.iter().map(|&b| Bytes(b).short()).collect();
    let area = common::titled(
        &root,
        &format!(
            "Scaling of bus bandwidth with GPU count ({})",
            label_sizes.join(" and ")
        ),
    )?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x_range, 0.0..y_max)
        .map_err(err)?;
    let count_label = |x: &f64| {
        if (x - x.round()).abs() < 1e-9 && counts.contains(&(x.round() as u32)) {
            format!("{}", x.round())
        } else {
            String::new()
        }
    };
    common::style_mesh(
        &mut chart,
        "GPU count",
        "bus bandwidth (GB/s)",
        &count_label,
        &common::number_label,
        ((last - first) as usize + 2).min(64),
    )?;

    let mut failed = Vec::new();
    for (i, config) in common::configs(run).iter().enumerate() {
        let color = common::color(i);
        for (k, &bytes) in sizes.iter().enumerate() {
            let rows: Vec<_> = run
                .cases
                .iter()
                .filter(|c| &c.config == config && c.bytes == bytes)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|c| c.is_ok())
                .filter_map(|c| Some((c.nranks as f64, c.busbw_gbps?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            failed.extend(
                rows.iter()
                    .filter(|c| !c.is_ok())
                    .map(|c| (c.nranks as f64, 0.0)),
            );
            tips.cases(&chart, run, &rows, |c| {
                Some((c.nranks as f64, c.busbw_gbps?))
            });
            let width = if k == 0 { 3 } else { 1 };
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))
                .map_err(err)?
                .label(format!("{config}, {}", Bytes(bytes).short()))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
                });
            if k == 0 {
                chart
                    .draw_series(
                        points
                            .into_iter()
                            .map(|p| Circle::new(p, 4, color.filled())),
                    )
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(
                        points
                            .into_iter()
                            .map(|p| TriangleMarker::new(p, 5, color.filled())),
                    )
                    .map_err(err)?;
            }
        }
    }
    common::failed_markers(&mut chart, failed)?;
    common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}
