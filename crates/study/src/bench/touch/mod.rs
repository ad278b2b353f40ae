//! `swaplab bench touch`: the latency of every page touch while a process
//! swaps (issue 10 §2, after the Journey study).
//!
//! Each (repeat, swap configuration, pattern) is one ordinary swaplab run
//! (`Lab::run`: a fresh memory cgroup with the limit, the swap area set up
//! and removed, the timeline, a catalog entry) of the embedded
//! `swaplab-workload bench-touch`, which maps a region larger than the
//! limit and writes one byte of a page per touch, timing each touch into an
//! mlocked buffer. Repeats are interleaved (repeat-major), so a slow phase
//! of a shared machine hits every configuration alike. Each run's raw
//! latencies (`touch_ns.u32`, little-endian u32 ns in touch order) and RSS
//! samples (`rss.csv`) are kept in its run directory.
//!
//! Summary numbers are per repeat, then the median across repeats. The
//! figures' CDFs pool every repeat's touches; latency against touch index
//! and RSS against touch index come from the repeat whose total touch time
//! is the median (named in the result).

pub mod section;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::{format_size, parse_size};

use crate::bench::group::BenchGroup;
use crate::saved::Header;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome, RunRecord};
use swaplab_lab::runner::Lab;
use swaplab_lab::{Error, Result};

/// `"kind"` of a saved `swaplab bench touch` result.
pub const BENCH_TOUCH_KIND: &str = "swaplab.bench.touch";
/// The patterns, in the order they run.
pub const PATTERNS: [&str; 2] = ["seq", "random"];
/// The most touches per run (their latencies are 4 bytes each, mlocked).
pub const MAX_TOUCHES: u64 = 1 << 28;
/// Bins of the latency-against-index figure.
const INDEX_BINS: usize = 1000;

/// What `bench touch` runs.
#[derive(Debug, Clone)]
pub struct TouchOptions {
    /// The memory cgroup's limit (stands in for the machine's RAM).
    pub mem_limit: u64,
    /// The region's size (larger than the limit).
    pub size: u64,
    /// Touches per run (default: one per page of the region).
    pub touches: Option<u64>,
    /// Patterns to run (`seq`, `random`).
    pub patterns: Vec<String>,
    /// Swap configurations: (label as given, spec).
    pub swaps: Vec<(String, SwapSpec)>,
    /// Repeats of every configuration.
    pub repeat: u32,
    /// RSS samples per run.
    pub points: u32,
    /// Seed of the random pattern.
    pub seed: u64,
    /// Kill a run after this long.
    pub timeout: Option<Duration>,
    /// `--flush-stats` for the runs.
    pub flush_stats: Option<Duration>,
}

/// Parses `seq,random`.
pub fn parse_patterns(s: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if !PATTERNS.contains(&p) {
            return Err(Error::Invalid(format!(
                "--pattern {p:?}: give seq, random or both (seq,random)"
            )));
        }
        if !out.iter().any(|q| q == p) {
            out.push(p.to_string());
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid("--pattern: give seq, random or both".into()));
    }
    Ok(out)
}

/// Parses `file:2x,file:8x` (or `file:2G,zram:1G,path=...`): a comma starts
/// a new configuration where the next piece names a swap kind, else it
/// continues the spec (`file:1G,prio=5`). `Nx` sizes are N times `region`.
pub fn parse_swaps(s: &str, region: u64) -> Result<Vec<(String, SwapSpec)>> {
    const KINDS: [&str; 4] = ["file", "zram", "zswap", "existing"];
    let mut labels: Vec<String> = Vec::new();
    for piece in s.split(',').map(str::trim) {
        let kind = piece.split(':').next().unwrap_or("");
        match labels.last_mut() {
            Some(last) if !KINDS.contains(&kind) => {
                last.push(',');
                last.push_str(piece);
            }
            _ => labels.push(piece.to_string()),
        }
    }
    let mut out = Vec::new();
    for label in labels {
        let spec_text = match label.split_once(':') {
            Some((kind, rest)) => {
                let (size, more) = rest.split_once(',').map_or((rest, ""), |(a, b)| (a, b));
                let size = match parse_multiple(size, "--swap") {
                    Some(f) => {
                        let f = f?;
                        // Whole MiB, at least one.
                        let b = ((region as f64 * f) as u64 >> 20).max(1) << 20;
                        format!("{}M", b >> 20)
                    }
                    None => size.to_string(),
                };
                if more.is_empty() {
                    format!("{kind}:{size}")
                } else {
                    format!("{kind}:{size},{more}")
                }
            }
            None => label.clone(),
        };
        let spec: SwapSpec = spec_text.parse()?;
        out.push((label, spec));
    }
    if out.is_empty() {
        return Err(Error::Invalid(
            "--swap: give at least one swap area, e.g. file:2x".into(),
        ));
    }
    Ok(out)
}

/// One run of one configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TouchRun {
    pub repeat: u32,
    /// Its id in the catalog (`swaplab show ID`).
    pub run_id: i64,
    /// Its run directory (touch_ns.u32, rss.csv, run.json, timeline).
    pub run_dir: PathBuf,
    pub outcome: String,
    pub touches: u64,
    pub distinct_pages: u64,
    pub timer: String,
    pub timer_overhead_ns: f64,
    /// Major faults: the process's own getrusage at the end of its touches,
    /// wait4's rusage, and the memory cgroup's pgmajfault.
    pub majflt_self: Option<u64>,
    pub majflt_rusage: Option<f64>,
    pub majflt_cgroup: Option<f64>,
    pub swapout_pages: Option<f64>,
    pub swapin_pages: Option<f64>,
    pub psi_some_us: Option<f64>,
    pub wall_ns: Option<f64>,
    /// Sum of the touch latencies.
    pub touch_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub p9999_ns: f64,
    pub max_ns: f64,
    /// Share of the touch time spent in touches slower than 1 ms / 10 ms.
    pub slow_1ms_time_share: f64,
    pub slow_10ms_time_share: f64,
    /// Touches slower than 1 ms / 10 ms.
    pub slow_1ms_touches: u64,
    pub slow_10ms_touches: u64,
    /// Median anonymous RSS over the second half of the run's samples.
    pub rss_plateau_bytes: Option<f64>,
}

/// Medians across repeats.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TouchSummary {
    pub repeats: usize,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub p9999_ns: f64,
    pub max_ns: f64,
    pub touch_s: f64,
    pub wall_s: Option<f64>,
    pub slow_1ms_time_share: f64,
    pub slow_10ms_time_share: f64,
    pub majflt_self: Option<f64>,
    pub majflt_cgroup: Option<f64>,
    pub swapout_pages: Option<f64>,
    pub rss_plateau_bytes: Option<f64>,
    /// The limit minus the plateau: the group's memory that is not the
    /// process's anonymous pages (page tables, kernel memory, page cache and
    /// swap cache; the mlocked latency buffer is anonymous, so in the RSS).
    pub limit_minus_plateau_bytes: Option<f64>,
}

/// One (pattern, swap) configuration: its runs, summary and figure data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TouchConfig {
    pub pattern: String,
    pub swap: String,
    pub runs: Vec<TouchRun>,
    pub summary: TouchSummary,
    /// Pooled over the repeats: (latency ns, fraction of touches ≤ it).
    pub cdf: Curve,
    /// Pooled: (latency ns, share of the touch time spent in touches ≤ it).
    pub time_cdf: Curve,
    /// The repeat the per-index figures come from.
    pub figure_repeat: Option<u32>,
    /// (first touch of the bin, median ns, max ns), `INDEX_BINS` bins.
    pub by_index: Vec<(u64, f64, f64)>,
    /// (touch, anonymous RSS bytes).
    pub rss: Vec<(u64, f64)>,
}

/// A whole `bench touch`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TouchResult {
    /// `kind`, `version`, `sweep_id`, `command` and `machine`.
    #[serde(flatten)]
    pub header: Header,
    pub mem_limit_bytes: u64,
    pub region_bytes: u64,
    pub touches: u64,
    pub repeat: u32,
    pub seed: u64,
    pub flush_stats_ms: Option<f64>,
    pub configs: Vec<TouchConfig>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

/// The value at quantile `q` of sorted `xs` (nearest rank, lower).
fn at(xs: &[u32], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let i = ((xs.len() - 1) as f64 * q).floor() as usize;
    f64::from(xs[i.min(xs.len() - 1)])
}

/// Quantiles at which the CDFs are drawn: every 0.5 % and, towards the
/// tail, 100 per decade of 1 − q down to one touch in n (so a zoom on
/// 99.75–100 % still has hundreds of points), then the maximum.
pub fn cdf_grid(n: usize) -> Vec<f64> {
    let mut qs: Vec<f64> = (0..=200).map(|i| i as f64 / 200.0).collect();
    let decades = (n.max(2) as f64).log10();
    let mut x = 0.0;
    while x <= decades {
        qs.push(1.0 - 10f64.powf(-x));
        x += 0.01;
    }
    qs.retain(|q| (0.0..=1.0).contains(q));
    qs.sort_by(|a, b| a.total_cmp(b));
    qs.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    qs
}

/// Points (x, y) of a curve.
pub type Curve = Vec<(f64, f64)>;

/// (latency, fraction) and (latency, time share) points of sorted latencies.
pub fn cdfs(sorted: &[u32]) -> (Curve, Curve) {
    if sorted.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut prefix = Vec::with_capacity(sorted.len());
    let mut acc = 0f64;
    for &v in sorted {
        acc += f64::from(v);
        prefix.push(acc);
    }
    let total = acc.max(1.0);
    let n = sorted.len();
    let mut cdf = Vec::new();
    let mut time = Vec::new();
    let mut last = usize::MAX;
    for q in cdf_grid(n) {
        let i = (((n - 1) as f64) * q).round() as usize;
        if i == last {
            continue;
        }
        last = i;
        let frac = (i + 1) as f64 / n as f64;
        cdf.push((f64::from(sorted[i]), frac));
        time.push((f64::from(sorted[i]), prefix[i] / total));
    }
    (cdf, time)
}

/// Per-run numbers from its latencies (in touch order).
struct LatStats {
    sum: f64,
    p: [f64; 5],
    slow1: (f64, u64),
    slow10: (f64, u64),
}

fn lat_stats(lat: &[u32]) -> (LatStats, Vec<u32>) {
    let mut sorted = lat.to_vec();
    sorted.sort_unstable();
    let sum: f64 = lat.iter().map(|&v| f64::from(v)).sum();
    let slow = |limit: u32| {
        let (t, n) = lat
            .iter()
            .filter(|&&v| v > limit)
            .fold((0f64, 0u64), |(t, n), &v| (t + f64::from(v), n + 1));
        (if sum > 0.0 { t / sum } else { 0.0 }, n)
    };
    let s = LatStats {
        sum,
        p: [
            at(&sorted, 0.5),
            at(&sorted, 0.99),
            at(&sorted, 0.999),
            at(&sorted, 0.9999),
            sorted.last().map_or(0.0, |&v| f64::from(v)),
        ],
        slow1: slow(1_000_000),
        slow10: slow(10_000_000),
    };
    (s, sorted)
}

/// (first touch, median, max) over `bins` contiguous bins of touches.
pub fn by_index(lat: &[u32], bins: usize) -> Vec<(u64, f64, f64)> {
    let n = lat.len();
    let bins = bins.min(n).max(1);
    (0..bins)
        .filter_map(|b| {
            let (lo, hi) = (n * b / bins, n * (b + 1) / bins);
            let mut part = lat.get(lo..hi)?.to_vec();
            if part.is_empty() {
                return None;
            }
            part.sort_unstable();
            Some((
                lo as u64,
                f64::from(part[part.len() / 2]),
                f64::from(*part.last()?),
            ))
        })
        .collect()
}

/// Reads a `touch_ns.u32` file.
pub fn read_latencies(p: &Path) -> Result<Vec<u32>> {
    let bytes = std::fs::read(p).map_err(|e| Error::io("reading", p, e))?;
    if bytes.len() % 4 != 0 {
        return Err(Error::Invalid(format!(
            "{}: {} bytes is not a whole number of u32 latencies",
            p.display(),
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Reads an `rss.csv` file (touch,rss_bytes,t_ns); negative RSS (a failed
/// read) is skipped.
pub fn read_rss(p: &Path) -> Result<Vec<(u64, f64)>> {
    let text = std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let mut f = line.split(',');
        let (Some(t), Some(r)) = (f.next(), f.next()) else {
            return Err(Error::Invalid(format!(
                "{}:{}: expected touch,rss_bytes,t_ns",
                p.display(),
                i + 1
            )));
        };
        let bad = || Error::Invalid(format!("{}:{}: not a number", p.display(), i + 1));
        let t: u64 = t.parse().map_err(|_| bad())?;
        let r: i64 = r.parse().map_err(|_| bad())?;
        if r >= 0 {
            out.push((t, r as f64));
        }
    }
    Ok(out)
}

/// The median of the values present (`None` without any).
pub(crate) fn median(xs: Vec<f64>) -> Option<f64> {
    swaplab_analysis::stats::median_of(&xs)
}

fn plateau(rss: &[(u64, f64)]) -> Option<f64> {
    median(rss[rss.len() / 2..].iter().map(|r| r.1).collect())
}

/// Checks the options before anything runs.
pub fn check(opts: &TouchOptions) -> Result<u64> {
    if opts.size <= opts.mem_limit {
        return Err(Error::Invalid(format!(
            "--size {} is not larger than --mem-limit {}: nothing would swap; use e.g. --size {}",
            format_size(opts.size),
            format_size(opts.mem_limit),
            format_size(opts.mem_limit / 8 * 9)
        )));
    }
    let pages = opts.size / 4096;
    let touches = opts.touches.unwrap_or(pages);
    if touches == 0 || touches > MAX_TOUCHES {
        return Err(Error::Invalid(format!(
            "--touches {touches}: give 1 to 2^28"
        )));
    }
    if opts.patterns.iter().any(|p| p == "seq") && touches > pages {
        return Err(Error::Invalid(format!(
            "--touches {touches}: seq touches each page once, so at most {pages} for a {} region",
            format_size(opts.size)
        )));
    }
    if opts.repeat == 0 || opts.repeat > 1000 {
        return Err(Error::Invalid("--repeat: give 1 to 1000 repeats".into()));
    }
    if opts.points == 0 || opts.points > 1 << 20 {
        return Err(Error::Invalid("--points: give 1 to 2^20 points".into()));
    }
    Ok(touches)
}

/// Progress: (configuration label, done, total).
pub type TouchProgress<'a> = dyn FnMut(&str, usize, usize) + 'a;

/// Runs every (repeat, swap, pattern) and reduces them.
pub fn run(
    lab: &Lab,
    opts: &TouchOptions,
    command: Vec<String>,
    progress: &mut TouchProgress<'_>,
) -> Result<TouchResult> {
    let touches = check(opts)?;
    let exe = swaplab_lab::workload::executable()?;
    let t0 = Instant::now();
    let mut configs: Vec<TouchConfig> = Vec::new();
    for (label, _) in &opts.swaps {
        for p in &opts.patterns {
            configs.push(TouchConfig {
                pattern: p.clone(),
                swap: label.clone(),
                runs: Vec::new(),
                summary: TouchSummary::default(),
                cdf: Vec::new(),
                time_cdf: Vec::new(),
                figure_repeat: None,
                by_index: Vec::new(),
                rss: Vec::new(),
            });
        }
    }
    let names: Vec<String> = configs
        .iter()
        .map(|c| format!("{} {}", c.pattern, c.swap))
        .collect();
    let group = BenchGroup::begin(
        lab,
        "bench-touch",
        &command,
        LimitSpec::Bytes(opts.mem_limit),
        &names,
    )?;
    let result =
        measure(&group, opts, touches, exe, configs, &names, progress).map(|(configs, notes)| {
            TouchResult {
                header: Header::new(BENCH_TOUCH_KIND, 1, Some(group.id), command),
                mem_limit_bytes: opts.mem_limit,
                region_bytes: opts.size,
                touches,
                repeat: opts.repeat,
                seed: opts.seed,
                flush_stats_ms: opts.flush_stats.map(|d| d.as_secs_f64() * 1e3),
                configs,
                wall_s: t0.elapsed().as_secs_f64(),
                notes,
            }
        });
    group.finish(result, save)
}

/// The runs of every (repeat, swap, pattern), reduced.
fn measure(
    group: &BenchGroup<'_>,
    opts: &TouchOptions,
    touches: u64,
    exe: PathBuf,
    mut configs: Vec<TouchConfig>,
    names: &[String],
    progress: &mut TouchProgress<'_>,
) -> Result<(Vec<TouchConfig>, Vec<String>)> {
    let total = configs.len() * opts.repeat as usize;
    let mut done = 0;
    let mut notes = Vec::new();
    let scratch = Scratch(crate::bench::vma::tempdir("bench-touch")?);
    for rep in 0..opts.repeat {
        for (si, (label, spec)) in opts.swaps.iter().enumerate() {
            for (pi, pattern) in opts.patterns.iter().enumerate() {
                let ci = si * opts.patterns.len() + pi;
                progress(
                    &format!("{pattern} {label} repeat {}", rep + 1),
                    done,
                    total,
                );
                let lat = scratch.0.join(format!("touch_ns-{ci}-{rep}.u32"));
                let rss = scratch.0.join(format!("rss-{ci}-{rep}.csv"));
                let mut cmd = vec![
                    exe.display().to_string(),
                    "bench-touch".into(),
                    "--size".into(),
                    opts.size.to_string(),
                    "--pattern".into(),
                    pattern.clone(),
                    "--touches".into(),
                    touches.to_string(),
                    "--points".into(),
                    opts.points.to_string(),
                    "--seed".into(),
                    (opts.seed + u64::from(rep)).to_string(),
                ];
                cmd.extend([
                    "--lat".into(),
                    lat.display().to_string(),
                    "--rss".into(),
                    rss.display().to_string(),
                ]);
                let ro = RunOptions {
                    mem_limit: Some(LimitSpec::Bytes(opts.mem_limit)),
                    swap: vec![spec.clone()],
                    timeout: opts.timeout,
                    flush_stats: opts.flush_stats,
                    ..Default::default()
                };
                let rec = group.run(&cmd, &ro, &names[ci], rep)?;
                let run = collect(&rec, rep, &lat, &rss)?;
                configs[ci].runs.push(run);
                done += 1;
            }
        }
    }
    progress("done", done, total);
    for c in &mut configs {
        reduce(c, opts.mem_limit, &mut notes)?;
    }
    Ok((configs, notes))
}

/// The programs' temporary directory, removed however the benchmark ends.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Moves a run's latency and RSS files into its run directory and reads
/// its numbers.
pub(crate) fn collect(rec: &RunRecord, rep: u32, lat: &Path, rss: &Path) -> Result<TouchRun> {
    let outcome = rec.outcome.map_or("unknown", |o| o.as_str()).to_string();
    let out = rec.workload_output.clone().unwrap_or_default();
    let mut run = TouchRun {
        repeat: rep,
        run_id: rec.id,
        run_dir: rec.dir.clone(),
        outcome: outcome.clone(),
        touches: out["touches"].as_u64().unwrap_or(0),
        distinct_pages: out["distinct_pages"].as_u64().unwrap_or(0),
        timer: out["timer"].as_str().unwrap_or("").to_string(),
        timer_overhead_ns: out["timer_overhead_ns"].as_f64().unwrap_or(0.0),
        majflt_self: out["majflt"].as_u64(),
        majflt_rusage: rec.get(MetricName::Majflt),
        majflt_cgroup: rec.get(MetricName::CgPgmajfault),
        swapout_pages: rec.get(MetricName::SwapoutPages),
        swapin_pages: rec.get(MetricName::SwapinPages),
        psi_some_us: rec.get(MetricName::PsiSomeUs),
        wall_ns: rec.get(MetricName::WallNs),
        touch_ns: 0.0,
        p50_ns: 0.0,
        p99_ns: 0.0,
        p999_ns: 0.0,
        p9999_ns: 0.0,
        max_ns: 0.0,
        slow_1ms_time_share: 0.0,
        slow_10ms_time_share: 0.0,
        slow_1ms_touches: 0,
        slow_10ms_touches: 0,
        rss_plateau_bytes: None,
    };
    if rec.outcome != Some(Outcome::Ok) {
        return Ok(run);
    }
    let keep = |from: &Path, name: &str| -> Result<PathBuf> {
        let to = rec.dir.join(name);
        std::fs::copy(from, &to)
            .map_err(|e| Error::io("copying into the run directory", &to, e))?;
        let _ = std::fs::remove_file(from);
        Ok(to)
    };
    let lat_file = keep(lat, "touch_ns.u32")?;
    let rss_file = keep(rss, "rss.csv")?;
    let lat = read_latencies(&lat_file)?;
    let (s, _) = lat_stats(&lat);
    run.touch_ns = s.sum;
    [
        run.p50_ns,
        run.p99_ns,
        run.p999_ns,
        run.p9999_ns,
        run.max_ns,
    ] = s.p;
    (run.slow_1ms_time_share, run.slow_1ms_touches) = s.slow1;
    (run.slow_10ms_time_share, run.slow_10ms_touches) = s.slow10;
    run.rss_plateau_bytes = plateau(&read_rss(&rss_file)?);
    Ok(run)
}

/// Medians, pooled CDFs and the median repeat's per-index series.
fn reduce(c: &mut TouchConfig, limit: u64, notes: &mut Vec<String>) -> Result<()> {
    let ok: Vec<&TouchRun> = c.runs.iter().filter(|r| r.outcome == "ok").collect();
    let failed = c.runs.len() - ok.len();
    if failed > 0 {
        notes.push(format!(
            "{} {}: {failed} of {} runs did not end ok ({}); they are left out",
            c.pattern,
            c.swap,
            c.runs.len(),
            c.runs
                .iter()
                .filter(|r| r.outcome != "ok")
                .map(|r| r.outcome.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if ok.is_empty() {
        return Ok(());
    }
    let med =
        |f: &dyn Fn(&TouchRun) -> Option<f64>| median(ok.iter().filter_map(|r| f(r)).collect());
    let plateau = med(&|r| r.rss_plateau_bytes);
    c.summary = TouchSummary {
        repeats: ok.len(),
        p50_ns: med(&|r| Some(r.p50_ns)).unwrap_or(0.0),
        p99_ns: med(&|r| Some(r.p99_ns)).unwrap_or(0.0),
        p999_ns: med(&|r| Some(r.p999_ns)).unwrap_or(0.0),
        p9999_ns: med(&|r| Some(r.p9999_ns)).unwrap_or(0.0),
        max_ns: med(&|r| Some(r.max_ns)).unwrap_or(0.0),
        touch_s: med(&|r| Some(r.touch_ns / 1e9)).unwrap_or(0.0),
        wall_s: med(&|r| r.wall_ns.map(|w| w / 1e9)),
        slow_1ms_time_share: med(&|r| Some(r.slow_1ms_time_share)).unwrap_or(0.0),
        slow_10ms_time_share: med(&|r| Some(r.slow_10ms_time_share)).unwrap_or(0.0),
        majflt_self: med(&|r| r.majflt_self.map(|v| v as f64)),
        majflt_cgroup: med(&|r| r.majflt_cgroup),
        swapout_pages: med(&|r| r.swapout_pages),
        rss_plateau_bytes: plateau,
        limit_minus_plateau_bytes: plateau.map(|p| limit as f64 - p),
    };
    if c.summary.swapout_pages.unwrap_or(0.0) == 0.0 {
        notes.push(format!(
            "{} {}: nothing was swapped out (the touched pages fit the limit): raise --size{}",
            c.pattern,
            c.swap,
            if c.pattern == "random" {
                " or --touches (random touches reach about 63 % of the pages when there are as many touches as pages)"
            } else {
                ""
            }
        ));
    }
    let mut pooled: Vec<u32> = Vec::new();
    for r in &ok {
        pooled.extend(read_latencies(&r.run_dir.join("touch_ns.u32"))?);
    }
    pooled.sort_unstable();
    (c.cdf, c.time_cdf) = cdfs(&pooled);
    drop(pooled);
    let mut by_time: Vec<&&TouchRun> = ok.iter().collect();
    by_time.sort_by(|a, b| a.touch_ns.total_cmp(&b.touch_ns));
    let fig = by_time[(by_time.len() - 1) / 2];
    c.figure_repeat = Some(fig.repeat);
    let lat = read_latencies(&fig.run_dir.join("touch_ns.u32"))?;
    c.by_index = by_index(&lat, INDEX_BINS);
    c.rss = read_rss(&fig.run_dir.join("rss.csv"))?;
    Ok(())
}

/// Writes a result as JSON.
pub fn save(p: &Path, r: &TouchResult) -> Result<()> {
    crate::saved::save_compact(p, r)
}

/// `Nx` (a positive multiple, `2x`, `1.125x`) as N; `None` for text
/// without the `x`; `what` names the option in the error.
pub fn parse_multiple(s: &str, what: &str) -> Option<Result<f64>> {
    let n = s.trim().strip_suffix('x')?;
    Some(match n.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(Error::Invalid(format!(
            "{what} {s:?}: a multiple must be a positive number followed by x, such as 2x"
        ))),
    })
}

/// Parses `--size` relative to the limit: `1.125x` or a size.
pub fn parse_region(s: &str, limit: u64) -> Result<u64> {
    match parse_multiple(s, "--size") {
        Some(f) => Ok(((limit as f64 * f?) as u64) / 4096 * 4096),
        None => Ok(parse_size(s)? / 4096 * 4096),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_split_on_kinds_and_scale_multiples() {
        let v = parse_swaps("file:2x,file:8x", 1 << 30).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "file:2x");
        assert_eq!(v[0].1, "file:2048M".parse().unwrap());
        assert_eq!(v[1].1, "file:8192M".parse().unwrap());
        let v = parse_swaps("file:1G,prio=5,zram:256M", 1 << 30).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "file:1G,prio=5");
        assert!(parse_swaps("file:twox", 1 << 30).is_err());
        assert!(parse_swaps("disk:1G", 1 << 30).is_err());
    }

    #[test]
    fn patterns_and_regions_parse() {
        assert_eq!(
            parse_patterns("random, seq,random").unwrap(),
            ["random", "seq"]
        );
        assert!(parse_patterns("zigzag").is_err());
        assert_eq!(parse_region("1.125x", 1 << 30).unwrap(), 1_207_959_552);
        assert_eq!(parse_region("72M", 1).unwrap(), 72 << 20);
        assert!(parse_region("-2x", 1).is_err());
    }

    #[test]
    fn hand_worked_latencies() {
        // 10 touches: eight of 1 µs, one of 2 ms, one of 20 ms.
        let mut lat = vec![1_000u32; 8];
        lat.push(2_000_000);
        lat.push(20_000_000);
        let (s, sorted) = lat_stats(&lat);
        assert_eq!(s.sum, 22_008_000.0);
        // Nearest rank (lower) over 10 values: p50 is the 5th, p99 the 9th.
        assert_eq!(
            s.p,
            [1_000.0, 2_000_000.0, 2_000_000.0, 2_000_000.0, 20_000_000.0]
        );
        // > 1 ms: 22 ms of 22.008 ms; > 10 ms: 20 of 22.008.
        assert!((s.slow1.0 - 22_000_000.0 / 22_008_000.0).abs() < 1e-12);
        assert_eq!(s.slow1.1, 2);
        assert!((s.slow10.0 - 20_000_000.0 / 22_008_000.0).abs() < 1e-12);
        assert_eq!(s.slow10.1, 1);
        let (cdf, time) = cdfs(&sorted);
        assert_eq!(cdf.first(), Some(&(1_000.0, 0.1)));
        assert_eq!(cdf.last(), Some(&(20_000_000.0, 1.0)));
        assert_eq!(time.last().unwrap().1, 1.0);
        // Up to the eighth touch (all the 1 µs ones): 8 µs of 22.008 ms.
        let at8 = cdf
            .iter()
            .zip(&time)
            .find(|(c, _)| (c.1 - 0.8).abs() < 1e-12);
        let ((lat8, _), (_, share8)) = at8.unwrap();
        assert_eq!(*lat8, 1_000.0);
        assert!((share8 - 8_000.0 / 22_008_000.0).abs() < 1e-12);
        let bins = by_index(&lat, 5);
        assert_eq!(bins.len(), 5);
        assert_eq!(bins[4], (8, 20_000_000.0, 20_000_000.0));
        assert_eq!(bins[0], (0, 1_000.0, 1_000.0));
    }

    #[test]
    fn the_grid_reaches_one_touch_in_n() {
        let g = cdf_grid(1_000_000);
        assert!(g.iter().any(|&q| (1.0 - q) <= 1.0001e-6));
        assert!(g.iter().filter(|&&q| q >= 0.9975).count() >= 300);
        assert!(g.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("touch_ns.u32");
        std::fs::write(&p, [1u8, 2, 3]).unwrap();
        assert!(read_latencies(&p)
            .unwrap_err()
            .to_string()
            .contains("whole number"));
        let r = d.path().join("rss.csv");
        std::fs::write(&r, "touch,rss_bytes,t_ns\n0,4096,0\n1,-1,5\nx,y\n").unwrap();
        assert!(read_rss(&r).unwrap_err().to_string().contains(":4:"));
        std::fs::write(&r, "touch,rss_bytes,t_ns\n0,4096,0\n1,-1,5\n").unwrap();
        assert_eq!(read_rss(&r).unwrap(), vec![(0, 4096.0)]);
    }
}
