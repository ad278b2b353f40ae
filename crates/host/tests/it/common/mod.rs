//! Shared test support: skip rules, the helper binary, and [`Baseline`], a
//! guard that records the machine's swap/cgroup/knob state
//! ([`SystemState`], testkit's snapshot: plain file reads, independent of
//! the crate's parsers), checks it is unchanged at the end, and forcibly
//! puts it back on drop if a test failed half-way.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Serialises the tests that touch system state ([`Baseline`] and every
/// module's own lock), across this binary's threads and every other test
/// binary: [`swaplab_testkit::system_lock`].
pub use swaplab_testkit::system_lock;

pub use swaplab_testkit::Facility;

/// True (after recording the skip) when one of `needs` is missing here.
/// Only a missing facility skips: errors while using a present one fail.
pub fn skip_unless(test: &str, needs: &[Facility]) -> bool {
    swaplab_testkit::skip_unless(test, needs)
}

/// The machine's state, read raw: testkit's one snapshot (scripts/test.sh
/// prints the same with `state-snapshot`).
pub use swaplab_testkit::state::{tracefs_mounts, SystemState};

fn raw(path: &str) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "<absent>".into())
}

fn bracketed(raw: &str) -> Option<String> {
    raw.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
}

/// Puts `want` back with plain syscalls and writes (no crate code).
pub fn force_restore(want: &SystemState) {
    let now = SystemState::capture();
    for s in now.swaps.iter().filter(|s| !want.swaps.contains(s)) {
        let s = &s.name;
        let c = std::ffi::CString::new(s.as_str()).unwrap();
        // SAFETY: valid C string.
        unsafe { libc::swapoff(c.as_ptr()) };
        if s.contains("swaplab") && !s.starts_with("/dev/") {
            let _ = fs::remove_file(s);
        }
    }
    // Deepest first: a group's children sort after it.
    for g in now
        .cgroups
        .iter()
        .rev()
        .filter(|g| !want.cgroups.contains(g))
    {
        for _ in 0..200 {
            let pids = fs::read_to_string(g.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = pids
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.is_empty() {
                break;
            }
            for p in pids {
                // SAFETY: plain kill.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for _ in 0..100 {
            if fs::remove_dir(g).is_ok() || !g.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    for (dev, size, algo) in &want.zram {
        if let Some((_, s2, a2)) = now.zram.iter().find(|(d, _, _)| d == dev) {
            if s2 != size {
                let _ = fs::write(format!("/sys/block/{dev}/reset"), "1");
            }
            if a2 != algo {
                if let Some(a) = bracketed(algo) {
                    let _ = fs::write(format!("/sys/block/{dev}/comp_algorithm"), a);
                }
            }
        }
    }
    for m in now
        .tracefs_mounts
        .iter()
        .filter(|m| !want.tracefs_mounts.contains(m))
    {
        let c = std::ffi::CString::new(m.as_str()).unwrap();
        // SAFETY: valid C string.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        let _ = fs::remove_file("/run/swaplab/tracefs.mounted");
    }
    for (f, v) in &want.knobs {
        if v == "<absent>" {
            continue;
        }
        let cur = raw(f);
        if &cur != v {
            let val = bracketed(v).unwrap_or_else(|| v.clone());
            let _ = fs::write(f, val);
        }
    }
}

/// Holds the system lock and the state at the start of a test.
pub struct Baseline {
    pub state: SystemState,
    _lock: swaplab_testkit::SystemLock,
}

impl Baseline {
    pub fn take() -> Baseline {
        let lock = system_lock();
        Baseline {
            state: SystemState::capture(),
            _lock: lock,
        }
    }

    /// Asserts the machine is as it was at [`Baseline::take`].
    pub fn assert_restored(&self) {
        let d = self.state.diff(&SystemState::capture());
        assert!(d.is_empty(), "system state not restored:\n{}", d.join("\n"));
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        let d = self.state.diff(&SystemState::capture());
        if !d.is_empty() {
            eprintln!(
                "test left system state changed, forcing it back:\n{}",
                d.join("\n")
            );
            force_restore(&self.state);
            if !std::thread::panicking() {
                panic!("test left system state changed:\n{}", d.join("\n"));
            }
        }
    }
}

/// A private state directory for sessions (on disk, so swap files work).
pub fn state_dir() -> tempfile::TempDir {
    fs::create_dir_all("/var/tmp").ok();
    tempfile::Builder::new()
        .prefix("swaplab-test-state-")
        .tempdir_in("/var/tmp")
        .expect("temp state dir")
}

/// Path of the `host_helper` example, building it if needed.
pub fn helper() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/debug/deps/<test> → target/debug/examples/host_helper
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join("examples").join("host_helper");
    if !p.exists() {
        // `cargo test --test X` does not build examples: build it into the
        // same target directory.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target = dir.parent().expect("target root");
        let st = Command::new(cargo)
            .args([
                "build",
                "-p",
                "swaplab-host",
                "--example",
                "host_helper",
                "--manifest-path",
            ])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .env("CARGO_TARGET_DIR", target)
            .status()
            .expect("running cargo build for host_helper");
        assert!(st.success(), "building host_helper failed");
    }
    assert!(p.exists(), "{} missing after build", p.display());
    p
}
