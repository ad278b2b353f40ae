//! Lazily ordered LRU lists (used by ARC and 2Q).
use crate::util::prefetch;
use std::collections::VecDeque;

/// How far down a queue `pop_back` prefetches.
const POP_AHEAD: usize = 8;
/// How far ahead `filter` prefetches (it reads one random entry per queue entry).
const FILTER_AHEAD: usize = 32;
/// A queue is filtered when it holds more than this many times its list's
/// length (plus 64): each filtering reads one random entry per queue entry,
/// so the cost per insertion is SLACK / (SLACK - 1) reads.
const QUEUE_SLACK: usize = 3;

/// Up to 255 LRU lists over page ids (a page in at most one), kept lazily
/// so that a hit is two writes and no pointer chasing:
///
/// * every insertion stamps the page with the next value of a clock and
///   appends `(page, stamp)` to its list's queue (oldest at the front);
/// * removing or moving a page just changes its stamp or list, leaving the
///   old queue entry stale;
/// * `pop_back` pops entries from the front of the queue, skipping stale
///   ones (whose page is no longer in that list with that stamp);
/// * a queue that grows past three times its list's length (plus 64) is
///   filtered down to its valid entries, so queues hold at most ~3× their
///   lists and filtering costs O(1) amortised per insertion;
/// * when the 29-bit clock runs out, every queue is filtered and re-stamped
///   0, 1, 2, ... in order (order within a list is all that matters).
///
/// The order of each list is exactly that of a linked-list LRU (insertion
/// order of its current members), at a fraction of the cache misses: on a
/// trace whose pages do not fit in cache, a linked list costs three or more
/// misses per hit (the page and both neighbours). Used by ARC and 2Q.
pub struct LazyLists {
    /// Per page: list << 29 | stamp (list `NONE` if in none). 4 bytes, so
    /// that the per-page array of a large trace stays in cache longer.
    meta: Vec<u32>,
    /// Per list: page << 32 | the page's `meta` when queued, oldest first;
    /// may hold stale entries.
    queues: Vec<VecDeque<u64>>,
    len: Vec<usize>,
    /// The next stamp.
    clock: u32,
}

impl LazyLists {
    const NONE: u32 = 7 << 29;
    /// Stamps are below this (29 bits).
    const STAMPS: u32 = 1 << 29;

    /// The most pages one list may hold: stamps are renumbered from 0 up to
    /// a list's length and must stay below 2^29.
    pub const MAX_LEN: usize = (1 << 29) - 1;

    /// An error naming `policy` when its lists, each holding at most
    /// `longest` pages (and never more than the trace's `pages`), could
    /// outgrow [`Self::MAX_LEN`].
    pub fn check(policy: &str, longest: usize, pages: usize) -> Result<(), crate::SimError> {
        let n = longest.min(pages);
        if n > Self::MAX_LEN {
            return Err(crate::SimError::BadParam(format!(
                "{policy} keeps at most {} pages in one list, and this memory size and trace could need {n}: use a smaller memory size (or another policy)",
                Self::MAX_LEN
            )));
        }
        Ok(())
    }

    /// `lists` (at most 7) lists over pages `0..pages`.
    pub fn new(lists: usize, pages: usize) -> Self {
        assert!(lists <= 7);
        LazyLists {
            meta: vec![Self::NONE; pages],
            queues: (0..lists).map(|_| VecDeque::new()).collect(),
            len: vec![0; lists],
            clock: 0,
        }
    }
    /// The list that holds `id`, or None.
    #[inline]
    pub fn which(&self, id: u32) -> Option<u8> {
        let w = self.meta[id as usize] >> 29;
        (w != 7).then_some(w as u8)
    }
    #[inline]
    pub fn len(&self, list: u8) -> usize {
        self.len[list as usize]
    }
    #[inline]
    pub fn is_empty(&self, list: u8) -> bool {
        self.len[list as usize] == 0
    }
    /// Is queue `entry` the current position of its page?
    #[inline]
    fn valid(meta: &[u32], entry: u64) -> bool {
        meta[(entry >> 32) as usize] == entry as u32
    }
    /// Inserts `id` (which must be in no list) at the front of `list`.
    #[inline(always)]
    pub fn push_front(&mut self, list: u8, id: u32) {
        if self.clock == Self::STAMPS {
            self.restamp();
        }
        let m = (u32::from(list) << 29) | self.clock;
        self.clock += 1;
        let l = list as usize;
        self.meta[id as usize] = m;
        self.len[l] += 1;
        let q = &mut self.queues[l];
        q.push_back((u64::from(id) << 32) | u64::from(m));
        if q.len() > QUEUE_SLACK * self.len[l] + 64 {
            Self::filter(&self.meta, q);
        }
    }
    /// Drops the stale entries of `q`. Branch-free, so that the random
    /// `meta` reads of successive entries overlap instead of waiting for
    /// each keep-or-drop decision. Out of line and cold: it runs once in
    /// every two list-lengths of insertions, and inlined it kept
    /// `push_front` (every hit of ARC and 2Q) out of line: inlining
    /// `push_front` made ARC and 2Q 10-15 % faster (`examples/simbench`).
    #[cold]
    #[inline(never)]
    fn filter(meta: &[u32], q: &mut VecDeque<u64>) {
        let v = q.make_contiguous();
        let mut w = 0;
        for r in 0..v.len() {
            if let Some(&n) = v.get(r + FILTER_AHEAD) {
                prefetch(meta.as_ptr().wrapping_add((n >> 32) as usize));
            }
            let e = v[r];
            v[w] = e;
            w += usize::from(Self::valid(meta, e));
        }
        q.truncate(w);
    }
    /// Removes `id` from whatever list holds it (no-op if none).
    #[inline]
    pub fn remove(&mut self, id: u32) {
        if let Some(w) = self.which(id) {
            self.len[w as usize] -= 1;
            self.meta[id as usize] = Self::NONE;
        }
    }
    /// Removes and returns the back (least recently inserted) of `list`.
    #[inline]
    pub fn pop_back(&mut self, list: u8) -> Option<u32> {
        if self.len[list as usize] == 0 {
            return None;
        }
        let q = &mut self.queues[list as usize];
        while let Some(e) = q.pop_front() {
            // Keep fetching the entry of the candidate a few places ahead,
            // so that skipping stale entries overlaps their cache misses
            // instead of taking them one by one.
            if let Some(&n) = q.get(POP_AHEAD) {
                prefetch(self.meta.as_ptr().wrapping_add((n >> 32) as usize));
            }
            if Self::valid(&self.meta, e) {
                let id = (e >> 32) as u32;
                self.remove(id);
                return Some(id);
            }
        }
        None
    }
    /// Moves `id` (in any list or none) to the front of `list`.
    #[inline]
    pub fn move_front(&mut self, list: u8, id: u32) {
        if self.meta[id as usize] == (u32::from(list) << 29) | self.clock.wrapping_sub(1) {
            return; // Already the newest entry of this list.
        }
        self.remove(id);
        self.push_front(list, id);
    }
    /// Filters every queue and renumbers its stamps from 0.
    #[cold]
    #[inline(never)]
    fn restamp(&mut self) {
        let mut next = 0u32;
        for (l, q) in self.queues.iter_mut().enumerate() {
            Self::filter(&self.meta, q);
            let meta = &mut self.meta;
            for (i, e) in q.iter_mut().enumerate() {
                let id = *e >> 32;
                let m = ((l as u32) << 29) | i as u32;
                *e = (id << 32) | u64::from(m);
                meta[id as usize] = m;
            }
            next = next.max(q.len() as u32);
        }
        self.clock = next;
    }
    /// Brings `id`'s entry into cache (see [`Policy::prefetch`](crate::Policy::prefetch)).
    #[inline]
    pub fn prefetch(&self, id: u32) {
        prefetch(self.meta.as_ptr().wrapping_add(id as usize));
    }
    /// Heap bytes per page, averaged over the pages.
    pub fn bytes_per_page(&self) -> usize {
        let q: usize = self.queues.iter().map(|q| 8 * q.capacity()).sum();
        (4 * self.meta.len() + q).div_ceil(self.meta.len().max(1))
    }
    /// The members of `list`, most recent first.
    #[cfg(test)]
    pub fn contents(&self, list: u8) -> Vec<u32> {
        self.queues[list as usize]
            .iter()
            .rev()
            .filter(|&&e| Self::valid(&self.meta, e) && (e as u32) >> 29 == u32::from(list))
            .map(|&e| (e >> 32) as u32)
            .collect()
    }
    /// Starts the clock at `STAMPS - c`, to test the re-stamping.
    #[cfg(test)]
    pub fn set_clock_before_wrap(&mut self, c: u32) {
        self.clock = Self::STAMPS - c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_that_could_outgrow_the_stamps_are_refused() {
        let max = LazyLists::MAX_LEN;
        assert!(LazyLists::check("arc", max, usize::MAX).is_ok());
        let e = LazyLists::check("arc", max + 1, max + 1).unwrap_err();
        assert!(e.to_string().contains("smaller memory size"), "{e}");
        // A list never holds more than the trace's pages.
        assert!(LazyLists::check("2q", usize::MAX, 1000).is_ok());
    }

    #[test]
    fn lazy_lists_match_linked_lists() {
        // Random operations on LazyLists and on util::Lists (the linked-list
        // reference) must agree on membership, lengths and eviction order,
        // including across queue filtering and clock re-stamping.
        use crate::util::Lists;
        for start in [None, Some(1000)] {
            let (mut a, mut b) = (LazyLists::new(3, 50), Lists::new(3, 50));
            if let Some(c) = start {
                a.set_clock_before_wrap(c);
            }
            let mut x = 99u64;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = (x % 50) as u32;
                let l = ((x >> 8) % 3) as u8;
                match (x >> 16) % 4 {
                    0 | 1 => {
                        a.move_front(l, id);
                        b.move_front(l, id);
                    }
                    2 => {
                        a.remove(id);
                        b.remove(id);
                    }
                    _ => assert_eq!(a.pop_back(l), b.pop_back(l)),
                }
                assert_eq!(a.which(id), b.which(id));
                assert_eq!((a.len(l), a.is_empty(l)), (b.len(l), b.is_empty(l)));
            }
            for l in 0..3 {
                while let Some(p) = b.pop_back(l) {
                    assert_eq!(a.pop_back(l), Some(p));
                }
                assert_eq!(a.pop_back(l), None);
            }
        }
    }
}
