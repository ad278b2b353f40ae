//! Page-fault event sources for `swaplab trace`: every user-mode page fault
//! of a command's whole process tree (threads and forked children) with
//! time, pid, tid, data address, instruction pointer and major/minor.
//!
//! Two sources behind one API ([`FaultTracerSetup`] → [`ChildHook`] →
//! [`FaultTracer`]):
//!
//! * [`FaultSourceKind::Perf`] ([`perf`]): perf software events
//!   PAGE_FAULTS_MAJ and PAGE_FAULTS_MIN, sampled at period 1, one ring per
//!   CPU. The kernel says major or minor. Measured here: about +1.1 µs per
//!   fault (see the module doc for the numbers).
//! * [`FaultSourceKind::Tracefs`] ([`tracefs`]): the
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
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::journal::Session;

pub mod perf;
mod sample;
pub mod tracefs;

pub use sample::{
    FaultKind, FaultOptions, FaultSample, FaultSourceKind, FaultStats, REORDER_WINDOW_NS,
};

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
