//! The tables of a traced run (`swaplab trace`): fault and swap events,
//! memory regions, allocations, allocation sites and processes. These are
//! the join keys of DESIGN.md's data model; `swaplab analyze` reads them
//! and the trace directory stores each as one Parquet file (schemas in
//! docs/tracing.md, written by `swaplab_trace::trace_dir`).
//!
//! Times are nanoseconds since the traced command started (CLOCK_MONOTONIC
//! differences). Addresses are virtual addresses of the process `pid`.

use serde::{Deserialize, Serialize};

/// What kind of page fault an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Served without I/O (first touch, swap-cache hit, copy-on-write).
    Minor,
    /// The kernel counted it major (the page was read from swap or a file).
    Major,
    /// The source cannot tell (the tracefs source without the swap-entry
    /// companion event).
    Unknown,
}

impl FaultKind {
    /// The code stored in the `kind` column.
    pub fn code(self) -> i32 {
        match self {
            FaultKind::Minor => 0,
            FaultKind::Major => 1,
            FaultKind::Unknown => 2,
        }
    }
    /// The kind for a `kind` column code.
    pub fn from_code(c: i32) -> Option<FaultKind> {
        match c {
            0 => Some(FaultKind::Minor),
            1 => Some(FaultKind::Major),
            2 => Some(FaultKind::Unknown),
            _ => None,
        }
    }
}

/// One page fault of a traced process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultEvent {
    /// ns since the command started.
    pub t_ns: u64,
    /// Process (thread group) id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The faulting data address.
    pub addr: u64,
    /// The instruction pointer of the faulting instruction.
    pub ip: u64,
    /// Minor, major or unknown.
    pub kind: FaultKind,
}

/// Direction of a swap event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapDir {
    /// The page went to swap (present → swapped).
    Out,
    /// The page came back (swapped → present, or a major fault on it).
    In,
}

/// How a swap event was observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapSource {
    /// A change between two pagemap samples (time = the later sample).
    Pagemap,
    /// A major fault on an anonymous page (exact time).
    Fault,
}

/// One page moving to or from swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapEvent {
    /// ns since the command started.
    pub t_ns: u64,
    /// Process id.
    pub pid: u32,
    /// Page-aligned virtual address.
    pub vaddr: u64,
    /// Out or in.
    pub dir: SwapDir,
    /// Swap area index (pagemap swap type), when known.
    pub swap_type: Option<u8>,
    /// Slot in that area (pagemap swap offset), when known.
    pub swap_offset: Option<u64>,
    /// How it was seen.
    pub source: SwapSource,
}

/// A mapping of a process, as /proc/PID/maps showed it over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// Process id.
    pub pid: u32,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `rw-p` etc.
    pub perms: String,
    /// The file, `[heap]`, `[stack]`, `[anon]` (no name) or another `[...]` name.
    pub path: String,
    /// First snapshot that showed it (ns since start).
    pub first_seen_ns: u64,
    /// Last snapshot that showed it.
    pub last_seen_ns: u64,
}

/// One allocation at or above the preload library's threshold, or a
/// sampled one below it (`weight` is then the bytes it stands for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// Process that made it (or inherited it across fork: see `inherited`).
    pub pid: u32,
    /// Thread that made it.
    pub tid: u32,
    /// First byte.
    pub start: u64,
    /// Bytes asked for.
    pub size: u64,
    /// When (ns since start).
    pub t_alloc_ns: u64,
    /// When it was freed / unmapped, if it was.
    pub t_free_ns: Option<u64>,
    /// The call stack ([`Site::site_id`]).
    pub site_id: u32,
    /// `malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`,
    /// `memalign`, `valloc`, `mmap`, `mremap`.
    pub func: String,
    /// `None`: logged because it is at or above the threshold (exact).
    /// `Some(w)`: picked by the heap sampler (`trace --heap-sample`); it
    /// stands for `w` bytes of its site
    /// ([`crate::alloc_log::sample_weight`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
}

impl Allocation {
    /// True for a sampled allocation below the threshold.
    pub fn sampled(&self) -> bool {
        self.weight.is_some()
    }
}

/// A deduplicated, symbolized allocation call stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// Id used by [`Allocation::site_id`].
    pub site_id: u32,
    /// Stable key frames, innermost (the allocator's caller) first:
    /// `module!function+0xOFF`, or `module+0xOFF` without a symbol.
    pub frames: Vec<String>,
    /// `file:line` per frame where debug information has it, else empty.
    pub locations: Vec<String>,
}

impl Site {
    /// The site's display name: the first frame outside allocator
    /// wrappers with a location if one has it.
    pub fn label(&self) -> String {
        let i = self
            .frames
            .iter()
            .position(|f| !is_wrapper_frame(f))
            .unwrap_or(0);
        match (self.frames.get(i), self.locations.get(i)) {
            (Some(f), Some(l)) if !l.is_empty() => format!("{f} ({l})"),
            (Some(f), _) => f.clone(),
            _ => format!("site {}", self.site_id),
        }
    }
}

/// Display names for `sites` that tell them apart: each site's
/// [`Site::label`], and where several sites share one (a stripped library's
/// own malloc wrapper, `libsqlite3.so+0xa7504`, is the innermost frame of
/// all its sites) their callers are appended, ` ← ` one frame at a time,
/// until the names differ or the frames run out. A caller in the same
/// module as the labelled frame is shortened to what follows the module
/// (`+0x3a1c2`, `sym+0x10`).
pub fn distinct_labels(sites: &[Site]) -> std::collections::HashMap<u32, String> {
    use std::collections::HashMap;
    let module = |f: &str| -> String {
        match f.split_once('!') {
            Some((m, _)) => m.to_string(),
            None => f.rsplit_once('+').map_or(f, |(m, _)| m).to_string(),
        }
    };
    // (label so far, index of the last frame shown, module of the label frame)
    let mut state: Vec<(String, usize, String)> = sites
        .iter()
        .map(|s| {
            let i = s
                .frames
                .iter()
                .position(|f| !is_wrapper_frame(f))
                .unwrap_or(0);
            let m = s.frames.get(i).map(|f| module(f)).unwrap_or_default();
            (s.label(), i, m)
        })
        .collect();
    loop {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (l, _, _) in &state {
            *count.entry(l.as_str()).or_default() += 1;
        }
        let dup: Vec<bool> = state
            .iter()
            .map(|(l, _, _)| count[l.as_str()] > 1)
            .collect();
        let mut grew = false;
        for ((st, s), d) in state.iter_mut().zip(sites).zip(dup) {
            let next = st.1 + 1;
            if !d || next >= s.frames.len() {
                continue;
            }
            let f = &s.frames[next];
            let short = if module(f) == st.2 {
                let rest = f.strip_prefix(st.2.as_str()).unwrap_or(f);
                rest.trim_start_matches('!').to_string()
            } else {
                f.clone()
            };
            st.0 = format!("{} ← {short}", st.0);
            st.1 = next;
            grew = true;
        }
        if !grew {
            break;
        }
    }
    // A long chain shows its labelled frame, `…`, and the shortest tail of
    // callers that no other site with the same labelled frame ends with
    // (`label ← … ← sqlite3BtreeInsert+0x7fd ← sqlite3VdbeExec+0x3a46`).
    let chains: Vec<Vec<&str>> = state
        .iter()
        .map(|(l, _, _)| l.split(" ← ").collect())
        .collect();
    sites
        .iter()
        .enumerate()
        .map(|(a, s)| {
            let c = &chains[a];
            let callers = &c[1..];
            let ends_alike = |k: usize| {
                chains.iter().enumerate().any(|(b, d)| {
                    b != a && d[0] == c[0] && d.len() > k && d[d.len() - k..] == c[c.len() - k..]
                })
            };
            let label = match (1..callers.len().saturating_sub(1)).find(|&k| !ends_alike(k)) {
                Some(k) => format!("{} ← … ← {}", c[0], c[c.len() - k..].join(" ← ")),
                None => state[a].0.clone(),
            };
            (s.site_id, label)
        })
        .collect()
}

/// True for frames of allocation wrappers (`xmalloc`, `operator new`, …)
/// that every site shares, which a label should skip.
pub fn is_wrapper_frame(frame: &str) -> bool {
    let func = frame.split_once('!').map(|(_, f)| f).unwrap_or(frame);
    let func = func.split('+').next().unwrap_or(func);
    matches!(
        func,
        "xmalloc" | "xcalloc" | "xrealloc" | "_Znwm" | "_Znam" | "_ZnwmSt11align_val_t"
    ) || func.starts_with("operator new")
}

/// A process of the traced tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 for the traced command itself).
    pub ppid: u32,
    /// When it was first seen (its fork, if the preload library saw it).
    pub t_start_ns: u64,
    /// Its command name, if known.
    pub comm: String,
}

/// All tables of one trace, in memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceTables {
    /// Fault events, in time order.
    pub faults: Vec<FaultEvent>,
    /// Swap events, in time order.
    pub swaps: Vec<SwapEvent>,
    /// Regions.
    pub regions: Vec<Region>,
    /// Allocations.
    pub allocations: Vec<Allocation>,
    /// Allocation sites.
    pub sites: Vec<Site>,
    /// Processes.
    pub processes: Vec<Process>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(id: u32, frames: &[&str]) -> Site {
        Site {
            site_id: id,
            frames: frames.iter().map(|f| f.to_string()).collect(),
            locations: Vec::new(),
        }
    }

    #[test]
    fn sites_of_one_wrapper_are_told_apart_by_their_callers() {
        let sites = [
            // a stripped library's malloc wrapper, three callers (two share
            // their first caller, so they need two frames)
            site(
                1,
                &[
                    "libsqlite3.so+0xa7504",
                    "libsqlite3.so+0x3a1c2",
                    "sqlite3!main+0x10",
                ],
            ),
            site(
                2,
                &[
                    "libsqlite3.so+0xa7504",
                    "libsqlite3.so+0x3a1c2",
                    "libc.so.6!x+0x2",
                ],
            ),
            site(3, &["libsqlite3.so+0xa7504", "libsqlite3.so+0x41d0"]),
            // unique from the start: left alone
            site(4, &["w!xmalloc+0x2a", "w!run_traverse+0x5c"]),
            // a duplicate with no more frames keeps its label
            site(5, &["only+0x1"]),
            site(6, &["only+0x1", "other!f+0x3"]),
            // long chains that differ only deep down: the middle is elided
            site(7, &["m+0x1", "m+0x2", "m+0x3", "m+0x4", "a!x+0x1"]),
            site(8, &["m+0x1", "m+0x2", "m+0x3", "m+0x4", "a!y+0x1"]),
            // ... with as many callers as tell it apart: 9 and 10 both end
            // with +0x9, 10 is too short to elide
            site(9, &["n+0x1", "n+0x2", "n+0x3", "n+0x4", "n+0x9"]),
            site(10, &["n+0x1", "n+0x2", "n+0x3", "n+0x9"]),
            site(11, &["n+0x1", "n+0x2", "n+0x3", "n+0x4", "n+0xc"]),
        ];
        let l = distinct_labels(&sites);
        assert_eq!(
            l[&1],
            "libsqlite3.so+0xa7504 ← +0x3a1c2 ← sqlite3!main+0x10"
        );
        assert_eq!(l[&2], "libsqlite3.so+0xa7504 ← +0x3a1c2 ← libc.so.6!x+0x2");
        assert_eq!(l[&3], "libsqlite3.so+0xa7504 ← +0x41d0");
        assert_eq!(l[&4], "w!run_traverse+0x5c");
        assert_eq!(l[&5], "only+0x1");
        assert_eq!(l[&6], "only+0x1 ← other!f+0x3");
        assert_eq!(l[&7], "m+0x1 ← … ← a!x+0x1");
        assert_eq!(l[&8], "m+0x1 ← … ← a!y+0x1");
        assert_eq!(l[&9], "n+0x1 ← … ← +0x4 ← +0x9");
        assert_eq!(l[&10], "n+0x1 ← +0x2 ← +0x3 ← +0x9");
        assert_eq!(l[&11], "n+0x1 ← … ← +0xc");
        let distinct: std::collections::HashSet<_> = l.values().collect();
        assert_eq!(distinct.len(), 11);
    }
}
