//! LRU: evict the least recently used page.
//!
//! **Data structure.** A lazily ordered queue, specialised from
//! [`LazyLists`](crate::lazy_lists::LazyLists) (which ARC and 2Q use) for a
//! single list: the queue is a `Vec<u32>` of page ids in reference order
//! (oldest first, from a read index `head`), and each page's 4-byte entry
//! holds the index of its newest queue entry (`NONE` if not resident). A hit
//! writes the page's entry and appends its id (nothing if it already is the
//! newest); an entry whose index no longer matches its page's is stale.
//! Eviction advances `head` past stale entries to the first valid one,
//! prefetching the pages 16 entries ahead. When the queue holds more than
//! three times the resident pages plus half the distinct pages (plus 64),
//! it is filtered down to its valid entries and every resident page's
//! index is rewritten, in one branch-free pass (O(1) amortised per
//! append; see `max_queue` for the cost). The order is exactly a
//! linked list's (checked against the one-pass exact miss-ratio curve at
//! every size in `mrc/exact.rs`, and against libCacheSim in
//! `tests/it/peer.rs`), without touching both list neighbours of every hit
//! page, which on a trace of 5 M distinct pages were two cache misses per
//! reference that no prefetch could hide (the neighbours are known only
//! once the page's own links have arrived). The miss path is a separate
//! function so that the hit path saves no registers.
//!
//! Memory: 4 bytes per page, and a queue of at most three times the memory
//! size plus half the pages plus 65 entries of 4 bytes, allocated once: at
//! most 8 bytes per page on the standard bench trace (6 before the half of
//! the pages, which made filtering 3.5× rarer at 10 % of a 50 M-page
//! footprint; `LazyLists`, with 8-byte queue entries, took 12).
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::{page_array, prefetch};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru",
    summary: "least recently used",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("lru", &[])?;
        let frames = c.capacity.min(c.pages);
        Ok(Box::new(Lru {
            pos: page_array(NONE, c.pages + 1),
            q: Vec::with_capacity(max_queue(frames, c.pages) + 1),
            head: 0,
            live: 0,
            cap: c.capacity,
        }))
    },
};

/// "Not resident".
const NONE: u32 = u32::MAX;
/// How far ahead eviction prefetches (it reads one random entry per queue entry).
const POP_AHEAD: usize = 16;
/// How far ahead filtering prefetches.
const FILTER_AHEAD: usize = 16;

/// The queue is filtered when it holds more than this many entries: three
/// times the resident pages, plus half the distinct pages. Each filter
/// rewrites every resident page's index, a store at random into `pos`, so
/// its cost per appended entry is `live / (max_queue - live)`: with the
/// resident pages a tenth of the distinct ones (the scale benchmark, 50 M
/// pages), 1/7 instead of the 1/2 of `3 * live` alone. What it costs is 2
/// bytes per distinct page at most.
#[inline]
fn max_queue(live: usize, pages: usize) -> usize {
    (3 * live + pages / 2 + 64).min(NONE as usize - 1)
}

struct Lru {
    /// Per page: the index in `q` of its newest entry, or `NONE`.
    pos: Vec<u32>,
    /// Page ids in reference order; entries before `head` are consumed.
    q: Vec<u32>,
    head: usize,
    /// Resident pages.
    live: usize,
    cap: usize,
}

impl Lru {
    /// Appends `id` as the most recently used page.
    #[inline]
    fn append(&mut self, id: u32) {
        if self.q.len() > max_queue(self.live, self.pos.len() - 1) {
            self.filter();
        }
        self.pos[id as usize] = self.q.len() as u32;
        self.q.push(id);
    }

    /// Drops the consumed and stale entries and renumbers the rest from 0.
    /// Branch-free, so that the random reads of successive entries overlap:
    /// a stale entry's store goes to the sink (the last entry of `pos`, no
    /// page's) rather than rewriting its page's index with the same value,
    /// which dirtied a line of `pos` (a write-back) for nothing.
    fn filter(&mut self) {
        let (pos, q) = (&mut self.pos, &mut self.q);
        let sink = pos.len() - 1;
        let mut w = 0;
        for r in self.head..q.len() {
            if let Some(&n) = q.get(r + FILTER_AHEAD) {
                prefetch(pos.as_ptr().wrapping_add(n as usize));
            }
            let id = q[r];
            let p = pos[id as usize];
            let ok = p as usize == r;
            // A later stale entry of the same page has an index above r,
            // so it cannot match the new index w <= r.
            pos[if ok { id as usize } else { sink }] = w as u32;
            q[w] = id;
            w += usize::from(ok);
        }
        q.truncate(w);
        self.head = 0;
        debug_assert_eq!(w, self.live);
    }

    /// Removes and returns the least recently used page, skipping stale
    /// entries (whose page's index is not theirs).
    fn pop(&mut self) -> Option<u32> {
        while let Some(&id) = self.q.get(self.head) {
            if let Some(&n) = self.q.get(self.head + POP_AHEAD) {
                prefetch(self.pos.as_ptr().wrapping_add(n as usize));
            }
            let r = self.head;
            self.head += 1;
            if self.pos[id as usize] as usize == r {
                self.pos[id as usize] = NONE;
                self.live -= 1;
                return Some(id);
            }
        }
        None
    }

    #[inline(never)]
    fn miss(&mut self, id: u32) -> Access {
        let victim = if self.live >= self.cap {
            self.pop()
        } else {
            None
        };
        self.append(id);
        self.live += 1;
        Access::Miss { victim }
    }
}

impl Policy for Lru {
    #[inline(always)]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        // Not `pos.get(id)`: the sink, past the pages, is no page's.
        if let Some(&p) = self.pos[..self.pos.len() - 1].get(id as usize) {
            if p != NONE {
                if p as usize + 1 != self.q.len() {
                    self.append(id);
                }
                return Access::Hit;
            }
        }
        self.miss(id)
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.pos.as_ptr().wrapping_add(id as usize));
    }
    /// The queue entry `ahead` past the head: the least recently used
    /// pages are the next victims (the entry may be stale, then the guess
    /// is wasted, never wrong).
    #[inline]
    fn victim_ahead(&self, ahead: usize) -> Option<u32> {
        if self.live < self.cap {
            return None;
        }
        self.q.get(self.head + ahead).copied()
    }
    fn can_remove(&self) -> bool {
        true
    }
    /// The page's queue entry becomes stale (its index is `NONE`).
    fn remove(&mut self, ids: &[u32]) {
        for &id in ids {
            if self.pos[id as usize] != NONE {
                self.pos[id as usize] = NONE;
                self.live -= 1;
            }
        }
    }
    /// MADV_COLD on LRU: the pages become the least recently used, the first
    /// given first to go. They are written in front of `head` (the queue is
    /// filtered and shifted first when there is no room there); their old
    /// entries become stale.
    fn demote(&mut self, ids: &[u32]) {
        if self.head < ids.len() {
            self.filter();
            let mut q = vec![0; ids.len()];
            q.append(&mut self.q);
            for (j, &id) in q.iter().enumerate().skip(ids.len()) {
                self.pos[id as usize] = j as u32;
            }
            self.q = q;
            self.head = ids.len();
        }
        for &id in ids.iter().rev() {
            self.head -= 1;
            self.q[self.head] = id;
            self.pos[id as usize] = self.head as u32;
        }
    }
    fn bytes_per_page(&self) -> usize {
        let pages = (self.pos.len() - 1).max(1);
        (4 * self.pos.len() + 4 * self.q.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    #[test]
    fn hand_worked() {
        // cap 3: 1 2 3 1 4 (evicts 2) 2 (miss, evicts 3) 1 (hit) 3 (miss, evicts 4)
        assert_eq!(
            hits("lru", 3, &[1, 2, 3, 1, 4, 2, 1, 3]),
            vec![false, false, false, true, false, false, true, false]
        );
        // The loop pattern larger than memory misses every time under LRU.
        let lp: Vec<u64> = (0..10).cycle().take(100).collect();
        assert_eq!(misses("lru", 9, &lp), 100);
        // Capacity 1: only immediate re-references hit.
        assert_eq!(
            hits("lru", 1, &[5, 5, 6, 5, 5]),
            vec![false, true, false, false, true]
        );
    }
    #[test]
    fn contract() {
        contract_all("lru");
    }
    /// Hit for hit and victim for victim, a plain LRU (last-use times in
    /// an ordered map) over traces long enough that the queue is filtered
    /// many times, at sizes from one page to all of them.
    #[test]
    fn equals_a_plain_lru_through_many_filters() {
        use crate::engine::testutil::replay::replay;
        use crate::policy::Access;
        use std::collections::{BTreeMap, HashMap};
        for (seed, pages) in [(1, 3_000u64), (2, 20_000)] {
            let t: Vec<u32> = random_trace(300_000, pages, seed)
                .iter()
                .map(|&p| p as u32)
                .collect();
            for cap in [
                1,
                7,
                100,
                pages as usize / 10,
                pages as usize / 2,
                pages as usize,
            ] {
                let (mut last, mut by_time) = (HashMap::new(), BTreeMap::new());
                let want: Vec<Access> = t
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| {
                        let hit = last
                            .insert(p, i)
                            .is_some_and(|old| by_time.remove(&old).is_some());
                        by_time.insert(i, p);
                        if hit {
                            return Access::Hit;
                        }
                        let victim = (by_time.len() > cap).then(|| {
                            let (_, v) = by_time.pop_first().unwrap();
                            last.remove(&v);
                            v
                        });
                        Access::Miss { victim }
                    })
                    .collect();
                assert!(replay("lru", cap, &t) == want, "{pages} pages, cap {cap}");
            }
        }
    }
}
