//! `cluster:pc=N`: Linux swap cluster readahead (`swap_cluster_readahead`
//! in mm/swap_state.c), the readahead used when VMA readahead is off (or
//! any swap device is rotational).
//!
//! Works in **swap slot** order: the engine allocates slots at swap-out as
//! the kernel does (a next-fit cursor), so pages swapped out together sit
//! in neighbouring slots whatever their virtual addresses. At a fault on
//! slot `s` the window size is [`swapin_nr_pages`]
//! with `max_pages = 2^pc` (`vm.page-cluster`, default 3), the previous
//! offset (updated only at a fault with no hits since the last window),
//! the readahead hits since the last fault (`swapin_readahead_hits`,
//! reset at each fault) and the last window; the pages read are the
//! window-aligned block of slots around `s` (`offset & ~mask ..= offset |
//! mask`), minus slot 0 (the swap header). `pc=0` reads nothing extra.
use super::{swapin_nr_pages, Fault, Prefetcher, PrefetcherInfo};

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "cluster",
    summary: "Linux swap cluster readahead: aligned block of up to 2^pc swap slots",
    params: "pc=N (0..=10, vm.page-cluster, default 3)",
    slots: true,
    build: |c| {
        c.params.allow_for("prefetcher", "cluster", &["pc"])?;
        Ok(Box::new(Cluster {
            max_pages: 1 << c.params.int("pc", 3, 0, 10)?,
            prev_offset: 0,
            last_ra: 0,
            hits: 0,
        }))
    },
};

struct Cluster {
    max_pages: u64,
    prev_offset: u64,
    /// `last_readahead_pages`.
    last_ra: u64,
    /// `swapin_readahead_hits`.
    hits: u64,
}

impl Prefetcher for Cluster {
    fn fault(&mut self, f: &Fault, out: &mut Vec<u64>) {
        // swapin_nr_pages()
        if self.max_pages <= 1 {
            return;
        }
        let hits = std::mem::take(&mut self.hits);
        let pages = swapin_nr_pages(self.prev_offset, f.slot, hits, self.max_pages, self.last_ra);
        if hits == 0 {
            self.prev_offset = f.slot;
        }
        self.last_ra = pages;
        let mask = pages - 1;
        if mask == 0 {
            return;
        }
        let start = (f.slot & !mask).max(1);
        let end = f.slot | mask;
        out.extend((start..=end).filter(|&s| s != f.slot));
    }
    fn hit(&mut self, _page: u64) {
        self.hits += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::prefetch::testutil::*;

    #[test]
    fn hand_worked_sequential() {
        // lru, 4 pages, pc=3. Pages 0..7 touched once: 0 1 2 3 are evicted
        // (in that order) by 4 5 6 7 and get slots 1 2 3 4. Then 0..3:
        //  0 (slot 1): major. hits 0, prev_offset 0: slot 1 = 0 + 1 is
        //     adjacent, so the window is 2: block 0..=1 minus the header:
        //     only slot 1 itself. No read. prev_offset 1, last_ra 2.
        //     Evicts 4 (slot 5).
        //  1 (slot 2): major. hits 0, adjacent (1 + 1): window 2, block
        //     2..=3: reads slot 3 (page 2). prev_offset 2, last_ra 2.
        //     Evicts 5 (slot 6), then 6 for the read (slot 7).
        //  2: hit on a read page: used 1, hits 1.
        //  3 (slot 4): major. hits 1 -> 3 -> window 4, block 4..=7: slots 5
        //     6 7 hold pages 4 5 6, not resident: 3 reads. prev_offset
        //     stays 2 (there were hits). The fault evicts 7 (slot 8), the
        //     reads evict 0 1 2: resident 3 4 5 6.
        // Totals: major 3, reads 4, used 1; 4 5 6 are still resident and
        // unused at the end (neither used nor unused).
        let t: Vec<u64> = (0..8).chain(0..4).collect();
        let r = run("lru", 4, "cluster:pc=3", &t);
        assert_eq!(counts(&r), (3, 4, 1, 0));
    }

    #[test]
    fn slot_order_not_virtual_order() {
        // Pages swapped out in the order 9 3 7 1 get neighbouring slots, so
        // cluster readahead brings them back together; next-page readahead
        // in virtual order finds nothing. lru, 4 pages, pc=2 (window <= 4).
        // 9 3 7 1 touched, then 20 21 22 23 evict them: slots 9:1 3:2 7:3 1:4;
        // 20..23 hold nothing swapped yet.
        // 9 (slot 1): window 2 (adjacent to prev_offset 0): block 0..=1,
        //   no read. Evicts 20 (slot 5).
        // 3 (slot 2): window 2 (adjacent): block 2..=3: reads slot 3 (7).
        //   Evicts 21 (slot 6), 22 (slot 7).
        // 7: used (hit 1).
        // 1 (slot 4): hits 1 -> window 4: block 4..=7: reads slots 5 6 7
        //   (20 21 22); each evicts the LRU page (9, 3, 7).
        // Majors: 9 3 1 = 3; reads 4; used 1; 20 21 22 resident, unused.
        let t = [9, 3, 7, 1, 20, 21, 22, 23, 9, 3, 7, 1];
        let r = run("lru", 4, "cluster:pc=2", &t);
        assert_eq!(counts(&r), (3, 4, 1, 0));
        let r = run("lru", 4, "next:n=1", &t);
        // next: 9 reads 10 (absent), 3 reads 4 (absent), 7 reads 8, 1 reads 2: nothing.
        assert_eq!(counts(&r), (4, 0, 0, 0));
    }

    #[test]
    fn page_cluster_zero_reads_nothing() {
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        assert_eq!(counts(&run("lru", 4, "cluster:pc=0", &t)), (8, 0, 0, 0));
    }
}
