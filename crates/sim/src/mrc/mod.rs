//! Miss-ratio curves.
//!
//! * [`exact`]: the LRU stack-distance histogram of a whole trace in one
//!   pass (Mattson et al. 1970), hence the exact LRU miss ratio at every
//!   memory size: [`stack_histogram`] → [`StackHistogram`].
//! * [`shards`](mod@shards): the same, approximated by spatial sampling
//!   (Waldspurger et al., FAST 2015), fixed-rate or fixed-size:
//!   [`shards()`] → [`ScaledHistogram`].
//! * [`mae`] over [`mae_sizes`]: how far an approximation is from the exact curve.
//! * [`sweep_sizes`]: the memory sizes at which the CLI simulates policies
//!   that are not stack algorithms (their curves need one simulation per size).
//!
//! Sizes are in pages; "a memory of `c` pages" is an LRU memory that holds
//! `c` pages, and a reference with stack distance `d` hits in it iff `d ≤ c`.

pub mod exact;
pub mod shards;
mod stack;

pub use exact::{stack_histogram, stack_histogram_with, StackHistogram, StackHistogrammer};
pub use shards::{shards, shards_with, Sampling, ScaledHistogram, ShardsConfig, ShardsSampler};

/// Anything that gives a miss ratio per memory size.
pub trait MissRatioCurve {
    /// Miss ratio of a memory of `c` pages, in [0, 1].
    fn miss_ratio_at(&self, c: u64) -> f64;
    /// Miss ratios at each of `sizes`.
    fn curve(&self, sizes: &[u64]) -> Vec<f64> {
        sizes.iter().map(|&c| self.miss_ratio_at(c)).collect()
    }
}

/// Mean absolute error of `approx`'s miss ratio against `exact`'s over
/// `sizes` (0 when `sizes` is empty). The SHARDS paper's measure, taken
/// over [`mae_sizes`]`(distinct)`.
pub fn mae(exact: &dyn MissRatioCurve, approx: &dyn MissRatioCurve, sizes: &[u64]) -> f64 {
    if sizes.is_empty() {
        return 0.0;
    }
    let e = exact.curve(sizes);
    let a = approx.curve(sizes);
    e.iter().zip(&a).map(|(x, y)| (x - y).abs()).sum::<f64>() / sizes.len() as f64
}

/// The sizes [`mae`] is measured at: 100 evenly spaced sizes
/// `ceil(k · distinct / 100)` for k = 1..=100, i.e. 1 %, 2 %, …, 100 % of
/// the footprint (fewer when `distinct` < 100: duplicates are dropped;
/// empty when `distinct` is 0).
pub fn mae_sizes(distinct: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..=100u128)
        .map(|k| (k * distinct as u128).div_ceil(100) as u64)
        .filter(|&c| c > 0)
        .collect();
    v.dedup();
    v
}

/// `n` memory sizes evenly spaced from 1 % of the footprint (rounded up,
/// at least 1 page) to the whole footprint `distinct`, rounded to whole
/// pages, increasing, duplicates dropped (so fewer than `n` for tiny
/// footprints). For `n` = 1 it is just the footprint; empty if `n` or
/// `distinct` is 0. Even (not geometric) spacing so that the points of a
/// simulated policy line up with a linear-axis plot of the LRU curve, and
/// for `n` = 100 with [`mae_sizes`].
pub fn sweep_sizes(distinct: u64, n: usize) -> Vec<u64> {
    if n == 0 || distinct == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![distinct];
    }
    let lo = distinct.div_ceil(100).max(1);
    let span = (distinct - lo) as u128;
    let steps = (n - 1) as u128;
    let mut v: Vec<u64> = (0..n as u128)
        .map(|i| lo + ((span * i + steps / 2) / steps) as u64)
        .collect();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Flat(f64);
    impl MissRatioCurve for Flat {
        fn miss_ratio_at(&self, _: u64) -> f64 {
            self.0
        }
    }
    /// 1 at sizes < 10, 0 from 10 on.
    struct Step;
    impl MissRatioCurve for Step {
        fn miss_ratio_at(&self, c: u64) -> f64 {
            if c < 10 {
                1.0
            } else {
                0.0
            }
        }
    }

    #[test]
    fn mae_hand_worked() {
        assert_eq!(mae(&Flat(0.5), &Flat(0.25), &[1, 2, 3]), 0.25);
        // |1 − 0.5|, |1 − 0.5|, |0 − 0.5|, |0 − 0.5| → 0.5; symmetric.
        assert_eq!(mae(&Step, &Flat(0.5), &[1, 9, 10, 50]), 0.5);
        assert_eq!(mae(&Flat(0.5), &Step, &[1, 9, 10, 50]), 0.5);
        // |1 − 0.2| at 5, |0 − 0.2| at 10 and 20 → (0.8 + 0.2 + 0.2) / 3.
        assert!((mae(&Step, &Flat(0.2), &[5, 10, 20]) - 0.4).abs() < 1e-12);
        assert_eq!(mae(&Step, &Flat(0.3), &[]), 0.0);
    }

    #[test]
    fn mae_sizes_are_percent_steps() {
        let s = mae_sizes(1000);
        assert_eq!(s.len(), 100);
        assert_eq!(&s[..3], &[10, 20, 30]);
        assert_eq!(s[99], 1000);
        // 150 pages: ceil(1.5) = 2, ceil(3) = 3, ceil(4.5) = 5, …
        assert_eq!(&mae_sizes(150)[..4], &[2, 3, 5, 6]);
        // Tiny footprints: every size once.
        assert_eq!(mae_sizes(3), vec![1, 2, 3]);
        assert!(mae_sizes(0).is_empty());
    }

    #[test]
    fn sweep_sizes_span_one_to_hundred_percent() {
        // 1 % of 1000 = 10, then steps of 990 / 9 = 110.
        assert_eq!(
            sweep_sizes(1000, 10),
            vec![10, 120, 230, 340, 450, 560, 670, 780, 890, 1000]
        );
        assert_eq!(sweep_sizes(1000, 100), mae_sizes(1000));
        // 1 % of 250 rounds up to 3; (250 − 3) / 4 = 61.75 per step.
        assert_eq!(sweep_sizes(250, 5), vec![3, 65, 127, 188, 250]);
        assert_eq!(sweep_sizes(5, 10), vec![1, 2, 3, 4, 5]);
        assert_eq!(sweep_sizes(7, 1), vec![7]);
        assert!(sweep_sizes(0, 10).is_empty());
        assert!(sweep_sizes(10, 0).is_empty());
    }

    /// Throughput on 50 M Zipf(0.99) references over 10 M pages (5.6 M
    /// touched). Run with
    /// `cargo test --release -p swaplab-sim mrc::tests::throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn throughput() {
        use swaplab_trace::dense::DenseTrace;
        // SWAPLAB_MRC_ALPHA overrides the Zipf exponent.
        let a = std::env::var("SWAPLAB_MRC_ALPHA")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.99f64);
        let (n, pages) = (50_000_000usize, 10_000_000f64);
        // Inverse CDF of the continuous power law on [1, pages + 1).
        let top = (pages + 1.0).powf(1.0 - a) - 1.0;
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        let refs: Vec<u64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let r = (1.0 + u * top).powf(1.0 / (1.0 - a)) as u64 - 1;
                r.min(pages as u64 - 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16
            })
            .collect();
        let t = DenseTrace::from_pages(&refs);
        drop(refs);
        eprintln!("{} refs, {} distinct", t.len(), t.distinct());
        let time = |name: &str, f: &dyn Fn() -> f64| {
            let s = std::time::Instant::now();
            let mr = f();
            let el = s.elapsed().as_secs_f64();
            eprintln!(
                "{name}: {el:.2} s, {:.1} M refs/s (miss ratio at 10 %: {mr:.4})",
                t.len() as f64 / el / 1e6
            );
        };
        let c = t.distinct() as u64 / 10;
        time("exact", &|| stack_histogram(&t).unwrap().miss_ratio_at(c));
        time("shards 1 %", &|| {
            shards(&t, &ShardsConfig::fixed_rate(0.01))
                .unwrap()
                .miss_ratio_at(c)
        });
        time("shards 0.1 %", &|| {
            shards(&t, &ShardsConfig::fixed_rate(0.001))
                .unwrap()
                .miss_ratio_at(c)
        });
        time("shards 8192 pages", &|| {
            shards(&t, &ShardsConfig::fixed_size(8192))
                .unwrap()
                .miss_ratio_at(c)
        });
    }
}
