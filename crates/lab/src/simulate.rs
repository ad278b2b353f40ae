//! Simulation jobs built from swaplab-sim: every (policy, memory size)
//! pair of a trace in parallel, and the simulation half of `swaplab demo`
//! (a generated trace, every policy, the exact LRU curve). The binary
//! prints what these compute.

use std::path::Path;

use rayon::prelude::*;
use swaplab_analysis::hints::{HintAction, HintFile};
use swaplab_sim::{
    mrc, simulate, simulate_ext, Extras, HintKind, PolicySpec, PrefetchSpec, RangeHint, SimResult,
};
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::DenseTrace;

use crate::error::{Error, Result};

/// Simulates every (policy, size in pages) pair in parallel. `progress`
/// receives the references simulated since its last call (of
/// `trace.len() × pairs` in all).
pub fn run_pairs(
    t: &DenseTrace,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<SimResult>> {
    let needs_future = specs.iter().any(|s| s.info().needs_future);
    let next = needs_future.then(|| t.next_use());
    let pairs: Vec<(&PolicySpec, u64)> = specs
        .iter()
        .flat_map(|s| sizes.iter().map(move |(_, c)| (s, *c)))
        .collect();
    let res: std::result::Result<Vec<SimResult>, _> = pairs
        .par_iter()
        .map(|(s, c)| simulate(t, next.as_deref(), s, *c as usize, seed, progress))
        .collect();
    Ok(res?)
}

/// Like [`run_pairs`], for every (policy, size, prefetcher), with range
/// hints applied to each run; policy-major, then size, then prefetcher.
pub fn run_grid(
    t: &DenseTrace,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    prefetchers: &[PrefetchSpec],
    hints: &[RangeHint],
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<SimResult>> {
    let needs_future = specs.iter().any(|s| s.info().needs_future);
    let next = needs_future.then(|| t.next_use());
    let mut jobs: Vec<(&PolicySpec, u64, &PrefetchSpec)> = Vec::new();
    for s in specs {
        for (_, c) in sizes {
            for p in prefetchers {
                jobs.push((s, *c, p));
            }
        }
    }
    let res: std::result::Result<Vec<SimResult>, _> = jobs
        .par_iter()
        .map(|(s, c, p)| {
            let x = Extras {
                prefetch: Some(p),
                hints,
            };
            simulate_ext(t, next.as_deref(), s, *c as usize, seed, &x, progress)
        })
        .collect();
    Ok(res?)
}

/// Like [`run_grid`], for every (policy, size, prefetcher, device, fault
/// path), with the device and fault-path costs (`swaplab sim --device`);
/// in that order. A device that would take all the memory (zram's stored
/// pages) skips its row only: the second value names each skipped row.
#[allow(clippy::too_many_arguments)]
pub fn run_costed(
    t: &DenseTrace,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    prefetchers: &[PrefetchSpec],
    hints: &[RangeHint],
    devices: &[swaplab_sim::DeviceSpec],
    paths: &[swaplab_sim::FaultPath],
    base_time_s: Option<f64>,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<SimResult>, Vec<String>)> {
    let needs_future = specs.iter().any(|s| s.info().needs_future);
    let next = needs_future.then(|| t.next_use());
    let mut jobs = Vec::new();
    for s in specs {
        for (_, c) in sizes {
            for p in prefetchers {
                for d in devices {
                    for f in paths {
                        jobs.push((s, *c, p, d, f));
                    }
                }
            }
        }
    }
    let res: Vec<_> = jobs
        .par_iter()
        .map(|&(s, c, p, d, f)| {
            let x = Extras {
                prefetch: Some(p),
                hints,
            };
            let costs = swaplab_sim::Costs {
                device: d,
                fault_path: f,
                base_time_s,
            };
            swaplab_sim::simulate_costed(
                t,
                next.as_deref(),
                s,
                c as usize,
                seed,
                &x,
                &costs,
                progress,
            )
        })
        .collect();
    let mut out = Vec::with_capacity(jobs.len());
    let mut skipped = Vec::new();
    for (r, (s, _, p, _, f)) in res.into_iter().zip(&jobs) {
        match r {
            Ok(r) => out.push(r),
            Err(swaplab_sim::SimError::NoMemory(e)) => skipped.push(format!("{s} {p} {f}: {e}")),
            Err(e) => return Err(e.into()),
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(skipped.join("\n")));
    }
    Ok((out, skipped))
}

/// A hint file's range hints as the simulator's page ranges, for a trace
/// whose page numbers are byte addresses / `page_size`. mlock pins `bytes`
/// from the range's start (0 = all of it) within `mlock_budget` (all pins
/// together); willneed's window is rounded up to whole pages; cold and
/// pageout fire `delay_ms × refs_per_ms` references after the range's
/// first touch (a reference trace has no clock). Site hints are refused:
/// no trace `sim` reads carries allocation sites.
pub fn sim_hints(file: &HintFile, page_size: u64, refs_per_ms: u64) -> Result<Vec<RangeHint>> {
    let ps = page_size.max(1);
    let mut out = Vec::new();
    let mut pinned = 0u64;
    for (i, h) in file.hints.iter().enumerate() {
        let Some((a, b)) = h.range else {
            return Err(Error::Invalid(format!(
                "hint {} is a site hint, but this trace has no allocation sites; use range \
                 hints (range = [\"0xSTART\", \"0xEND\"], byte addresses = page number x {ps}) \
                 with `sim`, or apply site hints to a program with `swaplab run --hints`",
                i + 1
            )));
        };
        let (start, end) = (a / ps, b.div_ceil(ps));
        let action = match h.action {
            HintAction::Mlock { bytes } => {
                let len = if bytes == 0 { b - a } else { bytes.min(b - a) };
                pinned = pinned.saturating_add(len);
                if pinned > file.mlock_budget {
                    return Err(Error::Invalid(format!(
                        "hint {}: mlock hints lock {pinned} bytes, more than mlock_budget = {}: \
                         lower their bytes or raise mlock_budget",
                        i + 1,
                        file.mlock_budget
                    )));
                }
                out.push(RangeHint {
                    start,
                    end: (a + len).div_ceil(ps),
                    action: HintKind::Pin,
                });
                continue;
            }
            // The chunk (how much the preload thread releases per step) does
            // not change which pages are read ahead, only when.
            HintAction::Willneed { window, .. } => HintKind::Willneed {
                window: window.div_ceil(ps),
            },
            HintAction::Cold { delay_ms } => HintKind::Cold {
                after: delay_ms.saturating_mul(refs_per_ms),
            },
            HintAction::Pageout { delay_ms } => HintKind::Pageout {
                after: delay_ms.saturating_mul(refs_per_ms),
            },
        };
        out.push(RangeHint { start, end, action });
    }
    Ok(out)
}

/// The demo workload: a Zipf-popular hot set with 30 % writes, interleaved
/// with a loop over a region larger than the small memories (the pattern
/// that defeats LRU) and a one-time sequential scan.
pub const DEMO_PATTERNS: [&str; 3] = [
    "zipf:pages=40000:alpha=0.9:writes=0.3",
    "loop:pages=12000:base=1000000",
    "seq:pages=60000:base=2000000",
];

/// Memory sizes of the demo table, in percent of the footprint.
pub const DEMO_SIZES_PCT: [u64; 4] = [10, 25, 50, 75];

/// What the simulation demo found.
#[derive(Debug)]
pub struct SimDemo {
    /// References in the generated trace.
    pub references: u64,
    /// Distinct pages (the footprint).
    pub distinct: u64,
    /// Bytes per page.
    pub page_size: u64,
    /// Write references.
    pub writes: u64,
    /// Memory sizes: (label such as `25%`, pages).
    pub sizes: Vec<(String, u64)>,
    /// Every policy at every size, policy-major (in [`PolicySpec::parse_list`]`("all")` order).
    pub results: Vec<SimResult>,
    /// The exact LRU miss-ratio curve: (pages, share of the footprint, miss ratio).
    pub lru_curve: Vec<(u64, f64, f64)>,
}

/// The simulation demo: generates [`DEMO_PATTERNS`] interleaved (`count`
/// references, `seed`), optionally saves the trace to `save`, simulates
/// every policy at [`DEMO_SIZES_PCT`] of the footprint and computes the
/// exact LRU curve. Deterministic for a seed.
pub fn sim_demo(
    count: u64,
    seed: u64,
    save: Option<&Path>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimDemo> {
    let generator = || -> Result<Generator> {
        let pats = DEMO_PATTERNS
            .iter()
            .map(|p| p.parse::<Pattern>())
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Generator::new(pats, Some(count), Mix::Interleave, seed)?)
    };
    if let Some(p) = save {
        swaplab_trace::native::write_source(&mut generator()?, p, |_| {})?;
    }
    let t = DenseTrace::load(&mut generator()?)?;
    let d = t.distinct() as u64;
    let specs = PolicySpec::parse_list("all")?;
    let sizes: Vec<(String, u64)> = DEMO_SIZES_PCT
        .iter()
        .map(|p| (format!("{p}%"), d * p / 100))
        .collect();
    let results = run_pairs(&t, &specs, &sizes, seed, progress)?;
    let h = mrc::stack_histogram(&t)?;
    let lru_curve = mrc::sweep_sizes(d, 12)
        .into_iter()
        .map(|c| (c, c as f64 / d as f64, h.miss_ratio_at(c)))
        .collect();
    Ok(SimDemo {
        references: t.len() as u64,
        distinct: d,
        page_size: t.page_size,
        writes: t.write_count(),
        sizes,
        results,
        lru_curve,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_files_become_page_ranges() {
        let text = "version = 1\nmlock_budget = 8192\n\
            [[hint]]\nrange = [\"0x1000\", \"0x9000\"]\naction = \"mlock\"\nbytes = 0\n\
            [[hint]]\nrange = [\"0x10800\", \"0x20001\"]\naction = \"willneed\"\nwindow = 5000\n\
            [[hint]]\nrange = [\"0\", \"4096\"]\naction = \"pageout\"\ndelay_ms = 3\n";
        let f = swaplab_analysis::hints::parse(text, "h.toml").unwrap();
        // The mlock range is 8 pages but the budget is 2 pages: refused.
        let e = sim_hints(&f, 4096, 10).unwrap_err().to_string();
        assert!(e.contains("more than mlock_budget = 8192"), "{e}");
        let f = swaplab_analysis::hints::parse(&text.replace("bytes = 0", "bytes = 5000"), "h")
            .unwrap();
        let h = sim_hints(&f, 4096, 10).unwrap();
        assert_eq!(
            h,
            vec![
                // 0x1000 + 5000 bytes: pages 1 and 2.
                RangeHint {
                    start: 1,
                    end: 3,
                    action: HintKind::Pin
                },
                // 0x10800..0x20001: pages 16..=32; 5000 bytes = 2 pages.
                RangeHint {
                    start: 16,
                    end: 33,
                    action: HintKind::Willneed { window: 2 }
                },
                RangeHint {
                    start: 0,
                    end: 1,
                    action: HintKind::Pageout { after: 30 }
                },
            ]
        );
        let site = "version = 1\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"cold\"\ndelay_ms = 1\n";
        let f = swaplab_analysis::hints::parse(site, "h").unwrap();
        let e = sim_hints(&f, 4096, 1).unwrap_err().to_string();
        assert!(
            e.contains("this trace has no allocation sites; use range hints"),
            "{e}"
        );
    }

    #[test]
    fn the_sim_demo_is_deterministic_and_complete() {
        let a = sim_demo(20_000, 7, None, &|_| {}).unwrap();
        let b = sim_demo(20_000, 7, None, &|_| {}).unwrap();
        let policies = PolicySpec::parse_list("all").unwrap().len();
        assert_eq!(a.references, 20_000);
        assert_eq!(a.results.len(), policies * DEMO_SIZES_PCT.len());
        let mr = |d: &SimDemo| d.results.iter().map(|r| r.miss_ratio).collect::<Vec<_>>();
        assert_eq!(mr(&a), mr(&b));
        // The LRU curve never rises with more memory.
        assert!(a.lru_curve.windows(2).all(|w| w[1].2 <= w[0].2 + 1e-12));
    }
}
