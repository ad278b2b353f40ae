//! `swaplab trace`, `swaplab analyze` and `swaplab advise`: argument
//! parsing and printing; the work is in swaplab-lab (tracing, analyze,
//! advise, hints, refs).
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use swaplab_lab::tracing::TraceConfig;
use swaplab_trace::units::format_bytes;

use super::run::{make_runs, parse_limit, SettingArgs};
use swaplab_lab::record::MetricName;

/// `--source`: where fault events come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FaultSource {
    Perf,
    Tracefs,
}

#[derive(Args)]
pub struct TraceArgs {
    /// Memory limit: a size (64M) or a share of the command's peak (50%). Default: none.
    #[arg(long, value_name = "SIZE|PCT")]
    pub mem_limit: Option<String>,
    #[command(flatten)]
    pub settings: SettingArgs,
    /// Fault-event source: perf (software events with the data address; the default,
    /// tells major from minor exactly) or tracefs (exceptions:page_fault_user read in binary).
    #[arg(long, value_enum, default_value_t = FaultSource::Perf)]
    pub source: FaultSource,
    /// Pagemap + maps samples per second for swap-outs/ins per page (0 turns them off).
    #[arg(long, default_value_t = 10.0, value_name = "HZ")]
    pub pagemap_hz: f64,
    /// Record allocations at or above this size (the preload library's threshold;
    /// with --refs: the allocations listed in the trace's sites sidecar).
    #[arg(long, default_value = "64K", value_name = "SIZE")]
    pub alloc_min: String,
    /// Sample allocations below --alloc-min: one per BYTES allocated on average
    /// (byte-based Poisson sampling, heaptrack-style), so faults in a heap of small
    /// objects are attributed to their call sites; `off` to turn it off.
    #[arg(long, default_value = "512K", value_name = "BYTES|off")]
    pub heap_sample: String,
    /// Do not load the preload library (region-level attribution only; with --refs:
    /// no allocation-sites sidecar).
    #[arg(long)]
    pub no_allocs: bool,
    /// Fault-event buffer per CPU.
    #[arg(long, default_value = "4M", value_name = "SIZE")]
    pub buffer: String,
    /// Write the trace directory here (default: the run's directory, `trace/`). With
    /// --refs: the reference trace file (default refs.parquet).
    #[arg(short, long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Capture the full page-reference stream into a native trace for `swaplab sim`
    /// instead: a built-in workload (`-- swaplab-workload NAME ...`) records its own
    /// references (30–50 M/s on two free cores; `swaplab bench capture`); any other
    /// program runs under valgrind lackey (1000× slower than the program; small programs
    /// only).
    #[arg(long)]
    pub refs: bool,
    /// --refs: include instruction fetches (lackey only).
    #[arg(long)]
    pub instructions: bool,
    /// --refs: use valgrind lackey even for a built-in workload.
    #[arg(long)]
    pub lackey: bool,
    /// Let the command print to the terminal.
    #[arg(long)]
    pub show_output: bool,
    /// Also write a report page (HTML) of the result.
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<std::path::PathBuf>,
    /// Print the run record as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command (after --).
    #[arg(last = true, required = true, value_name = "CMD", value_parser = crate::command_arg())]
    pub command: Vec<String>,
}

/// `--heap-sample`: a size, or `off` / `0` for none.
fn parse_heap_sample(s: &str) -> Result<u64> {
    if s.eq_ignore_ascii_case("off") || s == "0" {
        return Ok(0);
    }
    let v = swaplab_host::util::parse_size(s).with_context(|| {
        format!("--heap-sample {s}: expected a mean sampling interval such as 512K, or off")
    })?;
    if v < 64 {
        anyhow::bail!(
            "--heap-sample {s}: at least 64 bytes (smaller intervals log nearly every allocation; use off to disable)"
        );
    }
    Ok(v)
}

pub fn trace(a: TraceArgs) -> Result<()> {
    if a.refs {
        if a.report.is_some() {
            anyhow::bail!("--report draws page-fault traces; with --refs, simulate the trace with `swaplab sim TRACE --report OUT.html`");
        }
        return trace_refs(&a);
    }
    let mut options = a.settings.options()?;
    options.mem_limit = parse_limit(a.mem_limit.as_deref())?;
    let cfg = TraceConfig {
        source: crate::value_name(&a.source),
        pagemap_hz: a.pagemap_hz,
        alloc_min: swaplab_host::util::parse_size(&a.alloc_min)
            .with_context(|| format!("--alloc-min {}", a.alloc_min))?,
        allocs: !a.no_allocs,
        heap_sample: parse_heap_sample(&a.heap_sample)?,
        buffer_bytes_per_cpu: swaplab_host::util::parse_size(&a.buffer)
            .with_context(|| format!("--buffer {}", a.buffer))?,
        out: a.out.clone().map(absolute),
    };
    cfg.validate()?;
    options.trace = Some(cfg);
    let set = make_runs(&a.command, &options, 1, a.show_output)?;
    if let Some(out) = &a.report {
        let sources: Vec<String> = set.runs.iter().map(|r| r.id.to_string()).collect();
        super::report::write_sources(&sources, out)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&set)?);
        return Ok(());
    }
    for rec in &set.runs {
        print!("{}", super::catalog::render_run(rec, set.peak_bytes));
        let g = |k: MetricName| rec.get(k).unwrap_or(0.0);
        println!(
            "trace: {} faults ({} major), {} swap-outs seen, {} allocations, {} lost, {} on disk",
            g(MetricName::TraceFaults) as u64,
            g(MetricName::TraceMajorFaults) as u64,
            g(MetricName::TraceSwapOuts) as u64,
            g(MetricName::TraceAllocations) as u64,
            g(MetricName::TraceLost) as u64,
            format_bytes(g(MetricName::TraceBytes) as u64)
        );
        if let Some(dir) = trace_dir_of(rec) {
            println!("next: swaplab analyze {}", dir.display());
        }
    }
    Ok(())
}

fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    }
}

fn trace_dir_of(rec: &swaplab_lab::record::RunRecord) -> Option<PathBuf> {
    rec.trace_dir().map(PathBuf::from)
}

fn trace_refs(a: &TraceArgs) -> Result<()> {
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("refs.parquet"));
    let command = swaplab_lab::workload::resolve_command(&a.command)?;
    let opts = swaplab_lab::refs::RefOptions {
        include_instructions: a.instructions,
        lackey: a.lackey,
        allocs: !a.no_allocs,
        alloc_min: swaplab_host::util::parse_size(&a.alloc_min)
            .with_context(|| format!("--alloc-min {}: expected a size such as 64K", a.alloc_min))?,
        ..Default::default()
    };
    let cap = swaplab_lab::refs::capture_refs(&command, &out, &opts)?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "out": out,
                "refs": cap.refs,
                "distinct_pages": cap.distinct_pages,
                "wall_ns": cap.wall_ns,
                "exit_code": cap.exit_code,
                "method": cap.method,
                "workload_output": cap.workload_output,
                "sites": cap.sites,
                "notes": cap.notes,
            })
        );
        return Ok(());
    }
    println!(
        "{}: {} references, {} distinct pages ({}), captured in {:.2} s ({}){}",
        out.display(),
        cap.refs,
        cap.distinct_pages,
        format_bytes(cap.distinct_pages * 4096),
        cap.wall_ns as f64 / 1e9,
        match cap.method.as_str() {
            "instrumented" => "the workload's own recording; runs of one page cut at 3",
            _ => "valgrind lackey",
        },
        match cap.exit_code {
            Some(0) => String::new(),
            Some(c) => format!(" (the command exited with {c})"),
            None => " (the command was killed by a signal)".into(),
        }
    );
    if let Some(s) = &cap.sites {
        println!(
            "{}: {} allocation{} of at least {} from {} site{} (for `sim --hints` site hints)",
            s.path.display(),
            s.allocations,
            if s.allocations == 1 { "" } else { "s" },
            format_bytes(opts.alloc_min),
            s.sites,
            if s.sites == 1 { "" } else { "s" }
        );
    }
    for n in &cap.notes {
        eprintln!("note: {n}");
    }
    println!(
        "next: swaplab sim {} --policy lru,clock,linux --mem 25%,50%",
        out.display()
    );
    Ok(())
}

/// A trace argument: a directory, or a run id whose run has a trace.
pub fn trace_path(arg: &str) -> Result<PathBuf> {
    let p = Path::new(arg);
    if p.is_dir() {
        if swaplab_trace::trace_dir::is_trace_dir(p) {
            return Ok(p.to_path_buf());
        }
        if swaplab_trace::trace_dir::is_trace_dir(&p.join("trace")) {
            return Ok(p.join("trace"));
        }
        anyhow::bail!(
            "{arg}: not a trace directory (it has no meta.json and faults.parquet); make one with `swaplab trace -- CMD`"
        );
    }
    if let Ok(id) = arg.parse::<i64>() {
        let catalog = swaplab_lab::catalog::Catalog::open_default()?;
        catalog.run(id)?; // "no run N in the catalog" before "no trace"
        match catalog.trace_dir_of(id)? {
            Some(d) if swaplab_trace::trace_dir::is_trace_dir(&d) => return Ok(d),
            Some(d) => anyhow::bail!(
                "run {id} was traced into {}, which holds no trace now",
                d.display()
            ),
            None => anyhow::bail!("run {id} has no trace (it was not made with `swaplab trace`)"),
        }
    }
    anyhow::bail!("{arg}: no such directory or run id; make a trace with `swaplab trace -- CMD`")
}

#[derive(Args)]
pub struct AnalyzeArgs {
    /// A trace directory (from `swaplab trace`) or the id of a traced run.
    pub trace: String,
    /// Rows of the ranked tables.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Objects with fewer faults are not classified.
    #[arg(long, default_value_t = 64)]
    pub min_faults: usize,
    /// Write analysis.json, scatter.csv and bands.csv here (default: TRACE/analysis).
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the analysis as JSON (without the scatter points).
    #[arg(long)]
    pub json: bool,
}

fn secs(ns: Option<u64>) -> String {
    ns.map(|n| format!("{:.2}", n as f64 / 1e9))
        .unwrap_or_else(|| "-".into())
}

fn load(trace: &str) -> Result<(PathBuf, swaplab_trace::events::TraceTables)> {
    let dir = trace_path(trace)?;
    let t = swaplab_trace::trace_dir::read_tables(&dir)
        .with_context(|| format!("reading the trace in {}", dir.display()))?;
    Ok((dir, t))
}

pub fn analyze(a: AnalyzeArgs) -> Result<()> {
    use crate::out::Rows;
    use swaplab_analysis::analyze::{analyze as run_analysis, AnalyzeOptions};
    let (dir, t) = load(&a.trace)?;
    let an = run_analysis(
        &t,
        &AnalyzeOptions {
            min_faults_for_pattern: a.min_faults,
            ..Default::default()
        },
    );
    let out = a.out.clone().unwrap_or_else(|| dir.join("analysis"));
    let json = swaplab_analysis::output::write_analysis(&out, &an)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    let tt = &an.totals;
    println!(
        "{}: {} faults ({} major, {} minor), {} swap-ins, {} swap-outs, {} allocations in {} processes over {:.2} s",
        dir.display(),
        tt.faults,
        tt.major_faults,
        tt.minor_faults,
        tt.swap_ins,
        tt.swap_outs,
        tt.allocations,
        tt.processes,
        tt.t_end_ns as f64 / 1e9
    );
    println!(
        "unattributed: {} faults, {} swap events\n",
        an.unattributed.0, an.unattributed.1
    );
    println!("objects (ranked by major faults + swap-ins):");
    let mut r = Rows::new(&[
        "object", "pid", "bytes", "faults", "major", "swap-in", "swap-out", "first s", "last s",
        "pattern",
    ]);
    for o in an.objects.iter().take(a.top) {
        r.push(vec![
            o.label.clone(),
            o.pid.to_string(),
            format_bytes(o.bytes),
            o.faults.to_string(),
            o.major_faults.to_string(),
            o.swap_ins.to_string(),
            o.swap_outs.to_string(),
            secs(o.first_ns),
            secs(o.last_ns),
            o.pattern.short(),
        ]);
    }
    print!("{}", r.render());
    println!("\nallocation sites (ranked by major faults + swap-ins; sampled sites: estimated):");
    let mut r = Rows::new(&[
        "site",
        "objects",
        "bytes",
        "faults",
        "major",
        "swap-in",
        "swap-out",
        "est. maj+in",
        "pattern",
    ]);
    for s in an.sites.iter().take(a.top) {
        let label = if s.sampled {
            format!("{} [sampled]", s.label)
        } else {
            s.label.clone()
        };
        r.push(vec![
            label,
            s.objects.to_string(),
            if s.sampled {
                format!("~{} live", format_bytes(s.est_live_bytes))
            } else {
                format_bytes(s.bytes)
            },
            s.faults.to_string(),
            s.major_faults.to_string(),
            s.swap_ins.to_string(),
            s.swap_outs.to_string(),
            format!("{:.0}", s.est_major_swap_ins),
            s.pattern.short(),
        ]);
    }
    print!("{}", r.render());
    if !an.sampled_sites.is_empty() {
        println!(
            "\nsampled heap sites (allocations below --alloc-min, estimated from the samples):"
        );
        let mut r = Rows::new(&[
            "site",
            "samples",
            "est. live (peak)",
            "at s",
            "est. allocated",
        ]);
        for s in an.sampled_sites.iter().take(a.top) {
            r.push(vec![
                s.label.clone(),
                s.samples.to_string(),
                format_bytes(s.est_live_bytes),
                format!("{:.2}", s.peak_ns as f64 / 1e9),
                format_bytes(s.est_allocated_bytes),
            ]);
        }
        print!("{}", r.render());
    }
    println!(
        "\nwrote {}/{{analysis.json,scatter.csv,bands.csv}} (time × address scatter of swap-ins/outs with object bands)",
        out.display()
    );
    println!("next: swaplab advise {}", dir.display());
    Ok(())
}

#[derive(Args)]
pub struct AdviseArgs {
    /// A trace directory (from `swaplab trace`) or the id of a traced run.
    pub trace: String,
    /// The memory limit the advice is for (default: the traced run's limit).
    #[arg(long, value_name = "SIZE")]
    pub limit: Option<String>,
    /// Share of the limit that all mlock hints together may lock (at most 0.9).
    #[arg(long, default_value_t = 0.5)]
    pub mlock_budget: f64,
    /// Write the hint file here (default: TRACE/hints.toml).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the advice as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the traced command again under the traced run's limit and swap,
    /// base against hinted (interleaved), and keep the fastest set of hints
    /// that makes it significantly faster, measured as a whole (the hints
    /// that pay alone are run together in a second sweep). The default as
    /// root when the trace has its run record; needs root, like `swaplab
    /// run`.
    #[arg(long, conflicts_with = "no_verify")]
    pub verify: bool,
    /// Do not verify (the default when not root): the file keeps the hints
    /// the simulation predicts as a clear gain, unmeasured.
    #[arg(long)]
    pub no_verify: bool,
    /// Runs per variant for --verify (at least 4 for p < 0.05 to be possible).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub repeat: u32,
}

pub fn advise(a: AdviseArgs) -> Result<()> {
    use crate::out::Rows;
    use swaplab_analysis::advise::{advise as run_advice, AdviseContext};
    use swaplab_analysis::analyze::{analyze as run_analysis, AnalyzeOptions};
    let (dir, t) = load(&a.trace)?;
    let meta = swaplab_trace::trace_dir::read_meta(&dir)?;
    let limit = match &a.limit {
        Some(l) => Some(swaplab_host::util::parse_size(l).with_context(|| format!("--limit {l}"))?),
        None => meta.run_limit_bytes(),
    };
    let an = run_analysis(&t, &AnalyzeOptions::default());
    let synchronous = meta.run_swap_synchronous();
    let ctx = AdviseContext {
        limit_bytes: limit,
        mlock_budget_fraction: a.mlock_budget,
        readahead: Some(if synchronous {
            "none".into()
        } else {
            swaplab_study::bench::hints::readahead_kind("file")
        }),
        ..AdviseContext::of_trace(&meta)
    };
    let mut advice = run_advice(&an, &t, &ctx);
    // Each hint simulated on the run's faults, with and without it: what
    // is not a clear gain for the whole process is left out.
    let screened = swaplab_analysis::predict::screen(&an, &t, &ctx, &mut advice);
    let prefetch = screened.offered.clone().filter(|_| screened.prefetch_kept);
    let verdict = swaplab_analysis::advise::verdict_with(&an, &t, &ctx, &advice, prefetch);
    let budget = ctx.mlock_budget().unwrap_or(0);
    let mut file = swaplab_analysis::predict::hint_file(&advice, budget, &screened);
    swaplab_analysis::hints::identify_modules(&mut file, &t);
    let out = a.out.clone().unwrap_or_else(|| dir.join("hints.toml"));
    swaplab_trace::atomic::write_atomic(&out, file.to_toml().as_bytes())?;
    // Verify by default as root, when the trace has its run record. A
    // served run's trace (`swaplab serve --trace`) is not rerun here: its
    // command is a server that needs serve's driver (ready, fill, load).
    let root = swaplab_host::util::is_root();
    let served = meta.options.get("serve").is_some();
    if served && a.verify {
        anyhow::bail!("--verify reruns a traced program; this trace is of a server (swaplab serve --trace): verify with `swaplab serve ... --variant base= --variant hinted=\"--hints {}\"`", out.display());
    }
    let verify = a.verify || (!a.no_verify && root && meta.run_id.is_some() && !served);
    let mut verify_note = None;
    if served && !a.no_verify {
        verify_note = Some(
            "not verified: a server's trace (swaplab serve --trace); compare with `swaplab serve ... --variant base= --variant hinted=\"--hints FILE\"`",
        );
    } else if !a.verify && !a.no_verify && !verify {
        verify_note = Some(if !root {
            "not verified (needs root; run as root to measure base against hinted, or pass \
             --no-verify to silence this)"
        } else {
            "not verified: the trace has no run record (imported or older), so there is no \
             limit, swap and command to rerun"
        });
    }
    let has_items = !file.hints.is_empty() || file.prefetch.is_some();
    let verified = if verify && has_items {
        let v = verify_hints(&meta, &file, &dir, a.repeat)?;
        file = swaplab_study::verify::kept_file(&file, &v);
        swaplab_trace::atomic::write_atomic(&out, file.to_toml().as_bytes())?;
        Some(v)
    } else {
        None
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "limit_bytes": limit,
                "mlock_budget_bytes": budget,
                "advice": advice,
                "prediction": screened,
                "verdict": verdict,
                "verify": verified,
                "verify_note": verify_note,
                "hint_file": out,
            }))?
        );
        return Ok(());
    }
    println!(
        "advice for a limit of {} (mlock budget {}):",
        limit
            .map(format_bytes)
            .unwrap_or_else(|| "none (no mlock advice)".into()),
        format_bytes(budget)
    );
    let mut r = Rows::new(&[
        "site",
        "action",
        "saves",
        "predicted",
        "expected",
        "evidence",
    ]);
    r.left = true;
    for ad in &advice {
        let action = ad.action.to_string();
        let site = if ad.location.is_empty() {
            ad.site_frames.first().cloned().unwrap_or_default()
        } else {
            ad.location.clone()
        };
        let predicted = ad
            .prediction
            .as_ref()
            .and_then(|p| {
                p.hinted_major_faults
                    .map(|h| format!("{} -> {h}", p.base_major_faults))
            })
            .unwrap_or_else(|| "-".into());
        r.push(vec![
            site,
            action,
            ad.expected_faults_saved.to_string(),
            predicted,
            ad.expected.clone(),
            ad.evidence.clone(),
        ]);
    }
    print!("{}", r.render());
    if let Some(m) = &screened.model {
        println!("\nsimulated: {}", m.note);
    }
    for l in &screened.left_out {
        println!("left out: {l}");
    }
    if let Some(c) = &screened.combined {
        println!("kept hints together: {}", c.summary);
    }
    if let (Some(p), true) = (&screened.prefetch, screened.prefetch_kept) {
        println!("predicted: {}", p.summary);
    }
    println!("\n{}", verdict.summary);
    if verify && verified.is_none() {
        println!("verify: no hint to verify");
    }
    if let Some(n) = verify_note.filter(|_| has_items) {
        println!("{n}");
    }
    if let Some(v) = &verified {
        println!(
            "\nverified (sweep s{}, {} runs per variant, base against hinted, interleaved):",
            v.sweep_id, a.repeat
        );
        let table = |rows: &[swaplab_study::verify::VerifyRow]| {
            let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |x| format!("{x:.d$}"));
            let mut t = Rows::new(&[
                "variant",
                "hints",
                "base s",
                "hinted s",
                "ratio",
                "p",
                "majflt base",
                "majflt hinted",
                "verdict",
            ]);
            t.left = true;
            for row in rows {
                t.push(vec![
                    row.variant.clone(),
                    row.what.clone(),
                    f(row.base_s, 2),
                    f(row.hinted_s, 2),
                    f(row.ratio, 3),
                    f(row.p, 3),
                    f(row.majflt.0, 0),
                    f(row.majflt.1, 0),
                    row.reason.clone(),
                ]);
            }
            print!("{}", t.render());
        };
        table(&v.rows);
        if let Some(c) = &v.confirm {
            println!(
                "\nthe items that paid alone, together (sweep s{}, against base and the fastest \
                 above):",
                c.sweep_id
            );
            table(&c.rows);
        }
        if let Some((sweep, r)) = &v.kept_by {
            println!("\nkept: {} ({}, sweep s{sweep})", r.what, r.variant);
        }
        if v.kept.is_empty() && !v.kept_prefetch {
            println!("\nno hint pays: the hint file written keeps none (run without hints)");
        }
    }
    let apply = if served {
        format!(
            "swaplab serve ... --variant base= --variant hinted=\"--hints {}\"",
            out.display()
        )
    } else {
        format!(
            "swaplab run --hints {} --mem-limit ... -- CMD",
            out.display()
        )
    };
    println!(
        "\nwrote {} ({} hints{}); apply with: {apply}",
        out.display(),
        file.hints.len(),
        file.prefetch
            .as_ref()
            .map(|p| format!(" and prefetch {p}"))
            .unwrap_or_default(),
    );
    Ok(())
}

/// `advise --verify`: the traced run's record (limit, swap, command), one
/// interleaved sweep base against hinted, each hint judged.
fn verify_hints(
    meta: &swaplab_trace::trace_dir::TraceMetaFile,
    file: &swaplab_analysis::hints::HintFile,
    dir: &Path,
    repeat: u32,
) -> Result<swaplab_study::verify::VerifyReport> {
    use swaplab_lab::runner::Lab;
    let Some(run_id) = meta.run_id else {
        anyhow::bail!(
            "--verify needs the traced run's record (its limit, swap and command), and this trace \
             has none (imported, or older than run records): trace the program again with \
             `swaplab trace --mem-limit ... -- CMD`"
        );
    };
    Lab::require_runner()?;
    let lab = Lab::open().context("opening the catalog")?;
    let traced = lab
        .catalog
        .run(run_id)
        .with_context(|| format!("reading run {run_id}, the traced run"))?;
    let bar = super::run::Bar::new();
    let r =
        swaplab_study::verify::verify(&lab, &traced, file, &dir.join("verify"), repeat, &mut |p| {
            bar.event(p)
        });
    bar.finish();
    Ok(r?)
}
