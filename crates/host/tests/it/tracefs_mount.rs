//! swaplab mounts tracefs itself when it needs it and is root: journaled,
//! shared between sessions, unmounted by the last one, and unmounted by
//! the next session after a `kill -9`. Checked against /proc/self/mounts,
//! read raw.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Baseline, Facility};
use swaplab_host::journal::{Session, SessionOptions, Undo};

const CHILD_ENV: &str = "SWAPLAB_TRACEFS_MOUNT_CHILD";
const MOUNTPOINT: &str = "/sys/kernel/tracing";

fn mounted_here() -> bool {
    common::tracefs_mounts().iter().any(|m| m == MOUNTPOINT)
}

fn session(dir: &Path) -> Session {
    Session::begin_with(SessionOptions {
        state_dir: Some(dir.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

fn releases(s: &Session) -> usize {
    s.actions()
        .iter()
        .filter(|u| matches!(u, Undo::ReleaseTracefs { .. }))
        .count()
}

/// In the child role: begin a session, use tracefs, say READY, wait to be
/// killed.
fn child_role() -> bool {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return false;
    };
    let mut s = session(Path::new(&dir));
    let root = s.use_tracefs().unwrap();
    // libtest has printed "test NAME ... " without a newline: start one.
    let mut o = std::io::stdout().lock();
    std::io::Write::write_all(&mut o, format!("\nREADY {}\n", root.display()).as_bytes()).unwrap();
    std::io::Write::flush(&mut o).unwrap();
    drop(o);
    std::thread::sleep(std::time::Duration::from_secs(600));
    true
}

#[test]
fn sessions_mount_share_and_unmount_tracefs() {
    let test = &test_name!();
    if child_role() || common::skip_unless(test, &[Facility::Root, Facility::Tracefs]) {
        return;
    }
    let dir = common::state_dir();
    let base = Baseline::take();
    let was_mounted = !common::tracefs_mounts().is_empty();

    let mut a = session(dir.path());
    let root = a.use_tracefs().unwrap();
    assert!(root
        .join("events/exceptions/page_fault_user/format")
        .exists());
    assert!(mounted_here() || was_mounted, "{root:?}");
    if was_mounted {
        // Someone else's mount: used as it is, nothing journaled, left alone.
        eprintln!("{test}: tracefs was already mounted; checking it is left alone");
        assert_eq!(releases(&a), 0, "{:?}", a.actions());
        a.restore().unwrap();
        assert!(!common::tracefs_mounts().is_empty());
        base.assert_restored();
        return;
    }
    assert_eq!(releases(&a), 1, "{:?}", a.actions());
    // Idempotent within a session.
    a.use_tracefs().unwrap();
    assert_eq!(releases(&a), 1);
    // An instance lives in the mount and goes first on restore.
    let inst = a.add_tracefs_instance().unwrap();
    assert!(inst.starts_with(MOUNTPOINT) && inst.is_dir());

    // A second session shares the mount; the first to finish leaves it.
    let mut b = session(dir.path());
    assert_eq!(b.use_tracefs().unwrap(), root);
    assert_eq!(releases(&b), 1);
    a.restore().unwrap();
    assert!(!inst.exists(), "instance removed");
    assert!(mounted_here(), "b still uses tracefs: it must stay mounted");
    // The last one unmounts.
    b.restore().unwrap();
    assert!(!mounted_here(), "{:?}", common::tracefs_mounts());
    base.assert_restored();
}

#[test]
fn a_killed_sessions_mount_is_undone_by_the_next_session() {
    let test = &test_name!();
    if child_role() || common::skip_unless(test, &[Facility::Root, Facility::Tracefs]) {
        return;
    }
    let dir = common::state_dir();
    let base = Baseline::take();
    if !common::tracefs_mounts().is_empty() {
        // Nothing of ours to undo: the child would use the existing mount.
        swaplab_testkit::skip(
            test,
            Facility::MachineState,
            "tracefs is mounted by someone else here",
        );
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // libtest prints "running 1 test" first; read up to our line.
    let mut out = String::new();
    for l in BufReader::new(child.stdout.take().unwrap()).lines() {
        let l = l.unwrap();
        if l.contains("READY ") {
            out = l;
            break;
        }
    }
    assert!(out.contains("READY"), "child said {out:?}");
    assert!(mounted_here(), "the child mounted tracefs");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(mounted_here(), "a SIGKILLed session cannot unmount");

    // The next session (same state dir) recovers the dead journal.
    let s = session(dir.path());
    assert_eq!(s.recovered().recovered.len(), 1, "{:?}", s.recovered());
    assert!(
        !mounted_here(),
        "recovery unmounts: {:?}",
        common::tracefs_mounts()
    );
    drop(s);
    base.assert_restored();
}
