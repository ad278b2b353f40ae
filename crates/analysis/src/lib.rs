//! # swaplab-analysis — what a trace directory says, offline
//!
//! Pure functions over the tables of a traced run
//! ([`swaplab_trace::events::TraceTables`], read by
//! [`swaplab_trace::trace_dir`]): no kernel access, no SQLite, no C build,
//! so a copied trace directory can be analysed, tested and fuzzed anywhere.
//!
//! * [`analyze`] — attribution of every fault and swap event to an
//!   allocation, a region or nothing; per-object and per-site statistics;
//!   access-pattern classification; scatter data.
//! * [`advise`] — hints (mlock, willneed prefetch, cold/pageout) per
//!   allocation site from an [`analyze::Analysis`].
//! * [`predict`] — each hint's effect on the whole process, simulated on
//!   the trace's faults with and without it; advice that is not a clear
//!   gain is left out.
//! * [`hints`] — the hint file (TOML) that `advise` writes and
//!   `swaplab run --hints` applies: writer, parser with line-numbered errors.
//! * [`sim_hints`] — a hint file as the simulator's page ranges, site
//!   hints matched against a trace's allocation sites (`swaplab sim
//!   --hints`).
//! * [`sites`] — allocation sites and allocations from the preload
//!   library's logs; the hints it reports applied.
//! * [`symbolize`] — stack frames `(module, offset)` to function, file:line
//!   and a stable key (DWARF and the ELF symbol table).
//! * [`output`] — the files `swaplab analyze` writes (`analysis.json`,
//!   `scatter.csv`, `bands.csv`) and their schema.
//! * [`stats`] — medians, spreads and the Mann–Whitney U test that `compare`
//!   uses.

#![forbid(unsafe_code)]

pub mod advise;
pub mod analyze;
pub mod error;
pub mod hints;
pub mod output;
pub mod predict;
pub mod sim_hints;
pub mod sites;
pub mod stats;
pub mod symbolize;

pub use error::{Error, Result};
