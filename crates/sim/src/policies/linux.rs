//! Linux's classic active/inactive LRU lists for anonymous memory, as in
//! Linux 6.1 (`mm/vmscan.c`, `mm/swap.c`, `mm/workingset.c`) with the
//! multi-generational LRU (MGLRU) disabled. The functions named below are
//! those of 6.1 and 6.12, where these parts did not change, except that
//! 6.12 has the refault test in `workingset_test_recent` (6.1 inline in
//! `workingset_refault`).
//!
//! State per page: which list it is on (inactive or active), the folio flag
//! `PG_referenced`, and the page-table "accessed" (young) bit. The simulator
//! sees every reference, so a reference sets the young bit, exactly as the
//! MMU does; for anonymous pages mapped in page tables the kernel does *not*
//! call `folio_mark_accessed()` on access, so a reference moves nothing
//! (lists only change during reclaim).
//!
//! * **Fault** (first touch or swap-in): the new folio goes to the head of
//!   the inactive list (`folio_add_lru`; new anonymous pages go to the
//!   inactive list since 5.9) with `PG_referenced` clear and the young bit
//!   set (x86 `mk_pte()` with `vm_page_prot` makes the PTE young: "all mapped
//!   folios start out with page table references from the instantiating
//!   fault").
//! * **Refault activation** (`refault=1`, the default, as the kernel does
//!   for anonymous pages when swap is available): an evicted page leaves a
//!   shadow entry holding the lruvec's `nonresident_age` read at eviction
//!   time (`workingset_eviction`). `nonresident_age` grows by one for every
//!   eviction and every activation (`move_folios_to_lru` ages it for each
//!   folio put back as active, and `workingset_refault` for each refault
//!   activation). When the page faults back in, it goes straight to the
//!   head of the *active* list if `age_now − age_at_eviction ≤ active
//!   pages` (`workingset_test_recent`: the workingset size of an anon
//!   refault is `NR_ACTIVE_FILE + NR_INACTIVE_FILE + NR_ACTIVE_ANON`, the
//!   last only while swap has room; with no file pages, the active anon
//!   list). The refault test runs after the reclaim that makes room for
//!   the page, as the charge comes before `workingset_refault`.
//! * **Reclaim** (`reclaim=batch`, an option): a miss that finds memory
//!   full takes the oldest page reclaimed by the last reclaim; when none is
//!   left, one direct reclaim runs, as a memory cgroup at its limit does
//!   (`try_charge_memcg` → `try_to_free_mem_cgroup_pages` with
//!   `nr_to_reclaim = SWAP_CLUSTER_MAX` = 32, `batch=N` to change it):
//!   1. `do_try_to_free_pages`: priority 12 (`DEF_PRIORITY`) down to 0,
//!      until 32 pages are reclaimed. At each priority, `prepare_scan_count`
//!      allows deactivation (`may_deactivate`) when refaults were activated
//!      since the last reclaim (`WORKINGSET_ACTIVATE_ANON` against the
//!      `snapshot_refaults` value) or `inactive_is_low()`; `get_scan_count`
//!      sets each list's scan target to `size >> priority` times the anon
//!      share of `SCAN_FRACT` (below), all of it at priority 0
//!      (`SCAN_EQUAL`).
//!   2. `shrink_lruvec`: while the inactive target lasts, batches of up to
//!      32 pages from the inactive list, each followed by a batch from the
//!      active list when deactivation is allowed; it stops once 32 pages
//!      are reclaimed (with no file pages there is no proportion to keep).
//!      Then, if `inactive_is_low()` (`inactive × ratio < active`, `ratio =
//!      int_sqrt(10 × GB)`, 1 below 1 GB, GB = `capacity >> 18`), 32 pages
//!      are deactivated ("even if we did not try to evict anon pages at
//!      all, we want to rebalance").
//!   3. `shrink_inactive_list` isolates the batch from the inactive tail;
//!      `shrink_folio_list` runs `folio_check_references()` on each, tail
//!      first: if its young bit is set, the bit is cleared and
//!      `PG_referenced` set, and the folio is **activated** if
//!      `PG_referenced` was already set, else **kept** (rotated) for
//!      "another trip around the inactive list"; a folio without the young
//!      bit is **reclaimed** (for anon folios `PG_referenced` alone does not
//!      save it): its shadow entry is written (`workingset_eviction`).
//!      `move_folios_to_lru` then puts the kept and activated folios at the
//!      heads of their lists in their order, aging `nonresident_age` once
//!      for each activated one.
//!   4. `shrink_active_list` moves pages from the active tail to the
//!      inactive head, young bit cleared, `PG_referenced` kept: for anon
//!      folios `folio_referenced()` clears the young bits but a referenced
//!      anon folio is deactivated anyway.
//!   5. A reclaim that frees nothing is retried with deactivation forced
//!      (`do_try_to_free_pages`'s `force_deactivate` retry; `try_charge`
//!      retries too). It always ends: a pass at priority 0 clears every
//!      young bit of the inactive list.
//!
//! * **Writeback** (`writeback=async`, with `reclaim=batch`; validate's
//!   model): a page without the young bit that is dirty (first touched, or
//!   written since its swap-in) is not freed by the scan that finds it.
//!   `shrink_folio_list` gives it a slot and unmaps it (`add_to_swap`,
//!   `try_to_unmap`), `pageout()` starts the write (the engine counts the
//!   swap-out then, [`Policy::take_writes`], so slots follow the write
//!   order as `add_to_swap` allocates them) and, the folio being under
//!   writeback, `goto keep`: `move_folios_to_lru` puts it back at the
//!   inactive head, `PG_referenced` cleared, still charged to the cgroup.
//!   The pass's writes are submitted at the end of `shrink_lruvec`
//!   (`blk_finish_plug`) and taken to complete before the next priority's
//!   pass (`complete=pass`, the default), or when the reclaim that
//!   started them ends (`complete=reclaim`: a write's latency on a
//!   device, tens of microseconds to milliseconds, is longer than the
//!   passes of one reclaim, which take microseconds of CPU each, and
//!   shorter than the program's time between two reclaims; a folio this
//!   reclaim wrote that a later pass of it meets again, at priority 0, is
//!   freed, as legacy memcg reclaim waits for it and finds it clean):
//!   `folio_end_writeback` → `folio_rotate_reclaimable` moves each
//!   written folio still on the inactive list to its tail (the last
//!   written scanned first), where the next scan frees it clean, no second
//!   write (`__remove_mapping`, shadow entry and `nonresident_age` as any
//!   eviction). A reference before that finds it in the swap cache
//!   (`do_swap_page` → `swap_cache_get_folio`): it is mapped again, young,
//!   where it is on the list, and the fault is minor — no read, no
//!   `VM_FAULT_MAJOR` ([`Access::SwapCache`]). A clean page is freed by
//!   the scan that finds it, as before. Pages under writeback count
//!   against the limit (the kernel uncharges a folio when it is freed), so
//!   a reclaim that meets only dirty pages writes more than it frees and
//!   frees them on a later pass: its "write-ahead" is what a loop slightly
//!   larger than memory finds in the swap cache. With `writeback=sync`
//!   (the default) a reclaimed dirty page is written and freed at once.
//!
//! * **Timed writeback** (`write_us=T`, with `writeback=async`; `swaplab
//!   validate --policy ...:clock=device` fills the numbers in): the writes
//!   complete on a clock instead of before the next pass. Time is the
//!   program's: `ref_us` per reference up to the one being served (the
//!   engine's position), plus the stalls so far: `read_us` per major
//!   fault, `scan_us` per page reclaim scans (`scan_us=T`; validate's
//!   `clock=device` puts in the profile's `reclaim_scan_us` under cgroup
//!   v2, none under v1, docs/decisions.md: direct reclaim is the faulting
//!   task's own CPU, and the writes go on completing while it scans each
//!   folio of its batch), and the reclaimer's sleeps below. A pass's writes are
//!   submitted when it ends (`blk_finish_plug`) or when the reclaimer
//!   sleeps (`io_schedule` flushes the plug), and the device finishes one
//!   page every `write_us`, in submission order. Reclaim first completes
//!   the writes due by now: `folio_end_writeback` →
//!   `folio_rotate_reclaimable` → `lru_move_tail` moves each folio still
//!   on a list, either list (`PG_active` is cleared), to the inactive
//!   tail, the last completed scanned first; a folio isolated by the scan
//!   in progress is not on a list and stays in its batch.
//!   `shrink_folio_list` tests writeback before references: a folio still
//!   under writeback (it has `PG_reclaim`, which `pageout()` set) is waited
//!   for by legacy memcg reclaim (`memcg=v1`, the default: "case 3",
//!   `folio_wait_writeback`, then the same folio again), and activated by
//!   cgroup v2 reclaim (`memcg=v2`: "case 2", `activate_locked`). A
//!   reclaim that frees nothing sleeps until 32 writes in flight (or all,
//!   if fewer) complete (`reclaim_throttle` on `VMSCAN_THROTTLE_WRITEBACK`);
//!   without it a v2 reclaim, which never waits on a folio, would meet the
//!   same folios under writeback forever. Not modelled: reads' use of the
//!   device (a read stalls the program `read_us` but does not delay the
//!   writes), reclaim's CPU without `scan_us`, the 100 ms timeout of the
//!   throttle.
//!   A rotation leaves the folio's old queue entry behind as a stale entry
//!   (counted per page and skipped when popped: a page's stale entries are
//!   older than its live one), and the rotated folios form a stack at the
//!   inactive tail. With MADV_PAGEOUT hints a folio under writeback is
//!   dropped as if its write had completed.
//!
//!   The anon share: `SCAN_FRACT` weighs anon against file by swappiness
//!   and the lists' reclaim costs; with no file pages the file cost stays
//!   0 and the anon cost `A` large, so `ap = s(3A+1)/(2A+1) → 1.5 s` and
//!   `fp = (200−s)(3A+1)/(A+1) → 3(200 − s)`: the anon share is `s / (400 −
//!   s)`, 3/17 at the default swappiness 60 (`swappiness=N`).
//! * **Reclaim** (`reclaim=page`, the default, and always in
//!   `linux-rrip`): one page per miss. While `inactive_is_low()`, the active
//!   tail is deactivated as in step 4; then the inactive tail goes through
//!   `folio_check_references()` as in step 3 until one page is reclaimed.
//!   This always terminates because every step either evicts or clears a
//!   young bit.
//!
//! So a page must be referenced in two separate trips through the inactive
//! list (the fault counts as the first) to reach the active list, and a
//! deactivated page that is referenced again before it reaches the
//! inactive tail is reactivated at once (it still has `PG_referenced`):
//! "recently deactivated but used folios are quickly recovered".
//!
//! The engine's contract (exactly one victim per miss once full) is kept
//! in batch mode by handing the batch's pages out one per miss: they are
//! off both lists at once, as the kernel frees them, so the lists hold
//! what the cgroup's LRU holds (up to 32 pages below the limit after a
//! reclaim). A page of the batch referenced before a miss took it comes
//! back as a refault would (refault test included) but counts as a hit,
//! where the kernel counts a major fault — the one place the model errs
//! in the kernel's favour, by at most 31 pages per reclaim.
//!
//! Simplifications (documented, not modelled): one lruvec (no memcg
//! hierarchy, no NUMA nodes); no file pages (so the workingset size of the
//! refault test is the active anon list alone, and the scan's anon share is
//! the fixed `s / (400 − s)` above rather than one that follows the reclaim
//! costs); without `writeback=async` a reclaimed dirty page is written and
//! freed in the same pass, and with it but without `write_us` every write
//! completes before the next priority's pass, so no folio's write
//! completes while it is isolated (which in the kernel leaves it at the
//! head for a whole trip round the inactive list), no scan meets a folio
//! still under writeback and reclaim is never throttled on writeback
//! (`write_us` models all three: "Timed writeback" above); no
//! per-CPU `folio_batch` delay before
//! a new folio reaches its list; single-mapped pages only (so
//! `referenced_ptes > 1` never activates); shadow entries are never
//! dropped (the kernel's shadow-node shrinker may forget old ones) and
//! `nonresident_age` is a wrapping 32-bit counter at full precision (no
//! `bucket_order`). Param `ratio=N` overrides the inactive ratio.
//!
//! **Data structure.** Pages only ever leave a list at its tail (reclaim,
//! deactivation and rotation all take the tail; a hit moves nothing), and
//! only ever enter at a head. So each list is a plain FIFO queue of page ids
//! (a `VecDeque<u32>`, tail at the queue's front) rather than a linked list:
//! no per-page links, no neighbour updates, and the queues are read
//! sequentially. (With `writeback=async` the written pages of a priority
//! pass move to the inactive tail when their writes complete: they are
//! among the entries the pass itself put at the head, which are drained
//! from the queue's back and put back, so the cost is the pass's own.)
//! The list a page is on lives in its state byte, which is
//! all a hit reads or writes (the engine's prefetch hint brings it in
//! early). Reclaim and deactivation prefetch the state of the pages a few
//! places ahead of the tail, so that scanning overlaps their cache misses.
//!
//! Memory: 1 state byte (list, young, `PG_referenced`, shadow, dirty,
//! written) and, with
//! `refault=1`, a 4-byte eviction age per page: 5 bytes per page (1 with
//! `refault=0`), plus the queues, 4 bytes per resident page (their
//! capacity grows in powers of two). With 1/8 of the pages resident, as in
//! `tests/memory.rs`, that is 6 bytes per page (13 with the linked lists
//! this replaced). A hit reads one byte.
use crate::error::SimError;
use crate::policy::{Access, Policy, PolicyConfig, PolicyInfo, ReclaimStats, Req};
use crate::util::prefetch;
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "linux",
    summary: "Linux 6.1 active/inactive anon LRU lists (PTE young bit, PG_referenced, refault activation; reclaim a page a miss, or in batches of 32)",
    params: "ratio=N (inactive ratio, default int_sqrt(10*GB) or 1), refault=0|1 (default 1), \
             reclaim=page|batch (default page: one page a miss, lists kept at the ratio; \
             batch: 32 pages a reclaim with the kernel's scan balance), batch=N (pages a reclaim, default 32), \
             swappiness=N (1-200, default 60), writeback=sync|async (default sync: a reclaimed dirty page \
             is written and freed at once; async, with reclaim=batch: it is written and kept in the swap cache \
             until a later pass frees it, and a reference before that is a swap-cache hit), \
             complete=pass|reclaim (async without write_us: the writes complete before the next priority \
             pass, the default, or when the reclaim that started them ends), \
             write_us=T (async: the writes complete on a clock, the device taking T us a page; without \
             it, as complete= says), ref_us=T (the program's time a reference), read_us=T (a major \
             fault's stall), scan_us=T (the reclaimer's CPU a page scanned: the clock runs while it scans), \
             memcg=v1|v2 (v1, the default: reclaim waits on a folio under writeback; v2: activates it)",
    needs_future: false,
    build: |c| {
        c.params.allow(
            "linux",
            &[
                "ratio", "refault", "reclaim", "batch", "swappiness", "writeback", "write_us", "ref_us",
                "read_us", "scan_us", "memcg", "complete",
            ],
        )?;
        Ok(Box::new(TwoLists::<false>::new(c, 0, true)?))
    },
};

const INACTIVE: usize = 0;
const ACTIVE: usize = 1;
/// The page-table accessed bit.
const YOUNG: u8 = 1;
/// `PG_referenced`.
const REFERENCED: u8 = 2;
/// The page was evicted and its shadow entry holds its eviction age.
const SHADOW: u8 = 4;
/// On the inactive list (the lists' membership lives here, so that a hit
/// reads one byte per page).
const ON_INACTIVE: u8 = 8;
/// On the active list.
const ON_ACTIVE: u8 = 16;
const RESIDENT: u8 = ON_INACTIVE | ON_ACTIVE;
/// Reclaimed by the last batch but not yet handed to the engine as a
/// victim: off both lists (the kernel has freed it), still resident for
/// the engine until a miss takes it.
const FREED: u8 = 32;
/// Dirty: no valid swap copy (first touched, or written since its
/// swap-in); tracked with `writeback=async` only.
const DIRTY: u8 = 64;
/// Unmapped and written to swap by reclaim, not freed yet (`writeback=async`):
/// in the swap cache, still on the inactive list and charged. A reference
/// maps it again ([`Access::SwapCache`]).
const WRITTEN: u8 = 128;

/// `SWAP_CLUSTER_MAX`: the pages one reclaim pass isolates at a time, and
/// the least a direct reclaim tries to free.
const SWAP_CLUSTER_MAX: usize = 32;
/// `DEF_PRIORITY`: reclaim starts scanning `size >> 12` pages of a list.
const DEF_PRIORITY: u32 = 12;

/// How far behind a list's tail reclaim prefetches page state.
const SCAN_AHEAD: usize = 8;

/// `int_sqrt(10 × GB)` for `pages` 4 KiB pages, 1 below 1 GB (`inactive_is_low`).
pub(crate) fn default_ratio(pages: usize) -> u64 {
    let gb = (pages as u64) >> 18;
    if gb == 0 {
        1
    } else {
        (10 * gb).isqrt()
    }
}

/// The two lists; with `RRIP` the active list is aged by re-reference
/// prediction values instead (see `linux_rrip`).
pub(crate) struct TwoLists<const RRIP: bool> {
    /// The inactive and active lists: tail (oldest) at the front of each queue.
    lists: [VecDeque<u32>; 2],
    flags: Vec<u8>,
    /// RRPV of each active page (RRIP only; empty otherwise).
    rrpv: Vec<u8>,
    /// `nonresident_age` at eviction, valid where `SHADOW` is set (empty if refault=0).
    shadow: Vec<u32>,
    /// The lruvec's `nonresident_age`.
    age: u32,
    cap: usize,
    ratio: u64,
    /// The largest RRPV (2^m − 1); RRIP only.
    rmax: u8,
    /// `reclaim=batch`: reclaim frees `batch` pages at a time with the
    /// kernel's scan balance; otherwise one page a miss.
    batched: bool,
    /// `nr_to_reclaim` of a direct reclaim (`batch=`, default `SWAP_CLUSTER_MAX`).
    batch: usize,
    /// The cgroup's `swappiness` (the anon share of the scan, `get_scan_count`).
    swappiness: usize,
    /// Pages the last batch reclaimed that the engine has not taken yet
    /// (`FREED`), oldest first.
    freed: VecDeque<u32>,
    /// `WORKINGSET_ACTIVATE_ANON`: refaults activated so far, and its value
    /// at the end of the last reclaim (`snapshot_refaults`).
    refault_acts: u64,
    refault_snap: u64,
    /// Folios isolated by one scan, put back after it (`move_folios_to_lru`).
    scratch: Vec<u32>,
    /// `writeback=async`: `DIRTY`, else 0 (no dirty tracking, reclaimed
    /// pages are written and freed at once).
    dirty_bit: u8,
    /// Pages written by the current priority pass.
    pass_writes: usize,
    /// Pages written since the engine last asked ([`Policy::take_writes`]).
    wrote: Vec<u32>,
    /// Pages the current priority pass took from the inactive list.
    pass_pops: usize,
    /// The folios of one `shrink_inactive_list` batch, isolated together.
    isolated: Vec<u32>,
    /// `write_us` given: the writes complete on a clock (`None`: each
    /// completes before the next priority pass).
    clock: Option<Box<WbClock>>,
    /// `complete=reclaim`: without a clock, a reclaim's writes complete
    /// when it ends rather than before each next priority pass.
    complete_at_end: bool,
    /// Reclaim in the kernel's counters ([`Policy::reclaim_stats`]; the
    /// clock's fields are filled from `clock` when asked).
    stats: ReclaimStats,
}

/// Under writeback: its write was started and has not completed.
const UNDER_WB: u8 = 1;
/// Isolated by the current scan: off the LRU, so a write completing now
/// does not rotate it (`folio_rotate_reclaimable` needs `folio_test_lru`).
const ISOLATED: u8 = 2;

/// The writes' clock (`write_us` given, see the module doc, "Timed
/// writeback"). Time is the program's: `ref_us` per reference up to the
/// one being served, plus the stalls so far (major faults' reads and the
/// reclaimer's waits on writeback); the device finishes one page write
/// every `write_us`, in the order the writes were submitted.
struct WbClock {
    ref_us: f64,
    read_us: f64,
    write_us: f64,
    /// The reclaimer's CPU per page it scans (`scan_us`, 0 by default):
    /// direct reclaim runs in the faulting task, so the program's time
    /// runs on while it scans, and writes complete meanwhile.
    scan_us: f64,
    /// cgroup v1 (`memcg=v1`): a scan that meets a folio still under
    /// writeback waits for it ("case 3"); v2 activates it ("case 2").
    wait: bool,
    /// Position of the reference being served (set on each miss).
    pos: u64,
    /// Read stalls and writeback waits so far (µs), and the waits alone.
    stall_us: f64,
    waited_us: f64,
    waits: u64,
    /// Time a reclaim that freed nothing slept on writeback (µs).
    throttled_us: f64,
    /// Writes completed while their folio was on a list (`pgrotated`).
    rotations: u64,
    /// When the device will have finished the writes submitted so far.
    dev_free: f64,
    /// Writes started by the current pass, submitted at its end
    /// (`blk_finish_plug`) or when the reclaimer sleeps (the plug is
    /// flushed on `io_schedule`).
    plugged: Vec<u32>,
    /// Submitted writes in completion order: (page, completion time).
    inflight: VecDeque<(u32, f64)>,
    /// Per page: `UNDER_WB`, `ISOLATED`.
    state: Vec<u8>,
    /// Per page, the stale entries it has in the inactive and active
    /// queues (a rotation leaves its old entry behind: a page's stale
    /// entries are all older than its live one, so the first ones popped
    /// are the stale ones); and their totals.
    stale: [Vec<u8>; 2],
    stale_total: [usize; 2],
    /// Folios rotated to the inactive tail since the last scan took them:
    /// the tail end of the inactive list, the last rotated on top.
    rotated: Vec<u32>,
}

impl WbClock {
    #[inline]
    fn now(&self) -> f64 {
        self.pos as f64 * self.ref_us + self.stall_us
    }

    /// The program stalls until `t` (if that is later than now): returns
    /// for how long.
    fn sleep_until(&mut self, t: f64) -> f64 {
        let slept = (t - self.now()).max(0.0);
        self.stall_us += slept;
        slept
    }

    /// Submits the plugged writes: each completes `write_us` after the
    /// later of now and the device's previous write.
    fn flush_plug(&mut self) {
        let now = self.now();
        for &p in &self.plugged {
            self.dev_free = self.dev_free.max(now) + self.write_us;
            self.inflight.push_back((p, self.dev_free));
        }
        self.plugged.clear();
    }
}

impl<const RRIP: bool> TwoLists<RRIP> {
    /// Reads `ratio`, `refault`, and with `batch_params` `reclaim`,
    /// `batch` and `swappiness` (otherwise reclaim is one page a miss, as
    /// `reclaim=page`); `m` is the RRPV width (RRIP only).
    pub(crate) fn new(c: &PolicyConfig, m: u32, batch_params: bool) -> Result<Self, SimError> {
        let ratio = c
            .params
            .int("ratio", default_ratio(c.capacity), 1, 1_000_000)?;
        let refault = c.params.int("refault", 1, 0, 1)? == 1;
        let batched = batch_params
            && match c.params.0.get("reclaim").map(String::as_str) {
                Some("batch") => true,
                None | Some("page") => false,
                Some(v) => {
                    return Err(SimError::BadParam(format!(
                        "reclaim={v}: expected batch or page"
                    )))
                }
            };
        let batch = c.params.int("batch", SWAP_CLUSTER_MAX as u64, 1, 1 << 20)? as usize;
        let swappiness = c.params.int("swappiness", 60, 1, 200)? as usize;
        let async_wb = match c.params.0.get("writeback").map(String::as_str) {
            Some("async") => true,
            None | Some("sync") => false,
            Some(v) => {
                return Err(SimError::BadParam(format!(
                    "writeback={v}: expected async or sync"
                )))
            }
        };
        if async_wb && !batched {
            return Err(SimError::BadParam(
                "writeback=async models the writes of reclaim's priority passes: give reclaim=batch with it".into(),
            ));
        }
        let write_us = c.params.real("write_us", 0.0, 0.0, 1e6)?;
        let ref_us = c.params.real("ref_us", 0.0, 0.0, 1e6)?;
        let read_us = c.params.real("read_us", 0.0, 0.0, 1e6)?;
        let scan_us = c.params.real("scan_us", 0.0, 0.0, 1e6)?;
        let wait = match c.params.0.get("memcg").map(String::as_str) {
            None | Some("v1") => true,
            Some("v2") => false,
            Some(v) => {
                return Err(SimError::BadParam(format!(
                    "memcg={v}: expected v1 or v2 (what a scan does with a folio still under writeback)"
                )))
            }
        };
        // The clock runs when write_us is given (0: each write completes
        // when it is submitted, at the end of its pass).
        let timed = c.params.0.contains_key("write_us");
        let timed_keys = ["ref_us", "read_us", "scan_us", "memcg"];
        if !timed && timed_keys.iter().any(|k| c.params.0.contains_key(*k)) {
            return Err(SimError::BadParam(
                "ref_us, read_us, scan_us and memcg set the writes' clock: give write_us=MICROSECONDS (the device's time per page written) with them".into(),
            ));
        }
        let complete_at_end = match c.params.0.get("complete").map(String::as_str) {
            None | Some("pass") => false,
            Some("reclaim") => true,
            Some(v) => {
                return Err(SimError::BadParam(format!(
                    "complete={v}: expected pass or reclaim (when a reclaim's writes complete)"
                )))
            }
        };
        if c.params.0.contains_key("complete") && (!async_wb || timed) {
            return Err(SimError::BadParam(
                "complete= says when writeback=async's writes complete without a clock: give it with reclaim=batch:writeback=async and without write_us (a clock decides then)".into(),
            ));
        }
        if timed && !async_wb {
            return Err(SimError::BadParam(
                "write_us times the writes of writeback=async: give reclaim=batch:writeback=async with it".into(),
            ));
        }
        let clock = timed.then(|| {
            Box::new(WbClock {
                ref_us,
                read_us,
                write_us,
                scan_us,
                wait,
                pos: 0,
                stall_us: 0.0,
                waited_us: 0.0,
                waits: 0,
                throttled_us: 0.0,
                rotations: 0,
                dev_free: 0.0,
                plugged: Vec::new(),
                inflight: VecDeque::new(),
                state: vec![0; c.pages],
                stale: [vec![0; c.pages], vec![0; c.pages]],
                stale_total: [0, 0],
                rotated: Vec::new(),
            })
        });
        Ok(TwoLists {
            lists: [VecDeque::new(), VecDeque::new()],
            flags: vec![0; c.pages],
            rrpv: if RRIP { vec![0; c.pages] } else { Vec::new() },
            shadow: if refault {
                vec![0; c.pages]
            } else {
                Vec::new()
            },
            age: 0,
            cap: c.capacity.max(1),
            ratio,
            rmax: if RRIP { ((1u32 << m) - 1) as u8 } else { 0 },
            batched,
            batch,
            swappiness,
            freed: VecDeque::new(),
            refault_acts: 0,
            refault_snap: 0,
            scratch: Vec::new(),
            dirty_bit: if async_wb { DIRTY } else { 0 },
            pass_writes: 0,
            wrote: Vec::new(),
            pass_pops: 0,
            isolated: Vec::new(),
            clock,
            complete_at_end,
            stats: ReclaimStats::default(),
        })
    }

    /// The pages on `list` (the queue less its stale entries; the
    /// inactive list's rotated tail included).
    #[inline]
    fn len(&self, list: usize) -> usize {
        match &self.clock {
            None => self.lists[list].len(),
            Some(c) => {
                self.lists[list].len() - c.stale_total[list]
                    + if list == INACTIVE { c.rotated.len() } else { 0 }
            }
        }
    }

    #[inline]
    fn inactive_is_low(&self) -> bool {
        (self.len(INACTIVE) as u64).saturating_mul(self.ratio) < self.len(ACTIVE) as u64
    }

    /// Takes the tail of `list`, prefetching the state of the page
    /// `SCAN_AHEAD` places behind it (a hint only: it changes nothing).
    #[inline]
    fn pop_tail(&mut self, list: usize) -> Option<u32> {
        if let Some(c) = self.clock.as_deref_mut() {
            return Self::pop_timed(c, &mut self.lists[list], list);
        }
        let q = &mut self.lists[list];
        if let Some(&n) = q.get(SCAN_AHEAD) {
            prefetch(self.flags.as_ptr().wrapping_add(n as usize));
            if RRIP && list == ACTIVE {
                prefetch(self.rrpv.as_ptr().wrapping_add(n as usize));
            }
        }
        q.pop_front()
    }

    /// `pop_tail` with the writes' clock: the rotated folios first, then the
    /// queue's front, skipping the stale entries rotations left.
    #[cold]
    fn pop_timed(c: &mut WbClock, q: &mut VecDeque<u32>, list: usize) -> Option<u32> {
        if list == INACTIVE {
            if let Some(p) = c.rotated.pop() {
                return Some(p);
            }
        }
        loop {
            let p = q.pop_front()?;
            let s = &mut c.stale[list][p as usize];
            if *s == 0 {
                return Some(p);
            }
            *s -= 1;
            c.stale_total[list] -= 1;
        }
    }

    /// Completes the writes due by `t`, in order: `folio_end_writeback` →
    /// `folio_rotate_reclaimable` moves each folio still on a list (either
    /// list: `lru_move_tail` clears `PG_active`) to the inactive tail;
    /// an isolated folio stays in its scan.
    fn complete_until(&mut self, t: f64) {
        let Some(c) = self.clock.as_deref_mut() else {
            return;
        };
        while let Some(&(p, done)) = c.inflight.front() {
            if done > t {
                break;
            }
            c.inflight.pop_front();
            let i = p as usize;
            if c.state[i] & UNDER_WB == 0 {
                continue; // dropped by MADV_PAGEOUT (see `remove`)
            }
            c.state[i] &= !UNDER_WB;
            let f = self.flags[i];
            let from = if c.state[i] & ISOLATED != 0 {
                continue;
            } else if f & ON_ACTIVE != 0 {
                ACTIVE
            } else if f & ON_INACTIVE != 0 {
                INACTIVE
            } else {
                continue;
            };
            if c.stale[from][i] == u8::MAX {
                // Never seen: a page rotated 255 times with none of its
                // old entries reached. Purge the stale entries instead.
                Self::purge_stale(c, &mut self.lists, &self.flags);
            }
            c.stale[from][i] += 1;
            c.stale_total[from] += 1;
            self.flags[i] = (f & !ON_ACTIVE) | ON_INACTIVE;
            c.rotated.push(p);
            c.rotations += 1;
        }
    }

    /// Drops every stale entry from the queues (and, with them, entries
    /// of pages no longer on that list: `remove`, `demote`).
    fn purge_stale(c: &mut WbClock, lists: &mut [VecDeque<u32>; 2], flags: &[u8]) {
        for (l, bit) in [(INACTIVE, ON_INACTIVE), (ACTIVE, ON_ACTIVE)] {
            let stale = &mut c.stale[l];
            lists[l].retain(|&p| {
                let s = &mut stale[p as usize];
                if *s > 0 {
                    *s -= 1;
                    return false;
                }
                flags[p as usize] & bit != 0
            });
            c.stale_total[l] = 0;
        }
        c.rotated.retain(|&p| flags[p as usize] & ON_INACTIVE != 0);
    }

    /// The reclaimer waits for `id`'s write (legacy memcg, "case 3":
    /// `folio_wait_writeback`): the plug is flushed, the clock runs to the
    /// write's completion, and every write due by then completes.
    fn wait_for(&mut self, id: u32) {
        let Some(c) = self.clock.as_deref_mut() else {
            return;
        };
        c.flush_plug();
        let Some(done) = c.inflight.iter().find(|&&(p, _)| p == id).map(|&(_, d)| d) else {
            c.state[id as usize] &= !UNDER_WB;
            return;
        };
        c.waited_us += c.sleep_until(done);
        c.waits += 1;
        self.complete_until(done);
    }

    /// Moves the active tail to the inactive head (`shrink_active_list`);
    /// with RRIP, first ages the tail until one page reaches the max RRPV.
    fn deactivate_one(&mut self) {
        while let Some(t) = self.pop_tail(ACTIVE) {
            let i = t as usize;
            if RRIP && self.rrpv[i] < self.rmax {
                self.rrpv[i] += 1;
                self.lists[ACTIVE].push_back(t);
                continue;
            }
            self.flags[i] = (self.flags[i] & !(YOUNG | ON_ACTIVE)) | ON_INACTIVE;
            self.lists[INACTIVE].push_back(t);
            self.stats.pgdeactivate += 1;
            return;
        }
    }

    /// Marks `id` active (the caller puts it at the active head).
    #[inline]
    fn mark_active(&mut self, id: u32) {
        let i = id as usize;
        self.flags[i] = (self.flags[i] & !ON_INACTIVE) | ON_ACTIVE;
        if RRIP {
            self.rrpv[i] = self.rmax.saturating_sub(1);
        }
        self.age = self.age.wrapping_add(1);
    }

    /// Finds and removes one victim. Memory is full, so the lists hold at least one page.
    fn reclaim(&mut self) -> Option<u32> {
        loop {
            while self.inactive_is_low() {
                self.deactivate_one();
            }
            let t = self.pop_tail(INACTIVE)?;
            self.stats.pgscan += 1;
            let i = t as usize;
            let f = self.flags[i];
            if f & YOUNG != 0 {
                // folio_check_references: referenced_ptes > 0.
                self.flags[i] = (f & !YOUNG) | REFERENCED;
                if f & REFERENCED != 0 {
                    self.mark_active(t);
                    self.lists[ACTIVE].push_back(t);
                    self.stats.pgactivate += 1;
                } else {
                    self.lists[INACTIVE].push_back(t);
                    self.stats.ref_keep += 1;
                }
                continue;
            }
            self.flags[i] = SHADOW;
            if let Some(s) = self.shadow.get_mut(i) {
                *s = self.age;
            }
            self.age = self.age.wrapping_add(1);
            self.stats.pgsteal += 1;
            self.stats.reclaims += 1;
            return Some(t);
        }
    }

    /// One direct reclaim of `batch` pages (`try_to_free_mem_cgroup_pages`
    /// → `do_try_to_free_pages` → `shrink_node` → `shrink_lruvec`): the
    /// reclaimed pages go to `freed`. Retried, with deactivation forced,
    /// until it frees at least one page (`do_try_to_free_pages`'s
    /// `force_deactivate` retry; `try_charge` retries too).
    fn reclaim_batch(&mut self) {
        self.stats.reclaims += 1;
        let mut force = false;
        loop {
            let got = self.do_try_to_free_pages(force);
            // snapshot_refaults
            self.refault_snap = self.refault_acts;
            if got > 0 || self.len(INACTIVE) + self.len(ACTIVE) == 0 {
                return;
            }
            force = true;
            self.throttle();
        }
    }

    /// A reclaim freed nothing while writes are in flight: it sleeps until
    /// `SWAP_CLUSTER_MAX` of them complete (`reclaim_throttle` on
    /// `VMSCAN_THROTTLE_WRITEBACK`, woken by `__acct_reclaim_writeback`),
    /// or all of them if fewer. Without it a cgroup v2 reclaim, which
    /// never waits on a folio, would find the same folios under writeback
    /// forever (the clock only runs while the program does).
    fn throttle(&mut self) {
        let Some(c) = self.clock.as_deref_mut() else {
            return;
        };
        c.flush_plug();
        let k = c.inflight.len().min(SWAP_CLUSTER_MAX);
        let Some(&(_, done)) = k.checked_sub(1).and_then(|k| c.inflight.get(k)) else {
            return;
        };
        c.throttled_us += c.sleep_until(done);
        self.complete_until(done);
    }

    /// The priority loop: from `DEF_PRIORITY` down to 0, each pass scans
    /// `size >> priority` pages of each list (times the anon share of
    /// `get_scan_count`), until `batch` pages are reclaimed. Returns how many.
    fn do_try_to_free_pages(&mut self, force_deactivate: bool) -> usize {
        let mut reclaimed = 0;
        // complete=reclaim: the inactive list's length when the reclaim
        // began, and the pages its passes took and wrote.
        let start = self.lists[INACTIVE].len();
        let (mut pops, mut writes) = (0, 0);
        for prio in (0..=DEF_PRIORITY).rev() {
            if let Some(now) = self.clock.as_deref().map(WbClock::now) {
                self.complete_until(now);
            }
            // prepare_scan_count: deactivate anon pages when refaults were
            // activated since the last reclaim, or the inactive list is low.
            let may_deactivate = force_deactivate
                || self.refault_acts != self.refault_snap
                || self.inactive_is_low();
            // get_scan_count: SCAN_FRACT with no file LRU (anon share
            // swappiness / (400 − swappiness)), SCAN_EQUAL at priority 0.
            let scan = |size: usize| {
                let s = size >> prio;
                if prio == 0 {
                    s
                } else {
                    s * self.swappiness / (400 - self.swappiness)
                }
            };
            let mut nr_inactive = scan(self.len(INACTIVE));
            let mut nr_active = scan(self.len(ACTIVE));
            let before = self.lists[INACTIVE].len();
            self.pass_pops = 0;
            self.pass_writes = 0;
            // shrink_lruvec: batches of SWAP_CLUSTER_MAX from each list in
            // turn (inactive, then active) while the inactive count lasts.
            while nr_inactive > 0 {
                let n = nr_inactive.min(SWAP_CLUSTER_MAX);
                nr_inactive -= n;
                reclaimed += self.shrink_inactive_list(n);
                if nr_active > 0 {
                    let n = nr_active.min(SWAP_CLUSTER_MAX);
                    nr_active -= n;
                    if may_deactivate {
                        self.shrink_active_list(n);
                    }
                }
                // No file pages to keep in proportion: stop at the target.
                if reclaimed >= self.batch {
                    break;
                }
            }
            // "Even if we did not try to evict anon pages at all, we want to
            // rebalance the anon lru active/inactive ratio."
            if self.inactive_is_low() {
                self.shrink_active_list(SWAP_CLUSTER_MAX);
            }
            if let Some(c) = self.clock.as_deref_mut() {
                c.flush_plug();
            } else if self.complete_at_end {
                pops += self.pass_pops;
                writes += self.pass_writes;
            } else if self.pass_writes > 0 {
                self.writes_complete(before - self.pass_pops);
            }
            if reclaimed >= self.batch {
                break;
            }
        }
        if writes > 0 {
            // The reclaim's pushes are the queue's entries from
            // start − pops on; when its passes took more than the list
            // held at first (priority 0 wraps round), every entry left
            // is one of them.
            self.writes_complete(start.saturating_sub(pops));
        }
        reclaimed
    }

    /// `shrink_inactive_list`: isolates up to `n` pages from the inactive
    /// tail and runs `folio_check_references` on each, tail first:
    /// reclaimed (to `freed`, shadow entry written, `nonresident_age` + 1),
    /// kept (rotated) or activated; then `move_folios_to_lru` puts the
    /// survivors back at the heads of their lists in the same order and
    /// ages `nonresident_age` once per activated page. Returns the pages
    /// reclaimed.
    fn shrink_inactive_list(&mut self, n: usize) -> usize {
        let mut reclaimed = 0;
        let mut back = std::mem::take(&mut self.scratch);
        // isolate_lru_folios: the batch leaves the list at once.
        let mut batch = std::mem::take(&mut self.isolated);
        for _ in 0..n {
            let Some(t) = self.pop_tail(INACTIVE) else {
                break;
            };
            batch.push(t);
        }
        self.pass_pops += batch.len();
        self.stats.pgscan += batch.len() as u64;
        if let Some(c) = self.clock.as_deref_mut() {
            for &t in &batch {
                c.state[t as usize] |= ISOLATED;
            }
        }
        for &t in &batch {
            let i = t as usize;
            if let Some(c) = self.clock.as_deref_mut().filter(|c| c.scan_us > 0.0) {
                // shrink_folio_list takes the folios one by one, in the
                // faulting task: its CPU is the program's time, and the
                // writes due by the time it reaches this folio complete
                // (one isolated here stays in the batch, now clean).
                c.stall_us += c.scan_us;
                let now = c.now();
                self.complete_until(now);
            }
            if self
                .clock
                .as_deref()
                .is_some_and(|c| c.state[i] & UNDER_WB != 0)
            {
                // shrink_folio_list meets a folio under writeback; it has
                // PG_reclaim (pageout set it). Legacy memcg waits for it
                // and tries it again; cgroup v2 activates it.
                if self.clock.as_deref().is_some_and(|c| c.wait) {
                    self.wait_for(t);
                } else {
                    self.flags[i] = (self.flags[i] & !ON_INACTIVE) | ON_ACTIVE;
                    back.push(t);
                    continue;
                }
            }
            let f = self.flags[i];
            if f & YOUNG != 0 {
                let g = (f & !YOUNG) | REFERENCED;
                self.flags[i] = if f & REFERENCED != 0 {
                    (g & !ON_INACTIVE) | ON_ACTIVE
                } else {
                    self.stats.ref_keep += 1;
                    g
                };
                back.push(t);
                continue;
            }
            if f & DIRTY != 0 {
                // pageout(): try_to_unmap, then the write starts and the
                // folio is kept, PG_referenced cleared by
                // folio_check_references; it is freed once clean.
                self.flags[i] = (f & !(DIRTY | REFERENCED)) | WRITTEN;
                self.pass_writes += 1;
                self.wrote.push(t);
                if let Some(c) = self.clock.as_deref_mut() {
                    c.state[i] |= UNDER_WB;
                    c.plugged.push(t);
                }
                back.push(t);
                continue;
            }
            self.flags[i] = SHADOW | FREED;
            if let Some(s) = self.shadow.get_mut(i) {
                *s = self.age;
            }
            self.age = self.age.wrapping_add(1);
            self.freed.push_back(t);
            reclaimed += 1;
        }
        self.stats.pgsteal += reclaimed as u64;
        if let Some(c) = self.clock.as_deref_mut() {
            for &t in &batch {
                c.state[t as usize] &= !ISOLATED;
            }
        }
        batch.clear();
        self.isolated = batch;
        for &t in &back {
            if self.flags[t as usize] & ON_ACTIVE != 0 {
                self.mark_active(t);
                self.lists[ACTIVE].push_back(t);
                self.stats.pgactivate += 1;
            } else {
                self.lists[INACTIVE].push_back(t);
            }
        }
        back.clear();
        self.scratch = back;
        reclaimed
    }

    /// The writes of a priority pass complete (`blk_finish_plug` at the end
    /// of `shrink_lruvec` submits them; the device is taken to finish them
    /// before the next pass): `folio_end_writeback` →
    /// `folio_rotate_reclaimable` moves each written folio still on the
    /// inactive list, unreferenced, to its tail, in completion (issue)
    /// order, so the last one written is scanned first. The folios put on
    /// the inactive list by this pass are its entries from `kept` on (a
    /// pass takes at most the list's length at its start, from the tail).
    fn writes_complete(&mut self, kept: usize) {
        let q = &mut self.lists[INACTIVE];
        let new: Vec<u32> = q.drain(kept.min(q.len())..).collect();
        let flags = &self.flags;
        let (written, others): (Vec<u32>, Vec<u32>) = new
            .into_iter()
            .partition(|&p| flags[p as usize] & WRITTEN != 0);
        q.extend(others);
        self.stats.pgrotated += written.len() as u64;
        for p in written {
            q.push_front(p);
        }
    }

    /// A page reclaim wrote but did not free is referenced: `do_swap_page`
    /// finds it in the swap cache and maps it again (a minor fault), young,
    /// where it is on the list; clean unless this reference writes it.
    #[cold]
    fn swap_cache_hit(&mut self, id: u32, write: bool) -> Access {
        let i = id as usize;
        let d = if write { DIRTY } else { 0 };
        self.flags[i] = (self.flags[i] & !WRITTEN) | YOUNG | d;
        Access::SwapCache
    }

    /// `shrink_active_list`: up to `n` pages from the active tail go to the
    /// inactive head in order, young bit cleared, `PG_referenced` kept
    /// (a referenced anon folio is deactivated all the same).
    fn shrink_active_list(&mut self, n: usize) {
        for _ in 0..n {
            if self.len(ACTIVE) == 0 {
                return;
            }
            self.deactivate_one();
        }
    }

    /// The engine's victim for a miss in `reclaim=batch`: the oldest page
    /// of the last batch, reclaiming a new batch when none is left.
    fn take_freed(&mut self) -> Option<u32> {
        if self.freed.is_empty() {
            self.reclaim_batch();
        }
        let v = self.freed.pop_front()?;
        self.flags[v as usize] &= !FREED;
        Some(v)
    }

    /// A page reclaimed by the last batch is referenced before the engine
    /// took it: it comes back as a refault would (`workingset_refault`),
    /// but the engine counts a hit (see the module doc).
    #[cold]
    fn rescue(&mut self, id: u32, write: bool) -> Access {
        if let Some(k) = self.freed.iter().position(|&p| p == id) {
            self.freed.remove(k);
        }
        self.flags[id as usize] &= !FREED;
        let dirty = if write { self.dirty_bit } else { 0 };
        self.place(id, YOUNG | dirty);
        Access::Hit
    }
}

impl<const RRIP: bool> Policy for TwoLists<RRIP> {
    #[inline]
    fn access(&mut self, id: u32, req: &Req) -> Access {
        let i = id as usize;
        let f = self.flags[i];
        if f & RESIDENT != 0 {
            if f & WRITTEN != 0 {
                return self.swap_cache_hit(id, req.write);
            }
            self.flags[i] = f | YOUNG | (self.dirty_bit & 0u8.wrapping_sub(u8::from(req.write)));
            if RRIP && f & ON_ACTIVE != 0 {
                self.rrpv[i] = 0;
            }
            return Access::Hit;
        }
        if f & FREED != 0 {
            return self.rescue(id, req.write);
        }
        if let Some(c) = self.clock.as_deref_mut() {
            // The reference being served is the clock's; a swap-in stalls.
            c.pos = req.pos;
            if f & SHADOW != 0 {
                c.stall_us += c.read_us;
            }
        }
        // No swap copy yet (a first touch), or written by this reference.
        let dirty = if f & SHADOW == 0 || req.write {
            self.dirty_bit
        } else {
            0
        };
        self.fault_in(id, YOUNG | dirty)
    }

    /// Swap readahead (`__read_swap_cache_async`): the folio goes to the
    /// inactive list like a faulted one (`folio_add_lru`), refault
    /// activation included (`workingset_refault` runs for it), but no page
    /// table maps it yet, so its young bit is clear: unless referenced, it
    /// is reclaimed the first time it reaches the inactive tail.
    fn insert(&mut self, id: u32, _req: &Req) -> Access {
        self.fault_in(id, 0)
    }

    fn can_remove(&self) -> bool {
        true
    }

    #[inline]
    fn take_writes(&mut self, out: &mut Vec<u32>) {
        if !self.wrote.is_empty() {
            out.append(&mut self.wrote);
        }
    }

    fn reclaim_stats(&self) -> Option<ReclaimStats> {
        let mut r = self.stats;
        if let Some(c) = self.clock.as_deref() {
            r.pgrotated = c.rotations;
            r.waits = c.waits;
            r.wait_s = c.waited_us / 1e6;
            r.throttle_s = c.throttled_us / 1e6;
        }
        Some(r)
    }

    /// MADV_PAGEOUT (`reclaim_pages`): the folios are reclaimed at once,
    /// leaving shadow entries as any eviction does.
    fn remove(&mut self, ids: &[u32]) {
        for &id in ids {
            let i = id as usize;
            if self.flags[i] & FREED != 0 {
                // Reclaimed already (its shadow is written): the engine drops it.
                self.flags[i] &= !FREED;
                continue;
            }
            self.flags[i] = SHADOW;
            if let Some(s) = self.shadow.get_mut(i) {
                *s = self.age;
            }
            self.age = self.age.wrapping_add(1);
        }
        // Their queue entries go in one pass (a page is on a list iff its
        // flags say so). A folio under writeback is dropped as if its
        // write had completed (the clock's simplification for hints).
        if let Some(c) = self.clock.as_deref_mut() {
            for &id in ids {
                c.state[id as usize] &= !UNDER_WB;
            }
            Self::purge_stale(c, &mut self.lists, &self.flags);
        } else {
            for (l, bit) in [(INACTIVE, ON_INACTIVE), (ACTIVE, ON_ACTIVE)] {
                let flags = &self.flags;
                self.lists[l].retain(|&p| flags[p as usize] & bit != 0);
            }
        }
        let flags = &self.flags;
        self.freed.retain(|&p| flags[p as usize] & FREED != 0);
    }

    /// MADV_COLD (`madvise_cold_or_pageout_pte_range`): the young bit and
    /// `PG_referenced` are cleared, and active folios move to the inactive
    /// head (`folio_deactivate`); inactive folios stay where they are.
    fn demote(&mut self, ids: &[u32]) {
        let mut moved = Vec::new();
        for &id in ids {
            let i = id as usize;
            // Freed, or unmapped in the swap cache: no PTE for madvise to see.
            if self.flags[i] & (FREED | WRITTEN) != 0 {
                continue;
            }
            let f = self.flags[i] & !(YOUNG | REFERENCED);
            if f & ON_ACTIVE != 0 {
                self.flags[i] = (f & !ON_ACTIVE) | ON_INACTIVE;
                moved.push(id);
            } else {
                self.flags[i] = f;
            }
        }
        if !moved.is_empty() {
            if let Some(c) = self.clock.as_deref_mut() {
                // The moved pages are off the active list by their flags
                // now; their queue entries go with the stale ones.
                Self::purge_stale(c, &mut self.lists, &self.flags);
            } else {
                let flags = &self.flags;
                self.lists[ACTIVE].retain(|&p| flags[p as usize] & ON_ACTIVE != 0);
            }
            self.lists[INACTIVE].extend(moved);
        }
    }

    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.flags.as_ptr().wrapping_add(id as usize));
        if RRIP {
            prefetch(self.rrpv.as_ptr().wrapping_add(id as usize));
        }
    }

    fn bytes_per_page(&self) -> usize {
        let pages = self.flags.len().max(1);
        let queues: usize = self.lists.iter().map(|q| 4 * q.capacity()).sum::<usize>()
            + 4 * (self.freed.capacity() + self.scratch.capacity());
        let clock = self.clock.as_deref().map_or(0, |c| {
            c.state.len()
                + c.stale[0].len()
                + c.stale[1].len()
                + std::mem::size_of::<(u32, f64)>() * c.inflight.capacity()
                + 4 * (c.rotated.capacity() + c.plugged.capacity())
        });
        let per_page = self.flags.len() + self.rrpv.len() + 4 * self.shadow.len() + clock;
        (per_page + queues).div_ceil(pages)
    }
}

impl<const RRIP: bool> TwoLists<RRIP> {
    /// A fault (`young` = YOUNG) or a readahead (`young` = 0) brings `id` in.
    #[inline(always)]
    fn fault_in(&mut self, id: u32, young: u8) -> Access {
        let held = self.len(INACTIVE) + self.len(ACTIVE) + self.freed.len();
        let victim = if held < self.cap {
            None
        } else if self.batched {
            self.take_freed()
        } else {
            self.reclaim()
        };
        self.place(id, young);
        Access::Miss { victim }
    }

    /// Puts a page that comes (back) in on a list (`young`: its young bit):
    /// `workingset_refault`
    /// activates it if its refault distance fits in the active list
    /// (`workingset_test_recent`), else it goes to the inactive head.
    #[inline(always)]
    fn place(&mut self, id: u32, young: u8) {
        let i = id as usize;
        let refault_active = self.flags[i] & SHADOW != 0
            && self
                .shadow
                .get(i)
                .is_some_and(|&s| self.age.wrapping_sub(s) as usize <= self.len(ACTIVE));
        if refault_active {
            self.flags[i] = young;
            self.mark_active(id);
            self.refault_acts += 1;
            self.stats.workingset_activate += 1;
            self.lists[ACTIVE].push_back(id);
        } else {
            self.flags[i] = young | ON_INACTIVE;
            self.lists[INACTIVE].push_back(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::*;
    use crate::policy::PolicySpec;

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 4, 10)
    }

    // Letters stand for pages; I = inactive list, A = active list, both
    // written head (newest) first; Y = young bit, R = PG_referenced.
    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;
    const E: u64 = 5;
    const F: u64 = 6;
    const G: u64 = 7;
    const H: u64 = 8;

    #[test]
    fn hand_worked_two_trips_and_deactivation() {
        // cap 3 (< 1 GB, so ratio 1), refault off.
        // a b c   faults: I [c b a], all Y, no R.
        // d       reclaim: a, b, c are young: each rotated with R set and Y
        //         cleared (I [c b a] again); a reaches the tail with Y clear:
        //         evicted. I [d c b].
        // b c     hits: Y set on b and c (they have R from the first trip).
        // e       reclaim: tail b has Y and R: activated, A [b]; 2*1 < 1 no.
        //         tail c: activated, A [c b]; now I [d]: 1*1 < 2 is low, so
        //         the active tail b is deactivated (Y cleared, R kept):
        //         I [b d], A [c]. Tail d: Y, no R: rotated, I [d b]. Tail b:
        //         Y clear: evicted. I [e d], A [c].
        // c       hit (active).
        // b       miss: deactivation sent it back and it was reclaimed.
        let t = [A, B, C, D, B, C, E, C, B];
        let m = false;
        let h = true;
        assert_eq!(
            hits("linux:reclaim=page:refault=0", 3, &t),
            vec![m, m, m, m, h, h, m, h, m]
        );
        // LRU keeps b (the last reference hits), so the difference is real.
        assert_eq!(hits("lru", 3, &t)[8], h);
        // The scans: a b c a (for d), b c d b (for e), then d (for the
        // last b: d lost its young bit on its trip and is evicted): 9
        // scanned; kept for another trip a, b, c and d (nr_ref_keep 4),
        // activated b and c, freed a, b and d.
        let t32: Vec<u32> = t.iter().map(|&x| x as u32).collect();
        let s = run_lists("linux:reclaim=page:refault=0", 3, 10, &t32)
            .2
            .stats;
        assert_eq!(
            (s.pgscan, s.ref_keep, s.pgactivate, s.pgsteal),
            (9, 4, 2, 3)
        );
    }

    #[test]
    fn hand_worked_refault_activation() {
        // cap 4, ratio 1. nonresident_age starts at 0.
        //  1-4  a b c d: I [d c b a], all Y.
        //  5-6  a b: hits; Y already set, nothing changes.
        //  7 e: no list low (4*1 < 0 no). a, b, c, d rotated (R set, Y clear),
        //       then a evicted: shadow(a) = 0, age 1. I [e d c b].
        //  8-9  b c: hits, Y set again (R set): referenced on two trips.
        // 10 f: tail b: Y+R -> activated (age 2), A [b]; 3 < 1 no. Tail c:
        //       activated (age 3), A [c b]; 2 < 2 no. Tail d: Y clear ->
        //       evicted (referenced once, by its fault): shadow(d) = 3,
        //       age 4. I [f e].
        // 11 d: reclaim first: e, f rotated (R set), e evicted: shadow 4,
        //       age 5. Refault distance of d = 5 - 3 = 2 <= 2 active pages:
        //       with refault=1, d goes to the active head (age 6):
        //       A [d c b], I [f]. With refault=0: I [d f], A [c b].
        // 12 g: refault=1: I 1*1 < 3 is low: b deactivated, I [b f], A [d c];
        //       tail f: Y clear -> evicted. I [g b].
        //       refault=0: 2 < 2 no; tail f evicted. I [g d].
        // 13 h: refault=1: tail b: Y clear -> evicted. I [h g].
        //       refault=0: tail d: Y, no R -> rotated; g rotated; d evicted.
        // 14 d: refault=1: active, hit. refault=0: miss.
        let t = [A, B, C, D, A, B, E, B, C, F, D, G, H, D];
        let m = false;
        let h = true;
        let common = vec![m, m, m, m, h, h, m, h, h, m, m, m, m];
        let mut on = common.clone();
        on.push(h);
        let mut off = common;
        off.push(m);
        assert_eq!(hits("linux:reclaim=page", 4, &t), on);
        assert_eq!(hits("linux:reclaim=page:refault=0", 4, &t), off);
    }

    #[test]
    fn inactive_ratio_follows_the_kernel_formula() {
        // inactive_is_low: int_sqrt(10 * GB), 1 below 1 GB; 2^18 pages of 4 KiB = 1 GB.
        assert_eq!(default_ratio(1000), 1);
        assert_eq!(default_ratio((1 << 18) - 1), 1);
        assert_eq!(default_ratio(1 << 18), 3); // int_sqrt(10) = 3
        assert_eq!(default_ratio(1 << 20), 6); // 4 GB: int_sqrt(40) = 6
        assert_eq!(default_ratio(1 << 28), 101); // 1 TB: int_sqrt(10240) = 101
    }

    #[test]
    fn ratio_param_sets_the_list_balance() {
        // cap 50, refault off. Pages 0..49 fault in (I [49 .. 0], all Y)
        // and are touched again (nothing changes). Page 50: every page is
        // young, so all 50 rotate (R set, Y cleared) and page 0 is evicted:
        // I [50 49 .. 1]. Pages 1..49 are touched again (Y). Page 51: the
        // tail pages 1, 2, ... have Y+R and are activated one by one; after
        // k activations I = 50 - k, A = k. With ratio r the inactive list is
        // low once (50 - k) * r < k:
        //   r = 3: at k = 38 (12 * 3 < 38); from then on each activation
        //     (pages 38..49) deactivates the active tail (pages 1..12, Y
        //     clear): A = 37. Then tail 50 (Y, no R) rotates, tail 1 (Y
        //     clear) is evicted, and 51 joins I: I = 13, A = 37.
        //   r = 1: at k = 26 (24 < 26); pages 1..24 are deactivated, 1 is
        //     evicted: I = 25, A = 25.
        let mut t: Vec<u32> = (0..50).chain(0..50).collect();
        t.push(50);
        t.extend(1..50);
        t.push(51);
        for (ratio, inactive, active) in [(3, 13, 37), (1, 25, 25)] {
            let spec =
                PolicySpec::parse(&format!("linux:reclaim=page:refault=0:ratio={ratio}")).unwrap();
            let cfg = PolicyConfig {
                capacity: 50,
                pages: 52,
                params: &spec.params,
                seed: 1,
            };
            let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
            let req = Req {
                pos: 0,
                write: false,
                next_use: u32::MAX,
            };
            let mut victims = Vec::new();
            for &id in &t {
                if let Access::Miss { victim: Some(v) } = p.access(id, &req) {
                    victims.push(v);
                }
            }
            assert_eq!(victims, vec![0, 1]);
            assert_eq!(
                (p.lists[INACTIVE].len(), p.lists[ACTIVE].len()),
                (inactive, active),
                "ratio {ratio}"
            );
            // The survivors of the active list are the most recently activated.
            assert!(p.flags[49] & ON_ACTIVE != 0 && p.flags[2] & ON_ACTIVE == 0);
        }
    }

    #[test]
    fn readahead_pages_are_reclaimed_first_unless_referenced() {
        // cap 3, refault off. Faults 1 2 (young), then 3 read ahead (no
        // young bit). A fault on 4 reclaims: tail 1 young -> rotated (R),
        // 2 likewise, 3 not young -> evicted. Had 3 been faulted in, all
        // three rotate and 1 goes.
        let spec = PolicySpec::parse("linux:reclaim=page:refault=0").unwrap();
        let cfg = PolicyConfig {
            capacity: 3,
            pages: 5,
            params: &spec.params,
            seed: 1,
        };
        let req = Req {
            pos: 0,
            write: false,
            next_use: u32::MAX,
        };
        for (read_ahead, victim) in [(true, 3), (false, 1)] {
            let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
            p.access(1, &req);
            p.access(2, &req);
            if read_ahead {
                p.insert(3, &req);
            } else {
                p.access(3, &req);
            }
            assert_eq!(
                p.access(4, &req),
                Access::Miss {
                    victim: Some(victim)
                }
            );
        }
        // A read-ahead page referenced before reclaim gets its young bit:
        // 1 2 faulted, 3 read ahead and referenced: 1 goes.
        let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
        p.access(1, &req);
        p.access(2, &req);
        p.insert(3, &req);
        assert_eq!(p.access(3, &req), Access::Hit);
        assert_eq!(p.access(4, &req), Access::Miss { victim: Some(1) });
    }

    #[test]
    fn cold_deactivates_and_pageout_reclaims() {
        // cap 4, refault off, ratio 1. 1 2 3 4 fault; 5: all rotate (R set),
        // 1 evicted; 2 3 hit (Y again); 6: 2, 3 activated, then 4 evicted:
        // A [3 2], I [6 5].
        let spec = PolicySpec::parse("linux:reclaim=page:refault=0").unwrap();
        let cfg = PolicyConfig {
            capacity: 4,
            pages: 8,
            params: &spec.params,
            seed: 1,
        };
        let req = Req {
            pos: 0,
            write: false,
            next_use: u32::MAX,
        };
        let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
        for id in [1, 2, 3, 4, 5, 2, 3, 6] {
            p.access(id, &req);
        }
        assert_eq!(p.lists[ACTIVE].iter().copied().collect::<Vec<_>>(), [2, 3]);
        // MADV_COLD on 3: to the inactive head, Y and R cleared.
        p.demote(&[3]);
        assert_eq!(p.lists[ACTIVE].iter().copied().collect::<Vec<_>>(), [2]);
        assert_eq!(p.flags[3], ON_INACTIVE);
        // MADV_PAGEOUT on 5 and 2: gone from both lists.
        p.remove(&[5, 2]);
        assert!(p.lists[ACTIVE].is_empty());
        assert_eq!(
            p.lists[INACTIVE].iter().copied().collect::<Vec<_>>(),
            [6, 3]
        );
        assert_eq!(p.access(2, &req), Access::Miss { victim: None });
    }

    /// Runs `trace` through `spec` at `cap` pages: the victims in order, the
    /// hits, and the policy for a look at its lists.
    fn run_lists(
        spec: &str,
        cap: usize,
        pages: usize,
        trace: &[u32],
    ) -> (Vec<u32>, Vec<u32>, TwoLists<false>) {
        let spec = PolicySpec::parse(spec).unwrap();
        let cfg = PolicyConfig {
            capacity: cap,
            pages,
            params: &spec.params,
            seed: 1,
        };
        let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
        let (mut victims, mut hits) = (Vec::new(), Vec::new());
        for (pos, &id) in trace.iter().enumerate() {
            let req = Req {
                pos: pos as u64,
                write: false,
                next_use: u32::MAX,
            };
            match p.access(id, &req) {
                Access::Hit | Access::SwapCache => hits.push(id),
                Access::Miss { victim: Some(v) } => victims.push(v),
                Access::Miss { victim: None } => {}
            }
        }
        (victims, hits, p)
    }

    /// (inactive, active, freed) lengths.
    fn sizes(p: &TwoLists<false>) -> (usize, usize, usize) {
        (
            p.lists[INACTIVE].len(),
            p.lists[ACTIVE].len(),
            p.freed.len(),
        )
    }

    #[test]
    fn hand_worked_batch_reclaim_by_priority() {
        // cap 40, refault off, the default batch of 32 and swappiness 60:
        // a list of n pages is scanned (n >> prio) * 60 / 340 pages at
        // priority prio > 0 and n pages at priority 0. For n = 40: 0 at
        // priorities 12..3, 1 at 2 (10 * 60 / 340), 3 at 1 (20 * 60 / 340).
        // Pages 0..39 fault in: I (tail first) [0 .. 39], all young.
        // 40: reclaim. Priority 2 scans 1 page: 0 is young -> kept (R set,
        //     young cleared), to the head. Priority 1 scans 3: 1, 2, 3 kept.
        //     Priority 0 scans all 40 in batches of 32: 4..35 kept, then a
        //     batch of 8: 36..39 kept, 0..3 (no young bit now) reclaimed.
        //     4 < 32 but the priorities are done: freed [0 1 2 3]; 40 takes 0.
        // 41, 42, 43 take 1, 2, 3. I [4 .. 43], 4..39 with R and no young.
        // 44: reclaim. Priority 2: 4 reclaimed; priority 1: 5, 6, 7;
        //     priority 0: 36 left, a batch of 32: 8..39 reclaimed: 36 >= 32,
        //     stop. freed [4 .. 39]; 44 takes 4. I [40 .. 44].
        // 38: reclaimed but not taken yet: it comes back (a hit), to the
        //     inactive head. 45 takes 5: I [40 .. 44 38 45], freed [6 .. 37 39].
        let mut t: Vec<u32> = (0..45).collect();
        t.extend([38, 45]);
        let (victims, hits, p) = run_lists("linux:refault=0:reclaim=batch", 40, 46, &t);
        assert_eq!(victims, [0, 1, 2, 3, 4, 5]);
        assert_eq!(hits, [38]);
        assert_eq!(sizes(&p), (7, 0, 33));
        assert!(p.flags[38] & ON_INACTIVE != 0 && p.flags[39] & FREED != 0);
        // In the kernel's counters: the first reclaim scanned 1 + 3 + 40
        // and freed 4, the second scanned 1 + 3 + 32 and freed 36; no page
        // was activated.
        let k = p.stats;
        assert_eq!(
            (
                k.reclaims,
                k.pgscan,
                k.pgsteal,
                k.pgactivate,
                k.pgdeactivate
            ),
            (2, 80, 40, 0, 0)
        );
        // swappiness 200 (anon share 200 / 200 = 1): priorities 5..1 scan
        // 1, 2, 5, 10, 20 pages of 40, so 0..37 are kept before priority 0,
        // whose first batch keeps 38, 39 and reclaims 0..29 (30 < 32) and
        // second reclaims 30..37: freed [0 .. 37], and 40 takes 0. 41..44
        // take 1..4; 38 is still on the inactive list: an ordinary hit. 45
        // takes 5: I [38 .. 45], freed [6 .. 37].
        let (victims, hits, p) =
            run_lists("linux:refault=0:swappiness=200:reclaim=batch", 40, 46, &t);
        assert_eq!(victims, [0, 1, 2, 3, 4, 5]);
        assert_eq!(hits, [38]);
        assert_eq!(sizes(&p), (8, 0, 32));
    }

    #[test]
    fn hand_worked_scan_balance() {
        // shrink_lruvec deactivates from the active list, alongside each
        // inactive batch, only when prepare_scan_count allows it: the
        // inactive list is low, or refaults were activated since the last
        // reclaim. ratio 1, batch=4. The lists are set by hand, tail first:
        //   I [10 11 12 13 | 14 .. 19]   10..13 without young bit, 14..19 young
        //   A [0 .. 4]                   PG_referenced, no young bit
        // and one reclaim runs. Priorities 12..1 scan nothing (at most
        // (10 >> 1) * 60 / 340 = 0 pages) and find the inactive list not
        // low (10 * 1 < 5 is false).
        // Priority 0: inactive batch of 10: 10..13 reclaimed, 14..19 kept
        // (R set). reclaimed 4 >= batch 4: stop after this round, whose
        // active batch (5 pages) runs only if deactivation is allowed:
        //   not allowed (6 * 1 < 5 is false, no refault activation): A stays
        //     [0 .. 4], I [14 .. 19];
        //   allowed (a refault was activated since the last snapshot): A []
        //     and I [14 .. 19 0 .. 4].
        for refaulted in [false, true] {
            let spec = PolicySpec::parse("linux:batch=4:reclaim=batch").unwrap();
            let cfg = PolicyConfig {
                capacity: 20,
                pages: 20,
                params: &spec.params,
                seed: 1,
            };
            let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
            for id in 10..20u32 {
                p.flags[id as usize] = ON_INACTIVE | if id >= 14 { YOUNG } else { 0 };
                p.lists[INACTIVE].push_back(id);
            }
            for id in 0..5u32 {
                p.flags[id as usize] = ON_ACTIVE | REFERENCED;
                p.lists[ACTIVE].push_back(id);
            }
            if refaulted {
                p.refault_acts = 1;
            }
            p.reclaim_batch();
            let list = |l: usize| p.lists[l].iter().copied().collect::<Vec<_>>();
            assert_eq!(
                p.freed.iter().copied().collect::<Vec<_>>(),
                [10, 11, 12, 13]
            );
            if refaulted {
                assert_eq!(list(INACTIVE), [14, 15, 16, 17, 18, 19, 0, 1, 2, 3, 4]);
                assert!(list(ACTIVE).is_empty());
                // Deactivated: young cleared, PG_referenced kept.
                assert_eq!(p.flags[0], ON_INACTIVE | REFERENCED);
            } else {
                assert_eq!(list(INACTIVE), [14, 15, 16, 17, 18, 19]);
                assert_eq!(list(ACTIVE), [0, 1, 2, 3, 4]);
            }
            // snapshot_refaults: the next reclaim starts from this count.
            assert_eq!(p.refault_snap, p.refault_acts);
        }
    }

    #[test]
    fn hand_worked_refault_test_and_its_count() {
        // workingset_refault with the lists set by hand: A [0 1 2] (three
        // active pages), nonresident_age 10. Page 5 was evicted at age 8
        // (distance 2 <= 3 active pages), page 6 at age 6 (distance 4 > 3).
        // Memory is not full (cap 10), so nothing is reclaimed.
        //   5 refaults: activated, to the active head; nonresident_age 11;
        //     WORKINGSET_ACTIVATE_ANON 1 (the next reclaim may deactivate).
        //   6 refaults: distance now 11 - 6 = 5 > 4: inactive head.
        let spec = PolicySpec::parse("linux").unwrap();
        let cfg = PolicyConfig {
            capacity: 10,
            pages: 10,
            params: &spec.params,
            seed: 1,
        };
        let mut p = TwoLists::<false>::new(&cfg, 0, true).unwrap();
        for id in 0..3u32 {
            p.flags[id as usize] = ON_ACTIVE;
            p.lists[ACTIVE].push_back(id);
        }
        p.age = 10;
        for (id, at) in [(5usize, 8u32), (6, 6)] {
            p.flags[id] = SHADOW;
            p.shadow[id] = at;
        }
        let req = Req {
            pos: 0,
            write: false,
            next_use: u32::MAX,
        };
        assert_eq!(p.access(5, &req), Access::Miss { victim: None });
        assert_eq!(p.access(6, &req), Access::Miss { victim: None });
        let list = |l: usize| p.lists[l].iter().copied().collect::<Vec<_>>();
        assert_eq!(list(ACTIVE), [0, 1, 2, 5]);
        assert_eq!(list(INACTIVE), [6]);
        assert_eq!((p.age, p.refault_acts, p.refault_snap), (11, 1, 0));
        assert_eq!(p.flags[5], YOUNG | ON_ACTIVE);
        assert_eq!(p.flags[6], YOUNG | ON_INACTIVE);
    }

    #[test]
    fn hand_worked_async_writeback() {
        // cap 8, refault off, batch=4, swappiness 200 (a list of n pages is
        // scanned n >> prio pages at priority prio > 0, all at 0),
        // writeback=async. Pages 0..7 fault in: I (tail first) [0 .. 7],
        // young and dirty.
        // 8: reclaim. Priorities 12..4 scan nothing; 3 scans 1: 0 is young,
        //    kept (R set, Y cleared); 2 scans 2: 1, 2 kept; 1 scans 4: 3..6
        //    kept: I [7 0 1 .. 6]. Priority 0 scans all 8: 7 is young, kept;
        //    0..6 are not young but dirty: pageout() writes them (WRITTEN,
        //    R cleared) and they are kept: nothing reclaimed. The pass's
        //    writes complete: folio_rotate_reclaimable moves 0..6 to the
        //    tail in issue order, the last written first: I [6 5 .. 0 7].
        //    Nothing was freed, so the reclaim is retried: priority 3 scans
        //    8 >> 3 = 1 page: 6 (written, clean now) is freed; 2 scans
        //    7 >> 2 = 1: 5 is freed; 1 scans 6 >> 1 = 3 in one batch: 4, 3,
        //    2 are freed (5 >= batch 4: done). freed [6 5 4 3 2], I [1 0 7];
        //    8 takes 6.
        // 1, 0: written but not freed: swap-cache hits (minor faults, no
        //    read), mapped again where they are on the list.
        // 9: takes 5. I [1 0 7 8 9], freed [4 3 2].
        let spec = "linux:refault=0:batch=4:swappiness=200:reclaim=batch:writeback=async";
        let mut t: Vec<u32> = (0..9).collect();
        t.extend([1, 0, 9]);
        let (victims, hits, p) = run_lists(spec, 8, 10, &t);
        assert_eq!(victims, [6, 5]);
        assert_eq!(hits, [1, 0]);
        let list = |l: usize| p.lists[l].iter().copied().collect::<Vec<_>>();
        assert_eq!(list(INACTIVE), [1, 0, 7, 8, 9]);
        assert_eq!(p.freed.iter().copied().collect::<Vec<_>>(), [4, 3, 2]);
        // 1 and 0 are mapped again (young) and clean; 7 was never written.
        assert_eq!(p.flags[1], ON_INACTIVE | YOUNG);
        assert_eq!(p.flags[7], ON_INACTIVE | REFERENCED | DIRTY);
        assert_eq!(p.flags[2], SHADOW | FREED);
        // The scan's outcomes, as the kernel's mm_vmscan_lru_shrink_inactive
        // counts them: 1 + 2 + 4 + 8 pages scanned by the first round and
        // 1 + 1 + 3 by the retry; kept for a second trip (young, no
        // PG_referenced): 0, 1, 2, 3..6 and 7, so 8 (nr_ref_keep); freed 5;
        // activated none (no page was found young with PG_referenced).
        let s = p.stats;
        assert_eq!(
            (s.pgscan, s.ref_keep, s.pgsteal, s.pgactivate),
            (20, 8, 5, 0)
        );

        // The engine's count: 10 first touches, 2 swap-cache hits, no major
        // fault; 7 swap-outs, all when reclaim wrote 0..6 (the victims are
        // clean when freed), 2 evictions.
        let pages: Vec<u64> = t.iter().map(|&x| u64::from(x)).collect();
        let c = run_spec(spec, 8, &pages).counters;
        assert_eq!(
            (c.minor_faults, c.swapcache_hits, c.major_faults, c.hits),
            (10, 2, 0, 0)
        );
        assert_eq!((c.swap_outs, c.evictions), (7, 2));
        // Written and freed in one pass (writeback=sync, the default), the
        // first reclaim frees 0..6 and 8 takes 0: 1 is still among the
        // freed pages not taken (a hit, see the module doc), 0 is a major
        // fault.
        let c = run_spec(&spec.replace("async", "sync"), 8, &pages).counters;
        assert_eq!((c.swapcache_hits, c.major_faults, c.hits), (0, 1, 1));
    }

    #[test]
    fn hand_worked_writes_complete_when_the_reclaim_ends() {
        // cap 8, refault off, batch=1, swappiness 200 (a list of n pages
        // is scanned n >> prio pages at priority prio > 0, all at 0),
        // writeback=async; complete=pass (the default) against
        // complete=reclaim. I is the inactive list, tail first; a miss's
        // page goes to its head after the reclaim.
        // 0..7: faults, young and dirty.
        // 8: reclaim. Priority 3 scans 1: 0 kept (R); 2 scans 2: 1, 2
        //    kept; 1 scans 4: 3..6 kept: I [7 0 1 .. 6]. Priority 0 scans
        //    8: 7 kept; 0..6 not young, dirty: written. Nothing freed. In
        //    both modes the writes complete now (after priority 0's pass,
        //    or as the reclaim ends): I [6 5 4 3 2 1 0 7]. The retry's
        //    priority 3 frees 6 (batch 1: done). I [5 4 3 2 1 0 7 8].
        // 9..14: each reclaim frees the next written page at priority 3:
        //    5, 4, 3, 2, 1, 0. I [7 8 .. 14]: 7 has R and no young bit,
        //    8..14 are young; all dirty.
        // 15: priority 3 scans 1: 7 is written.
        //    complete=pass: the pass's write completes, 7 goes to the
        //    tail, and priority 2 (2 pages) frees 7 and keeps 8: done.
        //    I [9 .. 14 8 15].
        //    complete=reclaim: 7 stays under writeback at the head.
        //    Priority 2 keeps 8, 9; 1 keeps 10..13; 0 scans all 8: 14
        //    kept, 7 (written, clean: reclaim has waited for it) freed,
        //    8..13 (R, no young bit, dirty) written. As the reclaim ends
        //    they complete: I [13 12 11 10 9 8 14 15]. 15 takes 7 either
        //    way.
        // 16: complete=pass: priority 3 keeps 9; 2 keeps 10, 11; 1 keeps
        //    12, 13, 14 and writes 8, which completes: I [8 15 9 .. 14];
        //    priority 0 frees 8, keeps 15 and writes 9..14. 16 takes 8.
        //    complete=reclaim: priority 3 frees 13, written and clean.
        let t: Vec<u32> = (0..=16).collect();
        let spec = "linux:refault=0:batch=1:swappiness=200:reclaim=batch:writeback=async";
        let (pass, _, p) = run_lists(spec, 8, 20, &t);
        assert_eq!(pass, [6, 5, 4, 3, 2, 1, 0, 7, 8]);
        // Rotated at completion: 0..6, 7, 8, 9..14.
        assert_eq!(p.stats.pgrotated, 7 + 1 + 1 + 6);
        let spec = format!("{spec}:complete=reclaim");
        let (at_end, _, p) = run_lists(&spec, 8, 20, &t);
        assert_eq!(at_end, [6, 5, 4, 3, 2, 1, 0, 7, 13]);
        // 0..6, then 8..13 (7 was freed before the reclaim ended).
        assert_eq!(p.stats.pgrotated, 7 + 6);
        let list = p.lists[INACTIVE].iter().copied().collect::<Vec<_>>();
        assert_eq!(list, [12, 11, 10, 9, 8, 14, 15, 16]);
    }

    /// A list's pages tail first, as a scan would take them (the
    /// rotated folios, then the queue without its stale entries).
    fn live(p: &TwoLists<false>, l: usize) -> Vec<u32> {
        let Some(c) = p.clock.as_deref() else {
            return p.lists[l].iter().copied().collect();
        };
        let mut stale = c.stale[l].clone();
        let mut out: Vec<u32> = if l == INACTIVE {
            c.rotated.iter().rev().copied().collect()
        } else {
            Vec::new()
        };
        for &q in &p.lists[l] {
            if stale[q as usize] > 0 {
                stale[q as usize] -= 1;
            } else {
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn hand_worked_timed_writeback() {
        // As hand_worked_async_writeback (cap 8, refault off, batch=4,
        // swappiness 200), with the writes on a clock: a reference takes
        // 1 µs, a read 0, the device writes a page every 1 µs; cgroup v1.
        // The clock is pos + stalls.
        // 0..7 fault in (pos 0..7): I (tail first) [0 .. 7], young, dirty.
        // pos 8, page 8, now 8: reclaim. Priorities 3, 2, 1 keep 0..6 as
        //   before, priority 0 keeps 7 and writes 0..6 (kept, under
        //   writeback); the pass ends, its plug is flushed: 0..6 complete
        //   at 9, 10, .., 15. Nothing freed, and none complete by 8: the
        //   throttle sleeps until the 7 writes in flight (fewer than 32)
        //   complete, stall 7, now 15; they were on the inactive list, so
        //   each is rotated to its tail: I [6 5 4 3 2 1 0 7] (the last
        //   written first; the old entries of 0..6 are stale).
        //   The retry: priority 3 scans 1: 6 (clean, not young) freed;
        //   priority 2 scans 7 >> 2 = 1: 5 freed; priority 1 scans 3: 4,
        //   3, 2 freed (5 >= 4). freed [6 5 4 3 2], I [1 0 7]; 8 takes 6.
        // pos 9: 1, written, not freed: a swap-cache hit (young again).
        // pos 10..12: 9, 10, 11 take 5, 4, 3. I [1 0 7 8 9 10 11].
        // pos 13: 12 takes 2; freed is empty now. I [1 0 7 8 .. 12].
        // pos 14: 13, now 14 + 7 = 21: reclaim. Priority 3 scans 1: 1 is
        //   young: kept (R). Priority 2 scans 2: 0 (not young, clean)
        //   freed; 7 (R, not young, dirty) written, kept. Priority 1
        //   scans 3: 8, 9, 10 (young, R not set) kept. Priority 0 scans
        //   all 7 in one batch: 11, 12 young, kept; 1 (R, not young, clean)
        //   freed; 7 is under writeback (it completes at 22, the plug
        //   having been flushed at the end of priority 2): the reclaimer
        //   waits for it, stall 8, now 22, and frees it; 8, 9, 10 (R, not
        //   young, dirty) written. 3 freed, >= 1: done. freed [0 1 7],
        //   I [11 12 8 9 10]; 13 takes 0. The writes of 8, 9, 10 complete at
        //   23, 24, 25.
        let spec = "linux:refault=0:batch=4:swappiness=200:reclaim=batch:writeback=async:\
                    write_us=1:ref_us=1:read_us=0";
        let mut t: Vec<u32> = (0..9).collect();
        t.extend([1, 9, 10, 11, 12, 13]);
        let (victims, hits, p) = run_lists(spec, 8, 14, &t);
        assert_eq!(victims, [6, 5, 4, 3, 2, 0]);
        assert_eq!(hits, [1]);
        assert_eq!(live(&p, INACTIVE), [11, 12, 8, 9, 10, 13]);
        assert_eq!(p.freed.iter().copied().collect::<Vec<_>>(), [1, 7]);
        let c = p.clock.as_deref().unwrap();
        assert_eq!((c.stall_us, c.throttled_us, c.waited_us), (8.0, 7.0, 1.0));
        assert_eq!((c.waits, c.rotations), (1, 7));
        let under: Vec<u32> = (0..14)
            .filter(|&i| c.state[i as usize] & UNDER_WB != 0)
            .collect();
        assert_eq!(under, [8, 9, 10]);
        assert_eq!(
            c.inflight.iter().map(|&(_, d)| d).collect::<Vec<_>>(),
            [23.0, 24.0, 25.0]
        );

        // The engine's count: 14 first touches, 1 swap-cache hit, no
        // major fault; swap-outs 0..6, 7, 8, 9, 10 when written; 6
        // evictions.
        let pages: Vec<u64> = t.iter().map(|&x| u64::from(x)).collect();
        let r = run_spec(spec, 8, &pages);
        let c = r.counters;
        assert_eq!(
            (c.minor_faults, c.swapcache_hits, c.major_faults, c.hits),
            (14, 1, 0, 0)
        );
        assert_eq!((c.swap_outs, c.evictions), (11, 6));
        let w = r.reclaim.unwrap();
        assert_eq!((w.pgrotated, w.waits), (7, 1));
        assert!((w.wait_s - 1e-6).abs() < 1e-12 && (w.throttle_s - 7e-6).abs() < 1e-12);
        // The kernel's counters, from the walk-through above: two reclaims;
        // the first scanned 1 + 2 + 4 + 8 pages, then 1 + 1 + 3 in its
        // retry, the second 1 + 2 + 3 + 7; freed 5 and 3; nothing
        // activated (no scan met a young page with PG_referenced), no
        // active list.
        assert_eq!(
            (
                w.reclaims,
                w.pgscan,
                w.pgsteal,
                w.pgactivate,
                w.pgdeactivate
            ),
            (2, 33, 8, 0, 0)
        );
        // Without the clock nothing waits.
        let u = run_spec("linux:reclaim=batch:writeback=async", 8, &pages)
            .reclaim
            .unwrap();
        assert_eq!((u.waits, u.wait_s, u.throttle_s), (0, 0.0, 0.0));

        // cgroup v2 never waits on a folio: a scan that meets one under
        // writeback activates it. In the second reclaim 7 goes to the
        // active list and is not freed; the throttle is what lets the
        // first end.
        let v2 = format!("{spec}:memcg=v2");
        let (_, _, p) = run_lists(&v2, 8, 14, &t);
        let c = p.clock.as_deref().unwrap();
        assert_eq!((c.waits, c.waited_us), (0, 0.0));
        assert!(c.throttled_us >= 7.0, "{}", c.throttled_us);
    }

    #[test]
    fn hand_worked_scan_time() {
        // hand_worked_timed_writeback again, with the reclaimer's CPU on
        // the clock: 0.5 µs a page scanned.
        // First reclaim (pos 8, now 8): priorities 3, 2, 1, 0 scan 1 + 2 +
        //   4 + 8 pages (now 15.5) and write 0..6, submitted at 15.5: they
        //   complete at 16.5 .. 22.5. Nothing freed: the throttle sleeps
        //   to 22.5 (7 µs) and rotates them; the retry scans 5 (now 25)
        //   and frees 6, 5, 4, 3, 2. Stall 17.
        // pos 14, now 31: priority 3 scans 1 (31.5, kept); priority 2
        //   scans 0 (32, freed) and 7 (32.5, written; the pass's plug is
        //   flushed at 32.5: 7 completes at 33.5); priority 1 scans 8
        //   (33), 9 (33.5: 7's write completes, and 7, on the inactive
        //   list, is rotated to its tail) and 10 (34), all kept;
        //   priority 0 scans 7 pages from the rotated tail: 7 (34.5,
        //   clean: freed), 11 and 12 (young: kept), 1 (R, clean: freed),
        //   8, 9, 10 (written). Stall 17 + 6.5 = 23.5.
        // Without the scan time 7 was still under writeback when the scan
        // met it: v1 waited 1 µs for it, v2 activated it. With it, both
        // free it, and v1 and v2 run alike.
        let spec = "linux:refault=0:batch=4:swappiness=200:reclaim=batch:writeback=async:\
                    write_us=1:ref_us=1:read_us=0:scan_us=0.5";
        let mut t: Vec<u32> = (0..9).collect();
        t.extend([1, 9, 10, 11, 12, 13]);
        for memcg in ["v1", "v2"] {
            let (victims, hits, p) = run_lists(&format!("{spec}:memcg={memcg}"), 8, 14, &t);
            assert_eq!(victims, [6, 5, 4, 3, 2, 0], "{memcg}");
            assert_eq!(hits, [1]);
            assert_eq!(p.freed.iter().copied().collect::<Vec<_>>(), [7, 1]);
            let c = p.clock.as_deref().unwrap();
            assert_eq!((c.stall_us, c.throttled_us, c.waited_us), (23.5, 7.0, 0.0));
            assert_eq!((c.waits, c.rotations), (0, 8));
            let w = p.stats;
            // Scanned 15 + 5, then 1 + 2 + 3 + 7; nothing activated.
            assert_eq!((w.pgscan, w.pgsteal, w.pgactivate), (33, 8, 0), "{memcg}");
        }
        // Without it, v2 activates 7 (and v1 waits for it, above).
        let v2 = spec.replace(":scan_us=0.5", ":memcg=v2");
        let (_, _, p) = run_lists(&v2, 8, 14, &t);
        assert_eq!(p.stats.pgactivate, 1);
    }

    #[test]
    fn async_writeback_keeps_part_of_a_loop() {
        // A loop of 110 pages over 100 of memory, 6 passes: under the
        // per-page model every reference after the first pass is a major
        // fault, as for LRU; with asynchronous writeback part of them are
        // swap-cache hits (pages a reclaim wrote ahead of what it freed),
        // and the writes are counted when made.
        let pages: Vec<u64> = (0..6).flat_map(|_| 0..110u64).collect();
        let run = |s: &str| run_spec(s, 100, &pages).counters;
        let page = run("linux:refault=0");
        let sync = run("linux:refault=0:reclaim=batch");
        let wb = run("linux:refault=0:reclaim=batch:writeback=async");
        eprintln!("{page:?}\n{sync:?}\n{wb:?}");
        assert_eq!(page.major_faults, 5 * 110);
        assert_eq!((sync.swapcache_hits, page.swapcache_hits), (0, 0));
        assert!(wb.swapcache_hits > 0 && wb.major_faults < sync.major_faults);
        assert_eq!(
            wb.hits + wb.swapcache_hits + wb.major_faults + wb.minor_faults,
            6 * 110
        );
    }

    #[test]
    fn params_are_checked() {
        // Flags 1 + shadow age 4; the queues (4 bytes per resident page)
        // are still empty.
        assert_eq!(build("linux").unwrap(), 5);
        assert_eq!(build("linux:refault=0").unwrap(), 1);
        assert!(build("linux:ratio=0").is_err());
        assert!(build("linux:refault=2").is_err());
        assert!(build("linux:m=2").is_err());
        assert!(build("linux:reclaim=page").is_ok());
        assert!(build("linux:reclaim=pages").is_err());
        assert!(build("linux:batch=0").is_err());
        assert!(build("linux:swappiness=0").is_err());
        assert!(build("linux:swappiness=201").is_err());
        assert!(build("linux:reclaim=batch:writeback=async").is_ok());
        assert!(build("linux:reclaim=batch:writeback=sync").is_ok());
        assert!(build("linux:reclaim=batch:writeback=later").is_err());
        // The writes are those of reclaim's priority passes.
        assert!(build("linux:writeback=async").is_err());
        // When they complete without a clock: after each pass, or when
        // the reclaim ends; a clock decides with write_us.
        assert!(build("linux:reclaim=batch:writeback=async:complete=pass").is_ok());
        assert!(build("linux:reclaim=batch:writeback=async:complete=reclaim").is_ok());
        assert!(build("linux:reclaim=batch:writeback=async:complete=never").is_err());
        assert!(build("linux:reclaim=batch:complete=reclaim").is_err());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=1:complete=reclaim").is_err());
        // The writes' clock: write_us with writeback=async; the other
        // clock keys only with write_us.
        assert!(build("linux:reclaim=batch:writeback=async:write_us=3.2:ref_us=0.5").is_ok());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=1:memcg=v2").is_ok());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=1:memcg=v3").is_err());
        assert!(build("linux:reclaim=batch:writeback=async:ref_us=1").is_err());
        assert!(build("linux:reclaim=batch:writeback=async:scan_us=1").is_err());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=1:scan_us=2.5").is_ok());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=1:scan_us=-1").is_err());
        assert!(build("linux:reclaim=batch:write_us=1").is_err());
        assert!(build("linux:reclaim=batch:writeback=async:write_us=-1").is_err());
        // write_us=0 runs the clock with writes that take no device time
        // (a profile may measure 0): the other keys go with it.
        assert!(build("linux:reclaim=batch:writeback=async:write_us=0:ref_us=1").is_ok());
        // linux-rrip keeps one page a miss and takes none of these.
        assert!(build("linux-rrip:reclaim=page").is_err());
    }

    #[test]
    fn contract() {
        contract_all("linux");
        contract_all("linux:refault=0");
        contract_all("linux:ratio=5");
        contract_all("linux:batch=1:reclaim=batch");
        contract_all("linux:reclaim=batch");
        contract_all("linux:batch=100:swappiness=200:reclaim=batch");
        contract_all("linux:reclaim=page");
        contract_all("linux:reclaim=page:refault=0");
        contract_all("linux:reclaim=batch:writeback=async");
        contract_all("linux:batch=1:reclaim=batch:writeback=async");
        for clock in [
            "write_us=0.5:ref_us=0.1:read_us=50",
            "write_us=40:ref_us=0.01",
            "write_us=3:ref_us=0.2:read_us=20:memcg=v2",
            "write_us=100:memcg=v2",
            "write_us=3:ref_us=0.2:read_us=20:scan_us=1:memcg=v2",
            "write_us=3:ref_us=0.2:read_us=20:scan_us=0.5",
        ] {
            contract_all(&format!("linux:reclaim=batch:writeback=async:{clock}"));
            contract_all(&format!(
                "linux:batch=1:reclaim=batch:writeback=async:{clock}"
            ));
        }
    }
}
