use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::native::write_source;
use swaplab_trace::units::parse_count;

#[derive(Args)]
#[command(
    after_help = "PATTERNS\n  seq[:pages=N]            0,1,2,… (wrapping after N pages)\n  \
stride:k=K[:pages=N]     0,K,2K,…\n  uniform:pages=N          uniform random\n  \
zipf:pages=N[:alpha=A][:scatter=0|1]  Zipf popularity (ranks scattered over pages by default)\n  \
loop:pages=N             0..N-1 repeated (LRU's worst case)\n\
Every pattern takes :count=N :writes=R :base=P. Several patterns are phases, one after another\n\
(or alternating with --interleave).\n\n\
EXAMPLES\n  swaplab gen zipf:pages=1M:alpha=0.9 -n 10M -o zipf.parquet\n  \
swaplab gen seq:pages=1000:count=5k loop:pages=200:base=5000:count=20k -o phases.parquet"
)]
pub struct GenArgs {
    /// One or more patterns (see below).
    #[arg(required = true)]
    patterns: Vec<String>,
    /// Total references (split evenly among patterns without count=).
    #[arg(short = 'n', long, value_parser = parse_count)]
    count: Option<u64>,
    /// Output file (native format, Parquet).
    #[arg(short, long)]
    output: PathBuf,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Alternate reference by reference between the patterns instead of running them in sequence.
    #[arg(long)]
    interleave: bool,
}

pub fn run(a: GenArgs) -> Result<()> {
    let pats = a
        .patterns
        .iter()
        .map(|p| p.parse::<Pattern>())
        .collect::<Result<Vec<_>, _>>()?;
    let mix = if a.interleave {
        Mix::Interleave
    } else {
        Mix::Sequence
    };
    let mut g = Generator::new(pats, a.count, mix, a.seed)?;
    let pb = crate::out::progress(g.total(), "gen");
    let meta = write_source(&mut g, &a.output, |n| pb.inc(n))
        .with_context(|| format!("writing {}", a.output.display()))?;
    pb.finish_and_clear();
    eprintln!(
        "wrote {}: {} references, {} distinct pages, {} writes",
        a.output.display(),
        crate::out::num(meta.count),
        crate::out::num(meta.distinct_pages),
        crate::out::num(meta.writes)
    );
    Ok(())
}
