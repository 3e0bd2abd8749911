//! The soak chart: bus bandwidth per interval over the soak's time, one chart per
//! soaked case (`soak-<config>-n<ranks>-<collective>.svg` and `.png`), the run's
//! median as a dashed line, the `--dip` limit dotted, and every dip episode shaded
//! red with its depth; each interval's figures are in the SVG's tooltips.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::analysis::soak::{EpisodeFindings, SoakFindings, SoakSeries};
use crate::units::Bytes;

const EPISODE: RGBColor = RGBColor(214, 39, 40);

/// What moved with a dip, in words, for its tip (`report::soak` says it).
pub type CauseWords<'a> = &'a dyn Fn(&EpisodeFindings) -> Option<String>;

/// Draws every soaked case's chart into `out_dir`.
pub fn draw(findings: &SoakFindings, out_dir: &Path, causes: CauseWords) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out_dir).map_err(err)?;
    common::ensure_font()?;
    let mut written = Vec::new();
    for s in &findings.series {
        let stem = format!(
            "soak-{}-n{}-{}",
            file_part(&s.config),
            s.nranks,
            s.collective
        );
        written.extend(common::svg_and_png!(out_dir, stem, |area, tips| plot(
            area, findings, s, tips, causes
        )));
    }
    Ok(written)
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    f: &SoakFindings,
    s: &SoakSeries,
    tips: &mut common::Tips,
    causes: CauseWords,
) -> Result<()> {
    let t0 = s.rows.first().map_or(0.0, |r| r.start_s);
    let t1 = s.rows.last().map_or(1.0, |r| r.end_s).max(t0 + 1e-3);
    let y_max = s.rows.iter().map(|r| r.busbw_gbps).fold(0.0, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let title = format!(
        "Bus bandwidth over time: {}, {} ranks, {} {}",
        crate::ops::collective::labelled(&s.config, &s.collective),
        s.nranks,
        s.collective,
        Bytes(s.bytes)
    );
    let area = common::titled(&root, &title)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.0..(t1 - t0), 0.0..y_max)
        .map_err(err)?;
    common::style_mesh(
        &mut chart,
        "seconds into the soak",
        "bus bandwidth (GB/s)",
        &common::number_label,
        &common::number_label,
        10,
    )?;
    for e in &s.episodes {
        let (a, b) = (e.start_s - t0, e.end_s - t0);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(a, 0.0), (b, y_max)],
                EPISODE.mix(0.15).filled(),
            )))
            .map_err(err)?;
        let mut tip = format!(
            "dip {}-{}: busbw {:.0} % below the median ({:.2} against {:.2} GB/s)",
            f.clock(e.start_s),
            f.clock(e.end_s),
            e.episode.mean_drop * 100.0,
            e.low_gbps,
            e.median_gbps
        );
        if let Some(c) = causes(e) {
            tip.push_str(&format!("; {c}"));
        }
        tips.add(&chart, &((a + b) / 2.0, y_max * 0.95), tip);
    }
    if let Some(st) = s.stability {
        let dashed = |y: f64, color: RGBColor| {
            let n = 60;
            (0..n).filter(|i| i % 2 == 0).map(move |i| {
                let x = |k: usize| (t1 - t0) * k as f64 / n as f64;
                PathElement::new(vec![(x(i), y), (x(i + 1), y)], color.stroke_width(1))
            })
        };
        chart
            .draw_series(dashed(st.median, RGBColor(90, 90, 90)))
            .map_err(err)?
            .label(format!("median {:.2} GB/s", st.median))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(90, 90, 90)));
        let limit = st.median * (1.0 - f.info.dip);
        chart
            .draw_series(dashed(limit, EPISODE))
            .map_err(err)?
            .label(format!("dip limit: {:.0} % below", f.info.dip * 100.0))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], EPISODE));
    }
    let points: Vec<(f64, f64)> = s
        .rows
        .iter()
        .map(|r| ((r.start_s + r.end_s) / 2.0 - t0, r.busbw_gbps))
        .collect();
    let color = common::color(0);
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
        .map_err(err)?
        .label("busbw per interval")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    for (r, p) in s.rows.iter().zip(&points) {
        tips.add(
            &chart,
            p,
            format!(
                "{}: busbw {:.2} GB/s, {} iterations{}",
                f.clock(r.start_s),
                r.busbw_gbps,
                r.iterations,
                r.p99_us
                    .map(|p| format!(", p99 {}", crate::units::format_us(p)))
                    .unwrap_or_default()
            ),
        );
    }
    common::legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    Ok(())
}
