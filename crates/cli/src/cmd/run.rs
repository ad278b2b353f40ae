//! `swaplab run` and `swaplab sweep`: argument parsing and printing; the
//! work is in swaplab-lab.
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use swaplab_lab::options::{parse_limits, LimitSpec, RunOptions, Variant};
use swaplab_lab::record::MetricName;
use swaplab_lab::runner::{Lab, Output, Progress};
use swaplab_study::sweep::{limit_text, LabSweep, SweepRequest};

/// Settings shared by `run`, `sweep`, `trace` and `serve`, and a sweep's
/// `--variant`s: one clap structure (swaplab-lab's `RunFlags`).
pub use swaplab_lab::options::RunFlags as SettingArgs;

#[derive(Args)]
pub struct RunArgs {
    /// Memory limit: a size (64M, 1.5G) or a share of the command's peak (50%, at most 100%):
    /// its cgroup's peak, page cache included, measured by an unlimited run first and cached
    /// per exact command line (wrapping it in `time` or `perf` measures again). Default: no
    /// limit.
    #[arg(long, value_name = "SIZE|PCT")]
    pub mem_limit: Option<String>,
    #[command(flatten)]
    pub settings: SettingArgs,
    /// Runs to make (each in a fresh cgroup and session).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Let the command print to the terminal instead of into the run directory.
    #[arg(long)]
    pub show_output: bool,
    /// Also write a report page (HTML) of the result.
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<std::path::PathBuf>,
    /// `--json`: the run records; `--csv`: their metrics, a row per (run, metric).
    #[command(flatten)]
    pub out: crate::OutFlags,
    /// The command (after --). `swaplab-workload NAME --size SIZE` runs a built-in workload
    /// or a real program (sqlite, sort, xz, pydict: `swaplab workload list`, docs/programs.md).
    #[arg(last = true, required = true, value_name = "CMD", value_parser = crate::command_arg())]
    pub command: Vec<String>,
}

#[derive(Args)]
pub struct SweepArgs {
    /// Limits, comma-separated: shares of the command's peak (100%,75%,50%,25%) or sizes.
    #[arg(long, value_name = "LIST", default_value = "100%,75%,50%,25%")]
    pub limits: String,
    /// Runs per cell.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    #[command(flatten)]
    pub settings: SettingArgs,
    /// A variant, repeatable: NAME="ARGS" with run options (--page-cluster 0, --swappiness N,
    /// --thp MODE, --mglru on|off, --swap SPEC, --swap-limit SIZE, --mem-high SIZE, --timeout T,
    /// --hints FILE,
    /// --flush-stats T, --prefetch SPEC) and/or cmd=PROGRAM ARGS to
    /// replace the command (compare MGLRU: --variant lru="--mglru off" --variant mglru="--mglru on"). Without variants the sweep has one, `default`.
    #[arg(long = "variant", value_name = "NAME=ARGS")]
    pub variants: Vec<String>,
    /// Sweep programs instead of a command, one variant each, named by the program: `all`
    /// (the real programs: sqlite, sort, xz, pydict) or a list of real programs and built-in
    /// workloads (sqlite,sort,qsort). Each runs as `swaplab-workload NAME --size SIZE`, its
    /// limits shares of its own peak. With --variant: every program with every variant
    /// (named PROGRAM+VARIANT).
    #[arg(long, value_name = "all|LIST", requires = "size")]
    pub programs: Option<String>,
    /// --size of the --programs (64M, 1G).
    #[arg(long, value_name = "SIZE", requires = "programs")]
    pub size: Option<String>,
    /// --seed of the --programs.
    #[arg(long, value_name = "N", requires = "programs")]
    pub seed: Option<u64>,
    /// Skip a variant's smaller limits once one of its cells timed out.
    #[arg(long)]
    pub skip_after_timeout: bool,
    /// Also write a report page (HTML) of the result.
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<std::path::PathBuf>,
    /// `--json`: the sweep's report; `--csv`: its table.
    #[command(flatten)]
    pub out: crate::OutFlags,
    /// The command (after --).
    #[arg(last = true, value_name = "CMD", value_parser = crate::command_arg())]
    pub command: Vec<String>,
}

/// Progress on a terminal: a bar with the run being made; nothing when piped.
pub struct Bar {
    pb: ProgressBar,
}

impl Bar {
    pub fn new() -> Bar {
        let pb = if std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
            let pb = ProgressBar::new(0);
            pb.set_style(
                ProgressStyle::with_template("[{pos}/{len}] {elapsed_precise} eta {eta} {msg}")
                    .expect("valid template"),
            );
            pb.enable_steady_tick(std::time::Duration::from_millis(200));
            pb
        } else {
            ProgressBar::hidden()
        };
        Bar { pb }
    }

    pub fn event(&self, p: Progress<'_>) {
        match p {
            Progress::Calibrating { command } => {
                self.pb.set_message(format!(
                    "measuring the peak of `{}` (unlimited run, cached for this exact command line)",
                    swaplab_trace::arg::shell_line(command)
                ));
            }
            Progress::RunStarted { index, total, plan } => {
                self.pb.set_length(total as u64);
                self.pb.set_position(index as u64);
                let v = plan
                    .sweep
                    .as_ref()
                    .and_then(|s| s.1.clone())
                    .map(|v| format!("{v} "))
                    .unwrap_or_default();
                self.pb.set_message(format!(
                    "{v}{}",
                    limit_text(&plan.limit_label, plan.limit_bytes)
                ));
            }
            Progress::RunFinished { index, record, .. } => {
                self.pb.set_position(index as u64 + 1);
                let wall = record
                    .get(MetricName::WallNs)
                    .map(|w| format!("{:.2} s", w / 1e9))
                    .unwrap_or_default();
                self.pb.println(format!(
                    "run {:>4}  {:<10} {:<16} {:>9}  {}",
                    record.id,
                    record.variant.as_deref().unwrap_or(""),
                    limit_text(&record.limit_label, record.limit_bytes),
                    wall,
                    record.outcome_text()
                ));
            }
        }
    }

    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// Exits with 128+signal after an interruption (the system was restored).
fn exit_if_interrupted(e: &swaplab_lab::Error) {
    if let swaplab_lab::Error::Interrupted(sig) = e {
        eprintln!("swaplab: {e}");
        std::process::exit(128 + sig);
    }
}

/// Makes the runs of `swaplab run` (and `swaplab trace`) with a progress
/// bar; exits with 128+signal when interrupted.
pub fn make_runs(
    command: &[String],
    options: &RunOptions,
    repeat: u32,
    show_output: bool,
) -> Result<swaplab_lab::runner::RunSet> {
    Lab::require_runner()?;
    let mut lab = Lab::open().context("opening the catalog")?;
    if show_output {
        lab.output = Output::Inherit;
    }
    let bar = Bar::new();
    let r = lab.run(command, options, repeat, &mut |p| bar.event(p));
    bar.finish();
    drop(lab);
    r.map_err(|e| {
        exit_if_interrupted(&e);
        e.into()
    })
}

/// `--mem-limit` text to a limit.
pub fn parse_limit(text: Option<&str>) -> Result<Option<LimitSpec>> {
    Ok(text.map(str::parse::<LimitSpec>).transpose()?)
}

/// The exit status that stands for a run's ending, as `timeout(1)` and
/// shells report them: the program's own status; 128+N for signal N (137:
/// the OOM killer's SIGKILL); 124 when swaplab killed it at `--timeout`.
pub fn exit_status(rec: &swaplab_lab::record::RunRecord) -> i32 {
    use swaplab_lab::record::Outcome;
    match rec.outcome {
        Some(Outcome::Ok) => 0,
        Some(Outcome::Timeout) => 124,
        Some(Outcome::Oom) => 137,
        Some(Outcome::Interrupted) => 130,
        _ => match (rec.exit_code, rec.term_signal) {
            (Some(c), _) if c != 0 => c,
            (_, Some(sig)) => 128 + sig,
            _ => 1,
        },
    }
}

/// Warns on stderr before any run when limits below the peak would
/// OOM-kill for want of swap.
fn warn_without_swap(limits: &[LimitSpec], options: &RunOptions, variants: &[Variant]) {
    if let Some(w) = swaplab_study::sweep::no_swap_warning(limits, options, variants) {
        eprintln!("swaplab: warning: {w}");
    }
}

/// `swaplab run`: exits with the status of the first run that did not end
/// well (see [`exit_status`]), 0 when all did.
pub fn run(a: RunArgs) -> Result<i32> {
    let mut options = a.settings.options()?;
    options.mem_limit = parse_limit(a.mem_limit.as_deref())?;
    if let Some(l) = options.mem_limit {
        warn_without_swap(&[l], &options, &[]);
    }
    let set = make_runs(&a.command, &options, a.repeat, a.show_output)?;
    let status = set
        .runs
        .iter()
        .map(exit_status)
        .find(|&c| c != 0)
        .unwrap_or(0);
    if let Some(out) = &a.report {
        let sources: Vec<String> = set.runs.iter().map(|r| r.id.to_string()).collect();
        super::report::write_sources(&sources, out)?;
    }
    match a.out.format() {
        crate::out::Format::Json => {
            println!("{}", serde_json::to_string_pretty(&set)?);
            return Ok(status);
        }
        crate::out::Format::Csv => {
            let runs: Vec<&_> = set.runs.iter().collect();
            print!("{}", super::catalog::metrics_rows(&runs).csv()?);
            return Ok(status);
        }
        crate::out::Format::Table => {}
    }
    for rec in &set.runs {
        print!("{}", super::catalog::render_run(rec, set.peak_bytes));
        if set.runs.len() > 1 {
            println!();
        }
    }
    if set.runs.len() > 1 {
        if let Some(g) = set.group_id {
            let catalog = swaplab_lab::catalog::Catalog::open_default()?;
            let rep = swaplab_study::sweep::report_from_catalog(&catalog, g)?;
            println!("repeat group s{g}:");
            print!("{}", crate::out::sweep_table(&rep));
        }
    }
    Ok(status)
}

/// `swaplab sweep`: exits 1 (after the report) when a cell has a run that
/// did not exit 0, and says how many.
pub fn sweep(a: SweepArgs) -> Result<i32> {
    let options = a.settings.options()?;
    let mut variants: Vec<Variant> = a
        .variants
        .iter()
        .map(|v| v.parse())
        .collect::<Result<_, _>>()?;
    if let Some(p) = &a.programs {
        if !a.command.is_empty() {
            anyhow::bail!("--programs replaces the command: give one or the other");
        }
        let size = a.size.as_deref().unwrap_or_default();
        variants = program_variants(p, size, a.seed, &variants)?;
    }
    if a.command.is_empty() && (variants.is_empty() || variants.iter().any(|v| v.command.is_none()))
    {
        anyhow::bail!("no command given: swaplab sweep --limits 100%,50% -- CMD ARGS (or give every variant cmd=...)");
    }
    let req = SweepRequest {
        command: a.command.clone(),
        limits: parse_limits(&a.limits)?,
        repeat: a.repeat.max(1),
        options,
        variants,
        skip_after_timeout: a.skip_after_timeout,
    };
    Lab::require_runner()?;
    warn_without_swap(&req.limits, &req.options, &req.variants);
    let lab = Lab::open().context("opening the catalog")?;
    let bar = Bar::new();
    let r = lab.sweep(&req, &mut |p| bar.event(p));
    bar.finish();
    drop(lab);
    let rep = match r {
        Ok(s) => s,
        Err(e) => {
            exit_if_interrupted(&e);
            return Err(e.into());
        }
    };
    if let Some(out) = &a.report {
        super::report::write_sources(&[format!("s{}", rep.sweep_id)], out)?;
    }
    match a.out.format() {
        crate::out::Format::Json => println!("{}", serde_json::to_string_pretty(&rep)?),
        crate::out::Format::Csv => print!("{}", crate::out::sweep_rows(&rep).csv()?),
        crate::out::Format::Table => {
            println!("sweep s{}: {}", rep.sweep_id, rep.commands_text());
            print!("{}", crate::out::sweep_table(&rep));
        }
    }
    let failed: Vec<_> = rep
        .cells
        .iter()
        .filter(|c| c.oom + c.timeout + c.other > 0)
        .collect();
    if failed.is_empty() {
        return Ok(0);
    }
    let sum =
        |f: fn(&swaplab_study::sweep::Cell) -> usize| failed.iter().map(|c| f(c)).sum::<usize>();
    eprintln!(
        "swaplab: {} of {} cells had failed runs ({} OOM-killed, {} timed out, {} other); \
         `swaplab show s{}` lists every run",
        failed.len(),
        rep.cells.len(),
        sum(|c| c.oom),
        sum(|c| c.timeout),
        sum(|c| c.other),
        rep.sweep_id
    );
    Ok(1)
}

/// The variants of `sweep --programs LIST --size SIZE`: one per program
/// (`swaplab-workload NAME --size SIZE`), or one per program and variant.
pub fn program_variants(
    list: &str,
    size: &str,
    seed: Option<u64>,
    variants: &[Variant],
) -> Result<Vec<Variant>> {
    use swaplab_lab::workload::{self, programs};
    let names: Vec<String> = if list == "all" {
        programs::PROGRAMS
            .iter()
            .map(|p| p.name.to_string())
            .collect()
    } else {
        let known = workload::list()?;
        list.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| {
                if known.iter().any(|w| w.name == n) {
                    Ok(n.to_string())
                } else {
                    anyhow::bail!(
                        "--programs: {n:?} is neither a real program nor a built-in workload (`swaplab workload list`)"
                    )
                }
            })
            .collect::<Result<_>>()?
    };
    if names.is_empty() {
        anyhow::bail!("--programs: give `all` or a comma-separated list, e.g. sqlite,sort");
    }
    swaplab_host::util::parse_size(size)?;
    let mut out = Vec::new();
    for n in &names {
        let command = Some(workload::command(n, size, seed, &[]));
        if variants.is_empty() {
            out.push(Variant {
                name: n.clone(),
                options: Default::default(),
                command: command.clone(),
            });
        }
        for v in variants {
            if v.command.is_some() {
                anyhow::bail!(
                    "--variant {}: cmd= replaces the command, which --programs gives",
                    v.name
                );
            }
            out.push(Variant {
                name: format!("{n}+{}", v.name),
                options: v.options.clone(),
                command: command.clone(),
            });
        }
    }
    Ok(out)
}

/// Part 1 of `swaplab demo`: the real-workload sweep when this machine can
/// run it (root, a memory cgroup, a disk for the swap file); otherwise say
/// what it needs. Never fails the demo: the simulation part follows.
/// The real-workload parts of the demo; returns what its report shows
/// (the sweeps, as `sN`, and the traced run's trace directory).
pub fn demo_real_part() -> Vec<String> {
    let mut sources = Vec::new();
    let missing = swaplab_study::demo::demo_missing();
    if !missing.is_empty() {
        println!(
            "(The real-workload part of the demo — qsort and genome swept over memory limits with a swap \
             file — needs {}. Showing the simulation demo only; `sudo swaplab demo` runs both.)\n",
            missing.join("; ")
        );
        return sources;
    }
    let opts = swaplab_study::DemoOptions::default();
    println!(
        "swaplab demo, part 1: real programs under memory limits\n\
         qsort and genome at --size {} under limits of {} of each one's own peak (measured by an \
         unlimited run), with a temporary {} swap file; each run capped at {} s. About 4 minutes.\n",
        opts.size,
        opts.limits.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("/"),
        match &opts.swap {
            swaplab_host::swap::SwapSpec::File { size, .. } => swaplab_host::util::format_size(*size),
            other => other.to_string(),
        },
        opts.timeout.as_secs()
    );
    let bar = Bar::new();
    let r = swaplab_study::demo_sweep(&opts, &mut |p| bar.event(p));
    bar.finish();
    match r {
        Ok(rep) => {
            sources.push(format!("s{}", rep.sweep_id));
            println!(
                "Slowdown against each workload's unlimited (100 %) run, sweep s{}:",
                rep.sweep_id
            );
            print!("{}", crate::out::sweep_table(&rep));
            println!(
                "Every run is in the catalog: `swaplab show s{}`, `swaplab runs`, `swaplab show ID`.\n",
                rep.sweep_id
            );
        }
        Err(e) => {
            exit_if_interrupted(&e);
            eprintln!("swaplab demo: the real-workload sweep failed: {e}\n(continuing with the simulation demo)\n");
        }
    }
    println!(
        "swaplab demo, part 2: trace, advise, prove\n\
         traverse --size 64M traced at 50 % of its peak; `swaplab advise` on the trace; then a \
         sweep of the baseline against the hinted run. About 30 s.\n"
    );
    let bar = Bar::new();
    let r = swaplab_study::demo::advise_demo("64M", 3, &mut |p| bar.event(p));
    bar.finish();
    match r {
        Ok(d) => {
            sources.push(d.trace_dir.display().to_string());
            sources.push(format!("s{}", d.sweep.sweep_id));
            println!("traced run {} ({}):", d.trace_run, d.trace_dir.display());
            for o in &d.objects {
                println!("  {o}");
            }
            println!("advice ({}):", d.hints.display());
            for a in &d.advice {
                println!("  {a}");
            }
            println!("baseline against hinted, sweep s{}:", d.sweep.sweep_id);
            print!("{}", crate::out::sweep_table(&d.sweep));
            let med = |v: &str| {
                d.sweep
                    .cells
                    .iter()
                    .find(|c| c.variant == v)
                    .and_then(|c| c.wall_ns.as_ref())
                    .map(|s| s.median)
            };
            if let (Some(b), Some(h)) = (med("base"), med("hinted")) {
                println!(
                    "with the advice the run takes {:.2} s instead of {:.2} s: {:.2}× faster",
                    h / 1e9,
                    b / 1e9,
                    b / h
                );
            }
            println!(
                "Your own program: `swaplab trace --mem-limit 50% -- PROG`, `swaplab analyze ID`, \
                 `swaplab advise ID`, `swaplab sweep --variant base= --variant hinted=\"--hints FILE\" -- PROG`.\n"
            );
        }
        Err(e) => {
            exit_if_interrupted(&e);
            eprintln!("swaplab demo: the trace/advise part failed: {e}\n(continuing with the simulation demo)\n");
        }
    }
    if let Some(s) = demo_touch_part() {
        sources.push(s);
    }
    println!("swaplab demo, part 4: simulation\n");
    sources
}

/// Part 3 of the demo: `bench touch --quick`, recorded in the catalog. Its
/// group (`sN`, a report source), or `None` when it failed (said why).
fn demo_touch_part() -> Option<String> {
    use swaplab_study::bench::touch as bench_touch;
    println!(
        "swaplab demo, part 3: the latency of every page touch while swapping\n\
         `swaplab bench touch --quick`: a 128M region written page by page (seq) and at random \
         under a 64M limit with a swap file. A few seconds.\n"
    );
    let size = 128 << 20;
    let r = (|| -> swaplab_lab::Result<bench_touch::TouchResult> {
        let opts = bench_touch::TouchOptions {
            mem_limit: 64 << 20,
            size,
            touches: None,
            patterns: bench_touch::PATTERNS
                .iter()
                .map(|p| p.to_string())
                .collect(),
            swaps: bench_touch::parse_swaps("file:2x", size)?,
            repeat: 1,
            points: 1024,
            seed: 42,
            timeout: Some(std::time::Duration::from_secs(120)),
            flush_stats: None,
        };
        let lab = Lab::open()?;
        let r = bench_touch::run(
            &lab,
            &opts,
            vec![
                "swaplab".into(),
                "bench".into(),
                "touch".into(),
                "--quick".into(),
            ],
            &mut |_, _, _| {},
        )?;
        Ok(r)
    })();
    match r {
        Ok(r) => {
            for c in &r.configs {
                let s = &c.summary;
                println!(
                    "  {:<6} p50 {:.1} µs, p99.99 {:.0} µs, max {:.1} ms; {:.0} % of the touch time in touches slower than 1 ms",
                    c.pattern,
                    s.p50_ns / 1e3,
                    s.p9999_ns / 1e3,
                    s.max_ns / 1e6,
                    s.slow_1ms_time_share * 100.0
                );
            }
            let id = r.header.sweep_id?;
            println!(
                "Recorded as s{id} (`swaplab show s{id}`); the full benchmark: `swaplab bench touch --mem-limit 1G --swap file:2x,file:8x` (docs/journey.md).\n"
            );
            Some(format!("s{id}"))
        }
        Err(e) => {
            exit_if_interrupted(&e);
            eprintln!("swaplab demo: the touch benchmark failed: {e}\n(continuing with the simulation demo)\n");
            None
        }
    }
}
