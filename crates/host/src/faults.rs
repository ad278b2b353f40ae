//! Page-fault event sources for `swaplab trace`: every user-mode page fault
//! of a command's whole process tree (threads and forked children) with
//! time, pid, tid, data address, instruction pointer and major/minor.
//!
//! Two sources behind one API ([`FaultTracerSetup`] → [`ChildHook`] →
//! [`FaultTracer`]):
//!
//! * [`FaultSourceKind::Perf`] ([`crate::perf`]): perf software events
//!   PAGE_FAULTS_MAJ and PAGE_FAULTS_MIN, sampled at period 1, one ring per
//!   CPU. The kernel says major or minor. Measured here: about +1.1 µs per
//!   fault (see the module doc for the numbers).
//! * [`FaultSourceKind::Tracefs`] ([`crate::tracefs`]): the
//!   `exceptions:page_fault_user` tracepoint in a private, journaled tracefs
//!   instance, read in binary. Cheaper per fault; major/minor is *inferred*
//!   from `kmem:rss_stat` (MM_SWAPENTS going down = a swap-in), which also
//!   counts swap-cache hits as major (the kernel counts them minor).
//!
//! Both see user-mode faults only (faults taken inside system calls, e.g. a
//! `read()` into untouched memory, are not reported), and both start at the
//! command's `exec`: the events are armed in the child between fork and exec
//! by [`ChildHook::run`], so nothing of the program's start is missed.
//!
//! ```no_run
//! use std::os::unix::process::CommandExt;
//! use std::process::Command;
//! use swaplab_host::faults::{FaultOptions, FaultSourceKind, FaultTracerSetup};
//! use swaplab_host::journal::Session;
//! # fn main() -> swaplab_host::Result<()> {
//! let mut session = Session::begin()?;
//! let setup = FaultTracerSetup::new(FaultSourceKind::Perf, &FaultOptions::default(), &mut session)?;
//! let hook = setup.child_hook();
//! let mut cmd = Command::new("./workload");
//! // SAFETY: the hook only makes system calls on data prepared before fork.
//! unsafe { cmd.pre_exec(move || hook.run()) };
//! let mut child = cmd.spawn().expect("spawn");
//! let mut tracer = setup.attach(child.id())?;
//! let mut samples = Vec::new();
//! while child.try_wait().expect("wait").is_none() {
//!     tracer.drain(&mut samples)?;
//!     std::thread::sleep(std::time::Duration::from_millis(50));
//! }
//! let stats = tracer.finish(&mut samples)?;
//! println!("{} faults, {} lost", stats.samples, stats.lost);
//! # Ok(()) }
//! ```
//!
//! Samples come out in time order (CLOCK_MONOTONIC): [`FaultTracer::drain`]
//! holds back the last [`REORDER_WINDOW_NS`] so that the per-CPU streams can
//! be merged; [`FaultTracer::finish`] returns the rest.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::journal::Session;
use crate::{perf, tracefs};

/// Samples younger than this (relative to CLOCK_MONOTONIC now) are held back
/// by [`FaultTracer::drain`] so that the per-CPU buffers merge in time order.
pub const REORDER_WINDOW_NS: u64 = 50_000_000;

/// Major or minor, as far as the source can tell (perf: the kernel's
/// VM_FAULT_MAJOR; tracefs: a swap-in seen, including swap-cache hits;
/// `Unknown`: tracefs without `kmem:rss_stat`). The trace's own type, so a
/// sample becomes a table row with no conversion.
pub use swaplab_trace::events::FaultKind;

/// One page fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSample {
    /// When it happened, CLOCK_MONOTONIC nanoseconds (perf: at completion;
    /// tracefs: at entry).
    pub time_ns: u64,
    /// The process (thread-group id).
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// The faulting data address.
    pub addr: u64,
    /// The instruction pointer of the faulting instruction.
    pub ip: u64,
    /// Major or minor.
    pub kind: FaultKind,
    /// Faults of its kind this sample stands for: 1 when every fault is
    /// sampled (tracefs always), more while perf samples sparsely
    /// ([`FaultTracer::set_sparse`]).
    pub period: u64,
}

/// Which facility delivers the faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultSourceKind {
    /// perf_event_open software events.
    Perf,
    /// A tracefs instance with `exceptions:page_fault_user`.
    Tracefs,
}

impl FromStr for FaultSourceKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "perf" => Ok(FaultSourceKind::Perf),
            "tracefs" | "trace" | "ftrace" => Ok(FaultSourceKind::Tracefs),
            _ => Err(Error::parse("fault source", s, "use perf or tracefs")),
        }
    }
}

impl fmt::Display for FaultSourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultSourceKind::Perf => "perf",
            FaultSourceKind::Tracefs => "tracefs",
        })
    }
}

/// How to set a source up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultOptions {
    /// Buffer per CPU in bytes; 0 = the source's default (perf 4 MiB, rounded
    /// up to a power-of-two number of pages; tracefs 8192 KiB).
    pub buffer_bytes_per_cpu: u64,
    /// tracefs only: also record `kmem:rss_stat` (MM_SWAPENTS) to infer
    /// major faults. Without it every tracefs sample is
    /// [`FaultKind::Unknown`]. Default true.
    pub infer_major: bool,
    /// perf only: deliver minor faults too (default true). Off, the minor
    /// event still exists (the hook opens two events per CPU) but with a
    /// sample period no program reaches, so it only counts.
    pub sample_minor: bool,
    /// perf only: wake a waiter ([`FaultTracer::wait`]) after this many
    /// major-fault samples (0 = the kernel's default, at half the ring).
    pub wakeup_majors: u32,
    /// perf only: also open, switched off, a major-fault event sampling one
    /// fault in this many, for [`FaultTracer::set_sparse`] (0 or 1: none).
    pub sparse_majors: u64,
}

impl Default for FaultOptions {
    fn default() -> Self {
        FaultOptions {
            buffer_bytes_per_cpu: 0,
            infer_major: true,
            sample_minor: true,
            wakeup_majors: 0,
            sparse_majors: 0,
        }
    }
}

/// Counters at the end of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultStats {
    /// Events the kernel dropped (perf PERF_RECORD_LOST; tracefs per-CPU
    /// overrun + dropped events).
    pub lost: u64,
    /// Samples delivered (drain + finish).
    pub samples: u64,
    /// The source.
    pub source: FaultSourceKind,
    /// Things worth telling the user (throttling, unknown tgids, …).
    pub notes: Vec<String>,
}

enum SetupInner {
    Perf(perf::PerfSetup),
    Tracefs(Box<tracefs::TracefsSetup>),
}

/// A fault source prepared before the child is spawned.
pub struct FaultTracerSetup {
    inner: SetupInner,
}

impl fmt::Debug for FaultTracerSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultTracerSetup")
            .field("source", &self.kind())
            .finish()
    }
}

impl FaultTracerSetup {
    /// Checks the facility and prepares everything the child hook needs
    /// (perf: the event attributes and a socketpair; tracefs: the instance,
    /// its events and buffers, the files the hook writes).
    pub fn new(kind: FaultSourceKind, opts: &FaultOptions, session: &mut Session) -> Result<Self> {
        let inner = match kind {
            FaultSourceKind::Perf => SetupInner::Perf(perf::PerfSetup::new(opts)?),
            FaultSourceKind::Tracefs => {
                SetupInner::Tracefs(Box::new(tracefs::TracefsSetup::new(opts, session)?))
            }
        };
        Ok(FaultTracerSetup { inner })
    }

    /// The source.
    pub fn kind(&self) -> FaultSourceKind {
        match self.inner {
            SetupInner::Perf(_) => FaultSourceKind::Perf,
            SetupInner::Tracefs(_) => FaultSourceKind::Tracefs,
        }
    }

    /// The hook to run in the child between fork and exec
    /// (`CommandExt::pre_exec`).
    pub fn child_hook(&self) -> ChildHook {
        ChildHook {
            inner: match &self.inner {
                SetupInner::Perf(p) => HookInner::Perf(p.hook()),
                SetupInner::Tracefs(t) => HookInner::Tracefs(t.hook()),
            },
        }
    }

    /// Call after `Command::spawn` returned (the hook has run): collects the
    /// child's events (perf: receives the fds and maps the rings).
    pub fn attach(self, child_pid: u32) -> Result<FaultTracer> {
        let inner = match self.inner {
            SetupInner::Perf(p) => TracerInner::Perf(p.attach(child_pid)?),
            SetupInner::Tracefs(t) => TracerInner::Tracefs(Box::new(t.attach(child_pid)?)),
        };
        Ok(FaultTracer { inner })
    }
}

#[derive(Clone)]
enum HookInner {
    Perf(Arc<perf::PerfHook>),
    Tracefs(Arc<tracefs::TracefsHook>),
}

/// Runs in the forked child before exec; async-signal-safe (no allocation,
/// no locks: system calls on data prepared before the fork).
#[derive(Clone)]
pub struct ChildHook {
    inner: HookInner,
}

impl fmt::Debug for ChildHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChildHook")
    }
}

impl ChildHook {
    /// Arms the events for the calling (child) process. Call it from
    /// `CommandExt::pre_exec` only: it acts on the calling process.
    pub fn run(&self) -> std::io::Result<()> {
        match &self.inner {
            HookInner::Perf(h) => h.run(),
            HookInner::Tracefs(h) => h.run(),
        }
    }
}

enum TracerInner {
    Perf(perf::PerfTracer),
    Tracefs(Box<tracefs::TracefsTracer>),
}

/// A running fault trace.
pub struct FaultTracer {
    inner: TracerInner,
}

impl fmt::Debug for FaultTracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultTracer")
            .field("source", &self.kind())
            .finish()
    }
}

impl FaultTracer {
    /// The source.
    pub fn kind(&self) -> FaultSourceKind {
        match self.inner {
            TracerInner::Perf(_) => FaultSourceKind::Perf,
            TracerInner::Tracefs(_) => FaultSourceKind::Tracefs,
        }
    }

    /// Appends, in time order, the samples available now (never blocks).
    /// Holds back the last [`REORDER_WINDOW_NS`] for the per-CPU merge.
    /// Call it often enough that the buffers do not fill (a 4 MiB perf ring
    /// holds about 87 000 faults per CPU).
    pub fn drain(&mut self, out: &mut Vec<FaultSample>) -> Result<()> {
        match &mut self.inner {
            TracerInner::Perf(p) => p.drain(out, false),
            TracerInner::Tracefs(t) => t.drain(out, false),
        }
    }

    /// Appends every sample available now, without holding any back: for a
    /// consumer that needs low latency more than a global time order (each
    /// CPU's samples, hence each thread's between migrations, stay in order).
    pub fn drain_now(&mut self, out: &mut Vec<FaultSample>) -> Result<()> {
        match &mut self.inner {
            TracerInner::Perf(p) => p.drain(out, true),
            TracerInner::Tracefs(t) => t.drain(out, true),
        }
    }

    /// Blocks until new samples may be there (perf: the rings' wakeup, see
    /// [`FaultOptions::wakeup_majors`]) or `timeout` passed. Returns false
    /// when every traced task has exited (nothing more will come).
    pub fn wait(&mut self, timeout: std::time::Duration) -> Result<bool> {
        match &mut self.inner {
            TracerInner::Perf(p) => p.wait(timeout),
            TracerInner::Tracefs(_) => {
                std::thread::sleep(timeout);
                Ok(true)
            }
        }
    }

    /// Sparse: sample one major fault in [`FaultOptions::sparse_majors`]
    /// and no minor fault, in every thread and child of the traced tree
    /// (the samples' [`FaultSample::period`] says so); dense: every fault
    /// again (perf only; tracefs has no period and says so). The kernel's
    /// count ([`FaultTracer::major_count`]) stays exact.
    pub fn set_sparse(&mut self, sparse: bool) -> Result<()> {
        match &mut self.inner {
            TracerInner::Perf(p) => p.set_sparse(sparse),
            TracerInner::Tracefs(_) => Err(Error::unsupported(
                "sparse fault sampling",
                "tracefs events have no sample period",
                "use the perf fault source",
            )),
        }
    }

    /// Every major fault of the traced tasks so far, counted by the kernel
    /// (perf only).
    pub fn major_count(&self) -> Result<u64> {
        match &self.inner {
            TracerInner::Perf(p) => p.major_count(),
            TracerInner::Tracefs(_) => Err(Error::unsupported(
                "a major-fault count",
                "tracefs events are not counters",
                "use the perf fault source",
            )),
        }
    }

    /// Final drain (everything left, in time order) and teardown: perf rings
    /// unmapped and events closed; the tracefs instance switched off (its
    /// removal is in the session's journal and happens on restore, or now
    /// if possible).
    pub fn finish(self, out: &mut Vec<FaultSample>) -> Result<FaultStats> {
        match self.inner {
            TracerInner::Perf(p) => p.finish(out),
            TracerInner::Tracefs(t) => t.finish(out),
        }
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The online CPUs (from /sys/devices/system/cpu/online).
pub(crate) fn online_cpus() -> Result<Vec<u32>> {
    let p = std::path::Path::new("/sys/devices/system/cpu/online");
    let text = crate::util::read_trimmed(p)?;
    parse_cpu_list(&text)
}

pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|s| !s.is_empty()) {
        let bad = || Error::parse("cpu list", text, "expected e.g. 0-3,5");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.trim().parse().map_err(|_| bad())?;
                let b: u32 = b.trim().parse().map_err(|_| bad())?;
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

/// Merges per-CPU streams into time order: samples are released once they
/// are older than a watermark.
#[derive(Debug, Default)]
pub(crate) struct Reorder {
    pending: Vec<FaultSample>,
}

impl Reorder {
    pub(crate) fn push(&mut self, s: FaultSample) {
        self.pending.push(s);
    }

    /// Moves the samples with `time_ns <= upto` to `out`, in time order
    /// (stable: equal times keep their arrival order).
    pub(crate) fn release(&mut self, upto: u64, out: &mut Vec<FaultSample>) -> u64 {
        self.pending.sort_by_key(|s| s.time_ns);
        let n = self.pending.partition_point(|s| s.time_ns <= upto);
        out.extend(self.pending.drain(..n));
        n as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_kind_round_trips() {
        for k in [FaultSourceKind::Perf, FaultSourceKind::Tracefs] {
            assert_eq!(k.to_string().parse::<FaultSourceKind>().unwrap(), k);
        }
        assert!("bogus".parse::<FaultSourceKind>().is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_list("0,2-3,7\n").unwrap(), vec![0, 2, 3, 7]);
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn reorder_releases_in_time_order() {
        let s = |t| FaultSample {
            time_ns: t,
            pid: 1,
            tid: 1,
            addr: 0,
            ip: 0,
            kind: FaultKind::Minor,
            period: 1,
        };
        let mut r = Reorder::default();
        for t in [5, 1, 9, 3] {
            r.push(s(t));
        }
        let mut out = Vec::new();
        assert_eq!(r.release(5, &mut out), 3);
        assert_eq!(out.iter().map(|s| s.time_ns).collect::<Vec<_>>(), [1, 3, 5]);
        r.release(u64::MAX, &mut out);
        assert_eq!(out.len(), 4);
    }
}
