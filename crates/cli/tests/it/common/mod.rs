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

/// What most root tests need: root, a memory cgroup, swap files.
pub const ROOT_SWAP: [swaplab_testkit::Facility; 3] = [
    swaplab_testkit::Facility::Root,
    swaplab_testkit::Facility::MemoryCgroup,
    swaplab_testkit::Facility::Swapfile,
];

/// Serialises the root tests: [`root_json`], and the tests of every module
/// that change the system or compare snapshots of it, across this binary's
/// threads and every other test binary (one test's changes must not show
/// in another's before/after comparison): [`swaplab_testkit::system_lock`].
pub use swaplab_testkit::system_lock as root_lock;

/// Where a test's directory goes: /var/tmp, or in a guest kernel the
/// disk scripts/kernels.sh mounts (`SWAPLAB_GUEST_DIR`; the guest's root
/// is a read-only share).
pub fn scratch_base() -> String {
    std::env::var("SWAPLAB_GUEST_DIR").unwrap_or_else(|_| "/var/tmp".into())
}

/// A JSON number, or a panic naming what it was.
pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The memory (`--mem`, pages) a saved validate prediction's
/// `sim_command` simulates: its capacity ensemble's median member.
pub fn sim_command_mem(p: &serde_json::Value) -> u64 {
    let cmd: Vec<&str> = p["sim_command"]
        .as_array()
        .unwrap_or_else(|| panic!("no sim_command: {p}"))
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let at = cmd.iter().position(|a| *a == "--mem");
    at.and_then(|i| cmd.get(i + 1)?.parse().ok())
        .unwrap_or_else(|| panic!("no --mem PAGES in {cmd:?}"))
}

/// One swaplab command run as root, its JSON read: `None` (the test skips,
/// saying why) unless this machine has `needs` ([`ROOT_SWAP`] and what
/// else the command uses); else runs `args` in a fresh directory under
/// /var/tmp (named after `prefix`), checks that the system is as it was
/// and that the command succeeded, and returns the directory (the caller
/// keeps it alive) and the command's standard output as JSON.
pub fn root_json(
    test: &str,
    needs: &[swaplab_testkit::Facility],
    prefix: &str,
    args: &[&str],
) -> Option<(tempfile::TempDir, serde_json::Value)> {
    use swaplab_testkit::{skip_unless, system_state};
    if skip_unless(test, needs) {
        return None;
    }
    // The tests of one binary run in parallel threads: a second root test
    // would change the system between this one's snapshots.
    let _lock = root_lock();
    let before = system_state();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(scratch_base())
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
