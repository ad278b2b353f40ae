//! What the simulator predicts for the cells of `swaplab bench hints`.
//!
//! The workload's page references are known without tracing it: traverse
//! fills its array page by page, then sweeps it `passes` times, writing
//! every page (`a[i] += i`). So the reference trace is `passes + 1` passes
//! over the array's pages in address order, all writes (a page-level trace:
//! the repeats within a page are collapsed, which no policy here can tell
//! from the uncollapsed stream, since nothing happens between them). It is
//! replayed through the `linux` policy (active/inactive lists) at the
//! memory the limit leaves the array, `limit - (peak - size)`: the rest of
//! the peak (binary, libraries, stack, page tables, page cache) is taken to
//! stay charged to the group.
//!
//! Each variant is modelled as what it changes in the kernel:
//!
//! | variant | model |
//! |---|---|
//! | base, madvise | the kernel's swap readahead as the machine has it (`cluster` or `vma` at its page-cluster; none for zram). MADV_SEQUENTIAL does not change anonymous swap-in and MADV_WILLNEED once after the fill only reads back what the fill pushed out, so madvise is modelled as base. |
//! | pcN | the same readahead at page-cluster N |
//! | mlock | base, with the first `mlocked` bytes of the array (as the workload reported) pinned |
//! | leap0, stride, thread (and leap when the array fits the limit) | Leap's majority-trend prefetcher in place of the kernel's readahead, with the window of the prefetcher it stands for (`leap:max=256`: leap's and stride's 1 MiB base window; `leap:max=1024`: the preload thread's 4 MiB). The kernel's readahead still runs beside them, but on a sequential walk the larger window reads what it would. Timing is not modelled: a prefetcher that reacts late saves fewer faults than predicted (the preload thread, which polls every millisecond, saved 15–45 % of the faults against 99 % predicted until it renewed its window on hits and resumed after the walk jumped back; 93 % since, docs/tracing.md). |
//! | leap-po, and leap when the array is larger than the limit | `leap:max=512:pageout=1:lag=16`: its 2 MiB largest window, and the pages it pages out more than 64 KiB behind the walk, which keeps the pages the walk does not reach resident and cuts the swap traffic; `leap` (`pageout=auto`) turns its pageout on at the first walk over an array larger than the limit, and traverse never comes back to a page before walking the whole array, so its pageout stays on: the same model. |
//! | mlock-leap | leap-po's model with the first `mlocked` bytes of the array (half the limit, as the workload reported) pinned |
//! | advise | base, with each hint of `advise`'s file applied to the whole array: traverse's array is the only allocation the preload library logs (above 64 KiB), so every site hint advise writes for it names that array. mlock pins its bytes from the array's start, willneed reads its window ahead at each fault in the array, cold/pageout act `delay_ms` after the first touch, turned into references at the unlimited run's rate. Like `thread`, the willneed hint's prefetch thread is modelled without its timing. |
//!
//! The speed-up is predicted from the simulated major faults F, pages
//! read ahead R and swap-outs W with the time model `T = T_0 + F·c_f +
//! (R + W)·c_io` ([`TimeModel::Traffic`]), where T_0 is the unlimited
//! run's wall time, c_f the cost of a major fault (trap, kernel path and a
//! synchronous read) and c_io that of every other page moved to or from
//! swap (read ahead, or written out). The two costs are fitted per limit
//! from two measured cells, `pc0` (no readahead) and `base`: the 2×2
//! system `T_pc0 - T_0 = F_pc0·c_f + W_pc0·c_io`, `T_base - T_0 =
//! F_base·c_f + (R_base + W_base)·c_io` (a cost that would come out
//! negative is 0 and the other is fitted to pc0 alone). Their own
//! predictions then equal the measurements by construction; every other
//! variant's is a prediction. Without a pc0 cell, c_io = 0 and c_f comes
//! from base alone. The prediction is `T_base / T_v`.
//!
//! The model before 2026-11-26, [`TimeModel::Reads`], `T = T_0 + F·c_f +
//! R·c_r` (c_f from pc0, c_r from base), did not charge swap-outs. On the
//! cells of `swaplab bench hints --sizes 256M --limits 50% --repeat 5
//! --variants base,mlock,pc,leap,leap-po,mlock-leap --page-cluster 0,5`
//! (catalog s50) the speed-ups, measured / old model / new model (both on
//! the simulation with pageout): mlock 1.74 / 1.72 / 1.65, pc5 1.26 / 1.21 /
//! 1.21, leap (without pageout then: today's leap0) 1.36 / 1.29 / 1.29, leap-po 2.07 / 2.39 / 2.12, mlock-leap
//! 2.12 / 2.39 / 2.19; mean |ln(predicted / measured)| 0.071 for the old
//! model and 0.038 for the new, which is therefore kept ([`TIME_MODEL`];
//! the old one is worse on leap-po and mlock-leap, better on mlock). Before
//! the sim's leap had pageout, leap-po and mlock-leap were predicted 1.29
//! and 1.69. Details: docs/prefetch.md, "Which time model".
use crate::bench::hints::{HintsCell, HintsOptions, HintsSize};
use swaplab_analysis::hints::HintFile;
use swaplab_sim::engine::{simulate_ext, Extras, HintKind, RangeHint};
use swaplab_sim::prefetch::PrefetchSpec;
use swaplab_sim::PolicySpec;
use swaplab_trace::DenseTrace;

/// The policy the predictions use.
pub const POLICY: &str = "linux";

/// The window of `run --prefetch leap|stride` (its `window` default, 1 MiB),
/// in pages.
const EXTERNAL_WINDOW_PAGES: u64 = 256;
/// The largest window of the preload library's prefetch thread (4 MiB).
const THREAD_WINDOW_PAGES: u64 = 1024;
/// `--prefetch leap:pageout=1`'s largest window (2 MiB), in pages.
const PAGEOUT_WINDOW_PAGES: u64 = 512;
/// `--prefetch leap:pageout=1`'s lag (64 KiB), in pages.
const PAGEOUT_LAG_PAGES: u64 = 16;

/// The page-level reference trace of `traverse --size SIZE --passes P`.
pub fn traverse_trace(size: u64, passes: u64) -> DenseTrace {
    let pages = (size / 4096).max(1);
    let refs: Vec<(u64, bool)> = (0..(passes + 1) * pages)
        .map(|i| (i % pages, true))
        .collect();
    DenseTrace::from_refs(&refs)
}

/// The prefetcher spec of the kernel's readahead (`kind` from
/// [`crate::bench::hints::readahead_kind`]) at page-cluster `pc`.
pub fn readahead_spec(kind: &str, pc: u32) -> String {
    match kind {
        "none" => "none".into(),
        k => format!("{k}:pc={}", pc.min(10)),
    }
}

/// How the simulation models `variant` (None: it does not).
/// `larger`: the array is larger than the group's limit, so that leap's
/// `pageout=auto` turns on at the start of the first walk over it (the
/// walk runs in a mapping larger than the limit), and stays on (traverse
/// never comes back to a page before walking the whole array).
fn model_of(variant: &str, readahead: &str, pc: u32, larger: bool) -> Option<String> {
    Some(match variant {
        "base" | "madvise" | "mlock" => readahead_spec(readahead, pc),
        v if v.starts_with("pc") => readahead_spec(readahead, v[2..].parse().ok()?),
        // The external prefetchers: Leap's detector with their windows (1 MiB
        // base, 256 pages, for leap and stride; the preload thread's 4 MiB).
        "leap" if larger => leap_pageout(),
        "leap" | "leap0" | "stride" => format!("leap:max={EXTERNAL_WINDOW_PAGES}"),
        "thread" => format!("leap:max={THREAD_WINDOW_PAGES}"),
        "leap-po" | "mlock-leap" => leap_pageout(),
        _ => return None,
    })
}

/// leap with pageout on (`pageout=1`, which mlock-leap runs too, or
/// `pageout=auto` once on): its largest window is 2 MiB, and it pages out
/// what the walk passed, 64 KiB behind.
fn leap_pageout() -> String {
    format!("leap:max={PAGEOUT_WINDOW_PAGES}:pageout=1:lag={PAGEOUT_LAG_PAGES}")
}

/// Simulated (major faults, pages read ahead, swap-outs) of one cell.
fn simulate_cell(
    trace: &DenseTrace,
    capacity: usize,
    prefetch: &str,
    hints: &[RangeHint],
) -> Option<(u64, u64, u64)> {
    let spec = PolicySpec::parse(POLICY).ok()?;
    let pf = PrefetchSpec::parse(prefetch).ok()?;
    let extras = Extras {
        prefetch: Some(&pf),
        hints,
    };
    simulate_ext(trace, None, &spec, capacity.max(1), 42, &extras, &|_| {})
        .ok()
        .map(|r| {
            let c = r.counters;
            (c.major_faults, c.prefetch_reads, c.swap_outs)
        })
}

/// The first `pages` pages pinned (mlock of the array's start).
fn pinned(pages: u64) -> Vec<RangeHint> {
    if pages == 0 {
        return Vec::new();
    }
    vec![RangeHint {
        start: 0,
        end: pages,
        action: HintKind::Pin,
    }]
}

/// `advise`'s hints applied to the array, pages `0..pages` of the trace
/// (see the module doc); None when the file cannot be modelled (its mlock
/// hints lock more than its budget, which `run --hints` refuses too).
fn advise_hints(file: &HintFile, pages: u64, refs_per_ms: u64) -> Option<Vec<RangeHint>> {
    let mut on_array = file.clone();
    for h in on_array.hints.iter_mut() {
        h.range = Some((0, pages * 4096));
    }
    swaplab_analysis::sim_hints::sim_hints(&on_array, 4096, refs_per_ms.max(1)).ok()
}

/// Fills the simulated columns of one size's cells.
pub fn predict(s: &mut HintsSize, opts: &HintsOptions, readahead: &str, pc: Option<u32>) {
    if opts.workload != "traverse" {
        return;
    }
    let pc = pc.unwrap_or(3);
    let trace = traverse_trace(s.size_bytes, opts.passes);
    let pages = (s.size_bytes / 4096).max(1);
    let other = s.peak_bytes.saturating_sub(s.size_bytes);
    // The advise variant's hint file, as the run used it.
    let advise_file = s.hints_file.as_ref().and_then(|p| {
        let text = std::fs::read_to_string(p).ok()?;
        swaplab_analysis::hints::parse(&text, p).ok()
    });
    // References per millisecond of the unlimited run (for delay_ms).
    let refs_per_ms = s
        .unlimited_wall_s
        .filter(|t| *t > 0.0)
        .map_or(1, |t| (trace.ids.len() as f64 / (t * 1e3)).ceil() as u64);
    for c in s.cells.iter_mut() {
        let (model, hints, what) = if c.variant == "advise" {
            let Some(h) = advise_file
                .as_ref()
                .and_then(|f| advise_hints(f, pages, refs_per_ms))
            else {
                continue;
            };
            let n = h.len();
            (
                readahead_spec(readahead, pc),
                h,
                format!(" + advise's {n} hint(s) on the array"),
            )
        } else {
            let larger = s.size_bytes > c.limit_bytes;
            let Some(model) = model_of(&c.variant, readahead, pc, larger) else {
                continue;
            };
            let n = if c.variant == "mlock" || c.variant == "mlock-leap" {
                c.mlocked_bytes.unwrap_or(0.0) as u64 / 4096
            } else {
                0
            };
            let what = if n > 0 {
                format!(" + {n} pages pinned")
            } else {
                String::new()
            };
            (model, pinned(n), what)
        };
        let capacity = (c.limit_bytes.saturating_sub(other) / 4096) as usize;
        let sim = simulate_cell(&trace, capacity, &model, &hints);
        c.sim_majflt = sim.map(|s| s.0 as f64);
        c.sim_prefetch_reads = sim.map(|s| s.1 as f64);
        c.sim_swap_outs = sim.map(|s| s.2 as f64);
        c.sim_model = format!("{POLICY} + {model}{what} at {capacity} pages");
    }
    relative_to_base(&mut s.cells, s.unlimited_wall_s);
}

/// The time model: which simulated counts carry time (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeModel {
    /// `T = T_0 + F·c_f + R·c_r`: swap-outs carry no time (the model
    /// before 2026-11-26).
    Reads,
    /// `T = T_0 + F·c_f + (R + W)·c_io`: every page moved to or from swap
    /// costs the same, besides a fault's own cost.
    Traffic,
}

/// The model the predictions use (the better of the two on the measured
/// cells that are predictions: docs/prefetch.md, "Prediction").
pub const TIME_MODEL: TimeModel = TimeModel::Traffic;

/// A cell's simulated major faults, pages read ahead and swap-outs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counts {
    f: f64,
    r: f64,
    w: f64,
}

/// The fitted costs, s per event: `T = T_0 + F·cf + R·cr + W·cw`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Costs {
    cf: f64,
    cr: f64,
    cw: f64,
}

impl Costs {
    fn time(&self, t0: f64, n: Counts) -> f64 {
        t0 + n.f * self.cf + n.r * self.cr + n.w * self.cw
    }
}

/// Fits `model`'s costs to `base` (measured wall `tb`) and, when given,
/// `pc0` (its counts and wall): the two cells' predictions then equal
/// their measurements. `Reads`: `c_f` from pc0 (which reads nothing
/// ahead), `c_r` from what base has left. `Traffic`: the 2×2 system of
/// the two cells; a constant that would come out negative is 0 and the
/// other is fitted to pc0 alone. Without pc0 the faults carry all the
/// time above T_0.
fn fit(
    model: TimeModel,
    t0: f64,
    base: Counts,
    tb: f64,
    pc0: Option<(Counts, f64)>,
) -> Option<Costs> {
    let yb = (tb - t0).max(0.0);
    let Some((p, tp)) = pc0.filter(|(p, _)| p.f > 0.0) else {
        return (base.f > 0.0).then(|| Costs {
            cf: yb / base.f,
            cr: 0.0,
            cw: 0.0,
        });
    };
    let yp = (tp - t0).max(0.0);
    match model {
        TimeModel::Reads => {
            let cf = yp / p.f;
            let cr = if base.r > 0.0 {
                ((yb - base.f * cf) / base.r).max(0.0)
            } else {
                0.0
            };
            Some(Costs { cf, cr, cw: 0.0 })
        }
        TimeModel::Traffic => {
            let (a1, b1) = (p.f, p.r + p.w);
            let (a2, b2) = (base.f, base.r + base.w);
            let det = a1 * b2 - a2 * b1;
            let (mut cf, mut cio) = if det != 0.0 {
                ((yp * b2 - yb * b1) / det, (a1 * yb - a2 * yp) / det)
            } else {
                (-1.0, -1.0)
            };
            if cio < 0.0 || det == 0.0 {
                (cf, cio) = (yp / a1, 0.0);
            } else if cf < 0.0 {
                cf = 0.0;
                cio = if b1 > 0.0 { yp / b1 } else { 0.0 };
            }
            Some(Costs {
                cf,
                cr: cio,
                cw: cio,
            })
        }
    }
}

/// The simulated fault reduction and predicted speed-up of each cell
/// against base at the same limit (see the module's time model).
fn relative_to_base(cells: &mut [HintsCell], t0: Option<f64>) {
    relative_to_base_with(cells, t0, TIME_MODEL)
}

fn relative_to_base_with(cells: &mut [HintsCell], t0: Option<f64>, model: TimeModel) {
    let counts = |c: &HintsCell| {
        c.sim_majflt.map(|f| Counts {
            f,
            r: c.sim_prefetch_reads.unwrap_or(0.0),
            w: c.sim_swap_outs.unwrap_or(0.0),
        })
    };
    let limits: Vec<f64> = cells.iter().map(|c| c.limit_pct).collect();
    for pct in limits {
        let find = |v: &str| {
            cells
                .iter()
                .find(|c| c.variant == v && c.limit_pct == pct)
                .map(|c| (counts(c), c.wall_s))
        };
        let Some((Some(base), tb)) = find("base") else {
            continue;
        };
        let pc0 = match find("pc0") {
            Some((Some(p), Some(tp))) => Some((p, tp)),
            _ => None,
        };
        let costs = match (t0, tb) {
            (Some(t0), Some(tb)) => fit(model, t0, base, tb, pc0),
            _ => None,
        };
        for c in cells.iter_mut().filter(|c| c.limit_pct == pct) {
            let Some(n) = counts(c) else { continue };
            if base.f > 0.0 {
                c.sim_fault_reduction = Some(1.0 - n.f / base.f);
            }
            if let (Some(k), Some(t0), Some(tb)) = (costs, t0, tb) {
                let tv = k.time(t0, n);
                if tv > 0.0 {
                    c.sim_speedup = Some(tb / tv);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traverse_trace_is_passes_plus_fill_over_the_pages() {
        let t = traverse_trace(4 * 4096, 2);
        assert_eq!(t.ids.len(), 12);
        assert_eq!(t.distinct(), 4);
        assert_eq!(&t.ids[..8], &[0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn a_sweep_that_does_not_fit_faults_every_page_of_every_pass_without_readahead() {
        // 100 pages, 3 passes after the fill, memory for 60: with no
        // readahead each pass faults all 100 pages back (LRU-like order
        // evicts each page before its next use); the fill's faults are
        // minor. Every miss once memory is full (400 - 60) evicts a page
        // that was written since it came in: 340 swap-outs.
        let t = traverse_trace(100 * 4096, 3);
        assert_eq!(simulate_cell(&t, 60, "none", &[]), Some((300, 0, 340)));
        // Pinning 40 pages keeps them: the other 60 cycle through the 20
        // frames left, and fault every pass: 240 misses, 220 evictions.
        assert_eq!(
            simulate_cell(&t, 60, "none", &pinned(40)),
            Some((180, 0, 220))
        );
        // The page-cluster 0 model is no readahead.
        assert_eq!(readahead_spec("cluster", 0), "cluster:pc=0");
        assert_eq!(
            simulate_cell(&t, 60, "cluster:pc=0", &[]),
            Some((300, 0, 340))
        );
    }

    #[test]
    fn advise_site_hints_act_on_the_array() {
        // 100 pages, 3 passes, memory for 60 (see the test above).
        let t = traverse_trace(100 * 4096, 3);
        let file = |hints: &str, budget: u64| {
            let text = format!("version = 1\nmlock_budget = {budget}\n{hints}");
            swaplab_analysis::hints::parse(&text, "h.toml").unwrap()
        };
        let hint = |action: &str| {
            format!("[[hint]]\nsite = [\"w!xmalloc+0x2a\"]\naction = \"{action}\"\n")
        };
        // An mlock hint of 40 pages is the mlock variant of 40 pages.
        let f = file(&(hint("mlock") + "bytes = 163840\n"), 163840);
        let h = advise_hints(&f, 100, 1).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].start, h[0].end), (0, 40));
        assert_eq!(simulate_cell(&t, 60, "none", &h), Some((180, 0, 220)));
        // bytes = 0 locks the whole array: 100 pages, more than the 60 of
        // memory, which the kernel answers with the OOM killer: no
        // prediction.
        let f = file(&(hint("mlock") + "bytes = 0\n"), 1 << 30);
        let h = advise_hints(&f, 100, 1).unwrap();
        assert_eq!((h[0].start, h[0].end), (0, 100));
        assert_eq!(simulate_cell(&t, 60, "none", &h), None);
        // A willneed hint: pages are read ahead at each fault in the array,
        // so fewer faults than the 300 without it.
        let f = file(&(hint("willneed") + "window = 65536\n"), 0);
        let h = advise_hints(&f, 100, 1).unwrap();
        let (faults, ahead, _) = simulate_cell(&t, 60, "none", &h).unwrap();
        assert!(faults < 300 && ahead > 0, "{faults} {ahead}");
        // pageout 2 ms after the allocation at 10 references a millisecond:
        // after 20 references of the fill.
        let f = file(&(hint("pageout") + "delay_ms = 2\n"), 0);
        let h = advise_hints(&f, 100, 10).unwrap();
        assert!(matches!(h[0].action, HintKind::Pageout { after: 20 }));
    }

    fn cell(v: &str, f: f64, r: f64, w: f64, wall: Option<f64>) -> HintsCell {
        HintsCell {
            variant: v.into(),
            limit_pct: 50.0,
            sim_majflt: Some(f),
            sim_prefetch_reads: Some(r),
            sim_swap_outs: Some(w),
            wall_s: wall,
            ..Default::default()
        }
    }

    #[test]
    fn time_model_fits_base_and_pc0_and_predicts_the_rest() {
        // T_0 = 1 s. pc0: 1000 faults, 1000 swap-outs, 11 s. base: 100
        // faults, 900 read ahead, 1000 swap-outs, 5 s. leap: 10 faults,
        // 990 read ahead, 400 swap-outs.
        let cells = || {
            vec![
                cell("base", 100.0, 900.0, 1000.0, Some(5.0)),
                cell("pc0", 1000.0, 0.0, 1000.0, Some(11.0)),
                cell("leap", 10.0, 990.0, 400.0, None),
            ]
        };
        // Traffic: 1000 c_f + 1000 c_io = 10 and 100 c_f + 1900 c_io = 4:
        // c_io = 3 / 1800 = 1/600 s, c_f = 0.01 - 1/600 = 1/120 s. leap:
        // 1 + 10/120 + 1390/600 = 3.4 s.
        let mut c = cells();
        relative_to_base_with(&mut c, Some(1.0), TimeModel::Traffic);
        // The calibration cells predict themselves.
        assert!((c[0].sim_speedup.unwrap() - 1.0).abs() < 1e-12);
        assert!((c[1].sim_speedup.unwrap() - 5.0 / 11.0).abs() < 1e-12);
        assert!((c[2].sim_speedup.unwrap() - 5.0 / 3.4).abs() < 1e-12);
        assert_eq!(c[2].sim_fault_reduction, Some(0.9));
        // Reads (swap-outs free): c_f = 10 / 1000 = 10 ms from pc0, c_r =
        // (5 - 1 - 1) / 900 s from base. leap: 1 + 0.1 + 990 × 3/900 = 4.4 s.
        let mut c = cells();
        relative_to_base_with(&mut c, Some(1.0), TimeModel::Reads);
        assert!((c[0].sim_speedup.unwrap() - 1.0).abs() < 1e-12);
        assert!((c[1].sim_speedup.unwrap() - 5.0 / 11.0).abs() < 1e-12);
        assert!((c[2].sim_speedup.unwrap() - 5.0 / 4.4).abs() < 1e-12);
        // A fit with a negative c_io (base faster than its traffic allows)
        // keeps c_io = 0 and takes c_f from pc0: 1000 c_f = 10, and base
        // (100 faults, 1000 pages moved, 1.5 s) is predicted at 2 s.
        let mut c = vec![
            cell("base", 100.0, 500.0, 500.0, Some(1.5)),
            cell("pc0", 1000.0, 0.0, 0.0, Some(11.0)),
        ];
        relative_to_base_with(&mut c, Some(1.0), TimeModel::Traffic);
        assert!((c[0].sim_speedup.unwrap() - 1.5 / 2.0).abs() < 1e-12);
        // Without pc0 the faults carry all the time above T_0.
        let mut c = vec![
            cell("base", 1000.0, 0.0, 0.0, Some(11.0)),
            cell("leap", 250.0, 0.0, 0.0, None),
        ];
        relative_to_base(&mut c, Some(1.0));
        assert_eq!(c[1].sim_fault_reduction, Some(0.75));
        assert!((c[1].sim_speedup.unwrap() - 11.0 / 3.5).abs() < 1e-12);
    }

    /// The cells of `swaplab bench hints --sizes 256M --limits 50% --repeat
    /// 5 --variants base,mlock,pc,leap,leap-po,mlock-leap --page-cluster
    /// 0,5` as measured (catalog s50, cluster readahead at page-cluster 3):
    /// (variant, median wall s, median major faults, mlocked bytes).
    const S50: [(&str, f64, f64, f64); 7] = [
        ("base", 5.01156496, 24613.0, 0.0),
        ("mlock", 2.888099342, 13832.0, 117637120.0),
        ("pc0", 13.271705362, 196633.0, 0.0),
        ("pc5", 3.979896938, 6186.0, 0.0),
        // `--prefetch leap` ran without pageout then: today's leap0.
        ("leap0", 3.691625825, 330.0, 0.0),
        ("leap-po", 2.415757942, 3896.0, 0.0),
        ("mlock-leap", 2.361929663, 3791.0, 67371008.0),
    ];

    /// s50 through [`predict`], and the speed-ups under the other model.
    fn s50() -> (HintsSize, Vec<HintsCell>) {
        let mut s = HintsSize {
            size_bytes: 256 << 20,
            peak_bytes: 269484032,
            unlimited_wall_s: Some(0.240338969),
            cells: S50
                .iter()
                .map(|&(v, wall, majflt, locked)| HintsCell {
                    variant: v.into(),
                    limit_pct: 50.0,
                    limit_bytes: 134742016,
                    wall_s: Some(wall),
                    majflt: Some(majflt),
                    speedup: Some(S50[0].1 / wall),
                    mlocked_bytes: (locked > 0.0).then_some(locked),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let opts = HintsOptions {
            workload: "traverse".into(),
            sizes: vec![256 << 20],
            limits: vec![50.0],
            repeat: 5,
            passes: 3,
            swap: "file:2x".into(),
            variants: Vec::new(),
            page_clusters: vec![0, 5],
            timeout: None,
            flush_stats: None,
        };
        predict(&mut s, &opts, "cluster", Some(3));
        let other = match TIME_MODEL {
            TimeModel::Reads => TimeModel::Traffic,
            TimeModel::Traffic => TimeModel::Reads,
        };
        let mut o = s.cells.clone();
        relative_to_base_with(&mut o, s.unlimited_wall_s, other);
        (s, o)
    }

    #[test]
    fn s50_pageout_is_modelled_and_the_kept_time_model_predicts_better() {
        let (s, other) = s50();
        let get = |v: &str| s.cells.iter().find(|c| c.variant == v).unwrap();
        for c in &s.cells {
            eprintln!(
                "{:<10} measured {:.3} | {:?} {:.3} | other {:.3} | F {} R {} W {} | {}",
                c.variant,
                c.speedup.unwrap(),
                TIME_MODEL,
                c.sim_speedup.unwrap(),
                other
                    .iter()
                    .find(|o| o.variant == c.variant)
                    .unwrap()
                    .sim_speedup
                    .unwrap(),
                c.sim_majflt.unwrap(),
                c.sim_prefetch_reads.unwrap(),
                c.sim_swap_outs.unwrap(),
                c.sim_model
            );
        }
        // leap-po pages out what the walk passed: far fewer swap-outs than
        // leap, as the kernel's swap traffic fell.
        let (leap, po) = (get("leap0"), get("leap-po"));
        assert!(
            po.sim_model.contains("pageout=1:lag=16"),
            "{}",
            po.sim_model
        );
        assert!(
            po.sim_swap_outs.unwrap() < 0.8 * leap.sim_swap_outs.unwrap(),
            "{:?} {:?}",
            po.sim_swap_outs,
            leap.sim_swap_outs
        );
        // The kept model is the one with the smaller error (mean |log| of
        // predicted / measured speed-up) on the cells that are predictions.
        let err = |cells: &[HintsCell]| {
            let e: Vec<f64> = cells
                .iter()
                .filter(|c| c.variant != "base" && c.variant != "pc0")
                .map(|c| (c.sim_speedup.unwrap() / c.speedup.unwrap()).ln().abs())
                .collect();
            e.iter().sum::<f64>() / e.len() as f64
        };
        let (kept, alt) = (err(&s.cells), err(&other));
        eprintln!("mean |log error|: {TIME_MODEL:?} {kept:.3}, other {alt:.3}");
        assert!(kept < alt, "{kept} {alt}");
    }
}
