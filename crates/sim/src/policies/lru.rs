//! LRU: evict the least recently used page.
//!
//! One [`LazyLists`] list: a hit re-stamps the page (one write to its 4-byte
//! entry, which the engine's prefetch hint brings in early) and appends it
//! to a queue; eviction pops the queue's oldest valid entry, skipping stale
//! ones. The order is exactly a linked list's (tested against
//! `util::Lists` in `lazy_lists.rs`, and against libCacheSim in
//! `tests/peer.rs`), without touching both list neighbours of every hit
//! page, which on a trace of 5 M distinct pages were two cache misses per
//! reference that no prefetch could hide (the neighbours are known only
//! once the page's own links have arrived).
use crate::lazy_lists::LazyLists;
use crate::policy::{Access, Policy, PolicyInfo, Req};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru",
    summary: "least recently used",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("lru", &[])?;
        Ok(Box::new(Lru {
            list: LazyLists::new(1, c.pages),
            cap: c.capacity,
        }))
    },
};

struct Lru {
    list: LazyLists,
    cap: usize,
}

impl Policy for Lru {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        if self.list.which(id).is_some() {
            self.list.move_front(0, id);
            return Access::Hit;
        }
        let victim = if self.list.len(0) >= self.cap {
            self.list.pop_back(0)
        } else {
            None
        };
        self.list.push_front(0, id);
        Access::Miss { victim }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        self.list.prefetch(id);
    }
    fn bytes_per_page(&self) -> usize {
        self.list.bytes_per_page()
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
}
