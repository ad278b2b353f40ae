//! Importers for other tools' trace formats.
//!
//! Every importer is a [`RefSource`] that streams from any reader through a
//! `BufReader`: memory stays bounded by one batch plus one input line (lines
//! longer than [`MAX_LINE`] bytes are an error), never by the file size. Every
//! parse error names where it happened: the byte offset for binary input, the
//! line (and column) for text.
//!
//! | format | [`Format`] name | what one input unit becomes |
//! |---|---|---|
//! | libCacheSim oracleGeneral | `oracleGeneral` | one 24-byte record → one read of page `obj_id` ([`oracle_general`]) |
//! | CSV | `csv` | one row → one reference to the id column's value ([`csv`]) |
//! | plain text | `txt` | one line `id [r\|w]` → one reference ([`txt`]) |
//! | valgrind lackey | `lackey` | one `L`/`S`/`M` (and optionally `I`) line → one reference per page touched ([`lackey`]) |
//! | `perf script` | `perf` | one page-fault sample → one reference to the faulting page ([`perf`]) |
//!
//! [`open`] decompresses `.zst` files on the fly; [`detect`] guesses a format
//! from the file name.
//!
//! [`words`] decodes the built-in workloads' own recording of their
//! references, read from a pipe while `swaplab trace --refs` captures them
//! (not a [`Format`]: no file of it is ever imported).
use crate::{Error, RefSource, Result, Source};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::str::FromStr;

pub mod csv;
pub mod lackey;
pub mod oracle_general;
mod par;
pub mod perf;
pub mod txt;
pub mod words;

pub use self::csv::CsvReader;
pub use lackey::LackeyReader;
pub use oracle_general::OracleGeneralReader;
pub use perf::PerfScriptReader;
pub use txt::TxtReader;

/// Longest accepted input line, in bytes (text formats). Keeps memory bounded
/// on garbage input such as a binary file given as text.
pub const MAX_LINE: usize = 1 << 20;

/// An input format that `swaplab import` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// libCacheSim's binary `oracleGeneral` format.
    OracleGeneral,
    /// Comma- (or otherwise) separated values with an id column.
    Csv,
    /// One id per line.
    Text,
    /// `valgrind --tool=lackey --trace-mem=yes` output.
    Lackey,
    /// `perf script` text output of page-fault samples.
    PerfScript,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::OracleGeneral,
        Format::Csv,
        Format::Text,
        Format::Lackey,
        Format::PerfScript,
    ];

    /// The name used on the command line and in trace metadata.
    pub fn name(self) -> &'static str {
        match self {
            Format::OracleGeneral => "oracleGeneral",
            Format::Csv => "csv",
            Format::Text => "txt",
            Format::Lackey => "lackey",
            Format::PerfScript => "perf",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;
    /// Accepts the names of [`Format::name`] (case-insensitively) and a few
    /// obvious aliases (`text`, `perf-script`, `oracle`).
    fn from_str(s: &str) -> Result<Self> {
        let l = s.to_ascii_lowercase();
        Ok(match l.as_str() {
            "oraclegeneral" | "oracle" => Format::OracleGeneral,
            "csv" => Format::Csv,
            "txt" | "text" => Format::Text,
            "lackey" => Format::Lackey,
            "perf" | "perf-script" | "perfscript" => Format::PerfScript,
            _ => {
                return Err(Error::Invalid(format!(
                    "unknown import format '{s}': expected one of oracleGeneral, csv, txt, lackey, perf"
                )))
            }
        })
    }
}

/// A CSV column, by header name or by 0-based index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Column {
    Index(usize),
    Name(String),
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Column::Index(i) => write!(f, "{i}"),
            Column::Name(n) => write!(f, "'{n}'"),
        }
    }
}

impl FromStr for Column {
    type Err = std::convert::Infallible;
    /// A number is an index, anything else a header name.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(match s.parse::<usize>() {
            Ok(i) => Column::Index(i),
            Err(_) => Column::Name(s.to_string()),
        })
    }
}

/// Options of the importers. Each format uses only the fields that concern it
/// (and records only those in the trace's metadata).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportOptions {
    /// csv: the column holding the object/page id (default: column 0).
    pub id_column: Column,
    /// csv: the first row is a header (default: false).
    pub has_header: bool,
    /// csv: field delimiter (default `,`).
    pub delimiter: u8,
    /// csv: the column holding the operation (r/R/read/28/0x28 are reads,
    /// w/W/write/2a/0x2a writes); none: every reference is a read.
    pub op_column: Option<Column>,
    /// csv: the column holding a timestamp (a decimal number, possibly with a
    /// fraction, in units of `time_unit_ns`); none: the trace has no times.
    pub time_column: Option<Column>,
    /// csv: nanoseconds per unit of the time column (default 1e9: seconds,
    /// as libCacheSim's CSV reader and oracleGeneral's clock_time use).
    pub time_unit_ns: u64,
    /// Page size in bytes. lackey and perf: page = address / page_size. For
    /// id-based formats (oracleGeneral, csv, txt) the ids are taken as page
    /// numbers and this is only the page size recorded with them.
    pub page_size: u64,
    /// lackey: also import instruction fetches (`I` lines). Default false:
    /// the point of a page-reference trace is usually the data footprint,
    /// and code pages would otherwise dominate the reference count (about 3
    /// of 4 lackey lines are instruction fetches).
    pub include_instructions: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            id_column: Column::Index(0),
            has_header: false,
            delimiter: b',',
            op_column: None,
            time_column: None,
            time_unit_ns: 1_000_000_000,
            page_size: 4096,
            include_instructions: false,
        }
    }
}

impl ImportOptions {
    fn check(&self) -> Result<()> {
        if self.page_size == 0 {
            return Err(Error::Invalid("page size must be at least 1 byte".into()));
        }
        if self.time_unit_ns == 0 {
            return Err(Error::Invalid("time unit must be at least 1 ns".into()));
        }
        Ok(())
    }

    /// The options that matter for `format`, as recorded in the trace's
    /// [`Source::Imported`] metadata.
    pub fn to_json(&self, format: Format) -> serde_json::Value {
        use serde_json::json;
        match format {
            Format::OracleGeneral | Format::Text => json!({ "page_size": self.page_size }),
            Format::Csv => json!({
                "id_column": self.id_column,
                "has_header": self.has_header,
                "delimiter": (self.delimiter as char).to_string(),
                "op_column": self.op_column,
                "time_column": self.time_column,
                "time_unit_ns": self.time_unit_ns,
                "page_size": self.page_size,
            }),
            Format::Lackey => json!({
                "page_size": self.page_size,
                "include_instructions": self.include_instructions,
            }),
            Format::PerfScript => json!({ "page_size": self.page_size }),
        }
    }

    pub(crate) fn source(&self, path: &str, format: Format) -> Source {
        Source::Imported {
            path: path.to_string(),
            format: format.name().to_string(),
            options: self.to_json(format),
        }
    }
}

/// Guesses a format from a file name: `.bin`, `.oracleGeneral` (optionally
/// followed by `.zst`) → oracleGeneral; `.csv` → csv; `.txt` → txt. Lackey and
/// perf output have no conventional extension: `None`.
pub fn detect(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let name = name.strip_suffix(".zst").unwrap_or(&name);
    let ext = name.rsplit_once('.')?.1;
    match ext {
        "bin" | "oraclegeneral" => Some(Format::OracleGeneral),
        "csv" => Some(Format::Csv),
        "txt" => Some(Format::Text),
        _ => None,
    }
}

/// What the trace file at `path` holds, for a command that reads it
/// whole or streams it: `None` for a native trace, else the format it is
/// imported from by its name (with default options). Refused, saying what
/// to do: a missing or empty file, a directory, a CSV (its columns need
/// naming; `csv_hint` ends that message: how the caller's users import
/// one) and an unknown extension.
pub fn file_kind(path: &Path, csv_hint: &str) -> Result<Option<Format>> {
    let p = path.display();
    if !path.exists() {
        return Err(Error::Invalid(format!("{p}: no such file")));
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return Err(Error::Invalid(format!(
            "{p}: the file is empty (0 bytes), so it holds no trace; was it written by a \
             command that failed? Write it again (swaplab gen, import, trace --refs)"
        )));
    }
    if path.is_dir() {
        return Err(Error::Invalid(format!(
            "{p}: a directory, not a trace file (a trace directory of `swaplab trace` \
             is a set of tables: trace_tables reads them in Python)"
        )));
    }
    if crate::native::is_native(path) {
        return Ok(None);
    }
    match detect(path) {
        Some(Format::Csv) => Err(Error::Invalid(format!(
            "{p}: a CSV needs its columns named: convert it first with \
             `swaplab import {p} --id-column NAME|INDEX [--header] -o trace.parquet`{csv_hint}"
        ))),
        Some(f) => Ok(Some(f)),
        None => Err(Error::Invalid(format!(
            "{p}: not a swaplab trace and no known extension; convert it with \
             `swaplab import {p} --format FORMAT -o trace.parquet` (formats: oracleGeneral, \
             csv, txt, lackey, perf)"
        ))),
    }
}

/// Opens `path` as `format`, decompressing it on the fly when its name ends
/// in `.zst` (streaming: memory does not grow with the file).
pub fn open(path: &Path, format: Format, opts: &ImportOptions) -> Result<Box<dyn RefSource>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let zst = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zst"));
    let name = path.display().to_string();
    if zst {
        let reader = zstd::stream::read::Decoder::new(file).map_err(|e| Error::io(path, e))?;
        return from_reader(reader, &name, format, opts);
    }
    // A plain file's size (and, for oracleGeneral, a second handle to
    // read it at offsets) lets the dense loaders map its two halves on
    // two threads.
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let second = match (format, size) {
        (Format::OracleGeneral, Some(len)) => file.try_clone().ok().map(|f| (f, len)),
        _ => None,
    };
    let r = BufReader::with_capacity(1 << 16, Box::new(file) as Box<dyn Read>);
    Ok(match (format, second) {
        (Format::OracleGeneral, Some((f, len))) => {
            Box::new(OracleGeneralReader::new(r, &name, opts)?.with_file(f, len))
        }
        (Format::Csv, _) => Box::new(CsvReader::new(r, &name, opts)?.with_size(size)),
        (Format::Text, _) => Box::new(TxtReader::new(r, &name, opts)?.with_size(size)),
        _ => from_reader(r.into_inner(), &name, format, opts)?,
    })
}

/// Reads `format` from any reader; `name` is the path recorded in the
/// metadata and shown in I/O errors.
pub fn from_reader<'a>(
    reader: impl Read + 'a,
    name: &str,
    format: Format,
    opts: &ImportOptions,
) -> Result<Box<dyn RefSource + 'a>> {
    let r = BufReader::with_capacity(1 << 16, reader);
    Ok(match format {
        Format::OracleGeneral => Box::new(OracleGeneralReader::new(r, name, opts)?),
        Format::Csv => Box::new(CsvReader::new(r, name, opts)?),
        Format::Text => Box::new(TxtReader::new(r, name, opts)?),
        Format::Lackey => Box::new(LackeyReader::new(r, name, opts)?),
        Format::PerfScript => Box::new(PerfScriptReader::new(r, name, opts)?),
    })
}

/// Parses an unsigned integer written in decimal or as `0x`-prefixed hex.
pub(crate) fn parse_id(s: &str) -> std::result::Result<u64, String> {
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        parse_hex(h)
    } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse::<u64>()
            .map_err(|_| "does not fit in 64 bits".to_string())
    } else {
        Err("expected a decimal or 0x-hex integer".to_string())
    };
    r.map_err(|why| format!("bad id '{}': {why}", shorten(s)))
}

/// Parses hex digits without prefix (at least one, at most 64 bits).
pub(crate) fn parse_hex(h: &str) -> std::result::Result<u64, String> {
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("expected hex digits".to_string());
    }
    u64::from_str_radix(h, 16).map_err(|_| "does not fit in 64 bits".to_string())
}

/// Parses `seconds[.fraction]` into `seconds * unit_ns` nanoseconds (digits
/// of the fraction beyond nanosecond precision are dropped).
pub(crate) fn parse_decimal_time(s: &str, unit_ns: u64) -> std::result::Result<u64, String> {
    let bad = || format!("bad time '{}': expected a decimal number", shorten(s));
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let overflow = || format!("time '{}' is too large", shorten(s));
    let whole: u64 = int.parse().map_err(|_| overflow())?;
    let mut ns = whole.checked_mul(unit_ns).ok_or_else(overflow)?;
    // fraction * unit_ns, keeping at most 18 digits (enough below 1 ns for
    // any unit up to 1 s; exact for units that are powers of ten).
    let digits = &frac[..frac.len().min(18)];
    if !digits.is_empty() {
        let num: u128 = digits.parse().map_err(|_| bad())?;
        let den = 10u128.pow(digits.len() as u32);
        let add = (num * unit_ns as u128 / den) as u64;
        ns = ns.checked_add(add).ok_or_else(overflow)?;
    }
    Ok(ns)
}

/// Cuts long input in error messages.
pub(crate) fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    }
}

/// Reads lines of bounded length with their 1-based numbers. Strips the
/// line terminator (`\n` or `\r\n`); invalid UTF-8 is replaced (the text
/// formats are ASCII; program names in perf output need not be UTF-8).
pub(crate) struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    text: String,
    /// Number of the line last returned.
    pub line: u64,
    name: String,
}

impl<R: BufRead> Lines<R> {
    pub fn new(inner: R, name: &str) -> Self {
        Lines {
            inner,
            buf: Vec::new(),
            text: String::new(),
            line: 0,
            name: name.to_string(),
        }
    }

    /// The input, for a reader that takes over from here.
    pub fn inner_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<&str>> {
        self.buf.clear();
        let mut eof = true;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.name, e)),
            };
            if avail.is_empty() {
                break;
            }
            eof = false;
            let (take, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 2 {
                return Err(Error::parse(
                    "over-long line",
                    format!("line {}", self.line + 1),
                    format!(
                        "longer than {MAX_LINE} bytes; is this a text file of the right format?"
                    ),
                ));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.inner.consume(take);
            if done {
                break;
            }
        }
        if eof {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        self.text.clear();
        match std::str::from_utf8(&self.buf) {
            Ok(s) => self.text.push_str(s),
            Err(_) => self.text.push_str(&String::from_utf8_lossy(&self.buf)),
        }
        Ok(Some(&self.text))
    }
}

/// Which optional columns a text source yields, fixed by its first reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Shape {
    decided: bool,
    time: bool,
    tid: bool,
}

impl Shape {
    /// Checks that a reference has the same optional fields as the first one.
    pub fn check(
        &mut self,
        time: bool,
        tid: bool,
        location: impl FnOnce() -> String,
    ) -> Result<()> {
        if !self.decided {
            *self = Shape {
                decided: true,
                time,
                tid,
            };
            return Ok(());
        }
        if self.time != time || self.tid != tid {
            let has = |b: bool| if b { "has" } else { "has no" };
            return Err(Error::parse(
                "inconsistent sample",
                location(),
                format!(
                    "this sample {} time and {} tid, unlike the first sample ({} time, {} tid); print every sample with the same perf script -F fields",
                    has(time),
                    has(tid),
                    has(self.time),
                    has(self.tid)
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!(
            "oracleGeneral".parse::<Format>().unwrap(),
            Format::OracleGeneral
        );
        assert_eq!("perf".parse::<Format>().unwrap(), Format::PerfScript);
        assert_eq!("txt".parse::<Format>().unwrap(), Format::Text);
        assert!("parquet".parse::<Format>().is_err());
    }

    #[test]
    fn detects_by_extension() {
        let d = |s: &str| detect(Path::new(s));
        assert_eq!(
            d("/x/cloudPhysicsIO.oracleGeneral.bin.zst"),
            Some(Format::OracleGeneral)
        );
        assert_eq!(d("a.bin"), Some(Format::OracleGeneral));
        assert_eq!(d("a.oracleGeneral"), Some(Format::OracleGeneral));
        assert_eq!(d("a.CSV"), Some(Format::Csv));
        assert_eq!(d("a.csv.zst"), Some(Format::Csv));
        assert_eq!(d("a.txt"), Some(Format::Text));
        assert_eq!(d("a.parquet"), None);
        assert_eq!(d("lackey.log"), None);
        assert_eq!(d("noext"), None);
        assert_eq!(d("a.zst"), None);
    }

    #[test]
    fn parses_ids_and_times() {
        assert_eq!(parse_id("42"), Ok(42));
        assert_eq!(parse_id("0x2A"), Ok(42));
        assert_eq!(parse_id("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_id("18446744073709551616").is_err());
        assert!(parse_id("0x").is_err());
        assert!(parse_id("-1").is_err());
        assert!(parse_id("12a").is_err());
        assert!(parse_id("").is_err());
        assert_eq!(
            parse_decimal_time("813.504732", 1_000_000_000),
            Ok(813_504_732_000)
        );
        assert_eq!(parse_decimal_time("7", 1_000_000_000), Ok(7_000_000_000));
        assert_eq!(parse_decimal_time("1.5", 1_000), Ok(1_500));
        assert_eq!(parse_decimal_time("0.0000000019", 1_000_000_000), Ok(1));
        assert!(parse_decimal_time("1.2.3", 1).is_err());
        assert!(parse_decimal_time(".5", 1).is_err());
        assert!(parse_decimal_time("99999999999999999999", 1).is_err());
        assert!(parse_decimal_time("18446744074", 1_000_000_000).is_err());
    }

    #[test]
    fn lines_strip_terminators_and_bound_length() {
        let mut l = Lines::new(&b"a\r\nb\n\nc"[..], "t");
        assert_eq!(l.next_line().unwrap(), Some("a"));
        assert_eq!(l.next_line().unwrap(), Some("b"));
        assert_eq!(l.next_line().unwrap(), Some(""));
        assert_eq!(l.next_line().unwrap(), Some("c"));
        assert_eq!(l.line, 4);
        assert_eq!(l.next_line().unwrap(), None);
        let long = vec![b'x'; MAX_LINE + 10];
        let mut l = Lines::new(&long[..], "t");
        let e = l.next_line().unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
