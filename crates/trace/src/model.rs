//! The page-reference model: references, batches, sources and metadata.
use serde::{Deserialize, Serialize};

/// Whether a reference reads or writes its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read = 0,
    Write = 1,
}

/// One page reference. `time_ns` and `tid` are optional (absent: `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ref {
    pub page: u64,
    pub op: Op,
    pub time_ns: Option<u64>,
    pub tid: Option<u32>,
}

impl Ref {
    pub fn read(page: u64) -> Self {
        Ref {
            page,
            op: Op::Read,
            time_ns: None,
            tid: None,
        }
    }
    pub fn write(page: u64) -> Self {
        Ref {
            page,
            op: Op::Write,
            time_ns: None,
            tid: None,
        }
    }
}

/// A batch of references in columnar form: the unit every reader yields and
/// every writer takes, so that no stage needs memory proportional to the trace.
/// `time_ns` and `tid` are either empty (the trace has no such column) or as
/// long as `page`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefBatch {
    pub page: Vec<u64>,
    /// 1 for a write, 0 for a read.
    pub write: Vec<bool>,
    pub time_ns: Vec<u64>,
    pub tid: Vec<u32>,
}

impl RefBatch {
    pub fn len(&self) -> usize {
        self.page.len()
    }
    pub fn is_empty(&self) -> bool {
        self.page.is_empty()
    }
    pub fn clear(&mut self) {
        self.page.clear();
        self.write.clear();
        self.time_ns.clear();
        self.tid.clear();
    }
    pub fn push(&mut self, r: Ref) {
        self.page.push(r.page);
        self.write.push(r.op == Op::Write);
        if let Some(t) = r.time_ns {
            self.time_ns.push(t);
        }
        if let Some(t) = r.tid {
            self.tid.push(t);
        }
    }
    pub fn get(&self, i: usize) -> Ref {
        Ref {
            page: self.page[i],
            op: if self.write[i] { Op::Write } else { Op::Read },
            time_ns: self.time_ns.get(i).copied(),
            tid: self.tid.get(i).copied(),
        }
    }
    /// Checks the column-length invariant; readers call it before yielding.
    pub fn check(&self) -> crate::Result<()> {
        let n = self.page.len();
        let ok = self.write.len() == n
            && (self.time_ns.is_empty() || self.time_ns.len() == n)
            && (self.tid.is_empty() || self.tid.len() == n);
        if ok {
            Ok(())
        } else {
            Err(crate::Error::Invalid(
                "inconsistent batch: optional columns must be present for every reference or for none".into(),
            ))
        }
    }
}

/// What [`RefSource::feed_all`] gives references to: a batch of page
/// numbers, their write flags (empty when all are reads) and their times
/// in ns (empty when the source has none).
pub type RefSink<'a> = dyn FnMut(&[u64], &[bool], &[u64]) -> crate::Result<()> + Send + 'a;

/// Anything that yields references batch by batch (native reader, importers,
/// generators).
pub trait RefSource {
    /// Fills `batch` (cleared first) with up to `max` references. Returns
    /// `Ok(false)` when the source is exhausted and the batch is empty.
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> crate::Result<bool>;
    /// What produced these references (recorded in the trace's metadata).
    fn source(&self) -> Source;
    /// Page size in bytes of the page numbers this source yields.
    fn page_size(&self) -> u64 {
        4096
    }
    /// A faster way to load the whole source for simulation, if it has one
    /// (a native file with dense ids: parallel decoding, no hashing). Called
    /// by [`DenseTrace::load_with`](crate::DenseTrace::load_with) before
    /// any batch is read; `None` means "read my batches".
    fn load_dense(
        &mut self,
        _progress: &mut dyn FnMut(u64),
    ) -> Option<crate::Result<crate::DenseTrace>> {
        None
    }
    /// Gives every reference to `sink`, in input order, as batches of
    /// page numbers, write flags (empty when all are reads) and times
    /// (empty when the batches have none), if this source has a faster way
    /// than its batches: csv and txt parse on every core. `sink` runs on
    /// another thread; an error it returns stops the reading and is the
    /// one returned. `progress` receives the references given so far.
    /// Called before any batch is read; `None` means "read my batches".
    fn feed_all(
        &mut self,
        _sink: &mut RefSink<'_>,
        _progress: &mut dyn FnMut(u64),
    ) -> Option<crate::Result<()>> {
        None
    }
}

/// References held in memory, as a [`RefSource`] (writing a trace built in
/// memory with [`write_source`](crate::native::write_source), and the
/// tests).
#[derive(Debug, Clone, Default)]
pub struct VecSource {
    refs: Vec<Ref>,
    next: usize,
}

impl VecSource {
    pub fn new(refs: Vec<Ref>) -> VecSource {
        VecSource { refs, next: 0 }
    }
}

impl RefSource for VecSource {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> crate::Result<bool> {
        batch.clear();
        let end = (self.next + max).min(self.refs.len());
        for r in &self.refs[self.next..end] {
            batch.push(*r);
        }
        self.next = end;
        Ok(!batch.is_empty())
    }
    fn source(&self) -> Source {
        Source::Unknown
    }
}

/// Where a trace came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// A synthetic generator and its parameters (`swaplab gen`).
    Generated {
        generator: String,
        params: serde_json::Value,
    },
    /// An imported file (`swaplab import`).
    Imported {
        path: String,
        format: String,
        options: serde_json::Value,
    },
    /// A command whose references were captured (`swaplab trace --refs`).
    Captured {
        command: Vec<String>,
    },
    /// A built-in workload that recorded its own references (`swaplab
    /// trace --refs -- swaplab-workload ...`): every access to its main
    /// objects, runs of references to one page cut at `max_repeat`.
    Instrumented {
        command: Vec<String>,
        max_repeat: u32,
        /// The policies the cut cannot change.
        exact_for: String,
    },
    Unknown,
}

/// Metadata stored with every native trace (Parquet key `swaplab.trace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// Version of this metadata layout.
    pub format_version: u32,
    /// Page size in bytes (4096 unless the source says otherwise).
    pub page_size: u64,
    pub source: Source,
    /// Number of references.
    pub count: u64,
    /// Number of distinct pages (the footprint, in pages).
    pub distinct_pages: u64,
    pub writes: u64,
    pub has_time: bool,
    pub has_tid: bool,
    /// The file has the `id` column: each reference's page as a dense id
    /// (0, 1, 2, … in order of first reference), so that loading for
    /// simulation needs no hashing (format 2; absent in format 1 files).
    #[serde(default)]
    pub has_id: bool,
    /// swaplab version that wrote the file.
    pub writer: String,
}

pub const FORMAT_VERSION: u32 = 2;
