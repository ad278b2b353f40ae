//! Simulations over a trace streamed from disk ([`DenseStream`]): memory
//! for the distinct pages (each simulation's policy and state byte per
//! page), never for the references. Every (policy, size) of a grid shares
//! one read: each row group is decoded once and fed to every simulation,
//! in parallel when there are several.
use rayon::prelude::*;
use swaplab_trace::stream::{DenseStream, StreamOptions};

use crate::engine::Sim;
use crate::error::Result;
use crate::{PolicySpec, SimResult};

/// What a stream must carry for `specs`: OPT's next use when any needs it
/// (a backward pass over the file first, spilled under `spill_dir`).
pub fn options(specs: &[PolicySpec], spill_dir: Option<std::path::PathBuf>) -> StreamOptions {
    StreamOptions {
        next_use: specs.iter().any(|s| s.info().needs_future),
        spill_dir,
    }
}

/// Simulates every (policy, size in pages) pair over one read of
/// `stream`, policy-major as [`jobs::run_pairs`](crate::jobs::run_pairs)
/// lists them. `progress` receives the references simulated since its
/// last call (of the trace's length × pairs in all).
pub fn run_pairs(
    stream: &mut DenseStream,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<SimResult>> {
    let pages = stream.distinct() as usize;
    let mut sims = sims(specs, sizes, pages, seed)?;
    while let Some(c) = stream.next_chunk()? {
        let feed = |s: &mut Sim| {
            let r = s.feed(c.start, &c.ids, &c.writes, &c.next_use);
            progress(c.len() as u64);
            r
        };
        if sims.len() == 1 {
            sims.iter_mut().try_for_each(feed)?;
        } else {
            sims.par_iter_mut().try_for_each(feed)?;
        }
    }
    Ok(sims.iter().map(Sim::result).collect())
}

/// One simulation per (policy, size in pages), policy-major.
fn sims(
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    pages: usize,
    seed: u64,
) -> Result<Vec<Sim>> {
    Ok(specs
        .iter()
        .flat_map(|s| sizes.iter().map(move |(_, c)| (s, *c)))
        .map(|(s, c)| Sim::new(s, c as usize, pages, seed))
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// What [`mrc_pass`] computes over one read.
pub struct MrcPass {
    /// LRU's exact stack-distance histogram.
    pub exact: crate::mrc::StackHistogram,
    /// One SHARDS histogram per asked configuration, in order.
    pub shards: Vec<crate::mrc::ScaledHistogram>,
    /// Every (policy, size) pair, policy-major (as [`run_pairs`]).
    pub sims: Vec<SimResult>,
}

/// `mrc --stream` (and `info --stream`, without SHARDS and policies): the
/// exact LRU histogram, each SHARDS configuration and every (policy, size
/// in pages) simulation over one read of `stream`, the histograms on one
/// thread beside the simulations. Memory: the histograms' per-page state
/// and the policies', never the references. `progress` receives the
/// references done (the trace's length × (1 + pairs) in all).
pub fn mrc_pass(
    stream: &mut DenseStream,
    shards: &[crate::mrc::ShardsConfig],
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<MrcPass> {
    use crate::mrc::{ShardsSampler, StackHistogrammer};
    let pages = stream.distinct() as usize;
    let mut exact = StackHistogrammer::new(pages)?;
    let mut samplers = shards
        .iter()
        .map(|c| ShardsSampler::new(pages, c))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut sims = sims(specs, sizes, pages, seed)?;
    while let Some(c) = stream.next_chunk()? {
        let (_, r) = rayon::join(
            || {
                exact.feed(&c.ids);
                samplers.iter_mut().for_each(|s| s.feed(&c.ids));
                progress(c.len() as u64);
            },
            || {
                sims.par_iter_mut().try_for_each(|s| {
                    let r = s.feed(c.start, &c.ids, &c.writes, &c.next_use);
                    progress(c.len() as u64);
                    r
                })
            },
        );
        r?;
    }
    Ok(MrcPass {
        exact: exact.finish(),
        shards: samplers.into_iter().map(ShardsSampler::finish).collect(),
        sims: sims.iter().map(Sim::result).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::REGISTRY;
    use crate::simulate;
    use swaplab_trace::native::{write_source, ROWS_PER_GROUP};
    use swaplab_trace::{DenseTrace, Ref, VecSource};

    fn write(dir: &std::path::Path, refs: Vec<Ref>) -> std::path::PathBuf {
        let p = dir.join("t.parquet");
        write_source(&mut VecSource::new(refs), &p, |_| {}).unwrap();
        p
    }

    /// [`trace`] written to `dir` as a native trace, and loaded whole.
    fn written(
        dir: &std::path::Path,
        n: usize,
        pages: u64,
        seed: u64,
    ) -> (std::path::PathBuf, DenseTrace) {
        let p = write(dir, trace(n, pages, seed));
        let t =
            DenseTrace::load(&mut swaplab_trace::native::NativeReader::open(&p).unwrap()).unwrap();
        (p, t)
    }

    /// A trace with a hot set, a uniform tail, loops and a third writes,
    /// over `pages` distinct pages (scattered page numbers).
    fn trace(n: usize, pages: u64, seed: u64) -> Vec<Ref> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let p = match x % 8 {
                    0..=3 => (x >> 20) % (pages / 16 + 1),
                    4 | 5 => (x >> 20) % pages,
                    _ => (i as u64 / 2) % (pages / 4 + 1),
                };
                let page = p.wrapping_mul(0x1000_0000_01B3) >> 8;
                if (x >> 40).is_multiple_of(3) {
                    Ref::write(page)
                } else {
                    Ref::read(page)
                }
            })
            .collect()
    }

    /// The streaming engine gives the in-memory engine's counters (misses,
    /// minor and major faults, hits, evictions, swap-outs) for every
    /// registered policy at several sizes, over a trace of three row
    /// groups, all (policy, size) pairs fed from one read.
    #[test]
    fn streaming_equals_in_memory_for_every_policy() {
        let dir = tempfile::tempdir().unwrap();
        let (p, t) = written(dir.path(), ROWS_PER_GROUP * 2 + 54_321, 40_000, 3);
        let specs: Vec<PolicySpec> = REGISTRY
            .iter()
            .map(|i| PolicySpec::parse(i.name).unwrap())
            .collect();
        let d = t.distinct() as u64;
        let sizes: Vec<(String, u64)> = [1, d / 100, d / 10, d / 2, d + 5]
            .iter()
            .map(|&c| (c.to_string(), c))
            .collect();
        let mut s = DenseStream::open(&p, &options(&specs, None)).unwrap();
        let got = run_pairs(&mut s, &specs, &sizes, 9, &|_| {}).unwrap();
        let nu = t.next_use();
        let mut k = 0;
        for spec in &specs {
            for (_, c) in &sizes {
                let want = simulate(&t, Some(&nu), spec, *c as usize, 9, &|_| {}).unwrap();
                let g = &got[k];
                assert_eq!((&g.policy, g.capacity), (&want.policy, want.capacity));
                assert_eq!(g.counters, want.counters, "{spec} at {c} pages");
                assert_eq!(g.counters.references, t.len() as u64);
                k += 1;
            }
        }
        // The trace is not trivial for them: some miss, some swap out.
        assert!(got
            .iter()
            .any(|r| r.counters.swap_outs > 0 && r.counters.hits > 0));
    }

    /// One streamed read gives the in-memory exact curve, SHARDS curves
    /// (fixed rate and fixed size) and policy simulations, exactly: the
    /// histograms do not depend on where the trace is cut.
    #[test]
    fn the_mrc_pass_equals_the_in_memory_curves_and_simulations() {
        use crate::mrc::{shards, stack_histogram, ShardsConfig};
        let dir = tempfile::tempdir().unwrap();
        let (p, t) = written(dir.path(), ROWS_PER_GROUP * 2 + 777, 30_000, 5);
        let cfgs = [ShardsConfig::fixed_rate(0.1), ShardsConfig::fixed_size(500)];
        let specs = [
            PolicySpec::parse("lru").unwrap(),
            PolicySpec::parse("opt").unwrap(),
        ];
        let d = t.distinct() as u64;
        let sizes: Vec<(String, u64)> = [d / 20, d / 3]
            .iter()
            .map(|&c| (c.to_string(), c))
            .collect();
        let mut s = DenseStream::open(&p, &options(&specs, None)).unwrap();
        let done = std::sync::atomic::AtomicU64::new(0);
        let got = mrc_pass(&mut s, &cfgs, &specs, &sizes, 1, &|n| {
            done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(done.into_inner(), t.len() as u64 * 5);
        let want = stack_histogram(&t).unwrap();
        let all: Vec<u64> = (1..=d).collect();
        assert_eq!(got.exact.curve(&all), want.curve(&all));
        assert_eq!(
            (got.exact.reuses(), got.exact.max_distance()),
            (want.reuses(), want.max_distance())
        );
        for (g, c) in got.shards.iter().zip(&cfgs) {
            let w = shards(&t, c).unwrap();
            assert_eq!(g.curve(&all), w.curve(&all));
            assert_eq!(
                (g.sampled_refs, g.sampled_pages),
                (w.sampled_refs, w.sampled_pages)
            );
        }
        // LRU's simulation agrees with the exact curve: the stack property.
        for (r, (_, c)) in got.sims.iter().zip(&sizes) {
            assert_eq!(r.counters.misses(), got.exact.misses_at(*c), "lru at {c}");
        }
        let nu = t.next_use();
        for (r, (_, c)) in got.sims[sizes.len()..].iter().zip(&sizes) {
            let w = simulate(&t, Some(&nu), &specs[1], *c as usize, 1, &|_| {}).unwrap();
            assert_eq!(r.counters, w.counters, "opt at {c}");
        }
    }

    /// Small enough to count by hand (the engine's memory model, with LRU
    /// and OPT over 2 pages): 1w 2r 3r 1r 2w 1r.
    #[test]
    fn a_hand_checked_trace_streams_to_the_known_counts() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            vec![
                Ref::write(1),
                Ref::read(2),
                Ref::read(3),
                Ref::read(1),
                Ref::write(2),
                Ref::read(1),
            ],
        );
        let specs = PolicySpec::parse_list("lru,opt").unwrap();
        let mut s = DenseStream::open(&p, &options(&specs, None)).unwrap();
        let r = run_pairs(&mut s, &specs, &[("2".into(), 2)], 0, &|_| {}).unwrap();
        let five = |r: &SimResult| {
            let c = r.counters;
            (
                c.minor_faults,
                c.major_faults,
                c.hits,
                c.evictions,
                c.swap_outs,
            )
        };
        // LRU: 1 2 3(evicts 1, dirty) 1(major, evicts 2, dirty) 2(major,
        // evicts 3, dirty) 1(hit).
        assert_eq!(five(&r[0]), (3, 2, 1, 3, 3));
        // OPT: 1 2 3(evicts 2: next used at 4, after 1 at 3) 1(hit)
        // 2(major, evicts 3: never used again) 1(hit).
        assert_eq!(five(&r[1]), (3, 1, 2, 2, 2));
    }

    #[test]
    fn opt_without_next_use_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), trace(1000, 100, 1));
        let specs = PolicySpec::parse_list("opt").unwrap();
        let mut s = DenseStream::open(&p, &StreamOptions::default()).unwrap();
        let e = run_pairs(&mut s, &specs, &[("10".into(), 10)], 0, &|_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs each reference's next use"), "{e}");
    }
}
