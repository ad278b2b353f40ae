//! LFU: evict the resident page referenced the fewest times; among pages
//! with the same count, the least recently used.
//!
//! A page's count is the number of references since it was last brought in:
//! it starts at 1 on a miss and is forgotten on eviction ("in-cache" LFU,
//! as libCacheSim's LFU; "perfect" LFU, which remembers counts of evicted
//! pages, is not modelled). Among equal counts the victim is the page whose
//! last reference is oldest. This is the same choice as libCacheSim's LFU,
//! which keeps each frequency's objects in FIFO order of *entering* that
//! frequency, i.e. of their last reference (other implementations break the
//! tie by insertion order; see the `hand_worked` test for a trace where the
//! two differ).
//!
//! O(1) per reference (Shah, Mitra & Matani 2010): one bucket per distinct
//! count in use, buckets in a list by increasing count, and in each bucket
//! the pages with that count, most recently referenced first. A hit moves a
//! page to the next bucket (count + 1), creating it if needed; the victim is
//! the tail of the first bucket.
//!
//! Memory: 12 bytes per page (two links and the bucket, in one record so a
//! hit touches one cache line per page involved) plus 24 bytes per bucket
//! (at most one per resident page). Speed: about that of LRU, since a hit
//! moves the page between linked lists much as LRU's does.
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::{prefetch, NIL};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lfu",
    summary: "least frequently used, ties broken by age",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("lfu", &[])?;
        Ok(Box::new(Lfu {
            nodes: vec![[NIL; 3]; c.pages],
            buckets: Vec::new(),
            free: NIL,
            first: NIL,
            len: 0,
            cap: c.capacity,
        }))
    },
};

/// Index in a node: the neighbour toward the bucket's head.
const PREV: usize = 0;
/// Index in a node: the neighbour toward the bucket's tail.
const NEXT: usize = 1;
/// Index in a node: the page's bucket, or `NIL` if not resident.
const BUCKET: usize = 2;

#[derive(Clone, Copy)]
struct Bucket {
    count: u64,
    /// Most recently referenced page.
    head: u32,
    /// Least recently referenced page.
    tail: u32,
    /// Neighbouring buckets: [lower count, higher count]. For a free bucket,
    /// `next[1]` links the free list.
    next: [u32; 2],
}

struct Lfu {
    /// Per page: neighbours in its bucket and the bucket, together so that
    /// a hit touches one cache line per page involved.
    nodes: Vec<[u32; 3]>,
    buckets: Vec<Bucket>,
    /// Free list of buckets.
    free: u32,
    /// Bucket with the lowest count.
    first: u32,
    len: usize,
    cap: usize,
}

impl Lfu {
    /// A new empty bucket with `count`, linked after `after` (or first if NIL).
    fn new_bucket(&mut self, count: u64, after: u32) -> u32 {
        let b = Bucket {
            count,
            head: NIL,
            tail: NIL,
            next: [after, NIL],
        };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.buckets[i as usize].next[1];
            self.buckets[i as usize] = b;
            i
        } else {
            self.buckets.push(b);
            (self.buckets.len() - 1) as u32
        };
        let higher = if after == NIL {
            self.first
        } else {
            self.buckets[after as usize].next[1]
        };
        self.buckets[i as usize].next[1] = higher;
        if higher != NIL {
            self.buckets[higher as usize].next[0] = i;
        }
        if after == NIL {
            self.first = i;
        } else {
            self.buckets[after as usize].next[1] = i;
        }
        i
    }

    /// Unlinks an empty bucket and frees it.
    fn drop_bucket(&mut self, b: u32) {
        let [lo, hi] = self.buckets[b as usize].next;
        if lo != NIL {
            self.buckets[lo as usize].next[1] = hi;
        } else {
            self.first = hi;
        }
        if hi != NIL {
            self.buckets[hi as usize].next[0] = lo;
        }
        self.buckets[b as usize].next[1] = self.free;
        self.free = b;
    }

    /// Takes page `id` out of bucket `b` (which may become empty).
    #[inline]
    fn unlink(&mut self, id: u32, b: u32) {
        let [p, n, _] = self.nodes[id as usize];
        let bk = &mut self.buckets[b as usize];
        if p != NIL {
            self.nodes[p as usize][NEXT] = n;
        } else {
            bk.head = n;
        }
        if n != NIL {
            self.nodes[n as usize][PREV] = p;
        } else {
            bk.tail = p;
        }
    }

    /// Puts page `id` at the head of bucket `b`.
    #[inline]
    fn push(&mut self, id: u32, b: u32) {
        let bk = &mut self.buckets[b as usize];
        let h = bk.head;
        bk.head = id;
        if h != NIL {
            self.nodes[h as usize][PREV] = id;
        } else {
            bk.tail = id;
        }
        self.nodes[id as usize] = [NIL, h, b];
    }

    fn hit(&mut self, id: u32, b: u32) {
        let Bucket {
            count, head, tail, ..
        } = self.buckets[b as usize];
        let hi = self.buckets[b as usize].next[1];
        let next_exists = hi != NIL && self.buckets[hi as usize].count == count + 1;
        if head == id && tail == id && !next_exists {
            // Alone in its bucket and no bucket for count + 1: bump in place.
            self.buckets[b as usize].count += 1;
            return;
        }
        let target = if next_exists {
            hi
        } else {
            self.new_bucket(count + 1, b)
        };
        self.unlink(id, b);
        self.push(id, target);
        if self.buckets[b as usize].head == NIL {
            self.drop_bucket(b);
        }
    }

    fn evict(&mut self) -> Option<u32> {
        let b = self.first;
        if b == NIL {
            return None;
        }
        let v = self.buckets[b as usize].tail;
        if v == NIL {
            return None;
        }
        self.unlink(v, b);
        self.nodes[v as usize][BUCKET] = NIL;
        if self.buckets[b as usize].head == NIL {
            self.drop_bucket(b);
        }
        self.len -= 1;
        Some(v)
    }
}

impl Policy for Lfu {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let b = self.nodes[id as usize][BUCKET];
        if b != NIL {
            self.hit(id, b);
            return Access::Hit;
        }
        let victim = if self.len >= self.cap {
            self.evict()
        } else {
            None
        };
        let f = self.first;
        let target = if f != NIL && self.buckets[f as usize].count == 1 {
            f
        } else {
            self.new_bucket(1, NIL)
        };
        self.push(id, target);
        self.len += 1;
        Access::Miss { victim }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.nodes.as_ptr().wrapping_add(id as usize));
    }
    fn bytes_per_page(&self) -> usize {
        let pages = self.nodes.len().max(1);
        12 + (std::mem::size_of::<Bucket>() * self.buckets.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    #[test]
    fn hand_worked() {
        // cap 2. Counts in brackets.
        // 1 [1]; 1 hit [2]; 2 [1]; 3: evict the lowest count, 2 -> {1[2], 3[1]};
        // 2: evict 3 -> {1[2], 2[1]}; 1 hit [3].
        // (LRU would evict 1 at the first 3.)
        assert_eq!(
            replay("lfu", 2, &[1, 1, 2, 3, 2, 1]),
            vec![M, H, M, ev(2), ev(3), H]
        );
        // Ties go to the least recently used, not the oldest inserted:
        // 1 2 2 1 -> both count 2; 1 was inserted first but used last,
        // so 3 evicts 2, and 1 then hits.
        assert_eq!(
            replay("lfu", 2, &[1, 2, 2, 1, 3, 1]),
            vec![M, M, H, H, ev(2), H]
        );
        // Counts are forgotten on eviction. cap 2:
        // 1 1 1 -> 1[3]; 2 2 2 2 -> 2[4]; 3 evicts 1 (3 < 4) -> {2[4], 3[1]};
        // 1 evicts 3 -> 1 comes back with [1], not [4]; 1 hit -> [2];
        // 3 evicts 1 (2 < 4); 2 hits. Had 1 kept its old count (3 + 2 = 5 > 4),
        // the second 3 would have evicted 2 instead.
        assert_eq!(
            replay("lfu", 2, &[1, 1, 1, 2, 2, 2, 2, 3, 1, 1, 3, 2]),
            vec![M, H, H, M, H, H, H, ev(1), ev(3), H, ev(1), H]
        );
        // Through the engine: a frequently used page survives a scan that
        // flushes LRU. cap 3: 1 x5, 2 x5, then 3 4 5 6 7, then 1 2.
        let mut t = vec![1; 5];
        t.extend([2; 5]);
        t.extend([3, 4, 5, 6, 7, 1, 2]);
        // LFU: 1[5] 2[5] stay; each new page evicts the previous new page.
        // Misses: 1, 2, 3..7 = 7; the final 1 and 2 hit.
        assert_eq!(misses("lfu", 3, &t), 7);
        // LRU: the scan of 5 pages flushes 1 and 2: 9 misses.
        assert_eq!(misses("lru", 3, &t), 9);
    }

    #[test]
    fn buckets_are_reused_and_counts_climb() {
        // One page hit many times keeps a single bucket (bump in place),
        // and a second page climbing past it still finds the right order.
        // cap 2: 1 x10 -> 1[10]; 2 x12 -> 2[12]; 3 evicts 1 (10 < 12).
        let mut t: Vec<u32> = vec![1; 10];
        t.extend([2; 12]);
        t.push(3);
        let r = replay("lfu", 2, &t);
        assert_eq!(r[22], ev(1));
        // And with 2 hit only 9 times, 3 evicts 2 instead.
        let mut t: Vec<u32> = vec![1; 10];
        t.extend([2; 9]);
        t.push(3);
        assert_eq!(replay("lfu", 2, &t)[19], ev(2));
        // A hit on the most recent page of a shared bucket moves only that
        // page up. cap 3: 1 2 3 all at [1]; 3 hit -> 3[2], 1 and 2 stay [1];
        // 4 evicts the LRU of count 1, which is 1; 1 evicts the LRU of
        // {2[1], 4[1]}, which is 2; 4 then hits.
        assert_eq!(
            replay("lfu", 3, &[1, 2, 3, 3, 4, 1, 4]),
            vec![M, M, M, H, ev(1), ev(2), H]
        );
    }

    #[test]
    fn params_are_checked() {
        // Refused when parsed, naming the key; and by the engine, for a
        // spec made without parse.
        let e = crate::policy::PolicySpec::parse("lfu:decay=1").unwrap_err();
        assert!(e.to_string().contains("decay"), "{e}");
        let t = swaplab_trace::dense::DenseTrace::from_pages(&[1, 2]);
        let (name, params) = crate::policy::Params::split_spec("lfu:decay=1", "").unwrap();
        let spec = crate::policy::PolicySpec { name, params };
        assert!(crate::engine::simulate_checked(&t, &spec, 1, 0).is_err());
    }

    #[test]
    fn contract() {
        contract_all("lfu");
    }
}
