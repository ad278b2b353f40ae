//! S3-FIFO (Yang, Zhang, Qiu, Yue, Vinayak, "FIFO queues are all you need
//! for cache eviction", SOSP 2023), following the paper's Algorithm 1 and
//! the authors' reference implementation (libCacheSim `S3FIFOv0.c`, the
//! version the paper evaluates).
//!
//! Three FIFO queues: a small queue S (`small=` fraction of the capacity,
//! default 0.10, at least 1 page), a main queue M (the rest), and a ghost
//! queue G of evicted ids holding as many entries as M's capacity. Each
//! resident page has a 2-bit frequency, set to 0 on insertion and
//! incremented (saturating at 3) on each hit.
//!
//! * Miss on X: if X is in G it is removed from G and inserted at M's head,
//!   otherwise at S's head.
//! * Eviction (memory full): if |S| ≥ S's capacity, evict from S, else from M.
//!   (libCacheSim tests "|M| > M's capacity or S empty" instead; with a full
//!   memory the two agree.)
//! * From S: the tail page moves to M's head if its frequency is at least
//!   the threshold `move=` (default 2, i.e. Algorithm 1's `freq > 1` and
//!   libCacheSim's `move-to-main-threshold=2`), with its frequency reset to
//!   0 (libCacheSim re-inserts it as a new object); this repeats until a
//!   tail page below the threshold is found, which goes to G and is the
//!   victim. If S empties first, the victim comes from M. (Algorithm 1
//!   instead evicts from M as soon as M is full during this loop and then
//!   keeps looking for an S victim, which can free two pages for one miss;
//!   the reference implementation's loop, used here, frees exactly one.)
//! * From M (CLOCK with a 2-bit counter): the tail page is re-inserted at
//!   M's head with its frequency decremented while it is positive;
//!   the first tail page with frequency 0 is the victim.
//! * G drops its oldest ids beyond M's capacity.
//!
//! Not modelled: libCacheSim's newer `S3FIFO.c` variant that inserts into M
//! while S is full before the first eviction.
//!
//! **Data structure.** Every queue is only ever entered at its head, and S
//! and M are only ever left at their tails, so S and M are plain FIFO
//! queues of page ids (`VecDeque<u32>`, tail at the front) instead of
//! linked lists. G is also left from its middle (a ghost hit takes the page
//! back into M), so it is a FIFO with lazy deletion: a ghost hit only
//! clears the page's queue bits and counts one more stale G entry in the
//! high nibble of its state byte; popping G's oldest entry skips it (and
//! decrements the count) while the page has stale entries, since a page's
//! valid G entry, if any, is always its newest. G is filtered down to its
//! valid entries when it holds more than twice its capacity (plus 64) or a
//! page would have 16 stale entries, so it holds at most about 2× M's
//! capacity and filtering costs O(1) amortised per insertion. A hit reads
//! and writes only the page's state byte (which the engine's prefetch hint
//! brings in early); evictions read the queues sequentially and prefetch
//! the state of the pages a few places behind each tail.
//!
//! Memory: the state byte (frequency, queue, stale G entries) per page,
//! plus 4 bytes per entry of S, M and G (whose capacities grow in powers of
//! two): 3 bytes per page with 1/8 of the pages resident, as in
//! `tests/memory.rs` (9 with the linked lists this replaced).
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::prefetch;
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "s3fifo",
    summary: "S3-FIFO (SOSP 2023)",
    params: "small=F (fraction of memory for the small queue, default 0.1), move=N (hits in S to move to M, 1-3, default 2)",
    needs_future: false,
    build: |c| {
        c.params.allow("s3fifo", &["small", "move"])?;
        let small = c.params.real("small", 0.1, 0.0, 1.0)?;
        let mv = c.params.int("move", 2, 1, 3)? as u8;
        let cap = c.capacity.max(1);
        let small_cap = ((cap as f64 * small) as usize).clamp(1, cap);
        Ok(Box::new(S3Fifo {
            s: VecDeque::new(),
            m: VecDeque::new(),
            g: VecDeque::new(),
            g_len: 0,
            st: vec![0; c.pages],
            cap,
            small_cap,
            ghost_cap: cap - small_cap,
            mv,
        }))
    },
};

/// Per-page state byte: the frequency in bits 0-1, in bits 2-3 the queue
/// (`IN_S`, `IN_M`, `IN_G` or 0), so that a hit reads one byte, and in
/// bits 4-7 the number of stale entries of the page in G's queue.
const FREQ: u8 = 3;
const IN_S: u8 = 4;
const IN_M: u8 = 8;
const IN_G: u8 = 12;
const QUEUE: u8 = 12;
const STALE: u8 = 0xF0;
const ONE_STALE: u8 = 0x10;

/// How far behind a queue's tail evictions prefetch page state.
const AHEAD: usize = 8;

struct S3Fifo {
    /// S and M: tail (oldest) at the front.
    s: VecDeque<u32>,
    m: VecDeque<u32>,
    /// G's entries, oldest at the front, with stale ones (see the module doc).
    g: VecDeque<u32>,
    /// Valid entries of G.
    g_len: usize,
    st: Vec<u8>,
    cap: usize,
    small_cap: usize,
    /// M's capacity, which is also G's.
    ghost_cap: usize,
    mv: u8,
}

/// Pops the front of `q`, prefetching the state of the page `AHEAD` behind it.
#[inline]
fn pop(q: &mut VecDeque<u32>, st: &[u8]) -> Option<u32> {
    if let Some(&n) = q.get(AHEAD) {
        prefetch(st.as_ptr().wrapping_add(n as usize));
    }
    q.pop_front()
}

impl S3Fifo {
    fn evict_main(&mut self) -> Option<u32> {
        while let Some(t) = pop(&mut self.m, &self.st) {
            let s = &mut self.st[t as usize];
            if *s & FREQ > 0 {
                *s -= 1;
                self.m.push_back(t);
            } else {
                *s &= STALE;
                return Some(t);
            }
        }
        None
    }

    /// Drops G's oldest valid entry (and the stale ones before it).
    fn pop_ghost(&mut self) {
        while let Some(g) = pop(&mut self.g, &self.st) {
            let s = &mut self.st[g as usize];
            if *s & STALE != 0 {
                *s -= ONE_STALE;
            } else {
                debug_assert_eq!(*s & QUEUE, IN_G);
                *s = 0;
                self.g_len -= 1;
                return;
            }
        }
    }

    /// Drops every stale entry of G (keeping the order of the valid ones)
    /// and zeroes every stale count.
    fn filter_ghosts(&mut self) {
        let st = &mut self.st;
        for &g in &self.g {
            st[g as usize] &= !STALE;
        }
        // Newest first: a page's first entry seen is its valid one, if it
        // is in G; mark it (count 1) so that older entries are dropped.
        let v = self.g.make_contiguous();
        let mut w = v.len();
        for r in (0..v.len()).rev() {
            let g = v[r];
            let s = &mut st[g as usize];
            if *s & QUEUE == IN_G && *s & STALE == 0 {
                *s |= ONE_STALE;
                w -= 1;
                v[w] = g;
            }
        }
        self.g.drain(..w);
        for &g in &self.g {
            st[g as usize] &= !STALE;
        }
        debug_assert_eq!(self.g.len(), self.g_len);
    }

    fn evict(&mut self) -> Option<u32> {
        if self.s.len() >= self.small_cap {
            while let Some(t) = pop(&mut self.s, &self.st) {
                let s = &mut self.st[t as usize];
                if *s & FREQ >= self.mv {
                    *s = (*s & STALE) | IN_M;
                    self.m.push_back(t);
                } else {
                    *s = (*s & STALE) | IN_G;
                    self.g.push_back(t);
                    self.g_len += 1;
                    while self.g_len > self.ghost_cap {
                        self.pop_ghost();
                    }
                    if self.g.len() > 2 * self.ghost_cap + 64 {
                        self.filter_ghosts();
                    }
                    return Some(t);
                }
            }
        }
        // M is not empty here: the memory is full and S is below its share
        // (or was emptied into M). Fall back to S only to stay total.
        self.evict_main().or_else(|| {
            let t = self.s.pop_front()?;
            self.st[t as usize] &= STALE;
            Some(t)
        })
    }
}

impl Policy for S3Fifo {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let i = id as usize;
        let s = self.st[i];
        let queue = s & QUEUE;
        if queue == IN_S || queue == IN_M {
            if s & FREQ < 3 {
                self.st[i] = s + 1;
            }
            return Access::Hit;
        }
        let ghost = queue == IN_G;
        if ghost {
            // Leave G: its entry goes stale.
            self.g_len -= 1;
            if s & STALE == STALE {
                self.st[i] = s & STALE;
                self.filter_ghosts();
            } else {
                self.st[i] = (s & STALE) + ONE_STALE;
            }
        }
        let victim = if self.s.len() + self.m.len() >= self.cap {
            self.evict()
        } else {
            None
        };
        let s = self.st[i] & STALE;
        if ghost {
            self.st[i] = s | IN_M;
            self.m.push_back(id);
        } else {
            self.st[i] = s | IN_S;
            self.s.push_back(id);
        }
        Access::Miss { victim }
    }

    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.st.as_ptr().wrapping_add(id as usize));
    }

    fn bytes_per_page(&self) -> usize {
        let queues = 4 * (self.s.capacity() + self.m.capacity() + self.g.capacity());
        (self.st.len() + queues).div_ceil(self.st.len().max(1))
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    use crate::error::SimError;

    #[test]
    fn hand_worked_ghost_and_main() {
        // cap 10: S holds 1 (10 %), M 9, G 9.
        // 1..10: misses; all in S (S is over its share until evictions start).
        // 1 1 2: hits: freq(1) = 2, freq(2) = 1.
        // 11: |S| = 10 >= 1: from S. Tail 1 has freq 2 >= 2: moves to M
        //     (freq 0). Tail 2 has freq 1: a one-hit wonder: to G, victim.
        //     S [11 10 .. 3], M [1], G [2].
        // 2: in G -> miss, goes to M. Eviction from S: tail 3 (freq 0) to G.
        //     S [11 .. 4], M [2 1], G [3].
        // 3: in G -> miss, to M; 4 goes to G. S [11 .. 5], M [3 2 1].
        // 12..21: ten new pages; each evicts S's tail (5, 6, ..., 14) to G;
        //     |S| stays 7 >= 1 so M is never touched.
        // 1 2 3: hits (still in M), where LRU has long evicted them.
        let mut t: Vec<u64> = (1..=10).collect();
        t.extend([1, 1, 2, 11, 2, 3]);
        t.extend(12..=21);
        t.extend([1, 2, 3]);
        let h = hits("s3fifo", 10, &t);
        let (m, hh) = (false, true);
        let mut want = vec![m; 10];
        want.extend([hh, hh, hh, m, m, m]);
        want.extend([m; 10]);
        want.extend([hh, hh, hh]);
        assert_eq!(h, want);
        assert_eq!(&hits("lru", 10, &t)[26..], &[m, m, m]);
        // move=1: at 11 both 1 (freq 2) and 2 (freq 1) move to M and 3 goes
        // to G; so 2 hits, 3 comes back from G into M (evicting 4 to G):
        // the same M [3 2 1] and the same final hits.
        let h1 = hits("s3fifo:move=1", 10, &t);
        want[14] = hh;
        assert_eq!(h1, want);
    }

    #[test]
    fn hand_worked_main_clock() {
        // cap 4, small=0.5: S 2, M 2, G 2.
        // 1 2 3 4: S [4 3 2 1]. 1 1 2 2 3 3: freq 2 for 1, 2, 3.
        // 5: |S| = 4 >= 2: tails 1, 2, 3 move to M (freq 0); 4 (freq 0)
        //    goes to G: S [5], M [3 2 1], G [4].
        // 1: hit in M: freq 1.
        // 6: |S| = 1 < 2: from M. Tail 1 has freq 1: re-inserted at M's head
        //    with freq 0, M [1 3 2]; tail 2 has freq 0: victim.
        //    S [6 5], M [1 3].
        // 2: not in G (M victims are not remembered): miss, to S. |S| = 2
        //    >= 2: tail 5 (freq 0) to G. S [2 6], G [5 4].
        // 1 3: hits.
        // 4: in G: miss, to M. |S| = 2: tail 6 to G (G [6 5], 4 was
        //    removed when it came back). S [2], M [4 1 3].
        // 5: in G: miss, to M. |S| = 1 < 2: from M: tail 3 (freq 1 from the
        //    hit above) -> head with 0, M [3 4 1]; tail 1 (freq 1) -> head,
        //    M [1 3 4]; tail 4 (freq 0): victim. M [5 1 3].
        // 3: hit.
        let t = [1, 2, 3, 4, 1, 1, 2, 2, 3, 3, 5, 1, 6, 2, 1, 3, 4, 5, 3];
        let (m, h) = (false, true);
        assert_eq!(
            hits("s3fifo:small=0.5", 4, &t),
            vec![m, m, m, m, h, h, h, h, h, h, m, h, m, m, h, h, m, m, h]
        );
    }

    #[test]
    fn ghost_is_bounded_by_main_capacity() {
        // cap 10 (M and G: 9). A stream of 30 one-hit wonders 0..29: page
        // k+10 evicts page k from S's tail into G, so 0..19 were evicted and
        // G keeps the last 9: 11..19. So 11 comes back into M (evicting S's
        // tail 20) and survives a further stream of 10 new pages (they only
        // evict from S, which stays at or above its 1 page), while 10 was
        // forgotten: it goes to S and is the 10th page that stream evicts.
        // (An unbounded G, or one of 10, would remember 10 and keep it.)
        let mut t: Vec<u64> = (0..30).collect();
        t.push(11);
        t.extend(100..110);
        t.push(11);
        assert!(*hits("s3fifo", 10, &t).last().unwrap());
        let mut t: Vec<u64> = (0..30).collect();
        t.push(10);
        t.extend(100..110);
        t.push(10);
        assert!(!*hits("s3fifo", 10, &t).last().unwrap());
    }

    /// S3-FIFO transcribed directly: three `VecDeque`s (front = tail),
    /// O(n) membership tests and O(n) removal from G, a frequency map.
    fn reference(cap: usize, small: f64, mv: u8, t: &[u32]) -> Vec<crate::policy::Access> {
        use crate::policy::Access;
        use std::collections::{HashMap, VecDeque};
        let small_cap = ((cap as f64 * small) as usize).clamp(1, cap);
        let ghost_cap = cap - small_cap;
        let (mut s, mut m, mut g) = (VecDeque::new(), VecDeque::new(), VecDeque::new());
        let mut freq: HashMap<u32, u8> = HashMap::new();
        let mut out = Vec::new();
        for &x in t {
            if s.contains(&x) || m.contains(&x) {
                let f = freq.get_mut(&x).unwrap();
                *f = (*f + 1).min(3);
                out.push(Access::Hit);
                continue;
            }
            let ghost = g.contains(&x);
            g.retain(|&y| y != x);
            let mut victim = None;
            if s.len() + m.len() >= cap {
                if s.len() >= small_cap {
                    while let Some(y) = s.pop_front() {
                        if freq[&y] >= mv {
                            freq.insert(y, 0);
                            m.push_back(y);
                        } else {
                            g.push_back(y);
                            while g.len() > ghost_cap {
                                g.pop_front();
                            }
                            victim = Some(y);
                            break;
                        }
                    }
                }
                while victim.is_none() {
                    let Some(y) = m.pop_front() else { break };
                    if freq[&y] > 0 {
                        *freq.get_mut(&y).unwrap() -= 1;
                        m.push_back(y);
                    } else {
                        victim = Some(y);
                    }
                }
                if victim.is_none() {
                    victim = s.pop_front();
                }
            }
            freq.insert(x, 0);
            if ghost {
                m.push_back(x);
            } else {
                s.push_back(x);
            }
            out.push(Access::Miss { victim });
        }
        out
    }

    #[test]
    fn matches_a_direct_transcription() {
        use crate::engine::testutil::replay::replay;
        for seed in 1..4 {
            let t: Vec<u32> = random_trace(6000, 120, seed)
                .into_iter()
                .map(|x| x as u32)
                .collect();
            for cap in [1, 2, 3, 10, 40, 100, 119, 200] {
                for (small, mv) in [(0.1, 2), (0.5, 1), (0.3, 3), (1.0, 2)] {
                    let spec = format!("s3fifo:small={small}:move={mv}");
                    assert_eq!(
                        replay(&spec, cap, &t),
                        reference(cap, small, mv, &t),
                        "cap {cap} {spec}"
                    );
                }
            }
        }
        // Few pages and a small memory: pages cycle through G so often
        // that some collect 16 stale G entries, and G is filtered early.
        for seed in 1..4 {
            let t: Vec<u32> = random_trace(20000, 20, seed)
                .into_iter()
                .map(|x| x as u32)
                .collect();
            for small in [0.1, 0.3] {
                let spec = format!("s3fifo:small={small}");
                assert_eq!(replay(&spec, 4, &t), reference(4, small, 2, &t), "{spec}");
            }
        }
    }

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 100, 1000)
    }

    #[test]
    fn params_are_checked() {
        // The state byte; the queues are still empty.
        assert_eq!(build("s3fifo").unwrap(), 1);
        assert!(build("s3fifo:small=0.2:move=1").is_ok());
        assert!(build("s3fifo:small=1.5").is_err());
        assert!(build("s3fifo:small=-0.1").is_err());
        assert!(build("s3fifo:move=0").is_err());
        assert!(build("s3fifo:move=4").is_err());
        assert!(build("s3fifo:ghost=1").is_err());
    }

    #[test]
    fn contract() {
        contract_all("s3fifo");
        contract_all("s3fifo:move=1");
        contract_all("s3fifo:small=0.5:move=3");
        contract_all("s3fifo:small=1");
    }
}
