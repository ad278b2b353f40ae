//! Shared helpers of the runner tests: root checks, a lock that serialises
//! the tests of one binary (they change global settings), and the system
//! state (testkit's snapshot) that every test must leave as it found it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use swaplab_lab::catalog::Catalog;
use swaplab_lab::runner::Lab;

/// Serialises the tests that make runs (they set sysctls and add swap),
/// across this binary's threads and every other test binary
/// ([`swaplab_testkit::system_lock`]).
pub fn serial() -> swaplab_testkit::SystemLock {
    swaplab_testkit::system_lock()
}

/// Records a skip (see `swaplab_testkit::skip`) and returns true when runs
/// cannot be made here: they need root, a memory cgroup controller and
/// swap files. Only a missing facility skips; a failing run is a failure.
pub fn skip(test: &str) -> bool {
    use swaplab_testkit::Facility::*;
    swaplab_testkit::skip_unless(test, &[Root, MemoryCgroup, Swapfile])
}

/// A fresh catalog in a temporary directory (on disk, not tmpfs).
pub fn temp_lab() -> (tempfile::TempDir, Lab) {
    let dir = tempfile::Builder::new()
        .prefix("swaplab-lab-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let lab = Lab::with_catalog(Catalog::open(dir.path()).unwrap()).unwrap();
    (dir, lab)
}

/// The parts of the system a run may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysState {
    pub swaps: Vec<PathBuf>,
    pub swappiness: String,
    pub page_cluster: String,
    pub thp: String,
    pub cgroups: Vec<PathBuf>,
}

/// The system state now ([`swaplab_testkit::state::SystemState`], the one
/// snapshot), narrowed to what a run of this process may change: swaplab
/// groups created by *this* process (other processes' groups are not ours
/// to judge).
pub fn sys_state() -> SysState {
    let s = swaplab_testkit::state::SystemState::capture();
    let prefix = format!("swaplab-{}-", std::process::id());
    SysState {
        swaps: s.swaps.iter().map(|a| PathBuf::from(&a.name)).collect(),
        swappiness: s.knob("/proc/sys/vm/swappiness").to_string(),
        page_cluster: s.knob("/proc/sys/vm/page-cluster").to_string(),
        thp: s
            .knob("/sys/kernel/mm/transparent_hugepage/enabled")
            .to_string(),
        cgroups: s
            .cgroups
            .into_iter()
            .filter(|g| {
                g.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .collect(),
    }
}

/// True when another process holds a live swaplab journal (its session may
/// legitimately have changed global settings right now).
pub fn others_active() -> bool {
    let dir = swaplab_host::journal::state_dir().join("journal");
    let me = format!("{}-", std::process::id());
    std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(".json") && !n.starts_with(&me)
            })
        })
        .unwrap_or(false)
}

/// Asserts the system is as `before`: swap areas and our cgroups exactly;
/// sysctls too unless another swaplab session is running right now.
pub fn assert_restored(before: &SysState, what: &str) {
    let after = sys_state();
    assert_eq!(
        after.cgroups,
        Vec::<PathBuf>::new(),
        "{what}: cgroups left behind"
    );
    let ours_left: Vec<&PathBuf> = after
        .swaps
        .iter()
        .filter(|s| {
            !before.swaps.contains(s)
                && s.to_string_lossy()
                    .contains(&format!("swaplab-{}-", std::process::id()))
        })
        .collect();
    assert!(
        ours_left.is_empty(),
        "{what}: swap areas left behind: {ours_left:?}"
    );
    if others_active() {
        eprintln!("{what}: another swaplab session is active; not comparing global sysctls");
        return;
    }
    assert_eq!(after.swappiness, before.swappiness, "{what}: vm.swappiness");
    assert_eq!(
        after.page_cluster, before.page_cluster,
        "{what}: vm.page-cluster"
    );
    assert_eq!(after.thp, before.thp, "{what}: THP");
}

/// The workload binary (extracted from the library).
pub fn workload_exe() -> PathBuf {
    swaplab_lab::workload::executable().unwrap()
}

/// Reads a number after `label` in a `/usr/bin/time -v` report.
pub fn time_v_field(text: &str, label: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().parse().ok())
}

/// Reads a counter from `perf stat -x,` output.
pub fn perf_field(text: &str, event: &str) -> Option<u64> {
    text.lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == event)
        .and_then(|f| f[0].trim().parse().ok())
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Mount points of tracefs, read raw from /proc/self/mounts.
pub fn tracefs_mounts() -> Vec<String> {
    swaplab_testkit::state::tracefs_mounts()
}

/// The bytes of the main objects `swaplab-workload ARGS --objects`
/// reports (the workload measures its own allocations), from a direct run.
///
/// Not the process's peak RSS: `ru_maxrss` of a child spawned by a large
/// process starts at the parent's RSS (the kernel records the pre-exec
/// memory's high-water mark), so it measured the test binary, not the
/// workload.
pub fn measure_objects(args: &[&str]) -> u64 {
    let out = std::process::Command::new(workload_exe())
        .args(args)
        .arg("--objects")
        .stdout(std::process::Stdio::null())
        .output()
        .expect("running the workload");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{args:?} failed: {:?}\n{err}",
        out.status
    );
    let objects: u64 = err
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["object"].is_string())
        .filter_map(|v| v["bytes"].as_u64())
        .sum();
    assert!(objects > 0, "{args:?} reported no objects:\n{err}");
    objects
}

/// A command line from words.
pub fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The `--objects` line of `name` on the workload's stderr: (start, end).
pub fn object_range(stderr: &str, name: &str) -> (u64, u64) {
    for line in stderr.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["object"] == name {
            let hex = |k: &str| {
                let s = v[k].as_str().unwrap();
                u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
            };
            return (hex("start"), hex("end"));
        }
    }
    panic!("no --objects line for {name} in {stderr:?}");
}
