//! swaplab's data model for page-reference traces.
//!
//! A trace is a stream of [`Ref`]s — `(page, op)` with optional `time_ns` and
//! `tid` — plus [`TraceMeta`]. Everything here is pure: no OS calls beyond
//! reading and writing files, so it is easy to test and fuzz.
//!
//! * [`native`]: the native Parquet format (streaming reader and writer).
//! * [`gen`]: synthetic generators (sequential, strided, uniform, Zipf, loop, phases).
//! * [`import`]: importers for other tools' formats; [`export`]: libCacheSim oracleGeneral.
//! * [`trace_dir`]: the files of a trace directory (`swaplab trace`): the
//!   event tables as Parquet and `meta.json`, with their schema.
//! * [`alloc_log`]: the preload library's binary allocation log (parser).
//! * [`alloc_sites`]: a reference trace's allocation sites (JSON sidecar).
//! * [`dense`]: a trace loaded for simulation, pages renumbered densely.
//! * [`stream`]: a native trace read for simulation one row group at a time.
//! * [`stats`]: footprint, read/write mix, LRU stack-distance percentiles.
//! * [`atomic`]: the atomic file writer every file of swaplab goes through.
//! * [`units`]: human sizes (`64M`, `1.5G`, `25%`).

// Unsafe code only in dense.rs, for the loader's id table (IdMap): its cache
// prefetch, its madvise(MADV_HUGEPAGE), and its memory (one reserved mapping).
#![deny(unsafe_code)]

pub mod alloc_log;
pub mod alloc_sites;
pub mod arg;
pub mod atomic;
pub mod dense;
pub mod error;
pub mod events;
pub mod export;
pub mod gen;
pub mod import;
pub mod model;
pub mod native;
pub mod schema;
pub mod stats;
pub mod stream;
pub mod trace_dir;
pub mod units;

pub use dense::DenseTrace;
pub use error::{Error, Result};
pub use model::{Op, Ref, RefBatch, RefSink, RefSource, Source, TraceMeta, VecSource};
