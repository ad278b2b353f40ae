//! `hybrid:FAST+SLOW:rules=prio:fast=SIZE`: the kernel's own tiering of
//! two swap areas of different priority (`swapon -p 10 fast; swapon -p 5
//! slow`), the baseline the hybrid-swap study improved on. No page is
//! placed by what it is: every swap-out goes to the fast area while it has
//! a free slot, and to the slow one when it is full.
//!
//! What the kernel does (mm/swapfile.c): `folio_alloc_swap` (6.15 on;
//! `get_swap_pages` before) walks `swap_avail_head`, a plist of the areas
//! by priority, and takes a slot from the first area that has one
//! (`cluster_alloc_swap_entry`); equal priorities take turns
//! (`plist_requeue`). A full area leaves the list (`del_from_avail_list`,
//! from `swap_range_alloc`) and comes back when a slot of it is freed
//! (`swap_range_free` → `add_to_avail_list`). A slot is freed when its last
//! reference goes: here, when a page swapped back in is written
//! (`do_wp_page` → `folio_free_swap`; `do_swap_page` does it at once for a
//! write fault through `should_try_to_free_swap`). The slow area therefore
//! starts filling when the fast one is full, and slots freed in the fast
//! area take swap-outs back there (once the current cluster, below, is
//! used up). Equal priorities (round robin) are not modelled: the two
//! devices are two tiers.
//!
//! Model: the fast device holds at most `fast` slots. A swap-out takes
//! the next free slot of the current cluster (`cluster` slots, 512 by
//! default: SWAPFILE_CLUSTER with THP swap on x86-64) while it has one, as
//! 6.15's `swap_alloc_fast` takes it from the CPU's cached cluster
//! (`percpu_swap_cluster`) — *on whichever device that cluster is*. When
//! the cluster is used up, `swap_alloc_slow` asks the devices by priority:
//! the first with a free slot gives its lowest wholly free cluster, else
//! its lowest partly used one (`cluster_alloc_swap_entry`: free, then
//! nonfull and fragmented clusters), which becomes the current cluster.
//! So the slow device starts filling when the fast one is full, and after
//! fast slots are freed the slow device still takes the rest of its
//! current cluster (up to `cluster` − 1 writes) before the fast one is
//! used again. `cluster=1` is the plain rule: a freed fast slot takes the
//! very next swap-out. A page stays where it was written until its slot
//! is freed (the engine's `free`: a write after swap-in); the kernel moves
//! no page between areas either. Reads go to the device holding the page.
//!
//! Simplified, and why:
//! * `fast=SIZE` is the area's size: SIZE/4096 − 1 slots, as `swapon`
//!   keeps the first page for the swap header (a 16 MiB file shows 16380 K
//!   in /proc/swaps; slot 0 counts as used in cluster 0, which is never
//!   wholly free). The slow device is unbounded: a full slow area means
//!   the kernel has no swap left, which the engine does not model.
//! * One CPU: the kernel keeps a current cluster per CPU, and reclaim runs
//!   on whichever CPU the faulting task (or kswapd) is on. The engine has
//!   one reclaimer.
//! * Only solid-state areas get a per-CPU cluster (`SWP_SOLIDSTATE`); a
//!   rotational area allocates from its `global_cluster` and its writes
//!   do not keep the CPU away from the fast area: for a rotational slow
//!   area `cluster=1` is the closer model. Kernels before 6.15 instead
//!   cache SWAP_BATCH = 64 slots per CPU (swap_slots.c, filled by
//!   `get_swap_pages` from one area), which `cluster=64` approximates.
//!   Only the default has been checked against a kernel (6.18, two zram
//!   areas: crates/lab/tests/it/swap_tiers.rs).
//! * Within a cluster slots are taken in order from the current position,
//!   as `alloc_swap_scan_cluster` does; which clusters are free or partly
//!   used is tracked, their list order is not (lowest first here, list
//!   order in the kernel). Which device takes a write does not depend on
//!   it.
//! * Slots are freed only where the engine frees them. The kernel also
//!   frees a slot at swap-in when swap is more than half full
//!   (`mem_cgroup_swap_full` / `vm_swap_full` in `should_try_to_free_swap`),
//!   and always on a synchronous device (zram: `SWP_SYNCHRONOUS_IO` skips
//!   the swap cache), after which a clean page is written again when it is
//!   evicted. For a program that writes every page it touches, the two
//!   agree.
use super::{DevStats, Device, DeviceSpec, HybridStats, Io, PAGE_BYTES};
use crate::error::SimError;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

/// Builds `hybrid:A+B:rules=prio:fast=SIZE` (the parts are checked by
/// [`super::hybrid::build`]).
pub(crate) fn build(spec: &DeviceSpec) -> Result<Box<dyn Device>, SimError> {
    let p = &spec.params;
    p.allow_for(
        "device",
        "hybrid:…:rules=prio",
        &["rules", "fast", "cluster"],
    )?;
    let text = p.0.get("fast").ok_or_else(|| {
        SimError::BadParam(
            "rules=prio needs the fast area's size, e.g. hybrid:ssd+hdd:rules=prio:fast=16M".into(),
        )
    })?;
    let bytes = swaplab_trace::units::parse_bytes(text)
        .map_err(|e| SimError::BadParam(format!("fast={text}: {e}")))?;
    let pages = bytes / PAGE_BYTES;
    if pages < 2 {
        return Err(SimError::BadParam(format!(
            "fast={text}: a swap area needs at least 2 pages (one is its header)"
        )));
    }
    Ok(Box::new(Tiers::new(
        spec.parts[0].build()?,
        spec.parts[1].build()?,
        pages - 1,
        p.int("cluster", 512, 1, 1 << 20)?,
    )))
}

/// The slots of one device in clusters of `n` (the kernel's
/// `swap_cluster_info`, SWAPFILE_CLUSTER slots each). Slot 0 is the swap
/// header: always in use, so cluster 0 is never wholly free.
#[derive(Debug)]
struct Area {
    n: u64,
    /// Slots 1..=cap can hold pages (`u64::MAX`: unbounded).
    cap: u64,
    used: Vec<bool>,
    /// Slots in use per cluster (the header counted).
    count: Vec<u64>,
    /// Clusters wholly free, among the first `count.len()`; those after
    /// them are free too.
    free: BTreeSet<u64>,
    /// Clusters partly used.
    partial: BTreeSet<u64>,
}

impl Area {
    fn new(cap: u64, n: u64) -> Self {
        let mut a = Area {
            n,
            cap,
            used: Vec::new(),
            count: Vec::new(),
            free: BTreeSet::new(),
            partial: BTreeSet::new(),
        };
        a.grow(0);
        a.take(0);
        a
    }
    /// Slots of cluster `c` (header included).
    fn size(&self, c: u64) -> u64 {
        self.n
            .min((self.cap.saturating_add(1)).saturating_sub(c * self.n))
    }
    /// Makes cluster `c` exist.
    fn grow(&mut self, c: u64) {
        while self.count.len() as u64 <= c {
            let k = self.count.len() as u64;
            self.count.push(0);
            self.used.resize(((k + 1) * self.n) as usize, false);
            self.free.insert(k);
        }
    }
    fn take(&mut self, slot: u64) {
        let c = slot / self.n;
        self.used[slot as usize] = true;
        self.count[c as usize] += 1;
        self.free.remove(&c);
        if self.count[c as usize] == self.size(c) {
            self.partial.remove(&c);
        } else {
            self.partial.insert(c);
        }
    }
    fn release(&mut self, slot: u64) {
        let c = slot / self.n;
        self.used[slot as usize] = false;
        self.count[c as usize] -= 1;
        if self.count[c as usize] == 0 {
            self.partial.remove(&c);
            self.free.insert(c);
        } else {
            self.partial.insert(c);
        }
    }
    /// The first free slot in `from..end` (within the area), taken.
    fn scan(&mut self, from: u64, end: u64) -> Option<u64> {
        let end = end.min(self.cap.saturating_add(1));
        let s = (from..end).find(|&s| !self.used[s as usize])?;
        self.take(s);
        Some(s)
    }
    /// A cluster to allocate from: the lowest wholly free one, else the
    /// lowest partly used one; `None` when the area is full.
    fn pick(&mut self) -> Option<u64> {
        let fresh = self.count.len() as u64;
        let c = match self.free.first() {
            Some(&c) => Some(c),
            None if fresh * self.n <= self.cap => Some(fresh),
            None => self.partial.first().copied(),
        }?;
        self.grow(c);
        Some(c)
    }
}

pub(crate) struct Tiers {
    fast: Box<dyn Device>,
    slow: Box<dyn Device>,
    /// The two areas' slots (fast, slow).
    areas: [Area; 2],
    /// The CPU's current cluster: area (1 = slow), next slot, its end.
    current: Option<(usize, u64, u64)>,
    /// Where each page's swap copy is: area, slot.
    at: FxHashMap<u32, (usize, u64)>,
    writes: [u64; 2],
    /// The write (counted from 1 over both devices) that was the slow
    /// device's first.
    slow_from: Option<u64>,
}

impl Tiers {
    fn new(fast: Box<dyn Device>, slow: Box<dyn Device>, fast_slots: u64, cluster: u64) -> Self {
        Tiers {
            fast,
            slow,
            areas: [Area::new(fast_slots, cluster), Area::new(u64::MAX, cluster)],
            current: None,
            at: FxHashMap::default(),
            writes: [0, 0],
            slow_from: None,
        }
    }

    /// A slot for a swap-out: on from the current cluster while it has
    /// one (`swap_alloc_fast`), else from the first area by priority that
    /// has one (`swap_alloc_slow`), whose cluster becomes the current one.
    fn alloc(&mut self) -> (usize, u64) {
        if let Some((a, next, end)) = self.current {
            if let Some(s) = self.areas[a].scan(next, end) {
                self.current = Some((a, s + 1, end));
                return (a, s);
            }
        }
        for a in 0..2 {
            let area = &mut self.areas[a];
            if let Some(c) = area.pick() {
                let (lo, hi) = (c * area.n, (c + 1) * area.n);
                let s = area.scan(lo, hi).expect("a picked cluster has a free slot");
                self.current = Some((a, s + 1, hi));
                return (a, s);
            }
        }
        unreachable!("the slow area is unbounded")
    }

    fn dev(&mut self, a: usize) -> &mut dyn Device {
        if a == 0 {
            self.fast.as_mut()
        } else {
            self.slow.as_mut()
        }
    }
}

impl Device for Tiers {
    fn read(&mut self, io: Io, now: f64) -> f64 {
        match self.at.get(&io.id) {
            Some(&(a, slot)) => self.dev(a).read(Io { slot, ..io }, now),
            None => self.fast.read(io, now),
        }
    }
    fn write(&mut self, io: Io, now: f64) -> f64 {
        // A page that still holds a slot is written over it, where it is.
        let (a, slot) = match self.at.get(&io.id) {
            Some(&at) => at,
            None => {
                let at = self.alloc();
                self.at.insert(io.id, at);
                at
            }
        };
        self.writes[a] += 1;
        if a == 1 && self.slow_from.is_none() {
            self.slow_from = Some(self.writes[0] + self.writes[1]);
        }
        self.dev(a).write(Io { slot, ..io }, now)
    }
    fn free(&mut self, io: Io) {
        if let Some((a, slot)) = self.at.remove(&io.id) {
            self.areas[a].release(slot);
            self.dev(a).free(Io { slot, ..io });
        }
    }
    fn stats(&self) -> Vec<DevStats> {
        let mut v = self.fast.stats();
        v.extend(self.slow.stats());
        v
    }
    fn hybrid(&self) -> Option<HybridStats> {
        let [fast, slow] = self.writes;
        Some(HybridStats {
            rules: "prio".into(),
            fast_writes: fast,
            disk_writes: slow,
            fast_writes_saved: if fast + slow == 0 {
                0.0
            } else {
                slow as f64 / (fast + slow) as f64
            },
            slow_from_write: self.slow_from,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(spec: &str) -> Box<dyn Device> {
        DeviceSpec::parse(spec, None).unwrap().build().unwrap()
    }

    fn io(id: u32) -> Io {
        Io {
            id,
            vpn: u64::from(id),
            slot: 0,
        }
    }

    /// Where each page is, by hand, without the per-CPU cluster
    /// (cluster=1: first fit, a freed fast slot taken at once): fast=16K
    /// is 4 pages, one of them the header: 3 fast slots.
    #[test]
    fn the_fast_device_fills_first_and_freed_slots_are_taken_back_first_fit() {
        let mut t = Tiers::new(dev("ssd"), dev("hdd"), 3, 1);
        // Pages 1 2 3 fill the 3 fast slots; 4 and 5 go to the slow
        // device, 4 being the 4th write: the slow device starts there.
        for id in 1..=5 {
            t.write(io(id), 0.0);
        }
        let where_ = |t: &Tiers, id| t.at.get(&id).copied();
        assert_eq!(where_(&t, 1), Some((0, 1)));
        assert_eq!(where_(&t, 3), Some((0, 3)));
        assert_eq!(where_(&t, 4), Some((1, 1)));
        assert_eq!(where_(&t, 5), Some((1, 2)));
        assert_eq!(t.hybrid().unwrap().slow_from_write, Some(4));
        // 3 and 1 are swapped in and written (their fast slots 3 and 1
        // freed), 4 too (slow slot 1 freed). The next swap-out, 6, takes
        // the lowest free fast slot, 1; 7 takes 3; 8 finds the fast
        // device full again and takes the slow device's freed slot 1.
        for id in [3, 1, 4] {
            t.read(io(id), 0.0);
            t.free(io(id));
        }
        for id in 6..=8 {
            t.write(io(id), 0.0);
        }
        assert_eq!(where_(&t, 6), Some((0, 1)));
        assert_eq!(where_(&t, 7), Some((0, 3)));
        assert_eq!(where_(&t, 8), Some((1, 1)));
        // Writes: fast 1 2 3 6 7, slow 4 5 8; reads: fast 3 and 1, slow 4.
        let s = t.hybrid().unwrap();
        assert_eq!((s.fast_writes, s.disk_writes), (5, 3));
        assert!((s.fast_writes_saved - 3.0 / 8.0).abs() < 1e-12);
        let d = t.stats();
        assert_eq!((d[0].name.as_str(), d[0].writes, d[0].reads), ("ssd", 5, 2));
        assert_eq!((d[1].name.as_str(), d[1].writes, d[1].reads), ("hdd", 3, 1));
    }

    /// With clusters of 4 slots: the current cluster is used up before
    /// the fast device is asked again, even on the slow device.
    #[test]
    fn the_current_cluster_is_used_up_first_even_on_the_slow_device() {
        // 7 fast slots: cluster 0 = header + 1..=3, cluster 1 = 4..=7.
        let mut t = Tiers::new(dev("ssd"), dev("hdd"), 7, 4);
        let where_ = |t: &Tiers, id| t.at.get(&id).copied();
        // A wholly free cluster first (1: slots 4..=7), then the partly
        // used cluster 0 (1..=3); then the slow device's first free
        // cluster, 1 (its cluster 0 holds its header): write 8 at slot 4.
        for id in 1..=8 {
            t.write(io(id), 0.0);
        }
        let at: Vec<_> = (1..=8).map(|id| where_(&t, id).unwrap()).collect();
        assert_eq!(
            at,
            [
                (0, 4),
                (0, 5),
                (0, 6),
                (0, 7),
                (0, 1),
                (0, 2),
                (0, 3),
                (1, 4)
            ]
        );
        assert_eq!(t.hybrid().unwrap().slow_from_write, Some(8));
        // 1 and 2 free fast slots 4 and 5, but 9 10 11 still go to the
        // slow device's current cluster (slots 5 6 7); with it used up,
        // 12 and 13 go back to the fast device's freed 4 and 5; 14 finds
        // it full and the slow device's next wholly free cluster (2).
        for id in [1, 2] {
            t.read(io(id), 0.0);
            t.free(io(id));
        }
        for id in 9..=14 {
            t.write(io(id), 0.0);
        }
        let at: Vec<_> = (9..=14).map(|id| where_(&t, id).unwrap()).collect();
        assert_eq!(at, [(1, 5), (1, 6), (1, 7), (0, 4), (0, 5), (1, 8)]);
        let s = t.hybrid().unwrap();
        assert_eq!((s.fast_writes, s.disk_writes), (9, 5));
    }

    /// Through the engine: LRU over 2 pages, every reference a write, and
    /// a fast area of 16K (3 slots).
    #[test]
    fn a_hand_worked_run_through_the_engine() {
        use crate::device::{Costs, FaultPath};
        use crate::engine::{simulate_costed, Extras};
        use crate::policy::PolicySpec;
        // cluster=1 (no per-CPU cluster, see the next assertion).
        // 0 1: first touches. 2 3 4 evict 0 1 2 into fast slots 1 2 3
        // (writes 1-3). 5 evicts 3: the fast device is full, 3 goes to
        // the slow one (write 4: it starts filling there). 0 faults back
        // from the fast device and evicts 4, written to the slow device
        // (write 5): 0's fast slot is freed only by the write that
        // follows. 1 faults back and evicts 5 into 0's freed fast slot
        // (write 6), and 1's write frees its slot in turn.
        let refs: Vec<(u64, bool)> = [0, 1, 2, 3, 4, 5, 0, 1].map(|p| (p, true)).to_vec();
        let t = swaplab_trace::DenseTrace::from_refs(&refs);
        let run = |spec: &str| {
            let device = DeviceSpec::parse(spec, None).unwrap();
            simulate_costed(
                &t,
                None,
                &PolicySpec::parse("lru").unwrap(),
                2,
                1,
                &Extras {
                    prefetch: None,
                    hints: &[],
                },
                &Costs {
                    device: &device,
                    fault_path: &FaultPath::parse("kernel").unwrap(),
                    base_time_s: None,
                },
                &|_| {},
            )
            .unwrap()
        };
        let r = run("hybrid:ssd+hdd:rules=prio:fast=16K:cluster=1");
        assert_eq!((r.counters.swap_outs, r.counters.major_faults), (6, 2));
        let c = r.cost.unwrap();
        let h = c.hybrid.unwrap();
        assert_eq!(h.rules, "prio");
        assert_eq!(
            (h.fast_writes, h.disk_writes, h.slow_from_write),
            (4, 2, Some(4))
        );
        let (ssd, hdd) = (&c.devices[0], &c.devices[1]);
        assert_eq!((ssd.writes, ssd.reads), (4, 2));
        assert_eq!((hdd.writes, hdd.reads), (2, 0));
        // With the kernel's clusters of 512 the slow device's current
        // cluster takes 5 too: 3 writes each.
        let h = run("hybrid:ssd+hdd:rules=prio:fast=16K")
            .cost
            .unwrap()
            .hybrid
            .unwrap();
        assert_eq!(
            (h.fast_writes, h.disk_writes, h.slow_from_write),
            (3, 3, Some(4))
        );
    }

    #[test]
    fn specs_of_the_prio_rule() {
        let d = DeviceSpec::parse("hybrid:ssd+hdd:rules=prio:fast=16M", None).unwrap();
        assert_eq!(d.to_string(), "hybrid:ssd+hdd:fast=16M:rules=prio");
        for (spec, says) in [
            ("hybrid:ssd+hdd:rules=prio", "fast area's size"),
            ("hybrid:ssd+hdd:rules=prio:fast=4K", "at least 2 pages"),
            ("hybrid:ssd+hdd:rules=prio:fast=lots", "fast=lots"),
            (
                "hybrid:ssd+hdd:rules=prio:fast=1M:run=4",
                "no parameter 'run'",
            ),
            ("hybrid:ssd+hdd:rules=prio+run:fast=1M", "rules=prio+run"),
            ("hybrid:ssd+hdd:fast=1M", "only with rules=prio"),
            ("hybrid:ssd+zram:rules=prio:fast=1M", "not 'zram'"),
        ] {
            let e = DeviceSpec::parse(spec, None).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }
}
