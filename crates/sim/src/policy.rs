//! The policy interface.
//!
//! A policy manages which pages are resident in a memory of `capacity`
//! pages. Pages are dense ids `0..config.pages`. On every reference the
//! engine calls [`Policy::access`]; the policy answers hit, or miss and which
//! resident page (if any) it evicted to make room. A policy must evict only
//! when it is full, exactly one page per miss then, and never the page being
//! referenced; `engine::simulate_checked` verifies this for every policy.
use crate::error::SimError;
use std::collections::BTreeMap;

/// The outcome of one reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Hit,
    /// The page was not resident and now is; `victim` is the page evicted to
    /// make room (None while memory is not full).
    Miss {
        victim: Option<u32>,
    },
    /// The page is resident (charged to memory) but was unmapped and
    /// written to swap by reclaim ([`Policy::take_writes`]), which has not
    /// freed it yet: it is in the swap cache, and this reference maps it
    /// again — a minor fault (a swap-cache hit), no read. Only
    /// `linux:writeback=async` answers this.
    SwapCache,
}

/// Reclaim as a policy that models the kernel's lists counts it (`linux`),
/// in the kernel's own counters (/proc/vmstat, and a cgroup v2 group's
/// memory.stat), so that a simulation can be checked against more than its
/// faults. The sleeps are those of a policy whose writes complete on a
/// clock (`linux:...:write_us=T`), 0 otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReclaimStats {
    /// Direct reclaims run (`reclaim=batch`; one a miss with `reclaim=page`).
    pub reclaims: u64,
    /// Folios reclaim took from the inactive list (`pgscan_anon`).
    pub pgscan: u64,
    /// Folios reclaim freed (`pgsteal_anon`).
    pub pgsteal: u64,
    /// Folios a scan moved to the active list (`pgactivate`).
    pub pgactivate: u64,
    /// Folios a scan found referenced for the first time and kept on the
    /// inactive list for another trip (`folio_check_references` →
    /// `FOLIOREF_KEEP`: the `nr_ref_keep` of the kernel's
    /// `mm_vmscan_lru_shrink_inactive` tracepoint; /proc/vmstat has no
    /// counter for it).
    #[serde(default)]
    pub ref_keep: u64,
    /// Folios moved from the active to the inactive list (`pgdeactivate`).
    pub pgdeactivate: u64,
    /// Refaults activated (`workingset_activate_anon`).
    pub workingset_activate: u64,
    /// Completed writes whose folio was moved to the inactive tail
    /// (`pgrotated`; `writeback=async`).
    pub pgrotated: u64,
    /// Scans that met a folio under writeback and waited for it (cgroup v1).
    pub waits: u64,
    /// Time those waits took, seconds of the program's time.
    pub wait_s: f64,
    /// Time reclaims that freed nothing slept on writeback, seconds.
    pub throttle_s: f64,
}

/// What the policy may know about the current reference.
#[derive(Debug, Clone, Copy)]
pub struct Req {
    /// Position in the trace (0-based).
    pub pos: u64,
    pub write: bool,
    /// Position of the next reference to this page, or `u32::MAX` if none.
    /// Only filled for policies whose [`PolicyInfo::needs_future`] is set.
    pub next_use: u32,
}

pub trait Policy: Send {
    /// Simulates one reference to page `id`.
    fn access(&mut self, id: u32, req: &Req) -> Access;
    /// Bytes of metadata this policy keeps per distinct page (for the memory
    /// report), not counting the engine's own byte per page.
    fn bytes_per_page(&self) -> usize;
    /// A hint that page `id` will be referenced soon: the engine calls it a
    /// few references ahead so the policy can prefetch its per-page state
    /// (with [`util::prefetch`](crate::util::prefetch)). Must not change
    /// any state. Default: nothing.
    #[inline]
    fn prefetch(&self, _id: u32) {}

    /// A guess at a page this policy will evict a few misses from now
    /// (`ahead` ≥ 1 steps down its eviction order), or `None`. The engine
    /// prefetches its own state of that page on every miss, so that
    /// reading the victim's dirty bit at eviction hits the cache: the
    /// victim of a large memory is a page not referenced for long, whose
    /// state is far from any cache (on a 20 M-page trace that read was a
    /// third of LRU's time in the engine). Must not change any state; a
    /// wrong guess costs only the prefetch. Default: no guess.
    #[inline]
    fn victim_ahead(&self, _ahead: usize) -> Option<u32> {
        None
    }

    /// Resident pages this policy's reclaim wrote to swap since the last
    /// call and keeps resident for now (the kernel's `pageout()`: the write
    /// starts, the folio is freed later once clean), appended to `out` in
    /// write order. The engine asks after every miss and insert, counts each
    /// dirty one's swap-out (slot, device write) then and marks it clean,
    /// so its eventual eviction writes nothing. Default: none (a policy's
    /// victims are written when they are evicted).
    #[inline]
    fn take_writes(&mut self, _out: &mut Vec<u32>) {}

    /// Reclaim in the kernel's counters, for a policy that models the
    /// kernel's lists ([`ReclaimStats`]). Default: none.
    fn reclaim_stats(&self) -> Option<ReclaimStats> {
        None
    }

    /// Brings non-resident page `id` in without a reference: a readahead
    /// read (swap readahead, a prefetcher, MADV_WILLNEED). The answer
    /// follows the rules of [`access`](Self::access) for a miss (it evicts
    /// one page when memory is full, never `id`). Default: `access`, i.e. a
    /// prefetched page is placed as if it had been referenced; a policy
    /// that knows better overrides it (`linux` puts it on the inactive list
    /// without the young bit, as `swap_cluster_readahead` does).
    fn insert(&mut self, id: u32, req: &Req) -> Access {
        self.access(id, req)
    }

    /// True when [`remove`](Self::remove) is implemented (MADV_PAGEOUT
    /// hints need it; the engine refuses pageout hints otherwise).
    fn can_remove(&self) -> bool {
        false
    }

    /// Drops the resident pages `ids` from memory (MADV_PAGEOUT reclaims
    /// them at once; a batch, so a policy can do it in one pass over its
    /// lists). Called only when [`can_remove`](Self::can_remove) is true,
    /// with distinct resident pages. Default: nothing.
    fn remove(&mut self, _ids: &[u32]) {}

    /// Makes the resident pages `ids` the next to go (MADV_COLD:
    /// deactivate, clear the referenced state), in that order. Default:
    /// nothing (the advice is ignored, as the kernel may also do).
    fn demote(&mut self, _ids: &[u32]) {}

    /// Simulates a chunk of references: the engine's loop
    /// ([`engine::feed_chunk`](crate::engine::feed_chunk)) compiled for
    /// this policy's own type, so that [`access`](Self::access) and
    /// [`prefetch`](Self::prefetch) are direct, inlined calls and a
    /// `Box<dyn Policy>` costs one indirect call a chunk rather than one a
    /// reference. `check`: verify the replacement contract on every
    /// reference (the tests). Policies keep this default.
    fn feed_chunk(
        &mut self,
        core: &mut crate::engine::Core,
        chunk: crate::engine::Chunk<'_>,
        check: bool,
    ) -> Result<(), SimError> {
        if check {
            crate::engine::feed_chunk::<Self, true>(self, core, chunk)
        } else {
            crate::engine::feed_chunk::<Self, false>(self, core, chunk)
        }
    }
}

/// Settings for building a policy.
pub struct PolicyConfig<'a> {
    /// Memory size in pages (at least 1).
    pub capacity: usize,
    /// Number of distinct pages: ids are below this.
    pub pages: usize,
    pub params: &'a Params,
    /// Seed for policies that draw random numbers (BRRIP, DRRIP).
    pub seed: u64,
}

type Build = fn(&PolicyConfig) -> Result<Box<dyn Policy>, SimError>;

/// A registry entry: one per policy file.
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Accepted parameters, e.g. "bits=N (default 1)"; empty if none.
    pub params: &'static str,
    /// The policy reads [`Req::next_use`] (OPT).
    pub needs_future: bool,
    pub build: Build,
}

/// `key=value` parameters of a policy spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    /// Splits a spec `name[:key=value...]` into its lower-case name and its
    /// parameters (keys lower-case); `example` shows the form in the error.
    pub fn split_spec(s: &str, example: &str) -> Result<(String, Params), SimError> {
        let mut parts = s.trim().split(':');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let mut params = BTreeMap::new();
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                SimError::BadParam(format!(
                    "'{p}' in '{s}': parameters are written key=value, e.g. {example}"
                ))
            })?;
            params.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
        Ok((name, Params(params)))
    }

    /// Fails if any key is not in `known`.
    pub fn allow(&self, policy: &str, known: &[&str]) -> Result<(), SimError> {
        self.allow_for("policy", policy, known)
    }
    /// Like [`allow`](Self::allow) for a `kind` of thing other than a policy.
    pub fn allow_for(&self, kind: &str, name: &str, known: &[&str]) -> Result<(), SimError> {
        for k in self.0.keys() {
            if !known.contains(&k.as_str()) {
                return Err(SimError::BadParam(format!(
                    "{kind} '{name}' has no parameter '{k}' (it takes: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }
    /// An integer parameter in `lo..=hi`, or `default`.
    pub fn int(&self, key: &str, default: u64, lo: u64, hi: u64) -> Result<u64, SimError> {
        match self.0.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(x) if (lo..=hi).contains(&x) => Ok(x),
                _ => Err(SimError::BadParam(format!(
                    "{key}={v}: expected a whole number from {lo} to {hi}"
                ))),
            },
        }
    }
    /// A real parameter in `lo..=hi`, or `default`.
    pub fn real(&self, key: &str, default: f64, lo: f64, hi: f64) -> Result<f64, SimError> {
        match self.0.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<f64>() {
                Ok(x) if x >= lo && x <= hi => Ok(x),
                _ => Err(SimError::BadParam(format!(
                    "{key}={v}: expected a number from {lo} to {hi}"
                ))),
            },
        }
    }
}

/// A policy name with parameters: `clock`, `clock:bits=2`, `srrip:m=3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    pub name: String,
    pub params: Params,
}

impl PolicySpec {
    /// Parses `name[:key=value[:key=value...]]`, checks the name exists and
    /// builds the policy once (a small memory) so that bad parameters fail
    /// here, not when a simulation starts.
    pub fn parse(s: &str) -> Result<Self, SimError> {
        let (name, params) = Params::split_spec(s, "clock:bits=2")?;
        let info = crate::policies::lookup(&name)?;
        (info.build)(&PolicyConfig {
            capacity: 64,
            pages: 256,
            params: &params,
            seed: 1,
        })?;
        Ok(PolicySpec { name, params })
    }

    /// Parses a comma-separated list; `all` expands to every registered policy.
    pub fn parse_list(s: &str) -> Result<Vec<Self>, SimError> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if item == "all" {
                out.extend(crate::policies::REGISTRY.iter().map(|i| PolicySpec {
                    name: i.name.to_string(),
                    params: Params::default(),
                }));
            } else {
                out.push(Self::parse(item)?);
            }
        }
        if out.is_empty() {
            return Err(SimError::BadParam(
                "no policy given (e.g. --policy lru,clock,arc or all)".into(),
            ));
        }
        Ok(out)
    }

    pub fn info(&self) -> &'static PolicyInfo {
        crate::policies::lookup(&self.name).expect("checked at parse")
    }
}

impl std::fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        for (k, v) in &self.params.0 {
            write!(f, ":{k}={v}")?;
        }
        Ok(())
    }
}
