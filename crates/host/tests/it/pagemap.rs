//! Swap-state sampling from pagemap ([`PagemapWatcher`]) on this process's
//! own memory paged out with `MADV_PAGEOUT` to a temporary swap file, with
//! the `PAGEMAP_SCAN` ioctl and with plain reads; maps snapshots
//! ([`read_maps`], [`RegionTracker`], [`watch_ranges`]).
//!
//! The scan-cost measurement is `#[ignore]`d:
//! `cargo test -p swaplab-host --test it -- --ignored --nocapture pagemap::`.

use crate::common;

use std::collections::HashSet;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use swaplab_host::journal::Session;
use swaplab_host::maps::{read_maps, watch_ranges, MapEntry, RegionTracker};
use swaplab_host::pagemap::{PagemapWatcher, SwapChange};

/// The swap tests of this binary run one at a time.
use common::system_lock;

fn page_size() -> usize {
    // SAFETY: no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Anonymous private memory, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> Mapping {
        // SAFETY: a fresh anonymous mapping; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(
            ptr,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        // Base pages only: one PTE per page, whatever THP is set to.
        // SAFETY: our own mapping.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Mapping {
            ptr: ptr as *mut u8,
            len,
        }
    }

    fn addr(&self) -> u64 {
        self.ptr as u64
    }

    fn range(&self) -> (u64, u64) {
        (self.addr(), self.addr() + self.len as u64)
    }

    /// Writes a non-zero word into page `i` (faulting it in).
    fn touch(&self, i: usize) {
        let ps = page_size();
        assert!(i * ps < self.len);
        // SAFETY: inside the mapping, aligned.
        unsafe {
            std::ptr::write_volatile(self.ptr.add(i * ps) as *mut u64, 0x5157_0000 + i as u64)
        };
    }

    fn pageout(&self) {
        // SAFETY: our own mapping.
        let rc =
            unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_PAGEOUT) };
        assert_eq!(rc, 0, "MADV_PAGEOUT: {}", std::io::Error::last_os_error());
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Swapped pages of the mapping, read from /proc/self/pagemap directly
/// (independent of the crate).
fn count_swapped(m: &Mapping) -> usize {
    let ps = page_size() as u64;
    let f = std::fs::File::open("/proc/self/pagemap").unwrap();
    let n = m.len / ps as usize;
    let mut buf = vec![0u8; n * 8];
    f.read_exact_at(&mut buf, m.addr() / ps * 8).unwrap();
    buf.chunks_exact(8)
        .filter(|c| u64::from_ne_bytes((*c).try_into().unwrap()) & (1 << 62) != 0)
        .count()
}

/// MADV_PAGEOUT until every page of `m` is swapped (pages still in a
/// per-CPU LRU batch are skipped by one call).
fn pageout_all(m: &Mapping) {
    let pages = m.len / page_size();
    for _ in 0..10 {
        m.pageout();
        if count_swapped(m) == pages {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!(
        "only {} of {pages} pages swapped after MADV_PAGEOUT",
        count_swapped(m)
    );
}

fn scan(w: &mut PagemapWatcher, ranges: &[(u64, u64)]) -> Vec<SwapChange> {
    let mut out = Vec::new();
    let stats = w.scan(ranges, &mut out).expect("scan");
    assert_eq!(stats.swapped, w.swapped_pages());
    let pages: u64 = ranges
        .iter()
        .map(|(s, e)| (e - s) / page_size() as u64)
        .sum();
    assert_eq!(stats.pages_scanned, pages);
    out.sort_by_key(|c| (c.vaddr, c.swapped_out));
    out
}

fn swap_session(test: &str, spec: &str) -> Option<Session> {
    use common::Facility::*;
    if common::skip_unless(test, &[Root, Pagemap, Swapfile]) {
        return None;
    }
    let mut session = Session::begin().expect("session");
    session
        .add_swap(&spec.parse().expect("spec"))
        .expect("temporary swap file");
    Some(session)
}

#[test]
fn pageout_and_touch_are_seen_with_ioctl_and_fallback() {
    let _g = system_lock();
    let Some(mut session) = swap_session("pageout_and_touch", "file:128M") else {
        return;
    };
    let ps = page_size();
    let n = 1024;
    let m = Mapping::new(n * ps);
    for i in 0..n {
        m.touch(i);
    }
    let ranges = [m.range()];
    let pid = std::process::id();
    let mut wi = PagemapWatcher::open(pid).unwrap();
    let mut wf = PagemapWatcher::open(pid).unwrap();
    wf.force_fallback();
    assert!(!wf.uses_pagemap_scan());
    if !wi.uses_pagemap_scan() {
        eprintln!("NOTE: this kernel has no PAGEMAP_SCAN ioctl: both watchers read pagemap");
    }
    assert!(scan(&mut wi, &ranges).is_empty(), "nothing swapped yet");
    assert!(scan(&mut wf, &ranges).is_empty());

    pageout_all(&m);
    let out_i = scan(&mut wi, &ranges);
    let out_f = scan(&mut wf, &ranges);
    assert_eq!(out_i.len(), n, "ioctl: one change per page");
    assert_eq!(out_i, out_f, "ioctl and fallback agree");
    let mut slots = HashSet::new();
    for (k, c) in out_i.iter().enumerate() {
        assert!(c.swapped_out);
        assert_eq!(c.vaddr, m.addr() + (k * ps) as u64);
        let slot = (
            c.swap_type.expect("type (root)"),
            c.swap_offset.expect("offset (root)"),
        );
        assert!(slot.1 > 0, "offset 0 is the swap header");
        assert!(slots.insert(slot), "slot {slot:?} reported twice");
    }
    assert_eq!(wi.swapped_pages(), n as u64);
    assert_eq!(wf.swapped_pages(), n as u64);
    eprintln!(
        "1024 pages swapped in {} runs (ioctl watcher), types {:?}",
        wi.swapped_runs(),
        out_i
            .iter()
            .map(|c| c.swap_type.unwrap())
            .collect::<HashSet<_>>()
    );

    // Nothing changed: nothing reported.
    assert!(scan(&mut wi, &ranges).is_empty());
    assert!(scan(&mut wf, &ranges).is_empty());

    // Touch 100 pages: exactly those come back, with the slots they had.
    let touched: Vec<usize> = (0..100).map(|i| i * 10 + 3).collect();
    for &i in &touched {
        m.touch(i);
    }
    let in_i = scan(&mut wi, &ranges);
    let in_f = scan(&mut wf, &ranges);
    assert_eq!(in_i.len(), 100);
    assert_eq!(in_i, in_f, "ioctl and fallback agree");
    for (c, &i) in in_i.iter().zip(&touched) {
        assert!(!c.swapped_out);
        assert_eq!(c.vaddr, m.addr() + (i * ps) as u64);
        assert_eq!(
            c,
            &SwapChange {
                swapped_out: false,
                ..out_i[i]
            },
            "same slot as when it left"
        );
    }
    assert_eq!(wi.swapped_pages(), (n - 100) as u64);
    assert_eq!(wf.swapped_pages(), (n - 100) as u64);

    // Paging the touched ones out again reports them again.
    pageout_all(&m);
    let again = scan(&mut wi, &ranges);
    assert_eq!(again.len(), 100);
    assert!(again.iter().all(|c| c.swapped_out));
    assert_eq!(again, scan(&mut wf, &ranges));

    // A range the caller stops passing is dropped, not swapped in.
    assert!(scan(&mut wi, &[]).is_empty());
    assert!(scan(&mut wf, &[]).is_empty());
    assert_eq!(wi.swapped_pages(), 0);

    drop(m);
    session.restore().expect("restore");
}

/// Prints the cost of a first and of steady (nothing changed) scans of
/// `ranges`, with the ioctl and with plain reads.
fn measure(label: &str, ranges: &[(u64, u64)]) {
    let pid = std::process::id();
    for fallback in [false, true] {
        let mut w = PagemapWatcher::open(pid).unwrap();
        if fallback {
            w.force_fallback();
        }
        let mut out = Vec::new();
        let first = w.scan(ranges, &mut out).unwrap();
        let changes = out.len();
        let mut steady = Vec::new();
        for _ in 0..21 {
            out.clear();
            steady.push(w.scan(ranges, &mut out).unwrap().elapsed_ns);
        }
        steady.sort_unstable();
        println!(
            "  {label} {:>8}: first scan {:>7.3} ms ({changes} changes, {} of {} pages swapped, {} runs), steady scan median {:>7.3} ms (min {:.3}, max {:.3})",
            if w.uses_pagemap_scan() { "ioctl" } else { "fallback" },
            first.elapsed_ns as f64 / 1e6,
            first.swapped,
            first.pages_scanned,
            w.swapped_runs(),
            steady[10] as f64 / 1e6,
            steady[0] as f64 / 1e6,
            steady[20] as f64 / 1e6,
        );
    }
}

#[test]
#[ignore = "measurement: 256 MiB paged out to a swap file; run with --ignored --nocapture"]
fn scan_cost_256mib() {
    let _g = system_lock();
    let Some(mut session) = swap_session(&test_name!(), "file:512M") else {
        return;
    };
    let ps = page_size();
    let len = 256 << 20;
    let n = len / ps;
    let m = Mapping::new(len);
    for i in 0..n {
        m.touch(i);
    }
    let t = Instant::now();
    pageout_all(&m);
    let pageout_ms = t.elapsed().as_secs_f64() * 1e3;
    let pid = std::process::id();
    println!(
        "256 MiB: MADV_PAGEOUT {pageout_ms:.0} ms, {} of {n} pages swapped",
        count_swapped(&m)
    );
    measure("all swapped", &[m.range()]);
    // "Mostly swapped": 1 % touched back, so the swapped set is fragmented.
    for i in (0..n).step_by(100) {
        m.touch(i);
    }
    measure("99% swapped", &[m.range()]);
    // Plus 1 GiB mapped but never touched (like reserved heap or stacks).
    let sparse = Mapping::new(1 << 30);
    measure("99% + 1G untouched", &[m.range(), sparse.range()]);
    let whole = watch_ranges(&read_maps(pid).unwrap());
    let whole_pages: u64 = whole.iter().map(|(s, e)| (e - s) / ps as u64).sum();
    measure(
        &format!(
            "whole process ({} ranges, {} MiB)",
            whole.len(),
            (whole_pages * ps as u64) >> 20
        ),
        &whole,
    );
    drop(sparse);
    drop(m);
    session.restore().expect("restore");
}

#[test]
fn read_maps_of_this_process() {
    let local = 42u64;
    let addr = std::hint::black_box(&local) as *const u64 as u64;
    let maps = read_maps(std::process::id()).unwrap();
    assert!(!maps.is_empty());
    for w in maps.windows(2) {
        assert!(w[0].end <= w[1].start, "sorted, disjoint");
    }
    let page = addr & !(page_size() as u64 - 1);
    let e = maps
        .iter()
        .find(|e| e.start <= page && page < e.end)
        .expect("a mapping covers the local variable");
    assert!(e.perms.starts_with("rw") && e.is_private(), "{e:?}");
    // Test threads' stacks are unnamed mmaps; the main thread's is [stack].
    assert!(e.path == "[stack]" || e.is_anonymous(), "{e:?}");
    // SAFETY: getauxval has no preconditions.
    let at_random = unsafe { libc::getauxval(libc::AT_RANDOM) };
    let s = maps
        .iter()
        .find(|e| e.start <= at_random && at_random < e.end)
        .expect("AT_RANDOM is mapped");
    assert_eq!(s.path, "[stack]", "the initial stack holds the aux vector");
    // Our own executable and the vdso are there, by name.
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    assert!(maps.iter().any(|e| e.path == exe.to_string_lossy()));
    assert!(maps.iter().any(|e| e.path == "[vdso]"));
    // The stacks and heap are watched; the executable's code is not.
    let watched = watch_ranges(&maps);
    let covers = |a: u64| watched.iter().any(|&(s, e)| s <= a && a < e);
    assert!(covers(page) && covers(at_random));
    let code = read_maps_of_this_process as *const () as u64;
    assert!(!covers(code));
}

#[test]
fn read_maps_of_a_missing_process() {
    let err = read_maps(u32::MAX >> 1).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

fn entry(start: u64, end: u64, perms: &str, path: &str) -> MapEntry {
    MapEntry {
        start,
        end,
        perms: perms.into(),
        offset: 0,
        path: path.into(),
    }
}

#[test]
fn region_tracker_follows_snapshots() {
    let heap = entry(0x1000, 0x5000, "rw-p", "[heap]");
    let anon = entry(0x10000, 0x20000, "rw-p", "[anon]");
    let lib = entry(0x7000_0000, 0x7000_4000, "r-xp", "/usr/lib/libc.so.6");
    let mut t = RegionTracker::new();

    let d = t.ingest(100, 7, &[heap.clone(), anon.clone(), lib.clone()]);
    assert_eq!(d.appeared, vec![0, 1, 2]);
    assert!(d.disappeared.is_empty());
    // Another process's snapshot does not end pid 7's regions.
    let d = t.ingest(150, 8, std::slice::from_ref(&heap));
    assert_eq!(d.appeared, vec![3]);
    assert!(d.disappeared.is_empty());

    // Persists: last_seen moves on.
    let d = t.ingest(200, 7, &[heap.clone(), anon.clone(), lib.clone()]);
    assert!(d.appeared.is_empty() && d.disappeared.is_empty());
    assert_eq!(
        (t.regions()[1].first_seen_ns, t.regions()[1].last_seen_ns),
        (100, 200)
    );

    // anon unmapped; same heap range with changed perms is a new region.
    let heap_ro = entry(0x1000, 0x5000, "r--p", "[heap]");
    let d = t.ingest(300, 7, &[heap_ro.clone(), lib.clone()]);
    assert_eq!(d.appeared, vec![4]);
    assert_eq!(d.disappeared, vec![0, 1]);
    let r = t.regions();
    assert_eq!(
        (r[0].first_seen_ns, r[0].last_seen_ns, r[0].live),
        (100, 200, false)
    );
    assert_eq!(
        (r[1].first_seen_ns, r[1].last_seen_ns, r[1].live),
        (100, 200, false)
    );
    assert_eq!((r[2].last_seen_ns, r[2].live), (300, true));
    assert_eq!(
        (r[4].perms.as_str(), r[4].first_seen_ns, r[4].live),
        ("r--p", 300, true)
    );
    assert!(r[3].live, "pid 8 untouched");

    // The same range coming back is a new region, not the old one revived.
    let d = t.ingest(400, 7, &[heap_ro, anon.clone(), lib]);
    assert_eq!(d.appeared, vec![5]);
    assert_eq!(t.regions()[5].first_seen_ns, 400);
    assert_eq!(t.find(7, 0x10800).map(|r| r.first_seen_ns), Some(400));
    assert!(t.find(7, 0x9000).is_none());

    // Process exit ends all its regions.
    let ended = t.end_pid(7);
    assert_eq!(ended, vec![2, 4, 5]);
    assert_eq!(t.live().map(|r| r.pid).collect::<Vec<_>>(), vec![8]);
    assert_eq!(t.regions()[5].last_seen_ns, 400);
}

#[test]
fn watch_ranges_picks_anonymous_and_private_writable() {
    let maps = vec![
        entry(0x400000, 0x401000, "r--p", "/bin/x"),
        entry(0x401000, 0x402000, "r-xp", "/bin/x"),
        entry(0x402000, 0x403000, "rw-p", "/bin/x"), // .data: yes
        entry(0x403000, 0x404000, "rw-p", "[anon]"), // .bss: yes, merged
        entry(0x500000, 0x600000, "rw-p", "[heap]"), // yes
        entry(0x600000, 0x700000, "---p", "[anon]"), // reservation: no
        entry(0x700000, 0x800000, "r--p", "[anon]"), // anon read-only: yes
        entry(0x800000, 0x900000, "rw-s", "/dev/shm/x"), // shared: no
        entry(0x900000, 0x901000, "rw-p", "[anon:jemalloc]"), // yes
        entry(0xa00000, 0xa01000, "r--p", "[vvar]"),
        entry(0xa01000, 0xa02000, "r-xp", "[vdso]"),
        entry(0xb00000, 0xb10000, "rw-p", "[stack]"),
    ];
    assert_eq!(
        watch_ranges(&maps),
        vec![
            (0x402000, 0x404000),
            (0x500000, 0x600000),
            (0x700000, 0x800000),
            (0x900000, 0x901000),
            (0xb00000, 0xb10000),
        ]
    );
}

/// `read_entries` of our own pages: present exactly where we touched
/// (every third page of 64), none swapped (no swap needed), and a read
/// that runs past the end of the address space comes back short.
#[test]
fn read_entries_sees_the_pages_touched() {
    use swaplab_host::pagemap::{read_entries, PM_PRESENT, PM_SWAP};
    let ps = page_size();
    let m = Mapping::new(64 * ps);
    for i in (0..64).step_by(3) {
        m.touch(i);
    }
    let f = std::fs::File::open("/proc/self/pagemap").unwrap();
    let (mut buf, mut ent) = (Vec::new(), Vec::new());
    let first = m.addr() / ps as u64;
    read_entries(&f, first, 64, &mut buf, &mut ent).unwrap();
    assert_eq!(ent.len(), 64);
    for (i, v) in ent.iter().enumerate() {
        assert_eq!(v & PM_PRESENT != 0, i % 3 == 0, "page {i}: {v:#x}");
        assert_eq!(v & PM_SWAP, 0, "page {i}: {v:#x}");
    }
    // User addresses end below 2^57 (5-level paging; 2^47 with 4 levels):
    // entries past the pagemap's end are not returned.
    let end = (1u64 << 57) / ps as u64;
    read_entries(&f, end - 2, 8, &mut buf, &mut ent).unwrap();
    assert!(ent.len() <= 2, "{} entries past the end", ent.len());
}
