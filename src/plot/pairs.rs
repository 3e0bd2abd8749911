//! The heatmap of `sweep --pairs` and `run --pairs`: per config, a GPU x GPU (core,
//! node) grid whose cells hold the pair's bus bandwidth at the largest size
//! (darker is faster), slow pairs outlined in red, pairs that failed marked in red,
//! slow GPUs or nodes marked on the axes.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::common::{self, err};
use crate::analysis::pairs::PairTable;
use crate::units::Bytes;

/// Draws `pairs-<config>.svg` and `.png` for every table.
pub fn draw(tables: &[PairTable], out_dir: &Path) -> Result<Vec<PathBuf>> {
    common::ensure_font()?;
    let mut written = Vec::new();
    for t in tables {
        written.extend(common::svg_and_png!(
            out_dir,
            format!("pairs-{}", t.config),
            |area, tips| plot(area, t, tips)
        ));
    }
    Ok(written)
}

/// From white (no bandwidth) to the palette's blue (the fastest pair).
fn shade(fraction: f64) -> RGBColor {
    let f = fraction.clamp(0.0, 1.0);
    let blue = common::color(0);
    let mix = |c: u8| (255.0 - (255.0 - c as f64) * f).round() as u8;
    RGBColor(mix(blue.0), mix(blue.1), mix(blue.2))
}

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    t: &PairTable,
    tips: &mut common::Tips,
) -> Result<()> {
    let n = t.size().max(1);
    let area = common::titled(
        &root,
        &format!(
            "Bus bandwidth per pair of {}s, {} at {} (GB/s)",
            t.unit,
            t.config,
            Bytes(t.bytes)
        ),
    )?;
    // A square grid in the middle of the canvas.
    let (w, h) = area.dim_in_pixel();
    let side = (w.min(h) as i32 - 60).max(100);
    let x0 = (w as i32 - side) / 2;
    let grid = area.margin(30, 30, x0.max(0) as u32, x0.max(0) as u32);
    // Host names are longer than "GPU 3": room for the longest, marked slow.
    let longest = t.names.iter().map(|n| n.chars().count()).max().unwrap_or(5) + 7;
    let label_width = (longest as u32 * 8 + 12).clamp(60, 240);
    let mut chart = ChartBuilder::on(&grid)
        .x_label_area_size(30)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..n as f64, 0.0..n as f64)
        .map_err(err)?;
    let slow: Vec<usize> = t.slow_members().map(|m| m.index).collect();
    let label = |v: &f64| {
        let d = v.floor();
        match t.names.get(d as usize) {
            Some(name) if (v - d - 0.5).abs() < 1e-9 => {
                let mark = if slow.contains(&(d as usize)) {
                    " (slow)"
                } else {
                    ""
                };
                format!("{name}{mark}")
            }
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(2 * n + 1)
        .y_labels(2 * n + 1)
        .label_style((common::FONT, 14))
        .x_label_formatter(&label)
        .y_label_formatter(&|v: &f64| label(&(n as f64 - v)))
        .draw()
        .map_err(err)?;
    let best = t
        .cells
        .iter()
        .filter_map(|c| c.busbw_gbps)
        .fold(0.0f64, f64::max);
    let text = |s: String, x: f64, y: f64, color: RGBColor| {
        Text::new(
            s,
            (x, y),
            (common::FONT, 16)
                .into_font()
                .color(&color)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        )
    };
    for a in 0..n {
        for b in 0..n {
            // Row a from the top.
            let (x, y) = (b as f64, (n - 1 - a) as f64);
            let corners = [(x, y), (x + 1.0, y + 1.0)];
            let centre = (x + 0.5, y + 0.5);
            let cell = t.cell(a, b).filter(|_| a != b);
            let (fill, caption, ink) = match cell {
                None => (RGBColor(235, 235, 235), String::new(), BLACK),
                Some(c) => match c.busbw_gbps {
                    Some(bw) => {
                        let f = if best > 0.0 { bw / best } else { 0.0 };
                        let ink = if f > 0.6 { WHITE } else { BLACK };
                        (shade(f), format!("{bw:.2}"), ink)
                    }
                    None => (WHITE, c.status.clone(), common::FAILED),
                },
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(corners, fill.filled())))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    corners,
                    RGBColor(200, 200, 200).stroke_width(1),
                )))
                .map_err(err)?;
            if cell.is_some_and(|c| c.slow_by.is_some()) {
                let inset = [(x + 0.03, y + 0.03), (x + 0.97, y + 0.97)];
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        inset,
                        common::FAILED.stroke_width(4),
                    )))
                    .map_err(err)?;
            }
            if let Some(c) = cell {
                let name = |i: usize| t.names.get(i).cloned().unwrap_or_default();
                let mut tip = format!("{} and {}, {}: ", name(a), name(b), Bytes(t.bytes));
                match (c.busbw_gbps, c.median_us) {
                    (Some(bw), Some(m)) => tip.push_str(&format!(
                        "busbw {bw:.2} GB/s, median {}",
                        crate::units::format_us(m)
                    )),
                    (Some(bw), None) => tip.push_str(&format!("busbw {bw:.2} GB/s")),
                    _ => tip.push_str(&c.status),
                }
                if let Some(by) = c.slow_by {
                    tip.push_str(&format!(
                        "; slow: {:+.0} % against the other pairs",
                        by * 100.0
                    ));
                }
                tips.add(&chart, &centre, tip);
            }
            if !caption.is_empty() {
                chart
                    .draw_series(std::iter::once(text(caption, centre.0, centre.1, ink)))
                    .map_err(err)?;
            }
        }
    }
    root.present().map_err(err)
}
