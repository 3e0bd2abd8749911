//! Latency against message size on log-log axes, one chart per GPU count
//! (`latency-n{N}`): one line per config at each case's typical time (the geometric
//! mean of its round medians, the time every table and change reads), with a
//! translucent band up to its p99; cases that did not succeed are red crosses at the
//! bottom.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::export::reader::RunData;

/// Draws `latency-n{N}.svg` and `.png` for every GPU count of the run.
pub fn draw(run: &RunData, out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let mut written = Vec::new();
    for nranks in common::gpu_counts(run) {
        written.extend(common::svg_and_png!(
            out_dir,
            format!("latency-n{nranks}"),
            |area, tips| plot(area, run, nranks, tips)
        ));
    }
    Ok(written)
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    run: &RunData,
    nranks: u32,
    tips: &mut common::Tips,
) -> Result<()> {
    let configs = common::configs(run);
    let y_range = common::log_range(
        run.cases
            .iter()
            .filter(|c| c.nranks == nranks && c.is_ok())
            .flat_map(|c| [c.typical_us(), c.p99_us])
            .flatten(),
    );
    let bottom = y_range.start;
    let area = common::titled(
        &root,
        &format!(
            "{} latency (typical round median, band to p99), {}",
            run.collective_title(),
            run.ranks(nranks)
        ),
    )?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(common::size_range(run), y_range.log_scale())
        .map_err(err)?;
    common::style_mesh(
        &mut chart,
        "message size",
        "latency (us)",
        &common::size_label,
        &common::number_label,
        24,
    )?;

    let mut failed = Vec::new();
    for (i, config) in configs.iter().enumerate() {
        let rows = common::rows(run, config, nranks);
        if rows.is_empty() {
            continue;
        }
        let color = common::color(i);
        let segments = common::segments(&rows, |c| {
            let typical = c.typical_us().filter(|v| *v > 0.0)?;
            Some((
                common::size_x(c.bytes),
                typical,
                c.p99_us.unwrap_or(typical).max(typical),
            ))
        });
        failed.extend(
            rows.iter()
                .filter(|c| !c.is_ok())
                .map(|c| (common::size_x(c.bytes), bottom)),
        );
        // The band of each segment: along the typical time, then back along p99.
        let bands = segments.iter().filter(|s| s.len() >= 2).map(|s| {
            let outline: Vec<(f64, f64)> = s
                .iter()
                .map(|&(x, typical, _)| (x, typical))
                .chain(s.iter().rev().map(|&(x, _, p99)| (x, p99)))
                .collect();
            Polygon::new(outline, color.mix(0.18).filled())
        });
        chart.draw_series(bands).map_err(err)?;
        let lines: Vec<Vec<(f64, f64)>> = segments
            .iter()
            .map(|s| s.iter().map(|&(x, typical, _)| (x, typical)).collect())
            .collect();
        common::config_line(&mut chart, lines, color, config)?;
        tips.cases(&chart, run, &rows, |c| {
            let typical = c.typical_us().filter(|v| *v > 0.0)?;
            Some((common::size_x(c.bytes), typical))
        });
    }
    common::failed_markers(&mut chart, failed)?;
    common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}
