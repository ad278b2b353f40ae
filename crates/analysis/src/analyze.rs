//! `swaplab analyze`: which objects of a traced run fault and swap, and how
//! they are accessed. Pure functions over [`TraceTables`] (no OS access).
//!
//! # Attribution ([`attribute`])
//!
//! Every fault and swap event belongs to one [`ObjectRef`]:
//!
//! 1. the allocation of the event's pid live at the event's time and covering
//!    its address. "Live" is `t_alloc <= t < t_free` (an event at the very
//!    nanosecond of a free belongs to what is allocated next). A forked child
//!    starts with a copy of its parent's allocations live at the fork
//!    (`Process::t_start_ns`), recursively; a child's own later allocation at
//!    the same start address replaces the inherited one (it must have freed
//!    it), and the parent's free does not end the child's copy. Threads share
//!    their pid's allocations (events are keyed by `pid`, never `tid`). When
//!    live allocations overlap (a missed free), the one with the highest start
//!    at or below the address that covers it wins (the 8 nearest are checked).
//! 2. else, when the trace has sampled allocations below the preload
//!    library's threshold (`trace --heap-sample`; [`Allocation::weight`]),
//!    the sampled allocation of that pid live at that time with the most
//!    bytes on the event's page (a page of small objects belongs to the
//!    sampled objects that sit on it, not only to the one at the faulting
//!    byte). Sampled allocations are small and picked at random, so this
//!    covers only some pages of a heap: the others fall through to rule 3;
//!    [`SiteStats::est_major_swap_ins`] scales the sampled sites' counts up
//!    to what their unsampled objects would have added;
//! 3. else the region of that pid covering the address whose snapshots
//!    (`first_seen_ns..=last_seen_ns`) include the event time, else the
//!    covering region seen nearest in time;
//! 4. else [`ObjectRef::Unknown`].
//!
//! [`Allocation::weight`]: swaplab_trace::events::Allocation::weight
//!
//! It is one sweep in time order over allocation, free and fork points and the
//! (already time-ordered) events, with a per-pid ordered map of live
//! allocations: O((E + A) log A). Regions are indexed per pid by elementary
//! address segments (binary search). 1 M events × 10 k allocations take well
//! under a second.
//!
//! # Objects and sites ([`analyze`])
//!
//! There is one [`ObjectStats`] per (object, pid) that has at least one event:
//! an allocation inherited by a child is a separate object in the child (its
//! copy-on-write copy). `first_ns`/`last_ns` span the program's accesses to
//! it (faults and swap-ins; swap-outs are the kernel's doing and only count
//! when there is nothing else). Objects are ranked by major faults +
//! swap-ins, then faults, then size. Sites ([`SiteStats`]) add up their
//! allocation objects; a site's pattern is the one of its top-ranked object.
//!
//! # Access patterns ([`classify`])
//!
//! The input is the fault stream of one object: (time, page index within the
//! object), in time order. Faults stand for first touches, swap-cache hits and
//! swap-ins alike; all of them show where the program walks.
//!
//! * **Fewer than `min_faults_for_pattern` faults** (default 64): `TooFew`,
//!   confidence 0.
//! * **Streams.** Interleaved walkers (threads sweeping their own parts) are
//!   separated the way a hardware prefetcher does it: a table of at most
//!   `clamp(span / 128, 4, 32)` streams (span = highest − lowest page + 1)
//!   holds each walker's last page and last step. A fault belongs to the
//!   stream whose last page is nearest within ±[`SEQ_GAP_PAGES`] (8 pages: the
//!   default swap readahead window, `vm.page-cluster` 3, so a sweep that only
//!   shows the major fault of every readahead block still counts as
//!   sequential) — a *short step*; a fault on the very page a stream is at,
//!   when that stream moved within the last 64 faults, is a repeat and
//!   skipped (read-then-write faults, retries). Else it continues
//!   a stream whose last step it repeats exactly — a *stride step*. Else it
//!   is a *jump* and starts a new stream (replacing the least recently used
//!   one), remembering its distance to the nearest stream as that stream's
//!   tentative stride.
//! * **Shares.** With `steps` = kept faults − 1: `short` = short steps /
//!   steps, corrected for chance: a random fault lands within ±8 pages of one
//!   of `s` stream heads with probability about `s·17/span`, summed over the
//!   steps as `expected`, and `short = (short_steps − expected) / (steps −
//!   expected)` (Cohen's-kappa style), so small objects with random access do
//!   not look sequential. `stride` = the most common stride step `k` (|k| >
//!   8) / steps.
//! * **Strided{k}** when `stride >= 0.5` and `stride > short`: a constant
//!   stride beyond the readahead window. Strides of 2..=8 pages are inside
//!   the readahead window, fault exactly like a sweep does with readahead,
//!   and are reported as Sequential with the step in the evidence.
//!   Confidence = `stride`.
//! * **Sequential** when `short >= 0.5`; confidence = `short`. Then passes are
//!   counted: the k-th fault on a page (k = 0, 1, …) belongs to pass k; pass k
//!   counts when it faults at least 25 % as many pages as pass 0, or at
//!   least 1/16 as many spread over at least half of pass 0's address extent
//!   (a later pass that only shows the major fault of each 8-page readahead
//!   block), so a few re-touched pages are not a new sweep. With two or more passes the
//!   object is **Sweeps**: `sweeps` = counted passes, `period_ns` = median
//!   time between the starts of consecutive passes (a pass starts at its
//!   first fault: the wrap-around back to the start of the object, or of a
//!   thread's part), `pages_per_sweep` = median pages faulted per pass;
//!   confidence = `short`. This does not depend on how many threads sweep.
//! * **Random** otherwise; confidence = `1 − max(short, stride)` (the share
//!   of steps that fit no walk). A uniformly random permutation and hash-table
//!   probes land here with confidence near 1.
use swaplab_trace::events::TraceTables;

use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use swaplab_trace::events::{FaultKind, SwapDir};

/// Steps of at most this many pages (either direction) are sequential: the
/// default swap readahead window (`vm.page-cluster` = 3).
pub const SEQ_GAP_PAGES: i64 = 8;
/// A pattern (short steps or one stride) needs this share of the steps.
pub const PATTERN_SHARE: f64 = 0.5;
/// A later pass counts as a sweep when it faults this share of pass 0's pages.
pub const PASS_SHARE: f64 = 0.25;
const MAX_STREAMS: usize = 32;
const MIN_STREAMS: usize = 4;
const PAGES_PER_STREAM: i64 = 128;
/// A fault on the page a stream is at counts as a repeat only when that
/// stream moved within this many faults.
const REPEAT_WINDOW: usize = 2 * MAX_STREAMS;

/// Knobs of [`analyze`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalyzeOptions {
    /// Objects with fewer faults get [`PatternKind::TooFew`].
    pub min_faults_for_pattern: usize,
    /// The page size of the traced machine.
    pub page_size: u64,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            min_faults_for_pattern: 64,
            page_size: 4096,
        }
    }
}

/// What an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectRef {
    /// Index into `TraceTables::allocations`.
    Allocation(usize),
    /// Index into `TraceTables::regions`.
    Region(usize),
    /// Neither.
    Unknown,
}

/// The object of every event, parallel to the tables' event vectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attribution {
    /// `faults[i]` is the object of `TraceTables::faults[i]`.
    pub faults: Vec<ObjectRef>,
    /// `swaps[i]` is the object of `TraceTables::swaps[i]`.
    pub swaps: Vec<ObjectRef>,
}

/// The access pattern kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum PatternKind {
    /// One walk (or interleaved walks) with short forward or backward steps.
    Sequential,
    /// A constant step of `stride_pages` pages (|stride| > 8).
    Strided {
        /// The step.
        stride_pages: i64,
    },
    /// Sequential, repeated: the object is swept `sweeps` times.
    Sweeps {
        /// Median time between the starts of consecutive passes.
        period_ns: u64,
        /// Median pages faulted per pass.
        pages_per_sweep: u64,
        /// Passes counted.
        sweeps: u64,
    },
    /// No walk fits.
    Random,
    /// Fewer faults than `min_faults_for_pattern`.
    TooFew,
}

/// A classified access pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    /// The kind.
    pub kind: PatternKind,
    /// 0..1: the share of steps that fit the kind (see the module docs).
    pub confidence: f64,
    /// The numbers behind it, for people.
    pub evidence: String,
    /// A walk toward lower addresses (most short steps backward, or a
    /// negative stride).
    pub backward: bool,
}

impl Pattern {
    /// For tables: `sequential (98%)`, `strided 16p (90%)`,
    /// `3 sweeps/0.63s (100%)`, `random (95%)`, `-` for too few faults.
    pub fn short(&self) -> String {
        let k = match &self.kind {
            PatternKind::Sequential => "sequential".to_string(),
            PatternKind::Strided { stride_pages } => format!("strided {stride_pages}p"),
            PatternKind::Sweeps {
                sweeps, period_ns, ..
            } => format!("{sweeps} sweeps/{:.2}s", *period_ns as f64 / 1e9),
            PatternKind::Random => "random".to_string(),
            PatternKind::TooFew => return "-".to_string(),
        };
        format!("{k} ({:.0}%)", self.confidence * 100.0)
    }
}

/// One object (allocation or region, in one pid) and its events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectStats {
    /// Which object.
    pub object: ObjectRef,
    /// Site label (allocations) or mapping path (regions), with the address.
    pub label: String,
    /// The pid whose events these are (a child's copy of an inherited
    /// allocation is its own object).
    pub pid: u32,
    /// First byte.
    pub start: u64,
    /// Size.
    pub bytes: u64,
    /// Allocation site.
    pub site_id: Option<u32>,
    /// All faults.
    pub faults: u64,
    /// Major faults.
    pub major_faults: u64,
    /// Minor faults.
    pub minor_faults: u64,
    /// Pages swapped in.
    pub swap_ins: u64,
    /// Pages swapped out.
    pub swap_outs: u64,
    /// First access (fault or swap-in).
    pub first_ns: Option<u64>,
    /// Last access.
    pub last_ns: Option<u64>,
    /// The fault pattern.
    pub pattern: Pattern,
    /// Distinct pages that faulted.
    pub pages_touched: u64,
    /// When the object came to exist in `pid` (allocation, fork, first map
    /// snapshot).
    pub t_from_ns: u64,
    /// When it stopped (free, last map snapshot); `None`: still there at the end.
    pub t_to_ns: Option<u64>,
    /// A sampled allocation below the threshold: the bytes it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
    /// Major faults + swap-ins this object stands for: its own for an
    /// exact object; for a sampled one, each event's share of its page
    /// (bytes of the object on the page / page size) × weight / size.
    pub est_major_swap_ins: f64,
}

/// One allocation site and its objects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteStats {
    /// [`swaplab_trace::events::Site::site_id`].
    pub site_id: u32,
    /// [`swaplab_trace::events::Site::label`].
    pub label: String,
    /// Objects (allocation × pid) with events.
    pub objects: usize,
    /// Their bytes.
    pub bytes: u64,
    /// The largest object's bytes.
    pub max_object_bytes: u64,
    /// Most objects of this site with events in one pid.
    pub max_objects_per_pid: usize,
    /// Faults.
    pub faults: u64,
    /// Major faults.
    pub major_faults: u64,
    /// Distinct pages that faulted, summed over objects.
    pub pages_touched: u64,
    /// Swap-ins.
    pub swap_ins: u64,
    /// Swap-outs.
    pub swap_outs: u64,
    /// First access.
    pub first_ns: Option<u64>,
    /// Last access.
    pub last_ns: Option<u64>,
    /// Pattern of the top-ranked object.
    pub pattern: Pattern,
    /// Index of the top-ranked object in [`Analysis::objects`].
    pub top_object: usize,
    /// Some of its objects are sampled allocations below the threshold:
    /// its counts are those of the sampled objects' pages, and
    /// `est_major_swap_ins` scales them to the whole site.
    pub sampled: bool,
    /// Major faults + swap-ins the site stands for (the sum of its
    /// objects' [`ObjectStats::est_major_swap_ins`]); sites rank by it.
    pub est_major_swap_ins: f64,
    /// Estimated peak live bytes of its sampled allocations (0 if none).
    pub est_live_bytes: u64,
}

/// A site with sampled allocations, whether or not they saw events: how
/// much of the heap it holds (heaptrack-style estimates).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledSite {
    /// The site.
    pub site_id: u32,
    /// Its label.
    pub label: String,
    /// Sampled allocations in the trace.
    pub samples: u64,
    /// Estimated bytes allocated in all (sum of the samples' weights).
    pub est_allocated_bytes: u64,
    /// Estimated peak live bytes: the largest sum of the weights of the
    /// samples live at one time (over all processes).
    pub est_live_bytes: u64,
    /// When that peak was reached (ns since start).
    pub peak_ns: u64,
}

/// One point of the time × address scatter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScatterPoint {
    /// ns since start.
    pub t_ns: u64,
    /// Process.
    pub pid: u32,
    /// Address.
    pub vaddr: u64,
    /// `swap_in`, `swap_out` or `major`.
    pub kind: &'static str,
    /// Index into [`Analysis::objects`], if attributed.
    pub object: Option<usize>,
}

/// An object's band of the scatter: its address range over its lifetime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    /// Index into [`Analysis::objects`].
    pub object: usize,
    /// Its label.
    pub label: String,
    /// Process.
    pub pid: u32,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Lifetime start.
    pub t_from: u64,
    /// Lifetime end (the end of the trace when it was never freed).
    pub t_to: u64,
}

/// Run-wide counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Faults.
    pub faults: u64,
    /// Major faults.
    pub major_faults: u64,
    /// Minor faults.
    pub minor_faults: u64,
    /// Faults of unknown kind.
    pub unknown_faults: u64,
    /// Swap-ins.
    pub swap_ins: u64,
    /// Swap-outs.
    pub swap_outs: u64,
    /// The last time seen in any table (events, allocations, frees, processes).
    pub t_end_ns: u64,
    /// Allocations in the trace.
    pub allocations: usize,
    /// Processes in the trace.
    pub processes: usize,
}

/// Everything `swaplab analyze` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// Objects, ranked by major faults + swap-ins, then faults, then bytes.
    pub objects: Vec<ObjectStats>,
    /// Sites, ranked by estimated major faults + swap-ins, then faults.
    pub sites: Vec<SiteStats>,
    /// Sites with sampled allocations, by estimated peak live bytes.
    pub sampled_sites: Vec<SampledSite>,
    /// (faults, swap events) attributed to nothing.
    pub unattributed: (u64, u64),
    /// Swap-ins, swap-outs and major faults, in time order.
    pub scatter: Vec<ScatterPoint>,
    /// One band per object.
    pub bands: Vec<Band>,
    /// Run-wide counts.
    pub totals: Totals,
    /// The page size used.
    pub page_size: u64,
}

// ---------------------------------------------------------------- attribution

#[derive(Clone, Copy)]
struct Live {
    end: u64,
    idx: usize,
}

/// Region index → the region that stands for it: every snapshot of a
/// pid's `[heap]` with the same start (brk grows it in place, so the maps
/// table has one row per size seen) stands for the largest one, so the
/// heap is one object; other regions stand for themselves.
fn heap_canon(t: &TraceTables) -> Vec<usize> {
    let mut canon: Vec<usize> = (0..t.regions.len()).collect();
    let mut best: HashMap<(u32, u64), usize> = HashMap::new();
    for (i, r) in t.regions.iter().enumerate() {
        if r.path != "[heap]" {
            continue;
        }
        let e = best.entry((r.pid, r.start)).or_insert(i);
        let b = &t.regions[*e];
        if (r.end, r.last_seen_ns) > (b.end, b.last_seen_ns) {
            *e = i;
        }
    }
    for (i, r) in t.regions.iter().enumerate() {
        if r.path == "[heap]" {
            canon[i] = best[&(r.pid, r.start)];
        }
    }
    canon
}

/// The heap's growth: (first seen, bytes) of every size of the `[heap]` of
/// region `i` (its pid and start), in time order, one per distinct size.
pub fn heap_growth(t: &TraceTables, i: usize) -> Vec<(u64, u64)> {
    let r = &t.regions[i];
    let mut v: Vec<(u64, u64)> = t
        .regions
        .iter()
        .filter(|x| x.path == "[heap]" && x.pid == r.pid && x.start == r.start)
        .map(|x| (x.first_seen_ns, x.end.saturating_sub(x.start)))
        .collect();
    v.sort_unstable();
    v.dedup_by_key(|x| x.1);
    v
}

/// Per-pid region index: elementary address segments, each with the regions
/// covering it (sorted by first sighting).
struct RegionIndex {
    bounds: Vec<u64>,
    segs: Vec<Vec<usize>>,
}

impl RegionIndex {
    fn build(t: &TraceTables, idxs: &[usize]) -> RegionIndex {
        let mut bounds: Vec<u64> = idxs
            .iter()
            .flat_map(|&i| [t.regions[i].start, t.regions[i].end])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut segs = vec![Vec::new(); bounds.len().saturating_sub(1)];
        let mut sorted = idxs.to_vec();
        sorted.sort_by_key(|&i| (t.regions[i].first_seen_ns, i));
        for i in sorted {
            let r = &t.regions[i];
            if r.end <= r.start {
                continue;
            }
            let a = bounds.partition_point(|&b| b < r.start);
            let z = bounds.partition_point(|&b| b < r.end);
            for seg in &mut segs[a..z] {
                seg.push(i);
            }
        }
        RegionIndex { bounds, segs }
    }

    fn find(&self, t: &TraceTables, addr: u64, time: u64) -> Option<usize> {
        let p = self.bounds.partition_point(|&b| b <= addr);
        let seg = self.segs.get(p.checked_sub(1)?)?;
        let mut best: Option<(u64, usize)> = None;
        for &i in seg {
            let r = &t.regions[i];
            let dist = if time < r.first_seen_ns {
                r.first_seen_ns - time
            } else {
                time.saturating_sub(r.last_seen_ns)
            };
            // Later sightings win ties (the newest mapping at that address).
            if best.is_none_or(|(d, _)| dist <= d) {
                best = Some((dist, i));
            }
        }
        best.map(|(_, i)| i)
    }
}

fn is_sorted_by_time<T>(v: &[T], key: impl Fn(&T) -> u64) -> bool {
    v.windows(2).all(|w| key(&w[0]) <= key(&w[1]))
}

fn time_order<T>(v: &[T], key: impl Fn(&T) -> u64) -> Vec<usize> {
    let mut o: Vec<usize> = (0..v.len()).collect();
    if !is_sorted_by_time(v, &key) {
        o.sort_by_key(|&i| key(&v[i]));
    }
    o
}

/// The sampled allocation with the most bytes on the page of `addr`
/// (ties: the lower start), among the 64 nearest below the page's end.
fn lookup_sampled(map: Option<&BTreeMap<u64, Live>>, addr: u64, page: u64) -> Option<usize> {
    let p0 = addr & !(page - 1);
    let p1 = p0.saturating_add(page);
    let mut best: Option<(u64, usize)> = None;
    for (&start, l) in map?.range(..p1).rev().take(64) {
        if l.end <= p0 {
            break;
        }
        let overlap = l.end.min(p1) - start.max(p0);
        if best.is_none_or(|(b, _)| overlap >= b) {
            best = Some((overlap, l.idx));
        }
    }
    best.map(|(_, i)| i)
}

/// Bytes of `[start, end)` on the page of `addr`.
pub fn bytes_on_page(start: u64, end: u64, addr: u64, page: u64) -> u64 {
    let p0 = addr & !(page - 1);
    let p1 = p0.saturating_add(page);
    end.min(p1).saturating_sub(start.max(p0))
}

fn lookup_live(map: Option<&BTreeMap<u64, Live>>, addr: u64) -> Option<usize> {
    map?.range(..=addr)
        .rev()
        .take(8)
        .find(|(_, l)| addr < l.end)
        .map(|(_, l)| l.idx)
}

/// The depth of each pid in the process tree (forks at one instant are
/// applied parent first).
fn depths(t: &TraceTables) -> HashMap<u32, u32> {
    let parent: HashMap<u32, u32> = t.processes.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut out = HashMap::new();
    for p in &t.processes {
        let mut d = 0u32;
        let mut cur = p.pid;
        while let Some(&pp) = parent.get(&cur) {
            if pp == 0 || pp == p.pid || d > 64 {
                break;
            }
            d += 1;
            cur = pp;
        }
        out.insert(p.pid, d);
    }
    out
}

/// The object of every fault and swap event (see the module docs for the
/// rules), for 4 KiB pages. O((events + allocations) · log allocations).
pub fn attribute(t: &TraceTables) -> Attribution {
    attribute_paged(t, 4096)
}

/// [`attribute`] with the machine's page size (a power of two).
pub fn attribute_paged(t: &TraceTables, page: u64) -> Attribution {
    let page = if page.is_power_of_two() { page } else { 4096 };
    // Control points: (time, order, depth, what). Frees before allocations
    // before forks at the same instant; all before events at that instant.
    const FREE: u8 = 0;
    const ALLOC: u8 = 1;
    const FORK: u8 = 2;
    let depth = depths(t);
    let mut ctl: Vec<(u64, u8, u32, usize)> = Vec::with_capacity(t.allocations.len() * 2);
    for (i, a) in t.allocations.iter().enumerate() {
        if a.size == 0 {
            continue;
        }
        ctl.push((a.t_alloc_ns, ALLOC, 0, i));
        if let Some(f) = a.t_free_ns {
            ctl.push((f.max(a.t_alloc_ns), FREE, 0, i));
        }
    }
    for (i, p) in t.processes.iter().enumerate() {
        if p.ppid != 0 && p.ppid != p.pid {
            ctl.push((p.t_start_ns, FORK, depth[&p.pid], i));
        }
    }
    ctl.sort_unstable();

    let mut regions_by_pid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, r) in t.regions.iter().enumerate() {
        regions_by_pid.entry(r.pid).or_default().push(i);
    }
    let region_index: HashMap<u32, RegionIndex> = regions_by_pid
        .iter()
        .map(|(&pid, v)| (pid, RegionIndex::build(t, v)))
        .collect();
    let canon = heap_canon(t);
    let region_of = |pid: u32, addr: u64, time: u64| -> ObjectRef {
        region_index
            .get(&pid)
            .and_then(|ix| ix.find(t, addr, time))
            .map_or(ObjectRef::Unknown, |i| ObjectRef::Region(canon[i]))
    };

    let fault_order = time_order(&t.faults, |f| f.t_ns);
    let swap_order = time_order(&t.swaps, |s| s.t_ns);
    let mut out = Attribution {
        faults: vec![ObjectRef::Unknown; t.faults.len()],
        swaps: vec![ObjectRef::Unknown; t.swaps.len()],
    };
    // Per pid: exact allocations (rule 1) and sampled ones (rule 2).
    type LiveMaps = HashMap<u32, [BTreeMap<u64, Live>; 2]>;
    let mut live: LiveMaps = HashMap::new();
    let (mut fi, mut si) = (0usize, 0usize);
    let find = |live: &LiveMaps, pid: u32, addr: u64, time: u64| -> ObjectRef {
        let m = live.get(&pid);
        if let Some(a) = lookup_live(m.map(|m| &m[0]), addr) {
            return ObjectRef::Allocation(a);
        }
        if let Some(a) = lookup_sampled(m.map(|m| &m[1]), addr, page) {
            return ObjectRef::Allocation(a);
        }
        region_of(pid, addr, time)
    };

    let mut drain = |until: Option<u64>, live: &LiveMaps, fi: &mut usize, si: &mut usize| {
        while let Some(&i) = fault_order.get(*fi) {
            let f = &t.faults[i];
            if until.is_some_and(|u| f.t_ns >= u) {
                break;
            }
            out.faults[i] = find(live, f.pid, f.addr, f.t_ns);
            *fi += 1;
        }
        while let Some(&i) = swap_order.get(*si) {
            let s = &t.swaps[i];
            if until.is_some_and(|u| s.t_ns >= u) {
                break;
            }
            out.swaps[i] = find(live, s.pid, s.vaddr, s.t_ns);
            *si += 1;
        }
    };

    for &(time, what, _, i) in &ctl {
        drain(Some(time), &live, &mut fi, &mut si);
        match what {
            FREE => {
                let a = &t.allocations[i];
                let k = usize::from(a.sampled());
                if let Some(m) = live.get_mut(&a.pid) {
                    if m[k].get(&a.start).is_some_and(|l| l.idx == i) {
                        m[k].remove(&a.start);
                    }
                }
            }
            ALLOC => {
                let a = &t.allocations[i];
                let k = usize::from(a.sampled());
                live.entry(a.pid).or_default()[k].insert(
                    a.start,
                    Live {
                        end: a.start.saturating_add(a.size),
                        idx: i,
                    },
                );
            }
            _ => {
                let p = &t.processes[i];
                if let Some(parent) = live.get(&p.ppid).cloned() {
                    let child = live.entry(p.pid).or_default();
                    for (c, pm) in child.iter_mut().zip(parent) {
                        for (k, v) in pm {
                            c.entry(k).or_insert(v);
                        }
                    }
                }
            }
        }
    }
    drain(None, &live, &mut fi, &mut si);
    out
}

/// Every site with sampled allocations: samples, estimated bytes
/// allocated, and the estimated live bytes at their peak (one sweep over
/// the samples' allocations and frees in time order; frees first at one
/// instant).
fn sampled_sites(t: &TraceTables, label: &dyn Fn(u32) -> String) -> Vec<SampledSite> {
    let mut points: BTreeMap<u32, Vec<(u64, bool, u64)>> = BTreeMap::new();
    for a in &t.allocations {
        let Some(w) = a.weight else { continue };
        let v = points.entry(a.site_id).or_default();
        v.push((a.t_alloc_ns, true, w));
        if let Some(f) = a.t_free_ns {
            v.push((f.max(a.t_alloc_ns), false, w));
        }
    }
    let mut out: Vec<SampledSite> = points
        .into_iter()
        .map(|(site_id, mut v)| {
            v.sort_unstable();
            let (mut cur, mut peak, mut peak_ns, mut samples, mut total) = (0u64, 0u64, 0, 0, 0);
            for (t_ns, alloc, w) in v {
                if alloc {
                    cur += w;
                    samples += 1;
                    total += w;
                    if cur > peak {
                        peak = cur;
                        peak_ns = t_ns;
                    }
                } else {
                    cur = cur.saturating_sub(w);
                }
            }
            SampledSite {
                site_id,
                label: label(site_id),
                samples,
                est_allocated_bytes: total,
                est_live_bytes: peak,
                peak_ns,
            }
        })
        .collect();
    out.sort_by_key(|s| (std::cmp::Reverse(s.est_live_bytes), s.site_id));
    out
}

// ------------------------------------------------------------- classification

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

fn median(v: &mut [u64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// Classify one object's fault stream: `(t_ns, page index within the
/// object)` in time order. Rules, thresholds and confidence: module docs.
pub fn classify(pages_in_time_order: &[(u64, i64)], opts: &AnalyzeOptions) -> Pattern {
    let n = pages_in_time_order.len();
    let need = opts.min_faults_for_pattern.max(3);
    if n < need {
        return Pattern {
            kind: PatternKind::TooFew,
            confidence: 0.0,
            evidence: format!("{n} faults, fewer than the {need} needed to tell a pattern"),
            backward: false,
        };
    }
    let ev: Cow<[(u64, i64)]> = if is_sorted_by_time(pages_in_time_order, |e| e.0) {
        Cow::Borrowed(pages_in_time_order)
    } else {
        let mut v = pages_in_time_order.to_vec();
        v.sort_by_key(|e| e.0);
        Cow::Owned(v)
    };
    let lo = ev.iter().map(|e| e.1).min().unwrap_or(0);
    let hi = ev.iter().map(|e| e.1).max().unwrap_or(0);
    let span = hi.saturating_sub(lo).saturating_add(1).max(1);
    let max_streams = ((span / PAGES_PER_STREAM) as usize).clamp(MIN_STREAMS, MAX_STREAMS);

    struct Stream {
        last: i64,
        stride: i64,
        used: usize,
        moved: Option<usize>,
    }
    let mut streams: Vec<Stream> = Vec::with_capacity(max_streams);
    let mut kept: Vec<(u64, i64)> = Vec::with_capacity(n);
    let (mut short, mut forward, mut jumps) = (0u64, 0u64, 0u64);
    let mut walkers_hist = [0u64; MAX_STREAMS + 1];
    let mut expected = 0.0f64;
    let mut strides: HashMap<i64, u64> = HashMap::new();
    let window = (2 * SEQ_GAP_PAGES + 1) as f64;

    for (clock, &(t, p)) in ev.iter().enumerate() {
        let chance = (streams.len() as f64 * window / span as f64).min(1.0);
        // 1. a short step of the nearest stream (ties: forward wins)
        let mut best: Option<(usize, i64)> = None;
        for (i, s) in streams.iter().enumerate() {
            let d = p.saturating_sub(s.last);
            // A stream parked on this page long ago is not a repeat: the
            // page is being revisited (the next pass of a sweep).
            if d == 0 && clock - s.used > REPEAT_WINDOW {
                continue;
            }
            if d.unsigned_abs() <= SEQ_GAP_PAGES as u64
                && best.is_none_or(|(_, bd)| {
                    d.unsigned_abs() < bd.unsigned_abs()
                        || (d.unsigned_abs() == bd.unsigned_abs() && d > bd)
                })
            {
                best = Some((i, d));
            }
        }
        if let Some((i, d)) = best {
            streams[i].used = clock;
            if d == 0 {
                continue; // a repeat on the page this walker is at
            }
            if !kept.is_empty() {
                expected += chance;
            }
            kept.push((t, p));
            short += 1;
            forward += u64::from(d > 0);
            streams[i].last = p;
            streams[i].stride = d;
            streams[i].moved = Some(clock);
            let active = streams
                .iter()
                .filter(|s| s.moved.is_some_and(|m| clock - m <= REPEAT_WINDOW))
                .count();
            walkers_hist[active.min(MAX_STREAMS)] += 1;
            continue;
        }
        if !kept.is_empty() {
            expected += chance;
        }
        kept.push((t, p));
        // 2. a stream's stride, repeated
        if let Some(s) = streams
            .iter_mut()
            .find(|s| s.stride != 0 && p.saturating_sub(s.last) == s.stride)
        {
            *strides.entry(s.stride).or_default() += 1;
            s.last = p;
            s.used = clock;
            s.moved = Some(clock);
            continue;
        }
        // 3. a jump: a new stream
        if kept.len() > 1 {
            jumps += 1;
        }
        let tentative = streams
            .iter()
            .map(|s| p.saturating_sub(s.last))
            .min_by_key(|d| d.unsigned_abs())
            .unwrap_or(0);
        let s = Stream {
            last: p,
            stride: tentative,
            used: clock,
            moved: None,
        };
        if streams.len() < max_streams {
            streams.push(s);
        } else if let Some(old) = streams.iter_mut().min_by_key(|s| s.used) {
            *old = s;
        }
    }

    let steps = kept.len().saturating_sub(1) as u64;
    if steps < 2 {
        return Pattern {
            kind: PatternKind::TooFew,
            confidence: 0.0,
            evidence: format!(
                "{n} faults but only {} distinct moves after merging repeats on the same page",
                steps
            ),
            backward: false,
        };
    }
    let stepsf = steps as f64;
    // Walks at once: the 90th percentile over short steps of the streams
    // that moved within the last REPEAT_WINDOW faults.
    let mut acc = 0u64;
    let walkers = walkers_hist
        .iter()
        .position(|&c| {
            acc += c;
            acc * 10 >= short * 9
        })
        .unwrap_or(0);
    let raw_short = short as f64 / stepsf;
    let short_share = if stepsf - expected > 0.5 {
        ((short as f64 - expected) / (stepsf - expected)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (stride_k, stride_n) = strides
        .iter()
        .map(|(&k, &c)| (k, c))
        .max_by_key(|&(k, c)| (c, std::cmp::Reverse(k.unsigned_abs()), k))
        .unwrap_or((0, 0));
    let stride_share = stride_n as f64 / stepsf;
    let passes = count_passes(&kept, lo, span);
    let pass_note = if passes.sweeps >= 2 {
        format!(
            "; {} passes (median {} pages each, {} ns apart)",
            passes.sweeps, passes.pages_per_sweep, passes.period_ns
        )
    } else {
        String::new()
    };

    if stride_share >= PATTERN_SHARE && stride_share > short_share {
        return Pattern {
            kind: PatternKind::Strided {
                stride_pages: stride_k,
            },
            confidence: stride_share,
            evidence: format!(
                "{stride_n} of {steps} steps ({}) move by {stride_k} pages, beyond the \
                 {SEQ_GAP_PAGES}-page readahead window; {jumps} jumps{pass_note}",
                pct(stride_share)
            ),
            backward: stride_k < 0,
        };
    }
    if short_share >= PATTERN_SHARE {
        let backward = forward * 2 < short;
        let dir = if backward { "backward" } else { "forward" };
        let base = format!(
            "{short} of {steps} steps ({} raw, {} beyond chance) move {dir} by at most \
             {SEQ_GAP_PAGES} pages, up to {walkers} walk(s) at once; {jumps} jumps",
            pct(raw_short),
            pct(short_share)
        );
        if passes.sweeps >= 2 {
            return Pattern {
                kind: PatternKind::Sweeps {
                    period_ns: passes.period_ns,
                    pages_per_sweep: passes.pages_per_sweep,
                    sweeps: passes.sweeps,
                },
                confidence: short_share,
                evidence: format!(
                    "{base}; the object is swept {} times: each pass faults a median of {} \
                     pages, passes start a median of {:.3} ms apart",
                    passes.sweeps,
                    passes.pages_per_sweep,
                    passes.period_ns as f64 / 1e6
                ),
                backward,
            };
        }
        return Pattern {
            kind: PatternKind::Sequential,
            confidence: short_share,
            evidence: format!("{base}; one pass over {} pages", passes.pages0),
            backward,
        };
    }
    Pattern {
        kind: PatternKind::Random,
        confidence: 1.0 - short_share.max(stride_share),
        evidence: format!(
            "only {} of steps are short moves beyond chance ({} raw) and the most common \
             stride ({stride_k} pages) covers {}; {} faults over {} distinct pages of a \
             {span}-page span{pass_note}",
            pct(short_share),
            pct(raw_short),
            pct(stride_share),
            kept.len(),
            passes.pages0
        ),
        backward: false,
    }
}

struct Passes {
    sweeps: u64,
    period_ns: u64,
    pages_per_sweep: u64,
    pages0: u64,
}

/// The k-th fault on a page belongs to pass k; see the module docs.
fn count_passes(kept: &[(u64, i64)], lo: i64, span: i64) -> Passes {
    let mut visits: Vec<u64> = Vec::new();
    let mut starts: Vec<u64> = Vec::new();
    let mut extent: Vec<(i64, i64)> = Vec::new();
    let mut bump = |k: u32, t: u64, p: i64| {
        let k = k as usize;
        if k >= visits.len() {
            visits.push(0);
            starts.push(t);
            extent.push((p, p));
        }
        visits[k] += 1;
        extent[k] = (extent[k].0.min(p), extent[k].1.max(p));
    };
    if span as u64 <= (kept.len() as u64).saturating_mul(4).max(1 << 20) {
        let mut seen = vec![0u32; span as usize];
        for &(t, p) in kept {
            let c = &mut seen[(p - lo) as usize];
            bump(*c, t, p);
            *c += 1;
        }
    } else {
        let mut seen: HashMap<i64, u32> = HashMap::new();
        for &(t, p) in kept {
            let c = seen.entry(p).or_default();
            bump(*c, t, p);
            *c += 1;
        }
    }
    let pages0 = visits.first().copied().unwrap_or(0);
    let width = |k: usize| (extent[k].1 - extent[k].0) as f64;
    let sweeps = (0..visits.len())
        .take_while(|&k| {
            let v = visits[k] as f64;
            v >= PASS_SHARE * pages0 as f64
                || (width(k) >= 0.5 * width(0) && v * (2 * SEQ_GAP_PAGES) as f64 >= pages0 as f64)
        })
        .count();
    let mut gaps: Vec<u64> = starts[..sweeps]
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    let mut per: Vec<u64> = visits[..sweeps].to_vec();
    Passes {
        sweeps: sweeps as u64,
        period_ns: median(&mut gaps),
        pages_per_sweep: median(&mut per),
        pages0,
    }
}

// ------------------------------------------------------------------- analysis

#[derive(Default)]
struct Acc {
    faults: u64,
    major: u64,
    minor: u64,
    swap_ins: u64,
    swap_outs: u64,
    first: Option<u64>,
    last: Option<u64>,
    out_first: Option<u64>,
    out_last: Option<u64>,
    pages: Vec<(u64, i64)>,
    /// Sampled objects: the estimated major faults + swap-ins.
    est: f64,
}

fn widen(first: &mut Option<u64>, last: &mut Option<u64>, t: u64) {
    *first = Some(first.map_or(t, |f| f.min(t)));
    *last = Some(last.map_or(t, |l| l.max(t)));
}

fn rank_key(o: &ObjectStats) -> impl Ord {
    (
        std::cmp::Reverse(o.major_faults + o.swap_ins),
        std::cmp::Reverse(o.faults),
        std::cmp::Reverse(o.bytes),
        o.pid,
        o.start,
        o.object,
    )
}

/// Attribute, count, classify and rank (see the module docs).
pub fn analyze(t: &TraceTables, opts: &AnalyzeOptions) -> Analysis {
    let page = if opts.page_size.is_power_of_two() {
        opts.page_size
    } else {
        4096
    };
    let att = attribute_paged(t, page);
    let labels = swaplab_trace::events::distinct_labels(&t.sites);
    let site_label = |id: u32| {
        labels
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("site {id}"))
    };
    let t_start: HashMap<u32, u64> = t.processes.iter().map(|p| (p.pid, p.t_start_ns)).collect();

    let mut totals = Totals {
        allocations: t.allocations.len(),
        processes: t.processes.len(),
        ..Default::default()
    };
    let mut slot_of: HashMap<(ObjectRef, u32), usize> = HashMap::new();
    let mut keys: Vec<(ObjectRef, u32)> = Vec::new();
    let mut accs: Vec<Acc> = Vec::new();
    let mut unattributed = (0u64, 0u64);
    let obj_start = |o: ObjectRef| match o {
        ObjectRef::Allocation(i) => t.allocations[i].start,
        ObjectRef::Region(i) => t.regions[i].start,
        ObjectRef::Unknown => 0,
    };
    let mut slot = |o: ObjectRef, pid: u32, accs: &mut Vec<Acc>| -> usize {
        *slot_of.entry((o, pid)).or_insert_with(|| {
            keys.push((o, pid));
            accs.push(Acc::default());
            accs.len() - 1
        })
    };

    // A sampled object's share of an event on its page, scaled to the
    // bytes it stands for (1 for everything else).
    let share = |o: ObjectRef, addr: u64| -> f64 {
        match o {
            ObjectRef::Allocation(i) => match t.allocations[i].weight {
                Some(w) if t.allocations[i].size > 0 => {
                    let al = &t.allocations[i];
                    let on = bytes_on_page(al.start, al.start.saturating_add(al.size), addr, page);
                    on as f64 / page as f64 * w as f64 / al.size as f64
                }
                _ => 1.0,
            },
            _ => 1.0,
        }
    };
    let mut fault_slot = vec![usize::MAX; t.faults.len()];
    for (i, f) in t.faults.iter().enumerate() {
        totals.faults += 1;
        match f.kind {
            FaultKind::Major => totals.major_faults += 1,
            FaultKind::Minor => totals.minor_faults += 1,
            FaultKind::Unknown => totals.unknown_faults += 1,
        }
        totals.t_end_ns = totals.t_end_ns.max(f.t_ns);
        let o = att.faults[i];
        if o == ObjectRef::Unknown {
            unattributed.0 += 1;
            continue;
        }
        let s = slot(o, f.pid, &mut accs);
        fault_slot[i] = s;
        let a = &mut accs[s];
        a.faults += 1;
        match f.kind {
            FaultKind::Major => {
                a.major += 1;
                a.est += share(o, f.addr);
            }
            FaultKind::Minor => a.minor += 1,
            FaultKind::Unknown => {}
        }
        widen(&mut a.first, &mut a.last, f.t_ns);
        let pg = (f.addr.saturating_sub(obj_start(o)) / page) as i64;
        a.pages.push((f.t_ns, pg));
    }
    let mut swap_slot = vec![usize::MAX; t.swaps.len()];
    for (i, s) in t.swaps.iter().enumerate() {
        match s.dir {
            SwapDir::In => totals.swap_ins += 1,
            SwapDir::Out => totals.swap_outs += 1,
        }
        totals.t_end_ns = totals.t_end_ns.max(s.t_ns);
        let o = att.swaps[i];
        if o == ObjectRef::Unknown {
            unattributed.1 += 1;
            continue;
        }
        let k = slot(o, s.pid, &mut accs);
        swap_slot[i] = k;
        let a = &mut accs[k];
        match s.dir {
            SwapDir::In => {
                a.swap_ins += 1;
                a.est += share(o, s.vaddr);
                widen(&mut a.first, &mut a.last, s.t_ns);
            }
            SwapDir::Out => {
                a.swap_outs += 1;
                widen(&mut a.out_first, &mut a.out_last, s.t_ns);
            }
        }
    }
    for a in &t.allocations {
        totals.t_end_ns = totals
            .t_end_ns
            .max(a.t_alloc_ns)
            .max(a.t_free_ns.unwrap_or(0));
    }
    for p in &t.processes {
        totals.t_end_ns = totals.t_end_ns.max(p.t_start_ns);
    }

    let mut objects: Vec<ObjectStats> = Vec::with_capacity(accs.len());
    for (k, mut a) in accs.into_iter().enumerate() {
        let (o, pid) = keys[k];
        let weight = match o {
            ObjectRef::Allocation(i) => t.allocations[i].weight,
            _ => None,
        };
        let (start, bytes, site_id, label, t_from, t_to) = match o {
            ObjectRef::Allocation(i) => {
                let al = &t.allocations[i];
                let sampled = match al.weight {
                    Some(w) => format!(
                        " (sampled: stands for {})",
                        swaplab_trace::units::format_bytes(w)
                    ),
                    None => String::new(),
                };
                let (from, to) = if al.pid == pid {
                    (al.t_alloc_ns, al.t_free_ns)
                } else {
                    let fork = t_start.get(&pid).copied().unwrap_or(al.t_alloc_ns);
                    (fork.max(al.t_alloc_ns), None)
                };
                (
                    al.start,
                    al.size,
                    Some(al.site_id),
                    format!("{} @{:#x}{sampled}", site_label(al.site_id), al.start),
                    from,
                    to,
                )
            }
            ObjectRef::Region(i) => {
                let r = &t.regions[i];
                let growth = if r.path == "[heap]" {
                    heap_growth(t, i)
                } else {
                    Vec::new()
                };
                let label = match (growth.first(), growth.last()) {
                    (Some(a), Some(b)) if growth.len() > 1 => format!(
                        "{} @{:#x} (grew from {} to {} in {} steps over {:.2} s)",
                        r.path,
                        r.start,
                        swaplab_trace::units::format_bytes(a.1),
                        swaplab_trace::units::format_bytes(b.1),
                        growth.len() - 1,
                        b.0.saturating_sub(a.0) as f64 / 1e9
                    ),
                    _ => format!("{} @{:#x}", r.path, r.start),
                };
                let same = |x: &&swaplab_trace::events::Region| {
                    x.path == "[heap]" && x.pid == r.pid && x.start == r.start
                };
                let from = t.regions.iter().filter(same).map(|x| x.first_seen_ns).min();
                let to = t.regions.iter().filter(same).map(|x| x.last_seen_ns).max();
                (
                    r.start,
                    r.end.saturating_sub(r.start),
                    None,
                    label,
                    from.unwrap_or(r.first_seen_ns),
                    Some(to.unwrap_or(r.last_seen_ns)),
                )
            }
            ObjectRef::Unknown => unreachable!("unknown events are not objects"),
        };
        let mut distinct: Vec<i64> = a.pages.iter().map(|p| p.1).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let pattern = classify(&a.pages, opts);
        a.pages = Vec::new();
        let (first, last) = if a.first.is_some() {
            (a.first, a.last)
        } else {
            (a.out_first, a.out_last)
        };
        objects.push(ObjectStats {
            object: o,
            label,
            pid,
            start,
            bytes,
            site_id,
            faults: a.faults,
            major_faults: a.major,
            minor_faults: a.minor,
            swap_ins: a.swap_ins,
            swap_outs: a.swap_outs,
            first_ns: first,
            last_ns: last,
            pattern,
            pages_touched: distinct.len() as u64,
            t_from_ns: t_from,
            t_to_ns: t_to,
            weight,
            est_major_swap_ins: if weight.is_some() {
                a.est
            } else {
                (a.major + a.swap_ins) as f64
            },
        });
    }
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by_key(|&i| rank_key(&objects[i]));
    let mut new_index = vec![0usize; objects.len()];
    for (rank, &i) in order.iter().enumerate() {
        new_index[i] = rank;
    }
    let mut slots: Vec<Option<ObjectStats>> = objects.into_iter().map(Some).collect();
    let objects: Vec<ObjectStats> = order
        .iter()
        .map(|&i| slots[i].take().expect("each object once"))
        .collect();

    // Sites.
    let mut by_site: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, o) in objects.iter().enumerate() {
        if let (ObjectRef::Allocation(_), Some(s)) = (o.object, o.site_id) {
            by_site.entry(s).or_default().push(i);
        }
    }
    let mut site_stats: Vec<SiteStats> = by_site
        .into_iter()
        .map(|(site_id, idxs)| {
            let mut per_pid: HashMap<u32, usize> = HashMap::new();
            let mut s = SiteStats {
                site_id,
                label: site_label(site_id),
                objects: idxs.len(),
                bytes: 0,
                max_object_bytes: 0,
                max_objects_per_pid: 0,
                faults: 0,
                major_faults: 0,
                pages_touched: 0,
                swap_ins: 0,
                swap_outs: 0,
                first_ns: None,
                last_ns: None,
                pattern: objects[idxs[0]].pattern.clone(),
                top_object: idxs[0],
                sampled: false,
                est_major_swap_ins: 0.0,
                est_live_bytes: 0,
            };
            for &i in &idxs {
                let o = &objects[i];
                *per_pid.entry(o.pid).or_default() += 1;
                s.bytes += o.bytes;
                s.max_object_bytes = s.max_object_bytes.max(o.bytes);
                s.faults += o.faults;
                s.major_faults += o.major_faults;
                s.pages_touched += o.pages_touched;
                s.swap_ins += o.swap_ins;
                s.swap_outs += o.swap_outs;
                s.sampled |= o.weight.is_some();
                s.est_major_swap_ins += o.est_major_swap_ins;
                if let Some(f) = o.first_ns {
                    widen(&mut s.first_ns, &mut s.last_ns, f);
                }
                if let Some(l) = o.last_ns {
                    widen(&mut s.first_ns, &mut s.last_ns, l);
                }
            }
            s.max_objects_per_pid = per_pid.values().copied().max().unwrap_or(0);
            s
        })
        .collect();
    let sampled_sites = sampled_sites(t, &site_label);
    for s in &mut site_stats {
        if let Some(x) = sampled_sites.iter().find(|x| x.site_id == s.site_id) {
            s.est_live_bytes = x.est_live_bytes;
        }
        // The site's top object: the one standing for the most events.
        if s.sampled {
            let mut best = s.top_object;
            for (i, o) in objects.iter().enumerate() {
                if o.site_id == Some(s.site_id)
                    && matches!(o.object, ObjectRef::Allocation(_))
                    && o.est_major_swap_ins > objects[best].est_major_swap_ins
                {
                    best = i;
                }
            }
            s.top_object = best;
            s.pattern = objects[best].pattern.clone();
        }
    }
    site_stats.sort_by_key(|s| {
        (
            std::cmp::Reverse(s.est_major_swap_ins.round() as u64),
            std::cmp::Reverse(s.major_faults + s.swap_ins),
            std::cmp::Reverse(s.faults),
            std::cmp::Reverse(s.bytes),
            s.site_id,
        )
    });

    // Scatter and bands.
    let obj_of = |slot: usize| (slot != usize::MAX).then(|| new_index[slot]);
    let mut scatter: Vec<ScatterPoint> = Vec::new();
    for (i, f) in t.faults.iter().enumerate() {
        if f.kind == FaultKind::Major {
            scatter.push(ScatterPoint {
                t_ns: f.t_ns,
                pid: f.pid,
                vaddr: f.addr,
                kind: "major",
                object: obj_of(fault_slot[i]),
            });
        }
    }
    for (i, s) in t.swaps.iter().enumerate() {
        scatter.push(ScatterPoint {
            t_ns: s.t_ns,
            pid: s.pid,
            vaddr: s.vaddr,
            kind: match s.dir {
                SwapDir::In => "swap_in",
                SwapDir::Out => "swap_out",
            },
            object: obj_of(swap_slot[i]),
        });
    }
    scatter.sort_by_key(|p| (p.t_ns, p.pid, p.vaddr));
    let bands = objects
        .iter()
        .enumerate()
        .map(|(i, o)| Band {
            object: i,
            label: o.label.clone(),
            pid: o.pid,
            start: o.start,
            end: o.start.saturating_add(o.bytes),
            t_from: o.t_from_ns,
            t_to: o.t_to_ns.unwrap_or(totals.t_end_ns).max(o.t_from_ns),
        })
        .collect();

    Analysis {
        objects,
        sites: site_stats,
        sampled_sites,
        unattributed,
        scatter,
        bands,
        totals,
        page_size: page,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swaplab_trace::events::{
        Allocation, FaultEvent, Process, Region, Site, SwapEvent, SwapSource,
    };

    const MIB: u64 = 1 << 20;

    fn fault(t_ns: u64, pid: u32, tid: u32, addr: u64, kind: FaultKind) -> FaultEvent {
        FaultEvent {
            t_ns,
            pid,
            tid,
            addr,
            ip: 0x401000,
            kind,
        }
    }

    fn alloc(pid: u32, start: u64, size: u64, t0: u64, t1: Option<u64>, site: u32) -> Allocation {
        Allocation {
            pid,
            tid: pid,
            start,
            size,
            t_alloc_ns: t0,
            t_free_ns: t1,
            site_id: site,
            func: "malloc".into(),
            weight: None,
        }
    }

    fn region(pid: u32, start: u64, end: u64, path: &str) -> Region {
        Region {
            pid,
            start,
            end,
            perms: "rw-p".into(),
            path: path.into(),
            first_seen_ns: 0,
            last_seen_ns: 1_000_000,
        }
    }

    fn opts() -> AnalyzeOptions {
        AnalyzeOptions::default()
    }

    fn sampled(
        pid: u32,
        start: u64,
        size: u64,
        t0: u64,
        t1: Option<u64>,
        site: u32,
        weight: u64,
    ) -> Allocation {
        Allocation {
            weight: Some(weight),
            ..alloc(pid, start, size, t0, t1, site)
        }
    }

    /// A hand-made log of sampled small allocations on the heap, an exact
    /// one, a fork and a fault list; every attribution and estimate below
    /// is worked out by hand from the rules in the module docs.
    #[test]
    fn sampled_allocations_own_the_pages_they_sit_on() {
        let h = 0x1000_0000u64;
        let maj = FaultKind::Major;
        let t = TraceTables {
            faults: vec![
                // page h: B1 has 1 KiB on it, A1 2 KiB: A1 wins, even at a
                // byte of B1
                fault(10, 10, 10, h + 0x100, maj),
                // page h+1: A1 alone (4 KiB of it)
                fault(11, 10, 10, h + 0x1234, maj),
                // page h+5: no sample sits there: the heap
                fault(12, 10, 10, h + 0x5000, maj),
                // inside the exact 64 KiB allocation
                fault(13, 10, 10, h + 0x8_0010, maj),
                // B2's second page while it lives, then after its free
                fault(40, 10, 10, h + 0x7ff8, maj),
                fault(60, 10, 10, h + 0x7ff8, maj),
                // the child (forked at 30) inherited A1; a minor fault
                fault(70, 11, 11, h + 0x1000, maj),
                fault(71, 10, 10, h + 0x1ff0, FaultKind::Minor),
            ],
            swaps: vec![SwapEvent {
                t_ns: 45,
                pid: 10,
                vaddr: h + 0x6000,
                dir: SwapDir::In,
                swap_type: None,
                swap_offset: None,
                source: SwapSource::Pagemap,
            }],
            regions: vec![
                region(10, h, h + MIB, "[heap]"),
                region(11, h, h + MIB, "[heap]"),
            ],
            allocations: vec![
                // A1: 6 KiB at h+0x800, stands for 48 KiB (weight/size 8)
                sampled(10, h + 0x800, 0x1800, 1, None, 1, 0xc000),
                // B1: 1 KiB at h, stands for 64 KiB
                sampled(10, h, 0x400, 2, None, 2, 0x1_0000),
                // B2: 8 KiB at h+0x6000, stands for 32 KiB (weight/size 4), freed at 50
                sampled(10, h + 0x6000, 0x2000, 3, Some(50), 2, 0x8000),
                // an exact allocation
                alloc(10, h + 0x8_0000, 0x1_0000, 4, None, 3),
            ],
            sites: vec![],
            processes: vec![
                Process {
                    pid: 10,
                    ppid: 0,
                    t_start_ns: 0,
                    comm: "w".into(),
                },
                Process {
                    pid: 11,
                    ppid: 10,
                    t_start_ns: 30,
                    comm: "w".into(),
                },
            ],
        };
        use ObjectRef::*;
        let att = attribute_paged(&t, 4096);
        assert_eq!(
            att.faults,
            vec![
                Allocation(0),
                Allocation(0),
                Region(0),
                Allocation(3),
                Allocation(2),
                Region(0),
                Allocation(0),
                Allocation(0),
            ]
        );
        assert_eq!(att.swaps, vec![Allocation(2)]);

        let a = analyze(&t, &opts());
        // Site 1 (A1): in pid 10, a half page (2 KiB of A1 on page h) + a
        // whole page, × 8 = 12; in the child, one whole page × 8 = 8.
        // Site 2 (B2): one fault on a whole page + one swap-in on a whole
        // page, × 4 = 8. Site 3: one exact major fault.
        let est: Vec<(u32, f64, bool)> = a
            .sites
            .iter()
            .map(|s| (s.site_id, s.est_major_swap_ins, s.sampled))
            .collect();
        assert_eq!(est, vec![(1, 20.0, true), (2, 8.0, true), (3, 1.0, false)]);
        let s1 = &a.sites[0];
        assert_eq!((s1.objects, s1.major_faults, s1.faults), (2, 3, 4));
        assert_eq!(s1.est_live_bytes, 0xc000);
        // B's live bytes peak while B1 and B2 both live: 64 + 32 KiB
        let b = a.sampled_sites.iter().find(|s| s.site_id == 2).unwrap();
        assert_eq!(
            (
                b.samples,
                b.est_live_bytes,
                b.peak_ns,
                b.est_allocated_bytes
            ),
            (2, 0x1_8000, 3, 0x1_8000)
        );
        assert_eq!(a.sampled_sites[0].site_id, 2, "ranked by live bytes");
        // the heap keeps the two faults no sample covers
        let heap = a.objects.iter().find(|o| o.object == Region(0)).unwrap();
        assert_eq!((heap.major_faults, heap.est_major_swap_ins), (2, 2.0));
        // sampled objects are labelled as such
        assert!(a
            .objects
            .iter()
            .filter(|o| o.weight.is_some())
            .all(|o| o.label.contains("(sampled: stands for")));
    }

    #[test]
    fn bytes_on_a_page() {
        assert_eq!(bytes_on_page(0x800, 0x2000, 0x100, 4096), 0x800);
        assert_eq!(bytes_on_page(0x800, 0x2000, 0x1fff, 4096), 0x1000);
        assert_eq!(bytes_on_page(0x800, 0x2000, 0x2000, 4096), 0);
        assert_eq!(bytes_on_page(0x1100, 0x1200, 0x1000, 4096), 0x100);
    }

    #[test]
    fn the_heap_is_one_region_with_its_growth() {
        // brk grew the heap twice: three maps rows with one start
        let h = 0x5555_0000u64;
        let snap = |end: u64, t0: u64, t1: u64| Region {
            first_seen_ns: t0,
            last_seen_ns: t1,
            ..region(10, h, end, "[heap]")
        };
        let t = TraceTables {
            faults: vec![
                fault(100, 10, 10, h + 4096, FaultKind::Minor),
                fault(2_000, 10, 10, h + MIB + 4096, FaultKind::Major),
                fault(3_000, 10, 10, h + 3 * MIB, FaultKind::Major),
            ],
            regions: vec![
                snap(h + MIB, 0, 1_000),
                snap(h + 2 * MIB, 1_000, 2_500),
                snap(h + 4 * MIB, 2_500, 5_000),
                region(10, 0x7000_0000, 0x7010_0000, "[anon]"),
            ],
            ..Default::default()
        };
        let att = attribute(&t);
        assert_eq!(att.faults, vec![ObjectRef::Region(2); 3]);
        assert_eq!(
            heap_growth(&t, 0),
            vec![(0, MIB), (1_000, 2 * MIB), (2_500, 4 * MIB)]
        );
        let an = analyze(&t, &opts());
        let heap: Vec<_> = an
            .objects
            .iter()
            .filter(|o| o.label.starts_with("[heap]"))
            .collect();
        assert_eq!(heap.len(), 1, "{:#?}", an.objects);
        assert_eq!(
            (heap[0].faults, heap[0].major_faults, heap[0].bytes),
            (3, 2, 4 * MIB)
        );
        assert_eq!((heap[0].t_from_ns, heap[0].t_to_ns), (0, Some(5_000)));
        assert!(
            heap[0].label.contains("grew from 1M to 4M in 2 steps"),
            "{}",
            heap[0].label
        );
    }

    #[test]
    fn attribution_follows_time_fork_threads_and_regions() {
        let a_start = 0x10000;
        let t = TraceTables {
            faults: vec![
                fault(100, 10, 10, a_start + 5, FaultKind::Minor), // A
                fault(499, 10, 11, a_start + MIB - 1, FaultKind::Major), // A, a thread
                fault(500, 10, 10, a_start + 4096, FaultKind::Minor), // B (A freed at 500)
                fault(600, 20, 20, a_start + 8192, FaultKind::Major), // child: A (live at fork 300)
                fault(700, 10, 10, 0x7000_0000, FaultKind::Minor), // region
                fault(800, 10, 10, 0x9999_0000, FaultKind::Minor), // nothing
                fault(900, 30, 30, a_start, FaultKind::Minor),     // pid without anything
            ],
            swaps: vec![SwapEvent {
                t_ns: 450,
                pid: 10,
                vaddr: a_start + 2 * 4096,
                dir: SwapDir::Out,
                swap_type: Some(0),
                swap_offset: Some(7),
                source: SwapSource::Pagemap,
            }],
            regions: vec![
                region(10, 0x7000_0000, 0x7010_0000, "[anon]"),
                region(10, a_start, a_start + 2 * MIB, "[heap]"),
            ],
            allocations: vec![
                alloc(10, a_start, MIB, 0, Some(500), 1),
                alloc(10, a_start, MIB, 500, None, 2),
            ],
            sites: vec![],
            processes: vec![
                Process {
                    pid: 10,
                    ppid: 0,
                    t_start_ns: 0,
                    comm: "w".into(),
                },
                Process {
                    pid: 20,
                    ppid: 10,
                    t_start_ns: 300,
                    comm: "w".into(),
                },
            ],
        };
        let att = attribute(&t);
        use ObjectRef::*;
        assert_eq!(
            att.faults,
            vec![
                Allocation(0),
                Allocation(0),
                Allocation(1),
                Allocation(0),
                Region(0),
                Unknown,
                Unknown
            ]
        );
        assert_eq!(att.swaps, vec![Allocation(0)]);

        let an = analyze(&t, &opts());
        assert_eq!(an.unattributed, (2, 0));
        // The child's copy of A is its own object.
        let child: Vec<_> = an.objects.iter().filter(|o| o.pid == 20).collect();
        assert_eq!(child.len(), 1);
        assert_eq!(child[0].object, Allocation(0));
        assert_eq!(child[0].t_from_ns, 300);
        // Ranked by majors + swap-ins: the child's A (1 major) and the
        // parent's A (1 major) before B.
        assert!(an.objects[0].major_faults >= 1);
        let parent_a = an
            .objects
            .iter()
            .find(|o| o.pid == 10 && o.object == Allocation(0))
            .unwrap();
        assert_eq!((parent_a.faults, parent_a.swap_outs), (2, 1));
        assert_eq!(an.bands.len(), an.objects.len());
        assert_eq!(an.scatter.len(), 3); // 2 majors + 1 swap-out
    }

    #[test]
    fn a_fork_copies_only_what_is_live_then_and_the_child_replaces_it() {
        let t = TraceTables {
            faults: vec![
                fault(50, 20, 20, 0x20000, FaultKind::Minor), // parent's C, allocated after fork
                fault(60, 20, 20, 0x10000, FaultKind::Minor), // inherited A
                fault(80, 20, 20, 0x10000, FaultKind::Minor), // child's own D at A's start
                fault(90, 10, 10, 0x10000, FaultKind::Minor), // parent still A
            ],
            allocations: vec![
                alloc(10, 0x10000, 4096, 0, None, 1),     // A
                alloc(10, 0x20000, 4096, 40, None, 1),    // C after fork
                alloc(20, 0x10000, 4096, 70, None, 2),    // D in child
                alloc(10, 0x30000, 4096, 0, Some(20), 1), // freed before fork
            ],
            processes: vec![Process {
                pid: 20,
                ppid: 10,
                t_start_ns: 30,
                comm: String::new(),
            }],
            ..Default::default()
        };
        use ObjectRef::*;
        assert_eq!(
            attribute(&t).faults,
            vec![Unknown, Allocation(0), Allocation(2), Allocation(0)]
        );
    }

    #[test]
    fn attribution_is_fast() {
        // 10 k allocations of 64 KiB in 2 pids, reused over time; 1 M events.
        let mut t = TraceTables::default();
        let mut x: u64 = 12345;
        for i in 0..10_000u64 {
            let slot = i % 2_500;
            let gen = i / 2_500;
            t.allocations.push(alloc(
                1 + (slot % 2) as u32,
                0x1000_0000 + slot * 0x10000,
                0x10000,
                gen * 1_000_000,
                Some((gen + 1) * 1_000_000),
                (slot % 50) as u32,
            ));
        }
        for i in 0..1_000_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let slot = (x >> 33) % 2_500;
            t.faults.push(fault(
                i * 4,
                1 + (slot % 2) as u32,
                7,
                0x1000_0000 + slot * 0x10000 + (x & 0xffff),
                FaultKind::Minor,
            ));
        }
        let t0 = std::time::Instant::now();
        let att = attribute(&t);
        let el = t0.elapsed();
        eprintln!("attribute: 1 M events × 10 k allocations in {el:?}");
        for (i, o) in att.faults.iter().enumerate().step_by(9973) {
            let f = &t.faults[i];
            let slot = (f.addr - 0x1000_0000) / 0x10000;
            let gen = f.t_ns / 1_000_000;
            assert_eq!(*o, ObjectRef::Allocation((gen * 2_500 + slot) as usize));
        }
        // A quadratic scan would take minutes; this bound only catches that.
        assert!(el.as_secs() < 20);
        let t0 = std::time::Instant::now();
        let an = analyze(&t, &AnalyzeOptions::default());
        eprintln!("analyze: {:?}", t0.elapsed());
        assert_eq!(an.objects.len(), 10_000);
        assert_eq!(an.unattributed, (0, 0));
    }

    fn sweep(pages: i64, passes: usize, dt: u64) -> Vec<(u64, i64)> {
        let mut v = Vec::new();
        let mut t = 0;
        for _ in 0..passes {
            for p in 0..pages {
                v.push((t, p));
                t += dt;
            }
        }
        v
    }

    #[test]
    fn a_sweep_is_sequential() {
        let p = classify(&sweep(4096, 1, 1000), &opts());
        assert_eq!(p.kind, PatternKind::Sequential, "{p:?}");
        assert!(p.confidence > 0.9, "{p:?}");
        // Backward too.
        let back: Vec<_> = (0..4096).map(|i| (i as u64, 4095 - i)).collect();
        assert_eq!(classify(&back, &opts()).kind, PatternKind::Sequential);
    }

    #[test]
    fn a_sweep_with_readahead_is_sequential() {
        // Majors every 8th page, swap-cache minors in between, the minors
        // faster; plus a read-then-write repeat on some pages.
        let mut v = Vec::new();
        let mut t = 0;
        for p in 0..4096i64 {
            t += if p % 8 == 0 { 60_000 } else { 1_200 };
            v.push((t, p));
            if p % 5 == 0 {
                v.push((t + 10, p));
            }
        }
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Sequential, "{p:?}");
        assert!(p.confidence > 0.9, "{p:?}");
        // Only the majors recorded: steps of 8 are still sequential.
        let majors: Vec<_> = v.iter().copied().filter(|e| e.1 % 8 == 0).collect();
        let p = classify(&majors, &opts());
        assert_eq!(p.kind, PatternKind::Sequential, "{p:?}");
    }

    #[test]
    fn interleaved_threads_are_sequential() {
        // 4 threads, each its own quarter, interleaved irregularly.
        let mut cur = [0i64, 1024, 2048, 3072];
        let mut v = Vec::new();
        let mut x: u64 = 99;
        let mut t = 0;
        while cur
            .iter()
            .enumerate()
            .any(|(i, &c)| c < 1024 * (i as i64 + 1))
        {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let th = ((x >> 40) % 4) as usize;
            if cur[th] < 1024 * (th as i64 + 1) {
                v.push((t, cur[th]));
                cur[th] += 1;
                t += 500;
            }
        }
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Sequential, "{p:?}");
        assert!(p.confidence > 0.9, "{p:?}");
        assert!(p.evidence.contains("up to 4 walk(s) at once"), "{p:?}");
        // And three passes of it are sweeps.
        let mut three = v.clone();
        for k in 1..3u64 {
            three.extend(v.iter().map(|&(t, p)| (t + k * 10_000_000, p)));
        }
        let p = classify(&three, &opts());
        assert!(
            matches!(p.kind, PatternKind::Sweeps { sweeps: 3, .. }),
            "{p:?}"
        );
    }

    #[test]
    fn three_passes_are_sweeps() {
        let p = classify(&sweep(4096, 3, 1000), &opts());
        assert_eq!(
            p.kind,
            PatternKind::Sweeps {
                period_ns: 4096 * 1000,
                pages_per_sweep: 4096,
                sweeps: 3
            },
            "{p:?}"
        );
        assert!(p.confidence > 0.9);
        assert!(p.evidence.contains("up to 1 walk(s) at once"), "{p:?}");
        // Later passes recorded only as the major fault of each readahead
        // block are passes too.
        let v: Vec<_> = sweep(4096, 3, 1000)
            .into_iter()
            .enumerate()
            .filter(|&(i, (_, p))| i < 4096 || p % 8 == 0)
            .map(|(_, e)| e)
            .collect();
        let p = classify(&v, &opts());
        assert!(
            matches!(
                p.kind,
                PatternKind::Sweeps {
                    sweeps: 3,
                    period_ns: 4_096_000,
                    ..
                }
            ),
            "{p:?}"
        );
        // Re-touching a few pages is not a second sweep.
        let mut v = sweep(4096, 1, 1000);
        v.extend((0..200).map(|i| (5_000_000 + i, 100 + i as i64)));
        assert_eq!(classify(&v, &opts()).kind, PatternKind::Sequential);
    }

    #[test]
    fn a_stride_is_strided() {
        let v: Vec<_> = (0..2048).map(|i| (i as u64 * 100, i * 16)).collect();
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Strided { stride_pages: 16 }, "{p:?}");
        assert!(p.confidence > 0.9);
        // Two interleaved strided walkers.
        let v: Vec<_> = (0..2048)
            .map(|i| (i as u64 * 100, (i % 2) * 100_000 + (i / 2) * 16))
            .collect();
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Strided { stride_pages: 16 }, "{p:?}");
    }

    fn lcg(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *x >> 33
    }

    #[test]
    fn random_walks_are_random() {
        // A random permutation of 4096 pages.
        let mut perm: Vec<i64> = (0..4096).collect();
        let mut x = 7;
        for i in (1..perm.len()).rev() {
            let j = (lcg(&mut x) % (i as u64 + 1)) as usize;
            perm.swap(i, j);
        }
        let v: Vec<_> = perm
            .iter()
            .enumerate()
            .map(|(i, &p)| (i as u64, p))
            .collect();
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Random, "{p:?}");
        assert!(p.confidence > 0.8, "{p:?}");
        // Hash-table probes over a small table: 20 k probes into 1024 pages,
        // a fifth of them continuing into the next page (linear probing).
        let mut v = Vec::new();
        for i in 0..20_000u64 {
            let b = (lcg(&mut x) % 1024) as i64;
            v.push((i * 10, b));
            if lcg(&mut x).is_multiple_of(5) {
                v.push((i * 10 + 1, (b + 1) % 1024));
            }
        }
        let p = classify(&v, &opts());
        assert_eq!(p.kind, PatternKind::Random, "{p:?}");
    }

    #[test]
    fn few_faults_are_too_few() {
        let p = classify(&sweep(10, 1, 1), &opts());
        assert_eq!(p.kind, PatternKind::TooFew);
        // Repeats on one page only.
        let v: Vec<_> = (0..100).map(|i| (i, 5)).collect();
        assert_eq!(classify(&v, &opts()).kind, PatternKind::TooFew);
    }

    #[test]
    fn analyze_ranks_and_classifies_objects() {
        // Site 1: a 16 MiB object swept 3 times with majors after the first
        // pass; site 2: a small object touched a little.
        let start = 0x4000_0000u64;
        let mut t = TraceTables {
            allocations: vec![
                alloc(1, start, 16 * MIB, 0, None, 1),
                alloc(1, 0x9000_0000, MIB, 0, None, 2),
            ],
            sites: vec![
                Site {
                    site_id: 1,
                    frames: vec!["w!xmalloc+0x2a".into(), "w!run_traverse+0x5c".into()],
                    locations: vec![String::new(), "traverse.c:64".into()],
                },
                Site {
                    site_id: 2,
                    frames: vec!["w!setup+0x10".into()],
                    locations: vec![String::new()],
                },
            ],
            ..Default::default()
        };
        let mut tt = 0;
        for pass in 0..3 {
            for p in 0..4096u64 {
                tt += 1000;
                let kind = if pass == 0 {
                    FaultKind::Minor
                } else {
                    FaultKind::Major
                };
                t.faults.push(fault(tt, 1, 2, start + p * 4096 + 8, kind));
            }
        }
        for p in 0..10u64 {
            tt += 1000;
            t.faults
                .push(fault(tt, 1, 1, 0x9000_0000 + p * 4096, FaultKind::Minor));
        }
        let an = analyze(&t, &opts());
        assert_eq!(an.objects.len(), 2);
        let o = &an.objects[0];
        assert_eq!(o.site_id, Some(1));
        assert_eq!(
            (o.faults, o.major_faults, o.pages_touched),
            (12288, 8192, 4096)
        );
        assert!(o.label.starts_with("w!run_traverse+0x5c (traverse.c:64)"));
        assert!(matches!(
            o.pattern.kind,
            PatternKind::Sweeps { sweeps: 3, .. }
        ));
        assert_eq!(an.sites[0].site_id, 1);
        assert_eq!(an.sites[1].pattern.kind, PatternKind::TooFew);
        assert_eq!(an.totals.major_faults, 8192);
        assert_eq!(an.scatter.len(), 8192);
        assert!(an.scatter.iter().all(|p| p.object == Some(0)));
        serde_json::to_string(&an).unwrap();
    }
}
