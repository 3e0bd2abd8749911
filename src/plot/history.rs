//! The history charts: for each backend, datatype and op, rank count and followed
//! size, one line per config over the runs in order (bus bandwidth; the median
//! latency for sizes under 4 KiB, where busbw says nothing), each step a dashed
//! vertical line (red where it is slower, green where faster) and each one-off
//! a ring; results the quality rules flagged (never judged) are hollow squares, and
//! cases that were not ok are red crosses at the bottom.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::common::{self, err};
use crate::analysis::history::{History, Point, Series};
use crate::stats::change::Change;
use crate::units::Bytes;

/// Below this size a chart shows latency instead of bus bandwidth.
const LATENCY_BELOW: u64 = 4096;

const IMPROVED: RGBColor = RGBColor(44, 160, 44);

/// What one chart holds: (backend, datatype, op, ranks, bytes).
type ChartKey = (String, String, String, u32, u64);

fn chart_key(s: &Series) -> ChartKey {
    (
        s.backend.clone(),
        s.dtype.clone(),
        s.op.clone(),
        s.nranks,
        s.bytes,
    )
}

/// Each chart's key, in the history's order.
fn charts(h: &History) -> Vec<ChartKey> {
    let mut out: Vec<ChartKey> = Vec::new();
    for s in &h.series {
        let key = chart_key(s);
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// Draws `history-<backend>-n<ranks>-<size>.svg` and `.png` for every chart
/// (`history-<backend>-<dtype>-<op>-n<ranks>-<size>` when the runs measured
/// several datatypes or ops).
pub fn draw(h: &History, out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let mut written = Vec::new();
    for key in charts(h) {
        let series: Vec<&Series> = h.series.iter().filter(|s| chart_key(s) == key).collect();
        let (backend, dtype, op, nranks, bytes) = key;
        let kind = if h.several_kinds() {
            format!("-{}-{}", file_part(&dtype), file_part(&op))
        } else {
            String::new()
        };
        let stem = format!(
            "history-{}{kind}-n{nranks}-{}",
            file_part(&backend),
            Bytes(bytes).short()
        );
        written.extend(common::svg_and_png!(out_dir, stem, |area, tips| plot(
            area, h, &series, tips
        )));
    }
    Ok(written)
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn value(p: &Point, latency: bool) -> Option<f64> {
    if latency {
        p.median_us
    } else {
        p.busbw_gbps
    }
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    h: &History,
    series: &[&Series],
    tips: &mut common::Tips,
) -> Result<()> {
    let first = series[0];
    let latency = first.bytes < LATENCY_BELOW;
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| value(p, latency)))
        .fold(0.0f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let n = h.runs.len().max(1);
    let x_range = -0.5..(n as f64 - 0.5);
    let kind = if h.several_kinds() {
        format!(", {} {}", first.dtype, first.op)
    } else {
        String::new()
    };
    let title = format!(
        "{} over {} runs: {}, {} ranks{kind} ({})",
        if latency {
            "Median latency"
        } else {
            "Bus bandwidth"
        },
        h.runs.len(),
        Bytes(first.bytes),
        first.nranks,
        first.backend
    );
    let area = common::titled(&root, &title)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x_range.clone(), 0.0..y_max)
        .map_err(err)?;
    // Dates under the runs (the run's name when it has no start time).
    let run_label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-9 || i < 0.0 || i as usize >= h.runs.len() {
            return String::new();
        }
        let r = &h.runs[i as usize];
        match r.started_at.get(..10) {
            Some(date) => date.to_string(),
            None => r.name.clone(),
        }
    };
    common::style_mesh(
        &mut chart,
        "run (in the order they started)",
        if latency {
            "median latency (us)"
        } else {
            "bus bandwidth (GB/s)"
        },
        &run_label,
        &common::number_label,
        n.min(10),
    )?;
    let mut failed = Vec::new();
    let mut flagged_legend = false;
    for (i, s) in series.iter().enumerate() {
        let color = common::color(i);
        let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for p in &s.points {
            match value(p, latency) {
                Some(v) => {
                    if let Some(seg) = segments.last_mut() {
                        seg.push((p.run as f64, v));
                    }
                }
                None => {
                    failed.push((p.run as f64, 0.0));
                    segments.push(Vec::new());
                }
            }
        }
        segments.retain(|s| !s.is_empty());
        let label = crate::ops::collective::labelled(&s.config, &s.collective);
        common::config_line(&mut chart, segments, color, &label)?;
        for p in &s.points {
            let Some(v) = value(p, latency) else { continue };
            let mut tip = format!("{label}, {}, {}", h.runs[p.run].name, Bytes(s.bytes));
            if let Some(b) = p.busbw_gbps {
                tip.push_str(&format!(": busbw {b:.2} GB/s"));
            }
            if let Some(m) = p.median_us {
                tip.push_str(&format!("; median {}", crate::units::format_us(m)));
            }
            if let Some((lo, hi)) = p.ci_us {
                tip.push_str(&format!(
                    " [{}, {}] (95 %)",
                    crate::units::format_us(lo),
                    crate::units::format_us(hi)
                ));
            }
            if !p.trusted {
                tip.push_str("; flagged, not judged");
            }
            tips.add(&chart, &(p.run as f64, v), tip);
        }
        // Flagged results are on the line but were never judged: hollow squares.
        let flagged: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| !p.trusted)
            .filter_map(|p| Some((p.run as f64, value(p, latency)?)))
            .collect();
        let drawn = chart
            .draw_series(flagged.iter().map(|&p| {
                EmptyElement::at(p)
                    + Rectangle::new([(-6, -6), (6, 6)], WHITE.filled())
                    + Rectangle::new([(-6, -6), (6, 6)], color.stroke_width(2))
            }))
            .map_err(err)?;
        if !flagged.is_empty() && !flagged_legend {
            flagged_legend = true;
            drawn
                .label("flagged by the quality rules (not judged)")
                .legend(|(x, y)| {
                    Rectangle::new([(x + 4, y - 5), (x + 14, y + 5)], BLACK.stroke_width(2))
                });
        }
        let rings: Vec<(f64, f64)> = s
            .one_offs
            .iter()
            .filter_map(|o| {
                let p = s.points.iter().find(|p| p.run == o.run)?;
                Some((o.run as f64, value(p, latency)?))
            })
            .collect();
        chart
            .draw_series(
                rings
                    .into_iter()
                    .map(|p| Circle::new(p, 8, color.stroke_width(2))),
            )
            .map_err(err)?;
        for st in &s.steps {
            let x = (st.before as f64 + st.after as f64) / 2.0;
            let c = if st.verdict == Change::Slower {
                common::FAILED
            } else {
                IMPROVED
            };
            let style = c.stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new([(x, 0.0), (x, y_max)], 6, 4, style))
                .map_err(err)?
                .label(format!(
                    "{}: {} {:+.1} % at {}",
                    s.config,
                    st.verdict,
                    st.change * 100.0,
                    h.runs[st.after].name
                ))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
    }
    common::failed_markers(&mut chart, failed)?;
    common::legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
    root.present().map_err(err)
}
