//! Prefetchers: models of swap readahead, one file each behind the small
//! [`Prefetcher`] trait, and their registry (like [`crate::policies`]).
//!
//! The engine feeds a prefetcher the faults it sees: every **major fault**
//! ([`Prefetcher::fault`], which answers the pages to read ahead) and every
//! first reference to a page the prefetcher read ([`Prefetcher::hit`]: in
//! the kernel that reference is a minor fault that finds the page in the
//! swap cache, which is how readahead counts its hits). A prefetcher names
//! pages either by virtual page number or, when its [`PrefetcherInfo::slots`]
//! is set, by swap slot (the engine then models slot allocation at
//! swap-out). The engine reads only the pages that have a swap copy and are
//! not resident; the rest of a window costs nothing, as in the kernel
//! (`__read_swap_cache_async` skips a slot that is free or already cached).
//!
//! A prefetcher may also page out ([`Prefetcher::pageout`], asked after
//! each fault; `leap:pageout=1` pages out the pages its walk has passed,
//! as `run --prefetch leap:pageout=1` does): the engine drops them as it
//! drops a `pageout` hint's pages, and counts them in `prefetch_pageouts`.
use crate::error::SimError;
use crate::policy::Params;

pub mod cluster;
pub mod detector;
pub mod leap;
pub mod next;
pub mod none;
pub mod vma;

/// One major fault, as a prefetcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Virtual page number of the faulting page.
    pub page: u64,
    /// Its swap slot (from 1; 0 when the prefetcher does not use slots).
    pub slot: u64,
}

pub trait Prefetcher: Send {
    /// A major fault: push the pages (virtual page numbers, or slots if
    /// [`PrefetcherInfo::slots`]) to read with it into `out` (which is
    /// empty). Pushing the faulting page itself, or pages without a swap
    /// copy, is harmless: the engine skips them.
    fn fault(&mut self, f: &Fault, out: &mut Vec<u64>);
    /// The first reference to virtual page `page`, which this prefetcher
    /// read ahead: a readahead hit. Default: nothing.
    fn hit(&mut self, _page: u64) {}
    /// This prefetcher may ask for pages to be paged out (the engine then
    /// refuses policies that cannot drop pages). Default: false.
    fn pages_out(&self) -> bool {
        false
    }
    /// Right after each [`fault`](Self::fault): push the virtual pages to
    /// page out now (MADV_PAGEOUT), as half-open ranges `(start, end)`,
    /// into `out` (which is empty). The engine drops the resident,
    /// unpinned pages of them (writing the dirty ones to swap) before it
    /// reads the fault's window; the faulting page is never dropped.
    /// Default: nothing.
    fn pageout(&mut self, _out: &mut Vec<(u64, u64)>) {}
}

/// What a prefetcher is built from.
pub struct PrefetchConfig<'a> {
    pub params: &'a Params,
    /// Bytes per page of the trace (for the 2 MiB PMD clip of `vma`).
    pub page_size: u64,
}

type Build = fn(&PrefetchConfig) -> Result<Box<dyn Prefetcher>, SimError>;

/// A registry entry: one per prefetcher file.
pub struct PrefetcherInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Accepted parameters; empty if none.
    pub params: &'static str,
    /// The prefetcher names swap slots, not virtual pages.
    pub slots: bool,
    pub build: Build,
}

/// Every prefetcher `swaplab sim --prefetch` knows.
pub static REGISTRY: &[&PrefetcherInfo] = &[
    &none::INFO,
    &next::INFO,
    &cluster::INFO,
    &vma::INFO,
    &leap::INFO,
];

/// Finds a prefetcher by name.
pub fn lookup(name: &str) -> Result<&'static PrefetcherInfo, SimError> {
    REGISTRY
        .iter()
        .copied()
        .find(|i| i.name == name)
        .ok_or_else(|| {
            SimError::BadParam(format!(
                "unknown prefetcher '{name}' (known: {}; see `swaplab sim --list-prefetchers`)",
                REGISTRY
                    .iter()
                    .map(|i| i.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// A prefetcher name with parameters: `none`, `cluster:pc=3`, `next:n=4`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefetchSpec {
    pub name: String,
    pub params: Params,
}

impl PrefetchSpec {
    /// Parses `name[:key=value...]`, checks the name and builds it once so
    /// that bad parameters fail here.
    pub fn parse(s: &str) -> Result<Self, SimError> {
        let (name, params) = Params::split_spec(s, "cluster:pc=3")?;
        let info = lookup(&name)?;
        let spec = PrefetchSpec { name, params };
        (info.build)(&PrefetchConfig {
            params: &spec.params,
            page_size: 4096,
        })?;
        Ok(spec)
    }

    /// Parses a comma-separated list; `all` expands to every prefetcher.
    pub fn parse_list(s: &str) -> Result<Vec<Self>, SimError> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if item == "all" {
                out.extend(REGISTRY.iter().map(|i| PrefetchSpec {
                    name: i.name.to_string(),
                    params: Params::default(),
                }));
            } else {
                out.push(Self::parse(item)?);
            }
        }
        if out.is_empty() {
            return Err(SimError::BadParam(
                "no prefetcher given (e.g. --prefetch none,cluster:pc=3,vma,leap)".into(),
            ));
        }
        Ok(out)
    }

    pub fn info(&self) -> &'static PrefetcherInfo {
        lookup(&self.name).expect("checked at parse")
    }

    /// `none` prefetches nothing: the engine's plain path.
    pub fn is_none(&self) -> bool {
        self.name == "none"
    }
}

impl std::fmt::Display for PrefetchSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        for (k, v) in &self.params.0 {
            write!(f, ":{k}={v}")?;
        }
        Ok(())
    }
}

/// `__swapin_nr_pages` of mm/swap_state.c (Linux 6.x): the readahead
/// window, in pages, for a fault at `offset` after one at `prev_offset`,
/// given the readahead `hits` since the last window and the previous
/// window `prev_win`: hits + 2, rounded up to a power of two from 4
/// (left at 2 when there were no hits but the offset is adjacent to the
/// previous one, 1 when not adjacent), at most `max_pages`, and never below
/// half the previous window.
pub fn swapin_nr_pages(
    prev_offset: u64,
    offset: u64,
    hits: u64,
    max_pages: u64,
    prev_win: u64,
) -> u64 {
    let mut pages = hits + 2;
    if pages == 2 {
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    pages.max(prev_win / 2)
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Replays a page trace through the engine with a prefetcher.
    use crate::engine::{simulate_ext, Extras, SimResult};
    use crate::policy::PolicySpec;
    use swaplab_trace::DenseTrace;

    /// Simulates `policy` with `cap` pages and prefetcher `pf` (contract
    /// checks on) over reads of `pages`.
    pub fn run(policy: &str, cap: usize, pf: &str, pages: &[u64]) -> SimResult {
        run_refs(
            policy,
            cap,
            pf,
            &pages.iter().map(|&p| (p, false)).collect::<Vec<_>>(),
        )
    }

    pub fn run_refs(policy: &str, cap: usize, pf: &str, refs: &[(u64, bool)]) -> SimResult {
        let t = DenseTrace::from_refs(refs);
        let pf = super::PrefetchSpec::parse(pf).unwrap();
        simulate_ext(
            &t,
            None,
            &PolicySpec::parse(policy).unwrap(),
            cap,
            1,
            &Extras {
                prefetch: Some(&pf),
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap()
    }

    /// (major faults, prefetch reads, prefetch pageouts, swap-outs).
    pub fn pageouts(r: &SimResult) -> (u64, u64, u64, u64) {
        let c = &r.counters;
        (
            c.major_faults,
            c.prefetch_reads,
            c.prefetch_pageouts,
            c.swap_outs,
        )
    }

    /// (major faults, prefetch reads, used, unused).
    pub fn counts(r: &SimResult) -> (u64, u64, u64, u64) {
        let c = &r.counters;
        (
            c.major_faults,
            c.prefetch_reads,
            c.prefetch_used,
            c.prefetch_unused,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapin_nr_pages_follows_the_kernel() {
        // No hits, not adjacent: 1. No hits, adjacent either way: 2.
        assert_eq!(swapin_nr_pages(10, 20, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(10, 11, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(10, 9, 0, 8, 0), 2);
        // hits + 2 rounded up to a power of two from 4: 1 -> 4, 2 -> 4, 3 -> 8.
        assert_eq!(swapin_nr_pages(0, 50, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 50, 2, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 50, 3, 8, 0), 8);
        // Capped by 2^page_cluster, and never below half the last window.
        assert_eq!(swapin_nr_pages(0, 50, 30, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 50, 0, 8, 8), 4);
        assert_eq!(swapin_nr_pages(0, 50, 0, 8, 1), 1);
    }

    #[test]
    fn specs_parse_and_check_params() {
        let l = PrefetchSpec::parse_list("none, cluster:pc=2,vma,leap:max=16,next:n=3").unwrap();
        let names: Vec<String> = l.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            names,
            ["none", "cluster:pc=2", "vma", "leap:max=16", "next:n=3"]
        );
        assert_eq!(
            PrefetchSpec::parse_list("all").unwrap().len(),
            REGISTRY.len()
        );
        let e = PrefetchSpec::parse("clustr").unwrap_err().to_string();
        assert!(e.contains("unknown prefetcher 'clustr'"), "{e}");
        let e = PrefetchSpec::parse("cluster:pc=40")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pc=40"), "{e}");
        let e = PrefetchSpec::parse("vma:n=3").unwrap_err().to_string();
        assert!(e.contains("prefetcher 'vma' has no parameter 'n'"), "{e}");
        assert!(PrefetchSpec::parse("next:n").is_err());
        assert!(PrefetchSpec::parse_list(" , ").is_err());
    }
}
