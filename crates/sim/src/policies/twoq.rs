//! 2Q, full version (Johnson & Shasha, "2Q: A Low Overhead High Performance
//! Buffer Management Replacement Algorithm", VLDB 1994, Fig. "Full 2Q").
//!
//! Three queues: A1in, a FIFO of resident pages seen once recently; A1out,
//! a FIFO of the ids of pages recently evicted from A1in (not resident: a
//! "ghost" queue); Am, an LRU of resident pages referenced again after
//! leaving A1in.
//!
//! * Hit in Am: move to Am's front. Hit in A1in: nothing (correlated
//!   references do not promote).
//! * Miss on a page in A1out: reclaim a frame, then put the page at Am's front.
//! * Any other miss: reclaim a frame, then put the page at A1in's front.
//! * Reclaim (only when memory is full): if |A1in| > Kin, evict A1in's
//!   tail and remember its id at A1out's front, dropping A1out's tail if
//!   |A1out| > Kout; otherwise evict Am's tail (not remembered).
//!
//! Kin = ⌊capacity · kin / 100⌋ and Kout = ⌊capacity · kout / 100⌋ with the
//! paper's recommended kin=25, kout=50 by default. As in the paper, a page
//! found in A1out stays there while the frame is reclaimed (so the trim may
//! drop it, or, when it is not A1out's tail, drop the tail) and then moves
//! to Am (libCacheSim's `TwoQ.c` takes it out of A1out first: see
//! `ghost_hit_counts_in_a1out_until_it_moves`). One safeguard beyond the paper: if Am is
//! empty the reclaim takes A1in's tail even when |A1in| ≤ Kin (possible only
//! with kin=100), so there is always a victim.
//!
//! Memory: the three queues are ARC's `LazyLists`: 4 bytes per page plus
//! 8 per queue entry (at most about 3 × (capacity + Kout) + 192 entries).
use crate::lazy_lists::LazyLists;
use crate::policy::{Access, Policy, PolicyInfo, Req};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "2q",
    summary: "2Q (full version: A1in, A1out, Am)",
    params: "kin=P (0..=100, default 25): A1in size, % of memory; \
             kout=P (0..=1000, default 50): A1out ghost size, % of memory",
    needs_future: false,
    build: |c| {
        c.params.allow("2q", &["kin", "kout"])?;
        let kin = c.params.int("kin", 25, 0, 100)?;
        let kout = c.params.int("kout", 50, 0, 1000)?;
        let pct = |p: u64| {
            usize::try_from(c.capacity as u128 * u128::from(p) / 100).unwrap_or(usize::MAX)
        };
        LazyLists::check("2q", c.capacity.max(pct(kout)), c.pages)?;
        Ok(Box::new(TwoQ {
            lists: LazyLists::new(3, c.pages),
            cap: c.capacity,
            kin: pct(kin),
            kout: pct(kout),
        }))
    },
};

const A1IN: u8 = 0;
const AM: u8 = 1;
const A1OUT: u8 = 2;

struct TwoQ {
    lists: LazyLists,
    cap: usize,
    kin: usize,
    kout: usize,
}

impl TwoQ {
    /// Frees a frame if memory is full; returns the evicted page.
    fn reclaim(&mut self) -> Option<u32> {
        let l = &mut self.lists;
        if l.len(A1IN) + l.len(AM) < self.cap {
            return None;
        }
        if l.len(A1IN) > self.kin || l.is_empty(AM) {
            let y = l.pop_back(A1IN)?;
            l.push_front(A1OUT, y);
            if l.len(A1OUT) > self.kout {
                l.pop_back(A1OUT);
            }
            Some(y)
        } else {
            l.pop_back(AM)
        }
    }
}

impl Policy for TwoQ {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        match self.lists.which(id) {
            Some(AM) => {
                self.lists.move_front(AM, id);
                Access::Hit
            }
            Some(A1IN) => Access::Hit,
            Some(_) => {
                // In A1out: reclaim first (id stays in A1out meanwhile).
                let victim = self.reclaim();
                self.lists.move_front(AM, id);
                Access::Miss { victim }
            }
            None => {
                let victim = self.reclaim();
                self.lists.push_front(A1IN, id);
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
    use crate::engine::testutil::replay::*;
    use crate::engine::testutil::*;

    #[test]
    fn hand_worked() {
        // cap 4: Kin = ⌊4·25/100⌋ = 1, Kout = ⌊4·50/100⌋ = 2.
        // Queues written front..back.
        //  0-3  1 2 3 4: free frames, A1in [4 3 2 1]
        //  4    5: |A1in|=4 > 1: evict 1 -> A1out [1]; A1in [5 4 3 2]
        //  5    1 (in A1out): evict 2 -> A1out [2 1]; 1 -> Am [1]; A1out [2]
        //  6    1: hit in Am
        //  7    2 (in A1out): evict 3 -> A1out [3 2]; 2 -> Am [2 1]; A1out [3]
        //  8    1: hit, Am [1 2]
        //  9    6: evict 4 -> A1out [4 3]; A1in [6 5]
        // 10    7: evict 5 -> A1out [5 4 3], trim 3 -> [5 4]; A1in [7 6]
        // 11    3 (trimmed, so a plain miss): evict 6 -> A1out [6 5 4] -> [6 5];
        //          3 -> A1in [3 7]
        // 12    5 (in A1out): evict 7 -> A1out [7 6 5], trim 5 (itself);
        //          5 -> Am [5 1 2]; A1in [3]; A1out [7 6]
        // 13    8: |A1in| = 1, not > Kin: evict Am's LRU 2 (not remembered);
        //          A1in [8 3]; Am [5 1]
        // 14    2 (not in A1out): evict 3 -> A1out [3 7]; A1in [2 8]
        // 15    1: hit, Am [1 5]
        // 16    8: hit in A1in: no reordering, 8 stays at the back
        // 17    9: evict A1in's back 8 -> A1out [8 3]; A1in [9 2]
        // 18    8 (in A1out): evict 2 -> A1out [2 8 3] -> [2 8]; 8 -> Am [8 1 5]
        // 19    2 (in A1out): |A1in| = 1: evict Am's LRU 5; 2 -> Am [2 8 1]
        // 20    5 (Am evictions are not remembered: plain miss): evict Am's
        //          LRU 1; A1in [5 9]
        // 21    8: hit (Am)   22  9: hit (A1in)   23  1: miss
        let s = [
            1, 2, 3, 4, 5, 1, 1, 2, 1, 6, 7, 3, 5, 8, 2, 1, 8, 9, 8, 2, 5, 8, 9, 1,
        ];
        let r = replay("2q", 4, &s);
        assert_eq!(
            &r[..21],
            &[
                M,
                M,
                M,
                M,
                ev(1),
                ev(2),
                H,
                ev(3),
                H,
                ev(4),
                ev(5),
                ev(6),
                ev(7),
                ev(2),
                ev(3),
                H,
                H,
                ev(8),
                ev(2),
                ev(5),
                ev(1)
            ]
        );
        // 23: 1 misses; A1in is [5 9] (2 > Kin): evict its back 9.
        assert_eq!(&r[21..], &[H, H, ev(9)]);
    }

    #[test]
    fn ghost_hit_counts_in_a1out_until_it_moves() {
        // The paper: "if X is in A1out then reclaimfor(X); add X to the head
        // of Am". X's id is still in A1out while reclaimfor(X) adds the
        // victim's id and trims A1out to Kout, so the trim counts X and, when
        // X is not the tail, drops the tail. libCacheSim's TwoQ.c removes X
        // from A1out when it looks X up (TwoQ_find), before it evicts, so its
        // A1out keeps that tail one eviction longer: the one-miss difference
        // from the peer on the standard trace (docs/policies.md, 2Q).
        // cap 4: Kin 1, Kout 2. Queues front..back; (peer: ...) is TwoQ.c.
        //  0-3  1 2 3 4: A1in [4 3 2 1]
        //  4    5: evict 1 -> A1out [1]; A1in [5 4 3 2]
        //  5    6: evict 2 -> A1out [2 1]; A1in [6 5 4 3]
        //  6    2 (in A1out, not its tail): evict 3 -> A1out [3 2 1], 3 > Kout:
        //          trim the tail 1; then 2 -> Am [2]; A1out [3]
        //          (peer: 2 leaves first, A1out [1]; evict 3 -> [3 1], no trim)
        //  7    1 (trimmed: a plain miss): evict 4 -> A1out [4 3]; A1in [1 6 5]
        //          (peer: a ghost hit; evict 4 -> A1out [4 3]; 1 -> Am [1 2];
        //          A1in [6 5])
        //  8    7: evict 5 -> A1out [5 4 3] -> [5 4]; A1in [7 1 6]  (peer: the same
        //          eviction; A1in [7 6])
        //  9    8: evict 6 -> A1out [6 5]; A1in [8 7 1]  (peer: A1in [8 7])
        // 10    9: evict A1in's back 1 -> A1out [1 6]; A1in [9 8 7]
        //          (peer: evicts 7, the first differing decision)
        // 11    1 (in A1out): evict 7; 1 -> Am [1 2]: a miss (peer: a hit in Am)
        let s = [1, 2, 3, 4, 5, 6, 2, 1, 7, 8, 9, 1];
        assert_eq!(
            replay("2q", 4, &s),
            [
                M,
                M,
                M,
                M,
                ev(1),
                ev(2),
                ev(3),
                ev(4),
                ev(5),
                ev(6),
                ev(1),
                ev(7)
            ]
        );
    }

    /// The paper's pseudocode with plain Vecs (index 0 = front) and linear
    /// searches, as a reference on random traces.
    fn reference(cap: usize, kin: usize, kout: usize, t: &[u32]) -> Vec<crate::policy::Access> {
        use crate::policy::Access;
        let (mut a1in, mut am, mut a1out): (Vec<u32>, Vec<u32>, Vec<u32>) =
            (vec![], vec![], vec![]);
        let mut out = vec![];
        for &x in t {
            if let Some(i) = am.iter().position(|&y| y == x) {
                am.remove(i);
                am.insert(0, x);
                out.push(Access::Hit);
                continue;
            }
            if a1in.contains(&x) {
                out.push(Access::Hit);
                continue;
            }
            // "if X is in A1out then reclaimfor(X); add X to the head of Am":
            // the test comes first; reclaiming may trim X from A1out.
            let was_out = a1out.contains(&x);
            let mut victim = None;
            if a1in.len() + am.len() == cap {
                if a1in.len() > kin || am.is_empty() {
                    let y = a1in.pop().unwrap();
                    a1out.insert(0, y);
                    if a1out.len() > kout {
                        a1out.pop();
                    }
                    victim = Some(y);
                } else {
                    victim = am.pop();
                }
            }
            if was_out {
                a1out.retain(|&y| y != x);
                am.insert(0, x);
            } else {
                a1in.insert(0, x);
            }
            out.push(Access::Miss { victim });
        }
        out
    }

    #[test]
    fn matches_pseudocode_transcription() {
        for seed in 1..4 {
            let t: Vec<u32> = random_trace(4000, 90, seed)
                .into_iter()
                .map(|x| x as u32)
                .collect();
            for cap in [1, 2, 3, 5, 16, 40, 89, 90, 200] {
                for (spec, kin, kout) in [
                    ("2q", cap / 4, cap / 2),
                    ("2q:kin=60:kout=150", cap * 60 / 100, cap * 150 / 100),
                ] {
                    let (got, want) = (replay(spec, cap, &t), reference(cap, kin, kout, &t));
                    let first = got.iter().zip(&want).position(|(a, b)| a != b);
                    let ctx = first.map(|i| (i, &t[i.saturating_sub(12)..=i], got[i], want[i]));
                    assert_eq!(first, None, "{spec} cap {cap}: {ctx:?}");
                }
            }
        }
    }

    #[test]
    fn scan_resistance() {
        // cap 4 (Kin 1, Kout 2). 1 2 5 6 fill A1in; 7 and 8 push 1 and 2 out
        // to A1out [2 1]; the second 1 and 2 are A1out hits, so they go to Am
        // [2 1] (evicting 5 and 6 from A1in). A scan of 40 new pages then
        // cycles through A1in only (|A1in| = 2 > Kin, so A1in's back goes
        // each time) and never touches Am: the final 1 and 2 hit.
        let mut t: Vec<u64> = vec![1, 2, 5, 6, 7, 8, 1, 2];
        t.extend(100..140);
        t.extend([1, 2]);
        let r = run_spec("2q", 4, &t);
        // The final two references hit under 2Q ...
        assert_eq!(hits("2q", 4, &t)[t.len() - 2..], [true, true]);
        // ... and miss under LRU, whose 4 frames the scan flushed.
        assert_eq!(hits("lru", 4, &t)[t.len() - 2..], [false, false]);
        assert_eq!(r.counters.hits, 2);
    }

    #[test]
    fn params_are_checked() {
        use crate::policy::PolicySpec;
        use swaplab_trace::dense::DenseTrace;
        let t = DenseTrace::from_pages(&[1, 2, 3]);
        for bad in ["2q:kin=101", "2q:kout=-1", "2q:kin=x", "2q:k=1"] {
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
        // Other sizes, including the extremes, keep the contract.
        contract_all("2q:kin=50:kout=200");
        contract_all("2q:kin=100:kout=0");
        contract_all("2q:kin=0");
    }

    #[test]
    fn contract() {
        contract_all("2q");
    }
}
