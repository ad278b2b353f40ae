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
use super::{parse_decimal_time, parse_id, shorten, Column, Format, ImportOptions};
use crate::{Error, RefBatch, RefSource, Result, Source};
use std::io::Read;

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

/// Streams references from a CSV file.
pub struct CsvReader<R: Read> {
    reader: ::csv::Reader<R>,
    record: ::csv::ByteRecord,
    name: String,
    opts: ImportOptions,
    id: Col,
    op: Option<Col>,
    time: Option<Col>,
    done: bool,
}

impl<R: Read> CsvReader<R> {
    /// Reads the header (if any) and resolves the columns.
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(opts.has_header)
            .delimiter(opts.delimiter)
            .flexible(false)
            .from_reader(inner);
        let header: Option<Vec<String>> = if opts.has_header {
            let h = reader
                .byte_headers()
                .map_err(|e| csv_error(e, name, "header"))?;
            Some(
                h.iter()
                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                    .collect(),
            )
        } else {
            None
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
            reader,
            record: ::csv::ByteRecord::new(),
            name: name.to_string(),
            opts: opts.clone(),
            id,
            op,
            time,
            done: false,
        })
    }

    fn field<'a>(rec: &'a ::csv::ByteRecord, col: &Col, line: u64) -> Result<&'a str> {
        let Some(raw) = rec.get(col.index) else {
            return Err(Error::parse(
                "missing column",
                format!("line {line}"),
                format!(
                    "no {}: the row has {} columns (columns are numbered from 0)",
                    col.describe(),
                    rec.len()
                ),
            ));
        };
        let s = std::str::from_utf8(raw).map_err(|_| {
            Error::parse(
                "bad csv field",
                format!("line {line}, {}", col.describe()),
                "not UTF-8 text",
            )
        })?;
        Ok(s.trim())
    }
}

/// Parses an op field: `Some(true)` for a write.
pub(crate) fn parse_op(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "r" | "read" | "28" | "0x28" => Some(false),
        "w" | "write" | "2a" | "0x2a" => Some(true),
        _ => None,
    }
}

fn csv_error(e: ::csv::Error, name: &str, what: &str) -> Error {
    let line = e.position().map(|p| p.line());
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

impl<R: Read> RefSource for CsvReader<R> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        while !self.done && batch.len() < max.max(1) {
            let more = match self.reader.read_byte_record(&mut self.record) {
                Ok(m) => m,
                Err(e) => {
                    self.done = true;
                    return Err(csv_error(e, &self.name, "record"));
                }
            };
            if !more {
                self.done = true;
                break;
            }
            let line = self.record.position().map_or(0, |p| p.line());
            let r = (|| -> Result<(u64, bool, Option<u64>)> {
                let s = Self::field(&self.record, &self.id, line)?;
                let page = parse_id(s).map_err(|why| {
                    let hint = if line == 1 && !self.opts.has_header {
                        " (if the first row is a header, say so)"
                    } else {
                        ""
                    };
                    Error::parse(
                        "bad csv field",
                        format!("line {line}, {}", self.id.describe()),
                        format!("{why}{hint}"),
                    )
                })?;
                let write = match &self.op {
                    None => false,
                    Some(c) => {
                        let s = Self::field(&self.record, c, line)?;
                        parse_op(s).ok_or_else(|| {
                            Error::parse(
                                "bad csv field",
                                format!("line {line}, {}", c.describe()),
                                format!(
                                    "bad op '{}': expected r/read/28/0x28 or w/write/2a/0x2a",
                                    shorten(s)
                                ),
                            )
                        })?
                    }
                };
                let time = match &self.time {
                    None => None,
                    Some(c) => {
                        let s = Self::field(&self.record, c, line)?;
                        Some(
                            parse_decimal_time(s, self.opts.time_unit_ns).map_err(|why| {
                                Error::parse(
                                    "bad csv field",
                                    format!("line {line}, {}", c.describe()),
                                    why,
                                )
                            })?,
                        )
                    }
                };
                Ok((page, write, time))
            })();
            let (page, write, time) = match r {
                Ok(x) => x,
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
