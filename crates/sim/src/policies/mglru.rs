//! The multi-generational LRU (MGLRU, `lru_gen`) of Linux 6.12 for
//! anonymous memory (`mm/vmscan.c`, `mm/workingset.c`,
//! `include/linux/mm_inline.h`, `include/linux/mmzone.h`), one lruvec.
//!
//! **Generations.** Resident pages belong to generations numbered by
//! sequence numbers `min_seq..=max_seq`; there are at least `MIN_NR_GENS`
//! (2) and at most `MAX_NR_GENS` (4) of them (`get_nr_gens`). Each
//! generation is a FIFO queue (`lrugen->folios[gen]`, the queue's front is
//! the list tail, the oldest). As in `lru_gen_init_lruvec`, `max_seq` starts
//! at `MIN_NR_GENS + 1` and `min_seq` at 0, and every generation's birth
//! time (`timestamps[gen]`) is set.
//!
//! * **Fault** (`folio_add_lru` under `lru_gen_in_fault()` sets
//!   `PG_active`, then `lru_gen_add_folio`): a faulted page goes to the head
//!   of the youngest generation, `max_seq`, with its page-table accessed
//!   (young) bit set by the fault. A reference to a resident page only sets
//!   the young bit: for anonymous pages mapped in page tables the kernel
//!   learns of accesses only from the accessed bits.
//! * **Aging** (`try_to_inc_max_seq` → `walk_mm` → `walk_pte_range` →
//!   `folio_update_gen`, then `inc_max_seq`): every resident page whose
//!   young bit is set moves to generation `max_seq` (its bit is cleared and
//!   its tier bits `LRU_REFS_MASK | PG_referenced | PG_workingset` with
//!   it), then `max_seq` grows by one, so the new youngest generation
//!   starts empty and has the new birth time. As in the kernel the move
//!   only changes the page's generation number (and the generation sizes,
//!   `lru_gen_update_size`); the page keeps its place in its old queue until
//!   eviction meets it there (below, "promoted"). If `MAX_NR_GENS`
//!   generations exist, `inc_min_seq` first folds the oldest into the next
//!   (`folio_inc_gen`, to the tail). The simulator sees every reference, so
//!   the walk is exact: the accessed bits set since the last aging stand in
//!   for the page-table walk (the kernel's Bloom filters and
//!   `should_skip_vma` may skip some young PTEs; not modelled).
//! * **When to age** (`get_nr_to_scan` → `should_run_aging`): eviction is
//!   impossible with only `MIN_NR_GENS` generations (`scan_folios` refuses),
//!   so reclaim ages first; that is the "have to run aging" case and the
//!   default here (`eager=0`): the number of generations moves between 2
//!   and 3. With `eager=1` reclaim also ages when there are exactly
//!   `MIN_NR_GENS + 1` generations ("better to run aging even though
//!   eviction is still possible"), which the kernel does only below
//!   `DEF_PRIORITY`, i.e. when a first pass reclaimed too little; then there
//!   are 3 or 4 generations. With `access=pte` the victims are the same
//!   either way (a test checks it): both age exactly when the oldest
//!   generation has drained, the extra agings find no young bits, and the
//!   walk gives the same second chance as a rejection at eviction. The
//!   setting matters with `access=fd` (where new pages go, the
//!   controller's windows), for `MADV_COLD` (`max_seq - 1`) and for the
//!   birth times `min_ttl_ms` reads.
//! * **Eviction** (`evict_folios` → `isolate_folios` → `scan_folios` →
//!   `sort_folio` / `isolate_folio`, then `shrink_folio_list` and
//!   `try_to_inc_min_seq`), one page per miss once memory is full. The
//!   queue of `min_seq` is scanned from its oldest end:
//!   1. *promoted* (`sort_folio`: the page's generation is no longer
//!      `min_seq` because aging moved it): the page moves to the head of its
//!      generation's queue;
//!   2. *protected* (`sort_folio`: `tier > tier_idx` or `refs ==
//!      BIT(LRU_REFS_WIDTH)`): `folio_inc_gen` moves it to the tail of
//!      generation `min_seq + 1`, clearing its tier bits, and
//!      `protected[tier - 1]` counts it;
//!   3. otherwise it is isolated (`isolate_folio`: without `PG_referenced`
//!      its tier bits are cleared; `PG_referenced` is cleared) and goes
//!      through `shrink_folio_list`: if its young bit is set
//!      (`folio_referenced` → `lru_gen_look_around`, then
//!      `folio_check_references` keeps or activates it) it is *rejected*:
//!      `evict_folios` clears its tier bits and sets `PG_active`, so
//!      `move_folios_to_lru` → `lru_gen_add_folio` puts it at the head of
//!      `max_seq`, its young bit cleared. Otherwise it is the victim: a
//!      shadow entry (`lru_gen_eviction`) keeps `min_seq` and its refs, and
//!      `evicted[tier]` counts it.
//!
//!   When the oldest queue is empty, `try_to_inc_min_seq` advances
//!   `min_seq` (never below `MIN_NR_GENS` generations), and the controller
//!   carries its counts over (`reset_ctrl_pos(.., true)`).
//! * **Tiers** (`folio_lru_refs`, `lru_tier_from_refs`, `folio_inc_refs`):
//!   `refs` = the `LRU_REFS_WIDTH` (2) bits of accesses counted beyond
//!   `PG_referenced`, plus `PG_workingset`; `tier = order_base_2(refs + 1)`,
//!   `MAX_NR_TIERS` (4) tiers. The kernel counts accesses into these bits
//!   only through file descriptors (`folio_mark_accessed` →
//!   `folio_inc_refs`: first `PG_referenced`, then `PG_workingset`, then
//!   the counter). Anonymous pages are accessed through page tables, so for
//!   them (the default, `access=pte`) the bits are set only by a refault:
//!   `lru_gen_refault`, for a page whose shadow's `min_seq` is still the
//!   current one (`lru_gen_test_recent`), counts `refaulted[tier]` and, in
//!   a fault, sets all of `LRU_REFS_MASK | PG_workingset` (refs = 4). Aging
//!   clears them again on the first young bit it finds (`folio_update_gen`),
//!   and every faulted page is young, so for anon pages tiers matter only
//!   for pages read ahead in a fault and not yet referenced (placed by
//!   `insert`, below), which `refs == 4` protects once. With `access=fd`
//!   every reference is a file-descriptor access instead (`read()`/`write()`
//!   of a file or shmem page: `folio_mark_accessed`, no young bit, and a new
//!   page is added as `lru_gen_add_folio` adds an inactive file folio, to
//!   `min_seq`, or `min_seq + 1` when there are more than `MIN_NR_GENS + 1`
//!   generations); then the tiers and the controller below decide which
//!   pages eviction protects.
//! * **The PID controller** (`read_ctrl_pos`, `positive_ctrl_err`,
//!   `get_tier_idx`, `reset_ctrl_pos`): tier 0 is the set point (gain 1);
//!   each higher tier is a process variable (gain 2) whose refault rate is
//!   `refaulted / (evicted + protected)` of the current `min_seq` plus the
//!   running averages. Eviction protects the tiers above the first tier
//!   `t` whose rate is not lower than tier 0's (`tier_idx = t - 1`); a tier
//!   with fewer than `MIN_LRU_BATCH` (64) refaults is never protected.
//!   `NR_HIST_GENS` is 1: on each advance of `min_seq` the averages become
//!   (average + current) / 2 and the current counts restart.
//! * **`min_ttl_ms`** (`lru_gen_age_node` → `lruvec_is_reclaimable`; off,
//!   0, by default): when kswapd finds that the oldest generation was born
//!   less than `min_ttl_ms` ago, the kernel invokes the OOM killer rather
//!   than evict the working set. The simulator cannot kill the program, so
//!   eviction goes on; each reclaim that would have found the oldest
//!   generation too young is counted in [`MgLru::ttl_ooms`]. Time: the
//!   engine gives a policy only the trace position, so the clock is
//!   `position × ref_ns` (param `ref_ns=`, default 1000 ns per reference).
//!   The check is kswapd's only: memcg limit reclaim (how swaplab runs
//!   programs) never consults `min_ttl_ms`.
//! * **Readahead** (`insert`; `swapin_readahead` in a fault: `folio_add_lru`
//!   sets `PG_active` there too): the page goes to the head of `max_seq`
//!   with its young bit clear, refault accounting included.
//! * **MADV_COLD** (`demote`; `folio_deactivate` → `lru_deactivate`): young
//!   bit and `PG_referenced` cleared, the page re-added as an inactive anon
//!   page: generation `max_seq - 1` (for `access=fd`, as above).
//!   **MADV_PAGEOUT** (`remove`; `reclaim_pages`): evicted at once, with a
//!   shadow entry, as a reclaimed page.
//!
//! Simplifications: one lruvec and one type (anon; no file pages, so
//! `swappiness`, `get_type_to_scan` and the anon/file controller do not
//! apply; with `access=fd` the one type is file); one page reclaimed per
//! miss instead of batches (`MIN_LRU_BATCH`..`MAX_LRU_BATCH`) to a
//! watermark, so `tier_idx` is computed per miss rather than per batch;
//! the priority loop is reduced to the `eager=` choice; no
//! `lru_gen_look_around` of neighbouring PTEs (trace page ids carry no
//! page-table layout), no Bloom filters, single-mapped 4 KiB pages, no
//! dirty/writeback states (swap writeback is instant), no per-CPU batches;
//! shadow entries are never dropped.
//!
//! Memory: a 4-byte generation (or shadow `min_seq`) and 1 flag byte per
//! page; 4 bytes per queue entry (one per resident page) and per entry of
//! the list of pages made young since the last aging.
use crate::error::SimError;
use crate::policy::{Access, Policy, PolicyConfig, PolicyInfo, Req};
use crate::util::prefetch;
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "mglru",
    summary: "Linux 6.12 multi-generational LRU (lru_gen) for anon pages: generations, aging by accessed bits, tiers with the PID refault controller",
    params: "access=pte|fd (default pte: anon pages in page tables), eager=0|1 (default 0: age only when eviction is impossible), min_ttl_ms=N (default 0 = off), ref_ns=N (time per reference for min_ttl, default 1000)",
    needs_future: false,
    build: |c| {
        c.params
            .allow("mglru", &["access", "eager", "min_ttl_ms", "ref_ns"])?;
        Ok(Box::new(MgLru::new(c)?))
    },
};

/// `MIN_NR_GENS`.
const MIN_NR_GENS: u32 = 2;
/// `MAX_NR_GENS`.
const MAX_NR_GENS: u32 = 4;
/// `MAX_NR_TIERS`.
const MAX_NR_TIERS: usize = 4;
/// `LRU_REFS_WIDTH` = `MAX_NR_TIERS - 2`.
const LRU_REFS_WIDTH: u32 = 2;
/// `MIN_LRU_BATCH` = `BITS_PER_LONG`.
const MIN_LRU_BATCH: u64 = 64;

/// The page is resident (on a generation queue).
const RESIDENT: u8 = 1;
/// The page-table accessed bit.
const YOUNG: u8 = 2;
/// `PG_referenced`.
const REFERENCED: u8 = 4;
/// `PG_workingset` (for an evicted page: the shadow's workingset bit).
const WORKINGSET: u8 = 8;
/// `LRU_REFS_MASK`: two bits of counted accesses (for an evicted page: the
/// shadow token's `refs - 1`).
const REFS_SHIFT: u8 = 4;
const REFS_MASK: u8 = 3 << REFS_SHIFT;
/// The page was evicted and has a shadow entry.
const SHADOW: u8 = 64;
/// `LRU_REFS_MASK | LRU_REFS_FLAGS`.
const TIER_BITS: u8 = REFS_MASK | REFERENCED | WORKINGSET;

/// `lru_tier_from_refs`: `order_base_2(refs + 1)`.
fn tier_from_refs(refs: u32) -> usize {
    (u32::BITS - refs.leading_zeros()) as usize
}

/// One `struct ctrl_pos`.
#[derive(Debug, Clone, Copy)]
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// `positive_ctrl_err`: true if the process variable has few refaults or a
/// lower refault rate than the set point.
fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
            <= (sp.refaulted + 1) * pv.total * pv.gain
}

/// The multi-generational LRU; see the module documentation.
pub struct MgLru {
    /// Generation queues by `seq % MAX_NR_GENS`, the oldest at the front.
    queues: [VecDeque<u32>; MAX_NR_GENS as usize],
    /// Pages whose generation is each `seq % MAX_NR_GENS` (`nr_pages`).
    nr: [usize; MAX_NR_GENS as usize],
    /// Per page: its generation's sequence number while resident, the
    /// shadow's `min_seq` once evicted.
    seq: Vec<u32>,
    flags: Vec<u8>,
    /// Pages whose young bit was set since the last aging (some may have
    /// lost it since): what the page-table walk would find.
    young: Vec<u32>,
    min_seq: u32,
    max_seq: u32,
    /// Birth time of each generation (ns), `timestamps`.
    birth: [u64; MAX_NR_GENS as usize],
    avg_refaulted: [u64; MAX_NR_TIERS],
    avg_total: [u64; MAX_NR_TIERS],
    refaulted: [u64; MAX_NR_TIERS],
    evicted: [u64; MAX_NR_TIERS],
    protected: [u64; MAX_NR_TIERS - 1],
    resident: usize,
    cap: usize,
    /// References count as file-descriptor accesses (`access=fd`).
    fd: bool,
    eager: bool,
    min_ttl_ns: u64,
    ref_ns: u64,
    now: u64,
    ttl_ooms: u64,
}

fn slot(seq: u32) -> usize {
    (seq % MAX_NR_GENS) as usize
}

impl MgLru {
    pub fn new(c: &PolicyConfig) -> Result<Self, SimError> {
        let fd = match c.params.0.get("access").map(String::as_str) {
            None | Some("pte") => false,
            Some("fd") => true,
            Some(v) => {
                return Err(SimError::BadParam(format!(
                    "access={v}: expected pte (anon pages accessed through page tables) or fd (file descriptors)"
                )))
            }
        };
        Ok(MgLru {
            queues: Default::default(),
            nr: [0; MAX_NR_GENS as usize],
            seq: vec![0; c.pages],
            flags: vec![0; c.pages],
            young: Vec::new(),
            min_seq: 0,
            max_seq: MIN_NR_GENS + 1,
            birth: [0; MAX_NR_GENS as usize],
            avg_refaulted: [0; MAX_NR_TIERS],
            avg_total: [0; MAX_NR_TIERS],
            refaulted: [0; MAX_NR_TIERS],
            evicted: [0; MAX_NR_TIERS],
            protected: [0; MAX_NR_TIERS - 1],
            resident: 0,
            cap: c.capacity.max(1),
            fd,
            eager: c.params.int("eager", 0, 0, 1)? == 1,
            min_ttl_ns: c.params.int("min_ttl_ms", 0, 0, 1 << 40)? * 1_000_000,
            ref_ns: c.params.int("ref_ns", 1000, 1, 1 << 40)?,
            now: 0,
            ttl_ooms: 0,
        })
    }

    /// Reclaims that happened while the oldest generation was younger than
    /// `min_ttl_ms`: where kswapd would have invoked the OOM killer.
    pub fn ttl_ooms(&self) -> u64 {
        self.ttl_ooms
    }

    /// `folio_lru_refs`: counted accesses plus `PG_workingset`.
    fn refs(f: u8) -> u32 {
        u32::from((f & REFS_MASK) >> REFS_SHIFT) + u32::from(f & WORKINGSET != 0)
    }

    fn nr_gens(&self) -> u32 {
        self.max_seq - self.min_seq + 1
    }

    /// Moves resident page `i` to generation `to` (the counts only; its
    /// queue entry is the caller's business).
    fn set_gen(&mut self, i: usize, to: u32) {
        self.nr[slot(self.seq[i])] -= 1;
        self.nr[slot(to)] += 1;
        self.seq[i] = to;
    }

    /// `read_ctrl_pos` (NR_HIST_GENS = 1).
    fn ctrl_pos(&self, tier: usize, gain: u64) -> CtrlPos {
        let mut total = self.avg_total[tier] + self.evicted[tier];
        if tier > 0 {
            total += self.protected[tier - 1];
        }
        CtrlPos {
            refaulted: self.avg_refaulted[tier] + self.refaulted[tier],
            total,
            gain,
        }
    }

    /// `get_tier_idx`: tiers above the result are protected.
    fn tier_idx(&self) -> usize {
        let sp = self.ctrl_pos(0, 1);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            if !positive_ctrl_err(&sp, &self.ctrl_pos(tier, 2)) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// `reset_ctrl_pos(.., carryover = true)` with one history generation.
    fn carry_over(&mut self) {
        for t in 0..MAX_NR_TIERS {
            self.avg_refaulted[t] = (self.avg_refaulted[t] + self.refaulted[t]) / 2;
            let mut sum = self.avg_total[t] + self.evicted[t];
            if t > 0 {
                sum += self.protected[t - 1];
                self.protected[t - 1] = 0;
            }
            self.avg_total[t] = sum / 2;
            self.refaulted[t] = 0;
            self.evicted[t] = 0;
        }
    }

    /// `try_to_inc_min_seq`: drops empty oldest generations, keeping at
    /// least `MIN_NR_GENS`.
    fn try_inc_min_seq(&mut self) {
        let old = self.min_seq;
        while self.min_seq + MIN_NR_GENS <= self.max_seq
            && self.queues[slot(self.min_seq)].is_empty()
        {
            self.min_seq += 1;
        }
        if self.min_seq != old {
            self.carry_over();
        }
    }

    /// `inc_min_seq`: folds the oldest generation into the next one.
    fn inc_min_seq(&mut self) {
        let old = self.min_seq;
        let mut q = std::mem::take(&mut self.queues[slot(old)]);
        while let Some(p) = q.pop_front() {
            let i = p as usize;
            if self.seq[i] == old {
                // folio_inc_gen, list_move_tail.
                self.set_gen(i, old + 1);
                self.flags[i] &= !TIER_BITS;
                self.queues[slot(old + 1)].push_front(p);
            } else {
                self.queues[slot(self.seq[i])].push_back(p);
            }
        }
        self.queues[slot(old)] = q;
        self.carry_over();
        self.min_seq += 1;
    }

    /// `try_to_inc_max_seq`: the page-table walk promotes every young page
    /// to `max_seq` (`folio_update_gen`), then `inc_max_seq`.
    fn age(&mut self) {
        let max = self.max_seq;
        let young = std::mem::take(&mut self.young);
        for &p in &young {
            let i = p as usize;
            let f = self.flags[i];
            if f & RESIDENT == 0 || f & YOUNG == 0 {
                continue;
            }
            self.flags[i] = f & !(YOUNG | TIER_BITS);
            if self.seq[i] != max {
                self.set_gen(i, max);
            }
        }
        self.young = young;
        self.young.clear();
        if self.nr_gens() == MAX_NR_GENS {
            self.inc_min_seq();
        }
        self.max_seq += 1;
        self.birth[slot(self.max_seq)] = self.now;
    }

    /// The generation `lru_gen_add_folio` picks for a page added not
    /// `reclaiming`: `max_seq` if active, else `max_seq - 1` for an anon
    /// page not in the swap cache, else (a file page) `min_seq`, or
    /// `min_seq + 1` when more than `MIN_NR_GENS + 1` generations exist.
    fn add_seq(&self, active: bool) -> u32 {
        if active {
            self.max_seq
        } else if !self.fd {
            self.max_seq - 1
        } else if self.min_seq + MIN_NR_GENS >= self.max_seq {
            self.min_seq
        } else {
            self.min_seq + 1
        }
    }

    /// Scans the oldest generation (`scan_folios`/`sort_folio`/
    /// `isolate_folio`/`shrink_folio_list`) until one page is evicted, or
    /// the queue is empty (None).
    fn evict_oldest(&mut self, tier_idx: usize) -> Option<u32> {
        let min = self.min_seq;
        while let Some(p) = self.queues[slot(min)].pop_front() {
            let i = p as usize;
            let g = self.seq[i];
            if g != min {
                // Promoted by aging: to the head of its generation.
                self.queues[slot(g)].push_back(p);
                continue;
            }
            let mut f = self.flags[i];
            let refs = Self::refs(f);
            let tier = tier_from_refs(refs);
            if tier > tier_idx || refs == 1 << LRU_REFS_WIDTH {
                // Protected: folio_inc_gen to the tail of min_seq + 1.
                self.set_gen(i, min + 1);
                self.flags[i] = f & !TIER_BITS;
                self.queues[slot(min + 1)].push_front(p);
                self.protected[tier - 1] += 1;
                continue;
            }
            // isolate_folio.
            if f & REFERENCED == 0 {
                f &= !TIER_BITS;
            }
            f &= !REFERENCED;
            if f & YOUNG != 0 {
                // Referenced PTE: rejected, back to the head of max_seq.
                self.flags[i] = f & !(YOUNG | TIER_BITS);
                let max = self.max_seq;
                self.set_gen(i, max);
                self.queues[slot(max)].push_back(p);
                continue;
            }
            // lru_gen_eviction: token = (min_seq, refs - 1), workingset = refs != 0.
            let refs = Self::refs(f);
            self.evicted[tier_from_refs(refs)] += 1;
            self.nr[slot(min)] -= 1;
            self.resident -= 1;
            self.flags[i] = Self::shadow(refs);
            self.seq[i] = min;
            return Some(p);
        }
        None
    }

    /// The flags of an evicted page whose `folio_lru_refs` was `refs`.
    fn shadow(refs: u32) -> u8 {
        let token = (refs.saturating_sub(1) as u8) << REFS_SHIFT;
        SHADOW | token | if refs != 0 { WORKINGSET } else { 0 }
    }

    /// Finds and removes one victim; memory is full.
    fn reclaim(&mut self) -> u32 {
        if self.min_ttl_ns > 0 && self.now < self.birth[slot(self.min_seq)] + self.min_ttl_ns {
            self.ttl_ooms += 1;
        }
        loop {
            self.try_inc_min_seq();
            let gens = self.nr_gens();
            if gens <= MIN_NR_GENS || (self.eager && gens == MIN_NR_GENS + 1) {
                self.age();
                continue;
            }
            let tier_idx = self.tier_idx();
            if let Some(v) = self.evict_oldest(tier_idx) {
                return v;
            }
        }
    }

    /// A fault (`in_fault`: a page-table access or readahead in a fault) or
    /// a file-descriptor read brings `id` in; `young` sets its accessed bit.
    fn fault_in(&mut self, id: u32, young: bool, in_fault: bool) -> Access {
        let victim = if self.resident >= self.cap {
            Some(self.reclaim())
        } else {
            None
        };
        let i = id as usize;
        let f = self.flags[i];
        let mut nf = RESIDENT;
        // lru_gen_refault.
        if f & SHADOW != 0 && self.seq[i] == self.min_seq {
            // The shadow keeps refs - 1 in the refs bits and refs != 0 in
            // PG_workingset's place: refs = token + workingset.
            let refs = Self::refs(f);
            self.refaulted[tier_from_refs(refs)] += 1;
            if in_fault || refs >= (1 << LRU_REFS_WIDTH) - 1 {
                nf |= REFS_MASK | WORKINGSET;
            }
        }
        if young {
            nf |= YOUNG;
            self.young.push(id);
        }
        let s = self.add_seq(in_fault);
        self.flags[i] = nf;
        self.seq[i] = s;
        self.nr[slot(s)] += 1;
        self.queues[slot(s)].push_back(id);
        self.resident += 1;
        Access::Miss { victim }
    }

    /// `folio_inc_refs` (`folio_mark_accessed`).
    fn inc_refs(&mut self, i: usize) {
        let f = self.flags[i];
        self.flags[i] = if f & REFERENCED == 0 {
            f | REFERENCED
        } else if f & WORKINGSET == 0 {
            f | WORKINGSET
        } else if f & REFS_MASK != REFS_MASK {
            f + (1 << REFS_SHIFT)
        } else {
            f
        };
    }

    /// Takes `ids` off their queues (one pass per queue).
    fn unlink(&mut self, ids: &[u32]) {
        let mut gone = vec![false; ids.iter().max().map_or(0, |&m| m as usize + 1)];
        for &id in ids {
            gone[id as usize] = true;
        }
        for q in &mut self.queues {
            q.retain(|&p| !gone.get(p as usize).copied().unwrap_or(false));
        }
    }

    #[cfg(test)]
    fn check(&self) {
        assert!((MIN_NR_GENS..=MAX_NR_GENS).contains(&self.nr_gens()));
        let mut nr = [0usize; MAX_NR_GENS as usize];
        let mut entries = 0;
        for (k, q) in self.queues.iter().enumerate() {
            for &p in q {
                let i = p as usize;
                assert!(
                    self.flags[i] & RESIDENT != 0,
                    "queued page {p} not resident"
                );
                let s = self.seq[i];
                assert!((self.min_seq..=self.max_seq).contains(&s));
                // A page sits in its generation's queue or an older one.
                let qs = (self.min_seq..=self.max_seq)
                    .find(|&x| slot(x) == k)
                    .expect("queue of a live generation");
                assert!(qs <= s, "page {p} queued in {qs}, generation {s}");
                nr[slot(s)] += 1;
                entries += 1;
            }
        }
        assert_eq!(nr, self.nr);
        assert_eq!(entries, self.resident);
        assert!(self.resident <= self.cap);
        assert_eq!(
            self.flags.iter().filter(|&&f| f & RESIDENT != 0).count(),
            self.resident
        );
    }
}

impl Policy for MgLru {
    #[inline]
    fn access(&mut self, id: u32, req: &Req) -> Access {
        self.now = req.pos.saturating_mul(self.ref_ns);
        let i = id as usize;
        let f = self.flags[i];
        if f & RESIDENT != 0 {
            if self.fd {
                self.inc_refs(i);
            } else if f & YOUNG == 0 {
                self.flags[i] = f | YOUNG;
                self.young.push(id);
            }
            return Access::Hit;
        }
        if self.fd {
            let a = self.fault_in(id, false, false);
            self.inc_refs(i);
            a
        } else {
            self.fault_in(id, true, true)
        }
    }

    /// Readahead: in a fault (`access=pte`) the page goes to `max_seq`
    /// without a young bit; as a file page it is added inactive.
    fn insert(&mut self, id: u32, req: &Req) -> Access {
        self.now = req.pos.saturating_mul(self.ref_ns);
        self.fault_in(id, false, !self.fd)
    }

    fn can_remove(&self) -> bool {
        true
    }

    /// MADV_PAGEOUT: evicted with a shadow entry (`reclaim_pages`, no
    /// `isolate_folio`, so the tier bits are kept).
    fn remove(&mut self, ids: &[u32]) {
        self.unlink(ids);
        for &id in ids {
            let i = id as usize;
            let refs = Self::refs(self.flags[i]);
            self.evicted[tier_from_refs(refs)] += 1;
            self.nr[slot(self.seq[i])] -= 1;
            self.resident -= 1;
            self.flags[i] = Self::shadow(refs);
            self.seq[i] = self.min_seq;
        }
    }

    /// MADV_COLD: young bit and `PG_referenced` cleared, re-added inactive.
    fn demote(&mut self, ids: &[u32]) {
        self.unlink(ids);
        let s = self.add_seq(false);
        for &id in ids {
            let i = id as usize;
            self.flags[i] &= !(YOUNG | REFERENCED);
            self.set_gen(i, s);
            self.queues[slot(s)].push_back(id);
        }
    }

    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.flags.as_ptr().wrapping_add(id as usize));
    }

    fn bytes_per_page(&self) -> usize {
        let pages = self.flags.len().max(1);
        let queues: usize = self.queues.iter().map(|q| 4 * q.capacity()).sum();
        (5 * self.flags.len() + queues + 4 * self.young.capacity()).div_ceil(pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::*;
    use crate::policy::PolicySpec;

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;
    const E: u64 = 5;
    const M: bool = false;
    const H: bool = true;

    fn build(spec: &str, cap: usize, pages: usize) -> MgLru {
        let s = PolicySpec::parse(spec).unwrap();
        MgLru::new(&PolicyConfig {
            capacity: cap,
            pages,
            params: &s.params,
            seed: 1,
        })
        .unwrap()
    }

    fn req(pos: u64) -> Req {
        Req {
            pos,
            write: false,
            next_use: u32::MAX,
        }
    }

    /// Replays `ids` through `p`, checking the invariants after each step.
    fn run(p: &mut MgLru, ids: &[u32]) -> Vec<Access> {
        ids.iter()
            .enumerate()
            .map(|(k, &id)| {
                let a = p.access(id, &req(k as u64));
                p.check();
                a
            })
            .collect()
    }

    #[test]
    fn hand_worked_generations_not_recency() {
        // cap 3, access=pte. Gn [..] = generation n's queue, oldest first.
        // Start: min_seq 0, max_seq 3.
        //  1-3 a b c: faults to max_seq: G3 [a b c], all young.
        //  4-6 c b a: hits; the young bits are already set.
        //  7 d: reclaim. G0..G2 are empty: min_seq 2 (2 + 2 > 3 stops it).
        //       Two generations: must age. The walk finds a, b, c young:
        //       they are in G3 = max_seq already, bits cleared; max_seq 4.
        //       G2 empty: min_seq 3; two generations again: age (nothing
        //       young), max_seq 5. Evict from G3: a (oldest, not young).
        //       d to G5 [d].
        //  8 c: hit (young).
        //  9 a: reclaim: G3 [b c]: b is not young: evicted. G5 [d a].
        // LRU evicts c at 7 (least recently used) and b at 8: c misses
        // there and a hits at 9. MGLRU does not order references made
        // between two agings.
        let t = [A, B, C, C, B, A, D, C, A];
        assert_eq!(hits("mglru", 3, &t), vec![M, M, M, H, H, H, M, H, M]);
        assert_eq!(hits("lru", 3, &t), vec![M, M, M, H, H, H, M, M, H]);
        let mut p = build("mglru", 3, 6);
        let r = run(&mut p, &[1, 2, 3, 3, 2, 1, 4, 3, 1]);
        assert_eq!(r[6], Access::Miss { victim: Some(1) });
        assert_eq!(r[8], Access::Miss { victim: Some(2) });
        assert_eq!((p.min_seq, p.max_seq), (3, 5));
        assert_eq!(
            p.queues[slot(5)].iter().copied().collect::<Vec<_>>(),
            [4, 1]
        );
        assert_eq!(p.queues[slot(3)].iter().copied().collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn hand_worked_rejection_and_refault() {
        // cap 3, access=pte.
        //  1-4 a b c d: as above, a evicted at 4 (shadow: min_seq 3).
        //      G3 [b c], G5 [d]; min 3, max 5.
        //  5 b: hit, young.
        //  6 e: evict from G3: b young -> rejected: bit cleared, to the
        //       head of G5 [d b]; c not young: evicted. G5 [d b e].
        //  7 a: G3 empty: min_seq 4; G4 empty but 4 + 2 > 5: two
        //       generations, age: d, e young (faults) stay in G5, bits
        //       cleared (b lost its bit at 6); max 6. G4 empty: min 5. Age
        //       again (nothing young): max 7. Evict from G5: d. a refaults
        //       but its shadow's min_seq 3 is not the current 5: not recent.
        //       G5 [b e], G7 [a]; min 5, max 7.
        //  8 b: hit.
        //  9 d: evict from G5: b young -> rejected to G7 [a b]; e evicted.
        //       d's shadow min_seq 5 = min_seq: a recent refault of tier 0;
        //       in a fault, so d gets LRU_REFS_MASK | PG_workingset (refs 4).
        // 10 e: G5 empty, min 6; two generations: age: a, b, d young: in G7
        //       already, bits (and d's refs) cleared; max 8; min 7; age,
        //       max 9. Evict from G7: a.
        let t = [A, B, C, D, B, E, A, B, D, E];
        assert_eq!(hits("mglru", 3, &t), vec![M, M, M, M, H, M, M, H, M, M]);
        let mut p = build("mglru", 3, 6);
        let r = run(&mut p, &[1, 2, 3, 4, 2, 5, 1, 2, 4]);
        let victims: Vec<_> = r
            .iter()
            .filter_map(|a| match a {
                Access::Miss { victim: Some(v) } => Some(*v),
                _ => None,
            })
            .collect();
        assert_eq!(victims, [1, 3, 4, 5]);
        assert_eq!(p.refaulted, [1, 0, 0, 0]);
        assert_eq!(p.flags[4], RESIDENT | YOUNG | REFS_MASK | WORKINGSET);
        assert_eq!(p.access(5, &req(9)), Access::Miss { victim: Some(1) });
        assert_eq!(p.flags[4] & TIER_BITS, 0);
        assert_eq!((p.min_seq, p.max_seq), (7, 9));
    }

    #[test]
    fn hand_worked_fd_tiers() {
        // cap 2, access=fd: every reference is folio_mark_accessed.
        //  1 a: a file page is added inactive: min 0 + 2 < max 3, so to
        //       min_seq + 1: G1 [a]; the access sets PG_referenced.
        //  2-5 a: PG_workingset, then the counter 1, 2, 3: refs = 3 + 1 = 4.
        //  6 b: G1 [a b], PG_referenced.
        //  7 c: reclaim: G0 empty, min 1; three generations: evict from G1.
        //       a: refs == BIT(LRU_REFS_WIDTH): protected, to G2 (tier bits
        //       cleared), protected[tier 3 - 1] = 1. b: refs 0 (tier 0);
        //       isolate_folio keeps PG_referenced's page bits and clears
        //       PG_referenced; no young bit: evicted. c: min 1 + 2 >= 3: to
        //       min_seq, G1 [c].
        //  8 b: evict c from G1 (G2 [a] is younger). b's shadow min_seq 1
        //       is current: refaulted[0]; to G1 [b].
        //  9 a: hit. LRU evicted a at 7 (b was more recent): a misses there.
        let t = [A, A, A, A, A, B, C, B, A];
        assert_eq!(
            hits("mglru:access=fd", 2, &t),
            vec![M, H, H, H, H, M, M, M, H]
        );
        assert_eq!(hits("lru", 2, &t), vec![M, H, H, H, H, M, M, H, M]);
        let mut p = build("mglru:access=fd", 2, 4);
        run(&mut p, &[1, 1, 1, 1, 1, 2, 3, 2]);
        assert_eq!(p.protected, [0, 0, 1]);
        assert_eq!(p.evicted, [2, 0, 0, 0]);
        assert_eq!(p.refaulted, [1, 0, 0, 0]);
        assert_eq!((p.min_seq, p.max_seq), (1, 3));
    }

    #[test]
    fn tiers_follow_order_base_2() {
        // lru_tier_from_refs: refs 0 -> 0, 1 -> 1, 2-3 -> 2, 4 -> 3.
        let t: Vec<_> = (0..=4).map(tier_from_refs).collect();
        assert_eq!(t, [0, 1, 2, 2, 3]);
        // folio_inc_refs: PG_referenced, PG_workingset, then the counter.
        let mut p = build("mglru:access=fd", 2, 2);
        let mut refs = Vec::new();
        for k in 0..7 {
            p.access(0, &req(k));
            refs.push(MgLru::refs(p.flags[0]));
        }
        assert_eq!(refs, [0, 1, 2, 3, 4, 4, 4]);
    }

    #[test]
    fn pid_controller_protects_a_tier_that_refaults_more() {
        let mut p = build("mglru", 4, 8);
        // Few refaults: every tier may be evicted (tier_idx = 3).
        assert_eq!(p.tier_idx(), 3);
        // Tier 0: 100 evicted, 10 refaulted (10 %). Tier 1: 100 evicted or
        // protected, 64 refaulted (64 %): with the margin (gain 2 against 1)
        // 64 * (100 + 64) * 1 > (10 + 1) * 100 * 2, so tier 1 refaults more:
        // tier_idx 0, tier 1 and up are protected.
        p.evicted[0] = 100;
        p.refaulted[0] = 10;
        p.evicted[1] = 60;
        p.protected[0] = 40;
        p.refaulted[1] = 64;
        assert_eq!(p.tier_idx(), 0);
        // Tier 0 refaulting as much: 64 * 164 <= 101 * 100 * 2: not protected.
        p.refaulted[0] = 100;
        assert_eq!(p.tier_idx(), 3);
        // Tier 2 alone above the set point: tier_idx 1.
        p.refaulted[0] = 10;
        p.refaulted[1] = 0;
        p.evicted[2] = 100;
        p.refaulted[2] = 90;
        assert_eq!(p.tier_idx(), 1);
        // Advancing min_seq halves into the averages (NR_HIST_GENS = 1).
        p.carry_over();
        assert_eq!(p.avg_refaulted[2], 45);
        assert_eq!(p.avg_total[1], 50); // (60 evicted + 40 protected) / 2
        assert_eq!(p.avg_total[0], 50);
        assert_eq!(
            (p.refaulted, p.evicted, p.protected),
            ([0; 4], [0; 4], [0; 3])
        );
        assert_eq!(p.tier_idx(), 3); // 45 < MIN_LRU_BATCH
    }

    #[test]
    fn pid_controller_protects_frequent_pages_under_fd_access() {
        // access=fd, cap 1024: a hot set of 768 pages read twice per round
        // (refs 1 after the second read: tier 1), each pair of reads
        // followed by one new page read once (tier 0). LRU misses every
        // hot page every round (768 + 768 distinct pages between two uses).
        // In MGLRU hot pages evicted from tier 1 refault while their
        // min_seq is current, at a higher rate than the scan's tier 0
        // (which never refaults): after the first rounds the controller
        // settles on tier_idx 0, so sort_folio protects tier 1.
        let (cap, hot) = (1024, 768u64);
        let mut t = Vec::new();
        let mut next_scan = hot;
        for _ in 0..20 {
            for h in 0..hot {
                t.extend([h, h, next_scan]);
                next_scan += 1;
            }
        }
        let mut p = build("mglru:access=fd", cap, next_scan as usize);
        let mut idx = [0usize; MAX_NR_TIERS];
        let mut mg = 0;
        let mut protected = 0;
        for (k, &id) in t.iter().enumerate() {
            if p.access(id as u32, &req(k as u64)) != Access::Hit {
                mg += 1;
            }
            idx[p.tier_idx()] += 1;
            protected = protected.max(p.protected[0]);
        }
        assert!(idx[0] > 3 * idx[3], "tier_idx histogram {idx:?}");
        assert!(protected > 0);
        let lru = misses("lru", cap, &t);
        assert_eq!(lru, t.len() as u64 * 2 / 3);
        assert!(mg * 3 < lru * 2, "mglru:access=fd {mg} vs lru {lru}");
    }

    #[test]
    fn readahead_pages_go_young_end_without_the_accessed_bit() {
        // cap 3. a, b faulted, c read ahead: G3 [a b c], c without the
        // young bit. At d: two agings clear a's and b's bits (all stay in
        // G3), then a (oldest, not young) is evicted. c is referenced (a
        // hit sets its bit); at e, G3 [b c]: b is not young: evicted.
        let mut p = build("mglru", 3, 8);
        p.access(1, &req(0));
        p.access(2, &req(1));
        p.insert(3, &req(2));
        assert_eq!((p.seq[3], p.flags[3]), (3, RESIDENT));
        assert_eq!(p.access(4, &req(3)), Access::Miss { victim: Some(1) });
        assert_eq!(p.access(3, &req(4)), Access::Hit);
        assert_eq!(p.access(5, &req(5)), Access::Miss { victim: Some(2) });
        p.check();
        // A readahead page that refaults recently gets refs 4 and is
        // protected once. cap 2: 1 2 3: 1 evicted from G3 (shadow min_seq
        // 3), G3 [2], G5 [3]. 1 read ahead: 2 evicted; 1's shadow is
        // current: in a fault, LRU_REFS_MASK | PG_workingset, no young
        // bit; G5 [3 1]. 4: G3 empty, min 4; age (3's fault bit cleared),
        // max 6, min 5; age, max 7: evict from G5: 3 (not young). 5: G5
        // [1]: refs 4: protected to G6 (tier bits cleared); G5 empty, min
        // 6; two generations: age, max 8; G6 [1]: 1 evicted.
        let mut p = build("mglru", 2, 8);
        p.access(1, &req(0));
        p.access(2, &req(1));
        assert_eq!(p.access(3, &req(2)), Access::Miss { victim: Some(1) });
        assert_eq!(p.insert(1, &req(3)), Access::Miss { victim: Some(2) });
        assert_eq!(p.flags[1], RESIDENT | REFS_MASK | WORKINGSET);
        assert_eq!(p.refaulted, [1, 0, 0, 0]);
        assert_eq!(p.access(4, &req(4)), Access::Miss { victim: Some(3) });
        // The next scan of G5 (sort_folio) protects 1 and finds nothing
        // to evict; advancing min_seq then carries protected[2] over.
        assert_eq!(p.evict_oldest(p.tier_idx()), None);
        assert_eq!(p.protected, [0, 0, 1]);
        assert_eq!((p.seq[1], p.flags[1]), (6, RESIDENT));
        assert_eq!(p.access(5, &req(5)), Access::Miss { victim: Some(1) });
        assert_eq!(p.protected, [0, 0, 0]);
        p.check();
    }

    #[test]
    fn min_ttl_counts_reclaims_of_a_young_oldest_generation() {
        // ref_ns 1 ms: the first reclaim (at 3 ms) finds the oldest
        // generation born at 0 ms: with min_ttl 10 ms that is an OOM kill
        // in the kernel; the simulator only counts it.
        let mut p = build("mglru:min_ttl_ms=10:ref_ns=1000000", 2, 64);
        let r = run(&mut p, &[1, 2, 3]);
        assert_eq!(r[2], Access::Miss { victim: Some(1) });
        assert_eq!(p.ttl_ooms(), 1);
        // Much later, generations born long ago: no more.
        let mut p = build("mglru:min_ttl_ms=10:ref_ns=1000000", 2, 64);
        for k in 0..40u32 {
            p.access(k, &req(u64::from(k) * 100));
        }
        assert_eq!(p.ttl_ooms(), 0);
        // Off by default: same trace at 1 µs per reference.
        let mut p = build("mglru", 2, 64);
        run(&mut p, &[1, 2, 3, 4, 5]);
        assert_eq!(p.ttl_ooms(), 0);
    }

    #[test]
    fn eager_aging_keeps_more_generations() {
        let tr = random_trace(5000, 300, 4);
        let ids: Vec<u32> = tr.iter().map(|&x| x as u32).collect();
        // After a reclaim returns, lazy aging leaves 3 generations (it ages
        // only at 2), eager aging 4 (it ages at 3 too).
        for (spec, lo, hi) in [("mglru", 3, 3), ("mglru:eager=1", 4, 4)] {
            let mut p = build(spec, 64, 300);
            let mut seen = [false; 5];
            for (k, &id) in ids.iter().enumerate() {
                p.access(id, &req(k as u64));
                if k > 1000 {
                    seen[p.nr_gens() as usize] = true;
                }
            }
            for (g, &s) in seen.iter().enumerate() {
                assert_eq!(
                    s,
                    (lo..=hi).contains(&(g as u32)),
                    "{spec}: {g} generations"
                );
            }
        }
    }

    #[test]
    fn aging_with_max_nr_gens_folds_the_oldest() {
        // At start there are MAX_NR_GENS generations (0..=3): aging first
        // runs inc_min_seq (G0 is empty, so only min_seq moves), then
        // inc_max_seq. A page in G0 would move to the tail of G1.
        let mut p = build("mglru", 4, 8);
        p.access(1, &req(0));
        p.seq[1] = 0;
        p.nr = [1, 0, 0, 0];
        p.queues[slot(3)].clear();
        p.queues[slot(0)].push_back(1);
        p.flags[1] &= !YOUNG;
        p.age();
        assert_eq!((p.min_seq, p.max_seq), (1, 4));
        assert_eq!(p.seq[1], 1);
        p.check();
    }

    #[test]
    fn cold_and_pageout() {
        let mut p = build("mglru", 4, 8);
        run(&mut p, &[1, 2, 3, 4]);
        // MADV_COLD on 2: bit cleared, to max_seq - 1 (G2).
        p.demote(&[2]);
        p.check();
        assert_eq!((p.seq[2], p.flags[2]), (2, RESIDENT));
        // MADV_PAGEOUT on 1 and 3.
        p.remove(&[1, 3]);
        p.check();
        assert_eq!(p.resident, 2);
        assert_eq!(p.flags[1] & SHADOW, SHADOW);
        // Fill again: 5 and 6 fault without reclaim; 7 reclaims, and the
        // cold page 2 (in the oldest populated generation) goes first.
        assert_eq!(p.access(5, &req(4)), Access::Miss { victim: None });
        assert_eq!(p.access(6, &req(5)), Access::Miss { victim: None });
        assert_eq!(p.access(7, &req(6)), Access::Miss { victim: Some(2) });
        p.check();
    }

    #[test]
    fn params_are_checked() {
        // 4 bytes of generation and 1 flag byte per page.
        assert_eq!(build_bytes("mglru", 4, 10).unwrap(), 5);
        assert!(build_bytes("mglru:access=mmap", 4, 10).is_err());
        assert!(build_bytes("mglru:eager=2", 4, 10).is_err());
        assert!(build_bytes("mglru:ref_ns=0", 4, 10).is_err());
        assert!(build_bytes("mglru:bits=2", 4, 10).is_err());
        assert!(build_bytes("mglru:access=fd:eager=1:min_ttl_ms=1000", 4, 10).is_ok());
    }

    #[test]
    fn contract() {
        contract_all("mglru");
        contract_all("mglru:eager=1");
        contract_all("mglru:access=fd");
        contract_all("mglru:min_ttl_ms=5");
    }

    /// Property test: on random traces, with random readahead, MADV_COLD
    /// and MADV_PAGEOUT mixed in, at random sizes: the policy contract
    /// (one eviction per miss when full, never the page referenced, a hit
    /// iff resident) and the generation invariants (`check`) hold after
    /// every step, checked against a plain model of the resident set.
    #[test]
    fn property_random_traces_keep_contract_and_invariants() {
        use rand::{Rng, SeedableRng};
        use rand_pcg::Pcg64;
        for seed in 0..60u64 {
            let mut rng = Pcg64::seed_from_u64(seed);
            let pages = rng.random_range(1..200usize);
            let cap = rng.random_range(1..=pages + 3);
            let spec = ["mglru", "mglru:eager=1", "mglru:access=fd"][seed as usize % 3];
            let mut p = build(spec, cap, pages);
            let mut resident = vec![false; pages];
            let mut count = 0usize;
            let hot = (pages / 8).max(1);
            for k in 0..3000u64 {
                let id = if rng.random_bool(0.7) {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(0..pages)
                } as u32;
                let op = rng.random_range(0..100);
                if op < 3 {
                    // MADV_PAGEOUT / MADV_COLD of a few resident pages.
                    let ids: Vec<u32> = (0..pages as u32)
                        .filter(|&x| resident[x as usize])
                        .filter(|_| rng.random_bool(0.2))
                        .collect();
                    if op == 0 {
                        p.remove(&ids);
                        for &x in &ids {
                            resident[x as usize] = false;
                        }
                        count -= ids.len();
                    } else {
                        p.demote(&ids);
                    }
                    p.check();
                    continue;
                }
                let was = resident[id as usize];
                if op < 8 && was {
                    continue;
                }
                let a = if op < 8 {
                    p.insert(id, &req(k))
                } else {
                    p.access(id, &req(k))
                };
                match a {
                    Access::Hit | Access::SwapCache => {
                        assert!(was, "seed {seed}: hit on a missing page")
                    }
                    Access::Miss { victim } => {
                        assert!(!was, "seed {seed}: miss on a resident page");
                        match victim {
                            None => {
                                assert!(count < cap, "seed {seed}: full, nothing evicted");
                                count += 1;
                            }
                            Some(v) => {
                                assert_eq!(count, cap, "seed {seed}: evicted while not full");
                                assert_ne!(v, id);
                                assert!(resident[v as usize], "seed {seed}: victim not resident");
                                resident[v as usize] = false;
                            }
                        }
                        resident[id as usize] = true;
                    }
                }
                p.check();
            }
        }
    }

    #[test]
    fn property_eager_aging_evicts_the_same_pages_under_pte_access() {
        // With access=pte both settings age exactly when the oldest
        // generation has drained (the extra agings of eager=1 find no young
        // bits), and the walk gives the same second chance as a rejection:
        // the concatenated queues and so the victims are the same.
        for seed in 1..5 {
            let t = random_trace(20_000, 600, seed);
            for cap in [1, 7, 64, 300] {
                let victims = |spec: &str| {
                    let mut p = build(spec, cap, 600);
                    t.iter()
                        .enumerate()
                        .map(|(k, &id)| p.access(id as u32, &req(k as u64)))
                        .collect::<Vec<_>>()
                };
                assert_eq!(victims("mglru"), victims("mglru:eager=1"), "cap {cap}");
            }
        }
    }

    #[test]
    fn property_no_evictions_when_everything_fits() {
        // With capacity >= distinct pages, misses = distinct pages, for
        // every mode; with capacity 1, a hit only on an immediate repeat.
        for seed in 1..6 {
            let t = random_trace(4000, 300, seed);
            let mut distinct = t.clone();
            distinct.sort_unstable();
            distinct.dedup();
            for spec in ["mglru", "mglru:eager=1", "mglru:access=fd"] {
                assert_eq!(misses(spec, 300, &t), distinct.len() as u64, "{spec}");
                let repeats = t.windows(2).filter(|w| w[0] == w[1]).count() as u64;
                assert_eq!(misses(spec, 1, &t), t.len() as u64 - repeats, "{spec}");
            }
        }
    }
}
