//! The integration tests of swaplab-sim: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

mod arc_paper;
mod brute_force;
mod fuzz_specs;
mod memory;
mod peer;
