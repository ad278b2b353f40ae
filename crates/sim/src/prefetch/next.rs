//! `next:n=N`: at each major fault, read the N virtual pages that follow the
//! faulting one (a fixed forward window, the simplest sequential
//! prefetcher; no feedback from hits).
use super::{Fault, Prefetcher, PrefetcherInfo};

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "next",
    summary: "read the N virtual pages after the faulting one",
    params: "n=N (1..=1024, default 8)",
    slots: false,
    build: |c| {
        c.params.allow_for("prefetcher", "next", &["n"])?;
        Ok(Box::new(Next {
            n: c.params.int("n", 8, 1, 1024)?,
        }))
    },
};

struct Next {
    n: u64,
}

impl Prefetcher for Next {
    fn fault(&mut self, f: &Fault, out: &mut Vec<u64>) {
        out.extend((1..=self.n).map(|k| f.page.saturating_add(k)));
    }
}

#[cfg(test)]
mod tests {
    use crate::prefetch::testutil::*;

    #[test]
    fn hand_worked() {
        // lru, 4 pages, next:n=2. Pages 0..7 touched once (minor faults,
        // no swap copies yet: nothing to read), so memory holds 4 5 6 7
        // (LRU order); then 0..7 again:
        //  0: major; reads 1, 2 (both swapped out): 3 pages come in, the
        //     LRU pages 4 5 6 go (reads are inserted like references).
        //     Resident 7 0 1 2. reads 2.
        //  1, 2: hits on prefetched pages: used 2.
        //  3: major; reads 4, 5 -> evicts 7 0 1. Resident 2 3 4 5. reads 4.
        //  4, 5: used 4.
        //  6: major; reads 7 (8 is not in the trace) -> evicts 2 3.
        //     Resident 4 5 6 7 (order 4 5 6 7). reads 5.
        //  7: used 5.
        // Major faults 3 (instead of 8), nothing evicted unused.
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        let r = run("lru", 4, "next:n=2", &t);
        assert_eq!(counts(&r), (3, 5, 5, 0));
        assert_eq!(r.counters.hits, 5);
        // A stride-2 walk over 16 pages 0 2 .. 30, twice, lru 4: at each
        // fault of the second pass, p+1 is not in the trace (never touched,
        // no swap copy: nothing to read) and p+2 is read and used next.
        let t: Vec<u64> = (0..16).map(|p| 2 * p).cycle().take(32).collect();
        let r = run("lru", 4, "next:n=2", &t);
        // Second pass: faults at 0, 4, 8, ..., 28 (8), reads 2, 6, ..., 30 (8), all used.
        assert_eq!(counts(&r), (8, 8, 8, 0));
    }

    #[test]
    fn unused_reads_are_counted_at_eviction() {
        // lru, 3 pages, next:n=2. 0..5 once: resident 3 4 5. Then 0: major,
        // reads 1 2, evicting 3 4 5: resident 0 1 2. Then 5 (major, no
        // read: 6 is not in the trace), evicts 0; 4 (major) reads 5? 5 is
        // resident: no; 6 absent: no read; evicts 1 unused; 3 (major)
        // reads 4, 5: resident; evicts 2 unused.
        let r = run("lru", 3, "next:n=2", &[0, 1, 2, 3, 4, 5, 0, 5, 4, 3]);
        assert_eq!(counts(&r), (4, 2, 0, 2));
    }
}
