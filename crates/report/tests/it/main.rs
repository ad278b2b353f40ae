//! The integration tests of swaplab-report: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

mod escaping;
