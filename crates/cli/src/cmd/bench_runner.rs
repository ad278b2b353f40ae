//! `swaplab bench runner` (the runner's own cost), next to the other
//! `swaplab bench` subcommands of cmd/bench.rs.
use anyhow::Result;
use clap::{Args, Subcommand};
use swaplab_lab::bench::{bench_runner, SAMPLER_TARGET_PCT, WALL_TARGET_PCT};
use swaplab_lab::runner::Lab;
use swaplab_lab::stats::summarize;

#[derive(Subcommand)]
pub enum BenchAny {
    #[command(flatten)]
    Other(crate::cmd::bench::BenchCmd),
    /// The runner's own cost: wall time of a non-swapping workload under `swaplab run` vs a
    /// direct run (target within 2 %), and the 20 Hz sampler's CPU (target under 1 %). Root.
    Runner(RunnerArgs),
}

#[derive(Args)]
pub struct RunnerArgs {
    /// Pairs of runs (direct, under the runner), back to back, alternating which goes first.
    #[arg(long, default_value_t = 10)]
    pub repeat: u32,
    #[arg(long)]
    pub json: bool,
    /// The workload (default: swaplab-workload qsort --size 64M, about 2.5 s, never swaps).
    #[arg(last = true)]
    pub command: Vec<String>,
}

pub fn run(cmd: BenchAny) -> Result<()> {
    match cmd {
        BenchAny::Other(c) => crate::cmd::bench::run(c),
        BenchAny::Runner(a) => runner(a),
    }
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
        b.command.join(" "),
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
