//! The allocation sites of a reference trace: a JSON sidecar file next to
//! the native trace (`TRACE.sites.json` for `TRACE`), written by
//! `swaplab trace --refs` from the preload library's log of the captured
//! process, read by `swaplab sim TRACE --hints FILE` to apply site hints.
//!
//! The trace itself is unchanged (a trace without a sidecar reads as
//! before; other tools never see the sidecar). The sidecar names the trace
//! it belongs to by its reference count and distinct pages, which
//! [`AllocSites::check_trace`] compares.
//!
//! A reference stream has no clock, so allocations are ordered only among
//! themselves: `seq` numbers every ALLOC and FREE event of the process in
//! log order (0, 1, 2, …), and `free_seq` is the position of an
//! allocation's FREE (absent: never freed). How `sim` places them against
//! the references is described in docs/formats.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The `version` this code writes and reads.
pub const SITES_VERSION: u32 = 1;
/// The `kind` field: what the file is.
pub const SITES_KIND: &str = "swaplab.alloc_sites";

/// The sidecar of `trace`: the trace's file name with `.sites.json`
/// appended (`refs.parquet` → `refs.parquet.sites.json`).
pub fn sidecar_path(trace: &Path) -> PathBuf {
    let mut name = trace
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".sites.json");
    trace.with_file_name(name)
}

/// A module (executable or library) of the sites' frames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteModule {
    /// Its real path in the captured run.
    pub path: String,
    /// Its ELF build-id (lowercase hex), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
}

/// A deduplicated, symbolized allocation call stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteEntry {
    /// Id used by [`SiteAlloc::site_id`] (1, 2, …).
    pub site_id: u32,
    /// Frames, innermost first, `module!symbol+0xOFF` or `module+0xOFF`:
    /// the keys `advise` writes into hint files.
    pub frames: Vec<String>,
    /// `file:line` per frame where debug information has it, else empty.
    #[serde(default)]
    pub locations: Vec<String>,
}

/// One allocation of the captured process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteAlloc {
    /// Position of its ALLOC among the process's ALLOC and FREE events.
    pub seq: u64,
    /// First byte (virtual address; page = start / page_size).
    pub start: u64,
    /// Bytes asked for.
    pub size: u64,
    /// Its site ([`SiteEntry::site_id`]; 0 = the stack was not logged).
    pub site_id: u32,
    /// The allocating function (malloc, calloc, mmap, …).
    pub func: String,
    /// Position of its FREE; absent when it was never freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_seq: Option<u64>,
}

/// The whole sidecar file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocSites {
    /// Always [`SITES_KIND`].
    pub kind: String,
    /// [`SITES_VERSION`].
    pub version: u32,
    /// References of the trace it belongs to.
    pub trace_count: u64,
    /// Distinct pages of that trace.
    pub trace_distinct_pages: u64,
    /// Bytes per page of the trace.
    pub page_size: u64,
    /// The preload library's threshold: allocations of at least this many
    /// bytes are listed (the ones `run --hints` applies hints to).
    pub alloc_min: u64,
    /// How the references were captured: `lackey` (valgrind) or
    /// `instrumented` (a built-in workload's own recording, which runs the
    /// recording copies of its functions, `run_traverse_refs` for
    /// `run_traverse`, so its stacks name those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    /// The captured process.
    pub pid: u32,
    /// The module name of the captured program (its file name), which a
    /// hint's frames may name with another build hash (`run --hints`'s rule).
    pub program: String,
    /// Module name (as in the frames) → its file.
    #[serde(default)]
    pub modules: BTreeMap<String, SiteModule>,
    /// The sites, by id.
    pub sites: Vec<SiteEntry>,
    /// The allocations, in `seq` order.
    pub allocations: Vec<SiteAlloc>,
}

impl AllocSites {
    /// Writes the file atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Invalid(format!("encoding {}: {e}", path.display())))?;
        crate::atomic::write_atomic(path, &text)
    }

    /// Reads and checks a sidecar file.
    pub fn read(path: &Path) -> Result<AllocSites> {
        let text = std::fs::read(path).map_err(|e| Error::file("reading", path, e))?;
        Self::parse(&text, path)
    }

    /// Parses and checks the bytes of a sidecar file (`path` for messages).
    pub fn parse(text: &[u8], path: &Path) -> Result<AllocSites> {
        let bad = |detail: String| Error::Invalid(format!("{}: {detail}", path.display()));
        let v: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| bad(format!("not a JSON allocation-sites file: {e}")))?;
        if v.get("kind").and_then(|k| k.as_str()) != Some(SITES_KIND) {
            return Err(bad(format!(
                "not an allocation-sites file (no \"kind\": \"{SITES_KIND}\")"
            )));
        }
        match v.get("version").and_then(|k| k.as_u64()) {
            Some(n) if n == u64::from(SITES_VERSION) => {}
            Some(n) if n > u64::from(SITES_VERSION) => {
                return Err(bad(format!(
                    "version {n} was written by a newer swaplab (this one reads {SITES_VERSION}): upgrade swaplab"
                )))
            }
            other => return Err(bad(format!("bad version {other:?}: expected {SITES_VERSION}"))),
        }
        let s: AllocSites =
            serde_json::from_value(v).map_err(|e| bad(format!("malformed: {e}")))?;
        if s.page_size == 0 || !s.page_size.is_power_of_two() {
            return Err(bad(format!(
                "page_size {} is not a power of two",
                s.page_size
            )));
        }
        for a in &s.allocations {
            if a.site_id != 0 && !s.sites.iter().any(|x| x.site_id == a.site_id) {
                return Err(bad(format!(
                    "allocation {} names site {}, which the file does not list",
                    a.seq, a.site_id
                )));
            }
            if a.free_seq.is_some_and(|f| f <= a.seq) {
                return Err(bad(format!(
                    "allocation {} is freed at {:?}, before it was made",
                    a.seq, a.free_seq
                )));
            }
            if a.start.checked_add(a.size).is_none() {
                return Err(bad(format!(
                    "allocation {} ends past the address space",
                    a.seq
                )));
            }
        }
        if s.allocations.windows(2).any(|w| w[0].seq >= w[1].seq) {
            return Err(bad("allocations are not in seq order".into()));
        }
        Ok(s)
    }

    /// Refuses a sidecar that belongs to another trace.
    pub fn check_trace(&self, count: u64, distinct_pages: u64, page_size: u64) -> Result<()> {
        if (self.trace_count, self.trace_distinct_pages, self.page_size)
            != (count, distinct_pages, page_size)
        {
            return Err(Error::Invalid(format!(
                "the allocation sites are of another trace ({} references, {} distinct pages, \
                 {}-byte pages; this trace has {count}, {distinct_pages}, {page_size}): capture \
                 the trace and its sites again with `swaplab trace --refs`",
                self.trace_count, self.trace_distinct_pages, self.page_size
            )));
        }
        Ok(())
    }

    /// The site with id `id`.
    pub fn site(&self, id: u32) -> Option<&SiteEntry> {
        self.sites.iter().find(|s| s.site_id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AllocSites {
        AllocSites {
            kind: SITES_KIND.into(),
            version: SITES_VERSION,
            trace_count: 10,
            trace_distinct_pages: 4,
            page_size: 4096,
            alloc_min: 65536,
            capture: Some("lackey".into()),
            pid: 7,
            program: "w".into(),
            modules: BTreeMap::new(),
            sites: vec![SiteEntry {
                site_id: 1,
                frames: vec!["w!f+0x1".into()],
                locations: vec![String::new()],
            }],
            allocations: vec![SiteAlloc {
                seq: 0,
                start: 0x1000,
                size: 0x3000,
                site_id: 1,
                func: "malloc".into(),
                free_seq: Some(1),
            }],
        }
    }

    #[test]
    fn round_trips_and_names_its_trace() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("refs.parquet");
        let p = sidecar_path(&t);
        assert_eq!(p, dir.path().join("refs.parquet.sites.json"));
        let s = sample();
        s.write(&p).unwrap();
        let r = AllocSites::read(&p).unwrap();
        assert_eq!(r, s);
        r.check_trace(10, 4, 4096).unwrap();
        let e = r.check_trace(11, 4, 4096).unwrap_err().to_string();
        assert!(e.contains("of another trace"), "{e}");
    }

    #[test]
    fn refuses_bad_files() {
        let p = Path::new("x.sites.json");
        let enc = |s: &AllocSites| serde_json::to_vec(s).unwrap();
        let e = |b: &[u8]| AllocSites::parse(b, p).unwrap_err().to_string();
        assert!(e(b"{").contains("not a JSON"));
        assert!(e(b"{\"kind\":\"other\"}").contains("not an allocation-sites file"));
        let mut s = sample();
        s.version = 9;
        assert!(e(&enc(&s)).contains("newer swaplab"));
        let mut s = sample();
        s.allocations[0].site_id = 5;
        assert!(e(&enc(&s)).contains("names site 5"));
        let mut s = sample();
        s.allocations[0].free_seq = Some(0);
        assert!(e(&enc(&s)).contains("before it was made"));
        let mut s = sample();
        s.page_size = 3000;
        assert!(e(&enc(&s)).contains("power of two"));
    }
}
