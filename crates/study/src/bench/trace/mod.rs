//! `swaplab bench trace`: what tracing costs.
//!
//! The same command runs under the same memory limit and swap, untraced
//! and traced with each fault source (perf, tracefs), interleaved in
//! rounds so that drift of a shared machine spreads evenly. Reported per
//! mode: median wall time, major faults and, for traced runs, the events
//! recorded, the events lost and the trace's size on disk. Targets (issue
//! 4): a traced run takes at most [`WALL_RATIO_TARGET`]× the untraced one;
//! a trace takes at most [`BYTES_PER_MFAULT_TARGET`] bytes per million
//! fault events.

use serde::{Deserialize, Serialize};

use swaplab_lab::error::{Error, Result};

use swaplab_analysis::stats::median;
use swaplab_lab::options::{LimitSpec, RunOptions, TraceConfig};
use swaplab_lab::record::{MetricName, Outcome, Role};
use swaplab_lab::runner::{Lab, Progress, ProgressFn, RunPlan};

/// Target: traced wall / untraced wall.
pub const WALL_RATIO_TARGET: f64 = 1.15;
/// Target: trace bytes per 1 M fault events.
pub const BYTES_PER_MFAULT_TARGET: f64 = 16e6;

/// One mode's runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeResult {
    /// `untraced`, `perf`, `tracefs`.
    pub mode: String,
    /// Run ids in the catalog.
    pub run_ids: Vec<i64>,
    /// Runs that did not end ok (OOM, timeout), left out of the medians.
    pub failed: Vec<String>,
    /// Wall times, ns.
    pub wall_ns: Vec<f64>,
    /// Major faults (rusage).
    pub majflt: Vec<f64>,
    /// Fault events recorded per run.
    pub events: Vec<f64>,
    /// Events lost per run.
    pub lost: Vec<f64>,
    /// Trace size per run, bytes.
    pub trace_bytes: Vec<f64>,
    /// Median wall / median untraced wall.
    pub wall_ratio: f64,
    /// Median of (trace bytes / events × 1e6).
    pub bytes_per_mfault: f64,
}

/// The benchmark's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceBench {
    /// The command.
    pub command: Vec<String>,
    /// The limit as given and in bytes.
    pub limit: String,
    /// Bytes.
    pub limit_bytes: Option<u64>,
    /// Rounds made.
    pub repeat: u32,
    /// Per mode.
    pub modes: Vec<ModeResult>,
}

/// Runs the command `repeat` rounds × (untraced, each source) under
/// `options` (its limit resolved once).
pub fn bench_trace(
    lab: &Lab,
    command: &[String],
    options: &RunOptions,
    sources: &[&str],
    repeat: u32,
    progress: &mut ProgressFn<'_>,
) -> Result<TraceBench> {
    Lab::require_runner()?;
    options.validate()?;
    let spec = options.mem_limit.unwrap_or(LimitSpec::None);
    let (limit_bytes, _) = lab.resolve_limit(command, options, spec, progress)?;
    let mut modes: Vec<ModeResult> = std::iter::once("untraced")
        .chain(sources.iter().copied())
        .map(|m| ModeResult {
            mode: m.to_string(),
            run_ids: vec![],
            failed: vec![],
            wall_ns: vec![],
            majflt: vec![],
            events: vec![],
            lost: vec![],
            trace_bytes: vec![],
            wall_ratio: f64::NAN,
            bytes_per_mfault: f64::NAN,
        })
        .collect();
    let total = repeat as usize * modes.len();
    let mut index = 0;
    for round in 0..repeat {
        // Rotate the order each round.
        let n = modes.len();
        for k in 0..n {
            let m = &mut modes[(k + round as usize) % n];
            if let Some(s) = lab.interrupted() {
                return Err(Error::Interrupted(s));
            }
            let mut o = options.clone();
            o.trace = (m.mode != "untraced").then(|| TraceConfig {
                source: m.mode.clone(),
                ..Default::default()
            });
            let plan = RunPlan {
                command: command.to_vec(),
                options: o,
                limit_label: spec.to_string(),
                limit_bytes,
                role: Role::Measure,
                sweep: None,
            };
            progress(Progress::RunStarted {
                index,
                total,
                plan: &plan,
            });
            let rec = lab.run_plan(&plan)?;
            m.run_ids.push(rec.id);
            if rec.outcome != Some(Outcome::Ok) {
                // A thrashing workload at its edge may be OOM-killed or
                // time out in any mode: a result, kept out of the medians.
                m.failed
                    .push(format!("run {}: {}", rec.id, rec.outcome_text()));
                progress(Progress::RunFinished {
                    index,
                    total,
                    record: &rec,
                });
                index += 1;
                continue;
            }
            m.wall_ns
                .push(rec.get(MetricName::WallNs).unwrap_or(f64::NAN));
            m.majflt
                .push(rec.get(MetricName::Majflt).unwrap_or(f64::NAN));
            if m.mode != "untraced" {
                m.events
                    .push(rec.get(MetricName::TraceFaults).unwrap_or(0.0));
                m.lost.push(rec.get(MetricName::TraceLost).unwrap_or(0.0));
                m.trace_bytes
                    .push(rec.get(MetricName::TraceBytes).unwrap_or(0.0));
            }
            progress(Progress::RunFinished {
                index,
                total,
                record: &rec,
            });
            index += 1;
        }
    }
    let base = median(&modes[0].wall_ns);
    for m in &mut modes {
        m.wall_ratio = median(&m.wall_ns) / base;
        let per: Vec<f64> = m
            .trace_bytes
            .iter()
            .zip(&m.events)
            .filter(|(_, e)| **e > 0.0)
            .map(|(b, e)| b / e * 1e6)
            .collect();
        m.bytes_per_mfault = median(&per);
    }
    Ok(TraceBench {
        command: command.to_vec(),
        limit: spec.to_string(),
        limit_bytes,
        repeat,
        modes,
    })
}
