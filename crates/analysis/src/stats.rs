//! Small statistics for repeated runs: median, quartiles, spread, and the
//! Mann–Whitney U test (two-sided; exact permutation distribution with
//! midranks for ties up to 60 values, normal approximation with tie and
//! continuity correction above).
//!
//! Why Mann–Whitney: run times under memory pressure are skewed and have
//! outliers (a run that hit a bad reclaim pattern), so a rank test is
//! safer than Welch's t-test, which assumes roughly normal means. Its
//! catch is power: with n repeats per side the smallest two-sided p-value
//! it can ever produce is 2 / C(2n, n) — 1.0 for n = 1, 0.33 for n = 2,
//! 0.10 for n = 3, 0.029 for n = 4, 0.0079 for n = 5.

use serde::{Deserialize, Serialize};

/// Summary of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Values.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// First quartile (linear interpolation).
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
}

/// Quantile `q` in \[0, 1\] of sorted values (linear interpolation, type 7).
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = (v.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// Summarises values (NaNs are dropped); `None` when nothing is left.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(Summary {
        n: v.len(),
        median: quantile_sorted(&v, 0.5),
        min: v[0],
        max: v[v.len() - 1],
        q1: quantile_sorted(&v, 0.25),
        q3: quantile_sorted(&v, 0.75),
    })
}

/// The median (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    summarize(values).map_or(f64::NAN, |s| s.median)
}

/// The median of the values present (`None` without any).
pub fn median_of(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| median(values))
}

/// Result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample (pairs (a, b) with a > b, ties counting ½).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// The smallest two-sided p-value these sample sizes can give.
    pub min_p: f64,
    /// True when `p` comes from the exact permutation distribution.
    pub exact: bool,
}

fn ln_choose(n: usize, k: usize) -> f64 {
    fn ln_fact(n: usize) -> f64 {
        (1..=n).map(|i| (i as f64).ln()).sum()
    }
    ln_fact(n) - ln_fact(k) - ln_fact(n - k)
}

/// Two-sided Mann–Whitney U test of `a` against `b`. `None` when a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let n = n1 + n2;
    // Pooled midranks, doubled so that they are integers.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank2 = vec![0usize; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // Ranks i+1..=j+1, midrank (i+j+2)/2, doubled: i+j+2.
        for r in rank2.iter_mut().take(j + 1).skip(i) {
            *r = i + j + 2;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1_2: usize = (0..n).filter(|&k| pooled[k].1).map(|k| rank2[k]).sum();
    let u = r1_2 as f64 / 2.0 - (n1 * (n1 + 1)) as f64 / 2.0;
    let mean_u = (n1 * n2) as f64 / 2.0;
    let min_p = (2.0 * (-ln_choose(n, n1)).exp()).min(1.0);
    if n <= 60 {
        // dp[k][s]: ways to pick k of the pooled values with doubled rank sum s.
        let max_s: usize = rank2.iter().sum();
        let mut dp = vec![vec![0f64; max_s + 1]; n1 + 1];
        dp[0][0] = 1.0;
        for &r in &rank2 {
            for k in (1..=n1).rev() {
                let (lo, hi) = dp.split_at_mut(k);
                let prev = &lo[k - 1];
                let cur = &mut hi[0];
                for s in (r..=max_s).rev() {
                    if prev[s - r] != 0.0 {
                        cur[s] += prev[s - r];
                    }
                }
            }
        }
        let total: f64 = dp[n1].iter().sum();
        let mean_s2 = (n1 * (n + 1)) as f64; // doubled mean rank sum
        let obs = (r1_2 as f64 - mean_s2).abs();
        let extreme: f64 = dp[n1]
            .iter()
            .enumerate()
            .filter(|(s, _)| (*s as f64 - mean_s2).abs() >= obs - 1e-9)
            .map(|(_, c)| c)
            .sum();
        return Some(MannWhitney {
            u,
            p: (extreme / total).min(1.0),
            min_p,
            exact: true,
        });
    }
    let var = (n1 * n2) as f64 / 12.0 * ((n + 1) as f64 - tie_term / (n * (n - 1)) as f64);
    if var <= 0.0 {
        return Some(MannWhitney {
            u,
            p: 1.0,
            min_p,
            exact: false,
        });
    }
    let z = ((u - mean_u).abs() - 0.5).max(0.0) / var.sqrt();
    Some(MannWhitney {
        u,
        p: (2.0 * normal_sf(z)).min(1.0),
        min_p,
        exact: false,
    })
}

/// Upper tail of the standard normal distribution.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    // Horner's rule from the innermost coefficient out, in the order of
    // the book's nested expression (the same rounding). Written as a loop:
    // rustfmt takes a minute over the ten-deep nesting.
    const C: [f64; 9] = [
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ];
    let poly = C[..8].iter().rev().fold(C[8], |acc, &c| c + t * acc);
    let r = t * (-z * z - 1.265_512_23 + t * poly).exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// A sentence about the test's power for these sample sizes.
pub fn power_note(n1: usize, n2: usize) -> Option<String> {
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let min_p = (2.0 * (-ln_choose(n1 + n2, n1)).exp()).min(1.0);
    if min_p > 0.05 {
        Some(format!(
            "with {n1} and {n2} runs the Mann–Whitney test cannot reach p < 0.05 (smallest possible p = {min_p:.2}); use --repeat 5 or more"
        ))
    } else if n1.min(n2) < 5 {
        Some(format!("with {n1} and {n2} runs the test has little power: only large, consistent differences show"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            (s.n, s.median, s.min, s.max, s.q1, s.q3),
            (5, 3.0, 1.0, 5.0, 2.0, 4.0)
        );
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        assert!(summarize(&[]).is_none());
        assert!(median(&[f64::NAN]).is_nan());
    }

    /// Reference values from brute-force enumeration of every split of the
    /// pooled values (Python itertools.combinations), the definition of the
    /// exact test (scipy's method="exact" computes the same).
    #[test]
    fn mann_whitney_matches_reference() {
        // No ties: exact distribution. U = 0, p = 2/C(10,5) = 0.00794.
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!((r.p - 2.0 / 252.0).abs() < 1e-12, "{r:?}");
        assert!((r.min_p - 2.0 / 252.0).abs() < 1e-12);
        assert!(r.exact);
        // Enumeration: 52 of the C(9,4) = 126 splits are as extreme as U = 6.
        let r = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert_eq!(r.u, 6.0);
        assert!((r.p - 52.0 / 126.0).abs() < 1e-9, "{r:?}");
        // Identical samples: p = 1.
        let r = mann_whitney(&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(r.p, 1.0);
        // One value each: the test can say nothing.
        let r = mann_whitney(&[1.0], &[2.0]).unwrap();
        assert_eq!(r.p, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
        // Symmetric.
        let a = [3.1, 2.2, 5.0, 4.4, 1.0, 9.0];
        let b = [7.0, 8.5, 6.1, 9.9, 5.5];
        let (x, y) = (mann_whitney(&a, &b).unwrap(), mann_whitney(&b, &a).unwrap());
        assert!((x.p - y.p).abs() < 1e-12);
        assert_eq!(x.u + y.u, (a.len() * b.len()) as f64);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) + 20.0).collect();
        let r = mann_whitney(&a, &b).unwrap();
        assert!(!r.exact);
        // Independent computation (Python math.erfc with the same tie-corrected
        // variance and continuity correction): U = 200, z = 5.7694, p = 7.957e-9.
        assert_eq!(r.u, 200.0);
        assert!((r.p / 7.956_952_562_825_313e-9 - 1.0).abs() < 1e-3, "{r:?}");
        let same = mann_whitney(&a, &a).unwrap();
        assert!(same.p > 0.95, "{same:?}");
        assert!((normal_sf(1.959_963_985) - 0.025).abs() < 1e-6);
    }

    #[test]
    fn power_notes() {
        assert!(power_note(1, 1).unwrap().contains("cannot reach"));
        assert!(power_note(3, 3).unwrap().contains("cannot reach"));
        assert!(power_note(4, 4).unwrap().contains("little power"));
        assert!(power_note(5, 5).is_none());
    }
}
