//! Helpers shared by the command-line tests that run swaplab as root in a
//! temporary directory of their own.
#![allow(dead_code)]
use std::path::Path;
use std::process::{Command, Output};

/// Runs the swaplab binary in `dir`, with its catalog (`home`) and state
/// (`state`) inside it and CI=1 (a missing facility fails, never skips).
pub fn swaplab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .env("SWAPLAB_HOME", dir.join("home"))
        .env("SWAPLAB_STATE_DIR", dir.join("state"))
        .output()
        .unwrap()
}

/// A JSON number, or a panic naming what it was.
pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}
