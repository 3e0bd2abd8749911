//! Measured time against NCCL's own prediction, one chart per config
//! (`predicted-<config>`): for each GPU count the measured median (solid), NCCL's
//! predicted time (`nccl_predicted_us`, dashed) with a band up to
//! [`MISPREDICT_RATIO`] x the prediction, and a red ring on every case beyond the
//! band, the ones the report names. Only configs with a prediction get a chart.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::analysis::tuning::MISPREDICT_RATIO;
use crate::export::reader::{CaseRow, RunData};

/// Draws `predicted-<config>.svg` and `.png` for every config with a prediction.
pub fn draw(run: &RunData, out_dir: &Path) -> Result<Vec<PathBuf>> {
    let configs: Vec<String> = common::configs(run)
        .into_iter()
        .filter(|config| {
            run.cases
                .iter()
                .any(|c| &c.config == config && point(c).is_some())
        })
        .collect();
    if configs.is_empty() {
        return Ok(Vec::new());
    }
    common::ensure_font()?;
    let mut written = Vec::new();
    for config in &configs {
        written.extend(common::svg_and_png!(
            out_dir,
            format!("predicted-{config}"),
            |area, tips| plot(area, run, config, tips)
        ));
    }
    Ok(written)
}

/// A case's (size, typical time, NCCL's prediction), where it has both.
fn point(c: &CaseRow) -> Option<(f64, f64, f64)> {
    let measured = c.typical_us().filter(|v| *v > 0.0)?;
    let predicted = c.nccl_predicted_us.filter(|v| *v > 0.0)?;
    c.is_ok()
        .then_some((common::size_x(c.bytes), measured, predicted))
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    run: &RunData,
    config: &str,
    tips: &mut common::Tips,
) -> Result<()> {
    let points: Vec<(f64, f64, f64)> = run
        .cases
        .iter()
        .filter(|c| c.config == config)
        .filter_map(point)
        .collect();
    let y_range = common::log_range(
        points
            .iter()
            .flat_map(|&(_, m, p)| [m, p * MISPREDICT_RATIO]),
    );
    let area = common::titled(
        &root,
        &format!("Measured median against NCCL's predicted time, {config}"),
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
        "time per all-reduce (us)",
        &common::size_label,
        &common::number_label,
        24,
    )?;
    let mut beyond = Vec::new();
    for (i, nranks) in common::gpu_counts(run).into_iter().enumerate() {
        let rows = common::rows(run, config, nranks);
        let segments = common::segments(&rows, point);
        if segments.is_empty() {
            continue;
        }
        let color = common::color(i);
        // The band from the prediction to MISPREDICT_RATIO x it, per segment.
        let bands = segments.iter().filter(|s| s.len() >= 2).map(|s| {
            let outline: Vec<(f64, f64)> = s
                .iter()
                .map(|&(x, _, p)| (x, p))
                .chain(s.iter().rev().map(|&(x, _, p)| (x, p * MISPREDICT_RATIO)))
                .collect();
            Polygon::new(outline, color.mix(0.12).filled())
        });
        chart.draw_series(bands).map_err(err)?;
        for (k, s) in segments.iter().enumerate() {
            let dashed = chart
                .draw_series(DashedLineSeries::new(
                    s.iter().map(|&(x, _, p)| (x, p)).collect::<Vec<_>>(),
                    8,
                    5,
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            if k == 0 {
                dashed
                    .label(format!(
                        "{}: NCCL's prediction (band to {MISPREDICT_RATIO}x)",
                        run.ranks(nranks)
                    ))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2))
                    });
            }
        }
        let measured: Vec<Vec<(f64, f64)>> = segments
            .iter()
            .map(|s| s.iter().map(|&(x, m, _)| (x, m)).collect())
            .collect();
        common::config_line(
            &mut chart,
            measured,
            color,
            &format!("{}: measured median", run.ranks(nranks)),
        )?;
        for row in &rows {
            if let Some((x, m, p)) = point(row) {
                let tip = format!(
                    "{}; NCCL predicted {} ({:.2}x)",
                    common::case_tip(run, row),
                    crate::units::format_us(p),
                    m / p
                );
                tips.add(&chart, &(x, m), tip);
            }
        }
        beyond.extend(
            segments
                .iter()
                .flatten()
                .filter(|&&(_, m, p)| m > MISPREDICT_RATIO * p)
                .map(|&(x, m, _)| (x, m)),
        );
    }
    if !beyond.is_empty() {
        let n = beyond.len();
        chart
            .draw_series(
                beyond
                    .into_iter()
                    .map(|p| Circle::new(p, 8, common::FAILED.stroke_width(2))),
            )
            .map_err(err)?
            .label(format!(
                "slower than {MISPREDICT_RATIO}x NCCL's prediction ({n})"
            ))
            .legend(|(x, y)| Circle::new((x + 10, y), 6, common::FAILED.stroke_width(2)));
    }
    common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}
