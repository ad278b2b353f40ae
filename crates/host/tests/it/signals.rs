//! Signal handling: the guard sets a flag and forwards; a session restores
//! after SIGTERM; a second signal exits at once and recovery cleans up;
//! dropping the guard gives the signals their default action back.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Baseline;
use swaplab_host::signals::SignalGuard;

fn raw(p: &str) -> String {
    fs::read_to_string(p).unwrap().trim().to_string()
}

fn wait_ready(child: &mut std::process::Child) -> BufReader<std::process::ChildStdout> {
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY", "helper said {line:?}");
    r
}

#[test]
fn guard_sets_flag_and_forwards_in_process() {
    let _serial = Baseline::take(); // signals are process-wide: one test at a time
    let g = SignalGuard::install().unwrap();
    assert!(!g.triggered());
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    g.forward_to(Some(sleeper.id()));
    // SAFETY: raising a handled signal in our own process.
    unsafe { libc::raise(libc::SIGTERM) };
    assert!(g.triggered());
    assert_eq!(g.signal(), Some(libc::SIGTERM));
    let st = sleeper.wait().unwrap();
    assert_eq!(
        st.signal(),
        Some(libc::SIGTERM),
        "forwarded to the workload"
    );
    g.reset();
    assert!(!g.triggered() && g.signal().is_none());
    drop(g);
}

#[test]
fn sigterm_lets_the_session_restore() {
    require!(Root);
    let state = common::state_dir();
    let base = Baseline::take();
    let before = raw("/proc/sys/vm/swappiness");
    let mut c = Command::new(common::helper())
        .arg("signal-victim")
        .arg(state.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = wait_ready(&mut c);
    assert_eq!(raw("/proc/sys/vm/swappiness"), "23");
    // SAFETY: signalling our own child.
    // SAFETY: a plain kill of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let st = c.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert_eq!(st.code(), Some(3), "{st:?} {rest}");
    assert!(rest.contains("RESTORED after signal 15"), "{rest}");
    assert_eq!(raw("/proc/sys/vm/swappiness"), before);
    assert!(fs::read_dir(state.path().join("journal"))
        .unwrap()
        .next()
        .is_none());
    base.assert_restored();
}

#[test]
fn second_signal_exits_at_once_and_recovery_cleans_up() {
    require!(Root);
    let state = common::state_dir();
    let base = Baseline::take();
    let before = raw("/proc/sys/vm/swappiness");
    let mut c = Command::new(common::helper())
        .arg("signal-victim")
        .arg(state.path())
        .arg("3000")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _out = wait_ready(&mut c);
    // SAFETY: a plain kill of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a plain kill of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let st = c.wait().unwrap();
    assert_eq!(st.code(), Some(128 + libc::SIGINT), "{st:?}");
    assert_eq!(
        raw("/proc/sys/vm/swappiness"),
        "23",
        "no restore on the second signal"
    );
    let r = swaplab_host::journal::recover_in(state.path()).unwrap();
    assert!(r.is_clean() && r.recovered.len() == 1, "{r:?}");
    assert_eq!(raw("/proc/sys/vm/swappiness"), before);
    base.assert_restored();
}

#[test]
fn dropped_guard_restores_default_action() {
    let _serial = Baseline::take();
    let mut c = Command::new(common::helper())
        .arg("guard-dropped")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _out = wait_ready(&mut c);
    // SAFETY: a plain kill of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let st = c.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGTERM), "{st:?}");
}
