//! `swaplab bench vma`: what the kernel pays to manage VMAs (issue 10 §1,
//! the "Journey" study's mmap-latency figures).
//!
//! Each pattern runs in its own process, the embedded
//! `swaplab-workload bench-vma` (native/workloads/vmabench.c): N
//! memory-management operations whose pages are never touched, each timed,
//! with the VMA count (/proc/self/maps), the `vm_area_struct` slab, VmPTE
//! and /proc/meminfo sampled at evenly spaced points. Repeats are
//! interleaved (repeat 1 of every pattern, then repeat 2, …) and reduced to
//! the median per point.
//!
//! Settling: before every process swaplab waits at least
//! [`SETTLE_MIN`] and then until the `vm_area_struct` slab's active object
//! count changes by less than 1 % (and fewer than 256 objects) over 100 ms
//! — the previous process's VMAs are freed through RCU after it exits — or
//! [`SETTLE_MAX`] has passed. Nothing is dropped or compacted: the page
//! cache and the other users of the machine are left alone.
//!
//! `vm.max_map_count` is raised for the run through a journaled
//! [`Session`] when the operations need more VMAs than it allows, and
//! restored afterwards (also on Ctrl-C, and by the next start after a
//! crash).

pub mod section;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::saved::Header;
use serde::{Deserialize, Serialize};
use swaplab_host::journal::{Session, SessionOptions};
use swaplab_host::signals::SignalGuard;

use swaplab_lab::error::{Error, Result};
use swaplab_lab::workload;

/// `"kind"` of a saved `swaplab bench vma` result.
pub const BENCH_VMA_KIND: &str = "swaplab.bench.vma";
/// The patterns, in the order they run.
pub const PATTERNS: [&str; 5] = ["control", "cont", "strided", "random", "frag"];
/// Shortest wait before each process.
pub const SETTLE_MIN: Duration = Duration::from_millis(200);
/// Longest wait before each process.
pub const SETTLE_MAX: Duration = Duration::from_secs(3);
/// VMAs a process has besides the pattern's (program, libraries, stack, …),
/// with room to spare; added to the operations when checking max_map_count.
const VMA_HEADROOM: u64 = 4096;

/// What `bench vma` asks for.
#[derive(Debug, Clone)]
pub struct VmaOptions {
    /// Operations per pattern (frag: blocks; it times N/2 growths).
    pub ops: u64,
    /// Repeats per pattern.
    pub repeat: usize,
    /// Patterns to run (a subset of [`PATTERNS`], in that order).
    pub patterns: Vec<String>,
    /// Sample points per run (at least 256 by default).
    pub points: u64,
    /// Seed of the random pattern.
    pub seed: u64,
    /// Memory sizes to extrapolate to, bytes.
    pub extrapolate: Vec<u64>,
    /// The session's options (state directory, …).
    pub session: SessionOptions,
}

impl Default for VmaOptions {
    fn default() -> Self {
        VmaOptions {
            ops: 1 << 20,
            repeat: 5,
            patterns: PATTERNS.iter().map(|s| s.to_string()).collect(),
            points: 256,
            seed: 42,
            extrapolate: Vec::new(),
            session: SessionOptions::default(),
        }
    }
}

/// Parses `control,cont` or `all` into patterns in run order.
pub fn parse_patterns(s: &str) -> Result<Vec<String>> {
    if s.trim() == "all" {
        return Ok(PATTERNS.iter().map(|p| p.to_string()).collect());
    }
    let mut want = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if !PATTERNS.contains(&p) {
            return Err(Error::Invalid(format!(
                "unknown pattern {p:?}: the patterns are {} (or all)",
                PATTERNS.join(", ")
            )));
        }
        want.push(p);
    }
    if want.is_empty() {
        return Err(Error::Invalid(format!(
            "no pattern given: name some of {} (or all)",
            PATTERNS.join(", ")
        )));
    }
    Ok(PATTERNS
        .iter()
        .filter(|p| want.contains(p))
        .map(|p| p.to_string())
        .collect())
}

/// The program's JSON line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessSummary {
    /// The pattern.
    pub pattern: String,
    /// --ops.
    pub ops: u64,
    /// Operations timed (frag: ops / 2).
    pub timed_ops: u64,
    /// `rdtsc` or `clock_gettime`.
    pub timer: String,
    /// Timer frequency (calibrated).
    pub ticks_per_s: f64,
    /// The timer's own cost, subtracted from every latency.
    pub timer_overhead_ns: f64,
    /// Whether the result buffers were mlocked.
    pub mlocked: bool,
    /// Bytes of the pattern's region.
    pub region_bytes: u64,
    /// Bytes of one mapping.
    pub block_bytes: u64,
    /// VMAs intersecting the region at the end (/proc/self/maps).
    pub region_vmas: i64,
    /// Bytes of the region mapped at the end.
    pub region_mapped_bytes: u64,
    /// frag: VMAs intersecting the span of the grown blocks (-1 otherwise).
    pub moved_span_vmas: i64,
    /// Lines of /proc/self/maps before and after.
    pub vmas_start: i64,
    /// Lines of /proc/self/maps at the end.
    pub vmas_end: i64,
    /// Wall time of the operations and the sampling.
    pub elapsed_ns: u64,
    /// Time in the timed operations (timer cost included).
    pub ops_ns: f64,
}

/// One sample point of one process (the program's CSV row).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Sample {
    /// Operations done before it.
    pub op: u64,
    /// Lines of /proc/self/maps.
    pub vmas: i64,
    /// `vm_area_struct` active objects (-1: /proc/slabinfo unreadable).
    pub slab_active_objs: i64,
    /// `vm_area_struct` objects in its slabs.
    pub slab_objs: i64,
    /// Object size.
    pub slab_objsize: i64,
    /// Bytes of the cache's slabs.
    pub slab_bytes: i64,
    /// VmPTE, bytes.
    pub vmpte_bytes: i64,
    /// MemTotal − MemFree, bytes.
    pub mem_used_bytes: i64,
    /// meminfo Slab.
    pub meminfo_slab_bytes: i64,
    /// meminfo PageTables.
    pub meminfo_pagetables_bytes: i64,
    /// What the sample took (excluded from the latencies).
    pub sample_ns: u64,
}

/// One process's result.
#[derive(Debug, Clone)]
pub struct ProcessRun {
    /// Its JSON line.
    pub summary: ProcessSummary,
    /// Per timed operation, ns.
    pub latencies: Vec<u32>,
    /// The sample points.
    pub samples: Vec<Sample>,
}

/// One repeat of one pattern, reduced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// Median operation latency, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Maximum, ns.
    pub max_ns: f64,
    /// VMAs in the region at the end.
    pub region_vmas: i64,
    /// frag: VMAs over the grown blocks.
    pub moved_span_vmas: i64,
    /// Lines of maps at start and end.
    pub vmas_start: i64,
    /// Lines of maps at the end.
    pub vmas_end: i64,
    /// `vm_area_struct` active objects at the first and last sample.
    pub slab_active_start: i64,
    /// At the last sample.
    pub slab_active_end: i64,
    /// Wall time of the process's measured part.
    pub elapsed_ns: u64,
    /// Time spent sampling.
    pub sampling_ns: u64,
    /// The timer's cost.
    pub timer_overhead_ns: f64,
}

/// One point, median across repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Operations done.
    pub op: u64,
    /// The process's VMAs.
    pub vmas: f64,
    /// Median latency of the operations since the previous point, ns.
    pub latency_ns: Option<f64>,
    /// `vm_area_struct` active objects, Δ from the start.
    pub slab_objs_delta: Option<f64>,
    /// `vm_area_struct` slab bytes, Δ from the start.
    pub slab_bytes_delta: Option<f64>,
    /// VmPTE, Δ from the start, bytes.
    pub vmpte_delta: f64,
    /// System memory in use, Δ from the start, bytes.
    pub mem_delta: f64,
    /// `mem_delta` minus the control pattern's at the same point.
    pub mem_delta_adjusted: Option<f64>,
}

/// A pattern's summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternSummary {
    /// Median of the repeats' median latencies, ns.
    pub p50_ns: f64,
    /// Median of the repeats' p99, ns.
    pub p99_ns: f64,
    /// Fit latency = a + b·ln(VMAs) over the points: b, ns per e-fold
    /// (None: the VMA count hardly changed).
    pub slope_ns_per_ln_vma: Option<f64>,
    /// a of the fit.
    pub intercept_ns: Option<f64>,
    /// R² of the fit.
    pub r2: Option<f64>,
    /// VMAs the pattern added (end − start, median).
    pub vmas_created: f64,
    /// Bytes mapped by the pattern.
    pub mapped_bytes: u64,
    /// `vm_area_struct` active objects added per VMA, at the sample point
    /// with the most VMAs (None: no slabinfo, or no VMAs created).
    pub slab_objs_per_vma: Option<f64>,
    /// Slab bytes added per VMA, at the same point.
    pub slab_bytes_per_vma: Option<f64>,
    /// The object size.
    pub slab_objsize: Option<i64>,
    /// VmPTE added per GiB mapped.
    pub pte_bytes_per_gib: f64,
    /// System memory Δ at the end, minus control's.
    pub mem_delta_adjusted: Option<f64>,
}

/// One pattern's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternResult {
    /// The pattern.
    pub pattern: String,
    /// Operations timed per run.
    pub timed_ops: u64,
    /// Per repeat.
    pub repeats: Vec<RepeatSummary>,
    /// Per point, medians across repeats.
    pub points: Vec<Point>,
    /// The summary.
    pub summary: PatternSummary,
}

/// One row of the extrapolation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Extrapolation {
    /// The pattern.
    pub pattern: String,
    /// Memory managed, bytes.
    pub memory_bytes: u64,
    /// VMAs it would take.
    pub vmas: f64,
    /// Their slab, bytes.
    pub slab_bytes: Option<f64>,
    /// Page tables while untouched (the measured rate), bytes.
    pub page_table_untouched_bytes: f64,
    /// Page tables with every 4 KiB page touched (8 bytes per PTE), bytes.
    pub page_table_touched_bytes: f64,
    /// mmap latency at that VMA count from the fit, ns.
    pub latency_ns: Option<f64>,
}

/// The saved result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VmaResult {
    /// Kind [`BENCH_VMA_KIND`], version, catalog group, command, machine.
    #[serde(flatten)]
    pub header: Header,
    /// Operations per pattern.
    pub ops: u64,
    /// Repeats.
    pub repeat: usize,
    /// Sample points per run.
    pub points: u64,
    /// Seed.
    pub seed: u64,
    /// The timer and its cost (first run).
    pub timer: String,
    /// Median timer cost over the runs, ns.
    pub timer_overhead_ns: f64,
    /// vm.max_map_count before the run.
    pub max_map_count_before: u64,
    /// What it was set to for the run (None: left alone).
    pub max_map_count_set: Option<u64>,
    /// vm.max_map_count after restoring.
    pub max_map_count_after: u64,
    /// Whether /proc/slabinfo was readable.
    pub slabinfo: bool,
    /// How the machine was settled between processes.
    pub settling: String,
    /// Wall time of the whole benchmark, s.
    pub wall_s: f64,
    /// Per pattern.
    pub patterns: Vec<PatternResult>,
    /// The `--extrapolate` table.
    pub extrapolation: Vec<Extrapolation>,
    /// Assumptions of the extrapolation.
    pub assumptions: Vec<String>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// Reads vm.max_map_count.
pub fn max_map_count() -> Result<u64> {
    let p = Path::new("/proc/sys/vm/max_map_count");
    let s = std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e))?;
    s.trim()
        .parse()
        .map_err(|_| Error::Invalid(format!("{}: not a number: {s:?}", p.display())))
}

/// `vm_area_struct` active objects from /proc/slabinfo (None: unreadable).
pub fn slab_vma_objects() -> Option<i64> {
    let s = std::fs::read_to_string("/proc/slabinfo").ok()?;
    let l = s.lines().find(|l| l.starts_with("vm_area_struct "))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

/// The VMAs a pattern makes with `ops` operations, at most.
pub fn vmas_needed(pattern: &str, ops: u64) -> u64 {
    match pattern {
        "control" | "cont" => 1,
        "frag" => ops,
        _ => ops,
    }
}

/// Waits until the machine is settled (see the module docs).
pub fn settle(signals: Option<&SignalGuard>) {
    let t0 = Instant::now();
    std::thread::sleep(SETTLE_MIN);
    let mut last = slab_vma_objects();
    while t0.elapsed() < SETTLE_MAX && !signals.is_some_and(|s| s.triggered()) {
        std::thread::sleep(Duration::from_millis(100));
        let now = slab_vma_objects();
        match (last, now) {
            (Some(a), Some(b))
                if (a - b).abs() < 256 && ((a - b).abs() as f64) < 0.01 * a as f64 =>
            {
                return
            }
            (None, None) => return,
            _ => last = now,
        }
    }
}

/// Runs one pattern once in its own process.
pub fn run_process(
    pattern: &str,
    ops: u64,
    points: u64,
    seed: u64,
    dir: &Path,
    signals: Option<&SignalGuard>,
) -> Result<ProcessRun> {
    let exe = workload::executable()?;
    let lat = dir.join(format!("{pattern}.lat"));
    let smp = dir.join(format!("{pattern}.csv"));
    let mut cmd = Command::new(&exe);
    cmd.arg("bench-vma")
        .args(["--pattern", pattern])
        .args(["--ops", &ops.to_string()])
        .args(["--points", &points.to_string()])
        .args(["--seed", &seed.to_string()])
        .arg("--lat")
        .arg(&lat)
        .arg("--samples")
        .arg(&smp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child =
        workload::spawn_retrying(&mut cmd).map_err(|e| Error::io("running", &exe, e))?;
    if let Some(s) = signals {
        s.forward_to(Some(child.id()));
    }
    // Read the pipes on threads so a full pipe never blocks the child.
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let th_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = std::io::Read::read_to_end(o, &mut v);
        }
        v
    });
    let th_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(o) = err.as_mut() {
            let _ = std::io::Read::read_to_end(o, &mut v);
        }
        v
    });
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|e| Error::io("waiting for", &exe, e))?
        {
            break st;
        }
        if let Some(sig) = signals.and_then(|s| s.signal()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Interrupted(sig));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(s) = signals {
        s.forward_to(None);
    }
    let stdout = th_out.join().unwrap_or_default();
    let stderr = th_err.join().unwrap_or_default();
    if !status.success() {
        return Err(Error::failed(
            format!("bench vma, pattern {pattern}, {ops} operations"),
            format!(
                "the measuring program exited with {status}: {}",
                String::from_utf8_lossy(&stderr).trim()
            ),
            "see the message above; with ENOMEM raise vm.max_map_count (as root swaplab does it for the run)",
        ));
    }
    let line = String::from_utf8_lossy(&stdout);
    let summary: ProcessSummary = serde_json::from_str(line.trim()).map_err(|e| {
        Error::failed(
            "reading the measuring program's result",
            format!("not the expected JSON ({e}): {}", line.trim()),
            "rebuild swaplab so the embedded program matches",
        )
    })?;
    let bytes = std::fs::read(&lat).map_err(|e| Error::io("reading", &lat, e))?;
    let latencies: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if latencies.len() as u64 != summary.timed_ops {
        return Err(Error::Invalid(format!(
            "{}: {} latencies for {} operations",
            lat.display(),
            latencies.len(),
            summary.timed_ops
        )));
    }
    let samples = read_samples(&smp)?;
    let _ = std::fs::remove_file(&lat);
    let _ = std::fs::remove_file(&smp);
    Ok(ProcessRun {
        summary,
        latencies,
        samples,
    })
}

fn read_samples(p: &Path) -> Result<Vec<Sample>> {
    let s = std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e))?;
    let bad = |l: &str| Error::Invalid(format!("{}: a malformed sample line {l:?}", p.display()));
    let mut v = Vec::new();
    for l in s.lines().skip(1) {
        let f: Vec<i64> = l
            .split(',')
            .map(|x| x.parse::<i64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad(l))?;
        if f.len() != 11 {
            return Err(bad(l));
        }
        v.push(Sample {
            op: f[0] as u64,
            vmas: f[1],
            slab_active_objs: f[2],
            slab_objs: f[3],
            slab_objsize: f[4],
            slab_bytes: f[5],
            vmpte_bytes: f[6],
            mem_used_bytes: f[7],
            meminfo_slab_bytes: f[8],
            meminfo_pagetables_bytes: f[9],
            sample_ns: f[10] as u64,
        });
    }
    if v.is_empty() {
        return Err(Error::Invalid(format!("{}: no samples", p.display())));
    }
    Ok(v)
}

/// The median of xs (empty: NaN): [`swaplab_analysis::stats::median`].
pub fn median(xs: &mut [f64]) -> f64 {
    swaplab_analysis::stats::median(xs)
}

/// The q-quantile (nearest rank) of sorted xs.
fn quantile_sorted(xs: &[u32], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let i = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i] as f64
}

/// Least squares y = a + b·x: (a, b, r²); None with fewer than 3 points
/// or x without spread.
pub fn fit_line(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    if pts.len() < 3 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx < 1e-9 * n {
        return None;
    }
    let b = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    Some((my - b * mx, b, r2))
}

/// Reduces one pattern's runs; `control` gives the memory baseline per point.
pub fn reduce(pattern: &str, runs: &[ProcessRun], control: Option<&[Point]>) -> PatternResult {
    let repeats: Vec<RepeatSummary> = runs
        .iter()
        .map(|r| {
            let mut l = r.latencies.clone();
            l.sort_unstable();
            let first = r.samples.first();
            let last = r.samples.last();
            RepeatSummary {
                p50_ns: quantile_sorted(&l, 0.5),
                p99_ns: quantile_sorted(&l, 0.99),
                max_ns: l.last().map_or(f64::NAN, |&x| x as f64),
                region_vmas: r.summary.region_vmas,
                moved_span_vmas: r.summary.moved_span_vmas,
                vmas_start: r.summary.vmas_start,
                vmas_end: r.summary.vmas_end,
                slab_active_start: first.map_or(-1, |s| s.slab_active_objs),
                slab_active_end: last.map_or(-1, |s| s.slab_active_objs),
                elapsed_ns: r.summary.elapsed_ns,
                sampling_ns: r.samples.iter().map(|s| s.sample_ns).sum(),
                timer_overhead_ns: r.summary.timer_overhead_ns,
            }
        })
        .collect();
    let npoints = runs.iter().map(|r| r.samples.len()).min().unwrap_or(0);
    let slab_ok = runs
        .iter()
        .all(|r| r.samples.iter().all(|s| s.slab_active_objs >= 0));
    let mut points = Vec::with_capacity(npoints);
    for k in 0..npoints {
        let med = |f: &dyn Fn(&ProcessRun) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            median(&mut v)
        };
        let delta =
            |r: &ProcessRun, f: fn(&Sample) -> i64| (f(&r.samples[k]) - f(&r.samples[0])) as f64;
        let latency_ns = (k > 0).then(|| {
            med(&|r: &ProcessRun| {
                let a = r.samples[k - 1].op as usize;
                let b = (r.samples[k].op as usize).min(r.latencies.len());
                let mut v: Vec<f64> = r.latencies[a.min(b)..b].iter().map(|&x| x as f64).collect();
                median(&mut v)
            })
        });
        let mem_delta = med(&|r| delta(r, |s| s.mem_used_bytes));
        points.push(Point {
            op: runs[0].samples[k].op,
            vmas: med(&|r| r.samples[k].vmas as f64),
            latency_ns: latency_ns.filter(|x| x.is_finite()),
            slab_objs_delta: slab_ok.then(|| med(&|r| delta(r, |s| s.slab_active_objs))),
            slab_bytes_delta: slab_ok.then(|| med(&|r| delta(r, |s| s.slab_bytes))),
            vmpte_delta: med(&|r| delta(r, |s| s.vmpte_bytes)),
            mem_delta,
            mem_delta_adjusted: control
                .and_then(|c| c.get(k))
                .map(|c| mem_delta - c.mem_delta),
        });
    }
    let mut p50: Vec<f64> = repeats.iter().map(|r| r.p50_ns).collect();
    let mut p99: Vec<f64> = repeats.iter().map(|r| r.p99_ns).collect();
    let fit_pts: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.vmas.max(1.0).ln(), p.latency_ns?)))
        .collect();
    let fit = fit_line(&fit_pts);
    let mut created: Vec<f64> = runs
        .iter()
        .map(|r| (r.summary.vmas_end - r.summary.vmas_start) as f64)
        .collect();
    let vmas_created = median(&mut created);
    let s0 = runs.first().map(|r| &r.summary);
    let mapped_bytes = s0.map_or(0, |s| match pattern {
        // the blocks left in place plus the grown ones
        "frag" => s.region_mapped_bytes + s.timed_ops * 4 * s.block_bytes,
        _ => s.region_mapped_bytes,
    });
    let last = points.last();
    // Slab per VMA at the point with the most VMAs (for `random`, whose
    // mappings end merged into one VMA, the end would divide by 1).
    let v0 = points.first().map_or(0.0, |p| p.vmas);
    let peak = points.iter().max_by(|a, b| a.vmas.total_cmp(&b.vmas));
    let per_vma = |f: fn(&Point) -> Option<f64>| {
        let p = peak?;
        let dv = p.vmas - v0;
        (dv >= 1.0).then(|| f(p).map(|x| x / dv)).flatten()
    };
    let summary = PatternSummary {
        p50_ns: median(&mut p50),
        p99_ns: median(&mut p99),
        slope_ns_per_ln_vma: fit.map(|f| f.1),
        intercept_ns: fit.map(|f| f.0),
        r2: fit.map(|f| f.2),
        vmas_created,
        mapped_bytes,
        slab_objs_per_vma: per_vma(|p| p.slab_objs_delta),
        slab_bytes_per_vma: per_vma(|p| p.slab_bytes_delta),
        slab_objsize: runs
            .first()
            .and_then(|r| r.samples.last())
            .map(|s| s.slab_objsize)
            .filter(|&x| x > 0),
        pte_bytes_per_gib: if mapped_bytes > 0 {
            last.map_or(0.0, |p| p.vmpte_delta) / (mapped_bytes as f64 / (1u64 << 30) as f64)
        } else {
            0.0
        },
        mem_delta_adjusted: last.and_then(|p| p.mem_delta_adjusted),
    };
    PatternResult {
        pattern: pattern.to_string(),
        timed_ops: s0.map_or(0, |s| s.timed_ops),
        repeats,
        points,
        summary,
    }
}

/// The assumptions printed with the extrapolation.
pub fn extrapolation_assumptions() -> Vec<String> {
    vec![
        "the memory is mapped by the pattern's own operations, so VMAs grow in proportion to the bytes mapped, at the measured VMAs per mapped byte (cont: one VMA, whatever the size)".into(),
        "each VMA costs the slab bytes per VMA measured here (the vm_area_struct cache's growth over the VMAs created; else its object size)".into(),
        "untouched: page tables grow at the measured VmPTE per mapped GiB; touched: every 4 KiB page has an 8-byte PTE (memory/512), upper levels and huge pages ignored".into(),
        "mmap latency follows the fit a + b·ln(VMAs) beyond the measured range (None where the VMA count did not change)".into(),
        "vm.max_map_count must be at least the VMA count".into(),
    ]
}

/// The `--extrapolate` rows.
pub fn extrapolate(patterns: &[PatternResult], sizes: &[u64]) -> Vec<Extrapolation> {
    let mut v = Vec::new();
    for &m in sizes {
        for p in patterns.iter().filter(|p| p.pattern != "control") {
            let s = &p.summary;
            if s.mapped_bytes == 0 {
                continue;
            }
            let vmas = if p.pattern == "cont" {
                1.0
            } else {
                (s.vmas_created.max(1.0) * m as f64 / s.mapped_bytes as f64).ceil()
            };
            let per_vma = s
                .slab_bytes_per_vma
                .filter(|x| *x > 0.0)
                .or(s.slab_objsize.map(|x| x as f64));
            v.push(Extrapolation {
                pattern: p.pattern.clone(),
                memory_bytes: m,
                vmas,
                slab_bytes: per_vma.map(|b| b * vmas),
                page_table_untouched_bytes: s.pte_bytes_per_gib * m as f64 / (1u64 << 30) as f64,
                page_table_touched_bytes: m as f64 / 512.0,
                latency_ns: match (s.intercept_ns, s.slope_ns_per_ln_vma) {
                    (Some(a), Some(b)) => Some(a + b * vmas.max(1.0).ln()),
                    _ => None,
                },
            });
        }
    }
    v
}

/// Runs the benchmark; `progress(pattern, repeat)` is called before each
/// process.
pub fn run(
    opts: &VmaOptions,
    command: Vec<String>,
    progress: &mut dyn FnMut(&str, usize),
) -> Result<VmaResult> {
    if opts.ops == 0 || opts.ops > 1 << 28 {
        return Err(Error::Invalid(format!(
            "--ops {}: give 1 to 2^28 operations",
            opts.ops
        )));
    }
    if opts.repeat == 0 || opts.repeat > 1000 {
        return Err(Error::Invalid("--repeat: give 1 to 1000 repeats".into()));
    }
    if opts.patterns.iter().any(|p| p == "frag") && opts.ops < 2 {
        return Err(Error::Invalid(
            "--ops: frag grows every other block, so it needs at least 2".into(),
        ));
    }
    if opts.points == 0 || opts.points > 1 << 20 {
        return Err(Error::Invalid("--points: give 1 to 2^20 points".into()));
    }
    let before = max_map_count()?;
    let need = opts
        .patterns
        .iter()
        .map(|p| vmas_needed(p, opts.ops))
        .max()
        .unwrap_or(1)
        + VMA_HEADROOM;
    let root = swaplab_host::util::is_root();
    if need > before && !root {
        return Err(Error::failed(
            format!("bench vma with --ops {}", opts.ops),
            format!(
                "the patterns make up to {need} VMAs (with {VMA_HEADROOM} for the program itself) but vm.max_map_count is {before}, and only root may raise it"
            ),
            format!(
                "run as root (swaplab raises vm.max_map_count for the run and restores it), or use --ops {} or fewer",
                before.saturating_sub(VMA_HEADROOM).max(1)
            ),
        ));
    }
    let signals = SignalGuard::install()?;
    let mut session = Session::begin_with(opts.session.clone())?;
    let mut set = None;
    if need > before {
        // Room for every pattern's VMAs plus the default's headroom.
        let value = need.max(65530) + 65530;
        session.set_sysctl("vm.max_map_count", &value.to_string())?;
        set = Some(value);
    }
    let t0 = Instant::now();
    let body = (|| -> Result<Vec<(String, Vec<ProcessRun>)>> {
        let dir = tempdir("bench-vma")?;
        let mut runs: Vec<(String, Vec<ProcessRun>)> = opts
            .patterns
            .iter()
            .map(|p| (p.clone(), Vec::new()))
            .collect();
        let r = (|| {
            for rep in 0..opts.repeat {
                for (p, v) in runs.iter_mut() {
                    settle(Some(&signals));
                    if let Some(s) = signals.signal() {
                        return Err(Error::Interrupted(s));
                    }
                    progress(p, rep);
                    v.push(run_process(
                        p,
                        opts.ops,
                        opts.points,
                        opts.seed,
                        &dir,
                        Some(&signals),
                    )?);
                }
            }
            Ok(())
        })();
        let _ = std::fs::remove_dir_all(&dir);
        r.map(|_| runs)
    })();
    let restored = session.restore();
    let runs = body?;
    restored?;
    let after = max_map_count()?;
    let wall_s = t0.elapsed().as_secs_f64();
    let mut patterns: Vec<PatternResult> = Vec::new();
    let mut control_points: Option<Vec<Point>> = None;
    for (p, r) in &runs {
        let res = reduce(p, r, control_points.as_deref());
        if p == "control" {
            control_points = Some(res.points.clone());
        }
        patterns.push(res);
    }
    let mut notes = Vec::new();
    let slabinfo = runs
        .iter()
        .flat_map(|(_, r)| r)
        .all(|r| r.samples.iter().all(|s| s.slab_active_objs >= 0));
    if !slabinfo {
        notes.push(
            "/proc/slabinfo was not readable (it needs root): no vm_area_struct numbers".into(),
        );
    }
    if !runs.iter().any(|(p, _)| p == "control") {
        notes.push(
            "no control pattern ran: memory is not adjusted for the measurement's own cost".into(),
        );
    }
    if runs.iter().flat_map(|(_, r)| r).any(|r| !r.summary.mlocked) {
        notes.push("the result buffers could not be mlocked (RLIMIT_MEMLOCK)".into());
    }
    let all: Vec<&ProcessRun> = runs.iter().flat_map(|(_, r)| r).collect();
    let mut ovh: Vec<f64> = all.iter().map(|r| r.summary.timer_overhead_ns).collect();
    let extrapolation = extrapolate(&patterns, &opts.extrapolate);
    Ok(VmaResult {
        header: Header::new(BENCH_VMA_KIND, 1, None, command),
        ops: opts.ops,
        repeat: opts.repeat,
        points: opts.points,
        seed: opts.seed,
        timer: all.first().map_or(String::new(), |r| r.summary.timer.clone()),
        timer_overhead_ns: median(&mut ovh),
        max_map_count_before: before,
        max_map_count_set: set,
        max_map_count_after: after,
        slabinfo,
        settling: format!(
            "before every process: at least {} ms, then until the vm_area_struct slab's active objects change by < 1 % and < 256 over 100 ms (at most {} s); repeats interleaved across patterns; nothing dropped or compacted",
            SETTLE_MIN.as_millis(),
            SETTLE_MAX.as_secs()
        ),
        wall_s,
        assumptions: if extrapolation.is_empty() {
            Vec::new()
        } else {
            extrapolation_assumptions()
        },
        extrapolation,
        patterns,
        notes,
    })
}

/// A private temporary directory for the programs' files
/// (`$TMPDIR/swaplab-{what}-PID-N`, mode 0700).
pub(crate) fn tempdir(what: &str) -> Result<std::path::PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let d = base.join(format!("swaplab-{what}-{}-{i}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io("creating", &d, e)),
        }
    }
    Err(Error::Invalid(format!(
        "no free temporary directory name under {}",
        base.display()
    )))
}

use std::os::unix::fs::DirBuilderExt;

/// Saves the result as JSON (atomically).
pub fn save(p: &Path, r: &VmaResult) -> Result<()> {
    crate::saved::save(p, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_in_run_order() {
        assert_eq!(parse_patterns("frag,cont").unwrap(), ["cont", "frag"]);
        assert_eq!(parse_patterns("all").unwrap().len(), 5);
        assert!(parse_patterns("nope")
            .unwrap_err()
            .to_string()
            .contains("unknown pattern"));
        assert!(parse_patterns(",").is_err());
    }

    #[test]
    fn the_fit_recovers_a_log_law() {
        let pts: Vec<(f64, f64)> = (1..50)
            .map(|n| ((n as f64).ln(), 100.0 + 7.0 * (n as f64).ln()))
            .collect();
        let (a, b, r2) = fit_line(&pts).unwrap();
        assert!((a - 100.0).abs() < 1e-6 && (b - 7.0).abs() < 1e-6 && r2 > 0.999);
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
    }
}
