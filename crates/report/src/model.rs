//! The data model of a report: what a section holds, independent of how
//! it is drawn.

use std::path::PathBuf;

use crate::{ColumnDoc, Error, Result, TableDoc};

/// One value of a table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A non-negative integer (counts, bytes, addresses).
    UInt(u64),
    /// A real number (written with full precision in CSV).
    Float(f64),
    /// Text.
    Text(String),
    /// No value (empty in CSV, `–` on the page).
    Empty,
}

impl Value {
    /// The CSV form: full precision, empty for [`Value::Empty`] and
    /// non-finite floats.
    pub fn csv(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::UInt(v) => v.to_string(),
            Value::Float(v) if v.is_finite() => v.to_string(),
            Value::Float(_) | Value::Empty => String::new(),
            Value::Text(s) => s.clone(),
        }
    }

    /// The form shown on the page: floats with 4 significant digits,
    /// integers with thousands separators.
    pub fn display(&self) -> String {
        match self {
            Value::Int(v) => group(&v.to_string()),
            Value::UInt(v) => group(&v.to_string()),
            Value::Float(v) if v.is_finite() => sig4(*v),
            Value::Float(_) | Value::Empty => "–".into(),
            Value::Text(s) => s.clone(),
        }
    }

    /// Whether the page right-aligns it.
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::UInt(_) | Value::Float(_))
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::UInt(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Empty, Into::into)
    }
}

fn group(digits: &str) -> String {
    let (sign, d) = digits
        .strip_prefix('-')
        .map_or(("", digits), |rest| ("-", rest));
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// `v` with 4 significant digits, without exponent for everyday magnitudes.
pub fn sig4(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - mag).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if decimals == 0 {
        group(&s)
    } else {
        s
    }
}

/// A table: its documented schema and its rows. Figures carry their data
/// as one; sections show others as HTML tables. The CSV written for it has
/// exactly the schema's columns, so the Schema part of the page and the
/// data cannot disagree.
#[derive(Debug, Clone)]
pub struct Table {
    /// Name (the CSV file name, e.g. `sweep-wall.csv`), what a row is, and
    /// the columns.
    pub doc: TableDoc,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// An empty table named `name` (`.csv` is appended when missing).
    pub fn new(name: &str, about: &str, columns: Vec<ColumnDoc>) -> Table {
        let name = if name.ends_with(".csv") {
            name.to_string()
        } else {
            format!("{name}.csv")
        };
        Table {
            doc: TableDoc {
                name,
                about: about.to_string(),
                columns,
            },
            rows: Vec::new(),
        }
    }

    /// Appends a row (its length is checked when the CSV is written).
    pub fn push(&mut self, row: Vec<Value>) {
        self.rows.push(row);
    }

    /// The CSV bytes: a header of column names, then the rows.
    pub fn to_csv(&self) -> Result<Vec<u8>> {
        let bad = |e: csv::Error| Error::Invalid(format!("writing {}: {e}", self.doc.name));
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.doc.names()).map_err(bad)?;
        for (i, r) in self.rows.iter().enumerate() {
            if r.len() != self.doc.columns.len() {
                return Err(Error::Invalid(format!(
                    "table {}: row {i} has {} values for {} columns",
                    self.doc.name,
                    r.len(),
                    self.doc.columns.len()
                )));
            }
            w.write_record(r.iter().map(Value::csv)).map_err(bad)?;
        }
        w.into_inner()
            .map_err(|e| Error::Invalid(format!("writing {}: {e}", self.doc.name)))
    }
}

/// An axis: its label (with the unit) and scale.
#[derive(Debug, Clone, Default)]
pub struct Axis {
    /// Label, e.g. "run time (s)".
    pub label: String,
    /// Logarithmic scale (for data spanning decades; values ≤ 0 are not drawn).
    pub log: bool,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.to_string(),
            log: false,
        }
    }
    /// A logarithmic axis.
    pub fn log(label: &str) -> Axis {
        Axis {
            label: label.to_string(),
            log: true,
        }
    }
}

/// One line of a line chart, with optional error bars.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points (x, y), drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Per point, the error bar (low, high); empty for none.
    pub err: Vec<(f64, f64)>,
}

/// Points of one colour in a scatter.
#[derive(Debug, Clone, Default)]
pub struct ScatterGroup {
    /// Legend name.
    pub name: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
}

/// A rectangle drawn behind a scatter (an object's extent over its
/// lifetime), in the group's colour.
#[derive(Debug, Clone)]
pub struct Band {
    /// The scatter group whose colour it takes.
    pub group: usize,
    /// x from, x to.
    pub x: (f64, f64),
    /// y from, y to.
    pub y: (f64, f64),
}

/// What a figure draws.
#[derive(Debug, Clone)]
pub enum Chart {
    /// Lines with markers, one per series (error bars where given).
    Lines {
        /// x axis.
        x: Axis,
        /// y axis.
        y: Axis,
        /// The lines.
        series: Vec<Series>,
        /// (x, label) written above the plot, e.g. "75 %" of the peak at
        /// each memory limit of a MiB axis (a second scale for the same x).
        x_marks: Vec<(f64, String)>,
    },
    /// Points coloured by group, over bands; `y_marks` label positions of
    /// the y axis (e.g. addresses where a compressed address axis jumps)
    /// instead of numeric ticks when not empty.
    Scatter {
        /// x axis.
        x: Axis,
        /// y axis.
        y: Axis,
        /// The points.
        groups: Vec<ScatterGroup>,
        /// Extents drawn behind the points.
        bands: Vec<Band>,
        /// (y, label) marks drawn as thin lines with their labels.
        y_marks: Vec<(f64, String)>,
    },
    /// Horizontal bars: one row per category, one bar per series.
    Bars {
        /// Category names (top to bottom).
        categories: Vec<String>,
        /// (series name, one value per category).
        series: Vec<(String, Vec<f64>)>,
        /// The value axis.
        value: Axis,
    },
}

impl Chart {
    /// The names of the series a legend shows (empty: a single unnamed one).
    pub fn series_names(&self) -> Vec<String> {
        match self {
            Chart::Lines { series, .. } if series.len() > 1 || has_name(series) => {
                series.iter().map(|s| legend_text(&s.name)).collect()
            }
            Chart::Lines { .. } => Vec::new(),
            Chart::Scatter { groups, .. } => groups.iter().map(|g| legend_text(&g.name)).collect(),
            Chart::Bars { series, .. } if series.len() > 1 => {
                series.iter().map(|s| s.0.clone()).collect()
            }
            Chart::Bars { .. } => Vec::new(),
        }
    }
}

fn has_name(series: &[Series]) -> bool {
    series.first().is_some_and(|s| !s.name.is_empty())
}

/// A figure: a chart, what it shows, and its data.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Title (drawn above the chart).
    pub title: String,
    /// Caption: what is drawn and how (sampling, error bars, scales).
    pub caption: String,
    /// The chart.
    pub chart: Chart,
    /// The data drawn, as a table (downloadable as CSV from the page).
    pub data: Table,
}

/// A file behind a section (a run's `run.json`, a trace's Parquet tables).
#[derive(Debug, Clone)]
pub struct DataFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it holds.
    pub about: String,
}

/// One section of a report: one run, sweep, trace, simulation or benchmark.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Kind (`run`, `sweep`, `trace`, `sim`, `mrc`, `bench-…`): a CSS
    /// class and the `data-kind` attribute.
    pub kind: String,
    /// Title.
    pub title: String,
    /// The experimental design, written from the record: what ran, how,
    /// how often, what was measured. One string per paragraph.
    pub design: Vec<String>,
    /// Figures.
    pub figures: Vec<Figure>,
    /// Tables shown on the page (also downloadable).
    pub tables: Vec<Table>,
    /// Schemas of the files in `files` (the figures' and tables' own
    /// schemas are added by the page).
    pub file_schemas: Vec<TableDoc>,
    /// The Linux configuration of the experiment, as (setting, value);
    /// includes the command line that reproduces it.
    pub config: Vec<(String, String)>,
    /// Files of the experiment.
    pub files: Vec<DataFile>,
    /// Remarks (warnings, what could not be drawn and why).
    pub notes: Vec<String>,
}

/// A whole report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Page title.
    pub title: String,
    /// How the report was made (the swaplab command line and version).
    pub generated_by: String,
    /// The sections, in the order given.
    pub sections: Vec<Section>,
}

/// The legend entry of a series or group name (long names are cut: two
/// entries share a row).
pub fn legend_text(name: &str) -> String {
    short(name, 50)
}

/// `s` cut to `max` characters with an ellipsis.
pub fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_display_and_csv() {
        assert_eq!(Value::UInt(1234567).display(), "1,234,567");
        assert_eq!(Value::Int(-1234).display(), "-1,234");
        assert_eq!(Value::Float(0.012345).display(), "0.01235");
        assert_eq!(Value::Float(12345.6).display(), "12,346");
        assert_eq!(Value::Float(1.5).csv(), "1.5");
        assert_eq!(Value::Float(f64::NAN).csv(), "");
        assert_eq!(Value::from(None::<u64>).display(), "–");
    }

    #[test]
    fn csv_has_the_schema_header_and_checks_rows() {
        let mut t = Table::new(
            "x",
            "one row per thing",
            vec![
                ColumnDoc::new("a", "integer", "", "a"),
                ColumnDoc::new("b", "text", "", "b"),
            ],
        );
        t.push(vec![1u64.into(), "x,\"y\"".into()]);
        let csv = String::from_utf8(t.to_csv().unwrap()).unwrap();
        assert_eq!(csv, "a,b\n1,\"x,\"\"y\"\"\"\n");
        assert_eq!(t.doc.name, "x.csv");
        t.push(vec![1u64.into()]);
        assert!(t
            .to_csv()
            .unwrap_err()
            .to_string()
            .contains("row 1 has 1 values"));
    }
}
