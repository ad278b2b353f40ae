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
///
/// Memory first touched costs more than the lookups: the kernel zeroes
/// each new page (and on the VM the host backs it), which was a third of
/// an oracleGeneral load's CPU time when each doubling allocated a new
/// table. So the table lives at the start of one large reservation of
/// address space ([`Slots`], nothing backed until touched), a doubling
/// reuses the memory already touched, clears it and inserts every page
/// again from the list of pages in id order (which the caller keeps), and
/// an all-zero slot is free (ids are stored plus one), so fresh memory
/// needs no filling.
pub(crate) struct IdMap {
    slots: Slots,
    /// 64 − log2(slots.len()).
    shift: u32,
    len: usize,
    /// At this many pages the memory of the next doubling is populated
    /// ahead, on another thread ([`Slots::populate_ahead`]).
    populate_at: usize,
    /// Whether to populate ahead at all ([`Builder::second_part`]).
    ahead: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    key: u64,
    /// The dense id plus one; 0 for a free slot.
    id1: u32,
}

/// How many references ahead [`IdMap::map_batch`] touches the slot it will
/// need (enough to cover a memory latency at a few ns per lookup).
const AHEAD: usize = 16;
/// The table doubles when it is this full.
const MAX_LOAD_NUM: usize = 1;
const MAX_LOAD_DEN: usize = 2;
/// Slots of address space reserved for the table: enough for any trace
/// the simulator takes ([`MAX_REFS`] distinct pages at the load factor),
/// 128 GiB of addresses, none of it backed until used.
const RESERVE: usize = 1 << 33;

impl Default for IdMap {
    fn default() -> Self {
        IdMap::with_slots(1 << 16)
    }
}

impl IdMap {
    fn with_slots(n: usize) -> Self {
        let n = n.next_power_of_two().max(16);
        IdMap {
            slots: Slots::new(n),
            shift: 64 - n.trailing_zeros(),
            len: 0,
            populate_at: populate_at(n),
            ahead: true,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Appends the dense id of each of `pages` to `ids`; a page not seen
    /// before gets the next id and is appended to `new_pages` (so ids are
    /// numbered in order of first reference). `new_pages` must hold every
    /// page this map has numbered, in id order: the table is rebuilt from
    /// it when it grows.
    pub(crate) fn map_batch(
        &mut self,
        pages: &[u64],
        ids: &mut Vec<u32>,
        new_pages: &mut Vec<u64>,
    ) {
        debug_assert_eq!(new_pages.len(), self.len);
        ids.reserve(pages.len());
        for (i, &key) in pages.iter().enumerate() {
            if self.len >= self.populate_at {
                if (self.len + 1) * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
                    self.grow(new_pages);
                } else {
                    self.slots.populate_ahead();
                    self.populate_at = self.slots.len() * MAX_LOAD_NUM / MAX_LOAD_DEN;
                }
            }
            if let Some(&ahead) = pages.get(i + AHEAD) {
                self.prefetch(self.home(ahead));
            }
            let mask = self.slots.len() - 1;
            let mut at = self.home(key);
            let table = self.slots.get();
            loop {
                let slot = &mut table[at];
                if slot.id1 == 0 {
                    let id = new_pages.len() as u32;
                    *slot = Slot { key, id1: id + 1 };
                    new_pages.push(key);
                    self.len += 1;
                    ids.push(id);
                    break;
                }
                if slot.key == key {
                    ids.push(slot.id1 - 1);
                    break;
                }
                at = (at + 1) & mask;
            }
        }
    }

    /// Writes to each of `out` the dense id of the page at the same place
    /// in `keys`, or [`NEVER`] for a page this map has not numbered; the
    /// map is not changed (so two threads can look up at once).
    fn find_batch(&self, keys: &[u64], out: &mut [std::mem::MaybeUninit<u32>]) {
        let table = self.slots.table();
        let mask = table.len() - 1;
        for (i, (&key, o)) in keys.iter().zip(out).enumerate() {
            if let Some(&ahead) = keys.get(i + AHEAD) {
                self.prefetch(self.home(ahead));
            }
            let mut at = self.home(key);
            let id = loop {
                let slot = &table[at];
                if slot.id1 == 0 {
                    break NEVER;
                }
                if slot.key == key {
                    break slot.id1 - 1;
                }
                at = (at + 1) & mask;
            };
            o.write(id);
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
            _mm_prefetch::<_MM_HINT_T0>(self.slots.ptr().wrapping_add(at).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }

    /// Doubles the table: clears it (or moves to a larger reservation when
    /// this one is full) and inserts `pages` again, page `i` with id `i`.
    fn grow(&mut self, pages: &[u64]) {
        let n = self.slots.len() * 2;
        if n <= self.slots.cap {
            self.slots.get().fill(Slot { key: 0, id1: 0 });
            self.slots.len = n;
        } else {
            self.slots = Slots::new(n);
        }
        self.shift = 64 - n.trailing_zeros();
        self.populate_at = n * MAX_LOAD_NUM / MAX_LOAD_DEN;
        if self.ahead {
            self.populate_at = self.populate_at.min(populate_at(n));
        }
        let mask = n - 1;
        for (i, &key) in pages.iter().enumerate() {
            if let Some(&ahead) = pages.get(i + AHEAD) {
                self.prefetch(self.home(ahead));
            }
            let mut at = self.home(key);
            let table = self.slots.get();
            while table[at].id1 != 0 {
                at = (at + 1) & mask;
            }
            table[at] = Slot {
                key,
                id1: i as u32 + 1,
            };
        }
    }
}

/// The number of pages at which a table of `n` slots has the memory of its
/// next doubling populated ahead: 3/8 full (3/4 of the way to doubling),
/// for tables of 2^20 slots (16 MiB) or more; before that, at the doubling
/// itself (the growth check comes first, so `populate_at` is only ever
/// reached once per size).
fn populate_at(n: usize) -> usize {
    if n >= 1 << 20 {
        n / 8 * 3
    } else {
        n * MAX_LOAD_NUM / MAX_LOAD_DEN
    }
}

/// The id table's memory: the table is its first `len` slots, of `cap`
/// zeroed when allocated, from one anonymous
/// mapping (reserved address space: the kernel backs a page when it is
/// first touched). [`RESERVE`] slots when the system grants that much
/// address space, else just the `n` asked for (a strict overcommit
/// policy, a limit on address space), and on systems without `mmap` a
/// zeroed heap allocation.
struct Slots {
    ptr: std::ptr::NonNull<Slot>,
    len: usize,
    cap: usize,
    mapped: bool,
    /// The thread populating memory ahead, joined before the memory goes.
    ahead: Option<std::thread::JoinHandle<()>>,
}

// SAFETY: `Slots` owns its memory exclusively (like a `Vec<Slot>`).
#[allow(unsafe_code)]
unsafe impl Send for Slots {}
// SAFETY: shared access only reads (`ptr`, `cap`), as for a `Vec<Slot>`.
#[allow(unsafe_code)]
unsafe impl Sync for Slots {}

impl Slots {
    /// A table of `n` slots, all free, in room for at least `n`.
    #[allow(unsafe_code)]
    fn new(n: usize) -> Slots {
        #[cfg(unix)]
        for cap in [RESERVE.max(n), n] {
            let len = cap * std::mem::size_of::<Slot>();
            // SAFETY: a new private anonymous mapping, at an address the
            // kernel chooses: it aliases nothing.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                huge_pages(p.cast(), len);
                return Slots {
                    ptr: std::ptr::NonNull::new(p.cast()).expect("mmap gave a non-null address"),
                    len: n,
                    cap,
                    mapped: true,
                    ahead: None,
                };
            }
        }
        let layout = std::alloc::Layout::array::<Slot>(n).expect("table size");
        // SAFETY: the layout has a nonzero size (n ≥ 16).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = std::ptr::NonNull::new(p.cast()) else {
            std::alloc::handle_alloc_error(layout)
        };
        Slots {
            ptr,
            len: n,
            cap: n,
            mapped: false,
            ahead: None,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Has the kernel back the memory the next doubling will use
    /// (`MADV_POPULATE_WRITE` on another thread), so that the thread
    /// mapping ids does not wait while the kernel zeroes it page by page
    /// as lookups first touch it. Only where the table has room to double
    /// in place; a hint, ignored where it fails.
    #[allow(unsafe_code)]
    fn populate_ahead(&mut self) {
        #[cfg(target_os = "linux")]
        if self.mapped && self.len * 2 <= self.cap {
            if let Some(h) = self.ahead.take() {
                let _ = h.join();
            }
            let size = std::mem::size_of::<Slot>();
            let (start, bytes) = (
                self.ptr.as_ptr() as usize + self.len * size,
                self.len * size,
            );
            self.ahead = std::thread::Builder::new()
                .name("swaplab-idmap".into())
                .spawn(move || {
                    // SAFETY: the range is inside this mapping (len * 2 ≤
                    // cap), which stays mapped until `drop` has joined
                    // this thread; MADV_POPULATE_WRITE only faults pages
                    // in, as a write would, without changing their
                    // contents (fresh pages read as zero either way), so
                    // it cannot disturb the mapping thread's use of them.
                    unsafe {
                        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE);
                    }
                })
                .ok();
        }
    }

    fn ptr(&self) -> *const Slot {
        self.ptr.as_ptr()
    }

    /// The table, to read.
    #[allow(unsafe_code)]
    fn table(&self) -> &[Slot] {
        assert!(self.len <= self.cap);
        // SAFETY: as for `get`; `&self` makes the borrow shared.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The table.
    #[inline]
    #[allow(unsafe_code)]
    fn get(&mut self) -> &mut [Slot] {
        assert!(self.len <= self.cap);
        // SAFETY: the first `cap` slots are this allocation's, zeroed when
        // it was made (an all-zero `Slot` is valid), and `&mut self`
        // makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Slots {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if let Some(h) = self.ahead.take() {
            let _ = h.join();
        }
        #[cfg(unix)]
        if self.mapped {
            let len = self.cap * std::mem::size_of::<Slot>();
            // SAFETY: the mapping `new` made, of this length, unmapped once.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), len);
            }
            return;
        }
        let layout = std::alloc::Layout::array::<Slot>(self.cap).expect("table size");
        // SAFETY: allocated by `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
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
        self.check_room(pages.len())?;
        let n = self.ids.len();
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

    /// A builder for the first part of a split load, with room for `refs`
    /// references (memory reserved, not touched): it grows by the second
    /// part at the merge ([`Builder::merge`]), so no reallocation copies
    /// its ids. Neither part's table has its next doubling populated
    /// ahead ([`Slots::populate_ahead`]): with both cores mapping, the
    /// helper thread only takes a core from the other part, and a part's
    /// table need not double for pages the merge adds (it only looks them
    /// up). On the standard trace both halves have 3.59 M distinct pages,
    /// past the 3 M at which a table populates the doubling at 4 M: 128
    /// MiB zeroed in each part for a doubling that never comes.
    pub(crate) fn first_part(refs: usize) -> Self {
        let mut b = Builder::second_part();
        b.ids.reserve_exact(refs);
        b.writes.reserve_exact(refs.div_ceil(64));
        b
    }

    /// A builder for the second part of a split load: see
    /// [`Builder::first_part`].
    pub(crate) fn second_part() -> Self {
        let mut b = Builder::default();
        b.map.ahead = false;
        b
    }

    /// Fails (a trace too long) if `more` references would not fit.
    pub(crate) fn check_room(&self, more: usize) -> Result<()> {
        if self.ids.len() + more > self.limit {
            return Err(too_long());
        }
        Ok(())
    }

    /// References pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The trace of this builder's references followed by those of
    /// `next`, a builder that mapped the part of the input following this
    /// one's, on another thread and into its own table (its ids numbered
    /// in its own order of first use), with the ids pushing them here
    /// would have given: `next`'s pages, in its order of first use, are
    /// looked up in this table (a page seen here keeps its id, a page
    /// first seen in `next` gets the next new one, so pages stay numbered
    /// in order of first reference in the whole input), and `next`'s ids
    /// are rewritten through that local → global array.
    ///
    /// This is what lets an importer map ids on two threads
    /// ([`split_mapping`]): mapping, one cache-missing lookup a reference,
    /// was the bound of a load on two cores. The merge costs one lookup a
    /// distinct page of `next` and one gather a reference of it, both on
    /// two threads ([`two_threads`]). The lookups do not insert: the
    /// builder is done after them, so its table need not hold (nor grow
    /// for) the pages new in `next`. On the standard trace (3.59 M
    /// distinct pages in the second half, 1.72 M of them new) inserting
    /// them took 0.11 s on one thread, a doubling of the table included;
    /// looking them up on two, then numbering the new ones in order, takes
    /// 0.047 s.
    pub(crate) fn merge(
        mut self,
        next: Builder,
        page_size: u64,
        source: Source,
    ) -> Result<DenseTrace> {
        self.check_room(next.ids.len())?;
        let Builder {
            map,
            ids,
            writes,
            pages,
            ..
        } = next;
        drop(map);
        let mut global = Vec::with_capacity(pages.len());
        let table = &self.map;
        two_threads(&pages, &mut global, |src, dst| table.find_batch(src, dst));
        for (&page, g) in pages.iter().zip(&mut global) {
            if *g == NEVER {
                *g = self.pages.len() as u32;
                self.pages.push(page);
            }
        }
        drop(pages);
        let n = self.ids.len();
        two_threads(&ids, &mut self.ids, |src, dst| {
            for (d, &i) in dst.iter_mut().zip(src) {
                d.write(global[i as usize]);
            }
        });
        let total = n + ids.len();
        let shift = n % 64;
        if writes.iter().any(|&w| w != 0) {
            if shift == 0 {
                self.writes.extend_from_slice(&writes);
            } else {
                for w in writes {
                    *self.writes.last_mut().expect("n > 0") |= w << shift;
                    self.writes.push(w >> (64 - shift));
                }
            }
        }
        // Drops the word past the end a shift may leave (its bits were
        // beyond `next`'s references: zero).
        self.writes.resize(total.div_ceil(64), 0);
        Ok(self.finish(page_size, source))
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

/// Appends to `out` one value for each of `src`, which `fill(part of
/// src, the same part of out)` writes: on two threads (one half each)
/// when there is more than one CPU and enough to do, since the merge's
/// lookups and gathers wait on memory (the gather's table has 4 bytes a
/// distinct page: 21 MB for the standard trace's 5.3 M).
#[allow(unsafe_code)]
fn two_threads<T: Sync>(
    src: &[T],
    out: &mut Vec<u32>,
    fill: impl Fn(&[T], &mut [std::mem::MaybeUninit<u32>]) + Sync,
) {
    let n = out.len();
    out.reserve(src.len());
    let spare = &mut out.spare_capacity_mut()[..src.len()];
    let two =
        src.len() >= 1 << 16 && std::thread::available_parallelism().is_ok_and(|p| p.get() > 1);
    let per = if two {
        src.len().div_ceil(2)
    } else {
        src.len()
    }
    .max(1);
    let fill = &fill;
    std::thread::scope(|s| {
        let mut parts = src.chunks(per).zip(spare.chunks_mut(per));
        let first = parts.next();
        for (src, dst) in parts {
            s.spawn(move || fill(src, dst));
        }
        if let Some((src, dst)) = first {
            fill(src, dst);
        }
    });
    // SAFETY: the chunks of `spare` cover its `src.len()` elements, each
    // chunk as long as its chunk of `src`, and `fill` writes every element
    // of its chunk (a panic above unwinds out before this line).
    unsafe { out.set_len(n + src.len()) };
}

thread_local! {
    /// [`with_split_mapping`]'s choice for loads started on this thread.
    static SPLIT: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Whether an importer maps ids on two threads, each into its own table,
/// merged by [`Builder::merge`]: when at least `cpus` CPUs are available
/// to this process (`available_parallelism` respects its affinity mask),
/// or as [`with_split_mapping`] says. With fewer, the second thread only
/// adds the merge's work (and its own table's memory): on one CPU there
/// is nothing to overlap; csv and txt, whose parsing already keeps two
/// cores busy, ask for three (see [`crate::import::par`]).
pub(crate) fn split_mapping(cpus: usize) -> bool {
    SPLIT
        .with(|s| s.get())
        .unwrap_or_else(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= cpus))
}

/// Runs `f` with loads started on this thread mapping ids on two threads
/// (`true`) or one (`false`), whatever the CPUs: for tests and
/// measurements comparing the two paths, which give the same trace.
#[doc(hidden)]
pub fn with_split_mapping<T>(on: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<bool>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPLIT.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SPLIT.with(|s| s.replace(Some(on))));
    f()
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

    /// Pages numbered in order of first use with a std HashMap: (ids, pages).
    fn numbering(pages: &[u64]) -> (Vec<u32>, Vec<u64>) {
        let mut seen = std::collections::HashMap::new();
        let (mut ids, mut firsts) = (Vec::new(), Vec::new());
        for &p in pages {
            let id = *seen.entry(p).or_insert_with(|| {
                firsts.push(p);
                firsts.len() as u32 - 1
            });
            ids.push(id);
        }
        (ids, firsts)
    }

    /// Two builders merged (the two-thread mapping) number pages as a
    /// hash map over the whole input does, wherever the input is cut (empty parts, write bits at every offset in a word),
    /// with pages only before the cut, only after, and on both sides.
    #[test]
    fn a_merge_numbers_the_whole_input_in_first_use_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(29);
        // Enough distinct pages in the second part (over 2^16) that the
        // merge looks them up on two threads where there are two CPUs.
        let n = 400_000;
        let refs: Vec<(u64, bool)> = (0..n)
            .map(|i| {
                let p = match rng.random_range(0..3) {
                    0 if i < n / 2 => 1 << 40 | rng.random_range(0..5000u64),
                    1 if i >= n / 2 => 2 << 40 | rng.random_range(0..5000u64),
                    _ => rng.random_range(0..300_000u64),
                };
                (p, rng.random_bool(0.3))
            })
            .collect();
        let pages: Vec<u64> = refs.iter().map(|r| r.0).collect();
        let writes: Vec<bool> = refs.iter().map(|r| r.1).collect();
        let (want_ids, want_pages) = numbering(&pages);
        let mut cuts = vec![0, 1, 63, 64, 65, 127, n / 2, n - 1, n];
        cuts.extend((0..8).map(|_| rng.random_range(0..=n)));
        for cut in cuts {
            let (mut a, mut b) = (Builder::default(), Builder::default());
            a.push_batch(&pages[..cut], &writes[..cut]).unwrap();
            b.push_batch(&pages[cut..], &writes[cut..]).unwrap();
            let t = a.merge(b, 4096, Source::Unknown).unwrap();
            assert_eq!(t.ids, want_ids, "cut {cut}");
            assert_eq!(t.pages, want_pages, "cut {cut}");
            assert_eq!(t.write_bits().len(), n.div_ceil(64), "cut {cut}");
            for (i, &w) in writes.iter().enumerate() {
                assert_eq!(t.is_write(i), w, "cut {cut}, reference {i}");
            }
        }
        // One reference, on either side.
        for cut in [0, 1] {
            let (mut a, mut b) = (Builder::default(), Builder::default());
            a.push_batch(&[9][..cut], &[true][..cut]).unwrap();
            b.push_batch(&[9][cut..], &[true][cut..]).unwrap();
            let t = a.merge(b, 4096, Source::Unknown).unwrap();
            assert_eq!((&t.ids, &t.pages, t.write_count()), (&vec![0], &vec![9], 1));
        }
        // The limit counts both parts.
        let mut a = Builder {
            limit: 3,
            ..Builder::default()
        };
        a.push_batch(&[1, 2], &[]).unwrap();
        let mut b = Builder::default();
        b.push_batch(&[3, 1], &[]).unwrap();
        let e = a.merge(b, 4096, Source::Unknown).unwrap_err().to_string();
        assert!(e.contains("too long to simulate"), "{e}");
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
