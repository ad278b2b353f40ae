//! `vma:pc=N`: Linux VMA-based swap readahead (`swap_vma_readahead` and
//! `swap_vma_ra_win` in mm/swap_state.c), the default readahead when no
//! swap device is rotational.
//!
//! Works in **virtual page** order. At a fault on page `p` the window size
//! is [`swapin_nr_pages`] with `max_win = 2^min(pc,
//! 5)` (`SWAP_RA_ORDER_CEILING` is 5 on 64-bit), the previous fault page
//! and window, and the readahead hits since the last fault (all kept per
//! VMA in `swap_readahead_info`; the simulator sees one VMA, so one set).
//! The window goes forward from `p` if `p` follows the previous fault
//! (`p = prev + 1`), backward if it precedes it (`p = prev − 1`: the pages
//! `p − win + 1 ..= p`), else it is centred (`p − (win − 1)/2`), and is
//! clipped to the 2 MiB-aligned PMD range around `p` (the page table the
//! kernel walks). VMA bounds are not known from a trace: not clipped to.
use super::{swapin_nr_pages, Fault, Prefetcher, PrefetcherInfo};

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "vma",
    summary: "Linux VMA readahead: window around the faulting address, grown on hits",
    params: "pc=N (0..=10, vm.page-cluster, default 3; windows stop at 2^5)",
    slots: false,
    build: |c| {
        c.params.allow_for("prefetcher", "vma", &["pc"])?;
        let pc = c.params.int("pc", 3, 0, 10)?;
        Ok(Box::new(Vma {
            max_win: 1 << pc.min(5),
            pmd_pages: ((2u64 << 20) / c.page_size.max(1)).max(1),
            prev: 0,
            prev_win: 0,
            hits: 0,
        }))
    },
};

struct Vma {
    max_win: u64,
    /// Pages per 2 MiB PMD.
    pmd_pages: u64,
    /// Page of the previous fault (`SWAP_RA_ADDR`).
    prev: u64,
    /// `SWAP_RA_WIN`.
    prev_win: u64,
    /// `SWAP_RA_HITS`.
    hits: u64,
}

impl Prefetcher for Vma {
    fn fault(&mut self, f: &Fault, out: &mut Vec<u64>) {
        if self.max_win == 1 {
            return;
        }
        let p = f.page;
        let hits = std::mem::take(&mut self.hits);
        let win = swapin_nr_pages(self.prev, p, hits, self.max_win, self.prev_win);
        let prev = std::mem::replace(&mut self.prev, p);
        self.prev_win = win;
        if win == 1 {
            return;
        }
        let (p, w) = (p as i128, win as i128);
        let left = if p == prev as i128 + 1 {
            p
        } else if prev as i128 == p + 1 {
            p - w + 1
        } else {
            p - (w - 1) / 2
        };
        let right = left + w;
        let pmd = self.pmd_pages as i128;
        let start = left.max(0).max(p / pmd * pmd);
        let end = right.min(p / pmd * pmd + pmd);
        out.extend((start..end).filter(|&x| x != p).map(|x| x as u64));
    }
    fn hit(&mut self, _page: u64) {
        self.hits += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::prefetch::testutil::*;

    #[test]
    fn hand_worked_forward() {
        // lru, 4 pages, pc=3 (window <= 8). Pages 0..7 once (resident
        // 4 5 6 7 after), then 0..7 again. prev = 0, prev_win = 0 at first.
        //  0: major; not adjacent to prev 0: window 1, no read. Evicts 4.
        //  1: major; adjacent, no hits: window 2, forward: pages 1 2: reads
        //     2. Evicts 5, then 6 for the read. Resident 7 0 1 2.
        //  2: used 1 (hits 1).
        //  3: major; hits 1 -> 4 (at least 2/2): 3 is not prev + 1 (prev
        //     1): centred, 3 - 1 = 2 .. 5: 2 resident, reads 4 5 (evicting
        //     7, 0, 1 with the fault's). Resident 2 3 4 5.
        //  4 5: used 3 (hits 2).
        //  6: major; hits 2 -> 4; centred 5 .. 8: reads 7 (8 not in the
        //     trace). 7: used 4.
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        assert_eq!(counts(&run("lru", 4, "vma", &t)), (4, 4, 4, 0));
    }

    #[test]
    fn hand_worked_backward() {
        // lru 4; 0..7, then 3 2 1 0 (resident 4 5 6 7 before).
        //  3: major; prev 0 not adjacent: window 1. Evicts 4.
        //  2: major; prev 3 = 2 + 1, adjacent: window 2, backward: pages
        //     1 2: reads 1 (a centred window would be 2 3: no read).
        //  1: used 1 (hits 1).
        //  0: major; hits 1 -> 4; not adjacent to prev 2: centred from
        //     0 - 1 = -1, clipped at 0: pages 0 1 2, all resident: no read.
        let t = [0, 1, 2, 3, 4, 5, 6, 7, 3, 2, 1, 0];
        assert_eq!(counts(&run("lru", 4, "vma", &t)), (3, 1, 1, 0));
    }

    #[test]
    fn windows_stop_at_the_pmd_boundary() {
        // The forward test's pages shifted to 508..515, across the 2 MiB
        // boundary at page 512 (4 KiB pages). Resident 512..515 after the
        // first pass.
        //  508: window 1. 509: window 2, reads 510. 510: used (hits 1).
        //  511: window 4, centred 510..513, clipped to 510 511: no read
        //       (unclipped it would read 512 513).
        //  512: no hits, adjacent: 2, and at least 4/2: window 2, forward:
        //       reads 513 (its own PMD). 513: used (hits 1).
        //  514: window 4, centred 513..516: reads 515 (516 not in the trace).
        //  515: used.
        // Majors 508 509 511 512 514; reads 3, all used.
        let t: Vec<u64> = (508..516).chain(508..516).collect();
        assert_eq!(counts(&run("lru", 4, "vma", &t)), (5, 3, 3, 0));
    }
}
