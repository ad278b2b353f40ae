//! `swaplab bench hints`: swpTracer's comparison (its Figure 4.2) as one
//! experiment. A workload (traverse: an array swept `passes` times) at
//! several object sizes, each under memory limits that are shares of its
//! measured peak, runs as
//!
//! * `base` — nothing added (the kernel's swap readahead as the machine has it);
//! * `madvise` — what swpTracer's madvise variant did: MADV_SEQUENTIAL and
//!   MADV_WILLNEED on the whole object once it is filled (the workload's
//!   `--madvise`; a source change in swpTracer, a flag here);
//! * `mlock` — as much of the object locked as the limit leaves
//!   (`--mlock max`: limit − usage − max(limit/8, 4 MiB), read from the cgroup);
//! * `pcN` — the kernel's readahead with `vm.page-cluster` N (journaled and
//!   restored); 0 turns it off, the others bound its window to 2^N pages;
//! * `thread`, `leap`, … — `run --prefetch` prefetchers;
//! * `advise` — `swaplab advise`'s own hint file, from a traced run of the
//!   same command at the middle limit, applied through the preload library.
//!
//! Each size is one ordinary sweep (interleaved repeats, every run in the
//! catalog); the benchmark's own group (`bench-hints`) keeps the result:
//! medians, the speed-up of each variant over `base` with a two-sided
//! Mann–Whitney p, and what the simulator predicts for the same cells.
//!
//! Limits are bytes computed from the **base** command's peak, so every
//! variant gets the same memory even when its own command line differs.
pub mod model;
pub mod section;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bench::group as bench_group;
use crate::bench::touch::median;
use crate::saved::Header;
use crate::sweep::{LabSweep, SweepRequest};
use swaplab_analysis::stats::mann_whitney;
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::format_size;
use swaplab_lab::options::{LimitSpec, RunOptions, Variant};
use swaplab_lab::record::{MetricName, Outcome, RunRecord};
use swaplab_lab::runner::{Lab, ProgressFn};
use swaplab_lab::workload;
use swaplab_lab::{Error, Result};

/// The result file's kind.
pub const BENCH_HINTS_KIND: &str = "swaplab.bench.hints";

/// The variants the benchmark knows, in the order they are drawn.
pub const KNOWN_VARIANTS: &[(&str, &str)] = &[
    ("base", "nothing added"),
    (
        "madvise",
        "MADV_SEQUENTIAL + MADV_WILLNEED on the whole object after filling it (swpTracer's madvise)",
    ),
    (
        "mlock",
        "as much of the object mlocked as the limit leaves (limit - usage - max(limit/8, 4 MiB))",
    ),
    (
        "pc",
        "the kernel's swap readahead at each --page-cluster value (pc0 = off)",
    ),
    (
        "thread",
        "run --prefetch thread: the preload library's trend prefetch thread",
    ),
    (
        "leap0",
        "run --prefetch leap:pageout=0: Leap as published, prefetch only",
    ),
    (
        "leap",
        "run --prefetch leap: the external majority-trend prefetcher, and (pageout=auto) the pages a walk that cannot fit passed paged out behind it",
    ),
    (
        "leap-po",
        "run --prefetch leap:pageout=1: leap, and the pages it passed paged out 64 KiB behind the walk, so that the rest stays resident",
    ),
    (
        "stride",
        "run --prefetch stride: the external stride prefetcher",
    ),
    (
        "advise",
        "swaplab advise's hint file from a traced run at the middle limit",
    ),
    (
        "mlock-leap",
        "half the limit mlocked (--mlock half) and run --prefetch leap:pageout=1 for the rest",
    ),
];

/// What to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HintsOptions {
    /// The built-in workload (it must take --mlock and --madvise for those variants).
    pub workload: String,
    /// Object sizes, bytes.
    pub sizes: Vec<u64>,
    /// Limits as percentages of each size's base peak.
    pub limits: Vec<f64>,
    /// Runs per cell.
    pub repeat: u32,
    /// Passes over the array (traverse).
    pub passes: u64,
    /// The swap area, `Nx` = N times the size (e.g. file:2x).
    pub swap: String,
    /// Variant names (see [`KNOWN_VARIANTS`]; `pc` expands to `pcN` per page-cluster).
    pub variants: Vec<String>,
    /// The page-cluster values of the `pc` variants.
    pub page_clusters: Vec<u32>,
    /// Kill a run after this long.
    pub timeout: Option<Duration>,
    /// `--flush-stats` for every run.
    pub flush_stats: Option<Duration>,
}

/// Parses `--variants` (`all` or a comma list of [`KNOWN_VARIANTS`] names).
pub fn parse_variants(s: &str) -> Result<Vec<String>> {
    let known: Vec<&str> = KNOWN_VARIANTS.iter().map(|(n, _)| *n).collect();
    let mut out = Vec::new();
    for v in s.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        if v == "all" {
            out.extend(known.iter().map(|k| k.to_string()));
        } else if known.contains(&v) {
            out.push(v.to_string());
        } else {
            return Err(Error::Invalid(format!(
                "--variants: unknown variant {v:?} (known: {}, or all)",
                known.join(", ")
            )));
        }
    }
    if !out.contains(&"base".to_string()) {
        out.insert(0, "base".into());
    }
    out.dedup();
    Ok(out)
}

/// Parses `--limits 90%,75%,50%,25%` into percentages (above 0, at most 100).
pub fn parse_limit_shares(s: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for l in s.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        let v = l
            .strip_suffix('%')
            .and_then(|x| x.trim().parse::<f64>().ok())
            .filter(|v| *v > 0.0 && *v <= 100.0)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "--limits: {l:?} is not a share of the peak such as 50% (0 < share <= 100%)"
                ))
            })?;
        out.push(v);
    }
    if out.is_empty() {
        return Err(Error::Invalid(
            "--limits: give shares of the peak, e.g. 90%,75%,50%,25%".into(),
        ));
    }
    Ok(out)
}

/// One (size, variant, limit) cell.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HintsCell {
    pub variant: String,
    /// The limit as a share of the base peak, %.
    pub limit_pct: f64,
    pub limit_bytes: u64,
    /// Runs made and runs that ended ok.
    pub runs: usize,
    pub ok: usize,
    /// Run ids.
    pub run_ids: Vec<i64>,
    /// Medians of the ok runs.
    pub wall_s: Option<f64>,
    pub majflt: Option<f64>,
    pub swapin_pages: Option<f64>,
    /// Median pages swapped out (machine-wide /proc/vmstat deltas on
    /// cgroup v1).
    #[serde(default)]
    pub swapout_pages: Option<f64>,
    /// base's median wall / this cell's (> 1: faster than base).
    pub speedup: Option<f64>,
    /// Two-sided Mann–Whitney p of this cell's walls against base's.
    pub p_value: Option<f64>,
    /// 1 - majflt / base majflt, measured.
    pub fault_reduction: Option<f64>,
    /// mlock: the bytes the workload locked (median of its ok runs'
    /// reports).
    #[serde(default)]
    pub mlocked_bytes: Option<f64>,
    /// Simulated major faults of this cell (None: no model for the variant).
    pub sim_majflt: Option<f64>,
    /// Simulated pages read ahead (besides the faulting ones).
    #[serde(default)]
    pub sim_prefetch_reads: Option<f64>,
    /// Simulated swap-outs (pages written to swap).
    #[serde(default)]
    pub sim_swap_outs: Option<f64>,
    /// 1 - sim majflt / sim base majflt.
    pub sim_fault_reduction: Option<f64>,
    /// The speed-up the simulation predicts (see `predicted_speedup`).
    pub sim_speedup: Option<f64>,
    /// What the simulation modelled ("linux + cluster:pc=3 …").
    pub sim_model: String,
    /// Outcomes other than ok, e.g. "OOM 2/5".
    pub note: String,
}

/// One object size.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HintsSize {
    pub size_bytes: u64,
    /// The base command's peak (cgroup peak of an unlimited run).
    pub peak_bytes: u64,
    /// Wall time of the unlimited calibration run, s (the no-swap time).
    pub unlimited_wall_s: Option<f64>,
    /// The sweep holding every run of this size.
    pub sweep_id: i64,
    pub command: Vec<String>,
    /// `advise`'s hint file and its advice, when that variant ran.
    pub hints_file: Option<PathBuf>,
    pub advice: Vec<String>,
    pub cells: Vec<HintsCell>,
}

/// The whole benchmark.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HintsResult {
    /// `kind`, `version`, `sweep_id`, `command` and `machine`.
    #[serde(flatten)]
    pub header: Header,
    pub options: HintsOptions,
    /// The swap readahead the kernel uses for the swap area ("cluster" or
    /// "vma"), which the simulation models for base.
    pub readahead: String,
    /// `vm.page-cluster` as the machine had it (base's value).
    pub page_cluster: Option<u32>,
    pub sizes: Vec<HintsSize>,
    /// Per (variant, limit %): the mean speed-up over the sizes.
    pub average: Vec<HintsCell>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

/// The variants as sweep variants for one size.
fn sweep_variants(
    opts: &HintsOptions,
    command: &[String],
    hints: Option<&PathBuf>,
) -> Result<Vec<Variant>> {
    let with = |extra: &[&str]| -> Vec<String> {
        let mut c = command.to_vec();
        c.extend(extra.iter().map(|s| s.to_string()));
        c
    };
    let plain = |name: &str, options: RunOptions| Variant {
        name: name.into(),
        options,
        command: None,
    };
    let mut out = Vec::new();
    for v in &opts.variants {
        match v.as_str() {
            "base" => out.push(plain("base", RunOptions::default())),
            "madvise" => out.push(Variant {
                name: "madvise".into(),
                options: RunOptions::default(),
                command: Some(with(&["--madvise", "sequential,willneed"])),
            }),
            "mlock" => out.push(Variant {
                name: "mlock".into(),
                options: RunOptions::default(),
                command: Some(with(&["--mlock", "max"])),
            }),
            "leap-po" | "leap0" => {
                let spec = if v == "leap0" {
                    "leap:pageout=0"
                } else {
                    "leap:pageout=1"
                };
                let (options, _) = swaplab_lab::options::parse_option_words(&[
                    "--prefetch".to_string(),
                    spec.to_string(),
                ])?;
                out.push(plain(v, options))
            }
            "mlock-leap" => {
                let (options, _) = swaplab_lab::options::parse_option_words(&[
                    "--prefetch".to_string(),
                    "leap:pageout=1".to_string(),
                ])?;
                out.push(Variant {
                    name: "mlock-leap".into(),
                    options,
                    command: Some(with(&["--mlock", "half"])),
                })
            }
            "pc" => {
                for pc in &opts.page_clusters {
                    out.push(plain(
                        &format!("pc{pc}"),
                        RunOptions {
                            page_cluster: Some(*pc),
                            ..Default::default()
                        },
                    ));
                }
            }
            "advise" => {
                if let Some(h) = hints {
                    out.push(plain(
                        "advise",
                        RunOptions {
                            hints: Some(h.clone()),
                            ..Default::default()
                        },
                    ));
                }
            }
            other => {
                // A `run --prefetch` prefetcher.
                let (o, _) = swaplab_lab::options::parse_option_words(&[
                    "--prefetch".to_string(),
                    other.to_string(),
                ])?;
                out.push(plain(other, o));
            }
        }
    }
    Ok(out)
}

/// Checks the options before anything runs.
pub fn check(opts: &HintsOptions) -> Result<()> {
    if opts.sizes.is_empty() {
        return Err(Error::Invalid(
            "--sizes: give object sizes, e.g. 64M,128M".into(),
        ));
    }
    if opts.repeat == 0 || opts.repeat > 1000 {
        return Err(Error::Invalid(
            "--repeat: give 1 to 1000 runs per cell".into(),
        ));
    }
    if opts.passes == 0 {
        return Err(Error::Invalid("--passes: give at least 1".into()));
    }
    let info = workload::list()?;
    let w = info
        .iter()
        .find(|w| w.name == opts.workload)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "--workload {:?}: not a built-in workload (known: {})",
                opts.workload,
                info.iter()
                    .map(|w| w.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let needs_flags = opts
        .variants
        .iter()
        .any(|v| v == "madvise" || v == "mlock" || v == "mlock-leap");
    if needs_flags && opts.workload != "traverse" {
        return Err(Error::Invalid(format!(
            "--workload {}: the madvise, mlock and mlock-leap variants need a workload that takes --mlock and --madvise (traverse); leave them out with --variants",
            w.name
        )));
    }
    if opts.variants.iter().any(|v| v == "pc") && opts.page_clusters.is_empty() {
        return Err(Error::Invalid(
            "--page-cluster: give the values of the pc variants, e.g. 0,3,6".into(),
        ));
    }
    for pc in &opts.page_clusters {
        if *pc > 31 {
            return Err(Error::Invalid(format!(
                "--page-cluster {pc}: must be 0..=31"
            )));
        }
    }
    Ok(())
}

/// The workload's command for one size.
pub fn size_command(opts: &HintsOptions, size: u64) -> Vec<String> {
    let mut extra = Vec::new();
    if opts.workload == "traverse" {
        extra = vec!["--passes".to_string(), opts.passes.to_string()];
    }
    workload::command(&opts.workload, &size.to_string(), None, &extra)
}

/// Runs the benchmark: per size, the peak, `advise`'s hints (if asked),
/// one sweep of every variant and limit, and the simulation of each cell.
pub fn run(
    lab: &Lab,
    opts: &HintsOptions,
    command_line: Vec<String>,
    progress: &mut ProgressFn<'_>,
) -> Result<HintsResult> {
    check(opts)?;
    Lab::require_runner()?;
    let t0 = Instant::now();
    let readahead = readahead_kind(&opts.swap);
    let page_cluster = std::fs::read_to_string("/proc/sys/vm/page-cluster")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let mut notes = Vec::new();
    let mut sizes = Vec::new();
    for &size in &opts.sizes {
        sizes.push(run_size(
            lab,
            opts,
            size,
            &readahead,
            page_cluster,
            &mut notes,
            progress,
        )?);
    }
    let average = average(&sizes);
    let mut result = HintsResult {
        header: Header::new(BENCH_HINTS_KIND, 1, None, command_line.clone()),
        options: opts.clone(),
        readahead,
        page_cluster,
        sizes,
        average,
        wall_s: t0.elapsed().as_secs_f64(),
        notes,
    };
    bench_group::record(
        &lab.catalog,
        "bench-hints",
        &command_line,
        &mut result,
        |r, id| r.header.sweep_id = Some(id),
        save,
    )?;
    Ok(result)
}

fn run_size(
    lab: &Lab,
    opts: &HintsOptions,
    size: u64,
    readahead: &str,
    page_cluster: Option<u32>,
    notes: &mut Vec<String>,
    progress: &mut ProgressFn<'_>,
) -> Result<HintsSize> {
    let command = size_command(opts, size);
    let swaps = crate::bench::touch::parse_swaps(&opts.swap, size)?;
    let [(_, swap)]: [(String, SwapSpec); 1] = swaps.try_into().map_err(|_| {
        Error::Invalid("--swap: bench hints takes one swap area (e.g. file:2x)".into())
    })?;
    let base_options = RunOptions {
        swap: vec![swap.clone()],
        timeout: opts.timeout,
        flush_stats: opts.flush_stats,
        ..Default::default()
    };
    let peak = lab.peak_of(&command, &base_options, progress)?;
    let unlimited_wall_s = unlimited_wall(lab, &command, &base_options);
    let limits: Vec<(f64, u64)> = opts
        .limits
        .iter()
        .map(|pct| (*pct, ((peak as f64 * pct / 100.0) as u64) & !4095))
        .collect();
    let (hints_file, advice) = if opts.variants.iter().any(|v| v == "advise") {
        // Traced at the middle limit (50 % when it is one of them).
        let mid = limits
            .iter()
            .min_by(|a, b| (a.0 - 50.0).abs().total_cmp(&(b.0 - 50.0).abs()))
            .map(|l| l.1)
            .unwrap_or(peak / 2);
        let traced = RunOptions {
            mem_limit: Some(LimitSpec::Bytes(mid)),
            ..base_options.clone()
        };
        match crate::demo::trace_and_advise(lab, &command, &traced, progress) {
            Ok(t) => (Some(t.hints), t.advice),
            Err(e) => {
                notes.push(format!(
                    "{}: the advise variant was left out: tracing or advising failed: {e}",
                    format_size(size)
                ));
                (None, Vec::new())
            }
        }
    } else {
        (None, Vec::new())
    };
    let variants = sweep_variants(opts, &command, hints_file.as_ref())?;
    let report = lab.sweep(
        &SweepRequest {
            command: command.clone(),
            limits: limits.iter().map(|l| LimitSpec::Bytes(l.1)).collect(),
            repeat: opts.repeat,
            options: base_options,
            variants,
            skip_after_timeout: false,
        },
        progress,
    )?;
    let runs = lab.catalog.sweep_runs(report.sweep_id)?;
    let mut cells = Vec::new();
    let mut walls = Vec::new();
    for c in &report.cells {
        let pct = limits
            .iter()
            .find(|l| Some(l.1) == c.limit_bytes)
            .map_or(0.0, |l| l.0);
        let mine: Vec<&RunRecord> = runs.iter().filter(|r| c.runs.contains(&r.id)).collect();
        walls.push(ok_values(&mine, MetricName::WallNs));
        cells.push(cell_of(
            &c.variant,
            pct,
            c.limit_bytes.unwrap_or(0),
            &mine,
            c.outcome_text(),
        ));
    }
    compare_with_base(&mut cells, &walls);
    let mut s = HintsSize {
        size_bytes: size,
        peak_bytes: peak,
        unlimited_wall_s,
        sweep_id: report.sweep_id,
        command,
        hints_file,
        advice,
        cells,
    };
    crate::bench::hints::model::predict(&mut s, opts, readahead, page_cluster);
    Ok(s)
}

/// The wall time of the command's unlimited calibration run, if the
/// catalog has it.
fn unlimited_wall(lab: &Lab, command: &[String], options: &RunOptions) -> Option<f64> {
    let resolved = workload::resolve_command(command).ok()?;
    let key = swaplab_lab::runner::peak_key(&resolved, options);
    let (_, id) = lab.catalog.peak(&key).ok()??;
    let rec = lab.catalog.run(id?).ok()?;
    rec.get(MetricName::WallNs).map(|w| w / 1e9)
}

fn ok_values(runs: &[&RunRecord], metric: MetricName) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.outcome == Some(Outcome::Ok))
        .filter_map(|r| r.get(metric))
        .collect()
}

fn cell_of(variant: &str, pct: f64, limit: u64, runs: &[&RunRecord], outcome: String) -> HintsCell {
    let ok = runs
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Ok))
        .count();
    HintsCell {
        variant: variant.into(),
        limit_pct: pct,
        limit_bytes: limit,
        runs: runs.len(),
        ok,
        run_ids: runs.iter().map(|r| r.id).collect(),
        wall_s: median(ok_values(runs, MetricName::WallNs)).map(|w| w / 1e9),
        majflt: median(ok_values(runs, MetricName::Majflt)),
        swapin_pages: median(ok_values(runs, MetricName::SwapinPages)),
        swapout_pages: median(ok_values(runs, MetricName::SwapoutPages)),
        mlocked_bytes: median(
            runs.iter()
                .filter(|r| r.outcome == Some(Outcome::Ok))
                .filter_map(|r| r.workload_output.as_ref()?["mlocked"].as_f64())
                .collect(),
        )
        .filter(|_| variant == "mlock" || variant == "mlock-leap"),
        note: if outcome == "ok" {
            String::new()
        } else {
            outcome
        },
        ..Default::default()
    }
}

/// Speed-ups, Mann–Whitney p-values (of the ok runs' walls, `walls[i]`
/// for `cells[i]`) and fault reductions against base at the same limit.
fn compare_with_base(cells: &mut [HintsCell], walls: &[Vec<f64>]) {
    struct Base<'a> {
        pct: f64,
        wall: Option<f64>,
        majflt: Option<f64>,
        walls: &'a [f64],
    }
    let base: Vec<Base> = cells
        .iter()
        .zip(walls)
        .filter(|(c, _)| c.variant == "base")
        .map(|(c, w)| Base {
            pct: c.limit_pct,
            wall: c.wall_s,
            majflt: c.majflt,
            walls: w,
        })
        .collect();
    for (c, w) in cells.iter_mut().zip(walls) {
        let Some(&Base {
            wall: bw,
            majflt: bm,
            walls: bwalls,
            ..
        }) = base.iter().find(|b| b.pct == c.limit_pct)
        else {
            continue;
        };
        if c.variant != "base" {
            c.p_value = mann_whitney(w, bwalls).map(|m| m.p);
        }
        c.speedup = match (bw, c.wall_s) {
            (Some(b), Some(w)) if w > 0.0 => Some(b / w),
            _ => None,
        };
        c.fault_reduction = match (bm, c.majflt) {
            (Some(b), Some(m)) if b > 0.0 => Some(1.0 - m / b),
            _ => None,
        };
    }
}

/// Per (variant, limit): the mean over the sizes of the speed-ups (and of
/// the predicted ones).
fn average(sizes: &[HintsSize]) -> Vec<HintsCell> {
    let mut out: Vec<HintsCell> = Vec::new();
    for s in sizes {
        for c in &s.cells {
            if !out
                .iter()
                .any(|o| o.variant == c.variant && o.limit_pct == c.limit_pct)
            {
                out.push(HintsCell {
                    variant: c.variant.clone(),
                    limit_pct: c.limit_pct,
                    ..Default::default()
                });
            }
        }
    }
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    for o in &mut out {
        let same: Vec<&HintsCell> = sizes
            .iter()
            .flat_map(|s| s.cells.iter())
            .filter(|c| c.variant == o.variant && c.limit_pct == o.limit_pct)
            .collect();
        o.runs = same.iter().map(|c| c.runs).sum();
        o.ok = same.iter().map(|c| c.ok).sum();
        o.speedup = mean(same.iter().filter_map(|c| c.speedup).collect());
        o.fault_reduction = mean(same.iter().filter_map(|c| c.fault_reduction).collect());
        o.sim_speedup = mean(same.iter().filter_map(|c| c.sim_speedup).collect());
        o.sim_fault_reduction = mean(same.iter().filter_map(|c| c.sim_fault_reduction).collect());
    }
    out
}

/// Which swap readahead the kernel uses with `swap` (a spec): "vma" when
/// VMA-based readahead is enabled and no rotational swap device is in use
/// (`swap_use_vma_readahead()` in mm/swap_state.c), "cluster" otherwise;
/// "none" for zram (SWP_SYNCHRONOUS_IO: single-mapped pages skip the swap
/// cache and readahead).
pub fn readahead_kind(swap: &str) -> String {
    let kind = swap.split(':').next().unwrap_or("");
    if kind == "zram" {
        return "none".into();
    }
    let vma = std::fs::read_to_string("/sys/kernel/mm/swap/vma_ra_enabled")
        .map(|s| s.trim() == "true")
        .unwrap_or(false);
    // swaplab's swap files live on the filesystem of its state directory.
    let rotational =
        swaplab_host::swap::path_rotational(&swaplab_host::journal::state_dir()).unwrap_or(true);
    if vma && !rotational {
        "vma".into()
    } else {
        "cluster".into()
    }
}

/// Writes a result as JSON.
pub fn save(p: &std::path::Path, r: &HintsResult) -> Result<()> {
    crate::saved::save(p, r)
}
