//! `swaplab bench hints`: swpTracer's comparison of base, madvise, mlock,
//! readahead and prefetchers as one experiment (see
//! `swaplab_study::bench::hints`).
use crate::out::{self, Rows};
use anyhow::Result;
use clap::Args;
use swaplab_lab::options::parse_duration;
use swaplab_study::bench::hints::{self as bench_hints, HintsOptions};
use swaplab_trace::units::{format_bytes, parse_bytes};

#[derive(Args)]
pub struct HintsArgs {
    /// The built-in workload (traverse sweeps an array --passes times; the madvise and mlock
    /// variants need traverse).
    #[arg(long, default_value = "traverse")]
    pub workload: String,
    /// Object sizes, comma-separated.
    #[arg(long, default_value = "64M,128M,256M,512M")]
    pub sizes: String,
    /// Memory limits as shares of each size's peak (measured by an unlimited base run).
    #[arg(long, default_value = "90%,75%,50%,25%")]
    pub limits: String,
    /// Runs per cell, interleaved (5 lets the Mann–Whitney test reach p < 0.01).
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Passes over the array (swpTracer's Algorithm 4 traverses it three times).
    #[arg(long, default_value_t = 3)]
    pub passes: u64,
    /// Variants: base, madvise, mlock, pc (one per --page-cluster value), thread, leap0
    /// (Leap as published), leap, leap-po, stride, advise, mlock-leap, or all.
    #[arg(long, default_value = "base,madvise,mlock,pc,thread,leap0,leap,advise")]
    pub variants: String,
    /// vm.page-cluster values of the pc variants (0 turns swap readahead off).
    #[arg(long, value_name = "LIST", default_value = "0,6")]
    pub page_cluster: String,
    /// The swap area of every run (Nx: N times the object size).
    #[arg(long, default_value = "file:2x")]
    pub swap: String,
    /// A quick run for demos and tests: 32M, limits 75%,50%, 1 repeat, variants base,
    /// madvise, mlock, pc, leap, mlock-leap.
    #[arg(long, conflicts_with_all = ["sizes", "limits", "repeat", "variants"])]
    pub quick: bool,
    /// Kill a run after this long.
    #[arg(long, value_name = "T", default_value = "10m")]
    pub timeout: String,
    /// Read each group's memory.stat this often (see `run --flush-stats`).
    #[arg(long, value_name = "T")]
    pub flush_stats: Option<String>,
    #[command(flatten)]
    pub save: crate::SaveFlags,
    #[command(flatten)]
    pub out: crate::OutFlags,
}

impl HintsArgs {
    /// The benchmark's options.
    pub fn options(&self) -> Result<HintsOptions> {
        let (sizes, limits, repeat, variants) = if self.quick {
            ("32M", "75%,50%", 1, "base,madvise,mlock,pc,leap,mlock-leap")
        } else {
            (
                self.sizes.as_str(),
                self.limits.as_str(),
                self.repeat,
                self.variants.as_str(),
            )
        };
        let sizes = sizes
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| parse_bytes(s).map_err(|e| anyhow::anyhow!("--sizes: {e} (e.g. 64M,128M)")))
            .collect::<Result<Vec<u64>>>()?;
        let page_clusters = self
            .page_cluster
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u32>().map_err(|_| {
                    anyhow::anyhow!("--page-cluster: {s:?} is not a whole number (e.g. 0,6)")
                })
            })
            .collect::<Result<Vec<u32>>>()?;
        let o = HintsOptions {
            workload: self.workload.clone(),
            sizes,
            limits: bench_hints::parse_limit_shares(limits)?,
            repeat,
            passes: self.passes,
            swap: self.swap.clone(),
            variants: bench_hints::parse_variants(variants)?,
            page_clusters,
            timeout: Some(parse_duration(&self.timeout)?),
            flush_stats: self
                .flush_stats
                .as_deref()
                .map(parse_duration)
                .transpose()?,
        };
        bench_hints::check(&o)?;
        Ok(o)
    }
}

pub fn run(a: HintsArgs) -> Result<()> {
    let opts = a.options()?;
    let cells = opts.sizes.len()
        * opts.limits.len()
        * opts
            .variants
            .iter()
            .map(|v| {
                if v == "pc" {
                    opts.page_clusters.len()
                } else {
                    1
                }
            })
            .sum::<usize>();
    eprintln!(
        "bench hints: {} at {} size(s) × {} limit(s), {} cells × {} repeat(s), swap {}",
        opts.workload,
        opts.sizes.len(),
        opts.limits.len(),
        cells,
        opts.repeat,
        opts.swap
    );
    let lab = swaplab_lab::runner::Lab::open()?;
    let bar = crate::cmd::run::Bar::new();
    let r = bench_hints::run(&lab, &opts, crate::cmd::report::argv(), &mut |p| {
        bar.event(p)
    });
    bar.finish();
    let r = r?;
    if let Some(id) = r.header.sweep_id {
        eprintln!("recorded as s{id} (`swaplab show s{id}`, `swaplab report s{id}`)");
    }
    let f2 = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}"));
    let pct = |v: Option<f64>| v.map_or("-".into(), |x| format!("{:.0}", x * 100.0));
    let pages = |v: Option<f64>| v.map_or("-".into(), |x| format!("{:.0}k", x / 1e3));
    // The simulated swap traffic the time model charges: faults F, reads
    // ahead R and swap-outs W (docs/prefetch.md, the time model).
    let sim_moved = |c: &bench_hints::HintsCell| {
        Some(c.sim_majflt? + c.sim_prefetch_reads.unwrap_or(0.0) + c.sim_swap_outs.unwrap_or(0.0))
    };
    let mut t = Rows::new(&[
        "size",
        "limit",
        "variant",
        "runs",
        "wall s",
        "speed-up",
        "p",
        "major faults",
        "faults saved %",
        "sim saved %",
        "swap in+out",
        "sim in+out",
        "sim speed-up",
        "note",
    ]);
    for s in &r.sizes {
        for c in &s.cells {
            t.push(vec![
                format_bytes(s.size_bytes),
                format!("{:.0}% ({})", c.limit_pct, format_bytes(c.limit_bytes)),
                c.variant.clone(),
                format!("{}/{}", c.ok, c.runs),
                f2(c.wall_s),
                f2(c.speedup),
                c.p_value.map_or("-".into(), |p| format!("{p:.3}")),
                c.majflt.map_or("-".into(), |m| format!("{m:.0}")),
                pct(c.fault_reduction),
                pct(c.sim_fault_reduction),
                pages(c.swapin_pages.zip(c.swapout_pages).map(|(i, o)| i + o)),
                pages(sim_moved(c)),
                f2(c.sim_speedup),
                c.note.clone(),
            ]);
        }
    }
    let fmt = a.out.format();
    out::print(fmt, &t, &r)?;
    if fmt == out::Format::Table {
        println!(
            "speed-up = base's median wall / the variant's at the same limit; p: two-sided Mann–Whitney against base; the kernel's readahead here: {} (page-cluster {})",
            r.readahead,
            r.page_cluster.map_or("?".into(), |p| p.to_string())
        );
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    a.save.write(
        &r,
        |p, r| Ok(bench_hints::save(p, r)?),
        swaplab_study::bench::hints::section::bench_hints_section,
    )
}
