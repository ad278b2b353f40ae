//! `hybrid:FAST+DISK`: two devices and a placement rule for each page
//! swapped out, after HybridSwap (Liu, Zhang, Davis, Jiang, "Synergistic
//! coupling of SSD and hard disk for QoS-aware virtual memory", ISPASS
//! 2013): pages evicted together that are adjacent in virtual memory go
//! to the disk, written in one sequential run, and scattered ones to the
//! SSD; pages that fault back and are evicted again go to the SSD.
//!
//! Model: swap-outs are held in a batch of `batch` pages (reclaim's
//! `SWAP_CLUSTER_MAX` = 32 by default) and placed when it is full (or when
//! one of them faults back, or at the end). Sorted by virtual page, a run
//! of at least `run` adjacent pages goes to the disk under rule `run`,
//! unless rule `refault` applies to the page (it was read back from swap
//! before); everything else goes to the fast device. The disk lays runs out
//! one after another (its own slots, from 1, never reused: a log), so a run
//! written together is read back sequentially; the fast device uses the
//! engine's slots. Each write is issued to its device at the time of its
//! swap-out (placement is bookkeeping, not a delay), so `rules=none` costs
//! what the fast device alone costs. `rules=run+refault` (default), `run`, or `none` (all
//! fast: the fast device alone).
//!
//! `rules=prio:fast=SIZE` is the baseline instead: the kernel's own tiering
//! of two swap areas by priority (the fast device until its SIZE is full,
//! then the slow one), modelled in [`super::tiers`].
use super::{DevStats, Device, DeviceSpec, HybridStats, Io};
use crate::error::SimError;
use rustc_hash::{FxHashMap, FxHashSet};

pub const INFO: super::DeviceInfo = super::DeviceInfo {
    name: "hybrid",
    summary: "hybrid:FAST+DISK (e.g. hybrid:ssd+hdd): runs of adjacent evicted pages to the disk, \
              scattered and refaulted ones to the fast device; or rules=prio: the kernel's \
              priority tiering (the fast device until its fast=SIZE is full, then the disk)",
    params: "rules=run+refault|run|none run=4 (pages, 2..=1024) batch=32 (pages placed together); \
             rules=prio fast=SIZE (the fast area's size, e.g. 16M) cluster=512 (slots, 1..)",
    source: "HybridSwap, Liu et al., ISPASS 2013; rules=prio: mm/swapfile.c (folio_alloc_swap)",
    build: |_| {
        Err(SimError::BadParam(
            "write a hybrid as hybrid:ssd+hdd[:rules=run+refault:run=4:batch=32]".into(),
        ))
    },
};

pub(crate) fn build(spec: &DeviceSpec) -> Result<Box<dyn Device>, SimError> {
    let p = &spec.params;
    let rules = p.0.get("rules").map_or("run+refault", String::as_str);
    check_parts(spec)?;
    if rules.trim() == "prio" {
        return super::tiers::build(spec);
    }
    if p.0.contains_key("fast") {
        return Err(SimError::BadParam(format!(
            "fast= is the fast area's size, only with rules=prio (rules={rules} places pages \
             by their runs and refaults, not by capacity)"
        )));
    }
    p.allow_for("device", "hybrid", &["rules", "run", "batch"])?;
    let (mut by_run, mut by_refault) = (false, false);
    for r in rules.split('+') {
        match r.trim() {
            "run" => by_run = true,
            "refault" => by_refault = true,
            "none" => {}
            _ => {
                return Err(SimError::BadParam(format!(
                    "rules={rules}: expected rules joined by '+' from run, refault (or none), \
                     e.g. rules=run+refault, or rules=prio alone (the kernel's priority tiering)"
                )))
            }
        }
    }
    if by_refault && !by_run {
        return Err(SimError::BadParam(format!(
            "rules={rules}: refault only keeps pages off the disk that rule run would send there: \
             write rules=run+refault"
        )));
    }
    Ok(Box::new(Hybrid {
        fast: spec.parts[0].build()?,
        disk: spec.parts[1].build()?,
        rules: rules.to_string(),
        by_run,
        by_refault,
        run: p.int("run", 4, 2, 1024)? as usize,
        batch: p.int("batch", 32, 1, 4096)? as usize,
        pending: Vec::new(),
        on_disk: FxHashMap::default(),
        refaulted: FxHashSet::default(),
        next_disk_slot: 1,
        fast_writes: 0,
        disk_writes: 0,
    }))
}

/// Two devices, each ssd, hdd or remote.
fn check_parts(spec: &DeviceSpec) -> Result<(), SimError> {
    if spec.parts.len() != 2 {
        return Err(SimError::BadParam(
            "a hybrid names two devices, e.g. hybrid:ssd+hdd".into(),
        ));
    }
    for part in &spec.parts {
        if !["ssd", "hdd", "remote"].contains(&part.name.as_str()) {
            return Err(SimError::BadParam(format!(
                "a hybrid's parts are ssd, hdd or remote, not '{}' (zram keeps its pages in RAM, \
                 which a hybrid does not model)",
                part.name
            )));
        }
    }
    Ok(())
}

pub(crate) struct Hybrid {
    fast: Box<dyn Device>,
    disk: Box<dyn Device>,
    rules: String,
    by_run: bool,
    by_refault: bool,
    run: usize,
    batch: usize,
    /// Swap-outs not yet placed, with the time each was issued.
    pending: Vec<(Io, f64)>,
    /// Pages on the disk, and their disk slot.
    on_disk: FxHashMap<u32, u64>,
    /// Pages read back from swap at least once.
    refaulted: FxHashSet<u32>,
    next_disk_slot: u64,
    fast_writes: u64,
    disk_writes: u64,
}

impl Hybrid {
    /// Places and writes the pending batch: the stall of the writes.
    fn flush(&mut self, now: f64) -> f64 {
        if self.pending.is_empty() {
            return 0.0;
        }
        let mut b = std::mem::take(&mut self.pending);
        b.sort_unstable_by_key(|(io, _)| io.vpn);
        let mut stall = 0.0;
        let mut i = 0;
        while i < b.len() {
            let mut j = i + 1;
            while j < b.len() && b[j].0.vpn == b[j - 1].0.vpn + 1 {
                j += 1;
            }
            let long = self.by_run && j - i >= self.run;
            for &(io, at) in &b[i..j] {
                let disk = long && !(self.by_refault && self.refaulted.contains(&io.id));
                if disk {
                    let slot = self.next_disk_slot;
                    self.next_disk_slot += 1;
                    self.on_disk.insert(io.id, slot);
                    self.disk_writes += 1;
                    stall += self.disk.write(Io { slot, ..io }, at.min(now));
                } else {
                    self.on_disk.remove(&io.id);
                    self.fast_writes += 1;
                    stall += self.fast.write(io, at.min(now));
                }
            }
            i = j;
        }
        stall
    }

    /// Which pages went to the disk (for tests).
    #[cfg(test)]
    fn disk_pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.on_disk.keys().map(|&id| u64::from(id)).collect();
        v.sort_unstable();
        v
    }
}

impl Device for Hybrid {
    fn read(&mut self, io: Io, now: f64) -> f64 {
        if self.pending.iter().any(|p| p.0.id == io.id) {
            self.flush(now);
        }
        if self.by_refault {
            self.refaulted.insert(io.id);
        }
        match self.on_disk.get(&io.id) {
            Some(&slot) => self.disk.read(Io { slot, ..io }, now),
            None => self.fast.read(io, now),
        }
    }
    fn write(&mut self, io: Io, now: f64) -> f64 {
        self.pending.push((io, now));
        if self.pending.len() >= self.batch {
            self.flush(now)
        } else {
            0.0
        }
    }
    fn free(&mut self, io: Io) {
        match self.on_disk.remove(&io.id) {
            Some(slot) => self.disk.free(Io { slot, ..io }),
            None => self.fast.free(io),
        }
    }
    fn finish(&mut self, now: f64) {
        self.flush(now);
    }
    fn stats(&self) -> Vec<DevStats> {
        let mut v = self.fast.stats();
        v.extend(self.disk.stats());
        v
    }
    fn hybrid(&self) -> Option<HybridStats> {
        let all = self.fast_writes + self.disk_writes;
        Some(HybridStats {
            rules: self.rules.clone(),
            fast_writes: self.fast_writes,
            disk_writes: self.disk_writes,
            fast_writes_saved: if all == 0 {
                0.0
            } else {
                self.disk_writes as f64 / all as f64
            },
            slow_from_write: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hybrid(spec: &str) -> Hybrid {
        let s = DeviceSpec::parse(spec, None).unwrap();
        let p = &s.params;
        let rules = p.0.get("rules").map_or("run+refault", String::as_str);
        Hybrid {
            fast: s.parts[0].build().unwrap(),
            disk: s.parts[1].build().unwrap(),
            rules: rules.into(),
            by_run: rules.contains("run"),
            by_refault: rules.contains("refault"),
            run: p.int("run", 4, 2, 1024).unwrap() as usize,
            batch: p.int("batch", 32, 1, 4096).unwrap() as usize,
            pending: Vec::new(),
            on_disk: FxHashMap::default(),
            refaulted: FxHashSet::default(),
            next_disk_slot: 1,
            fast_writes: 0,
            disk_writes: 0,
        }
    }

    /// Page id = vpn here; slots in eviction order from 1.
    fn evict(h: &mut Hybrid, vpns: &[u64], first_slot: u64) {
        for (k, &v) in vpns.iter().enumerate() {
            h.write(
                Io {
                    id: v as u32,
                    vpn: v,
                    slot: first_slot + k as u64,
                },
                0.0,
            );
        }
    }

    #[test]
    fn placement_on_a_hand_made_eviction_sequence() {
        // batch 4, run 3. Batch 1: 12 50 10 11 → sorted 10 11 12 | 50:
        // the run 10..=12 to the disk, 50 to the SSD.
        let mut h = hybrid("hybrid:ssd+hdd:batch=4:run=3");
        evict(&mut h, &[12, 50, 10, 11], 1);
        assert_eq!(h.disk_pages(), [10, 11, 12]);
        // Batch 2: 20 7 21 30 → 7 | 20 21 | 30: no run of 3: all SSD.
        evict(&mut h, &[20, 7, 21, 30], 5);
        assert_eq!(h.disk_pages(), [10, 11, 12]);
        assert_eq!((h.fast_writes, h.disk_writes), (5, 3));
        // 11 faults back (from the disk), is dirtied (slot freed), and is
        // evicted again with 40 41 42: 11 | 40 41 42. Under run+refault
        // 11 is not in a run anyway; the run goes to the disk.
        let io11 = Io {
            id: 11,
            vpn: 11,
            slot: 3,
        };
        h.read(io11, 0.0);
        h.free(io11);
        evict(&mut h, &[40, 11, 41, 42], 9);
        assert_eq!(h.disk_pages(), [10, 12, 40, 41, 42]);
        // 40 and 41 fault back (from the disk) and are dirtied; then
        // 41 39 40 90 are evicted: the run 39 40 41 is long enough, but
        // rule refault sends the refaulted 40 and 41 to the SSD: only 39
        // goes to the disk (the rule is per page).
        for id in [40u32, 41] {
            let io = Io {
                id,
                vpn: u64::from(id),
                slot: 0,
            };
            h.read(io, 0.0);
            h.free(io);
        }
        evict(&mut h, &[41, 39, 40, 90], 13);
        assert_eq!(h.disk_pages(), [10, 12, 39, 42]);
        let s = h.hybrid().unwrap();
        // Writes: SSD 50 20 7 21 30 11 40 41 90 = 9, disk 10 11 12 40 41 42 39 = 7.
        assert_eq!((s.fast_writes, s.disk_writes), (9, 7));
        assert!((s.fast_writes_saved - 7.0 / 16.0).abs() < 1e-12);
        // The disk took 7 writes and served the 3 reads of 11, 40 and 41.
        let d = &h.disk.stats()[0];
        assert_eq!((d.writes, d.reads), (7, 3));
        // Same sequence under rules=run: the refaulted 40 41 go to the disk.
        let mut h = hybrid("hybrid:ssd+hdd:batch=4:run=3:rules=run");
        evict(&mut h, &[39, 40, 41, 90], 1);
        for id in [40u32, 41] {
            let io = Io {
                id,
                vpn: u64::from(id),
                slot: 0,
            };
            h.read(io, 0.0);
            h.free(io);
        }
        evict(&mut h, &[41, 39, 40, 91], 5);
        assert_eq!(h.disk_pages(), [39, 40, 41]);
    }

    #[test]
    fn a_pending_page_that_faults_back_is_placed_first_and_the_end_flushes() {
        let mut h = hybrid("hybrid:ssd+hdd:batch=8:run=2");
        evict(&mut h, &[5, 6], 1);
        assert_eq!(h.fast_writes + h.disk_writes, 0);
        // 6 faults back: the batch is placed (5 6 to the disk), then read.
        h.read(
            Io {
                id: 6,
                vpn: 6,
                slot: 2,
            },
            0.0,
        );
        assert_eq!(h.disk_pages(), [5, 6]);
        evict(&mut h, &[9], 3);
        h.finish(0.0);
        assert_eq!((h.fast_writes, h.disk_writes), (1, 2));
        let e = DeviceSpec::parse("hybrid:ssd+zram", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not 'zram'"), "{e}");
        let e = DeviceSpec::parse("hybrid:ssd+hdd:rules=refault", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rules=run+refault"), "{e}");
    }
}
