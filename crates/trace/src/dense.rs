//! A trace loaded for simulation: pages renumbered densely (0..distinct in
//! order of first reference) so that simulators index flat arrays instead of
//! hashing. 4 bytes per reference plus one bit for the op, and 8 bytes per
//! distinct page for the reverse map.
use crate::{Error, RefBatch, RefSource, Result, Source};

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
            b.push_batch(&batch.page, &batch.write)?;
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
        match writes {
            Some(w) => b.push_batch(pages, w)?,
            None => {
                for chunk in pages.chunks(1 << 16) {
                    b.push_batch(chunk, &[])?;
                }
            }
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

/// Page number → dense id: the loader's hot path, hand-written.
///
/// Every reference of an imported trace (oracleGeneral, CSV, text) goes
/// through one lookup, and with millions of distinct pages nearly every
/// lookup misses the CPU caches: a general-purpose map (hashbrown with
/// FxHash) waited on memory one lookup at a time, about 13 M refs/s. This
/// table is open addressing with linear probing over 16-byte slots
/// (a key and its id: one cache line holds four), indexed by the top bits of
/// a Fibonacci hash, and [`IdMap::map_batch`] loads the slot of the
/// reference [`AHEAD`] places ahead before resolving the current one, so
/// that many cache misses are in flight at once instead of one. The table
/// asks for transparent huge pages ([`huge_pages`]): on the 2-core VM, 50 M
/// references of the standard trace (5.3 M distinct pages, a 256 MiB table)
/// loaded from oracleGeneral in 2.0–2.2 s of CPU with them, 2.3–3.0 s
/// without (`examples/loadformats.rs`, `og-bin`).
pub(crate) struct IdMap {
    slots: Vec<Slot>,
    /// 64 − log2(slots.len()).
    shift: u32,
    len: usize,
}

#[derive(Clone, Copy)]
struct Slot {
    key: u64,
    /// [`EMPTY`] for a free slot.
    id: u32,
}

const EMPTY: u32 = u32::MAX;
/// How many references ahead [`IdMap::map_batch`] touches the slot it will
/// need (enough to cover a memory latency at a few ns per lookup).
const AHEAD: usize = 16;
/// The table doubles when it is this full (1/2: short probe runs).
const MAX_LOAD_NUM: usize = 1;
const MAX_LOAD_DEN: usize = 2;

impl Default for IdMap {
    fn default() -> Self {
        IdMap::with_slots(1 << 16)
    }
}

impl IdMap {
    fn with_slots(n: usize) -> Self {
        let n = n.next_power_of_two().max(16);
        let mut slots: Vec<Slot> = Vec::with_capacity(n);
        huge_pages(slots.as_mut_ptr().cast(), n * std::mem::size_of::<Slot>());
        slots.resize(n, Slot { key: 0, id: EMPTY });
        IdMap {
            slots,
            shift: 64 - n.trailing_zeros(),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Appends the dense id of each of `pages` to `ids`; a page not seen
    /// before gets the next id and is appended to `new_pages` (so ids are
    /// numbered in order of first reference).
    pub(crate) fn map_batch(
        &mut self,
        pages: &[u64],
        ids: &mut Vec<u32>,
        new_pages: &mut Vec<u64>,
    ) {
        ids.reserve(pages.len());
        for (i, &key) in pages.iter().enumerate() {
            if (self.len + 1) * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
                self.grow();
            }
            if let Some(&ahead) = pages.get(i + AHEAD) {
                self.prefetch(self.home(ahead));
            }
            let mask = self.slots.len() - 1;
            let mut at = self.home(key);
            loop {
                let slot = &mut self.slots[at];
                if slot.id == EMPTY {
                    let id = new_pages.len() as u32;
                    *slot = Slot { key, id };
                    new_pages.push(key);
                    self.len += 1;
                    ids.push(id);
                    break;
                }
                if slot.key == key {
                    ids.push(slot.id);
                    break;
                }
                at = (at + 1) & mask;
            }
        }
    }

    /// Asks the CPU to bring slot `at` into the cache (a hint: nothing
    /// waits for it). Measured on 50 M Zipf references over 5.3 M distinct
    /// pages, CPU time: 1.5–1.7 s with it, 2.0–2.6 s without, 2.3–2.5 s
    /// for hashbrown with FxHash; a plain load instead of the hint
    /// (`black_box`) was slower than none (3 s: it holds up retirement).
    #[inline]
    #[allow(unsafe_code)]
    fn prefetch(&self, at: usize) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults and has no
        // effect on memory; the pointer stays inside the table
        // (`at` < slots.len(), wrapping_add never dereferences).
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.slots.as_ptr().wrapping_add(at).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, IdMap::with_slots(self.slots.len() * 2));
        self.len = old.len;
        let mask = self.slots.len() - 1;
        for s in old.slots.into_iter().filter(|s| s.id != EMPTY) {
            let mut at = self.home(s.key);
            while self.slots[at].id != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = s;
        }
    }
}

/// Asks the kernel to back `len` bytes at `ptr` (memory not yet touched)
/// with transparent huge pages, where THP is `madvise` (as on the
/// benchmark's VM); a hint, ignored where it fails. The id table is
/// read at random, one lookup per reference: with 4 KiB pages nearly every
/// lookup into a table of hundreds of MB also misses the TLB, and under a
/// hypervisor each such miss is a two-level page walk.
#[allow(unsafe_code)]
pub(crate) fn huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: madvise(MADV_HUGEPAGE) only changes how the kernel
            // backs the range (inside this allocation, page-aligned); it
            // neither frees nor changes its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len, HUGE);
}

/// Builds a [`DenseTrace`] from references in order (the importers'
/// loaders).
pub(crate) struct Builder {
    map: IdMap,
    ids: Vec<u32>,
    writes: Vec<u64>,
    pages: Vec<u64>,
    /// [`MAX_REFS`], lower in tests.
    limit: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            map: IdMap::default(),
            ids: Vec::new(),
            writes: Vec::new(),
            pages: Vec::new(),
            limit: MAX_REFS,
        }
    }
}

impl Builder {
    fn push(&mut self, page: u64, write: bool) -> Result<()> {
        self.push_batch(&[page], &[write])
    }

    /// Appends references; `writes` is as long as `pages`, or empty for
    /// reads only.
    pub(crate) fn push_batch(&mut self, pages: &[u64], writes: &[bool]) -> Result<()> {
        let n = self.ids.len();
        if n + pages.len() > self.limit {
            return Err(too_long());
        }
        self.map.map_batch(pages, &mut self.ids, &mut self.pages);
        self.writes.resize((n + pages.len()).div_ceil(64), 0);
        for (k, &w) in writes.iter().enumerate() {
            if w {
                let i = n + k;
                self.writes[i >> 6] |= 1 << (i & 63);
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self, page_size: u64, source: Source) -> DenseTrace {
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

    /// The hand-written table against a std HashMap numbering pages in
    /// order of first use, through many doublings, with the keys a table
    /// could trip on (0, u64::MAX, keys sharing their high or low bits).
    #[test]
    fn the_id_map_numbers_like_a_hash_map_through_growth() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut pages: Vec<u64> = vec![0, u64::MAX, 0, 1 << 63, u64::MAX, 1];
        for _ in 0..300_000 {
            let k: u64 = match rng.random_range(0..4) {
                0 => rng.random_range(0..50_000),
                1 => rng.random_range(0..50_000u64) << 40,
                2 => u64::MAX - rng.random_range(0..1000),
                _ => rng.random(),
            };
            pages.push(k);
        }
        let mut want_ids = Vec::new();
        let mut want_pages = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for &p in &pages {
            let next = want_pages.len() as u32;
            let id = *seen.entry(p).or_insert(next);
            if id == next {
                want_pages.push(p);
            }
            want_ids.push(id);
        }
        let mut map = IdMap::with_slots(16);
        let (mut ids, mut new_pages) = (Vec::new(), Vec::new());
        for chunk in pages.chunks(1000) {
            map.map_batch(chunk, &mut ids, &mut new_pages);
        }
        assert_eq!(new_pages, want_pages);
        assert_eq!(ids, want_ids);
        assert_eq!(map.len, want_pages.len());
        assert!(map.slots.len() >= 2 * map.len);
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
