use crate::out::{curve_chart, num, pct, Rows};
use anyhow::Result;
use clap::Args;
use swaplab_sim::mrc;
use swaplab_sim::PolicySpec;
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::units::format_bytes;
use swaplab_trace::DenseTrace;

#[derive(Args)]
pub struct DemoArgs {
    /// References in the generated trace.
    #[arg(short = 'n', long, default_value = "2M", value_parser = swaplab_trace::units::parse_count)]
    count: u64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Also write the generated trace here (native format).
    #[arg(long)]
    save: Option<std::path::PathBuf>,
    /// Only the simulation demo (skip the real-workload sweep, which needs root and ~4 minutes).
    #[arg(long)]
    pub sim_only: bool,
}

/// The demo workload: a Zipf-popular hot set with 30 % writes, interleaved
/// with a loop over a region larger than the small memories (the pattern
/// that defeats LRU) and a one-time sequential scan.
pub const DEMO_PATTERNS: [&str; 3] = [
    "zipf:pages=40000:alpha=0.9:writes=0.3",
    "loop:pages=12000:base=1000000",
    "seq:pages=60000:base=2000000",
];

pub fn run(a: DemoArgs) -> Result<()> {
    if !a.sim_only {
        crate::cmd::run::demo_real_part();
    }
    println!("swaplab demo: page-replacement policies on a generated trace (no root needed)\n");
    let pats = DEMO_PATTERNS
        .iter()
        .map(|p| p.parse::<Pattern>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut g = Generator::new(pats, Some(a.count), Mix::Interleave, a.seed)?;
    if let Some(p) = &a.save {
        swaplab_trace::native::write_source(&mut g, p, |_| {})?;
        g = Generator::new(
            DEMO_PATTERNS
                .iter()
                .map(|p| p.parse::<Pattern>())
                .collect::<Result<Vec<_>, _>>()?,
            Some(a.count),
            Mix::Interleave,
            a.seed,
        )?;
        println!("trace saved to {}", p.display());
    }
    let t = DenseTrace::load(&mut g)?;
    let d = t.distinct() as u64;
    println!(
        "trace: {} references, interleaving {}\n       {} distinct pages ({}), {} writes\n",
        num(t.len() as u64),
        DEMO_PATTERNS.join(" | "),
        num(d),
        format_bytes(d * t.page_size),
        num(t.write_count())
    );
    let specs = PolicySpec::parse_list("all")?;
    let sizes: Vec<(String, u64)> = [10u64, 25, 50, 75]
        .iter()
        .map(|p| (format!("{p}%"), d * p / 100))
        .collect();
    let res = crate::cmd::sim::run_pairs(&t, &specs, &sizes, a.seed)?;
    // One row per policy, one column per memory size: miss ratio.
    let mut header = vec!["policy".to_string()];
    header.extend(
        sizes
            .iter()
            .map(|(l, c)| format!("{l} ({})", format_bytes(c * t.page_size))),
    );
    header.push("swap-outs@25%".into());
    let mut rows = Rows {
        header,
        rows: Vec::new(),
        left: false,
    };
    for s in &specs {
        let name = s.to_string();
        let mine: Vec<_> = res.iter().filter(|r| r.policy == name).collect();
        let mut row = vec![name];
        row.extend(mine.iter().map(|r| pct(r.miss_ratio)));
        row.push(num(mine[1].counters.swap_outs));
        rows.push(row);
    }
    println!(
        "Miss ratio by memory size (share of the footprint):\n{}\n",
        rows.render()
    );
    let h = mrc::stack_histogram(&t)?;
    let pts: Vec<(u64, String, f64)> = mrc::sweep_sizes(d, 12)
        .into_iter()
        .map(|c| {
            (
                c,
                format!("{:.0}%", c as f64 * 100.0 / d as f64),
                h.miss_ratio_at(c),
            )
        })
        .collect();
    println!(
        "LRU miss-ratio curve (exact, one pass):\n{:>9} {:>10}\n{}",
        "mem",
        "pages",
        curve_chart(&pts)
    );
    println!(
        "Next: `swaplab gen`, `swaplab sim TRACE --policy ... --mem ...`, `swaplab mrc TRACE`; \
         every subcommand has --help."
    );
    Ok(())
}
