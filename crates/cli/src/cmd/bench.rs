use crate::out::{self, num, Rows};
use anyhow::Result;
use clap::Subcommand;
use std::time::Instant;
use swaplab_lab::record::MetricName;
use swaplab_sim::PolicySpec;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed and memory on the standard trace (50 M refs, Zipf 1.0 over 10 M
    /// scattered pages, seed 42) at a 1 M-page memory. Prints refs/s per policy, the
    /// exact and SHARDS curves, native-file reading, bytes per page and peak RSS.
    Sim {
        /// References in the trace (default 50M; with --scale 2G).
        #[arg(long, value_parser = swaplab_trace::units::parse_count)]
        refs: Option<u64>,
        /// Pages in the Zipf universe (default 10M; with --scale 50M).
        #[arg(long, value_parser = swaplab_trace::units::parse_count)]
        pages: Option<u64>,
        /// The streaming benchmark instead: generate a trace of --refs
        /// references (default 2G) touching --pages pages (default 50M)
        /// into --dir, stream it once through every --policy (default
        /// lru,clock) at --mem-pct of the footprint, print refs/s per
        /// policy on one core and the peak RSS against the per-page state
        /// plus 1 GiB, and check the misses against the in-memory engine
        /// on a prefix (--prefix). The trace is deleted after unless --keep.
        #[arg(long, conflicts_with_all = ["mem", "peer"])]
        scale: bool,
        /// --scale: memory as a share of the footprint, %.
        #[arg(long, default_value_t = 10, requires = "scale")]
        mem_pct: u64,
        /// --scale: references of the prefix checked against the in-memory engine.
        #[arg(long, default_value = "200M", value_parser = swaplab_trace::units::parse_count, requires = "scale")]
        prefix: u64,
        /// --scale: directory of the generated trace (default: the system's temporary directory).
        #[arg(long, value_name = "DIR", requires = "scale")]
        dir: Option<std::path::PathBuf>,
        /// --scale: keep the generated trace.
        #[arg(long, requires = "scale")]
        keep: bool,
        /// Memory size in pages.
        #[arg(long, default_value = "1M", value_parser = swaplab_trace::units::parse_count)]
        mem: u64,
        /// Policies to time.
        #[arg(long, default_value = "all")]
        policy: String,
        /// Install the peer (PyPI libcachesim) in a private venv
        /// (~/.cache/swaplab/peer-venv) and run it side by side. Without
        /// it the peer runs only if that venv or python3 has the package.
        #[arg(long)]
        peer: bool,
        #[command(flatten)]
        save: crate::SaveFlags,
        #[command(flatten)]
        out: crate::OutFlags,
    },
    /// What the kernel pays to manage VMAs: mmap latency, vm_area_struct slab, page tables
    /// and memory as the VMA count grows, under five allocation patterns (control, cont,
    /// strided, random, frag), each in its own process; pages are never touched. Raises
    /// vm.max_map_count for the run when needed (root; journaled and restored).
    Vma {
        /// Operations per pattern (frag: blocks mapped; it times the N/2 growths).
        /// Default 2^20.
        #[arg(long, default_value = "1048576", value_parser = swaplab_trace::units::parse_count)]
        ops: u64,
        /// A quick run for demos and tests: 16K operations, 2 repeats.
        #[arg(long, conflicts_with_all = ["ops", "repeat"])]
        quick: bool,
        /// Runs per pattern (interleaved); points are medians across them.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Patterns to run: control, cont, strided, random, frag, or all.
        #[arg(long, default_value = "all")]
        pattern: String,
        /// Sample points per run (VMA count, slab, VmPTE, memory).
        #[arg(long, default_value_t = 256)]
        points: u64,
        /// Seed of the random pattern.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Memory sizes to extrapolate the costs to, e.g. 1T,64T.
        #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = swaplab_trace::units::parse_bytes)]
        extrapolate: Vec<u64>,
        #[command(flatten)]
        save: crate::SaveFlags,
        #[command(flatten)]
        out: crate::OutFlags,
    },
    /// How fast the built-in workloads' page references are captured (`trace --refs`):
    /// each workload recording to /dev/null (`record`), into a pipe that is read and
    /// dropped (`pipe`), and the whole capture into a trace file (`capture`), interleaved
    /// in rounds. Prints M refs/s, CPU ns per reference and the ratio to `record`.
    Capture {
        /// Built-in workloads (traverse, qsort, chase, kv, genome).
        #[arg(long, default_value = "traverse,qsort,genome", value_delimiter = ',')]
        workloads: Vec<String>,
        /// Their --size.
        #[arg(long, default_value = "64M")]
        size: String,
        /// More workload arguments, e.g. --args="--passes 3".
        #[arg(long, allow_hyphen_values = true, value_name = "ARGS")]
        args: Option<String>,
        /// Rounds (medians across them).
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Where the trace files go while they are written (removed after).
        #[arg(long, default_value = "/var/tmp")]
        dir: std::path::PathBuf,
        #[command(flatten)]
        out: crate::OutFlags,
    },
    /// The latency of every page touch while a process swaps: a region larger than a memory
    /// cgroup limit, one byte written per 4 KiB page (seq: each page once in address order;
    /// random: as many touches at random pages), each touch timed. Every configuration is an
    /// ordinary recorded run (catalog, timeline, swap set up and removed).
    Touch {
        /// The memory cgroup limit that stands in for the machine's RAM.
        #[arg(long, default_value = "256M", value_parser = swaplab_trace::units::parse_bytes)]
        mem_limit: u64,
        /// The region: a size (1.2G) or a multiple of the limit. Default 1.125x (2x with
        /// --quick, so that random touches, which reach ~63 % of the pages, swap too).
        #[arg(long)]
        size: Option<String>,
        /// Touches per run (default: one per page; random may take more, seq at most that).
        #[arg(long, value_parser = swaplab_trace::units::parse_count)]
        touches: Option<u64>,
        /// Patterns: seq, random or both.
        #[arg(long, default_value = "seq,random")]
        pattern: String,
        /// Swap configurations, each its own set of runs: file:2x,file:8x compares two
        /// swapfile sizes (Nx: N times the region); file:SIZE, zram:SIZE, zswap as in `run`.
        #[arg(long, default_value = "file:2x")]
        swap: String,
        /// Runs per configuration (interleaved); summary numbers are medians across them.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// A quick run for demos and tests: a 64M limit, a 2x region, 1 repeat.
        #[arg(long, conflicts_with_all = ["mem_limit", "repeat"])]
        quick: bool,
        /// RSS samples per run.
        #[arg(long, default_value_t = 1024)]
        points: u32,
        /// Seed of the random pattern (repeat i uses seed + i).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Kill a run after this long (it is then left out of the summary).
        #[arg(long, value_name = "T", default_value = "10m")]
        timeout: String,
        /// Read the group's memory.stat this often during each run (see `run --flush-stats`).
        #[arg(long, value_name = "T")]
        flush_stats: Option<String>,
        #[command(flatten)]
        save: crate::SaveFlags,
        #[command(flatten)]
        out: crate::OutFlags,
    },
    /// Who pays for reclaim while a random-touch workload swaps: kswapd (its share of the
    /// machine's CPU) or the faulting task (direct reclaim), with transparent huge pages on
    /// and off. Pressure from a memory cgroup limit (--mem-limit) or from the whole machine
    /// (--machine-mem: an mlocked balloon with a watchdog leaves that much available).
    Reclaim {
        /// Memory cgroup limit (reclaim is then mostly direct). Default 256M unless
        /// --machine-mem is given.
        #[arg(long, value_parser = swaplab_trace::units::parse_bytes, conflicts_with = "machine_mem")]
        mem_limit: Option<u64>,
        /// Leave only this much of the machine's memory available (global pressure: kswapd
        /// works). Root; the balloon is journaled and dies with swaplab.
        #[arg(long, value_parser = swaplab_trace::units::parse_bytes)]
        machine_mem: Option<u64>,
        /// The workload's region: a size or a multiple of the memory given (default 1.5x).
        #[arg(long, default_value = "1.5x")]
        size: String,
        /// Random touches per run, as a count or a multiple of the region's pages (default 2x).
        #[arg(long, default_value = "2x")]
        touches: String,
        /// THP modes to compare, e.g. always,never (journaled and restored); default: as the
        /// machine has it.
        #[arg(long, value_name = "MODE", value_delimiter = ',')]
        thp: Vec<swaplab_lab::options::ThpMode>,
        /// The swap area of every run (Nx: N times the region).
        #[arg(long, default_value = "file:2x")]
        swap: String,
        /// Runs per THP mode (interleaved); summary numbers are medians.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// A quick run for demos and tests: a 64M limit (or the given --machine-mem), 1 repeat.
        #[arg(long, conflicts_with_all = ["mem_limit", "repeat"])]
        quick: bool,
        /// Seed of the random touches (repeat i uses seed + i).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Kill a run after this long (it is then left out of the summary).
        #[arg(long, value_name = "T", default_value = "10m")]
        timeout: String,
        #[command(flatten)]
        save: crate::SaveFlags,
        #[command(flatten)]
        out: crate::OutFlags,
    },
}

pub fn run(cmd: BenchCmd) -> Result<()> {
    match cmd {
        BenchCmd::Sim {
            refs,
            pages,
            scale,
            mem_pct,
            prefix,
            dir,
            keep,
            policy,
            out,
            ..
        } if scale => run_scale(
            swaplab_study::bench::sim::scale::ScaleOptions {
                refs: refs.unwrap_or(2_000_000_000),
                pages: pages.unwrap_or(50_000_000),
                mem_pct,
                specs: PolicySpec::parse_list(if policy == "all" {
                    "lru,clock"
                } else {
                    &policy
                })?,
                prefix,
                dir: dir.unwrap_or_else(std::env::temp_dir),
                keep,
            },
            out,
        ),
        BenchCmd::Sim {
            refs,
            pages,
            mem,
            policy,
            peer,
            save,
            out,
            ..
        } => run_sim(
            refs.unwrap_or(50_000_000),
            pages.unwrap_or(10_000_000),
            mem,
            policy,
            peer,
            save,
            out,
        ),
        BenchCmd::Vma {
            ops,
            quick,
            repeat,
            pattern,
            points,
            seed,
            extrapolate,
            save,
            out,
        } => {
            let (ops, repeat) = if quick { (16 << 10, 2) } else { (ops, repeat) };
            let opts = swaplab_study::bench::vma::VmaOptions {
                ops,
                repeat,
                patterns: swaplab_study::bench::vma::parse_patterns(&pattern)?,
                points,
                seed,
                extrapolate,
                ..Default::default()
            };
            run_vma(&opts, save, out)
        }
        BenchCmd::Capture {
            workloads,
            size,
            args,
            repeat,
            dir,
            out,
        } => {
            let args = match &args {
                Some(s) => shlex::split(s)
                    .ok_or_else(|| anyhow::anyhow!("--args {s:?}: unbalanced quotes"))?,
                None => Vec::new(),
            };
            let dir = dir.join(format!("swaplab-bench-capture-{}", std::process::id()));
            let rows = swaplab_study::bench::capture::bench_capture(
                &workloads,
                &size,
                &args,
                repeat,
                &dir,
                &mut |w, m, r| eprintln!("round {}: {w} {m}", r + 1),
            );
            let _ = std::fs::remove_dir_all(&dir);
            let rows = rows?;
            let mut t = Rows::new(&[
                "workload",
                "mode",
                "refs",
                "wall s",
                "M refs/s",
                "CPU ns/ref",
                "cores",
                "vs record",
                "bytes/ref",
            ]);
            for r in &rows {
                t.push(vec![
                    r.workload.clone(),
                    r.mode.clone(),
                    num(r.refs),
                    format!("{:.2}", r.wall_s),
                    format!("{:.1}", r.mrefs_s),
                    format!("{:.1}", r.cpu_ns_per_ref),
                    format!("{:.2}", r.cores),
                    format!("{:.2}", r.vs_record),
                    r.bytes_per_ref.map_or("-".into(), |b| format!("{b:.3}")),
                ]);
            }
            out::print(out.format(), &t, &rows)
        }
        BenchCmd::Touch {
            mem_limit,
            size,
            touches,
            pattern,
            swap,
            repeat,
            quick,
            points,
            seed,
            timeout,
            flush_stats,
            save,
            out,
        } => {
            use swaplab_lab::options::parse_duration;
            use swaplab_study::bench::touch as bench_touch;
            let (mem_limit, repeat) = if quick {
                (64 << 20, 1)
            } else {
                (mem_limit, repeat)
            };
            let size = size.unwrap_or_else(|| if quick { "2x" } else { "1.125x" }.into());
            let size = bench_touch::parse_region(&size, mem_limit)?;
            let opts = bench_touch::TouchOptions {
                mem_limit,
                size,
                touches,
                patterns: bench_touch::parse_patterns(&pattern)?,
                swaps: bench_touch::parse_swaps(&swap, size)?,
                repeat,
                points,
                seed,
                timeout: Some(parse_duration(&timeout)?),
                flush_stats: flush_stats.as_deref().map(parse_duration).transpose()?,
            };
            run_touch(&opts, save, out)
        }
        BenchCmd::Reclaim {
            mem_limit,
            machine_mem,
            size,
            touches,
            thp,
            swap,
            repeat,
            quick,
            seed,
            timeout,
            save,
            out,
        } => {
            use swaplab_lab::options::parse_duration;
            use swaplab_study::bench::reclaim::{self as bench_reclaim, Pressure};
            use swaplab_study::bench::touch as bench_touch;
            let repeat = if quick { 1 } else { repeat };
            let pressure = match (machine_mem, mem_limit) {
                (Some(m), _) => Pressure::MachineMem(m),
                (None, Some(l)) => Pressure::MemLimit(l),
                (None, None) => Pressure::MemLimit(if quick { 64 << 20 } else { 256 << 20 }),
            };
            let room = match pressure {
                Pressure::MemLimit(b) | Pressure::MachineMem(b) => b,
            };
            let size = bench_touch::parse_region(&size, room)?;
            let touches = match bench_touch::parse_multiple(&touches, "--touches") {
                Some(f) => ((size / 4096) as f64 * f?) as u64,
                None => swaplab_trace::units::parse_count(&touches).map_err(|e| {
                    anyhow::anyhow!("--touches: {e} (a count such as 1M, or a multiple of the pages such as 2x)")
                })?,
            };
            let mut swaps = bench_touch::parse_swaps(&swap, size)?;
            if swaps.len() != 1 {
                anyhow::bail!("--swap: bench reclaim takes one swap area (compare swap sizes with bench touch)");
            }
            let opts = bench_reclaim::ReclaimOptions {
                pressure,
                size,
                touches,
                thp,
                swap: swaps.remove(0),
                repeat,
                seed,
                timeout: Some(parse_duration(&timeout)?),
            };
            run_reclaim(&opts, save, out)
        }
    }
}

fn run_reclaim(
    opts: &swaplab_study::bench::reclaim::ReclaimOptions,
    save: crate::SaveFlags,
    of: crate::OutFlags,
) -> Result<()> {
    use swaplab_study::bench::reclaim::{self as bench_reclaim, Pressure};
    use swaplab_trace::units::format_bytes;
    bench_reclaim::check(opts)?;
    let pressure = match opts.pressure {
        Pressure::MemLimit(b) => format!("a {} memory cgroup limit", format_bytes(b)),
        Pressure::MachineMem(b) => {
            format!("{} of the machine's memory left available", format_bytes(b))
        }
    };
    eprintln!(
        "bench reclaim: random touches of a {} region ({} touches) under {pressure}, THP {}, {} repeat(s)",
        format_bytes(opts.size),
        num(opts.touches),
        if opts.thp.is_empty() { "as set".to_string() } else { bench_reclaim::thp_labels(&opts.thp).join(" vs ") },
        opts.repeat
    );
    let lab = swaplab_lab::runner::Lab::open()?;
    let r = bench_reclaim::run(&lab, opts, crate::cmd::report::argv(), &mut run_progress())?;
    end_progress();
    if let Some(id) = r.header.sweep_id {
        eprintln!("recorded as s{id} (`swaplab show s{id}`, `swaplab report s{id}`)");
    }
    let pct = |x: Option<f64>| x.map_or("-".into(), |v| format!("{:.2}", v * 100.0));
    let n = |x: Option<f64>| x.map_or("-".into(), |v| num(v as u64));
    let mut t = Rows::new(&[
        "THP",
        "runs",
        "wall s",
        "kswapd % of machine",
        "workload sys % of machine",
        "reclaimed: direct",
        "cgroup limit",
        "kswapd",
        "dominant",
        "allocstall",
        "THP faults",
        "THP splits",
        "p99.99 µs",
        "max ms",
    ]);
    for m in &r.modes {
        let s = &m.summary;
        let thp = |k: MetricName| {
            s.thp_counters
                .iter()
                .find(|c| c.0 == k.as_str())
                .map(|c| c.1)
        };
        t.push(vec![
            m.thp.clone(),
            s.repeats.to_string(),
            s.wall_s.map_or("-".into(), |w| format!("{w:.2}")),
            pct(s.kswapd_machine_share),
            pct(s.sys_machine_share),
            n(s.pgsteal_direct),
            n(s.limit_reclaim),
            n(s.pgsteal_kswapd),
            s.dominant.clone(),
            n(s.allocstall),
            n(thp(MetricName::ThpFaultAlloc)),
            n(thp(MetricName::ThpSplitPage)),
            format!("{:.1}", s.p9999_ns / 1e3),
            format!("{:.1}", s.max_ns / 1e6),
        ]);
    }
    let fmt = of.format();
    out::print(fmt, &t, &r)?;
    if fmt == out::Format::Table {
        if let Some(b) = &r.balloon {
            println!(
                "balloon: {} held (inflated in {:.1} s; {} available after){}",
                format_bytes(b.bytes),
                b.inflate_s,
                format_bytes(b.available_after),
                b.released
                    .as_ref()
                    .map_or(String::new(), |w| format!("; released early: {w}"))
            );
        }
        println!(
            "runs: {}",
            r.modes
                .iter()
                .flat_map(|m| m.runs.iter().map(|x| x.touch.run_id.to_string()))
                .collect::<Vec<_>>()
                .join(" ")
        );
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    save.write(
        &r,
        |p, r| Ok(bench_reclaim::save(p, r)?),
        swaplab_study::bench::reclaim::section::bench_reclaim_section,
    )
}

/// The `[i/n] what (Ns)` line of the benchmarks made of runs, on a
/// terminal only.
pub(crate) fn run_progress() -> impl FnMut(&str, usize, usize) {
    let quiet = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let t0 = Instant::now();
    move |what, done, total| {
        if !quiet && done < total {
            eprint!(
                "\r  [{}/{total}] {what} ({:.0}s)          ",
                done + 1,
                t0.elapsed().as_secs_f64()
            );
        }
    }
}

/// Ends [`run_progress`]'s line.
pub(crate) fn end_progress() {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
}

fn run_touch(
    opts: &swaplab_study::bench::touch::TouchOptions,
    save: crate::SaveFlags,
    of: crate::OutFlags,
) -> Result<()> {
    use swaplab_study::bench::touch as bench_touch;
    use swaplab_trace::units::format_bytes;
    let touches = bench_touch::check(opts)?;
    eprintln!(
        "bench touch: a {} region under a {} limit, {} touches per run, {} pattern(s) × {} swap configuration(s) × {} repeat(s)",
        format_bytes(opts.size),
        format_bytes(opts.mem_limit),
        num(touches),
        opts.patterns.len(),
        opts.swaps.len(),
        opts.repeat
    );
    let lab = swaplab_lab::runner::Lab::open()?;
    let r = bench_touch::run(&lab, opts, crate::cmd::report::argv(), &mut run_progress())?;
    end_progress();
    if let Some(id) = r.header.sweep_id {
        eprintln!("recorded as s{id} (`swaplab show s{id}`, `swaplab report s{id}`)");
    }
    let ms = |ns: f64| format!("{:.1}", ns / 1e6);
    let us = |ns: f64| format!("{:.2}", ns / 1e3);
    let pct = |x: f64| format!("{:.1}", x * 100.0);
    let mut t = Rows::new(&[
        "pattern",
        "swap",
        "runs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "p99.99 µs",
        "max ms",
        "touch s",
        "% time >1ms",
        "% time >10ms",
        "major faults",
        "swap-outs",
        "RSS plateau",
    ]);
    for c in &r.configs {
        let s = &c.summary;
        t.push(vec![
            c.pattern.clone(),
            c.swap.clone(),
            s.repeats.to_string(),
            us(s.p50_ns),
            us(s.p99_ns),
            us(s.p999_ns),
            us(s.p9999_ns),
            ms(s.max_ns),
            format!("{:.2}", s.touch_s),
            pct(s.slow_1ms_time_share),
            pct(s.slow_10ms_time_share),
            s.majflt_cgroup.map_or("-".into(), |v| num(v as u64)),
            s.swapout_pages.map_or("-".into(), |v| num(v as u64)),
            s.rss_plateau_bytes
                .map_or("-".into(), |v| format_bytes(v as u64)),
        ]);
    }
    let fmt = of.format();
    out::print(fmt, &t, &r)?;
    if fmt == out::Format::Table {
        println!(
            "limit {}, region {}; runs: {}",
            format_bytes(r.mem_limit_bytes),
            format_bytes(r.region_bytes),
            r.configs
                .iter()
                .flat_map(|c| c.runs.iter().map(|x| x.run_id.to_string()))
                .collect::<Vec<_>>()
                .join(" ")
        );
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    save.write(
        &r,
        |p, r| Ok(bench_touch::save(p, r)?),
        swaplab_study::bench::touch::section::bench_touch_section,
    )
}

fn f1(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}"))
}

fn run_vma(
    opts: &swaplab_study::bench::vma::VmaOptions,
    save: crate::SaveFlags,
    of: crate::OutFlags,
) -> Result<()> {
    use swaplab_study::bench::vma as bench_vma;
    use swaplab_trace::units::format_bytes;
    eprintln!(
        "bench vma: {} operations × {} patterns × {} repeats, {} sample points per run",
        num(opts.ops),
        opts.patterns.len(),
        opts.repeat,
        opts.points
    );
    let quiet = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let total = opts.patterns.len() * opts.repeat;
    let mut done = 0usize;
    let t0 = Instant::now();
    let mut r = bench_vma::run(opts, crate::cmd::report::argv(), &mut |p, rep| {
        done += 1;
        if !quiet {
            let el = t0.elapsed().as_secs_f64();
            let eta = if done > 1 {
                format!(
                    ", ETA {:.0}s",
                    el / (done - 1) as f64 * (total - done + 1) as f64
                )
            } else {
                String::new()
            };
            eprint!(
                "\r  [{done}/{total}] {p:<8} repeat {} ({el:.0}s{eta})   ",
                rep + 1
            );
        }
    })?;
    if !quiet {
        eprintln!();
    }
    let catalog = swaplab_lab::catalog::Catalog::open_default()?;
    let command = r.header.command.clone();
    let id = swaplab_study::bench::group::record(
        &catalog,
        "bench-vma",
        &command,
        &mut r,
        |r, id| r.header.sweep_id = Some(id),
        bench_vma::save,
    )?;
    eprintln!("recorded as s{id} (`swaplab report s{id}`)");
    let mut t = Rows::new(&[
        "pattern",
        "timed ops",
        "VMAs created",
        "region VMAs",
        "p50 ns",
        "p99 ns",
        "ns per ln(VMAs)",
        "slab objs/VMA",
        "slab B/VMA",
        "PTE B/GiB",
        "Δmem − control",
    ]);
    for p in &r.patterns {
        let s = &p.summary;
        let mut region: Vec<f64> = p.repeats.iter().map(|x| x.region_vmas as f64).collect();
        t.push(vec![
            p.pattern.clone(),
            num(p.timed_ops),
            format!("{:.0}", s.vmas_created),
            format!("{:.0}", bench_vma::median(&mut region)),
            format!("{:.0}", s.p50_ns),
            format!("{:.0}", s.p99_ns),
            f1(s.slope_ns_per_ln_vma),
            s.slab_objs_per_vma
                .map_or("-".into(), |v| format!("{v:.2}")),
            f1(s.slab_bytes_per_vma),
            format!("{:.0}", s.pte_bytes_per_gib),
            s.mem_delta_adjusted.map_or("-".into(), |v| {
                let sign = if v < 0.0 { "-" } else { "" };
                format!("{sign}{}", format_bytes(v.abs() as u64))
            }),
        ]);
    }
    out::print(of.format(), &t, &r)?;
    if of.format() == out::Format::Table {
        println!(
            "timer: {} (its own {:.1} ns subtracted; budget 50 ns); vm.max_map_count {} → {} for the run → {} after; {:.0}s in all",
            r.timer,
            r.timer_overhead_ns,
            r.max_map_count_before,
            r.max_map_count_set.map_or("unchanged".into(), |v| v.to_string()),
            r.max_map_count_after,
            r.wall_s
        );
        println!("settling: {}", r.settling);
        if !r.extrapolation.is_empty() {
            let mut e = Rows::new(&[
                "memory",
                "pattern",
                "VMAs",
                "slab",
                "page tables (untouched)",
                "page tables (touched)",
                "mmap ns at that count",
            ]);
            for x in &r.extrapolation {
                e.push(vec![
                    format_bytes(x.memory_bytes),
                    x.pattern.clone(),
                    num(x.vmas as u64),
                    x.slab_bytes.map_or("-".into(), |b| format_bytes(b as u64)),
                    format_bytes(x.page_table_untouched_bytes as u64),
                    format_bytes(x.page_table_touched_bytes as u64),
                    f1(x.latency_ns),
                ]);
            }
            println!("\n{}", e.render());
            println!("assumptions:");
            for a in &r.assumptions {
                println!("  - {a}");
            }
        }
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    save.write(
        &r,
        |p, r| Ok(bench_vma::save(p, r)?),
        swaplab_study::bench::vma::section::bench_vma_section,
    )
}

/// `bench sim --scale`: the streaming engine on a large generated trace.
fn run_scale(o: swaplab_study::bench::sim::scale::ScaleOptions, of: crate::OutFlags) -> Result<()> {
    use swaplab_study::bench::sim::scale;
    let r = scale::run(&o, crate::cmd::report::argv(), &mut |l| eprintln!("{l}"))?;
    let mut t = Rows::new(&[
        "policy",
        "mem_pages",
        "sim s",
        "M refs/s",
        "cpu s",
        "M refs/cpu s",
        "target",
        "ok",
        "bytes/page",
        "misses",
        "swap_outs",
        "prefix misses",
        "in-memory prefix misses",
        "equal",
    ]);
    for row in &r.rows {
        t.push(vec![
            row.policy.clone(),
            num(r.mem_pages),
            format!("{:.1}", row.sim_seconds),
            format!("{:.1}", row.mrefs_per_s),
            format!("{:.1}", row.sim_cpu_seconds),
            format!("{:.1}", row.mrefs_per_cpu_s),
            format!("≥{}", scale::TARGET_MREFS_PER_S),
            if row.meets_target { "yes" } else { "NO" }.into(),
            row.bytes_per_page.to_string(),
            num(row.counters.misses()),
            num(row.counters.swap_outs),
            num(row.prefix_counters.misses()),
            row.in_memory_prefix_counters
                .map_or("-".into(), |c| num(c.misses())),
            match row.prefix_equal {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
        ]);
    }
    out::print(of.format(), &t, &r)?;
    if of.format() != out::Format::Table {
        return Ok(());
    }
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    println!(
        "trace: {} references, {} distinct pages, {:.2} GB on disk (generated in {:.0} s); \
         one streamed read for every policy: {:.1} s wall; prefix checked: {} references ({:.0} s in memory)",
        num(r.refs),
        num(r.distinct_pages),
        r.file_bytes as f64 / 1e9,
        r.gen_seconds,
        r.stream_seconds,
        num(r.prefix),
        r.in_memory_prefix_seconds
    );
    println!(
        "peak RSS while streaming {} (floor before it {}); budget: per-page state {} + 1 GiB = {}: {}",
        r.stream_peak_rss_bytes.map_or("?".into(), gib),
        r.floor_rss_bytes.map_or("?".into(), gib),
        gib(r.per_page_state_bytes),
        gib(r.rss_budget_bytes),
        match r.meets_rss {
            Some(true) => "within",
            Some(false) => "OVER",
            None => "?",
        }
    );
    if let Some(n) = &r.note {
        println!("note: {n}");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_sim(
    refs: u64,
    pages: u64,
    mem: u64,
    policy: String,
    peer: bool,
    save: crate::SaveFlags,
    of: crate::OutFlags,
) -> Result<()> {
    use swaplab_study::bench::sim as bench_sim;
    let opts = bench_sim::SimOptions {
        refs,
        pages,
        mem,
        specs: PolicySpec::parse_list(&policy)?,
        install_peer: peer,
    };
    let result = bench_sim::run(&opts, crate::cmd::report::argv(), &mut |l| eprintln!("{l}"))?;
    let mut tr = Rows::new(&[
        "what",
        "M refs/s",
        "target",
        "ok",
        "bytes/page",
        "miss ratio",
        "sim s",
        "load+sim s",
        "import+sim s",
        "peer s",
        "peer miss",
        "×peer e2e",
        "×peer import",
        "note",
    ]);
    let f2 = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
    for r in &result.rows {
        tr.push(vec![
            r.what.clone(),
            format!("{:.1}", r.mrefs_per_s),
            r.target_mrefs_per_s.map_or("-".into(), |x| format!("≥{x}")),
            r.meets_target
                .map_or("-".into(), |b| if b { "yes".into() } else { "NO".into() }),
            r.bytes_per_page.map_or("-".into(), |b| b.to_string()),
            r.miss_ratio.map_or("-".into(), out::pct),
            format!("{:.2}", r.seconds),
            f2(r.end_to_end_seconds),
            f2(r.import_and_sim_seconds),
            f2(r.peer_seconds),
            r.peer_miss_ratio.map_or("-".into(), out::pct),
            f1(r.ratio_native()),
            f1(r.ratio_import()),
            r.note.clone(),
        ]);
    }
    out::print(of.format(), &tr, &result)?;
    save.write(
        &result,
        |p, r| Ok(swaplab_study::sim::section::save(p, r)?),
        bench_sim::section::bench_sim_section,
    )?;
    if of.format() != out::Format::Table {
        return Ok(());
    }
    let rss = result.peak_rss_bytes;
    println!(
        "peak RSS {} (trace in memory: {} bytes/ref + {} bytes/distinct page); policies run one at a time on one core",
        rss.map_or("?".into(), swaplab_trace::units::format_bytes),
        4,
        8
    );
    match &result.peer_note {
        None => println!(
            "peer: libCacheSim (PyPI libcachesim) reading the same trace as oracleGeneral and simulating, \
             timed inside python3; ×peer = peer time / ours (load+sim, or import of oracleGeneral+sim)"
        ),
        Some(e) => println!("peer columns empty: {e}"),
    }
    let mut lt = Rows::new(&[
        "format",
        "cores",
        "load s",
        "M refs/s",
        "× native",
        "file bytes/ref",
    ]);
    for l in &result.loads {
        lt.push(vec![
            l.format.clone(),
            l.cores.to_string(),
            format!("{:.2}", l.seconds),
            format!("{:.1}", l.mrefs_per_s),
            format!("{:.2}", l.vs_native),
            format!("{:.2}", l.file_bytes_per_ref),
        ]);
    }
    println!(
        "\nloading each format to the dense form (best of {} rounds; × native: this rate / the native file's at the same cores, target ≥ 1):\n{}",
        result.load_rounds,
        lt.render()
    );
    if result.loads.iter().any(|l| l.vs_native < 1.0) {
        println!(
            "below 1: every reference of another format is looked up in a page map (the native file holds dense ids), \
             and a .zst decompresses on one thread; on two cores that bounds them (docs/decisions.md). \
             `swaplab import` once, then the native file loads at its own rate"
        );
    }
    if let Some(p) = &result.peer {
        let mut pt = Rows::new(&[
            "policy",
            "ours: import+sim s",
            "ours: load+sim s",
            "ours: streamed s",
            "peer s",
            "misses",
            "peer misses",
            "×peer import",
            "×peer native",
            "×peer streamed",
            "targets",
        ]);
        for r in result.rows.iter().filter(|r| r.peer_seconds.is_some()) {
            let (ri, rn) = (r.ratio_import(), r.ratio_native_best());
            let met = |x: Option<f64>, t: f64| x.is_some_and(|x| x >= t);
            let eq = match (r.misses, r.peer_misses) {
                (Some(a), Some(b)) if a == b => "=".to_string(),
                (Some(a), Some(b)) => format!(" ({:+})", a as i64 - b as i64),
                _ => String::new(),
            };
            pt.push(vec![
                r.what.clone(),
                f2(r.import_and_sim_seconds),
                f2(r.end_to_end_seconds),
                f2(r.streamed_seconds),
                f2(r.peer_seconds),
                format!("{}{eq}", r.misses.map_or("-".into(), num)),
                r.peer_misses.map_or("-".into(), num),
                f1(ri),
                f1(r.ratio_native()),
                f1(r.ratio_streamed()),
                format!(
                    "≥{}× import {}, ≥{}× native {}",
                    bench_sim::PEER_TARGET_IMPORT,
                    if met(ri, bench_sim::PEER_TARGET_IMPORT) {
                        "yes"
                    } else {
                        "NO"
                    },
                    bench_sim::PEER_TARGET_NATIVE,
                    if met(rn, bench_sim::PEER_TARGET_NATIVE) {
                        "yes"
                    } else {
                        "NO"
                    },
                ),
            ]);
        }
        println!(
            "\nside by side with the peer, {p}, on the same oracleGeneral file (misses: \"=\" equal, else ours − the peer's; \
             docs/policies.md explains LIRS and S3-FIFO; streamed: `swaplab sim --stream`, the native file decoded while the policy runs; \
             the native target is met by the faster of load+sim and streamed):\n{}",
            pt.render()
        );
        if !result.peer_missing.is_empty() {
            println!(
                "the peer's package has no {}: timed here only",
                result.peer_missing.join(", ")
            );
        }
    }
    Ok(())
}
