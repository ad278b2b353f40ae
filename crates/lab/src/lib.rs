//! # swaplab-lab — one program under memory pressure, built from swaplab-host
//!
//! * [`runner`] — `swaplab run`: a command in a fresh memory cgroup with a
//!   limit, swap and kernel settings scoped to the run, measured (rusage,
//!   memcg counters, vmstat, PSI, kswapd CPU, a 20 Hz [`timeline`]),
//!   recorded as a [`record::RunRecord`]; the command dies with swaplab.
//!   [`areas`]: each swap area's reads, writes and used slots over the run.
//! * [`statflush`] — `--flush-stats`: fresh memory-cgroup statistics
//!   during a run (a guard against spurious OOM kills in small groups).
//! * [`prefetcher`] — `--prefetch`: prefetching a running program's
//!   swapped pages from outside it (what to ask for is decided by
//!   `swaplab_sim::prefetch::detector`).
//! * [`options`] — what a run asks for (limit, swap, sysctls, timeout,
//!   hints, variants) and the parsers of their human forms.
//! * [`catalog`] — the SQLite catalog and run directories.
//! * [`tracing`] — the instruments of `swaplab trace` (fault events,
//!   pagemap swap changes, maps snapshots, the preload library's allocation
//!   log), written as a trace directory (`swaplab_trace::trace_dir`), and
//!   hint files resolved for a run; [`refs`] — full page-reference capture
//!   (valgrind lackey).
//! * [`workload`] and [`preload`] — the built-in C workloads and the
//!   LD_PRELOAD allocation tracer / hint applier, embedded in the binary.
//!
//! Studies of many runs (sweep, compare, validate, calibrate, demo, the
//! benchmarks, and what only they use, such as the `--machine-mem`
//! balloon) and their report sections are `swaplab-study`.
//!
//! Offline analysis of a trace (attribution, advice, hint files,
//! symbolization) is `swaplab_analysis`: it needs none of this crate.
//!
//! ```no_run
//! use swaplab_lab::{options::{LimitSpec, RunOptions}, record::MetricName, runner::Lab, workload};
//! # fn main() -> swaplab_lab::Result<()> {
//! let lab = Lab::open()?; // catalog at $SWAPLAB_HOME, Ctrl-C guard
//! let opts = RunOptions {
//!     mem_limit: Some(LimitSpec::Percent(50.0)),
//!     swap: vec!["file:512M".parse()?],
//!     ..Default::default()
//! };
//! let set = lab.run(&workload::command("qsort", "64M", None, &[]), &opts, 1, &mut |_| {})?;
//! println!("{} major faults", set.runs[0].get(MetricName::Majflt).unwrap_or(0.0));
//! # Ok(()) }
//! ```

/// Per-area swap traffic of a run: the sampler and the record's type live
/// with the other swap-area readers in `swaplab_host::swap`.
pub use swaplab_host::swap::areas;
pub mod catalog;
pub mod error;
pub mod options;
pub mod prefetcher;
pub mod preload;
pub mod record;
pub mod refs;
pub mod runner;
pub mod statflush;
pub mod timeline;
pub mod tracing;
pub mod workload;

pub use error::{Error, Result};
