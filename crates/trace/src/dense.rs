//! A trace loaded for simulation: pages renumbered densely (0..distinct in
//! order of first reference) so that simulators index flat arrays instead of
//! hashing. 4 bytes per reference plus one bit for the op, and 8 bytes per
//! distinct page for the reverse map.
use crate::{Error, RefBatch, RefSource, Result, Source};
use rustc_hash::FxHashMap;

#[derive(Debug, Clone)]
pub struct DenseTrace {
    /// Dense page id of each reference.
    pub ids: Vec<u32>,
    /// Write bit of each reference, packed 64 to a word.
    writes: Vec<u64>,
    /// Original page number of each dense id.
    pub pages: Vec<u64>,
    pub page_size: u64,
    pub source: Source,
}

/// Marker for "no next use" in [`DenseTrace::next_use`].
pub const NEVER: u32 = u32::MAX;

/// The most references (and so distinct pages) a trace can have to be
/// simulated: dense page ids and positions are 32-bit (`u32`, with
/// `u32::MAX` reserved for [`NEVER`]), which halves the memory and cache
/// footprint of the trace and of every policy's per-page arrays.
pub const MAX_REFS: usize = u32::MAX as usize - 1;

/// The error for a trace longer than [`MAX_REFS`].
pub(crate) fn too_long() -> Error {
    Error::Invalid(format!(
        "trace too long to simulate: the simulator holds at most {MAX_REFS} references \
         (page ids and positions are 32-bit); simulate a part of it (a native \
         trace is Parquet: select a range of rows with DuckDB or pandas)"
    ))
}

impl DenseTrace {
    /// Reads a whole source. Fails if the trace has 2^32−1 or more references
    /// or distinct pages (the simulator's ids are 32-bit).
    pub fn load(src: &mut dyn RefSource) -> Result<Self> {
        Self::load_with(src, |_| {})
    }

    /// Like [`load`](Self::load), calling `progress(references so far)` after each batch.
    pub fn load_with(src: &mut dyn RefSource, mut progress: impl FnMut(u64)) -> Result<Self> {
        if let Some(t) = src.load_dense(&mut progress) {
            return t;
        }
        let mut b = Builder::default();
        let mut batch = RefBatch::default();
        while src.next_batch(&mut batch, 1 << 16)? {
            for i in 0..batch.len() {
                b.push(batch.page[i], batch.write[i])?;
            }
            progress(b.ids.len() as u64);
        }
        Ok(b.finish(src.page_size(), src.source()))
    }

    /// From page numbers (all reads); for tests and small examples.
    pub fn from_pages(pages: &[u64]) -> Self {
        let mut b = Builder::default();
        for &p in pages {
            b.push(p, false).expect("small trace");
        }
        b.finish(4096, Source::Unknown)
    }

    /// From (page, is_write) pairs; for tests and small examples.
    pub fn from_refs(refs: &[(u64, bool)]) -> Self {
        let mut b = Builder::default();
        for &(p, w) in refs {
            b.push(p, w).expect("small trace");
        }
        b.finish(4096, Source::Unknown)
    }

    /// From parallel arrays of page numbers and (optionally) write flags,
    /// with a clear error (not a panic) for mismatched lengths or a trace
    /// beyond [`MAX_REFS`]; for callers holding a trace in memory (the
    /// Python package).
    pub fn from_arrays(
        pages: &[u64],
        writes: Option<&[bool]>,
        page_size: u64,
        source: Source,
    ) -> Result<Self> {
        if let Some(w) = writes {
            if w.len() != pages.len() {
                return Err(Error::Invalid(format!(
                    "{} pages but {} write flags: give one write flag per page reference (or none)",
                    pages.len(),
                    w.len()
                )));
            }
        }
        let mut b = Builder::default();
        for (i, &p) in pages.iter().enumerate() {
            b.push(p, writes.is_some_and(|w| w[i]))?;
        }
        Ok(b.finish(page_size, source))
    }

    /// From parts already dense (the native loader): `ids` index `pages`,
    /// `writes` packs one bit per reference.
    pub(crate) fn from_parts(
        ids: Vec<u32>,
        writes: Vec<u64>,
        pages: Vec<u64>,
        page_size: u64,
        source: Source,
    ) -> Self {
        debug_assert_eq!(writes.len(), ids.len().div_ceil(64));
        DenseTrace {
            ids,
            writes,
            pages,
            page_size,
            source,
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// Number of distinct pages (the footprint).
    pub fn distinct(&self) -> usize {
        self.pages.len()
    }
    #[inline]
    pub fn is_write(&self, i: usize) -> bool {
        (self.writes[i >> 6] >> (i & 63)) & 1 == 1
    }
    /// The packed write bits (bit i of word i/64 is reference i).
    pub fn write_bits(&self) -> &[u64] {
        &self.writes
    }
    pub fn write_count(&self) -> u64 {
        self.writes.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// For each reference, the position of the next reference to the same
    /// page, or [`NEVER`]. One backward pass (used by OPT).
    pub fn next_use(&self) -> Vec<u32> {
        let mut last = vec![NEVER; self.distinct()];
        let mut next = vec![NEVER; self.len()];
        for i in (0..self.len()).rev() {
            let id = self.ids[i] as usize;
            next[i] = last[id];
            last[id] = i as u32;
        }
        next
    }
}

struct Builder {
    map: FxHashMap<u64, u32>,
    ids: Vec<u32>,
    writes: Vec<u64>,
    pages: Vec<u64>,
    /// [`MAX_REFS`], lower in tests.
    limit: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            map: FxHashMap::default(),
            ids: Vec::new(),
            writes: Vec::new(),
            pages: Vec::new(),
            limit: MAX_REFS,
        }
    }
}

impl Builder {
    #[inline]
    fn push(&mut self, page: u64, write: bool) -> Result<()> {
        let n = self.ids.len();
        if n >= self.limit {
            return Err(too_long());
        }
        let next = self.pages.len() as u32;
        let id = *self.map.entry(page).or_insert(next);
        if id == next {
            self.pages.push(page);
        }
        if n & 63 == 0 {
            self.writes.push(0);
        }
        if write {
            self.writes[n >> 6] |= 1 << (n & 63);
        }
        self.ids.push(id);
        Ok(())
    }
    fn finish(self, page_size: u64, source: Source) -> DenseTrace {
        DenseTrace {
            ids: self.ids,
            writes: self.writes,
            pages: self.pages,
            page_size,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn renumbers_in_first_use_order_and_finds_next_use() {
        let t =
            DenseTrace::from_refs(&[(10, false), (7, true), (10, true), (3, false), (7, false)]);
        assert_eq!(t.ids, vec![0, 1, 0, 2, 1]);
        assert_eq!(t.pages, vec![10, 7, 3]);
        assert_eq!(t.distinct(), 3);
        assert!(!t.is_write(0) && t.is_write(1) && t.is_write(2) && !t.is_write(4));
        assert_eq!(t.write_count(), 2);
        assert_eq!(t.next_use(), vec![2, 4, NEVER, NEVER, NEVER]);
    }

    #[test]
    fn a_trace_beyond_the_32_bit_limit_is_a_clear_error() {
        // The real limit needs 4 G references; the same check with a small one.
        let mut b = Builder {
            limit: 3,
            ..Builder::default()
        };
        for p in [5, 6, 5] {
            b.push(p, false).unwrap();
        }
        let e = b.push(7, false).unwrap_err().to_string();
        assert!(
            e.contains("too long to simulate") && e.contains("32-bit"),
            "{e}"
        );
        assert_eq!(MAX_REFS, 4_294_967_294);
    }
}
