//! The LRU stack-distance tracker shared by the exact pass and SHARDS.
//!
//! Every reference gets a *position* (a logical clock). Each live key (page)
//! marks the position of its last reference in a bitmap; the stack distance
//! of a reuse is the number of marks after the key's previous position, plus
//! one (the key itself): the number of distinct keys referenced since the
//! previous reference to it, including it. A memory of `c` pages under LRU
//! hits exactly the references with distance ≤ `c`.
//!
//! Counting marks after a position is a prefix sum: a Fenwick tree over the
//! popcounts of the bitmap's 64-bit words, plus one popcount inside the
//! word. The tree has one `u32` per 64 positions, so it stays small enough
//! for the cache (1.25 MB for 10 M pages) and most of the per-reference
//! cost is the random access to the key's last position.
//!
//! Positions are bounded: when the clock reaches the capacity (about twice
//! the number of live keys), live positions are renumbered 0..live in order
//! (their rank among the marks) and the clock restarts at `live`. That costs
//! O(keys + capacity / 64) once per at least `capacity / 2` references.

/// "Never referenced (or removed)" in `last`.
const NONE: u32 = u32::MAX;
/// Largest capacity in positions: a multiple of 64, every position < `NONE`.
const MAX_CAP: u64 = (1 << 32) - 64;
/// Most live keys the tracker accepts, so that compaction always frees at
/// least half of the positions.
pub(crate) const MAX_KEYS: u64 = MAX_CAP / 2;

#[derive(Debug, Clone)]
pub(crate) struct StackTracker {
    /// Position of each key's last reference, or `NONE`.
    last: Vec<u32>,
    /// One bit per position: set iff it is some live key's last reference.
    bits: Vec<u64>,
    /// Fenwick tree (1-based) over the popcounts of `bits`' words.
    tree: Vec<u32>,
    /// The next position to hand out.
    t: u32,
    /// Number of positions (`bits.len() * 64`).
    cap: u32,
    /// Number of live keys (set bits).
    live: u32,
    /// Smallest capacity; compaction never shrinks below it.
    min_cap: u32,
    /// Scratch for compaction (exclusive prefix popcounts per word).
    scratch: Vec<u32>,
}

pub(crate) use crate::util::prefetch;

fn round_cap(n: u64) -> u32 {
    (n.div_ceil(64) * 64).clamp(64, MAX_CAP) as u32
}

impl StackTracker {
    /// A tracker for keys `0..keys` (more keys may be added later: `last`
    /// grows), with room for `max(2 * keys, min_cap)` positions before the
    /// first compaction. `keys` must not exceed [`MAX_KEYS`].
    pub(crate) fn new(keys: usize, min_cap: u64) -> Self {
        let cap = round_cap((2 * keys as u64).max(min_cap));
        let words = cap as usize / 64;
        StackTracker {
            last: vec![NONE; keys],
            bits: vec![0; words],
            tree: vec![0; words + 1],
            t: 0,
            cap,
            live: 0,
            min_cap: round_cap(min_cap),
            scratch: Vec::new(),
        }
    }

    /// Number of live keys (the depth of the LRU stack).
    pub(crate) fn live(&self) -> u32 {
        self.live
    }

    /// Current capacity in positions (for tests of compaction).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> u32 {
        self.cap
    }

    /// Prefetches `key`'s last position (call some references ahead).
    #[inline(always)]
    pub(crate) fn prefetch_key(&self, key: u32) {
        prefetch(self.last.as_ptr().wrapping_add(key as usize));
    }

    /// Prefetches the bitmap word (and tree node) of `key`'s last position
    /// (call a few references ahead, after [`prefetch_key`](Self::prefetch_key)).
    #[inline(always)]
    pub(crate) fn prefetch_position(&self, key: u32) {
        if let Some(&p) = self.last.get(key as usize) {
            if p != NONE {
                let w = p as usize >> 6;
                prefetch(self.bits.as_ptr().wrapping_add(w));
                // The lowest levels of the Fenwick walks from this word.
                prefetch(self.tree.as_ptr().wrapping_add(w + 1));
            }
        }
    }

    /// References `key`: returns its stack distance (≥ 1), or 0 on its first
    /// reference (or first since [`remove`](Self::remove)).
    #[inline]
    pub(crate) fn access(&mut self, key: u32) -> u32 {
        if self.t == self.cap {
            self.compact();
        }
        let t = self.t;
        self.t += 1;
        let k = key as usize;
        if k >= self.last.len() {
            self.last.resize(k + 1, NONE);
        }
        let p = std::mem::replace(&mut self.last[k], t);
        let (wt, bt) = ((t >> 6) as usize, t & 63);
        if p == NONE {
            self.bits[wt] |= 1 << bt;
            self.add(wt, 1);
            self.live += 1;
            return 0;
        }
        let (wp, bp) = ((p >> 6) as usize, p & 63);
        // Marks at positions 0..=p (p itself is marked).
        let upto = self.prefix(wp) + (self.bits[wp] & (u64::MAX >> (63 - bp))).count_ones();
        let d = self.live - upto + 1;
        if wp == wt {
            self.bits[wp] = (self.bits[wp] & !(1 << bp)) | (1 << bt);
        } else {
            self.bits[wp] &= !(1 << bp);
            self.add(wp, u32::MAX); // −1
            self.bits[wt] |= 1 << bt;
            self.add(wt, 1);
        }
        d
    }

    /// Takes `key` off the stack (SHARDS fixed-size evicts sampled keys);
    /// its next reference counts as a first reference. No-op if not live.
    pub(crate) fn remove(&mut self, key: u32) {
        let Some(l) = self.last.get_mut(key as usize) else {
            return;
        };
        let p = std::mem::replace(l, NONE);
        if p == NONE {
            return;
        }
        let (wp, bp) = ((p >> 6) as usize, p & 63);
        self.bits[wp] &= !(1 << bp);
        self.add(wp, u32::MAX);
        self.live -= 1;
    }

    /// Sum of the popcounts of words `0..w`.
    #[inline]
    fn prefix(&self, w: usize) -> u32 {
        let mut i = w;
        let mut s = 0u32;
        while i > 0 {
            s = s.wrapping_add(self.tree[i]);
            i &= i - 1;
        }
        s
    }

    /// Adds `delta` (wrapping: `u32::MAX` is −1) to word `w`'s count.
    #[inline]
    fn add(&mut self, w: usize, delta: u32) {
        let n = self.tree.len();
        let mut i = w + 1;
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumbers live positions to 0..live (keeping their order), grows the
    /// capacity if fewer than half of the positions would be free, and
    /// rebuilds the bitmap and the tree.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.scratch.clear();
        let mut acc = 0u32;
        for &w in &self.bits {
            self.scratch.push(acc);
            acc += w.count_ones();
        }
        debug_assert_eq!(acc, self.live);
        for l in self.last.iter_mut() {
            let p = *l;
            if p != NONE {
                let (w, b) = ((p >> 6) as usize, p & 63);
                *l = self.scratch[w] + (self.bits[w] & ((1u64 << b) - 1)).count_ones();
            }
        }
        let live = self.live as u64;
        let cap = if 2 * live > self.cap as u64 {
            round_cap((2 * live).max(self.min_cap as u64))
        } else {
            self.cap
        };
        let words = cap as usize / 64;
        self.cap = cap;
        self.bits.clear();
        self.bits.resize(words, 0);
        let full = self.live as usize / 64;
        self.bits[..full].fill(u64::MAX);
        let rest = self.live % 64;
        if rest != 0 {
            self.bits[full] = (1u64 << rest) - 1;
        }
        // Linear-time Fenwick build.
        self.tree.clear();
        self.tree.resize(words + 1, 0);
        for i in 1..=words {
            self.tree[i] = self.tree[i].wrapping_add(self.bits[i - 1].count_ones());
            let j = i + (i & i.wrapping_neg());
            if j <= words {
                self.tree[j] = self.tree[j].wrapping_add(self.tree[i]);
            }
        }
        self.t = self.live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The LRU stack kept literally (most recent first): the independent oracle.
    struct NaiveStack(Vec<u32>);
    impl NaiveStack {
        fn access(&mut self, key: u32) -> u32 {
            let d = match self.0.iter().position(|&k| k == key) {
                Some(i) => {
                    self.0.remove(i);
                    i as u32 + 1
                }
                None => 0,
            };
            self.0.insert(0, key);
            d
        }
        fn remove(&mut self, key: u32) {
            self.0.retain(|&k| k != key);
        }
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn hand_worked_distances() {
        // a b c a b d a, LRU stack (most recent first) after each reference:
        // a: ∞  [a]
        // b: ∞  [b a]
        // c: ∞  [c b a]
        // a: 3  [a c b]
        // b: 3  [b a c]
        // d: ∞  [d b a c]
        // a: 3  [a d b c]
        let mut s = StackTracker::new(4, 0);
        let d: Vec<u32> = [0, 1, 2, 0, 1, 3, 0].iter().map(|&k| s.access(k)).collect();
        assert_eq!(d, vec![0, 0, 0, 3, 3, 0, 3]);
        assert_eq!(s.live(), 4);
        // Immediate reuse has distance 1; a page that was just pushed to the
        // bottom has distance = stack depth.
        // a: 1 [a d b c]; c: 4 [c a d b]
        assert_eq!(s.access(0), 1);
        assert_eq!(s.access(2), 4);
    }

    #[test]
    fn compaction_keeps_distances() {
        // Tiny capacities force a compaction every few dozen references,
        // including ones where most positions are live and where the
        // capacity has to grow (keys not known in advance).
        for (keys_hint, min_cap, pages) in [
            (40usize, 0u64, 40u64),
            (64, 0, 64),
            (0, 64, 100),
            (0, 64, 33),
            (1, 0, 1),
            (300, 0, 300),
        ] {
            for seed in 1..4u64 {
                let mut x = seed * 0x9E37_79B9 + pages;
                let mut s = StackTracker::new(keys_hint, min_cap);
                let mut n = NaiveStack(Vec::new());
                for i in 0..4000 {
                    let r = xorshift(&mut x);
                    // Mix cyclic scans (all keys live at compaction) with random reuse.
                    let key = if (i / 500) % 2 == 0 {
                        (i as u64 % pages) as u32
                    } else {
                        (r % pages) as u32
                    };
                    assert_eq!(
                        s.access(key),
                        n.access(key),
                        "keys {keys_hint} cap {min_cap} pages {pages} ref {i}"
                    );
                }
                assert_eq!(s.live() as usize, n.0.len());
            }
        }
    }

    #[test]
    fn compaction_at_exact_boundaries() {
        // 64 keys, capacity 128: a scan of all keys fills positions 0..64,
        // the second scan 64..128, and the 129th reference compacts with
        // every live position in the upper half.
        let mut s = StackTracker::new(64, 0);
        assert_eq!(s.capacity(), 128);
        for k in 0..64 {
            assert_eq!(s.access(k), 0);
        }
        for k in 0..64 {
            assert_eq!(s.access(k), 64);
        }
        // Reuse of the most recent key right at the boundary (stack 63 62 … 0),
        // then of the oldest one, which compaction renumbered to position 0.
        assert_eq!(s.access(63), 1);
        assert_eq!(s.capacity(), 128, "half free after compaction: no growth");
        assert_eq!(s.access(0), 64);
        assert_eq!(s.access(0), 1);
        assert_eq!(s.access(1), 64);

        // Growing: 65 live keys in a capacity of 64 (no hint).
        let mut s = StackTracker::new(0, 64);
        let mut n = NaiveStack(Vec::new());
        for k in (0..65).chain(0..65).chain([64, 0, 32]) {
            assert_eq!(s.access(k), n.access(k));
        }
        assert!(s.capacity() >= 130);

        // A single key over many compactions.
        let mut s = StackTracker::new(1, 0);
        assert_eq!(s.access(0), 0);
        for _ in 0..1000 {
            assert_eq!(s.access(0), 1);
        }
    }

    #[test]
    fn removal_matches_naive_stack() {
        let mut x = 7u64;
        let mut s = StackTracker::new(0, 64);
        let mut n = NaiveStack(Vec::new());
        for i in 0..5000 {
            let r = xorshift(&mut x);
            let key = (r % 90) as u32;
            if i % 7 == 3 {
                s.remove(key);
                n.remove(key);
            } else {
                assert_eq!(s.access(key), n.access(key), "ref {i}");
            }
            assert_eq!(s.live() as usize, n.0.len());
        }
        // Removing an unknown or already removed key is a no-op.
        s.remove(1_000_000);
        s.remove(5);
        s.remove(5);
        n.remove(5);
        assert_eq!(s.live() as usize, n.0.len());
    }
}
