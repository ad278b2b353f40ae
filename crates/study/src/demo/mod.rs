//! The main job of issue 3: a sweep of `qsort` and `genome` at 64 MiB under
//! limits 100/75/50/25 % of their peak with a temporary swap file, printed
//! as a slowdown table.
//!
//! Time budget (measured on the 2-vCPU development VM, swap file on a
//! virtio disk): qsort takes about 2 s unlimited and 5-7 s at 75-25 % (its
//! partitioning passes are sequential, so swap readahead helps); genome
//! takes about 5 s unlimited, but its k-mer table is filled and probed at
//! random, so below its peak nearly every access is a swap-in: at 75 % it
//! made 640 k major faults in 120 s without finishing (more than 25× its
//! unlimited time), and 25 % would take tens of minutes. Each run is
//! therefore capped by a timeout (default 60 s); a timed-out cell shows
//! the lower bounds it proves (">60" s, ">=12.8x", ">=308757" major
//! faults). The whole demo takes about 3.5 minutes (calibration runs
//! included), well under 10.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use swaplab_host::swap::SwapSpec;

use crate::sweep::{LabSweep, SweepReport, SweepRequest};
use swaplab_lab::error::{Error, Result};
use swaplab_lab::options::{LimitSpec, RunOptions, Variant};
use swaplab_lab::runner::{Lab, ProgressFn};
use swaplab_lab::workload;

/// What the demo runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DemoOptions {
    /// Workload size (`--size`).
    pub size: String,
    /// Workloads, one variant each.
    pub workloads: Vec<String>,
    /// Limits (shares of each workload's own peak).
    pub limits: Vec<LimitSpec>,
    /// Runs per cell.
    pub repeat: u32,
    /// The swap area (a swap file on disk, removed afterwards).
    pub swap: SwapSpec,
    /// Per-run timeout.
    pub timeout: Duration,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            size: "64M".into(),
            workloads: vec!["qsort".into(), "genome".into()],
            limits: vec![
                LimitSpec::Percent(100.0),
                LimitSpec::Percent(75.0),
                LimitSpec::Percent(50.0),
                LimitSpec::Percent(25.0),
            ],
            repeat: 1,
            swap: SwapSpec::File {
                size: 512 << 20,
                path: None,
                prio: None,
            },
            timeout: Duration::from_secs(60),
        }
    }
}

/// What the demo needs that this machine lacks (empty: it can run).
pub fn demo_missing() -> Vec<String> {
    let mut missing = Vec::new();
    if !swaplab_host::util::is_root() {
        missing.push(
            "root (it creates memory cgroups and a temporary swap file): run with sudo".to_string(),
        );
    }
    match swaplab_host::cgroup::CgroupMounts::detect() {
        Ok(m) if m.memory_fs().is_some() => {}
        _ => missing.push("a memory cgroup controller (v1 memory hierarchy or cgroup2 with memory); see `swaplab doctor`".into()),
    }
    let state = swaplab_host::journal::state_dir();
    let probe_dir = existing_ancestor(&state);
    if is_tmpfs(&probe_dir) {
        missing.push(format!(
            "a disk file system for the swap file: {} is on tmpfs (set SWAPLAB_STATE_DIR to a directory on ext4/xfs)",
            state.display()
        ));
    }
    missing
}

fn existing_ancestor(p: &std::path::Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    while !cur.exists() {
        match cur.parent() {
            Some(parent) => cur = parent.to_path_buf(),
            None => return PathBuf::from("/"),
        }
    }
    cur
}

fn is_tmpfs(p: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes into the zeroed struct we own.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path, `st` a struct we own.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    st.f_type as i64 == 0x0102_1994
}

/// The sweep request the demo makes.
pub fn demo_request(opts: &DemoOptions) -> SweepRequest {
    let variants = opts
        .workloads
        .iter()
        .map(|w| Variant {
            name: w.clone(),
            options: RunOptions::default(),
            command: Some(workload::command(w, &opts.size, None, &[])),
        })
        .collect();
    SweepRequest {
        command: workload::command(
            opts.workloads
                .first()
                .map(String::as_str)
                .unwrap_or("qsort"),
            &opts.size,
            None,
            &[],
        ),
        limits: opts.limits.clone(),
        repeat: opts.repeat.max(1),
        options: RunOptions {
            swap: vec![opts.swap.clone()],
            timeout: Some(opts.timeout),
            ..Default::default()
        },
        variants,
        skip_after_timeout: false,
    }
}

/// Runs the demo sweep (as root) and returns its report, whose
/// `rows()` are the slowdown table the binary prints. Records everything in the catalog like `swaplab sweep`.
pub fn demo_sweep(opts: &DemoOptions, progress: &mut ProgressFn<'_>) -> Result<SweepReport> {
    let missing = demo_missing();
    if !missing.is_empty() {
        return Err(Error::failed(
            "the real-workload demo cannot run here",
            format!("it needs {}", missing.join("; ")),
            "run `sudo swaplab demo`, or `swaplab demo --sim-only` for the simulation demo",
        ));
    }
    let lab = Lab::open()?;
    lab.sweep(&demo_request(opts), progress)
}

/// The loop of issue 4 on one workload: trace it under a limit, analyze,
/// advise, and prove the advice with a sweep of the baseline against the
/// hinted run.
#[derive(Debug, Clone, Serialize)]
pub struct AdviseDemo {
    /// The traced run.
    pub trace_run: i64,
    /// Its trace directory.
    pub trace_dir: PathBuf,
    /// The hint file written.
    pub hints: PathBuf,
    /// `object: pattern` lines of the top objects.
    pub objects: Vec<String>,
    /// `location: action` lines of the advice.
    pub advice: Vec<String>,
    /// base vs hinted at the limit.
    pub sweep: SweepReport,
}

/// What [`trace_and_advise`] made.
#[derive(Debug, Clone)]
pub struct TracedAdvice {
    /// The traced run.
    pub trace_run: i64,
    /// Its trace directory.
    pub trace_dir: PathBuf,
    /// The hint file written (`hints.toml` in the trace directory).
    pub hints: PathBuf,
    /// `object: major faults, swap-ins, pattern` lines of the top objects.
    pub objects: Vec<String>,
    /// `location: action` lines of the advice.
    pub advice: Vec<String>,
}

/// Traces one run of `command` with `options` (its limit and swap),
/// analyzes the trace, and writes `swaplab advise`'s hint file beside it.
pub fn trace_and_advise(
    lab: &Lab,
    command: &[String],
    options: &RunOptions,
    progress: &mut ProgressFn<'_>,
) -> Result<TracedAdvice> {
    use swaplab_analysis::advise::{advise, AdviseContext};
    use swaplab_analysis::analyze::{analyze, AnalyzeOptions};
    let options = RunOptions {
        trace: Some(Default::default()),
        ..options.clone()
    };
    let set = lab.run(command, &options, 1, progress)?;
    let rec = set
        .runs
        .first()
        .ok_or_else(|| Error::Invalid("the traced run did not happen".into()))?;
    let trace_dir = rec
        .trace_dir()
        .ok_or_else(|| Error::Invalid("the traced run recorded no trace directory".into()))?
        .to_path_buf();
    let tables = swaplab_trace::trace_dir::read_tables(&trace_dir)?;
    let an = analyze(&tables, &AnalyzeOptions::default());
    let meta = swaplab_trace::trace_dir::read_meta(&trace_dir)?;
    let synchronous = meta.run_swap_synchronous();
    let ctx = AdviseContext {
        limit_bytes: rec.limit_bytes,
        readahead: Some(if synchronous {
            "none".into()
        } else {
            crate::bench::hints::readahead_kind("file")
        }),
        ..AdviseContext::of_trace(&meta)
    };
    let mut advice = advise(&an, &tables, &ctx);
    // as `swaplab advise` does: what is not a clear gain for the whole
    // process in the simulation is left out
    let screened = swaplab_analysis::predict::screen(&an, &tables, &ctx, &mut advice);
    let mut file =
        swaplab_analysis::predict::hint_file(&advice, ctx.mlock_budget().unwrap_or(0), &screened);
    swaplab_analysis::hints::identify_modules(&mut file, &tables);
    let hints = trace_dir.join("hints.toml");
    swaplab_trace::atomic::write_atomic(&hints, file.to_toml().as_bytes())?;
    let objects = an
        .objects
        .iter()
        .filter(|o| o.site_id.is_some())
        .take(3)
        .map(|o| {
            format!(
                "{}: {} major faults, {} swap-ins, {}",
                o.label,
                o.major_faults,
                o.swap_ins,
                o.pattern.short()
            )
        })
        .collect();
    let advice = advice
        .iter()
        .map(|a| format!("{}: {}", a.location, a.action))
        .collect();
    Ok(TracedAdvice {
        trace_run: rec.id,
        trace_dir,
        hints,
        objects,
        advice,
    })
}

/// Traces `traverse --size SIZE` at 50 % of its peak, advises, and sweeps
/// base against hinted (`repeat` runs each). About 30 s at 64 MiB.
pub fn advise_demo(size: &str, repeat: u32, progress: &mut ProgressFn<'_>) -> Result<AdviseDemo> {
    let lab = Lab::open()?;
    let command = workload::command("traverse", size, None, &[]);
    let swap = SwapSpec::File {
        size: 512 << 20,
        path: None,
        prio: None,
    };
    let options = RunOptions {
        mem_limit: Some(LimitSpec::Percent(50.0)),
        swap: vec![swap.clone()],
        timeout: Some(Duration::from_secs(120)),
        ..Default::default()
    };
    let TracedAdvice {
        trace_run,
        trace_dir,
        hints,
        objects,
        advice,
    } = trace_and_advise(&lab, &command, &options, progress)?;
    let hinted: Variant = format!("hinted=--hints {}", hints.display()).parse()?;
    let base: Variant = "base=".parse()?;
    let sweep = lab.sweep(
        &SweepRequest {
            command,
            limits: vec![LimitSpec::Percent(50.0)],
            repeat: repeat.max(1),
            options: RunOptions {
                swap: vec![swap],
                timeout: Some(Duration::from_secs(120)),
                ..Default::default()
            },
            variants: vec![base, hinted],
            skip_after_timeout: false,
        },
        progress,
    )?;
    Ok(AdviseDemo {
        trace_run,
        trace_dir,
        hints,
        objects,
        advice,
        sweep,
    })
}
