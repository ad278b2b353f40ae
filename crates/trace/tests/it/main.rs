//! The integration tests of swaplab-trace: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

// swaplab_testkit's macros (test_name!, require!, test_path!) in every module.
#[macro_use]
extern crate swaplab_testkit;

mod fuzz_readers;
mod import_real;
mod split_mapping;
