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

/// One swaplab command run as root with a swap file, its JSON read: `None`
/// (the test skips, saying why) unless this machine has root, a memory
/// cgroup and swap files; else runs `args` in a fresh directory under
/// /var/tmp (named after `prefix`), checks that the system is as it was
/// and that the command succeeded, and returns the directory (the caller
/// keeps it alive) and the command's standard output as JSON.
pub fn root_json(
    test: &str,
    prefix: &str,
    args: &[&str],
) -> Option<(tempfile::TempDir, serde_json::Value)> {
    use swaplab_testkit::{skip_unless, system_state, Facility};
    if skip_unless(
        test,
        &[Facility::Root, Facility::MemoryCgroup, Facility::Swapfile],
    ) {
        return None;
    }
    let before = system_state();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap();
    let o = swaplab(dir.path(), args);
    assert_eq!(
        system_state(),
        before,
        "{test}: the system was left changed"
    );
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let v = serde_json::from_slice(&o.stdout).unwrap();
    Some((dir, v))
}
