//! `swaplab demo`: prints what swaplab_study::demo (real programs) and
//! swaplab_sim::jobs::sim_demo (policies on a generated trace) compute.
use crate::out::{curve_chart, num, pct, Rows};
use anyhow::Result;
use clap::Args;
use swaplab_sim::jobs::{sim_demo, DEMO_PATTERNS};
use swaplab_trace::units::format_bytes;

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
    /// Where to write the demo's report (its sweeps, its trace, its simulations).
    #[arg(long, value_name = "OUT.html", default_value = "swaplab-demo.html")]
    report: std::path::PathBuf,
}

pub fn run(a: DemoArgs) -> Result<()> {
    // Report sources of the real part: its sweeps and its trace.
    let real: Vec<String> = if a.sim_only {
        Vec::new()
    } else {
        crate::cmd::run::demo_real_part()
    };
    println!("swaplab demo: page-replacement policies on a generated trace (no root needed)\n");
    let pb = crate::out::progress(0, "simulating");
    let d = sim_demo(a.count, a.seed, a.save.as_deref(), &|n| pb.inc(n))?;
    pb.finish_and_clear();
    if let Some(p) = &a.save {
        println!("trace saved to {}", p.display());
    }
    println!(
        "trace: {} references, interleaving {}\n       {} distinct pages ({}), {} writes\n",
        num(d.references),
        DEMO_PATTERNS.join(" | "),
        num(d.distinct),
        format_bytes(d.distinct * d.page_size),
        num(d.writes)
    );
    // One row per policy, one column per memory size: miss ratio.
    let mut header = vec!["policy".to_string()];
    header.extend(
        d.sizes
            .iter()
            .map(|(l, c)| format!("{l} ({})", format_bytes(c * d.page_size))),
    );
    header.push("swap-outs@25%".into());
    let mut rows = Rows {
        header,
        rows: Vec::new(),
        left: false,
    };
    for mine in d.results.chunks(d.sizes.len()) {
        let mut row = vec![mine[0].policy.clone()];
        row.extend(mine.iter().map(|r| pct(r.miss_ratio)));
        row.push(num(mine[1].counters.swap_outs));
        rows.push(row);
    }
    println!(
        "Miss ratio by memory size (share of the footprint):\n{}\n",
        rows.render()
    );
    let pts: Vec<(u64, String, f64)> = d
        .lru_curve
        .iter()
        .map(|&(c, share, mr)| (c, format!("{:.0}%", share * 100.0), mr))
        .collect();
    println!(
        "LRU miss-ratio curve (exact, one pass):\n{:>9} {:>10}\n{}",
        "mem",
        "pages",
        curve_chart(&pts)
    );
    let argv = crate::cmd::report::argv();
    let mut sections = Vec::new();
    let mut open = swaplab_lab::catalog::Catalog::open_default;
    for s in &real {
        match swaplab_study::report::sections_for(s, &mut open) {
            Ok(v) => sections.extend(v),
            Err(e) => eprintln!("swaplab demo: leaving {s} out of the report: {e}"),
        }
    }
    sections.extend(swaplab_study::sim::section::demo_sections(
        &d,
        &argv,
        a.seed,
        a.save.as_deref(),
    )?);
    let report = swaplab_study::report::report_of(sections, Some("swaplab demo"), &argv);
    crate::cmd::report::write(&report, &a.report)?;
    println!(
        "\nThe demo's report: {} (open it in a browser: every figure with its data, schema and Linux config).",
        a.report.display()
    );
    println!(
        "Next: `swaplab gen`, `swaplab sim TRACE --policy ... --mem ...`, `swaplab mrc TRACE`, \
         `swaplab report`; every subcommand has --help."
    );
    Ok(())
}
