//! Snapshots of `/proc/PID/maps` and the regions they show over time.
//!
//! [`read_maps`] takes one snapshot (parsed by the `procfs` crate);
//! [`RegionTracker`] follows the snapshots of the traced processes and
//! keeps every region with the first and last time it was seen;
//! [`watch_ranges`] picks the ranges of a snapshot whose pages can go to
//! swap as anonymous memory, to give to `pagemap::PagemapWatcher`.

use std::collections::HashMap;
use std::io;

use serde::{Deserialize, Serialize};

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MapEntry {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// As in maps: `rw-p`, `r-xp`, `rw-s`, …
    pub perms: String,
    /// Offset into the file (0 for anonymous memory).
    pub offset: u64,
    /// The file (with ` (deleted)` if it was), or a pseudo-path: `[heap]`,
    /// `[stack]`, `[stack:TID]`, `[vdso]`, `[vvar]`, `[vsyscall]`,
    /// `[anon:NAME]` (named with `PR_SET_VMA`), `/SYSVxxxxxxxx` (SysV
    /// shared memory), and `[anon]` for an unnamed anonymous mapping.
    pub path: String,
}

/// The pseudo-path of an unnamed anonymous mapping.
pub const ANON: &str = "[anon]";

impl MapEntry {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Private (copy-on-write) mapping (`p` in the perms).
    pub fn is_private(&self) -> bool {
        self.perms.as_bytes().get(3) == Some(&b'p')
    }

    /// Writable (`w` in the perms).
    pub fn is_writable(&self) -> bool {
        self.perms.as_bytes().get(1) == Some(&b'w')
    }

    /// Anonymous memory: unnamed, heap, stacks, or named anonymous.
    pub fn is_anonymous(&self) -> bool {
        self.path == ANON
            || self.path == "[heap]"
            || self.path == "[stack]"
            || self.path.starts_with("[stack:")
            || self.path.starts_with("[anon:")
    }

    /// Whether pages of this mapping can go to swap as anonymous pages that
    /// pagemap reports: a private mapping that is anonymous, or file-backed
    /// and writable (its written pages are anonymous copies). Excludes
    /// inaccessible (`---p`) reservations and the kernel's `[vdso]`,
    /// `[vvar]`, `[vsyscall]`.
    pub fn is_swappable_anon(&self) -> bool {
        if !self.is_private() || self.perms.starts_with("---") || self.is_empty() {
            return false;
        }
        if self.is_anonymous() {
            return true;
        }
        self.is_writable() && !(self.path.starts_with('[') && self.path.ends_with(']'))
    }
}

fn from_procfs(m: ::procfs::process::MemoryMap) -> MapEntry {
    use ::procfs::process::MMapPath;
    let path = match m.pathname {
        MMapPath::Path(p) => p.to_string_lossy().into_owned(),
        MMapPath::Heap => "[heap]".into(),
        MMapPath::Stack => "[stack]".into(),
        MMapPath::TStack(tid) => format!("[stack:{tid}]"),
        MMapPath::Vdso => "[vdso]".into(),
        MMapPath::Vvar => "[vvar]".into(),
        MMapPath::Vsyscall => "[vsyscall]".into(),
        MMapPath::Rollup => "[rollup]".into(),
        MMapPath::Anonymous => ANON.into(),
        MMapPath::Vsys(key) => format!("/SYSV{:08x}", key as u32),
        MMapPath::Other(s) => format!("[{s}]"),
    };
    MapEntry {
        start: m.address.0,
        end: m.address.1,
        perms: m.perms.as_str(),
        offset: m.offset,
        path,
    }
}

fn io_err(pid: u32, e: ::procfs::ProcError) -> io::Error {
    use ::procfs::ProcError;
    match e {
        ProcError::Io(e, _) => e,
        ProcError::NotFound(_) => io::Error::new(
            io::ErrorKind::NotFound,
            format!("/proc/{pid}/maps: no such process"),
        ),
        ProcError::PermissionDenied(_) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("/proc/{pid}/maps: permission denied"),
        ),
        other => io::Error::other(format!("/proc/{pid}/maps: {other}")),
    }
}

/// Reads `/proc/PID/maps`.
pub fn read_maps(pid: u32) -> io::Result<Vec<MapEntry>> {
    let proc = ::procfs::process::Process::new(pid as i32).map_err(|e| io_err(pid, e))?;
    let maps = proc.maps().map_err(|e| io_err(pid, e))?;
    Ok(maps.0.into_iter().map(from_procfs).collect())
}

/// The ranges of a snapshot to watch for swapping
/// ([`MapEntry::is_swappable_anon`]), sorted, adjacent ones merged.
pub fn watch_ranges(entries: &[MapEntry]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.is_swappable_anon())
        .map(|e| (e.start, e.end))
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// A mapping as seen over consecutive snapshots of one process: the same
/// pid, start, end, perms and path. A change of any of them (an `mprotect`,
/// a grown heap) ends the region and starts a new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub perms: String,
    /// File offset when first seen.
    pub offset: u64,
    pub path: String,
    /// Time of the first snapshot that showed it.
    pub first_seen_ns: u64,
    /// Time of the last snapshot that showed it.
    pub last_seen_ns: u64,
    /// Still present in the process's latest snapshot.
    pub live: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RegionKey {
    pid: u32,
    start: u64,
    end: u64,
    perms: String,
    path: String,
}

/// What one [`RegionTracker::ingest`] changed: indices into
/// [`RegionTracker::regions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionDelta {
    /// Regions seen for the first time.
    pub appeared: Vec<usize>,
    /// Regions of this pid that the snapshot no longer shows.
    pub disappeared: Vec<usize>,
}

/// Follows maps snapshots of any number of processes (see [`Region`]).
#[derive(Debug, Default)]
pub struct RegionTracker {
    regions: Vec<Region>,
    /// Live regions → index in `regions`.
    live: HashMap<RegionKey, usize>,
}

impl RegionTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the snapshot of `pid` at time `t_ns`: extends the regions it
    /// still shows, starts new ones, ends those of `pid` it no longer shows.
    pub fn ingest(&mut self, t_ns: u64, pid: u32, entries: &[MapEntry]) -> RegionDelta {
        let mut delta = RegionDelta::default();
        let mut seen = Vec::with_capacity(entries.len());
        for e in entries {
            let key = RegionKey {
                pid,
                start: e.start,
                end: e.end,
                perms: e.perms.clone(),
                path: e.path.clone(),
            };
            let idx = match self.live.get(&key) {
                Some(&i) => {
                    let r = &mut self.regions[i];
                    r.last_seen_ns = r.last_seen_ns.max(t_ns);
                    i
                }
                None => {
                    let i = self.regions.len();
                    self.regions.push(Region {
                        pid,
                        start: e.start,
                        end: e.end,
                        perms: e.perms.clone(),
                        offset: e.offset,
                        path: e.path.clone(),
                        first_seen_ns: t_ns,
                        last_seen_ns: t_ns,
                        live: true,
                    });
                    self.live.insert(key, i);
                    delta.appeared.push(i);
                    i
                }
            };
            seen.push(idx);
        }
        seen.sort_unstable();
        let regions = &mut self.regions;
        self.live.retain(|k, &mut i| {
            if k.pid != pid || seen.binary_search(&i).is_ok() {
                return true;
            }
            regions[i].live = false;
            delta.disappeared.push(i);
            false
        });
        delta.disappeared.sort_unstable();
        delta
    }

    /// Ends every live region of `pid` (the process exited); returns their
    /// indices.
    pub fn end_pid(&mut self, pid: u32) -> Vec<usize> {
        self.ingest(0, pid, &[]).disappeared
    }

    /// Every region seen, in order of first appearance.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The regions present in their process's latest snapshot.
    pub fn live(&self) -> impl Iterator<Item = &Region> {
        self.regions.iter().filter(|r| r.live)
    }

    /// The live region of `pid` containing `addr`.
    pub fn find(&self, pid: u32, addr: u64) -> Option<&Region> {
        self.live()
            .find(|r| r.pid == pid && r.start <= addr && addr < r.end)
    }

    /// All regions, consuming the tracker.
    pub fn into_regions(self) -> Vec<Region> {
        self.regions
    }
}
