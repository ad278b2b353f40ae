//! The memory model around a policy, and the simulation loop.
//!
//! * The first reference to a page is a **minor fault** (zero-fill).
//! * A reference to a page that was evicted is a **major fault** (swap-in);
//!   the page comes back clean: its swap copy stays valid.
//! * A write dirties the page (and so invalidates its swap copy).
//! * Evicting a dirty page is a **swap-out** (a write to swap); evicting a
//!   clean page whose swap copy is still valid writes nothing.
//!
//! A page that was never swapped out has no swap copy, so it counts as dirty
//! from its first touch: anonymous memory has no other backing store.
//! (Simplification: the kernel maps a read-only first touch of anonymous
//! memory to the shared zero page, and may free the swap slot of a page
//! swapped in while swap is more than half full; neither is modelled.)
use crate::policy::{Access, PolicyConfig, PolicySpec, Req};
use serde::{Deserialize, Serialize};
use swaplab_trace::dense::{DenseTrace, NEVER};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("unknown policy '{0}' (known: {1}; see `swaplab sim --list-policies`)")]
    UnknownPolicy(String, String),
    #[error("{0}")]
    BadParam(String),
    #[error("policy '{policy}' broke the replacement contract at reference {pos}: {what}")]
    Contract {
        policy: String,
        pos: u64,
        what: String,
    },
}

/// Event counts of one simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub references: u64,
    pub hits: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub swap_outs: u64,
    pub evictions: u64,
}

impl Counters {
    /// Misses = minor + major faults.
    pub fn misses(&self) -> u64 {
        self.minor_faults.saturating_add(self.major_faults)
    }
    pub fn miss_ratio(&self) -> f64 {
        if self.references == 0 {
            0.0
        } else {
            self.misses() as f64 / self.references as f64
        }
    }
}

/// The result of one (policy, size) simulation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimResult {
    pub policy: String,
    pub capacity: u64,
    #[serde(flatten)]
    pub counters: Counters,
    pub miss_ratio: f64,
    /// Policy metadata bytes per distinct page (plus 1 for the engine's state byte).
    pub bytes_per_page: usize,
}

/// How many references ahead the engine asks the policy to prefetch: far
/// enough to hide a memory access (~100 ns) behind the references between.
const PREFETCH_DISTANCE: usize = 16;

const SEEN: u8 = 1;
const DIRTY: u8 = 2;
const RESIDENT: u8 = 4;

/// Simulates `spec` with `capacity` pages over `trace`. `next_use` must be
/// given (from [`DenseTrace::next_use`]) when the policy needs the future.
/// `progress(n)` is called with the number of references done since the last
/// call, every 2^20 references.
pub fn simulate(
    trace: &DenseTrace,
    next_use: Option<&[u32]>,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimResult, SimError> {
    run::<false>(trace, next_use, spec, capacity, seed, progress)
}

/// Like [`simulate`], but verifies on every reference that the policy keeps
/// the replacement contract: a hit only on a resident page, a miss only on a
/// non-resident one, a victim only when memory is full and always a
/// resident page other than the one referenced, never more than `capacity`
/// pages resident. Used by the tests of every policy.
pub fn simulate_checked(
    trace: &DenseTrace,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
) -> Result<SimResult, SimError> {
    let nu = spec.info().needs_future.then(|| trace.next_use());
    run::<true>(trace, nu.as_deref(), spec, capacity, seed, &|_| {})
}

fn run<const CHECK: bool>(
    trace: &DenseTrace,
    next_use: Option<&[u32]>,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimResult, SimError> {
    let info = spec.info();
    let capacity = capacity.max(1);
    let cfg = PolicyConfig {
        capacity,
        pages: trace.distinct(),
        params: &spec.params,
        seed,
    };
    let mut policy = (info.build)(&cfg)?;
    let owned;
    let next_use = match next_use {
        Some(n) => n,
        None if info.needs_future => {
            owned = trace.next_use();
            &owned
        }
        None => &[],
    };
    let mut state = vec![0u8; trace.distinct()];
    let mut c = Counters::default();
    let mut resident = 0usize;
    let ids = &trace.ids;
    let bits = trace.write_bits();
    let contract = |pos: usize, what: String| SimError::Contract {
        policy: spec.to_string(),
        pos: pos as u64,
        what,
    };
    for (chunk_start, chunk) in (0..ids.len())
        .step_by(1 << 20)
        .map(|s| (s, s..(s + (1 << 20)).min(ids.len())))
    {
        for i in chunk {
            if let Some(&ahead) = ids.get(i + PREFETCH_DISTANCE) {
                crate::util::prefetch(state.as_ptr().wrapping_add(ahead as usize));
                policy.prefetch(ahead);
            }
            let id = ids[i];
            let write = (bits[i >> 6] >> (i & 63)) & 1 == 1;
            let req = Req {
                pos: i as u64,
                write,
                next_use: if next_use.is_empty() {
                    NEVER
                } else {
                    next_use[i]
                },
            };
            match policy.access(id, &req) {
                Access::Hit => {
                    if CHECK && state[id as usize] & RESIDENT == 0 {
                        return Err(contract(
                            i,
                            format!("hit on page {id}, which is not resident"),
                        ));
                    }
                    c.hits += 1;
                }
                Access::Miss { victim } => {
                    let s = state[id as usize];
                    if CHECK && s & RESIDENT != 0 {
                        return Err(contract(i, format!("miss on page {id}, which is resident")));
                    }
                    if s & SEEN == 0 {
                        c.minor_faults += 1;
                        // No swap copy yet: the page must be written out when evicted.
                        state[id as usize] = SEEN | DIRTY | RESIDENT;
                    } else {
                        c.major_faults += 1;
                        state[id as usize] = SEEN | RESIDENT;
                    }
                    if let Some(v) = victim {
                        let vs = state[v as usize];
                        if CHECK {
                            if v == id || vs & RESIDENT == 0 {
                                return Err(contract(
                                    i,
                                    format!("evicted page {v}, which is not resident"),
                                ));
                            }
                            if resident != capacity {
                                return Err(contract(
                                    i,
                                    format!("evicted with {resident} of {capacity} pages resident"),
                                ));
                            }
                        }
                        c.evictions += 1;
                        if vs & DIRTY != 0 {
                            c.swap_outs += 1;
                        }
                        state[v as usize] = SEEN;
                    } else {
                        resident += 1;
                        if CHECK && resident > capacity {
                            return Err(contract(
                                i,
                                format!("{resident} pages resident in a memory of {capacity}"),
                            ));
                        }
                    }
                }
            }
            if write {
                state[id as usize] |= DIRTY;
            }
        }
        progress((ids.len() - chunk_start).min(1 << 20) as u64);
    }
    c.references = ids.len() as u64;
    Ok(SimResult {
        policy: spec.to_string(),
        capacity: capacity as u64,
        counters: c,
        miss_ratio: c.miss_ratio(),
        bytes_per_page: policy.bytes_per_page() + 1,
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for the hand-worked tests of each policy.
    use super::*;

    /// Test helper shared by the policy files: replays raw page ids straight
    /// through a policy and returns every [`Access`], so that tests can check the
    /// victims as well as the hits.
    pub mod replay {
        use crate::policy::{Access, PolicyConfig, PolicySpec, Req};

        pub const H: Access = Access::Hit;
        /// A miss while memory is not full.
        pub const M: Access = Access::Miss { victim: None };
        /// A miss that evicted `v`.
        pub fn ev(v: u32) -> Access {
            Access::Miss { victim: Some(v) }
        }

        /// Replays `ids` (pages `0..=max(ids)`) through `spec` with `cap` frames.
        /// `next_use` is filled in, so OPT works too.
        pub fn replay(spec: &str, cap: usize, ids: &[u32]) -> Vec<Access> {
            let spec = PolicySpec::parse(spec).unwrap();
            let pages = ids.iter().max().map_or(0, |&m| m as usize + 1);
            let mut next = vec![u32::MAX; ids.len()];
            let mut last = vec![u32::MAX; pages];
            for i in (0..ids.len()).rev() {
                next[i] = last[ids[i] as usize];
                last[ids[i] as usize] = i as u32;
            }
            let mut p = (spec.info().build)(&PolicyConfig {
                capacity: cap,
                pages,
                params: &spec.params,
                seed: 1,
            })
            .unwrap();
            ids.iter()
                .enumerate()
                .map(|(i, &id)| {
                    p.access(
                        id,
                        &Req {
                            pos: i as u64,
                            write: false,
                            next_use: next[i],
                        },
                    )
                })
                .collect()
        }
    }

    /// Simulates with contract checks and returns the misses.
    pub fn misses(policy: &str, cap: usize, pages: &[u64]) -> u64 {
        run_spec(policy, cap, pages).counters.misses()
    }

    pub fn run_spec(policy: &str, cap: usize, pages: &[u64]) -> SimResult {
        let t = DenseTrace::from_pages(pages);
        simulate_checked(&t, &PolicySpec::parse(policy).unwrap(), cap, 1).unwrap()
    }

    /// The hit (true) / miss (false) sequence, with contract checks.
    pub fn hits(policy: &str, cap: usize, pages: &[u64]) -> Vec<bool> {
        let mut out = Vec::new();
        for n in 1..=pages.len() {
            out.push(
                run_spec(policy, cap, &pages[..n]).counters.hits
                    > out.iter().filter(|&&h| h).count() as u64,
            );
        }
        out
    }

    /// Builds `spec` for a memory of `capacity` pages over `pages` pages and
    /// returns its bytes per page (or the parameter error).
    pub fn build_bytes(spec: &str, capacity: usize, pages: usize) -> Result<usize, SimError> {
        let s = PolicySpec::parse(spec)?;
        let cfg = PolicyConfig {
            capacity,
            pages,
            params: &s.params,
            seed: 1,
        };
        (s.info().build)(&cfg).map(|p| p.bytes_per_page())
    }

    /// A pseudo-random trace with locality, for contract checks.
    pub fn random_trace(n: usize, pages: u64, seed: u64) -> Vec<u64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mix a hot set with a uniform tail.
            let p = if x.is_multiple_of(4) {
                x % pages
            } else {
                (x >> 20) % (pages / 8 + 1)
            };
            out.push(p);
        }
        out
    }

    /// Runs every registered policy under contract checks on random traces at several sizes.
    pub fn contract_all(policy: &str) {
        for seed in 1..4 {
            let tr = random_trace(20_000, 600, seed);
            let t = DenseTrace::from_pages(&tr);
            for cap in [1, 2, 3, 7, 64, 300, 599, 1000] {
                simulate_checked(&t, &PolicySpec::parse(policy).unwrap(), cap, seed).unwrap();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_model_counts_faults_and_swap_outs() {
        // LRU, 2 pages. w=write.
        // ref: 1w 2r 3r 1r 2w 1r
        // 1w: minor (dirty)            resident [1]
        // 2r: minor (dirty, no copy)   [1,2]
        // 3r: minor, evict 1 (dirty -> swap-out)       [2,3]
        // 1r: major, evict 2 (dirty -> swap-out)       [3,1]; 1 clean
        // 2w: major, evict 3 (dirty -> swap-out)       [1,2]; 2 dirty again
        // 1r: hit
        let t = DenseTrace::from_refs(&[
            (1, true),
            (2, false),
            (3, false),
            (1, false),
            (2, true),
            (1, false),
        ]);
        let r = simulate_checked(&t, &PolicySpec::parse("lru").unwrap(), 2, 0).unwrap();
        let c = r.counters;
        assert_eq!(
            (
                c.minor_faults,
                c.major_faults,
                c.hits,
                c.evictions,
                c.swap_outs
            ),
            (3, 2, 1, 3, 3)
        );
        // Now evict clean page 1 (swapped in, never written): no swap-out.
        let t = DenseTrace::from_refs(&[
            (1, true),
            (2, false),
            (3, false),
            (1, false),
            (2, false),
            (3, false),
        ]);
        let c = simulate_checked(&t, &PolicySpec::parse("lru").unwrap(), 2, 0)
            .unwrap()
            .counters;
        // 3r at the end evicts 1 (clean after swap-in): swap-outs stay at 3 (1, 2, 3 first evictions).
        assert_eq!(
            (c.minor_faults, c.major_faults, c.evictions, c.swap_outs),
            (3, 3, 4, 3)
        );
    }

    #[test]
    fn unknown_policy_and_params_are_clear_errors() {
        let e = PolicySpec::parse("lruu").unwrap_err().to_string();
        assert!(e.contains("unknown policy 'lruu'"), "{e}");
        assert!(PolicySpec::parse("lru:x").is_err());
    }
}
