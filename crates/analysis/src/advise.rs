//! `swaplab advise`: turn an [`Analysis`] into per-site memory advice that
//! `swaplab run --hints` can apply (see [`crate::hints`]).
//!
//! Advice is keyed by the allocation site's frames (`module!sym+0xOFF`,
//! innermost first), never by addresses, so it stays valid across runs of the
//! same binaries. One site can get several pieces of advice (mlock part of it
//! and prefetch the rest). Rules, in order, per site (its numbers are the sum
//! over its objects, its pattern that of its top-ranked object):
//!
//! 1. **`cold` / `pageout`** — touched once, then idle: the site's last access
//!    is at least half the run before the end of its objects' lives (free or
//!    end of run), its faults are at most 10 % more than the pages it touched
//!    (no second pass) and at most 10 % of those pages came back from swap.
//!    `delay` = the observed active time (allocation to last access): apply
//!    the advice that long after the allocation. `pageout` when a memory limit
//!    is known and the run was under pressure (swap-outs or major faults
//!    anywhere), so the memory is handed back at once; `cold` otherwise (a
//!    cheap hint: the kernel reclaims these pages first when it needs to).
//! 2. Sites with fewer than [`MIN_SWAP_FAULTS`] swap-ins (major faults or
//!    swap-in events, whichever is larger) get no further advice.
//! 3. **`mlock`** — a hot, repeatedly swapped object: at least as many swap-ins
//!    as pages touched (each page came back at least once). Under an LRU-like
//!    kernel every page of an object swept in a loop that does not fit in
//!    memory faults on every pass; locking a fraction `f` of it keeps those
//!    pages resident and removes about `f` of its major faults
//!    (`expected_fault_reduction = f`), while the rest of the process has
//!    that much less memory. The budget is `fraction × limit` (fraction
//!    clamped to 0..=0.9; default 0.5) per process: candidates are served by
//!    swap-ins per byte, each object gets `min(size, remaining / objects of
//!    the site live in one pid)`, page-aligned, and the total of all mlock
//!    advice never exceeds the budget (locking more than the limit gets the
//!    process OOM-killed; locking close to it starves everything else).
//!    Shares under 64 pages are not worth a hint. **Without a known limit no
//!    mlock is advised** (the peak alone does not say how much memory the
//!    process will be given): the reason goes into the evidence.
//!    Random objects are only locked whole (see 5).
//! 4. **`willneed`** — a Sequential, Strided or Sweeps object that swaps:
//!    MADV_WILLNEED ahead of the walk starts asynchronous swap-in (measured: a
//!    sequential pass after it had 9 major faults instead of 8 000). The
//!    window is `min(8 MiB, limit / 8, object)`, page-aligned: enough to hide
//!    swap latency (8 MiB is about 25 ms of a swapfile's sequential read)
//!    without evicting what the walk still needs. Expected: 90 % of the
//!    remaining (unlocked) major faults become swap-cache hits for walks, 50 %
//!    for strides (the window also reads the pages the stride skips).
//! 5. **`Nothing`** for Random objects that swap and cannot be locked whole:
//!    with uniformly random access the kernel's LRU already keeps about
//!    `memory / size` of the object resident; locking part of it does not
//!    raise that share, and nothing can be prefetched. Only more memory or a
//!    more local data structure helps.
//!
//! 0. **Sites of sampled small objects** (below the preload library's
//!    threshold, seen through `trace --heap-sample`) get no hint, only
//!    `Nothing` with the reason and their estimated share, when they swap
//!    (estimated major faults + swap-ins at least [`MIN_SWAP_FAULTS`]): a
//!    hint is matched to an allocation by its call stack, and taking the
//!    stack of every small allocation costs a backtrace per malloc (1–5 µs,
//!    the cost sampling exists to avoid); the objects share pages with
//!    other sites' objects, so locking or prefetching "a site's pages"
//!    means thousands of page-rounded calls that also pin or read their
//!    neighbours. What helps a heap of small objects is memory (the
//!    verdict says how much) or a program-side change (a separate arena per
//!    hot site); the evidence names the site and its estimated live bytes.
//!
//! There is deliberately no MADV_SEQUENTIAL or MADV_RANDOM action: for
//! anonymous memory they do not change swap readahead on current kernels
//! (measured), so advising them would promise an effect that does not come.
//! The expected reductions are of the site's own major faults and are not
//! additive across advice (willneed's applies to what mlock leaves).

use crate::analyze::{Analysis, PatternKind, SiteStats};
use serde::Serialize;
use swaplab_trace::events::{is_wrapper_frame, TraceTables};
use swaplab_trace::units::format_bytes;

/// Sites with fewer swap-ins get no mlock or willneed advice.
pub const MIN_SWAP_FAULTS: u64 = 16;
/// The prefetch window cap.
pub const WILLNEED_WINDOW_MAX: u64 = 8 << 20;
/// mlock shares smaller than this many pages are not advised.
const MIN_MLOCK_PAGES: u64 = 64;
/// The budget fraction is clamped to this.
const MAX_BUDGET_FRACTION: f64 = 0.9;

/// What is known about the memory the program will run in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdviseContext {
    /// The memory limit of the run (cgroup limit).
    pub limit_bytes: Option<u64>,
    /// The peak memory use seen.
    pub peak_bytes: Option<u64>,
    /// Share of the limit that all mlock advice together may use.
    pub mlock_budget_fraction: f64,
    /// `vm.page-cluster` of the machine (swap readahead = 2^page_cluster pages).
    pub page_cluster: Option<u32>,
    /// Every swap area of the run is synchronous (zram): a swap-in is a
    /// decompression in the faulting task, with no I/O a prefetcher could
    /// overlap (see [`prefetch_advice`]).
    pub synchronous_swap: bool,
    /// The kernel's swap readahead of the run, `cluster` or `vma` (the
    /// predictions of [`crate::predict`] model it; default `cluster`).
    pub readahead: Option<String>,
}

impl Default for AdviseContext {
    fn default() -> Self {
        AdviseContext {
            limit_bytes: None,
            peak_bytes: None,
            mlock_budget_fraction: 0.5,
            page_cluster: None,
            synchronous_swap: false,
            readahead: None,
        }
    }
}

impl AdviseContext {
    /// What a trace's metadata says of the run it came from: its limit,
    /// page-cluster and whether its swap was synchronous (zram).
    pub fn of_trace(meta: &swaplab_trace::trace_dir::TraceMetaFile) -> Self {
        AdviseContext {
            limit_bytes: meta.run_limit_bytes(),
            page_cluster: meta.run_page_cluster(),
            synchronous_swap: meta.run_swap_synchronous(),
            ..Default::default()
        }
    }

    /// The total bytes all mlock advice may lock: `fraction × limit`, with the
    /// fraction clamped to 0..=0.9; `None` without a limit.
    pub fn mlock_budget(&self) -> Option<u64> {
        let f = if self.mlock_budget_fraction.is_finite() {
            self.mlock_budget_fraction.clamp(0.0, MAX_BUDGET_FRACTION)
        } else {
            0.0
        };
        self.limit_bytes.map(|l| (l as f64 * f) as u64)
    }
}

/// What to do with a site's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    /// mlock this many bytes from the object's start, in total over every
    /// object of the site in one process (the preload library holds it).
    Mlock {
        /// Bytes, in total per process.
        bytes: u64,
    },
    /// MADV_WILLNEED this far ahead of the walk, in steps of `chunk_bytes`.
    Willneed {
        /// Prefetch distance: how far ahead of the program's touch frontier.
        window_bytes: u64,
        /// Bytes released per step (0 = half the distance).
        chunk_bytes: u64,
    },
    /// MADV_COLD this long after the allocation.
    Cold {
        /// Delay after the allocation.
        delay_ns: u64,
    },
    /// MADV_PAGEOUT this long after the allocation.
    Pageout {
        /// Delay after the allocation.
        delay_ns: u64,
    },
    /// Nothing helps (the evidence says why).
    Nothing,
}

impl std::fmt::Display for Action {
    /// `mlock 16 MiB`, `willneed 4 MiB ahead`, `cold after 0.50 s`, …
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |ns: u64| ns as f64 / 1e9;
        match *self {
            Action::Mlock { bytes } => write!(f, "mlock {}", format_bytes(bytes)),
            Action::Willneed {
                window_bytes,
                chunk_bytes,
            } => {
                write!(f, "willneed {} ahead", format_bytes(window_bytes))?;
                if chunk_bytes > 0 {
                    write!(f, " in {} chunks", format_bytes(chunk_bytes))?;
                }
                Ok(())
            }
            Action::Cold { delay_ns } => write!(f, "cold after {:.2} s", s(delay_ns)),
            Action::Pageout { delay_ns } => write!(f, "pageout after {:.2} s", s(delay_ns)),
            Action::Nothing => f.write_str("nothing"),
        }
    }
}

/// One piece of advice for one allocation site.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// The site.
    pub site_id: u32,
    /// Its frames, innermost first (the key that survives across runs).
    pub site_frames: Vec<String>,
    /// `file:line` of the labelled frame, for people.
    pub location: String,
    /// What to do.
    pub action: Action,
    /// Why.
    pub evidence: String,
    /// What should change.
    pub expected: String,
    /// Expected share of the site's major faults that go away (0..1).
    pub expected_fault_reduction: f64,
    /// Expected major faults saved in the whole process (the site's swap-ins
    /// × the reduction; for cold / pageout, the faults of other sites its
    /// pages could spare). Advice below [`min_gain_faults`] is not emitted.
    pub expected_faults_saved: u64,
    /// What the simulator predicts it does to the whole process
    /// ([`crate::predict::screen`]; `None` before screening).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Prediction>,
}

/// One hint's (or several hints') predicted effect on the whole process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Simulated major faults of the process without the hint.
    pub base_major_faults: u64,
    /// With it (`None`: it cannot run, its locks take all the memory).
    pub hinted_major_faults: Option<u64>,
    /// Pages it locks (taken from the memory of everything else).
    pub locked_pages: u64,
    /// The memory the faulting pages had, pages.
    pub capacity_pages: u64,
    /// Allocations of the trace it applies to.
    pub allocations: u64,
    /// It is a clear gain (see [`crate::predict`]).
    pub clear_gain: bool,
    /// The prediction in words.
    pub summary: String,
}

impl Prediction {
    /// Major faults saved (negative: added); `None` when it cannot run.
    pub fn saved(&self) -> Option<i64> {
        self.hinted_major_faults
            .map(|h| self.base_major_faults as i64 - h as i64)
    }
}

/// Advice must be expected to save at least this share of the process's
/// major faults (swap-ins) to be emitted ...
pub const MIN_GAIN_SHARE: f64 = 0.05;
/// ... and at least this many faults.
pub const MIN_GAIN_FAULTS: u64 = 32;

/// The fewest expected faults saved for advice to be emitted, for a process
/// with `process_swaps` major faults (or swap-ins, whichever is larger):
/// `max(MIN_GAIN_FAULTS, 5 % of them)`. Below it a hint's cost (a thread,
/// syscalls, locked memory the rest of the process lacks) is not repaid.
pub fn min_gain_faults(process_swaps: u64) -> u64 {
    MIN_GAIN_FAULTS.max((process_swaps as f64 * MIN_GAIN_SHARE).ceil() as u64)
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

fn pattern_name(k: &PatternKind) -> String {
    match k {
        PatternKind::Sequential => "sequential".into(),
        PatternKind::Strided { stride_pages } => format!("strided ({stride_pages} pages)"),
        PatternKind::Sweeps { sweeps, .. } => format!("swept {sweeps} times"),
        PatternKind::Random => "random".into(),
        PatternKind::TooFew => "too few faults to tell".into(),
    }
}

fn swap_activity(s: &SiteStats) -> u64 {
    s.major_faults.max(s.swap_ins)
}

/// The faults a prefetch of a walk over `s` can save: its major faults when
/// the trace tells major faults (perf), else its swap-ins. Swap-ins beyond
/// the major faults were the kernel's readahead, already hits.
fn walk_majors(s: &SiteStats, a: &Analysis) -> u64 {
    if a.totals.major_faults > 0 {
        s.major_faults
    } else {
        swap_activity(s)
    }
}

fn location_of(t: &TraceTables, site_id: u32) -> (Vec<String>, String) {
    let Some(site) = t.sites.iter().find(|s| s.site_id == site_id) else {
        return (Vec::new(), String::new());
    };
    let i = site
        .frames
        .iter()
        .position(|f| !is_wrapper_frame(f))
        .unwrap_or(0);
    let loc = site
        .locations
        .get(i)
        .filter(|l| !l.is_empty())
        .or_else(|| site.locations.iter().find(|l| !l.is_empty()))
        .cloned()
        .unwrap_or_default();
    (site.frames.clone(), loc)
}

struct Plan {
    mlock: Option<(u64, String)>,
    mlock_note: Option<String>,
    willneed: bool,
    idle: Option<(u64, u64, u64)>, // (active, idle, delay)
    nothing: Option<String>,
}

/// Advice for the sites of `a` (see the module docs for the rules).
pub fn advise(a: &Analysis, t: &TraceTables, ctx: &AdviseContext) -> Vec<Advice> {
    let page = a.page_size.max(1);
    let end = a.totals.t_end_ns;
    let budget = ctx.mlock_budget();
    let memory = ctx.limit_bytes.or(ctx.peak_bytes);
    let pressure = a.totals.swap_outs > 0 || a.totals.major_faults > 0 || a.totals.swap_ins > 0;
    let readahead = ctx.page_cluster.map(|c| 1u64 << c.min(20));
    let process_swaps = a.totals.major_faults.max(a.totals.swap_ins);

    let mut plans: Vec<Plan> = Vec::with_capacity(a.sites.len());
    // (site index, swap-ins per byte, whole only)
    let mut candidates: Vec<(usize, f64, bool)> = Vec::new();
    for (si, s) in a.sites.iter().enumerate() {
        let mut plan = Plan {
            mlock: None,
            mlock_note: None,
            willneed: false,
            idle: None,
            nothing: None,
        };
        // 0. a site of sampled small objects: no hint (module docs)
        if s.sampled {
            let est = s.est_major_swap_ins.round() as u64;
            if est >= MIN_SWAP_FAULTS {
                plan.nothing = Some(format!(
                    "a site of small objects (below the preload library's threshold, seen \
                     through sampling): an estimated {est} major faults + swap-ins on about {} \
                     of live objects; no hint can target them (matching a hint needs the call \
                     stack of every small allocation, a backtrace per malloc, and the objects \
                     share pages with other sites', so locking or prefetching them pins or \
                     reads their neighbours too); only more memory or keeping this site's \
                     objects together (its own arena) helps",
                    format_bytes(s.est_live_bytes),
                ));
            }
            plans.push(plan);
            continue;
        }
        let objs: Vec<_> = a
            .objects
            .iter()
            .filter(|o| o.site_id == Some(s.site_id))
            .collect();
        let swaps = swap_activity(s);
        // 1. touched once, then idle
        if let (Some(first), Some(last)) = (s.first_ns, s.last_ns) {
            let from = objs.iter().map(|o| o.t_from_ns).min().unwrap_or(first);
            let horizon = objs
                .iter()
                .map(|o| o.t_to_ns.unwrap_or(end).min(end))
                .max()
                .unwrap_or(end);
            let idle = horizon.saturating_sub(last);
            let active = last.saturating_sub(from.min(first));
            if end > 0
                && idle.saturating_mul(2) >= end
                && s.faults > 0
                && s.faults * 10 <= s.pages_touched * 11
                && s.swap_ins.max(s.major_faults) * 10 <= s.pages_touched
                && s.max_object_bytes >= 64 * page
            {
                plan.idle = Some((active, idle, active));
                plans.push(plan);
                continue;
            }
        }
        if swaps < MIN_SWAP_FAULTS {
            plans.push(plan);
            continue;
        }
        let repeated = swaps >= s.pages_touched.max(1);
        let density = swaps as f64 / s.max_object_bytes.max(1) as f64;
        match s.pattern.kind {
            PatternKind::Random => {
                let larger = memory.is_some_and(|m| s.max_object_bytes > m);
                if repeated && !larger {
                    candidates.push((si, density, true));
                }
                plan.nothing = Some(format!(
                    "random access over {}{}: with uniformly random access the kernel's \
                     LRU already keeps about memory/size of it resident, locking part of it \
                     does not raise that share and no prefetch can predict the next page; \
                     only more memory or a more local data structure helps",
                    format_bytes(s.max_object_bytes),
                    match memory {
                        Some(m) if larger => format!(
                            ", larger than the {} {}",
                            format_bytes(m),
                            if ctx.limit_bytes.is_some() {
                                "limit"
                            } else {
                                "peak"
                            }
                        ),
                        _ => String::new(),
                    }
                ));
            }
            PatternKind::Sequential | PatternKind::Strided { .. } | PatternKind::Sweeps { .. } => {
                // the preload library's willneed reads ahead toward higher
                // addresses only
                plan.willneed = !s.pattern.backward;
                if s.pattern.backward {
                    plan.nothing = Some(
                        "the walk goes backward (toward lower addresses) and a willneed hint \
                         reads ahead forward only; the external prefetcher (`swaplab run \
                         --prefetch leap`) follows either direction"
                            .to_string(),
                    );
                }
                if repeated {
                    candidates.push((si, density, false));
                }
            }
            PatternKind::TooFew => {}
        }
        plans.push(plan);
    }

    // mlock: greedy by swap-ins per byte within the budget.
    candidates.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let mut remaining = budget.unwrap_or(0);
    for &(si, _, whole_only) in &candidates {
        let s = &a.sites[si];
        let plan = &mut plans[si];
        let Some(budget) = budget else {
            plan.mlock_note = Some(format!(
                "mlock is not advised: no memory limit is known{} (locking without one can \
                 starve the machine or, under a later limit, get the process OOM-killed); \
                 give the limit to get mlock advice",
                ctx.peak_bytes
                    .map(|p| format!(" (peak was {})", format_bytes(p)))
                    .unwrap_or_default()
            ));
            continue;
        };
        let per_pid = s.max_objects_per_pid.max(1) as u64;
        let size = s.max_object_bytes;
        let share = (remaining / per_pid).min(size) / page * page;
        if whole_only {
            if share >= size && size > 0 {
                plan.nothing = None;
                remaining -= size * per_pid;
                plan.mlock = Some((
                    size,
                    format!(
                        "a hot random object of {} that swaps repeatedly fits the remaining \
                         mlock budget whole",
                        format_bytes(size)
                    ),
                ));
            }
            continue;
        }
        if share < MIN_MLOCK_PAGES * page {
            plan.mlock_note = Some(format!(
                "no mlock: the budget of {} ({:.0} % of the limit) is used by hotter sites",
                format_bytes(budget),
                ctx.mlock_budget_fraction.clamp(0.0, MAX_BUDGET_FRACTION) * 100.0
            ));
            continue;
        }
        remaining -= share * per_pid;
        plan.mlock = Some((
            share,
            format!(
                "{} of its {} ({} per object × {per_pid} object(s) per process) fit the \
                 mlock budget of {}",
                format_bytes(share),
                format_bytes(size),
                format_bytes(share),
                format_bytes(budget)
            ),
        ));
    }

    // Emit, in site rank order.
    let mut out = Vec::new();
    for (si, plan) in plans.into_iter().enumerate() {
        let s = &a.sites[si];
        let (frames, location) = location_of(t, s.site_id);
        let swaps = swap_activity(s);
        let stats = format!(
            "{} object(s), {}; {} faults ({} major), {} swap-in and {} swap-out events, {} \
             pages touched; {} ({})",
            s.objects,
            format_bytes(s.bytes),
            s.faults,
            s.major_faults,
            s.swap_ins,
            s.swap_outs,
            s.pages_touched,
            pattern_name(&s.pattern.kind),
            s.pattern.evidence
        );
        let mk = |action: Action, evidence: String, expected: String, red: f64| {
            let red = red.clamp(0.0, 1.0);
            let saved = match action {
                // the faults of other sites its pages could spare, under pressure
                Action::Cold { .. } | Action::Pageout { .. } if pressure => {
                    (s.bytes / page).min(process_swaps.saturating_sub(swaps))
                }
                Action::Nothing | Action::Cold { .. } | Action::Pageout { .. } => 0,
                // a walk's swap-ins beyond its major faults were read ahead
                // by the kernel already: prefetching saves the faults
                Action::Willneed { .. } => (red * walk_majors(s, a) as f64).round() as u64,
                Action::Mlock { .. } => (red * swaps as f64).round() as u64,
            };
            Advice {
                site_id: s.site_id,
                site_frames: frames.clone(),
                location: location.clone(),
                action,
                evidence,
                expected,
                expected_fault_reduction: red,
                expected_faults_saved: saved,
                prediction: None,
            }
        };
        if let Some((active, idle, delay)) = plan.idle {
            let pageout = ctx.limit_bytes.is_some() && pressure;
            let action = if pageout {
                Action::Pageout { delay_ns: delay }
            } else {
                Action::Cold { delay_ns: delay }
            };
            out.push(mk(
                action,
                format!(
                    "{}: touched once within {} of its allocation, then idle for {} \
                     ({:.0} % of the run) with no fault after the first pass; {stats}",
                    s.label,
                    ms(active),
                    ms(idle),
                    idle as f64 * 100.0 / end.max(1) as f64
                ),
                if pageout {
                    format!(
                        "paging it out {} after the allocation hands up to {} back at once \
                         under the limit: other objects should swap and fault less; its own \
                         faults do not change unless it is touched again (then one major \
                         fault per page)",
                        ms(delay),
                        format_bytes(s.bytes)
                    )
                } else {
                    format!(
                        "marking it cold {} after the allocation makes its {} the first to \
                         be reclaimed when memory runs short, sparing hotter pages; its own \
                         faults do not change unless it is touched again",
                        ms(delay),
                        format_bytes(s.bytes)
                    )
                },
                0.0,
            ));
            continue;
        }
        let mut locked_fraction = 0.0;
        if let Some((bytes, why)) = &plan.mlock {
            let f = (*bytes as f64 / s.max_object_bytes.max(1) as f64).min(1.0);
            locked_fraction = f;
            let larger = memory.is_some_and(|m| s.max_object_bytes > m);
            // the hint's bytes are its total over every object it matches
            let total = *bytes * s.max_objects_per_pid.max(1) as u64;
            out.push(mk(
                Action::Mlock { bytes: total },
                format!(
                    "{}: {swaps} swap-ins for {} pages touched, swapped repeatedly; {why}; {stats}",
                    s.label, s.pages_touched
                ),
                format!(
                    "{}locking {} ({:.0} % of the object) keeps those pages resident, so about \
                     {:.0} % of its {swaps} major faults (~{}) go away; the rest of the process \
                     has {} less memory to work with",
                    if larger && s.pattern.kind != PatternKind::Random {
                        "the object is larger than memory, so under an LRU-like kernel every \
                         page faults on each pass; "
                    } else {
                        ""
                    },
                    format_bytes(*bytes),
                    f * 100.0,
                    f * 100.0,
                    (swaps as f64 * f).round() as u64,
                    format_bytes(*bytes * s.max_objects_per_pid.max(1) as u64)
                ),
                f,
            ));
        }
        if plan.willneed {
            let mut window = WILLNEED_WINDOW_MAX.min(s.max_object_bytes.max(page));
            if let Some(l) = ctx.limit_bytes {
                window = window.min(l / 8);
            }
            window = (window / page * page).max(page);
            // chunk: a quarter of the distance keeps the prefetch between
            // 3/4 and 1 distance ahead; a stride gets at least 4 strides a
            // step (fewer, smaller madvise calls would each read mostly
            // pages the walk skips)
            let chunk = match s.pattern.kind {
                PatternKind::Strided { stride_pages } => (window / 4)
                    .max(4 * stride_pages.unsigned_abs() * page)
                    .min(window),
                _ => window / 4,
            };
            let chunk = (chunk / page * page).max(page);
            let (walk, red) = match s.pattern.kind {
                PatternKind::Strided { stride_pages } => (
                    format!(
                        "a stride of {stride_pages} pages: the window also reads the pages it \
                         skips"
                    ),
                    0.5,
                ),
                _ => ("a walk".to_string(), 0.9),
            };
            let red = red * (1.0 - locked_fraction);
            let ra = match readahead {
                Some(1) => " (vm.page-cluster is 0: the kernel reads ahead nothing, so prefetch \
                     matters all the more)"
                    .to_string(),
                Some(p) => format!(" (kernel readahead covers only {p} pages)"),
                None => String::new(),
            };
            let mut evidence = format!(
                "{}: {swaps} swap-ins (major faults or swap-in events) in {walk}{ra}; {stats}",
                s.label
            );
            if let Some(n) = &plan.mlock_note {
                evidence.push_str("; ");
                evidence.push_str(n);
            }
            out.push(mk(
                Action::Willneed {
                    window_bytes: window,
                    chunk_bytes: chunk,
                },
                evidence,
                format!(
                    "MADV_WILLNEED {} ahead of the walk, {} a step, starts asynchronous \
                     swap-in: about {:.0} % of the {}major faults become swap-cache hits (~1 µs \
                     instead of ~60 µs on a swapfile; measured 9 instead of 8 000 on a \
                     sequential pass)",
                    format_bytes(window),
                    format_bytes(chunk),
                    red * 100.0,
                    if locked_fraction > 0.0 {
                        "remaining (unlocked) "
                    } else {
                        ""
                    }
                ),
                red,
            ));
            continue;
        }
        if plan.mlock.is_some() {
            continue;
        }
        let reason = match (plan.nothing, plan.mlock_note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        if let Some(why) = reason {
            out.push(mk(
                Action::Nothing,
                format!("{}: {why}; {stats}", s.label),
                "no change expected from advice".into(),
                0.0,
            ));
        }
    }
    // No hint whose expected gain is about nothing: it becomes `Nothing`
    // with the reason (a hint costs a thread, syscalls or locked memory).
    let floor = min_gain_faults(process_swaps);
    for ad in &mut out {
        if ad.action == Action::Nothing || ad.expected_faults_saved >= floor {
            continue;
        }
        ad.evidence = format!(
            "not emitted: {} would save about {} major faults, below the floor of {floor} (max({MIN_GAIN_FAULTS}, {:.0} % of the process's {process_swaps})); {}",
            ad.action,
            ad.expected_faults_saved,
            MIN_GAIN_SHARE * 100.0,
            ad.evidence
        );
        ad.action = Action::Nothing;
        ad.expected = "no change expected from advice".into();
        ad.expected_fault_reduction = 0.0;
        ad.expected_faults_saved = 0;
    }
    out
}

/// How much more memory would remove a share of the major faults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryStep {
    /// Share of the traced refaults removed (0..1).
    pub share: f64,
    /// Extra memory, bytes.
    pub extra_bytes: u64,
}

/// What advice can do for a run, in one sentence for people, and how much
/// more memory would help instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Pieces of advice that become hints (not `Nothing`).
    pub hints: usize,
    /// The sentence.
    pub summary: String,
    /// From the LRU miss-ratio curve of the traced faults.
    pub memory: Vec<MemoryStep>,
    /// The external prefetcher for walks no hint covers, if it is expected
    /// to pay ([`prefetch_advice`]).
    pub prefetch: Option<PrefetchAdvice>,
}

/// The external prefetcher (`swaplab run --prefetch`) for the walks that no
/// site hint covers: a region (`[heap]`, an anonymous mapping) or a site
/// of sampled small objects swept or walked with a stride. It needs no
/// allocation site, so it reaches what hints cannot; the hint file carries
/// it (`prefetch = "leap"`) and `run --hints` starts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefetchAdvice {
    /// The `--prefetch` spec.
    pub spec: String,
    /// Major faults of those walks (their swap-ins for a trace without
    /// major faults).
    pub walk_faults: u64,
    /// `walk_faults` × [`PREFETCH_EXPECTED_SHARE`].
    pub expected_faults_saved: u64,
    /// The process's major faults (swap-ins for a trace without them).
    pub process_faults: u64,
    /// The walks, for people: `[heap] @0x… (7 sweeps/1.29s (99%)): 39367`.
    pub evidence: String,
}

/// The share of a walk's major faults the external prefetcher is expected
/// to remove: measured 45 % on the sweeps of an in-memory SQLite database's
/// heap (its scans interleave with index lookups) and 99 % on traverse's
/// array (docs/prefetch.md); the lower one, so a suggestion is not
/// oversold. `advise --verify` measures the real gain.
pub const PREFETCH_EXPECTED_SHARE: f64 = 0.45;

/// Whether the external prefetcher should be suggested for `a`, given the
/// hints in `advice`: the objects whose faults form a walk (sequential,
/// strided or repeated sweeps) and whose site gets no willneed hint, when
/// [`PREFETCH_EXPECTED_SHARE`] of their major faults reaches the floor of
/// [`min_gain_faults`]. Never on synchronous swap (zram): there the
/// prefetcher has no I/O to overlap and only moves the decompression to
/// its own thread (traverse on zram ran 60 % slower with it).
pub fn prefetch_advice(
    a: &Analysis,
    ctx: &AdviseContext,
    advice: &[Advice],
) -> Option<PrefetchAdvice> {
    if ctx.synchronous_swap {
        return None;
    }
    let prefetched: std::collections::HashSet<u32> = advice
        .iter()
        .filter(|x| matches!(x.action, Action::Willneed { .. }))
        .map(|x| x.site_id)
        .collect();
    let mut walks: Vec<(&crate::analyze::ObjectStats, u64)> = a
        .objects
        .iter()
        .filter(|o| {
            matches!(
                o.pattern.kind,
                PatternKind::Sequential | PatternKind::Strided { .. } | PatternKind::Sweeps { .. }
            ) && o.site_id.is_none_or(|s| !prefetched.contains(&s))
        })
        .map(|o| {
            let n = if a.totals.major_faults > 0 {
                o.major_faults
            } else {
                o.major_faults.max(o.swap_ins)
            };
            (o, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    walks.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let walk_faults: u64 = walks.iter().map(|(_, n)| n).sum();
    let expected = (walk_faults as f64 * PREFETCH_EXPECTED_SHARE) as u64;
    // major faults are what prefetching saves (swap-ins beyond them were
    // the kernel's readahead); a trace without them counts swap-ins
    let process_faults = if a.totals.major_faults > 0 {
        a.totals.major_faults
    } else {
        a.totals.swap_ins
    };
    if walk_faults == 0 || expected < min_gain_faults(process_faults) {
        return None;
    }
    let mut parts: Vec<String> = walks
        .iter()
        .take(3)
        .map(|(o, n)| format!("{} ({}): {n}", o.label, o.pattern.short()))
        .collect();
    if walks.len() > 3 {
        parts.push(format!("{} more", walks.len() - 3));
    }
    Some(PrefetchAdvice {
        spec: "leap".into(),
        walk_faults,
        expected_faults_saved: expected,
        process_faults,
        evidence: format!(
            "{walk_faults} of the process's {process_faults} major faults are walks no site hint \
             covers: {}",
            parts.join("; ")
        ),
    })
}

/// The LRU stack-distance curve of the traced fault addresses (pid and page
/// as the key, in time order): a refault at stack distance `d` (`d` distinct
/// pages faulted since that page's last fault) would have stayed resident
/// with about `d` more pages of memory. Steps for removing 50, 90 and 99 %
/// of the refaults; empty without refaults or for a trace too large for the
/// exact curve.
pub fn memory_need(t: &TraceTables, page: u64) -> Vec<MemoryStep> {
    let page = page.max(1);
    if t.faults.is_empty() || t.faults.len() as u64 >= u64::from(u32::MAX - 1) {
        return Vec::new();
    }
    let mut faults: Vec<_> = t.faults.iter().collect();
    faults.sort_by_key(|f| f.t_ns);
    let keys: Vec<u64> = faults
        .iter()
        .map(|f| (u64::from(f.pid) << 44) ^ (f.addr / page))
        .collect();
    let dense = swaplab_trace::dense::DenseTrace::from_pages(&keys);
    let Ok(h) = swaplab_sim::mrc::exact::stack_histogram(&dense) else {
        return Vec::new();
    };
    [50.0, 90.0, 99.0]
        .iter()
        .filter_map(|&p| {
            h.percentile(p).map(|d| MemoryStep {
                share: p / 100.0,
                extra_bytes: d * page,
            })
        })
        .collect()
}

/// The verdict on `advice` for the run of `a` / `t`: how many hints, and
/// when there are none, why (the top sites' reasons) and how much memory
/// would help (from [`memory_need`]).
pub fn verdict(a: &Analysis, t: &TraceTables, ctx: &AdviseContext, advice: &[Advice]) -> Verdict {
    verdict_with(a, t, ctx, advice, prefetch_advice(a, ctx, advice))
}

/// [`verdict`] with the external prefetcher decided by the caller (`None`:
/// none, e.g. when [`crate::predict::screen`] left it out).
pub fn verdict_with(
    a: &Analysis,
    t: &TraceTables,
    ctx: &AdviseContext,
    advice: &[Advice],
    prefetch: Option<PrefetchAdvice>,
) -> Verdict {
    let hints = advice
        .iter()
        .filter(|x| x.action != Action::Nothing)
        .count();
    let memory = memory_need(t, a.page_size);
    let process_swaps = a.totals.major_faults.max(a.totals.swap_ins);
    // What `process_swaps` counts, in words: swap-ins when the kernel's
    // readahead brought in more pages than the program faulted on.
    let counted = if a.totals.swap_ins > a.totals.major_faults {
        format!(
            "{process_swaps} swap-ins ({} of them major faults)",
            a.totals.major_faults
        )
    } else {
        format!("{process_swaps} major faults")
    };
    let more = |m: &[MemoryStep]| -> String {
        let parts: Vec<String> = m
            .iter()
            .filter(|s| s.share < 0.99)
            .map(|s| {
                let of_limit = ctx
                    .limit_bytes
                    .filter(|&l| l > 0)
                    .map(|l| {
                        format!(
                            " ({:.0} % of the limit)",
                            s.extra_bytes as f64 * 100.0 / l as f64
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "+{}{of_limit} removes about {:.0} % of them",
                    format_bytes(s.extra_bytes),
                    s.share * 100.0
                )
            })
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(
                " From the LRU miss-ratio curve of the {} traced faults: {}.",
                t.faults.len(),
                parts.join(", ")
            )
        }
    };
    let prefetch_words = |p: &PrefetchAdvice| {
        format!(
            "the external prefetcher (`--prefetch {}`, which the hint file asks `run --hints` \
             for) is expected to save about {} ({:.0} %): {}",
            p.spec,
            p.expected_faults_saved,
            p.expected_faults_saved as f64 * 100.0 / p.process_faults.max(1) as f64,
            p.evidence
        )
    };
    let summary = if process_swaps == 0 {
        "no hint: the run had no major faults or swap-ins, so there is nothing for advice to save"
            .to_string()
    } else if let (0, Some(p)) = (hints, &prefetch) {
        format!(
            "no site hint will help, but {}; `swaplab advise` as root measures it unless given --no-verify.{}",
            prefetch_words(p),
            more(&memory)
        )
    } else if hints > 0 {
        let saved: u64 = advice
            .iter()
            .map(|x| x.expected_faults_saved)
            .max()
            .unwrap_or(0);
        let also = prefetch
            .as_ref()
            .map(|p| format!("; and {}", prefetch_words(p)))
            .unwrap_or_default();
        format!(
            "{hints} hint(s); the best is expected to save about {saved} of the process's {counted} ({:.0} %){also}; `swaplab advise` as root measures them (base against hinted) unless given --no-verify",
            saved as f64 * 100.0 / process_swaps as f64
        )
    } else {
        let attributed: u64 = a.sites.iter().map(swap_activity).sum();
        let why = advice
            .iter()
            .find(|x| x.action == Action::Nothing)
            .map(|x| {
                x.evidence
                    .split("; ")
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_else(|| {
                format!(
                    "{} of the {counted} fall in no allocation site with a pattern a hint can use",
                    process_swaps.saturating_sub(attributed)
                )
            });
        format!(
            "no hint will help: {why}. Only more memory (or a more local data structure) reduces the {counted}.{}",
            more(&memory)
        )
    };
    Verdict {
        hints,
        summary,
        memory,
        prefetch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{analyze, AnalyzeOptions};
    use swaplab_trace::events::{Allocation, FaultEvent, FaultKind, Site};

    const MIB: u64 = 1 << 20;
    const PAGE: u64 = 4096;

    struct Builder {
        t: TraceTables,
    }

    impl Builder {
        fn new() -> Self {
            Builder {
                t: TraceTables::default(),
            }
        }
        fn object(&mut self, site: u32, start: u64, bytes: u64) {
            self.t.allocations.push(Allocation {
                pid: 1,
                tid: 1,
                start,
                size: bytes,
                t_alloc_ns: 0,
                t_free_ns: None,
                site_id: site,
                func: "malloc".into(),
                weight: None,
            });
            self.t.sites.push(Site {
                site_id: site,
                frames: vec![
                    "w!xmalloc+0x2a".into(),
                    format!("w!user{site}+0x{:x}", 0x10 * site),
                ],
                locations: vec![String::new(), format!("w.c:{site}")],
            });
        }
        fn touch(&mut self, t: u64, addr: u64, kind: FaultKind) {
            self.t.faults.push(FaultEvent {
                t_ns: t,
                pid: 1,
                tid: 1,
                addr,
                ip: 0,
                kind,
            });
        }
        /// `passes` sweeps over the object, majors after the first; starts at t0.
        fn sweeps(&mut self, start: u64, bytes: u64, passes: u64, t0: u64, dt: u64) -> u64 {
            let mut t = t0;
            for pass in 0..passes {
                for p in 0..bytes / PAGE {
                    t += dt;
                    let k = if pass == 0 {
                        FaultKind::Minor
                    } else {
                        FaultKind::Major
                    };
                    self.touch(t, start + p * PAGE, k);
                }
            }
            t
        }
        /// `n` major faults at random pages of `start..start+bytes`, at
        /// `t0 + i·dt` (an LCG from `seed`).
        fn random_majors(&mut self, start: u64, bytes: u64, n: u64, t0: u64, dt: u64, seed: u64) {
            let mut x = seed;
            for i in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let page = (x >> 33) % (bytes / PAGE);
                self.touch(t0 + i * dt, start + page * PAGE, FaultKind::Major);
            }
        }
        fn done(mut self) -> (Analysis, TraceTables) {
            self.t.faults.sort_by_key(|f| f.t_ns);
            (analyze(&self.t, &AnalyzeOptions::default()), self.t)
        }
    }

    #[test]
    fn a_swept_heap_with_no_site_gets_the_external_prefetcher_not_on_zram() {
        // A heap of 16 MiB (no allocation logged) swept 4 times: 3 x 4096
        // major faults; plus a random object of 8 MiB with its own site.
        let mut b = Builder::new();
        b.t.regions.push(swaplab_trace::events::Region {
            pid: 1,
            start: 0x5000_0000,
            end: 0x5000_0000 + 16 * MIB,
            perms: "rw-p".into(),
            path: "[heap]".into(),
            first_seen_ns: 0,
            last_seen_ns: 1,
        });
        let t_end = b.sweeps(0x5000_0000, 16 * MIB, 4, 0, 1000);
        b.object(2, 0x7000_0000, 8 * MIB);
        b.random_majors(0x7000_0000, 8 * MIB, 4096, t_end, 1000, 12345);
        let (a, t) = b.done();
        let ctx = limited(8 * MIB);
        let advice = advise(&a, &t, &ctx);
        let p = prefetch_advice(&a, &ctx, &advice).expect("a prefetcher for the heap's sweeps");
        // the heap's 3 x 4096 majors, not the random object's 4096
        assert_eq!(p.walk_faults, 3 * 4096, "{p:#?}");
        assert_eq!(
            p.expected_faults_saved,
            (3.0 * 4096.0 * PREFETCH_EXPECTED_SHARE) as u64
        );
        assert_eq!(p.spec, "leap");
        assert!(
            p.evidence
                .starts_with("12288 of the process's 16384 major faults"),
            "{}",
            p.evidence
        );
        assert!(p.evidence.contains("[heap]"), "{}", p.evidence);
        let v = verdict(&a, &t, &ctx, &advice);
        assert_eq!(v.prefetch.as_ref(), Some(&p));
        assert!(v.summary.contains("`--prefetch leap`"), "{}", v.summary);
        // on zram there is no I/O to overlap: no suggestion
        let zram = AdviseContext {
            synchronous_swap: true,
            ..ctx.clone()
        };
        assert_eq!(prefetch_advice(&a, &zram, &advice), None);
        // a walk too small for the floor (5 % of the majors) gets none:
        // the same heap swept twice among 100 000 random majors
        let mut b = Builder::new();
        b.t.regions.push(t.regions[0].clone());
        let t_end = b.sweeps(0x5000_0000, 16 * MIB, 2, 0, 1000);
        b.object(2, 0x7000_0000, 8 * MIB);
        b.random_majors(0x7000_0000, 8 * MIB, 100_000, t_end, 1000, 54321);
        let (a, t) = b.done();
        let advice = advise(&a, &t, &ctx);
        assert_eq!(prefetch_advice(&a, &ctx, &advice), None);
    }

    #[test]
    fn a_backward_walk_gets_the_external_prefetcher_not_willneed() {
        // sort's buffer: swept 3 times from its end toward its start
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        let pages = 64 * MIB / PAGE;
        let mut t = 0;
        for pass in 0..3 {
            for p in (0..pages).rev() {
                t += 1000;
                let k = if pass == 0 {
                    FaultKind::Minor
                } else {
                    FaultKind::Major
                };
                b.touch(t, 0x1000_0000 + p * PAGE, k);
            }
        }
        let (a, t) = b.done();
        assert!(a.sites[0].pattern.backward, "{:?}", a.sites[0].pattern);
        assert!(matches!(
            a.sites[0].pattern.kind,
            PatternKind::Sweeps { .. }
        ));
        let ctx = limited(32 * MIB);
        let advice = advise(&a, &t, &ctx);
        assert!(
            !advice
                .iter()
                .any(|x| matches!(x.action, Action::Willneed { .. })),
            "{advice:#?}"
        );
        let p = prefetch_advice(&a, &ctx, &advice).expect("the external prefetcher");
        assert_eq!(p.walk_faults, 2 * pages);
        // the forward sweep of the same object keeps its willneed hint
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        let (a, t) = b.done();
        assert!(!a.sites[0].pattern.backward);
        assert!(advise(&a, &t, &ctx)
            .iter()
            .any(|x| matches!(x.action, Action::Willneed { .. })));
    }

    #[test]
    fn willneed_saves_major_faults_not_the_kernels_readahead() {
        // a forward walk whose every 8th page faults (major) and whose
        // other 7 were swapped in by the kernel's readahead
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        let pages = 64 * MIB / PAGE;
        let mut t = 0;
        for pass in 0..3 {
            for p in 0..pages {
                t += 1000;
                let major = pass > 0 && p % 8 == 0;
                let k = if major {
                    FaultKind::Major
                } else {
                    FaultKind::Minor
                };
                b.touch(t, 0x1000_0000 + p * PAGE, k);
                if pass > 0 {
                    b.t.swaps.push(swaplab_trace::events::SwapEvent {
                        t_ns: t,
                        pid: 1,
                        vaddr: 0x1000_0000 + p * PAGE,
                        dir: swaplab_trace::events::SwapDir::In,
                        swap_type: None,
                        swap_offset: None,
                        source: swaplab_trace::events::SwapSource::Pagemap,
                    });
                }
            }
        }
        let (a, t) = b.done();
        assert_eq!(a.sites[0].major_faults, 2 * pages / 8);
        assert_eq!(a.sites[0].swap_ins, 2 * pages);
        let advice = advise(&a, &t, &limited(32 * MIB));
        // the verdict says what it counts: swap-ins, and how many faulted
        let v = verdict(&a, &t, &limited(32 * MIB), &advice);
        let counted = format!(
            "{} swap-ins ({} of them major faults)",
            2 * pages,
            2 * pages / 8
        );
        assert!(v.summary.contains(&counted), "{}", v.summary);
        let w = advice
            .iter()
            .find(|x| matches!(x.action, Action::Willneed { .. }))
            .expect("willneed");
        let unlocked = w.expected_fault_reduction;
        assert_eq!(
            w.expected_faults_saved,
            (unlocked * (2 * pages / 8) as f64).round() as u64,
            "{w:#?}"
        );
    }

    #[test]
    fn a_walk_with_a_willneed_hint_is_not_counted_again() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        let (a, t) = b.done();
        let ctx = limited(32 * MIB);
        let advice = advise(&a, &t, &ctx);
        assert!(advice
            .iter()
            .any(|x| matches!(x.action, Action::Willneed { .. })));
        assert_eq!(prefetch_advice(&a, &ctx, &advice), None);
        // without that hint (e.g. the site has no valid frames) the
        // object's walk is the prefetcher's
        let others: Vec<Advice> = advice
            .iter()
            .filter(|x| !matches!(x.action, Action::Willneed { .. }))
            .cloned()
            .collect();
        let p = prefetch_advice(&a, &ctx, &others).expect("prefetch");
        assert_eq!(p.walk_faults, a.objects[0].major_faults);
    }

    fn limited(limit: u64) -> AdviseContext {
        AdviseContext {
            limit_bytes: Some(limit),
            ..Default::default()
        }
    }

    fn mlocked(v: &[Advice]) -> u64 {
        v.iter()
            .map(|a| match a.action {
                Action::Mlock { bytes } => bytes,
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn a_swept_object_larger_than_the_limit_gets_mlock_within_budget_and_willneed() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        let (a, t) = b.done();
        assert!(matches!(
            a.sites[0].pattern.kind,
            PatternKind::Sweeps { sweeps: 3, .. }
        ));
        let v = advise(&a, &t, &limited(32 * MIB));
        let m = v
            .iter()
            .find(|x| matches!(x.action, Action::Mlock { .. }))
            .expect("mlock");
        assert!(mlocked(&v) <= 16 * MIB, "{v:#?}");
        assert_eq!(m.action, Action::Mlock { bytes: 16 * MIB });
        assert!((m.expected_fault_reduction - 0.25).abs() < 1e-9);
        assert!(
            m.expected.contains("every page faults on each pass"),
            "{}",
            m.expected
        );
        assert_eq!(m.site_frames, vec!["w!xmalloc+0x2a", "w!user1+0x10"]);
        assert_eq!(m.location, "w.c:1");
        let w = v
            .iter()
            .find(|x| matches!(x.action, Action::Willneed { .. }))
            .expect("willneed");
        assert_eq!(
            w.action,
            Action::Willneed {
                window_bytes: 4 * MIB,
                chunk_bytes: MIB
            }
        );
        assert!((w.expected_fault_reduction - 0.9 * 0.75).abs() < 1e-9);
    }

    #[test]
    fn a_site_of_sampled_small_objects_gets_no_hint_only_the_reason() {
        // 16 sampled 16 KiB objects, each standing for 8 times its bytes,
        // swept 40 times: as exact objects they would get mlock + willneed.
        let mut b = Builder::new();
        for k in 0..16u64 {
            b.object(1, 0x1000_0000 + k * 0x4000, 0x4000);
            b.t.allocations.last_mut().unwrap().weight = Some(8 * 0x4000);
        }
        let mut t0 = 0;
        for _ in 0..40 {
            for k in 0..16u64 {
                t0 = b.sweeps(0x1000_0000 + k * 0x4000, 0x4000, 1, t0, 1000);
            }
        }
        // the sweeps above are all minor: make every pass after the first major
        let first = 16 * 4;
        for f in b.t.faults.iter_mut().skip(first) {
            f.kind = FaultKind::Major;
        }
        let (a, t) = b.done();
        let s = &a.sites[0];
        assert!(s.sampled);
        // 39 passes × 64 pages, each page whole in its object, × 8
        assert_eq!(s.est_major_swap_ins, (39 * 64 * 8) as f64);
        assert_eq!(s.est_live_bytes, 16 * 8 * 0x4000);
        let v = advise(&a, &t, &limited(MIB));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].action, Action::Nothing);
        assert!(
            v[0].evidence.contains("a site of small objects")
                && v[0].evidence.contains("19968 major faults + swap-ins")
                && v[0].evidence.contains("about 2M of live objects"),
            "{}",
            v[0].evidence
        );
        let verdict = verdict(&a, &t, &limited(MIB), &v);
        assert_eq!(verdict.hints, 0);
        assert!(
            verdict.summary.starts_with("no hint will help"),
            "{}",
            verdict.summary
        );
    }

    #[test]
    fn two_swept_objects_share_the_budget() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.object(2, 0x2000_0000, 64 * MIB);
        let t1 = b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        b.sweeps(0x2000_0000, 64 * MIB, 3, t1, 1000);
        let (a, t) = b.done();
        for fraction in [0.5, 0.3, 2.0] {
            let ctx = AdviseContext {
                mlock_budget_fraction: fraction,
                ..limited(32 * MIB)
            };
            let v = advise(&a, &t, &ctx);
            assert!(mlocked(&v) <= ctx.mlock_budget().unwrap(), "{v:#?}");
            assert!(mlocked(&v) < 32 * MIB);
            assert_eq!(
                v.iter()
                    .filter(|x| matches!(x.action, Action::Willneed { .. }))
                    .count(),
                2
            );
        }
    }

    /// 50,000 major faults at random pages of one 64 MiB object.
    fn random_over_64m() -> (Analysis, TraceTables) {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.random_majors(0x1000_0000, 64 * MIB, 50_000, 0, 100, 3);
        b.done()
    }

    #[test]
    fn a_random_object_larger_than_memory_gets_nothing() {
        let (a, t) = random_over_64m();
        assert_eq!(a.sites[0].pattern.kind, PatternKind::Random);
        let v = advise(&a, &t, &limited(32 * MIB));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].action, Action::Nothing);
        assert!(
            v[0].evidence.contains("larger than the 32M limit"),
            "{}",
            v[0].evidence
        );
        assert!(v[0].evidence.contains("random"));
    }

    #[test]
    fn an_object_idle_after_its_first_tenth_is_cold_or_pageout() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 16 * MIB);
        b.object(2, 0x2000_0000, 4 * MIB);
        // Object 1: one pass in the first 10 % of the run (4096 × 1 µs).
        let t1 = b.sweeps(0x1000_0000, 16 * MIB, 1, 0, 1000);
        // Object 2 is swept until 10× later, with majors.
        let per = 4 * MIB / PAGE;
        b.sweeps(0x2000_0000, 4 * MIB, 9, t1, 9 * t1 / (9 * per));
        let (a, t) = b.done();
        for (ctx, want_pageout) in [(limited(8 * MIB), true), (AdviseContext::default(), false)] {
            let v = advise(&a, &t, &ctx);
            let c = v
                .iter()
                .find(|x| x.site_id == 1)
                .expect("advice for site 1");
            match c.action {
                Action::Pageout { delay_ns } if want_pageout => assert_eq!(delay_ns, t1),
                Action::Cold { delay_ns } if !want_pageout => assert_eq!(delay_ns, t1),
                other => panic!("{other:?}: {c:#?}"),
            }
            assert!(c.evidence.contains("then idle"));
        }
    }

    #[test]
    fn without_a_limit_there_is_no_mlock() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        let (a, t) = b.done();
        let ctx = AdviseContext {
            peak_bytes: Some(40 * MIB),
            ..Default::default()
        };
        let v = advise(&a, &t, &ctx);
        assert_eq!(mlocked(&v), 0);
        assert!(v.iter().all(|x| !matches!(x.action, Action::Mlock { .. })));
        let w = &v[0];
        assert!(matches!(w.action, Action::Willneed { .. }));
        assert!(
            w.evidence.contains("no memory limit is known"),
            "{}",
            w.evidence
        );
    }

    #[test]
    fn advice_below_five_percent_of_the_major_faults_is_not_emitted() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 64 * MIB);
        b.object(2, 0x2000_0000, MIB);
        // site 1: 2 × 16384 majors; site 2: 2 × 256, under 5 % of all
        let t1 = b.sweeps(0x1000_0000, 64 * MIB, 3, 0, 1000);
        b.sweeps(0x2000_0000, MIB, 3, t1, 1000);
        let (a, t) = b.done();
        assert_eq!(
            min_gain_faults(a.totals.major_faults),
            (2 * 16640u64).div_ceil(20)
        );
        let v = advise(&a, &t, &limited(32 * MIB));
        let small: Vec<_> = v.iter().filter(|x| x.site_id == 2).collect();
        assert!(!small.is_empty(), "{v:#?}");
        for x in &small {
            assert_eq!(x.action, Action::Nothing, "{x:#?}");
            assert!(x.evidence.starts_with("not emitted: "), "{}", x.evidence);
        }
        assert!(v
            .iter()
            .any(|x| x.site_id == 1 && matches!(x.action, Action::Willneed { .. })));
        let file = crate::hints::from_advice(&v, limited(32 * MIB).mlock_budget().unwrap());
        assert!(
            file.hints.iter().all(|h| h.location != "w.c:2"),
            "{file:#?}"
        );
    }

    #[test]
    fn memory_need_is_the_refaults_stack_distance() {
        // 5 passes over 100 pages: every refault has stack distance 100, so
        // 100 more pages remove every one of them
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 100 * PAGE);
        b.sweeps(0x1000_0000, 100 * PAGE, 5, 0, 1000);
        let (a, t) = b.done();
        let m = memory_need(&t, a.page_size);
        assert_eq!(m.len(), 3);
        for s in &m {
            assert_eq!(s.extra_bytes, 100 * PAGE, "{m:?}");
        }
        assert!(memory_need(&TraceTables::default(), PAGE).is_empty());
    }

    #[test]
    fn random_access_over_everything_says_only_memory_helps_and_how_much() {
        let (a, t) = random_over_64m();
        let ctx = limited(32 * MIB);
        let v = advise(&a, &t, &ctx);
        let verdict = verdict(&a, &t, &ctx, &v);
        assert_eq!(verdict.hints, 0);
        assert!(
            verdict.summary.starts_with("no hint will help: "),
            "{}",
            verdict.summary
        );
        assert!(
            verdict.summary.contains("random access"),
            "{}",
            verdict.summary
        );
        assert!(
            verdict.summary.contains("Only more memory"),
            "{}",
            verdict.summary
        );
        // the median refault distance of uniform random picks over 16384
        // pages, with 50 000 picks, is well inside the object
        let half = verdict.memory[0];
        assert!(
            half.extra_bytes > 4 * MIB && half.extra_bytes < 64 * MIB,
            "{half:?}"
        );
        assert!(verdict
            .summary
            .contains(&format!("+{}", format_bytes(half.extra_bytes))));
    }

    #[test]
    fn quiet_sites_get_no_advice() {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, MIB);
        for p in 0..200u64 {
            b.touch(p, 0x1000_0000 + (p % 256) * PAGE, FaultKind::Minor);
        }
        b.object(2, 0x2000_0000, MIB);
        for p in 0..200u64 {
            b.touch(1000 + p, 0x2000_0000 + (p % 256) * PAGE, FaultKind::Minor);
        }
        let (a, t) = b.done();
        let v = advise(&a, &t, &limited(32 * MIB));
        assert!(v.iter().all(|x| x.site_id != 2), "{v:#?}");
    }
}
