//! "Your job" as a chart (`job-n{N}`), one per rank count the job runs on: the job's
//! calls per (collective, size) as bars (its size histogram, right axis) under the
//! bus bandwidth each config measured for those collectives (lines, left axis), so
//! that the sizes the job sends are read against what each config does there.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::config::SizesFrom;
use crate::export::reader::RunData;
use crate::ops::collective::Collective;

/// Draws `job-n{N}.svg` and `.png` for each rank count of the run the job's calls
/// run on (a call without a rank count runs on every one); none without calls.
pub fn draw(run: &RunData, job: &SizesFrom, out_dir: &Path) -> Result<Vec<PathBuf>> {
    if job.calls.is_empty() {
        return Ok(Vec::new());
    }
    common::ensure_font()?;
    std::fs::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    for nranks in common::gpu_counts(run) {
        let calls: Vec<(Collective, u64, u64)> = job
            .calls
            .iter()
            .filter(|c| c.nranks.is_none_or(|n| n == nranks))
            .map(|c| (c.collective, c.bytes, c.calls))
            .collect();
        if calls.is_empty() {
            continue;
        }
        written.extend(common::svg_and_png!(
            out_dir,
            format!("job-n{nranks}"),
            |area, tips| plot(area, run, job, &calls, nranks, tips)
        ));
    }
    Ok(written)
}

/// The job's collectives, in the order its calls name them.
fn collectives(calls: &[(Collective, u64, u64)]) -> Vec<Collective> {
    let mut all: Vec<Collective> = Vec::new();
    for c in calls {
        if !all.contains(&c.0) {
            all.push(c.0);
        }
    }
    all
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    run: &RunData,
    job: &SizesFrom,
    calls: &[(Collective, u64, u64)],
    nranks: u32,
    tips: &mut common::Tips,
) -> Result<()> {
    let colls = collectives(calls);
    let measured: Vec<&crate::export::reader::CaseRow> = run
        .cases
        .iter()
        .filter(|c| c.nranks == nranks && c.is_ok() && colls.contains(&c.coll()))
        .collect();
    let y_max = measured
        .iter()
        .filter_map(|c| c.busbw_gbps)
        .fold(0.0f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let most_calls = calls.iter().map(|c| c.2).max().unwrap_or(1).max(1) as f64 * 1.15;
    let xs = calls
        .iter()
        .map(|c| common::size_x(c.1))
        .chain(measured.iter().map(|c| common::size_x(c.bytes)));
    let lo = xs.clone().fold(f64::INFINITY, f64::min);
    let hi = xs.fold(f64::NEG_INFINITY, f64::max);
    let x_range = (lo - 0.5)..(hi + 0.5);
    let area = common::titled(
        &root,
        &format!(
            "Your job on {}: its calls and each config's bus bandwidth",
            run.ranks(nranks)
        ),
    )?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .right_y_label_area_size(65)
        .build_cartesian_2d(x_range.clone(), 0.0..y_max)
        .map_err(err)?
        .set_secondary_coord(x_range, 0.0..most_calls);
    common::style_mesh(
        &mut chart,
        "message size",
        "bus bandwidth (GB/s)",
        &common::size_label,
        &common::number_label,
        24,
    )?;
    chart
        .configure_secondary_axes()
        .y_desc(format!("the job's calls {}", job.per))
        .label_style((common::FONT, 14))
        .axis_desc_style((common::FONT, 16))
        .y_label_formatter(&common::number_label)
        .draw()
        .map_err(err)?;
    // The bars first, under the lines: each collective's beside the others' at a size,
    // narrow enough that the job's nearest sizes do not overlap.
    let mut at: Vec<f64> = calls.iter().map(|c| common::size_x(c.1)).collect();
    at.sort_by(f64::total_cmp);
    at.dedup();
    let gap = at.windows(2).map(|w| w[1] - w[0]).fold(1.0f64, f64::min);
    // Never thinner than can be seen: sizes closer than that overlap, see-through.
    let span = (0.9 * gap).clamp(0.15 * colls.len() as f64, 0.8);
    let width = span / colls.len() as f64;
    for (k, coll) in colls.iter().enumerate() {
        let color = common::color(k + 4).mix(0.35);
        let bars: Vec<(f64, u64, u64)> = calls
            .iter()
            .filter(|c| c.0 == *coll)
            .map(|c| {
                let x = common::size_x(c.1) - span / 2.0 + width * k as f64;
                (x, c.1, c.2)
            })
            .collect();
        chart
            .draw_secondary_series(bars.iter().map(|&(x, _, n)| {
                Rectangle::new([(x, 0.0), (x + width, n as f64)], color.filled())
            }))
            .map_err(err)?
            .label(format!("{} calls", coll.name()))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
        for &(x, bytes, n) in &bars {
            let text = format!(
                "{} {}: {n} calls {}",
                coll.name(),
                crate::units::Bytes(bytes),
                job.per
            );
            let at = (x + width / 2.0, n as f64 * y_max / most_calls);
            tips.add(&chart, &at, text);
        }
    }
    let configs = common::configs(run);
    let several = colls.len() > 1;
    for (i, config) in configs.iter().enumerate() {
        for (k, coll) in colls.iter().enumerate() {
            let rows: Vec<&crate::export::reader::CaseRow> = common::rows(run, config, nranks)
                .into_iter()
                .filter(|c| c.coll() == *coll)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let label = if several {
                format!("{config} {}", coll.name())
            } else {
                config.clone()
            };
            let color = common::color(i + k * configs.len());
            let segments =
                common::segments(&rows, |c| Some((common::size_x(c.bytes), c.busbw_gbps?)));
            common::config_line(&mut chart, segments, color, &label)?;
            tips.cases(&chart, run, &rows, |c| {
                Some((common::size_x(c.bytes), c.busbw_gbps?))
            });
        }
    }
    common::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}
