//! The types both fault sources produce and share: a sample, the options,
//! the end-of-trace counters, and the per-CPU merge. Depends on neither
//! source, so that each source and the facade ([`super`]) import it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Samples younger than this (relative to CLOCK_MONOTONIC now) are held back
/// by [`super::FaultTracer::drain`] so that the per-CPU buffers merge in time order.
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
    /// ([`super::FaultTracer::set_sparse`]).
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
    /// perf only: wake a waiter ([`super::FaultTracer::wait`]) after this many
    /// major-fault samples (0 = the kernel's default, at half the ring).
    pub wakeup_majors: u32,
    /// perf only: also open, switched off, a major-fault event sampling one
    /// fault in this many, for [`super::FaultTracer::set_sparse`] (0 or 1: none).
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
