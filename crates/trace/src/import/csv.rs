//! CSV traces (as libCacheSim's CSV reader takes them).
//!
//! One row is one reference. Options (see [`ImportOptions`]):
//!
//! * `id_column` (name or 0-based index): the page/object id, decimal or
//!   `0x`-hex. Surrounding spaces are ignored.
//! * `has_header`: the first row names the columns (needed to choose columns
//!   by name).
//! * `delimiter` (default `,`); fields may be quoted as in RFC 4180.
//! * `op_column` (optional): `r`, `read`, `28`, `0x28` are reads; `w`,
//!   `write`, `2a`, `0x2a` writes (case-insensitive; 28 and 2a are the SCSI
//!   READ(10)/WRITE(10) opcodes of block traces such as cloudPhysics). Without
//!   it every reference is a read.
//! * `time_column` (optional): a decimal number, possibly with a fraction, in
//!   units of `time_unit_ns` nanoseconds (default seconds).
//!
//! Every row must have as many fields as the first; errors name the line and
//! the column.
use super::par::{self, decimal_prefix, fast_id, LineError, Parsed};
use super::{parse_decimal_time, parse_id, shorten, Column, Format, ImportOptions};
use crate::{DenseTrace, Error, RefBatch, RefSource, Result, Source};
use std::io::{BufRead, Read};

/// A resolved column: its index and, when known, its header name.
#[derive(Debug, Clone)]
struct Col {
    index: usize,
    name: Option<String>,
}

impl Col {
    fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("column {} ('{}')", self.index, shorten(n)),
            None => format!("column {}", self.index),
        }
    }
}

/// How a row becomes a reference: the columns and options, shared by the
/// batch reader and the parallel loader's workers.
#[derive(Debug, Clone)]
struct Rows {
    id: Col,
    op: Option<Col>,
    time: Option<Col>,
    time_unit_ns: u64,
    has_header: bool,
}

/// One row's reference: (page, is write); the time is checked, not kept
/// (the dense form has no times), unless `keep_time`.
type Row = (u64, bool, Option<u64>);

impl Rows {
    fn field<'a>(
        rec: &dyn Fn(usize) -> Option<&'a [u8]>,
        len: usize,
        col: &Col,
    ) -> std::result::Result<&'a str, LineError> {
        let Some(raw) = rec(col.index) else {
            return Err(LineError {
                line: 0,
                what: "missing column",
                column: String::new(),
                why: format!(
                    "no {}: the row has {len} columns (columns are numbered from 0)",
                    col.describe(),
                ),
                line1_hint: "",
            });
        };
        let s = std::str::from_utf8(raw).map_err(|_| Self::bad(col, "not UTF-8 text".into()))?;
        Ok(s.trim())
    }

    fn bad(col: &Col, why: String) -> LineError {
        LineError {
            line: 0,
            what: "bad csv field",
            column: format!(", {}", col.describe()),
            why,
            line1_hint: "",
        }
    }

    /// A row's reference, from its fields (`rec(i)`: field i of `len`).
    fn parse<'a>(
        &self,
        rec: &dyn Fn(usize) -> Option<&'a [u8]>,
        len: usize,
        keep_time: bool,
    ) -> std::result::Result<Row, LineError> {
        let fast = |c: &Col| {
            rec(c.index).filter(|f| {
                f.first().is_some_and(|&b| b > b' ' && b < 0x80)
                    && f.last().is_some_and(|&b| b > b' ' && b < 0x80)
            })
        };
        let page = match fast(&self.id).and_then(fast_id) {
            Some(p) => p,
            None => {
                let s = Self::field(rec, len, &self.id)?;
                parse_id(s).map_err(|why| {
                    let mut e = Self::bad(&self.id, why);
                    if !self.has_header {
                        e.line1_hint = " (if the first row is a header, say so)";
                    }
                    e
                })?
            }
        };
        let write = match &self.op {
            None => false,
            Some(c) => match fast(c).and_then(fast_op) {
                Some(w) => w,
                None => {
                    let s = Self::field(rec, len, c)?;
                    parse_op(s).ok_or_else(|| {
                        Self::bad(
                            c,
                            format!(
                                "bad op '{}': expected r/read/28/0x28 or w/write/2a/0x2a",
                                shorten(s)
                            ),
                        )
                    })?
                }
            },
        };
        let time = match &self.time {
            Some(c)
                if keep_time
                    || self.time_unit_ns > 1_000_000_000
                    || !fast(c).is_some_and(plain_time) =>
            {
                let s = Self::field(rec, len, c)?;
                Some(parse_decimal_time(s, self.time_unit_ns).map_err(|why| Self::bad(c, why))?)
            }
            _ => None,
        };
        Ok((page, write, time))
    }
}

/// An op field as [`parse_op`] reads it, without allocating.
#[inline]
fn fast_op(s: &[u8]) -> Option<bool> {
    match s.len() {
        1 | 4 | 5 => {}
        2 => {
            if s == b"28" {
                return Some(false);
            }
            if s.eq_ignore_ascii_case(b"2a") {
                return Some(true);
            }
            return None;
        }
        _ => {}
    }
    if s.eq_ignore_ascii_case(b"r")
        || s.eq_ignore_ascii_case(b"read")
        || s.eq_ignore_ascii_case(b"0x28")
    {
        Some(false)
    } else if s.eq_ignore_ascii_case(b"w")
        || s.eq_ignore_ascii_case(b"write")
        || s.eq_ignore_ascii_case(b"0x2a")
    {
        Some(true)
    } else {
        None
    }
}

/// A time that [`parse_decimal_time`] surely accepts at any unit up to
/// 1 s: at most 9 digits, a point and more digits (the loader, which keeps
/// no times, checks only that).
#[inline]
fn plain_time(s: &[u8]) -> bool {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    !int.is_empty()
        && int.len() <= 9
        && int.iter().all(u8::is_ascii_digit)
        && frac.iter().all(u8::is_ascii_digit)
}

/// Streams references from a CSV file.
pub struct CsvReader<R: BufRead> {
    /// The input after the header, until the first batch.
    input: Option<R>,
    reader: Option<::csv::Reader<R>>,
    record: ::csv::ByteRecord,
    name: String,
    opts: ImportOptions,
    rows: Rows,
    /// Fields of every row: the header's, else the first row's.
    fields: Option<usize>,
    /// Lines the header took.
    header_lines: u64,
    done: bool,
    /// The input's size in bytes, when known (a plain file): its two
    /// halves are then mapped on two threads ([`par::load`]).
    size: Option<u64>,
}

/// Reads one record with csv-core, consuming exactly its bytes (and so
/// leaving the rest of the input to another reader): (fields, lines).
fn read_header<R: BufRead>(r: &mut R, delimiter: u8, name: &str) -> Result<(Vec<String>, u64)> {
    use ::csv_core::ReadRecordResult as Res;
    let mut core = ::csv_core::ReaderBuilder::new()
        .delimiter(delimiter)
        .build();
    let (mut out, mut ends) = (vec![0u8; 1024], vec![0usize; 64]);
    let (mut outlen, mut endlen) = (0, 0);
    loop {
        let input = match r.fill_buf() {
            Ok(i) => i,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(name, e)),
        };
        let (res, nin, nout, nend) =
            core.read_record(input, &mut out[outlen..], &mut ends[endlen..]);
        r.consume(nin);
        outlen += nout;
        endlen += nend;
        match res {
            Res::InputEmpty => {}
            Res::OutputFull => out.resize(out.len() * 2, 0),
            Res::OutputEndsFull => ends.resize(ends.len() * 2, 0),
            Res::Record | Res::End => break,
        }
    }
    let mut fields = Vec::with_capacity(endlen);
    let mut at = 0;
    for &e in &ends[..endlen] {
        fields.push(String::from_utf8_lossy(&out[at..e]).trim().to_string());
        at = e;
    }
    Ok((fields, core.line() - 1))
}

impl<R: BufRead> CsvReader<R> {
    /// Reads the header (if any) and resolves the columns.
    pub fn new(mut inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        let (header, header_lines) = if opts.has_header {
            let (h, lines) = read_header(&mut inner, opts.delimiter, name)?;
            (Some(h), lines)
        } else {
            (None, 0)
        };
        let resolve = |c: &Column, role: &str| -> Result<Col> {
            match (c, &header) {
                (Column::Index(i), None) => Ok(Col {
                    index: *i,
                    name: None,
                }),
                (Column::Index(i), Some(h)) => match h.get(*i) {
                    Some(n) => Ok(Col {
                        index: *i,
                        name: Some(n.clone()),
                    }),
                    None => Err(Error::parse(
                        format!("missing {role} column"),
                        "line 1 (header)",
                        format!(
                            "no column {i}: the header has {} columns ({})",
                            h.len(),
                            shorten(&h.join(","))
                        ),
                    )),
                },
                (Column::Name(n), Some(h)) => match h.iter().position(|x| x == n) {
                    Some(i) => Ok(Col {
                        index: i,
                        name: Some(n.clone()),
                    }),
                    None => Err(Error::parse(
                        format!("missing {role} column"),
                        "line 1 (header)",
                        format!(
                            "no column named '{}'; the columns are: {}",
                            shorten(n),
                            shorten(&h.join(","))
                        ),
                    )),
                },
                (Column::Name(n), None) => Err(Error::Invalid(format!(
                    "{role} column '{}' is given by name, but the CSV has no header: give a 0-based column index or say that the first row is a header",
                    shorten(n)
                ))),
            }
        };
        let id = resolve(&opts.id_column, "id")?;
        let op = opts
            .op_column
            .as_ref()
            .map(|c| resolve(c, "op"))
            .transpose()?;
        let time = opts
            .time_column
            .as_ref()
            .map(|c| resolve(c, "time"))
            .transpose()?;
        Ok(CsvReader {
            input: Some(inner),
            reader: None,
            record: ::csv::ByteRecord::new(),
            name: name.to_string(),
            opts: opts.clone(),
            rows: Rows {
                id,
                op,
                time,
                time_unit_ns: opts.time_unit_ns,
                has_header: opts.has_header,
            },
            fields: header.map(|h| h.len()),
            header_lines,
            done: false,
            size: None,
        })
    }

    /// Notes the input's size in bytes (a plain file's).
    pub(crate) fn with_size(mut self, size: Option<u64>) -> Self {
        self.size = size;
        self
    }

    /// A csv reader of the rows (no header: it was read), every row's
    /// length checked here against [`fields`](Self::fields).
    fn rows_reader<T: Read>(delimiter: u8, input: T) -> ::csv::Reader<T> {
        ::csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(delimiter)
            .flexible(true)
            .from_reader(input)
    }

    /// The next row's reference from `reader`, `None` at the end; its line
    /// (as the csv crate counts it from the reader's start) and error.
    fn next_row<T: Read>(
        reader: &mut ::csv::Reader<T>,
        record: &mut ::csv::ByteRecord,
        rows: &Rows,
        fields: &mut Option<usize>,
        keep_time: bool,
        name: &str,
        line_offset: u64,
    ) -> Result<Option<std::result::Result<Row, LineError>>> {
        let more = reader
            .read_byte_record(record)
            .map_err(|e| csv_error(e, name, "record", line_offset))?;
        if !more {
            return Ok(None);
        }
        let line = record.position().map_or(0, |p| p.line());
        let len = record.len();
        match *fields {
            None => *fields = Some(len),
            Some(want) if want != len => {
                return Ok(Some(Err(LineError {
                    line,
                    what: "wrong column count",
                    column: String::new(),
                    why: format!("{len} columns, but the first row has {want}"),
                    line1_hint: "",
                })));
            }
            Some(_) => {}
        }
        let rec: &::csv::ByteRecord = record;
        Ok(Some(
            rows.parse(&|i| rec.get(i), len, keep_time)
                .map_err(|e| LineError { line, ..e }),
        ))
    }

    /// The parallel loader (see [`par`]): chunks of rows parsed on every
    /// core, ids mapped on one more thread. Input with a quote character
    /// (where a field may hold a newline) is read by the csv crate from the
    /// first chunk that has one on, on this thread.
    fn load_dense_par(&mut self, progress: &mut dyn FnMut(u64)) -> Result<DenseTrace> {
        let (size, page_size, source) = (self.size, self.opts.page_size, self.source());
        par::load(size, page_size, source, |a, b| {
            self.run_par(a, b, false, progress)
        })
    }

    /// Runs [`par::run`] over the input into `first` (and `second`, from
    /// its offset on), with each reference's time when `keep_time` (and the
    /// csv has a time column).
    fn run_par<S: par::Sink>(
        &mut self,
        first: S,
        second: Option<(u64, S)>,
        keep_time: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(S, Option<S>)> {
        self.done = true;
        let mut inner = self.input.take().expect("not read yet");
        let (name, rows, delim) = (self.name.clone(), self.rows.clone(), self.opts.delimiter);
        let fields = std::sync::OnceLock::new();
        if let Some(n) = self.fields {
            let _ = fields.set(n);
        }
        let plain = !matches!(delim, b'"' | b'\n' | b'\r');
        let keep_time = keep_time && rows.time.is_some();
        let parse =
            |bytes: &[u8]| parse_chunk(bytes, &rows, delim, fields.get().copied(), keep_time);
        par::run(
            parse,
            |feed| {
                let rest = if plain {
                    par::chunk_lines(
                        &mut inner,
                        &name,
                        Vec::new(),
                        None,
                        &|c| c.contains(&b'"'),
                        &mut |c| {
                            if fields.get().is_none() {
                                if let Some(n) = first_row_fields(&c, delim) {
                                    let _ = fields.set(n);
                                }
                            }
                            let more = feed.chunk(c);
                            progress(feed.mapped());
                            more
                        },
                    )?
                } else {
                    Some(Vec::new())
                };
                let Some(rest) = rest else { return Ok(()) };
                // The rest, row by row: lines counted from its start.
                let mut reader = Self::rows_reader(delim, std::io::Cursor::new(rest).chain(inner));
                let mut record = ::csv::ByteRecord::new();
                let mut n = fields.get().copied();
                let mut p = Parsed::default();
                loop {
                    let row = Self::next_row(
                        &mut reader,
                        &mut record,
                        &rows,
                        &mut n,
                        keep_time,
                        &name,
                        0,
                    );
                    let end = match row {
                        Ok(None) => true,
                        Ok(Some(Ok((page, write, time)))) => {
                            match time.filter(|_| keep_time) {
                                Some(t) => p.push_timed(page, write, t),
                                None => p.push(page, write),
                            }
                            false
                        }
                        Ok(Some(Err(e))) => {
                            p.err = Some(e);
                            true
                        }
                        Err(e) => {
                            feed.parsed(p);
                            return Err(e);
                        }
                    };
                    if end || p.keys.len() >= 1 << 16 {
                        if !feed.parsed(std::mem::take(&mut p)) || end {
                            return Ok(());
                        }
                        progress(feed.mapped());
                    }
                }
            },
            self.header_lines + 1,
            first,
            second,
        )
    }
}

/// Fields of the first row of a chunk without quotes, if it has a row.
fn first_row_fields(bytes: &[u8], delim: u8) -> Option<usize> {
    let row = bytes
        .split(|&b| b == b'\n' || b == b'\r')
        .find(|r| !r.is_empty())?;
    Some(1 + row.iter().filter(|&&b| b == delim).count())
}

/// The columns a row's one-pass parse ([`fast_row`]) looks at.
struct FastCols {
    delim: u8,
    /// Fields every row has.
    fields: usize,
    id: usize,
    op: Option<usize>,
    /// The time column, checked with [`plain_time`] (only for units up to
    /// 1 s: other units always take the general path).
    time: Option<usize>,
}

impl FastCols {
    fn new(rows: &Rows, delim: u8, fields: Option<usize>) -> Option<Self> {
        if rows.time.is_some() && rows.time_unit_ns > 1_000_000_000 {
            return None;
        }
        Some(FastCols {
            delim,
            fields: fields?,
            id: rows.id.index,
            op: rows.op.as_ref().map(|c| c.index),
            time: rows.time.as_ref().map(|c| c.index),
        })
    }
}

/// One row of plain fields in one pass: the id field in decimal or
/// `0x`-hex, the op field as [`fast_op`] has it, the time as
/// [`plain_time`], the row's field count, then `\n` or `\r\n`.
/// `(page, write, bytes consumed)`; `None`: anything else, for the general
/// path (which gives the same result for what this accepts: these fields
/// have no spaces or non-ASCII bytes to trim or check).
#[inline]
fn fast_row(b: &[u8], c: &FastCols) -> Option<(u64, bool, usize)> {
    let (mut i, mut k) = (0, 0);
    let (mut page, mut write) = (None, false);
    let end = |x: Option<&u8>| x.is_none_or(|&x| x == c.delim || x == b'\n' || x == b'\r');
    loop {
        let s = i;
        if k == c.id {
            if let Some((v, n)) = decimal_prefix(&b[s..]) {
                if end(b.get(s + n)) {
                    page = Some(v);
                    i = s + n;
                }
            }
        }
        while !end(b.get(i)) {
            i += 1;
        }
        let field = &b[s..i];
        if k == c.id && page.is_none() {
            page = Some(fast_id(field)?);
        }
        if c.op == Some(k) {
            write = fast_op(field)?;
        }
        if c.time == Some(k) && !plain_time(field) {
            return None;
        }
        k += 1;
        match b.get(i) {
            Some(&d) if d == c.delim => i += 1,
            Some(b'\n') => {
                i += 1;
                break;
            }
            Some(b'\r') if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                break;
            }
            _ => return None,
        }
    }
    if k != c.fields {
        return None;
    }
    Some((page?, write, i))
}

/// Parses a chunk of whole lines without quote characters (the parallel
/// loader's worker): rows end at `\n` or `\r`, empty rows are skipped, as
/// the csv crate reads them. `fields`: every row's field count, if known
/// (else the chunk's first row's). Rows of plain fields take [`fast_row`],
/// unless each reference's time is to be kept (`keep_time`).
fn parse_chunk(
    bytes: &[u8],
    rows: &Rows,
    delim: u8,
    fields: Option<usize>,
    keep_time: bool,
) -> Parsed {
    let mut p = Parsed::default();
    p.keys.reserve(bytes.len() / 8);
    let mut want = fields;
    let fast_cols = |want| FastCols::new(rows, delim, want).filter(|_| !keep_time);
    let mut fast = fast_cols(want);
    let mut ends: Vec<usize> = Vec::with_capacity(16);
    let (mut at, mut line) = (0, 0u64);
    'lines: while at < bytes.len() {
        line += 1;
        if let Some((page, write, used)) = fast.as_ref().and_then(|c| fast_row(&bytes[at..], c)) {
            p.push(page, write);
            at += used;
            continue;
        }
        let rest = &bytes[at..];
        let l = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => &rest[..i],
            None => rest,
        };
        at += (l.len() + 1).min(rest.len());
        for row in l.split(|&b| b == b'\r').filter(|r| !r.is_empty()) {
            ends.clear();
            ends.extend(
                row.iter()
                    .enumerate()
                    .filter(|(_, &b)| b == delim)
                    .map(|(i, _)| i),
            );
            ends.push(row.len());
            let len = ends.len();
            match want {
                None => {
                    want = Some(len);
                    fast = fast_cols(want);
                }
                Some(w) if w != len => {
                    p.err = Some(LineError {
                        line,
                        what: "wrong column count",
                        column: String::new(),
                        why: format!("{len} columns, but the first row has {w}"),
                        line1_hint: "",
                    });
                    break 'lines;
                }
                Some(_) => {}
            }
            let field = |i: usize| -> Option<&[u8]> {
                let end = *ends.get(i)?;
                let start = if i == 0 { 0 } else { ends[i - 1] + 1 };
                Some(&row[start..end])
            };
            match rows.parse(&field, len, keep_time) {
                Ok((page, write, Some(t))) if keep_time => p.push_timed(page, write, t),
                Ok((page, write, _)) => p.push(page, write),
                Err(e) => {
                    p.err = Some(LineError { line, ..e });
                    break 'lines;
                }
            }
        }
    }
    // Lines end at newlines: all of them, but an unterminated last one.
    p.lines = line - u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
    p
}

/// Parses an op field: `Some(true)` for a write.
pub(crate) fn parse_op(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "r" | "read" | "28" | "0x28" => Some(false),
        "w" | "write" | "2a" | "0x2a" => Some(true),
        _ => None,
    }
}

fn csv_error(e: ::csv::Error, name: &str, what: &str, line_offset: u64) -> Error {
    let line = e.position().map(|p| p.line() + line_offset);
    let loc = match line {
        Some(l) => format!("line {l}"),
        None => what.to_string(),
    };
    match e.into_kind() {
        ::csv::ErrorKind::Io(io) => Error::io(name, io),
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => Error::parse(
            "wrong column count",
            loc,
            format!("{len} columns, but the first row has {expected_len}"),
        ),
        other => Error::parse("bad csv", loc, format!("{other:?}")),
    }
}

impl<R: BufRead> RefSource for CsvReader<R> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        if self.reader.is_none() {
            if let Some(input) = self.input.take() {
                self.reader = Some(Self::rows_reader(self.opts.delimiter, input));
            }
        }
        while !self.done && batch.len() < max.max(1) {
            let Some(reader) = self.reader.as_mut() else {
                self.done = true;
                break;
            };
            let row = Self::next_row(
                reader,
                &mut self.record,
                &self.rows,
                &mut self.fields,
                true,
                &self.name,
                self.header_lines,
            );
            let (page, write, time) = match row {
                Ok(Some(Ok(r))) => r,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Ok(Some(Err(e))) => {
                    self.done = true;
                    let line = e.line + self.header_lines;
                    return Err(e.at(line));
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            batch.page.push(page);
            batch.write.push(write);
            if let Some(t) = time {
                batch.time_ns.push(t);
            }
        }
        batch.check()?;
        Ok(!batch.is_empty())
    }

    /// Straight to the dense form on all cores, before any batch was read.
    fn load_dense(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<DenseTrace>> {
        if self.done || self.input.is_none() {
            return None;
        }
        Some(self.load_dense_par(progress))
    }

    /// Parsed on every core, before any batch was read, with the time
    /// column's times.
    fn feed_all(
        &mut self,
        sink: &mut crate::RefSink<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Option<Result<()>> {
        if self.done || self.input.is_none() {
            return None;
        }
        Some(self.run_par(sink, None, true, progress).map(|_| ()))
    }

    fn source(&self) -> Source {
        self.opts.source(&self.name, Format::Csv)
    }

    fn page_size(&self) -> u64 {
        self.opts.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &str, opts: &ImportOptions) -> Result<RefBatch> {
        let mut r = CsvReader::new(input.as_bytes(), "t.csv", opts)?;
        let mut all = RefBatch::default();
        let mut b = RefBatch::default();
        while r.next_batch(&mut b, 2)? {
            all.page.extend_from_slice(&b.page);
            all.write.extend_from_slice(&b.write);
            all.time_ns.extend_from_slice(&b.time_ns);
        }
        Ok(all)
    }

    #[test]
    fn header_named_columns_ops_and_times() {
        let input = "version,time,op,size,lbn\n1,10,2a,512,42\n1,11, 28 ,512,0x10\n1,11.5,W,1,7\n1,12,read,1,42\n";
        let opts = ImportOptions {
            id_column: Column::Name("lbn".into()),
            has_header: true,
            op_column: Some(Column::Name("op".into())),
            time_column: Some(Column::Index(1)),
            ..Default::default()
        };
        let b = read_all(input, &opts).unwrap();
        assert_eq!(b.page, vec![42, 16, 7, 42]);
        assert_eq!(b.write, vec![true, false, true, false]);
        assert_eq!(
            b.time_ns,
            vec![
                10_000_000_000,
                11_000_000_000,
                11_500_000_000,
                12_000_000_000
            ]
        );
    }

    #[test]
    fn index_column_without_header_and_other_delimiter() {
        let opts = ImportOptions {
            id_column: Column::Index(1),
            delimiter: b';',
            ..Default::default()
        };
        let b = read_all("a;5\nb;\"6\"\nc;0xff\n", &opts).unwrap();
        assert_eq!(b.page, vec![5, 6, 255]);
        assert_eq!(b.write, vec![false; 3]);
        assert!(b.time_ns.is_empty());
    }

    #[test]
    fn errors_name_line_and_column() {
        let hdr = ImportOptions {
            id_column: Column::Name("lbn".into()),
            has_header: true,
            ..Default::default()
        };
        // Bad hex on line 3.
        let e = read_all("x,lbn\n1,2\n1,0xZZ\n", &hdr)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3, column 1 ('lbn')") && e.contains("0xZZ"),
            "{e}"
        );
        // Missing column by name.
        let e = read_all("x,block\n1,2\n", &hdr).unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("no column named 'lbn'"),
            "{e}"
        );
        // Wrong column count on line 3.
        let e = read_all("x,lbn\n1,2\n1,2,3\n", &hdr)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wrong column count at line 3"), "{e}");
        // Index out of range without a header.
        let idx = ImportOptions {
            id_column: Column::Index(4),
            ..Default::default()
        };
        let e = read_all("1,2\n", &idx).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("no column 4"), "{e}");
        // A header read as data gets a hint.
        let e = read_all("lbn\n1\n", &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1, column 0") && e.contains("header"),
            "{e}"
        );
        // Bad op on line 2.
        let op = ImportOptions {
            op_column: Some(Column::Index(1)),
            ..Default::default()
        };
        let e = read_all("1,r\n2,x\n", &op).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column 1") && e.contains("bad op 'x'"),
            "{e}"
        );
        // Name without header is a usage error.
        let byname = ImportOptions {
            id_column: Column::Name("lbn".into()),
            ..Default::default()
        };
        assert!(read_all("1\n", &byname).is_err());
    }

    #[test]
    fn op_values() {
        for s in ["r", "R", "read", "READ", "28", "0x28"] {
            assert_eq!(parse_op(s), Some(false), "{s}");
        }
        for s in ["w", "W", "write", "2a", "2A", "0x2a"] {
            assert_eq!(parse_op(s), Some(true), "{s}");
        }
        assert_eq!(parse_op("rw"), None);
        assert_eq!(parse_op(""), None);
    }
}
