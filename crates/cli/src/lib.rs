//! The `swaplab` binary: argument parsing ([`Cli`], every subcommand's
//! arguments in `cmd/`) and printing (tables, JSON and CSV in `out`); the
//! work lives in the library crates (swaplab-trace, swaplab-sim,
//! swaplab-analysis, swaplab-host, swaplab-lab). It is a library target only
//! so that its tests can walk the command tree ([`Cli`] with
//! `clap::CommandFactory`) and parse examples without running them; nothing
//! depends on it, and `src/main.rs` calls [`main`].

#![forbid(unsafe_code)]
use clap::{Args, Parser, Subcommand};

// `print!` and `println!` in this crate are out.rs's: a closed pipe
// (`swaplab runs | head -1`) ends the program quietly with status 0 instead
// of the standard macros' panic. Declared first so every module sees them.
#[macro_use]
mod out;
mod cmd;
mod trace_io;

#[derive(Parser)]
#[command(
    name = "swaplab",
    version,
    about = "A workbench for studying programs under memory pressure on Linux",
    long_about = "swaplab generates, imports and simulates page-reference traces (page-replacement \
policies, miss-ratio curves), and runs real programs under memory limits with swap.\n\n\
Start with `swaplab demo`. Every subcommand has --help."
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone, Copy)]
pub struct OutFlags {
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV instead of a table.
    #[arg(long)]
    pub csv: bool,
}

/// `--save FILE` and `--report OUT.html`, shared by every study that keeps
/// its result in a file (the benchmarks, calibrate, validate, serve, sim,
/// mrc): the result as JSON that `swaplab report FILE` draws, and a report
/// page of it written now.
#[derive(Args, Clone, Debug, Default)]
pub struct SaveFlags {
    /// Also save the result as JSON (`swaplab report FILE` draws it; `swaplab compare`
    /// reads sim and mrc results).
    #[arg(long = "save", value_name = "FILE")]
    pub file: Option<std::path::PathBuf>,
    /// Also write a report page (HTML) of the result.
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<std::path::PathBuf>,
}

impl SaveFlags {
    /// Whether either was asked for.
    pub fn any(&self) -> bool {
        self.file.is_some() || self.report.is_some()
    }

    /// Saves `result` with `saver` and writes its report section (from
    /// `section`), each if asked for.
    pub(crate) fn write<T: serde::Serialize>(
        &self,
        result: &T,
        saver: impl Fn(&std::path::Path, &T) -> anyhow::Result<()>,
        section: swaplab_study::report::SectionBuilder,
    ) -> anyhow::Result<()> {
        if let Some(p) = &self.file {
            saver(p, result)?;
            eprintln!(
                "saved {} (read it with `swaplab report {}`)",
                p.display(),
                p.display()
            );
        }
        if let Some(out) = &self.report {
            let v = serde_json::to_value(result)?;
            let saved = self.file.as_deref().unwrap_or(std::path::Path::new(""));
            let sec = section(saved, &v)?;
            let argv = cmd::report::argv();
            cmd::report::write(
                &swaplab_study::report::report_of(vec![sec], None, &argv),
                out,
            )?;
        }
        Ok(())
    }
}

/// A `ValueEnum`'s word on the command line (`select-only` for
/// `PgScript::SelectOnly`), for the libraries that take it as text.
pub(crate) fn value_name<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// The parser of the command after `--`: any bytes, kept as text by
/// `swaplab_trace::arg::encode` (arguments that are not UTF-8 survive to
/// the program exactly).
pub(crate) fn command_arg() -> impl clap::builder::TypedValueParser<Value = String> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(|s| swaplab_trace::arg::encode(&s))
}

impl OutFlags {
    pub fn format(&self) -> out::Format {
        out::Format::from_flags(self.json, self.csv)
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job. As root: sweep qsort and genome (64 MiB) under memory limits
    /// 100/75/50/25 % with a temporary swapfile and print the slowdowns; then (and
    /// without root) simulate every policy on a generated trace and print the LRU curve.
    Demo(cmd::demo::DemoArgs),
    /// Generate a synthetic page-reference trace.
    Gen(cmd::gen::GenArgs),
    /// Convert another tool's trace (libCacheSim oracleGeneral, CSV, text, valgrind lackey,
    /// perf script) into swaplab's native format.
    Import(cmd::import::ImportArgs),
    /// Export a trace for another tool (libCacheSim oracleGeneral).
    Export(cmd::import::ExportArgs),
    /// Summarise a trace: references, footprint, read/write mix, LRU stack distances.
    Info(cmd::info::InfoArgs),
    /// Simulate page-replacement policies on a trace at one or more memory sizes.
    Sim(cmd::sim::SimArgs),
    /// Miss-ratio curves: exact LRU in one pass, SHARDS sampling, other policies by sweep.
    Mrc(cmd::sim::MrcArgs),
    /// Benchmarks that print their numbers (speed and memory targets).
    Bench {
        #[command(subcommand)]
        what: cmd::bench_runner::BenchAny,
    },
    /// Run a command in a fresh memory cgroup with a limit and swap, measure it, record it.
    Run(cmd::run::RunArgs),
    /// Run a command under several memory limits (× variants × repeats), interleaved.
    Sweep(cmd::run::SweepArgs),
    /// Run a server under memory limits (× variants × repeats) and drive it from outside its
    /// cgroup: throughput and request latency per limit (--preset redis).
    Serve(cmd::serve::ServeArgs),
    /// Run a command traced: page faults and swap by address, regions, allocation sites.
    Trace(cmd::trace::TraceArgs),
    /// Attribute a trace's faults and swaps to objects and allocation sites; classify patterns.
    Analyze(cmd::trace::AnalyzeArgs),
    /// Recommend hints (mlock, prefetch, cold/pageout) per allocation site from a trace.
    Advise(cmd::trace::AdviseArgs),
    /// List recorded runs (or sweeps) from the catalog.
    Runs(cmd::catalog::RunsArgs),
    /// Show one recorded run (12) or sweep (s3).
    Show(cmd::catalog::ShowArgs),
    /// Compare two runs or two sweeps, cell by cell, with a significance test.
    Compare(cmd::catalog::CompareArgs),
    /// Write one self-contained HTML page of figures from runs, sweeps, traces and saved simulations.
    Report(cmd::report::ReportArgs),
    /// Measure what a page costs to swap out and in here (file, zram, zswap): device profiles for the simulator.
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// The simulator's predictions (faults, swap-outs, run time) against real runs of a built-in workload.
    Validate(cmd::validate::ValidateArgs),
    /// What this machine offers (cgroups, swap, PSI, tracing, …) and what each gap disables.
    Doctor(cmd::doctor::DoctorArgs),
    /// Undo what killed swaplab processes left behind (swap areas, sysctls, cgroups).
    Restore(cmd::doctor::RestoreArgs),
    /// Simulation grids on a Ray cluster, and their benchmark (the Python package's
    /// `python -m swaplab.ray`, docs/python.md).
    Ray(cmd::ray::RayArgs),
    /// The built-in C workloads (qsort, genome, traverse, chase, kv).
    Workload {
        #[command(subcommand)]
        what: cmd::workload::WorkloadCmd,
    },
}

/// Parses the command line, runs the subcommand, and exits with its
/// status (errors: a message on stderr and status 1).
pub fn main() {
    let cli = Cli::parse();
    // Commands that change the system first undo what a killed swaplab left
    // (they would trip over it); the others only report it.
    let changes_system = match &cli.cmd {
        Cmd::Run(_)
        | Cmd::Sweep(_)
        | Cmd::Serve(_)
        | Cmd::Trace(_)
        | Cmd::Calibrate(_)
        | Cmd::Validate(_) => true,
        Cmd::Demo(a) => !a.sim_only,
        Cmd::Bench { what } => what.changes_system(),
        _ => false,
    };
    match &cli.cmd {
        Cmd::Restore(_) | Cmd::Doctor(_) => {}
        _ if changes_system => cmd::doctor::restore_at_start(),
        _ => cmd::doctor::report_leftovers(),
    }
    let r = match cli.cmd {
        Cmd::Demo(a) => cmd::demo::run(a).map(|()| 0),
        Cmd::Gen(a) => cmd::gen::run(a).map(|()| 0),
        Cmd::Report(a) => cmd::report::run(a).map(|()| 0),
        Cmd::Import(a) => cmd::import::run_import(a).map(|()| 0),
        Cmd::Export(a) => cmd::import::run_export(a).map(|()| 0),
        Cmd::Info(a) => cmd::info::run(a).map(|()| 0),
        Cmd::Sim(a) => cmd::sim::run_sim(a).map(|()| 0),
        Cmd::Mrc(a) => cmd::sim::run_mrc(a).map(|()| 0),
        Cmd::Bench { what } => cmd::bench_runner::run(what).map(|()| 0),
        Cmd::Run(a) => cmd::run::run(a),
        Cmd::Sweep(a) => cmd::run::sweep(a),
        Cmd::Serve(a) => cmd::serve::run(a),
        Cmd::Ray(a) => cmd::ray::run(a),
        Cmd::Trace(a) => cmd::trace::trace(a).map(|()| 0),
        Cmd::Analyze(a) => cmd::trace::analyze(a).map(|()| 0),
        Cmd::Advise(a) => cmd::trace::advise(a).map(|()| 0),
        Cmd::Runs(a) => cmd::catalog::runs(a).map(|()| 0),
        Cmd::Show(a) => cmd::catalog::show(a).map(|()| 0),
        Cmd::Compare(a) => cmd::catalog::compare_cmd(a).map(|()| 0),
        Cmd::Calibrate(a) => cmd::calibrate::run(a).map(|()| 0),
        Cmd::Validate(a) => cmd::validate::run(a).map(|()| 0),
        Cmd::Doctor(a) => cmd::doctor::doctor(a).map(|()| 0),
        Cmd::Restore(a) => cmd::doctor::restore(a).map(|()| 0),
        Cmd::Workload { what } => cmd::workload::run(what).map(|()| 0),
    };
    match r {
        Ok(code) => {
            out::flush();
            std::process::exit(code);
        }
        Err(e) => {
            out::flush();
            eprintln!("swaplab: error: {e}");
            for c in e.chain().skip(1) {
                eprintln!("  caused by: {c}");
            }
            std::process::exit(1);
        }
    }
}
