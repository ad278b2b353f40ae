//! `swaplab calibrate`: what a page costs to swap out and back in on this
//! machine, for each swap kind it can create (issue 12 §1), saved as device
//! profiles that the simulator's `--device file:this` (or `--device
//! PROFILE.toml`) and `swaplab validate` use.
//!
//! Each swap kind is one ordinary swaplab run (`Lab::run`: a fresh memory
//! cgroup, the swap area set up and removed, `page-cluster` 0, a catalog
//! entry) of the embedded `swaplab-workload swapin-lat`, which fills a
//! region, then per round evicts it (MADV_PAGEOUT, writeback waited for, the
//! swap cache dropped), touches it in address order and in a random
//! permutation — every touch a major fault, timed — and finally reads it
//! back with MADV_WILLNEED and touches it from the swap cache (the kernel's
//! fault path without device I/O). The cgroup's limit is far above the
//! region, so nothing else reclaims during a timed pass. See
//! native/workloads/swapinlat.c for the phases, docs/calibrate.md for the
//! profile's fields and how each is derived.

pub mod section;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use swaplab_host::procfs::Environment;
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::format_size;

use crate::bench::group::BenchGroup;
use crate::bench::touch::{cdfs, read_latencies, Curve, Scratch};
use crate::saved::Header;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome};
use swaplab_lab::runner::Lab;
use swaplab_lab::{Error, Result};

/// `"kind"` of a saved `swaplab calibrate` result.
pub const CALIBRATE_KIND: &str = "swaplab.calibrate";
/// The swap kinds calibrate knows how to create.
pub const KINDS: [&str; 3] = ["file", "zram", "zswap"];
/// The kinds of a swap area given whole (`--swap SPEC`): the emulated
/// devices of kernels that can build them (docs/swap-devices.md), and a
/// file or zram of a chosen size and options.
pub const AREA_KINDS: [&str; 4] = ["file", "zram", "delay", "nbd"];
/// The timed phases, in the order the figures list them.
pub const PHASES: [&str; 4] = ["seq", "random", "cache", "minor"];

/// A device profile: what one 4 KiB page costs on one swap kind of this
/// machine. The simulator owns the type (its `file:this` and `PROFILE.toml`
/// devices read it); calibrate writes it.
pub use swaplab_sim::device::DeviceProfile;

/// Reads a profile, with a clear error naming the file and the field.
pub fn load_profile(p: &Path) -> Result<DeviceProfile> {
    DeviceProfile::load(p).map_err(|e| Error::Invalid(e.to_string()))
}

/// Checks a measured profile the way the simulator will when it loads it.
fn check_profile(prof: &DeviceProfile) -> std::result::Result<(), String> {
    DeviceProfile::parse(&prof.to_toml())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Writes a profile atomically, with a comment line naming its source.
pub fn save_profile(prof: &DeviceProfile, p: &Path) -> Result<()> {
    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    let text = format!(
        "# swaplab device profile (swaplab calibrate); fields: docs/calibrate.md\n{}",
        prof.to_toml()
    );
    Ok(swaplab_trace::atomic::write_atomic(p, text.as_bytes())?)
}

/// Where calibrate keeps the profile of swap kind `kind`.
pub fn profile_path(home: &Path, kind: &str) -> PathBuf {
    home.join("device-profiles").join(format!("{kind}.toml"))
}

/// The default profile (`--device file:this`): the swap file's.
pub fn default_profile_path(home: &Path) -> PathBuf {
    home.join("device-profile.toml")
}

/// What `calibrate` runs.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Swap kinds to measure (of [`KINDS`]).
    pub kinds: Vec<String>,
    /// Swap areas to measure as given (`--swap delay:256M,read=1ms`), each
    /// one kind of [`AREA_KINDS`], its profile saved under its kind's name
    /// (`device-profiles/delay.toml`), one area of a kind per calibrate.
    pub areas: Vec<SwapSpec>,
    /// The region each run swaps out and in.
    pub size: u64,
    /// Rounds per kind (each: evict+seq, evict+random, evict+willneed+cache).
    pub rounds: u32,
    /// Where a swap file goes (`None`: swaplab's state directory).
    pub swap_dir: Option<PathBuf>,
    /// Kill a run after this long.
    pub timeout: Option<Duration>,
}

/// Parses `file,zram,zswap` (or `all`).
pub fn parse_kinds(s: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        if k == "all" {
            out = KINDS.iter().map(|k| k.to_string()).collect();
            continue;
        }
        if !KINDS.contains(&k) {
            return Err(Error::Invalid(format!(
                "--kinds {k:?}: give file, zram, zswap or all (comma-separated)"
            )));
        }
        if !out.iter().any(|o| o == k) {
            out.push(k.to_string());
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(
            "--kinds: give file, zram, zswap or all".into(),
        ));
    }
    Ok(out)
}

/// The swap areas for kind `k`: room for the region twice over.
fn swaps_for(k: &str, size: u64, dir: Option<&Path>) -> Result<Vec<SwapSpec>> {
    let swap = format!("{}M", ((size * 2) >> 20) + 64);
    let file = match dir {
        Some(d) => format!("file:{swap},path={}", d.display()),
        None => format!("file:{swap}"),
    };
    let specs = match k {
        "file" => vec![file],
        "zram" => vec![format!("zram:{swap}")],
        "zswap" => vec![file, "zswap".into()],
        _ => {
            return Err(Error::Invalid(format!(
                "unknown swap kind {k:?}: give file, zram or zswap"
            )))
        }
    };
    specs.iter().map(|s| Ok(s.parse()?)).collect()
}

/// Latencies of one phase, pooled over the rounds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseStats {
    pub phase: String,
    pub touches: u64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub mean_ns: f64,
    /// Major faults the process counted during the phase's passes.
    pub majflt: u64,
    /// (latency ns, fraction of touches ≤ it).
    pub cdf: Curve,
}

/// One swap kind's run and what came of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindResult {
    pub kind: String,
    pub swap: String,
    pub run_id: i64,
    pub run_dir: PathBuf,
    pub outcome: String,
    /// `None` when the run did not end ok.
    pub profile: Option<DeviceProfile>,
    /// Where the profile was saved.
    pub profile_path: Option<PathBuf>,
    pub phases: Vec<PhaseStats>,
    /// Pages evicted (not in memory, mincore) before each timed pass.
    pub evicted: Vec<u64>,
    /// The memory cgroup's pgmajfault over the run (the kernel's count).
    pub majflt_cgroup: Option<f64>,
    /// Pages swapped out and in during the run (machine-wide on cgroup v1).
    pub swapout_pages: Option<f64>,
    pub swapin_pages: Option<f64>,
    /// The workload's JSON output, as it printed it.
    pub output: serde_json::Value,
    /// The `--limit` run (the reclaim CPU under a limit) and its output.
    #[serde(default)]
    pub limit_run_id: Option<i64>,
    #[serde(default)]
    pub limit_output: serde_json::Value,
}

/// A whole `swaplab calibrate`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CalibrateResult {
    /// `kind`, `version`, `sweep_id`, `command` and `machine`.
    #[serde(flatten)]
    pub header: Header,
    pub region_bytes: u64,
    pub rounds: u32,
    pub kinds: Vec<KindResult>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

/// Saves a result (JSON).
pub fn save(p: &Path, r: &CalibrateResult) -> Result<()> {
    crate::saved::save_compact(p, r)
}

/// Checks the options before anything runs.
pub fn check(opts: &CalibrateOptions) -> Result<()> {
    if opts.size < 1 << 20 || opts.size > 1 << 36 {
        return Err(Error::Invalid(format!(
            "--size {}: give 1M to 64G (64M takes a few seconds per kind)",
            format_size(opts.size)
        )));
    }
    if opts.rounds == 0 || opts.rounds > 16 {
        return Err(Error::Invalid("--rounds: give 1 to 16".into()));
    }
    if opts.kinds.is_empty() && opts.areas.is_empty() {
        return Err(Error::Invalid(
            "--kinds: give file, zram, zswap or all".into(),
        ));
    }
    for a in &opts.areas {
        let kind = a.kind();
        if !AREA_KINDS.contains(&kind) {
            return Err(Error::Invalid(format!(
                "--swap {a}: give an area of a size (file:, zram:, delay:, nbd:); zswap is --kinds zswap"
            )));
        }
        if opts.kinds.iter().any(|k| k == kind)
            || opts.areas.iter().filter(|b| b.kind() == kind).count() > 1
        {
            return Err(Error::Invalid(format!(
                "--swap {a}: one {kind} area per calibrate (its profile is saved as device-profiles/{kind}.toml)"
            )));
        }
        let size = match a {
            SwapSpec::File { size, .. }
            | SwapSpec::Zram { size, .. }
            | SwapSpec::Delay { size, .. }
            | SwapSpec::Nbd { size, .. } => *size,
            _ => 0,
        };
        if size < opts.size * 2 {
            return Err(Error::Invalid(format!(
                "--swap {a}: the area must hold twice the region of --size {} (give {} or more, or a smaller --size)",
                format_size(opts.size),
                format_size(opts.size * 2)
            )));
        }
        // Fails before anything changes, naming what this kernel lacks.
        a.check_buildable()?;
    }
    Ok(())
}

/// What each measurement runs: its name (the profile's kind) and its swap.
fn jobs(opts: &CalibrateOptions) -> Result<Vec<(String, Vec<SwapSpec>)>> {
    let mut out = Vec::new();
    for k in &opts.kinds {
        out.push((
            k.clone(),
            swaps_for(k, opts.size, opts.swap_dir.as_deref())?,
        ));
    }
    for a in &opts.areas {
        out.push((a.kind().to_string(), vec![a.clone()]));
    }
    Ok(out)
}

/// Progress: (what, done, total).
pub type Progress<'a> = dyn FnMut(&str, usize, usize) + 'a;

/// Measures every kind, saves each profile under `lab`'s home (the file's
/// also as the default profile), and records the whole as a benchmark.
pub fn run(
    lab: &Lab,
    opts: &CalibrateOptions,
    command: Vec<String>,
    progress: &mut Progress<'_>,
) -> Result<CalibrateResult> {
    check(opts)?;
    let exe = swaplab_lab::workload::executable()?;
    let t0 = Instant::now();
    // Far above the region: nothing reclaims during a timed pass.
    let limit = opts.size * 2 + (256 << 20);
    let names: Vec<String> = jobs(opts)?.into_iter().map(|(k, _)| k).collect();
    let group = BenchGroup::begin(
        lab,
        "bench-calibrate",
        &command,
        LimitSpec::Bytes(limit),
        &names,
    )?;
    let measured = measure(lab, &group, opts, &exe, progress);
    let result = measured.map(|(kinds, notes)| CalibrateResult {
        header: Header::new(CALIBRATE_KIND, 1, Some(group.id), command),
        region_bytes: opts.size,
        rounds: opts.rounds,
        kinds,
        wall_s: t0.elapsed().as_secs_f64(),
        notes,
    });
    group.finish(result, save)
}

fn measure(
    lab: &Lab,
    group: &BenchGroup<'_>,
    opts: &CalibrateOptions,
    exe: &Path,
    progress: &mut Progress<'_>,
) -> Result<(Vec<KindResult>, Vec<String>)> {
    let scratch = Scratch(crate::bench::vma::tempdir("calibrate")?);
    let home = lab.catalog.home().to_path_buf();
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let jobs = jobs(opts)?;
    let total = jobs.len();
    for (i, (kind, specs)) in jobs.iter().enumerate() {
        progress(kind, i, total);
        let dir = scratch.0.join(kind);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        let cmd = vec![
            exe.display().to_string(),
            "swapin-lat".into(),
            "--size".into(),
            opts.size.to_string(),
            "--rounds".into(),
            opts.rounds.to_string(),
            "--out".into(),
            dir.display().to_string(),
        ];
        let ro = RunOptions {
            swap: specs.clone(),
            page_cluster: Some(0),
            timeout: opts.timeout,
            ..Default::default()
        };
        let rec = group.run(&cmd, &ro, kind, 0)?;
        let swap = specs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" + ");
        let output = rec.workload_output.clone().unwrap_or_default();
        let mut k = KindResult {
            kind: kind.clone(),
            swap,
            run_id: rec.id,
            run_dir: rec.dir.clone(),
            outcome: rec.outcome.map_or("unknown", |o| o.as_str()).to_string(),
            profile: None,
            profile_path: None,
            phases: Vec::new(),
            evicted: Vec::new(),
            majflt_cgroup: rec.get(MetricName::CgPgmajfault),
            swapout_pages: rec.get(MetricName::SwapoutPages),
            swapin_pages: rec.get(MetricName::SwapinPages),
            output: output.clone(),
            limit_run_id: None,
            limit_output: serde_json::Value::Null,
        };
        if rec.outcome != Some(Outcome::Ok) {
            let why = std::fs::read_to_string(rec.dir.join("stderr.txt")).unwrap_or_default();
            notes.push(format!(
                "{kind}: the run ended {} (run {}): no profile. {}",
                k.outcome,
                rec.id,
                why.lines().last().unwrap_or("")
            ));
            out.push(k);
            continue;
        }
        // Keep the latencies with the run.
        let mut by_phase: Vec<Vec<u32>> = vec![Vec::new(); PHASES.len()];
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io("reading", &dir, e))? {
            let entry = entry.map_err(|e| Error::io("reading", &dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".u32") else {
                continue;
            };
            let phase = stem.split('-').next().unwrap_or(stem);
            let Some(pi) = PHASES.iter().position(|p| *p == phase) else {
                continue;
            };
            let to = rec.dir.join(format!("calibrate-{name}"));
            std::fs::copy(entry.path(), &to)
                .map_err(|e| Error::io("copying into the run directory", &to, e))?;
            by_phase[pi].extend(read_latencies(&to)?);
        }
        let rounds = output["rounds"].as_array().cloned().unwrap_or_default();
        let sum_maj = |key: &str| rounds.iter().filter_map(|r| r[key].as_u64()).sum::<u64>();
        for (pi, lat) in by_phase.iter_mut().enumerate() {
            lat.sort_unstable();
            let majflt = match PHASES[pi] {
                "minor" => output["minor_majflt"].as_u64().unwrap_or(0),
                p => sum_maj(&format!("{p}_majflt")),
            };
            k.phases.push(phase_stats(PHASES[pi], lat, majflt));
        }
        k.evicted = rounds
            .iter()
            .flat_map(|r| {
                r["evicted"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_u64()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect();
        let pages = output["pages"].as_u64().unwrap_or(0);
        for (phase, key) in [("seq", "seq_majflt"), ("random", "random_majflt")] {
            let maj = sum_maj(key);
            let want = pages * rounds.len() as u64;
            if want > 0 && (maj as f64) < 0.9 * want as f64 {
                notes.push(format!(
                    "{kind}: only {maj} of {want} {phase} touches were major faults (the kernel kept part of the region in memory): its latencies mix in cheaper touches"
                ));
            }
        }
        let cache_maj = sum_maj("cache_majflt");
        if cache_maj as f64 > 0.01 * (pages * rounds.len() as u64) as f64 {
            notes.push(format!(
                "{kind}: {cache_maj} major faults while touching the swap cache: MADV_WILLNEED had not read everything"
            ));
        }
        let mut prof = profile(kind, &k, &rounds, pages, &output)?;
        // The reclaim CPU under a limit, in a run of its own: the kernel
        // may OOM-kill a process under a limit this tight, and that must
        // not cost the timed phases above. Not on an emulated device: the
        // cost is the CPU's, and its passes would wait on every read.
        if matches!(kind.as_str(), "delay" | "nbd") {
            notes.push(format!(
                "{kind}: no reclaim run on an emulated device (reclaim's CPU is the machine's, not \
                 the device's; its profile has no reclaim_us, and the simulator charges write_us \
                 per swap-out)"
            ));
        } else {
            let mut lcmd = cmd[..4].to_vec();
            lcmd.extend(["--rounds".into(), opts.rounds.to_string(), "--limit".into()]);
            let lrec = group.run(&lcmd, &ro, &format!("{kind}-limit"), 0)?;
            k.limit_run_id = Some(lrec.id);
            k.limit_output = lrec.workload_output.clone().unwrap_or_default();
            let costs: Vec<ReclaimCosts> = k.limit_output["rounds"]
                .as_array()
                .map(|rs| rs.iter().map(reclaim_costs).collect())
                .unwrap_or_default();
            let median = |f: fn(&ReclaimCosts) -> Option<f64>| {
                crate::bench::touch::median(costs.iter().filter_map(f).collect())
            };
            prof.reclaim_us = median(|c| c.dirty);
            prof.reclaim_clean_us = median(|c| c.clean);
            prof.reclaim_scan_us = median(|c| c.scan);
            if prof.reclaim_us.is_none() {
                // Why: the kernel refused the lowered limit, or the run
                // itself ended badly (an OOM kill).
                let refused = k.limit_output["rounds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["limit"]["errno"].as_i64())
                    .find(|&e| e != 0);
                let why = match refused {
                    Some(e) => format!(
                        "the kernel refused the lowered limit: {}",
                        std::io::Error::from_raw_os_error(e as i32)
                    ),
                    None => format!(
                        "the run ended {}",
                        lrec.outcome.map_or("unknown", |o| o.as_str())
                    ),
                };
                notes.push(format!(
                    "{kind}: the reclaim run (run {}) measured nothing, {why}: the profile has no \
                     reclaim_us, and the simulator charges write_us per swap-out; calibrate again \
                     on a quieter machine or with a larger --size",
                    lrec.id
                ));
            } else if let Some(n) = zero_reclaim_note(kind, &prof) {
                notes.push(n);
            }
        }
        let path = profile_path(&home, kind);
        save_profile(&prof, &path)?;
        if kind == "file" {
            save_profile(&prof, &default_profile_path(&home))?;
        }
        k.profile = Some(prof);
        k.profile_path = Some(path);
        out.push(k);
    }
    progress("done", total, total);
    Ok((out, notes))
}

fn phase_stats(phase: &str, sorted: &[u32], majflt: u64) -> PhaseStats {
    let n = sorted.len();
    let at = |q: f64| -> f64 {
        if n == 0 {
            0.0
        } else {
            f64::from(sorted[(((n - 1) as f64) * q).floor() as usize])
        }
    };
    let mean = if n == 0 {
        0.0
    } else {
        sorted.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64
    };
    PhaseStats {
        phase: phase.into(),
        touches: n as u64,
        p50_ns: at(0.5),
        p99_ns: at(0.99),
        mean_ns: mean,
        majflt,
        cdf: cdfs(sorted).0,
    }
}

/// The profile from a kind's phases and per-round times.
fn profile(
    kind: &str,
    k: &KindResult,
    rounds: &[serde_json::Value],
    pages: u64,
    output: &serde_json::Value,
) -> Result<DeviceProfile> {
    let phase = |p: &str| k.phases.iter().find(|s| s.phase == p);
    let us = |p: &str, f: fn(&PhaseStats) -> f64| phase(p).map_or(0.0, |s| f(s) / 1e3);
    // Write: every eviction follows a pass that dirtied every page.
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    let mut submits = Vec::new();
    for r in rounds {
        let (Some(po), Some(wb), Some(ev)) = (
            r["pageout_s"].as_array(),
            r["writeback_s"].as_array(),
            r["evicted"].as_array(),
        ) else {
            continue;
        };
        for ((po, wb), ev) in po.iter().zip(wb).zip(ev) {
            let (po, wb, ev) = (
                po.as_f64().unwrap_or(0.0),
                wb.as_f64().unwrap_or(0.0),
                ev.as_u64().unwrap_or(0),
            );
            if ev > 0 {
                writes.push((po + wb) * 1e6 / ev as f64);
            }
        }
        if let Some(s) = r["willneed_s"].as_f64().filter(|s| *s > 0.0) {
            reads.push(pages as f64 * 4096.0 / s / 1e6);
        }
        // The madvise call's system time: the submission of a read of
        // every page the eviction before it left out.
        if let (Some(st), Some(n)) = (
            r["willneed_stime_s"].as_f64(),
            r["evicted"][2].as_f64().filter(|n| *n > 0.0),
        ) {
            submits.push(st * 1e6 / n);
        }
    }
    let median = |xs: Vec<f64>| crate::bench::touch::median(xs).unwrap_or(0.0);
    let some_median = |xs: Vec<f64>| crate::bench::touch::median(xs);
    let prof = DeviceProfile {
        kind: kind.into(),
        name: k.swap.clone(),
        kernel: Environment::capture()
            .map(|e| e.kernel_release)
            .unwrap_or_default(),
        measured: swaplab_trace::units::now_utc(),
        read_seq_us: us("seq", |s| s.p50_ns),
        read_rand_us: us("random", |s| s.p50_ns),
        read_rand_p99_us: us("random", |s| s.p99_ns),
        write_us: median(writes),
        reclaim_us: None, // from the `--limit` run, after this one
        reclaim_clean_us: None,
        reclaim_scan_us: None,
        readahead_us: some_median(submits),
        read_mb_s: median(reads),
        fault_path_us: us("cache", |s| s.p50_ns),
        minor_fault_us: us("minor", |s| s.p50_ns),
        compress_ratio: output["compress_ratio"].as_f64().unwrap_or(1.0),
    };
    check_profile(&prof).map_err(|e| {
        Error::Invalid(format!(
            "{kind}: the measured profile is not usable ({e}); see run {} (swaplab show {})",
            k.run_id, k.run_id
        ))
    })?;
    Ok(prof)
}

/// A note when the reclaim run's costs all came out at 0 (each round's
/// reclaim CPU at or below the noise: the pass's system time less its
/// faults at the random pass's cost). It happened in the MGLRU guests of
/// scripts/kernels.sh, under emulation: the profile then charges no
/// reclaim at all, which the user should know.
fn zero_reclaim_note(kind: &str, prof: &DeviceProfile) -> Option<String> {
    let zero = |v: Option<f64>| v.is_some_and(|x| x == 0.0);
    (zero(prof.reclaim_us) && (prof.reclaim_scan_us.is_none() || zero(prof.reclaim_scan_us))).then(
        || {
            format!(
                "{kind}: the reclaim run's CPU came out at or below its noise in every round \
                 (system time less its faults at the random pass's cost): reclaim_us and \
                 reclaim_scan_us are 0, so the simulator charges no reclaim time with this \
                 profile; calibrate again on a quieter machine or with a larger --size"
            )
        },
    )
}

/// One `--limit` round's reclaim CPU, µs ([`reclaim_costs`]).
#[derive(Debug, Default, PartialEq)]
struct ReclaimCosts {
    /// Per page written out (`reclaim_us`).
    dirty: Option<f64>,
    /// Per clean page reclaimed (`reclaim_clean_us`).
    clean: Option<f64>,
    /// The `limit` pass's reclaim CPU per page scanned (`reclaim_scan_us`).
    scan: Option<f64>,
}

/// One `--limit` round's reclaim CPU, µs: per page written out, per clean
/// page reclaimed, and per page scanned. A pass's system time less its
/// major faults at the `random` pass's CPU per fault (a swap-in without
/// reclaim) is its reclaim CPU. `limit` wrote every page it reclaimed:
/// over its swap-outs, the first; over the pages it scanned
/// (`pgscan_anon`), the third. `limit_read` reclaimed clean pages (and a
/// few dirty ones, at the first): over those, the second, when most of
/// what it reclaimed was clean (not on zram, whose reads drop the swap
/// copy). `None` when a pass failed or counted nothing; a negative result
/// (the machine's noise, larger than the cost) is 0.
fn reclaim_costs(round: &serde_json::Value) -> ReclaimCosts {
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64();
    let Some(fault) =
        f(round, "random_stime_s").zip(f(round, "random_majflt").filter(|&m| m > 0.0))
    else {
        return ReclaimCosts::default();
    };
    let fault = fault.0 / fault.1;
    let pass = |k: &str| -> Option<(f64, f64, f64)> {
        let p = &round[k];
        if p["errno"].as_i64() != Some(0) {
            return None;
        }
        let cpu = f(p, "stime_s")? - f(p, "majflt")? * fault;
        Some((cpu, f(p, "pgsteal_anon")?, f(p, "pswpout")?))
    };
    let limit = pass("limit").filter(|p| p.2 > 0.0);
    let dirty = limit.map(|(cpu, _, out)| (cpu / out).max(0.0));
    let scan = limit
        .zip(f(&round["limit"], "pgscan_anon").filter(|&s| s > 0.0))
        .map(|((cpu, _, _), scanned)| (cpu / scanned).max(0.0));
    let clean = pass("limit_read")
        .filter(|(_, steal, out)| steal - out >= 0.5 * steal && *steal > 0.0)
        .map(|(cpu, steal, out)| ((cpu - out * dirty.unwrap_or(0.0)) / (steal - out)).max(0.0));
    ReclaimCosts {
        dirty: dirty.map(|d| d * 1e6),
        clean: clean.map(|c| c * 1e6),
        scan: scan.map(|s| s * 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DeviceProfile {
        DeviceProfile {
            kind: "zram".into(),
            name: "zram:192M".into(),
            kernel: "6.18.0".into(),
            measured: "2026-11-25T20:00:00Z".into(),
            read_seq_us: 7.2,
            read_rand_us: 8.6,
            read_rand_p99_us: 16.5,
            write_us: 17.5,
            reclaim_us: Some(9.5),
            reclaim_clean_us: Some(3.5),
            reclaim_scan_us: Some(3.1),
            readahead_us: Some(1.5),
            read_mb_s: 450.0,
            fault_path_us: 1.6,
            minor_fault_us: 2.9,
            compress_ratio: 0.55,
        }
    }

    #[test]
    fn a_reclaim_cost_of_zero_is_said() {
        let mut p = sample();
        p.reclaim_us = Some(0.0);
        p.reclaim_scan_us = Some(0.0);
        let n = zero_reclaim_note("file", &p).expect("a note");
        assert!(
            n.starts_with("file: ") && n.contains("no reclaim time"),
            "{n}"
        );
        p.reclaim_scan_us = None;
        assert!(zero_reclaim_note("file", &p).is_some());
        // Any cost measured, or none measured at all (its own note): no note.
        p.reclaim_scan_us = Some(1.2);
        assert!(zero_reclaim_note("file", &p).is_none());
        p.reclaim_us = Some(3.6);
        p.reclaim_scan_us = Some(0.0);
        assert!(zero_reclaim_note("file", &p).is_none());
        p.reclaim_us = None;
        assert!(zero_reclaim_note("file", &p).is_none());
    }

    #[test]
    fn reclaim_costs_are_the_limit_passes_cpu_beyond_their_faults() {
        // A swap-in's own CPU: 0.5 s over 16,000 random faults = 31.25 µs.
        // limit: 27,000 faults, 26,000 pages written out, 1.1 s:
        //  (1.1 − 27,000 × 31.25 µs) / 26,000 = 0.25625 s / 26,000 = 9.855… µs.
        // limit_read: 20,000 faults, 20,000 reclaimed of which 1,000
        //  written, 0.7 s: (0.7 − 0.625 − 1,000 × 9.855… µs) / 19,000
        //  = 0.065144… s / 19,000 = 3.4286… µs.
        //  It scanned 82,000 pages: 0.25625 s / 82,000 = 3.125 µs a page.
        let mut round = serde_json::json!({"random_stime_s": 0.5, "random_majflt": 16000,
            "limit": {"errno": 0, "stime_s": 1.1, "majflt": 27000, "pgsteal_anon": 26500,
                      "pswpout": 26000, "pgscan_anon": 82000},
            "limit_read": {"errno": 0, "stime_s": 0.7, "majflt": 20000, "pgsteal_anon": 20000,
                           "pswpout": 1000}});
        let r = reclaim_costs(&round);
        let dirty = 0.25625e6 / 26000.0;
        assert!((r.dirty.unwrap() - dirty).abs() < 1e-9, "{r:?}");
        let clean = (0.075 - 1000.0 * dirty * 1e-6) * 1e6 / 19000.0;
        assert!((r.clean.unwrap() - clean).abs() < 1e-9, "{r:?} {clean}");
        assert!((r.scan.unwrap() - 3.125).abs() < 1e-9, "{r:?}");
        // A reading pass that wrote most of what it reclaimed (zram drops
        // the swap copy at the read): no clean cost.
        round["limit_read"]["pswpout"] = 15000.into();
        assert_eq!(reclaim_costs(&round).clean, None);
        // Noise larger than the cost: 0, never negative.
        round["limit"]["stime_s"] = 0.8.into();
        assert_eq!(reclaim_costs(&round).dirty, Some(0.0));
        assert_eq!(reclaim_costs(&round).scan, Some(0.0));
        // No scan count (a workload of before it was printed): no scan cost.
        round["limit"]["stime_s"] = 1.1.into();
        round["limit"]["pgscan_anon"] = serde_json::Value::Null;
        let r = reclaim_costs(&round);
        assert_eq!((r.dirty.is_some(), r.scan), (true, None));
        // A pass whose limit the kernel refused, or that wrote nothing, is
        // no measurement.
        round["limit"]["pswpout"] = 0.into();
        assert_eq!(reclaim_costs(&round).dirty, None);
        round["limit"] = serde_json::json!({"errno": 16});
        assert_eq!(reclaim_costs(&round), ReclaimCosts::default());
    }

    #[test]
    fn profile_round_trips_through_toml() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x/p.toml");
        save_profile(&sample(), &p).unwrap();
        assert_eq!(load_profile(&p).unwrap(), sample());
    }

    #[test]
    fn bad_profiles_are_refused_with_the_field_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.toml");
        let mut bad = sample();
        bad.read_seq_us = -1.0;
        std::fs::write(&p, toml::to_string(&bad).unwrap()).unwrap();
        let e = load_profile(&p).unwrap_err().to_string();
        assert!(e.contains("read_seq_us") && e.contains("p.toml"), "{e}");
        std::fs::write(&p, "kind = \"file\"\n").unwrap();
        let e = load_profile(&p).unwrap_err().to_string();
        assert!(
            e.contains("p.toml") && e.contains("exactly the keys"),
            "{e}"
        );
    }

    #[test]
    fn kinds_parse_and_refuse() {
        assert_eq!(parse_kinds("zram,file,zram").unwrap(), vec!["zram", "file"]);
        assert_eq!(parse_kinds("all").unwrap().len(), 3);
        assert!(parse_kinds("ssd")
            .unwrap_err()
            .to_string()
            .contains("file, zram"));
        assert!(parse_kinds(",").is_err());
    }

    #[test]
    fn areas_are_checked_and_measured_after_the_kinds() {
        let o = |kinds: &[&str], areas: &[&str], size: u64| CalibrateOptions {
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            areas: areas.iter().map(|a| a.parse().unwrap()).collect(),
            size,
            rounds: 1,
            swap_dir: None,
            timeout: None,
        };
        let err = |x: &CalibrateOptions| check(x).unwrap_err().to_string();
        assert!(err(&o(&[], &["zswap"], 8 << 20)).contains("zswap is --kinds zswap"));
        assert!(err(&o(&["zram"], &["zram:64M"], 8 << 20)).contains("one zram area"));
        assert!(err(&o(&[], &["zram:64M", "zram:32M"], 8 << 20)).contains("one zram area"));
        assert!(err(&o(&[], &["zram:12M"], 8 << 20)).contains("twice the region"));
        let both = o(&["file"], &["zram:64M,algo=lz4"], 8 << 20);
        check(&both).unwrap();
        let j = jobs(&both).unwrap();
        let names: Vec<&str> = j.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["file", "zram"]);
        assert_eq!(
            j[1].1,
            vec!["zram:64M,algo=lz4".parse::<SwapSpec>().unwrap()]
        );
        // An emulated device this kernel cannot build is refused by name.
        let delay = o(&[], &["delay:64M,read=1ms"], 8 << 20);
        let want = "delay:64M,read=1ms"
            .parse::<SwapSpec>()
            .unwrap()
            .check_buildable();
        match want {
            Err(e) => assert!(err(&delay).contains(&e.to_string())),
            Ok(()) => check(&delay).unwrap(),
        }
    }

    #[test]
    fn zswap_is_a_file_with_zswap_in_front() {
        let s = swaps_for("zswap", 64 << 20, None).unwrap();
        assert_eq!(s.len(), 2);
        assert!(matches!(s[0], SwapSpec::File { size, .. } if size == 192 << 20));
        assert!(matches!(s[1], SwapSpec::Zswap { .. }));
    }
}
