//! The decision half of `swaplab run --prefetch leap|stride` (the live
//! prefetcher of `swaplab_lab::prefetcher`, which feeds it the sampled
//! faults of a running program and asks the kernel for what it answers):
//! per thread, a history of fault-address deltas, its trend (`stride`: the
//! last `k` deltas equal; `leap`: Leap's majority vote, [`majority`], as
//! the simulated [`leap`](super::leap) prefetcher votes), the window ahead
//! of the trend grown and shrunk by hits, and the pages to page out behind
//! a dense walk (`pageout=1`, or `pageout=auto` once a walk shows that it
//! cannot fit the group's limit). No system calls: pages in, requests out,
//! testable by itself (docs/prefetch.md has the rules).

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::leap::majority;

/// Strides up to this many pages are prefetched as whole ranges.
pub const DENSE_STRIDE: i64 = 8;
/// `pageout=auto`'s memory of recent pageouts (one per request).
const MAX_PAGED_RANGES: usize = 4096;
/// The default base window, bytes.
pub const DEFAULT_WINDOW: u64 = 1 << 20;
/// The default largest window, bytes (Leap's 32 MiB).
pub const DEFAULT_MAX: u64 = 32 << 20;
/// The largest window when `pageout=1` (docs/prefetch.md, "pageout=1"):
/// what the walk has in flight (ahead + lag) is memory the pages kept
/// resident lose, so it stays small.
pub const PAGEOUT_MAX: u64 = 2 << 20;
/// How far behind the faulting page `pageout=1` pages out.
pub const DEFAULT_LAG: u64 = 64 << 10;

/// Which prefetcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefetchMode {
    /// Leap's majority trend.
    Leap,
    /// `k` equal deltas.
    Stride,
    /// The preload library's in-process thread.
    Thread,
}

/// What the detector reads of a `--prefetch` spec (lab's `PrefetchSpec`
/// has the meaning of each field, and makes this with the machine's page
/// size).
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorSpec {
    pub mode: PrefetchMode,
    /// Base window, bytes.
    pub window: u64,
    /// Largest window, bytes.
    pub max: u64,
    pub history: u32,
    pub split: u32,
    pub k: u32,
    pub pageout: bool,
    pub pageout_auto: bool,
    /// Bytes; 0: two windows.
    pub lag: u64,
    pub minor: bool,
    /// The page size of the addresses, bytes.
    pub page_size: u64,
}

impl DetectorSpec {
    /// A mode's defaults (those of `swaplab run --prefetch MODE`), for
    /// addresses in pages of `page_size` bytes.
    pub fn defaults(mode: PrefetchMode, page_size: u64) -> DetectorSpec {
        DetectorSpec {
            mode,
            window: DEFAULT_WINDOW,
            max: DEFAULT_MAX,
            history: 32,
            split: 4,
            k: 3,
            pageout: false,
            pageout_auto: mode == PrefetchMode::Leap,
            lag: DEFAULT_LAG,
            minor: true,
            page_size,
        }
    }
}

/// One thread's access history and trend.
#[derive(Debug, Default)]
struct Stream {
    deltas: VecDeque<i64>,
    last: Option<i64>,
    trend: Option<i64>,
    /// Farthest page requested along the trend.
    frontier: Option<i64>,
    /// Current window, in steps along the trend.
    window: u64,
    /// Steps asked for by the last request.
    last_issued: u64,
    /// Hits since the last request.
    hits: u64,
    /// Pages behind this one were paged out (pageout=1, stride ±1).
    paged_to: Option<i64>,
    /// Where the current unbroken walk along the trend began.
    run_from: Option<i64>,
    /// The first page of the current walk, history included: a pageout
    /// never reaches behind it (after a jump back to the start of an array
    /// the pages behind the new walk's start were never passed, and in the
    /// live prefetcher they belong to another mapping).
    walk_start: Option<i64>,
}

/// Pages paged out along a walk (`pageout=auto`), kept while the program
/// coming back to one of them would show that an LRU could have kept it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PagedRange {
    /// Pages `lo..hi`.
    lo: i64,
    hi: i64,
    /// The walk's direction when they were paged out (±1).
    dir: i64,
    /// [`Detector::walked`] when the last of them (along `dir`) was.
    walked_end: u64,
    /// The time of the fault sample that asked for it ([`Detector::now_ns`]).
    asked_ns: u64,
}

impl PagedRange {
    /// [`Detector::walked`] when the walk passed `page` (in the range).
    fn walked_at(&self, page: i64) -> u64 {
        let back = if self.dir > 0 {
            self.hi - 1 - page
        } else {
            page - self.lo
        };
        self.walked_end.saturating_sub(back.max(0) as u64)
    }
}

/// The detector's verdict on a history (most recent delta last).
fn detect(spec: &DetectorSpec, deltas: &VecDeque<i64>) -> Option<i64> {
    let t = match spec.mode {
        PrefetchMode::Stride => {
            let k = spec.k as usize;
            if deltas.len() < k {
                return None;
            }
            let last = *deltas.back()?;
            deltas
                .iter()
                .rev()
                .take(k)
                .all(|&d| d == last)
                .then_some(last)
        }
        PrefetchMode::Leap => {
            let h = deltas.len();
            let mut w = (spec.history / spec.split).max(2) as usize;
            let recent: Vec<i64> = deltas.iter().map(|&d| dense_class(d)).collect();
            loop {
                if w > h {
                    // Not enough history for this window yet.
                    break None;
                }
                if let Some(m) = majority(&recent[h - w..]) {
                    break Some(m);
                }
                if w >= spec.history as usize {
                    break None;
                }
                w *= 2;
            }
        }
        PrefetchMode::Thread => None,
    }?;
    (t != 0).then_some(t)
}

/// The class of a delta in Leap's vote: up to [`DENSE_STRIDE`] pages either
/// way is one dense walk (±1). The kernel's swap readahead (page-cluster 3)
/// makes a sequential walk's major faults come every 8 pages while its hits
/// come every page: voted as they are, the trend flipped between +1 and +8
/// hundreds of times a run (traverse 256M, 150–290 switches), and each flip
/// started the window and the pageout afresh. A dense trend is asked for as
/// one range anyway.
fn dense_class(d: i64) -> i64 {
    if d.abs() <= DENSE_STRIDE {
        d.signum()
    } else {
        d
    }
}

fn round_up_pow2(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// A request the detector makes: WILLNEED these pages (page numbers), or
/// PAGEOUT them.
#[derive(Debug, Default, PartialEq)]
pub struct Request {
    pub willneed: Vec<(i64, u64)>,
    pub pageout: Vec<(i64, u64)>,
}

/// See [`Detector::unasked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unasked {
    Outran,
    Skipped,
    Other,
}

/// Counts the resident pages from a page on along a direction (±1), up to
/// a number (`Detector::check_regret`).
pub type Resident<'a> = &'a mut dyn FnMut(i64, i64, u64) -> u64;

/// The per-thread trend logic (no system calls: testable by itself).
#[derive(Debug)]
pub struct Detector {
    spec: DetectorSpec,
    base: u64,
    max: u64,
    streams: HashMap<u32, Stream>,
    /// Trend changes, all threads.
    pub switches: u64,
    /// Whether pages behind dense walks are paged out now, and why.
    pub po: PageoutState,
    /// The largest window while pageout is on (pages).
    po_max: u64,
    /// Pages walked along dense trends, all threads: the clock of `paged`.
    walked: u64,
    /// `pageout=auto`: recent pageouts, oldest first, one per request.
    paged: VecDeque<PagedRange>,
    /// The time of the fault sample being handled (ns, the samples' clock;
    /// 0 when the caller does not say).
    pub now_ns: u64,
    /// `pageout=auto`: a dense walk began at this page, in a region whose
    /// size the caller may tell ([`Detector::region_pages`]).
    pub region_query: Option<i64>,
}

/// Whether the detector pages out behind dense walks: from the start with
/// `pageout=1`, since it turned on with `pageout=auto` (apart from the
/// streams, so it can turn on while one of them is borrowed).
#[derive(Debug, Default)]
pub struct PageoutState {
    pub on: bool,
    /// `pageout=auto`: the group's limit, pages (None: no limit, never on).
    limit: Option<u64>,
    /// `pageout=auto` turned on, and off again (at most once each).
    pub started: u64,
    pub regrets: u64,
    /// Why it turned on or off (for the run record's notes).
    pub notes: Vec<String>,
}

impl PageoutState {
    /// Whether `pageout=auto` may still turn on.
    fn may_start(&self) -> bool {
        self.limit.is_some() && !self.on && self.regrets == 0
    }

    fn start(&mut self, why: String) {
        if self.may_start() {
            self.on = true;
            self.started += 1;
            self.notes
                .push(format!("prefetcher: pageout=auto on: {why}"));
        }
    }
}

impl Detector {
    #[cfg(test)]
    fn new(spec: &DetectorSpec) -> Detector {
        Detector::with_limit(spec, None)
    }

    /// A detector for a group limited to `limit` bytes (`pageout=auto`
    /// needs it).
    pub fn with_limit(spec: &DetectorSpec, limit: Option<u64>) -> Detector {
        let ps = spec.page_size;
        let max = (spec.max / ps).max(1);
        // A given max holds; the default one is Leap's 32 MiB, which with
        // pageout on would keep too much of the limit in flight.
        let po_max = if spec.pageout || spec.max != DEFAULT_MAX {
            max
        } else {
            (PAGEOUT_MAX.max(spec.window) / ps).max(1)
        };
        Detector {
            spec: spec.clone(),
            base: (spec.window / ps).max(1),
            max,
            streams: HashMap::new(),
            switches: 0,
            po: PageoutState {
                on: spec.pageout,
                limit: limit
                    .filter(|_| spec.pageout_auto && !spec.pageout)
                    .map(|l| (l / ps).max(1)),
                ..Default::default()
            },
            po_max,
            walked: 0,
            paged: VecDeque::new(),
            now_ns: 0,
            region_query: None,
        }
    }

    /// The region of the page in [`Detector::region_query`] holds `pages`:
    /// a dense walk in a region larger than the limit cannot fit.
    pub fn region_pages(&mut self, pages: u64) {
        if let Some(l) = self.po.limit.filter(|&l| pages > l) {
            self.po.start(format!(
                "a walk in a region of {} pages, more than the limit's {l}",
                pages
            ));
        }
    }

    /// A major fault of `tid` at `page` (pageout=auto): a page it paged
    /// out before the walk went half a limit further turns pageout off for
    /// good.
    ///
    /// The walk is seen only where it faults: the pages it passes that
    /// stayed resident make no fault (on a cyclic walk with pageout, the
    /// part of the array kept resident is walked unseen before the next
    /// pass comes back to the paged-out part). So when the program comes
    /// back to a page by going back from where it was last seen, the pages
    /// resident beyond that point are taken as walked too (`resident`
    /// counts them: how many pages from a page on, along a direction, are
    /// resident, up to a count).
    ///
    /// A regret needs the program back within half the limit's pages of
    /// walk: an LRU of the limit's pages would surely have kept the page.
    /// The limit holds the program's other memory too, and the kernel's
    /// reclaim is no exact LRU, so between half and all of the limit it
    /// is left to pageout (traverse at 75 % of its peak came back after
    /// 6,012 pages of walk under a limit of 6,192: a cyclic walk that
    /// does not fit).
    fn check_regret(&mut self, tid: u32, page: i64, resident: Resident<'_>) {
        let Some(limit) = self.po.limit.filter(|_| self.po.on).map(|l| (l / 2).max(1)) else {
            return;
        };
        let now = self.walked;
        while self
            .paged
            .front()
            .is_some_and(|r| now.saturating_sub(r.walked_end) >= limit)
        {
            self.paged.pop_front();
        }
        let Some(r) = self
            .paged
            .iter()
            .find(|r| (r.lo..r.hi).contains(&page))
            .copied()
        else {
            return;
        };
        let since = now.saturating_sub(r.walked_at(page));
        if since >= limit {
            return;
        }
        // A fault from before the request: its sample came late (the
        // per-CPU rings are read one after the other, so a thread that
        // moved between CPUs is seen out of order). Our pageout did not
        // cause it. (Seen in CI's bench hints test: a "come-back" 44 pages
        // of walk after the pageout.)
        if self.now_ns < r.asked_ns {
            return;
        }
        let last = self.streams.get(&tid).and_then(|s| s.last);
        if let Some(head) = last.filter(|&h| (page - h) * r.dir < 0) {
            // Unseen: the resident pages beyond the head (the end of the
            // last pass), and the resident pages just before this one (the
            // start of this pass, walked before it came to the paged-out
            // part: seen in CI, a cyclic walk whose swapped part had
            // drifted to the end of the array came back after "2,984
            // pages" of a 3,096-page half limit).
            let ahead = resident(head + r.dir, r.dir, limit);
            let unseen = ahead + resident(page - r.dir, -r.dir, limit.saturating_sub(ahead));
            if since + unseen >= limit {
                // Walked unseen: the clock catches up once (by all of
                // them), so the next faults of this pass need no look.
                self.walked += unseen;
                return;
            }
        }
        self.po.on = false;
        self.po.regrets += 1;
        self.paged.clear();
        let addr = page as u64 * self.spec.page_size;
        self.po.notes.push(format!(
            "prefetcher: pageout=auto off for good: the program came back to {addr:#x} \
             {since} pages of walk after paging it out, less than half the limit ({limit} pages)"
        ));
    }

    /// Remembers a pageout of `lo..hi` along `dir` (pageout=auto).
    fn remember_paged(&mut self, lo: i64, hi: i64, dir: i64) {
        if self.po.limit.is_none() {
            return;
        }
        // Not merged with the last one: each keeps the time it was asked
        // at (check_regret).
        self.paged.push_back(PagedRange {
            lo,
            hi,
            dir,
            walked_end: self.walked,
            asked_ns: self.now_ns,
        });
        if self.paged.len() > MAX_PAGED_RANGES {
            self.paged.pop_front();
        }
    }

    /// Where a major fault of `tid` on a page nobody asked for lies: past
    /// the last window along the trend (the walk outran it), inside it (the
    /// page was resident when its window was asked for, and reclaim took it
    /// before the walk came), or elsewhere.
    pub fn unasked(&self, tid: u32, page: i64) -> Unasked {
        let Some(s) = self.streams.get(&tid) else {
            return Unasked::Other;
        };
        let (Some(t), Some(f)) = (s.trend, s.frontier) else {
            return Unasked::Other;
        };
        let pos = (page - f) * t.signum();
        let span = (s.window * t.unsigned_abs()) as i64;
        if pos > 0 && pos <= span.max(1) * 4 {
            Unasked::Outran
        } else if pos <= 0 && pos > -span {
            Unasked::Skipped
        } else {
            Unasked::Other
        }
    }

    /// True when some thread has a trend now.
    pub fn any_trend(&self) -> bool {
        self.streams.values().any(|s| s.trend.is_some())
    }

    /// Forgets every thread's history (the deltas seen through sparse
    /// samples are multiples of the real ones).
    pub fn forget(&mut self) {
        self.streams.clear();
    }

    /// An access of `tid` to `page` (a major fault, or a hit = a minor
    /// fault on a requested page). Returns what to ask of the kernel.
    pub fn access(&mut self, tid: u32, page: i64, hit: bool) -> Request {
        self.access_with(tid, page, hit, &mut |_, _, _| 0)
    }

    /// [`Detector::access`], with a way to count resident pages
    /// (`Detector::check_regret`).
    pub fn access_with(
        &mut self,
        tid: u32,
        page: i64,
        hit: bool,
        resident: Resident<'_>,
    ) -> Request {
        if !hit {
            self.check_regret(tid, page, resident);
        }
        let may_start = self.po.may_start();
        let spec = &self.spec;
        let s = self.streams.entry(tid).or_default();
        let mut req = Request::default();
        if let Some(last) = s.last {
            let d = page - last;
            if d == 0 {
                return req;
            }
            s.deltas.push_back(d);
            while s.deltas.len() > spec.history as usize {
                s.deltas.pop_front();
            }
        }
        s.last = Some(page);
        if hit {
            s.hits += 1;
        }
        let Some(t) = detect(spec, &s.deltas) else {
            // No trend: back off (Leap's "suspend").
            s.trend = None;
            s.frontier = None;
            s.window = 0;
            s.hits = 0;
            return req;
        };
        if s.trend != Some(t) {
            self.switches += 1;
            s.trend = Some(t);
            s.frontier = None;
            s.window = 0;
            s.hits = 0;
            s.paged_to = None;
            s.run_from = None;
            // The walk began where the history's trailing steps along the
            // new trend began.
            let along = |d: &i64| match spec.mode {
                PrefetchMode::Leap => dense_class(*d) == t,
                _ => *d == t,
            };
            let back: i64 = s.deltas.iter().rev().take_while(|d| along(d)).sum();
            s.walk_start = Some(page - back);
            if may_start && t.abs() == 1 {
                self.region_query = Some(page);
            }
        }
        // A step forward along a dense trend, of any size: the pages
        // between were walked too, without faults, being resident (on a
        // cyclic walk with pageout, the part that stays resident is walked
        // without a single fault). A jump counts at most a limit's pages.
        let step = s
            .deltas
            .back()
            .copied()
            .filter(|&d| t.abs() == 1 && d * t > 0);
        let limit = self.po.limit.unwrap_or(u64::MAX);
        match (step, s.run_from) {
            // A forward jump longer than the limit (into another mapping:
            // the heap to a library's data, as Python's allocator does) is
            // no walk through the pages between: the walk starts again on
            // the far side (it once counted 11,225,751,813 pages of "walk"
            // and turned pageout on in a Python interpreter).
            (Some(d), Some(_)) if d.unsigned_abs() > limit => {
                self.walked += limit;
                s.run_from = Some(page);
                s.walk_start = Some(page);
            }
            (Some(d), Some(from)) => {
                self.walked += d.unsigned_abs().min(limit);
                let len = ((page - from) * t).max(0) as u64;
                // (Checked first: no note formatted on every fault once on.)
                if let Some(l) = self.po.limit.filter(|&l| may_start && len > l) {
                    self.po
                        .start(format!("a walk of {len} pages, more than the limit's {l}"));
                }
            }
            _ => {
                s.run_from = Some(page);
                if step.is_none() {
                    // A jump against the trend (or a strided trend): a new
                    // walk starts here.
                    s.walk_start = Some(page);
                }
            }
        }
        // Steps already requested ahead of this page. A page outside the
        // last window (the walk jumped, e.g. back to the start of an array
        // for its next pass, and the majority trend survived the jump)
        // starts a new window here.
        let ahead = match s.frontier {
            Some(f) if (f - page) / t > 0 && ((f - page) / t) as u64 <= s.window => {
                ((f - page) / t) as u64
            }
            _ => {
                s.frontier = None;
                0
            }
        };
        if ahead > 0 && ahead * 2 >= s.window {
            return req; // half a window or more still ahead
        }
        let on_trend = s.deltas.back().is_some_and(|&d| match spec.mode {
            PrefetchMode::Leap => dense_class(d) == t,
            _ => d == t,
        });
        if !on_trend {
            return req; // this fault is off the trend: Leap's "suspend"
        }
        if !spec.minor && !hit && s.frontier.is_some() {
            // Without minor sampling hits are invisible: a major fault
            // just past the frontier means the last request was used.
            s.hits = s.last_issued;
        }
        let prev = s.window;
        let mut w = if s.hits == 0 {
            self.base
        } else {
            let mut w = round_up_pow2(s.hits + 1);
            if s.hits * 2 >= s.last_issued {
                w = w.max(prev * 2);
            }
            w
        };
        let max = if self.po.on { self.po_max } else { self.max };
        w = w.max(prev / 2).clamp(self.base.min(max), max);
        s.window = w;
        s.hits = 0;
        if w > ahead {
            let first = ahead + 1;
            if t.abs() <= DENSE_STRIDE {
                // A small stride is asked for as one range: the kernel's own
                // swap readahead (page-cluster) turns a sequential walk into
                // major faults every 8 pages, and the pages between them
                // are wanted too.
                let start = if t > 0 {
                    page + ahead as i64 * t + 1
                } else {
                    page + w as i64 * t
                };
                req.willneed.push((start, (w - ahead) * t.unsigned_abs()));
            } else {
                for k in first..=w {
                    req.willneed.push((page + t * k as i64, 1));
                }
            }
            s.last_issued = w - ahead;
            s.frontier = Some(page + t * w as i64);
        }
        if self.po.on && t.abs() == 1 {
            // Everything more than `lag` (two windows) behind, once.
            let ps = spec.page_size;
            let lag = if spec.lag > 0 {
                (spec.lag / ps).max(1)
            } else {
                2 * w
            };
            let behind = page - t * lag as i64;
            let from = s.paged_to.unwrap_or(behind - t * w as i64);
            // Never behind the walk's first page.
            let from = match s.walk_start {
                Some(st) if t > 0 => from.max(st),
                Some(st) => from.min(st + 1),
                None => from,
            };
            let (lo, hi) = if t > 0 {
                (from, behind)
            } else {
                (behind, from)
            };
            let lo = lo.max(0); // clipped at page 0, as the simulator's
            s.paged_to = Some(behind);
            if hi > lo {
                req.pageout.push((lo, (hi - lo) as u64));
                self.remember_paged(lo, hi, t);
            }
        }
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page size of these tests.
    const PS: u64 = 4096;

    /// A spec as `run --prefetch` writes it, with its defaults (lab's
    /// `PrefetchSpec` parses it; these tests use a few of its keys).
    fn parse_spec(text: &str) -> DetectorSpec {
        let mut parts = text.split(':');
        let mode = match parts.next() {
            Some("leap") => PrefetchMode::Leap,
            Some("stride") => PrefetchMode::Stride,
            m => panic!("{m:?}"),
        };
        let mut s = DetectorSpec::defaults(mode, PS);
        let mut max = None;
        for p in parts {
            let (k, v) = p.split_once('=').unwrap();
            let size = || swaplab_trace::units::parse_bytes(v).unwrap();
            match k {
                "window" => s.window = size(),
                "max" => max = Some(size()),
                "k" => s.k = v.parse().unwrap(),
                "lag" => s.lag = size(),
                "pageout" if v == "auto" => (s.pageout, s.pageout_auto) = (false, true),
                "pageout" => (s.pageout, s.pageout_auto) = (v == "1", false),
                _ => panic!("{k}"),
            }
        }
        s.max = max.unwrap_or(if s.pageout { PAGEOUT_MAX } else { DEFAULT_MAX });
        if s.window > s.max && max.is_none() {
            s.max = s.window;
        }
        s
    }

    #[test]
    fn pageout_auto_does_not_take_a_jump_between_mappings_for_a_walk() {
        let mut d = limited("leap", 1000);
        // A +1 walk of 100 pages, a jump of ten million pages forward, and
        // 100 more: no walk is longer than the limit.
        let far = 10_000_000;
        let pages = (0..100).chain(far..far + 100);
        walk(&mut d, pages);
        assert!(!d.po.on, "{:?}", d.po.notes);
        assert_eq!(d.po.started, 0);
        // Walking on past the limit on the far side does turn it on.
        walk(&mut d, far + 100..far + 1200);
        assert!(d.po.on);
        assert!(d.po.notes[0].contains("a walk of"), "{:?}", d.po.notes);
    }

    #[test]
    fn majority_is_strict() {
        assert_eq!(majority(&[1, 1, 2]), Some(1));
        assert_eq!(majority(&[1, 2, 1, 2]), None);
        assert_eq!(majority(&[3, 1, 3, 2, 3]), Some(3));
        assert_eq!(majority(&[]), None);
    }

    fn pages(spec: &str) -> (Detector, u64) {
        let s = parse_spec(spec);
        let ps = PS;
        (Detector::new(&s), s.window / ps)
    }

    #[test]
    fn stride_needs_k_equal_deltas_then_requests_a_base_window_ahead() {
        let (mut d, base) = pages("stride:k=3:window=64K");
        // Faults at 100, 101, 102: two deltas, no trend yet.
        for p in [100, 101, 102] {
            assert_eq!(d.access(1, p, false), Request::default(), "{p}");
        }
        // The third +1 delta: request `base` pages after 103.
        let r = d.access(1, 103, false);
        assert_eq!(r.willneed, vec![(104, base)]);
        assert_eq!(d.switches, 1);
        // A major fault well inside the requested range (late): nothing new
        // while more than half a window is still ahead.
        assert_eq!(d.access(1, 104, false).willneed, vec![]);
        // Hits until less than half the window is ahead: the next request
        // starts after the frontier and, half the last request being used,
        // the window doubles.
        let mut got = Vec::new();
        let trigger = 104 + base as i64 / 2;
        for p in 105..=trigger {
            let r = d.access(1, p, true).willneed;
            assert!(r.is_empty() || p == trigger, "{p}: {r:?}");
            got.extend(r);
        }
        let frontier = 103 + base as i64;
        let ahead = (frontier - trigger) as u64;
        assert_eq!(got, vec![(frontier + 1, 2 * base - ahead)]);
    }

    #[test]
    fn a_fault_nobody_asked_for_is_placed_against_the_last_window() {
        // Faults 100..103: the request is pages 104..=119 (16 pages).
        let (mut d, base) = pages("stride:k=3:window=64K");
        for p in 100..=103 {
            d.access(1, p, false);
        }
        assert_eq!(base, 16);
        assert_eq!(d.unasked(1, 120), Unasked::Outran);
        assert_eq!(d.unasked(1, 119 + 64), Unasked::Outran);
        assert_eq!(d.unasked(1, 119 + 65), Unasked::Other);
        assert_eq!(d.unasked(1, 110), Unasked::Skipped);
        assert_eq!(d.unasked(1, 104), Unasked::Skipped);
        assert_eq!(d.unasked(1, 103), Unasked::Other);
        assert_eq!(d.unasked(2, 110), Unasked::Other, "another thread");
        // Downwards: past the window is below it.
        let (mut d, _) = pages("stride:k=3:window=64K");
        for p in (997..=1000).rev() {
            d.access(1, p, false);
        }
        assert_eq!(d.unasked(1, 980), Unasked::Outran);
        assert_eq!(d.unasked(1, 990), Unasked::Skipped);
    }

    #[test]
    fn a_large_stride_requests_single_pages_along_it_a_small_one_a_range() {
        let (mut d, base) = pages("stride:k=2:window=16K");
        d.access(7, 0, false);
        d.access(7, 30, false);
        let r = d.access(7, 60, false);
        let want: Vec<(i64, u64)> = (1..=base as i64).map(|k| (60 + 30 * k, 1)).collect();
        assert_eq!(r.willneed, want);
        // Stride 8 (page-cluster readahead of a sequential walk): one range
        // of base steps of 8 pages.
        d.access(9, 0, false);
        d.access(9, 8, false);
        let r = d.access(9, 16, false);
        assert_eq!(r.willneed, vec![(17, 8 * base)]);
        // Downwards.
        d.access(5, 1000, false);
        d.access(5, 992, false);
        let r = d.access(5, 984, false);
        assert_eq!(r.willneed, vec![(984 - 8 * base as i64, 8 * base)]);
    }

    #[test]
    fn random_faults_request_nothing() {
        let (mut d, _) = pages("leap");
        let mut x = 12345u64;
        let mut requested = 0;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = d.access(1, (x % 1_000_000) as i64, false);
            requested += r.willneed.len();
        }
        assert_eq!(requested, 0);
        assert_eq!(d.switches, 0);
    }

    #[test]
    fn leap_finds_a_majority_among_noise_and_threads_are_separate() {
        let (mut d, _) = pages("leap:window=4K");
        // Thread 1 walks down by 2 with an outlier every 8th fault; thread
        // 2's faults in between do not disturb it.
        let mut p = 10_000i64;
        let mut asked = Vec::new();
        for i in 0..40 {
            p -= 2;
            let q = if i % 8 == 7 { p + 5000 } else { p };
            let r = d.access(1, q, false).willneed;
            // An outlier follows no trend: nothing is asked at it.
            assert!(q == p || r.is_empty(), "{i}: {r:?}");
            asked.extend(r);
            d.access(2, 77 * i, false);
        }
        assert!(!asked.is_empty());
        // Every request is a range below the walk's position (a stride of 2
        // is a dense walk down, asked for as one range): on the trend.
        assert!(
            asked
                .iter()
                .all(|&(pg, n)| pg > 0 && pg + n as i64 <= 10_000),
            "{asked:?}"
        );
        assert_eq!(d.streams[&1].trend, Some(-1));
        assert!(d.streams.contains_key(&2));
    }

    #[test]
    fn a_walk_seen_through_cluster_faults_and_hits_keeps_one_trend() {
        // A sequential walk under page-cluster 3: the pages the prefetcher
        // asked for come back as hits (+1 apart), the others fault once per
        // aligned block of 8 (+8 apart), and the kernel's readahead serves
        // the rest unseen. One dense trend throughout, and pageout trails
        // the walk without a restart.
        let (mut d, _) = pages("leap:pageout=1");
        let mut requested = std::collections::HashSet::new();
        let mut paged_to = 0;
        for p in 0..20_000i64 {
            let r = if requested.contains(&p) {
                d.access(1, p, true)
            } else if p % 8 == 0 {
                d.access(1, p, false)
            } else {
                continue;
            };
            for (lo, n) in r.willneed {
                requested.extend(lo..lo + n as i64);
            }
            for (lo, n) in r.pageout {
                // Each range starts where the last one ended.
                if paged_to > 0 {
                    assert_eq!(lo, paged_to, "at {p}");
                }
                paged_to = lo + n as i64;
            }
        }
        assert_eq!(d.switches, 1);
        assert_eq!(d.streams[&1].trend, Some(1));
        assert!(paged_to > 19_000, "paged out to {paged_to}");
    }

    #[test]
    fn a_walk_that_starts_over_is_prefetched_again() {
        let (mut d, base) = pages("leap:window=16K:max=16K");
        let mut asked = Vec::new();
        for pass in 0..2 {
            for p in 0..200i64 {
                for (start, n) in d.access(1, p, false).willneed {
                    asked.push((pass, p, start, n));
                }
            }
        }
        // The jump back to 0 is one odd delta among 31 +1s: the trend
        // holds, and the second pass is prefetched like the first, from
        // its start on.
        assert_eq!(d.switches, 1);
        let second: Vec<_> = asked.iter().filter(|a| a.0 == 1).collect();
        assert!(!second.is_empty(), "{asked:?}");
        assert!(second[0].1 <= 2, "{second:?}");
        assert!(second
            .iter()
            .all(|a| a.2 > a.1 && a.2 + a.3 as i64 <= a.1 + 1 + base as i64));
    }

    #[test]
    fn leap_backs_off_when_the_trend_breaks() {
        let (mut d, _) = pages("leap:window=4K");
        for p in 0..20 {
            d.access(1, p, false);
        }
        assert_eq!(d.streams[&1].trend, Some(1));
        let mut x = 99u64;
        for _ in 0..40 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            d.access(1, (x >> 20) as i64 % 1_000_000, false);
        }
        assert_eq!(d.streams[&1].trend, None);
        assert_eq!(d.streams[&1].frontier, None);
    }

    #[test]
    fn the_window_grows_with_hits_up_to_max_and_pageout_trails() {
        let ps = PS as i64;
        let (mut d, base) = pages(&format!("leap:window=16K:max=64K:pageout=1:lag={}", 5 * ps));
        let max = (64 << 10) / ps as u64;
        let mut biggest = 0;
        let mut paged: Vec<(i64, u64)> = Vec::new();
        for p in 0..2000i64 {
            let hit = p > 8;
            let r = d.access(1, p, hit);
            for &(_, n) in &r.willneed {
                biggest = biggest.max(n);
            }
            for &(lo, n) in &r.pageout {
                // Never closer than the lag (5 pages) behind the walk.
                assert!(lo >= 0 && lo + n as i64 <= p - 5, "{lo}+{n} at {p}");
                // Each range starts where the last one ended: every page
                // behind is paged out once.
                if let Some(&(l, m)) = paged.last() {
                    assert_eq!(lo, l + m as i64, "at {p}");
                }
            }
            paged.extend(r.pageout);
        }
        assert!(base < max);
        assert_eq!(d.streams[&1].window, max);
        assert!(biggest <= max);
        // Trailing the walk: the last range ends within a request's
        // spacing (half the largest window) of 5 pages behind page 1999.
        let &(l, m) = paged.last().unwrap();
        let end = l + m as i64;
        assert!(end > 1999 - 5 - max as i64 / 2 - 1, "ends at {end}");
    }

    #[test]
    fn pageout_never_reaches_behind_the_start_of_a_walk() {
        // A walk up pages 1000..1400, then a jump down to page 500 and a
        // walk up from there, lag 32 pages (the walker of the lab's
        // prefetch test, whose CI run once paged out 16 pages of another
        // mapping 40 pages below its region). The jump is one odd delta:
        // the trend holds, and pageout restarts at page 500, never below.
        let (mut d, _) = pages(&format!(
            "leap:window=16K:max=256K:pageout=1:lag={}",
            32 * PS
        ));
        let first = walk(&mut d, 1000..1400);
        assert!(first
            .iter()
            .all(|&(p, lo, n)| lo >= 1000 && lo + n as i64 <= p - 32));
        let second = walk(&mut d, 500..900);
        assert_eq!(d.switches, 1);
        assert!(!second.is_empty());
        assert!(
            second
                .iter()
                .all(|&(p, lo, n)| lo >= 500 && lo + n as i64 <= p - 32),
            "{second:?}"
        );
        // Every page from the new start to 32 behind the last fault, once.
        let mut next = 500;
        for &(_, lo, n) in &second {
            assert_eq!(lo, next, "{second:?}");
            next = lo + n as i64;
        }
        assert!(next > 899 - 32 - 64, "paged out to {next}");
        // The same downwards: a walk down from 2000, a jump up to 2500 and
        // down again; nothing above 2500 goes.
        let (mut d, _) = pages(&format!(
            "leap:window=16K:max=256K:pageout=1:lag={}",
            32 * PS
        ));
        walk(&mut d, (1600..2000).rev());
        let second = walk(&mut d, (2100..=2500).rev());
        assert!(!second.is_empty());
        assert!(
            second
                .iter()
                .all(|&(p, lo, n)| lo + n as i64 <= 2501 && lo >= p + 32),
            "{second:?}"
        );
        assert_eq!(second[0].1 + second[0].2 as i64, 2501, "{second:?}");
    }

    /// A detector with `spec` for a group limited to `limit` pages.
    fn limited(spec: &str, limit: u64) -> Detector {
        let s = parse_spec(spec);
        Detector::with_limit(&s, Some(limit * PS))
    }

    /// Walks `pages` as major faults; returns (fault, pageout range) pairs.
    fn walk(d: &mut Detector, pages: impl Iterator<Item = i64>) -> Vec<(i64, i64, u64)> {
        let mut out = Vec::new();
        for p in pages {
            for (lo, n) in d.access(1, p, false).pageout {
                out.push((p, lo, n));
            }
        }
        out
    }

    #[test]
    fn pageout_auto_starts_once_a_walk_is_longer_than_the_limit() {
        // Limit 100 pages, base window 4, lag 2. The trend +1 appears at
        // page 8 (8 deltas: history 32 / split 4); the walk from there is
        // longer than the limit from page 109 on, and only then do pages
        // behind it go, never the last `lag` ones.
        let mut d = limited("leap:window=16K:lag=8K", 100);
        let got = walk(&mut d, 0..300);
        assert!(!got.is_empty());
        assert!(got.iter().all(|&(p, _, _)| p >= 109), "{got:?}");
        assert!(
            got.iter().all(|&(p, lo, n)| lo + n as i64 <= p - 2),
            "{got:?}"
        );
        assert_eq!((d.po.started, d.po.regrets), (1, 0));
        // Without a limit (or with pageout=0) it never starts.
        let (mut d, _) = pages("leap:window=16K:lag=8K");
        assert!(walk(&mut d, 0..300).is_empty());
        let mut d = limited("leap:window=16K:lag=8K:pageout=0", 100);
        assert!(walk(&mut d, 0..300).is_empty());
    }

    #[test]
    fn pageout_auto_starts_at_once_in_a_region_larger_than_the_limit() {
        let mut d = limited("leap:window=16K:lag=8K", 100);
        assert!(walk(&mut d, 0..9).is_empty());
        // The trend began at page 8: the caller is asked for its region.
        assert_eq!(d.region_query.take(), Some(8));
        d.region_pages(100); // not larger: stays off
        assert!(walk(&mut d, 9..20).is_empty());
        d.region_pages(101);
        assert!(!walk(&mut d, 20..40).is_empty());
        assert_eq!(d.po.started, 1);
    }

    #[test]
    fn pageout_auto_stops_for_good_when_the_program_comes_back_soon() {
        // A cyclic walk of 300 pages under a limit of 100: coming back to
        // a page after walking 300 further is what pageout is for.
        let mut d = limited("leap:window=16K:lag=8K", 100);
        d.region_pages(300);
        walk(&mut d, 0..300);
        walk(&mut d, 0..300);
        assert_eq!((d.po.started, d.po.regrets), (1, 0));
        // Then back down over what it just passed: an LRU would have kept
        // those pages. The first fault on one turns pageout off, and no
        // more pages go, though the walk down is a dense trend too.
        let pages_down = walk(&mut d, (0..290).rev());
        assert_eq!((d.po.started, d.po.regrets), (1, 1));
        assert!(pages_down.is_empty(), "{pages_down:?}");
        assert!(!d.po.on);
        walk(&mut d, 0..300);
        assert_eq!(d.po.started, 1, "it does not start again");
        assert!(
            d.po.notes.iter().any(|n| n.contains("off for good")),
            "{:?}",
            d.po.notes
        );
    }

    #[test]
    fn pageout_auto_takes_a_late_sample_for_what_it_is() {
        // The rings are read one CPU after the other, so a thread that
        // moved between CPUs is seen out of time order: a fault sampled
        // before the pageout of its page is not a come-back.
        let mut d = limited("leap:window=16K:lag=8K", 100);
        d.region_pages(300);
        for p in 0..200 {
            d.now_ns = 1_000 + p as u64;
            d.access(1, p, false);
        }
        assert_eq!((d.po.started, d.po.regrets), (1, 0));
        let r = *d.paged.back().expect("pages paged out");
        d.now_ns = r.asked_ns - 1;
        d.access(1, r.lo, false);
        assert_eq!(d.po.regrets, 0, "a late sample of {}", r.lo);
        // The same page faulting after the request is a come-back.
        d.now_ns = r.asked_ns + 1;
        d.access(1, r.lo, false);
        assert_eq!(d.po.regrets, 1);
    }

    #[test]
    fn pageout_auto_keeps_its_window_small_once_on() {
        let mut d = limited("leap", 1000);
        let ps = PS;
        d.region_pages(1_000_000);
        let mut asked = 0u64;
        let mut p = 0i64;
        let mut requested = std::collections::HashSet::new();
        while p < 200_000 {
            let hit = requested.contains(&p);
            for (lo, n) in d.access(1, p, hit).willneed {
                asked = asked.max(n);
                requested.extend(lo..lo + n as i64);
            }
            p += 1;
        }
        assert!(asked * ps <= PAGEOUT_MAX, "a request of {asked} pages");
        assert!(
            asked * ps * 2 >= PAGEOUT_MAX,
            "windows stayed at {asked} pages"
        );
    }

    /// Four passes of a cyclic walk over 400 pages under a limit of 300
    /// (as traverse at 75 %), the pages of `swapped` out of memory at the
    /// start: each pass faults only on the pages out of memory, and pages
    /// out what the prefetcher asks for; the resident ones are walked
    /// without a fault. `count_resident`: whether the detector can see
    /// which pages are resident. Returns (pageout started, regrets, pages
    /// out at the end, faults).
    fn cyclic_walk(swapped: std::ops::Range<i64>, count_resident: bool) -> (u64, u64, usize, u64) {
        let mut d = limited("leap:window=16K:lag=8K", 300);
        d.region_pages(400);
        let mut out: std::collections::HashSet<i64> = swapped.collect();
        let mut faults = 0;
        for _pass in 0..4 {
            for p in 0..400i64 {
                if !out.remove(&p) {
                    continue; // resident: no fault
                }
                faults += 1;
                let mut resident = |from: i64, dir: i64, max: u64| {
                    let mut n = 0;
                    while count_resident
                        && n < max
                        && (0..400).contains(&(from + dir * n as i64))
                        && !out.contains(&(from + dir * n as i64))
                    {
                        n += 1;
                    }
                    n
                };
                let r = d.access_with(1, p, false, &mut resident);
                for (lo, n) in r.pageout {
                    out.extend(lo..lo + n as i64);
                }
            }
        }
        (d.po.started, d.po.regrets, out.len(), faults)
    }

    #[test]
    fn pageout_auto_counts_the_resident_part_a_cyclic_walk_passes_unseen() {
        // The fill left pages 0..100 swapped and 100..400 resident. The
        // program comes back to page 0 only 100 faulting pages after
        // paging it out (less than half the limit), from page 99, the last
        // one seen: the 300 resident pages beyond it are the walk it made
        // unseen, and pageout stays.
        let (started, regrets, out, _) = cyclic_walk(0..100, true);
        assert_eq!((started, regrets), (1, 0));
        assert!(out > 50, "pageout went on: {out} pages out");
        // Blind to the resident pages, the same walk looks like a regret.
        assert_eq!(cyclic_walk(0..100, false).1, 1);
    }

    #[test]
    fn pageout_auto_counts_the_resident_start_of_a_pass_too() {
        // The swapped part at the end of the array (300..400): each pass
        // walks 0..300 resident and unseen, then faults on 300..400 and
        // pages them out behind it. It comes back to page 300 from page
        // 399, the last one seen, with nothing beyond it: the walk it made
        // unseen is the resident 300 pages before page 300, and pageout
        // stays.
        let (started, regrets, _, faults) = cyclic_walk(300..400, true);
        assert_eq!((started, regrets), (1, 0));
        assert!(faults > 250, "pageout stopped paging out: {faults} faults");
        assert_eq!(cyclic_walk(300..400, false).1, 1);
    }
}
