//! Approximate LRU miss-ratio curves by spatial sampling: SHARDS
//! (Waldspurger, Park, Garthwaite, Ahmad: "Efficient MRC Construction with
//! SHARDS", FAST 2015).
//!
//! A page is *sampled* iff `hash64(id) mod P < T` with `P` = 2^32, so a
//! sampled page has all of its references sampled and the sampled pages
//! form an unbiased random subset at rate `R = T / P`. Stack distances are
//! computed among sampled pages only (an exact tracker over the sample)
//! and scaled up by `1 / R`; each sampled reference stands for `1 / R`
//! references.
//!
//! * The hash is of the **dense** page id (0.. in order of first
//!   reference), not of the original page number: it needs no lookup, so
//!   the filter is the only per-reference work for unsampled references
//!   (one multiply-xorshift hash and a compare). The sample is still
//!   deterministic for a given trace, and first-reference order is
//!   independent of the hash.
//! * **Distance scaling.** A sampled reuse at sampled distance `d` saw
//!   `d − 1` other sampled pages; with each of the `k` true others sampled
//!   with probability `R`, `(d − 1) / R` is an unbiased estimate of `k`, so
//!   the scaled distance is `round((d − 1) / R) + 1`. (The paper uses
//!   `d / R`, which is `1 / R − 1` pages too large; the two agree at
//!   `R` = 1 and differ little at the sizes where error is measured.)
//! * **Fixed rate** ([`Sampling::Rate`]): `T = round(R · P)`, constant.
//! * **Fixed size** ([`Sampling::MaxPages`]): start at `R` = 1 and keep at
//!   most `s_max` sampled pages; when a new sampled page would exceed it,
//!   the page with the largest hash value is evicted (taken off the stack)
//!   and `T` is lowered to that hash value (pages with an equal hash go too),
//!   as in the paper. The paper rescales the histogram by `R_new / R_old`
//!   when `R` drops and divides by the final `R` at the end; equivalently,
//!   and what this code does, each sampled reference is weighted by `1 / R`
//!   for the `R` in force when it was processed, and its distance is scaled
//!   with that same `R`.
//! * **Adjustment** (the paper's SHARDS_adj, on by default for both modes).
//!   The miss ratio is estimated misses over estimated references. Without
//!   the adjustment the denominator is the weight of the sampled references
//!   (the paper's plain SHARDS: sampled misses over sampled references).
//!   But the expected weight is exactly the number of references `N` (each
//!   reference is sampled with probability `R` and weighs `1 / R`), and a
//!   few hot pages that happen to be sampled, or not, make the actual
//!   weight differ a lot. SHARDS_adj adds the difference `N − Σ weights`
//!   (which may be negative) to the first bucket (distance 1): hits at
//!   every size, so the denominator becomes `N` and the misses are
//!   unchanged. Miss ratios are clamped to [0, 1].
use super::stack::{StackTracker, MAX_KEYS};
use super::MissRatioCurve;
use crate::error::SimError;
use crate::util::hash64;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BinaryHeap;
use swaplab_trace::dense::DenseTrace;

/// The modulus of the sampling hash: `hash64(id) & MASK` is compared to `T`.
pub const HASH_SPACE: u64 = 1 << 32;
const MASK: u64 = HASH_SPACE - 1;

/// How SHARDS picks its sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Sampling {
    /// Fixed-rate: sample this fraction of pages, 0 < rate ≤ 1 (e.g. 0.01).
    Rate(f64),
    /// Fixed-size: keep at most this many sampled pages (e.g. 8192),
    /// lowering the rate as needed.
    MaxPages(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShardsConfig {
    pub sampling: Sampling,
    /// Apply the SHARDS_adj correction (see the module docs).
    pub adjust: bool,
}

impl ShardsConfig {
    /// Fixed-rate sampling with the adjustment.
    pub fn fixed_rate(rate: f64) -> Self {
        ShardsConfig {
            sampling: Sampling::Rate(rate),
            adjust: true,
        }
    }
    /// Fixed-size sampling with the adjustment.
    pub fn fixed_size(max_pages: usize) -> Self {
        ShardsConfig {
            sampling: Sampling::MaxPages(max_pages),
            adjust: true,
        }
    }
}

/// A scaled (estimated) stack-distance histogram from SHARDS. Counts are
/// estimates of references, hence `f64`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaledHistogram {
    /// `(scaled distance ≥ 1, estimated reuses)`, sorted by distance, one
    /// entry per distinct distance. With the adjustment, the entry at
    /// distance 1 may be negative.
    pub buckets: Vec<(u64, f64)>,
    /// Estimated first references.
    pub cold: f64,
    /// Estimated references: `cold` + the sum of `buckets`, the
    /// denominator of the miss ratio. With the adjustment it is the
    /// trace's length exactly; without, the weight of the sampled references.
    pub total: f64,
    /// The sampling rate at the end (for fixed-size, the lowest reached).
    pub final_rate: f64,
    /// References that passed the filter.
    pub sampled_refs: u64,
    /// Sampled pages tracked at the end.
    pub sampled_pages: u64,
    /// The SHARDS_adj correction added at distance 1 (0 when off).
    pub adjustment: f64,
}

impl ScaledHistogram {
    /// Estimated misses of an LRU memory of `c` pages: cold misses plus
    /// reuses with scaled distance > `c`.
    pub fn misses_at(&self, c: u64) -> f64 {
        let i = self.buckets.partition_point(|&(d, _)| d <= c);
        self.cold + self.buckets[i..].iter().map(|&(_, w)| w).sum::<f64>()
    }

    /// Estimated miss ratio at `c` pages, clamped to [0, 1] (0 for an empty trace).
    pub fn miss_ratio_at(&self, c: u64) -> f64 {
        if self.total <= 0.0 {
            0.0
        } else {
            (self.misses_at(c) / self.total).clamp(0.0, 1.0)
        }
    }

    /// Miss ratios at each of `sizes`.
    pub fn curve(&self, sizes: &[u64]) -> Vec<f64> {
        // Suffix sums: misses beyond bucket i.
        let mut suffix = vec![0.0; self.buckets.len() + 1];
        for i in (0..self.buckets.len()).rev() {
            suffix[i] = suffix[i + 1] + self.buckets[i].1;
        }
        sizes
            .iter()
            .map(|&c| {
                if self.total <= 0.0 {
                    return 0.0;
                }
                let i = self.buckets.partition_point(|&(d, _)| d <= c);
                ((self.cold + suffix[i]) / self.total).clamp(0.0, 1.0)
            })
            .collect()
    }
}

impl MissRatioCurve for ScaledHistogram {
    fn miss_ratio_at(&self, c: u64) -> f64 {
        ScaledHistogram::miss_ratio_at(self, c)
    }
    fn curve(&self, sizes: &[u64]) -> Vec<f64> {
        ScaledHistogram::curve(self, sizes)
    }
}

/// The state behind the filter: touched only by sampled references.
struct Sampler {
    /// Dense page id → tracker key (slot).
    slots: FxHashMap<u32, u32>,
    /// Freed slots (fixed-size evictions), reused for new pages.
    free: Vec<u32>,
    /// Number of slots ever handed out.
    next_slot: u32,
    /// Sampled pages by hash, largest first (fixed-size only).
    heap: BinaryHeap<(u64, u32)>,
    max_pages: Option<usize>,
    tracker: StackTracker,
    threshold: u64,
    /// Scaled distance → weight.
    hist: FxHashMap<u64, f64>,
    cold: f64,
    weight: f64,
    sampled_refs: u64,
}

impl Sampler {
    /// Processes one sampled reference; returns the (possibly lowered) threshold.
    #[inline(never)]
    fn sample(&mut self, id: u32, h: u64) -> u64 {
        self.sampled_refs += 1;
        let rate = self.threshold as f64 / HASH_SPACE as f64;
        let w = 1.0 / rate;
        self.weight += w;
        let (slot, new) = match self.slots.get(&id) {
            Some(&s) => (s, false),
            None => {
                let s = self.free.pop().unwrap_or_else(|| {
                    self.next_slot += 1;
                    self.next_slot - 1
                });
                self.slots.insert(id, s);
                (s, true)
            }
        };
        let d = self.tracker.access(slot);
        if d == 0 {
            self.cold += w;
        } else {
            let scaled = ((d - 1) as f64 / rate).round() as u64 + 1;
            *self.hist.entry(scaled).or_insert(0.0) += w;
        }
        if new {
            if let Some(max) = self.max_pages {
                self.heap.push((h, id));
                if self.slots.len() > max {
                    self.lower_threshold();
                }
            }
        }
        self.threshold
    }

    /// Evicts the sampled page with the largest hash, and every page with
    /// an equal hash, lowering the threshold to that hash.
    fn lower_threshold(&mut self) {
        let Some(&(top, _)) = self.heap.peek() else {
            return;
        };
        self.threshold = top;
        while let Some(&(h, id)) = self.heap.peek() {
            if h < self.threshold {
                break;
            }
            self.heap.pop();
            if let Some(slot) = self.slots.remove(&id) {
                self.tracker.remove(slot);
                self.free.push(slot);
            }
        }
    }
}

/// Computes a SHARDS approximation of the LRU stack-distance histogram.
pub fn shards(trace: &DenseTrace, cfg: &ShardsConfig) -> Result<ScaledHistogram, SimError> {
    shards_with(trace, cfg, &|_| {})
}

/// Like [`shards`], calling `progress(n)` with the number of references
/// done since the last call, every 2^20 references (and once for the last,
/// partial, chunk).
pub fn shards_with(
    trace: &DenseTrace,
    cfg: &ShardsConfig,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ScaledHistogram, SimError> {
    let mut s = ShardsSampler::new(trace.distinct(), cfg)?;
    for chunk in trace.ids.chunks(1 << 20) {
        s.feed(chunk);
        progress(chunk.len() as u64);
    }
    Ok(s.finish())
}

/// SHARDS built a slice of references at a time: the pass of [`shards`]
/// over a trace streamed from disk (`mrc --stream`). Feeding a trace in
/// any cut gives the same histogram.
pub struct ShardsSampler {
    s: Sampler,
    /// The current threshold (lowered by fixed-size evictions).
    t: u64,
    adjust: bool,
    total: u64,
}

impl ShardsSampler {
    /// For a trace of `distinct` pages.
    pub fn new(distinct: usize, cfg: &ShardsConfig) -> Result<Self, SimError> {
        let (threshold, max_pages) = match cfg.sampling {
            Sampling::Rate(r) => {
                if !(r > 0.0 && r <= 1.0) {
                    return Err(SimError::BadParam(format!(
                        "SHARDS sampling rate must be in (0, 1], got {r}"
                    )));
                }
                let t = (r * HASH_SPACE as f64).round() as u64;
                if t == 0 {
                    return Err(SimError::BadParam(format!(
                        "SHARDS sampling rate {r} is below the hash resolution (1/{HASH_SPACE})"
                    )));
                }
                (t, None)
            }
            Sampling::MaxPages(0) => {
                return Err(SimError::BadParam(
                    "SHARDS fixed-size sampling needs at least 1 page".into(),
                ))
            }
            Sampling::MaxPages(s) => (HASH_SPACE, Some(s)),
        };
        if distinct as u64 > MAX_KEYS {
            return Err(SimError::BadParam(format!(
                "trace has {distinct} distinct pages; at most {MAX_KEYS} are supported"
            )));
        }
        // Expected sampled pages, to size the tables.
        let expect = match max_pages {
            Some(s) => s.min(distinct) + 1,
            None => (distinct as f64 * threshold as f64 / HASH_SPACE as f64) as usize + 1,
        };
        Ok(ShardsSampler {
            s: Sampler {
                slots: FxHashMap::with_capacity_and_hasher(expect, Default::default()),
                free: Vec::new(),
                next_slot: 0,
                heap: BinaryHeap::new(),
                max_pages,
                tracker: StackTracker::new(expect, 1024),
                threshold,
                hist: FxHashMap::with_capacity_and_hasher(expect, Default::default()),
                cold: 0.0,
                weight: 0.0,
                sampled_refs: 0,
            },
            t: threshold,
            adjust: cfg.adjust,
            total: 0,
        })
    }

    /// The next references of the trace, in order.
    pub fn feed(&mut self, ids: &[u32]) {
        for &id in ids {
            let h = hash64(id as u64) & MASK;
            if h < self.t {
                self.t = self.s.sample(id, h);
            }
        }
        self.total += ids.len() as u64;
    }

    /// The scaled histogram of everything fed.
    pub fn finish(self) -> ScaledHistogram {
        let mut s = self.s;
        let (total, adjustment) = if self.adjust {
            let n = self.total as f64;
            (n, n - s.weight)
        } else {
            (s.weight, 0.0)
        };
        if adjustment != 0.0 {
            *s.hist.entry(1).or_insert(0.0) += adjustment;
        }
        let mut buckets: Vec<(u64, f64)> = s.hist.into_iter().collect();
        buckets.sort_unstable_by_key(|&(d, _)| d);
        ScaledHistogram {
            buckets,
            cold: s.cold,
            total,
            final_rate: s.threshold as f64 / HASH_SPACE as f64,
            sampled_refs: s.sampled_refs,
            sampled_pages: s.tracker.live() as u64,
            adjustment,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::random_trace;
    use crate::mrc::{mae, mae_sizes, stack_histogram};

    /// A Zipf(α) trace over `pages` pages, by inverse CDF over exact
    /// weights; deterministic (xorshift).
    pub(crate) fn zipf_trace(n: usize, pages: usize, alpha: f64, seed: u64) -> Vec<u64> {
        let mut cdf = Vec::with_capacity(pages);
        let mut acc = 0.0;
        for r in 1..=pages {
            acc += 1.0 / (r as f64).powf(alpha);
            cdf.push(acc);
        }
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64 * acc;
                let rank = cdf.partition_point(|&c| c < u).min(pages - 1);
                // Scatter ranks over page numbers.
                (rank as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20
            })
            .collect()
    }

    fn assert_same_as_exact(pages: &[u64], cfg: ShardsConfig) {
        let t = DenseTrace::from_pages(pages);
        let e = stack_histogram(&t).unwrap();
        let a = shards(&t, &cfg).unwrap();
        assert_eq!(a.final_rate, 1.0);
        assert_eq!(a.adjustment, 0.0);
        assert_eq!(a.cold, e.cold as f64);
        assert_eq!(a.sampled_refs, t.len() as u64);
        let sizes: Vec<u64> = (0..=t.distinct() as u64 + 2).collect();
        for &c in &sizes {
            assert_eq!(a.misses_at(c), e.misses_at(c) as f64, "size {c}");
        }
        assert_eq!(a.curve(&sizes), e.curve(&sizes));
        // Same buckets as the exact histogram.
        let exact: Vec<(u64, f64)> = e
            .counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n != 0)
            .map(|(d, &n)| (d as u64, n as f64))
            .collect();
        assert_eq!(a.buckets, exact);
    }

    #[test]
    fn rate_one_equals_exact() {
        for seed in 1..3 {
            let tr = random_trace(5_000, 300, seed);
            assert_same_as_exact(&tr, ShardsConfig::fixed_rate(1.0));
            let mut cfg = ShardsConfig::fixed_rate(1.0);
            cfg.adjust = false;
            assert_same_as_exact(&tr, cfg);
        }
    }

    #[test]
    fn fixed_size_at_least_footprint_equals_exact() {
        let tr = random_trace(5_000, 300, 4);
        let distinct = DenseTrace::from_pages(&tr).distinct();
        assert_same_as_exact(&tr, ShardsConfig::fixed_size(distinct));
        assert_same_as_exact(&tr, ShardsConfig::fixed_size(distinct + 100));
    }

    #[test]
    fn fixed_rate_ten_percent_is_close() {
        let t = DenseTrace::from_pages(&zipf_trace(200_000, 20_000, 0.9, 42));
        let e = stack_histogram(&t).unwrap();
        let sizes = mae_sizes(t.distinct() as u64);
        let a = shards(&t, &ShardsConfig::fixed_rate(0.1)).unwrap();
        // About 10 % of pages (and references) are sampled.
        let frac = a.sampled_pages as f64 / t.distinct() as f64;
        assert!((0.08..0.12).contains(&frac), "sampled {frac}");
        let err = mae(&e, &a, &sizes);
        assert!(err < 0.02, "MAE {err}");
        // Estimated references: exactly N with the adjustment, the sampled
        // weight without; either way the histogram sums to it.
        let mut cfg = ShardsConfig::fixed_rate(0.1);
        cfg.adjust = false;
        let raw = shards(&t, &cfg).unwrap();
        assert_eq!(raw.adjustment, 0.0);
        assert_eq!(a.total, t.len() as f64);
        assert!((raw.total - (a.total - a.adjustment)).abs() < 1e-6);
        for h in [&a, &raw] {
            let sum = h.cold + h.buckets.iter().map(|b| b.1).sum::<f64>();
            assert!((sum - h.total).abs() < 1e-6 * h.total);
        }
        // The misses are the same; only the denominator differs.
        assert!((a.misses_at(500) - raw.misses_at(500)).abs() < 1e-6);
        assert!(mae(&e, &raw, &sizes) < 0.05);
        // Deterministic.
        assert_eq!(shards(&t, &ShardsConfig::fixed_rate(0.1)).unwrap(), a);
    }

    #[test]
    fn fixed_size_keeps_at_most_s_max_pages_and_is_close() {
        let t = DenseTrace::from_pages(&zipf_trace(200_000, 20_000, 0.9, 7));
        let e = stack_histogram(&t).unwrap();
        let a = shards(&t, &ShardsConfig::fixed_size(2_000)).unwrap();
        assert!(a.sampled_pages <= 2_000);
        // The rate fell to about s_max / footprint.
        let expect = 2_000.0 / t.distinct() as f64;
        assert!(
            (a.final_rate / expect - 1.0).abs() < 0.15,
            "rate {} vs {expect}",
            a.final_rate
        );
        let err = mae(&e, &a, &mae_sizes(t.distinct() as u64));
        assert!(err < 0.03, "MAE {err}");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let t = DenseTrace::from_pages(&[1, 2, 1]);
        for r in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY, 1e-12] {
            let e = shards(&t, &ShardsConfig::fixed_rate(r)).unwrap_err();
            assert!(e.to_string().contains("rate"), "{e}");
        }
        assert!(shards(&t, &ShardsConfig::fixed_size(0)).is_err());
        // s_max = 1 works (the rate drops as needed).
        let a = shards(&t, &ShardsConfig::fixed_size(1)).unwrap();
        assert!(a.sampled_pages <= 1);
        // Empty trace.
        let a = shards(&DenseTrace::from_pages(&[]), &ShardsConfig::fixed_rate(0.5)).unwrap();
        assert_eq!((a.total, a.miss_ratio_at(3)), (0.0, 0.0));
        assert_eq!(a.curve(&[1, 2]), vec![0.0, 0.0]);
    }
}
