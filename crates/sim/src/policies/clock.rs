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
//! Memory: 2 bytes per page (the counter, or "not resident") and 4 bytes per
//! frame.
use crate::policy::{Access, Policy, PolicyInfo, Req};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "clock",
    summary: "second chance (bits=N: N-bit reference counter)",
    params: "bits=N (1..=8, default 1): reference counter width",
    needs_future: false,
    build: |c| {
        c.params.allow("clock", &["bits"])?;
        let bits = c.params.int("bits", 1, 1, 8)?;
        Ok(Box::new(Clock {
            state: vec![OUT; c.pages],
            frames: Vec::with_capacity(c.capacity.min(c.pages)),
            cap: c.capacity,
            hand: 0,
            max: (1u16 << bits) - 1,
        }))
    },
};

/// State of a page that is not resident.
const OUT: u16 = u16::MAX;

struct Clock {
    /// Per page: its counter if resident, else `OUT`.
    state: Vec<u16>,
    /// Page in each frame.
    frames: Vec<u32>,
    cap: usize,
    hand: usize,
    /// Counter saturation value, 2^bits − 1.
    max: u16,
}

impl Policy for Clock {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let s = &mut self.state[id as usize];
        if *s != OUT {
            if *s < self.max {
                *s += 1;
            }
            return Access::Hit;
        }
        *s = 0;
        if self.frames.len() < self.cap {
            self.frames.push(id);
            return Access::Miss { victim: None };
        }
        // Memory full: sweep. Every step either evicts or decrements a
        // counter, so this ends within (2^bits − 1) · frames + 1 steps.
        let n = self.frames.len();
        let mut h = self.hand;
        let victim = loop {
            let v = self.frames[h];
            let c = &mut self.state[v as usize];
            if *c == 0 {
                break v;
            }
            *c -= 1;
            h += 1;
            if h == n {
                h = 0;
            }
        };
        self.state[victim as usize] = OUT;
        self.frames[h] = id;
        h += 1;
        self.hand = if h == n { 0 } else { h };
        Access::Miss {
            victim: Some(victim),
        }
    }
    fn bytes_per_page(&self) -> usize {
        let pages = self.state.len().max(1);
        2 + (4 * self.frames.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    use crate::policies::fifo::replay::*;

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
            let spec = PolicySpec::parse(bad).unwrap();
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
