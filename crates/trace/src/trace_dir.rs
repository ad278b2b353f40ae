//! The files of a trace directory (`swaplab trace`): one Parquet file per
//! table of [`TraceTables`] plus `meta.json` ([`TraceMetaFile`]). This is
//! the documented on-disk schema of a traced run.
//!
//! Every Parquet file is zstd-compressed (level 3, data pages v2), written
//! in row groups of at most [`ROWS_PER_GROUP`] rows, atomically (a `.tmp`
//! file beside it, synced, then renamed), and carries two footer key-value
//! entries: `swaplab.table` (the table name, e.g. `faults`) and
//! `swaplab.schema_version` ([`SCHEMA_VERSION`]). Time and address columns
//! use DELTA_BINARY_PACKED (they are sorted or nearly so); ids, codes and
//! strings use a dictionary with RLE indices. A traced run streams its
//! `faults` and `swaps` with [`TableWriter`] in row groups of
//! [`STREAM_ROWS_PER_GROUP`] rows as the events arrive, so the writer
//! holds at most one row group whatever the length of the run.
//!
//! Conventions: times are nanoseconds since the traced command started
//! (CLOCK_MONOTONIC differences); addresses are virtual addresses of process
//! `pid`. Unsigned 64-bit values are stored as INT64 holding their bits,
//! annotated `INTEGER(64,false)` (values above `i64::MAX` appear negative to
//! a reader that ignores the annotation); pids and tids likewise as INT32
//! `INTEGER(32,false)`. Codes are plain INT32. Strings are UTF-8
//! BYTE_ARRAY. Rows count from 0 in error messages.
//!
//! Required tables: `faults`, `swaps`, `regions`, `processes` (possibly with
//! zero rows). Optional: `allocations`, `sites` (written only by the
//! preload library; a missing file reads as an empty table).
//!
//! ## `faults.parquet` — one row per page fault, in time order
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `t_ns` | INT64 (u64), delta | ns | time of the fault since the command started |
//! | `pid` | INT32 (u32), dict | | process (thread group) id |
//! | `tid` | INT32 (u32), dict | | thread id |
//! | `addr` | INT64 (u64), delta | address | the faulting data address |
//! | `ip` | INT64 (u64), dict | address | instruction pointer of the faulting instruction |
//! | `kind` | INT32, dict | code | 0 minor, 1 major, 2 unknown ([`FaultKind::code`]) |
//!
//! ## `swaps.parquet` — one row per page moving to or from swap, in time order
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `t_ns` | INT64 (u64), delta | ns | when it was seen (for `source` 0, the later pagemap sample) |
//! | `pid` | INT32 (u32), dict | | process id |
//! | `vaddr` | INT64 (u64), delta | address | page-aligned virtual address |
//! | `dir` | INT32, dict | code | 0 out (present → swapped), 1 in (swapped → present) |
//! | `swap_type` | INT32 (u8), nullable, dict | | swap area index (pagemap swap type), null if unknown |
//! | `swap_offset` | INT64 (u64), nullable, delta | slots | slot in that area (pagemap swap offset), null if unknown |
//! | `source` | INT32, dict | code | 0 pagemap (sampled), 1 fault (a major fault: exact time) |
//!
//! ## `regions.parquet` — one row per mapping of a process, as /proc/PID/maps showed it
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `pid` | INT32 (u32), dict | | process id |
//! | `start` | INT64 (u64), delta | address | first byte |
//! | `end` | INT64 (u64), delta | address | one past the last byte |
//! | `perms` | UTF8, dict | | `rw-p` etc. |
//! | `path` | UTF8, dict | | the file, `[heap]`, `[stack]`, `[anon]` (no name) or another `[...]` name |
//! | `first_seen_ns` | INT64 (u64), delta | ns | first snapshot that showed it |
//! | `last_seen_ns` | INT64 (u64), delta | ns | last snapshot that showed it |
//!
//! ## `allocations.parquet` (optional) — one row per allocation at or above the preload library's threshold, or sampled below it
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `pid` | INT32 (u32), dict | | process that made it |
//! | `tid` | INT32 (u32), dict | | thread that made it |
//! | `start` | INT64 (u64), delta | address | first byte |
//! | `size` | INT64 (u64), delta | bytes | bytes asked for |
//! | `t_alloc_ns` | INT64 (u64), delta | ns | when it was made |
//! | `t_free_ns` | INT64 (u64), nullable, delta | ns | when it was freed / unmapped; null if never |
//! | `site_id` | INT32 (u32), dict | | its call stack (`sites.site_id`) |
//! | `func` | UTF8, dict | | `malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `mmap`, `mremap` |
//! | `weight` | INT64 (u64), nullable, delta | bytes | null: at or above the threshold (exact); else a sampled allocation below it (`trace --heap-sample`) and the bytes of its site it stands for; absent in older files (all null) |
//!
//! ## `sites.parquet` (optional) — one row per deduplicated allocation call stack
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `site_id` | INT32 (u32), delta | | the id `allocations.site_id` uses |
//! | `frames` | UTF8, dict | | frames joined with `\n`, innermost first: `module!function+0xOFF` or `module+0xOFF` |
//! | `locations` | UTF8, dict | | `file:line` per frame (empty where unknown), joined with `\n`: as many as `frames` |
//!
//! ## `processes.parquet` — one row per process of the traced tree
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `pid` | INT32 (u32), delta | | process id |
//! | `ppid` | INT32 (u32), dict | | parent process id (0 for the traced command itself) |
//! | `t_start_ns` | INT64 (u64), delta | ns | when it was first seen (its fork, if the preload library saw it) |
//! | `comm` | UTF8, dict | | its command name, empty if unknown |
//!
//! ## `meta.json`
//!
//! The JSON form of [`TraceMetaFile`]: the command, its resolved argv, the
//! wall-clock start, the monotonic t0 the times count from, the options and
//! environment of the run, row counts per table, notes, the swaplab
//! version that wrote it, and typed fields of the traced run: `run_id`,
//! `limit_bytes` and `page_cluster` (absent in older traces; readers fall
//! back to `options.limit_bytes` and `environment.knobs.page_cluster`).
//!
//! Size: 1 M realistic fault events (sweeps and random probes over 256 MiB,
//! 2–20 µs apart, 2 threads, 20 instruction pointers) take about 4 bytes
//! per event (see the `faults_size_budget` test).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::atomic::{write_atomic, AtomicFile};
use crate::error::{Error, Result};
use crate::events::{
    Allocation, FaultEvent, FaultKind, Process, Region, Site, SwapDir, SwapEvent, SwapSource,
    TraceTables,
};
use parquet::basic::{Compression, Encoding, Type as PhysicalType, ZstdLevel};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;
use serde::{Deserialize, Serialize};

/// Rows per Parquet row group (at most).
pub const ROWS_PER_GROUP: usize = 1 << 20;
/// Rows per row group of a table streamed during a run (`faults`,
/// `swaps`): about 5 MiB of buffered fault rows and column data.
pub const STREAM_ROWS_PER_GROUP: usize = 1 << 16;
/// Footer key naming the table.
pub const TABLE_KEY: &str = "swaplab.table";
/// Footer key holding the schema version.
pub const VERSION_KEY: &str = "swaplab.schema_version";
/// The schema version these files follow.
pub const SCHEMA_VERSION: u32 = 1;
/// The metadata file's name.
pub const META_FILE: &str = "meta.json";
/// Tables that every trace directory has.
pub const REQUIRED_TABLES: [&str; 4] = ["faults", "swaps", "regions", "processes"];
/// Tables that only some traces have (the preload library writes them).
pub const OPTIONAL_TABLES: [&str; 2] = ["allocations", "sites"];

/// The Parquet file of table `name` in `dir`.
pub fn table_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.parquet"))
}

// ---------------------------------------------------------------- schema

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// INT64 holding u64 bits.
    U64,
    /// INT32 holding u32 bits.
    U32,
    /// INT32 holding a u8.
    U8,
    /// INT32 code.
    Code,
    /// UTF-8 string.
    Utf8,
}

impl Ty {
    fn physical(self) -> PhysicalType {
        match self {
            Ty::U64 => PhysicalType::INT64,
            Ty::U32 | Ty::U8 | Ty::Code => PhysicalType::INT32,
            Ty::Utf8 => PhysicalType::BYTE_ARRAY,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Enc {
    Delta,
    Dict,
}

#[doc(hidden)]
pub struct Col {
    name: &'static str,
    ty: Ty,
    nullable: bool,
    enc: Enc,
    unit: &'static str,
    meaning: &'static str,
}

const fn col(
    name: &'static str,
    ty: Ty,
    enc: Enc,
    unit: &'static str,
    meaning: &'static str,
) -> Col {
    Col {
        name,
        ty,
        nullable: false,
        enc,
        unit,
        meaning,
    }
}

const fn opt(
    name: &'static str,
    ty: Ty,
    enc: Enc,
    unit: &'static str,
    meaning: &'static str,
) -> Col {
    Col {
        name,
        ty,
        nullable: true,
        enc,
        unit,
        meaning,
    }
}

impl Col {
    /// The documented type, e.g. `INT64 (u64), nullable, delta`.
    fn type_doc(&self) -> String {
        let ty = match self.ty {
            Ty::U64 => "INT64 (u64)",
            Ty::U32 => "INT32 (u32)",
            Ty::U8 => "INT32 (u8)",
            Ty::Code => "INT32",
            Ty::Utf8 => "UTF8",
        };
        let null = if self.nullable { ", nullable" } else { "" };
        let enc = match self.enc {
            Enc::Delta => "delta",
            Enc::Dict => "dict",
        };
        format!("{ty}{null}, {enc}")
    }
}

/// Every table of a trace directory: name, what a row is, columns.
const TABLES: [(&str, &str, &[Col]); 6] = [
    ("faults", "one row per page fault, in time order", &FAULTS),
    (
        "swaps",
        "one row per page moving to or from swap, in time order",
        &SWAPS,
    ),
    (
        "regions",
        "one row per mapping of a process, as /proc/PID/maps showed it",
        &REGIONS,
    ),
    (
        "allocations",
        "one row per allocation at or above the preload library's threshold, or sampled below it",
        &ALLOCATIONS,
    ),
    (
        "sites",
        "one row per deduplicated allocation call stack",
        &SITES,
    ),
    (
        "processes",
        "one row per process of the traced tree",
        &PROCESSES,
    ),
];

/// The documented schema of every table of a trace directory, from the
/// same column definitions the writer and reader use.
pub fn schemas() -> Vec<crate::schema::TableDoc> {
    TABLES
        .iter()
        .map(|(name, about, cols)| crate::schema::TableDoc {
            name: format!("{name}.parquet"),
            about: about.to_string(),
            columns: cols
                .iter()
                .map(|c| crate::schema::ColumnDoc::new(c.name, &c.type_doc(), c.unit, c.meaning))
                .collect(),
        })
        .collect()
}

use Enc::{Delta, Dict};
use Ty::{Code, Utf8, U32, U64, U8};

/// Nullable columns added after the first files were written: a file
/// without one reads as all null.
const LATE_COLUMNS: [&str; 1] = ["weight"];

const FAULTS: [Col; 6] = [
    col(
        "t_ns",
        U64,
        Delta,
        "ns",
        "time of the fault since the command started",
    ),
    col("pid", U32, Dict, "", "process (thread group) id"),
    col("tid", U32, Dict, "", "thread id"),
    col("addr", U64, Delta, "address", "the faulting data address"),
    col(
        "ip",
        U64,
        Dict,
        "address",
        "instruction pointer of the faulting instruction",
    ),
    col(
        "kind",
        Code,
        Dict,
        "code",
        "0 minor, 1 major, 2 unknown ([`FaultKind::code`])",
    ),
];
const SWAPS: [Col; 7] = [
    col(
        "t_ns",
        U64,
        Delta,
        "ns",
        "when it was seen (for `source` 0, the later pagemap sample)",
    ),
    col("pid", U32, Dict, "", "process id"),
    col(
        "vaddr",
        U64,
        Delta,
        "address",
        "page-aligned virtual address",
    ),
    col(
        "dir",
        Code,
        Dict,
        "code",
        "0 out (present → swapped), 1 in (swapped → present)",
    ),
    opt(
        "swap_type",
        U8,
        Dict,
        "",
        "swap area index (pagemap swap type), null if unknown",
    ),
    opt(
        "swap_offset",
        U64,
        Delta,
        "slots",
        "slot in that area (pagemap swap offset), null if unknown",
    ),
    col(
        "source",
        Code,
        Dict,
        "code",
        "0 pagemap (sampled), 1 fault (a major fault: exact time)",
    ),
];
const REGIONS: [Col; 7] = [
    col("pid", U32, Dict, "", "process id"),
    col("start", U64, Delta, "address", "first byte"),
    col("end", U64, Delta, "address", "one past the last byte"),
    col("perms", Utf8, Dict, "", "`rw-p` etc."),
    col(
        "path",
        Utf8,
        Dict,
        "",
        "the file, `[heap]`, `[stack]`, `[anon]` (no name) or another `[...]` name",
    ),
    col(
        "first_seen_ns",
        U64,
        Delta,
        "ns",
        "first snapshot that showed it",
    ),
    col(
        "last_seen_ns",
        U64,
        Delta,
        "ns",
        "last snapshot that showed it",
    ),
];
const ALLOCATIONS: [Col; 9] = [
    col("pid", U32, Dict, "", "process that made it"),
    col("tid", U32, Dict, "", "thread that made it"),
    col("start", U64, Delta, "address", "first byte"),
    col("size", U64, Delta, "bytes", "bytes asked for"),
    col("t_alloc_ns", U64, Delta, "ns", "when it was made"),
    opt("t_free_ns", U64, Delta, "ns", "when it was freed / unmapped; null if never"),
    col("site_id", U32, Dict, "", "its call stack (`sites.site_id`)"),
    col("func", Utf8, Dict, "", "`malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `mmap`, `mremap`"),
    opt("weight", U64, Delta, "bytes", "null: at or above the threshold (exact); else a sampled allocation below it (`trace --heap-sample`) and the bytes of its site it stands for; absent in older files (all null)"),
];
const SITES: [Col; 3] = [
    col(
        "site_id",
        U32,
        Delta,
        "",
        "the id `allocations.site_id` uses",
    ),
    col(
        "frames",
        Utf8,
        Dict,
        "",
        "frames joined with `\\n`, innermost first: `module!function+0xOFF` or `module+0xOFF`",
    ),
    col(
        "locations",
        Utf8,
        Dict,
        "",
        "`file:line` per frame (empty where unknown), joined with `\\n`: as many as `frames`",
    ),
];
const PROCESSES: [Col; 4] = [
    col("pid", U32, Delta, "", "process id"),
    col(
        "ppid",
        U32,
        Dict,
        "",
        "parent process id (0 for the traced command itself)",
    ),
    col(
        "t_start_ns",
        U64,
        Delta,
        "ns",
        "when it was first seen (its fork, if the preload library saw it)",
    ),
    col("comm", Utf8, Dict, "", "its command name, empty if unknown"),
];

fn message_type(table: &str, cols: &[Col]) -> String {
    let mut s = format!("message swaplab_{table} {{");
    for c in cols {
        let rep = if c.nullable { "optional" } else { "required" };
        let ty = match c.ty {
            Ty::U64 => "int64 NAME (INTEGER(64,false))",
            Ty::U32 => "int32 NAME (INTEGER(32,false))",
            Ty::U8 => "int32 NAME (INTEGER(8,false))",
            Ty::Code => "int32 NAME",
            Ty::Utf8 => "binary NAME (UTF8)",
        };
        s.push_str(&format!(" {rep} {};", ty.replace("NAME", c.name)));
    }
    s.push_str(" }");
    s
}

// ---------------------------------------------------------------- errors

fn invalid(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{}: {msg}", path.display()))
}

fn row_err(path: &Path, row: u64, msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{} row {row}: {msg}", path.display()))
}

// ---------------------------------------------------------------- writing

/// One column's values for one row group.
#[doc(hidden)]
pub enum ColData {
    I64(Vec<i64>, Option<Vec<i16>>),
    I32(Vec<i32>, Option<Vec<i16>>),
    Bytes(Vec<ByteArray>),
}

fn u64s<T>(rows: &[T], f: impl Fn(&T) -> u64) -> ColData {
    ColData::I64(rows.iter().map(|r| f(r) as i64).collect(), None)
}
fn opt_u64s<T>(rows: &[T], f: impl Fn(&T) -> Option<u64>) -> ColData {
    ColData::I64(
        rows.iter().filter_map(|r| f(r).map(|v| v as i64)).collect(),
        Some(rows.iter().map(|r| i16::from(f(r).is_some())).collect()),
    )
}
fn i32s<T>(rows: &[T], f: impl Fn(&T) -> i32) -> ColData {
    ColData::I32(rows.iter().map(f).collect(), None)
}
fn u32s<T>(rows: &[T], f: impl Fn(&T) -> u32) -> ColData {
    ColData::I32(rows.iter().map(|r| f(r) as i32).collect(), None)
}
fn opt_i32s<T>(rows: &[T], f: impl Fn(&T) -> Option<i32>) -> ColData {
    ColData::I32(
        rows.iter().filter_map(&f).collect(),
        Some(rows.iter().map(|r| i16::from(f(r).is_some())).collect()),
    )
}
fn strs<T>(rows: &[T], f: impl Fn(&T) -> &str) -> ColData {
    ColData::Bytes(
        rows.iter()
            .map(|r| ByteArray::from(f(r).as_bytes().to_vec()))
            .collect(),
    )
}

fn props(cols: &[Col]) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(3).map_err(|e| Error::Invalid(e.to_string()))?;
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_compression(Compression::ZSTD(level))
        .set_dictionary_enabled(false);
    for c in cols {
        let p = ColumnPath::from(c.name);
        b = match (c.enc, c.ty) {
            (Enc::Dict, _) => b.set_column_dictionary_enabled(p, true),
            (Enc::Delta, Ty::Utf8) => b,
            (Enc::Delta, _) => b.set_column_encoding(p, Encoding::DELTA_BINARY_PACKED),
        };
    }
    Ok(b.build())
}

/// A table row: its table name, columns and how a row group of them
/// becomes column data.
pub trait TableRow: Sized {
    /// The table (`faults`, `swaps`, …): file name and footer `swaplab.table`.
    const TABLE: &'static str;
    #[doc(hidden)]
    fn cols() -> &'static [Col];
    #[doc(hidden)]
    fn build(path: &Path, rows: &[Self]) -> Result<Vec<ColData>>;
}

/// A streaming, atomic writer of one table: rows are buffered and written
/// as a row group every `rows_per_group` rows, so its memory is bounded by
/// one row group (rows plus their column data) whatever the table's length;
/// the file appears (temporary file synced and renamed, see
/// [`crate::atomic`]) only at [`TableWriter::finish`]. Dropping an
/// unfinished writer leaves no file.
pub struct TableWriter<T: TableRow> {
    path: PathBuf,
    out: Option<AtomicFile>,
    w: Option<SerializedFileWriter<File>>,
    buf: Vec<T>,
    rows_per_group: usize,
    rows: u64,
}

impl<T: TableRow> std::fmt::Debug for TableWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .finish()
    }
}

impl<T: TableRow> TableWriter<T> {
    /// Starts `<dir>/<T::TABLE>.parquet` (the directory must exist), with
    /// row groups of at most `rows_per_group` rows (at least 1).
    pub fn create(dir: &Path, rows_per_group: usize) -> Result<TableWriter<T>> {
        let path = table_path(dir, T::TABLE);
        let pq = |e: parquet::errors::ParquetError| invalid(&path, format!("writing Parquet: {e}"));
        let schema = Arc::new(parse_message_type(&message_type(T::TABLE, T::cols())).map_err(pq)?);
        let out = AtomicFile::create(&path)?;
        let file = out
            .file()
            .try_clone()
            .map_err(|e| Error::file("opening", &path, e))?;
        let w = SerializedFileWriter::new(file, schema, Arc::new(props(T::cols())?)).map_err(pq)?;
        let rows_per_group = rows_per_group.max(1);
        Ok(TableWriter {
            out: Some(out),
            w: Some(w),
            buf: Vec::with_capacity(rows_per_group.min(1 << 16)),
            rows_per_group,
            rows: 0,
            path,
        })
    }

    /// Adds a row (writes a row group when the buffer is full).
    pub fn push(&mut self, row: T) -> Result<()> {
        self.buf.push(row);
        if self.buf.len() >= self.rows_per_group {
            self.flush()?;
        }
        Ok(())
    }

    /// Adds rows.
    pub fn extend(&mut self, rows: impl IntoIterator<Item = T>) -> Result<()> {
        for r in rows {
            self.push(r)?;
        }
        Ok(())
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.rows + self.buf.len() as u64
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the buffered rows as one row group (nothing if empty).
    pub fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let path = &self.path;
        let pq = |e: parquet::errors::ParquetError| invalid(path, format!("writing Parquet: {e}"));
        let w = self
            .w
            .as_mut()
            .ok_or_else(|| invalid(path, "writer used after an error"))?;
        let data = T::build(path, &self.buf)?;
        let mut rg = w.next_row_group().map_err(pq)?;
        for (c, d) in T::cols().iter().zip(&data) {
            let mut cw = rg
                .next_column()
                .map_err(pq)?
                .ok_or_else(|| invalid(path, format!("column {} missing", c.name)))?;
            match d {
                ColData::I64(v, def) => {
                    cw.typed::<Int64Type>()
                        .write_batch(v, def.as_deref(), None)
                        .map_err(pq)?;
                }
                ColData::I32(v, def) => {
                    cw.typed::<Int32Type>()
                        .write_batch(v, def.as_deref(), None)
                        .map_err(pq)?;
                }
                ColData::Bytes(v) => {
                    cw.typed::<ByteArrayType>()
                        .write_batch(v, None, None)
                        .map_err(pq)?;
                }
            }
            cw.close().map_err(pq)?;
        }
        rg.close().map_err(pq)?;
        self.rows += self.buf.len() as u64;
        self.buf.clear();
        if self.buf.capacity() > self.rows_per_group {
            self.buf.shrink_to(self.rows_per_group);
        }
        Ok(())
    }

    /// Writes the last row group and the footer, syncs and renames the
    /// file into place. Returns the number of rows.
    pub fn finish(mut self) -> Result<u64> {
        self.flush()?;
        let path = self.path.clone();
        let pq = |e: parquet::errors::ParquetError| invalid(&path, format!("writing Parquet: {e}"));
        let mut w = self
            .w
            .take()
            .ok_or_else(|| invalid(&path, "writer used after an error"))?;
        w.append_key_value_metadata(KeyValue::new(TABLE_KEY.to_string(), T::TABLE.to_string()));
        w.append_key_value_metadata(KeyValue::new(
            VERSION_KEY.to_string(),
            SCHEMA_VERSION.to_string(),
        ));
        w.into_inner().map_err(pq)?;
        let out = self
            .out
            .take()
            .ok_or_else(|| invalid(&path, "writer used after an error"))?;
        out.commit()?;
        Ok(self.rows)
    }
}

/// Writes one table's rows to `dir` atomically.
fn write_table<T: TableRow + Clone>(dir: &Path, rows: &[T]) -> Result<()> {
    let mut w = TableWriter::<T>::create(dir, ROWS_PER_GROUP)?;
    for chunk in rows.chunks(ROWS_PER_GROUP) {
        w.extend(chunk.iter().cloned())?;
    }
    w.finish()?;
    Ok(())
}

fn join_lines(path: &Path, site: &Site, what: &str, parts: &[String]) -> Result<String> {
    if let Some(p) = parts.iter().find(|p| p.contains('\n')) {
        return Err(invalid(
            path,
            format!(
                "site {}: a {what} entry contains a newline ({p:?}); entries are joined with newlines",
                site.site_id
            ),
        ));
    }
    Ok(parts.join("\n"))
}

/// Writes every table of `t` into `dir` (created if needed), one Parquet
/// file each, atomically per file. The optional tables (allocations,
/// sites) are written too, empty if `t` has none.
pub fn write_tables(dir: &Path, t: &TraceTables) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::file("creating directory", dir, e))?;
    write_table(dir, &t.faults)?;
    write_table(dir, &t.swaps)?;
    write_table(dir, &t.regions)?;
    write_table(dir, &t.allocations)?;
    write_table(dir, &t.sites)?;
    write_table(dir, &t.processes)?;
    Ok(())
}

impl TableRow for FaultEvent {
    const TABLE: &'static str = "faults";
    fn cols() -> &'static [Col] {
        &FAULTS
    }
    fn build(_: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        Ok(vec![
            u64s(r, |e| e.t_ns),
            u32s(r, |e| e.pid),
            u32s(r, |e| e.tid),
            u64s(r, |e| e.addr),
            u64s(r, |e| e.ip),
            i32s(r, |e| e.kind.code()),
        ])
    }
}

impl TableRow for SwapEvent {
    const TABLE: &'static str = "swaps";
    fn cols() -> &'static [Col] {
        &SWAPS
    }
    fn build(_: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        Ok(vec![
            u64s(r, |e| e.t_ns),
            u32s(r, |e| e.pid),
            u64s(r, |e| e.vaddr),
            i32s(r, |e| dir_code(e.dir)),
            opt_i32s(r, |e| e.swap_type.map(i32::from)),
            opt_u64s(r, |e| e.swap_offset),
            i32s(r, |e| source_code(e.source)),
        ])
    }
}

impl TableRow for Region {
    const TABLE: &'static str = "regions";
    fn cols() -> &'static [Col] {
        &REGIONS
    }
    fn build(_: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        Ok(vec![
            u32s(r, |e| e.pid),
            u64s(r, |e| e.start),
            u64s(r, |e| e.end),
            strs(r, |e| &e.perms),
            strs(r, |e| &e.path),
            u64s(r, |e| e.first_seen_ns),
            u64s(r, |e| e.last_seen_ns),
        ])
    }
}

impl TableRow for Allocation {
    const TABLE: &'static str = "allocations";
    fn cols() -> &'static [Col] {
        &ALLOCATIONS
    }
    fn build(_: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        Ok(vec![
            u32s(r, |e| e.pid),
            u32s(r, |e| e.tid),
            u64s(r, |e| e.start),
            u64s(r, |e| e.size),
            u64s(r, |e| e.t_alloc_ns),
            opt_u64s(r, |e| e.t_free_ns),
            u32s(r, |e| e.site_id),
            strs(r, |e| &e.func),
            opt_u64s(r, |e| e.weight),
        ])
    }
}

impl TableRow for Site {
    const TABLE: &'static str = "sites";
    fn cols() -> &'static [Col] {
        &SITES
    }
    fn build(sites_path: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        let mut frames = Vec::with_capacity(r.len());
        let mut locations = Vec::with_capacity(r.len());
        for s in r {
            if s.frames.len() != s.locations.len() {
                return Err(invalid(
                    sites_path,
                    format!(
                        "site {}: {} frames but {} locations (one location per frame, empty if unknown)",
                        s.site_id,
                        s.frames.len(),
                        s.locations.len()
                    ),
                ));
            }
            frames.push(ByteArray::from(
                join_lines(sites_path, s, "frame", &s.frames)?.into_bytes(),
            ));
            locations.push(ByteArray::from(
                join_lines(sites_path, s, "location", &s.locations)?.into_bytes(),
            ));
        }
        Ok(vec![
            u32s(r, |e| e.site_id),
            ColData::Bytes(frames),
            ColData::Bytes(locations),
        ])
    }
}

impl TableRow for Process {
    const TABLE: &'static str = "processes";
    fn cols() -> &'static [Col] {
        &PROCESSES
    }
    fn build(_: &Path, r: &[Self]) -> Result<Vec<ColData>> {
        Ok(vec![
            u32s(r, |e| e.pid),
            u32s(r, |e| e.ppid),
            u64s(r, |e| e.t_start_ns),
            strs(r, |e| &e.comm),
        ])
    }
}

fn dir_code(d: SwapDir) -> i32 {
    match d {
        SwapDir::Out => 0,
        SwapDir::In => 1,
    }
}

fn source_code(s: SwapSource) -> i32 {
    match s {
        SwapSource::Pagemap => 0,
        SwapSource::Fault => 1,
    }
}

// ---------------------------------------------------------------- reading

/// One column's values for one row group (`None` = null).
enum Vals {
    I64(Vec<Option<i64>>),
    I32(Vec<Option<i32>>),
    Str(Vec<Option<String>>),
}

/// Reads `n` values of column `idx` of a row group.
fn read_column(
    path: &Path,
    rg: &dyn RowGroupReader,
    idx: usize,
    c: &Col,
    n: usize,
    first_row: u64,
) -> Result<Vals> {
    const CHUNK: usize = 1 << 16;
    let pq = |e: parquet::errors::ParquetError| invalid(path, format!("column '{}': {e}", c.name));
    let max_def = rg.metadata().column(idx).column_descr().max_def_level();
    let reader = rg.get_column_reader(idx).map_err(pq)?;
    // Reads all records with a typed reader, expanding nulls.
    macro_rules! read_all {
        ($r:expr, $t:ty, $conv:expr) => {{
            let mut r = $r;
            let mut out = Vec::with_capacity(n.min(ROWS_PER_GROUP));
            let mut vals: Vec<$t> = Vec::new();
            let mut defs: Vec<i16> = Vec::new();
            while out.len() < n {
                let want = (n - out.len()).min(CHUNK);
                vals.clear();
                defs.clear();
                let (got, nv, _) = if max_def > 0 {
                    r.read_records(want, Some(&mut defs), None, &mut vals)
                        .map_err(pq)?
                } else {
                    r.read_records(want, None, None, &mut vals).map_err(pq)?
                };
                if got == 0 {
                    return Err(invalid(
                        path,
                        format!(
                            "column '{}' ended early ({} of {n} values in the row group starting at row {first_row})",
                            c.name,
                            out.len()
                        ),
                    ));
                }
                if max_def > 0 {
                    if defs.len() != got || nv != vals.len() {
                        return Err(invalid(
                            path,
                            format!("column '{}': inconsistent definition levels", c.name),
                        ));
                    }
                    let mut it = vals.drain(..);
                    for &d in &defs {
                        out.push(if d >= max_def {
                            match it.next() {
                                Some(v) => Some($conv(v)?),
                                None => {
                                    return Err(invalid(
                                        path,
                                        format!("column '{}': fewer values than levels", c.name),
                                    ))
                                }
                            }
                        } else {
                            None
                        });
                    }
                } else {
                    if vals.len() != got {
                        return Err(invalid(
                            path,
                            format!("column '{}': {} values for {got} rows", c.name, vals.len()),
                        ));
                    }
                    for v in vals.drain(..) {
                        out.push(Some($conv(v)?));
                    }
                }
            }
            out
        }};
    }
    fn ok<T>(v: T) -> Result<T> {
        Ok(v)
    }
    let utf8 = |b: ByteArray| -> Result<String> {
        String::from_utf8(b.data().to_vec())
            .map_err(|_| invalid(path, format!("column '{}' holds invalid UTF-8", c.name)))
    };
    Ok(match (c.ty.physical(), reader) {
        (PhysicalType::INT64, ColumnReader::Int64ColumnReader(r)) => {
            Vals::I64(read_all!(r, i64, ok))
        }
        (PhysicalType::INT32, ColumnReader::Int32ColumnReader(r)) => {
            Vals::I32(read_all!(r, i32, ok))
        }
        (PhysicalType::BYTE_ARRAY, ColumnReader::ByteArrayColumnReader(r)) => {
            Vals::Str(read_all!(r, ByteArray, utf8))
        }
        (want, _) => {
            return Err(invalid(
                path,
                format!("column '{}' has the wrong type (expected {want})", c.name),
            ))
        }
    })
}

/// Gives a row's values by column index, with errors naming the row.
struct Row<'a> {
    path: &'a Path,
    row: u64,
    i: usize,
    cols: &'a mut [Vals],
    specs: &'a [Col],
}

impl Row<'_> {
    fn null(&self, c: usize) -> Error {
        row_err(
            self.path,
            self.row,
            format!("{} is null", self.specs[c].name),
        )
    }
    fn i64(&self, c: usize) -> Result<Option<i64>> {
        match &self.cols[c] {
            Vals::I64(v) => Ok(v[self.i]),
            _ => Err(invalid(self.path, "internal: column type")),
        }
    }
    fn i32(&self, c: usize) -> Result<Option<i32>> {
        match &self.cols[c] {
            Vals::I32(v) => Ok(v[self.i]),
            _ => Err(invalid(self.path, "internal: column type")),
        }
    }
    fn u64(&self, c: usize) -> Result<u64> {
        self.i64(c)?.map(|v| v as u64).ok_or_else(|| self.null(c))
    }
    fn opt_u64(&self, c: usize) -> Result<Option<u64>> {
        Ok(self.i64(c)?.map(|v| v as u64))
    }
    fn u32(&self, c: usize) -> Result<u32> {
        self.i32(c)?.map(|v| v as u32).ok_or_else(|| self.null(c))
    }
    fn code(&self, c: usize) -> Result<i32> {
        self.i32(c)?.ok_or_else(|| self.null(c))
    }
    fn string(&mut self, c: usize) -> Result<String> {
        let i = self.i;
        let v = match &mut self.cols[c] {
            Vals::Str(v) => v[i].take(),
            _ => return Err(invalid(self.path, "internal: column type")),
        };
        v.ok_or_else(|| self.null(c))
    }
    fn bad(&self, msg: impl std::fmt::Display) -> Error {
        row_err(self.path, self.row, msg)
    }
}

fn check_footer(path: &Path, table: &str, kv: Option<&Vec<KeyValue>>) -> Result<()> {
    let get = |k: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == k))
            .and_then(|e| e.value.as_deref())
    };
    if let Some(t) = get(TABLE_KEY) {
        if t != table {
            return Err(invalid(
                path,
                format!("holds table '{t}' ({TABLE_KEY}), expected '{table}'"),
            ));
        }
    }
    if let Some(v) = get(VERSION_KEY) {
        match v.trim().parse::<u32>() {
            Ok(v) if v <= SCHEMA_VERSION => {}
            Ok(v) => {
                return Err(invalid(
                    path,
                    format!(
                        "schema version {v} is newer than this swaplab reads ({SCHEMA_VERSION}); upgrade swaplab"
                    ),
                ))
            }
            Err(_) => return Err(invalid(path, format!("bad {VERSION_KEY} '{v}'"))),
        }
    }
    Ok(())
}

fn read_table_inner<T>(
    path: &Path,
    table: &str,
    specs: &[Col],
    convert: &mut dyn FnMut(&mut Row) -> Result<T>,
) -> Result<Vec<T>> {
    let file = File::open(path).map_err(|e| Error::file("opening", path, e))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| invalid(path, format!("not a readable Parquet file: {e}")))?;
    let md = reader.metadata();
    check_footer(path, table, md.file_metadata().key_value_metadata())?;
    let schema = md.file_metadata().schema_descr();
    let mut idx = Vec::with_capacity(specs.len());
    for c in specs {
        let Some(i) = schema.columns().iter().position(|d| d.name() == c.name) else {
            if c.nullable && LATE_COLUMNS.contains(&c.name) {
                idx.push(usize::MAX); // written by an older swaplab: all null
                continue;
            }
            let have: Vec<&str> = schema.columns().iter().map(|d| d.name()).collect();
            return Err(invalid(
                path,
                format!("column '{}' is missing (the file has {have:?})", c.name),
            ));
        };
        let d = schema.column(i);
        if d.physical_type() != c.ty.physical() {
            return Err(invalid(
                path,
                format!(
                    "column '{}' is {}, expected {}",
                    c.name,
                    d.physical_type(),
                    c.ty.physical()
                ),
            ));
        }
        if d.max_rep_level() > 0 {
            return Err(invalid(
                path,
                format!(
                    "column '{}' is repeated, expected one value per row",
                    c.name
                ),
            ));
        }
        idx.push(i);
    }
    let mut out = Vec::new();
    let mut row0 = 0u64;
    for g in 0..reader.num_row_groups() {
        let rg = reader
            .get_row_group(g)
            .map_err(|e| invalid(path, format!("row group {g}: {e}")))?;
        let n = rg.metadata().num_rows();
        let n =
            usize::try_from(n).map_err(|_| invalid(path, format!("row group {g} has {n} rows")))?;
        let mut cols = Vec::with_capacity(specs.len());
        for (c, &i) in specs.iter().zip(&idx) {
            cols.push(if i == usize::MAX {
                match c.ty.physical() {
                    PhysicalType::INT64 => Vals::I64(vec![None; n]),
                    PhysicalType::INT32 => Vals::I32(vec![None; n]),
                    _ => Vals::Str(vec![None; n]),
                }
            } else {
                read_column(path, rg.as_ref(), i, c, n, row0)?
            });
        }
        for i in 0..n {
            let mut r = Row {
                path,
                row: row0 + i as u64,
                i,
                cols: &mut cols,
                specs,
            };
            out.push(convert(&mut r)?);
        }
        row0 += n as u64;
    }
    Ok(out)
}

/// Reads one table, turning any panic of the Parquet decoder on a corrupt
/// file into an error.
fn read_table<T>(
    path: &Path,
    table: &str,
    specs: &[Col],
    mut convert: impl FnMut(&mut Row) -> Result<T>,
) -> Result<Vec<T>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        read_table_inner(path, table, specs, &mut convert)
    }))
    .unwrap_or_else(|_| Err(invalid(path, "corrupt Parquet data (the decoder gave up)")))
}

fn split_lines(s: String) -> Vec<String> {
    if s.is_empty() {
        Vec::new()
    } else {
        s.split('\n').map(str::to_string).collect()
    }
}

/// Reads the `faults` table file.
pub fn read_faults(path: &Path) -> Result<Vec<FaultEvent>> {
    read_table(path, "faults", &FAULTS, |r| {
        let kind = r.code(5)?;
        Ok(FaultEvent {
            t_ns: r.u64(0)?,
            pid: r.u32(1)?,
            tid: r.u32(2)?,
            addr: r.u64(3)?,
            ip: r.u64(4)?,
            kind: FaultKind::from_code(kind)
                .ok_or_else(|| r.bad(format!("kind {kind} is not 0, 1 or 2")))?,
        })
    })
}

fn read_swaps(path: &Path) -> Result<Vec<SwapEvent>> {
    read_table(path, "swaps", &SWAPS, |r| {
        let dir = match r.code(3)? {
            0 => SwapDir::Out,
            1 => SwapDir::In,
            d => return Err(r.bad(format!("dir {d} is not 0 (out) or 1 (in)"))),
        };
        let swap_type = match r.i32(4)? {
            None => None,
            Some(v) => Some(
                u8::try_from(v).map_err(|_| r.bad(format!("swap_type {v} is not in 0..=255")))?,
            ),
        };
        let source = match r.code(6)? {
            0 => SwapSource::Pagemap,
            1 => SwapSource::Fault,
            s => return Err(r.bad(format!("source {s} is not 0 (pagemap) or 1 (fault)"))),
        };
        Ok(SwapEvent {
            t_ns: r.u64(0)?,
            pid: r.u32(1)?,
            vaddr: r.u64(2)?,
            dir,
            swap_type,
            swap_offset: r.opt_u64(5)?,
            source,
        })
    })
}

fn read_regions(path: &Path) -> Result<Vec<Region>> {
    read_table(path, "regions", &REGIONS, |r| {
        Ok(Region {
            pid: r.u32(0)?,
            start: r.u64(1)?,
            end: r.u64(2)?,
            perms: r.string(3)?,
            path: r.string(4)?,
            first_seen_ns: r.u64(5)?,
            last_seen_ns: r.u64(6)?,
        })
    })
}

fn read_allocations(path: &Path) -> Result<Vec<Allocation>> {
    read_table(path, "allocations", &ALLOCATIONS, |r| {
        Ok(Allocation {
            pid: r.u32(0)?,
            tid: r.u32(1)?,
            start: r.u64(2)?,
            size: r.u64(3)?,
            t_alloc_ns: r.u64(4)?,
            t_free_ns: r.opt_u64(5)?,
            site_id: r.u32(6)?,
            func: r.string(7)?,
            weight: r.opt_u64(8)?,
        })
    })
}

fn read_sites(path: &Path) -> Result<Vec<Site>> {
    read_table(path, "sites", &SITES, |r| {
        let site_id = r.u32(0)?;
        let frames = split_lines(r.string(1)?);
        let loc = r.string(2)?;
        let locations = if frames.is_empty() {
            if !loc.is_empty() {
                return Err(r.bad("locations given for a site without frames"));
            }
            Vec::new()
        } else {
            loc.split('\n').map(str::to_string).collect()
        };
        if locations.len() != frames.len() {
            return Err(r.bad(format!(
                "{} frames but {} locations",
                frames.len(),
                locations.len()
            )));
        }
        Ok(Site {
            site_id,
            frames,
            locations,
        })
    })
}

fn read_processes(path: &Path) -> Result<Vec<Process>> {
    read_table(path, "processes", &PROCESSES, |r| {
        Ok(Process {
            pid: r.u32(0)?,
            ppid: r.u32(1)?,
            t_start_ns: r.u64(2)?,
            comm: r.string(3)?,
        })
    })
}

/// Reads every table of a trace directory. A missing optional table
/// (allocations, sites) reads as empty; a missing required one (faults,
/// swaps, regions, processes) is an error naming it.
pub fn read_tables(dir: &Path) -> Result<TraceTables> {
    for name in REQUIRED_TABLES {
        let p = table_path(dir, name);
        if !p.exists() {
            return Err(Error::Invalid(format!(
                "trace directory {}: {name}.parquet is missing (required: {}.parquet; optional: {}.parquet)",
                dir.display(),
                REQUIRED_TABLES.join(".parquet, "),
                OPTIONAL_TABLES.join(".parquet, "),
            )));
        }
    }
    let optional = |name: &str| {
        let p = table_path(dir, name);
        p.exists().then_some(p)
    };
    Ok(TraceTables {
        faults: read_faults(&table_path(dir, "faults"))?,
        swaps: read_swaps(&table_path(dir, "swaps"))?,
        regions: read_regions(&table_path(dir, "regions"))?,
        allocations: match optional("allocations") {
            Some(p) => read_allocations(&p)?,
            None => Vec::new(),
        },
        sites: match optional("sites") {
            Some(p) => read_sites(&p)?,
            None => Vec::new(),
        },
        processes: read_processes(&table_path(dir, "processes"))?,
    })
}

// ---------------------------------------------------------------- meta.json

/// Row counts of a trace's tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableCounts {
    /// Fault events.
    pub faults: u64,
    /// Swap events.
    pub swaps: u64,
    /// Regions.
    pub regions: u64,
    /// Allocations.
    pub allocations: u64,
    /// Allocation sites.
    pub sites: u64,
    /// Processes.
    pub processes: u64,
}

impl TableCounts {
    /// The counts of `t`.
    pub fn of(t: &TraceTables) -> TableCounts {
        TableCounts {
            faults: t.faults.len() as u64,
            swaps: t.swaps.len() as u64,
            regions: t.regions.len() as u64,
            allocations: t.allocations.len() as u64,
            sites: t.sites.len() as u64,
            processes: t.processes.len() as u64,
        }
    }
}

/// `meta.json` of a trace directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMetaFile {
    /// The command as the user gave it.
    pub command: Vec<String>,
    /// The argv actually executed (`swaplab-workload` resolved, etc.).
    pub argv: Vec<String>,
    /// Wall-clock start, ns since the Unix epoch.
    pub started_unix_ns: u64,
    /// CLOCK_MONOTONIC at the start, ns: every `*_ns` time in the tables
    /// counts from here.
    pub t0_monotonic_ns: u64,
    /// The trace options (sources enabled, sampling periods, …).
    #[serde(default)]
    pub options: serde_json::Value,
    /// The machine and kernel (kernel version, page size, swap, …).
    #[serde(default)]
    pub environment: serde_json::Value,
    /// Rows per table.
    #[serde(default)]
    pub counts: TableCounts,
    /// What the user should know (sources that were unavailable, drops, …).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The swaplab version that wrote the trace.
    pub swaplab_version: String,
    /// The catalog run that made the trace (absent in traces older than
    /// these typed fields, and in imported ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// The memory limit of the traced run, bytes (None: unlimited or unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// `vm.page-cluster` during the traced run (swap readahead = 2^n pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cluster: Option<u32>,
}

impl TraceMetaFile {
    /// The traced run's memory limit: the typed field, or for a trace
    /// written before it existed, `options.limit_bytes`.
    pub fn run_limit_bytes(&self) -> Option<u64> {
        self.limit_bytes
            .or_else(|| self.options.get("limit_bytes").and_then(|v| v.as_u64()))
    }

    /// `vm.page-cluster` of the traced run: the typed field, or for an
    /// older trace the environment snapshot's `knobs.page_cluster`.
    pub fn run_page_cluster(&self) -> Option<u32> {
        self.page_cluster.or_else(|| {
            let v = self.environment.get("knobs")?.get("page_cluster")?;
            v.as_u64()
                .map(|n| n as u32)
                .or_else(|| v.as_str()?.trim().parse().ok())
        })
    }

    /// True when every swap area the traced run set up is zram (a
    /// synchronous device: swap-ins decompress in the faulting task);
    /// false when it used the machine's own swap or set up none, or for an
    /// imported trace (`options.run.swap`).
    pub fn run_swap_synchronous(&self) -> bool {
        let kinds: Vec<&str> = self
            .options
            .get("run")
            .and_then(|r| r.get("swap"))
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.get("kind").and_then(|k| k.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        !kinds.is_empty() && kinds.iter().all(|k| *k == "zram")
    }
}

impl Default for TraceMetaFile {
    fn default() -> Self {
        TraceMetaFile {
            command: Vec::new(),
            argv: Vec::new(),
            started_unix_ns: 0,
            t0_monotonic_ns: 0,
            options: serde_json::Value::Null,
            environment: serde_json::Value::Null,
            counts: TableCounts::default(),
            notes: Vec::new(),
            swaplab_version: env!("CARGO_PKG_VERSION").to_string(),
            run_id: None,
            limit_bytes: None,
            page_cluster: None,
        }
    }
}

/// Writes `meta.json` into `dir` (created if needed), atomically.
pub fn write_meta(dir: &Path, m: &TraceMetaFile) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::file("creating directory", dir, e))?;
    let path = dir.join(META_FILE);
    let mut text = serde_json::to_vec_pretty(m).map_err(|e| invalid(&path, e))?;
    text.push(b'\n');
    write_atomic(&path, &text)
}

/// Reads `meta.json` of a trace directory.
pub fn read_meta(dir: &Path) -> Result<TraceMetaFile> {
    let path = dir.join(META_FILE);
    let text = std::fs::read(&path).map_err(|e| Error::file("reading", &path, e))?;
    serde_json::from_slice(&text)
        .map_err(|e| invalid(&path, format!("not a swaplab trace meta.json: {e}")))
}

/// True if `dir` looks like a trace directory: it holds a readable
/// `meta.json`, or all the required table files.
pub fn is_trace_dir(dir: &Path) -> bool {
    if !dir.is_dir() {
        return false;
    }
    if dir.join(META_FILE).is_file() && read_meta(dir).is_ok() {
        return true;
    }
    REQUIRED_TABLES
        .iter()
        .all(|t| crate::native::is_native(&table_path(dir, t)))
}

/// Counts per table from the files' footers without reading the rows
/// (missing optional tables count 0).
pub fn count_rows(dir: &Path) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for name in REQUIRED_TABLES.iter().chain(OPTIONAL_TABLES.iter()) {
        let p = table_path(dir, name);
        if !p.exists() && OPTIONAL_TABLES.contains(name) {
            out.insert(name.to_string(), 0);
            continue;
        }
        let n = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<u64> {
            let f = File::open(&p).map_err(|e| Error::file("opening", &p, e))?;
            let r = SerializedFileReader::new(f)
                .map_err(|e| invalid(&p, format!("not a readable Parquet file: {e}")))?;
            Ok(r.metadata().file_metadata().num_rows().max(0) as u64)
        }))
        .unwrap_or_else(|_| Err(invalid(&p, "corrupt Parquet footer")))?;
        out.insert(name.to_string(), n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// The module docs' tables are the generated schema, character for
    /// character: one source of truth for docs, writer and report.
    #[test]
    fn module_docs_match_the_schema() {
        let src = include_str!("trace_dir.rs");
        let docs: String = src
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        for t in super::schemas() {
            let head = format!("## `{}`", t.name);
            let at = docs
                .find(&head)
                .unwrap_or_else(|| panic!("no doc section {head}"));
            let after = &docs[at..];
            let table_at = after.find("| column |").expect("a table");
            let table: String = after[table_at..]
                .lines()
                .take_while(|l| l.starts_with('|'))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(
                table,
                t.markdown(),
                "docs of {} differ from the code",
                t.name
            );
        }
    }

    use super::*;

    /// A small deterministic PRNG (splitmix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// 1 M faults as a real program makes them: sequential sweeps and
    /// random probes over a 256 MiB heap, 2–20 µs apart, two threads.
    fn realistic_faults(n: usize) -> Vec<FaultEvent> {
        let mut rng = Rng(7);
        let base = 0x7f3a_1c00_0000u64;
        let span_pages = (256u64 << 20) / 4096;
        let ips: Vec<u64> = (0..20)
            .map(|i| 0x5555_5555_4000 + i * 0x1a3 + rng.below(64))
            .collect();
        let mut out = Vec::with_capacity(n);
        let mut t = 1_000_000u64;
        let mut cursor = [0u64, span_pages / 2];
        while out.len() < n {
            // Runs of sequential faults by one thread, then random probes.
            let tid_i = rng.below(2) as usize;
            let seq = rng.below(4) != 0;
            let run = 1 + rng.below(if seq { 2000 } else { 50 });
            let ip = ips[rng.below(if seq { 4 } else { 20 }) as usize];
            for _ in 0..run {
                if out.len() == n {
                    break;
                }
                t += 2_000 + rng.below(18_000);
                let page = if seq {
                    cursor[tid_i] = (cursor[tid_i] + 1) % span_pages;
                    cursor[tid_i]
                } else {
                    rng.below(span_pages)
                };
                let kind = match rng.below(100) {
                    0..=69 => FaultKind::Minor,
                    70..=97 => FaultKind::Major,
                    _ => FaultKind::Unknown,
                };
                out.push(FaultEvent {
                    t_ns: t,
                    pid: 4242,
                    tid: 4242 + tid_i as u32,
                    addr: base + page * 4096 + rng.below(512) * 8,
                    ip,
                    kind,
                });
            }
        }
        out
    }

    fn sample_tables() -> TraceTables {
        TraceTables {
            faults: vec![
                FaultEvent {
                    t_ns: 5,
                    pid: 1,
                    tid: 2,
                    addr: u64::MAX - 4095,
                    ip: (1 << 63) + 17,
                    kind: FaultKind::Major,
                },
                FaultEvent {
                    t_ns: u64::MAX,
                    pid: u32::MAX,
                    tid: 0,
                    addr: 0,
                    ip: 0,
                    kind: FaultKind::Unknown,
                },
            ],
            swaps: vec![
                SwapEvent {
                    t_ns: 10,
                    pid: 1,
                    vaddr: 0xffff_8000_0000_0000,
                    dir: SwapDir::Out,
                    swap_type: Some(255),
                    swap_offset: Some(u64::MAX),
                    source: SwapSource::Pagemap,
                },
                SwapEvent {
                    t_ns: 11,
                    pid: 1,
                    vaddr: 0x1000,
                    dir: SwapDir::In,
                    swap_type: None,
                    swap_offset: None,
                    source: SwapSource::Fault,
                },
                SwapEvent {
                    t_ns: 12,
                    pid: 3,
                    vaddr: 0x2000,
                    dir: SwapDir::In,
                    swap_type: Some(0),
                    swap_offset: None,
                    source: SwapSource::Fault,
                },
            ],
            regions: vec![
                Region {
                    pid: 1,
                    start: 0x5555_0000,
                    end: 0x5556_0000,
                    perms: "r-xp".into(),
                    path: "/usr/bin/ünïcode".into(),
                    first_seen_ns: 0,
                    last_seen_ns: 100,
                },
                Region {
                    pid: 1,
                    start: 0xffff_ffff_ff60_0000,
                    end: u64::MAX,
                    perms: "--xp".into(),
                    path: "".into(),
                    first_seen_ns: 3,
                    last_seen_ns: 3,
                },
            ],
            allocations: vec![
                Allocation {
                    pid: 1,
                    tid: 1,
                    start: 0x7f00_0000_0000,
                    size: 1 << 30,
                    t_alloc_ns: 7,
                    t_free_ns: None,
                    site_id: 0,
                    func: "malloc".into(),
                    weight: None,
                },
                Allocation {
                    pid: 1,
                    tid: 9,
                    start: u64::MAX - 1,
                    size: u64::MAX,
                    t_alloc_ns: 8,
                    t_free_ns: Some(u64::MAX),
                    site_id: u32::MAX,
                    func: "mmap".into(),
                    weight: Some(524_296),
                },
            ],
            sites: vec![
                Site {
                    site_id: 0,
                    frames: vec!["prog!main+0x10".into(), "libc.so.6+0x2a1ca".into()],
                    locations: vec!["main.c:12".into(), "".into()],
                },
                Site {
                    site_id: 1,
                    frames: vec!["prog+0x99".into()],
                    locations: vec!["".into()],
                },
                Site {
                    site_id: 2,
                    frames: vec![],
                    locations: vec![],
                },
            ],
            processes: vec![
                Process {
                    pid: 1,
                    ppid: 0,
                    t_start_ns: 0,
                    comm: "prog".into(),
                },
                Process {
                    pid: 3,
                    ppid: 1,
                    t_start_ns: u64::MAX,
                    comm: "".into(),
                },
            ],
        }
    }

    fn footer(path: &Path) -> Vec<(String, String)> {
        let r = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        r.metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_table_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let t = sample_tables();
        write_tables(dir.path(), &t).unwrap();
        let back = read_tables(dir.path()).unwrap();
        assert_eq!(back, t);
        let kv = footer(&table_path(dir.path(), "swaps"));
        assert!(kv.contains(&(TABLE_KEY.into(), "swaps".into())), "{kv:?}");
        assert!(kv.contains(&(VERSION_KEY.into(), "1".into())), "{kv:?}");
        // No temporary files left, and nothing but the tables.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "allocations.parquet",
                "faults.parquet",
                "processes.parquet",
                "regions.parquet",
                "sites.parquet",
                "swaps.parquet"
            ]
        );
        let counts = count_rows(dir.path()).unwrap();
        assert_eq!(counts["swaps"], 3);
        assert_eq!(counts["sites"], 3);
        // Empty tables are files too.
        write_tables(dir.path(), &TraceTables::default()).unwrap();
        assert_eq!(read_tables(dir.path()).unwrap(), TraceTables::default());
    }

    #[test]
    fn optional_tables_may_be_missing_required_ones_not() {
        let dir = tempfile::tempdir().unwrap();
        let t = sample_tables();
        write_tables(dir.path(), &t).unwrap();
        std::fs::remove_file(table_path(dir.path(), "sites")).unwrap();
        std::fs::remove_file(table_path(dir.path(), "allocations")).unwrap();
        let back = read_tables(dir.path()).unwrap();
        assert!(back.sites.is_empty() && back.allocations.is_empty());
        assert_eq!(back.faults, t.faults);
        std::fs::remove_file(table_path(dir.path(), "regions")).unwrap();
        let e = read_tables(dir.path()).unwrap_err().to_string();
        assert!(e.contains("regions.parquet is missing"), "{e}");
        assert!(e.contains("required") && e.contains("optional"), "{e}");
    }

    #[test]
    fn site_frames_and_locations_must_match() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = TraceTables::default();
        t.sites.push(Site {
            site_id: 4,
            frames: vec!["a".into(), "b".into()],
            locations: vec!["x".into()],
        });
        let e = write_tables(dir.path(), &t).unwrap_err().to_string();
        assert!(e.contains("site 4: 2 frames but 1 locations"), "{e}");
        t.sites[0].locations.push("y\nz".into());
        let e = write_tables(dir.path(), &t).unwrap_err().to_string();
        assert!(e.contains("newline"), "{e}");
        assert!(!table_path(dir.path(), "sites").exists());
        assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }

    /// Writes a file with a hand-made schema, for the error tests.
    fn write_raw(path: &Path, schema: &str, table: &str, cols: Vec<ColData>) {
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let props = WriterProperties::builder().build();
        let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, Arc::new(props))
            .unwrap();
        let mut rg = w.next_row_group().unwrap();
        for d in cols {
            let mut c = rg.next_column().unwrap().unwrap();
            match d {
                ColData::I64(v, def) => {
                    c.typed::<Int64Type>()
                        .write_batch(&v, def.as_deref(), None)
                        .unwrap();
                }
                ColData::I32(v, def) => {
                    c.typed::<Int32Type>()
                        .write_batch(&v, def.as_deref(), None)
                        .unwrap();
                }
                ColData::Bytes(v) => {
                    c.typed::<ByteArrayType>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
            }
            c.close().unwrap();
        }
        rg.close().unwrap();
        w.append_key_value_metadata(KeyValue::new(TABLE_KEY.to_string(), table.to_string()));
        w.close().unwrap();
    }

    #[test]
    fn clear_errors_for_bad_values_types_and_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("faults.parquet");
        let n = 20;
        let i64s = |f: fn(i64) -> i64| ColData::I64((0..n).map(f).collect(), None);
        let i32s = |f: fn(i32) -> i32| ColData::I32((0..n as i32).map(f).collect(), None);
        let good_schema = message_type("faults", &FAULTS);
        // A kind code out of range, at row 12.
        write_raw(
            &p,
            &good_schema,
            "faults",
            vec![
                i64s(|i| i),
                i32s(|_| 1),
                i32s(|_| 1),
                i64s(|i| i * 4096),
                i64s(|_| 7),
                i32s(|i| if i == 12 { 7 } else { 0 }),
            ],
        );
        let e = read_faults(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("faults.parquet row 12: kind 7 is not 0, 1 or 2"),
            "{e}"
        );
        // A missing column.
        write_raw(
            &p,
            "message m { required int64 t_ns; required int32 pid; }",
            "faults",
            vec![i64s(|i| i), i32s(|_| 1)],
        );
        let e = read_faults(&p).unwrap_err().to_string();
        assert!(e.contains("column 'tid' is missing"), "{e}");
        // A file of an older swaplab, without the late `weight` column:
        // every allocation reads as exact (weight null).
        let pa = table_path(dir.path(), "allocations");
        write_raw(
            &pa,
            "message m { required int32 pid; required int32 tid; required int64 start; \
             required int64 size; required int64 t_alloc_ns; optional int64 t_free_ns; \
             required int32 site_id; required binary func (UTF8); }",
            "allocations",
            vec![
                i32s(|_| 1),
                i32s(|_| 1),
                i64s(|i| i * 65536),
                i64s(|_| 65536),
                i64s(|i| i),
                ColData::I64(Vec::new(), Some(vec![0; n as usize])),
                i32s(|_| 1),
                ColData::Bytes((0..n).map(|_| ByteArray::from("malloc")).collect()),
            ],
        );
        let old = read_allocations(&pa).unwrap();
        assert_eq!(old.len(), n as usize);
        assert!(old.iter().all(|a| a.weight.is_none() && a.size == 65536));
        // A column of the wrong type.
        write_raw(
            &p,
            "message m { required int64 t_ns; required int64 pid; required int32 tid; \
             required int64 addr; required int64 ip; required int32 kind; }",
            "faults",
            vec![
                i64s(|i| i),
                i64s(|_| 1),
                i32s(|_| 1),
                i64s(|i| i),
                i64s(|i| i),
                i32s(|_| 0),
            ],
        );
        let e = read_faults(&p).unwrap_err().to_string();
        assert!(e.contains("column 'pid' is INT64, expected INT32"), "{e}");
        // A null where none is allowed (the column is optional in the file).
        write_raw(
            &p,
            "message m { optional int64 t_ns; required int32 pid; required int32 tid; \
             required int64 addr; required int64 ip; required int32 kind; }",
            "faults",
            vec![
                ColData::I64(
                    (0..n - 1).collect(),
                    Some((0..n).map(|i| i16::from(i != 3)).collect()),
                ),
                i32s(|_| 1),
                i32s(|_| 1),
                i64s(|i| i),
                i64s(|i| i),
                i32s(|_| 0),
            ],
        );
        let e = read_faults(&p).unwrap_err().to_string();
        assert!(e.ends_with("faults.parquet row 3: t_ns is null"), "{e}");
        // Another table's file under this name.
        let t = sample_tables();
        write_tables(dir.path(), &t).unwrap();
        std::fs::copy(
            table_path(dir.path(), "swaps"),
            table_path(dir.path(), "faults"),
        )
        .unwrap();
        let e = read_tables(dir.path()).unwrap_err().to_string();
        assert!(e.contains("holds table 'swaps'"), "{e}");
        // Range checks of the other code columns.
        let sp = dir.path().join("swaps.parquet");
        write_raw(
            &sp,
            &message_type("swaps", &SWAPS),
            "swaps",
            vec![
                i64s(|i| i),
                i32s(|_| 1),
                i64s(|i| i),
                i32s(|_| 1),
                ColData::I32(
                    (0..n as i32)
                        .map(|i| if i == 5 { 300 } else { 1 })
                        .collect(),
                    Some(vec![1; n as usize]),
                ),
                ColData::I64(vec![], Some(vec![0; n as usize])),
                i32s(|_| 0),
            ],
        );
        let e = read_swaps(&sp).unwrap_err().to_string();
        assert!(
            e.ends_with("swaps.parquet row 5: swap_type 300 is not in 0..=255"),
            "{e}"
        );
    }

    #[test]
    fn corrupt_files_give_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let t = sample_tables();
        write_tables(src.path(), &t).unwrap();
        let mut checked = 0;
        for (name, read) in [
            (
                "faults",
                (|p: &Path| read_faults(p).map(|_| ())) as fn(&Path) -> Result<()>,
            ),
            ("swaps", |p| read_swaps(p).map(|_| ())),
            ("sites", |p| read_sites(p).map(|_| ())),
        ] {
            let data = std::fs::read(table_path(src.path(), name)).unwrap();
            let p = dir.path().join(format!("{name}.parquet"));
            // Every truncation.
            for cut in 0..data.len() {
                std::fs::write(&p, &data[..cut]).unwrap();
                assert!(read(&p).is_err(), "{name} cut at {cut} of {}", data.len());
                checked += 1;
            }
            // Random byte flips: an error or (if the flip hit slack such as
            // statistics) a successful read, but never a panic.
            let mut rng = Rng(99);
            for _ in 0..3000 {
                let mut d = data.clone();
                for _ in 0..1 + rng.below(3) {
                    let i = rng.below(d.len() as u64) as usize;
                    d[i] ^= 1 << rng.below(8);
                }
                std::fs::write(&p, &d).unwrap();
                let _ = read(&p);
                checked += 1;
            }
        }
        assert!(checked > 9000);
    }

    #[test]
    fn faults_size_budget() {
        let n = 1_000_000;
        let faults = realistic_faults(n);
        let dir = tempfile::tempdir().unwrap();
        let t = TraceTables {
            faults,
            ..Default::default()
        };
        write_tables(dir.path(), &t).unwrap();
        let p = table_path(dir.path(), "faults");
        let bytes = std::fs::metadata(&p).unwrap().len();
        println!(
            "faults.parquet: {n} events, {bytes} bytes, {:.2} bytes/event",
            bytes as f64 / n as f64
        );
        assert!(bytes < 16_000_000, "{bytes} bytes");
        let back = read_faults(&p).unwrap();
        assert!(back == t.faults, "round trip differs");
    }

    #[test]
    fn spans_row_groups() {
        let n = ROWS_PER_GROUP + 10;
        let faults = realistic_faults(n);
        let dir = tempfile::tempdir().unwrap();
        let t = TraceTables {
            faults,
            ..Default::default()
        };
        write_tables(dir.path(), &t).unwrap();
        let p = table_path(dir.path(), "faults");
        let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.num_row_groups(), 2);
        assert!(read_faults(&p).unwrap() == t.faults);
    }

    #[test]
    fn meta_round_trip_and_trace_dir_detection() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_trace_dir(dir.path()));
        let t = sample_tables();
        let m = TraceMetaFile {
            command: vec!["swaplab-workload".into(), "qsort".into()],
            argv: vec![
                "/var/cache/swaplab/swaplab-workload-abc".into(),
                "qsort".into(),
            ],
            started_unix_ns: 1_700_000_000_000_000_000,
            t0_monotonic_ns: 123_456_789,
            options: serde_json::json!({"faults": true, "pagemap_hz": 10}),
            environment: serde_json::json!({"kernel": "6.8.0", "page_size": 4096}),
            counts: TableCounts::of(&t),
            notes: vec!["tracefs unavailable".into()],
            ..Default::default()
        };
        write_meta(dir.path(), &m).unwrap();
        assert_eq!(read_meta(dir.path()).unwrap(), m);
        assert!(is_trace_dir(dir.path()));
        assert!(!dir.path().join("meta.json.tmp").exists());
        std::fs::write(dir.path().join(META_FILE), "{\"command\": 3}").unwrap();
        let e = read_meta(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("meta.json: not a swaplab trace meta.json"),
            "{e}"
        );
        assert!(!is_trace_dir(dir.path()));
        write_tables(dir.path(), &t).unwrap();
        assert!(
            is_trace_dir(dir.path()),
            "the tables alone make a trace dir"
        );
        assert!(!is_trace_dir(&dir.path().join("faults.parquet")));
    }

    /// The streaming writer: row groups of the asked size, a file that
    /// reads back as the batch writer's, nothing visible before `finish`.
    #[test]
    fn table_writer_streams_row_groups_and_commits_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TableWriter::<FaultEvent>::create(dir.path(), 1000).unwrap();
        let ev = |i: u64| FaultEvent {
            t_ns: i * 7,
            pid: 10 + (i % 3) as u32,
            tid: 20 + (i % 5) as u32,
            addr: 0x7f00_0000_0000 + (i % 4096) * 4096,
            ip: 0x40_0000 + (i % 17),
            kind: if i.is_multiple_of(11) {
                FaultKind::Major
            } else {
                FaultKind::Minor
            },
        };
        for i in 0..4_500 {
            w.push(ev(i)).unwrap();
            assert!(w.buf.len() < 1000, "the buffer never holds a full group");
        }
        assert_eq!(w.rows(), 4_500);
        let path = table_path(dir.path(), "faults");
        assert!(!path.exists(), "nothing appears before finish");
        assert_eq!(w.finish().unwrap(), 4_500);
        let f = File::open(&path).unwrap();
        let r = SerializedFileReader::new(f).unwrap();
        let groups: Vec<i64> = r
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, vec![1000, 1000, 1000, 1000, 500]);
        let back = read_faults(&path).unwrap();
        assert_eq!(back, (0..4_500).map(ev).collect::<Vec<_>>());
        // An abandoned writer leaves nothing behind.
        let d2 = tempfile::tempdir().unwrap();
        let mut w = TableWriter::<SwapEvent>::create(d2.path(), 10).unwrap();
        for _ in 0..25 {
            w.push(sample_tables().swaps[0]).unwrap();
        }
        drop(w);
        assert_eq!(std::fs::read_dir(d2.path()).unwrap().count(), 0);
    }

    #[test]
    fn meta_typed_fields_and_older_traces() {
        let mut m = TraceMetaFile {
            limit_bytes: Some(64 << 20),
            page_cluster: Some(0),
            run_id: Some(3),
            ..Default::default()
        };
        let back: TraceMetaFile =
            serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(
            (m.run_limit_bytes(), m.run_page_cluster()),
            (Some(64 << 20), Some(0))
        );
        // Written before the typed fields: options.limit_bytes and the
        // environment's knob string.
        m.limit_bytes = None;
        m.page_cluster = None;
        m.options = serde_json::json!({"limit_bytes": 1234});
        m.environment = serde_json::json!({"knobs": {"page_cluster": "3"}});
        assert_eq!(
            (m.run_limit_bytes(), m.run_page_cluster()),
            (Some(1234), Some(3))
        );
    }
}
