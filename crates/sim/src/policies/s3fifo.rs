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
//! while S is full before the first eviction. Memory: one set of intrusive
//! links holding S, M and G (a page is in at most one) and a state byte
//! (queue and frequency): 9 bytes per page.
use super::lists2::Links;
use crate::policy::{Access, Policy, PolicyInfo, Req};

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
            q: Links::new(3, c.pages),
            st: vec![0; c.pages],
            cap,
            small_cap,
            ghost_cap: cap - small_cap,
            mv,
        }))
    },
};

const S: usize = 0;
const M: usize = 1;
const G: usize = 2;

/// Per-page state byte: the frequency in bits 0-1 and, in bits 2-3, the
/// queue (`IN_S`, `IN_M`, `IN_G` or 0), so that a hit reads one byte.
const FREQ: u8 = 3;
const IN_S: u8 = 4;
const IN_M: u8 = 8;
const IN_G: u8 = 12;
const QUEUE: u8 = 12;

struct S3Fifo {
    q: Links,
    st: Vec<u8>,
    cap: usize,
    small_cap: usize,
    /// M's capacity, which is also G's.
    ghost_cap: usize,
    mv: u8,
}

impl S3Fifo {
    fn evict_main(&mut self) -> Option<u32> {
        while let Some(t) = self.q.back(M) {
            let s = &mut self.st[t as usize];
            if *s & FREQ > 0 {
                *s -= 1;
                self.q.move_front(M, M, t);
            } else {
                *s = 0;
                self.q.remove(M, t);
                return Some(t);
            }
        }
        None
    }

    fn evict(&mut self) -> Option<u32> {
        if self.q.len(S) >= self.small_cap {
            while let Some(t) = self.q.back(S) {
                let s = &mut self.st[t as usize];
                if *s & FREQ >= self.mv {
                    *s = IN_M;
                    self.q.move_front(S, M, t);
                } else {
                    *s = IN_G;
                    self.q.move_front(S, G, t);
                    while self.q.len(G) > self.ghost_cap {
                        if let Some(g) = self.q.pop_back(G) {
                            self.st[g as usize] = 0;
                        }
                    }
                    return Some(t);
                }
            }
        }
        // M is not empty here: the memory is full and S is below its share
        // (or was emptied into M). Fall back to S only to stay total.
        self.evict_main().or_else(|| {
            let t = self.q.pop_back(S)?;
            self.st[t as usize] = 0;
            Some(t)
        })
    }
}

impl Policy for S3Fifo {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let s = self.st[id as usize];
        let queue = s & QUEUE;
        if queue == IN_S || queue == IN_M {
            if s & FREQ < 3 {
                self.st[id as usize] = s + 1;
            }
            return Access::Hit;
        }
        let ghost = queue == IN_G;
        if ghost {
            self.q.remove(G, id);
            self.st[id as usize] = 0;
        }
        let victim = if self.q.len(S) + self.q.len(M) >= self.cap {
            self.evict()
        } else {
            None
        };
        if ghost {
            self.st[id as usize] = IN_M;
            self.q.push_front(M, id);
        } else {
            self.st[id as usize] = IN_S;
            self.q.push_front(S, id);
        }
        Access::Miss { victim }
    }

    fn bytes_per_page(&self) -> usize {
        Links::BYTES_PER_PAGE + 1
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    use crate::engine::SimError;

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

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 100, 1000)
    }

    #[test]
    fn params_are_checked() {
        assert_eq!(build("s3fifo").unwrap(), 9);
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
