//! Exact LRU miss-ratio curve in one pass (Mattson et al., 1970).
//!
//! LRU is a stack algorithm: a memory of `c` pages holds the `c` most
//! recently used pages, so a reference hits iff its stack distance (see
//! `super::stack`) is at most `c`. One pass that histograms the distances
//! therefore gives the miss count at every size at once.
use super::stack::{prefetch, StackTracker, MAX_KEYS};
use super::MissRatioCurve;
use crate::error::SimError;
use serde::Serialize;
use swaplab_trace::dense::DenseTrace;

/// Histogram of LRU stack distances of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackHistogram {
    /// `counts[d]` is the number of reuses at stack distance `d`: the `d`-th
    /// most recently used page was referenced (so `d` = 1 is an immediate
    /// re-reference). `counts[0]` is always 0; the vector ends at the
    /// largest distance seen and is empty when no page was reused.
    pub counts: Vec<u64>,
    /// First references (misses at every size).
    pub cold: u64,
    /// All references: `cold + reuses()`.
    pub total: u64,
}

impl StackHistogram {
    /// References that re-reference a page (`total - cold`).
    pub fn reuses(&self) -> u64 {
        self.total - self.cold
    }

    /// The largest stack distance seen, 0 if there was no reuse.
    pub fn max_distance(&self) -> u64 {
        self.counts.len().saturating_sub(1) as u64
    }

    /// Hits of an LRU memory of `c` pages: reuses with distance ≤ `c`.
    pub fn hits_at(&self, c: u64) -> u64 {
        let end = (c.min(self.max_distance()) as usize + 1).min(self.counts.len());
        self.counts[..end].iter().sum()
    }

    /// Misses of an LRU memory of `c` pages: cold misses plus reuses with
    /// distance > `c`. `misses_at(0)` is `total`.
    pub fn misses_at(&self, c: u64) -> u64 {
        self.total - self.hits_at(c)
    }

    /// `misses_at(c) / total` (0 for an empty trace).
    pub fn miss_ratio_at(&self, c: u64) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.misses_at(c) as f64 / self.total as f64
        }
    }

    /// Miss ratios at each of `sizes` (one cumulative pass, then O(1) per size).
    pub fn curve(&self, sizes: &[u64]) -> Vec<f64> {
        if self.total == 0 {
            return vec![0.0; sizes.len()];
        }
        let mut cum = Vec::with_capacity(self.counts.len());
        let mut acc = 0u64;
        for &n in &self.counts {
            acc += n;
            cum.push(acc);
        }
        sizes
            .iter()
            .map(|&c| {
                let hits = if cum.is_empty() {
                    0
                } else {
                    cum[c.min(self.max_distance()) as usize]
                };
                (self.total - hits) as f64 / self.total as f64
            })
            .collect()
    }

    /// The `p`-th percentile (0 ≤ `p` ≤ 100) of the stack distances of
    /// **reuses** (first references have no distance and are left out), by
    /// the nearest-rank method: the smallest distance `d` such that at least
    /// `p` % of reuses have distance ≤ `d`. `percentile(0.0)` is the
    /// smallest distance seen, `percentile(100.0)` the largest. Read it as
    /// "an LRU memory of `d` pages would hit `p` % of the reuses". `None`
    /// when there is no reuse or `p` is outside [0, 100] (or NaN).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let n = self.reuses();
        if n == 0 || !(0.0..=100.0).contains(&p) {
            return None;
        }
        let rank = ((p * n as f64 / 100.0).ceil() as u64).clamp(1, n);
        let mut acc = 0u64;
        for (d, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return Some(d as u64);
            }
        }
        None
    }
}

impl MissRatioCurve for StackHistogram {
    fn miss_ratio_at(&self, c: u64) -> f64 {
        StackHistogram::miss_ratio_at(self, c)
    }
    fn curve(&self, sizes: &[u64]) -> Vec<f64> {
        StackHistogram::curve(self, sizes)
    }
}

/// Computes the LRU stack-distance histogram of `trace` in one pass.
/// O(log distinct) per reference; memory about 4.5 bytes per distinct page
/// for the tracker plus 8 per distance bucket (at most one per distinct
/// page). Fails only for traces with about 2^31 or more distinct pages.
pub fn stack_histogram(trace: &DenseTrace) -> Result<StackHistogram, SimError> {
    stack_histogram_with(trace, &|_| {})
}

/// Like [`stack_histogram`], calling `progress(n)` with the number of
/// references done since the last call, every 2^20 references (and once
/// for the last, partial, chunk).
pub fn stack_histogram_with(
    trace: &DenseTrace,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<StackHistogram, SimError> {
    let mut h = StackHistogrammer::new(trace.distinct())?;
    for chunk in trace.ids.chunks(1 << 20) {
        h.feed(chunk);
        progress(chunk.len() as u64);
    }
    Ok(h.finish())
}

/// The exact histogram built a slice of references at a time: the pass of
/// [`stack_histogram`] over a trace streamed from disk (`mrc --stream`,
/// `info --stream`), whose memory is the tracker and the buckets, never
/// the references. Feeding a trace in any cut gives the same histogram.
pub struct StackHistogrammer {
    tracker: StackTracker,
    /// counts[0] collects first references during the pass. Distances
    /// never exceed the number of distinct pages. (Zeroed allocation:
    /// pages that are never written are never touched.)
    counts: Vec<u64>,
    total: u64,
}

impl StackHistogrammer {
    /// For a trace of `distinct` pages (dense ids below it). Fails for
    /// about 2^31 distinct pages or more.
    pub fn new(distinct: usize) -> Result<Self, SimError> {
        if distinct as u64 > MAX_KEYS {
            return Err(SimError::BadParam(format!(
                "trace has {distinct} distinct pages; the exact miss-ratio curve handles at most \
                 {MAX_KEYS}: use SHARDS sampling instead"
            )));
        }
        Ok(StackHistogrammer {
            tracker: StackTracker::new(distinct, 0),
            counts: vec![0u64; distinct + 1],
            total: 0,
        })
    }

    /// The next references of the trace, in order.
    pub fn feed(&mut self, ids: &[u32]) {
        // The pass is bound by cache misses on three random accesses per
        // reference: the page's last position, its bitmap word and the
        // histogram bucket. The first two are prefetched some references
        // ahead (the trace is known in advance); distances are buffered and
        // counted a block at a time with the buckets prefetched.
        const AHEAD: usize = 16;
        const BLOCK: usize = 256;
        let (tracker, counts) = (&mut self.tracker, &mut self.counts);
        let mut dist = [0u32; BLOCK];
        for (bi, block) in ids.chunks(BLOCK).enumerate() {
            let start = bi * BLOCK;
            for (j, &id) in block.iter().enumerate() {
                let i = start + j;
                if let Some(&f) = ids.get(i + AHEAD) {
                    tracker.prefetch_key(f);
                }
                if let Some(&f) = ids.get(i + AHEAD / 2) {
                    tracker.prefetch_position(f);
                }
                dist[j] = tracker.access(id);
            }
            let dist = &dist[..block.len()];
            for (j, &d) in dist.iter().enumerate() {
                if let Some(&f) = dist.get(j + AHEAD) {
                    prefetch(counts.as_ptr().wrapping_add(f as usize));
                }
                if let Some(c) = counts.get_mut(d as usize) {
                    *c += 1;
                }
            }
        }
        self.total += ids.len() as u64;
    }

    /// The histogram of everything fed.
    pub fn finish(self) -> StackHistogram {
        let mut counts = self.counts;
        let cold = std::mem::take(&mut counts[0]);
        let end = counts.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        counts.truncate(end);
        counts.shrink_to_fit();
        StackHistogram {
            counts,
            cold,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::simulate_checked;
    use crate::engine::testutil::random_trace;
    use crate::policy::PolicySpec;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    #[test]
    fn hand_worked_histogram() {
        // a b c a b d a: distances ∞ ∞ ∞ 3 3 ∞ 3 (stacks in stack.rs's test).
        let t = DenseTrace::from_pages(&[10, 11, 12, 10, 11, 13, 10]);
        let h = stack_histogram(&t).unwrap();
        assert_eq!(h.counts, vec![0, 0, 0, 3]);
        assert_eq!((h.cold, h.total, h.reuses()), (4, 7, 3));
        // 1 and 2 pages: everything misses; 3 pages: the three reuses hit.
        assert_eq!(h.misses_at(0), 7);
        assert_eq!(h.misses_at(1), 7);
        assert_eq!(h.misses_at(2), 7);
        assert_eq!(h.misses_at(3), 4);
        assert_eq!(h.misses_at(1000), 4);
        assert_eq!(h.miss_ratio_at(3), 4.0 / 7.0);
        assert_eq!(
            h.curve(&[0, 2, 3, 4, u64::MAX]),
            vec![1.0, 1.0, 4.0 / 7.0, 4.0 / 7.0, 4.0 / 7.0]
        );
        assert_eq!(h.percentile(50.0), Some(3));
    }

    #[test]
    fn empty_and_no_reuse() {
        let h = stack_histogram(&DenseTrace::from_pages(&[])).unwrap();
        assert_eq!((h.counts.len(), h.cold, h.total), (0, 0, 0));
        assert_eq!(h.miss_ratio_at(5), 0.0);
        assert_eq!(h.curve(&[1, 2]), vec![0.0, 0.0]);
        assert_eq!(h.percentile(50.0), None);
        let h = stack_histogram(&DenseTrace::from_pages(&[1, 2, 3])).unwrap();
        assert_eq!((h.counts.len(), h.cold, h.max_distance()), (0, 3, 0));
        assert_eq!(h.curve(&[0, 1, 9]), vec![1.0, 1.0, 1.0]);
        assert_eq!(h.misses_at(7), 3);
    }

    #[test]
    fn percentile_hand_worked() {
        // Reuse distances: 1 ×2, 2 ×1, 5 ×6, 9 ×1 (10 reuses), 4 cold.
        let h = StackHistogram {
            counts: vec![0, 2, 1, 0, 0, 6, 0, 0, 0, 1],
            cold: 4,
            total: 14,
        };
        // Sorted reuse distances: 1 1 2 5 5 5 5 5 5 9.
        // Nearest rank r = ceil(p/100 · 10), answer = r-th smallest.
        assert_eq!(h.percentile(0.0), Some(1)); // r clamped to 1
        assert_eq!(h.percentile(10.0), Some(1)); // r = 1
        assert_eq!(h.percentile(20.0), Some(1)); // r = 2
        assert_eq!(h.percentile(21.0), Some(2)); // r = 3
        assert_eq!(h.percentile(30.0), Some(2)); // r = 3
        assert_eq!(h.percentile(31.0), Some(5)); // r = 4
        assert_eq!(h.percentile(90.0), Some(5)); // r = 9
        assert_eq!(h.percentile(90.5), Some(9)); // r = 10
        assert_eq!(h.percentile(100.0), Some(9));
        assert_eq!(h.percentile(-1.0), None);
        assert_eq!(h.percentile(100.1), None);
        assert_eq!(h.percentile(f64::NAN), None);
    }

    /// The one-pass curve equals LRU simulated at every size.
    fn check_against_lru(pages: &[u64]) {
        let t = DenseTrace::from_pages(pages);
        let h = stack_histogram(&t).unwrap();
        let lru = PolicySpec::parse("lru").unwrap();
        let sizes: Vec<u64> = (1..=t.distinct() as u64 + 1).collect();
        let curve = h.curve(&sizes);
        for (&c, &mr) in sizes.iter().zip(&curve) {
            let r = simulate_checked(&t, &lru, c as usize, 0).unwrap();
            assert_eq!(h.misses_at(c), r.counters.misses(), "size {c}");
            assert_eq!(mr, r.counters.miss_ratio(), "size {c}");
        }
        assert_eq!(h.cold, t.distinct() as u64);
        assert_eq!(h.total, t.len() as u64);
    }

    #[test]
    fn equals_lru_simulation_at_every_size() {
        for seed in 1..4 {
            // 5 000 references over 300 pages: the tracker's 600 positions
            // are compacted about eight times.
            check_against_lru(&random_trace(5_000, 300, seed));
        }
        // Loops larger than memory, a scan, and a mix with a long tail.
        let lp: Vec<u64> = (0..50).cycle().take(2_000).collect();
        check_against_lru(&lp);
        let mut mixed = random_trace(3_000, 120, 9);
        mixed.extend(0..400);
        mixed.extend(random_trace(3_000, 120, 10));
        check_against_lru(&mixed);
    }

    #[test]
    fn progress_reports_every_2_pow_20() {
        let pages: Vec<u64> = (0..10).cycle().take((1 << 20) + 5).collect();
        let t = DenseTrace::from_pages(&pages);
        let calls = Mutex::new(Vec::new());
        let sum = AtomicU64::new(0);
        let h = stack_histogram_with(&t, &|n| {
            sum.fetch_add(n, Ordering::Relaxed);
            calls.lock().unwrap().push(n);
        })
        .unwrap();
        assert_eq!(*calls.lock().unwrap(), vec![1 << 20, 5]);
        assert_eq!(sum.load(Ordering::Relaxed), t.len() as u64);
        // A loop of 10 pages: every reuse is at distance 10.
        assert_eq!(h.counts.len(), 11);
        assert_eq!(h.counts[10], t.len() as u64 - 10);
    }
}
