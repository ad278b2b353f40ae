//! What a hint does to the whole process, predicted by the simulator
//! before `swaplab advise` recommends it.
//!
//! [`crate::advise::advise`]'s rules look at one site at a time: "lock a
//! quarter of this object and a quarter of its faults go away". What they
//! cannot see is what the hint takes from everything else: locked pages
//! are charged to the same memory limit, so the rest of the process has
//! that much less memory and faults more. On a Python program that builds
//! and probes a dict, the rules locked 21M of the interpreter's arenas
//! ("122,953 major faults go away") and the hinted program ran 1.18×
//! slower at 50 % of its peak. So every hint is simulated on the traced
//! run's own faults, with and without it, and kept only when the whole
//! process's major faults fall clearly ([`screen`]).
//!
//! **The reference stream** is the trace's faults (minor and major, every
//! process, in time order; the key of a page is its pid and virtual page
//! number). A trace records faults, not every access: a page that stayed
//! resident appears once, at its first touch. So the stream is simulated
//! in **the memory the faulting pages had**, which is calibrated rather
//! than guessed: the largest capacity (pages) at which the simulation
//! (policy [`POLICY`], the kernel's swap readahead as the trace's run had
//! it) has at least the run's major faults, capped at the run's limit
//! (the pages that never faulted again — binary, libraries, a resident hot
//! set — held the rest). A sweep larger than memory faults on every page
//! at any capacity below its size, so without the cap the calibration
//! would give it all of its size.
//!
//! **mlock is charged in full**: a locked range is pinned for the whole
//! stream and every page of it is taken from that calibrated memory
//! (mlock populates the range), so the rest of the process runs in
//! `capacity − locked` pages. Locked pages that were resident anyway (hot
//! and never refaulted) sat outside the calibrated memory in the real run,
//! so this overcharges them: the prediction errs towards leaving a lock
//! out, never towards promising one. The hint's bytes are spent as the
//! preload library spends them: per process, on the matching allocations
//! in the order they were made (the first whole, then a prefix), within
//! `mlock_budget`, a free giving its bytes back to the budget.
//!
//! willneed reads its window ahead at each fault in the matching
//! allocations, cold/pageout act `delay` after each allocation's first
//! touch (turned into references at the stream's mean rate), and the
//! hint file's external prefetcher is Leap's detector with its 1 MiB
//! window in place of the kernel's readahead ([`PREFETCH_MODEL`]). The
//! simulator has no timing, so prefetching is predicted at its best;
//! `advise --verify` measures it.
//!
//! **A clear gain**: the simulated major faults of the whole process with
//! the hint are below those without it by at least [`CLEAR_GAIN_SHARE`]
//! of them and at least [`CLEAR_GAIN_FAULTS`]. Anything less — a loss, a
//! wash, or a gain inside the model's error — is left out, with the
//! prediction as the reason.

use serde::Serialize;
use swaplab_sim::{simulate_ext, Extras, HintKind, PolicySpec, PrefetchSpec, RangeHint};
use swaplab_trace::events::{FaultKind, TraceTables};
use swaplab_trace::DenseTrace;

use crate::advise::{Action, Advice, AdviseContext};
use crate::analyze::Analysis;

/// The replacement policy of the predictions (the kernel's active and
/// inactive lists, as `bench hints` and `validate` predict with).
pub const POLICY: &str = "linux";
/// A clear gain saves at least this share of the simulated process's major
/// faults ...
pub const CLEAR_GAIN_SHARE: f64 = 0.10;
/// ... and at least this many.
pub const CLEAR_GAIN_FAULTS: u64 = 32;
/// The external prefetcher (`prefetch = "leap"`) in the simulator: Leap's
/// majority-trend detector with `run --prefetch leap`'s 1 MiB window.
pub const PREFETCH_MODEL: &str = "leap:max=256";
/// Streams longer than this are not simulated (advice is then left out:
/// its effect cannot be predicted).
pub const MAX_REFERENCES: usize = 200_000_000;
/// A page's key: pid above this bit, the virtual page number below.
const PID_SHIFT: u32 = 44;

fn key(pid: u32, page: u64) -> u64 {
    (u64::from(pid) << PID_SHIFT) | (page & ((1u64 << PID_SHIFT) - 1))
}

/// The fewest simulated major faults a hint must save, for a process whose
/// simulation without it has `base`: `max(32, 10 % of base)`.
pub fn clear_gain_floor(base: u64) -> u64 {
    CLEAR_GAIN_FAULTS.max((base as f64 * CLEAR_GAIN_SHARE).ceil() as u64)
}

/// How the simulation stands for the traced run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Model {
    /// The policy.
    pub policy: String,
    /// The kernel's swap readahead (a `sim --prefetch` spec).
    pub readahead: String,
    /// References simulated (the trace's faults).
    pub references: u64,
    /// Distinct pages among them.
    pub pages: u64,
    /// The memory the faulting pages had, in pages (calibrated).
    pub capacity_pages: u64,
    /// The run's major faults (its swap-ins for a trace without major
    /// faults): what the calibration matches.
    pub observed_major_faults: u64,
    /// The simulation's major faults at `capacity_pages`, without hints.
    pub simulated_major_faults: u64,
    /// How the capacity was found, for people.
    pub note: String,
}

pub use crate::advise::Prediction;

/// The simulation of one traced run's faults.
pub struct Predictor<'a> {
    t: &'a TraceTables,
    trace: DenseTrace,
    policy: PolicySpec,
    readahead: PrefetchSpec,
    page: u64,
    refs_per_ns: f64,
    budget: u64,
    /// How the simulation stands for the run.
    pub model: Model,
}

/// The kernel's swap readahead for `ctx`: none on synchronous swap (zram),
/// else `ctx.readahead` (`cluster` or `vma`, default `cluster`) at the
/// run's page-cluster (default 3).
pub fn readahead_spec(ctx: &AdviseContext) -> String {
    if ctx.synchronous_swap {
        return "none".into();
    }
    let kind = ctx.readahead.as_deref().unwrap_or("cluster");
    match kind {
        "none" => "none".into(),
        k => format!("{k}:pc={}", ctx.page_cluster.unwrap_or(3).min(10)),
    }
}

impl<'a> Predictor<'a> {
    /// Builds the stream of `t`'s faults and calibrates its memory (module
    /// docs). `Err` says why the run cannot be predicted.
    pub fn new(
        a: &Analysis,
        t: &'a TraceTables,
        ctx: &AdviseContext,
    ) -> std::result::Result<Self, String> {
        Self::with_policy(a, t, ctx, POLICY)
    }

    /// [`Predictor::new`] with another policy (`lru` for hand-worked tests).
    pub fn with_policy(
        a: &Analysis,
        t: &'a TraceTables,
        ctx: &AdviseContext,
        policy: &str,
    ) -> std::result::Result<Self, String> {
        let page = a.page_size.max(1);
        if t.faults.is_empty() {
            return Err("the trace has no faults to simulate".into());
        }
        if t.faults.len() > MAX_REFERENCES {
            return Err(format!(
                "the trace's {} faults are more than the {MAX_REFERENCES} advise simulates",
                t.faults.len()
            ));
        }
        let mut order: Vec<usize> = (0..t.faults.len()).collect();
        order.sort_by_key(|&i| t.faults[i].t_ns);
        let keys: Vec<u64> = order
            .iter()
            .map(|&i| key(t.faults[i].pid, t.faults[i].addr / page))
            .collect();
        let mut trace = DenseTrace::from_pages(&keys);
        trace.page_size = page;
        let majors = t
            .faults
            .iter()
            .filter(|f| f.kind == FaultKind::Major)
            .count() as u64;
        let observed = if majors > 0 {
            majors
        } else {
            a.totals.swap_ins
        };
        if observed == 0 {
            return Err("the run had no major faults: there is nothing to predict".into());
        }
        let spec = PolicySpec::parse(policy).map_err(|e| e.to_string())?;
        let ra_text = readahead_spec(ctx);
        let readahead = PrefetchSpec::parse(&ra_text).map_err(|e| e.to_string())?;
        let first = order.first().map(|&i| t.faults[i].t_ns).unwrap_or(0);
        let last = order.last().map(|&i| t.faults[i].t_ns).unwrap_or(0);
        let refs_per_ns = keys.len() as f64 / (last.saturating_sub(first)).max(1) as f64;
        let distinct = trace.distinct() as u64;
        let mut p = Predictor {
            t,
            trace,
            policy: spec,
            readahead,
            page,
            refs_per_ns,
            budget: ctx.mlock_budget().unwrap_or(0),
            model: Model {
                policy: policy.to_string(),
                readahead: ra_text.clone(),
                references: keys.len() as u64,
                pages: distinct,
                capacity_pages: 0,
                observed_major_faults: observed,
                simulated_major_faults: 0,
                note: String::new(),
            },
        };
        // The largest capacity with at least the observed major faults
        // (the simulated faults fall as memory grows).
        // A readahead model that hits more than the kernel did never
        // reaches the run's major faults, at any memory: then the stream
        // is simulated without readahead.
        let mut fallback = String::new();
        if ra_text != "none" && p.run(&p.readahead, &[], 1)? < observed {
            fallback = format!(
                "; with {ra_text} readahead the simulation never reaches the run's {observed} \
                 major faults (it reads ahead more usefully than the kernel did), so it runs \
                 without readahead"
            );
            p.readahead = PrefetchSpec::parse("none").map_err(|e| e.to_string())?;
            p.model.readahead = "none".into();
        }
        let plain = p.readahead.clone();
        let f = |c: u64| p.run(&plain, &[], c);
        let (mut lo, mut hi) = (1u64, distinct.max(1));
        let reachable = f(lo)? >= observed;
        if !reachable {
            hi = lo;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if f(mid)? >= observed {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let limit_pages = ctx.limit_bytes.map(|l| (l / page).max(1));
        let capacity = match limit_pages {
            Some(l) if l < lo || !reachable => l,
            _ => lo,
        };
        let simulated = f(capacity)?;
        p.model.note = format!(
            "{} faults of {} pages simulated ({}, {} readahead); {capacity} pages give {} major \
             faults against the run's {observed}{}{fallback}",
            keys.len(),
            distinct,
            policy,
            p.model.readahead,
            simulated,
            match limit_pages {
                Some(l) if !reachable =>
                    format!(" (no memory gives as many: the limit's {l} pages are used)"),
                Some(l) if l < lo =>
                    format!(" ({lo} pages would still give as many; capped at the limit's {l})"),
                _ => String::new(),
            }
        );
        p.model.capacity_pages = capacity;
        p.model.simulated_major_faults = simulated;
        Ok(p)
    }

    /// (major faults, pages locked) of one simulation at `capacity`;
    /// `Err` for a simulation that cannot run.
    fn run(
        &self,
        prefetch: &PrefetchSpec,
        hints: &[RangeHint],
        capacity: u64,
    ) -> std::result::Result<u64, String> {
        let x = Extras {
            prefetch: Some(prefetch),
            hints,
        };
        simulate_ext(
            &self.trace,
            None,
            &self.policy,
            capacity.max(1) as usize,
            42,
            &x,
            &|_| {},
        )
        .map(|r| r.counters.major_faults)
        .map_err(|e| e.to_string())
    }

    /// The simulator's ranges for `advice` (one or several pieces), and
    /// how many allocations they apply to.
    pub fn ranges(&self, advice: &[&Advice]) -> (Vec<RangeHint>, u64) {
        use std::collections::{HashMap, HashSet};
        let page = self.page;
        // Which trace sites each piece matches: its key frames a prefix of
        // the site's (the preload library's rule), else its own site.
        let sites_of = |ad: &Advice| -> HashSet<u32> {
            let k = crate::hints::key_frames(&ad.site_frames);
            let valid = !k.is_empty() && k.iter().all(|f| crate::hints::is_valid_frame(f));
            self.t
                .sites
                .iter()
                .filter(|s| {
                    if valid {
                        s.frames.len() >= k.len() && s.frames[..k.len()] == *k
                    } else {
                        s.site_id == ad.site_id
                    }
                })
                .map(|s| s.site_id)
                .chain(std::iter::once(ad.site_id).filter(|_| !valid))
                .collect()
        };
        let matched: Vec<HashSet<u32>> = advice.iter().map(|a| sites_of(a)).collect();
        // Allocations and frees in time order (frees first at a tie).
        let mut events: Vec<(u64, bool, usize)> = Vec::new();
        for (j, al) in self.t.allocations.iter().enumerate() {
            if al.weight.is_some() || al.size == 0 {
                continue;
            }
            if !matched.iter().any(|m| m.contains(&al.site_id)) {
                continue;
            }
            events.push((al.t_alloc_ns, true, j));
            if let Some(f) = al.t_free_ns {
                events.push((f, false, j));
            }
        }
        events.sort_by_key(|&(t, alloc, j)| (t, alloc, j));
        let mut out = Vec::new();
        let mut spent: HashMap<(usize, u32), u64> = HashMap::new();
        let mut locked: HashMap<u32, u64> = HashMap::new();
        let mut locked_by: HashMap<usize, u64> = HashMap::new();
        let mut applied = HashSet::new();
        for (_, alloc, j) in events {
            let al = &self.t.allocations[j];
            if !alloc {
                if let Some(b) = locked_by.remove(&j) {
                    let l = locked.entry(al.pid).or_default();
                    *l = l.saturating_sub(b);
                }
                continue;
            }
            let start = key(al.pid, al.start / page);
            let end = key(al.pid, (al.start + al.size).div_ceil(page));
            for (k, ad) in advice.iter().enumerate() {
                if !matched[k].contains(&al.site_id) {
                    continue;
                }
                applied.insert(j);
                let action = match ad.action {
                    Action::Willneed { window_bytes, .. } => HintKind::Willneed {
                        window: window_bytes.div_ceil(page).max(1),
                    },
                    Action::Cold { delay_ns } => HintKind::Cold {
                        after: (delay_ns as f64 * self.refs_per_ns) as u64,
                    },
                    Action::Pageout { delay_ns } => HintKind::Pageout {
                        after: (delay_ns as f64 * self.refs_per_ns) as u64,
                    },
                    Action::Mlock { bytes } => {
                        if locked_by.contains_key(&j) {
                            continue;
                        }
                        let s = spent.entry((k, al.pid)).or_default();
                        let len = bytes.saturating_sub(*s).min(al.size);
                        let l = locked.entry(al.pid).or_default();
                        if len == 0 || l.saturating_add(len) > self.budget {
                            continue;
                        }
                        *s += len;
                        *l += len;
                        locked_by.insert(j, len);
                        out.push(RangeHint {
                            start,
                            end: key(al.pid, (al.start + len).div_ceil(page)),
                            action: HintKind::Pin,
                        });
                        continue;
                    }
                    Action::Nothing => continue,
                };
                out.push(RangeHint { start, end, action });
            }
        }
        (out, applied.len() as u64)
    }

    /// The predicted effect of `advice` (applied together) on the process.
    pub fn predict(&self, advice: &[&Advice]) -> Prediction {
        let (hints, allocations) = self.ranges(advice);
        let what = if advice.len() == 1 {
            format!("{}", advice[0].action)
        } else {
            format!("{} hints together", advice.len())
        };
        self.judge(&what, &self.readahead.clone(), &hints, allocations)
    }

    /// The predicted effect of the external prefetcher `spec` (in place of
    /// the kernel's readahead, [`PREFETCH_MODEL`] for `leap`).
    pub fn predict_prefetch(&self, spec: &str) -> Prediction {
        let model = if spec == "leap" {
            PREFETCH_MODEL.to_string()
        } else {
            spec.to_string()
        };
        match PrefetchSpec::parse(&model) {
            Ok(pf) => self.judge(&format!("prefetch {spec}"), &pf, &[], 0),
            Err(e) => self.unpredictable(&format!("prefetch {spec}"), &e.to_string()),
        }
    }

    fn unpredictable(&self, what: &str, why: &str) -> Prediction {
        let m = &self.model;
        Prediction {
            base_major_faults: m.simulated_major_faults,
            hinted_major_faults: None,
            locked_pages: 0,
            capacity_pages: m.capacity_pages,
            allocations: 0,
            clear_gain: false,
            summary: format!("{what}: the simulator cannot model it ({why})"),
        }
    }

    fn judge(
        &self,
        what: &str,
        pf: &PrefetchSpec,
        hints: &[RangeHint],
        allocations: u64,
    ) -> Prediction {
        let m = &self.model;
        let cap = m.capacity_pages;
        let base = m.simulated_major_faults;
        let locked: u64 = {
            let mut r: Vec<(u64, u64)> = hints
                .iter()
                .filter(|h| h.action == HintKind::Pin)
                .map(|h| (h.start, h.end))
                .collect();
            r.sort_unstable();
            let mut n = 0u64;
            let mut reach = 0u64;
            for (s, e) in r {
                let s = s.max(reach);
                if e > s {
                    n += e - s;
                    reach = e;
                }
            }
            n
        };
        let floor = clear_gain_floor(base);
        let model = format!(
            "simulated on the run's {} faults in the {cap} pages the faulting pages had",
            m.references
        );
        if locked >= cap {
            return Prediction {
                base_major_faults: base,
                hinted_major_faults: None,
                locked_pages: locked,
                capacity_pages: cap,
                allocations,
                clear_gain: false,
                summary: format!(
                    "{what} locks {locked} pages, all of the {cap} pages the rest of the \
                     process faulted in ({model}): a loss"
                ),
            };
        }
        let hinted = match self.run(pf, hints, cap) {
            Ok(h) => h,
            Err(e) => return self.unpredictable(what, &e),
        };
        let saved = base as i64 - hinted as i64;
        let change = if base > 0 {
            (hinted as f64 / base as f64 - 1.0) * 100.0
        } else {
            0.0
        };
        let clear = saved >= floor as i64;
        let squeeze = if locked > 0 {
            format!(
                " with {locked} pages locked, which leaves the rest of the process {} pages",
                cap - locked
            )
        } else {
            String::new()
        };
        let verdict = if clear {
            format!("a clear gain (at least {floor} fewer needed)")
        } else if saved < 0 {
            "a loss: it adds major faults".to_string()
        } else {
            format!("not a clear gain (at least {floor} fewer needed: max({CLEAR_GAIN_FAULTS}, {:.0} % of them))", CLEAR_GAIN_SHARE * 100.0)
        };
        Prediction {
            base_major_faults: base,
            hinted_major_faults: Some(hinted),
            locked_pages: locked,
            capacity_pages: cap,
            allocations,
            clear_gain: clear,
            summary: format!(
                "{what}: the process's major faults {base} -> {hinted} ({change:+.1} %){squeeze} \
                 ({model}); {verdict}"
            ),
        }
    }
}

/// Advice after the simulator's screening ([`screen`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Screened {
    /// How the simulation stands for the run (`None`: no prediction was
    /// possible, see `left_out`).
    pub model: Option<Model>,
    /// The kept hints together.
    pub combined: Option<Prediction>,
    /// The external prefetcher the rules offer for the walks no kept hint
    /// covers ([`crate::advise::prefetch_advice`] on the screened advice).
    pub offered: Option<crate::advise::PrefetchAdvice>,
    /// Its prediction.
    pub prefetch: Option<Prediction>,
    /// It is kept (a clear gain).
    pub prefetch_kept: bool,
    /// One line per piece of advice (or prefetcher) left out, with its
    /// prediction: the hint file's comments.
    pub left_out: Vec<String>,
}

/// Predicts every hint of `advice` (alone, against no hint) and turns
/// each one that is not a clear gain into `Nothing`, its prediction the
/// reason (module docs); then offers the external prefetcher for the walks
/// no kept hint covers ([`crate::advise::prefetch_advice`]) and predicts
/// it too. Every hint kept carries its prediction. When the run cannot be
/// simulated, every hint and the prefetcher are left out with the reason.
pub fn screen(
    a: &Analysis,
    t: &TraceTables,
    ctx: &AdviseContext,
    advice: &mut [Advice],
) -> Screened {
    screen_with(a, t, ctx, advice, POLICY)
}

/// [`screen`] with another policy (`lru` for hand-worked tests).
pub fn screen_with(
    a: &Analysis,
    t: &TraceTables,
    ctx: &AdviseContext,
    advice: &mut [Advice],
    policy: &str,
) -> Screened {
    let mut out = Screened {
        model: None,
        combined: None,
        offered: None,
        prefetch: None,
        prefetch_kept: false,
        left_out: Vec::new(),
    };
    let hinted = advice.iter().any(|x| x.action != Action::Nothing);
    if !hinted && crate::advise::prefetch_advice(a, ctx, advice).is_none() {
        return out;
    }
    let p = match Predictor::with_policy(a, t, ctx, policy) {
        Ok(p) => p,
        Err(why) => {
            for ad in advice.iter_mut().filter(|x| x.action != Action::Nothing) {
                let line = format!(
                    "{} at {}: its effect on the process cannot be predicted: {why}",
                    ad.action,
                    place(ad)
                );
                leave_out(ad, &line);
                out.left_out.push(line);
            }
            if let Some(o) = crate::advise::prefetch_advice(a, ctx, advice) {
                out.left_out.push(format!(
                    "prefetch {}: its effect on the process cannot be predicted: {why}",
                    o.spec
                ));
                out.offered = Some(o);
            }
            return out;
        }
    };
    for ad in advice.iter_mut().filter(|x| x.action != Action::Nothing) {
        let pr = p.predict(&[&*ad]);
        if !pr.clear_gain {
            let line = format!("{} at {}: {}", ad.action, place(ad), pr.summary);
            leave_out(ad, &line);
            out.left_out.push(line);
        }
        ad.prediction = Some(pr);
    }
    let kept: Vec<&Advice> = advice
        .iter()
        .filter(|x| x.action != Action::Nothing)
        .collect();
    if kept.len() > 1 {
        out.combined = Some(p.predict(&kept));
    }
    out.offered = crate::advise::prefetch_advice(a, ctx, advice);
    if let Some(o) = &out.offered {
        let pr = p.predict_prefetch(&o.spec);
        out.prefetch_kept = pr.clear_gain;
        if !pr.clear_gain {
            out.left_out
                .push(format!("prefetch {}: {}", o.spec, pr.summary));
        }
        out.prefetch = Some(pr);
    }
    out.model = Some(p.model);
    out
}

fn place(ad: &Advice) -> String {
    if ad.location.is_empty() {
        ad.site_frames.first().cloned().unwrap_or_default()
    } else {
        ad.location.clone()
    }
}

fn leave_out(ad: &mut Advice, line: &str) {
    ad.evidence = format!("left out: {line}; {}", ad.evidence);
    ad.action = Action::Nothing;
    ad.expected = "no change expected from advice".into();
    ad.expected_fault_reduction = 0.0;
    ad.expected_faults_saved = 0;
}

/// The hint file for screened advice: [`crate::hints::from_advice`] (each
/// kept hint with its `predicted` effect), the prefetcher only when it was
/// kept, and as comments how the simulation stands for the run, the kept
/// hints together, the prefetcher's prediction and every item left out
/// with its reason.
pub fn hint_file(advice: &[Advice], budget: u64, s: &Screened) -> crate::hints::HintFile {
    let mut file = crate::hints::from_advice(advice, budget);
    file.prefetch = s
        .offered
        .as_ref()
        .filter(|_| s.prefetch_kept)
        .map(|o| o.spec.clone());
    if let Some(m) = &s.model {
        file.comments.push(format!(
            "advise simulated every hint on the run's faults, with and without it, and keeps \
             only a clear gain for the whole process (at least max({CLEAR_GAIN_FAULTS}, \
             {:.0} %) fewer major faults): {}",
            CLEAR_GAIN_SHARE * 100.0,
            m.note
        ));
    }
    if let Some(c) = &s.combined {
        file.comments
            .push(format!("kept hints together: {}", c.summary));
    }
    if let (Some(p), true) = (&s.prefetch, s.prefetch_kept) {
        file.comments.push(format!("predicted: {}", p.summary));
    }
    for l in &s.left_out {
        file.comments.push(format!("left out: {l}"));
    }
    file
}

#[cfg(test)]
mod tests {
    //! Hand-worked traces under `lru` (no readahead), where the simulated
    //! faults follow from stack distances: a reference hits when fewer
    //! distinct pages than the memory were touched since its page's last
    //! reference.
    use super::*;
    use crate::advise::advise;
    use crate::analyze::{analyze, AnalyzeOptions};
    use swaplab_trace::events::{Allocation, FaultEvent, Site};

    const PAGE: u64 = 4096;

    struct Builder {
        t: TraceTables,
        now: u64,
    }

    impl Builder {
        fn new() -> Self {
            Builder {
                t: TraceTables::default(),
                now: 0,
            }
        }
        fn object(&mut self, site: u32, start: u64, pages: u64) {
            self.t.allocations.push(Allocation {
                pid: 1,
                tid: 1,
                start,
                size: pages * PAGE,
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
        /// One sweep over `pages` pages from `start`, every fault of `kind`.
        fn sweep(&mut self, start: u64, pages: u64, kind: FaultKind) {
            for p in 0..pages {
                self.now += 1000;
                self.t.faults.push(FaultEvent {
                    t_ns: self.now,
                    pid: 1,
                    tid: 1,
                    addr: start + p * PAGE,
                    ip: 0,
                    kind,
                });
            }
        }
        fn done(self) -> (Analysis, TraceTables) {
            (analyze(&self.t, &AnalyzeOptions::default()), self.t)
        }
    }

    fn ctx(limit_pages: u64) -> AdviseContext {
        AdviseContext {
            limit_bytes: Some(limit_pages * PAGE),
            readahead: Some("none".into()),
            ..Default::default()
        }
    }

    fn mlock_of(advice: &[Advice], site: u32) -> Option<&Advice> {
        advice
            .iter()
            .find(|x| x.site_id == site && matches!(x.action, Action::Mlock { .. }))
    }

    /// A (512 pages) is swept once a round and B (768 pages touched of an
    /// allocation of 1536) twice, 4 rounds, in a memory of 1024 pages.
    /// Without hints: A's page was last used 511 + 768 = 1279 distinct
    /// pages ago (a miss), B's first sweep 767 + 512 = 1279 (a miss), its
    /// second 767 (a hit): 1280 major faults a round after the first, 3840
    /// (the kinds below are what the kernel would have seen). advise locks
    /// all of A (the denser site, 2 MiB = the whole budget). With A locked,
    /// the rest has 1024 − 512 = 512 pages and B's second sweep (767) misses
    /// too: rounds 2–4 fault 1536 each, round 1 adds B's 768 second-sweep
    /// faults: 768 + 3·1536 = 5376, 40 % more. The lock is left out.
    fn squeeze() -> (Analysis, TraceTables) {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 512);
        b.object(2, 0x2000_0000, 1536);
        for round in 0..4 {
            let k = if round == 0 {
                FaultKind::Minor
            } else {
                FaultKind::Major
            };
            b.sweep(0x1000_0000, 512, k);
            b.sweep(0x2000_0000, 768, k);
            b.sweep(0x2000_0000, 768, FaultKind::Minor);
        }
        b.done()
    }

    #[test]
    fn a_hot_object_whose_lock_squeezes_the_rest_is_left_out() {
        let (a, t) = squeeze();
        let c = ctx(1024);
        let mut advice = advise(&a, &t, &c);
        let m = mlock_of(&advice, 1).expect("the rules lock the hot object");
        assert_eq!(m.action, Action::Mlock { bytes: 512 * PAGE });
        assert!(mlock_of(&advice, 2).is_none(), "{advice:#?}");

        let p = Predictor::with_policy(&a, &t, &c, "lru").unwrap();
        assert_eq!(p.model.observed_major_faults, 3840);
        // every capacity from 768 to 1279 pages gives the 3840: capped at
        // the limit
        assert_eq!(p.model.capacity_pages, 1024);
        assert_eq!(p.model.simulated_major_faults, 3840);
        let pr = p.predict(&[m]);
        assert_eq!(pr.locked_pages, 512);
        assert_eq!(pr.hinted_major_faults, Some(5376));
        assert!(!pr.clear_gain);
        assert!(
            pr.summary.contains("3840 -> 5376 (+40.0 %)"),
            "{}",
            pr.summary
        );
        assert!(pr.summary.contains("a loss"), "{}", pr.summary);

        let s = screen_with(&a, &t, &c, &mut advice, "lru");
        assert!(mlock_of(&advice, 1).is_none(), "{advice:#?}");
        let left = advice
            .iter()
            .find(|x| x.site_id == 1 && x.evidence.starts_with("left out: mlock 2M at w.c:1"))
            .expect("the lock, left out with its reason");
        assert_eq!(left.action, Action::Nothing);
        assert_eq!(left.prediction.as_ref(), Some(&pr));
        // the reason is in the hint file's comments, and no mlock hint
        let file = hint_file(&advice, c.mlock_budget().unwrap(), &s);
        let text = file.to_toml();
        let back = crate::hints::parse(&text, "hints.toml").unwrap();
        assert_eq!(back, file);
        assert!(
            back.hints
                .iter()
                .all(|h| !matches!(h.action, crate::hints::HintAction::Mlock { .. })),
            "{text}"
        );
        assert!(
            text.contains("#: left out: mlock 2M at w.c:1: mlock 2M: the process's major faults 3840 -> 5376 (+40.0 %) with 512 pages locked"),
            "{text}"
        );
        // whatever is kept carries its prediction
        for h in &back.hints {
            assert!(
                h.predicted
                    .as_deref()
                    .is_some_and(|p| p.contains("a clear gain")),
                "{text}"
            );
        }
    }

    /// A of 1600 pages swept 4 times in 1000 pages: under LRU a loop larger
    /// than memory misses on every page of every pass after the first at
    /// any capacity below 1600 (capped at the limit's 1000): 3·1600 = 4800.
    /// The rules lock the budget, 500 pages; the rest loops over 1100 pages
    /// in 500 and still misses on all of them: 3·1100 = 3300, 1500 fewer
    /// (−31.25 %), a clear gain: kept, with its prediction in the file.
    #[test]
    fn a_lock_that_is_a_clear_gain_is_kept_with_its_prediction() {
        let (a, t) = lock_pays();
        let c = ctx(1000);
        let mut advice = advise(&a, &t, &c);
        let m = mlock_of(&advice, 1).expect("mlock");
        assert_eq!(m.action, Action::Mlock { bytes: 500 * PAGE });
        let p = Predictor::with_policy(&a, &t, &c, "lru").unwrap();
        assert_eq!(p.model.capacity_pages, 1000);
        assert_eq!(p.model.simulated_major_faults, 4800);
        let pr = p.predict(&[m]);
        assert_eq!(pr.hinted_major_faults, Some(3300));
        assert!(pr.clear_gain, "{}", pr.summary);
        assert_eq!(clear_gain_floor(4800), 480);

        let s = screen_with(&a, &t, &c, &mut advice, "lru");
        let m = mlock_of(&advice, 1).expect("kept");
        assert_eq!(m.prediction.as_ref(), Some(&pr));
        let file = hint_file(&advice, c.mlock_budget().unwrap(), &s);
        let text = file.to_toml();
        let h = file
            .hints
            .iter()
            .find(|h| matches!(h.action, crate::hints::HintAction::Mlock { .. }))
            .expect("the mlock hint");
        let want =
            "mlock 2.0M: the process's major faults 4800 -> 3300 (-31.2 %) with 500 pages locked";
        assert!(
            h.predicted.as_deref().is_some_and(|p| p.starts_with(want)),
            "{text}"
        );
        assert!(text.contains("predicted = \"mlock 2.0M"), "{text}");
    }

    #[test]
    fn the_kernels_policy_agrees_on_both() {
        // the same decisions under the default policy (`linux`) and the
        // kernel's cluster readahead
        let (a, t) = squeeze();
        let c = AdviseContext {
            readahead: None,
            ..ctx(1024)
        };
        let mut advice = advise(&a, &t, &c);
        screen(&a, &t, &c, &mut advice);
        assert!(mlock_of(&advice, 1).is_none(), "{advice:#?}");
        let (a, t) = lock_pays();
        let c = AdviseContext {
            readahead: None,
            ..ctx(1000)
        };
        let mut advice = advise(&a, &t, &c);
        screen(&a, &t, &c, &mut advice);
        let m = mlock_of(&advice, 1).unwrap_or_else(|| panic!("kept: {advice:#?}"));
        assert!(m.prediction.as_ref().unwrap().clear_gain, "{m:#?}");
    }

    fn lock_pays() -> (Analysis, TraceTables) {
        let mut b = Builder::new();
        b.object(1, 0x1000_0000, 1600);
        for pass in 0..4 {
            let k = if pass == 0 {
                FaultKind::Minor
            } else {
                FaultKind::Major
            };
            b.sweep(0x1000_0000, 1600, k);
        }
        b.done()
    }

    #[test]
    fn a_lock_past_the_budget_locks_nothing_and_no_faults_no_prediction() {
        let (a, t) = squeeze();
        let advice = advise(&a, &t, &ctx(1024));
        let m = mlock_of(&advice, 1).unwrap();
        // in 512 pages the budget is 256: the library refuses a lock of
        // 512 pages (ENOMEM), and so does the prediction
        let p = Predictor::with_policy(&a, &t, &ctx(512), "lru").unwrap();
        assert_eq!(p.model.capacity_pages, 512);
        let pr = p.predict(&[m]);
        assert_eq!(pr.locked_pages, 0);
        assert_eq!(pr.hinted_major_faults, Some(pr.base_major_faults));
        assert!(!pr.clear_gain);
        let quiet = TraceTables::default();
        let e = Predictor::new(&a, &quiet, &ctx(1024)).err().unwrap();
        assert!(e.contains("no faults"), "{e}");
    }
}
