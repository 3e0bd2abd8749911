//! What every chart shares: the embedded font, the canvas size, the palette (one
//! colour per config, the same in every chart), the size axis labels, the grouping of
//! a run's rows by GPU count and config, and the red "failed" markers.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::export::reader::{CaseRow, RunData};
use crate::units::Bytes;

/// Canvas size of every chart, in pixels.
pub const SIZE: (u32, u32) = (1000, 600);

/// The font family every text uses; registered from the embedded DejaVu Sans, so
/// text renders on a machine without any system font.
pub const FONT: &str = "sans-serif";

const DEJAVU_SANS: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

/// Registers the embedded font (once per process).
pub fn ensure_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font(FONT, FontStyle::Normal, DEJAVU_SANS).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the embedded DejaVu Sans font does not parse"))
    }
}

/// Config colours (Tableau 10 without its red, which marks failures).
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of failed cases.
pub const FAILED: RGBColor = RGBColor(214, 39, 40);

pub fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// Plotters' errors carry the backend's error type; charts only need the message.
pub fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("cannot draw chart: {e}")
}

/// `<out_dir>/<stem>.svg` and `<out_dir>/<stem>.png`.
pub fn paths(out_dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
    (
        out_dir.join(format!("{stem}.svg")),
        out_dir.join(format!("{stem}.png")),
    )
}

/// The configs of a run in the order they first appear (which fixes their colour).
pub fn configs(run: &RunData) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in &run.cases {
        if !names.contains(&c.config) {
            names.push(c.config.clone());
        }
    }
    names
}

/// The GPU counts of a run, ascending.
pub fn gpu_counts(run: &RunData) -> Vec<u32> {
    let mut counts: Vec<u32> = run.cases.iter().map(|c| c.nranks).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The rows of one config at one GPU count, by ascending size.
pub fn rows<'a>(run: &'a RunData, config: &str, nranks: u32) -> Vec<&'a CaseRow> {
    let mut rows: Vec<&CaseRow> = run
        .cases
        .iter()
        .filter(|c| c.config == config && c.nranks == nranks)
        .collect();
    rows.sort_by_key(|c| c.bytes);
    rows
}

/// The x coordinate of a message size: sizes are powers of two, so the axis is log2.
pub fn size_x(bytes: u64) -> f64 {
    (bytes.max(1) as f64).log2()
}

/// The x range covering every size of the run, with a little margin.
pub fn size_range(run: &RunData) -> std::ops::Range<f64> {
    // A case of no bytes (sizes too small for a collective, not run) has no point.
    let xs = run
        .cases
        .iter()
        .filter(|c| c.bytes > 0)
        .map(|c| size_x(c.bytes));
    let lo = xs.clone().fold(f64::INFINITY, f64::min);
    let hi = xs.fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        (lo - 0.5)..(hi + 0.5)
    } else {
        0.0..1.0
    }
}

/// Axis label of a log2 size coordinate: `8B`, `1K`, `64M` on whole powers, else none.
pub fn size_label(x: &f64) -> String {
    if (x - x.round()).abs() > 1e-9 || *x < 0.0 || *x > 62.0 {
        return String::new();
    }
    Bytes(1u64 << (x.round() as u32)).short()
}

/// A compact number for a value axis: `0.25`, `8`, `12.5`, `12k`.
pub fn number_label(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(*v)
    }
}

/// At most two decimals, without trailing zeros.
fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Splits the points of consecutive rows into runs of successful cases, so a line
/// never bridges a case that failed. `value` gives a row's point, or none to skip it.
pub fn segments<T>(rows: &[&CaseRow], value: impl Fn(&CaseRow) -> Option<T>) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = vec![Vec::new()];
    for row in rows {
        if row.is_ok() {
            if let (Some(v), Some(last)) = (value(row), out.last_mut()) {
                last.push(v);
            }
        } else if out.last().is_some_and(|l| !l.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Range of positive values on a log axis (a decade's margin where it is flat).
pub fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return 1.0..10.0;
    }
    (lo / 2.0)..(hi * 2.0)
}

/// Draws the title and returns the area below it (a caption that does not depend on
/// the chart's coordinates, so every chart puts it in the same place).
pub fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>> {
    root.fill(&WHITE).map_err(err)?;
    root.titled(title, (FONT, 22)).map_err(err)
}

/// The mesh every chart uses: light grid, readable labels, axis names with units.
pub fn style_mesh<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&X::ValueType) -> String,
    y_fmt: &dyn Fn(&Y::ValueType) -> String,
    x_labels: usize,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    chart
        .configure_mesh()
        .light_line_style(RGBColor(242, 242, 242))
        .x_max_light_lines(1)
        .y_max_light_lines(2)
        .bold_line_style(RGBColor(210, 210, 210))
        .x_labels(x_labels)
        .y_labels(10)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()
        .map_err(err)
}

/// Draws the series legend (config names, and "failed" when a failure is shown).
pub fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(pos)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(err)
}

/// Red `x` markers at `y` (the bottom of the chart) for every case that did not
/// succeed, with one legend entry "failed (n)"; nothing when every case is ok.
pub fn failed_markers<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: Vec<CT::From>,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
    CT::From: Clone + 'static,
{
    if points.is_empty() {
        return Ok(());
    }
    let n = points.len();
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Cross::new(p, 7, FAILED.stroke_width(3))),
        )
        .map_err(err)?
        .label(format!("failed ({n})"))
        .legend(|(x, y)| Cross::new((x + 10, y), 6, FAILED.stroke_width(3)));
    Ok(())
}

/// One config's line (broken where its cases failed), a dot per point, and its
/// legend entry.
pub fn config_line<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    segments: Vec<Vec<CT::From>>,
    color: RGBColor,
    label: &str,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
    CT::From: Clone + 'static,
{
    let points: Vec<CT::From> = segments.iter().flatten().cloned().collect();
    chart
        .draw_series(
            segments
                .into_iter()
                .map(|s| PathElement::new(s, color.stroke_width(2))),
        )
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )
        .map_err(err)?;
    Ok(())
}

/// The exact values behind a chart's points, for a person hovering over the SVG:
/// each point's pixel position and text, appended to the SVG file as transparent
/// circles with an SVG `<title>` (browsers show it on hover; plotters writes none).
#[derive(Debug, Default)]
pub struct Tips(Vec<(i32, i32, String)>);

impl Tips {
    /// The tip `text` at the chart's point `at`.
    pub fn add<'a, DB, CT>(&mut self, chart: &ChartContext<'a, DB, CT>, at: &CT::From, text: String)
    where
        DB: DrawingBackend + 'a,
        CT: plotters::coord::CoordTranslate,
    {
        let (x, y) = chart.as_coord_spec().translate(at);
        self.0.push((x, y, text));
    }

    /// A tip per successful case of `rows` at the point `value` gives it (none where
    /// it gives none), each saying the case's figures ([`case_tip`]).
    pub fn cases<'a, DB, CT>(
        &mut self,
        chart: &ChartContext<'a, DB, CT>,
        run: &RunData,
        rows: &[&CaseRow],
        value: impl Fn(&CaseRow) -> Option<CT::From>,
    ) where
        DB: DrawingBackend + 'a,
        CT: plotters::coord::CoordTranslate,
    {
        for row in rows.iter().filter(|r| r.is_ok()) {
            if let Some(at) = value(row) {
                self.add(chart, &at, case_tip(run, row));
            }
        }
    }

    /// Writes the tips into the SVG file at `path`, as its last layer.
    pub fn append_to(&self, path: &Path) -> Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let svg = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
        let end = svg
            .rfind("</svg>")
            .ok_or_else(|| anyhow!("{} is not a complete SVG", path.display()))?;
        let mut layer = String::from("<g class=\"tips\" fill=\"#000\" fill-opacity=\"0\">\n");
        for (x, y, text) in &self.0 {
            layer.push_str(&format!(
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"7\"><title>{}</title></circle>\n",
                crate::units::xml_escape(text)
            ));
        }
        layer.push_str("</g>\n");
        let mut out = String::with_capacity(svg.len() + layer.len());
        out.push_str(&svg[..end]);
        out.push_str(&layer);
        out.push_str(&svg[end..]);
        std::fs::write(path, out).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
    }
}

/// What a case measured, in one line: config, GPU count and size, bandwidth, its
/// typical time, the median's interval and how many rounds or samples it rests on,
/// and its quality flag.
pub fn case_tip(run: &RunData, row: &CaseRow) -> String {
    let mut tip = format!(
        "{}, {}, {}",
        row.config,
        run.ranks(row.nranks),
        Bytes(row.bytes)
    );
    if let Some(b) = row.busbw_gbps {
        tip.push_str(&format!(": busbw {b:.2} GB/s"));
    }
    if let Some(a) = row.algbw_gbps {
        tip.push_str(&format!(", algbw {a:.2} GB/s"));
    }
    if let Some(t) = row.typical_us() {
        tip.push_str(&format!("; typical {}", crate::units::format_us(t)));
    }
    if let (Some(lo), Some(hi)) = (row.median_ci_low_us, row.median_ci_high_us) {
        let rounds = row.round_medians().len();
        let over = if rounds > 1 {
            format!("over {rounds} rounds")
        } else {
            "over one group's samples".to_string()
        };
        tip.push_str(&format!(
            ", median in [{}, {}] (95 %, {over})",
            crate::units::format_us(lo),
            crate::units::format_us(hi)
        ));
    }
    if !row.algo.is_empty() {
        tip.push_str(&format!("; {} {}", row.algo, row.proto));
    }
    if !row.is_trusted() {
        tip.push_str(&format!("; flagged {}", row.quality));
    }
    tip
}

/// A chart's RGB pixels, [`SIZE`], for a `BitMapBackend` to draw into.
pub fn pixels() -> Vec<u8> {
    vec![0; SIZE.0 as usize * SIZE.1 as usize * 3]
}

/// Writes [`pixels`] as an 8-bit RGB PNG to `path`.
pub fn write_png(path: &Path, pixels: &[u8]) -> Result<()> {
    let file = std::fs::File::create(path)
        .map_err(|e| anyhow!("cannot create {}: {e}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let writer = encoder
        .write_header()
        .and_then(|mut w| w.write_image_data(pixels).map(|()| w))
        .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
    writer
        .finish()
        .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
}

/// Draws one chart to `<stem>.svg` and `<stem>.png` and yields both paths: `$body`
/// runs once with `$area` a drawing area of each backend and `$tips` the [`Tips`] that
/// go into the SVG (a closure cannot be generic over the backend, hence a macro).
macro_rules! svg_and_png {
    ($out_dir:expr, $stem:expr, |$area:ident, $tips:ident| $body:expr) => {{
        let (svg, png) = $crate::plot::common::paths($out_dir, &$stem);
        let mut tips = $crate::plot::common::Tips::default();
        {
            let $area = plotters::prelude::SVGBackend::new(&svg, $crate::plot::common::SIZE)
                .into_drawing_area();
            let $tips = &mut tips;
            $body?;
        }
        tips.append_to(&svg)?;
        let mut pixels = $crate::plot::common::pixels();
        {
            let $area = plotters::prelude::BitMapBackend::with_buffer(
                &mut pixels,
                $crate::plot::common::SIZE,
            )
            .into_drawing_area();
            let $tips = &mut $crate::plot::common::Tips::default();
            $body?;
        }
        $crate::plot::common::write_png(&png, &pixels)?;
        [svg, png]
    }};
}
pub(crate) use svg_and_png;
