//! The integration tests of swaplab-host: one test binary (`it`) with a module
//! per test file, so the crate's tests link once (ripgrep's layout).
//! A new test file here needs its `mod` line below.

// swaplab_testkit's macros (test_name!, require!, test_path!) in every module.
#[macro_use]
extern crate swaplab_testkit;

mod cgroup_fake;
mod cgroup_real;
mod common;
mod doctor;
mod faults;
mod pagemap;
mod procfs;
mod recovery;
mod session;
mod signals;
mod swap_devices;
mod tracefs_mount;
