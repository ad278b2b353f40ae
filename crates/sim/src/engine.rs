//! The memory model around a policy, and the simulation loop.
//!
//! * The first reference to a page is a **minor fault** (zero-fill).
//! * A reference to a page that was evicted is a **major fault** (swap-in);
//!   the page comes back clean: its swap copy stays valid.
//! * A write dirties the page (and so invalidates its swap copy).
//! * Evicting a dirty page is a **swap-out** (a write to swap); evicting a
//!   clean page whose swap copy is still valid writes nothing.
//!
//! * A policy may write a page to swap and keep it resident
//!   ([`Policy::take_writes`], `linux:writeback=async`): the swap-out is
//!   counted then and the page is clean; a reference to it before its
//!   eviction is a swap-cache hit ([`Access::SwapCache`]): a minor fault in
//!   the kernel's count, kept apart here (`swapcache_hits`).
//!
//! A page that was never swapped out has no swap copy, so it counts as dirty
//! from its first touch: anonymous memory has no other backing store.
//! (Simplification: the kernel maps a read-only first touch of anonymous
//! memory to the shared zero page, and may free the swap slot of a page
//! swapped in while swap is more than half full; neither is modelled.)
use crate::device::{CostReport, Costs, Device, FaultCosts, Io};
use crate::policy::{Access, Policy, PolicyConfig, PolicySpec, Req};
use crate::prefetch::{Fault, PrefetchConfig, PrefetchSpec, Prefetcher};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use swaplab_trace::dense::{DenseTrace, NEVER};

pub use crate::error::SimError;

/// Event counts of one simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub references: u64,
    pub hits: u64,
    pub minor_faults: u64,
    /// References to a page reclaim had written to swap but not freed yet
    /// ([`Access::SwapCache`], `linux:writeback=async`): minor faults in
    /// the kernel's count, but neither hits nor misses here, so the miss
    /// ratio keeps its meaning (references = hits + misses + these).
    #[serde(default)]
    pub swapcache_hits: u64,
    pub major_faults: u64,
    pub swap_outs: u64,
    pub evictions: u64,
    /// Pages read ahead (by a prefetcher or a willneed hint), besides the
    /// faulting page.
    #[serde(default)]
    pub prefetch_reads: u64,
    /// Read-ahead pages referenced before they were evicted.
    #[serde(default)]
    pub prefetch_used: u64,
    /// Read-ahead pages evicted (or paged out) before any reference.
    #[serde(default)]
    pub prefetch_unused: u64,
    /// Resident pages the prefetcher paged out (`leap:pageout=1`; counted
    /// in `evictions` too, and in `swap_outs` when dirty).
    #[serde(default)]
    pub prefetch_pageouts: u64,
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
    /// The prefetcher, when `sim --prefetch` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<String>,
    /// `prefetch_used / prefetch_reads` (absent when nothing was read ahead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// `prefetch_used / (prefetch_used + major_faults)`: the share of would-be
    /// major faults that readahead turned into hits (absent with a prefetcher
    /// and neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    /// Predicted time and device counters (`sim --device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostReport>,
    /// Reclaim in the kernel's counters, for `linux`
    /// ([`Policy::reclaim_stats`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<crate::policy::ReclaimStats>,
}

/// How many references ahead the engine asks the policy to prefetch: far
/// enough to hide a memory access (~100 ns) behind the references between.
const PREFETCH_DISTANCE: usize = 16;

/// How far down the policy's eviction order the engine prefetches a
/// victim's state ([`Policy::victim_ahead`]), on every eviction.
const VICTIM_AHEAD: usize = 16;

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
    let mut sim = Sim::new(spec, capacity, trace.distinct(), seed)?;
    let owned;
    let next_use = match next_use {
        Some(n) => n,
        None if sim.needs_future() => {
            owned = trace.next_use();
            &owned
        }
        None => &[],
    };
    let ids = &trace.ids;
    let bits = trace.write_bits();
    // The same chunks a stream of row groups gives (1 Mi references, a
    // multiple of 64 so that each chunk's write bits start at bit 0 of a word).
    const CHUNK: usize = 1 << 20;
    for s in (0..ids.len()).step_by(CHUNK) {
        let e = (s + CHUNK).min(ids.len());
        let nu = if next_use.is_empty() {
            &[][..]
        } else {
            &next_use[s..e]
        };
        sim.feed_inner::<CHECK>(s as u64, &ids[s..e], &bits[s / 64..], nu)?;
        progress((e - s) as u64);
    }
    Ok(sim.result())
}

/// One (policy, memory size) simulation fed its trace chunk by chunk:
/// what it holds is the policy and two bits per distinct page (the
/// engine's [`Core`]), nothing per reference, so a trace streamed from
/// disk row group by row group ([`swaplab_trace::stream`]) needs memory
/// for its distinct pages only. [`simulate`] feeds a whole in-memory trace
/// through the same loop.
pub struct Sim {
    spec: PolicySpec,
    policy: Box<dyn Policy>,
    core: Core,
    needs_future: bool,
}

/// The engine's side of a plain simulation: the memory model's per-page
/// state, its counters and the resident count. The policy's
/// [`Policy::feed_chunk`] runs [`feed_chunk`] over it.
///
/// **Layout.** Two bits per page, in bitmaps interleaved by 64 pages:
/// word `2k` holds the *seen* bits of pages `64k..64k + 63` (touched
/// before: a later miss is major, not minor), word `2k + 1` their *dirty*
/// bits (no valid swap copy: evicting it is a swap-out). Both words of a
/// page share one 16-byte-aligned pair, so one cache line and one
/// prefetch. A byte per page (as the extended engine keeps) was 4× the
/// memory for the same information: on a 50 M-page trace 50 MB the hot
/// loop touches at random, against 12.5 MB. A *resident* bit per page is
/// kept only by the contract checks of the tests (`CHECK`), in a bitmap
/// of its own allocated at the first checked chunk.
pub struct Core {
    /// Seen and dirty words, interleaved (see above).
    bits: Vec<u64>,
    /// Resident bit of each page, for the contract checks only.
    resident_bits: Vec<u64>,
    c: Counters,
    resident: usize,
    capacity: usize,
}

/// One chunk of references for [`Policy::feed_chunk`].
#[derive(Clone, Copy)]
pub struct Chunk<'a> {
    /// Trace position of `ids[0]`.
    pub pos: u64,
    pub ids: &'a [u32],
    /// Write bits packed from bit 0 (bit i = `ids[i]`).
    pub writes: &'a [u64],
    /// Each reference's next use, or empty (then [`NEVER`]).
    pub next_use: &'a [u32],
}

impl Core {
    fn new(pages: usize, capacity: usize) -> Self {
        Core {
            bits: crate::util::page_array(0, 2 * pages.div_ceil(64)),
            resident_bits: Vec::new(),
            c: Counters::default(),
            resident: 0,
            capacity,
        }
    }

    /// Index of the seen word of `id` (its dirty word is the next) and its bit.
    #[inline(always)]
    fn at(id: u32) -> (usize, u64) {
        ((id >> 6) as usize * 2, 1u64 << (id & 63))
    }
}

impl Sim {
    /// A memory of `capacity` pages (at least 1) managed by `spec`, for a
    /// trace whose dense ids are below `pages`.
    pub fn new(
        spec: &PolicySpec,
        capacity: usize,
        pages: usize,
        seed: u64,
    ) -> Result<Self, SimError> {
        let info = spec.info();
        let capacity = capacity.max(1);
        let cfg = PolicyConfig {
            capacity,
            pages,
            params: &spec.params,
            seed,
        };
        Ok(Sim {
            spec: spec.clone(),
            policy: (info.build)(&cfg)?,
            core: Core::new(pages, capacity),
            needs_future: info.needs_future,
        })
    }

    /// The policy reads each reference's next use (OPT): [`feed`](Self::feed) needs it.
    pub fn needs_future(&self) -> bool {
        self.needs_future
    }

    /// Simulates the references `ids` at trace positions `pos..`: `writes`
    /// holds their write bits packed from bit 0 (bit i = `ids[i]`), and
    /// `next_use` each one's next-use position when
    /// [`needs_future`](Self::needs_future) (else it may be empty).
    pub fn feed(
        &mut self,
        pos: u64,
        ids: &[u32],
        writes: &[u64],
        next_use: &[u32],
    ) -> Result<(), SimError> {
        self.feed_inner::<false>(pos, ids, writes, next_use)
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.core.c
    }

    /// The result so far.
    pub fn result(&self) -> SimResult {
        let c = self.core.c;
        SimResult {
            policy: self.spec.to_string(),
            capacity: self.core.capacity as u64,
            counters: c,
            miss_ratio: c.miss_ratio(),
            // The engine's two bits a page, counted as a byte.
            bytes_per_page: self.policy.bytes_per_page() + 1,
            prefetch: None,
            accuracy: None,
            coverage: None,
            cost: None,
            reclaim: self.policy.reclaim_stats(),
        }
    }

    /// Checks the chunk's shape, then runs the policy's own compiled copy
    /// of the loop ([`Policy::feed_chunk`]: one indirect call a chunk).
    fn feed_inner<const CHECK: bool>(
        &mut self,
        pos: u64,
        ids: &[u32],
        bits: &[u64],
        next_use: &[u32],
    ) -> Result<(), SimError> {
        if bits.len() < ids.len().div_ceil(64) {
            return Err(SimError::BadParam(format!(
                "{} references but write bits for {}",
                ids.len(),
                bits.len() * 64
            )));
        }
        if self.needs_future && next_use.len() != ids.len() {
            return Err(SimError::BadParam(format!(
                "policy '{}' needs each reference's next use (OPT): {} given for {} references",
                self.spec,
                next_use.len(),
                ids.len()
            )));
        }
        if !next_use.is_empty() && next_use.len() != ids.len() {
            return Err(SimError::BadParam(format!(
                "{} next-use positions for {} references",
                next_use.len(),
                ids.len()
            )));
        }
        if CHECK && self.core.resident_bits.is_empty() {
            self.core.resident_bits = vec![0; self.core.bits.len() / 2];
        }
        let chunk = Chunk {
            pos,
            ids,
            writes: bits,
            next_use,
        };
        let r = self.policy.feed_chunk(&mut self.core, chunk, CHECK);
        r.map_err(|e| match e {
            SimError::Contract { pos, what, .. } => SimError::Contract {
                policy: self.spec.to_string(),
                pos,
                what,
            },
            e => e,
        })
    }
}

/// The simulation loop, the hot path: a few nanoseconds a reference.
///
/// It is generic over the policy type and called from
/// [`Policy::feed_chunk`]'s default body, so every policy gets its own
/// compiled copy in which `access` and `prefetch` are direct calls the
/// compiler inlines (through `Box<dyn Policy>` they were an indirect call
/// per reference, which also kept the policy's state behind a pointer
/// reloaded every time). The engine's state is two bitmaps ([`Core`]);
/// each reference prefetches its page's state word pair and the policy's
/// per-page state `PREFETCH_DISTANCE` references ahead. `CHECK` (the
/// contract checks of the tests) is a constant that compiles away.
///
/// A contract error names no policy (the loop does not know it);
/// [`Sim`] fills it in.
#[inline(always)]
pub fn feed_chunk<P: Policy + ?Sized, const CHECK: bool>(
    policy: &mut P,
    core: &mut Core,
    chunk: Chunk<'_>,
) -> Result<(), SimError> {
    let Chunk {
        pos,
        ids,
        writes,
        next_use,
    } = chunk;
    let Core {
        bits,
        resident_bits,
        c,
        resident,
        capacity,
    } = core;
    let capacity = *capacity;
    let writes = &writes[..ids.len().div_ceil(64)];
    let contract = |i: usize, what: String| SimError::Contract {
        policy: String::new(),
        pos: pos + i as u64,
        what,
    };
    let is_resident = |r: &[u64], id: u32| r[(id >> 6) as usize] & (1 << (id & 63)) != 0;
    let (mut hits, mut minor, mut major, mut evictions, mut swap_outs) = (0u64, 0u64, 0, 0, 0);
    let mut swapcache = 0u64;
    let mut written: Vec<u32> = Vec::new();
    for i in 0..ids.len() {
        if let Some(&ahead) = ids.get(i + PREFETCH_DISTANCE) {
            crate::util::prefetch(bits.as_ptr().wrapping_add((ahead >> 6) as usize * 2));
            policy.prefetch(ahead);
        }
        let id = ids[i];
        let write = (writes[i >> 6] >> (i & 63)) & 1 == 1;
        let req = Req {
            pos: pos + i as u64,
            write,
            next_use: match next_use.get(i) {
                Some(&n) => n,
                None => NEVER,
            },
        };
        let (w, b) = Core::at(id);
        match policy.access(id, &req) {
            Access::Hit => {
                if CHECK && !is_resident(resident_bits, id) {
                    return Err(contract(
                        i,
                        format!("hit on page {id}, which is not resident"),
                    ));
                }
                hits += 1;
                if write {
                    bits[w + 1] |= b;
                }
            }
            Access::SwapCache => {
                if CHECK && !is_resident(resident_bits, id) {
                    return Err(contract(
                        i,
                        format!("swap-cache hit on page {id}, which is not resident"),
                    ));
                }
                swapcache += 1;
                if write {
                    bits[w + 1] |= b;
                }
            }
            Access::Miss { victim } => {
                // Pages the policy wrote and kept (before the victim, which
                // may be one of them): clean from now.
                policy.take_writes(&mut written);
                if !written.is_empty() {
                    for &p in &written {
                        let (pw, pb) = Core::at(p);
                        if CHECK && (p == id || !is_resident(resident_bits, p)) {
                            return Err(contract(
                                i,
                                format!("wrote page {p}, which is not resident"),
                            ));
                        }
                        swap_outs += u64::from(bits[pw + 1] & pb != 0);
                        bits[pw + 1] &= !pb;
                    }
                    written.clear();
                }
                if CHECK {
                    if is_resident(resident_bits, id) {
                        return Err(contract(i, format!("miss on page {id}, which is resident")));
                    }
                    resident_bits[(id >> 6) as usize] |= b;
                }
                if bits[w] & b == 0 {
                    minor += 1;
                    // No swap copy yet: the page must be written out when evicted.
                    bits[w] |= b;
                    bits[w + 1] |= b;
                } else {
                    major += 1;
                    // Swapped in: clean until written (its swap copy stays valid).
                    if write {
                        bits[w + 1] |= b;
                    } else {
                        bits[w + 1] &= !b;
                    }
                }
                if let Some(v) = victim {
                    if let Some(next) = policy.victim_ahead(VICTIM_AHEAD) {
                        crate::util::prefetch(bits.as_ptr().wrapping_add((next >> 6) as usize * 2));
                    }
                    let (vw, vb) = Core::at(v);
                    if CHECK {
                        if v == id || !is_resident(resident_bits, v) {
                            return Err(contract(
                                i,
                                format!("evicted page {v}, which is not resident"),
                            ));
                        }
                        if *resident != capacity {
                            return Err(contract(
                                i,
                                format!("evicted with {resident} of {capacity} pages resident"),
                            ));
                        }
                        resident_bits[(v >> 6) as usize] &= !vb;
                    }
                    evictions += 1;
                    // Its dirty bit stays: it is reset when the page comes
                    // back, and read only while the page is resident.
                    swap_outs += u64::from(bits[vw + 1] & vb != 0);
                } else {
                    *resident += 1;
                    if CHECK && *resident > capacity {
                        return Err(contract(
                            i,
                            format!("{resident} pages resident in a memory of {capacity}"),
                        ));
                    }
                }
            }
        }
    }
    c.hits += hits;
    c.swapcache_hits += swapcache;
    c.minor_faults += minor;
    c.major_faults += major;
    c.evictions += evictions;
    c.swap_outs += swap_outs;
    c.references += ids.len() as u64;
    Ok(())
}

/// A hint the simulator applies to a range of virtual pages (`swaplab sim
/// --hints`: the CLI turns a hint file's byte ranges into these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeHint {
    /// First page (virtual page number, as in the trace).
    pub start: u64,
    /// One past the last page.
    pub end: u64,
    pub action: HintKind,
}

/// What a [`RangeHint`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintKind {
    /// mlock: the pages are pinned (resident from their first touch, never
    /// evicted) and the whole range is taken from the memory the policy
    /// manages (mlock populates the range).
    Pin,
    /// MADV_WILLNEED: at every fault in the range, read the next `window`
    /// pages of the range that have a swap copy.
    Willneed { window: u64 },
    /// MADV_COLD on the range's resident pages, `after` references after
    /// the range's first touch.
    Cold { after: u64 },
    /// MADV_PAGEOUT on the range's resident pages, `after` references after
    /// the range's first touch.
    Pageout { after: u64 },
}

/// What [`simulate_ext`] adds to a plain simulation.
#[derive(Default, Clone, Copy)]
pub struct Extras<'a> {
    /// A prefetcher (`none` or absent: none).
    pub prefetch: Option<&'a PrefetchSpec>,
    /// Range hints.
    pub hints: &'a [RangeHint],
}

impl Extras<'_> {
    /// Nothing to add: the plain engine runs.
    pub fn is_plain(&self) -> bool {
        self.prefetch.is_none_or(|p| p.is_none()) && self.hints.is_empty()
    }
}

/// Like [`simulate`], with a prefetcher and hints. Runs the plain engine
/// when `extras` adds nothing, so that path stays as fast as it was; the
/// result names the prefetcher and its accuracy and coverage when one was
/// given. The extended path always checks the replacement contract (it is
/// not the hot path).
pub fn simulate_ext(
    trace: &DenseTrace,
    next_use: Option<&[u32]>,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
    extras: &Extras,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimResult, SimError> {
    let mut r = if extras.is_plain() {
        run::<false>(trace, next_use, spec, capacity, seed, progress)?
    } else {
        run_ext(
            trace, next_use, spec, capacity, seed, extras, None, progress,
        )?
    };
    prefetch_stats(&mut r, extras);
    Ok(r)
}

/// Like [`simulate_ext`], with a swap device and a fault path: the result's
/// `cost` holds the predicted time and the device counters (see
/// [`crate::device`] and docs/simulator.md, "Devices and fault costs").
/// Always runs the extended engine. When the device keeps its pages in RAM
/// (zram), the policy gets `capacity − ⌈ratio × peak stored pages⌉` pages:
/// the simulation is repeated with that capacity until it no longer
/// changes (at most 8 rounds); `capacity` in the result stays the memory
/// given, `cost.effective_capacity` is the policy's.
#[allow(clippy::too_many_arguments)]
pub fn simulate_costed(
    trace: &DenseTrace,
    next_use: Option<&[u32]>,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
    extras: &Extras,
    costs: &Costs,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimResult, SimError> {
    let capacity = capacity.max(1);
    let ratio = costs.device.build()?.ram_ratio();
    let mut cap = capacity;
    let mut r = run_ext(
        trace,
        next_use,
        spec,
        cap,
        seed,
        extras,
        Some(costs),
        progress,
    )?;
    if ratio > 0.0 {
        for _ in 0..8 {
            let peak = r.cost.as_ref().map_or(0, |c| c.peak_stored_pages);
            let held = (ratio * peak as f64).ceil() as usize;
            if held >= capacity {
                return Err(SimError::NoMemory(format!(
                    "{}: {peak} pages stored at ratio {ratio} take {held} of the {capacity} pages \
                     of memory, leaving none to the program: give more memory",
                    costs.device
                )));
            }
            let next = capacity - held;
            if next == cap {
                break;
            }
            cap = next;
            r = run_ext(
                trace,
                next_use,
                spec,
                cap,
                seed,
                extras,
                Some(costs),
                &|_| {},
            )?;
        }
        r.capacity = capacity as u64;
        if let Some(c) = &mut r.cost {
            c.effective_capacity = Some(cap as u64);
        }
    }
    prefetch_stats(&mut r, extras);
    Ok(r)
}

/// The prefetcher's name, accuracy and coverage, when one was given.
fn prefetch_stats(r: &mut SimResult, extras: &Extras) {
    if let Some(p) = extras.prefetch {
        let c = &r.counters;
        r.prefetch = Some(p.to_string());
        r.accuracy =
            (c.prefetch_reads > 0).then(|| c.prefetch_used as f64 / c.prefetch_reads as f64);
        let d = c.prefetch_used + c.major_faults;
        r.coverage = (d > 0).then(|| c.prefetch_used as f64 / d as f64);
    }
}

/// Read ahead and not referenced since (by a prefetcher or a willneed hint).
const PREFETCHED: u8 = 8;
/// Read by the prefetcher (its first reference is told to it as a hit).
const RA: u8 = 16;
/// Pinned by an mlock hint: never in the policy.
const PINNED: u8 = 32;
/// Written out by the policy while resident (`linux`'s writeback): its
/// reclaim was charged with the write, and freeing it later costs nothing
/// more.
const WRITTEN: u8 = 64;
/// No slot / no owner.
const NO: u32 = u32::MAX;

/// Swap slots, allocated at swap-out by a next-fit cursor as the kernel's
/// `scan_swap_map_slots` does on one device, over `2 × pages` slots (slot 0
/// is the swap header). A page keeps its slot through a clean swap-in and a
/// clean eviction, and also when it is written after the fault that mapped
/// it: `do_swap_page` frees the slot only when that fault itself writes
/// (`should_try_to_free_swap` → `folio_free_swap`, the swap-in of a write,
/// or the first use of a read-ahead page by a write); a read fault maps an
/// exclusive page writable and clean, the later write dirties the PTE
/// without a fault, and the folio stays in the swap cache with its slot,
/// to which reclaim writes it again. (Until the writeback model, any write
/// after the swap-in freed the slot here, so a rewritten page took a new
/// slot in eviction order.)
struct Slots {
    of: Vec<u32>,
    owner: Vec<u32>,
    cursor: usize,
    /// Slots in use, and their peak.
    held: u64,
    peak: u64,
}

impl Slots {
    fn new(pages: usize) -> Self {
        Slots {
            of: vec![NO; pages],
            owner: vec![NO; 2 * pages + 2],
            cursor: 1,
            held: 0,
            peak: 0,
        }
    }
    fn alloc(&mut self, id: u32) {
        if self.of[id as usize] != NO {
            return;
        }
        // At most `pages` of the slots are ever taken: a free one exists.
        let n = self.owner.len();
        let mut s = self.cursor;
        while self.owner[s] != NO {
            s += 1;
            if s == n {
                s = 1;
            }
        }
        self.owner[s] = id;
        self.of[id as usize] = s as u32;
        self.cursor = if s + 1 == n { 1 } else { s + 1 };
        self.held += 1;
        self.peak = self.peak.max(self.held);
    }
    fn free(&mut self, id: u32) {
        let s = std::mem::replace(&mut self.of[id as usize], NO);
        if s != NO {
            self.owner[s as usize] = NO;
            self.held -= 1;
        }
    }
}

/// The extended engine's state.
struct Ext<'a> {
    policy: Box<dyn Policy>,
    state: Vec<u8>,
    c: Counters,
    /// Pages resident in the policy (pinned pages not counted).
    resident: usize,
    /// The policy's memory.
    cap: usize,
    slots: Option<Slots>,
    pf: Option<Box<dyn Prefetcher>>,
    pf_slots: bool,
    /// Virtual page number of each id.
    vpn: &'a [u64],
    /// Id of each virtual page (filled when a prefetcher or hint needs it).
    id_of: FxHashMap<u64, u32>,
    /// For each page, the position of its next reference after the last
    /// one (OPT's `next_use` for a page read ahead); empty unless needed.
    next_of: Vec<u32>,
    name: String,
    pos: usize,
    cost: Option<CostState>,
    /// The policy's writes of the current miss ([`Policy::take_writes`]).
    written: Vec<u32>,
}

/// Why a page leaves memory ([`Ext::gone`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    /// The policy's reclaim chose it (or wrote it on the way).
    Reclaim,
    /// A hint's or a prefetcher's page-out asked for it.
    Pageout,
}

/// The time model's state (`simulate_costed`), in µs of the program's clock.
struct CostState {
    dev: Box<dyn Device>,
    fc: FaultCosts,
    /// The device is read in the faulting task (zram): no `io_us`.
    sync_dev: bool,
    /// The program's own time per reference.
    per_ref: f64,
    /// Stalls so far: the clock is `per_ref × position + stall`.
    stall: f64,
    major: f64,
    minor: f64,
    swapcache: f64,
    reclaim: f64,
    /// Reclaim's CPU is charged per page scanned (`scan_us` above 0, and a
    /// policy that counts its scans), not per page written or freed.
    by_scan: bool,
    /// The policy's pages scanned already charged.
    scanned: u64,
    /// When each read-ahead page's read completes.
    ready: Vec<f64>,
    /// Pages fetched by the accelerator since the last drain.
    pfa_pending: u64,
    /// The reads of the current fault (the faulting page and read-ahead).
    reads: Vec<u32>,
}

impl CostState {
    fn now(&self, pos: usize) -> f64 {
        self.per_ref * pos as f64 + self.stall
    }
    fn minor_fault(&mut self) {
        let t = self.fc.trap_us + self.fc.zero_us;
        self.minor += t;
        self.stall += t;
    }
}

impl Ext<'_> {
    fn io(&self, id: u32) -> Io {
        let slot = self.slots.as_ref().map_or(NO, |s| s.of[id as usize]);
        Io {
            id,
            vpn: self.vpn[id as usize],
            slot: if slot == NO { 0 } else { u64::from(slot) },
        }
    }

    /// Issues the current fault's reads in slot order (as the kernel's
    /// readahead reads its window) and charges the faulting page's wait
    /// (`target`, on a major fault) through the fault path. Read-ahead
    /// reads are asynchronous: they only occupy the device and set when
    /// their page is ready.
    fn submit_reads(&mut self, target: Option<u32>) {
        let Some(mut cs) = self.cost.take() else {
            return;
        };
        let now = cs.now(self.pos);
        let mut reads = std::mem::take(&mut cs.reads);
        reads.sort_unstable_by_key(|&id| self.io(id).slot);
        let mut wait = 0.0;
        let mut ahead = 0u32;
        for &id in &reads {
            let done = cs.dev.read(self.io(id), now);
            if Some(id) == target {
                wait = done - now;
            } else {
                cs.ready[id as usize] = done;
                ahead += 1;
            }
        }
        reads.clear();
        cs.reads = reads;
        if target.is_some() {
            let fc = cs.fc;
            let t = match fc.pfa_batch {
                Some(b) => {
                    cs.pfa_pending += 1;
                    if cs.pfa_pending == b {
                        cs.pfa_pending = 0;
                        wait + fc.trap_us + b as f64 * fc.pfa_page_us
                    } else {
                        wait
                    }
                }
                None => {
                    let io = if cs.sync_dev { 0.0 } else { fc.io_us };
                    // The faulting task submits the pages it reads ahead.
                    fc.trap_us + fc.kernel_us + io + wait + f64::from(ahead) * fc.ra_us
                }
            };
            cs.major += t;
            cs.stall += t;
        }
        self.cost = Some(cs);
    }

    fn contract(&self, what: String) -> SimError {
        SimError::Contract {
            policy: self.name.clone(),
            pos: self.pos as u64,
            what,
        }
    }

    /// Page `v` left memory: evicted by the policy's reclaim (`Reclaim`),
    /// or paged out on request (`Pageout`: a hint or a prefetcher's
    /// MADV_PAGEOUT, which pays the per-page costs even when reclaim's CPU
    /// is charged per page scanned: no reclaim scanned it).
    fn gone(&mut self, v: u32, how: Out) -> Result<(), SimError> {
        let vs = self.state[v as usize];
        if vs & RESIDENT == 0 || vs & PINNED != 0 {
            return Err(self.contract(format!("evicted page {v}, which is not resident")));
        }
        self.c.evictions += 1;
        if vs & DIRTY != 0 {
            self.write_out(v, how);
        } else if vs & WRITTEN == 0 {
            let scanned = how == Out::Reclaim;
            if let Some(cs) = self.cost.as_mut().filter(|cs| !(cs.by_scan && scanned)) {
                // A clean page (its swap copy valid): reclaimed, not written.
                cs.reclaim += cs.fc.clean_us;
                cs.stall += cs.fc.clean_us;
            }
        }
        if vs & PREFETCHED != 0 {
            self.c.prefetch_unused += 1;
        }
        self.state[v as usize] = SEEN;
        Ok(())
    }

    /// Charges `scan_us` for each page the policy's reclaim scanned since
    /// the last call (when reclaim is costed by scan). Reclaim runs inside
    /// the policy's answer to a miss; `missed` calls this after submitting
    /// that reclaim's writes, so that the device works through them during
    /// the reclaim's CPU time and the fault's read is submitted after it,
    /// as the kernel's writes go out while it scans and the faulting task
    /// reads when its reclaim is done. (Charged before the writes, the
    /// writes of a whole reclaim would reach the device at once, just
    /// before the read: traverse 64M at 90 % predicted 0.17 s more of
    /// major-fault time.)
    fn charge_scans(&mut self) {
        let Some(cs) = self.cost.as_mut().filter(|cs| cs.by_scan) else {
            return;
        };
        let now = self.policy.reclaim_stats().map_or(0, |r| r.pgscan);
        let t = now.saturating_sub(cs.scanned) as f64 * cs.fc.scan_us;
        cs.scanned = now;
        cs.reclaim += t;
        cs.stall += t;
    }

    /// Reclaim writes page `v` to swap: a swap-out, its slot, and the
    /// write's cost.
    fn write_out(&mut self, v: u32, how: Out) {
        self.c.swap_outs += 1;
        if let Some(s) = &mut self.slots {
            s.alloc(v);
        }
        if self.cost.is_some() {
            let io = self.io(v);
            if let Some(cs) = &mut self.cost {
                let now = cs.now(self.pos);
                let scanned = cs.by_scan && how == Out::Reclaim;
                let cpu = if scanned { 0.0 } else { cs.fc.reclaim_us };
                let t = cpu + cs.dev.write(io, now);
                cs.reclaim += t;
                cs.stall += t;
            }
        }
    }

    /// Accounts for the answer to a miss or an insert of `id`, and for the
    /// pages the policy wrote on the way ([`Policy::take_writes`]).
    fn missed(&mut self, id: u32, victim: Option<u32>) -> Result<(), SimError> {
        let r = self.account_miss(id, victim);
        self.charge_scans();
        r
    }

    /// [`Self::missed`] but for the scans' CPU.
    fn account_miss(&mut self, id: u32, victim: Option<u32>) -> Result<(), SimError> {
        let mut written = std::mem::take(&mut self.written);
        self.policy.take_writes(&mut written);
        for &p in &written {
            let ps = self.state[p as usize];
            if p == id || ps & RESIDENT == 0 || ps & PINNED != 0 {
                return Err(self.contract(format!("wrote page {p}, which is not resident")));
            }
            if ps & DIRTY != 0 {
                self.write_out(p, Out::Reclaim);
                self.state[p as usize] = (ps & !DIRTY) | WRITTEN;
            }
        }
        written.clear();
        self.written = written;
        match victim {
            Some(v) => {
                if v == id {
                    return Err(self.contract(format!("evicted page {v}, the one brought in")));
                }
                if self.resident != self.cap {
                    return Err(self.contract(format!(
                        "evicted with {} of {} pages resident",
                        self.resident, self.cap
                    )));
                }
                self.gone(v, Out::Reclaim)
            }
            None => {
                self.resident += 1;
                if self.resident > self.cap {
                    return Err(self.contract(format!(
                        "{} pages resident in a memory of {}",
                        self.resident, self.cap
                    )));
                }
                Ok(())
            }
        }
    }

    /// Reads page `id` ahead if it has a swap copy and is not resident.
    fn read_ahead(&mut self, id: u32, flag: u8) -> Result<(), SimError> {
        let s = self.state[id as usize];
        if s & SEEN == 0 || s & (RESIDENT | PINNED) != 0 {
            return Ok(());
        }
        let req = Req {
            pos: self.pos as u64,
            write: false,
            next_use: self.next_of.get(id as usize).copied().unwrap_or(NEVER),
        };
        match self.policy.insert(id, &req) {
            Access::Hit | Access::SwapCache => Err(self.contract(format!(
                "insert of page {id} answered hit, but it is not resident"
            ))),
            Access::Miss { victim } => {
                self.missed(id, victim)?;
                self.state[id as usize] = SEEN | RESIDENT | PREFETCHED | flag;
                self.c.prefetch_reads += 1;
                if let Some(cs) = &mut self.cost {
                    cs.reads.push(id);
                }
                Ok(())
            }
        }
    }

    /// The ids of the resident, unpinned pages of pages `start..end`.
    fn resident_in(&self, start: u64, end: u64) -> Vec<u32> {
        let ok = |id: u32| self.state[id as usize] & (RESIDENT | PINNED) == RESIDENT;
        if end.saturating_sub(start) > self.vpn.len() as u64 {
            (0..self.vpn.len() as u32)
                .filter(|&id| (start..end).contains(&self.vpn[id as usize]) && ok(id))
                .collect()
        } else {
            (start..end)
                .filter_map(|p| self.id_of.get(&p).copied())
                .filter(|&id| ok(id))
                .collect()
        }
    }
}

/// Merged page ranges of the pin hints and the pages they take.
fn pinned_pages(hints: &[RangeHint]) -> (Vec<(u64, u64)>, u64) {
    let mut r: Vec<(u64, u64)> = hints
        .iter()
        .filter(|h| h.action == HintKind::Pin && h.end > h.start)
        .map(|h| (h.start, h.end))
        .collect();
    r.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in r {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let n = merged.iter().map(|(s, e)| e - s).sum();
    (merged, n)
}

#[allow(clippy::too_many_arguments)]
fn run_ext(
    trace: &DenseTrace,
    next_use: Option<&[u32]>,
    spec: &PolicySpec,
    capacity: usize,
    seed: u64,
    extras: &Extras,
    costs: Option<&Costs>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimResult, SimError> {
    let info = spec.info();
    let capacity = capacity.max(1);
    let hints = extras.hints;
    let (pins, pinned) = pinned_pages(hints);
    if pinned >= capacity as u64 {
        return Err(SimError::BadParam(format!(
            "mlock hints pin {pinned} pages, but memory is {capacity} pages: lower their bytes \
             or mlock_budget, or give more memory (at least one page must stay for the rest)"
        )));
    }
    let cap = capacity - pinned as usize;
    let pages = trace.distinct();
    let cfg = PolicyConfig {
        capacity: cap,
        pages,
        params: &spec.params,
        seed,
    };
    let policy = (info.build)(&cfg)?;
    if !policy.can_remove()
        && hints
            .iter()
            .any(|h| matches!(h.action, HintKind::Pageout { .. }))
    {
        return Err(SimError::BadParam(format!(
            "policy '{spec}' cannot drop pages on request, so pageout hints (MADV_PAGEOUT) \
             do not apply to it: simulate lru, fifo, clock or linux, or leave the pageout hints out"
        )));
    }
    let owned;
    let next_use = match next_use {
        Some(n) => n,
        None if info.needs_future => {
            owned = trace.next_use();
            &owned
        }
        None => &[],
    };
    let pf_spec = extras.prefetch.filter(|p| !p.is_none());
    let pf = pf_spec
        .map(|p| {
            (p.info().build)(&PrefetchConfig {
                params: &p.params,
                page_size: trace.page_size,
            })
        })
        .transpose()?;
    if !policy.can_remove() && pf.as_ref().is_some_and(|p| p.pages_out()) {
        return Err(SimError::BadParam(format!(
            "policy '{spec}' cannot drop pages on request, so prefetcher '{}' cannot page out \
             (MADV_PAGEOUT) with it: simulate lru, fifo, clock or linux, or leave pageout=1 out",
            pf_spec.map(|p| p.to_string()).unwrap_or_default()
        )));
    }
    let pf_slots = pf_spec.is_some_and(|p| p.info().slots);
    let needs_map = (pf.is_some() && !pf_slots) || !hints.is_empty();
    let counts_scans = policy.reclaim_stats().is_some();
    let mut e = Ext {
        policy,
        state: vec![0u8; pages],
        c: Counters::default(),
        resident: 0,
        cap,
        slots: (pf_slots || costs.is_some()).then(|| Slots::new(pages)),
        pf,
        pf_slots,
        vpn: &trace.pages,
        id_of: if needs_map {
            trace
                .pages
                .iter()
                .enumerate()
                .map(|(i, &p)| (p, i as u32))
                .collect()
        } else {
            FxHashMap::default()
        },
        next_of: if next_use.is_empty() {
            Vec::new()
        } else {
            vec![NEVER; pages]
        },
        name: spec.to_string(),
        pos: 0,
        written: Vec::new(),
        cost: match costs {
            Some(k) => {
                let dev = k.device.build()?;
                let fc = k.fault_path.costs(k.device.profile())?;
                Some(CostState {
                    sync_dev: dev.synchronous(),
                    dev,
                    by_scan: fc.scan_us > 0.0 && counts_scans,
                    scanned: 0,
                    fc,
                    per_ref: k
                        .base_time_s
                        .map_or(0.0, |b| b * 1e6 / (trace.ids.len().max(1) as f64)),
                    stall: 0.0,
                    major: 0.0,
                    minor: 0.0,
                    swapcache: 0.0,
                    reclaim: 0.0,
                    ready: vec![0.0; pages],
                    pfa_pending: 0,
                    reads: Vec::new(),
                })
            }
            None => None,
        },
    };
    for (id, &p) in trace.pages.iter().enumerate() {
        if pins.iter().any(|&(s, end)| (s..end).contains(&p)) {
            e.state[id] = PINNED;
        }
    }
    let willneed: Vec<(u64, u64, u64)> = hints
        .iter()
        .filter_map(|h| match h.action {
            HintKind::Willneed { window } => Some((h.start, h.end, window)),
            _ => None,
        })
        .collect();
    let timed: Vec<usize> = (0..hints.len())
        .filter(|&k| {
            matches!(
                hints[k].action,
                HintKind::Cold { .. } | HintKind::Pageout { .. }
            )
        })
        .collect();
    let mut armed = vec![false; hints.len()];
    let mut due: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut cand: Vec<u64> = Vec::new();
    let mut outs: Vec<(u64, u64)> = Vec::new();
    let ids = &trace.ids;
    let bits = trace.write_bits();
    for i in 0..ids.len() {
        e.pos = i;
        while let Some(&Reverse((at, k))) = due.peek() {
            if at > i as u64 {
                break;
            }
            due.pop();
            let h = hints[k];
            let list = e.resident_in(h.start, h.end);
            if let HintKind::Pageout { .. } = h.action {
                e.policy.remove(&list);
                for &id in &list {
                    e.gone(id, Out::Pageout)?;
                    e.resident -= 1;
                }
            } else {
                e.policy.demote(&list);
            }
        }
        let id = ids[i];
        let write = (bits[i >> 6] >> (i & 63)) & 1 == 1;
        let s = e.state[id as usize];
        if s & PINNED != 0 {
            if s & SEEN == 0 {
                e.c.minor_faults += 1;
                e.state[id as usize] = s | SEEN | RESIDENT;
                if let Some(cs) = &mut e.cost {
                    cs.minor_fault();
                }
            } else {
                e.c.hits += 1;
            }
            continue;
        }
        let nu = if next_use.is_empty() {
            NEVER
        } else {
            next_use[i]
        };
        if let Some(n) = e.next_of.get_mut(id as usize) {
            *n = nu;
        }
        let req = Req {
            pos: i as u64,
            write,
            next_use: nu,
        };
        let answer = e.policy.access(id, &req);
        // The reference maps a page from swap (a major fault, the first use
        // of a read-ahead page, a swap-cache hit): do_swap_page, where a
        // write fault frees the slot (should_try_to_free_swap).
        let from_swap = match answer {
            Access::SwapCache => true,
            Access::Hit => s & PREFETCHED != 0,
            Access::Miss { .. } => s & SEEN != 0,
        };
        match answer {
            Access::Hit => {
                if s & RESIDENT == 0 {
                    return Err(e.contract(format!("hit on page {id}, which is not resident")));
                }
                e.c.hits += 1;
                if s & PREFETCHED != 0 {
                    if let Some(cs) = &mut e.cost {
                        // A swap-cache hit: trap + kernel path, and the wait
                        // for a read still in flight.
                        let now = cs.now(i);
                        let t = cs.fc.trap_us
                            + cs.fc.kernel_us
                            + (cs.ready[id as usize] - now).max(0.0);
                        cs.swapcache += t;
                        cs.stall += t;
                    }
                    e.c.prefetch_used += 1;
                    e.state[id as usize] = s & !(PREFETCHED | RA);
                    if s & RA != 0 {
                        if let Some(pf) = &mut e.pf {
                            pf.hit(e.vpn[id as usize]);
                        }
                    }
                }
            }
            Access::SwapCache => {
                if s & RESIDENT == 0 {
                    return Err(e.contract(format!(
                        "swap-cache hit on page {id}, which is not resident"
                    )));
                }
                e.c.swapcache_hits += 1;
                // The kernel path of a swap-cache hit.
                if let Some(cs) = &mut e.cost {
                    let t = cs.fc.trap_us + cs.fc.kernel_us;
                    cs.swapcache += t;
                    cs.stall += t;
                }
            }
            Access::Miss { victim } => {
                if s & RESIDENT != 0 {
                    return Err(e.contract(format!("miss on page {id}, which is resident")));
                }
                let first = s & SEEN == 0;
                e.missed(id, victim)?;
                let page = e.vpn[id as usize];
                if first {
                    e.c.minor_faults += 1;
                    e.state[id as usize] = SEEN | DIRTY | RESIDENT;
                    if let Some(cs) = &mut e.cost {
                        cs.minor_fault();
                    }
                    for &k in &timed {
                        let h = &hints[k];
                        if !armed[k] && (h.start..h.end).contains(&page) {
                            armed[k] = true;
                            let after = match h.action {
                                HintKind::Cold { after } | HintKind::Pageout { after } => after,
                                _ => 0,
                            };
                            due.push(Reverse((
                                (i as u64).saturating_add(after).saturating_add(1),
                                k,
                            )));
                        }
                    }
                } else {
                    e.c.major_faults += 1;
                    e.state[id as usize] = SEEN | RESIDENT;
                    if let Some(cs) = &mut e.cost {
                        cs.reads.push(id);
                    }
                    if let Some(pf) = &mut e.pf {
                        let slot = e.slots.as_ref().map_or(0, |s| u64::from(s.of[id as usize]));
                        cand.clear();
                        pf.fault(&Fault { page, slot }, &mut cand);
                        outs.clear();
                        pf.pageout(&mut outs);
                        for &(start, end) in &outs {
                            let mut list = e.resident_in(start, end);
                            list.retain(|&x| x != id);
                            if list.is_empty() {
                                continue;
                            }
                            e.policy.remove(&list);
                            for &x in &list {
                                e.gone(x, Out::Pageout)?;
                                e.resident -= 1;
                            }
                            e.c.prefetch_pageouts += list.len() as u64;
                        }
                        for &c in &cand {
                            let target = if e.pf_slots {
                                e.slots
                                    .as_ref()
                                    .and_then(|s| s.owner.get(c as usize))
                                    .copied()
                                    .filter(|&o| o != NO)
                            } else {
                                e.id_of.get(&c).copied()
                            };
                            if let Some(t) = target {
                                e.read_ahead(t, RA)?;
                            }
                        }
                    }
                }
                for &(start, end, window) in &willneed {
                    if (start..end).contains(&page) {
                        let to = page.saturating_add(window).saturating_add(1).min(end);
                        for p in page + 1..to {
                            if let Some(&t) = e.id_of.get(&p) {
                                e.read_ahead(t, 0)?;
                            }
                        }
                    }
                }
                if e.cost.is_some() {
                    e.submit_reads((!first).then_some(id));
                }
            }
        }
        if write {
            e.state[id as usize] |= DIRTY;
        }
        if write && from_swap {
            if e.cost.is_some() && e.slots.as_ref().is_some_and(|sl| sl.of[id as usize] != NO) {
                let io = e.io(id);
                if let Some(cs) = &mut e.cost {
                    cs.dev.free(io);
                }
            }
            if let Some(sl) = &mut e.slots {
                sl.free(id);
            }
        }
        if (i + 1) & ((1 << 20) - 1) == 0 {
            progress(1 << 20);
        }
    }
    progress((ids.len() & ((1 << 20) - 1)) as u64);
    e.c.references = ids.len() as u64;
    let peak = e.slots.as_ref().map_or(0, |s| s.peak);
    let cost = match (e.cost.take(), costs) {
        (Some(mut cs), Some(k)) => {
            if cs.pfa_pending > 0 {
                // The last, partial drain of the new-page queue.
                let t = cs.fc.trap_us + cs.pfa_pending as f64 * cs.fc.pfa_page_us;
                cs.major += t;
                cs.stall += t;
            }
            let end = cs.now(ids.len());
            cs.dev.finish(end);
            let s = |us: f64| us / 1e6;
            // The reclaimer's sleeps on writeback, when the policy times
            // its writes: stalls the device model does not see.
            let wb = e
                .policy
                .reclaim_stats()
                .map_or(0.0, |w| w.wait_s + w.throttle_s);
            Some(CostReport {
                device: k.device.to_string(),
                fault_path: k.fault_path.to_string(),
                fault_time_s: s(cs.stall),
                major_time_s: s(cs.major),
                minor_time_s: s(cs.minor),
                swapcache_time_s: s(cs.swapcache),
                reclaim_time_s: s(cs.reclaim),
                base_time_s: k.base_time_s,
                writeback_time_s: wb,
                predicted_time_s: k.base_time_s.map(|b| b + s(cs.stall) + wb),
                devices: cs.dev.stats(),
                effective_capacity: None,
                peak_stored_pages: peak,
                hybrid: cs.dev.hybrid(),
            })
        }
        _ => None,
    };
    Ok(SimResult {
        policy: spec.to_string(),
        capacity: capacity as u64,
        counters: e.c,
        miss_ratio: e.c.miss_ratio(),
        bytes_per_page: e.policy.bytes_per_page() + 1,
        prefetch: None,
        accuracy: None,
        coverage: None,
        cost,
        reclaim: e.policy.reclaim_stats(),
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

    fn ext(policy: &str, cap: usize, pf: &str, hints: &[RangeHint], pages: &[u64]) -> Counters {
        ext_r(policy, cap, pf, hints, pages).unwrap().counters
    }

    fn ext_r(
        policy: &str,
        cap: usize,
        pf: &str,
        hints: &[RangeHint],
        pages: &[u64],
    ) -> Result<SimResult, SimError> {
        let t = DenseTrace::from_pages(pages);
        let pf = PrefetchSpec::parse(pf).unwrap();
        simulate_ext(
            &t,
            None,
            &PolicySpec::parse(policy).unwrap(),
            cap,
            1,
            &Extras {
                prefetch: Some(&pf),
                hints,
            },
            &|_| {},
        )
    }

    fn hint(start: u64, end: u64, action: HintKind) -> RangeHint {
        RangeHint { start, end, action }
    }

    /// (minor, major, hits, evictions, swap-outs)
    fn five(c: &Counters) -> (u64, u64, u64, u64, u64) {
        (
            c.minor_faults,
            c.major_faults,
            c.hits,
            c.evictions,
            c.swap_outs,
        )
    }

    #[test]
    fn pinned_pages_stay_and_shrink_the_rest() {
        // lru, 3 pages, page 1 pinned: the policy has 2.
        // 1 2 3 4 1: 1 minor (pinned), 2 3 minor, 4 minor evicts 2, 1 hits.
        let pin = [hint(1, 2, HintKind::Pin)];
        let t = [1, 2, 3, 4, 1];
        assert_eq!(five(&ext("lru", 3, "none", &pin, &t)), (4, 0, 1, 1, 1));
        // Unpinned, 4 evicts 1 and 1 is a major fault.
        assert_eq!(five(&ext("lru", 3, "none", &[], &t)), (4, 1, 0, 2, 2));
        // The whole range counts, touched or not: 3 pages pinned leave none.
        let e = ext_r("lru", 3, "none", &[hint(1, 4, HintKind::Pin)], &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pin 3 pages, but memory is 3 pages"), "{e}");
    }

    #[test]
    fn pageout_and_cold_hints() {
        // Pages 0 and 1 paged out 2 references after 0's first touch
        // (before reference 3): 0 1 2 | 0 1: both come back as majors.
        // Memory 4, so nothing else is evicted; both were dirty: 2 swap-outs.
        let po = [hint(0, 2, HintKind::Pageout { after: 2 })];
        for p in ["lru", "fifo", "clock", "linux"] {
            let c = ext(p, 4, "none", &po, &[0, 1, 2, 0, 1]);
            assert_eq!(five(&c), (3, 2, 0, 2, 2), "{p}");
        }
        let e = ext_r("arc", 4, "none", &po, &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("pageout hints"), "{e}");
        // Cold on page 1 right after its first touch: 0 1 2 3 0 1, memory 3.
        // LRU and FIFO put 1 first in line: 3 evicts 1, 0 hits, 1 is a major
        // (evicting 2). Without the hint 3 evicts 0, and 0 (evicting 1) and
        // 1 (evicting 2) are both majors. Every page is dirty at its first
        // eviction: swap-outs = evictions.
        let cold = [hint(1, 2, HintKind::Cold { after: 0 })];
        let t = [0, 1, 2, 3, 0, 1];
        for p in ["lru", "fifo"] {
            assert_eq!(five(&ext(p, 3, "none", &cold, &t)), (4, 1, 1, 2, 2), "{p}");
            assert_eq!(five(&ext(p, 3, "none", &[], &t)), (4, 2, 0, 3, 3), "{p}");
        }
    }

    #[test]
    fn prefetcher_pageout_with_linux() {
        // linux, 64 pages (no reclaim ever), reads: pages 0..11 (minor),
        // then a pageout hint drops all 12 (dirty: 12 swap-outs) before
        // two more passes. leap:pageout=1:lag=2 (max 8), pass 1:
        //  0: major, window 0.  1: major, window 1: reads 2; pageout
        //  below page 0: nothing.  3: major (1 hit), window 2: reads 4 5,
        //  pages out 0.  6: major (2 hits), window 4: reads 7..10, pages
        //  out 1 2 3.  11: major (4 hits), window 8: reads nothing (12..19
        //  are not in the trace), pages out 4..8.
        // Pass 2 (9 10 11 resident): 0: major, off the trend: no
        //  pageout; window max(0, 8/2) = 4: reads 1..4.  5: major,
        //  window 8: reads 6 7 8; the pageout range is behind the last
        //  one's end: nothing.
        // 7 majors, 14 reads (all used), 9 pages paged out: clean (swapped
        // in and only read), so evicted without a write.
        let po = [hint(0, 12, HintKind::Pageout { after: 11 })];
        let t: Vec<u64> = (0..36).map(|i| i % 12).collect();
        let r = ext_r("linux", 64, "leap:pageout=1:lag=2", &po, &t).unwrap();
        let c = r.counters;
        assert_eq!(five(&c), (12, 7, 17, 21, 12));
        assert_eq!(
            (c.prefetch_reads, c.prefetch_used, c.prefetch_pageouts),
            (14, 14, 9)
        );
        // Without pageout=1 pass 1 has the same 5 majors and 7 reads, and
        // pass 2 finds everything resident: paging out with no memory
        // pressure only costs faults.
        let c = ext("linux", 64, "leap", &po, &t);
        assert_eq!(
            (c.major_faults, c.prefetch_reads, c.prefetch_pageouts),
            (5, 7, 0)
        );
        // Costed: the 12 pages the hint drops were dirty (12 swap-outs),
        // the 9 the prefetcher drops clean. No reclaim ran (pgscan 0), so
        // with scan_us the page-outs still pay the per-page costs:
        // 12 × 2 + 9 × 0.5 = 28.5 µs, with it or without.
        let costed = |fp: &str| {
            let t = DenseTrace::from_pages(&t);
            let device = crate::DeviceSpec::parse("ssd", None).unwrap();
            let fault_path = crate::FaultPath::parse(fp).unwrap();
            simulate_costed(
                &t,
                None,
                &PolicySpec::parse("linux").unwrap(),
                64,
                1,
                &Extras {
                    prefetch: Some(&PrefetchSpec::parse("leap:pageout=1:lag=2").unwrap()),
                    hints: &po,
                },
                &Costs {
                    device: &device,
                    fault_path: &fault_path,
                    base_time_s: None,
                },
                &|_| {},
            )
            .unwrap()
        };
        for fp in [
            "kernel:reclaim_us=2:clean_us=0.5",
            "kernel:reclaim_us=2:clean_us=0.5:scan_us=0.25",
        ] {
            let r = costed(fp);
            assert_eq!(r.reclaim.unwrap().pgscan, 0, "{fp}");
            assert_eq!(r.counters.prefetch_pageouts, 9, "{fp}");
            let us = r.cost.unwrap().reclaim_time_s * 1e6;
            assert!((us - 28.5).abs() < 1e-6, "{fp}: {us}");
        }
        // A policy that cannot drop pages refuses, as for pageout hints.
        let e = ext_r("arc", 8, "leap:pageout=1", &[], &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot page out"), "{e}");
    }

    #[test]
    fn willneed_reads_the_window_ahead_in_its_range() {
        // Like next:n=2 (see prefetch/next.rs), but only inside 0..8.
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        let wn = [hint(0, 8, HintKind::Willneed { window: 2 })];
        let c = ext("lru", 4, "none", &wn, &t);
        assert_eq!(
            (c.major_faults, c.prefetch_reads, c.prefetch_used),
            (3, 5, 5)
        );
        // Range 0..4: 0 reads 1 2, 3 reads nothing (4 is outside); 4..7 majors.
        let wn = [hint(0, 4, HintKind::Willneed { window: 2 })];
        let c = ext("lru", 4, "none", &wn, &t);
        assert_eq!(
            (c.major_faults, c.prefetch_reads, c.prefetch_used),
            (6, 2, 2)
        );
    }

    #[test]
    fn accuracy_and_coverage() {
        // next.rs's second case: 4 majors, 2 reads, neither used.
        let r = ext_r("lru", 3, "next:n=2", &[], &[0, 1, 2, 3, 4, 5, 0, 5, 4, 3]).unwrap();
        assert_eq!((r.accuracy, r.coverage), (Some(0.0), Some(0.0)));
        // The sequential case: 3 majors, 5 reads, 5 used.
        let t: Vec<u64> = (0..8).chain(0..8).collect();
        let r = ext_r("lru", 4, "next:n=2", &[], &t).unwrap();
        assert_eq!(r.accuracy, Some(1.0));
        assert_eq!(r.coverage, Some(5.0 / 8.0));
        assert_eq!(r.prefetch.as_deref(), Some("next:n=2"));
        // `none` runs the plain engine and names itself.
        let r = ext_r("lru", 4, "none", &[], &t).unwrap();
        assert_eq!((r.accuracy, r.coverage), (None, Some(0.0)));
        assert_eq!(r.counters, run_policy("lru", 4, &t).counters);
    }

    fn run_policy(p: &str, cap: usize, t: &[u64]) -> SimResult {
        testutil::run_spec(p, cap, t)
    }

    #[test]
    fn slots_are_freed_by_writes_and_reallocated() {
        // lru 2, cluster:pc=1 (window <= 2). 0 1 2 3 evict 0 1 (slots 1 2).
        // 0r: major (slot 1): window 2 (adjacent to prev 0): block 0..=1:
        //     nothing. Evicts 2 (slot 3).
        // 0w: hit, a write: slot 1 freed.
        // 1r: major (slot 2): window 2 (adjacent to prev 1): block 2..=3:
        //     reads slot 3 = page 2; evicts 3 (slot 4), then 0 for the read:
        //     0 is dirty and has no slot: swap-out to the next free slot 5
        //     (slot 1, freed, is behind the cursor).
        // 0r: major (slot 5): no hits, 5 is not next to prev 2: window 1.
        //     Evicts 1 (clean: keeps slot 2, no swap-out); page 2, read
        //     ahead, stays resident unused (so not counted unused).
        let refs = [
            (0, false),
            (1, false),
            (2, false),
            (3, false),
            (0, false),
            (0, true),
            (1, false),
            (0, false),
        ];
        let t = DenseTrace::from_refs(&refs);
        let pf = PrefetchSpec::parse("cluster:pc=1").unwrap();
        let r = simulate_ext(
            &t,
            None,
            &PolicySpec::parse("lru").unwrap(),
            2,
            1,
            &Extras {
                prefetch: Some(&pf),
                hints: &[],
            },
            &|_| {},
        )
        .unwrap();
        let c = r.counters;
        // Swap-outs: 0 1 2 3 (first evictions), 0 again (dirty) = 5.
        assert_eq!(
            (
                c.major_faults,
                c.prefetch_reads,
                c.swap_outs,
                c.prefetch_unused
            ),
            (3, 1, 5, 0)
        );
    }

    #[test]
    fn slot_allocation_is_next_fit() {
        // 3 pages: slots 1..=7. Swap-outs of 0 1 take slots 1 2; a write
        // frees 0's; 2 then takes 3 (the cursor moves on), and 0, swapped
        // out again, takes 4, not its old 1; a second alloc of a page
        // that holds a slot keeps it.
        let mut s = Slots::new(3);
        s.alloc(0);
        s.alloc(1);
        assert_eq!((s.of[0], s.of[1]), (1, 2));
        s.free(0);
        s.alloc(2);
        s.alloc(0);
        s.alloc(1);
        assert_eq!((s.of[0], s.of[1], s.of[2]), (4, 2, 3));
        assert_eq!(s.owner[1], NO);
        // Wrapping: the cursor passes the end and finds slot 1 free.
        for _ in 0..3 {
            s.free(2);
            s.alloc(2);
        }
        assert_eq!(s.of[2], 7);
        s.free(2);
        s.alloc(2);
        assert_eq!(s.of[2], 1);
    }

    #[test]
    fn every_policy_keeps_the_contract_with_prefetch_and_hints() {
        let tr = testutil::random_trace(20_000, 600, 7);
        let t = DenseTrace::from_pages(&tr);
        let hints = [
            hint(0, 50, HintKind::Cold { after: 100 }),
            hint(50, 80, HintKind::Willneed { window: 8 }),
            hint(590, 600, HintKind::Pin),
        ];
        let pageout = [hint(100, 300, HintKind::Pageout { after: 5000 })];
        for info in crate::policies::REGISTRY {
            let spec = PolicySpec::parse(info.name).unwrap();
            let drops = ["lru", "fifo", "clock", "linux"].contains(&info.name);
            for pf in ["next:n=4", "cluster", "vma", "leap", "leap:pageout=1:lag=4"] {
                if pf.contains("pageout") && !drops {
                    continue;
                }
                let pf = PrefetchSpec::parse(pf).unwrap();
                for cap in [12, 64, 300] {
                    let mut h = hints.to_vec();
                    if drops {
                        h.extend(pageout);
                    }
                    let r = simulate_ext(
                        &t,
                        None,
                        &spec,
                        cap,
                        1,
                        &Extras {
                            prefetch: Some(&pf),
                            hints: &h,
                        },
                        &|_| {},
                    )
                    .unwrap_or_else(|e| panic!("{} {pf} {cap}: {e}", info.name));
                    let c = r.counters;
                    assert_eq!(c.references, 20_000);
                    assert_eq!(c.hits + c.misses(), c.references);
                    assert!(c.prefetch_used + c.prefetch_unused <= c.prefetch_reads);
                }
            }
        }
    }

    #[test]
    fn prefetcher_pageout_keeps_the_contract_on_walks() {
        // Walks over 400 pages, up and down, with a random page every 8th
        // reference; every policy that can drop pages, at several sizes:
        // the contract checks hold, pages are paged out, and each paged-out
        // page is an eviction.
        let noise = testutil::random_trace(4000, 400, 3);
        let refs: Vec<(u64, bool)> = (0..4000u64)
            .map(|i| {
                let walk = if (i / 400) % 2 == 0 {
                    i % 400
                } else {
                    399 - i % 400
                };
                let p = if i % 8 == 7 { noise[i as usize] } else { walk };
                (p, i % 3 == 0)
            })
            .collect();
        let t = DenseTrace::from_refs(&refs);
        let pf = PrefetchSpec::parse("leap:pageout=1:lag=4").unwrap();
        for p in ["lru", "fifo", "clock", "linux"] {
            for cap in [16, 100, 300] {
                let r = simulate_ext(
                    &t,
                    None,
                    &PolicySpec::parse(p).unwrap(),
                    cap,
                    1,
                    &Extras {
                        prefetch: Some(&pf),
                        hints: &[],
                    },
                    &|_| {},
                )
                .unwrap_or_else(|e| panic!("{p} {cap}: {e}"));
                let c = r.counters;
                assert!(c.prefetch_pageouts > 0, "{p} {cap}");
                assert!(c.prefetch_pageouts <= c.evictions, "{p} {cap}");
                assert_eq!(c.hits + c.misses(), 4000);
            }
        }
    }

    #[test]
    fn unknown_policy_and_params_are_clear_errors() {
        let e = PolicySpec::parse("lruu").unwrap_err().to_string();
        assert!(e.contains("unknown policy 'lruu'"), "{e}");
        assert!(PolicySpec::parse("lru:x").is_err());
    }

    #[test]
    fn written_pages_count_alike_in_both_engines() {
        // linux:writeback=async writes pages and keeps them
        // (Policy::take_writes), and answers SwapCache for a reference to
        // one. Both engines count the write when it is made and nothing when
        // the clean page is evicted or found in the swap cache: the plain
        // loop and the extended one (forced here by a willneed hint on a
        // page the trace never touches) give the same counters. A loop of
        // 110 pages over 100, read on odd passes and written on even ones.
        let mut refs = Vec::new();
        for pass in 0..6u64 {
            refs.extend((0..110u64).map(|p| (p, pass % 2 == 0)));
        }
        let t = DenseTrace::from_refs(&refs);
        let spec = PolicySpec::parse("linux:reclaim=batch:writeback=async").unwrap();
        let plain = simulate_checked(&t, &spec, 100, 1).unwrap().counters;
        let hint = [RangeHint {
            start: 5000,
            end: 5001,
            action: HintKind::Willneed { window: 0 },
        }];
        let extras = Extras {
            prefetch: None,
            hints: &hint,
        };
        let ext = simulate_ext(&t, None, &spec, 100, 1, &extras, &|_| {})
            .unwrap()
            .counters;
        assert_eq!(plain, ext);
        assert!(plain.swapcache_hits > 0, "{plain:?}");
        assert_eq!(
            plain.hits + plain.swapcache_hits + plain.minor_faults + plain.major_faults,
            660
        );
        // Every swap-out is a write of a dirty page: no more than the first
        // touches and the writes of the even passes make dirty.
        assert!(plain.swap_outs <= 110 + 3 * 110, "{plain:?}");
    }
}
