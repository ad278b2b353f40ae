//! # swaplab-study — many runs → one saved result → one report section
//!
//! `swaplab-lab` runs one program; a study runs many and saves one result,
//! and its report section draws it. One folder per study, the result and
//! its section side by side:
//!
//! * [`sweep`] — `swaplab sweep`: limits × variants × repeats, interleaved,
//!   with per-cell medians, spread and slowdowns.
//! * [`compare`] — runs and sweeps compared with a Mann–Whitney U test
//!   (`swaplab_analysis::stats`); [`verify`] — `swaplab advise --verify`.
//! * [`validate`], [`calibrate`], [`demo`] (the real-workload half of
//!   `swaplab demo`), [`serve`] (a server under a limit and its load
//!   generator), [`sim`] (saved simulations and miss-ratio curves).
//! * [`bench`](mod@bench) — the benchmarks: the runner's own cost, what tracing
//!   costs, vma, touch, reclaim and hints, recorded as groups of the
//!   catalog.
//! * [`report`] — the sections of a report: what the user named (a run, a
//!   sweep, a trace directory, a saved result) resolved into sections.
//! * [`saved`] — every kind of saved result as one enum, decoded once, and
//!   the one dispatch to its section; the writers of saved results.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod demo;
pub mod report;
pub mod saved;
pub mod serve;
pub mod sim;
pub mod sweep;
#[cfg(test)]
mod testutil;
pub mod validate;
pub mod verify;

pub use demo::{demo_sweep, DemoOptions};
