//! SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI 2024).
//!
//! A FIFO queue of resident pages, each with a visited bit. New pages go in
//! at the head with the bit clear; a hit sets the bit and moves nothing. To
//! evict, the hand starts where it stopped last time (at the tail, the
//! oldest page, the first time or after it ran off the head), walks toward
//! the head clearing visited bits, and evicts the first page whose bit is
//! clear. The hand then rests on the evicted page's newer neighbour; if
//! there is none it wraps to the tail next time. Unlike CLOCK, a surviving
//! page keeps its place in the queue, and pages inserted behind the hand
//! (nearer the head) are not examined until the hand gets there.
//!
//! The queue is a ring log of page ids in insertion order: a new page is
//! appended at the head end, an evicted page leaves a hole (tombstone) that
//! the hand skips, holes at the tail end are trimmed, and when the ring
//! fills up the holes are squeezed out in one pass (amortised O(1), since
//! the ring is at least twice the memory size). So the hand walks memory
//! sequentially instead of chasing links, and a hit touches only two bits.
//! The walk prefetches the bits of the page 8 slots ahead of the hand, and
//! the miss path is a separate function so that the hit path (one load,
//! at most one store) saves no registers.
//!
//! Memory: 2 bits per page (resident, visited) and 4 bytes per ring slot
//! (2 to 4 slots per frame).
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::prefetch;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "sieve",
    summary: "SIEVE (NSDI 2024)",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("sieve", &[])?;
        let frames = c.capacity.min(c.pages).max(1);
        let ring = frames.saturating_mul(2).next_power_of_two();
        Ok(Box::new(Sieve {
            bits: vec![0; 2 * c.pages.div_ceil(64)],
            ring: vec![HOLE; ring],
            mask: ring as u64 - 1,
            tail: 0,
            head: 0,
            hand: 0,
            live: 0,
            cap: c.capacity,
            pages: c.pages,
        }))
    },
};

/// A ring slot whose page was evicted.
const HOLE: u32 = u32::MAX;
/// How far ahead of the hand the walk prefetches page bits.
const HAND_AHEAD: u64 = 8;

struct Sieve {
    /// Words 2k and 2k + 1: resident and visited bits of pages 64k..64k + 63.
    bits: Vec<u64>,
    /// Pages in insertion order at positions `tail..head` (mod the ring
    /// size), with holes.
    ring: Vec<u32>,
    mask: u64,
    /// Oldest position (never a hole after trimming, unless empty).
    tail: u64,
    /// Next free position.
    head: u64,
    /// Next position the hand examines, in `tail..=head`; the hand wraps to
    /// the tail when it reaches the head.
    hand: u64,
    /// Resident pages.
    live: usize,
    cap: usize,
    pages: usize,
}

#[inline]
fn at(id: u32) -> (usize, u64) {
    ((id >> 6) as usize * 2, 1u64 << (id & 63))
}

impl Sieve {
    #[inline]
    fn slot(&mut self, pos: u64) -> &mut u32 {
        &mut self.ring[(pos & self.mask) as usize]
    }

    /// Finds the victim, leaves a hole in its place and returns it.
    fn evict(&mut self) -> Option<u32> {
        if self.live == 0 {
            return None;
        }
        // One full pass clears every bit, so this ends within two passes.
        loop {
            if self.hand >= self.head {
                self.hand = self.tail;
            }
            // Bring in the bits of the page a few slots ahead of the hand,
            // so that the walk overlaps their cache misses (a hint only).
            let ahead = self.ring[((self.hand + HAND_AHEAD) & self.mask) as usize];
            prefetch(self.bits.as_ptr().wrapping_add(at(ahead).0));
            let p = *self.slot(self.hand);
            if p != HOLE {
                let (w, b) = at(p);
                if self.bits[w + 1] & b == 0 {
                    break;
                }
                self.bits[w + 1] &= !b;
            }
            self.hand += 1;
        }
        let pos = self.hand;
        let victim = std::mem::replace(self.slot(pos), HOLE);
        self.live -= 1;
        // The hand rests on the next page after the victim, or wraps to the
        // tail if the victim was the newest.
        self.hand += 1;
        while self.hand < self.head && *self.slot(self.hand) == HOLE {
            self.hand += 1;
        }
        if self.hand >= self.head {
            self.hand = self.tail;
        }
        while self.tail < self.head && *self.slot(self.tail) == HOLE {
            self.tail += 1;
        }
        if self.hand < self.tail {
            self.hand = self.tail;
        }
        Some(victim)
    }

    /// Squeezes the holes out of `tail..head`, keeping order and the hand.
    fn compact(&mut self) {
        let mut w = self.tail;
        let mut hand = None;
        for r in self.tail..self.head {
            if r == self.hand {
                hand = Some(w);
            }
            let p = *self.slot(r);
            if p != HOLE {
                *self.slot(w) = p;
                w += 1;
            }
        }
        for r in w..self.head {
            *self.slot(r) = HOLE;
        }
        self.head = w;
        self.hand = hand.unwrap_or(w);
    }
}

impl Sieve {
    /// A miss on `id`: evicts if memory is full and appends `id`. Kept out
    /// of line so that the hit path saves no registers.
    #[inline(never)]
    fn miss(&mut self, id: u32) -> Access {
        let (w, b) = at(id);
        let victim = if self.live >= self.cap {
            let v = self.evict();
            if let Some(v) = v {
                let (vw, vb) = at(v);
                self.bits[vw] &= !vb;
            }
            v
        } else {
            None
        };
        if self.head - self.tail > self.mask {
            self.compact();
        }
        // Append at the head: resident, not visited.
        let head = self.head;
        *self.slot(head) = id;
        self.head += 1;
        self.live += 1;
        self.bits[w] |= b;
        self.bits[w + 1] &= !b;
        Access::Miss { victim }
    }
}

impl Policy for Sieve {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let (w, b) = at(id);
        if let Some(&[res, vis]) = self.bits.get(w..w + 2).and_then(|p| p.first_chunk()) {
            if res & b != 0 {
                if vis & b == 0 {
                    self.bits[w + 1] = vis | b;
                }
                return Access::Hit;
            }
        }
        self.miss(id)
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.bits.as_ptr().wrapping_add(at(id).0));
    }
    fn bytes_per_page(&self) -> usize {
        let pages = self.pages.max(1);
        (8 * self.bits.len() + 4 * self.ring.len()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    #[test]
    fn hand_worked() {
        // cap 3. Queue written tail (oldest) -> head (newest), * = visited,
        // ^ = hand (none = start at the tail).
        //  1 2 3   fill            [1 2 3]
        //  1 hit                   [1* 2 3]
        //  4 miss: hand at tail 1*: clear, step to 2 (clear): evict 2; hand
        //          rests on 2's newer neighbour 3.      [1 ^3 4]
        //  3 hit                   [1 ^3* 4]
        //  5 miss: 3*: clear, step to 4: evict 4; no newer neighbour, so the
        //          hand wraps to the tail next time.   [1 3 5]
        //  1 hit   (1 survived at the tail: the hand passed it earlier)
        //  6 miss: start at the tail 1*: clear; 3 (cleared before): evict 3;
        //          hand on 5.                          [1 ^5 6]
        //  3 miss: hand at 5 (clear): evict 5 - the hand stayed put, it did
        //          not go back to the tail where 1 is unvisited. [1 ^6 3]
        //  1 hit.
        let s = [1, 2, 3, 1, 4, 3, 5, 1, 6, 3, 1];
        assert_eq!(
            replay("sieve", 3, &s),
            vec![M, M, M, H, ev(2), H, ev(4), H, ev(3), ev(5), H]
        );
        // CLOCK on the same string: frames [^1 2 3]; 1 hit; 4 clears 1 and
        // evicts 2 [1 4 ^3]; 3 hit; 5 clears 3 and evicts 1, which the hand
        // reaches next because CLOCK's circle puts 1 after 3 [5 ^4 3]; so
        // the 8th reference (1) misses and evicts 4.
        assert_eq!(&replay("clock", 3, &s)[6..8], &[ev(1), ev(4)]);
        // Pages that are never hit make SIEVE a FIFO.
        let ids: Vec<u32> = (0..20).map(|i| i % 7).collect();
        assert_eq!(replay("sieve", 3, &ids), replay("fifo", 3, &ids));
        // Through the engine.
        assert_eq!(misses("sieve", 3, &[1, 2, 3, 1, 4, 3, 5, 1, 6, 3, 1]), 7);
    }

    /// SIEVE straight from the paper's pseudocode: a Vec as the queue
    /// (index 0 = tail), O(n) removal, the hand an index or None.
    fn reference(cap: usize, t: &[u32]) -> Vec<crate::policy::Access> {
        use crate::policy::Access;
        let mut q: Vec<(u32, bool)> = Vec::new();
        let mut hand: Option<usize> = None;
        let mut out = Vec::new();
        for &x in t {
            if let Some(e) = q.iter_mut().find(|e| e.0 == x) {
                e.1 = true;
                out.push(Access::Hit);
                continue;
            }
            let mut victim = None;
            if q.len() == cap {
                let mut o = hand.unwrap_or(0);
                while q[o].1 {
                    q[o].1 = false;
                    o = if o + 1 < q.len() { o + 1 } else { 0 };
                }
                victim = Some(q.remove(o).0);
                // The newer neighbour now sits at index o.
                hand = (o < q.len()).then_some(o);
            }
            q.push((x, false));
            out.push(Access::Miss { victim });
        }
        out
    }

    #[test]
    fn matches_the_paper_pseudocode() {
        for seed in 1..4 {
            let t: Vec<u32> = random_trace(4000, 90, seed)
                .into_iter()
                .map(|x| x as u32)
                .collect();
            for cap in [1, 2, 3, 5, 16, 40, 89, 90, 200] {
                assert_eq!(replay("sieve", cap, &t), reference(cap, &t), "cap {cap}");
            }
        }
    }

    #[test]
    fn params_are_checked() {
        // Refused when parsed, naming the key; and by the engine, for a
        // spec made without parse.
        let e = crate::policy::PolicySpec::parse("sieve:k=1").unwrap_err();
        assert!(e.to_string().contains("k"), "{e}");
        let t = swaplab_trace::dense::DenseTrace::from_pages(&[1, 2]);
        let (name, params) = crate::policy::Params::split_spec("sieve:k=1", "").unwrap();
        let spec = crate::policy::PolicySpec { name, params };
        assert!(crate::engine::simulate_checked(&t, &spec, 1, 0).is_err());
    }

    #[test]
    fn contract() {
        contract_all("sieve");
    }
}
