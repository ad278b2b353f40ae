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
//! Memory: two sets of intrusive links (8 bytes each) and the state byte:
//! 17 bytes per page.
use super::lists2::Links;
use crate::policy::{Access, Policy, PolicyInfo, Req};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lirs",
    summary: "low inter-reference recency set",
    params: "hir=P (percent of memory for resident HIR pages, default 1, at least 1 page)",
    needs_future: false,
    build: |c| {
        c.params.allow("lirs", &["hir"])?;
        let hir = c.params.real("hir", 1.0, 0.0, 100.0)?;
        let cap = c.capacity.max(1);
        let lhirs = ((cap as f64 * hir / 100.0) as usize).clamp(1, cap);
        Ok(Box::new(Lirs {
            s: Links::new(1, c.pages),
            q: Links::new(1, c.pages),
            st: vec![0; c.pages],
            nlir: 0,
            llirs: cap - lhirs,
            cap,
        }))
    },
};

/// The only list of each `Links`.
const L: usize = 0;
/// Per-page state bits: LIR status, and membership of S and of Q (a
/// resident HIR page is exactly one in Q).
const LIR: u8 = 1;
const IN_S: u8 = 2;
const IN_Q: u8 = 4;

struct Lirs {
    /// Stack S: front = top (most recent), back = bottom.
    s: Links,
    /// Queue Q of resident HIR pages: front = end (newest), back = front (next victim).
    q: Links,
    st: Vec<u8>,
    nlir: usize,
    llirs: usize,
    cap: usize,
}

impl Lirs {
    /// Removes HIR pages from the bottom of S until an LIR page is there.
    #[inline]
    fn prune(&mut self) {
        while let Some(b) = self.s.back(L) {
            let st = &mut self.st[b as usize];
            if *st & LIR != 0 {
                return;
            }
            *st &= !IN_S;
            self.s.remove(L, b);
        }
    }

    /// Puts `x` at the top of S.
    #[inline]
    fn move_to_top(&mut self, x: u32) {
        let st = &mut self.st[x as usize];
        if *st & IN_S != 0 {
            self.s.move_front(L, L, x);
        } else {
            *st |= IN_S;
            self.s.push_front(L, x);
        }
    }

    /// Puts `x` (in Q or not) at the end of Q.
    #[inline]
    fn move_to_queue_end(&mut self, x: u32) {
        let st = &mut self.st[x as usize];
        if *st & IN_Q != 0 {
            self.q.move_front(L, L, x);
        } else {
            *st |= IN_Q;
            self.q.push_front(L, x);
        }
    }

    /// Makes `x` (HIR, resident or not, in S or not) LIR at the top of S,
    /// demoting bottom LIR pages to Q while there are more than `Llirs`.
    fn promote(&mut self, x: u32) {
        let i = x as usize;
        if self.st[i] & IN_Q != 0 {
            self.q.remove(L, x);
        }
        self.st[i] = (self.st[i] & !IN_Q) | LIR;
        self.nlir += 1;
        self.move_to_top(x);
        while self.nlir > self.llirs {
            self.prune();
            let Some(b) = self.s.pop_back(L) else { break };
            self.st[b as usize] = IN_Q;
            self.q.push_front(L, b);
            self.nlir -= 1;
        }
        self.prune();
    }

    /// Frees one frame: Q's front, or (never needed while `Lhirs` >= 1) the bottom LIR page.
    fn evict(&mut self) -> Option<u32> {
        if let Some(v) = self.q.pop_back(L) {
            self.st[v as usize] &= !IN_Q;
            return Some(v);
        }
        self.prune();
        let v = self.s.pop_back(L)?;
        self.st[v as usize] = 0;
        self.nlir -= 1;
        self.prune();
        Some(v)
    }
}

impl Policy for Lirs {
    #[inline]
    fn access(&mut self, x: u32, _req: &Req) -> Access {
        let st = self.st[x as usize];
        if st & LIR != 0 {
            let bottom = self.s.back(L) == Some(x);
            self.s.move_front(L, L, x);
            if bottom {
                self.prune();
            }
            return Access::Hit;
        }
        if st & IN_Q != 0 {
            if st & IN_S != 0 {
                self.promote(x);
            } else {
                self.move_to_top(x);
                self.move_to_queue_end(x);
                // Only when there is no LIR page can X be S's bottom.
                self.prune();
            }
            return Access::Hit;
        }
        let victim = if self.nlir + self.q.len(L) >= self.cap {
            self.evict()
        } else {
            None
        };
        // The victim may have been x's neighbour, never x: re-read its state.
        if self.st[x as usize] & IN_S != 0 || self.nlir < self.llirs {
            self.promote(x);
        } else {
            self.move_to_top(x);
            self.move_to_queue_end(x);
            self.prune();
        }
        Access::Miss { victim }
    }

    fn bytes_per_page(&self) -> usize {
        2 * Links::BYTES_PER_PAGE + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::*;
    use crate::engine::SimError;

    /// S top first, as (page, 'L' LIR | 'R' resident HIR | 'N' non-resident
    /// HIR), then Q from its front (next victim) to its end.
    fn state(l: &Lirs) -> (Vec<(u64, char)>, Vec<u64>) {
        let s =
            l.s.contents(L)
                .into_iter()
                .map(|x| {
                    let st = l.st[x as usize];
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
        let mut q: Vec<u64> = l.q.contents(L).into_iter().map(u64::from).collect();
        q.reverse();
        (s, q)
    }

    /// State (a) of the paper's Fig. 2 (Section 3.3): the blocks of Table 1
    /// at virtual time 10 (A D B C B A D A E referenced at times 1..9),
    /// with Llirs = 2, Lhirs = 1. By IRR, the LIR set is {A, B} (IRR 1
    /// each) and C, D, E are HIR; E (recency 0) is the resident HIR block.
    /// S holds the blocks whose recency is at most B's (3), the largest of
    /// an LIR block: E A D B top first (C, recency 4, is not in S).
    fn paper_state_a() -> Lirs {
        let mut l = Lirs {
            s: Links::new(1, 6),
            q: Links::new(1, 6),
            st: vec![0; 6],
            nlir: 2,
            llirs: 2,
            cap: 3,
        };
        for (x, st) in [
            (B, LIR | IN_S),
            (D, IN_S),
            (A, LIR | IN_S),
            (E, IN_S | IN_Q),
        ] {
            l.s.push_front(L, x as u32);
            l.st[x as usize] = st;
        }
        l.q.push_front(L, E as u32);
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

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 100, 1000)
    }

    #[test]
    fn params_are_checked() {
        assert_eq!(build("lirs").unwrap(), 17);
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
