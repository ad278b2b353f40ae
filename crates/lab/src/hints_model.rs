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
//! | leap, stride, thread | Leap's majority-trend prefetcher in place of the kernel's readahead, with the window of the prefetcher it stands for (`leap:max=256`: leap's and stride's 1 MiB base window; `leap:max=1024`: the preload thread's 4 MiB). The kernel's readahead still runs beside them, but on a sequential walk the larger window reads what it would. Timing is not modelled: a prefetcher that reacts late (the preload thread samples per CPU and polls) saves fewer faults than predicted. |
//! | leap-po | leap's model with its 2 MiB largest window (`leap:max=512`); the pages it pages out behind the walk (which keep the rest resident and cut the swap traffic) are not modelled |
//! | mlock-leap | leap's model (as for leap) with the first `mlocked` bytes of the array (half the limit, as the workload reported) pinned |
//! | advise | base, with each hint of `advise`'s file applied to the whole array: traverse's array is the only allocation the preload library logs (above 64 KiB), so every site hint advise writes for it names that array. mlock pins its bytes from the array's start, willneed reads its window ahead at each fault in the array, cold/pageout act `delay_ms` after the first touch, turned into references at the unlimited run's rate. Like `thread`, the willneed hint's prefetch thread is modelled without its timing. |
//!
//! The speed-up is predicted from the simulated major faults F and pages
//! read ahead R with a two-cost time model: `T = T_0 + F·c_f + R·c_r`,
//! where T_0 is the unlimited run's wall time, c_f the cost of a major
//! fault (trap, kernel path and a synchronous read) and c_r that of a page
//! read ahead (asynchronous, batched). The two costs are fitted per limit
//! from two measured cells: `pc0` (no readahead: `c_f = (T_pc0 - T_0) /
//! F_pc0`) and `base` (`c_r = (T_base - T_0 - F_base·c_f) / R_base`). Their
//! own predictions then equal the measurements by construction; every
//! other variant's is a prediction. Without a pc0 cell, c_r = 0 and c_f
//! comes from base alone. The prediction is `T_base / T_v`.
use crate::bench_hints::{HintsCell, HintsOptions, HintsSize};
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

/// The page-level reference trace of `traverse --size SIZE --passes P`.
pub fn traverse_trace(size: u64, passes: u64) -> DenseTrace {
    let pages = (size / 4096).max(1);
    let refs: Vec<(u64, bool)> = (0..(passes + 1) * pages)
        .map(|i| (i % pages, true))
        .collect();
    DenseTrace::from_refs(&refs)
}

/// The prefetcher spec of the kernel's readahead (`kind` from
/// [`crate::bench_hints::readahead_kind`]) at page-cluster `pc`.
pub fn readahead_spec(kind: &str, pc: u32) -> String {
    match kind {
        "none" => "none".into(),
        k => format!("{k}:pc={}", pc.min(10)),
    }
}

/// How the simulation models `variant` (None: it does not).
fn model_of(variant: &str, readahead: &str, pc: u32) -> Option<String> {
    Some(match variant {
        "base" | "madvise" | "mlock" => readahead_spec(readahead, pc),
        v if v.starts_with("pc") => readahead_spec(readahead, v[2..].parse().ok()?),
        // The external prefetchers: Leap's detector with their windows (1 MiB
        // base, 256 pages, for leap and stride; the preload thread's 4 MiB).
        "leap" | "stride" | "mlock-leap" => format!("leap:max={EXTERNAL_WINDOW_PAGES}"),
        "thread" => format!("leap:max={THREAD_WINDOW_PAGES}"),
        // leap with pageout=1: its largest window is 2 MiB; the pages it
        // pages out behind the walk are not modelled.
        "leap-po" => format!("leap:max={PAGEOUT_WINDOW_PAGES}"),
        _ => return None,
    })
}

/// Simulated (major faults, pages read ahead) of one cell.
fn simulate_cell(
    trace: &DenseTrace,
    capacity: usize,
    prefetch: &str,
    hints: &[RangeHint],
) -> Option<(u64, u64)> {
    let spec = PolicySpec::parse(POLICY).ok()?;
    let pf = PrefetchSpec::parse(prefetch).ok()?;
    let extras = Extras {
        prefetch: Some(&pf),
        hints,
    };
    simulate_ext(trace, None, &spec, capacity.max(1), 42, &extras, &|_| {})
        .ok()
        .map(|r| (r.counters.major_faults, r.counters.prefetch_reads))
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
    crate::simulate::sim_hints(&on_array, 4096, refs_per_ms.max(1)).ok()
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
            let Some(model) = model_of(&c.variant, readahead, pc) else {
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
        c.sim_model = format!("{POLICY} + {model}{what} at {capacity} pages");
    }
    relative_to_base(&mut s.cells, s.unlimited_wall_s);
}

/// The simulated fault reduction and predicted speed-up of each cell
/// against base at the same limit (see the module's time model).
fn relative_to_base(cells: &mut [HintsCell], t0: Option<f64>) {
    let limits: Vec<f64> = cells.iter().map(|c| c.limit_pct).collect();
    for pct in limits {
        let find = |v: &str| {
            cells
                .iter()
                .find(|c| c.variant == v && c.limit_pct == pct)
                .map(|c| (c.sim_majflt, c.sim_prefetch_reads, c.wall_s))
        };
        let Some((Some(fb), rb, tb)) = find("base") else {
            continue;
        };
        let rb = rb.unwrap_or(0.0);
        let costs = match (t0, tb, find("pc0")) {
            (Some(t0), Some(tb), Some((Some(f0), _, Some(t_pc0)))) if f0 > 0.0 => {
                let cf = (t_pc0 - t0).max(0.0) / f0;
                let cr = if rb > 0.0 {
                    ((tb - t0 - fb * cf) / rb).max(0.0)
                } else {
                    0.0
                };
                Some((cf, cr))
            }
            (Some(t0), Some(tb), _) if fb > 0.0 => Some(((tb - t0).max(0.0) / fb, 0.0)),
            _ => None,
        };
        for c in cells.iter_mut().filter(|c| c.limit_pct == pct) {
            let Some(fv) = c.sim_majflt else { continue };
            if fb > 0.0 {
                c.sim_fault_reduction = Some(1.0 - fv / fb);
            }
            if let (Some((cf, cr)), Some(t0), Some(tb)) = (costs, t0, tb) {
                let tv = t0 + fv * cf + c.sim_prefetch_reads.unwrap_or(0.0) * cr;
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
        // minor.
        let t = traverse_trace(100 * 4096, 3);
        assert_eq!(simulate_cell(&t, 60, "none", &[]), Some((300, 0)));
        // Pinning 40 pages keeps them: the other 60 cycle through the 20
        // frames left, and fault every pass.
        assert_eq!(simulate_cell(&t, 60, "none", &pinned(40)), Some((180, 0)));
        // The page-cluster 0 model is no readahead.
        assert_eq!(readahead_spec("cluster", 0), "cluster:pc=0");
        assert_eq!(simulate_cell(&t, 60, "cluster:pc=0", &[]), Some((300, 0)));
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
        assert_eq!(simulate_cell(&t, 60, "none", &h), Some((180, 0)));
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
        let (faults, ahead) = simulate_cell(&t, 60, "none", &h).unwrap();
        assert!(faults < 300 && ahead > 0, "{faults} {ahead}");
        // pageout 2 ms after the allocation at 10 references a millisecond:
        // after 20 references of the fill.
        let f = file(&(hint("pageout") + "delay_ms = 2\n"), 0);
        let h = advise_hints(&f, 100, 10).unwrap();
        assert!(matches!(h[0].action, HintKind::Pageout { after: 20 }));
    }

    #[test]
    fn time_model_fits_base_and_pc0_and_predicts_the_rest() {
        let cell = |v: &str, f: f64, r: f64, w: Option<f64>| HintsCell {
            variant: v.into(),
            limit_pct: 50.0,
            sim_majflt: Some(f),
            sim_prefetch_reads: Some(r),
            wall_s: w,
            ..Default::default()
        };
        // T_0 = 1 s. pc0: 1000 faults, 11 s -> c_f = 10 ms. base: 100
        // faults + 900 read ahead in 5 s -> c_r = (5 - 1 - 1) / 900 s.
        let mut cells = vec![
            cell("base", 100.0, 900.0, Some(5.0)),
            cell("pc0", 1000.0, 0.0, Some(11.0)),
            cell("leap", 10.0, 990.0, None),
        ];
        relative_to_base(&mut cells, Some(1.0));
        // The calibration cells predict themselves.
        assert!((cells[0].sim_speedup.unwrap() - 1.0).abs() < 1e-12);
        assert!((cells[1].sim_speedup.unwrap() - 5.0 / 11.0).abs() < 1e-12);
        // leap: 1 + 10 × 0.01 + 990 × 3/900 = 4.4 s.
        let tv = 1.0 + 0.1 + 990.0 * 3.0 / 900.0;
        assert!((cells[2].sim_speedup.unwrap() - 5.0 / tv).abs() < 1e-12);
        assert_eq!(cells[2].sim_fault_reduction, Some(0.9));
        // Without pc0 the faults carry all the time above T_0.
        let mut cells = vec![
            cell("base", 1000.0, 0.0, Some(11.0)),
            cell("leap", 250.0, 0.0, None),
        ];
        relative_to_base(&mut cells, Some(1.0));
        assert_eq!(cells[1].sim_fault_reduction, Some(0.75));
        assert!((cells[1].sim_speedup.unwrap() - 11.0 / 3.5).abs() < 1e-12);
    }
}
