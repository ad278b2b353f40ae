//! `swaplab bench runner`: what running under swaplab costs.
//!
//! A workload that never swaps runs alternately directly (spawn + wait4,
//! output to a file, no cgroup, no sampler) and under the runner (no
//! limit, fresh cgroup, 20 Hz sampler, output to a file). Reported: the
//! median wall time of each and their ratio (target: within 2 %), the
//! runner's end-to-end cost per run (session, cgroup, catalog), and the
//! sampler thread's CPU share (target: under 1 % of a CPU).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use swaplab_analysis::stats::median;
use swaplab_lab::error::{Error, Result};
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome, Role};
use swaplab_lab::runner::{Lab, Progress, ProgressFn, RunPlan};
use swaplab_lab::workload;

/// Target: runner wall within this many percent of a direct run.
pub const WALL_TARGET_PCT: f64 = 2.0;
/// Target: sampler CPU share below this many percent of a CPU.
pub const SAMPLER_TARGET_PCT: f64 = 1.0;

/// The benchmark's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunnerBench {
    /// The command timed.
    pub command: Vec<String>,
    /// Pairs timed.
    pub repeat: u32,
    /// Wall times of the direct runs, ns.
    pub direct_wall_ns: Vec<f64>,
    /// Wall times the runner measured, ns.
    pub runner_wall_ns: Vec<f64>,
    /// CPU time (user + system) of the direct runs, ns.
    pub direct_cpu_ns: Vec<f64>,
    /// CPU time (user + system) of the runs under the runner, ns.
    pub runner_cpu_ns: Vec<f64>,
    /// Median over the pairs of (runner CPU / direct CPU - 1) × 100: less
    /// sensitive than wall time to other tenants of a shared machine.
    pub cpu_overhead_pct: f64,
    /// End-to-end time of `run_plan` (setup, run, teardown, catalog), ns.
    pub runner_total_ns: Vec<f64>,
    /// Sampler CPU share per run.
    pub sampler_cpu_share: Vec<f64>,
    /// Timeline samples per second achieved (median).
    pub samples_per_s: f64,
    /// Median over the pairs of (runner wall / direct wall - 1) × 100: pairs
    /// ran back to back, so slow drift of a shared machine cancels.
    pub wall_overhead_pct: f64,
    /// First and third quartile of the pairs' overheads, %: the noise.
    pub wall_overhead_iqr_pct: (f64, f64),
    /// Median (end-to-end - wall), ns: the fixed cost per run.
    pub fixed_cost_ns: f64,
    /// Median sampler CPU share × 100.
    pub sampler_cpu_pct: f64,
    /// Whether |wall_overhead_pct| <= [`WALL_TARGET_PCT`].
    pub meets_wall_target: bool,
    /// Whether sampler_cpu_pct < [`SAMPLER_TARGET_PCT`].
    pub meets_sampler_target: bool,
}

fn direct_run(resolved: &[String], out: &std::path::Path) -> Result<(f64, f64)> {
    let f = std::fs::File::create(out).map_err(|e| Error::io("creating", out, e))?;
    let mut cmd = Command::new(swaplab_trace::arg::decode(&resolved[0]));
    cmd.args(resolved[1..].iter().map(|a| swaplab_trace::arg::decode(a)))
        .stdin(Stdio::null())
        .stdout(f)
        .stderr(Stdio::null());
    swaplab_lab::runner::die_with_parent(&mut cmd);
    let t0 = Instant::now();
    let mut child = workload::spawn_retrying(&mut cmd)
        .map_err(|e| Error::io("starting", std::path::Path::new(&resolved[0]), e))?;
    let (status, ru) = swaplab_host::procfs::wait_with_rusage(&mut child)?;
    let wall = t0.elapsed().as_nanos() as f64;
    if !status.success() {
        return Err(Error::failed(
            format!("`{}`", resolved.join(" ")),
            format!("exited with {status}"),
            "pick a command that succeeds",
        ));
    }
    Ok((wall, (ru.utime_ns + ru.stime_ns) as f64))
}

/// Times `command` `repeat` times each way, interleaved.
pub fn bench_runner(
    lab: &Lab,
    command: &[String],
    repeat: u32,
    progress: &mut ProgressFn<'_>,
) -> Result<RunnerBench> {
    Lab::require_runner()?;
    let resolved = workload::resolve_command(command)?;
    let tmp = std::env::temp_dir().join(format!("swaplab-bench-{}.out", std::process::id()));
    let mut b = RunnerBench {
        command: command.to_vec(),
        repeat,
        direct_wall_ns: vec![],
        runner_wall_ns: vec![],
        direct_cpu_ns: vec![],
        runner_cpu_ns: vec![],
        cpu_overhead_pct: 0.0,
        runner_total_ns: vec![],
        sampler_cpu_share: vec![],
        samples_per_s: 0.0,
        wall_overhead_pct: 0.0,
        wall_overhead_iqr_pct: (0.0, 0.0),
        fixed_cost_ns: 0.0,
        sampler_cpu_pct: 0.0,
        meets_wall_target: false,
        meets_sampler_target: false,
    };
    // One warm-up of each, not counted (page cache, binary loading).
    direct_run(&resolved, &tmp)?;
    let mut rates = Vec::new();
    let total = repeat as usize * 2;
    for i in 0..repeat {
        if let Some(s) = lab.interrupted() {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::Interrupted(s));
        }
        let plan = RunPlan {
            command: command.to_vec(),
            options: RunOptions {
                mem_limit: Some(LimitSpec::None),
                timeout: Some(Duration::from_secs(600)),
                ..Default::default()
            },
            limit_label: "none".into(),
            limit_bytes: None,
            role: Role::Measure,
            sweep: None,
        };
        progress(Progress::RunStarted {
            index: 2 * i as usize,
            total,
            plan: &plan,
        });
        // Alternate which goes first, so neither always runs on a "warmer" machine.
        let order_direct_first = i % 2 == 0;
        let direct = |b: &mut RunnerBench| -> Result<()> {
            let (w, c) = direct_run(&resolved, &tmp)?;
            b.direct_wall_ns.push(w);
            b.direct_cpu_ns.push(c);
            Ok(())
        };
        if order_direct_first {
            direct(&mut b)?;
        }
        let t0 = Instant::now();
        let rec = lab.run_plan(&plan)?;
        let total_ns = t0.elapsed().as_nanos() as f64;
        if rec.outcome != Some(Outcome::Ok) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::failed(
                format!(
                    "the runner's run {} of `{}`",
                    rec.id,
                    swaplab_trace::arg::shell_line(command)
                ),
                format!("ended with {}", rec.outcome_text()),
                "pick a command that succeeds",
            ));
        }
        if !order_direct_first {
            direct(&mut b)?;
        }
        b.runner_cpu_ns.push(
            rec.get(MetricName::UserNs).unwrap_or(f64::NAN)
                + rec.get(MetricName::SysNs).unwrap_or(f64::NAN),
        );
        let wall = rec.get(MetricName::WallNs).unwrap_or(f64::NAN);
        b.runner_wall_ns.push(wall);
        b.runner_total_ns.push(total_ns);
        b.sampler_cpu_share
            .push(rec.get(MetricName::SamplerCpuShare).unwrap_or(f64::NAN));
        if let Some(n) = rec.get(MetricName::Samples) {
            // One sample at the start and one after the exit are extra.
            rates.push((n - 2.0).max(0.0) / (wall / 1e9));
        }
        progress(Progress::RunFinished {
            index: 2 * i as usize + 1,
            total,
            record: &rec,
        });
    }
    let _ = std::fs::remove_file(&tmp);
    let pairs: Vec<f64> = b
        .runner_wall_ns
        .iter()
        .zip(&b.direct_wall_ns)
        .map(|(r, d)| (r / d - 1.0) * 100.0)
        .collect();
    if let Some(s) = swaplab_analysis::stats::summarize(&pairs) {
        b.wall_overhead_pct = s.median;
        b.wall_overhead_iqr_pct = (s.q1, s.q3);
    }
    let cpu_pairs: Vec<f64> = b
        .runner_cpu_ns
        .iter()
        .zip(&b.direct_cpu_ns)
        .map(|(r, d)| (r / d - 1.0) * 100.0)
        .collect();
    b.cpu_overhead_pct = median(&cpu_pairs);
    let fixed: Vec<f64> = b
        .runner_total_ns
        .iter()
        .zip(&b.runner_wall_ns)
        .map(|(t, w)| t - w)
        .collect();
    b.fixed_cost_ns = median(&fixed);
    b.sampler_cpu_pct = median(&b.sampler_cpu_share) * 100.0;
    b.samples_per_s = median(&rates);
    b.meets_wall_target = b.wall_overhead_pct.abs() <= WALL_TARGET_PCT;
    b.meets_sampler_target = b.sampler_cpu_pct < SAMPLER_TARGET_PCT;
    Ok(b)
}
