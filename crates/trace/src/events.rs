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
