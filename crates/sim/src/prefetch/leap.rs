//! `leap`: Leap's majority-trend prefetcher (Al Maruf and Chowdhury,
//! "Effectively Prefetching Remote Memory with Leap", USENIX ATC 2020,
//! Algorithms 1 and 2).
//!
//! * **History**: the deltas between successive faulting pages, the last
//!   `h` (default 32) of them. Leap logs every swap-in fault, and a first
//!   reference to a prefetched page is one (a swap-cache hit), so both
//!   [`fault`](Prefetcher::fault) and [`hit`](Prefetcher::hit) log.
//! * **FindTrend** (Algorithm 1): a Boyer–Moore majority vote over the most
//!   recent `w` deltas, `w` starting at `h / split` (default split 2) and
//!   doubling up to `h`; the first delta found in more than half of its
//!   window is the trend. (While the history holds fewer than `w` deltas
//!   the window is what there is.)
//! * **Window** (Algorithm 2), at each major fault: with no prefetch hits
//!   since the last one, 1 page if this fault's delta follows the trend,
//!   else 0 (prefetching is suspended); with `k` hits, `k + 1` rounded up
//!   to a power of two; at most `max` (`PW_max`, default 8), and never
//!   below half the previous window.
//! * **Read**: `pw` pages along the trend (`p + d, p + 2d, …`); with no
//!   trend (or trend 0), `pw` pages around the fault as Linux reads around
//!   it (`p − pw/2 …`, the fault excluded).
use super::{Fault, Prefetcher, PrefetcherInfo};
use std::collections::VecDeque;

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "leap",
    summary: "Leap (ATC'20): majority trend over the last h fault deltas, window grown and shrunk by hits",
    params: "h=N (history, 2..=1024, default 32), split=N (first window h/split, default 2), max=N (PW_max, default 8)",
    slots: false,
    build: |c| {
        c.params
            .allow_for("prefetcher", "leap", &["h", "split", "max"])?;
        let h = c.params.int("h", 32, 2, 1024)? as usize;
        Ok(Box::new(Leap {
            h,
            split: c.params.int("split", 2, 1, h as u64)? as usize,
            max: c.params.int("max", 8, 1, 1024)?,
            hist: VecDeque::with_capacity(h),
            last: None,
            hits: 0,
            prev_pw: 0,
        }))
    },
};

struct Leap {
    h: usize,
    split: usize,
    max: u64,
    /// Deltas, oldest first.
    hist: VecDeque<i64>,
    /// The last page logged.
    last: Option<u64>,
    /// Prefetch hits since the last major fault.
    hits: u64,
    prev_pw: u64,
}

impl Leap {
    /// Logs an access to `page`; returns its delta from the last one.
    fn log(&mut self, page: u64) -> Option<i64> {
        let d = self.last.map(|l| page.wrapping_sub(l) as i64);
        self.last = Some(page);
        if let Some(d) = d {
            if self.hist.len() == self.h {
                self.hist.pop_front();
            }
            self.hist.push_back(d);
        }
        d
    }

    /// Algorithm 1: the majority delta of the smallest window that has one.
    fn trend(&self) -> Option<i64> {
        let n = self.hist.len();
        let mut w = (self.h / self.split).max(1);
        while n > 0 && w <= self.h {
            let win = w.min(n);
            let recent = self.hist.range(n - win..);
            // Boyer–Moore vote, then a count to confirm the majority.
            let (mut cand, mut count) = (0i64, 0usize);
            for &d in recent.clone() {
                if count == 0 {
                    cand = d;
                    count = 1;
                } else if d == cand {
                    count += 1;
                } else {
                    count -= 1;
                }
            }
            if recent.filter(|&&d| d == cand).count() > win / 2 {
                return Some(cand);
            }
            if win == n {
                break;
            }
            w *= 2;
        }
        None
    }
}

impl Prefetcher for Leap {
    fn fault(&mut self, f: &Fault, out: &mut Vec<u64>) {
        let p = f.page;
        let delta = self.log(p);
        let hits = std::mem::take(&mut self.hits);
        let trend = self.trend();
        let mut pw = if hits == 0 {
            u64::from(trend.is_some() && trend == delta)
        } else {
            (hits + 1).next_power_of_two()
        };
        pw = pw.min(self.max).max(self.prev_pw / 2);
        self.prev_pw = pw;
        if pw == 0 {
            return;
        }
        match trend {
            Some(d) if d != 0 => {
                for k in 1..=pw as i64 {
                    let q = p as i128 + k as i128 * d as i128;
                    if (0..=u64::MAX as i128).contains(&q) {
                        out.push(q as u64);
                    }
                }
            }
            _ => {
                let start = p.saturating_sub(pw / 2);
                out.extend((start..=start.saturating_add(pw)).filter(|&x| x != p));
            }
        }
    }
    fn hit(&mut self, page: u64) {
        self.log(page);
        self.hits += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::prefetch::testutil::*;

    #[test]
    fn hand_worked_sequential() {
        // lru 4; pages 0..7 then again (first touches feed nothing: they
        // are not swap-ins). Resident 4 5 6 7 before the second pass.
        //  0: major; no history: no trend, no hits: window 0.
        //  1: major; history [1]: trend 1, followed, no hits: window 1:
        //     reads 2. Resident 7 0 1 2.
        //  2: used (logged: history [1 1], hits 1).
        //  3: major; history [1 1 1], hits 1 -> window 2: reads 4 5.
        //  4 5: used (hits 2).
        //  6: major; hits 2 -> 3 -> 4: reads 7 (8 9 10 not in the trace).
        //  7: used.
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        assert_eq!(counts(&run("lru", 4, "leap", &t)), (4, 4, 4, 0));
    }

    #[test]
    fn strides_are_followed_where_linux_reads_nothing() {
        // The same walk with stride 3 (pages 0 3 .. 21): Leap finds the
        // trend 3 and reads exactly as above, 3 pages apart; VMA readahead
        // never sees adjacent faults (window 1) and next-page readahead
        // reads pages that were never touched.
        let t: Vec<u64> = (0..8).chain(0..8).map(|p| 3 * p).collect();
        assert_eq!(counts(&run("lru", 4, "leap", &t)), (4, 4, 4, 0));
        assert_eq!(counts(&run("lru", 4, "vma", &t)), (8, 0, 0, 0));
        assert_eq!(counts(&run("lru", 4, "next:n=2", &t)), (8, 0, 0, 0));
    }

    #[test]
    fn no_trend_suspends_prefetching() {
        // Second-pass faults 0 1 3 6 10 15: deltas 1 2 3 4 5. At 1 the
        // history [1] is its own trend: window 1, reads 2 (not in the
        // trace: nothing). From 3 on no delta has a majority and there are
        // no hits: window 0. Six majors, nothing read.
        let s = [0u64, 1, 3, 6, 10, 15];
        let t: Vec<u64> = s
            .iter()
            .copied()
            .chain(100..104)
            .chain(s.iter().copied())
            .collect();
        assert_eq!(counts(&run("lru", 4, "leap", &t)), (6, 0, 0, 0));
    }

    #[test]
    fn majority_vote_windows() {
        use super::super::PrefetchConfig;
        use crate::policy::Params;
        let mut p = super::Leap {
            h: 8,
            split: 2,
            max: 8,
            hist: Default::default(),
            last: None,
            hits: 0,
            prev_pw: 0,
        };
        // Deltas 5 5 5 5 1 2 1 1: the last 4 (1 2 1 1) have majority 1.
        for d in [5, 5, 5, 5, 1, 2, 1, 1] {
            p.hist.push_back(d);
        }
        assert_eq!(p.trend(), Some(1));
        // 5 5 5 5 5 1 2 3: last 4 have none (1 2 3 and one 5); all 8: 5 (5 of 8).
        p.hist = [5, 5, 5, 5, 5, 1, 2, 3].into_iter().collect();
        assert_eq!(p.trend(), Some(5));
        // 5 5 5 5 1 2 3 4: no majority anywhere.
        p.hist = [5, 5, 5, 5, 1, 2, 3, 4].into_iter().collect();
        assert_eq!(p.trend(), None);
        // Building through the registry checks the parameters.
        let params = Params([("split".to_string(), "0".to_string())].into());
        let e = (super::INFO.build)(&PrefetchConfig {
            params: &params,
            page_size: 4096,
        })
        .err()
        .expect("split=0 is refused");
        assert!(e.to_string().contains("split=0"), "{e}");
    }
}
