//! Charts → SVG, drawn with plotters' SVG backend (text as `<text>`
//! elements in the browser's sans-serif font: no font files needed).

use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor;

use crate::model::{legend_text, short, Axis, Band, Chart, Figure, ScatterGroup, Series};
use crate::{Error, Result};

/// Width of every figure, pixels.
pub const WIDTH: u32 = 760;
/// Height of line charts and scatters, pixels.
pub const HEIGHT: u32 = 420;

/// Colour of series `i`: the ten colours of Tableau 10 (distinguishable,
/// also in greyscale print), then plotters' Palette99.
pub fn colour(i: usize) -> RGBColor {
    const T10: [(u8, u8, u8); 10] = [
        (78, 121, 167),
        (242, 142, 43),
        (225, 87, 89),
        (118, 183, 178),
        (89, 161, 79),
        (237, 201, 72),
        (176, 122, 161),
        (255, 157, 167),
        (156, 117, 95),
        (186, 176, 172),
    ];
    match T10.get(i) {
        Some(&(r, g, b)) => RGBColor(r, g, b),
        None => {
            let c = Palette99::pick(i).to_rgba();
            RGBColor(c.0, c.1, c.2)
        }
    }
}

/// `v` rounded to two significant digits (labels of log-axis ticks, which
/// fall between round numbers).
fn sig2(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let e = 10f64.powi(v.abs().log10().floor() as i32 - 1);
    (v / e).round() * e
}

/// Colours of bar series: each its own, except that a series named
/// `NAME (sim)` right after `NAME` (a prediction beside its measurement)
/// takes a lighter shade of NAME's colour.
pub fn bar_colours(series: &[(String, Vec<f64>)]) -> Vec<RGBColor> {
    let mut out: Vec<RGBColor> = Vec::with_capacity(series.len());
    let mut next = 0;
    for (j, (name, _)) in series.iter().enumerate() {
        let paired = j > 0
            && name
                .strip_suffix(" (sim)")
                .is_some_and(|b| b == series[j - 1].0);
        out.push(if paired {
            let RGBColor(r, g, b) = out[j - 1];
            let light = |x: u8| x + ((255 - x) as f64 * 0.55) as u8;
            RGBColor(light(r), light(g), light(b))
        } else {
            next += 1;
            colour(next - 1)
        });
    }
    out
}

/// Draws `fig` as a standalone SVG document.
pub fn svg(fig: &Figure) -> Result<String> {
    let err = |e: &dyn std::fmt::Display| Error::Plot {
        figure: fig.title.clone(),
        msg: e.to_string(),
    };
    let mut out = String::new();
    let height = match &fig.chart {
        Chart::Bars {
            categories, series, ..
        } => (90 + categories.len() as u32 * (8 + 12 * series.len().max(1) as u32)).max(260),
        Chart::Scatter { groups, .. } => HEIGHT + legend_height(groups.len()),
        Chart::Lines { .. } => HEIGHT + legend_height(fig.chart.series_names().len()),
    };
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        match &fig.chart {
            Chart::Lines {
                x,
                y,
                series,
                x_marks,
            } => lines(&root, &fig.title, x, y, series, x_marks),
            Chart::Scatter {
                x,
                y,
                groups,
                bands,
                y_marks,
            } => scatter(&root, &fig.title, x, y, groups, bands, y_marks),
            Chart::Bars {
                categories,
                series,
                value,
            } => bars(&root, &fig.title, categories, series, value),
        }
        .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type PlotResult = std::result::Result<(), Box<dyn std::error::Error + 'static>>;

fn boxed<E: std::error::Error + Send + Sync + 'static>(e: E) -> Box<dyn std::error::Error> {
    Box::new(e)
}

/// The range of `values` padded by 5 % (log: by a factor), never empty.
fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi <= lo {
            return (lo / 2.0, hi * 2.0);
        }
        return (lo / 1.25, hi * 1.25);
    }
    if hi <= lo {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    let pad = (hi - lo) * 0.05;
    // Counts and times start at zero: keep zero on the axis when it is near.
    let lo = if lo >= 0.0 && lo - pad * 4.0 <= 0.0 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

/// Runs `$body` with `$xc`/`$yc` bound to a linear or logarithmic f64
/// coordinate for each axis (four concrete types, so no trait bounds).
macro_rules! with_coords {
    ($x:expr, $y:expr, $xr:expr, $yr:expr, |$xc:ident, $yc:ident| $body:block) => {
        match ($x.log, $y.log) {
            (false, false) => {
                let $xc = $xr.0..$xr.1;
                let $yc = $yr.0..$yr.1;
                $body
            }
            (true, false) => {
                let $xc = ($xr.0..$xr.1).log_scale();
                let $yc = $yr.0..$yr.1;
                $body
            }
            (false, true) => {
                let $xc = $xr.0..$xr.1;
                let $yc = ($yr.0..$yr.1).log_scale();
                $body
            }
            (true, true) => {
                let $xc = ($xr.0..$xr.1).log_scale();
                let $yc = ($yr.0..$yr.1).log_scale();
                $body
            }
        }
    };
}

fn drawable(p: (f64, f64), x: &Axis, y: &Axis) -> bool {
    p.0.is_finite() && p.1.is_finite() && (!x.log || p.0 > 0.0) && (!y.log || p.1 > 0.0)
}

fn lines(
    area: &Area<'_>,
    title: &str,
    x: &Axis,
    y: &Axis,
    series: &[Series],
    x_marks: &[(f64, String)],
) -> PlotResult {
    let xr = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        x.log,
    );
    let yr = range(
        series.iter().flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.err.iter().flat_map(|e| [e.0, e.1]))
        }),
        y.log,
    );
    let named = series.len() > 1 || series.first().is_some_and(|s| !s.name.is_empty());
    // The legend goes below the plot, where it hides no data.
    let (area, legend_area) = area.split_vertically(HEIGHT);
    let area = &area;
    if named {
        let entries: Vec<(String, RGBColor)> = series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), colour(i)))
            .collect();
        draw_legend(&legend_area, &entries, true)?;
    }
    with_coords!(x, y, xr, yr, |xc, yc| {
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 21))
            .margin(12)
            .x_label_area_size(if x_marks.is_empty() { 46 } else { 72 })
            .y_label_area_size(78)
            .build_cartesian_2d(xc, yc)
            .map_err(boxed)?;
        chart
            .configure_mesh()
            .x_desc(x.label.as_str())
            .y_desc(y.label.as_str())
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .light_line_style(RGBColor(240, 240, 240))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(boxed)?;
        for (i, s) in series.iter().enumerate() {
            let c = colour(i);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&p| drawable(p, x, y))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(boxed)?;
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(boxed)?;
            if s.err.len() == s.points.len() {
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .zip(&s.err)
                            .filter(|(&(px, _), &(lo, hi))| {
                                drawable((px, lo), x, y) && drawable((px, hi), x, y)
                            })
                            .map(|(&(px, py), &(lo, hi))| {
                                ErrorBar::new_vertical(px, lo, py, hi, c.stroke_width(1), 7)
                            }),
                    )
                    .map_err(boxed)?;
            }
        }
        // The second scale: a row of labels under the x tick labels.
        let bottom = yr.0;
        let style = ("sans-serif", 13)
            .into_font()
            .color(&RGBColor(90, 90, 160))
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Center,
                text_anchor::VPos::Top,
            ));
        for (xv, label) in x_marks {
            if drawable((*xv, bottom), x, y) {
                let (px, py) = chart.backend_coord(&(*xv, bottom));
                area.draw(&Text::new(label.clone(), (px, py + 24), style.clone()))
                    .map_err(boxed)?;
            }
        }
        Ok(())
    })
}

fn scatter(
    area: &Area<'_>,
    title: &str,
    x: &Axis,
    y: &Axis,
    groups: &[ScatterGroup],
    bands: &[Band],
    y_marks: &[(f64, String)],
) -> PlotResult {
    // A log axis is drawn as log10 of the values, its ticks labelled with
    // the values themselves (values <= 0 are not drawn).
    let (lx, ly) = (x.log, y.log);
    let fx = move |v: f64| if lx { v.log10() } else { v };
    let fy = move |v: f64| if ly { v.log10() } else { v };
    let fin = |p: &(f64, f64)| fx(p.0).is_finite() && fy(p.1).is_finite();
    let xr = range(
        groups
            .iter()
            .flat_map(|g| g.points.iter().filter(|p| fin(p)).map(|p| fx(p.0)))
            .chain(bands.iter().flat_map(|b| [fx(b.x.0), fx(b.x.1)])),
        false,
    );
    let yr = range(
        groups
            .iter()
            .flat_map(|g| g.points.iter().filter(|p| fin(p)).map(|p| fy(p.1)))
            .chain(bands.iter().flat_map(|b| [fy(b.y.0), fy(b.y.1)]))
            .chain(y_marks.iter().map(|m| fy(m.0))),
        false,
    );
    // The legend goes below the plot: a scatter's points fill the plot,
    // and a legend over them would hide data.
    let (area, legend_area) = area.split_vertically(HEIGHT);
    let area = &area;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 21))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(if y_marks.is_empty() { 78 } else { 118 })
        .build_cartesian_2d::<std::ops::Range<f64>, std::ops::Range<f64>>(xr.0..xr.1, yr.0..yr.1)
        .map_err(boxed)?;
    let unlog_x = move |v: &f64| {
        if lx {
            tick(sig2(10f64.powf(*v)))
        } else {
            tick(*v)
        }
    };
    let unlog_y = move |v: &f64| {
        if ly {
            tick(sig2(10f64.powf(*v)))
        } else {
            tick(*v)
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x.label.as_str())
        .y_desc(y.label.as_str())
        .x_label_formatter(&unlog_x)
        .y_label_formatter(&unlog_y)
        .light_line_style(RGBColor(240, 240, 240))
        .label_style(("sans-serif", 15));
    if !y_marks.is_empty() {
        mesh.y_labels(0).disable_y_mesh();
    }
    mesh.draw().map_err(boxed)?;
    chart
        .draw_series(bands.iter().map(|b| {
            Rectangle::new(
                [(fx(b.x.0), fy(b.y.0)), (fx(b.x.1), fy(b.y.1))],
                colour(b.group).mix(0.13).filled(),
            )
        }))
        .map_err(boxed)?;
    draw_y_marks(area, &chart, xr, y_marks)?;
    // Few points are drawn larger.
    let total: usize = groups.iter().map(|g| g.points.len()).sum();
    let radius = if total <= 200 { 4 } else { 2 };
    for (i, g) in groups.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(
                g.points
                    .iter()
                    .filter(|p| fin(p))
                    .map(|&p| Circle::new((fx(p.0), fy(p.1)), radius, c.filled())),
            )
            .map_err(boxed)?;
    }
    let entries: Vec<(String, RGBColor)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.clone(), colour(i)))
        .collect();
    draw_legend(&legend_area, &entries, false)
}

/// A legend under the plot, two entries per row: a line with a marker
/// (line charts) or a dot (scatters), then the name.
fn draw_legend(area: &Area<'_>, entries: &[(String, RGBColor)], line: bool) -> PlotResult {
    for (i, (name, c)) in entries.iter().enumerate() {
        let (col, row) = ((i % 2) as i32, (i / 2) as i32);
        let (lx, ly) = (60 + col * 350, 4 + row * LEGEND_ROW);
        if line {
            area.draw(&PathElement::new(
                vec![(lx - 8, ly + 8), (lx + 8, ly + 8)],
                c.stroke_width(2),
            ))
            .map_err(boxed)?;
        }
        area.draw(&Circle::new(
            (lx, ly + 8),
            if line { 3 } else { 4 },
            c.filled(),
        ))
        .map_err(boxed)?;
        area.draw(&Text::new(
            legend_text(name),
            (lx + 14, ly),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(boxed)?;
    }
    Ok(())
}

/// Pixels per row of a legend (two entries per row).
const LEGEND_ROW: i32 = 20;

/// The height of a legend of `n` entries (none for no entries).
fn legend_height(n: usize) -> u32 {
    if n == 0 {
        return 0;
    }
    (n.div_ceil(2) as i32 * LEGEND_ROW + 8) as u32
}

/// Thin grey lines across the plot at each mark, labelled in the y label
/// area (used for a compressed address axis: the labels are addresses).
fn draw_y_marks(
    area: &Area<'_>,
    chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    xr: (f64, f64),
    marks: &[(f64, String)],
) -> PlotResult {
    let style = ("sans-serif", 13).into_font().color(&BLACK.mix(0.8));
    let mut last_py: Option<i32> = None;
    for (yv, label) in marks {
        let (x0, py) = chart.backend_coord(&(xr.0, *yv));
        let (x1, _) = chart.backend_coord(&(xr.1, *yv));
        area.draw(&PathElement::new(
            vec![(x0, py), (x1, py)],
            RGBColor(200, 200, 200).stroke_width(1),
        ))
        .map_err(boxed)?;
        // Labels closer than one line of text would overlap: skip them
        // (the line is still drawn; the CSV has every address).
        if last_py.is_none_or(|l| (py - l).abs() >= 13) {
            area.draw(&Text::new(label.clone(), (x0 - 112, py - 6), style.clone()))
                .map_err(boxed)?;
            last_py = Some(py);
        }
    }
    Ok(())
}

fn bars(
    area: &Area<'_>,
    title: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    value: &Axis,
) -> PlotResult {
    // At least two rows: plotters draws a one-segment axis (0..0) with no
    // height and no label, so a single category gets an empty row below.
    let n = categories.len().max(2) as i32;
    let max = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let max = if max > 0.0 {
        max * if series.len() > 1 { 1.45 } else { 1.08 }
    } else {
        1.0
    };
    let label_of = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => categories
            .get((n - 1 - *i) as usize)
            .map(|s| short(s, 34))
            .unwrap_or_default(),
        SegmentValue::Last => String::new(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 21))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(230)
        .build_cartesian_2d(0f64..max, (0..n - 1).into_segmented())
        .map_err(boxed)?;
    chart
        .configure_mesh()
        .x_desc(value.label.as_str())
        .x_label_formatter(&|v| tick(*v))
        .y_labels(n as usize)
        .y_label_formatter(&label_of)
        .disable_y_mesh()
        .light_line_style(RGBColor(240, 240, 240))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(boxed)?;
    let plot_h = chart.plotting_area().dim_in_pixel().1 as f64;
    let seg = plot_h / n as f64;
    let k = series.len().max(1) as f64;
    let bar = ((seg - 6.0) / k).max(1.0);
    let colours = bar_colours(series);
    for (j, (name, values)) in series.iter().enumerate() {
        let c = colours[j];
        let top = 3.0 + j as f64 * bar;
        let bottom = (seg - top - bar).max(0.0);
        let drawn = chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let row = n - 1 - i as i32;
                let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
                let mut r = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(row + 1)),
                        (v, SegmentValue::Exact(row)),
                    ],
                    c.filled(),
                );
                r.set_margin(top as u32, bottom as u32, 0, 0);
                r
            }))
            .map_err(boxed)?;
        if series.len() > 1 {
            drawn.label(name.as_str()).legend(move |(px, py)| {
                Rectangle::new([(px, py - 5), (px + 10, py + 5)], c.filled())
            });
        }
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(boxed)?;
    }
    Ok(())
}

/// A tick label: integers as integers, large values with k/M/G, others
/// with at most 3 significant decimals (no trailing zeros).
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        for (div, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= div {
                return format!("{}{suffix}", trim(format!("{:.2}", v / div)));
            }
        }
    }
    if v == v.round() {
        return format!("{v:.0}");
    }
    let decimals = if a >= 1.0 {
        2
    } else {
        (3.0 - a.log10().floor()).clamp(3.0, 9.0) as usize
    };
    trim(format!("{v:.decimals$}"))
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn tick_labels() {
        assert_eq!(tick(14000.0), "14k");
        assert_eq!(tick(2500000.0), "2.5M");
        assert_eq!(tick(40.0), "40");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.05), "0.05");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(-3.0), "-3");
        assert_eq!(tick(0.00012), "0.00012");
    }
}

#[cfg(test)]
mod bar_tests {
    use super::*;
    use crate::model::{Figure, Table};

    fn bars_svg(cats: &[&str], values: &[f64]) -> String {
        svg(&Figure {
            title: "t".into(),
            caption: String::new(),
            chart: Chart::Bars {
                categories: cats.iter().map(|s| s.to_string()).collect(),
                series: vec![("s".into(), values.to_vec())],
                value: Axis::linear("v"),
            },
            data: Table::new("x", "", vec![]),
        })
        .unwrap()
    }

    /// The bars of a series are the rectangles in its colour.
    fn bars_of(svg: &str) -> usize {
        let c = colour(0);
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        svg.split("<rect")
            .skip(1)
            .filter(|r| r.split('>').next().unwrap_or("").contains(&fill))
            .count()
    }

    #[test]
    fn every_category_gets_its_bar_and_label_even_alone() {
        for cats in [vec!["only"], vec!["a1", "b2", "c3"]] {
            let values: Vec<f64> = (1..=cats.len()).map(|v| v as f64 * 10.0).collect();
            let s = bars_svg(&cats, &values);
            assert_eq!(bars_of(&s), cats.len(), "{cats:?}");
            for c in &cats {
                assert!(s.lines().any(|l| l.trim() == *c), "label {c} missing: {s}");
            }
        }
    }

    #[test]
    fn a_prediction_takes_a_lighter_shade_of_its_measurement() {
        let s = |n: &str| (n.to_string(), vec![1.0]);
        let c = bar_colours(&[s("a"), s("a (sim)"), s("b"), s("c (sim)")]);
        assert_eq!(c[0], colour(0));
        assert_eq!(c[2], colour(1), "a pair takes one colour");
        assert_eq!(c[3], colour(2), "unpaired: its own colour");
        let (RGBColor(r0, g0, b0), RGBColor(r1, g1, b1)) = (c[0], c[1]);
        assert!(
            r1 > r0 && g1 > g0 && b1 > b0,
            "lighter: {:?} {:?}",
            c[0],
            c[1]
        );
    }

    #[test]
    fn log_tick_labels_are_round() {
        assert_eq!(sig2(251.19), 250.0);
        assert_eq!(sig2(398.11), 400.0);
        assert_eq!(sig2(1584.89), 1600.0);
        assert_eq!(sig2(0.0), 0.0);
    }
}
