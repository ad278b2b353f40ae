//! Linux's classic active/inactive LRU lists for anonymous memory, as in
//! Linux 6.1 (`mm/vmscan.c`, `mm/swap.c`, `mm/workingset.c`) with the
//! multi-generational LRU (MGLRU) disabled.
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
//!   pages` (the workingset size is `NR_ACTIVE_ANON` when there are no file
//!   pages).
//! * **Reclaim**, one page per miss once memory is full:
//!   1. Deactivation: while `inactive_is_low()` — `inactive × ratio <
//!      active` with `ratio = int_sqrt(10 × GB)` (1 below 1 GB), GB being
//!      the size of both anon lists at 4 KiB per page, i.e. `capacity >>
//!      18` — the folio at the active tail moves to the inactive head and
//!      its young bit is cleared (`shrink_active_list`: for anonymous
//!      folios, `folio_referenced()` clears the young bits but a referenced
//!      anon folio is deactivated anyway; `PG_referenced` is left as is).
//!   2. The folio at the inactive tail goes through
//!      `folio_check_references()`: if its young bit is set, the bit is
//!      cleared and `PG_referenced` is set; if `PG_referenced` was already
//!      set the folio is **activated** (moved to the active head), else it is
//!      **kept** (rotated to the inactive head) for "another trip around the
//!      inactive list". If the young bit is clear the folio is **reclaimed**
//!      (for anon folios `PG_referenced` alone does not save it) — that is
//!      the victim. Steps 1–2 repeat until a victim is found; this always
//!      terminates because every step either evicts or clears a young bit.
//!
//! So a page must be referenced in two separate trips through the inactive
//! list (the fault counts as the first) to reach the active list, and a
//! deactivated page that is referenced again before it reaches the
//! inactive tail is reactivated at once (it still has `PG_referenced`):
//! "recently deactivated but used folios are quickly recovered".
//!
//! Simplifications (documented, not modelled): one lruvec (no memcg
//! hierarchy, no NUMA nodes); no file pages (so `swappiness` and the
//! anon/file scan balance do not apply); one page reclaimed per miss, not
//! batches of `SWAP_CLUSTER_MAX` (32) to a watermark, and deactivation keeps
//! the lists exactly at the target ratio rather than scanning the active list
//! in proportion to its size and the reclaim priority; deactivation is not
//! forced by refaults (6.1 also sets `may_deactivate` when anon refaults
//! activated pages since the last cycle); no per-CPU `folio_batch` delay
//! before a new folio reaches its list; single-mapped pages only (so
//! `referenced_ptes > 1` never activates); shadow entries are never dropped
//! (the kernel's shadow-node shrinker may forget old ones) and
//! `nonresident_age` is a wrapping 32-bit counter at full precision
//! (no `bucket_order`). Param `ratio=N` overrides the inactive ratio.
//!
//! **Data structure.** Pages only ever leave a list at its tail (reclaim,
//! deactivation and rotation all take the tail; a hit moves nothing), and
//! only ever enter at a head. So each list is a plain FIFO queue of page ids
//! (a `VecDeque<u32>`, tail at the queue's front) rather than a linked list:
//! no per-page links, no neighbour updates, and the queues are read
//! sequentially. The list a page is on lives in its state byte, which is
//! all a hit reads or writes (the engine's prefetch hint brings it in
//! early). Reclaim and deactivation prefetch the state of the pages a few
//! places ahead of the tail, so that scanning overlaps their cache misses.
//!
//! Memory: 1 state byte (list, young, `PG_referenced`, shadow) and, with
//! `refault=1`, a 4-byte eviction age per page: 5 bytes per page (1 with
//! `refault=0`), plus the queues, 4 bytes per resident page (their
//! capacity grows in powers of two). With 1/8 of the pages resident, as in
//! `tests/memory.rs`, that is 6 bytes per page (13 with the linked lists
//! this replaced). A hit reads one byte.
use crate::engine::SimError;
use crate::policy::{Access, Policy, PolicyConfig, PolicyInfo, Req};
use crate::util::prefetch;
use std::collections::VecDeque;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "linux",
    summary: "Linux 6.1 active/inactive anon LRU lists (PTE young bit, PG_referenced, refault activation)",
    params: "ratio=N (inactive ratio, default int_sqrt(10*GB) or 1), refault=0|1 (default 1)",
    needs_future: false,
    build: |c| {
        c.params.allow("linux", &["ratio", "refault"])?;
        Ok(Box::new(TwoLists::<false>::new(c, 0)?))
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
}

impl<const RRIP: bool> TwoLists<RRIP> {
    /// Reads `ratio` and `refault`; `m` is the RRPV width (RRIP only).
    pub(crate) fn new(c: &PolicyConfig, m: u32) -> Result<Self, SimError> {
        let ratio = c
            .params
            .int("ratio", default_ratio(c.capacity), 1, 1_000_000)?;
        let refault = c.params.int("refault", 1, 0, 1)? == 1;
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
        })
    }

    #[inline]
    fn inactive_is_low(&self) -> bool {
        (self.lists[INACTIVE].len() as u64).saturating_mul(self.ratio)
            < self.lists[ACTIVE].len() as u64
    }

    /// Takes the tail of `list`, prefetching the state of the page
    /// `SCAN_AHEAD` places behind it (a hint only: it changes nothing).
    #[inline]
    fn pop_tail(&mut self, list: usize) -> Option<u32> {
        let q = &mut self.lists[list];
        if let Some(&n) = q.get(SCAN_AHEAD) {
            prefetch(self.flags.as_ptr().wrapping_add(n as usize));
            if RRIP && list == ACTIVE {
                prefetch(self.rrpv.as_ptr().wrapping_add(n as usize));
            }
        }
        q.pop_front()
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
            let i = t as usize;
            let f = self.flags[i];
            if f & YOUNG != 0 {
                // folio_check_references: referenced_ptes > 0.
                self.flags[i] = (f & !YOUNG) | REFERENCED;
                if f & REFERENCED != 0 {
                    self.mark_active(t);
                    self.lists[ACTIVE].push_back(t);
                } else {
                    self.lists[INACTIVE].push_back(t);
                }
                continue;
            }
            self.flags[i] = SHADOW;
            if let Some(s) = self.shadow.get_mut(i) {
                *s = self.age;
            }
            self.age = self.age.wrapping_add(1);
            return Some(t);
        }
    }
}

impl<const RRIP: bool> Policy for TwoLists<RRIP> {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        let i = id as usize;
        let f = self.flags[i];
        if f & RESIDENT != 0 {
            self.flags[i] = f | YOUNG;
            if RRIP && f & ON_ACTIVE != 0 {
                self.rrpv[i] = 0;
            }
            return Access::Hit;
        }
        self.fault_in(id, YOUNG)
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

    /// MADV_PAGEOUT (`reclaim_pages`): the folios are reclaimed at once,
    /// leaving shadow entries as any eviction does.
    fn remove(&mut self, ids: &[u32]) {
        for &id in ids {
            let i = id as usize;
            self.flags[i] = SHADOW;
            if let Some(s) = self.shadow.get_mut(i) {
                *s = self.age;
            }
            self.age = self.age.wrapping_add(1);
        }
        // Their queue entries go in one pass (a page is on a list iff its
        // flags say so).
        for (l, bit) in [(INACTIVE, ON_INACTIVE), (ACTIVE, ON_ACTIVE)] {
            let flags = &self.flags;
            self.lists[l].retain(|&p| flags[p as usize] & bit != 0);
        }
    }

    /// MADV_COLD (`madvise_cold_or_pageout_pte_range`): the young bit and
    /// `PG_referenced` are cleared, and active folios move to the inactive
    /// head (`folio_deactivate`); inactive folios stay where they are.
    fn demote(&mut self, ids: &[u32]) {
        let mut moved = Vec::new();
        for &id in ids {
            let i = id as usize;
            let f = self.flags[i] & !(YOUNG | REFERENCED);
            if f & ON_ACTIVE != 0 {
                self.flags[i] = (f & !ON_ACTIVE) | ON_INACTIVE;
                moved.push(id);
            } else {
                self.flags[i] = f;
            }
        }
        if !moved.is_empty() {
            let flags = &self.flags;
            self.lists[ACTIVE].retain(|&p| flags[p as usize] & ON_ACTIVE != 0);
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
        let queues: usize = self.lists.iter().map(|q| 4 * q.capacity()).sum();
        let per_page = self.flags.len() + self.rrpv.len() + 4 * self.shadow.len();
        (per_page + queues).div_ceil(pages)
    }
}

impl<const RRIP: bool> TwoLists<RRIP> {
    /// A fault (`young` = YOUNG) or a readahead (`young` = 0) brings `id` in.
    #[inline(always)]
    fn fault_in(&mut self, id: u32, young: u8) -> Access {
        let i = id as usize;
        let f = self.flags[i];
        let victim = if self.lists[INACTIVE].len() + self.lists[ACTIVE].len() >= self.cap {
            self.reclaim()
        } else {
            None
        };
        // workingset_refault: activate if the refault distance fits in the active list.
        let refault_active = f & SHADOW != 0
            && self
                .shadow
                .get(i)
                .is_some_and(|&s| self.age.wrapping_sub(s) as usize <= self.lists[ACTIVE].len());
        if refault_active {
            self.flags[i] = young;
            self.mark_active(id);
            self.lists[ACTIVE].push_back(id);
        } else {
            self.flags[i] = young | ON_INACTIVE;
            self.lists[INACTIVE].push_back(id);
        }
        Access::Miss { victim }
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
            hits("linux:refault=0", 3, &t),
            vec![m, m, m, m, h, h, m, h, m]
        );
        // LRU keeps b (the last reference hits), so the difference is real.
        assert_eq!(hits("lru", 3, &t)[8], h);
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
        assert_eq!(hits("linux", 4, &t), on);
        assert_eq!(hits("linux:refault=0", 4, &t), off);
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
            let spec = PolicySpec::parse(&format!("linux:refault=0:ratio={ratio}")).unwrap();
            let cfg = PolicyConfig {
                capacity: 50,
                pages: 52,
                params: &spec.params,
                seed: 1,
            };
            let mut p = TwoLists::<false>::new(&cfg, 0).unwrap();
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
        let spec = PolicySpec::parse("linux:refault=0").unwrap();
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
            let mut p = TwoLists::<false>::new(&cfg, 0).unwrap();
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
        let mut p = TwoLists::<false>::new(&cfg, 0).unwrap();
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
        let spec = PolicySpec::parse("linux:refault=0").unwrap();
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
        let mut p = TwoLists::<false>::new(&cfg, 0).unwrap();
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

    #[test]
    fn params_are_checked() {
        // Flags 1 + shadow age 4; the queues (4 bytes per resident page)
        // are still empty.
        assert_eq!(build("linux").unwrap(), 5);
        assert_eq!(build("linux:refault=0").unwrap(), 1);
        assert!(build("linux:ratio=0").is_err());
        assert!(build("linux:refault=2").is_err());
        assert!(build("linux:m=2").is_err());
    }

    #[test]
    fn contract() {
        contract_all("linux");
        contract_all("linux:refault=0");
        contract_all("linux:ratio=5");
    }
}
