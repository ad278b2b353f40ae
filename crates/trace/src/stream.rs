//! A native trace read for simulation one row group at a time, so that
//! memory grows with the distinct pages, never with the trace's length.
//!
//! A native file of format 2 holds each reference's dense page id (the
//! `id` column, numbered 0, 1, 2, … in order of first reference, exactly
//! the ids [`DenseTrace::load`](crate::DenseTrace::load) gives) and its
//! distinct count in the metadata. So a streaming simulation needs no map
//! from page numbers to ids at all: it sizes the policy's per-page arrays
//! from the metadata and reads the `id` and `write` columns group by
//! group. [`DenseStream`] decodes on a thread of its own, at most
//! [`IN_FLIGHT`] groups ahead (about 5 MiB each: 4 bytes of id and one of
//! write flag per reference, plus 4 of next use for OPT), while the caller
//! simulates.
//!
//! OPT needs each reference's next use, which a forward stream cannot
//! know. [`StreamOptions::next_use`] computes it first in one backward pass
//! over the row groups (read last to first, a `u32` "last seen at" per
//! distinct page) and spills it to an unlinked file in
//! [`StreamOptions::spill_dir`], 4 bytes per reference, which the forward
//! pass reads back group by group beside the ids.
//!
//! Native files of format 1 (no `id` column) stream too: their pages are
//! numbered on first sight by the in-memory loader's own map
//! (`IdMap`: the same ids, 16–32 bytes per distinct page), but OPT's
//! backward pass needs the ids and refuses them. Other tools' formats
//! (oracleGeneral, csv, txt, …) stream through [`DenseStream::from_source`]:
//! a first pass numbers their pages and spills their ids, which the
//! stream reads back (and OPT's backward pass too).
use crate::dense::{IdMap, MAX_REFS, NEVER};
use crate::native::{NativeReader, ROWS_PER_GROUP};
use crate::{Error, RefBatch, RefSource, Result, TraceMeta};
use parquet::column::reader::ColumnReader;
use parquet::file::reader::{ChunkReader, FileReader};
use parquet::file::serialized_reader::SerializedFileReader;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Row groups decoded ahead of the simulation at most.
pub const IN_FLIGHT: usize = 2;

/// One row group's references, dense.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DenseChunk {
    /// Position of the first reference in the trace.
    pub start: u64,
    /// Dense page id of each reference.
    pub ids: Vec<u32>,
    /// Write bits, packed 64 to a word from bit 0 (bit i = reference i of the chunk).
    pub writes: Vec<u64>,
    /// Position of each reference's next use (trace positions), or
    /// [`NEVER`]; empty unless [`StreamOptions::next_use`] was set.
    pub next_use: Vec<u32>,
}

impl DenseChunk {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// What to stream besides ids and write flags.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Compute each reference's next use (OPT) in a backward pass first.
    pub next_use: bool,
    /// Where the spills go: OPT's next uses, and the ids of another
    /// format's trace ([`DenseStream::from_source`]); 4 bytes per
    /// reference each, unlinked at once, so they vanish with the process.
    /// Default: the trace's directory.
    pub spill_dir: Option<PathBuf>,
}

impl StreamOptions {
    /// Where the spills of the trace at `path` go.
    fn spill_dir_for(&self, path: &Path) -> PathBuf {
        match &self.spill_dir {
            Some(d) => d.clone(),
            None => path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        }
    }
}

/// A native trace streamed row group by row group (see the module documentation).
pub struct DenseStream {
    meta: TraceMeta,
    rx: Option<mpsc::Receiver<Result<DenseChunk>>>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// References delivered so far.
    done: u64,
}

/// Where a stream's chunks come from.
enum Feed {
    /// A native trace's `id` column.
    Ids {
        file: SerializedFileReader<File>,
        id_col: usize,
        sizes: Vec<usize>,
    },
    /// Ids and write bits the first pass of [`DenseStream::from_source`]
    /// spilled, read back chunk by chunk (`sizes`: each chunk's
    /// references; `at`: the next chunk's first reference and first word
    /// of write bits).
    Spilled {
        ids: File,
        writes: File,
        sizes: Vec<usize>,
        at: (u64, u64),
    },
    /// Pages read from a source opened on the stream's thread, numbered
    /// by `map` (`pages`: every page it numbered, in id order).
    ByPage {
        open: Box<dyn Fn() -> Result<Box<dyn RefSource>> + Send>,
        map: IdMap,
        pages: Vec<u64>,
    },
}

fn open_file(path: &Path) -> Result<SerializedFileReader<File>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    SerializedFileReader::new(f)
        .map_err(|e| Error::parse("native trace", path.display().to_string(), e.to_string()))
}

/// Decodes row group `g`'s `id` and `write` columns; ids are checked to be
/// below `distinct` (a damaged id would index past the policy's arrays).
fn decode_ids<Q: ChunkReader + 'static>(
    file: &SerializedFileReader<Q>,
    id_col: usize,
    g: usize,
    distinct: u64,
    ids: &mut Vec<u32>,
    writes: &mut Vec<u64>,
) -> std::result::Result<(), String> {
    let run = || -> std::result::Result<(), String> {
        let rg = file.get_row_group(g).map_err(|e| e.to_string())?;
        let n = rg.metadata().num_rows().max(0) as usize;
        let mut buf: Vec<i32> = Vec::with_capacity(n);
        match rg.get_column_reader(id_col).map_err(|e| e.to_string())? {
            ColumnReader::Int32ColumnReader(mut r) => {
                while buf.len() < n {
                    let (got, _, _) = r
                        .read_records(n - buf.len(), None, None, &mut buf)
                        .map_err(|e| e.to_string())?;
                    if got == 0 {
                        return Err(format!("column 'id' ended early ({} of {n})", buf.len()));
                    }
                }
            }
            _ => return Err("column 'id' is not INT32".into()),
        }
        ids.clear();
        ids.extend(buf.iter().map(|&x| x as u32));
        drop(buf);
        if let Some(&bad) = ids.iter().find(|&&id| u64::from(id) >= distinct) {
            return Err(format!(
                "column 'id' holds {bad}, but the metadata says {distinct} distinct pages"
            ));
        }
        let mut w: Vec<bool> = Vec::with_capacity(n);
        match rg.get_column_reader(1).map_err(|e| e.to_string())? {
            ColumnReader::BoolColumnReader(mut r) => {
                while w.len() < n {
                    let (got, _, _) = r
                        .read_records(n - w.len(), None, None, &mut w)
                        .map_err(|e| e.to_string())?;
                    if got == 0 {
                        return Err(format!("column 'write' ended early ({} of {n})", w.len()));
                    }
                }
            }
            _ => return Err("column 'write' is not BOOLEAN".into()),
        }
        writes.clear();
        writes.resize(n.div_ceil(64), 0);
        for (word, chunk) in writes.iter_mut().zip(w.chunks(64)) {
            for (i, &b) in chunk.iter().enumerate() {
                *word |= u64::from(b) << i;
            }
        }
        Ok(())
    };
    // The parquet crate may panic on corrupt input (it documents this).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|_| Err("corrupt column data (the Parquet decoder gave up)".into()))
}

impl DenseStream {
    /// Opens a native trace for streaming. Fails, saying what to do, for a
    /// file without the `id` column, and for OPT's next use on a trace
    /// beyond the 32-bit positions.
    pub fn open(path: &Path, opts: &StreamOptions) -> Result<Self> {
        Self::open_inner(path, opts, true)
    }

    /// `use_ids: false` numbers pages as for a format 1 file even when the
    /// file has ids (the tests compare the two ways).
    fn open_inner(path: &Path, opts: &StreamOptions, use_ids: bool) -> Result<Self> {
        let mut meta = NativeReader::open(path)?.meta().clone();
        meta.has_id &= use_ids;
        if opts.next_use && !meta.has_id {
            return Err(Error::Invalid(format!(
                "{}: an older native trace (format {}) without the dense-id column that \
                 OPT's backward pass reads; simulate OPT without --stream, or write the \
                 trace again with this swaplab (gen, import, trace --refs)",
                path.display(),
                meta.format_version,
            )));
        }
        if opts.next_use && meta.count > MAX_REFS as u64 {
            return Err(Error::Invalid(format!(
                "{}: {} references: OPT's next-use positions are 32-bit (at most {MAX_REFS} \
                 references); simulate OPT on a part of the trace",
                path.display(),
                meta.count
            )));
        }
        let file = open_file(path)?;
        let id_col = 2 + usize::from(meta.has_time) + usize::from(meta.has_tid);
        let sizes: Vec<usize> = file
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows().max(0) as usize)
            .collect();
        let name = path.display().to_string();
        let distinct = meta.distinct_pages;
        let spill = if opts.next_use {
            let dir = opts.spill_dir_for(path);
            let mut writes = Vec::new();
            Some(spill_next_use(&sizes, distinct, &dir, |g, ids| {
                decode_ids(&file, id_col, g, distinct, ids, &mut writes)
                    .map_err(|e| Error::parse("native trace", format!("{name} row group {g}"), e))
            })?)
        } else {
            None
        };
        let feed = if meta.has_id {
            Feed::Ids {
                file,
                id_col,
                sizes,
            }
        } else {
            // Format 1 (no `id` column): ids from the pages, numbered on
            // first sight by the loader's own map (the same ids).
            let path = path.to_path_buf();
            Feed::ByPage {
                open: Box::new(move || Ok(Box::new(NativeReader::open(&path)?))),
                map: IdMap::default(),
                pages: Vec::new(),
            }
        };
        Self::spawn(meta, name, ("native trace", "row group"), feed, spill)
    }

    /// Opens a trace of another format (anything [`RefSource`] reads:
    /// oracleGeneral, csv, txt, …) at `path` for streaming. A simulation
    /// sizes its per-page state before the first reference, so a first
    /// pass counts the references and numbers the distinct pages (the
    /// in-memory loader's map, `IdMap`: 16–32 bytes per distinct page,
    /// plus 8 for the page itself) and spills each reference's id and
    /// write bit to unlinked files in [`StreamOptions::spill_dir`] (4
    /// bytes and one bit per reference: less than any of these formats
    /// takes per reference, compressed or not). The map is dropped before
    /// the stream starts, and the second pass, on the stream's thread,
    /// reads the ids back while the caller simulates: memory grows with
    /// the distinct pages, never with the references, and the file is
    /// read and decoded once. OPT's backward pass reads the same spill.
    ///
    /// Where the spill cannot be made or written (no such directory, no
    /// room) and OPT is not asked for, the stream keeps the map and the
    /// second pass decodes the source again (`open` is then called
    /// twice): slower, never a failure. A source that changes between
    /// the two passes is then an error. With OPT a spill that fails is
    /// the error. `progress` receives the references the first pass has
    /// counted.
    ///
    /// The first pass decodes on a thread of its own (`read_ahead`; csv
    /// and txt parse on every core).
    /// Measured (docs/scale.md: release build, 50 M Zipf references over
    /// 4.4 M distinct pages, `swaplab sim FILE --policy lru,clock --mem
    /// 10% --stream`): when the second pass decoded and numbered the file
    /// again, its oracleGeneral `.bin` streamed in 2.38–2.74 s and its
    /// `.zst` in 4.03–4.11 s; spilled and decoded ahead, 1.81–1.91 s and
    /// 2.19–2.28 s.
    pub fn from_source<F>(
        path: &Path,
        open: F,
        opts: &StreamOptions,
        progress: &dyn Fn(u64),
    ) -> Result<Self>
    where
        F: Fn() -> Result<Box<dyn RefSource>> + Send + 'static,
    {
        let name = path.display().to_string();
        let dir = opts.spill_dir_for(path);
        let spill = match (spill_file(&dir, "ids"), spill_file(&dir, "writes")) {
            (Ok(ids), Ok(writes)) => Some((ids, writes)),
            (Err(e), _) | (_, Err(e)) if opts.next_use => return Err(e),
            _ => None,
        };
        let mut first = FirstPass {
            map: IdMap::default(),
            pages: Vec::new(),
            ids: Vec::new(),
            buf: Vec::new(),
            spill,
            sizes: Vec::new(),
            count: 0,
            writes: 0,
            words_out: 0,
            next_use: opts.next_use,
            dir: dir.clone(),
            name: name.clone(),
        };
        let (open, page_size, source) = read_ahead(open, &mut |b| {
            first.push(&b.page, &b.write)?;
            progress(first.count);
            Ok(())
        })?;
        let FirstPass {
            map,
            pages,
            spill,
            sizes,
            count,
            writes,
            ..
        } = first;
        let meta = TraceMeta {
            format_version: crate::model::FORMAT_VERSION,
            page_size,
            source,
            count,
            distinct_pages: pages.len() as u64,
            writes,
            has_time: false,
            has_tid: false,
            has_id: false,
            writer: format!("swaplab {}", env!("CARGO_PKG_VERSION")),
        };
        let Some((id_file, write_file)) = spill else {
            let feed = Feed::ByPage {
                open: Box::new(open),
                map,
                pages,
            };
            return Self::spawn(meta, name, ("trace", "chunk"), feed, None);
        };
        drop((map, pages));
        let mut starts = Vec::with_capacity(sizes.len());
        let mut at = 0u64;
        for &n in &sizes {
            starts.push(at);
            at += n as u64;
        }
        let next_use = if opts.next_use {
            Some(spill_next_use(
                &sizes,
                meta.distinct_pages,
                &dir,
                |g, ids| read_spilled_ids(&id_file, "ids", starts[g], sizes[g], ids),
            )?)
        } else {
            None
        };
        let feed = Feed::Spilled {
            ids: id_file,
            writes: write_file,
            sizes,
            at: (0, 0),
        };
        Self::spawn(meta, name, ("trace", "chunk"), feed, next_use)
    }

    /// Starts the thread that decodes `feed` at most [`IN_FLIGHT`] groups
    /// ahead, checking what the metadata promised: `count` references in
    /// all, ids in first-use order and `distinct_pages` of them. Errors
    /// name the file as `what.0` and a group as `what.1`.
    fn spawn(
        meta: TraceMeta,
        name: String,
        (what, unit): (&'static str, &'static str),
        feed: Feed,
        spill: Option<File>,
    ) -> Result<Self> {
        let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
        let count = meta.count;
        let distinct = meta.distinct_pages;
        let worker = std::thread::Builder::new()
            .name("swaplab-stream".into())
            .spawn(move || {
                let mut feed = feed;
                let mut source: Option<Box<dyn RefSource>> = None;
                let mut b = RefBatch::default();
                let mut start = 0u64;
                let mut max_id: i64 = -1;
                let mut g = 0usize;
                while start < count {
                    let mut c = DenseChunk {
                        start,
                        ..DenseChunk::default()
                    };
                    let err = |e: String| Error::parse(what, format!("{name} {unit} {g}"), e);
                    let mut r = match &mut feed {
                        Feed::Ids {
                            file,
                            id_col,
                            sizes,
                        } => {
                            let n = sizes.get(g).copied().unwrap_or(0);
                            let mut r = decode_ids(file, *id_col, g, distinct, &mut c.ids, &mut c.writes)
                                .map_err(err);
                            if r.is_ok() && (c.ids.len() != n || n == 0) {
                                r = Err(err("row count changed while reading".into()));
                            }
                            r
                        }
                        Feed::Spilled {
                            ids,
                            writes,
                            sizes,
                            at,
                        } => {
                            let n = sizes.get(g).copied().unwrap_or(0);
                            let words = n.div_ceil(64);
                            let r = read_spilled_ids(ids, "ids", at.0, n, &mut c.ids).and_then(
                                |()| {
                                    read_spilled(writes, "write-bits", at.1, words, &mut c.writes, u64::from_le_bytes)
                                },
                            );
                            *at = (at.0 + n as u64, at.1 + words as u64);
                            r
                        }
                        Feed::ByPage { open, map, pages } => {
                            let src = match source.as_mut() {
                                Some(s) => Ok(s),
                                None => open().map(|s| source.insert(s)),
                            };
                            match src.and_then(|s| s.next_batch(&mut b, ROWS_PER_GROUP)) {
                                Ok(true) => {
                                    map.map_batch(&b.page, &mut c.ids, pages);
                                    c.writes.resize(b.len().div_ceil(64), 0);
                                    for (word, chunk) in c.writes.iter_mut().zip(b.write.chunks(64)) {
                                        for (i, &w) in chunk.iter().enumerate() {
                                            *word |= u64::from(w) << i;
                                        }
                                    }
                                    if pages.len() as u64 > distinct {
                                        Err(err(format!(
                                            "more distinct pages than the {distinct} counted before \
                                             (did the file change while it was read?)"
                                        )))
                                    } else {
                                        Ok(())
                                    }
                                }
                                Ok(false) => Err(err(format!(
                                    "the trace ended early ({start} of {count} references; \
                                     did the file change while it was read?)"
                                ))),
                                Err(e) => Err(e),
                            }
                        }
                    };
                    let n = c.ids.len();
                    if r.is_ok() && start + n as u64 > count {
                        r = Err(err(format!(
                            "more than the {count} references counted before \
                             (did the file change while it was read?)"
                        )));
                    }
                    // Ids come in first-use order: each new id is one more
                    // than the largest so far (what the in-memory loader checks too).
                    if r.is_ok() {
                        for &id in &c.ids {
                            if i64::from(id) > max_id {
                                if i64::from(id) != max_id + 1 {
                                    r = Err(err(format!(
                                        "column 'id' is not in first-use order ({id} where at most {} may come)",
                                        max_id + 1
                                    )));
                                    break;
                                }
                                max_id += 1;
                            }
                        }
                    }
                    if r.is_ok() {
                        if let Some(f) = &spill {
                            r = read_spilled_ids(f, "next-use", start, n, &mut c.next_use);
                        }
                    }
                    let failed = r.is_err();
                    if tx.send(r.map(|()| c)).is_err() || failed {
                        return; // the reader is gone, or this was the error
                    }
                    start += n as u64;
                    g += 1;
                }
                if (max_id + 1) as u64 != distinct {
                    let _ = tx.send(Err(Error::parse(
                        what,
                        name.clone(),
                        format!(
                            "{} distinct pages but the metadata says {distinct}",
                            max_id + 1
                        ),
                    )));
                }
            })
            .map_err(|e| Error::Invalid(format!("cannot start the trace reader thread: {e}")))?;
        Ok(DenseStream {
            meta,
            rx: Some(rx),
            worker: Some(worker),
            done: 0,
        })
    }

    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// Number of distinct pages (ids are below it).
    pub fn distinct(&self) -> u64 {
        self.meta.distinct_pages
    }

    /// The next row group, or `None` at the end of the trace.
    pub fn next_chunk(&mut self) -> Result<Option<DenseChunk>> {
        let Some(rx) = &self.rx else { return Ok(None) };
        match rx.recv() {
            Ok(Ok(c)) => {
                self.done += c.len() as u64;
                Ok(Some(c))
            }
            Ok(Err(e)) => {
                self.rx = None;
                Err(e)
            }
            Err(_) => {
                self.rx = None;
                if self.done != self.meta.count {
                    return Err(Error::Invalid(format!(
                        "the trace reader stopped after {} of {} references",
                        self.done, self.meta.count
                    )));
                }
                Ok(None)
            }
        }
    }
}

impl Drop for DenseStream {
    fn drop(&mut self) {
        // Dropping the receiver makes the worker's next send fail, so it ends.
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The first pass of [`DenseStream::from_source`]: the pages numbered,
/// the references counted, and each reference's id and write bit spilled.
struct FirstPass {
    map: IdMap,
    /// Every page `map` numbered, in id order.
    pages: Vec<u64>,
    /// One batch's ids, reused.
    ids: Vec<u32>,
    /// One batch's spilled bytes, reused.
    buf: Vec<u8>,
    /// The ids and write-bits spills, while they can be written.
    spill: Option<(File, File)>,
    /// Each batch's references.
    sizes: Vec<usize>,
    count: u64,
    writes: u64,
    /// Words of write bits spilled.
    words_out: u64,
    /// OPT asked for: a spill that fails is an error.
    next_use: bool,
    dir: PathBuf,
    name: String,
}

impl FirstPass {
    /// Numbers and spills one batch of pages and their write flags (empty
    /// when all are reads).
    fn push(&mut self, pages: &[u64], writes: &[bool]) -> Result<()> {
        let (name, n) = (&self.name, pages.len());
        self.ids.clear();
        self.map.map_batch(pages, &mut self.ids, &mut self.pages);
        if self.next_use && self.count + n as u64 > MAX_REFS as u64 {
            return Err(Error::Invalid(format!(
                "{name}: more than {MAX_REFS} references: OPT's next-use positions \
                 are 32-bit; simulate OPT on a part of the trace"
            )));
        }
        if let Some((id_file, write_file)) = &self.spill {
            let buf = &mut self.buf;
            buf.clear();
            buf.extend(self.ids.iter().flat_map(|id| id.to_le_bytes()));
            let mut wrote = id_file.write_all_at(buf, self.count * 4);
            let words = n.div_ceil(64);
            if wrote.is_ok() {
                buf.clear();
                for k in 0..words {
                    let chunk = writes.get(k * 64..writes.len().min(k * 64 + 64));
                    let word = chunk.unwrap_or(&[]).iter().enumerate();
                    let word = word.fold(0u64, |acc, (i, &w)| acc | u64::from(w) << i);
                    buf.extend(word.to_le_bytes());
                }
                wrote = write_file.write_all_at(buf, self.words_out * 8);
            }
            self.words_out += words as u64;
            if let Err(e) = wrote {
                if self.next_use {
                    return Err(spill_full("ids", &self.dir, self.count, e));
                }
                self.spill = None; // the second pass decodes the source again
            }
        }
        self.sizes.push(n);
        self.count += n as u64;
        self.writes += writes.iter().filter(|&&w| w).count() as u64;
        if self.pages.len() as u64 > u64::from(u32::MAX) {
            return Err(Error::Invalid(format!(
                "{name}: more than {} distinct pages: the simulator's page ids are 32-bit",
                u32::MAX
            )));
        }
        Ok(())
    }
}

/// Reads every batch of the source `open` opens, on a thread of its own
/// and at most two batches ahead of `each`, which runs on this thread:
/// the decoding (reading, decompressing, parsing) overlaps the mapping.
/// A source that parses on every core (csv, txt: [`RefSource::feed_all`])
/// does so, its batches handed over in input order. Gives back `open`
/// (for a second pass) with the source's page size and origin. The first
/// error wins: `each`'s, which stops the reading, or the source's, after
/// `each` has had every batch before it.
fn read_ahead<F>(
    open: F,
    each: &mut dyn FnMut(&RefBatch) -> Result<()>,
) -> Result<(F, u64, crate::Source)>
where
    F: Fn() -> Result<Box<dyn RefSource>> + Send,
{
    let (tx, rx) = mpsc::sync_channel::<RefBatch>(2);
    // Batches handed back for reuse; bounded, since a source that parses
    // on every core makes its own and never takes them back.
    let (back, spare) = mpsc::sync_channel::<RefBatch>(4);
    std::thread::scope(|s| {
        let reader = std::thread::Builder::new()
            .name("swaplab-read".into())
            .spawn_scoped(s, move || {
                // `each` failed when the batches' receiver is gone: its
                // error is the one, and this side's is dropped.
                let run = || -> Result<Option<(u64, crate::Source)>> {
                    let mut src = open()?;
                    // A simulation needs no times.
                    let mut hand_over = |pages: &[u64], writes: &[bool], _: &[u64]| {
                        let mut b = RefBatch::default();
                        b.page.extend_from_slice(pages);
                        b.write.extend_from_slice(writes);
                        b.write.resize(pages.len(), false);
                        tx.send(b)
                            .map_err(|_| Error::Invalid("the stream stopped".into()))
                    };
                    let fed = src.feed_all(&mut hand_over, &mut |_| {});
                    match fed {
                        Some(Ok(())) => return Ok(Some((src.page_size(), src.source()))),
                        Some(Err(e)) => return Err(e),
                        None => {}
                    }
                    loop {
                        let mut b = spare.try_recv().unwrap_or_default();
                        if !src.next_batch(&mut b, ROWS_PER_GROUP)? {
                            return Ok(Some((src.page_size(), src.source())));
                        }
                        if tx.send(b).is_err() {
                            return Ok(None);
                        }
                    }
                };
                let r = run();
                (open, r)
            })
            .map_err(|e| Error::Invalid(format!("cannot start the trace reader thread: {e}")))?;
        let mut done = Ok(());
        for b in rx.iter() {
            done = each(&b);
            if done.is_err() {
                break;
            }
            let _ = back.try_send(b);
        }
        drop(rx);
        let (open, read) = reader
            .join()
            .map_err(|_| Error::Invalid("the trace reader thread panicked".into()))?;
        done?;
        match read? {
            Some((page_size, source)) => Ok((open, page_size, source)),
            None => Err(Error::Invalid("the trace reader stopped early".into())),
        }
    })
}

/// Reads back `n` little-endian words of `W` bytes spilled at word
/// `start` of `f` into `out` (cleared first); `what` names the spill.
fn read_spilled<const W: usize, T>(
    f: &File,
    what: &str,
    start: u64,
    n: usize,
    out: &mut Vec<T>,
    from: impl Fn([u8; W]) -> T,
) -> Result<()> {
    let mut bytes = vec![0u8; n * W];
    f.read_exact_at(&mut bytes, start * W as u64)
        .map_err(|e| Error::Invalid(format!("reading back the {what} spill: {e}")))?;
    out.clear();
    out.extend(
        bytes
            .chunks_exact(W)
            .map(|b| from(b.try_into().expect("W bytes"))),
    );
    Ok(())
}

/// Reads back `n` ids (or next uses) spilled at reference `start`.
fn read_spilled_ids(f: &File, what: &str, start: u64, n: usize, ids: &mut Vec<u32>) -> Result<()> {
    read_spilled(f, what, start, n, ids, u32::from_le_bytes)
}

/// An unlinked file for a spill in `dir` (`what`: its name, and what the
/// error says), open for reading and writing. Unlinked at once: the space
/// is freed when the file is closed, even if the process is killed.
fn spill_file(dir: &Path, what: &str) -> Result<File> {
    let path = dir.join(format!(
        ".swaplab-{}-{}.tmp",
        what.replace(' ', "-"),
        std::process::id()
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            Error::Invalid(format!(
                "cannot create OPT's {what} spill {} ({e}): give a writable directory \
                 with room for 4 bytes per reference (--spill-dir)",
                path.display()
            ))
        })?;
    let _ = std::fs::remove_file(&path);
    Ok(f)
}

/// The error of a spill that could not be written.
fn spill_full(what: &str, dir: &Path, refs: u64, e: std::io::Error) -> Error {
    Error::Invalid(format!(
        "writing OPT's {what} spill in {} failed ({e}): it needs 4 bytes per \
         reference ({} MB here); give a directory with room (--spill-dir)",
        dir.display(),
        refs * 4 / 1_000_000
    ))
}

/// The backward pass: every reference's next use, written to an unlinked
/// file in `dir` at its position (4 bytes each).
/// `decode(g, ids)` gives chunk `g`'s ids (`sizes[g]` of them); chunks
/// are asked for last to first. Memory: one `u32` per distinct page plus
/// one chunk.
fn spill_next_use(
    sizes: &[usize],
    distinct: u64,
    dir: &Path,
    mut decode: impl FnMut(usize, &mut Vec<u32>) -> Result<()>,
) -> Result<File> {
    let f = spill_file(dir, "next-use")?;
    let mut last = vec![NEVER; distinct as usize];
    let mut starts = Vec::with_capacity(sizes.len());
    let mut s = 0u64;
    for &n in sizes {
        starts.push(s);
        s += n as u64;
    }
    let (mut ids, mut bytes) = (Vec::new(), Vec::new());
    for g in (0..sizes.len()).rev() {
        decode(g, &mut ids)?;
        bytes.clear();
        bytes.resize(ids.len() * 4, 0);
        for (i, &id) in ids.iter().enumerate().rev() {
            let pos = starts[g] + i as u64;
            let nu = last[id as usize];
            last[id as usize] = pos as u32;
            bytes[i * 4..i * 4 + 4].copy_from_slice(&nu.to_le_bytes());
        }
        f.write_all_at(&bytes, starts[g] * 4)
            .map_err(|e| spill_full("next-use", dir, s, e))?;
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::write_source;
    use crate::{DenseTrace, Ref, VecSource};

    fn refs(n: usize, pages: u64, seed: u64) -> Vec<Ref> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                // A hot set, a cold tail, and a scan, so ids recur across groups.
                let p = match i % 3 {
                    0 => rng.random_range(0..pages / 10 + 1),
                    1 => rng.random_range(0..pages),
                    _ => (i as u64 / 3) % pages,
                };
                if rng.random_bool(0.3) {
                    Ref::write(p * 7 + 1000)
                } else {
                    Ref::read(p * 7 + 1000)
                }
            })
            .collect()
    }

    fn write(dir: &Path, refs: &[Ref]) -> PathBuf {
        let p = dir.join("t.parquet");
        write_source(&mut VecSource::new(refs.to_vec()), &p, |_| {}).unwrap();
        p
    }

    /// The stream gives the in-memory loader's ids and write flags, and
    /// the next use that `DenseTrace::next_use` computes, across row groups.
    #[test]
    fn streams_the_loaders_ids_writes_and_next_use_across_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let r = refs(ROWS_PER_GROUP * 2 + 12_345, 300_000, 1);
        let p = write(dir.path(), &r);
        let t = DenseTrace::load(&mut NativeReader::open(&p).unwrap()).unwrap();
        let want_nu = t.next_use();
        let opts = StreamOptions {
            next_use: true,
            spill_dir: Some(dir.path().to_path_buf()),
        };
        let mut s = DenseStream::open(&p, &opts).unwrap();
        assert_eq!(s.distinct(), t.distinct() as u64);
        let mut by_page = DenseStream::open_inner(&p, &StreamOptions::default(), false).unwrap();
        let mut at = 0usize;
        let mut chunks = 0;
        while let Some(c) = s.next_chunk().unwrap() {
            assert_eq!(c.start, at as u64);
            assert_eq!(c.ids, t.ids[at..at + c.len()]);
            assert_eq!(c.next_use, want_nu[at..at + c.len()]);
            let b = by_page.next_chunk().unwrap().unwrap();
            assert_eq!((b.start, &b.ids, &b.writes), (c.start, &c.ids, &c.writes));
            assert!(b.next_use.is_empty());
            for i in 0..c.len() {
                let w = (c.writes[i / 64] >> (i % 64)) & 1 == 1;
                assert_eq!(w, t.is_write(at + i), "write flag of reference {}", at + i);
            }
            at += c.len();
            chunks += 1;
        }
        assert_eq!(at, r.len());
        assert_eq!(chunks, 3);
        assert!(s.next_chunk().unwrap().is_none());
        assert!(by_page.next_chunk().unwrap().is_none());
        let e = DenseStream::open_inner(&p, &opts, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("OPT") && e.contains("without --stream"), "{e}");
        // The spill was unlinked: nothing is left in the directory.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("t.parquet")]);
    }

    /// Another format's references (any `RefSource`) stream with the
    /// in-memory loader's ids and write flags, across row groups; the
    /// metadata counts them; OPT's next use is the loader's. The source is
    /// read once, its ids spilled, and the spills are unlinked at once;
    /// without a directory for the spill (and without OPT) it is read
    /// twice, to the same ids, and a source that changes between the two
    /// passes is an error, never an id past the counted pages.
    #[test]
    fn a_source_of_another_format_streams_the_loaders_ids_in_two_passes() {
        let r = refs(ROWS_PER_GROUP * 2 + 777, 200_000, 3);
        let t = DenseTrace::load(&mut VecSource::new(r.clone())).unwrap();
        let want_nu = t.next_use();
        let dir = tempfile::tempdir().unwrap();
        let nowhere = dir.path().join("no-such-directory");
        for (next_use, spill_dir, reads) in [
            (true, dir.path(), 1),
            (false, dir.path(), 1),
            (false, nowhere.as_path(), 2),
        ] {
            let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (rr, o) = (r.clone(), opened.clone());
            let counted = std::cell::Cell::new(0u64);
            let opts = StreamOptions {
                next_use,
                spill_dir: Some(spill_dir.to_path_buf()),
            };
            let mut s = DenseStream::from_source(
                Path::new("refs"),
                move || {
                    o.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Box::new(VecSource::new(rr.clone())) as Box<dyn RefSource>)
                },
                &opts,
                &|n| counted.set(n),
            )
            .unwrap();
            assert_eq!(counted.get(), r.len() as u64);
            let m = s.meta().clone();
            assert_eq!(
                (m.count, m.distinct_pages, m.writes),
                (
                    r.len() as u64,
                    t.distinct() as u64,
                    r.iter().filter(|x| x.op == crate::Op::Write).count() as u64
                )
            );
            let (mut at, mut chunks) = (0usize, 0);
            while let Some(c) = s.next_chunk().unwrap() {
                assert_eq!(c.start, at as u64);
                assert_eq!(c.ids, t.ids[at..at + c.len()]);
                if next_use {
                    assert_eq!(c.next_use, want_nu[at..at + c.len()]);
                } else {
                    assert!(c.next_use.is_empty());
                }
                for i in 0..c.len() {
                    let w = (c.writes[i / 64] >> (i % 64)) & 1 == 1;
                    assert_eq!(w, t.is_write(at + i), "write flag of reference {}", at + i);
                }
                at += c.len();
                chunks += 1;
            }
            assert_eq!((at, chunks), (r.len(), 3));
            let opened = opened.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(opened, reads, "next use {next_use}, spill in {spill_dir:?}");
            // The spills (ids, write bits, next use) were unlinked at once.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        // OPT needs the spill: without a place for it, a clear error.
        let e = DenseStream::from_source(
            Path::new("refs"),
            || Ok(Box::new(VecSource::new(Vec::new())) as Box<dyn RefSource>),
            &StreamOptions {
                next_use: true,
                spill_dir: Some(nowhere.clone()),
            },
            &|_| {},
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("--spill-dir"), "{e}");
        // The second read differs from the first: a page never counted,
        // one more reference, or one fewer.
        let changed = |second: Vec<Ref>| {
            let (first, n) = (r.clone(), std::sync::atomic::AtomicUsize::new(0));
            let mut s = DenseStream::from_source(
                Path::new("refs"),
                move || {
                    let v = if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                        first.clone()
                    } else {
                        second.clone()
                    };
                    Ok(Box::new(VecSource::new(v)) as Box<dyn RefSource>)
                },
                &StreamOptions {
                    next_use: false,
                    spill_dir: Some(nowhere.clone()),
                },
                &|_| {},
            )
            .unwrap();
            loop {
                match s.next_chunk() {
                    Ok(Some(c)) => assert!(c.ids.iter().all(|&id| u64::from(id) < s.distinct())),
                    Ok(None) => panic!("a changed source streamed to its end"),
                    Err(e) => return e.to_string(),
                }
            }
        };
        let mut new_page = r.clone();
        new_page[ROWS_PER_GROUP + 5] = Ref::read(u64::MAX / 2);
        let mut longer = r.clone();
        longer.push(r[0]);
        let shorter = r[..r.len() - 1].to_vec();
        for (second, want) in [
            (new_page, "more distinct pages than the"),
            (longer, "more than the"),
            (shorter, "ended early"),
        ] {
            let e = changed(second);
            assert!(e.contains(want) && e.contains("did the file change"), "{e}");
        }
    }

    /// A text trace streams through its parallel parser (`feed_all`),
    /// over many 1 MiB chunks: the loader's ids and write flags, with the
    /// spill and without it; a bad line far in is the loader's error, on
    /// the same line.
    #[test]
    fn a_text_trace_streams_parsed_on_every_core() {
        use crate::import::{self, Format, ImportOptions};
        use std::io::Write;
        let r = refs(ROWS_PER_GROUP + 300_000, 150_000, 5);
        let dir = tempfile::tempdir().unwrap();
        let write_txt = |name: &str, bad_at: Option<usize>| {
            let path = dir.path().join(name);
            let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
            for (i, x) in r.iter().enumerate() {
                let op = if x.op == crate::Op::Write { "w" } else { "r" };
                if bad_at == Some(i) {
                    writeln!(f, "0xzz {op}").unwrap();
                } else {
                    writeln!(f, "{} {op}", x.page).unwrap();
                }
            }
            f.flush().unwrap();
            path
        };
        let open =
            |path: PathBuf| move || import::open(&path, Format::Text, &ImportOptions::default());
        let good = write_txt("t.txt", None);
        let t = DenseTrace::load(open(good.clone())().unwrap().as_mut()).unwrap();
        let spills = dir.path().join("spills");
        std::fs::create_dir(&spills).unwrap();
        for spill_dir in [spills.clone(), dir.path().join("nowhere")] {
            let opts = StreamOptions {
                next_use: false,
                spill_dir: Some(spill_dir),
            };
            let mut s =
                DenseStream::from_source(&good, open(good.clone()), &opts, &|_| {}).unwrap();
            assert_eq!(s.distinct(), t.distinct() as u64);
            let mut at = 0;
            while let Some(c) = s.next_chunk().unwrap() {
                assert_eq!(c.ids, t.ids[at..at + c.len()]);
                for i in 0..c.len() {
                    let w = (c.writes[i / 64] >> (i % 64)) & 1 == 1;
                    assert_eq!(w, t.is_write(at + i), "reference {}", at + i);
                }
                at += c.len();
            }
            assert_eq!(at, r.len());
        }
        let bad = write_txt("bad.txt", Some(r.len() - 1000));
        let want = DenseTrace::load(open(bad.clone())().unwrap().as_mut())
            .unwrap_err()
            .to_string();
        let opts = StreamOptions {
            next_use: false,
            spill_dir: Some(spills),
        };
        let got = DenseStream::from_source(&bad, open(bad.clone()), &opts, &|_| {})
            .err()
            .unwrap()
            .to_string();
        assert!(want.contains(&format!("line {}", r.len() - 999)), "{want}");
        assert_eq!(got, want);
    }

    #[test]
    fn a_stream_dropped_early_stops_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), &refs(ROWS_PER_GROUP * 4, 1000, 2));
        let mut s = DenseStream::open(&p, &StreamOptions::default()).unwrap();
        assert_eq!(s.next_chunk().unwrap().unwrap().len(), ROWS_PER_GROUP);
        drop(s); // joins the worker: this test would hang if it did not stop
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.parquet");
        std::fs::write(&p, b"PAR1 not really").unwrap();
        let e = DenseStream::open(&p, &StreamOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a swaplab trace"), "{e}");
    }
}
