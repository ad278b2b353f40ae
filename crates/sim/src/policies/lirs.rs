//! LIRS (Jiang & Zhang, "LIRS: An Efficient Low Inter-reference Recency
//! Set Replacement Policy to Improve Buffer Cache Performance",
//! SIGMETRICS 2002).
//!
//! Pages are LIR (low inter-reference recency, always resident) or HIR. The
//! memory is split into `Llirs` frames for LIR pages and `Lhirs` for resident
//! HIR pages; `Lhirs` is `hir=` percent of the capacity (default 1 %, the
//! paper's choice), rounded down, at least 1 page (so `Llirs` = capacity −
//! `Lhirs`, and with a capacity of 1 there are no LIR pages at all).
//!
//! * Stack S (LIRS stack): LIR pages, resident HIR pages and non-resident
//!   HIR pages, most recent on top. **Stack pruning** removes HIR pages from
//!   the bottom until the bottom is an LIR page, so S spans exactly the
//!   recency of the least recent LIR page.
//! * Queue Q: the resident HIR pages; the victim is always Q's front (the
//!   one least recently referenced, since a hit moves a page to Q's end).
//! * A page can be in S and Q at once, so they are two separate sets of
//!   links, with a per-page state byte (LIR, in S, in Q).
//!
//! On a reference to X (the paper's three cases):
//! 1. X is LIR: hit; move X to the top of S; prune if X was the bottom.
//! 2. X is resident HIR: hit. If X is in S, it becomes LIR (top of S, out of
//!    Q) and the bottom LIR page of S becomes HIR and goes to the end of Q;
//!    prune. Otherwise X goes to the top of S and to the end of Q.
//! 3. X is not resident: miss. If memory is full, Q's front is evicted (it
//!    stays in S as a non-resident HIR page if it is there). While fewer than
//!    `Llirs` pages are LIR (warm-up), X becomes LIR. Otherwise, if X is in
//!    S it becomes LIR and the bottom LIR page is demoted to Q as in case 2;
//!    else X becomes resident HIR at the top of S and the end of Q.
//!
//! Non-resident HIR entries in S are bounded only by pruning, as in the
//! paper (no extra limit): pages are dense ids with per-page arrays, so a
//! non-resident entry costs no memory beyond what every page already has.
//!
//! Checked against the paper's own worked example (Section 3.3, Fig. 2:
//! states (a) to (e) from the blocks of Table 1), as a unit test.
//!
//! **Differences from the peer.** libCacheSim's `LIRS.c` (read at commit
//! aa0fc40, 2024-10; numbers from PyPI `libcachesim` 0.3.5) agrees with
//! this file at 1 of the 6 sizes of cloudPhysicsIO (misses at 128, 1024,
//! 5000, 10000, 20000, 40000 pages: peer 96758 94294 85289 74395 58681
//! 50518, here 96514 94330 87358 72976 58672 50518), because it departs
//! from the paper in two ways (read from its source; the two effects were
//! not simulated separately):
//! 1. It bounds S: after every request, while S holds more than 2c
//!    entries, it drops the oldest non-resident HIR entry (its `LRU_nh`
//!    list), so a page that was referenced long ago comes back as a new
//!    HIR page where the paper would find it in S and make it LIR. The
//!    paper has no bound; here S is bounded only by pruning.
//! 2. On a hit to a resident HIR page that is *not* in S (paper: the page
//!    stays HIR, goes to the top of S and the end of Q, nothing else
//!    changes), it first demotes S's bottom LIR page to Q
//!    (`hit_RD_HIRinQ` calls `evictLIR` while the LIR set is full), which
//!    evicts Q's front to make room: a hit that evicts a page. The LIR set
//!    then has a free slot, so the next new page becomes LIR directly
//!    (the warm-up rule) instead of a resident HIR page.
//!
//! Both follow the paper's Lhirs = 1 % of the memory (at least 1 page).
//!
//! **Data structure.** All of a page's state is one `u64`: the LIR bit,
//! membership of S and of Q, and its positions (30-bit stamps) in S's and
//! Q's queues, so a hit reads and writes one 8-byte cell (which the
//! engine's prefetch hint brings in early) instead of a state byte and the
//! links of the page and of its neighbours in both lists. S and Q are lazy
//! queues of page ids (`VecDeque<u32>`, bottom / front first): an entry at
//! queue position p is valid iff its page is in that set with stamp p.
//! Moving a page to the top of S or the end of Q appends it and re-stamps
//! it, leaving its old entry stale; removing a page clears its membership
//! bit; the bottom of S and the front of Q are found by dropping stale
//! entries from the queue's front. S's bottom is always valid after a
//! reference (every change that can expose a stale bottom ends in a
//! prune), so "is X the bottom of S?" compares X with the queue's front
//! without reading another page. A queue holding more than three times
//! its set (plus 64), or whose positions reach 2^30, is filtered down to
//! its valid entries and re-stamped 0, 1, ... (O(1) amortised per
//! insertion). Scans prefetch the cells of the entries 8 places ahead.
//! At most 2^30 − 1 distinct pages (a larger trace is refused).
//!
//! Memory: 8 bytes per page and 4 per queue entry; each queue holds at
//! most ~3× its set (its capacity grows in powers of two): 12 bytes per
//! page with 1/8 of the pages resident, as measured by `tests/memory.rs`
//! (17 with the two sets of linked lists this replaced).
use crate::error::SimError;
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::prefetch;
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lirs",
    summary: "low inter-reference recency set",
    params: "hir=P (percent of memory for resident HIR pages, default 1, at least 1 page)",
    needs_future: false,
    build: |c| {
        c.params.allow("lirs", &["hir"])?;
        let hir = c.params.real("hir", 1.0, 0.0, 100.0)?;
        if c.pages as u64 >= STAMPS {
            return Err(SimError::BadParam(format!(
                "lirs handles at most {} distinct pages, the trace has {}",
                STAMPS - 1,
                c.pages
            )));
        }
        let cap = c.capacity.max(1);
        let lhirs = ((cap as f64 * hir / 100.0) as usize).clamp(1, cap);
        Ok(Box::new(Lirs::new(c.pages, cap - lhirs, cap)))
    },
};

/// Per-page cell bits: LIR status, and membership of S and of Q (a
/// resident HIR page is exactly one in Q); then S's and Q's stamps.
const LIR: u64 = 1;
const IN_S: u64 = 2;
const IN_Q: u64 = 4;
const S_SHIFT: u32 = 3;
const Q_SHIFT: u32 = 33;
/// Queue positions (stamps) are below this.
const STAMPS: u64 = 1 << 30;
const MASK: u64 = STAMPS - 1;
/// How far ahead queue scans prefetch cells.
const AHEAD: usize = 8;
/// A queue is filtered when it holds more than this many times its set (plus 64).
const SLACK: usize = 3;

/// One lazily ordered set (S or Q) over the shared cells; see the module doc.
struct Lazy {
    /// Page ids; `q[k]` is at position `base + k`.
    q: VecDeque<u32>,
    base: u64,
    /// Pages in the set.
    len: usize,
    flag: u64,
    shift: u32,
}

impl Lazy {
    fn new(flag: u64, shift: u32) -> Self {
        Lazy {
            q: VecDeque::new(),
            base: 0,
            len: 0,
            flag,
            shift,
        }
    }
    /// Is the entry of `id` at position `pos` valid?
    #[inline]
    fn valid(&self, cells: &[u64], id: u32, pos: u64) -> bool {
        let c = cells[id as usize];
        c & self.flag != 0 && (c >> self.shift) & MASK == pos
    }
    #[inline]
    fn contains(&self, c: u64) -> bool {
        c & self.flag != 0
    }
    /// Appends `id` at the newest end (moving it there if it is in the set).
    #[inline]
    fn push(&mut self, cells: &mut [u64], id: u32) {
        if self.base + self.q.len() as u64 == STAMPS || self.q.len() > SLACK * self.len + 64 {
            self.filter(cells);
        }
        let c = cells[id as usize];
        if c & self.flag == 0 {
            self.len += 1;
        }
        let pos = self.base + self.q.len() as u64;
        cells[id as usize] = (c & !(MASK << self.shift)) | (pos << self.shift) | self.flag;
        self.q.push_back(id);
    }
    /// Takes `id` out of the set (no-op if not in it).
    #[inline]
    fn remove(&mut self, cells: &mut [u64], id: u32) {
        let c = &mut cells[id as usize];
        if *c & self.flag != 0 {
            *c &= !self.flag;
            self.len -= 1;
        }
    }
    /// The oldest member, dropping the stale entries before it.
    #[inline]
    fn front(&mut self, cells: &[u64]) -> Option<u32> {
        loop {
            let &id = self.q.front()?;
            if let Some(&n) = self.q.get(AHEAD) {
                prefetch(cells.as_ptr().wrapping_add(n as usize));
            }
            if self.valid(cells, id, self.base) {
                return Some(id);
            }
            self.q.pop_front();
            self.base += 1;
        }
    }
    /// Removes and returns the oldest member.
    #[inline]
    fn pop_front(&mut self, cells: &mut [u64]) -> Option<u32> {
        let id = self.front(cells)?;
        self.remove(cells, id);
        self.q.pop_front();
        self.base += 1;
        Some(id)
    }
    /// Is `id` the oldest member, given that the queue's front entry is valid?
    #[inline]
    fn is_front(&self, cells: &[u64], id: u32) -> bool {
        self.q.front() == Some(&id) && self.valid(cells, id, self.base)
    }
    /// Drops the stale entries and re-stamps the rest 0, 1, ... in order.
    /// Branch-free, so that the cell reads of successive entries overlap.
    fn filter(&mut self, cells: &mut [u64]) {
        let v = self.q.make_contiguous();
        let mut w = 0usize;
        for r in 0..v.len() {
            if let Some(&n) = v.get(r + 2 * AHEAD) {
                prefetch(cells.as_ptr().wrapping_add(n as usize));
            }
            let id = v[r];
            let c = cells[id as usize];
            let ok = c & self.flag != 0 && (c >> self.shift) & MASK == self.base + r as u64;
            let restamped = (c & !(MASK << self.shift)) | ((w as u64) << self.shift);
            cells[id as usize] = if ok { restamped } else { c };
            v[w] = id;
            w += usize::from(ok);
        }
        self.q.truncate(w);
        self.base = 0;
        debug_assert_eq!(w, self.len);
    }
    /// The members, oldest first.
    #[cfg(test)]
    fn contents(&self, cells: &[u64]) -> Vec<u32> {
        (0..self.q.len())
            .filter(|&k| self.valid(cells, self.q[k], self.base + k as u64))
            .map(|k| self.q[k])
            .collect()
    }
}

struct Lirs {
    /// Per-page cells (see the module doc).
    cell: Vec<u64>,
    /// Stack S: front of the queue = bottom, back = top.
    s: Lazy,
    /// Queue Q of resident HIR pages: front = next victim.
    q: Lazy,
    nlir: usize,
    llirs: usize,
    cap: usize,
}

impl Lirs {
    fn new(pages: usize, llirs: usize, cap: usize) -> Self {
        Lirs {
            cell: vec![0; pages],
            s: Lazy::new(IN_S, S_SHIFT),
            q: Lazy::new(IN_Q, Q_SHIFT),
            nlir: 0,
            llirs,
            cap,
        }
    }

    /// Removes HIR pages from the bottom of S until an LIR page is there.
    #[inline]
    fn prune(&mut self) {
        while let Some(b) = self.s.front(&self.cell) {
            if self.cell[b as usize] & LIR != 0 {
                return;
            }
            self.s.pop_front(&mut self.cell);
        }
    }

    /// Makes `x` (HIR, resident or not, in S or not) LIR at the top of S,
    /// demoting bottom LIR pages to Q while there are more than `Llirs`.
    fn promote(&mut self, x: u32) {
        self.q.remove(&mut self.cell, x);
        self.cell[x as usize] |= LIR;
        self.nlir += 1;
        self.s.push(&mut self.cell, x);
        while self.nlir > self.llirs {
            self.prune();
            let Some(b) = self.s.pop_front(&mut self.cell) else {
                break;
            };
            self.cell[b as usize] &= !LIR;
            self.q.push(&mut self.cell, b);
            self.nlir -= 1;
        }
        self.prune();
    }

    /// Frees one frame: Q's front, or (never needed while `Lhirs` >= 1) the bottom LIR page.
    fn evict(&mut self) -> Option<u32> {
        if let Some(v) = self.q.pop_front(&mut self.cell) {
            return Some(v);
        }
        self.prune();
        let v = self.s.pop_front(&mut self.cell)?;
        self.cell[v as usize] &= !LIR;
        self.nlir -= 1;
        self.prune();
        Some(v)
    }

    /// X becomes (or stays) a resident HIR page at the top of S and the end of Q.
    #[inline]
    fn make_hir_at_top(&mut self, x: u32) {
        self.s.push(&mut self.cell, x);
        self.q.push(&mut self.cell, x);
        // Only when there is no LIR page can X be S's bottom.
        self.prune();
    }
}

impl Policy for Lirs {
    #[inline]
    fn access(&mut self, x: u32, _req: &Req) -> Access {
        let c = self.cell[x as usize];
        if c & LIR != 0 {
            let bottom = self.s.is_front(&self.cell, x);
            self.s.push(&mut self.cell, x);
            if bottom {
                self.prune();
            }
            debug_assert!(self.s.q.front().is_none_or(|&b| self.s.valid(
                &self.cell,
                b,
                self.s.base
            )));
            return Access::Hit;
        }
        if self.q.contains(c) {
            if self.s.contains(c) {
                self.promote(x);
            } else {
                self.make_hir_at_top(x);
            }
            return Access::Hit;
        }
        let victim = if self.nlir + self.q.len >= self.cap {
            self.evict()
        } else {
            None
        };
        if self.s.contains(self.cell[x as usize]) || self.nlir < self.llirs {
            self.promote(x);
        } else {
            self.make_hir_at_top(x);
        }
        debug_assert!(self
            .s
            .q
            .front()
            .is_none_or(|&b| self.s.valid(&self.cell, b, self.s.base)));
        Access::Miss { victim }
    }

    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.cell.as_ptr().wrapping_add(id as usize));
    }

    fn bytes_per_page(&self) -> usize {
        let queues = 4 * (self.s.q.capacity() + self.q.q.capacity());
        (8 * self.cell.len() + queues).div_ceil(self.cell.len().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::*;
    use crate::error::SimError;

    /// S top first, as (page, 'L' LIR | 'R' resident HIR | 'N' non-resident
    /// HIR), then Q from its front (next victim) to its end.
    fn state(l: &Lirs) -> (Vec<(u64, char)>, Vec<u64>) {
        let mut s: Vec<(u64, char)> =
            l.s.contents(&l.cell)
                .into_iter()
                .map(|x| {
                    let st = l.cell[x as usize];
                    let k = if st & LIR != 0 {
                        'L'
                    } else if st & IN_Q != 0 {
                        'R'
                    } else {
                        'N'
                    };
                    (u64::from(x), k)
                })
                .collect();
        s.reverse();
        let q = l.q.contents(&l.cell).into_iter().map(u64::from).collect();
        (s, q)
    }

    /// State (a) of the paper's Fig. 2 (Section 3.3): the blocks of Table 1
    /// at virtual time 10 (A D B C B A D A E referenced at times 1..9),
    /// with Llirs = 2, Lhirs = 1. By IRR, the LIR set is {A, B} (IRR 1
    /// each) and C, D, E are HIR; E (recency 0) is the resident HIR block.
    /// S holds the blocks whose recency is at most B's (3), the largest of
    /// an LIR block: E A D B top first (C, recency 4, is not in S).
    fn paper_state_a() -> Lirs {
        let mut l = Lirs::new(6, 2, 3);
        l.nlir = 2;
        for (x, lir) in [(B, LIR), (D, 0), (A, LIR), (E, 0)] {
            l.cell[x as usize] |= lir;
            l.s.push(&mut l.cell, x as u32);
        }
        l.q.push(&mut l.cell, E as u32);
        l
    }

    #[test]
    fn paper_fig2_worked_example() {
        let req = Req {
            pos: 0,
            write: false,
            next_use: u32::MAX,
        };
        let a = paper_state_a();
        assert_eq!(
            state(&a),
            (vec![(E, 'R'), (A, 'L'), (D, 'N'), (B, 'L')], vec![E])
        );
        // Each transition starts from state (a), as in the figure.
        type Want = (Access, Vec<(u64, char)>, Vec<u64>);
        let cases: [(u64, Want); 4] = [
            // (b) B, an LIR block at the bottom of S: a hit; B goes to the
            // top and pruning removes the HIR block D now at the bottom.
            (
                B,
                (Access::Hit, vec![(B, 'L'), (E, 'R'), (A, 'L')], vec![E]),
            ),
            // (c) E, a resident HIR block in S: a hit; E becomes LIR and
            // leaves Q; the bottom LIR block B becomes a resident HIR block
            // at the end of Q; pruning removes D.
            (E, (Access::Hit, vec![(E, 'L'), (A, 'L')], vec![B])),
            // (d) D, a non-resident HIR block in S: a miss; Q's front E is
            // evicted (it stays in S, non-resident); D becomes LIR at the
            // top; the bottom LIR block B goes to Q as HIR; the bottom is
            // then A (LIR), so nothing is pruned.
            (
                D,
                (
                    Access::Miss {
                        victim: Some(E as u32),
                    },
                    vec![(D, 'L'), (E, 'N'), (A, 'L')],
                    vec![B],
                ),
            ),
            // (e) C, a non-resident HIR block not in S: a miss; E is evicted
            // (stays in S); C stays HIR, at the top of S and the end of Q.
            (
                C,
                (
                    Access::Miss {
                        victim: Some(E as u32),
                    },
                    vec![(C, 'R'), (E, 'N'), (A, 'L'), (D, 'N'), (B, 'L')],
                    vec![C],
                ),
            ),
        ];
        for (x, (want_access, want_s, want_q)) in cases {
            let mut l = paper_state_a();
            let got = l.access(x as u32, &req);
            assert_eq!(
                (got, state(&l)),
                (want_access, (want_s, want_q)),
                "access to {x} from state (a)"
            );
            assert_eq!(l.nlir, 2);
        }
    }

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;
    const E: u64 = 5;

    #[test]
    fn hand_worked_paper_blocks() {
        // The five blocks of the paper's Table 1 (A accessed at times 1, 6
        // and 8; at time 10 IRRs A 1, B 1, C inf, D 3, E inf and recencies
        // A 1, B 3, C 4, D 2, E 0), i.e. the trace A D B C B A D A E, with
        // the paper's Llirs = 2, Lhirs = 1 (cap 3, hir=34 -> 1 page).
        // S is written top first, Q front (next victim) first.
        //  1 A miss: LIR (warm-up). S [A].
        //  2 D miss: LIR. S [D A].
        //  3 B miss: LIR set full: resident HIR. S [B D A], Q [B].
        //  4 C miss: evict B (Q front; stays in S, non-resident). C not in
        //    S: resident HIR. S [C B D A], Q [C].
        //  5 B miss: evict C (stays in S). B is in S: B -> LIR, S [B C D A];
        //    bottom LIR A -> HIR, Q [A]; prune removes A: S [B C D].
        //  6 A hit (resident HIR, not in S): S [A B C D], Q [A].
        //  7 D hit (LIR, at the bottom): S [D A B C]; prune removes C
        //    (non-resident HIR): S [D A B].
        //  8 A hit (resident HIR in S): A -> LIR, S [A D B]; bottom LIR B ->
        //    HIR, Q [B]; prune: S [A D]. LIR = {A, D}.
        //  9 E miss: evict B. E: resident HIR, S [E A D], Q [E].
        // 10 B miss: evict E (stays in S). B not in S: S [B E A D], Q [B].
        // 11 E miss: evict B (stays in S). E in S: E -> LIR, S [E B A D];
        //    bottom LIR D -> HIR, Q [D]; prune: S [E B A].
        // 12 D hit (resident HIR, not in S). S [D E B A], Q [D].
        // 13 A hit (LIR at the bottom): S [A D E B]; prune removes B:
        //    S [A D E].
        let t = [A, D, B, C, B, A, D, A, E, B, E, D, A];
        let (m, h) = (false, true);
        assert_eq!(
            hits("lirs:hir=34", 3, &t),
            vec![m, m, m, m, m, h, h, h, m, m, m, h, h]
        );
        // LRU for comparison: it hits B at step 5 (still resident) and E at
        // step 11, but loses A and D at 6-7 and D, A at 12-13.
        assert_eq!(
            hits("lru", 3, &t),
            vec![m, m, m, m, h, m, m, h, m, m, h, m, m]
        );
    }

    #[test]
    fn hand_worked_loop() {
        // A loop 1 2 3 4 in 3 frames (Llirs 2, Lhirs 1): LRU always misses.
        // Round 1: 1, 2 LIR; 3 HIR (Q [3]); 4 evicts 3 (stays in S as a
        // non-resident HIR page): S [4 3 2 1], Q [4].
        // Round 2: 1 hit (LIR at the bottom): S [1 4 3 2]. 2 hit (bottom):
        // S [2 1 4 3], pruning removes 3 and 4 (HIR): S [2 1]. 3 miss:
        // evict 4 (not in S: forgotten); 3 not in S: resident HIR,
        // S [3 2 1], Q [3]. 4 miss: evict 3: S [4 3 2 1], Q [4] as after
        // round 1. So every later round: 1, 2 hit, 3, 4 miss.
        let lp: Vec<u64> = (1..=4).cycle().take(40).collect();
        assert_eq!(misses("lru", 3, &lp), 40);
        let h = hits("lirs:hir=34", 3, &lp);
        assert_eq!(&h[..4], &[false; 4]);
        for round in h[4..].chunks(4) {
            assert_eq!(round, &[true, true, false, false]);
        }
        // Default hir=1% of 3 pages rounds to 0, so Lhirs is 1: the same.
        assert_eq!(hits("lirs", 3, &lp), h);
    }

    #[test]
    fn hand_worked_no_lir_frames() {
        // cap 1: Lhirs 1, Llirs 0. A page that is in S when it is referenced
        // becomes LIR and is demoted at once (it is the only LIR page):
        // the memory behaves as a single frame. 1 1 2 1: m h m m.
        assert_eq!(
            hits("lirs", 1, &[1, 1, 2, 1]),
            vec![false, true, false, false]
        );
        // hir=100 on cap 4: Llirs 0, so S stays empty and every page is a
        // resident HIR page in Q; a hit moves it to Q's end (case 2), so Q
        // is in LRU order: 1 2 3 4, 1 hits (Q front..end: 2 3 4 1), 5 evicts
        // 2, 1 and 3 hit, 2 misses (evicts 4).
        let t = [1, 2, 3, 4, 1, 5, 1, 3, 2];
        let (m, h) = (false, true);
        assert_eq!(hits("lirs:hir=100", 4, &t), vec![m, m, m, m, h, m, h, h, m]);
        assert_eq!(hits("lirs:hir=100", 4, &t), hits("lru", 4, &t));
    }

    /// LIRS transcribed directly from the module doc: S and Q as vectors
    /// (bottom / front first) with O(n) searches and removals.
    fn reference(cap: usize, hir: f64, t: &[u32]) -> Vec<Access> {
        use std::collections::HashSet;
        let lhirs = ((cap as f64 * hir / 100.0) as usize).clamp(1, cap);
        let llirs = cap - lhirs;
        let (mut s, mut q): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        let mut lir: HashSet<u32> = HashSet::new();
        let prune = |s: &mut Vec<u32>, lir: &HashSet<u32>| {
            while s.first().is_some_and(|b| !lir.contains(b)) {
                s.remove(0);
            }
        };
        let to_end = |v: &mut Vec<u32>, x: u32| {
            v.retain(|&y| y != x);
            v.push(x);
        };
        let promote = |s: &mut Vec<u32>, q: &mut Vec<u32>, lir: &mut HashSet<u32>, x: u32| {
            q.retain(|&y| y != x);
            lir.insert(x);
            to_end(s, x);
            while lir.len() > llirs {
                prune(s, lir);
                if s.is_empty() {
                    break;
                }
                let b = s.remove(0);
                lir.remove(&b);
                q.push(b);
            }
            prune(s, lir);
        };
        let mut out = Vec::new();
        for &x in t {
            if lir.contains(&x) {
                let bottom = s.first() == Some(&x);
                to_end(&mut s, x);
                if bottom {
                    prune(&mut s, &lir);
                }
                out.push(Access::Hit);
                continue;
            }
            if q.contains(&x) {
                if s.contains(&x) {
                    promote(&mut s, &mut q, &mut lir, x);
                } else {
                    to_end(&mut s, x);
                    to_end(&mut q, x);
                    prune(&mut s, &lir);
                }
                out.push(Access::Hit);
                continue;
            }
            let mut victim = None;
            if lir.len() + q.len() >= cap {
                if !q.is_empty() {
                    victim = Some(q.remove(0));
                } else {
                    prune(&mut s, &lir);
                    let v = s.remove(0);
                    lir.remove(&v);
                    prune(&mut s, &lir);
                    victim = Some(v);
                }
            }
            if s.contains(&x) || lir.len() < llirs {
                promote(&mut s, &mut q, &mut lir, x);
            } else {
                to_end(&mut s, x);
                to_end(&mut q, x);
                prune(&mut s, &lir);
            }
            out.push(Access::Miss { victim });
        }
        out
    }

    #[test]
    fn matches_a_direct_transcription() {
        use crate::engine::testutil::replay::replay;
        for (seed, pages) in [(1, 120), (2, 120), (3, 40), (4, 300)] {
            let t: Vec<u32> = random_trace(6000, pages, seed)
                .into_iter()
                .map(|x| x as u32)
                .collect();
            for cap in [1, 2, 3, 10, 40, 100, 119, 200] {
                for hir in [1.0, 10.0, 30.0, 100.0] {
                    let spec = format!("lirs:hir={hir}");
                    assert_eq!(
                        replay(&spec, cap, &t),
                        reference(cap, hir, &t),
                        "cap {cap} {spec}"
                    );
                }
            }
        }
    }

    #[test]
    fn queue_positions_wrap() {
        // Start both queues' positions just below 2^30, so that they are
        // filtered and re-stamped from 0 repeatedly early on.
        let t: Vec<u32> = random_trace(6000, 120, 7)
            .into_iter()
            .map(|x| x as u32)
            .collect();
        let req = Req {
            pos: 0,
            write: false,
            next_use: u32::MAX,
        };
        for cap in [3, 40, 100] {
            let lhirs = (cap / 10).max(1);
            let mut l = Lirs::new(120, cap - lhirs, cap);
            l.s.base = STAMPS - 50;
            l.q.base = STAMPS - 7;
            let got: Vec<Access> = t.iter().map(|&x| l.access(x, &req)).collect();
            assert_eq!(got, reference(cap, 10.0, &t), "cap {cap}");
        }
    }

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 100, 1000)
    }

    #[test]
    fn params_are_checked() {
        // The 8-byte cell; the queues are still empty.
        assert_eq!(build("lirs").unwrap(), 8);
        assert!(build("lirs:hir=10").is_ok());
        assert!(build("lirs:hir=-1").is_err());
        assert!(build("lirs:hir=101").is_err());
        assert!(build("lirs:hir=x").is_err());
        assert!(build("lirs:m=2").is_err());
    }

    #[test]
    fn contract() {
        contract_all("lirs");
        contract_all("lirs:hir=10");
        contract_all("lirs:hir=100");
    }
}
