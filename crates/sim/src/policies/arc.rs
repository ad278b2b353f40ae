//! ARC (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement
//! Cache", FAST 2003), exactly as the paper's Fig. 4.
//!
//! Memory of c pages; four LRU lists: T1 (resident, seen once recently),
//! T2 (resident, seen at least twice), B1 and B2 (ids of pages recently
//! evicted from T1 and T2: ghosts, not resident); a target size p for T1.
//!
//! * Case I, hit in T1 ∪ T2: move to T2's MRU end.
//! * Case II, x in B1: p ← min(p + δ1, c), δ1 = 1 if |B1| ≥ |B2| else
//!   |B2| / |B1|; REPLACE(x, p); move x to T2's MRU end.
//! * Case III, x in B2: p ← max(p − δ2, 0), δ2 = 1 if |B2| ≥ |B1| else
//!   |B1| / |B2|; REPLACE(x, p); move x to T2's MRU end.
//! * Case IV, x in no list:
//!   A. |T1| + |B1| = c: if |T1| < c, drop B1's LRU and REPLACE(x, p);
//!   else drop T1's LRU page (evicted, not remembered).
//!   B. |T1| + |B1| < c and the four lists hold ≥ c: drop B2's LRU if they
//!   hold 2c, then REPLACE(x, p).
//!   Then put x at T1's MRU end.
//! * REPLACE(x, p): if T1 is not empty and (|T1| > p, or x ∈ B2 and
//!   |T1| = p), evict T1's LRU page to B1's MRU end; else evict T2's LRU
//!   page to B2's MRU end.
//!
//! p and the δs are real numbers, as in the paper (Fig. 4 writes δ1 as the
//! quotient |B2|/|B1|, with no rounding; p is compared with the whole
//! number |T1| in REPLACE, so "|T1| = p" holds only when p is whole).
//! libCacheSim does the same (a `double` p) after first using integers,
//! and so did this file until it was found to disagree with the peer at 9
//! of 12 sizes of cloudPhysicsIO. Rounding matters: with integer division
//! a run of B1 hits while |B2| = 1.9 |B1| moves p by 1 each, with reals by
//! 1.9. p is an f64: it only ever holds sums and differences of quotients
//! of list lengths (≤ 2^32), clamped to [0, c], and the same operations in
//! the same order as the peer's C give the same bits.
//!
//! A defensive fallback, never reached when the paper's invariants hold:
//! if REPLACE's chosen list is empty, it takes the other.
//!
//! Memory: the four lists are `LazyLists` (below): 4 bytes per page plus 8 per
//! queue entry (at most about 3 × (2c) + 256 entries).
use crate::lazy_lists::LazyLists;
use crate::policy::{Access, Policy, PolicyInfo, Req};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "arc",
    summary: "adaptive replacement cache",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("arc", &[])?;
        // T1 + B1 <= c and T2 + B2 <= 2c.
        LazyLists::check("arc", c.capacity.saturating_mul(2), c.pages)?;
        Ok(Box::new(Arc::new(c.capacity, c.pages)))
    },
};

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

struct Arc {
    lists: LazyLists,
    c: usize,
    /// Target size of T1 (a real number in [0, c]).
    p: f64,
}

impl Arc {
    fn new(c: usize, pages: usize) -> Self {
        Arc {
            lists: LazyLists::new(4, pages),
            c,
            p: 0.0,
        }
    }

    /// REPLACE(x, p): evicts one resident page into its ghost list.
    fn replace(&mut self, x_in_b2: bool) -> Option<u32> {
        let l = &mut self.lists;
        let t1 = l.len(T1);
        let t1f = t1 as f64;
        #[allow(clippy::float_cmp)] // the paper's test: exact equality
        let from_t1 = t1 > 0 && (t1f > self.p || (x_in_b2 && t1f == self.p));
        let (from, to) = if from_t1 || l.is_empty(T2) {
            (T1, B1)
        } else {
            (T2, B2)
        };
        let v = l.pop_back(from)?;
        l.push_front(to, v);
        Some(v)
    }
}

impl Policy for Arc {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let l = &self.lists;
        match l.which(id) {
            Some(T1) | Some(T2) => {
                self.lists.move_front(T2, id);
                Access::Hit
            }
            Some(B1) => {
                let (b1, b2) = (l.len(B1) as f64, l.len(B2) as f64);
                let d = if b1 >= b2 { 1.0 } else { b2 / b1 };
                self.p = (self.p + d).min(self.c as f64);
                let victim = self.replace(false);
                self.lists.move_front(T2, id);
                Access::Miss { victim }
            }
            Some(_) => {
                // In B2.
                let (b1, b2) = (l.len(B1) as f64, l.len(B2) as f64);
                let d = if b2 >= b1 { 1.0 } else { b1 / b2 };
                self.p = (self.p - d).max(0.0);
                let victim = self.replace(true);
                self.lists.move_front(T2, id);
                Access::Miss { victim }
            }
            None => {
                let c = self.c;
                let l1 = l.len(T1) + l.len(B1);
                let victim = if l1 >= c {
                    // Case A.
                    if l.len(T1) < c {
                        self.lists.pop_back(B1);
                        self.replace(false)
                    } else {
                        self.lists.pop_back(T1)
                    }
                } else {
                    // Case B.
                    let total = l1 + l.len(T2) + l.len(B2);
                    if total >= c {
                        if total >= c.saturating_mul(2) {
                            self.lists.pop_back(B2);
                        }
                        self.replace(false)
                    } else {
                        None
                    }
                };
                self.lists.push_front(T1, id);
                Access::Miss { victim }
            }
        }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        self.lists.prefetch(id);
    }
    fn bytes_per_page(&self) -> usize {
        self.lists.bytes_per_page()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    /// The contents of a list, MRU first.
    fn list(a: &Arc, which: u8) -> Vec<u32> {
        a.lists.contents(which)
    }

    /// Replays `steps` of (page, expected outcome, T1, T2, B1, B2, p after).
    /// Twice: from a fresh clock, and with the lists' stamp clock a few
    /// steps from running out, so that re-stamping happens mid-trace and
    /// must not change anything.
    #[allow(clippy::type_complexity)]
    fn check(c: usize, steps: &[(u32, Access, &[u32], &[u32], &[u32], &[u32], f64)]) {
        for clock in [None, Some(7)] {
            let mut a = Arc::new(c, 16);
            if let Some(c) = clock {
                a.lists.set_clock_before_wrap(c);
            }
            for (i, &(x, want, t1, t2, b1, b2, p)) in steps.iter().enumerate() {
                let req = Req {
                    pos: i as u64,
                    write: false,
                    next_use: u32::MAX,
                };
                let got = a.access(x, &req);
                let state = (
                    got,
                    list(&a, T1),
                    list(&a, T2),
                    list(&a, B1),
                    list(&a, B2),
                    a.p,
                );
                let want = (want, t1.to_vec(), t2.to_vec(), b1.to_vec(), b2.to_vec(), p);
                assert_eq!(state, want, "step {i} (page {x}), clock {clock:?}");
            }
        }
    }

    #[test]
    fn hand_worked_c2() {
        // c = 2. Columns: page, outcome, then T1 T2 B1 B2 (MRU first) and p
        // after the step, with the case of Fig. 4 that applies.
        check(
            2,
            &[
                // IV.B, lists hold 0 < c: no REPLACE.
                (1, M, &[1], &[], &[], &[], 0.0),
                // I: T1 -> T2.
                (1, H, &[], &[1], &[], &[], 0.0),
                // IV.B, lists hold 1 < c.
                (2, M, &[2], &[1], &[], &[], 0.0),
                // IV.B, lists hold 2 = c (< 2c): REPLACE: |T1|=1 > p=0 -> 2 to B1.
                (3, ev(2), &[3], &[1], &[2], &[], 0.0),
                // II: |B1|=1 ≥ |B2|=0, δ1=1, p=1; REPLACE: |T1|=1 not > 1 -> T2's 1 to B2.
                (2, ev(1), &[3], &[2], &[], &[1], 1.0),
                // III: |B2|=1 ≥ |B1|=0, δ2=1, p=0; REPLACE: |T1|=1 > 0 -> 3 to B1.
                (1, ev(3), &[], &[1, 2], &[3], &[], 0.0),
                // IV.B: |T1|+|B1| = 1 < 2, lists hold 3 (≥ c, < 2c);
                // REPLACE: T1 empty -> T2's LRU 2 to B2.
                (4, ev(2), &[4], &[1], &[3], &[2], 0.0),
                // IV.A: |T1|+|B1| = 2 = c, |T1| < c: drop B1's 3; REPLACE: 4 to B1.
                (5, ev(4), &[5], &[1], &[4], &[2], 0.0),
                // III: |B2|=1 ≥ |B1|=1, δ2=1, p=max(0-1,0)=0; REPLACE: 5 to B1.
                (2, ev(5), &[], &[2, 1], &[5, 4], &[], 0.0),
                // II: |B1|=2 ≥ 0, p=1; REPLACE: T1 empty -> 1 to B2.
                (4, ev(1), &[], &[4, 2], &[5], &[1], 1.0),
                // IV.B: |T1|+|B1| = 1 < 2; lists hold 4 = 2c: drop B2's 1;
                // REPLACE: T1 empty -> 2 to B2.
                (6, ev(2), &[6], &[4], &[5], &[2], 1.0),
                // IV (1 was dropped from B2, so it is new). A: |T1|+|B1| = 2,
                // |T1| < c: drop B1's 5; REPLACE: |T1|=1 = p but x ∉ B2 -> T2's 4.
                (1, ev(4), &[1, 6], &[], &[], &[4, 2], 1.0),
                // I.
                (6, H, &[1], &[6], &[], &[4, 2], 1.0),
                // III: |B2|=2 ≥ 0, p=0; REPLACE: |T1|=1 > 0 -> 1 to B1.
                (2, ev(1), &[], &[2, 6], &[1], &[4], 0.0),
                // III: |B2|=1 ≥ |B1|=1, p=0; REPLACE: T1 empty -> 6 to B2
                // (4 is still in B2 during REPLACE, then moves to T2).
                (4, ev(6), &[], &[4, 2], &[1], &[6], 0.0),
            ],
        );
    }

    #[test]
    fn hand_worked_c3() {
        // c = 3: δ > 1 and the "x ∈ B2 and |T1| = p" clause of REPLACE.
        check(
            3,
            &[
                (1, M, &[1], &[], &[], &[], 0.0),
                (1, H, &[], &[1], &[], &[], 0.0),
                (2, M, &[2], &[1], &[], &[], 0.0),
                (2, H, &[], &[2, 1], &[], &[], 0.0),
                (3, M, &[3], &[2, 1], &[], &[], 0.0),
                (3, H, &[], &[3, 2, 1], &[], &[], 0.0),
                // IV.B, lists hold 3 = c: REPLACE: T1 empty -> 1 to B2.
                (4, ev(1), &[4], &[3, 2], &[], &[1], 0.0),
                // IV.B, hold 4: REPLACE: |T1|=1 > 0 -> 4 to B1.
                (5, ev(4), &[5], &[3, 2], &[4], &[1], 0.0),
                (5, H, &[], &[5, 3, 2], &[4], &[1], 0.0),
                // IV.B, hold 5: REPLACE: T1 empty -> 2 to B2.
                (6, ev(2), &[6], &[5, 3], &[4], &[2, 1], 0.0),
                (6, H, &[], &[6, 5, 3], &[4], &[2, 1], 0.0),
                // IV.B, hold 6 = 2c: drop B2's 1; REPLACE: T1 empty -> 3 to B2.
                (7, ev(3), &[7], &[6, 5], &[4], &[3, 2], 0.0),
                // II: |B1|=1 < |B2|=2: δ1 = 2/1 = 2, p = 2; REPLACE: |T1|=1
                // not > 2 -> T2's 5 to B2.
                (4, ev(5), &[7], &[4, 6], &[], &[5, 3, 2], 2.0),
                // III: |B2|=3 ≥ 0: δ2=1, p = 1; REPLACE: |T1| = 1 = p and
                // x ∈ B2 -> T1's 7 to B1 (without that clause: T2's 6).
                (3, ev(7), &[], &[3, 4, 6], &[7], &[5, 2], 1.0),
                (6, H, &[], &[6, 3, 4], &[7], &[5, 2], 1.0),
                // II: |B1|=1 < |B2|=2: δ1 = 2, p = 3; REPLACE: T1 empty -> 4 to B2.
                (7, ev(4), &[], &[7, 6, 3], &[], &[4, 5, 2], 3.0),
                // IV.B, hold 6 = 2c: drop B2's 2; REPLACE: T1 empty -> 3 to B2.
                (8, ev(3), &[8], &[7, 6], &[], &[3, 4, 5], 3.0),
                // IV.B, hold 6: drop B2's 5; REPLACE: |T1|=1 not > p=3 -> 6 to B2.
                (9, ev(6), &[9, 8], &[7], &[], &[6, 3, 4], 3.0),
                (8, H, &[9], &[8, 7], &[], &[6, 3, 4], 3.0),
                // IV.B, hold 6: drop B2's 4; REPLACE: |T1|=1 not > p=3 -> 7 to B2.
                (10, ev(7), &[10, 9], &[8], &[], &[7, 6, 3], 3.0),
            ],
        );
    }

    #[test]
    fn hand_worked_c5_delta2() {
        // c = 5: a B2 hit while |B1| = 2|B2|, so δ2 = ⌊|B1|/|B2|⌋ = 2 moves
        // p from 2 to 0 (δ2 = 1 would leave 1).
        check(
            5,
            &[
                (8, M, &[8], &[], &[], &[], 0.0),
                (1, M, &[1, 8], &[], &[], &[], 0.0),
                (8, H, &[1], &[8], &[], &[], 0.0),
                (10, M, &[10, 1], &[8], &[], &[], 0.0),
                (6, M, &[6, 10, 1], &[8], &[], &[], 0.0),
                (5, M, &[5, 6, 10, 1], &[8], &[], &[], 0.0),
                // IV.B, lists hold 5 = c: REPLACE: |T1|=4 > 0 -> 1 to B1.
                (2, ev(1), &[2, 5, 6, 10], &[8], &[1], &[], 0.0),
                // II: |B1|=1 ≥ 0, p=1; REPLACE: |T1|=4 > 1 -> 10 to B1.
                (1, ev(10), &[2, 5, 6], &[1, 8], &[10], &[], 1.0),
                // IV.B (|T1|+|B1| = 4), hold 6: REPLACE: |T1|=3 > 1 -> 6 to B1.
                (4, ev(6), &[4, 2, 5], &[1, 8], &[6, 10], &[], 1.0),
                // II: |B1|=2 ≥ 0, p=2; REPLACE: |T1|=3 > 2 -> 5 to B1.
                (6, ev(5), &[4, 2], &[6, 1, 8], &[5, 10], &[], 2.0),
                // IV.B, hold 7: REPLACE: |T1|=2 not > 2, x ∉ B2 -> T2's 8 to B2.
                (9, ev(8), &[9, 4, 2], &[6, 1], &[5, 10], &[8], 2.0),
                // IV.A (|T1|+|B1| = 5), |T1| < c: drop B1's 10; REPLACE:
                // |T1|=3 > 2 -> 2 to B1.
                (7, ev(2), &[7, 9, 4], &[6, 1], &[2, 5], &[8], 2.0),
                // III: |B2|=1 < |B1|=2: δ2 = 2, p = 0; REPLACE: |T1|=3 > 0 -> 4.
                (8, ev(4), &[7, 9], &[8, 6, 1], &[4, 2, 5], &[], 0.0),
            ],
        );
    }

    #[test]
    fn hand_worked_full_t1() {
        // IV.A with |T1| = c: pages seen once only; T1's LRU is simply
        // dropped (B1 stays empty), so ARC acts like LRU/FIFO here.
        check(
            2,
            &[
                (1, M, &[1], &[], &[], &[], 0.0),
                (2, M, &[2, 1], &[], &[], &[], 0.0),
                (3, ev(1), &[3, 2], &[], &[], &[], 0.0),
                (1, ev(2), &[1, 3], &[], &[], &[], 0.0),
            ],
        );
        // And through the engine, a loop larger than memory never hits.
        let lp: Vec<u64> = (0..5).cycle().take(50).collect();
        assert_eq!(misses("arc", 4, &lp), 50);
        // A page hit twice (in T2) outlives a stream of new pages, which
        // churn through T1: 1 1 2 3 4 -> 2 and 3 go to B1, 1 stays in T2.
        assert_eq!(replay("arc", 2, &[1, 1, 2, 3, 4, 1])[5], H);
    }

    #[test]
    fn params_are_checked() {
        // Refused when parsed, naming the key; and by the engine, for a
        // spec made without parse.
        let e = crate::policy::PolicySpec::parse("arc:p=1").unwrap_err();
        assert!(e.to_string().contains("p"), "{e}");
        let t = swaplab_trace::dense::DenseTrace::from_pages(&[1, 2]);
        let (name, params) = crate::policy::Params::split_spec("arc:p=1", "").unwrap();
        let spec = crate::policy::PolicySpec { name, params };
        assert!(crate::engine::simulate_checked(&t, &spec, 1, 0).is_err());
    }

    #[test]
    fn contract() {
        contract_all("arc");
    }
}
