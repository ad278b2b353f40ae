//! Simulation jobs: every (policy, memory size) pair of a trace in
//! parallel, with prefetchers, hints and device costs, and the simulation
//! half of `swaplab demo` (a generated trace, every policy, the exact LRU
//! curve). The binary prints what these compute.

use std::path::Path;

use rayon::prelude::*;
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::DenseTrace;

use crate::error::{Error, Result};
use crate::{mrc, simulate, simulate_ext, Extras, PolicySpec, PrefetchSpec, RangeHint, SimResult};

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
    devices: &[crate::DeviceSpec],
    paths: &[crate::FaultPath],
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
            let costs = crate::Costs {
                device: d,
                fault_path: f,
                base_time_s,
            };
            crate::simulate_costed(
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
            Err(crate::SimError::NoMemory(e)) => skipped.push(format!("{s} {p} {f}: {e}")),
            Err(e) => return Err(e.into()),
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(skipped.join("\n")));
    }
    Ok((out, skipped))
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
