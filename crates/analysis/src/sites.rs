//! Allocation sites from the preload library's logs
//! (`libswaplab-preload.so`, format [`swaplab_trace::alloc_log`]): call
//! stacks symbolized and deduplicated into sites, the logged allocations
//! numbered and tied to their sites, for a traced run's tables
//! ([`allocations_from_logs`]) and for a reference trace's sidecar
//! ([`sites_from_log`]); and the library's report of the hints it applied
//! ([`read_hint_report`]). Decoding only: the logs are read by the caller.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use swaplab_trace::alloc_log;
use swaplab_trace::alloc_sites::{self, AllocSites, SiteAlloc, SiteEntry, SiteModule};
use swaplab_trace::events::{Allocation, Process, Site};
use swaplab_trace::TraceMeta;

use crate::symbolize::Symbolizer;

/// The preload library's call stacks as deduplicated, symbolized sites
/// (one per distinct list of frame keys), shared by `trace` and reference
/// capture.
#[derive(Default)]
struct StackSites {
    sym: Symbolizer,
    site_ids: HashMap<Vec<String>, u32>,
    /// The sites, ids 1, 2, … in order of first appearance.
    sites: Vec<Site>,
    /// Every module a symbolized frame named → its file.
    module_paths: BTreeMap<String, PathBuf>,
}

/// One log's module table and its stacks' sites, read as the log goes.
#[derive(Default)]
struct LogStacks {
    modules: HashMap<u32, PathBuf>,
    stack_site: HashMap<u32, u32>,
}

impl LogStacks {
    /// Reads a module or stack record (true), or leaves any other (false).
    fn read(&mut self, stacks: &mut StackSites, r: &alloc_log::Record) -> bool {
        match r {
            alloc_log::Record::Module { id, path } => {
                self.modules.insert(*id, path.clone());
            }
            alloc_log::Record::Stack { id, frames } => {
                let site = stacks.site_of(&self.modules, frames);
                self.stack_site.insert(*id, site);
            }
            _ => return false,
        }
        true
    }

    /// The site of a stack id, 0 when the log did not define it.
    fn site(&self, stack_id: u32) -> u32 {
        self.stack_site.get(&stack_id).copied().unwrap_or(0)
    }
}

impl StackSites {
    /// The site of a stack's `frames`, with `modules` the log's module
    /// table so far (a frame of an unknown module becomes `?ID+0xOFF`).
    fn site_of(&mut self, modules: &HashMap<u32, PathBuf>, frames: &[alloc_log::Frame]) -> u32 {
        let mut keys = Vec::with_capacity(frames.len());
        let mut locs = Vec::with_capacity(frames.len());
        for fr in frames {
            match modules.get(&fr.module_id) {
                Some(path) => {
                    let s = self.sym.symbolize(path, fr.offset);
                    locs.push(match (&s.file, s.line) {
                        (Some(f), Some(l)) => format!("{f}:{l}"),
                        _ => String::new(),
                    });
                    if !self.module_paths.contains_key(&s.module) {
                        self.module_paths.insert(s.module.clone(), path.clone());
                    }
                    keys.push(s.key);
                }
                None => {
                    keys.push(format!("?{}+{:#x}", fr.module_id, fr.offset));
                    locs.push(String::new());
                }
            }
        }
        let next = self.sites.len() as u32 + 1;
        let sites = &mut self.sites;
        *self.site_ids.entry(keys.clone()).or_insert_with(|| {
            sites.push(Site {
                site_id: next,
                frames: keys,
                locations: locs,
            });
            next
        })
    }
}

/// Turns the preload library's logs into allocations, symbolized sites and
/// processes. Sites are deduplicated across processes by their frames.
pub fn allocations_from_logs(
    logs: &[alloc_log::AllocLog],
    mono_t0: u64,
    notes: &mut Vec<String>,
) -> (Vec<Allocation>, Vec<Site>, Vec<Process>) {
    use alloc_log::Record;
    let mut stacks = StackSites::default();
    let mut allocs = Vec::new();
    let mut procs = Vec::new();
    let rel = |t: u64| t.saturating_sub(mono_t0);
    for log in logs {
        procs.push(Process {
            pid: log.pid,
            ppid: if log.forked { log.ppid } else { 0 },
            t_start_ns: rel(log.t0_ns),
            comm: String::new(),
        });
        let mut table = LogStacks::default();
        let mut open: HashMap<u64, usize> = HashMap::new();
        for r in &log.records {
            if table.read(&mut stacks, r) {
                continue;
            }
            match r {
                Record::Alloc(a) | Record::Sample { alloc: a, .. } => {
                    // A sampled small allocation stands for more bytes of its site.
                    let weight = match r {
                        Record::Sample { interval, .. } => {
                            Some(alloc_log::sample_weight(a.size, *interval))
                        }
                        _ => None,
                    };
                    let site_id = table.site(a.stack_id);
                    open.insert(a.addr, allocs.len());
                    allocs.push(Allocation {
                        pid: log.pid,
                        tid: a.tid,
                        start: a.addr,
                        size: a.size,
                        t_alloc_ns: rel(a.t_ns),
                        t_free_ns: None,
                        site_id,
                        func: a.func.name().to_string(),
                        weight,
                    });
                }
                Record::Free(a) => {
                    if let Some(i) = open.remove(&a.addr) {
                        allocs[i].t_free_ns = Some(rel(a.t_ns));
                    }
                }
                _ => {}
            }
        }
    }
    let sites = stacks.sites;
    note_undefined_modules(sites.iter().flat_map(|s| &s.frames), notes);
    (allocs, sites, procs)
}

/// Notes when a frame names a module its log did not define (`?ID+0xOFF`).
fn note_undefined_modules<'a>(
    mut frames: impl Iterator<Item = &'a String>,
    notes: &mut Vec<String>,
) {
    if frames.any(|f| f.starts_with('?')) {
        notes.push("some allocation stacks name modules the log did not define".into());
    }
}

/// One line of the preload library's hint report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedHint {
    /// Process.
    pub pid: u32,
    /// Hint id (1-based position in the hint file).
    pub id: u32,
    /// mlock, willneed, cold, pageout.
    pub action: String,
    /// Object start.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// `ok` or an errno name.
    pub result: String,
    /// result == ok.
    pub ok: bool,
}

/// Reads `hints-applied.tsv` (missing file: nothing applied).
pub fn read_hint_report(path: &Path) -> Vec<AppliedHint> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() < 6 {
                return None;
            }
            Some(AppliedHint {
                pid: f[0].parse().ok()?,
                id: f[1].parse().ok()?,
                action: f[2].to_string(),
                addr: u64::from_str_radix(f[3].trim_start_matches("0x"), 16).ok()?,
                len: f[4].parse().ok()?,
                result: f[5].to_string(),
                ok: f[5] == "ok",
            })
        })
        .collect()
}

/// The sidecar of a trace (`meta`) from the preload library's log of the
/// captured process: its allocations of at least `alloc_min` bytes in log
/// order (ALLOC and FREE events numbered together), their stacks
/// symbolized into the frame keys `advise` writes (as `swaplab trace`
/// does), and the modules those name. Sampled small allocations are left
/// out (hints never apply to them). A stack naming a module the log did
/// not define adds a line to `notes`.
pub fn sites_from_log(
    log: &alloc_log::AllocLog,
    program: &str,
    alloc_min: u64,
    meta: &TraceMeta,
    notes: &mut Vec<String>,
) -> AllocSites {
    use alloc_log::Record;
    let mut stacks = StackSites::default();
    let mut table = LogStacks::default();
    let mut allocations: Vec<SiteAlloc> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut seq = 0u64;
    for r in &log.records {
        if table.read(&mut stacks, r) {
            continue;
        }
        match r {
            Record::Alloc(a) => {
                open.insert(a.addr, allocations.len());
                allocations.push(SiteAlloc {
                    seq,
                    start: a.addr,
                    size: a.size,
                    site_id: table.site(a.stack_id),
                    func: a.func.name().to_string(),
                    free_seq: None,
                });
                seq += 1;
            }
            Record::Free(a) => {
                if let Some(i) = open.remove(&a.addr) {
                    allocations[i].free_seq = Some(seq);
                }
                seq += 1;
            }
            _ => {}
        }
    }
    note_undefined_modules(stacks.sites.iter().flat_map(|s| &s.frames), notes);
    AllocSites {
        kind: alloc_sites::SITES_KIND.into(),
        version: alloc_sites::SITES_VERSION,
        trace_count: meta.count,
        trace_distinct_pages: meta.distinct_pages,
        page_size: meta.page_size,
        alloc_min,
        capture: None,
        pid: log.pid,
        program: program.to_string(),
        modules: stacks
            .module_paths
            .iter()
            .map(|(name, path)| {
                let m = SiteModule {
                    path: path.display().to_string(),
                    build_id: crate::symbolize::build_id(path),
                };
                (name.clone(), m)
            })
            .collect::<BTreeMap<_, _>>(),
        sites: stacks
            .sites
            .into_iter()
            .map(|s| SiteEntry {
                site_id: s.site_id,
                frames: s.frames,
                locations: s.locations,
            })
            .collect(),
        allocations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_report_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.tsv");
        std::fs::write(
            &p,
            "12\t1\tmlock\t0x7f0000\t4096\tok\n12\t2\twillneed\t0x10\t8\tENOMEM\nbad line\n",
        )
        .unwrap();
        let r = read_hint_report(&p);
        assert_eq!(r.len(), 2);
        assert!(r[0].ok && r[0].addr == 0x7f0000 && r[0].len == 4096);
        assert!(!r[1].ok && r[1].result == "ENOMEM");
        assert!(read_hint_report(&d.path().join("missing")).is_empty());
    }
}
