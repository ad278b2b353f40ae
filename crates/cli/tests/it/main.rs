//! The integration tests of swaplab: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

// swaplab_testkit's macros (test_name!, require!, test_path!) in every module.
#[macro_use]
extern crate swaplab_testkit;

mod bench_reclaim;
mod bench_touch;
mod bench_vma;
mod calibrate;
mod cli;
mod common;
mod devices;
mod guest;
mod report;
mod serve;
mod sim_sites;
mod system;
mod validate;
