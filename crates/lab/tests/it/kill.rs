//! swaplab itself killed mid-run: with SIGTERM it kills the group,
//! restores and records the run as interrupted; with SIGKILL it leaves a
//! journal and a `running` row, its direct child dies with it
//! (PR_SET_PDEATHSIG), the child's own children are left in the group, and
//! the next start restores the system, kills them and marks the row
//! interrupted — the catalog stays consistent either way.
//!
//! The "swaplab" here is this test binary re-executed in child mode
//! (`child_entry`), which makes one run through the library like
//! `swaplab run` does.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;
use swaplab_host::journal::{JournalFile, Undo};
use swaplab_lab::catalog::Catalog;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome, Status};
use swaplab_lab::runner::Lab;

const CHILD_ENV: &str = "SWAPLAB_LAB_TEST_CHILD";

/// Child mode: one long run (swap file, page-cluster 0, a 32M limit) of
/// `sh -c 'WORKLOAD traverse --size 48M --stop & wait'`: the shell is
/// swaplab's child (it dies with swaplab: PR_SET_PDEATHSIG), the workload
/// its child, which fills 48M (so at least 16M goes to swap) and stops
/// itself (SIGSTOP), holding its memory and swap until it is killed. A
/// stopped task allocates nothing, so neither the memory cgroup's OOM
/// killer nor the parent-death signal (not inherited across fork) can end
/// it: only swaplab's group kill or the next start's recovery do. See
/// docs/decisions.md, "The kill tests' workload".
#[test]
fn child_entry() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let home = PathBuf::from(std::env::var_os("SWAPLAB_HOME").expect("parent sets SWAPLAB_HOME"));
    let lab = Lab::with_catalog(Catalog::open(&home).unwrap()).unwrap();
    let exe = workload_exe().display().to_string();
    let script = format!("'{exe}' traverse --size 48M --stop & wait");
    let cmd: Vec<String> = vec!["sh".into(), "-c".into(), script];
    let opts = RunOptions {
        mem_limit: Some(LimitSpec::Bytes(32 << 20)),
        swap: vec!["file:128M".parse().unwrap()],
        page_cluster: Some(0),
        timeout: Some(Duration::from_secs(120)),
        ..Default::default()
    };
    match lab.run(&cmd, &opts, 1, &mut |_| {}) {
        Err(swaplab_lab::Error::Interrupted(sig)) => {
            drop(lab);
            std::process::exit(128 + sig)
        }
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("child: {e}");
            std::process::exit(1)
        }
    }
}

fn spawn_child(home: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &swaplab_testkit::test_path!(child_entry),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, "1")
        .env("SWAPLAB_HOME", home)
        .spawn()
        .unwrap()
}

/// The process state letter from /proc/PID/stat (None once it is gone).
fn state(pid: u32) -> Option<char> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    st.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The parent pid from /proc/PID/stat.
fn ppid(pid: u32) -> Option<u32> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    st.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The child's run, once its workload has filled its memory and stopped:
/// its journal, its memory group, the shell (swaplab's child) and the
/// workload (the shell's child).
struct Running {
    journal: JournalFile,
    group: PathBuf,
    shell: u32,
    workload: u32,
}

/// Waits until the child's journal records its cgroup and the workload in
/// it has stopped itself.
fn wait_for_workload(child_pid: u32) -> Running {
    let dir = swaplab_host::journal::state_dir().join("journal");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.starts_with(&format!("{child_pid}-")) || !name.ends_with(".json") {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(e.path()) else {
                    continue;
                };
                let Ok(j) = serde_json::from_str::<JournalFile>(&text) else {
                    continue;
                };
                // The memory group is created first, its PSI companion second.
                let group = groups_of(&j).into_iter().next();
                if let Some(g) = group {
                    let pids = std::fs::read_to_string(g.join("cgroup.procs")).unwrap_or_default();
                    let stopped = pids
                        .split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok())
                        .find(|&p| state(p) == Some('T'));
                    if let Some(w) = stopped {
                        let shell = ppid(w).expect("the stopped workload's parent");
                        assert_eq!(
                            ppid(shell),
                            Some(child_pid),
                            "the workload's parent is the shell swaplab started"
                        );
                        return Running {
                            journal: j,
                            group: g,
                            shell,
                            workload: w,
                        };
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the child's workload never filled its memory and stopped");
}

fn groups_of(j: &JournalFile) -> Vec<PathBuf> {
    j.actions
        .iter()
        .filter_map(|a| match a {
            Undo::RemoveCgroup { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

fn swapfile_of(j: &JournalFile) -> PathBuf {
    j.actions
        .iter()
        .find_map(|a| match a {
            Undo::DeleteSwapFile { path } => Some(path.clone()),
            _ => None,
        })
        .expect("the journal records the swap file")
}

fn swap_active(p: &Path) -> bool {
    swaplab_host::swap::read_swaps()
        .unwrap()
        .iter()
        .any(|a| a.filename == p)
}

fn alive(pid: u32) -> bool {
    !matches!(state(pid), None | Some('Z') | Some('X'))
}

/// The bytes in use on swap area `p` (/proc/swaps' Used column).
fn swap_used(p: &Path) -> u64 {
    swaplab_host::swap::read_swaps()
        .unwrap()
        .iter()
        .find(|a| a.filename == p)
        .map_or(0, |a| a.used_bytes)
}

/// Undoes every dead swaplab's journal if the test panics before its own
/// recovery step, so that a failure here does not leave the swap area,
/// the group and page-cluster 0 to the next test.
struct RecoverOnPanic;

impl Drop for RecoverOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = swaplab_host::journal::recover_all();
        }
    }
}

fn wait_gone(pid: u32) -> bool {
    (0..200).any(|_| {
        let g = !alive(pid);
        if !g {
            std::thread::sleep(Duration::from_millis(20));
        }
        g
    })
}

#[test]
fn sigkill_leaves_a_consistent_catalog_and_the_next_start_restores() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let home = tempfile::Builder::new()
        .prefix("swaplab-kill-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let _recover = RecoverOnPanic;
    let mut child = spawn_child(home.path());
    let Running {
        journal,
        group,
        shell,
        workload,
    } = wait_for_workload(child.id());
    let swapfile = swapfile_of(&journal);
    assert!(swap_active(&swapfile));
    // The 48M workload at 32M holds at least 16M in swap (less the group's
    // page cache): recovery has a swap area in use to turn off.
    let used = swap_used(&swapfile);
    assert!(used >= 12 << 20, "only {used} bytes in swap");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let st = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    // swaplab's own child dies with it (PR_SET_PDEATHSIG)...
    assert!(wait_gone(shell), "swaplab's child outlived it");
    // ...and what a dead swaplab leaves: its swap area, its group with the
    // child's child in it (stopped, holding its memory), its row `running`.
    assert!(
        swap_active(&swapfile),
        "swap area vanished without recovery?"
    );
    assert!(group.exists(), "the group vanished without recovery?");
    assert_eq!(
        state(workload),
        Some('T'),
        "the orphaned workload is not there, stopped"
    );
    // Next start, part 1: the catalog marks the run interrupted and is intact.
    let c = Catalog::open(home.path()).unwrap();
    assert_eq!(c.integrity_check().unwrap(), "ok");
    let (runs, _) = c.recovered_on_open().clone();
    assert_eq!(runs.len(), 1, "exactly the killed run is recovered");
    let r = c.run(runs[0]).unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (Status::Interrupted, Some(Outcome::Interrupted))
    );
    assert!(r.error.as_deref().unwrap_or("").contains("recovered"));
    // Part 2: the journal is undone (what Session::begin and `swaplab restore` run).
    let rep = swaplab_host::journal::recover_all().unwrap();
    let ours = rep
        .recovered
        .iter()
        .find(|j| j.pid == journal.pid)
        .expect("our journal was recovered");
    assert!(ours.errors.is_empty(), "{:?}", ours.errors);
    assert!(
        !swap_active(&swapfile) && !swapfile.exists(),
        "swap file left behind"
    );
    for g in groups_of(&journal) {
        assert!(!g.exists(), "cgroup {} left behind", g.display());
    }
    assert!(!group.exists());
    assert!(
        wait_gone(workload),
        "the orphaned workload survived recovery"
    );
    assert!(!journal_exists(journal.pid));
    assert_restored(&before, "sigkill");
    // Another open finds nothing more to recover.
    assert_eq!(
        Catalog::open(home.path())
            .unwrap()
            .recovered_on_open()
            .0
            .len(),
        0
    );
}

fn journal_exists(pid: u32) -> bool {
    let dir = swaplab_host::journal::state_dir().join("journal");
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{pid}-"))
            })
        })
        .unwrap_or(false)
}

#[test]
fn sigterm_kills_the_group_restores_and_records_interrupted() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let home = tempfile::Builder::new()
        .prefix("swaplab-term-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let _recover = RecoverOnPanic;
    let mut child = spawn_child(home.path());
    let Running {
        journal,
        group,
        workload,
        ..
    } = wait_for_workload(child.id());
    let swapfile = swapfile_of(&journal);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "{st}");
    // Restored by the child itself: nothing for the next start to do.
    assert!(!swap_active(&swapfile) && !swapfile.exists());
    assert!(!group.exists());
    assert!(wait_gone(workload));
    assert!(!journal_exists(journal.pid), "the child left its journal");
    let c = Catalog::open(home.path()).unwrap();
    assert_eq!(
        c.recovered_on_open().0.len(),
        0,
        "the child finalised its row itself"
    );
    let r = c.recent_runs(1).unwrap().pop().unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (Status::Interrupted, Some(Outcome::Interrupted))
    );
    assert!(
        r.get(MetricName::WallNs).unwrap() > 0.0,
        "the interrupted run keeps its measurements"
    );
    assert_restored(&before, "sigterm");
}
