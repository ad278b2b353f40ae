//! `swaplab bench runner` (the runner's own cost), next to the other
//! `swaplab bench` subcommands of cmd/bench.rs.
use anyhow::Result;
use clap::{Args, Subcommand};
use swaplab_analysis::stats::summarize;
use swaplab_lab::runner::Lab;
use swaplab_study::bench::runner::{bench_runner, SAMPLER_TARGET_PCT, WALL_TARGET_PCT};

#[derive(Subcommand)]
pub enum BenchAny {
    #[command(flatten)]
    Other(crate::cmd::bench::BenchCmd),
    /// The runner's own cost: wall time of a non-swapping workload under `swaplab run` vs a
    /// direct run (target within 2 %), and the 20 Hz sampler's CPU (target under 1 %). Root.
    Runner(RunnerArgs),
    /// What tracing costs: the same command under the same limit untraced and traced with
    /// each fault source, interleaved (targets: traced ≤ 1.15× untraced; ≤ 16 MB per 1 M
    /// faults). Root.
    Trace(TraceBenchArgs),
    /// swpTracer's comparison as one experiment: a workload (traverse, swept 3 times) at
    /// several sizes and limits as base, madvise, mlock, the kernel's readahead at each
    /// page-cluster, `run --prefetch` prefetchers and `advise`'s hints; interleaved repeats,
    /// speed-up over base with Mann–Whitney p, and the simulator's prediction. Root.
    Hints(crate::cmd::bench_hints::HintsArgs),
}

#[derive(Args)]
pub struct TraceBenchArgs {
    /// Memory limit (a share of the command's peak or a size).
    #[arg(long, default_value = "50%")]
    pub mem_limit: String,
    /// Swap for the runs.
    #[arg(long, default_value = "file:1G")]
    pub swap: String,
    /// Rounds (each runs every mode once, in rotating order).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Fault sources to compare with the untraced run.
    #[arg(long, default_value = "perf,tracefs")]
    pub sources: String,
    /// Kill a run after this long.
    #[arg(long, default_value = "10m")]
    pub timeout: String,
    #[arg(long)]
    pub json: bool,
    /// The workload (default: swaplab-workload genome --size 4M; about 100 s per run at 50 % with a swapfile).
    #[arg(last = true, value_parser = crate::command_arg())]
    pub command: Vec<String>,
}

#[derive(Args)]
pub struct RunnerArgs {
    /// Pairs of runs (direct, under the runner), back to back, alternating which goes first.
    #[arg(long, default_value_t = 10)]
    pub repeat: u32,
    #[arg(long)]
    pub json: bool,
    /// The workload (default: swaplab-workload qsort --size 64M, about 2.5 s, never swaps).
    #[arg(last = true, value_parser = crate::command_arg())]
    pub command: Vec<String>,
}

impl BenchAny {
    /// Whether the bench changes the system (cgroups, swap): it then
    /// restores what a killed swaplab left before it starts.
    pub fn changes_system(&self) -> bool {
        !matches!(self, BenchAny::Other(_))
    }
}

pub fn run(cmd: BenchAny) -> Result<()> {
    match cmd {
        BenchAny::Other(c) => crate::cmd::bench::run(c),
        BenchAny::Runner(a) => runner(a),
        BenchAny::Trace(a) => trace(a),
        BenchAny::Hints(a) => crate::cmd::bench_hints::run(a),
    }
}

fn trace(a: TraceBenchArgs) -> Result<()> {
    use swaplab_lab::options::{parse_duration, RunOptions};
    use swaplab_study::bench::trace::{bench_trace, BYTES_PER_MFAULT_TARGET, WALL_RATIO_TARGET};
    let command = if a.command.is_empty() {
        swaplab_lab::workload::command("genome", "4M", None, &[])
    } else {
        a.command.clone()
    };
    let options = RunOptions {
        mem_limit: Some(a.mem_limit.parse()?),
        swap: vec![a.swap.parse()?],
        timeout: Some(parse_duration(&a.timeout)?),
        ..Default::default()
    };
    let sources: Vec<&str> = a
        .sources
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    for s in &sources {
        if *s != "perf" && *s != "tracefs" {
            anyhow::bail!("--sources: unknown source {s:?} (expected perf and/or tracefs)");
        }
    }
    let lab = Lab::open()?;
    let bar = crate::cmd::run::Bar::new();
    let r = bench_trace(
        &lab,
        &command,
        &options,
        &sources,
        a.repeat.max(1),
        &mut |p| bar.event(p),
    );
    bar.finish();
    let b = r?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&b)?);
        return Ok(());
    }
    println!(
        "tracing cost on `{}` at {} ({}), {} rounds, medians:",
        swaplab_trace::arg::shell_line(&b.command),
        b.limit,
        b.limit_bytes
            .map(swaplab_trace::units::format_bytes)
            .unwrap_or_else(|| "no limit".into()),
        b.repeat
    );
    println!(
        "  {:<9} {:>9} {:>8} {:>10} {:>10} {:>6} {:>10} {:>12}",
        "mode", "wall s", "ratio", "majflt", "events", "lost", "trace", "B/1M faults"
    );
    for m in &b.modes {
        let med = |v: &[f64]| {
            if v.is_empty() {
                f64::NAN
            } else {
                swaplab_analysis::stats::median(v)
            }
        };
        let traced = m.mode != "untraced";
        println!(
            "  {:<9} {:>9.3} {:>7.3}× {:>10.0} {:>10} {:>6} {:>10} {:>12}{}",
            m.mode,
            med(&m.wall_ns) / 1e9,
            m.wall_ratio,
            med(&m.majflt),
            if traced {
                format!("{:.0}", med(&m.events))
            } else {
                "-".into()
            },
            if traced {
                format!("{:.0}", med(&m.lost))
            } else {
                "-".into()
            },
            if traced {
                swaplab_trace::units::format_bytes(med(&m.trace_bytes) as u64)
            } else {
                "-".into()
            },
            if traced {
                format!("{:.1} MB", m.bytes_per_mfault / 1e6)
            } else {
                "-".into()
            },
            if traced {
                format!(
                    "   ratio ≤ {WALL_RATIO_TARGET}: {}, size ≤ {} MB/1M: {}",
                    if m.wall_ratio <= WALL_RATIO_TARGET {
                        "met"
                    } else {
                        "NOT met"
                    },
                    BYTES_PER_MFAULT_TARGET / 1e6,
                    if m.bytes_per_mfault <= BYTES_PER_MFAULT_TARGET {
                        "met"
                    } else {
                        "NOT met"
                    }
                )
            } else {
                String::new()
            }
        );
    }
    println!(
        "  runs: {}",
        b.modes
            .iter()
            .map(|m| format!("{} {:?}", m.mode, m.run_ids))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(())
}

fn runner(a: RunnerArgs) -> Result<()> {
    let command = if a.command.is_empty() {
        swaplab_lab::workload::command("qsort", "64M", None, &[])
    } else {
        a.command.clone()
    };
    let lab = Lab::open()?;
    let bar = crate::cmd::run::Bar::new();
    let r = bench_runner(&lab, &command, a.repeat.max(1), &mut |p| bar.event(p));
    bar.finish();
    let b = r?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&b)?);
        return Ok(());
    }
    let s = |v: &[f64]| {
        summarize(v)
            .map(|s| {
                format!(
                    "{:.3} s [{:.3}-{:.3}]",
                    s.median / 1e9,
                    s.min / 1e9,
                    s.max / 1e9
                )
            })
            .unwrap_or_default()
    };
    println!(
        "runner cost on `{}` ({} interleaved pairs, medians [min-max]):",
        swaplab_trace::arg::shell_line(&b.command),
        b.repeat
    );
    println!("  direct run wall          {}", s(&b.direct_wall_ns));
    println!("  under swaplab run wall   {}", s(&b.runner_wall_ns));
    println!(
        "  wall overhead            {:+.2} % (median of the pairs; IQR {:+.2} .. {:+.2} %)   target within ±{WALL_TARGET_PCT} %: {}",
        b.wall_overhead_pct,
        b.wall_overhead_iqr_pct.0,
        b.wall_overhead_iqr_pct.1,
        if b.meets_wall_target { "met" } else { "NOT met" }
    );
    println!(
        "  workload CPU (user+sys)  direct {} / under swaplab {}: {:+.2} % (median of the pairs)",
        s(&b.direct_cpu_ns),
        s(&b.runner_cpu_ns),
        b.cpu_overhead_pct
    );
    println!(
        "  sampler CPU              {:.3} % of one CPU at {:.1} samples/s   target < {SAMPLER_TARGET_PCT} %: {}",
        b.sampler_cpu_pct,
        b.samples_per_s,
        if b.meets_sampler_target { "met" } else { "NOT met" }
    );
    println!(
        "  fixed cost per run       {:.0} ms (session, cgroup, environment snapshot, catalog; outside the measured wall)",
        b.fixed_cost_ns / 1e6
    );
    Ok(())
}
