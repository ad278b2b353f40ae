//! OPT (Belady's MIN, 1966): on a miss with memory full, evict the resident
//! page whose next use is farthest in the future; pages never used again
//! (`next_use == u32::MAX`) go first. No policy has fewer misses.
//!
//! Implementation: each page keeps the key of its current next use.
//! * Pages whose next use is "never" are pushed on a stack; such a page
//!   stays resident-and-never until evicted, so any of them is a correct
//!   victim (which one does not change the miss count).
//! * Other pages are pushed on a max-heap of `(next use, page)` at every
//!   reference. An entry is valid only if its page is resident and the key
//!   is still the page's current key; older entries are skipped when popped.
//!   With a consistent `next_use` the stale entries have keys at or before
//!   the current position, so they never outrank valid ones; validity is
//!   checked against the stored key all the same, so that an inconsistent
//!   `next_use` can give a poor choice but never a wrong one or a panic.
//! * When the heap (or the stack) grows past about twice the capacity it is
//!   filtered down to its valid entries, which bounds its memory by
//!   ~2 × capacity entries and costs O(1) amortised per reference.
//!
//! Memory: 4 bytes per page (key) plus 8 bytes per heap entry (at most
//! ~2 × capacity + 64) and 4 per stack entry.
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::prefetch;
use std::collections::BinaryHeap;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt",
    summary: "Belady's optimal: evict the page whose next use is farthest",
    params: "",
    needs_future: true,
    build: |c| {
        c.params.allow("opt", &[])?;
        let frames = c.capacity.min(c.pages);
        let limit = frames.saturating_mul(2).saturating_add(64);
        Ok(Box::new(Opt {
            key: vec![OUT; c.pages],
            heap: BinaryHeap::with_capacity(limit + 1),
            never: Vec::new(),
            heap_limit: limit,
            never_limit: limit,
            len: 0,
            cap: c.capacity,
        }))
    },
};

/// Key of a page that is not resident. Real keys are positions (below
/// `u32::MAX - 1`, the trace length limit) or `NEVER`; a position equal to
/// `OUT` is clamped to `OUT - 1`.
const OUT: u32 = u32::MAX - 1;
const NEVER: u32 = u32::MAX;

struct Opt {
    /// Per page: its next use if resident, else `OUT`.
    key: Vec<u32>,
    /// `(next use << 32) | page` of resident pages with a next use.
    heap: BinaryHeap<u64>,
    /// Pages that were resident with no next use when pushed.
    never: Vec<u32>,
    heap_limit: usize,
    never_limit: usize,
    len: usize,
    cap: usize,
}

impl Opt {
    #[inline]
    fn push(&mut self, id: u32, key: u32) {
        self.key[id as usize] = key;
        if key == NEVER {
            self.never.push(id);
            if self.never.len() > self.never_limit {
                let k = &self.key;
                self.never.retain(|&p| k[p as usize] == NEVER);
                self.never_limit = self.never_limit.max(2 * self.never.len());
            }
        } else {
            self.heap.push((u64::from(key) << 32) | u64::from(id));
            if self.heap.len() > self.heap_limit {
                let k = &self.key;
                self.heap
                    .retain(|&e| k[e as u32 as usize] == (e >> 32) as u32);
                self.heap_limit = self.heap_limit.max(2 * self.heap.len());
            }
        }
    }

    /// Removes and returns the resident page used farthest in the future.
    fn evict(&mut self) -> Option<u32> {
        while let Some(p) = self.never.pop() {
            if self.key[p as usize] == NEVER {
                self.key[p as usize] = OUT;
                return Some(p);
            }
        }
        while let Some(e) = self.heap.pop() {
            let (k, p) = ((e >> 32) as u32, e as u32);
            if self.key[p as usize] == k {
                self.key[p as usize] = OUT;
                return Some(p);
            }
        }
        None
    }
}

impl Policy for Opt {
    #[inline]
    fn access(&mut self, id: u32, req: &Req) -> Access {
        let next = if req.next_use == OUT {
            OUT - 1
        } else {
            req.next_use
        };
        if self.key[id as usize] != OUT {
            self.push(id, next);
            return Access::Hit;
        }
        let victim = if self.len >= self.cap {
            self.evict()
        } else {
            None
        };
        if victim.is_none() {
            self.len += 1;
        }
        self.push(id, next);
        Access::Miss { victim }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.key.as_ptr().wrapping_add(id as usize));
    }
    fn bytes_per_page(&self) -> usize {
        let pages = self.key.len().max(1);
        4 + (8 * self.heap.capacity() + 4 * self.never.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;
    use crate::policy::{Access, PolicyConfig, PolicySpec, Req};

    #[test]
    fn hand_worked() {
        // Silberschatz et al., Operating System Concepts (the optimal
        // page-replacement figure): 20 references, 3 frames, 9 faults
        // (FIFO 15, LRU 12 on the same string).
        let os = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        assert_eq!(misses("opt", 3, &os), 9);
        assert_eq!(misses("lru", 3, &os), 12);
        // Step by step (next uses in brackets):
        // 7 0 1 fill. 2: 7[17] 0[4] 1[13] -> evict 7. 0 hit.
        // 3: 2[8] 0[6] 1[13] -> evict 1. 0 hit. 4: 2[8] 0[10] 3[9] -> evict 0.
        // 2 3 hit. 0: 2[12] 4[never] 3[11] -> evict 4. 3 2 hit.
        // 1: 2[14] 0[15] 3[never] -> evict 3. 2 0 1 hit.
        // 7: 2, 0[18], 1[19]: 2 is never used again -> evict 2. 0 1 hit.
        let ids: Vec<u32> = os.iter().map(|&x| x as u32).collect();
        assert_eq!(
            replay("opt", 3, &ids),
            vec![
                M,
                M,
                M,
                ev(7),
                H,
                ev(1),
                H,
                ev(0),
                H,
                H,
                ev(4),
                H,
                H,
                ev(3),
                H,
                H,
                H,
                ev(2),
                H,
                H
            ]
        );
        // Belady's anomaly string: OPT faults 7 times with 3 frames, 6 with 4
        // (FIFO: 9 and 10).
        let s = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
        assert_eq!(misses("opt", 3, &s), 7);
        assert_eq!(misses("opt", 4, &s), 6);
        // A loop one page larger than memory (0 1 2 3 repeated, 20 refs,
        // cap 3): after the 4 cold misses, each miss evicts the page whose
        // turn is farthest, which buys two hits before the next miss:
        // misses at positions 0 1 2 3, 6 (evicts 1), 9 (0), 12 (3), 15 (2),
        // 18 (0 or 1: neither is used again) = 9. LRU misses all 20.
        let lp: Vec<u64> = (0..4).cycle().take(20).collect();
        assert_eq!(misses("opt", 3, &lp), 9);
        assert_eq!(misses("lru", 3, &lp), 20);
    }

    /// Belady by linear scan: at each eviction look at every resident
    /// page's next use and evict the farthest (O(cap) per miss).
    fn brute_force(t: &[u64], cap: usize) -> u64 {
        let mut next = vec![usize::MAX; t.len()];
        let mut seen = std::collections::HashMap::new();
        for i in (0..t.len()).rev() {
            if let Some(&j) = seen.get(&t[i]) {
                next[i] = j;
            }
            seen.insert(t[i], i);
        }
        // (page, next use) of each resident page.
        let mut mem: Vec<(u64, usize)> = Vec::new();
        let mut misses = 0;
        for (i, &p) in t.iter().enumerate() {
            if let Some(e) = mem.iter_mut().find(|e| e.0 == p) {
                e.1 = next[i];
                continue;
            }
            misses += 1;
            if mem.len() == cap {
                let far = (0..mem.len()).max_by_key(|&j| mem[j].1).unwrap();
                mem.swap_remove(far);
            }
            mem.push((p, next[i]));
        }
        misses
    }

    #[test]
    fn matches_brute_force_and_bounds_others() {
        for seed in 1..4 {
            // Long enough for the heap to be filtered many times at small caps.
            let t = random_trace(3000, 80, seed);
            for cap in [1, 2, 5, 17, 40, 79] {
                let opt = misses("opt", cap, &t);
                assert_eq!(opt, brute_force(&t, cap), "seed {seed} cap {cap}");
                // OPT is a lower bound for every other policy.
                for other in ["fifo", "lru", "clock", "sieve", "lfu", "arc", "2q"] {
                    assert!(opt <= misses(other, cap, &t), "{other} cap {cap}");
                }
            }
        }
    }

    #[test]
    fn inconsistent_future_does_not_break_it() {
        // next_use values that lie (in the past, repeated, the sentinel):
        // OPT must still hit exactly the resident pages and evict only
        // resident pages when full.
        let spec = PolicySpec::parse("opt").unwrap();
        let pages = 50;
        let mut p = (spec.info().build)(&PolicyConfig {
            capacity: 7,
            pages,
            params: &spec.params,
            seed: 0,
        })
        .unwrap();
        let mut resident = vec![false; pages];
        let mut n = 0;
        let mut x = 12345u64;
        for pos in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = (x % pages as u64) as u32;
            let next_use = match x % 5 {
                0 => u32::MAX,
                1 => u32::MAX - 1,
                2 => 3,
                _ => (x >> 40) as u32,
            };
            let r = p.access(
                id,
                &Req {
                    pos,
                    write: false,
                    next_use,
                },
            );
            match r {
                Access::Hit | Access::SwapCache => assert!(resident[id as usize]),
                Access::Miss { victim } => {
                    assert!(!resident[id as usize]);
                    resident[id as usize] = true;
                    match victim {
                        Some(v) => {
                            assert!(n == 7 && resident[v as usize] && v != id);
                            resident[v as usize] = false;
                        }
                        None => {
                            assert!(n < 7);
                            n += 1;
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn contract() {
        contract_all("opt");
    }
}
