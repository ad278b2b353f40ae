//! CLOCK (second chance), optionally with an N-bit reference counter.
//!
//! Frames form a circle in insertion order and a hand points at the oldest.
//! A page enters with its counter at 0. A hit increments the counter,
//! saturating at 2^N − 1 (`bits=N`, 1..=8, default 1). On a miss with memory
//! full, the hand looks at its frame: a counter above 0 is decremented by one
//! and the hand moves on; the first page found with counter 0 is evicted, the
//! new page takes its frame (counter 0) and the hand moves past it, so the
//! new page is the last one the hand will reach.
//!
//! With `bits=1` the counter is the classic reference bit: a hit sets it, the
//! hand clears it, i.e. second chance (Corbató 1968). With N > 1 it is
//! libCacheSim's `Clock` with `n-bit-counter=N` (there the queue's tail is
//! the hand: moving the tail object to the head is the hand stepping over
//! it), so a page hit k times survives min(k, 2^N − 1) passes of the hand.
//!
//! Memory: a residency bit per page, and the counter: one more bit per
//! page for `bits=1`, a byte per page otherwise; 4 bytes per frame. (Bitmaps
//! stay in cache on large traces, which is where the speed comes from.)
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::{page_array, prefetch};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "clock",
    summary: "second chance (bits=N: N-bit reference counter)",
    params: "bits=N (1..=8, default 1): reference counter width",
    needs_future: false,
    build: |c| {
        c.params.allow("clock", &["bits"])?;
        let bits = c.params.int("bits", 1, 1, 8)?;
        let frames = Vec::with_capacity(c.capacity.min(c.pages));
        Ok(if bits == 1 {
            Box::new(Clock {
                // Residency and reference bits interleaved: words 2k and
                // 2k + 1 cover pages 64k..64k + 63, in one cache line.
                pages: RefBit(page_array(0, 2 * c.pages.div_ceil(64))),
                frames,
                cap: c.capacity,
                hand: 0,
                n: c.pages,
            })
        } else {
            Box::new(Clock {
                pages: Counter {
                    resident: page_array(0, c.pages.div_ceil(64)),
                    count: page_array(0, c.pages),
                    max: ((1u16 << bits) - 1) as u8,
                },
                frames,
                cap: c.capacity,
                hand: 0,
                n: c.pages,
            }) as Box<dyn Policy>
        })
    },
};

/// Per-page residency and reference counter.
trait PageState: Send {
    fn resident(&self, id: u32) -> bool;
    /// Marks `id` resident with counter 0.
    fn insert(&mut self, id: u32);
    fn remove(&mut self, id: u32);
    /// A hit: counter + 1, saturating.
    fn touch(&mut self, id: u32);
    /// The hand passes `id`: if its counter is 0 returns true, else
    /// decrements it and returns false.
    fn pass(&mut self, id: u32) -> bool;
    fn bytes(&self) -> usize;
    /// Brings `id`'s state into cache (see [`Policy::prefetch`]).
    fn prefetch(&self, id: u32);
}

/// `bits=1`: interleaved residency and reference bitmaps.
struct RefBit(Vec<u64>);

impl PageState for RefBit {
    #[inline]
    fn resident(&self, id: u32) -> bool {
        self.0[(id >> 6) as usize * 2] & (1 << (id & 63)) != 0
    }
    #[inline]
    fn insert(&mut self, id: u32) {
        let w = (id >> 6) as usize * 2;
        self.0[w] |= 1 << (id & 63);
        self.0[w + 1] &= !(1 << (id & 63));
    }
    #[inline]
    fn remove(&mut self, id: u32) {
        self.0[(id >> 6) as usize * 2] &= !(1 << (id & 63));
    }
    #[inline]
    fn touch(&mut self, id: u32) {
        let (w, b) = ((id >> 6) as usize * 2 + 1, 1u64 << (id & 63));
        if self.0[w] & b == 0 {
            self.0[w] |= b;
        }
    }
    #[inline]
    fn pass(&mut self, id: u32) -> bool {
        let (w, b) = ((id >> 6) as usize * 2 + 1, 1u64 << (id & 63));
        if self.0[w] & b == 0 {
            return true;
        }
        self.0[w] &= !b;
        false
    }
    fn bytes(&self) -> usize {
        8 * self.0.len()
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.0.as_ptr().wrapping_add((id >> 6) as usize * 2));
    }
}

/// `bits=N > 1`: residency bitmap and a byte counter per page.
struct Counter {
    resident: Vec<u64>,
    count: Vec<u8>,
    /// 2^bits − 1.
    max: u8,
}

impl PageState for Counter {
    #[inline]
    fn resident(&self, id: u32) -> bool {
        self.resident[(id >> 6) as usize] & (1 << (id & 63)) != 0
    }
    #[inline]
    fn insert(&mut self, id: u32) {
        self.resident[(id >> 6) as usize] |= 1 << (id & 63);
        self.count[id as usize] = 0;
    }
    #[inline]
    fn remove(&mut self, id: u32) {
        self.resident[(id >> 6) as usize] &= !(1 << (id & 63));
    }
    #[inline]
    fn touch(&mut self, id: u32) {
        let c = &mut self.count[id as usize];
        if *c < self.max {
            *c += 1;
        }
    }
    #[inline]
    fn pass(&mut self, id: u32) -> bool {
        let c = &mut self.count[id as usize];
        if *c == 0 {
            return true;
        }
        *c -= 1;
        false
    }
    fn bytes(&self) -> usize {
        8 * self.resident.len() + self.count.len()
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.resident.as_ptr().wrapping_add((id >> 6) as usize));
        prefetch(self.count.as_ptr().wrapping_add(id as usize));
    }
}

/// Frames ahead of the hand whose page state a sweep prefetches.
const SWEEP_AHEAD: usize = 8;

struct Clock<S> {
    pages: S,
    /// Page in each frame.
    frames: Vec<u32>,
    cap: usize,
    hand: usize,
    /// Number of distinct pages.
    n: usize,
}

impl<S: PageState> Policy for Clock<S> {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        if self.pages.resident(id) {
            self.pages.touch(id);
            return Access::Hit;
        }
        self.pages.insert(id);
        if self.frames.len() < self.cap {
            self.frames.push(id);
            return Access::Miss { victim: None };
        }
        // Memory full: sweep. Every step either evicts or decrements a
        // counter, so this ends within (2^bits − 1) · frames + 1 steps.
        let n = self.frames.len();
        let mut h = self.hand;
        let victim = loop {
            // The hand's frames hold pages in no order: each step reads
            // one page's counter at random. Prefetching the page
            // SWEEP_AHEAD frames on overlaps those reads (one step per
            // frame; on a Zipf trace of 20 M pages the unprefetched read
            // was two thirds of CLOCK's own time).
            let a = h + SWEEP_AHEAD;
            self.pages
                .prefetch(self.frames[if a >= n { a % n } else { a }]);
            let v = self.frames[h];
            if self.pages.pass(v) {
                break v;
            }
            h += 1;
            if h == n {
                h = 0;
            }
        };
        self.pages.remove(victim);
        self.frames[h] = id;
        h += 1;
        self.hand = if h == n { 0 } else { h };
        Access::Miss {
            victim: Some(victim),
        }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        self.pages.prefetch(id);
    }
    /// The page `ahead` frames past the hand: a victim a few misses from
    /// now, unless it is referenced before.
    #[inline]
    fn victim_ahead(&self, ahead: usize) -> Option<u32> {
        let n = self.frames.len();
        if n < self.cap || n == 0 {
            return None;
        }
        Some(self.frames[(self.hand + ahead) % n])
    }
    fn can_remove(&self) -> bool {
        true
    }
    /// The frames are rotated so that the hand is at frame 0, and the
    /// removed pages' frames are closed up (the others keep their order);
    /// new pages are appended behind the oldest until memory is full again.
    fn remove(&mut self, ids: &[u32]) {
        for &id in ids {
            self.pages.remove(id);
        }
        self.frames.rotate_left(self.hand);
        self.hand = 0;
        let pages = &self.pages;
        self.frames.retain(|&p| pages.resident(p));
    }
    /// MADV_COLD on a CLOCK: the pages' reference counters are cleared, so
    /// the hand takes each at its first pass (the frames do not move).
    fn demote(&mut self, ids: &[u32]) {
        for &id in ids {
            self.pages.insert(id);
        }
    }
    fn bytes_per_page(&self) -> usize {
        let pages = self.n.max(1);
        (self.pages.bytes() + 4 * self.frames.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    #[test]
    fn hand_worked() {
        // cap 3, refs 1 2 3 1 4 2 1. Frames listed with (counter), hand at ^.
        // 1 2 3: fill [^1(0) 2(0) 3(0)].
        // 1: hit, [^1(1) 2 3].
        // 4: hand clears 1, moves to 2 (counter 0): evict 2; 4 takes the frame,
        //    hand moves past it: [1(0) 4(0) ^3(0)].
        // 2: hand at 3 (counter 0): evict 3: [^1(0) 4 2].
        // 1: hit.
        let s = [1, 2, 3, 1, 4, 2, 1];
        assert_eq!(replay("clock", 3, &s), vec![M, M, M, H, ev(2), ev(3), H]);
        // FIFO on the same string evicts 1 at the fourth miss, so it hits 2
        // and misses 1: the second chance is what differs.
        assert_eq!(replay("fifo", 3, &s), vec![M, M, M, H, ev(1), H, ev(2)]);
        // bits=1 is the classic reference bit, the default.
        assert_eq!(replay("clock:bits=1", 3, &s), replay("clock", 3, &s));

        // A 2-bit counter remembers more than one hit. cap 2, refs 1 1 1 2 3 2 1.
        // bits=2: 1 enters (0), two hits -> 1(2); 2 enters [^1(2) 2(0)].
        //   3: 1 -> 1, hand to 2 (0): evict 2: [^1(1) 3(0)].
        //   2: 1 -> 0, hand to 3 (0): evict 3: [^1(0) 2(0)].
        //   1: hit.
        // bits=1: the counter saturates at 1, so 1(1) after its hits.
        //   3: 1 -> 0, evict 2: [^1(0) 3(0)].
        //   2: 1 has 0: evict 1: [2(0) ^3(0)].  1: miss, evicts 3.
        let s = [1, 1, 1, 2, 3, 2, 1];
        assert_eq!(
            replay("clock:bits=2", 2, &s),
            vec![M, H, H, M, ev(2), ev(3), H]
        );
        assert_eq!(
            replay("clock:bits=1", 2, &s),
            vec![M, H, H, M, ev(2), ev(1), ev(3)]
        );

        // All bits set: the hand goes all the way round, clearing, and evicts
        // the page it started at, exactly like FIFO. cap 2: 1 2 1 2 3 -> evicts 1.
        assert_eq!(
            replay("clock", 2, &[1, 2, 1, 2, 3]),
            vec![M, M, H, H, ev(1)]
        );
        // The through-the-engine view agrees.
        assert_eq!(
            hits("clock", 3, &[1, 2, 3, 1, 4, 2, 1]),
            vec![false, false, false, true, false, false, true]
        );
    }

    #[test]
    fn params_are_checked() {
        use crate::policy::PolicySpec;
        use swaplab_trace::dense::DenseTrace;
        let t = DenseTrace::from_pages(&[1, 2, 3]);
        for bad in ["clock:bits=9", "clock:bits=0", "clock:bits=x", "clock:n=1"] {
            // Refused when parsed; and by the engine, for a spec made
            // without parse.
            assert!(PolicySpec::parse(bad).is_err(), "{bad}");
            let (name, params) = crate::policy::Params::split_spec(bad, "").unwrap();
            let spec = PolicySpec { name, params };
            assert!(
                crate::engine::simulate_checked(&t, &spec, 2, 0).is_err(),
                "{bad}"
            );
        }
        let spec = PolicySpec::parse("clock:bits=8").unwrap();
        assert!(crate::engine::simulate_checked(&t, &spec, 2, 0).is_ok());
    }

    #[test]
    fn contract() {
        contract_all("clock");
        contract_all("clock:bits=3");
        contract_all("clock:bits=8");
    }
}
