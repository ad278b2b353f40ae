//! `kill -9` in the middle of a session: a helper process begins a session,
//! changes vm.swappiness, creates a cgroup holding a child, adds a swap file,
//! and is SIGKILLed. Recovery (`swaplab restore`) must put everything back.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::Baseline;

fn raw(p: &str) -> String {
    fs::read_to_string(p).unwrap().trim().to_string()
}

fn swaps_in(dir: &Path) -> Vec<String> {
    fs::read_to_string("/proc/swaps")
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|f| Path::new(f).starts_with(dir))
        .collect()
}

#[test]
fn sigkilled_session_is_undone_by_recover_all() {
    require!(Root, MemoryCgroup);
    // Temp dirs outlive the baseline guard, which may need to clean inside them.
    let state = common::state_dir();
    let swapdir = tempfile::tempdir_in("/var/tmp").unwrap();
    let base = Baseline::take();
    let before = raw("/proc/sys/vm/swappiness");
    assert_ne!(before, "17", "the helper sets 17; pick another baseline");

    let mut victim = Command::new(common::helper())
        .arg("victim")
        .arg(state.path())
        .arg(swapdir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(victim.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.first(), Some(&"READY"), "helper said {line:?}");
    let sleeper: u32 = f[1].parse().unwrap();
    let group = PathBuf::from(f[2]);

    // The helper's changes are in place.
    assert_eq!(raw("/proc/sys/vm/swappiness"), "17");
    let areas = swaps_in(swapdir.path());
    assert_eq!(areas.len(), 1, "{areas:?}");
    assert!(group.is_dir());
    assert_eq!(
        raw(&group.join("cgroup.procs").to_string_lossy()),
        sleeper.to_string()
    );

    victim.kill().unwrap(); // SIGKILL: no destructor, no restore
    assert_eq!(victim.wait().unwrap().signal(), Some(libc::SIGKILL));

    // Nothing was restored; the journal names the dead process.
    assert_eq!(raw("/proc/sys/vm/swappiness"), "17");
    let journals: Vec<PathBuf> = fs::read_dir(state.path().join("journal"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(journals.len(), 1, "{journals:?}");
    let jf: swaplab_host::journal::JournalFile =
        serde_json::from_str(&fs::read_to_string(&journals[0]).unwrap()).unwrap();
    assert_eq!(jf.pid, victim.id());
    assert!(!jf.owner_alive());

    // `swaplab restore`: recover_all() reads SWAPLAB_STATE_DIR.
    std::env::set_var(swaplab_host::journal::STATE_DIR_ENV, state.path());
    let report = swaplab_host::journal::recover_all().unwrap();
    std::env::remove_var(swaplab_host::journal::STATE_DIR_ENV);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.recovered.len(), 1);
    assert_eq!(report.recovered[0].pid, victim.id());

    // The kernel's view: all back.
    assert_eq!(raw("/proc/sys/vm/swappiness"), before);
    assert!(swaps_in(swapdir.path()).is_empty());
    assert!(!Path::new(&areas[0]).exists(), "swap file deleted");
    assert!(!group.exists(), "cgroup removed");
    let st = fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
    assert!(
        st.is_empty() || st.contains(") Z "),
        "the group's task survived: {st}"
    );
    assert!(fs::read_dir(state.path().join("journal"))
        .unwrap()
        .next()
        .is_none());
    base.assert_restored();
}
