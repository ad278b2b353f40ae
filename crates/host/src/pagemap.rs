//! Which pages of a process are in swap, sampled from `/proc/PID/pagemap`.
//!
//! A [`PagemapWatcher`] is opened once per traced process and called at the
//! sampling rate with the ranges to watch (usually
//! `maps::watch_ranges` of a fresh maps snapshot). Each
//! [`PagemapWatcher::scan`] reports the pages that went to swap since the
//! previous scan, with their swap slot, and the pages that came back.
//!
//! How a scan works:
//!
//! * With the `PAGEMAP_SCAN` ioctl (Linux 6.7+) the kernel returns the
//!   swapped pages as run-length regions (category `PAGE_IS_SWAPPED`), so a
//!   scan costs about as much as the page-table walk. Only the pages that
//!   are newly swapped are then read from the pagemap file (8 bytes each) to
//!   learn their swap type (bits 0–4) and offset (bits 5–54).
//! * Without it (`ENOTTY`/`EINVAL`, or after [`PagemapWatcher::force_fallback`])
//!   every entry of the ranges is read with `pread`
//!   ([`PagemapWatcher::uses_pagemap_scan`] says which).
//!
//! The swapped set is kept as sorted runs of pages whose slots are
//! consecutive (one run for a block that was paged out together), so a
//! steady state costs O(runs), not O(pages).
//!
//! Notes (see Documentation/admin-guide/mm/pagemap.rst):
//! * Swap type and offset are only shown to a reader with `CAP_SYS_ADMIN`
//!   (root); otherwise the slot fields of [`SwapChange`] are `None`.
//! * "Swapped" is the page-table view: right after `MADV_PAGEOUT` to a swap
//!   file the page may still sit in the swap cache; touching it is then a
//!   minor fault, reported here as a swap-in like any other.
//! * A page that was swapped in and out again between two scans, so that it
//!   only changed slot, is not reported.
//! * Pages of a range the caller no longer passes are dropped silently: an
//!   unmapped region is not a swap-in.
//! * Migration entries and PTE markers also count as "swapped" in the
//!   kernel's view; they are short-lived and rare for anonymous memory.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::time::Instant;

/// One page whose swap state changed between two scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwapChange {
    /// Page address in the process.
    pub vaddr: u64,
    /// `true`: the page went to swap (was present or never touched);
    /// `false`: it was swapped and is not any more.
    pub swapped_out: bool,
    /// Swap area index (the order of `swapon`, bits 0–4 of the entry).
    /// For a swap-in: the slot it was read from.
    pub swap_type: Option<u8>,
    /// Slot in the swap area (bits 5–54 of the entry).
    pub swap_offset: Option<u64>,
}

/// What one [`PagemapWatcher::scan`] looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Pages in the watched ranges.
    pub pages_scanned: u64,
    /// Pages of the watched ranges that are swapped after this scan.
    pub swapped: u64,
    /// Wall time of the scan, diffing included.
    pub elapsed_ns: u64,
}

// ---- the PAGEMAP_SCAN ioctl (include/uapi/linux/fs.h) ----

const PAGE_IS_SWAPPED: u64 = 1 << 4;

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

#[repr(C)]
#[derive(Debug, Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// `_IOWR('f', 16, struct pm_scan_arg)`.
const PAGEMAP_SCAN: u64 =
    (3 << 30) | ((std::mem::size_of::<PmScanArg>() as u64) << 16) | (0x66 << 8) | 16;

/// Regions fetched per ioctl call.
const REGION_BATCH: usize = 1024;
/// Entries read per pread in the fallback.
const READ_BATCH: usize = 64 * 1024;

/// Bit 63 of a pagemap entry: the page is present in RAM (mapped).
pub const PM_PRESENT: u64 = 1 << 63;
/// Bit 62: the page is swapped (its PTE holds a swap entry; the page may
/// still sit in the swap cache).
pub const PM_SWAP: u64 = 1 << 62;
/// Bits 0–54: PFN, or swap type (0–4) and offset (5–54).
const PM_FRAME_MASK: u64 = (1 << 55) - 1;
const SWP_TYPE_BITS: u32 = 5;

/// Pages `[page, page+len)` swapped at consecutive slots: page `k` of the
/// run is at `slot + (k << 5)` (the packed pagemap field: same type,
/// offset + k). `slot == 0` means "unknown" (not root) for all its pages;
/// offset 0 is the swap header and never holds data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    page: u64,
    len: u64,
    slot: u64,
}

impl Run {
    fn slot_at(&self, k: u64) -> u64 {
        if self.slot == 0 {
            0
        } else {
            self.slot + (k << SWP_TYPE_BITS)
        }
    }

    /// Whether page `page` at `slot` continues this run.
    fn continues(&self, page: u64, slot: u64) -> bool {
        page == self.page + self.len && slot == self.slot_at(self.len)
    }
}

/// Appends `(page, slot)` to sorted runs, extending the last run when it
/// continues it.
fn push_page(runs: &mut Vec<Run>, page: u64, slot: u64) {
    if let Some(last) = runs.last_mut() {
        if last.continues(page, slot) {
            last.len += 1;
            return;
        }
    }
    runs.push(Run { page, len: 1, slot });
}

fn push_run(runs: &mut Vec<Run>, r: Run) {
    if r.len == 0 {
        return;
    }
    if let Some(last) = runs.last_mut() {
        if last.continues(r.page, r.slot) {
            last.len += r.len;
            return;
        }
    }
    runs.push(r);
}

fn split_slot(slot: u64) -> (Option<u8>, Option<u64>) {
    if slot == 0 {
        (None, None)
    } else {
        (
            Some((slot & ((1 << SWP_TYPE_BITS) - 1)) as u8),
            Some(slot >> SWP_TYPE_BITS),
        )
    }
}

/// Appends an interval to a sorted list, merging with the last one when
/// they touch.
fn push_iv(v: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    if s >= e {
        return;
    }
    if let Some(last) = v.last_mut() {
        if s <= last.1 {
            last.1 = last.1.max(e);
            return;
        }
    }
    v.push((s, e));
}

/// `a ∩ b` for sorted disjoint interval lists.
fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        push_iv(&mut out, s, e);
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `a \ b` for sorted disjoint interval lists.
fn subtract(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s0, e) in a {
        let mut s = s0;
        while j < b.len() && b[j].1 <= s {
            j += 1;
        }
        let mut k = j;
        while s < e && k < b.len() && b[k].0 < e {
            push_iv(&mut out, s, b[k].0.min(e));
            s = s.max(b[k].1);
            k += 1;
        }
        push_iv(&mut out, s, e);
    }
    out
}

/// The parts of `runs` inside the intervals `iv` (both sorted).
fn slice_runs(runs: &[Run], iv: &[(u64, u64)], out: &mut Vec<Run>) {
    let mut j = 0;
    for r in runs {
        let (rs, re) = (r.page, r.page + r.len);
        while j < iv.len() && iv[j].1 <= rs {
            j += 1;
        }
        let mut k = j;
        while k < iv.len() && iv[k].0 < re {
            let s = rs.max(iv[k].0);
            let e = re.min(iv[k].1);
            if s < e {
                push_run(
                    out,
                    Run {
                        page: s,
                        len: e - s,
                        slot: r.slot_at(s - rs),
                    },
                );
            }
            k += 1;
        }
    }
}

/// Coverage of runs as merged intervals.
fn coverage(runs: &[Run]) -> Vec<(u64, u64)> {
    let mut v = Vec::with_capacity(runs.len());
    for r in runs {
        push_iv(&mut v, r.page, r.page + r.len);
    }
    v
}

/// Merges two sorted, non-overlapping run lists.
fn merge_runs(a: Vec<Run>, b: Vec<Run>) -> Vec<Run> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut ia, mut ib) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (ia.peek(), ib.peek()) {
            (Some(x), Some(y)) => {
                if x.page <= y.page {
                    ia.next()
                } else {
                    ib.next()
                }
            }
            (Some(_), None) => ia.next(),
            (None, Some(_)) => ib.next(),
            (None, None) => break,
        };
        if let Some(r) = next {
            push_run(&mut out, r);
        }
    }
    out
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if ps > 0 {
        ps as u64
    } else {
        4096
    }
}

/// Samples which pages of one process are swapped (see the module docs).
#[derive(Debug)]
pub struct PagemapWatcher {
    pid: u32,
    file: File,
    page_size: u64,
    page_shift: u32,
    use_ioctl: bool,
    /// The swapped set after the last scan: sorted, non-overlapping.
    runs: Vec<Run>,
    swapped: u64,
    regions: Vec<PageRegion>,
    buf: Vec<u8>,
}

impl PagemapWatcher {
    /// Opens `/proc/PID/pagemap` and probes for the `PAGEMAP_SCAN` ioctl.
    /// Reading another process's pagemap needs ptrace access (root, or the
    /// same user without Yama restrictions); slots need `CAP_SYS_ADMIN`.
    pub fn open(pid: u32) -> io::Result<Self> {
        let file = File::open(format!("/proc/{pid}/pagemap"))?;
        let page_size = page_size();
        let mut w = PagemapWatcher {
            pid,
            file,
            page_size,
            page_shift: page_size.trailing_zeros(),
            use_ioctl: true,
            runs: Vec::new(),
            swapped: 0,
            regions: vec![PageRegion::default(); REGION_BATCH],
            buf: Vec::new(),
        };
        // An empty walk: 0 if the kernel has the ioctl, ENOTTY if not.
        w.use_ioctl = w.pagemap_scan(0, 0).is_ok();
        Ok(w)
    }

    /// The process watched.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether scans use the `PAGEMAP_SCAN` ioctl (else plain reads).
    pub fn uses_pagemap_scan(&self) -> bool {
        self.use_ioctl
    }

    /// Use plain pagemap reads from now on, even if the ioctl works.
    pub fn force_fallback(&mut self) {
        self.use_ioctl = false;
    }

    /// Pages swapped after the last scan.
    pub fn swapped_pages(&self) -> u64 {
        self.swapped
    }

    /// Number of runs (consecutive pages at consecutive slots) the swapped
    /// set is kept in: its memory footprint is 24 bytes per run.
    pub fn swapped_runs(&self) -> usize {
        self.runs.len()
    }

    /// Scans `ranges` (`[start, end)` addresses; need not be sorted or page
    /// aligned), appends the changes since the previous scan to `out`
    /// (swap-ins first, then swap-outs, each in address order) and returns
    /// the scan's statistics. The first scan reports every swapped page.
    ///
    /// Errors: the process is gone (`ESRCH`), or reading failed.
    pub fn scan(
        &mut self,
        ranges: &[(u64, u64)],
        out: &mut Vec<SwapChange>,
    ) -> io::Result<ScanStats> {
        let t0 = Instant::now();
        let watched = self.normalize(ranges);
        let pages_scanned: u64 = watched.iter().map(|&(s, e)| e - s).sum();

        // Current swapped pages: intervals, and for the fallback their slots.
        let mut cur_runs: Option<Vec<Run>> = None;
        let mut cur: Vec<(u64, u64)> = Vec::new();
        if self.use_ioctl {
            match self.swapped_intervals(&watched) {
                Ok(v) => cur = v,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY) | Some(libc::EINVAL)) => {
                    self.use_ioctl = false;
                }
                Err(e) => return Err(e),
            }
        }
        if !self.use_ioctl {
            let mut runs = Vec::new();
            for &(s, e) in &watched {
                self.read_swapped(s, e, &mut runs)?;
            }
            cur = coverage(&runs);
            cur_runs = Some(runs);
        }

        let prev_cov = coverage(&self.runs);
        let gone = subtract(&prev_cov, &cur);
        let swapped_in = intersect(&gone, &watched);
        let kept_iv = intersect(&prev_cov, &cur);
        let fresh = subtract(&cur, &prev_cov);

        let mut ins = Vec::new();
        slice_runs(&self.runs, &swapped_in, &mut ins);
        let mut kept = Vec::new();
        slice_runs(&self.runs, &kept_iv, &mut kept);
        let mut new = Vec::new();
        match cur_runs {
            Some(runs) => slice_runs(&runs, &fresh, &mut new),
            None => {
                for &(s, e) in &fresh {
                    self.read_swapped(s, e, &mut new)?;
                }
            }
        }

        for (runs, swapped_out) in [(&ins, false), (&new, true)] {
            for r in runs {
                for k in 0..r.len {
                    let (swap_type, swap_offset) = split_slot(r.slot_at(k));
                    out.push(SwapChange {
                        vaddr: (r.page + k) << self.page_shift,
                        swapped_out,
                        swap_type,
                        swap_offset,
                    });
                }
            }
        }

        self.runs = merge_runs(kept, new);
        self.swapped = self.runs.iter().map(|r| r.len).sum();
        Ok(ScanStats {
            pages_scanned,
            swapped: self.swapped,
            elapsed_ns: t0.elapsed().as_nanos() as u64,
        })
    }

    /// Ranges → sorted, merged page-number intervals.
    fn normalize(&self, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mask = self.page_size - 1;
        let mut v: Vec<(u64, u64)> = ranges
            .iter()
            .filter(|&&(s, e)| e > s)
            .map(|&(s, e)| {
                (
                    s >> self.page_shift,
                    e.saturating_add(mask) >> self.page_shift,
                )
            })
            .collect();
        v.sort_unstable();
        let mut out = Vec::with_capacity(v.len());
        for (s, e) in v {
            push_iv(&mut out, s, e);
        }
        out
    }

    /// One PAGEMAP_SCAN call over `[start, end)` (addresses); returns the
    /// number of regions written and where the walk ended.
    fn pagemap_scan(&mut self, start: u64, end: u64) -> io::Result<(usize, u64)> {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start,
            end,
            vec: self.regions.as_mut_ptr() as u64,
            vec_len: self.regions.len() as u64,
            category_mask: PAGE_IS_SWAPPED,
            return_mask: PAGE_IS_SWAPPED,
            ..Default::default()
        };
        // SAFETY: `arg` is a valid pm_scan_arg whose `vec` points at
        // `self.regions`, writable for `vec_len` entries, and both outlive
        // the call.
        let n = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                PAGEMAP_SCAN as _,
                &mut arg as *mut PmScanArg,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((n as usize, arg.walk_end))
    }

    /// Swapped pages of `watched` (page intervals) via the ioctl.
    fn swapped_intervals(&mut self, watched: &[(u64, u64)]) -> io::Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        for &(s, e) in watched {
            let end = e << self.page_shift;
            let mut start = s << self.page_shift;
            while start < end {
                let (n, walk_end) = self.pagemap_scan(start, end)?;
                for r in &self.regions[..n.min(self.regions.len())] {
                    push_iv(
                        &mut out,
                        r.start >> self.page_shift,
                        r.end >> self.page_shift,
                    );
                }
                if n < self.regions.len() || walk_end <= start {
                    break;
                }
                start = walk_end;
            }
        }
        Ok(out)
    }

    /// Reads the entries of pages `[s, e)` and appends the swapped ones.
    fn read_swapped(&mut self, s: u64, e: u64, runs: &mut Vec<Run>) -> io::Result<()> {
        let mut page = s;
        while page < e {
            let n = ((e - page) as usize).min(READ_BATCH);
            self.buf.resize(n * 8, 0);
            let got = read_full(&self.file, &mut self.buf, page * 8)?;
            if got == 0 {
                // End of file: past the top of the address space, or the
                // process's mm is gone (then page 0 reads nothing too).
                let mut probe = [0u8; 8];
                if read_full(&self.file, &mut probe, 0)? == 0 {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                break;
            }
            let entries = got / 8;
            for (i, chunk) in self.buf[..entries * 8].chunks_exact(8).enumerate() {
                let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
                if v & PM_SWAP != 0 {
                    push_page(runs, page + i as u64, v & PM_FRAME_MASK);
                }
            }
            page += entries as u64;
        }
        Ok(())
    }
}

/// Reads the pagemap entries of pages `first..first + n` (page numbers,
/// i.e. address / page size) from an open `/proc/PID/pagemap` into `out`,
/// which is cleared first and holds fewer than `n` entries when the read
/// ends early (the end of the address space). Test them with
/// [`PM_PRESENT`] and [`PM_SWAP`]. `buf` is scratch space, kept by the
/// caller between calls.
pub fn read_entries(
    file: &File,
    first: u64,
    n: usize,
    buf: &mut Vec<u8>,
    out: &mut Vec<u64>,
) -> io::Result<()> {
    buf.resize(n * 8, 0);
    let got = read_full(file, buf, first * 8)?;
    out.clear();
    out.extend(
        buf[..got]
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))),
    );
    Ok(())
}

/// `pread` until `buf` is full or end of file; returns bytes read.
fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done - done % 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_algebra() {
        let a = [(0, 10), (20, 30)];
        let b = [(5, 25)];
        assert_eq!(intersect(&a, &b), vec![(5, 10), (20, 25)]);
        assert_eq!(subtract(&a, &b), vec![(0, 5), (25, 30)]);
        assert_eq!(subtract(&b, &a), vec![(10, 20)]);
        assert_eq!(subtract(&a, &[]), a.to_vec());
        assert_eq!(
            subtract(&[(0, 10)], &[(0, 2), (3, 4), (9, 12)]),
            vec![(2, 3), (4, 9)]
        );
        assert!(intersect(&a, &[]).is_empty());
    }

    #[test]
    fn runs_keep_slots_when_sliced() {
        let mut runs = Vec::new();
        for p in 10..20 {
            push_page(&mut runs, p, (100 + p) << 5 | 1);
        }
        push_page(&mut runs, 20, 7 << 5 | 1); // slot jump: new run
        assert_eq!(runs.len(), 2);
        let mut out = Vec::new();
        slice_runs(&runs, &[(12, 14), (19, 21)], &mut out);
        let pages: Vec<(u64, u64)> = out
            .iter()
            .flat_map(|r| (0..r.len).map(move |k| (r.page + k, r.slot_at(k))))
            .collect();
        assert_eq!(
            pages,
            vec![
                (12, 112 << 5 | 1),
                (13, 113 << 5 | 1),
                (19, 119 << 5 | 1),
                (20, 7 << 5 | 1)
            ]
        );
        assert_eq!(split_slot(113 << 5 | 1), (Some(1), Some(113)));
        assert_eq!(split_slot(0), (None, None));
    }

    #[test]
    fn ioctl_number_matches_uapi() {
        assert_eq!(std::mem::size_of::<PmScanArg>(), 96);
        assert_eq!(PAGEMAP_SCAN, 0xC060_6610);
    }
}
