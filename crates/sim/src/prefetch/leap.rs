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
//! * **Pageout** (`pageout=1`, swaplab's addition, as `run --prefetch
//!   leap:pageout=1` does): at a major fault that follows a trend of ±1,
//!   the pages more than `lag` (default 64 KiB of pages) behind the
//!   faulting page, back to where the last pageout ended (the first time:
//!   one window further back), are paged out. The `lag` pages just behind
//!   the walk stay; on a cyclic sweep the pages it does not reach before
//!   its next pass stay resident (an MRU-like eviction of the scan). The
//!   range is computed along the trend and never reaches behind the first
//!   page of the current unbroken ±1 walk (nor below page 0): pages the
//!   walk did not pass are not its to page out. A jump back (the next pass
//!   of a sweep) pages out nothing, and the next pageout starts from
//!   there. A new trend starts afresh.
use super::{Fault, Prefetcher, PrefetcherInfo};
use crate::error::SimError;
use std::collections::VecDeque;

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "leap",
    summary: "Leap (ATC'20): majority trend over the last h fault deltas, window grown and shrunk by hits",
    params: "h=N (history, 2..=1024, default 32), split=N (first window h/split, default 2), max=N (PW_max, default 8), \
             pageout=0|1 (page out what the walk passed, default 0), lag=N (pages kept behind the walk with pageout=1, default 64 KiB of pages)",
    slots: false,
    build: |c| {
        c.params.allow_for(
            "prefetcher",
            "leap",
            &["h", "split", "max", "pageout", "lag"],
        )?;
        let h = c.params.int("h", 32, 2, 1024)? as usize;
        let pageout = c.params.int("pageout", 0, 0, 1)? == 1;
        let default_lag = (DEFAULT_LAG_BYTES / c.page_size.max(1)).max(1);
        if !pageout && c.params.0.contains_key("lag") {
            return Err(SimError::BadParam(
                "prefetcher 'leap': lag= is how far behind the walk pageout=1 pages out; \
                 add pageout=1 (e.g. leap:pageout=1:lag=16) or leave lag out"
                    .into(),
            ));
        }
        Ok(Box::new(Leap {
            h,
            split: c.params.int("split", 2, 1, h as u64)? as usize,
            max: c.params.int("max", 8, 1, 1024)?,
            hist: VecDeque::with_capacity(h),
            last: None,
            walk: None,
            hits: 0,
            prev_pw: 0,
            pageout,
            lag: c.params.int("lag", default_lag, 1, 1 << 30)?,
            po_trend: 0,
            paged_to: None,
            po: None,
        }))
    },
};

/// `pageout=1`'s default lag: 64 KiB, as `run --prefetch leap:pageout=1`.
const DEFAULT_LAG_BYTES: u64 = 64 << 10;

struct Leap {
    h: usize,
    split: usize,
    max: u64,
    /// Deltas, oldest first.
    hist: VecDeque<i64>,
    /// The last page logged.
    last: Option<u64>,
    /// The current unbroken walk of ±1 deltas: its direction and first page.
    walk: Option<(i64, u64)>,
    /// Prefetch hits since the last major fault.
    hits: u64,
    prev_pw: u64,
    /// `pageout=1`.
    pageout: bool,
    /// Pages kept behind the walk.
    lag: u64,
    /// The trend (±1) `paged_to` is along; 0: none yet.
    po_trend: i64,
    /// Where the last pageout ended, as a position along `po_trend`
    /// (`trend × page`): everything before it was paged out.
    paged_to: Option<i128>,
    /// The pageout of the last fault, not yet taken by the engine.
    po: Option<(u64, u64)>,
}

/// The Boyer–Moore majority vote of `deltas`, then a count to confirm
/// it: `Some` only for a strict majority (more than half of them). Leap's
/// FindTrend votes with it here and in the live prefetcher
/// (`swaplab_lab::prefetcher`).
pub fn majority<'a, I>(deltas: I) -> Option<i64>
where
    I: IntoIterator<Item = &'a i64>,
    I::IntoIter: Clone,
{
    let deltas = deltas.into_iter();
    let (mut cand, mut n) = (0i64, 0usize);
    for &x in deltas.clone() {
        if n == 0 {
            cand = x;
            n = 1;
        } else if x == cand {
            n += 1;
        } else {
            n -= 1;
        }
    }
    let (mut len, mut votes) = (0usize, 0usize);
    for &x in deltas {
        len += 1;
        votes += usize::from(x == cand);
    }
    (n > 0 && votes * 2 > len).then_some(cand)
}

impl Leap {
    /// Logs an access to `page`; returns its delta from the last one.
    fn log(&mut self, page: u64) -> Option<i64> {
        let d = self.last.map(|l| page.wrapping_sub(l) as i64);
        self.walk = match (d, self.walk) {
            (Some(d @ (1 | -1)), Some((dir, from))) if d == dir => Some((dir, from)),
            (Some(d @ (1 | -1)), _) => self.last.map(|l| (d, l)),
            _ => None,
        };
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
            if let Some(m) = majority(self.hist.range(n - win..)) {
                return Some(m);
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
        self.po = None;
        if pw == 0 {
            return;
        }
        if self.pageout {
            if let Some(t @ (1 | -1)) = trend.filter(|&t| delta == Some(t)) {
                self.page_out_behind(p, t, pw);
            }
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
    fn pages_out(&self) -> bool {
        self.pageout
    }
    fn pageout(&mut self, out: &mut Vec<(u64, u64)>) {
        out.extend(self.po.take());
    }
}

impl Leap {
    /// A fault at `p` on trend `t` (±1) with window `pw`: pages out the
    /// positions (along the trend, `x = t × page`) from where the last
    /// pageout ended (first time: `pw` before `behind`) up to `behind`,
    /// `lag` before the fault's.
    fn page_out_behind(&mut self, p: u64, t: i64, pw: u64) {
        if self.po_trend != t {
            self.po_trend = t;
            self.paged_to = None;
        }
        let x = i128::from(t) * i128::from(p);
        let behind = x - i128::from(self.lag);
        let from = self.paged_to.unwrap_or(behind - i128::from(pw));
        // Never behind the walk's first page.
        let from = match self.walk {
            Some((dir, first)) if dir == t => from.max(i128::from(t) * i128::from(first)),
            _ => from,
        };
        self.paged_to = Some(behind);
        if from >= behind {
            return; // a jump back: nothing passed since
        }
        // Positions [from, behind) as pages, clipped at page 0.
        let (lo, hi) = if t > 0 {
            (from, behind)
        } else {
            (1 - behind, 1 - from)
        };
        let (lo, hi) = (lo.max(0), hi.max(0));
        if hi > lo {
            let cap = |v: i128| v.min(i128::from(u64::MAX)) as u64;
            self.po = Some((cap(lo), cap(hi)));
        }
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
    fn pageout_drops_what_the_walk_passed_hand_worked() {
        // lru 8, writes, a cyclic walk of 12 pages 3 times; leap (max 8)
        // with pageout=1:lag=2: the pages more than 2 behind a +1 fault go.
        // Pass 0 (fill, minor): 0..3 evicted (4 swap-outs); LRU 4..11.
        // Pass 1:
        //  0: major; victim 4 (so #5). No history: window 0.
        //  1: major; victim 5 (#6). Trend 1, window 1; pageout from 1-2-1
        //     up to 1-2: below page 0, nothing (ends at -1). Reads 2,
        //     victim 6 (#7).
        //  2: hit (1).
        //  3: major; victim 7 (#8). Window 2; pageout [-1, 1): page 0
        //     (dirty: #9), 7 resident. Reads 4 (no victim) and 5 (victim
        //     8, #10). LRU 9 10 11 1 2 3 4 5.
        //  4 5: hits (2).
        //  6: major; victim 9 (#11). Window 4; pageout [1, 4): 1 2 3
        //     (#12-14). Reads 7 8 9 (10 is resident). LRU 10 11 4 5 6 7 8 9.
        //  7 8 9: hits (3). 10 11: hits.
        // Pass 2:
        //  0: major; victim 4 (#15). Delta -11 is off the trend 1 (still
        //     the majority): no pageout; window 4 (3 hits): reads 1 2 3 4,
        //     victims 5 6 7 8 (#16-19). LRU 9 10 11 0 1 2 3 4.
        //  1..4: hits (4).
        //  5: major; victim 9 (#20). Window 8; pageout from the end of the
        //     last (4) up to 3: a jump back, nothing (now ends at 3).
        //     Reads 6..11, victims 10 11 0 1 2 3 (#21-26).
        //  6..11: hits.
        // 6 majors, 16 reads, 4 pages paged out, 26 swap-outs.
        let walk: Vec<(u64, bool)> = (0..36).map(|i| (i % 12, true)).collect();
        let r = run_refs("lru", 8, "leap:pageout=1:lag=2", &walk);
        assert_eq!(pageouts(&r), (6, 16, 4, 26));
        assert_eq!(r.counters.evictions, 26);
        assert_eq!(
            (r.counters.prefetch_used, r.counters.prefetch_unused),
            (16, 0)
        );
        // Without pageout=1 nothing is paged out.
        let r = run_refs("lru", 8, "leap", &walk);
        assert_eq!(r.counters.prefetch_pageouts, 0);
        // A -1 walk is paged out the same way, mirrored: lag 2 behind a
        // fault at page p means the pages above p + 2.
        let back: Vec<(u64, bool)> = (0..36).map(|i| (11 - i % 12, true)).collect();
        let r = run_refs("lru", 8, "leap:pageout=1:lag=2", &back);
        assert_eq!(pageouts(&r), (6, 16, 4, 26));
        // The same walk at pages 1000..1012: the same counts.
        let far: Vec<(u64, bool)> = walk.iter().map(|&(p, w)| (p + 1000, w)).collect();
        let r = run_refs("lru", 8, "leap:pageout=1:lag=2", &far);
        assert_eq!(pageouts(&r), (6, 16, 4, 26));
    }

    #[test]
    fn pageout_never_reaches_behind_the_walk() {
        // Faults at 990 and 991 (another object), then a walk up from 1000
        // with lag 10: at 1001 the trend is +1 (deltas 1 9 1), and "one
        // window back from 10 behind" would be page 990, of the other
        // object. Nothing below 1000 goes, and the walk is paged out from
        // its first page on, each page once.
        use super::super::{Fault, PrefetchConfig};
        use crate::policy::Params;
        let params = Params(
            [("pageout", "1"), ("lag", "10")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        );
        let mut p = (super::INFO.build)(&PrefetchConfig {
            params: &params,
            page_size: 4096,
        })
        .unwrap();
        let (mut reads, mut out) = (Vec::new(), Vec::new());
        for page in [990, 991].into_iter().chain(1000..1040) {
            reads.clear();
            p.fault(&Fault { page, slot: 0 }, &mut reads);
            let before = out.len();
            p.pageout(&mut out);
            for &(lo, hi) in &out[before..] {
                assert!(lo >= 1000 && hi <= page - 10, "{lo}..{hi} at {page}");
            }
        }
        assert_eq!(out.first().map(|r| r.0), Some(1000), "{out:?}");
        for w in out.windows(2) {
            assert_eq!(w[0].1, w[1].0, "{out:?}");
        }
    }

    #[test]
    fn pageout_params_are_checked() {
        use super::super::PrefetchSpec;
        let s = PrefetchSpec::parse("leap:pageout=1:lag=16:max=512").unwrap();
        assert_eq!(s.to_string(), "leap:lag=16:max=512:pageout=1");
        for (bad, says) in [
            ("leap:pageout=2", "pageout=2"),
            ("leap:pageout=1:lag=0", "lag=0"),
            ("leap:lag=16", "add pageout=1"),
        ] {
            let e = PrefetchSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
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
            walk: None,
            hits: 0,
            prev_pw: 0,
            pageout: false,
            lag: 16,
            po_trend: 0,
            paged_to: None,
            po: None,
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
