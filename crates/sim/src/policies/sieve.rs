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
//! Memory: 8 bytes of queue links and 1 byte of state per page.
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::NIL;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "sieve",
    summary: "SIEVE (NSDI 2024)",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("sieve", &[])?;
        Ok(Box::new(Sieve {
            state: vec![OUT; c.pages],
            links: vec![[NIL; 2]; c.pages],
            head: NIL,
            tail: NIL,
            hand: NIL,
            len: 0,
            cap: c.capacity,
        }))
    },
};

const OUT: u8 = 0;
const RESIDENT: u8 = 1;
const VISITED: u8 = 2;
/// Index in `links`: the neighbour toward the head (newer).
const NEWER: usize = 0;
/// Index in `links`: the neighbour toward the tail (older).
const OLDER: usize = 1;

struct Sieve {
    /// Per page: `OUT`, `RESIDENT` or `VISITED` (resident and visited).
    state: Vec<u8>,
    /// Per page: [newer, older] neighbours in the queue.
    links: Vec<[u32; 2]>,
    /// Newest page.
    head: u32,
    /// Oldest page.
    tail: u32,
    /// Where the next eviction starts; `NIL` = at the tail.
    hand: u32,
    len: usize,
    cap: usize,
}

impl Sieve {
    fn evict(&mut self) -> Option<u32> {
        let mut o = if self.hand != NIL {
            self.hand
        } else {
            self.tail
        };
        if o == NIL {
            return None;
        }
        // One full pass clears every bit, so this ends within len + 1 steps.
        while self.state[o as usize] == VISITED {
            self.state[o as usize] = RESIDENT;
            o = self.links[o as usize][NEWER];
            if o == NIL {
                o = self.tail;
            }
        }
        let [newer, older] = self.links[o as usize];
        self.hand = newer;
        if newer != NIL {
            self.links[newer as usize][OLDER] = older;
        } else {
            self.head = older;
        }
        if older != NIL {
            self.links[older as usize][NEWER] = newer;
        } else {
            self.tail = newer;
        }
        self.state[o as usize] = OUT;
        self.len -= 1;
        Some(o)
    }
}

impl Policy for Sieve {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let s = &mut self.state[id as usize];
        if *s != OUT {
            *s = VISITED;
            return Access::Hit;
        }
        let victim = if self.len >= self.cap {
            self.evict()
        } else {
            None
        };
        // Insert at the head, unvisited.
        self.state[id as usize] = RESIDENT;
        self.links[id as usize] = [NIL, self.head];
        if self.head != NIL {
            self.links[self.head as usize][NEWER] = id;
        } else {
            self.tail = id;
        }
        self.head = id;
        self.len += 1;
        Access::Miss { victim }
    }
    fn bytes_per_page(&self) -> usize {
        9
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    use crate::policies::fifo::replay::*;

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

    #[test]
    fn params_are_checked() {
        let t = swaplab_trace::dense::DenseTrace::from_pages(&[1, 2]);
        let spec = crate::policy::PolicySpec::parse("sieve:k=1").unwrap();
        assert!(crate::engine::simulate_checked(&t, &spec, 1, 0).is_err());
    }

    #[test]
    fn contract() {
        contract_all("sieve");
    }
}
