//! `swaplab run --prefetch leap|stride|thread`: prefetching swapped pages
//! of a running program from outside it (docs/prefetch.md).
//!
//! `leap` and `stride` run in a thread of swaplab during the run. They read
//! the program's page faults live from perf software events
//! (PAGE_FAULTS_MAJ woken on every sample, PAGE_FAULTS_MIN for the hits;
//! the same events `swaplab trace` reads, see [`swaplab_host::faults::perf`], but
//! drained without the tracer's 50 ms reorder window), keep a history of
//! fault-address deltas per thread, and when a trend holds ask the kernel
//! to read the pages ahead of it into the swap cache with
//! `process_madvise(MADV_WILLNEED)` (and, with `pageout=1`, to reclaim the
//! pages well behind it with MADV_PAGEOUT). Only pages that pagemap shows
//! swapped are requested. No LD_PRELOAD: any program, static ones too.
//!
//! * `stride`: the last `k` deltas are equal (and not 0).
//! * `leap`: Leap's majority trend (Al Maruf & Chowdhury, ATC 2020): over
//!   the last `history` deltas, a Boyer-Moore majority in a window of
//!   history/split deltas, doubled up to the whole history until one holds.
//!
//! The window (how far ahead, in pages along the trend) follows Leap's
//! rule scaled to userspace latency: with no hit since the last request,
//! `window` (the base) if the fault follows the trend, nothing if not;
//! with hits, round_up_pow2(hits + 1), doubled when at least half of the
//! last request was used, capped at `max`, never below half the previous
//! window. A new request is issued when the program is within half a
//! window of the farthest page requested (like the kernel's async
//! readahead marker), so a steady walk never waits.
//!
//! Hits: a page read by WILLNEED sits in the swap cache; the program's
//! access to it is a *minor* fault (do_swap_page finds it there). A
//! requested page that then minor-faults is a used prefetch; one that
//! major-faults was late or evicted before use. Accuracy = used /
//! requested, coverage = used / (used + major faults).
//!
//! `thread` is the preload library's in-process prefetch thread: swaplab
//! only sets `SWAPLAB_PREFETCH=thread` and LD_PRELOAD for the command.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use swaplab_host::faults::{
    FaultKind, FaultOptions, FaultSample, FaultSourceKind, FaultTracer, FaultTracerSetup,
};
use swaplab_host::journal::Session;
use swaplab_host::pagemap::{read_entries, PM_PRESENT, PM_SWAP};
use swaplab_host::remote::{PidFd, MADV_PAGEOUT, MADV_WILLNEED};
pub mod spec;
pub use spec::{PrefetchMode, PrefetchSpec};
use swaplab_sim::prefetch::detector::{Detector, Unasked};

use crate::record::MetricName;
use crate::{Error, Result};

/// The environment variable that turns on the preload library's prefetch thread.
pub const PREFETCH_ENV: &str = "SWAPLAB_PREFETCH";
/// The requested-ranges log in the run directory (`log=1`).
pub const LOG_FILE: &str = "prefetch.tsv";
/// Most pages remembered as requested-and-not-yet-used (for accuracy).
const MAX_PENDING: usize = 1 << 22;
/// How long the thread sleeps in poll(2) when no sample wakes it.
const POLL: Duration = Duration::from_millis(1);
/// Major faults per wakeup of the thread. Each perf wakeup is an irq_work,
/// a self-IPI in the faulting task, which costs a VM exit in a guest: waking
/// on every fault doubled chase's system time on zram (10 s to 20 s for
/// 585 k faults); 32 faults or the 1 ms poll, whichever comes first.
const WAKEUP_MAJORS: u32 = 32;
/// Pages per WILLNEED call (2 MiB of 4 KiB pages): small enough that a
/// call ends before the program has moved far (with zram the call itself
/// decompresses the pages), large enough to keep the calls few.
const CHUNK: u64 = 512;
/// Pages asked for before the prefetcher judges whether they pay
/// ([`PrefetchStats::not_paying`]): 32 MiB of 4 KiB pages.
const JUDGE_PAGES: u64 = 8192;
/// The least share of the pages asked for that the program must use for
/// the prefetcher to go on asking.
const MIN_ACCURACY: f64 = 0.10;
/// With no trend for this long, the thread stops waking on every fault
/// and samples sparsely ([`SPARSE`]).
const IDLE: Duration = Duration::from_millis(20);
/// While no trend holds, one major fault in this many is sampled and minor
/// faults are not sampled at all (the kernel still counts every fault).
/// A sample costs the faulting program about 1–2.5 µs, which is a quarter
/// of a zram swap-in: sampling every fault of a random program made genome
/// 24 % slower on zram. A walk seen through every 16th fault still shows a
/// constant delta, so a trend is found in the sparse samples; then every
/// fault is sampled again and the detector starts afresh on the real deltas.
pub const SPARSE: u64 = 16;
/// How long the thread sleeps between drains while sampling is sparse: at
/// one sample in 16 a 4 MiB ring holds 1.4 M faults, and waking 1000 times
/// a second cost a random program 2 % of a CPU for nothing.
const SPARSE_POLL: Duration = Duration::from_millis(10);

/// What the prefetcher did in a run (its metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrefetchStats {
    /// CPU time of the prefetcher's threads (the fault loop and, with
    /// pageout, the pageout thread).
    pub cpu_ns: u64,
    /// CPU time of the pageout thread alone (0 without pageout).
    pub pageout_cpu_ns: u64,
    /// Time the threads spent inside process_madvise (reading pages in,
    /// and the reclaim their memory charge causes; writing pages out).
    pub madvise_ns: u64,
    /// process_madvise calls (WILLNEED and PAGEOUT).
    pub madvise_calls: u64,
    /// Pages asked for with WILLNEED (swapped when asked).
    pub pages_requested: u64,
    /// Requested pages the program then minor-faulted on (a hit).
    pub pages_used: u64,
    /// Requested pages the program then major-faulted on (late or evicted).
    pub pages_late: u64,
    /// Major faults on pages not asked for, within four windows past the
    /// last one along the trend: the walk outran the requests.
    pub majors_outran: u64,
    /// Major faults on pages not asked for inside the last window: resident
    /// when it was asked for, reclaimed before the walk came.
    pub majors_skipped: u64,
    /// Pages asked to be paged out behind the trend.
    pub pages_paged_out: u64,
    /// Major faults of the program (the kernel's count, sampled or not).
    pub major_faults: u64,
    /// Minor faults sampled (none while sampling is sparse).
    pub minor_faults: u64,
    /// Times a thread's trend appeared or changed.
    pub trend_switches: u64,
    /// Calls that failed because the program exited or unmapped the range.
    pub quiet_errors: u64,
    /// Times sampling went sparse (no trend for `IDLE`) and came back.
    pub sparse_switches: u64,
    /// Fault samples the kernel delivered (major and minor).
    pub samples: u64,
    /// Nanoseconds spent sampling sparsely.
    pub sparse_ns: u64,
    /// Whether minor faults were sampled (accuracy and coverage need them).
    pub minor_sampled: bool,
    /// `pageout=auto`: whether it was asked for, and the times it turned
    /// on and off (at most once each).
    pub pageout_auto: bool,
    pub pageout_started: u64,
    pub pageout_regrets: u64,
    /// 1 if the prefetcher turned itself off because its requests were
    /// not used (`MIN_ACCURACY`).
    pub gave_up: u64,
    /// Processes of the run with major faults the prefetcher saw, and
    /// processes it asked for pages in (or paged out of).
    pub processes: u64,
    pub processes_acted: u64,
    /// Notes for the run record.
    pub notes: Vec<String>,
}

impl PrefetchStats {
    /// Whether the requests have stopped paying: after [`JUDGE_PAGES`]
    /// pages asked for, fewer than [`MIN_ACCURACY`] of them were used (the
    /// program touched them from the swap cache). Unused requests cost the
    /// program I/O bandwidth and the memory they take from its limit, so
    /// the prefetcher stops asking, for good, and says so (pageout behind
    /// a walk goes on: it is judged by its own rule, `pageout=auto`).
    /// Without minor-fault sampling there is no count of used pages, and
    /// no judgement.
    fn not_paying(&mut self) -> bool {
        if self.gave_up > 0 {
            return true;
        }
        let (asked, used) = (self.pages_requested, self.pages_used);
        if !self.minor_sampled || asked < JUDGE_PAGES {
            return false;
        }
        // Pages asked for in the last CHUNK are still on their way: judge
        // the ones asked for before them.
        let judged = asked.saturating_sub(CHUNK);
        if (used as f64) >= MIN_ACCURACY * judged as f64 {
            return false;
        }
        self.gave_up = 1;
        self.notes.push(format!(
            "prefetcher: turned itself off: of {asked} pages asked for, the program used {used} \
             ({:.1} %, under {:.0} %); unused requests cost it I/O and memory under its limit. \
             Pages asked for after this: none",
            used as f64 * 100.0 / asked as f64,
            MIN_ACCURACY * 100.0
        ));
        true
    }

    /// used / requested (None without minor sampling or requests).
    pub fn accuracy(&self) -> Option<f64> {
        (self.minor_sampled && self.pages_requested > 0)
            .then(|| self.pages_used as f64 / self.pages_requested as f64)
    }

    /// used / (used + major faults): the share of would-be major faults
    /// the prefetcher turned into hits.
    pub fn coverage(&self) -> Option<f64> {
        let d = self.pages_used + self.major_faults;
        (self.minor_sampled && d > 0).then(|| self.pages_used as f64 / d as f64)
    }

    /// The metrics (name, value) for the run record.
    pub fn metrics(&self) -> Vec<(MetricName, f64)> {
        let mut m = vec![
            (MetricName::PrefetchCpuNs, self.cpu_ns as f64),
            (MetricName::PrefetchMadviseCalls, self.madvise_calls as f64),
            (MetricName::PrefetchMadviseNs, self.madvise_ns as f64),
            (
                MetricName::PrefetchPagesRequested,
                self.pages_requested as f64,
            ),
            (MetricName::PrefetchPagesLate, self.pages_late as f64),
            (MetricName::PrefetchMajorsOutran, self.majors_outran as f64),
            (
                MetricName::PrefetchMajorsSkipped,
                self.majors_skipped as f64,
            ),
            (
                MetricName::PrefetchPagesPagedOut,
                self.pages_paged_out as f64,
            ),
            (MetricName::PrefetchMajorFaults, self.major_faults as f64),
            (
                MetricName::PrefetchTrendSwitches,
                self.trend_switches as f64,
            ),
            (MetricName::PrefetchQuietErrors, self.quiet_errors as f64),
            (
                MetricName::PrefetchSparseSwitches,
                self.sparse_switches as f64,
            ),
            (MetricName::PrefetchSamples, self.samples as f64),
            (MetricName::PrefetchSparseNs, self.sparse_ns as f64),
            (MetricName::PrefetchProcesses, self.processes as f64),
            (MetricName::PrefetchGaveUp, self.gave_up as f64),
            (
                MetricName::PrefetchProcessesActed,
                self.processes_acted as f64,
            ),
        ];
        if self.minor_sampled {
            m.push((MetricName::PrefetchPagesUsed, self.pages_used as f64));
        }
        if self.pageout_cpu_ns > 0 {
            m.push((MetricName::PrefetchPageoutCpuNs, self.pageout_cpu_ns as f64));
        }
        if self.pageout_auto {
            m.push((
                MetricName::PrefetchPageoutStarted,
                self.pageout_started as f64,
            ));
            m.push((
                MetricName::PrefetchPageoutRegrets,
                self.pageout_regrets as f64,
            ));
        }
        if let Some(a) = self.accuracy() {
            m.push((MetricName::PrefetchAccuracy, a));
        }
        if let Some(c) = self.coverage() {
            m.push((MetricName::PrefetchCoverage, c));
        }
        m
    }
}

// ---------------------------------------------------------------- thread

/// A prefetcher set up before the command is spawned.
pub struct Prefetcher {
    spec: PrefetchSpec,
    limit: Option<u64>,
    setup: Option<FaultTracerSetup>,
    log: Option<PathBuf>,
    worker: Option<(Arc<AtomicBool>, JoinHandle<PrefetchStats>)>,
}

impl fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prefetcher")
            .field("spec", &self.spec)
            .finish()
    }
}

impl Prefetcher {
    /// Prepares the fault events (before spawn). `None` for `thread`,
    /// which runs inside the program. `limit`: the group's memory limit,
    /// bytes (`pageout=auto` stays off without one).
    pub fn prepare(
        spec: &PrefetchSpec,
        limit: Option<u64>,
        session: &mut Session,
        run_dir: &Path,
    ) -> Result<Option<Prefetcher>> {
        spec.validate()?;
        if spec.mode == PrefetchMode::Thread {
            return Ok(None);
        }
        let setup = FaultTracerSetup::new(
            FaultSourceKind::Perf,
            &FaultOptions {
                sample_minor: spec.minor,
                wakeup_majors: WAKEUP_MAJORS,
                sparse_majors: SPARSE,
                ..Default::default()
            },
            session,
        )?;
        Ok(Some(Prefetcher {
            spec: spec.clone(),
            limit,
            setup: Some(setup),
            log: spec.log.then(|| run_dir.join(LOG_FILE)),
            worker: None,
        }))
    }

    /// Installs the hook that arms the events in the child (between fork
    /// and exec).
    pub fn configure(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        if let Some(setup) = &self.setup {
            let hook = setup.child_hook();
            // SAFETY: the hook only makes async-signal-safe system calls on
            // data prepared before fork (see swaplab_host::faults).
            unsafe {
                cmd.pre_exec(move || hook.run());
            }
        }
    }

    /// The command started: attach and start the thread. The events are
    /// inherited by every thread and process the command starts; each
    /// process's faults are served in its own address space (`Space`).
    pub fn started(&mut self, pid: u32) -> Result<()> {
        let Some(setup) = self.setup.take() else {
            return Ok(());
        };
        let tracer = setup.attach(pid)?;
        let log = match &self.log {
            Some(p) => Some(std::io::BufWriter::new(
                File::create(p).map_err(|e| Error::io("creating", p, e))?,
            )),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spec = self.spec.clone();
        let limit = self.limit;
        let notes = zram_note().into_iter().collect();
        let pageouter = if self.spec.pageout || self.spec.pageout_auto {
            Some(Pageouter::start()?)
        } else {
            None
        };
        let mut spaces = HashMap::new();
        // The started process is opened now (it may exec, never fork,
        // before its first fault); the others at their first sample.
        spaces.insert(pid, Space::open(pid, &spec, limit));
        let handle = std::thread::Builder::new()
            .name("swaplab-prefetch".into())
            .spawn(move || {
                let mut w = Worker {
                    spec: spec.clone(),
                    limit,
                    spaces,
                    tracer: Some(tracer),
                    pageouter,
                    log,
                    stats: PrefetchStats {
                        minor_sampled: spec.minor,
                        pageout_auto: spec.pageout_auto && !spec.pageout,
                        notes,
                        ..Default::default()
                    },
                    page_shift: swaplab_host::util::page_size().trailing_zeros(),
                };
                w.run(&flag)
            })
            .map_err(|e| {
                Error::failed(
                    "starting the prefetcher thread",
                    e.to_string(),
                    "the machine may be out of threads; run without --prefetch",
                )
            })?;
        self.worker = Some((stop, handle));
        Ok(())
    }

    /// After the command ended: stops the thread and returns what it did.
    pub fn finish(mut self) -> Option<PrefetchStats> {
        let (stop, h) = self.worker.take()?;
        stop.store(true, Ordering::Relaxed);
        Some(h.join().unwrap_or_else(|_| PrefetchStats {
            notes: vec!["the prefetcher thread panicked; its counts are lost".into()],
            ..Default::default()
        }))
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        if let Some((stop, h)) = self.worker.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// A note when every swap area is zram: its "I/O" is synchronous, so a
/// page asked for from outside is decompressed in the prefetcher's thread
/// (with the reclaim its charge causes) and nothing overlaps.
fn zram_note() -> Option<String> {
    let areas = swaplab_host::swap::read_swaps().ok()?;
    (!areas.is_empty()
        && areas
            .iter()
            .all(|a| a.filename.to_string_lossy().starts_with("/dev/zram")))
    .then(|| {
        "prefetcher: every swap area is zram, whose reads are synchronous: the pages it asks for \
         are decompressed by its own thread and no I/O overlaps, so prefetching alone seldom \
         pays there; paging out behind a walk can (traverse at 50 %: 2.65 s base, 4.15 s \
         leap:pageout=0, 1.98 s leap; docs/prefetch.md, \"With zram\")"
            .to_string()
    })
}

/// `/proc/PID/pagemap` of one process. An open pagemap file belongs to
/// the address space it was opened on, and reads nothing once that is
/// gone: a process that exec'd (`sh -c 'exec prog'`, `env`, `nice`,
/// `chrt` exec the program in the process swaplab started) is read
/// through a file opened again.
struct Pagemap {
    pid: u32,
    file: Option<File>,
}

impl Pagemap {
    fn open(pid: u32) -> Pagemap {
        Pagemap {
            pid,
            file: File::open(format!("/proc/{pid}/pagemap")).ok(),
        }
    }

    /// Whether the file could be opened (root can; the checks are skipped
    /// without it).
    fn available(&self) -> bool {
        self.file.is_some()
    }

    /// The entries of pages `first..first + n` ([`read_entries`]); opens
    /// the file again once when it reads nothing (the process exec'd).
    fn read(
        &mut self,
        first: u64,
        n: usize,
        buf: &mut Vec<u8>,
        ent: &mut Vec<u64>,
    ) -> std::io::Result<()> {
        let Some(f) = &self.file else {
            return Err(std::io::ErrorKind::NotFound.into());
        };
        read_entries(f, first, n, buf, ent)?;
        if ent.is_empty() && n > 0 {
            let Ok(f) = File::open(format!("/proc/{}/pagemap", self.pid)) else {
                return Err(std::io::ErrorKind::NotFound.into());
            };
            read_entries(&f, first, n, buf, ent)?;
            self.file = Some(f);
        }
        Ok(())
    }
}

/// How many pages from `from` on along `dir` (±1) are present in memory
/// (pagemap bit 63), up to `max`; 0 without pagemap.
fn resident_run(pagemap: &mut Pagemap, from: i64, dir: i64, max: u64) -> u64 {
    const BATCH: u64 = 4096;
    if !pagemap.available() {
        return 0;
    }
    let (mut buf, mut ent) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    while n < max {
        let k = BATCH.min(max - n);
        // The next k pages along dir, read in address order.
        let first = from + dir * n as i64;
        let lo = if dir > 0 {
            first
        } else {
            first - (k as i64 - 1)
        };
        if lo < 0 {
            return n;
        }
        if pagemap
            .read(lo as u64, k as usize, &mut buf, &mut ent)
            .is_err()
        {
            return n;
        }
        let present = |i: usize| ent.get(i).is_some_and(|&v| v & PM_PRESENT != 0);
        for j in 0..k as usize {
            let i = if dir > 0 { j } else { k as usize - 1 - j };
            if !present(i) {
                return n;
            }
            n += 1;
        }
    }
    n
}

/// What a process_madvise did; a failure counts as one quiet error and
/// becomes a note (the first five).
fn advised(
    r: swaplab_host::Result<swaplab_host::remote::Advised>,
    notes: &mut Vec<String>,
) -> swaplab_host::remote::Advised {
    r.unwrap_or_else(|e| {
        if notes.len() < 5 {
            notes.push(format!("prefetcher: {e}"));
        }
        swaplab_host::remote::Advised {
            quiet_errors: 1,
            ..Default::default()
        }
    })
}

/// The thread that pages out what the walk passed. MADV_PAGEOUT writes
/// the pages to swap in the caller's context (unmap, add to swap,
/// submit the write): on traverse at 50 % it took 1.76 s of the
/// prefetcher's 2.05 s in madvise, and while it ran no WILLNEED went out,
/// so the program outran the window. Here it runs beside the fault loop,
/// one thread for every process of the run (each request names its
/// process).
struct Pageouter {
    tx: std::sync::mpsc::Sender<PageoutRequest>,
    handle: JoinHandle<PageoutDone>,
}

/// Ranges (bytes) of one process to page out.
type PageoutRequest = (Arc<PidFd>, Vec<(u64, u64)>);

/// What the pageout thread did.
#[derive(Default)]
struct PageoutDone {
    advised: swaplab_host::remote::Advised,
    madvise_ns: u64,
    cpu_ns: u64,
    notes: Vec<String>,
}

impl Pageouter {
    fn start() -> Result<Pageouter> {
        let (tx, rx) = std::sync::mpsc::channel::<PageoutRequest>();
        let handle = std::thread::Builder::new()
            .name("swaplab-pageout".into())
            .spawn(move || {
                let cpu0 = swaplab_host::util::thread_cpu_ns();
                let mut d = PageoutDone::default();
                let mut gone: HashSet<u32> = HashSet::new();
                // Each wake-up takes everything queued: one call per
                // process for the ranges that piled up while the last
                // one ran.
                while let Ok(first) = rx.recv() {
                    let mut queued = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        queued.push(more);
                    }
                    let mut by_pid: Vec<PageoutRequest> = Vec::new();
                    for (fd, ranges) in queued {
                        match by_pid.iter_mut().find(|(f, _)| f.pid() == fd.pid()) {
                            Some((_, r)) => r.extend(ranges),
                            None => by_pid.push((fd, ranges)),
                        }
                    }
                    for (fd, ranges) in by_pid {
                        if gone.contains(&fd.pid()) {
                            continue;
                        }
                        let t0 = std::time::Instant::now();
                        let a = advised(fd.madvise(&ranges, MADV_PAGEOUT), &mut d.notes);
                        d.madvise_ns += t0.elapsed().as_nanos() as u64;
                        d.advised.calls += a.calls;
                        d.advised.bytes += a.bytes;
                        d.advised.quiet_errors += a.quiet_errors;
                        if a.gone {
                            gone.insert(fd.pid());
                        }
                    }
                }
                d.cpu_ns = swaplab_host::util::thread_cpu_ns().saturating_sub(cpu0);
                d
            })
            .map_err(|e| {
                Error::failed(
                    "starting the prefetcher's pageout thread",
                    e.to_string(),
                    "the machine may be out of threads; run with --prefetch leap:pageout=0",
                )
            })?;
        Ok(Pageouter { tx, handle })
    }

    /// Queues `ranges` (bytes) of the process `fd` for MADV_PAGEOUT.
    fn send(&self, fd: Arc<PidFd>, ranges: Vec<(u64, u64)>) {
        let _ = self.tx.send((fd, ranges));
    }

    /// Waits for the queued pageouts and returns what the thread did.
    fn finish(self) -> PageoutDone {
        drop(self.tx);
        self.handle.join().unwrap_or_else(|_| PageoutDone {
            notes: vec!["the prefetcher's pageout thread panicked; its counts are lost".into()],
            ..Default::default()
        })
    }
}

/// One process of the run, as the prefetcher sees it: the address space
/// its faults are served in. Page numbers, trends, requests and pageouts
/// never mix between processes (a forked child has the parent's
/// addresses for other pages).
struct Space {
    pid: u32,
    /// The process's name when first seen (for the notes).
    comm: String,
    det: Detector,
    /// None: it had exited when first seen.
    pidfd: Option<Arc<PidFd>>,
    pagemap: Pagemap,
    /// Pages requested and not yet faulted on.
    pending: HashSet<i64>,
    /// process_madvise said the process is gone.
    gone: bool,
    /// Major faults sampled in it, and pages asked for or paged out.
    majors: u64,
    acted: u64,
}

impl Space {
    fn open(pid: u32, spec: &PrefetchSpec, limit: Option<u64>) -> Space {
        let pidfd = PidFd::open(pid).ok().map(Arc::new);
        Space {
            pid,
            comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_default(),
            det: Detector::with_limit(&spec.detector_spec(), limit),
            gone: pidfd.is_none(),
            pidfd,
            pagemap: Pagemap::open(pid),
            pending: HashSet::new(),
            majors: 0,
            acted: 0,
        }
    }

    /// "pid 123 (traverse)".
    fn name(&self) -> String {
        if self.comm.is_empty() {
            format!("pid {}", self.pid)
        } else {
            format!("pid {} ({})", self.pid, self.comm)
        }
    }
}

struct Worker {
    spec: PrefetchSpec,
    limit: Option<u64>,
    /// Every process whose faults were seen, by pid.
    spaces: HashMap<u32, Space>,
    tracer: Option<FaultTracer>,
    /// The thread that runs MADV_PAGEOUT (None when pageout is off).
    pageouter: Option<Pageouter>,
    log: Option<std::io::BufWriter<File>>,
    stats: PrefetchStats,
    page_shift: u32,
}

impl Worker {
    fn run(&mut self, stop: &AtomicBool) -> PrefetchStats {
        let cpu0 = swaplab_host::util::thread_cpu_ns();
        let mut buf: Vec<FaultSample> = Vec::with_capacity(4096);
        let mut tracer = self.tracer.take().expect("tracer");
        let mut last_trend = std::time::Instant::now();
        // Since when sampling is sparse (None: every fault is sampled).
        let mut sparse: Option<std::time::Instant> = None;
        let mut can_sparse = true;
        loop {
            let stopping = stop.load(Ordering::Relaxed);
            // While some thread has a trend, wake on every major fault;
            // after IDLE without one, sleep, take the faults in batches and
            // sample only one major fault in SPARSE, in every process of
            // the tree (a random program would otherwise wake this thread
            // on each of its faults and pay for every sample: CPU it needs).
            // A prefetcher that gave up ([`PrefetchStats::not_paying`]) with
            // no pageout to serve needs no trend: it stays sparse.
            let retired = self.stats.gave_up > 0 && self.pageouter.is_none();
            let idle = retired || last_trend.elapsed() >= IDLE;
            if idle && sparse.is_none() && can_sparse {
                match tracer.set_sparse(true) {
                    Ok(()) => {
                        sparse = Some(std::time::Instant::now());
                        self.stats.sparse_switches += 1;
                    }
                    Err(e) => {
                        can_sparse = false;
                        self.stats
                            .notes
                            .push(format!("prefetcher: every fault stays sampled: {e}"));
                    }
                }
            }
            let alive = if !idle {
                match tracer.wait(POLL) {
                    Ok(a) => a,
                    Err(e) => {
                        self.stats.notes.push(format!("prefetcher: {e}"));
                        false
                    }
                }
            } else {
                std::thread::sleep(if sparse.is_some() { SPARSE_POLL } else { POLL });
                true
            };
            buf.clear();
            if let Err(e) = tracer.drain_now(&mut buf) {
                self.stats.notes.push(format!("prefetcher: {e}"));
                break;
            }
            for s in &buf {
                let mut sp = self
                    .spaces
                    .remove(&s.pid)
                    .unwrap_or_else(|| Space::open(s.pid, &self.spec, self.limit));
                // Which mode a sample was taken in is its own: samples of
                // both modes can meet in one drain around a switch.
                if s.period > 1 {
                    self.probe(&mut sp, s);
                } else {
                    self.sample(&mut sp, s);
                }
                if let Some(page) = sp.det.region_query.take() {
                    self.tell_region(&mut sp, page);
                }
                self.spaces.insert(s.pid, sp);
            }
            if !retired && self.spaces.values().any(|sp| sp.det.any_trend()) {
                last_trend = std::time::Instant::now();
                if let Some(since) = sparse {
                    // A trend in the sparse samples: sample every fault
                    // again and find the real deltas.
                    self.forget();
                    self.stats.sparse_ns += since.elapsed().as_nanos() as u64;
                    sparse = None;
                    if let Err(e) = tracer.set_sparse(false) {
                        can_sparse = false;
                        self.stats
                            .notes
                            .push(format!("prefetcher: sampling stays sparse: {e}"));
                    }
                }
            }
            if stopping {
                break;
            }
            if !alive {
                // Every task exited: nothing more comes; wait for stop
                // without spinning on the hung-up events.
                std::thread::sleep(POLL);
            }
        }
        if let Some(since) = sparse {
            self.stats.sparse_ns += since.elapsed().as_nanos() as u64;
        }
        // The kernel counted every major fault, sampled or not.
        match tracer.major_count() {
            Ok(n) => self.stats.major_faults = n,
            Err(e) => self.stats.notes.push(format!(
                "prefetcher: major faults are the sampled ones: {e}"
            )),
        }
        let mut rest = Vec::new();
        if let Ok(fs) = tracer.finish(&mut rest) {
            self.stats.samples = fs.samples;
            if fs.lost > 0 {
                self.stats.notes.push(format!(
                    "prefetcher: the kernel dropped {} fault samples",
                    fs.lost
                ));
            }
        }
        if let Some(l) = &mut self.log {
            let _ = l.flush();
        }
        if let Some(po) = self.pageouter.take() {
            let d = po.finish();
            self.stats.madvise_calls += d.advised.calls;
            self.stats.quiet_errors += d.advised.quiet_errors;
            self.stats.pages_paged_out += d.advised.bytes >> self.page_shift;
            self.stats.madvise_ns += d.madvise_ns;
            self.stats.pageout_cpu_ns = d.cpu_ns;
            self.stats.notes.extend(d.notes);
        }
        self.per_process_notes();
        self.stats.cpu_ns =
            swaplab_host::util::thread_cpu_ns().saturating_sub(cpu0) + self.stats.pageout_cpu_ns;
        std::mem::take(&mut self.stats)
    }

    /// Forgets every thread's history, in every process.
    fn forget(&mut self) {
        for sp in self.spaces.values_mut() {
            sp.det.forget();
        }
    }

    /// The detectors' counts and notes, summed over the processes, and
    /// which processes had faults and which got requests.
    fn per_process_notes(&mut self) {
        let mut spaces: Vec<&mut Space> = self.spaces.values_mut().collect();
        spaces.sort_by_key(|sp| sp.pid);
        let several = spaces.len() > 1;
        for sp in spaces.iter_mut() {
            self.stats.trend_switches += sp.det.switches;
            self.stats.pageout_started += sp.det.po.started;
            self.stats.pageout_regrets += sp.det.po.regrets;
            let name = sp.name();
            for n in sp.det.po.notes.drain(..) {
                self.stats.notes.push(if several {
                    n.replacen("prefetcher:", &format!("prefetcher ({name}):"), 1)
                } else {
                    n
                });
            }
        }
        let faulted: Vec<&&mut Space> = spaces.iter().filter(|sp| sp.majors > 0).collect();
        self.stats.processes = faulted.len() as u64;
        self.stats.processes_acted = spaces.iter().filter(|sp| sp.acted > 0).count() as u64;
        if several {
            let list: Vec<String> = faulted
                .iter()
                .take(8)
                .map(|sp| {
                    format!(
                        "{}: {} major faults sampled, {} pages asked for or paged out",
                        sp.name(),
                        sp.majors,
                        sp.acted
                    )
                })
                .collect();
            self.stats.notes.push(format!(
                "prefetcher: major faults in {} of the {} processes it saw, requests in {} ({}{})",
                faulted.len(),
                spaces.len(),
                self.stats.processes_acted,
                list.join("; "),
                if faulted.len() > 8 { "; …" } else { "" }
            ));
        }
    }

    /// Tells the detector of `sp` the size of the mapping that holds
    /// `page` (from /proc/PID/maps; nothing when it cannot be read, e.g.
    /// the process exited).
    fn tell_region(&mut self, sp: &mut Space, page: i64) {
        let Ok(maps) = swaplab_host::maps::read_maps(sp.pid) else {
            return;
        };
        let addr = (page as u64) << self.page_shift;
        if let Some(m) = maps.iter().find(|m| m.start <= addr && addr < m.end) {
            sp.det.region_pages(m.len() >> self.page_shift);
        }
    }

    /// A sample taken while sampling is sparse: fed to the detector only to
    /// notice a trend (its requests would follow multiples of the real
    /// deltas); a hit on a page requested earlier is still counted.
    fn probe(&mut self, sp: &mut Space, s: &FaultSample) {
        let page = (s.addr >> self.page_shift) as i64;
        sp.det.now_ns = s.time_ns;
        match s.kind {
            FaultKind::Major => {
                sp.majors += 1;
                sp.pending.remove(&page);
                let Space { det, pagemap, .. } = sp;
                let _ = det.access_with(s.tid, page, false, &mut |f, d, m| {
                    resident_run(pagemap, f, d, m)
                });
            }
            _ => {
                self.stats.minor_faults += 1;
                if sp.pending.remove(&page) {
                    self.stats.pages_used += 1;
                }
            }
        }
    }

    fn sample(&mut self, sp: &mut Space, s: &FaultSample) {
        let page = (s.addr >> self.page_shift) as i64;
        sp.det.now_ns = s.time_ns;
        let req = match s.kind {
            FaultKind::Major => {
                sp.majors += 1;
                let kind = if sp.pending.remove(&page) {
                    self.stats.pages_late += 1;
                    "late"
                } else {
                    match sp.det.unasked(s.tid, page) {
                        Unasked::Outran => {
                            self.stats.majors_outran += 1;
                            "outran"
                        }
                        Unasked::Skipped => {
                            self.stats.majors_skipped += 1;
                            "skipped"
                        }
                        Unasked::Other => "unasked",
                    }
                };
                if let Some(l) = &mut self.log {
                    let _ = writeln!(
                        l,
                        "{}\t{}\tmajor-{kind}\t{:#x}\t1\t{:#x}",
                        s.time_ns, s.tid, s.addr, s.addr
                    );
                }
                let Space { det, pagemap, .. } = sp;
                det.access_with(s.tid, page, false, &mut |f, d, m| {
                    resident_run(pagemap, f, d, m)
                })
            }
            _ => {
                self.stats.minor_faults += 1;
                if !sp.pending.remove(&page) {
                    return;
                }
                self.stats.pages_used += 1;
                sp.det.access_with(s.tid, page, true, &mut |_, _, _| 0)
            }
        };
        if sp.gone {
            return;
        }
        if !req.willneed.is_empty() && !self.stats.not_paying() {
            self.willneed(sp, s, page, &req.willneed);
        }
        if !req.pageout.is_empty() {
            let ranges = self.bytes(&req.pageout);
            for &(p, n) in &req.pageout {
                for q in p..p + n as i64 {
                    sp.pending.remove(&q);
                }
                sp.acted += n;
            }
            // The pageout thread exists whenever the detector may ask for
            // a pageout (pageout=1 or auto).
            debug_assert!(self.pageouter.is_some());
            self.log_ranges(&ranges, "pageout", s, page);
            if let (Some(po), Some(fd)) = (&self.pageouter, &sp.pidfd) {
                po.send(fd.clone(), ranges);
            }
        }
    }

    fn bytes(&self, pages: &[(i64, u64)]) -> Vec<(u64, u64)> {
        pages
            .iter()
            .filter(|&&(p, n)| p >= 0 && n > 0)
            .map(|&(p, n)| ((p as u64) << self.page_shift, n << self.page_shift))
            .collect()
    }

    /// Keeps the swapped pages of `runs` (pagemap bit 62) and asks for them.
    /// Asks for `runs` in order, [`CHUNK`] pages per call, each chunk
    /// checked against pagemap right before its call: pages the program
    /// faulted in meanwhile (it may be faster than the requests) are skipped.
    fn willneed(&mut self, sp: &mut Space, s: &FaultSample, at: i64, runs: &[(i64, u64)]) {
        let mut batch = Vec::new();
        let mut count = 0u64;
        for &(p, n) in runs {
            if p < 0 {
                continue;
            }
            let (mut q, end) = (p, p + n as i64);
            while q < end {
                let m = ((end - q) as u64).min(CHUNK - count);
                batch.push((q, m));
                count += m;
                q += m as i64;
                if count == CHUNK {
                    self.willneed_chunk(sp, s, at, &batch);
                    batch.clear();
                    count = 0;
                    if sp.gone {
                        return;
                    }
                }
            }
        }
        if !batch.is_empty() {
            self.willneed_chunk(sp, s, at, &batch);
        }
    }

    fn willneed_chunk(&mut self, sp: &mut Space, s: &FaultSample, at: i64, runs: &[(i64, u64)]) {
        let mut want: Vec<(i64, u64)> = Vec::new();
        let (mut buf, mut ent) = (Vec::new(), Vec::new());
        for &(p, n) in runs {
            if p < 0 {
                continue;
            }
            let swapped: Vec<bool> = if sp.pagemap.available() {
                match sp.pagemap.read(p as u64, n as usize, &mut buf, &mut ent) {
                    Ok(()) => (0..n as usize)
                        .map(|i| ent.get(i).is_some_and(|&v| v & PM_SWAP != 0))
                        .collect(),
                    Err(_) => vec![false; n as usize],
                }
            } else {
                vec![true; n as usize]
            };
            let mut i = 0usize;
            while i < swapped.len() {
                if !swapped[i] {
                    i += 1;
                    continue;
                }
                let j = (i..swapped.len())
                    .find(|&j| !swapped[j])
                    .unwrap_or(swapped.len());
                want.push((p + i as i64, (j - i) as u64));
                i = j;
            }
        }
        if want.is_empty() {
            return;
        }
        let n: u64 = want.iter().map(|w| w.1).sum();
        self.stats.pages_requested += n;
        sp.acted += n;
        if sp.pending.len() + n as usize > MAX_PENDING {
            sp.pending.clear();
        }
        for &(p, n) in &want {
            sp.pending.extend(p..p + n as i64);
        }
        let ranges = self.bytes(&want);
        self.advise_willneed(sp, &ranges, s, at);
    }

    /// MADV_WILLNEED on `ranges` (bytes) of `sp`, asked at the fault at `at`.
    fn advise_willneed(&mut self, sp: &mut Space, ranges: &[(u64, u64)], s: &FaultSample, at: i64) {
        let Some(fd) = &sp.pidfd else {
            return;
        };
        let t0 = std::time::Instant::now();
        let a = advised(fd.madvise(ranges, MADV_WILLNEED), &mut self.stats.notes);
        self.stats.madvise_ns += t0.elapsed().as_nanos() as u64;
        self.stats.madvise_calls += a.calls;
        self.stats.quiet_errors += a.quiet_errors;
        sp.gone |= a.gone;
        self.log_ranges(ranges, "willneed", s, at);
    }

    /// One log line per range of a request.
    fn log_ranges(&mut self, ranges: &[(u64, u64)], what: &str, s: &FaultSample, at: i64) {
        if let Some(l) = &mut self.log {
            for &(a, len) in ranges {
                let _ = writeln!(
                    l,
                    "{}\t{}\t{what}\t{:#x}\t{}\t{:#x}",
                    s.time_ns,
                    s.tid,
                    a,
                    len >> self.page_shift,
                    (at as u64) << self.page_shift
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swaplab_sim::prefetch::detector::{DEFAULT_LAG, DEFAULT_MAX, DEFAULT_WINDOW, PAGEOUT_MAX};

    #[test]
    fn requests_the_program_does_not_use_turn_the_prefetcher_off() {
        let mut st = PrefetchStats {
            minor_sampled: true,
            ..Default::default()
        };
        // Too few pages asked for to judge.
        st.pages_requested = JUDGE_PAGES - 1;
        assert!(!st.not_paying());
        // 8,192 asked, the last CHUNK (512) still on their way: 10 % of
        // 7,680 = 768 used is enough, 767 is not.
        st.pages_requested = JUDGE_PAGES;
        st.pages_used = 768;
        assert!(!st.not_paying());
        st.pages_used = 767;
        assert!(st.not_paying());
        assert_eq!(st.gave_up, 1);
        assert!(st.notes[0].contains("turned itself off"), "{:?}", st.notes);
        // For good, even when the program later uses what was asked for.
        st.pages_used = 8000;
        assert!(st.not_paying());
        assert_eq!(st.notes.len(), 1);
        // Without minor sampling there is no count of use: never judged.
        let mut blind = PrefetchStats {
            pages_requested: 1 << 20,
            ..Default::default()
        };
        assert!(!blind.not_paying());
    }

    fn pages(spec: &str) -> (Detector, u64) {
        let s: PrefetchSpec = spec.parse().unwrap();
        let ps = swaplab_host::util::page_size();
        (
            Detector::with_limit(&s.detector_spec(), None),
            s.window / ps,
        )
    }

    #[test]
    fn pageout_defaults_keep_the_walk_in_flight_small() {
        let s: PrefetchSpec = "leap:pageout=1".parse().unwrap();
        assert_eq!(
            (s.max, s.lag, s.window),
            (PAGEOUT_MAX, DEFAULT_LAG, DEFAULT_WINDOW)
        );
        assert_eq!(s.to_string(), "leap:pageout=1");
        // Without pageout the largest window stays Leap's 32M.
        let s: PrefetchSpec = "leap".parse().unwrap();
        assert_eq!(s.max, DEFAULT_MAX);
        // A window above the pageout cap raises the cap; a given max wins.
        let s: PrefetchSpec = "leap:pageout=1:window=4M".parse().unwrap();
        assert_eq!(s.max, 4 << 20);
        let s: PrefetchSpec = "leap:pageout=1:max=32M:lag=0".parse().unwrap();
        assert_eq!((s.max, s.lag), (32 << 20, 0));
        assert_eq!(s.to_string().parse::<PrefetchSpec>().unwrap(), s);
        // lag=0 is the old rule: two windows behind.
        let ps = swaplab_host::util::page_size() as i64;
        let (mut d, _) = pages("leap:window=16K:max=16K:pageout=1:lag=0");
        let w = (16 << 10) / ps;
        let mut last_end = None;
        for p in 0..400i64 {
            for &(lo, n) in &d.access(1, p, p > 8).pageout {
                assert!(lo + n as i64 <= p - 2 * w);
                last_end = Some(lo + n as i64);
            }
        }
        assert!(last_end.unwrap() >= 399 - 2 * w - w);
    }
}
