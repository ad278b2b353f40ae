//! `swaplab trace` and `swaplab run --hints`: what a run adds around the
//! command when it is traced or hinted ([`Instruments`]).
//!
//! A traced run is an ordinary run (its own memory cgroup, limit, swap and
//! settings, recorded in the catalog) with three observers:
//!
//! * **fault events** of the whole process tree from
//!   [`swaplab_host::faults::perf`] (default) or [`swaplab_host::faults::tracefs`]; the
//!   events are opened in the child between fork and exec, so nothing of the
//!   program is missed, and drained every [`DRAIN_PERIOD`] by the tracer
//!   thread;
//! * **swap state per page** from [`swaplab_host::pagemap`] and **regions**
//!   from /proc/PID/maps, sampled for every process of the cgroup at
//!   `pagemap_hz` (default 10 Hz);
//! * **allocation sites** from the LD_PRELOAD library
//!   ([`crate::preload`]), symbolized after the run ([`swaplab_analysis::symbolize`]).
//!
//! The tracer thread (`swaplab-tracer`, started by
//! [`Instruments::started`]) drains the events and scans pagemap and maps;
//! the timeline sampler's thread does no tracing work. Faults and swap
//! events stream to `faults.parquet` and `swaps.parquet` in row groups
//! ([`swaplab_trace::trace_dir::TableWriter`]) as they arrive, so the
//! tracer's memory does not grow with the run (docs/tracing.md states and
//! tests the bound). The small tables (regions, processes, allocations,
//! sites) are written at the end. The trace directory (`<run dir>/trace`,
//! or `--out`) is the record's typed [`RunRecord::trace_dir`]. A hinted run
//! loads the same preload library with a resolved hint file (see
//! [`resolve_hints`]) and records which hints were applied.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use swaplab_analysis::hints::module_stem;
use swaplab_host::cgroup::{Cgroup, MemoryGroup};
use swaplab_host::faults::{FaultOptions, FaultSample, FaultSourceKind, FaultTracer};
use swaplab_host::journal::Session;
use swaplab_host::maps::{self, MapEntry, RegionTracker};
use swaplab_host::pagemap::PagemapWatcher;
use swaplab_trace::alloc_log;
use swaplab_trace::events::{
    FaultEvent, FaultKind, Process, Region, SwapDir, SwapEvent, SwapSource,
};

use crate::error::{Error, Result};
use crate::preload::{self, HintAction, ResolvedHint, ResolvedHints};
use crate::record::{MetricName, MetricsExt, RunRecord};
use crate::timeline::Scope;
use swaplab_analysis::hints::{HintAction as HA, HintFile};
use swaplab_analysis::sites::{allocations_from_logs, read_hint_report};
use swaplab_analysis::symbolize::Symbolizer;
use swaplab_trace::trace_dir::{self, TableRow, TableWriter, TraceMetaFile};
use swaplab_trace::Error as TraceError;

pub use crate::options::{TraceConfig, DEFAULT_ALLOC_MIN, DEFAULT_HEAP_SAMPLE};

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct HintState {
    report: PathBuf,
    hints: usize,
}

/// How often the tracer thread drains the fault buffers. A 4 MiB perf
/// ring holds about 87 000 faults, which a CPU takes 40 ms or more to
/// produce even at 2 M faults/s: 10 ms keeps every ring far from full.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(10);

/// A trace prepared before the command starts.
struct TraceState {
    cfg: TraceConfig,
    kind: FaultSourceKind,
    dir: PathBuf,
    alloc_dir: Option<PathBuf>,
    setup: Option<swaplab_host::faults::FaultTracerSetup>,
    scan_period: Option<Duration>,
    worker: Option<Worker>,
    notes: Vec<String>,
}

/// The tracer thread while the command runs.
struct Worker {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<Collected>>>,
}

impl Worker {
    /// Stops the thread (it drains what is left and finishes the streamed
    /// tables) and takes its result.
    fn join(mut self) -> Result<Collected> {
        let h = self.handle.take().expect("joined once");
        self.stop.store(true, Ordering::Release);
        h.thread().unpark();
        h.join().unwrap_or_else(|_| {
            Err(Error::failed(
                "tracing the run",
                "the tracer thread panicked",
                "report this as a bug",
            ))
        })
    }
}

impl Drop for Worker {
    /// A run that failed before [`Instruments::finish`]: the thread must
    /// not outlive it.
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.stop.store(true, Ordering::Release);
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// What the tracer thread hands back at the end.
struct Collected {
    stats: Option<swaplab_host::faults::FaultStats>,
    faults: u64,
    majors: u64,
    late_faults: u64,
    swaps: u64,
    swap_outs: u64,
    regions: RegionTracker,
    procs: BTreeMap<u32, Process>,
    scans: u64,
    scan_ns: u64,
    cpu_ns: u64,
    max_pending_swaps: usize,
    notes: Vec<String>,
}

/// What a traced or hinted run adds around the command.
pub struct Instruments {
    env: Vec<(String, OsString)>,
    preload: Option<PathBuf>,
    hints: Option<HintState>,
    trace: Option<TraceState>,
    mono_t0: u64,
    started_unix_ns: i64,
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instruments")
            .field("preload", &self.preload)
            .field("traced", &self.trace.is_some())
            .field("hinted", &self.hints.is_some())
            .finish()
    }
}

impl Instruments {
    /// Prepares tracing and hints for a run (`None` when it has neither).
    /// Called inside the run's session, before the command starts.
    pub fn prepare(
        options: &crate::options::RunOptions,
        resolved: &[String],
        session: &mut Session,
        run_dir: &Path,
    ) -> Result<Option<Instruments>> {
        let thread_prefetch = options
            .prefetch
            .as_ref()
            .is_some_and(|p| p.mode == crate::prefetcher::PrefetchMode::Thread);
        if options.hints.is_none() && options.trace.is_none() && !thread_prefetch {
            return Ok(None);
        }
        let mut ins = Instruments {
            env: Vec::new(),
            preload: None,
            hints: None,
            trace: None,
            mono_t0: 0,
            started_unix_ns: 0,
        };
        if thread_prefetch {
            // The preload library's trend prefetch thread (docs/prefetch.md).
            ins.env
                .push((crate::prefetcher::PREFETCH_ENV.into(), "thread".into()));
            ins.preload = Some(preload::library_path()?);
        }
        if let Some(path) = &options.hints {
            let resolved_hints = check_hints(path, resolved)?;
            let rpath = run_dir.join("hints.resolved");
            preload::write_resolved_hints(&rpath, &resolved_hints)?;
            let report = run_dir.join("hints-applied.tsv");
            ins.env
                .push(("SWAPLAB_HINTS".into(), rpath.into_os_string()));
            ins.env.push((
                "SWAPLAB_HINT_REPORT".into(),
                report.clone().into_os_string(),
            ));
            ins.preload = Some(preload::library_path()?);
            ins.hints = Some(HintState {
                report,
                hints: resolved_hints.hints.len(),
            });
        }
        if let Some(cfg) = &options.trace {
            cfg.validate()?;
            let kind: FaultSourceKind = cfg.source.parse().map_err(|_| {
                Error::Invalid(format!(
                    "--source {:?}: expected perf or tracefs",
                    cfg.source
                ))
            })?;
            let dir = trace_dir_for(cfg, run_dir);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
            let alloc_dir = if cfg.allocs {
                let d = dir.join("alloc-logs");
                std::fs::create_dir_all(&d).map_err(|e| Error::io("creating", &d, e))?;
                ins.env
                    .push(("SWAPLAB_ALLOC_DIR".into(), d.clone().into_os_string()));
                ins.env
                    .push(("SWAPLAB_ALLOC_MIN".into(), cfg.alloc_min.to_string().into()));
                ins.env.push((
                    "SWAPLAB_HEAP_SAMPLE".into(),
                    cfg.heap_sample.to_string().into(),
                ));
                ins.preload = Some(preload::library_path()?);
                Some(d)
            } else {
                None
            };
            let setup = swaplab_host::faults::FaultTracerSetup::new(
                kind,
                &FaultOptions {
                    buffer_bytes_per_cpu: cfg.buffer_bytes_per_cpu,
                    ..Default::default()
                },
                session,
            )?;
            let scan_period =
                (cfg.pagemap_hz > 0.0).then(|| Duration::from_secs_f64(1.0 / cfg.pagemap_hz));
            ins.trace = Some(TraceState {
                cfg: cfg.clone(),
                kind,
                dir,
                alloc_dir,
                setup: Some(setup),
                scan_period,
                worker: None,
                notes: Vec::new(),
            });
        }
        Ok(Some(ins))
    }

    /// Sets the command's environment (LD_PRELOAD and the library's
    /// variables) and the fault source's hook between fork and exec.
    pub fn configure(&mut self, cmd: &mut Command) {
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(lib) = &self.preload {
            let mut value = lib.clone().into_os_string();
            if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
                value.push(":");
                value.push(old);
            }
            cmd.env("LD_PRELOAD", value);
        }
        if let Some(t) = &self.trace {
            if let Some(setup) = &t.setup {
                let hook = setup.child_hook();
                // SAFETY: the hook only makes async-signal-safe system calls
                // on data prepared before fork (see swaplab_host::faults).
                unsafe {
                    cmd.pre_exec(move || hook.run());
                }
            }
        }
        self.started_unix_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        self.mono_t0 = mono_ns();
    }

    /// The command started: attach the fault source to it and start the
    /// tracer thread, which drains the fault buffers every
    /// [`DRAIN_PERIOD`], scans pagemap and maps of every process of
    /// `group` at the configured rate and streams the events to the trace
    /// directory. The thread that called this (the timeline sampler) does
    /// no tracing work.
    pub fn started(&mut self, pid: u32, group: &MemoryGroup) -> Result<()> {
        let mono_t0 = self.mono_t0;
        let Some(t) = &mut self.trace else {
            return Ok(());
        };
        let Some(setup) = t.setup.take() else {
            return Ok(());
        };
        let tracer = setup.attach(pid)?;
        let collector =
            Collector::new(tracer, &t.dir, group.memory.clone(), mono_t0, t.scan_period)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("swaplab-tracer".into())
            .spawn(move || collector.run(&stop2))
            .map_err(|e| {
                Error::failed(
                    "starting the tracer thread",
                    e.to_string(),
                    "the machine may be out of threads",
                )
            })?;
        t.worker = Some(Worker {
            stop,
            handle: Some(handle),
        });
        Ok(())
    }

    /// After the command ended (before its cgroup is removed): the tracer
    /// thread's final drain, the tables finished, metrics, the typed trace
    /// directory and notes added to the record.
    pub fn finish(mut self, rec: &mut RunRecord) -> Result<()> {
        if let Some(h) = &self.hints {
            let applied = read_hint_report(&h.report);
            let ok = applied.iter().filter(|l| l.ok).count();
            put(rec, MetricName::HintsGiven, h.hints as f64);
            put(rec, MetricName::HintsApplied, ok as f64);
            for l in applied.iter().filter(|l| !l.ok).take(5) {
                rec.notes
                    .push(format!("hint {} ({}) failed: {}", l.id, l.action, l.result));
            }
            // None applied: RunRecord::idle_notes says so (with the
            // run's major faults), after this.
        }
        let Some(mut t) = self.trace.take() else {
            return Ok(());
        };
        let Some(worker) = t.worker.take() else {
            return Ok(()); // the command never started
        };
        let mut c = worker.join()?;
        let mono_t0 = self.mono_t0;
        let mut notes = std::mem::take(&mut t.notes);
        notes.append(&mut c.notes);
        let (allocs, sites) = t.finish_small_tables(&mut c, mono_t0, &mut notes)?;
        let lost = c.stats.as_ref().map(|s| s.lost).unwrap_or(0);
        if let Some(s) = &c.stats {
            notes.extend(s.notes.iter().cloned());
            if s.lost > 0 {
                notes.push(format!(
                    "{} fault events were lost (the per-CPU buffer overflowed): raise --buffer",
                    s.lost
                ));
            }
        }
        if c.late_faults > 0 {
            notes.push(format!(
                "{} fault events arrived more than {} ms after they happened and are out of time order in faults.parquet",
                c.late_faults,
                swaplab_host::faults::REORDER_WINDOW_NS / 1_000_000
            ));
        }
        let counts = trace_dir::TableCounts {
            faults: c.faults,
            swaps: c.swaps,
            regions: c.regions.regions().len() as u64,
            allocations: allocs,
            sites,
            processes: c.procs.len() as u64,
        };
        let page_cluster = rec.settings.as_ref().and_then(|s| s.page_cluster);
        let meta = TraceMetaFile {
            command: rec.command.clone(),
            argv: rec.resolved_command.clone(),
            started_unix_ns: self.started_unix_ns.max(0) as u64,
            t0_monotonic_ns: mono_t0,
            options: serde_json::json!({
                "source": t.kind.to_string(),
                "pagemap_hz": t.cfg.pagemap_hz,
                "alloc_min": t.cfg.alloc_min,
                "heap_sample": t.cfg.heap_sample,
                "allocs": t.cfg.allocs,
                "buffer_bytes_per_cpu": t.cfg.buffer_bytes_per_cpu,
                "run": rec.options,
                "limit_bytes": rec.limit_bytes,
                "run_id": rec.id,
                "lost_events": lost,
                "late_events": c.late_faults,
                "pagemap_scans": c.scans,
                "pagemap_scan_ns": c.scan_ns,
                "tracer_cpu_ns": c.cpu_ns,
            }),
            environment: serde_json::to_value(&rec.env).unwrap_or_default(),
            counts,
            notes: notes.clone(),
            swaplab_version: env!("CARGO_PKG_VERSION").to_string(),
            run_id: Some(rec.id),
            limit_bytes: rec.limit_bytes,
            page_cluster,
        };
        trace_dir::write_meta(&t.dir, &meta)?;
        put(rec, MetricName::TraceFaults, c.faults as f64);
        put(rec, MetricName::TraceMajorFaults, c.majors as f64);
        put(rec, MetricName::TraceSwapOuts, c.swap_outs as f64);
        put(rec, MetricName::TraceAllocations, allocs as f64);
        put(rec, MetricName::TraceLost, lost as f64);
        put(rec, MetricName::TraceLateFaults, c.late_faults as f64);
        put(rec, MetricName::TraceBytes, dir_bytes(&t.dir) as f64);
        put(rec, MetricName::TracerCpuNs, c.cpu_ns as f64);
        put(
            rec,
            MetricName::TracerPendingSwapsMax,
            c.max_pending_swaps as f64,
        );
        rec.trace_dir = Some(t.dir.clone());
        rec.notes.extend(notes);
        Ok(())
    }
}

/// Where a run's trace goes: `--out` (made absolute) or `<run dir>/trace`.
pub fn trace_dir_for(cfg: &TraceConfig, run_dir: &Path) -> PathBuf {
    match &cfg.out {
        Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
        None => run_dir.join("trace"),
    }
}

fn put(rec: &mut RunRecord, name: MetricName, value: f64) {
    rec.metrics.put(name, value, Scope::Swaplab);
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl TraceState {
    /// The tables that are small whatever the run's length (regions,
    /// processes, allocations, sites), written after the run. Returns the
    /// allocation and site counts.
    fn finish_small_tables(
        &self,
        c: &mut Collected,
        mono_t0: u64,
        notes: &mut Vec<String>,
    ) -> Result<(u64, u64)> {
        let regions: Vec<Region> = c
            .regions
            .regions()
            .iter()
            .map(|r| Region {
                pid: r.pid,
                start: r.start,
                end: r.end,
                perms: r.perms.clone(),
                path: r.path.clone(),
                first_seen_ns: r.first_seen_ns,
                last_seen_ns: r.last_seen_ns,
            })
            .collect();
        let (mut allocs, mut sites) = (Vec::new(), Vec::new());
        if let Some(dir) = &self.alloc_dir {
            let logs = read_alloc_logs(dir, notes);
            let (a, s, log_procs) = allocations_from_logs(&logs, mono_t0, notes);
            allocs = a;
            sites = s;
            for p in log_procs {
                let e = c.procs.entry(p.pid).or_insert_with(|| p.clone());
                e.ppid = p.ppid;
                e.t_start_ns = p.t_start_ns;
                if e.comm.is_empty() {
                    e.comm = p.comm.clone();
                }
            }
        }
        let procs: Vec<Process> = c.procs.values().cloned().collect();
        write_small(&self.dir, &regions)?;
        write_small(&self.dir, &allocs)?;
        write_small(&self.dir, &sites)?;
        write_small(&self.dir, &procs)?;
        Ok((allocs.len() as u64, sites.len() as u64))
    }
}

fn write_small<T: TableRow + Clone>(dir: &Path, rows: &[T]) -> std::result::Result<(), TraceError> {
    let mut w = TableWriter::<T>::create(dir, trace_dir::ROWS_PER_GROUP)?;
    w.extend(rows.iter().cloned())?;
    w.finish()?;
    Ok(())
}

/// Swap events on their way to `swaps.parquet`, in time order with
/// bounded memory.
///
/// Two streams meet here: swap-ins seen as major faults on anonymous
/// memory (exact times, in time order up to the fault source's reorder
/// window) and pagemap changes (all stamped with their scan's time). A
/// page brought back by a major fault shows up again as a pagemap swap-in
/// at the next scan: the fault's event is kept (exact time) and the
/// pagemap one dropped. A scan's batch is therefore held until every fault
/// up to its time has been seen (the faults' watermark passed it), then
/// filtered against the fault swap-ins since the previous scan; events are
/// released in time order once older than the watermark. Held: the fault
/// swap-ins of one scan period plus the events of at most a few scans.
#[derive(Default)]
struct SwapStream {
    /// Pagemap batches not yet resolved: (scan time, previous scan time, events).
    batches: VecDeque<(u64, u64, Vec<SwapEvent>)>,
    /// Fault swap-ins per page since the last resolved scan.
    fault_ins: HashMap<(u32, u64), Vec<u64>>,
    /// Resolved events waiting for the watermark.
    pending: Vec<SwapEvent>,
    last_scan: u64,
    max_pending: usize,
}

impl SwapStream {
    fn fault_swapin(&mut self, e: SwapEvent) {
        self.fault_ins
            .entry((e.pid, e.vaddr))
            .or_default()
            .push(e.t_ns);
        self.pending.push(e);
    }

    fn scan(&mut self, t: u64, events: Vec<SwapEvent>) {
        let prev = self.last_scan;
        self.last_scan = t;
        self.batches.push_back((t, prev, events));
    }

    /// Resolves the batches at or below `watermark` and writes the events
    /// at or below it, in time order.
    fn release(
        &mut self,
        watermark: u64,
        out: &mut TableWriter<SwapEvent>,
        outs: &mut u64,
    ) -> std::result::Result<(), TraceError> {
        while self.batches.front().is_some_and(|b| b.0 <= watermark) {
            let (t, prev, events) = self.batches.pop_front().unwrap_or_default();
            let fault_ins = &self.fault_ins;
            self.pending.extend(events.into_iter().filter(|e| {
                if e.dir != SwapDir::In {
                    return true;
                }
                let Some(ts) = fault_ins.get(&(e.pid, e.vaddr)) else {
                    return true;
                };
                !ts.iter().any(|&f| f > prev && f <= t)
            }));
            // Later scans only look at fault swap-ins after this one.
            self.fault_ins.retain(|_, ts| {
                ts.retain(|&f| f > t);
                !ts.is_empty()
            });
        }
        self.max_pending = self
            .max_pending
            .max(self.pending.len() + self.batches.iter().map(|b| b.2.len()).sum::<usize>());
        self.pending.sort_by_key(|e| e.t_ns);
        let n = self.pending.partition_point(|e| e.t_ns <= watermark);
        for e in self.pending.drain(..n) {
            if e.dir == SwapDir::Out {
                *outs += 1;
            }
            out.push(e)?;
        }
        Ok(())
    }
}

/// The tracer thread's state: the fault source, the pagemap watchers and
/// the streaming writers.
struct Collector {
    tracer: Option<FaultTracer>,
    mono_t0: u64,
    memory: Cgroup,
    faults: TableWriter<FaultEvent>,
    swaps: TableWriter<SwapEvent>,
    swap_stream: SwapStream,
    samples: Vec<FaultSample>,
    watchers: HashMap<u32, PagemapWatcher>,
    regions: RegionTracker,
    latest_maps: HashMap<u32, Vec<MapEntry>>,
    procs: BTreeMap<u32, Process>,
    scan_period: Option<Duration>,
    changes: Vec<swaplab_host::pagemap::SwapChange>,
    majors: u64,
    swap_outs: u64,
    late_faults: u64,
    last_fault_t: u64,
    scans: u64,
    scan_ns: u64,
    notes: Vec<String>,
}

impl Collector {
    fn new(
        tracer: FaultTracer,
        dir: &Path,
        memory: Cgroup,
        mono_t0: u64,
        scan_period: Option<Duration>,
    ) -> Result<Collector> {
        Ok(Collector {
            tracer: Some(tracer),
            mono_t0,
            memory,
            faults: TableWriter::create(dir, trace_dir::STREAM_ROWS_PER_GROUP)?,
            swaps: TableWriter::create(dir, trace_dir::STREAM_ROWS_PER_GROUP)?,
            swap_stream: SwapStream::default(),
            samples: Vec::with_capacity(1 << 14),
            watchers: HashMap::new(),
            regions: RegionTracker::default(),
            latest_maps: HashMap::new(),
            procs: BTreeMap::new(),
            scan_period,
            changes: Vec::new(),
            majors: 0,
            swap_outs: 0,
            late_faults: 0,
            last_fault_t: 0,
            scans: 0,
            scan_ns: 0,
            notes: Vec::new(),
        })
    }

    fn note(&mut self, n: String) {
        if self.notes.len() < 20 {
            self.notes.push(n);
        }
    }

    /// The thread's body: drain and scan until `stop`, then the final drain.
    fn run(mut self, stop: &AtomicBool) -> Result<Collected> {
        let cpu0 = swaplab_host::util::thread_cpu_ns();
        let mut next_scan = self.scan_period.map(|_| Instant::now());
        loop {
            let stopping = stop.load(Ordering::Acquire);
            // Everything up to `now - window` is out of the source after the drain.
            let now = mono_ns();
            if let Some(Err(e)) = self.tracer.as_mut().map(|t| t.drain(&mut self.samples)) {
                self.note(format!("reading fault events: {e}"));
            }
            self.take_samples()?;
            if let (Some(next), Some(period), false) = (next_scan, self.scan_period, stopping) {
                let i = Instant::now();
                if i >= next {
                    self.scan();
                    let mut n = next + period;
                    if n < i {
                        n = i + period;
                    }
                    next_scan = Some(n);
                }
            }
            let watermark = now
                .saturating_sub(swaplab_host::faults::REORDER_WINDOW_NS)
                .saturating_sub(self.mono_t0);
            self.swap_stream
                .release(watermark, &mut self.swaps, &mut self.swap_outs)?;
            if stopping {
                break;
            }
            std::thread::park_timeout(DRAIN_PERIOD);
        }
        let stats = match self.tracer.take() {
            Some(t) => Some(t.finish(&mut self.samples)?),
            None => None,
        };
        self.take_samples()?;
        self.swap_stream
            .release(u64::MAX, &mut self.swaps, &mut self.swap_outs)?;
        let faults = self.faults.finish()?;
        let swaps = self.swaps.finish()?;
        Ok(Collected {
            stats,
            faults,
            majors: self.majors,
            late_faults: self.late_faults,
            swaps,
            swap_outs: self.swap_outs,
            regions: self.regions,
            procs: self.procs,
            scans: self.scans,
            scan_ns: self.scan_ns,
            cpu_ns: swaplab_host::util::thread_cpu_ns().saturating_sub(cpu0),
            max_pending_swaps: self.swap_stream.max_pending,
            notes: self.notes,
        })
    }

    /// Writes the drained fault samples; major faults on anonymous memory
    /// become swap-ins.
    fn take_samples(&mut self) -> Result<()> {
        let mono_t0 = self.mono_t0;
        for s in self.samples.drain(..) {
            let f = FaultEvent {
                t_ns: s.time_ns.saturating_sub(mono_t0),
                pid: s.pid,
                tid: s.tid,
                addr: s.addr,
                ip: s.ip,
                kind: s.kind,
            };
            if f.t_ns < self.last_fault_t {
                self.late_faults += 1;
            }
            self.last_fault_t = self.last_fault_t.max(f.t_ns);
            self.procs.entry(f.pid).or_insert_with(|| Process {
                pid: f.pid,
                ppid: 0,
                t_start_ns: f.t_ns,
                comm: String::new(),
            });
            if f.kind == FaultKind::Major {
                self.majors += 1;
                if is_anon_addr(self.latest_maps.get(&f.pid), f.addr) {
                    self.swap_stream.fault_swapin(SwapEvent {
                        t_ns: f.t_ns,
                        pid: f.pid,
                        vaddr: f.addr & !0xfff,
                        dir: SwapDir::In,
                        swap_type: None,
                        swap_offset: None,
                        source: SwapSource::Fault,
                    });
                }
            }
            self.faults.push(f)?;
        }
        if self.samples.capacity() > 1 << 16 {
            self.samples.shrink_to(1 << 14);
        }
        Ok(())
    }

    fn scan(&mut self) {
        let started = Instant::now();
        let t = mono_ns().saturating_sub(self.mono_t0);
        let pids = self.memory.pids().unwrap_or_default();
        let mut events = Vec::new();
        for pid in pids {
            let Ok(entries) = maps::read_maps(pid) else {
                continue;
            };
            if let std::collections::btree_map::Entry::Vacant(v) = self.procs.entry(pid) {
                v.insert(Process {
                    pid,
                    ppid: 0,
                    t_start_ns: 0,
                    comm: String::new(),
                });
            }
            if let Some(p) = self.procs.get_mut(&pid) {
                if p.comm.is_empty() {
                    p.comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .map(|s| s.trim().to_string())
                        .unwrap_or_default();
                }
            }
            self.regions.ingest(t, pid, &entries);
            let ranges = maps::watch_ranges(&entries);
            self.latest_maps.insert(pid, entries);
            let watcher = match self.watchers.entry(pid) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => match PagemapWatcher::open(pid) {
                    Ok(w) => v.insert(w),
                    Err(e) => {
                        if self.notes.len() < 20 {
                            self.notes.push(format!("pagemap of pid {pid}: {e}"));
                        }
                        continue;
                    }
                },
            };
            self.changes.clear();
            if watcher.scan(&ranges, &mut self.changes).is_err() {
                continue; // the process exited between maps and pagemap
            }
            for c in &self.changes {
                events.push(SwapEvent {
                    t_ns: t,
                    pid,
                    vaddr: c.vaddr,
                    dir: if c.swapped_out {
                        SwapDir::Out
                    } else {
                        SwapDir::In
                    },
                    swap_type: c.swap_type,
                    swap_offset: c.swap_offset,
                    source: SwapSource::Pagemap,
                });
            }
        }
        // Watchers of processes that are gone hold their last state only.
        self.swap_stream.scan(t, events);
        self.scans += 1;
        self.scan_ns += started.elapsed().as_nanos() as u64;
    }
}

/// True when `addr` lies in an anonymous mapping of the last snapshot.
fn is_anon_addr(entries: Option<&Vec<MapEntry>>, addr: u64) -> bool {
    let Some(entries) = entries else {
        return true; // no snapshot: assume anonymous (most swap is)
    };
    entries
        .iter()
        .find(|e| e.start <= addr && addr < e.end)
        .map(|e| e.is_anonymous())
        .unwrap_or(true)
}

fn read_alloc_logs(dir: &Path, notes: &mut Vec<String>) -> Vec<alloc_log::AllocLog> {
    let mut logs = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return logs;
    };
    let mut paths: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        match std::fs::read(&p).map(|b| alloc_log::parse(&b)) {
            Ok(Ok(log)) => logs.push(log),
            Ok(Err(e)) => notes.push(format!("allocation log {}: {e}", p.display())),
            Err(e) => notes.push(format!("allocation log {}: {e}", p.display())),
        }
    }
    logs
}

/// The file a hint frame's module means: the program itself (by name, or
/// by stem for a rebuilt built-in workload), else the file the hint file's
/// `[modules.NAME]` entry names — refused when its ELF build-id is no longer
/// the one recorded at trace time (its offsets would point elsewhere).
/// Libraries are never searched for in fixed directories.
fn find_module(
    name: &str,
    program: &Path,
    modules: &std::collections::BTreeMap<String, swaplab_analysis::hints::ModuleId>,
) -> std::result::Result<PathBuf, String> {
    if let Ok(prog) = std::fs::canonicalize(program) {
        let pname = prog
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if pname == name || module_stem(&pname) == module_stem(name) {
            return Ok(prog);
        }
    }
    let Some(m) = modules.get(name) else {
        return Err(format!(
            "it is not the program ({}) and the hint file has no [modules.\"{name}\"] entry \
             saying which file it is",
            program.display()
        ));
    };
    let path = PathBuf::from(&m.path);
    if !path.is_file() {
        return Err(format!(
            "it was {} when traced, and that file is gone",
            m.path
        ));
    }
    if let Some(want) = &m.build_id {
        let now = swaplab_analysis::symbolize::build_id(&path);
        if now.as_deref() != Some(want.as_str()) {
            return Err(format!(
                "{} changed since the trace (build-id {want} then, {} now)",
                m.path,
                now.as_deref().unwrap_or("none")
            ));
        }
    }
    Ok(path)
}

/// Reads, parses and resolves a hint file for the command `resolved`
/// (its program first): every error a hinted run would meet, before it runs.
pub fn check_hints(path: &Path, resolved: &[String]) -> Result<ResolvedHints> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
    let file = swaplab_analysis::hints::parse(&text, path)?;
    file_prefetch(&file, path)?;
    let program = resolved
        .first()
        .map(|p| program_path(p))
        .ok_or_else(|| Error::Invalid("no command given".into()))?;
    resolve_hints(&file, &program)
}

/// The prefetcher a hint file asks for (`prefetch = "leap"`), parsed as
/// `--prefetch` parses it; `path` names the file in errors.
pub fn file_prefetch(
    file: &swaplab_analysis::hints::HintFile,
    path: &Path,
) -> Result<Option<crate::prefetcher::spec::PrefetchSpec>> {
    file.prefetch
        .as_deref()
        .map(|p| {
            p.parse()
                .map_err(|e| Error::Invalid(format!("{}: prefetch = {p:?}: {e}", path.display())))
        })
        .transpose()
}

/// The prefetcher the hint file at `path` asks for, if any.
pub fn hint_file_prefetch(path: &Path) -> Result<Option<crate::prefetcher::spec::PrefetchSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
    let file = swaplab_analysis::hints::parse(&text, path)?;
    file_prefetch(&file, path)
}

/// The file a program name runs, as execvp(3) finds it: a name without a
/// slash is looked up in `PATH` (`sqlite3` → `/usr/bin/sqlite3`), so hint
/// keys match the program however it was named. Unchanged when not found.
pub fn program_path(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let name = swaplab_trace::arg::decode(name);
    if name.as_encoded_bytes().contains(&b'/') {
        return PathBuf::from(name);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(&name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Turns a hint file's symbolic sites into (module path, offset) frames
/// for the preload library. A frame that cannot be resolved (the program
/// changed) is an error naming the hint.
pub fn resolve_hints(file: &HintFile, program: &Path) -> Result<ResolvedHints> {
    let mut sym = Symbolizer::new();
    let mut out = ResolvedHints {
        budget_bytes: file.mlock_budget,
        hints: Vec::new(),
    };
    for (i, h) in file.hints.iter().enumerate() {
        if h.range.is_some() {
            return Err(Error::Invalid(format!(
                "hint {}: range hints apply to `sim` only (`swaplab sim TRACE --hints FILE`); \
                 `run --hints` needs site hints, since addresses change from run to run",
                i + 1
            )));
        }
        let mut frames = Vec::with_capacity(h.site.len());
        for key in &h.site {
            let m = swaplab_analysis::hints::frame_module(key);
            let path = find_module(m, program, &file.modules).map_err(|why| {
                Error::failed(
                    format!("hint {} names module {m:?}", i + 1),
                    why,
                    "run `swaplab advise` again on a trace of this program",
                )
            })?;
            let pname = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            // Keys of a rebuilt workload carry another hash: look the
            // symbol up under the current file name.
            let local_key = if m != pname {
                format!("{pname}{}", &key[m.len()..])
            } else {
                key.clone()
            };
            let off = sym.resolve_key(&path, &local_key).ok_or_else(|| {
                Error::failed(
                    format!("hint {}: frame {key:?} is not in {}", i + 1, path.display()),
                    "the program was rebuilt or the hint is for another program",
                    "run `swaplab advise` again on a trace of this program",
                )
            })?;
            frames.push((path, off));
        }
        let ms = |d: u64| d.saturating_mul(1_000_000);
        let action = match h.action {
            HA::Mlock { bytes } => HintAction::Mlock { bytes },
            HA::Willneed { window, chunk } => HintAction::Willneed {
                window,
                interval_us: 0,
                chunk,
            },
            HA::Cold { delay_ms } => HintAction::Cold {
                delay_ns: ms(delay_ms),
            },
            HA::Pageout { delay_ms } => HintAction::Pageout {
                delay_ns: ms(delay_ms),
            },
        };
        out.hints.push(ResolvedHint {
            id: i as u32 + 1,
            action,
            frames,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_refuses_range_hints() {
        let f = swaplab_analysis::hints::parse(
            "version = 1\n[[hint]]\nrange = [\"0x0\", \"0x1000\"]\naction = \"cold\"\ndelay_ms = 1\n",
            "h.toml",
        )
        .unwrap();
        let e = super::resolve_hints(&f, std::path::Path::new("/bin/true"))
            .expect_err("a range hint is refused")
            .to_string();
        assert!(e.contains("range hints apply to `sim` only"), "{e}");
    }

    use super::*;

    #[test]
    fn bare_program_names_resolve_through_path() {
        let sh = program_path("sh");
        assert!(sh.is_absolute() && sh.is_file(), "{}", sh.display());
        assert_eq!(program_path("./x"), PathBuf::from("./x"));
        assert_eq!(
            program_path("no-such-program-swaplab"),
            PathBuf::from("no-such-program-swaplab")
        );
    }

    #[test]
    fn anon_detection() {
        let e = |s: u64, n: u64, p: &str| MapEntry {
            start: s,
            end: s + n,
            perms: "rw-p".into(),
            offset: 0,
            path: p.into(),
        };
        let m = vec![
            e(0x1000, 0x1000, "/bin/x"),
            e(0x4000, 0x4000, "[anon]"),
            e(0x9000, 0x1000, "[heap]"),
        ];
        assert!(!is_anon_addr(Some(&m), 0x1800));
        assert!(is_anon_addr(Some(&m), 0x4800));
        assert!(is_anon_addr(Some(&m), 0x9000));
    }

    #[test]
    fn hint_modules_are_found_by_identity_not_by_directory() {
        use swaplab_analysis::hints::ModuleId;
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let name = sh.file_name().unwrap().to_string_lossy().to_string();
        let real_id = swaplab_analysis::symbolize::build_id(&sh);
        let prog = Path::new("/bin/true");
        let mut modules = std::collections::BTreeMap::new();
        // No entry: not searched for in library directories (libc.so.6 is
        // in one on every Linux machine).
        let e = find_module("libc.so.6", prog, &modules).unwrap_err();
        assert!(e.contains("[modules.\"libc.so.6\"]"), "{e}");
        // The program itself needs no entry.
        let t = std::fs::canonicalize(prog).unwrap();
        let tname = t.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(find_module(&tname, prog, &modules).unwrap(), t);
        // An entry with the file's build-id resolves to that file.
        modules.insert(
            name.clone(),
            ModuleId {
                path: sh.display().to_string(),
                build_id: real_id.clone(),
            },
        );
        assert_eq!(find_module(&name, prog, &modules).unwrap(), sh);
        // Another build-id: the file changed since the trace.
        modules.get_mut(&name).unwrap().build_id = Some("00ff".into());
        let e = find_module(&name, prog, &modules).unwrap_err();
        assert!(e.contains("changed since the trace"), "{e}");
        // A path that is gone.
        modules.get_mut(&name).unwrap().path = "/nonexistent/libx.so".into();
        let e = find_module(&name, prog, &modules).unwrap_err();
        assert!(e.contains("gone"), "{e}");
    }
}
