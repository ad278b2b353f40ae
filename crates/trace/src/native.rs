//! The native trace format: one Parquet file (zstd-compressed), written and
//! read streaming with bounded memory. See docs/formats.md.
//!
//! Columns (each present for every row or absent from the file):
//!
//! | column    | Parquet type                 | encoding              | meaning |
//! |-----------|------------------------------|-----------------------|---------|
//! | `page`    | INT64 (UINT_64)              | BYTE_STREAM_SPLIT (DELTA_BINARY_PACKED before 0.1 sim2) | page number (address / page size) |
//! | `write`   | BOOLEAN                      | RLE                   | true for a write, false for a read |
//! | `time_ns` | INT64 (UINT_64), optional    | DELTA_BINARY_PACKED   | time of the reference, ns |
//! | `tid`     | INT32 (UINT_32), optional    | dictionary            | thread id |
//! | `id`      | INT32 (UINT_32), format ≥ 2  | BYTE_STREAM_SPLIT     | dense page id: 0, 1, 2, … in order of first reference |
//!
//! Readers take whatever encoding a file's column chunks declare, so files
//! written with the earlier DELTA_BINARY_PACKED `page` and `id` still read.
//!
//! The `id` column (format 2) is what makes loading for simulation fast:
//! with it, [`DenseTrace::load`](crate::DenseTrace::load) decodes row
//! groups in parallel and needs no hash map from page to dense id (on a
//! trace whose footprint does not fit in cache, that map costs a cache
//! miss or two per reference and was about nine tenths of the load time).
//! The dictionary (dense id → page) is the `page` of each id's first
//! reference. The loader checks that the ids are in first-use order and
//! match the metadata's distinct count, so a damaged column is an error;
//! it does not re-check that every reference's id agrees with its page
//! (that is the hashing it exists to avoid). Files of format 1 (no `id`)
//! load through the hash map as before.
//!
//! The footer's key-value metadata holds `swaplab.trace`, the JSON
//! [`TraceMeta`]. Row groups hold [`ROWS_PER_GROUP`] references, so a reader
//! holds at most one row group's worth of one column at a time (about
//! 8 MiB) whatever the trace length. The writer encodes and compresses row
//! groups on worker threads, at most [`MAX_IN_FLIGHT`] of them at a time
//! (about 15 MiB each), and appends them in order. It assigns dense ids
//! with the in-memory loader's page map (`IdMap`): memory proportional to
//! the footprint (about 60 bytes per distinct page), not to the length.
use crate::dense::{too_long, IdMap, MAX_REFS};
use crate::model::FORMAT_VERSION;
use crate::{DenseTrace, Error, RefBatch, RefSource, Result, Source, TraceMeta};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::reader::ColumnReader;
use parquet::column::writer::{get_column_writer, get_typed_column_writer, ColumnCloseResult};
use parquet::data_type::{BoolType, DataType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{
    EnabledStatistics, WriterProperties, WriterPropertiesPtr, WriterVersion,
};
use parquet::file::reader::{ChunkReader, FileReader};
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::{ColumnDescPtr, ColumnPath};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// References per Parquet row group.
pub const ROWS_PER_GROUP: usize = 1 << 20;
/// zstd level of every column.
pub const ZSTD_LEVEL: i32 = 3;
/// Footer key of the JSON metadata.
pub const META_KEY: &str = "swaplab.trace";

fn pq(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::parse("native trace", path.display().to_string(), e.to_string())
}

/// Streaming writer of a native trace. Writes to a temporary file beside
/// the target and renames it on [`finish`](Self::finish), so a killed write
/// never leaves a half file under the real name.
///
/// The row groups are encoded and compressed on worker threads (the
/// calling thread only assigns dense ids and copies the columns): full
/// groups go to `Encoders`, and their encoded column chunks are appended
/// to the file in order. At most [`MAX_IN_FLIGHT`] groups are pending at a
/// time, so memory stays bounded (about 15 MiB per group for page, write
/// and id).
pub struct NativeWriter {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<SerializedFileWriter<File>>,
    pending: Columns,
    has_time: Option<bool>,
    has_tid: Option<bool>,
    /// Page → dense id (first-use order), for the `id` column: the
    /// in-memory loader's map, whose lookups keep many cache misses in
    /// flight. With `FxHashMap` here, waiting on one miss at a time,
    /// `swaplab import` of a 50 M-reference oracleGeneral file (5.3 M
    /// distinct pages) spent 46 % of its samples in this method and took
    /// 3.4–3.9 s (3.6 s of CPU); with the map 2.2–2.4 s (1.9 s of CPU),
    /// the file byte for byte the same, for 120 MB more peak memory (the
    /// map's table is half empty: 256 MiB for the 5.3 M pages).
    map: IdMap,
    /// Every page `map` numbered, in id order (the map rebuilds from it).
    pages: Vec<u64>,
    /// One piece's ids, reused.
    ids: Vec<u32>,
    /// The most distinct pages: [`MAX_REFS`], lower in tests.
    limit: usize,
    count: u64,
    writes: u64,
    page_size: u64,
    source: Source,
    encoders: Option<Encoders>,
    /// Encoded groups not yet appended, oldest first.
    in_flight: std::collections::VecDeque<mpsc::Receiver<EncodeResult>>,
}

/// Row groups being encoded at most at a time (each about 15 MiB raw).
pub const MAX_IN_FLIGHT: usize = 4;

/// One row group's columns, as Parquet writes them.
#[derive(Default)]
struct Columns {
    page: Vec<i64>,
    write: Vec<bool>,
    time_ns: Vec<i64>,
    tid: Vec<i32>,
    id: Vec<i32>,
}

impl Columns {
    fn with_capacity(n: usize, time: bool, tid: bool) -> Self {
        Columns {
            page: Vec::with_capacity(n),
            write: Vec::with_capacity(n),
            time_ns: Vec::with_capacity(if time { n } else { 0 }),
            tid: Vec::with_capacity(if tid { n } else { 0 }),
            id: Vec::with_capacity(n),
        }
    }
}

/// A column chunk encoded into memory, with what the file needs to append it.
type EncodedColumn = (bytes::Bytes, ColumnCloseResult);
/// One row group's encoded columns in schema order, or the error.
type EncodeResult = std::result::Result<Vec<EncodedColumn>, String>;

/// Encodes one column's values into an in-memory column chunk.
fn encode_column<T: DataType>(
    descr: &ColumnDescPtr,
    props: &WriterPropertiesPtr,
    values: &[T::T],
) -> parquet::errors::Result<EncodedColumn> {
    let mut buf = TrackedWrite::new(Vec::new());
    let pages = Box::new(SerializedPageWriter::new(&mut buf));
    let mut w =
        get_typed_column_writer::<T>(get_column_writer(descr.clone(), props.clone(), pages));
    w.write_batch(values, None, None)?;
    let close = w.close()?;
    Ok((bytes::Bytes::from(buf.into_inner()?), close))
}

/// Encodes a row group's columns (in the schema's order: page, write,
/// time_ns, tid, id).
fn encode_group(
    descrs: &[ColumnDescPtr],
    props: &WriterPropertiesPtr,
    c: &Columns,
) -> parquet::errors::Result<Vec<EncodedColumn>> {
    let mut out = Vec::with_capacity(descrs.len());
    let mut d = descrs.iter();
    let mut next = || {
        d.next().ok_or_else(|| {
            parquet::errors::ParquetError::General("schema has too few columns".into())
        })
    };
    out.push(encode_column::<Int64Type>(next()?, props, &c.page)?);
    out.push(encode_column::<BoolType>(next()?, props, &c.write)?);
    if !c.time_ns.is_empty() {
        out.push(encode_column::<Int64Type>(next()?, props, &c.time_ns)?);
    }
    if !c.tid.is_empty() {
        out.push(encode_column::<Int32Type>(next()?, props, &c.tid)?);
    }
    out.push(encode_column::<Int32Type>(next()?, props, &c.id)?);
    Ok(out)
}

/// Worker threads that encode row groups; each job carries the channel its
/// result goes back on, so results are taken in the order groups were sent.
struct Encoders {
    jobs: Option<mpsc::SyncSender<(Columns, mpsc::SyncSender<EncodeResult>)>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Encoders {
    fn start(descrs: Vec<ColumnDescPtr>, props: WriterPropertiesPtr) -> std::io::Result<Self> {
        let n = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_IN_FLIGHT);
        let (tx, rx) = mpsc::sync_channel::<(Columns, mpsc::SyncSender<EncodeResult>)>(1);
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (rx, descrs, props) = (rx.clone(), descrs.clone(), props.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("trace-encode-{i}"))
                    .spawn(move || loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        let Ok((cols, reply)) = job else { return };
                        let r = encode_group(&descrs, &props, &cols).map_err(|e| e.to_string());
                        drop(cols);
                        let _ = reply.send(r);
                    })?,
            );
        }
        Ok(Encoders {
            jobs: Some(tx),
            threads,
        })
    }
}

impl Drop for Encoders {
    fn drop(&mut self) {
        // Closing the job channel ends the workers once their jobs are done.
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl NativeWriter {
    pub fn create(path: &Path, page_size: u64, source: Source) -> Result<Self> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".swaplab-tmp");
        let tmp = PathBuf::from(tmp);
        Ok(NativeWriter {
            path: path.to_path_buf(),
            tmp,
            writer: None,
            pending: Columns::default(),
            has_time: None,
            has_tid: None,
            map: IdMap::default(),
            pages: Vec::new(),
            ids: Vec::new(),
            limit: MAX_REFS,
            count: 0,
            writes: 0,
            page_size,
            source,
            encoders: None,
            in_flight: Default::default(),
        })
    }

    fn open(&mut self, has_time: bool, has_tid: bool) -> Result<()> {
        let mut schema = String::from(
            "message swaplab_trace { required int64 page (INTEGER(64,false)); required boolean write;",
        );
        if has_time {
            schema.push_str(" required int64 time_ns (INTEGER(64,false));");
        }
        if has_tid {
            schema.push_str(" required int32 tid (INTEGER(32,false));");
        }
        schema.push_str(" required int32 id (INTEGER(32,false)); }");
        let schema = Arc::new(parse_message_type(&schema).map_err(|e| pq(&self.path, e))?);
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).expect("valid level"),
            ))
            .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled(ColumnPath::from("tid"), true)
            // Byte planes then zstd: 2.9 bytes/ref for the standard trace's
            // scattered pages (3.15 with DELTA_BINARY_PACKED), 2.3 for ids
            // (2.8), whose high bytes are nearly constant.
            .set_column_encoding(ColumnPath::from("page"), Encoding::BYTE_STREAM_SPLIT)
            .set_column_encoding(ColumnPath::from("time_ns"), Encoding::DELTA_BINARY_PACKED)
            .set_column_encoding(ColumnPath::from("id"), Encoding::BYTE_STREAM_SPLIT)
            .set_column_encoding(ColumnPath::from("write"), Encoding::RLE)
            // No min/max statistics: nothing reads them, and they cost
            // about a tenth of the encoding time.
            .set_statistics_enabled(EnabledStatistics::None)
            .build();
        let file = File::create(&self.tmp).map_err(|e| Error::io(&self.tmp, e))?;
        let w = SerializedFileWriter::new(file, schema, Arc::new(props))
            .map_err(|e| pq(&self.path, e))?;
        let descrs = w.schema_descr().columns().to_vec();
        self.encoders = Some(
            Encoders::start(descrs, w.properties().clone()).map_err(|e| Error::io(&self.tmp, e))?,
        );
        self.writer = Some(w);
        self.has_time = Some(has_time);
        self.has_tid = Some(has_tid);
        self.pending = Columns::with_capacity(ROWS_PER_GROUP, has_time, has_tid);
        Ok(())
    }

    /// Appends a batch. Every batch must carry the same optional columns.
    pub fn write(&mut self, b: &RefBatch) -> Result<()> {
        b.check()?;
        if b.is_empty() {
            return Ok(());
        }
        let (t, d) = (!b.time_ns.is_empty(), !b.tid.is_empty());
        if self.writer.is_none() {
            self.open(t, d)?;
        } else if self.has_time != Some(t) || self.has_tid != Some(d) {
            return Err(Error::Invalid(
                "a batch's optional columns (time_ns, tid) differ from the first batch's".into(),
            ));
        }
        // In pieces that end at row-group boundaries.
        let mut at = 0;
        while at < b.len() {
            let take = (ROWS_PER_GROUP - self.pending.page.len()).min(b.len() - at);
            let r = at..at + take;
            let p = &mut self.pending;
            let pages = &b.page[r.clone()];
            self.ids.clear();
            if self.pages.len() + take <= self.limit {
                self.map.map_batch(pages, &mut self.ids, &mut self.pages);
            } else {
                // Near the limit, one page at a time, so that the first
                // page past it is the error and never an id.
                for page in pages {
                    self.map
                        .map_batch(std::slice::from_ref(page), &mut self.ids, &mut self.pages);
                    if self.pages.len() > self.limit {
                        return Err(Error::Invalid(format!(
                            "more than {} distinct pages: the native format's dense ids are 32-bit",
                            self.limit
                        )));
                    }
                }
            }
            p.id.extend(self.ids.iter().map(|&id| id as i32));
            p.page.extend(pages.iter().map(|&page| page as i64));
            let w = &b.write[r.clone()];
            self.writes += w.iter().filter(|&&w| w).count() as u64;
            p.write.extend_from_slice(w);
            if t {
                p.time_ns
                    .extend(b.time_ns[r.clone()].iter().map(|&x| x as i64));
            }
            if d {
                p.tid.extend(b.tid[r].iter().map(|&x| x as i32));
            }
            self.count += take as u64;
            at += take;
            if self.pending.page.len() >= ROWS_PER_GROUP {
                self.flush_group()?;
            }
        }
        Ok(())
    }

    /// Sends the pending rows to the encoders as one row group, and appends
    /// what they have finished (waiting for the oldest while too many are
    /// pending).
    fn flush_group(&mut self) -> Result<()> {
        if !self.pending.page.is_empty() {
            let (t, d) = (self.has_time == Some(true), self.has_tid == Some(true));
            let cols = std::mem::replace(
                &mut self.pending,
                Columns::with_capacity(ROWS_PER_GROUP, t, d),
            );
            let (tx, rx) = mpsc::sync_channel(1);
            let jobs = self
                .encoders
                .as_ref()
                .and_then(|e| e.jobs.as_ref())
                .expect("opened on first batch");
            jobs.send((cols, tx))
                .map_err(|_| Error::Invalid("the trace encoder threads stopped".into()))?;
            self.in_flight.push_back(rx);
        }
        while self.in_flight.len() > MAX_IN_FLIGHT {
            self.append_oldest()?;
        }
        // Whatever is already done, without waiting.
        while let Some(rx) = self.in_flight.front() {
            match rx.try_recv() {
                Ok(r) => {
                    self.in_flight.pop_front();
                    self.append(r)?;
                }
                Err(_) => break,
            }
        }
        Ok(())
    }

    fn append_oldest(&mut self) -> Result<()> {
        let Some(rx) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let r = rx
            .recv()
            .map_err(|_| Error::Invalid("a trace encoder thread died".into()))?;
        self.append(r)
    }

    fn append(&mut self, r: EncodeResult) -> Result<()> {
        let path = self.path.clone();
        let cols = r.map_err(|e| Error::parse("native trace", path.display().to_string(), e))?;
        let w = self.writer.as_mut().expect("opened on first batch");
        let mut rg = w.next_row_group().map_err(|e| pq(&path, e))?;
        for (bytes, close) in cols {
            rg.append_column(&bytes, close).map_err(|e| pq(&path, e))?;
        }
        rg.close().map_err(|e| pq(&path, e))?;
        Ok(())
    }

    /// Writes the footer with the metadata and moves the file into place.
    pub fn finish(mut self) -> Result<TraceMeta> {
        if self.writer.is_none() {
            self.open(false, false)?;
        }
        self.flush_group()?;
        while !self.in_flight.is_empty() {
            self.append_oldest()?;
        }
        self.encoders = None;
        let meta = TraceMeta {
            format_version: FORMAT_VERSION,
            page_size: self.page_size,
            source: self.source.clone(),
            count: self.count,
            distinct_pages: self.pages.len() as u64,
            writes: self.writes,
            has_time: self.has_time == Some(true),
            has_tid: self.has_tid == Some(true),
            has_id: true,
            writer: format!("swaplab {}", env!("CARGO_PKG_VERSION")),
        };
        let mut w = self.writer.take().expect("opened");
        w.append_key_value_metadata(KeyValue::new(
            META_KEY.to_string(),
            serde_json::to_string(&meta).expect("serializable"),
        ));
        let file = w.into_inner().map_err(|e| pq(&self.path, e))?;
        file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        Ok(meta)
    }
}

impl Drop for NativeWriter {
    fn drop(&mut self) {
        // Not finished: remove the partial temporary file.
        if self.writer.is_some() || self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Copies a whole source into a native file; `progress(n)` with the
/// references written since its last call. csv and txt are parsed on
/// every core ([`RefSource::feed_all`]): `swaplab import` of 50 M lines
/// took 1.8–2.4 s where their batches, parsed on one thread, took
/// 4.8–6.9 s (the files byte for byte the same).
pub fn write_source(
    src: &mut dyn RefSource,
    path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<TraceMeta> {
    let mut w = NativeWriter::create(path, src.page_size(), src.source())?;
    let mut b = RefBatch::default();
    // csv and txt parse on every core ([`RefSource::feed_all`]).
    let mut written = 0;
    let mut to_writer = |pages: &[u64], writes: &[bool], times: &[u64]| {
        written += pages.len() as u64;
        b.clear();
        b.page.extend_from_slice(pages);
        b.write.extend_from_slice(writes);
        b.write.resize(pages.len(), false);
        b.time_ns.extend_from_slice(times);
        w.write(&b)
    };
    let mut given = 0;
    let fed = src.feed_all(&mut to_writer, &mut |n| {
        progress(n - given);
        given = n;
    });
    match fed {
        Some(r) => {
            r?;
            progress(written - given);
        }
        None => {
            while src.next_batch(&mut b, 1 << 16)? {
                w.write(&b)?;
                progress(b.len() as u64);
            }
        }
    }
    w.finish()
}

/// Streaming reader of a native trace: one row group's column chunks at a time.
pub struct NativeReader<R: ChunkReader + 'static = File> {
    file: SerializedFileReader<R>,
    meta: TraceMeta,
    name: String,
    /// The file's path, for the parallel dense loader: each of its threads
    /// opens its own handle (clones of one `File` share one offset).
    path: Option<PathBuf>,
    group: usize,
    left_in_group: usize,
    cols: Option<Cols>,
    scratch_i64: Vec<i64>,
    scratch_i32: Vec<i32>,
}

struct Cols {
    page: parquet::column::reader::ColumnReaderImpl<Int64Type>,
    write: parquet::column::reader::ColumnReaderImpl<BoolType>,
    time: Option<parquet::column::reader::ColumnReaderImpl<Int64Type>>,
    tid: Option<parquet::column::reader::ColumnReaderImpl<Int32Type>>,
}

impl NativeReader<File> {
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut r = Self::new(f, path.display().to_string())?;
        r.path = Some(path.to_path_buf());
        Ok(r)
    }
}

impl NativeReader<bytes::Bytes> {
    /// Reads a trace held in memory (tests, fuzzing).
    pub fn from_bytes(data: Vec<u8>) -> Result<Self> {
        Self::new(bytes::Bytes::from(data), "<memory>".into())
    }
}

impl<R: ChunkReader + 'static> NativeReader<R> {
    fn new(r: R, name: String) -> Result<Self> {
        let bad = |d: String| Error::NotNative(format!("{name}: {d}"));
        let file =
            SerializedFileReader::new(r).map_err(|e| bad(format!("not a Parquet file: {e}")))?;
        let md = file.metadata().file_metadata();
        let kv = md
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == META_KEY))
            .and_then(|k| k.value.clone())
            .ok_or_else(|| bad(format!("a Parquet file without the '{META_KEY}' metadata")))?;
        let meta: TraceMeta = serde_json::from_str(&kv)
            .map_err(|e| bad(format!("bad '{META_KEY}' metadata: {e}")))?;
        if meta.format_version > FORMAT_VERSION {
            return Err(bad(format!(
                "written by a newer swaplab (format {}, this one reads {FORMAT_VERSION}); upgrade swaplab",
                meta.format_version
            )));
        }
        let schema = md.schema_descr();
        let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
        let mut want = vec!["page", "write"];
        if meta.has_time {
            want.push("time_ns");
        }
        if meta.has_tid {
            want.push("tid");
        }
        if meta.has_id {
            want.push("id");
        }
        if names != want {
            return Err(bad(format!("columns {names:?}, expected {want:?}")));
        }
        let rows: i64 = file
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .sum();
        if rows as u64 != meta.count {
            return Err(bad(format!(
                "{rows} rows but the metadata says {}",
                meta.count
            )));
        }
        Ok(NativeReader {
            file,
            meta,
            name,
            path: None,
            group: 0,
            left_in_group: 0,
            cols: None,
            scratch_i64: Vec::new(),
            scratch_i32: Vec::new(),
        })
    }

    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::parse(
            "native trace",
            format!("{} row group {}", self.name, self.group),
            e.to_string(),
        )
    }

    fn open_group(&mut self) -> Result<bool> {
        let groups = self.file.num_row_groups();
        while self.group < groups {
            let rg = self
                .file
                .get_row_group(self.group)
                .map_err(|e| self.err(e))?;
            let n = rg.metadata().num_rows().max(0) as usize;
            let col = |i: usize| rg.get_column_reader(i);
            let page = match col(0).map_err(|e| self.err(e))? {
                ColumnReader::Int64ColumnReader(r) => r,
                _ => return Err(self.err("column 'page' is not INT64")),
            };
            let write = match col(1).map_err(|e| self.err(e))? {
                ColumnReader::BoolColumnReader(r) => r,
                _ => return Err(self.err("column 'write' is not BOOLEAN")),
            };
            let mut i = 2;
            let time = if self.meta.has_time {
                i += 1;
                match col(i - 1).map_err(|e| self.err(e))? {
                    ColumnReader::Int64ColumnReader(r) => Some(r),
                    _ => return Err(self.err("column 'time_ns' is not INT64")),
                }
            } else {
                None
            };
            let tid = if self.meta.has_tid {
                match col(i).map_err(|e| self.err(e))? {
                    ColumnReader::Int32ColumnReader(r) => Some(r),
                    _ => return Err(self.err("column 'tid' is not INT32")),
                }
            } else {
                None
            };
            drop(rg);
            if n > 0 {
                self.cols = Some(Cols {
                    page,
                    write,
                    time,
                    tid,
                });
                self.left_in_group = n;
                return Ok(true);
            }
            self.group += 1;
        }
        Ok(false)
    }
}

impl<R: ChunkReader + 'static> RefSource for NativeReader<R> {
    fn next_batch(&mut self, b: &mut RefBatch, max: usize) -> Result<bool> {
        b.clear();
        if self.left_in_group == 0 {
            if self.cols.is_some() {
                self.group += 1;
                self.cols = None;
            }
            let opened =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.open_group()))
                    .unwrap_or_else(|_| {
                        Err(self.err("corrupt row group (the Parquet decoder gave up)"))
                    });
            if !opened? {
                return Ok(false);
            }
        }
        let want = max.max(1).min(self.left_in_group);
        let Some(mut cols) = self.cols.take() else {
            return Err(self.err("reading after an error"));
        };
        // The parquet crate may panic on corrupt input (it documents this):
        // turn that into an error naming the row group.
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || -> std::result::Result<(), String> {
                let s = &mut self.scratch_i64;
                s.clear();
                let (n, _, _) = cols
                    .page
                    .read_records(want, None, None, s)
                    .map_err(|e| e.to_string())?;
                if n != want {
                    return Err(format!("column 'page' ended early ({n} of {want} values)"));
                }
                b.page.extend(s.iter().map(|&x| x as u64));
                let (n, _, _) = cols
                    .write
                    .read_records(want, None, None, &mut b.write)
                    .map_err(|e| e.to_string())?;
                if n != want {
                    return Err(format!("column 'write' ended early ({n} of {want} values)"));
                }
                if let Some(t) = cols.time.as_mut() {
                    s.clear();
                    let (n, _, _) = t
                        .read_records(want, None, None, s)
                        .map_err(|e| e.to_string())?;
                    if n != want {
                        return Err(format!(
                            "column 'time_ns' ended early ({n} of {want} values)"
                        ));
                    }
                    b.time_ns.extend(s.iter().map(|&x| x as u64));
                }
                if let Some(t) = cols.tid.as_mut() {
                    let s = &mut self.scratch_i32;
                    s.clear();
                    let (n, _, _) = t
                        .read_records(want, None, None, s)
                        .map_err(|e| e.to_string())?;
                    if n != want {
                        return Err(format!("column 'tid' ended early ({n} of {want} values)"));
                    }
                    b.tid.extend(s.iter().map(|&x| x as u32));
                }
                Ok(())
            },
        ))
        .unwrap_or_else(|_| Err("corrupt column data (the Parquet decoder gave up)".into()));
        if let Err(e) = res {
            // Leave the reader exhausted: a damaged row group cannot be resumed.
            self.left_in_group = 0;
            self.group = self.file.num_row_groups();
            return Err(self.err(e));
        }
        self.cols = Some(cols);
        self.left_in_group -= want;
        Ok(true)
    }

    fn source(&self) -> Source {
        self.meta.source.clone()
    }

    fn page_size(&self) -> u64 {
        self.meta.page_size
    }

    fn load_dense(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<DenseTrace>> {
        // Only for a file with ids, and only before any batch was read.
        if !self.meta.has_id || self.group != 0 || self.cols.is_some() {
            return None;
        }
        Some(self.load_dense_ids(progress))
    }
}

/// What decoding one row group gives the dense loader besides its ids.
struct GroupOut {
    /// Write bits of the group's references, packed from bit 0.
    bits: Vec<u64>,
    /// (id, page) of each reference whose id exceeds every earlier id of
    /// the group: a superset of the group's first references, in order.
    firsts: Vec<(u32, u64)>,
}

/// Reads `n` values of a column into `buf` (cleared first); a macro
/// because the parquet crate's buffer trait is private.
macro_rules! read_all {
    ($r:expr, $n:expr, $buf:expr, $name:expr) => {{
        let (r, n, buf) = (&mut $r, $n, &mut $buf);
        buf.clear();
        while buf.len() < n {
            let (got, _, _) = r
                .read_records(n - buf.len(), None, None, buf)
                .map_err(|e| e.to_string())?;
            if got == 0 {
                return Err(format!(
                    "column '{}' ended early ({} of {n} values)",
                    $name,
                    buf.len()
                ));
            }
        }
    }};
}

/// ORs the `n`-bit string `src` (packed from bit 0) into `dst` at bit `start`.
fn or_bits(dst: &mut [u64], start: usize, src: &[u64]) {
    let (w, sh) = (start / 64, start % 64);
    for (k, &x) in src.iter().enumerate() {
        if sh == 0 {
            dst[w + k] |= x;
        } else {
            dst[w + k] |= x << sh;
            if let Some(d) = dst.get_mut(w + k + 1) {
                *d |= x >> (64 - sh);
            }
        }
    }
}

impl<R: ChunkReader + 'static> NativeReader<R> {
    /// Decodes row group `g`'s `id` column into `ids` (its slice of the
    /// whole), and its `write` and `page` columns into a [`GroupOut`].
    fn decode_group<Q: ChunkReader + 'static>(
        file: &SerializedFileReader<Q>,
        meta: &TraceMeta,
        g: usize,
        ids: &mut [u32],
    ) -> std::result::Result<GroupOut, String> {
        let rg = file.get_row_group(g).map_err(|e| e.to_string())?;
        let n = ids.len();
        if rg.metadata().num_rows().max(0) as usize != n {
            return Err("row count changed while reading".into());
        }
        let id_col = 2 + usize::from(meta.has_time) + usize::from(meta.has_tid);
        let mut id_buf = Vec::with_capacity(n);
        match rg.get_column_reader(id_col).map_err(|e| e.to_string())? {
            ColumnReader::Int32ColumnReader(mut r) => read_all!(r, n, id_buf, "id"),
            _ => return Err("column 'id' is not INT32".into()),
        }
        for (d, &x) in ids.iter_mut().zip(&id_buf) {
            *d = x as u32;
        }
        drop(id_buf);
        let mut w = Vec::with_capacity(n);
        match rg.get_column_reader(1).map_err(|e| e.to_string())? {
            ColumnReader::BoolColumnReader(mut r) => read_all!(r, n, w, "write"),
            _ => return Err("column 'write' is not BOOLEAN".into()),
        }
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (word, chunk) in bits.iter_mut().zip(w.chunks(64)) {
            for (i, &b) in chunk.iter().enumerate() {
                *word |= u64::from(b) << i;
            }
        }
        drop(w);
        let mut pages = Vec::with_capacity(n);
        match rg.get_column_reader(0).map_err(|e| e.to_string())? {
            ColumnReader::Int64ColumnReader(mut r) => read_all!(r, n, pages, "page"),
            _ => return Err("column 'page' is not INT64".into()),
        }
        let mut firsts = Vec::new();
        let mut max: i64 = -1;
        for (&id, &p) in ids.iter().zip(&pages) {
            if i64::from(id) > max {
                max = i64::from(id);
                firsts.push((id, p as u64));
            }
        }
        Ok(GroupOut { bits, firsts })
    }

    /// The whole trace, dense, from the `id` column: row groups decoded on
    /// all cores, no hashing (see the module documentation).
    fn load_dense_ids(&mut self, progress: &mut dyn FnMut(u64)) -> Result<DenseTrace> {
        let sizes: Vec<usize> = self
            .file
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(0) as usize)
            .collect();
        let total: usize = sizes.iter().sum();
        if total > MAX_REFS {
            return Err(too_long());
        }
        let groups = sizes.len();
        let mut ids = vec![0u32; total];
        let mut slices: Vec<(usize, &mut [u32])> = Vec::with_capacity(groups);
        let mut rest: &mut [u32] = &mut ids;
        for (g, &n) in sizes.iter().enumerate() {
            let (a, b) = rest.split_at_mut(n);
            slices.push((g, a));
            rest = b;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, groups.max(1));
        // Static striping: row groups have equal sizes (but the last).
        let mut per_thread: Vec<Vec<(usize, &mut [u32])>> =
            (0..threads).map(|_| Vec::new()).collect();
        for (k, s) in slices.into_iter().enumerate() {
            per_thread[k % threads].push(s);
        }
        let (file, meta, path) = (&self.file, &self.meta, self.path.as_deref());
        let mut outs: Vec<Option<std::result::Result<GroupOut, String>>> =
            (0..groups).map(|_| None).collect();
        std::thread::scope(|sc| {
            let handles: Vec<_> = per_thread
                .into_iter()
                .map(|work| {
                    sc.spawn(move || {
                        // A file gets one handle per thread; in-memory bytes are shared.
                        let own = match path.map(|p| {
                            File::open(p).map_err(|e| e.to_string()).and_then(|f| {
                                SerializedFileReader::new(f).map_err(|e| e.to_string())
                            })
                        }) {
                            Some(Err(e)) => {
                                return work
                                    .into_iter()
                                    .map(|(g, _)| (g, Err(e.clone())))
                                    .collect();
                            }
                            Some(Ok(f)) => Some(f),
                            None => None,
                        };
                        work.into_iter()
                            .map(|(g, ids)| {
                                // The parquet crate may panic on corrupt input.
                                let r =
                                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                        match &own {
                                            Some(f) => Self::decode_group(f, meta, g, ids),
                                            None => Self::decode_group(file, meta, g, ids),
                                        }
                                    }))
                                    .unwrap_or_else(|_| {
                                        Err("corrupt column data (the Parquet decoder gave up)"
                                            .into())
                                    });
                                (g, r)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                // A thread that panicked leaves its groups None: reported below.
                if let Ok(v) = h.join() {
                    v.into_iter().for_each(|(g, r)| outs[g] = Some(r));
                }
            }
        });
        let mut writes = vec![0u64; total.div_ceil(64)];
        let mut pages: Vec<u64> =
            Vec::with_capacity(self.meta.distinct_pages.min(total as u64) as usize);
        let mut start = 0;
        for (g, out) in outs.into_iter().enumerate() {
            self.group = g;
            let out = out
                .unwrap_or_else(|| Err("decoder thread failed".into()))
                .map_err(|e| self.err(e))?;
            or_bits(&mut writes, start, &out.bits);
            for (id, page) in out.firsts {
                let next = pages.len();
                if id as usize == next {
                    pages.push(page);
                } else if id as usize > next {
                    return Err(self.err(format!(
                        "column 'id' is not in first-use order ({id} where at most {next} may come)"
                    )));
                }
            }
            start += sizes[g];
        }
        self.group = groups;
        self.left_in_group = 0;
        self.cols = None;
        if pages.len() as u64 != self.meta.distinct_pages {
            return Err(self.err(format!(
                "{} distinct ids but the metadata says {} distinct pages",
                pages.len(),
                self.meta.distinct_pages
            )));
        }
        progress(total as u64);
        Ok(DenseTrace::from_parts(
            ids,
            writes,
            pages,
            self.meta.page_size,
            self.meta.source.clone(),
        ))
    }
}

/// True if the file starts with Parquet's magic bytes.
pub fn is_native(path: &Path) -> bool {
    use std::io::Read;
    let mut m = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut m))
        .is_ok()
        && &m == b"PAR1"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Ref};

    fn roundtrip(refs: &[Ref]) -> (TraceMeta, Vec<Ref>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        for chunk in refs.chunks(777) {
            b.clear();
            chunk.iter().for_each(|r| b.push(*r));
            w.write(&b).unwrap();
        }
        let meta = w.finish().unwrap();
        assert!(is_native(&path));
        let mut r = NativeReader::open(&path).unwrap();
        assert_eq!(r.meta(), &meta);
        let mut out = Vec::new();
        while r.next_batch(&mut b, 1000).unwrap() {
            out.extend((0..b.len()).map(|i| b.get(i)));
        }
        (meta, out)
    }

    #[test]
    fn roundtrip_plain_and_with_time_and_tid() {
        let refs: Vec<Ref> = (0..5000u64)
            .map(|i| Ref {
                page: (i * 7919) % 1013 + (1 << 40),
                ..if i % 3 == 0 {
                    Ref::write(0)
                } else {
                    Ref::read(0)
                }
            })
            .collect();
        let (m, out) = roundtrip(&refs);
        assert_eq!(out, refs);
        assert_eq!((m.count, m.distinct_pages, m.writes), (5000, 1013, 1667));
        let refs: Vec<Ref> = (0..3000u64)
            .map(|i| Ref {
                page: u64::MAX - i % 10,
                op: crate::Op::Read,
                time_ns: Some(i * 1000),
                tid: Some((i % 4) as u32),
            })
            .collect();
        let (m, out) = roundtrip(&refs);
        assert!(m.has_time && m.has_tid);
        assert_eq!(out, refs);
    }

    /// The writer numbers pages as a hash map does (the `id` column read
    /// back), and refuses the first page past its limit of distinct pages,
    /// in a batch that starts below it or one that starts at it.
    #[test]
    fn ids_are_numbered_in_first_use_order_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let batch = |pages: &[u64]| {
            let mut b = RefBatch::default();
            pages.iter().for_each(|&p| b.push(Ref::read(p)));
            b
        };
        let writer = |name: &str| {
            let path = dir.path().join(name);
            let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
            w.limit = 3;
            (w, path)
        };
        let (mut w, _) = writer("a.parquet");
        w.write(&batch(&[7 << 40, 5, 7 << 40, 5])).unwrap();
        w.write(&batch(&[9, 5, 9, 7 << 40])).unwrap();
        let e = w.write(&batch(&[5, 9, 11])).unwrap_err().to_string();
        assert!(e.contains("more than 3 distinct pages"), "{e}");
        let (mut w, _) = writer("b.parquet");
        w.write(&batch(&[1, 2, 3])).unwrap();
        let e = w.write(&batch(&[3, 4])).unwrap_err().to_string();
        assert!(e.contains("more than 3 distinct pages"), "{e}");
        let (mut w, path) = writer("c.parquet");
        w.write(&batch(&[7 << 40, 5, 7 << 40, 5, 9, 5, 9, 7 << 40]))
            .unwrap();
        assert_eq!(w.finish().unwrap().distinct_pages, 3);
        let t = DenseTrace::load(&mut NativeReader::open(&path).unwrap()).unwrap();
        assert_eq!(
            (t.ids, t.pages),
            (vec![0, 1, 0, 1, 2, 1, 2, 0], vec![7 << 40, 5, 9])
        );
    }

    /// A text trace imported (`write_source`) through its parallel parser
    /// (`feed_all`, many 1 MiB chunks): the references read back are the
    /// input's, as the loader numbers them; a bad line far in is the
    /// loader's error, and no file is left behind.
    #[test]
    fn a_text_trace_imports_parsed_on_every_core() {
        use crate::import::{self, Format, ImportOptions};
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let n = 300_000u64;
        let write_txt = |name: &str, bad_at: Option<u64>| {
            let path = dir.path().join(name);
            let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
            for i in 0..n {
                let (page, op) = (
                    (i * 7919) % 50_000 + (i % 3) * (1 << 40),
                    ["r", "w"][(i % 5 == 0) as usize],
                );
                if bad_at == Some(i) {
                    writeln!(f, "0xzz {op}").unwrap();
                } else {
                    writeln!(f, "{page} {op}").unwrap();
                }
            }
            f.flush().unwrap();
            path
        };
        let open = |p: &Path| import::open(p, Format::Text, &ImportOptions::default()).unwrap();
        let good = write_txt("t.txt", None);
        let out = dir.path().join("t.parquet");
        let mut counted = 0;
        let meta = write_source(open(&good).as_mut(), &out, |k| counted += k).unwrap();
        let want = DenseTrace::load(open(&good).as_mut()).unwrap();
        assert_eq!((meta.count, counted), (n, n));
        let got = DenseTrace::load(&mut NativeReader::open(&out).unwrap()).unwrap();
        assert_eq!((&got.ids, &got.pages), (&want.ids, &want.pages));
        assert_eq!(got.write_bits(), want.write_bits());
        let bad = write_txt("bad.txt", Some(n - 10));
        let e = write_source(open(&bad).as_mut(), &dir.path().join("bad.parquet"), |_| {})
            .unwrap_err()
            .to_string();
        let want = DenseTrace::load(open(&bad).as_mut())
            .unwrap_err()
            .to_string();
        assert!(want.contains(&format!("line {}", n - 9)), "{want}");
        assert_eq!(e, want);
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["bad.txt", "t.parquet", "t.txt"]);
    }

    #[test]
    fn spans_row_groups() {
        let refs: Vec<Ref> = (0..(ROWS_PER_GROUP as u64 * 2 + 5))
            .map(|i| Ref::read(i % 100))
            .collect();
        let (m, out) = roundtrip(&refs);
        assert_eq!(m.count as usize, refs.len());
        assert_eq!(out.len(), refs.len());
        assert!(out.iter().zip(&refs).all(|(a, b)| a == b));
    }

    /// Writes `refs` to a native file and loads it dense both ways: through
    /// the `id` column (parallel, no hashing) and through batches (hashing).
    fn load_both(refs: &[Ref]) -> (DenseTrace, DenseTrace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        for chunk in refs.chunks(70_001) {
            b.clear();
            chunk.iter().for_each(|r| b.push(*r));
            w.write(&b).unwrap();
        }
        assert!(w.finish().unwrap().has_id);
        let fast = DenseTrace::load(&mut NativeReader::open(&path).unwrap()).unwrap();
        // Reading one batch first turns the fast path off.
        let mut r = NativeReader::open(&path).unwrap();
        let mut first = RefBatch::default();
        r.next_batch(&mut first, 10).unwrap();
        let mut rest = DenseTrace::load(&mut r).unwrap();
        let pre = DenseTrace::from_refs(
            &(0..first.len())
                .map(|i| (first.page[i], first.write[i]))
                .collect::<Vec<_>>(),
        );
        // Stitch: the slow path saw all but the first batch; compare pages.
        let slow_pages: Vec<(u64, bool)> = (0..pre.len())
            .map(|i| (pre.pages[pre.ids[i] as usize], pre.is_write(i)))
            .chain((0..rest.len()).map(|i| (rest.pages[rest.ids[i] as usize], rest.is_write(i))))
            .collect();
        rest = DenseTrace::from_refs(&slow_pages);
        (fast, rest)
    }

    #[test]
    fn dense_load_from_ids_equals_hashing_load() {
        // Several row groups (the last one partial), writes, big page numbers.
        let n = ROWS_PER_GROUP as u64 * 2 + 12_345;
        let refs: Vec<Ref> = (0..n)
            .map(|i| {
                let p = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 300_007 + (1 << 50);
                if i % 7 == 3 {
                    Ref::write(p)
                } else {
                    Ref::read(p)
                }
            })
            .collect();
        let (fast, slow) = load_both(&refs);
        assert_eq!(fast.ids, slow.ids);
        assert_eq!(fast.pages, slow.pages);
        assert_eq!(fast.write_bits(), slow.write_bits());
        assert_eq!(fast.len(), n as usize);
        let writes = refs.iter().filter(|r| r.op == crate::Op::Write).count();
        assert_eq!(fast.write_count(), writes as u64);
        let small: Vec<Ref> = [5u64, 9, 5, 1, 9].iter().map(|&p| Ref::write(p)).collect();
        let (fast, slow) = load_both(&small);
        assert_eq!(
            (fast.ids.clone(), fast.pages.clone()),
            (vec![0, 1, 0, 2, 1], vec![5, 9, 1])
        );
        assert_eq!((fast.write_count(), fast.ids), (5, slow.ids));
    }

    #[test]
    fn damaged_files_load_to_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        (0..20_000u64).for_each(|i| b.push(Ref::read((i * 7919) % 3001)));
        w.write(&b).unwrap();
        w.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        let mut errors = 0;
        for k in 0..300 {
            let mut d = data.clone();
            let at = 4 + (k * 7877) % (d.len() - 8);
            d[at] ^= 0x5a;
            if let Ok(mut r) = NativeReader::from_bytes(d) {
                errors += usize::from(DenseTrace::load(&mut r).is_err());
            } else {
                errors += 1;
            }
        }
        assert!(errors > 0);
    }

    #[test]
    fn bits_are_merged_at_any_offset() {
        let mut dst = vec![0u64; 3];
        or_bits(&mut dst, 0, &[0b101]);
        or_bits(&mut dst, 62, &[0b1111]); // bits 62..66
        or_bits(&mut dst, 130, &[1]);
        assert_eq!(dst, vec![0b101 | (3 << 62), 0b11, 1 << 2]);
    }

    #[test]
    fn empty_trace() {
        let (m, out) = roundtrip(&[]);
        assert_eq!((m.count, out.len()), (0, 0));
    }

    #[test]
    fn rejects_garbage_and_truncation_with_clear_errors() {
        let e = NativeReader::from_bytes(b"hello world, not parquet".to_vec())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a swaplab trace"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        (0..1000).for_each(|i| b.push(Ref::read(i)));
        w.write(&b).unwrap();
        w.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        for cut in [data.len() - 1, data.len() / 2, 8] {
            assert!(NativeReader::from_bytes(data[..cut].to_vec()).is_err());
        }
    }

    #[test]
    fn fuzz_regressions_are_errors_not_panics() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(e.unwrap().path()).unwrap();
            n += 1;
            let Ok(mut r) = NativeReader::from_bytes(data) else {
                continue;
            };
            let mut b = RefBatch::default();
            let mut res = Ok(true);
            for _ in 0..1000 {
                res = r.next_batch(&mut b, 1000);
                if !matches!(res, Ok(true)) {
                    break;
                }
            }
            assert!(res.is_err(), "a damaged file must give an error");
            assert!(matches!(r.next_batch(&mut b, 10), Ok(false) | Err(_)));
        }
        assert!(n >= 2);
    }

    #[test]
    fn groups_encoded_in_parallel_come_back_in_order() {
        // More groups than the encoders hold at a time, each with its own
        // pages (and repeats, which skip the hash), plus times and tids:
        // every reference in its place, ids in first-use order.
        let groups = MAX_IN_FLIGHT as u64 + 3;
        let n = ROWS_PER_GROUP as u64 * groups + 17;
        let refs: Vec<Ref> = (0..n)
            .map(|i| Ref {
                page: (i / ROWS_PER_GROUP as u64) * 1_000_000 + (i / 3) % 5000,
                op: if i % 7 == 0 { Op::Write } else { Op::Read },
                time_ns: Some(i * 10),
                tid: Some((i % 3) as u32),
            })
            .collect();
        let (m, out) = roundtrip(&refs);
        assert_eq!(m.count, n);
        let distinct: std::collections::HashSet<u64> = refs.iter().map(|r| r.page).collect();
        assert_eq!(m.distinct_pages, distinct.len() as u64);
        assert_eq!(m.writes, n.div_ceil(7));
        assert_eq!(out.len(), refs.len());
        assert!(out.iter().zip(&refs).all(|(a, b)| a == b));
        let (fast, slow) = load_both(&refs[..(ROWS_PER_GROUP * 6)]);
        assert_eq!(fast.ids, slow.ids);
        assert_eq!(fast.pages, slow.pages);
    }

    #[test]
    fn a_writer_dropped_with_groups_in_flight_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        (0..ROWS_PER_GROUP as u64 * 3 + 5).for_each(|i| b.push(Ref::read(i % 999)));
        w.write(&b).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn unfinished_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
        let mut b = RefBatch::default();
        b.push(Ref::read(1));
        w.write(&b).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
