//! The native trace format: one Parquet file (zstd-compressed), written and
//! read streaming with bounded memory. See docs/formats.md.
//!
//! Columns (each present for every row or absent from the file):
//!
//! | column    | Parquet type                 | encoding              | meaning |
//! |-----------|------------------------------|-----------------------|---------|
//! | `page`    | INT64 (UINT_64)              | DELTA_BINARY_PACKED   | page number (address / page size) |
//! | `write`   | BOOLEAN                      | RLE                   | true for a write, false for a read |
//! | `time_ns` | INT64 (UINT_64), optional    | DELTA_BINARY_PACKED   | time of the reference, ns |
//! | `tid`     | INT32 (UINT_32), optional    | dictionary            | thread id |
//!
//! The footer's key-value metadata holds `swaplab.trace`, the JSON
//! [`TraceMeta`]. Row groups hold [`ROWS_PER_GROUP`] references, so a reader
//! or writer holds at most one row group's worth of one column at a time
//! (about 8 MiB) whatever the trace length. The writer counts distinct pages
//! for the metadata with a hash set: memory proportional to the footprint,
//! not to the length.
use crate::model::FORMAT_VERSION;
use crate::{Error, RefBatch, RefSource, Result, Source, TraceMeta};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{BoolType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::reader::{ChunkReader, FileReader};
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;
use rustc_hash::FxHashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// References per Parquet row group.
pub const ROWS_PER_GROUP: usize = 1 << 20;
/// Footer key of the JSON metadata.
pub const META_KEY: &str = "swaplab.trace";

fn pq(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::parse("native trace", path.display().to_string(), e.to_string())
}

/// Streaming writer of a native trace. Writes to a temporary file beside
/// the target and renames it on [`finish`](Self::finish), so a killed write
/// never leaves a half file under the real name.
pub struct NativeWriter {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<SerializedFileWriter<File>>,
    pending: RefBatch,
    has_time: Option<bool>,
    has_tid: Option<bool>,
    distinct: FxHashSet<u64>,
    count: u64,
    writes: u64,
    page_size: u64,
    source: Source,
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
            pending: RefBatch::default(),
            has_time: None,
            has_tid: None,
            distinct: FxHashSet::default(),
            count: 0,
            writes: 0,
            page_size,
            source,
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
        schema.push_str(" }");
        let schema = Arc::new(parse_message_type(&schema).map_err(|e| pq(&self.path, e))?);
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("valid level"),
            ))
            .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled(ColumnPath::from("tid"), true)
            .set_column_encoding(ColumnPath::from("page"), Encoding::DELTA_BINARY_PACKED)
            .set_column_encoding(ColumnPath::from("time_ns"), Encoding::DELTA_BINARY_PACKED)
            .set_column_encoding(ColumnPath::from("write"), Encoding::RLE)
            .build();
        let file = File::create(&self.tmp).map_err(|e| Error::io(&self.tmp, e))?;
        self.writer = Some(
            SerializedFileWriter::new(file, schema, Arc::new(props))
                .map_err(|e| pq(&self.path, e))?,
        );
        self.has_time = Some(has_time);
        self.has_tid = Some(has_tid);
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
        for &p in &b.page {
            self.distinct.insert(p);
        }
        self.count += b.len() as u64;
        self.writes += b.write.iter().filter(|&&w| w).count() as u64;
        self.pending.page.extend_from_slice(&b.page);
        self.pending.write.extend_from_slice(&b.write);
        self.pending.time_ns.extend_from_slice(&b.time_ns);
        self.pending.tid.extend_from_slice(&b.tid);
        if self.pending.len() >= ROWS_PER_GROUP {
            self.flush_group()?;
        }
        Ok(())
    }

    fn flush_group(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let w = self.writer.as_mut().expect("opened on first batch");
        let mut rg = w.next_row_group().map_err(|e| pq(&path, e))?;
        let p = &self.pending;
        let page: Vec<i64> = p.page.iter().map(|&x| x as i64).collect();
        let mut col = rg
            .next_column()
            .map_err(|e| pq(&path, e))?
            .expect("page column");
        col.typed::<Int64Type>()
            .write_batch(&page, None, None)
            .map_err(|e| pq(&path, e))?;
        col.close().map_err(|e| pq(&path, e))?;
        let mut col = rg
            .next_column()
            .map_err(|e| pq(&path, e))?
            .expect("write column");
        col.typed::<BoolType>()
            .write_batch(&p.write, None, None)
            .map_err(|e| pq(&path, e))?;
        col.close().map_err(|e| pq(&path, e))?;
        if !p.time_ns.is_empty() {
            let t: Vec<i64> = p.time_ns.iter().map(|&x| x as i64).collect();
            let mut col = rg
                .next_column()
                .map_err(|e| pq(&path, e))?
                .expect("time column");
            col.typed::<Int64Type>()
                .write_batch(&t, None, None)
                .map_err(|e| pq(&path, e))?;
            col.close().map_err(|e| pq(&path, e))?;
        }
        if !p.tid.is_empty() {
            let t: Vec<i32> = p.tid.iter().map(|&x| x as i32).collect();
            let mut col = rg
                .next_column()
                .map_err(|e| pq(&path, e))?
                .expect("tid column");
            col.typed::<Int32Type>()
                .write_batch(&t, None, None)
                .map_err(|e| pq(&path, e))?;
            col.close().map_err(|e| pq(&path, e))?;
        }
        rg.close().map_err(|e| pq(&path, e))?;
        self.pending.clear();
        Ok(())
    }

    /// Writes the footer with the metadata and moves the file into place.
    pub fn finish(mut self) -> Result<TraceMeta> {
        if self.writer.is_none() {
            self.open(false, false)?;
        }
        self.flush_group()?;
        let meta = TraceMeta {
            format_version: FORMAT_VERSION,
            page_size: self.page_size,
            source: self.source.clone(),
            count: self.count,
            distinct_pages: self.distinct.len() as u64,
            writes: self.writes,
            has_time: self.has_time == Some(true),
            has_tid: self.has_tid == Some(true),
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

/// Copies a whole source into a native file; `progress(n)` after each batch.
pub fn write_source(
    src: &mut dyn RefSource,
    path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<TraceMeta> {
    let mut w = NativeWriter::create(path, src.page_size(), src.source())?;
    let mut b = RefBatch::default();
    while src.next_batch(&mut b, 1 << 16)? {
        w.write(&b)?;
        progress(b.len() as u64);
    }
    w.finish()
}

/// Streaming reader of a native trace: one row group's column chunks at a time.
pub struct NativeReader<R: ChunkReader + 'static = File> {
    file: SerializedFileReader<R>,
    meta: TraceMeta,
    name: String,
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
        Self::new(f, path.display().to_string())
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
    use crate::Ref;

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
