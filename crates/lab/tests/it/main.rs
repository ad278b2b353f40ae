//! The integration tests of swaplab-lab: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

// swaplab_testkit's macros (test_name!, require!, test_path!) in every module.
#[macro_use]
extern crate swaplab_testkit;

mod common;
mod fuzz_options;
mod heap_sample;
mod kill;
mod others_cpu;
mod parquet_pyarrow;
mod prefetch;
mod preload;
mod reclaim_trace;
mod refs;
mod sim_sites;
mod swap_areas;
mod swap_tiers;
mod symbolize;
mod trace;
