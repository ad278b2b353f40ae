//! Synthetic page-reference generators (`swaplab gen`).
//!
//! A pattern is written `NAME[:key=value...]`:
//!
//! | pattern   | keys (defaults)                         | references |
//! |-----------|-----------------------------------------|------------|
//! | `seq`     | `pages` (unbounded), `base` (0)          | base, base+1, …; wraps after `pages` |
//! | `stride`  | `k` (required), `pages` (unbounded), `base` | base, base+k, base+2k, …; wraps after `pages` distinct pages |
//! | `uniform` | `pages` (required), `base`               | uniformly random over `pages` |
//! | `zipf`    | `pages` (required), `alpha` (1.0), `scatter` (1), `base` | rank r with probability ∝ 1/r^alpha; with `scatter=1` ranks are placed on pages by a fixed random permutation, so popular pages are not adjacent |
//! | `loop`    | `pages` (required), `base`               | base … base+pages−1, repeated (LRU's worst case) |
//!
//! Every pattern also takes `count=N` (its number of references) and
//! `writes=R` (share of writes, 0..1). Several patterns make **phases**: one
//! after another, or interleaved reference by reference (round-robin among
//! the phases that still have references). Everything is deterministic
//! under the seed: phase i draws from a PCG stream seeded with (seed, i).
use crate::{Error, RefBatch, RefSource, Result, Source};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    pub kind: Kind,
    pub base: u64,
    pub count: Option<u64>,
    pub writes: f64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Seq {
        pages: Option<u64>,
    },
    Stride {
        k: u64,
        pages: Option<u64>,
    },
    Uniform {
        pages: u64,
    },
    Zipf {
        pages: u64,
        alpha: f64,
        scatter: bool,
    },
    Loop {
        pages: u64,
    },
}

fn bad(s: &str, why: impl std::fmt::Display) -> Error {
    Error::Invalid(format!(
        "bad pattern '{s}': {why} (patterns: seq, stride:k=K, uniform:pages=N, zipf:pages=N:alpha=A, loop:pages=N; \
         each with optional :count=N :writes=R :base=P)"
    ))
}

impl std::str::FromStr for Pattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let mut parts = s.trim().split(':');
        let name = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut kv = BTreeMap::new();
        for p in parts {
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| bad(s, format!("'{p}' is not key=value")))?;
            kv.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
        let num = |kv: &mut BTreeMap<String, String>, k: &str| -> Result<Option<u64>> {
            match kv.remove(k) {
                None => Ok(None),
                Some(v) => crate::units::parse_count(&v)
                    .map(Some)
                    .map_err(|_| bad(s, format!("{k}={v} is not a whole number"))),
            }
        };
        let real = |kv: &mut BTreeMap<String, String>, k: &str| -> Result<Option<f64>> {
            match kv.remove(k) {
                None => Ok(None),
                Some(v) => v
                    .parse::<f64>()
                    .map(Some)
                    .map_err(|_| bad(s, format!("{k}={v} is not a number"))),
            }
        };
        let base = num(&mut kv, "base")?.unwrap_or(0);
        let count = num(&mut kv, "count")?;
        let writes = real(&mut kv, "writes")?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&writes) {
            return Err(bad(s, "writes must be between 0 and 1"));
        }
        let pages = num(&mut kv, "pages")?;
        if pages == Some(0) {
            return Err(bad(s, "pages must be at least 1"));
        }
        let need = |p: Option<u64>| p.ok_or_else(|| bad(s, format!("{name} needs pages=N")));
        let kind = match name.as_str() {
            "seq" | "sequential" => Kind::Seq { pages },
            "stride" | "strided" => {
                let k = num(&mut kv, "k")?.ok_or_else(|| bad(s, "stride needs k=K"))?;
                if k == 0 {
                    return Err(bad(s, "k must be at least 1"));
                }
                Kind::Stride { k, pages }
            }
            "uniform" | "random" => Kind::Uniform {
                pages: need(pages)?,
            },
            "zipf" => {
                let alpha = real(&mut kv, "alpha")?.unwrap_or(1.0);
                if !(alpha >= 0.0 && alpha.is_finite()) {
                    return Err(bad(s, "alpha must be a number ≥ 0"));
                }
                let scatter = num(&mut kv, "scatter")?.unwrap_or(1) != 0;
                let pages = need(pages)?;
                if pages > u32::MAX as u64 {
                    return Err(bad(s, "zipf supports at most 2^32-1 pages"));
                }
                Kind::Zipf {
                    pages,
                    alpha,
                    scatter,
                }
            }
            "loop" => Kind::Loop {
                pages: need(pages)?,
            },
            "" => return Err(bad(s, "empty")),
            other => return Err(bad(s, format!("unknown pattern '{other}'"))),
        };
        if let Some(k) = kv.keys().next() {
            return Err(bad(s, format!("unknown key '{k}' for {name}")));
        }
        Ok(Pattern {
            kind,
            base,
            count,
            writes,
            text: s.trim().to_string(),
        })
    }
}

/// How phases combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    Sequence,
    Interleave,
}

struct Phase {
    pat: Pattern,
    left: u64,
    i: u64,
    rng: Pcg64Mcg,
    zipf: Option<Zipf<f64>>,
    perm: Vec<u32>,
}

impl Phase {
    fn new(pat: Pattern, count: u64, seed: u64, idx: u64) -> Result<Self> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ idx);
        let (zipf, perm) = match pat.kind {
            Kind::Zipf {
                pages,
                alpha,
                scatter,
            } => {
                let z = Zipf::new(pages as f64, alpha).map_err(|e| bad(&pat.text, e))?;
                let perm = if scatter {
                    // A fixed random permutation of ranks over pages (Fisher–Yates).
                    let mut p: Vec<u32> = (0..pages as u32).collect();
                    for i in (1..p.len()).rev() {
                        let j = rng.random_range(0..=i);
                        p.swap(i, j);
                    }
                    p
                } else {
                    Vec::new()
                };
                (Some(z), perm)
            }
            _ => (None, Vec::new()),
        };
        Ok(Phase {
            pat,
            left: count,
            i: 0,
            rng,
            zipf,
            perm,
        })
    }

    #[inline]
    fn next(&mut self) -> (u64, bool) {
        let i = self.i;
        self.i += 1;
        self.left -= 1;
        let off = match self.pat.kind {
            Kind::Seq { pages } => pages.map_or(i, |n| i % n),
            Kind::Stride { k, pages } => pages.map_or(i, |n| i % n).wrapping_mul(k),
            Kind::Uniform { pages } => self.rng.random_range(0..pages),
            Kind::Loop { pages } => i % pages,
            Kind::Zipf { .. } => {
                let r = self.zipf.as_ref().expect("zipf").sample(&mut self.rng) as u64 - 1;
                if self.perm.is_empty() {
                    r
                } else {
                    self.perm[r as usize] as u64
                }
            }
        };
        let w = self.pat.writes > 0.0 && self.rng.random::<f64>() < self.pat.writes;
        (self.pat.base.wrapping_add(off), w)
    }
}

/// A generator: a [`RefSource`] over one or more phases.
pub struct Generator {
    phases: Vec<Phase>,
    mix: Mix,
    cur: usize,
    seed: u64,
    total: u64,
}

impl Generator {
    /// `count` is the total when a pattern has no `count=`: split evenly
    /// among the phases that have none.
    pub fn new(patterns: Vec<Pattern>, count: Option<u64>, mix: Mix, seed: u64) -> Result<Self> {
        if patterns.is_empty() {
            return Err(Error::Invalid(
                "no pattern given (e.g. zipf:pages=1M:alpha=0.9)".into(),
            ));
        }
        let fixed: u64 = patterns.iter().filter_map(|p| p.count).sum();
        let open = patterns.iter().filter(|p| p.count.is_none()).count() as u64;
        let rest = match (count, open) {
            (_, 0) => 0,
            (Some(n), _) => n.saturating_sub(fixed),
            (None, _) => {
                return Err(Error::Invalid(
                    "how many references? give -n COUNT or count=N in every pattern".into(),
                ))
            }
        };
        let mut phases = Vec::new();
        let mut given = 0;
        for (i, p) in patterns.into_iter().enumerate() {
            let c = match p.count {
                Some(c) => c,
                None => {
                    given += 1;
                    rest / open + u64::from(given <= rest % open)
                }
            };
            phases.push(Phase::new(p, c, seed, i as u64)?);
        }
        let total = phases.iter().map(|p| p.left).sum();
        Ok(Generator {
            phases,
            mix,
            cur: 0,
            seed,
            total,
        })
    }

    /// Total number of references it will yield.
    pub fn total(&self) -> u64 {
        self.total
    }
}

impl RefSource for Generator {
    fn next_batch(&mut self, b: &mut RefBatch, max: usize) -> Result<bool> {
        b.clear();
        let max = max.max(1);
        while b.len() < max {
            let n = self.phases.len();
            match self.mix {
                Mix::Sequence => {
                    while self.cur < n && self.phases[self.cur].left == 0 {
                        self.cur += 1;
                    }
                    if self.cur == n {
                        break;
                    }
                    let ph = &mut self.phases[self.cur];
                    let k = (max - b.len()).min(ph.left as usize);
                    for _ in 0..k {
                        let (p, w) = ph.next();
                        b.page.push(p);
                        b.write.push(w);
                    }
                }
                Mix::Interleave => {
                    let mut any = false;
                    for _ in 0..n {
                        let ph = &mut self.phases[self.cur];
                        self.cur = (self.cur + 1) % n;
                        if ph.left > 0 {
                            let (p, w) = ph.next();
                            b.page.push(p);
                            b.write.push(w);
                            any = true;
                            break;
                        }
                    }
                    if !any {
                        break;
                    }
                }
            }
        }
        Ok(!b.is_empty())
    }

    fn source(&self) -> Source {
        Source::Generated {
            generator: if self.phases.len() == 1 {
                "single".into()
            } else {
                format!("{:?}", self.mix).to_lowercase()
            },
            params: serde_json::json!({
                "patterns": self.phases.iter().map(|p| p.pat.text.clone()).collect::<Vec<_>>(),
                "seed": self.seed,
                "count": self.total,
            }),
        }
    }
}

/// The standard benchmark trace of `swaplab bench sim`: 50 M references,
/// Zipf alpha 1.0 over 10 M pages, ranks scattered by a fixed permutation, seed 42.
pub fn standard_bench(count: u64, pages: u64) -> Result<Generator> {
    let p: Pattern = format!("zipf:pages={pages}:alpha=1.0:scatter=1").parse()?;
    Generator::new(vec![p], Some(count), Mix::Sequence, 42)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(g: &mut Generator) -> Vec<(u64, bool)> {
        let mut b = RefBatch::default();
        let mut out = Vec::new();
        while g.next_batch(&mut b, 7).unwrap() {
            out.extend(b.page.iter().copied().zip(b.write.iter().copied()));
        }
        out
    }
    fn pages(spec: &[&str], n: Option<u64>, mix: Mix) -> Vec<u64> {
        let pats = spec.iter().map(|s| s.parse().unwrap()).collect();
        all(&mut Generator::new(pats, n, mix, 1).unwrap())
            .into_iter()
            .map(|x| x.0)
            .collect()
    }

    #[test]
    fn deterministic_patterns() {
        assert_eq!(
            pages(&["seq:base=10"], Some(4), Mix::Sequence),
            vec![10, 11, 12, 13]
        );
        assert_eq!(
            pages(&["seq:pages=3"], Some(7), Mix::Sequence),
            vec![0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            pages(&["stride:k=4:pages=3"], Some(5), Mix::Sequence),
            vec![0, 4, 8, 0, 4]
        );
        assert_eq!(
            pages(&["loop:pages=2"], Some(5), Mix::Sequence),
            vec![0, 1, 0, 1, 0]
        );
        // Phases in sequence, then interleaved.
        assert_eq!(
            pages(
                &["seq:count=3", "loop:pages=1:base=100:count=2"],
                None,
                Mix::Sequence
            ),
            vec![0, 1, 2, 100, 100]
        );
        assert_eq!(
            pages(
                &["seq:count=3", "loop:pages=1:base=100:count=2"],
                None,
                Mix::Interleave
            ),
            vec![0, 100, 1, 100, 2]
        );
        // -n split evenly among phases without count=.
        assert_eq!(
            pages(&["seq", "seq:base=50"], Some(5), Mix::Sequence),
            vec![0, 1, 2, 50, 51]
        );
    }

    #[test]
    fn random_patterns_are_seeded_and_in_range() {
        let p: Vec<Pattern> = vec!["uniform:pages=100:writes=0.25".parse().unwrap()];
        let a = all(&mut Generator::new(p.clone(), Some(20000), Mix::Sequence, 7).unwrap());
        let b = all(&mut Generator::new(p.clone(), Some(20000), Mix::Sequence, 7).unwrap());
        let c = all(&mut Generator::new(p, Some(20000), Mix::Sequence, 8).unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|x| x.0 < 100));
        let w = a.iter().filter(|x| x.1).count() as f64 / a.len() as f64;
        assert!((w - 0.25).abs() < 0.02, "write share {w}");
        let distinct: std::collections::HashSet<_> = a.iter().map(|x| x.0).collect();
        assert_eq!(distinct.len(), 100);
    }

    #[test]
    fn zipf_follows_its_law() {
        // Unscattered Zipf(1.0) over 1000 pages: P(rank 1) = 1/H_1000 = 0.1336, P(rank 2) = half that.
        let p = vec!["zipf:pages=1000:alpha=1.0:scatter=0".parse().unwrap()];
        let v = all(&mut Generator::new(p, Some(200_000), Mix::Sequence, 3).unwrap());
        let h: f64 = (1..=1000).map(|r| 1.0 / r as f64).sum();
        let f0 = v.iter().filter(|x| x.0 == 0).count() as f64 / v.len() as f64;
        let f1 = v.iter().filter(|x| x.0 == 1).count() as f64 / v.len() as f64;
        assert!((f0 - 1.0 / h).abs() < 0.005, "{f0} vs {}", 1.0 / h);
        assert!((f1 - 0.5 / h).abs() < 0.005, "{f1}");
        // Scattered: the most popular page is no longer page 0, the law is the same.
        let p = vec!["zipf:pages=1000:alpha=1.0".parse().unwrap()];
        let v = all(&mut Generator::new(p, Some(200_000), Mix::Sequence, 3).unwrap());
        let mut cnt = vec![0u64; 1000];
        v.iter().for_each(|x| cnt[x.0 as usize] += 1);
        let top = *cnt.iter().max().unwrap() as f64 / v.len() as f64;
        assert!((top - 1.0 / h).abs() < 0.005);
    }

    #[test]
    fn bad_patterns_say_why() {
        for (s, why) in [
            ("zipf", "needs pages"),
            ("stride", "needs k"),
            ("seq:foo=1", "unknown key 'foo'"),
            ("bogus", "unknown pattern"),
            ("uniform:pages=0", "at least 1"),
            ("seq:writes=2", "between 0 and 1"),
            ("seq:count", "not key=value"),
        ] {
            let e = s.parse::<Pattern>().unwrap_err().to_string();
            assert!(e.contains(why), "{s}: {e}");
        }
        assert!(Generator::new(vec!["seq".parse().unwrap()], None, Mix::Sequence, 0).is_err());
    }
}
