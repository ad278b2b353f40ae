//! The integration tests of swaplab-sim: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.
//!
//! tests/memory.rs stays a binary of its own: its counting global allocator
//! measures the whole process's heap, which the other modules' threads
//! would change.

mod arc_paper;
mod brute_force;
mod fuzz_specs;
mod peer;
