//! Bus bandwidth against message size, one chart per GPU count (`busbw-n{N}`), one
//! line per config; cases that did not succeed are red crosses on the size axis. The
//! rings' link ceilings measured before the sweep are dashed lines.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::export::reader::RunData;

/// Draws `busbw-n{N}.svg` and `.png` for every GPU count of the run.
pub fn draw(run: &RunData, out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let mut written = Vec::new();
    for nranks in common::gpu_counts(run) {
        written.extend(common::svg_and_png!(
            out_dir,
            format!("busbw-n{nranks}"),
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
    let y_max = run
        .cases
        .iter()
        .filter(|c| c.nranks == nranks && c.is_ok())
        .filter_map(|c| c.busbw_gbps)
        .fold(0.0f64, f64::max);
    let ceilings: Vec<(String, f64)> = run
        .manifest
        .ceilings
        .as_ref()
        .map(|c| {
            crate::analysis::ceiling::rings(c, run.manifest.backend.used == "host", &[nranks])
                .into_iter()
                .map(|(_, what, gbps)| (what, gbps))
                .collect()
        })
        .unwrap_or_default();
    let y_max = ceilings.iter().map(|c| c.1).fold(y_max, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    let area = common::titled(
        &root,
        &format!(
            "{} bus bandwidth, {}",
            run.collective_title(),
            run.ranks(nranks)
        ),
    )?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(common::size_range(run), 0.0..y_max)
        .map_err(err)?;
    common::style_mesh(
        &mut chart,
        "message size",
        "bus bandwidth (GB/s)",
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
        let segments = common::segments(&rows, |c| Some((common::size_x(c.bytes), c.busbw_gbps?)));
        failed.extend(
            rows.iter()
                .filter(|c| !c.is_ok())
                .map(|c| (common::size_x(c.bytes), 0.0)),
        );
        common::config_line(&mut chart, segments, color, config)?;
        tips.cases(&chart, run, &rows, |c| {
            Some((common::size_x(c.bytes), c.busbw_gbps?))
        });
    }
    let x = common::size_range(run);
    for (what, gbps) in ceilings {
        let style = BLACK.mix(0.6).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(
                [(x.start, gbps), (x.end, gbps)],
                8,
                5,
                style,
            ))
            .map_err(err)?
            .label(format!("ceiling: {what}, {gbps:.1} GB/s"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    common::failed_markers(&mut chart, failed)?;
    common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}
