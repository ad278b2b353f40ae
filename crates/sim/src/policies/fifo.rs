//! FIFO: evict the page that was brought in longest ago; hits change nothing.
//!
//! Memory is a ring of frames in insertion order; the hand points at the
//! oldest frame. While memory fills, frames are appended; once full, a miss
//! puts the new page in the oldest frame and advances the hand, so the ring
//! stays in insertion order. Residency is one bit per page (a bitmap is
//! small enough to stay in cache, which makes this about twice as fast as a
//! byte per page on large traces).
//!
//! FIFO is the policy of Belady's anomaly: on `1 2 3 4 1 2 5 1 2 3 4 5` it
//! faults 9 times with 3 frames and 10 times with 4 (tested below).
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::prefetch;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "fifo",
    summary: "first in, first out",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("fifo", &[])?;
        Ok(Box::new(Fifo {
            resident: vec![0; c.pages.div_ceil(64)],
            pages: c.pages,
            frames: Vec::with_capacity(c.capacity.min(c.pages)),
            cap: c.capacity,
            hand: 0,
        }))
    },
};

struct Fifo {
    /// Bit per page: resident or not.
    resident: Vec<u64>,
    pages: usize,
    /// Page in each frame, in insertion order starting at `hand`.
    frames: Vec<u32>,
    cap: usize,
    /// The oldest frame (next victim) once memory is full.
    hand: usize,
}

impl Policy for Fifo {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let (w, b) = ((id >> 6) as usize, 1u64 << (id & 63));
        let r = &mut self.resident[w];
        if *r & b != 0 {
            return Access::Hit;
        }
        *r |= b;
        if self.frames.len() < self.cap {
            self.frames.push(id);
            return Access::Miss { victim: None };
        }
        let victim = std::mem::replace(&mut self.frames[self.hand], id);
        self.hand += 1;
        if self.hand == self.frames.len() {
            self.hand = 0;
        }
        self.resident[(victim >> 6) as usize] &= !(1u64 << (victim & 63));
        Access::Miss {
            victim: Some(victim),
        }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.resident.as_ptr().wrapping_add((id >> 6) as usize));
    }
    fn can_remove(&self) -> bool {
        true
    }
    /// The ring is rotated so that the oldest frame is frame 0 and the
    /// removed pages' frames are closed up, keeping insertion order; new
    /// pages are appended as the newest until memory is full again.
    fn remove(&mut self, ids: &[u32]) {
        for &id in ids {
            self.resident[(id >> 6) as usize] &= !(1u64 << (id & 63));
        }
        self.frames.rotate_left(self.hand);
        self.hand = 0;
        let r = &self.resident;
        self.frames
            .retain(|&p| r[(p >> 6) as usize] & (1u64 << (p & 63)) != 0);
    }
    /// MADV_COLD on FIFO: the pages become the oldest, in the order given.
    fn demote(&mut self, ids: &[u32]) {
        let cold: rustc_hash::FxHashSet<u32> = ids.iter().copied().collect();
        self.frames.rotate_left(self.hand);
        self.hand = 0;
        self.frames.retain(|p| !cold.contains(p));
        let rest = std::mem::take(&mut self.frames);
        self.frames.extend(
            ids.iter()
                .copied()
                .filter(|&p| self.resident[(p >> 6) as usize] & (1u64 << (p & 63)) != 0),
        );
        self.frames.extend(rest);
    }
    fn bytes_per_page(&self) -> usize {
        // 1 bit of residency per page, plus 4 bytes per frame, spread over
        // the pages and rounded up.
        let pages = self.pages.max(1);
        (8 * self.resident.len() + 4 * self.frames.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    #[test]
    fn hand_worked() {
        // Belady's anomaly string (Belady, Nelson & Shedler 1969; the classic
        // textbook example): 9 faults with 3 frames, 10 with 4.
        let s = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
        assert_eq!(misses("fifo", 3, &s), 9);
        assert_eq!(misses("fifo", 4, &s), 10);
        // With 3 frames, step by step (frames oldest..newest):
        // 1 2 3 fill [1 2 3]; 4 evicts 1 [2 3 4]; 1 evicts 2 [3 4 1];
        // 2 evicts 3 [4 1 2]; 5 evicts 4 [1 2 5]; 1 hit; 2 hit (no reordering);
        // 3 evicts 1 [2 5 3]; 4 evicts 2 [5 3 4]; 5 hit.
        let ids: Vec<u32> = s.iter().map(|&x| x as u32).collect();
        assert_eq!(
            replay("fifo", 3, &ids),
            vec![M, M, M, ev(1), ev(2), ev(3), ev(4), H, H, ev(1), ev(2), H]
        );
        // Silberschatz et al., Operating System Concepts, reference string with
        // 3 frames: FIFO gives 15 page faults.
        let os = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        assert_eq!(misses("fifo", 3, &os), 15);
        // Hits do not protect a page: 1 is referenced constantly but still
        // leaves after 2 other insertions (cap 2): 1 2 1 1 3(evicts 1) 1(miss).
        assert_eq!(
            hits("fifo", 2, &[1, 2, 1, 1, 3, 1]),
            vec![false, false, true, true, false, false]
        );
    }

    #[test]
    fn params_are_checked() {
        // Refused when parsed, naming the key; and by the engine, for a
        // spec made without parse.
        let e = crate::policy::PolicySpec::parse("fifo:x=1").unwrap_err();
        assert!(e.to_string().contains("x"), "{e}");
        let t = swaplab_trace::dense::DenseTrace::from_pages(&[1, 2]);
        let (name, params) = crate::policy::Params::split_spec("fifo:x=1", "").unwrap();
        let spec = crate::policy::PolicySpec { name, params };
        assert!(crate::engine::simulate_checked(&t, &spec, 1, 0).is_err());
    }

    #[test]
    fn contract() {
        contract_all("fifo");
    }
}
