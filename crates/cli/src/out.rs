//! Output helpers: tables for people, JSON and CSV for scripts, progress
//! bars on a terminal only.
use anyhow::Result;
use comfy_table::{presets::NOTHING, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{IsTerminal, Write};

/// `print!` for this crate: like the standard macro, but a closed pipe
/// ends the program quietly (see [`write_stdout`]).
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` for this crate, with [`print!`]'s manners.
macro_rules! println {
    () => {
        $crate::out::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to standard output. When the reader has gone (`swaplab runs |
/// head -1`) the output is complete as far as anyone can see: exit with
/// status 0, as `cat` and ripgrep do (the standard macros panic). Any other
/// write error ends the program with a message and status 1.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        stdout_failed(e);
    }
}

/// Flushes standard output with [`write_stdout`]'s manners.
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        stdout_failed(e);
    }
}

fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("swaplab: error: writing to standard output: {e}");
    std::process::exit(1);
}

/// How a command prints a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

impl Format {
    pub fn from_flags(json: bool, csv: bool) -> Self {
        if json {
            Format::Json
        } else if csv {
            Format::Csv
        } else {
            Format::Table
        }
    }
}

/// A table with a header, rows of strings, and the same rows as JSON values.
pub struct Rows {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Left-align every column (key/value tables); otherwise numbers align right.
    pub left: bool,
}

impl Rows {
    pub fn new(header: &[&str]) -> Self {
        Rows {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            left: false,
        }
    }
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }
    /// A plain, right-aligned text table.
    pub fn render(&self) -> String {
        let mut t = Table::new();
        t.load_preset(NOTHING);
        t.set_header(self.header.clone());
        for r in &self.rows {
            t.add_row(r.clone());
        }
        for (i, c) in t.column_iter_mut().enumerate() {
            c.set_cell_alignment(if i == 0 || self.left {
                CellAlignment::Left
            } else {
                CellAlignment::Right
            });
        }
        // No padding after the last column (a long cell would pad every line).
        t.to_string()
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }
    /// The table without its first column (e.g. a key every row shares).
    pub fn without_first_column(mut self) -> Self {
        self.header.remove(0);
        for r in &mut self.rows {
            r.remove(0);
        }
        self
    }
    pub fn csv(&self) -> Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.header)?;
        for r in &self.rows {
            w.write_record(r.iter().map(|c| plain(c)))?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}

/// A cell as a plain number for CSV: `1,234` → `1234`, `12.50%` → `0.125`;
/// anything else unchanged.
fn plain(c: &str) -> String {
    let digits = c.replace(',', "");
    if !digits.is_empty() && digits.chars().all(|ch| ch.is_ascii_digit()) {
        return digits;
    }
    if let Some(p) = c.strip_suffix('%').and_then(|x| x.parse::<f64>().ok()) {
        return format!("{}", p / 100.0);
    }
    c.to_string()
}

/// Prints `rows` as a table or CSV, or `json` (the structured records) as JSON.
pub fn print<T: Serialize + ?Sized>(fmt: Format, rows: &Rows, json: &T) -> Result<()> {
    match fmt {
        Format::Table => println!("{}", rows.render()),
        Format::Csv => print!("{}", rows.csv()?),
        Format::Json => println!("{}", serde_json::to_string_pretty(json)?),
    }
    Ok(())
}

/// A progress bar over `total` units with rate and ETA on a terminal;
/// hidden when stderr is not a terminal (piped, CI).
pub fn progress(total: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {percent:>3}% {per_sec:>14} eta {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// A sweep's table as rows (the header first, as `SweepReport::rows`).
pub fn sweep_rows(rep: &swaplab_study::sweep::SweepReport) -> Rows {
    let mut rows = rep.rows().into_iter();
    let header = rows.next().unwrap_or_default();
    let mut t = Rows {
        header,
        rows: rows.collect(),
        left: false,
    };
    t.rows.retain(|r| !r.is_empty());
    t
}

/// A sweep's cell table (through [`Rows`], like every table) with its notes
/// below it.
pub fn sweep_table(rep: &swaplab_study::sweep::SweepReport) -> String {
    let mut s = sweep_rows(rep).render();
    s.push('\n');
    for n in &rep.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// `0.1234` → `12.34%`.
pub fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Thousands separators: 1234567 → 1,234,567.
pub fn num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A text chart of a miss-ratio curve: one bar per size.
pub fn curve_chart(points: &[(u64, String, f64)]) -> String {
    let mut s = String::new();
    for (pages, label, mr) in points {
        let w = (mr * 50.0).round() as usize;
        s.push_str(&format!(
            "{label:>9} {pages:>10} │{:<50}│ {}\n",
            "█".repeat(w.min(50)),
            pct(*mr)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn csv_cells_are_plain_numbers() {
        assert_eq!(super::plain("1,234,567"), "1234567");
        assert_eq!(super::plain("12.5%"), "0.125");
        assert_eq!(super::plain("lru"), "lru");
        assert_eq!(super::plain("1.5G"), "1.5G");
        assert_eq!(super::num(1234567), "1,234,567");
        assert_eq!(super::num(12), "12");
    }
}
