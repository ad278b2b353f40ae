//! Sessions on the real machine: knobs, swap files, zram, zswap, restore on
//! drop and panic, recovery of dead journals, the global lock.

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Baseline;
use swaplab_host::cgroup::{CgroupFs, CgroupOptions, CgroupVersion};
use swaplab_host::journal::{JournalFile, Session, SessionOptions, Undo};
use swaplab_host::swap::SwapSpec;
use swaplab_host::sysctl::{Format, Knob};
use swaplab_host::Error;

fn session_in(dir: &Path) -> Session {
    Session::begin_with(SessionOptions {
        state_dir: Some(dir.to_path_buf()),
        ..Default::default()
    })
    .expect("session")
}

fn raw(p: &str) -> String {
    fs::read_to_string(p).unwrap().trim().to_string()
}

fn proc_swaps_line(name: &Path) -> Option<Vec<String>> {
    fs::read_to_string("/proc/swaps")
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|f| Path::new(&f[0]) == name)
}

fn journal_of(s: &Session) -> JournalFile {
    serde_json::from_str(&fs::read_to_string(s.journal_path()).unwrap()).unwrap()
}

#[test]
fn knobs_are_journaled_then_restored() {
    require!(Root);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session_in(dir.path());
    let before = raw("/proc/sys/vm/swappiness");
    let other = if before == "33" { "34" } else { "33" };
    assert_eq!(s.set_sysctl("vm.swappiness", other).unwrap(), before);
    assert_eq!(raw("/proc/sys/vm/swappiness"), other);
    // Recorded before the change, with the old value.
    let j = journal_of(&s);
    assert_eq!(j.pid, std::process::id());
    assert!(j.owner_alive());
    assert_eq!(
        j.actions,
        vec![Undo::RestoreKnob {
            name: "vm.swappiness".into(),
            path: "/proc/sys/vm/swappiness".into(),
            format: Format::Plain,
            value: before.clone()
        }]
    );
    // Setting the same value again records nothing.
    s.set_sysctl("vm.swappiness", other).unwrap();
    assert_eq!(s.actions().len(), 1);
    // Set it twice: restore must still end at the original.
    s.set_sysctl("vm.swappiness", "1").unwrap();
    s.set_knob(&Knob::page_cluster(), "0").unwrap();
    assert_eq!(raw("/proc/sys/vm/page-cluster"), "0");
    if Knob::thp_enabled().exists() {
        let cur = Knob::thp_enabled().read().unwrap();
        let want = if cur == "never" { "madvise" } else { "never" };
        s.set_knob(&Knob::thp_enabled(), want).unwrap();
        assert!(raw("/sys/kernel/mm/transparent_hugepage/enabled").contains(&format!("[{want}]")));
        let e = s
            .set_knob(&Knob::thp_enabled(), "sometimes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("offers"), "{e}");
    }
    // Bad values are refused by the kernel with the value named.
    let e = s
        .set_sysctl("vm.swappiness", "999")
        .unwrap_err()
        .to_string();
    assert!(e.contains("999"), "{e}");
    // Knobs outside the managed set are refused.
    let e = s
        .set_knob(&Knob::at("x", "/etc/hostname", Format::Plain), "y")
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not manage"), "{e}");
    let journal = s.journal_path().to_path_buf();
    s.restore().unwrap();
    assert!(!journal.exists(), "journal deleted after a clean restore");
    assert_eq!(raw("/proc/sys/vm/swappiness"), before);
    base.assert_restored();
}

#[test]
fn drop_restores_after_a_panic() {
    require!(Root);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let before = raw("/proc/sys/vm/swappiness");
    let d = dir.path().to_path_buf();
    let r = std::panic::catch_unwind(move || {
        let mut s = session_in(&d);
        s.set_sysctl("vm.swappiness", "44").unwrap();
        s.set_sysctl("vm.page-cluster", "1").unwrap();
        assert_eq!(raw("/proc/sys/vm/swappiness"), "44");
        panic!("boom");
    });
    assert!(r.is_err());
    assert_eq!(raw("/proc/sys/vm/swappiness"), before);
    let left: Vec<_> = fs::read_dir(dir.path().join("journal")).unwrap().collect();
    assert!(left.is_empty(), "journal left: {left:?}");
    base.assert_restored();
}

#[test]
fn swap_file_lifecycle() {
    require!(Root);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session_in(dir.path());
    let size = 16u64 << 20;
    let a = s
        .add_swap(&SwapSpec::File {
            size,
            path: Some(dir.path().to_path_buf()),
            prio: Some(5),
        })
        .unwrap();
    let path = a.area.clone().unwrap();
    assert!(
        path.starts_with(dir.path()) && path.to_string_lossy().ends_with(".swap"),
        "{path:?}"
    );
    // The kernel's view: /proc/swaps lists it with our priority and the size
    // minus the header page, in KiB.
    let line = proc_swaps_line(&path).expect("in /proc/swaps");
    assert_eq!(line[1], "file");
    assert_eq!(line[2].parse::<u64>().unwrap(), size / 1024 - 4);
    assert_eq!(line[4], "5");
    let md = fs::metadata(&path).unwrap();
    assert_eq!(md.mode() & 0o777, 0o600);
    assert!(md.blocks() * 512 >= size, "swap file has holes");
    assert_eq!(
        s.actions(),
        &[
            Undo::DeleteSwapFile { path: path.clone() },
            Undo::Swapoff { path: path.clone() }
        ]
    );
    // A second area in the default place (the state directory).
    let b = s.add_swap(&"file:8M".parse().unwrap()).unwrap();
    let p2 = b.area.clone().unwrap();
    assert!(p2.starts_with(dir.path().join("swap")), "{p2:?}");
    assert!(proc_swaps_line(&p2).is_some());
    // An existing file is never reused.
    let e = s
        .add_swap(&SwapSpec::File {
            size,
            path: Some(path.clone()),
            prio: None,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(s.actions().len(), 4, "the refused request recorded nothing");
    s.restore().unwrap();
    assert!(proc_swaps_line(&path).is_none() && proc_swaps_line(&p2).is_none());
    assert!(!path.exists() && !p2.exists(), "swap files deleted");
    base.assert_restored();
}

#[test]
fn zram_lifecycle() {
    require!(Root, Zram);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session_in(dir.path());
    let free = swaplab_host::swap::find_free_zram();
    let algos = free
        .map(|id| Knob::zram_comp_algorithm(id).choices().unwrap())
        .unwrap_or_default();
    let algo = ["lz4", "lzo", "lzo-rle"]
        .into_iter()
        .find(|a| algos.iter().any(|x| x == a))
        .map(str::to_string);
    let size = 32u64 << 20;
    let a = s
        .add_swap(&SwapSpec::Zram {
            size,
            algo: algo.clone(),
            prio: Some(7),
        })
        .unwrap();
    let id = a.zram_id.unwrap();
    let dev = a.area.clone().unwrap();
    assert_eq!(dev, PathBuf::from(format!("/dev/zram{id}")));
    let line = proc_swaps_line(&dev).expect("zram in /proc/swaps");
    assert_eq!(line[1], "partition");
    assert_eq!(line[4], "7");
    assert_eq!(
        raw(&format!("/sys/block/zram{id}/disksize")),
        size.to_string()
    );
    if let Some(al) = &algo {
        assert!(raw(&format!("/sys/block/zram{id}/comp_algorithm")).contains(&format!("[{al}]")));
    }
    // Undo order: swapoff, then reset, then the algorithm, then hot-remove.
    let kinds: Vec<String> = s.actions().iter().rev().map(|u| u.to_string()).collect();
    assert!(kinds[0].starts_with("swapoff /dev/zram"), "{kinds:?}");
    assert!(kinds[1].starts_with("reset zram"), "{kinds:?}");
    // With that device busy, a second zram area needs a new device: hot_add
    // (when offered), undone by hot_remove.
    let mut hot = None;
    if Path::new("/sys/class/zram-control/hot_add").exists()
        && swaplab_host::swap::find_free_zram().is_none()
    {
        let b = s.add_swap(&"zram:16M".parse().unwrap()).unwrap();
        let id2 = b.zram_id.unwrap();
        assert_ne!(id2, id);
        assert!(
            s.actions().contains(&Undo::HotRemoveZram { id: id2 }),
            "{:?}",
            s.actions()
        );
        assert!(proc_swaps_line(b.area.as_ref().unwrap()).is_some());
        eprintln!("hot-added zram{id2} for a second area");
        hot = Some(id2);
    }
    s.restore().unwrap();
    if let Some(id2) = hot {
        assert!(
            !Path::new(&format!("/sys/block/zram{id2}")).exists(),
            "hot-added zram{id2} removed"
        );
    }
    assert!(proc_swaps_line(&dev).is_none());
    if Path::new(&format!("/sys/block/zram{id}")).exists() {
        assert_eq!(raw(&format!("/sys/block/zram{id}/disksize")), "0");
    }
    base.assert_restored();
}

#[test]
fn zswap_needs_a_backing_area_and_is_restored() {
    require!(Root, Zswap);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session_in(dir.path());
    if base.state.swaps.is_empty() {
        let e = s
            .add_swap(&SwapSpec::Zswap { compressor: None })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("zswap needs a backing swap area") && e.contains("file:"),
            "{e}"
        );
        assert!(
            s.actions().is_empty(),
            "nothing recorded for a refused request"
        );
        assert_eq!(
            raw("/sys/module/zswap/parameters/enabled"),
            base.state.knobs[4].1
        );
    } else {
        eprintln!("swap is active at boot: cannot check the no-backing error here");
    }
    s.add_swap(&"file:16M".parse().unwrap()).unwrap();
    let cur = raw("/sys/module/zswap/parameters/compressor");
    let offered = swaplab_host::swap::crypto_compressors();
    let want = offered
        .iter()
        .find(|c| **c != cur && (*c == "lzo-rle" || *c == "deflate" || *c == "lzo"))
        .cloned();
    s.add_swap(&SwapSpec::Zswap {
        compressor: want.clone(),
    })
    .unwrap();
    assert_eq!(raw("/sys/module/zswap/parameters/enabled"), "Y");
    if let Some(w) = &want {
        assert_eq!(&raw("/sys/module/zswap/parameters/compressor"), w);
    }
    let e = s
        .add_swap(&SwapSpec::Zswap {
            compressor: Some("nosuchcomp".into()),
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("zswap cannot use compressor \"nosuchcomp\""),
        "{e}"
    );
    s.restore().unwrap();
    base.assert_restored();
}

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn dead_journals_are_recovered_by_the_next_session() {
    require!(Root);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let jdir = dir.path().join("journal");
    fs::create_dir_all(&jdir).unwrap();
    let before = raw("/proc/sys/vm/swappiness");
    // A "killed" session changed swappiness and created a cgroup.
    fs::write("/proc/sys/vm/swappiness", "71").unwrap();
    let mounts = swaplab_host::cgroup::CgroupMounts::detect().unwrap();
    let cg = mounts.memory_fs().map(|f| {
        let g = f
            .create(&format!("swaplab-{}-deadtest", dead_pid()), true)
            .unwrap();
        (g, f.version)
    });
    let mut actions = vec![Undo::RestoreKnob {
        name: "vm.swappiness".into(),
        path: "/proc/sys/vm/swappiness".into(),
        format: Format::Plain,
        value: before.clone(),
    }];
    if let Some((g, v)) = &cg {
        actions.push(Undo::RemoveCgroup {
            path: g.path.clone(),
            version: *v,
        });
    }
    let dead = JournalFile {
        version: 1,
        pid: dead_pid(),
        start_time: 1,
        boot_id: swaplab_host::util::boot_id(),
        cmdline: vec!["swaplab".into(), "run".into()],
        actions,
    };
    fs::write(jdir.join("999-0.json"), serde_json::to_vec(&dead).unwrap()).unwrap();
    // Our own pid with a wrong start time: pid reuse, so also dead.
    let reused = JournalFile {
        pid: std::process::id(),
        start_time: 1,
        actions: vec![],
        ..dead.clone()
    };
    fs::write(
        jdir.join("998-0.json"),
        serde_json::to_vec(&reused).unwrap(),
    )
    .unwrap();
    // A live owner (us, right start time): left alone.
    let live = JournalFile {
        pid: std::process::id(),
        start_time: swaplab_host::util::process_start_time(std::process::id()).unwrap(),
        actions: vec![],
        ..dead.clone()
    };
    fs::write(jdir.join("997-0.json"), serde_json::to_vec(&live).unwrap()).unwrap();
    // A journal from another boot: dead whatever the pid says.
    let other_boot = JournalFile {
        boot_id: "not-this-boot".into(),
        ..live.clone()
    };
    fs::write(
        jdir.join("996-0.json"),
        serde_json::to_vec(&other_boot).unwrap(),
    )
    .unwrap();
    // Garbage.
    fs::write(jdir.join("995-0.json"), "{not json").unwrap();
    // A tampered journal: refused, kept for a person to look at.
    let tampered = JournalFile {
        actions: vec![Undo::RestoreKnob {
            name: "evil".into(),
            path: dir.path().join("victim"),
            format: Format::Plain,
            value: "x".into(),
        }],
        ..dead.clone()
    };
    fs::write(dir.path().join("victim"), "keep").unwrap();
    fs::write(
        jdir.join("994-0.json"),
        serde_json::to_vec(&tampered).unwrap(),
    )
    .unwrap();

    let s = session_in(dir.path());
    let r = s.recovered().clone();
    assert_eq!(raw("/proc/sys/vm/swappiness"), before, "{r:?}");
    if let Some((g, _)) = &cg {
        assert!(!g.path.exists(), "dead session's cgroup removed");
    }
    let names: Vec<String> = r
        .recovered
        .iter()
        .map(|x| x.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["994-0.json", "996-0.json", "998-0.json", "999-0.json"],
        "{r:?}"
    );
    assert_eq!(r.live, vec![jdir.join("997-0.json")]);
    assert_eq!(r.corrupt.len(), 1);
    assert!(jdir.join("995-0.json.corrupt").exists());
    assert!(!r.is_clean());
    let evil = &r.recovered[0];
    assert!(
        evil.errors[0].contains("refusing to restore evil"),
        "{evil:?}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("victim")).unwrap(),
        "keep"
    );
    assert!(jdir.join("994-0.json").exists(), "failed journal kept");
    assert!(!jdir.join("999-0.json").exists() && !jdir.join("998-0.json").exists());
    assert!(jdir.join("997-0.json").exists());
    drop(s);
    base.assert_restored();
}

#[test]
fn failed_undo_stays_in_the_journal_until_it_succeeds() {
    let state = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    fs::write(tree.path().join("cgroup.controllers"), "memory").unwrap();
    fs::write(tree.path().join("cgroup.subtree_control"), "memory").unwrap();
    let fs_ = CgroupFs::new(tree.path(), CgroupVersion::V2);
    let mut s = session_in(state.path());
    let g = s
        .create_cgroup(&CgroupOptions {
            memory_fs: Some(fs_),
            psi_companion: Some(false),
            ..Default::default()
        })
        .unwrap();
    // A fake group with a plain file inside cannot be rmdir'ed.
    fs::write(g.memory.file("blocker"), "").unwrap();
    let e = s.restore().unwrap_err();
    assert!(
        matches!(e, Error::Restore(ref v) if v.len() == 1 && v[0].contains(&g.memory.path.display().to_string())),
        "{e}"
    );
    let left = journal_of(&s);
    assert_eq!(left.actions.len(), 1, "the failed undo is kept");
    fs::remove_file(g.memory.file("blocker")).unwrap();
    s.restore().unwrap();
    assert!(!g.memory.exists() && !s.journal_path().exists());
}

#[test]
fn global_changes_are_serialised_between_sessions() {
    require!(Root);
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut a = session_in(dir.path());
    let mut b = Session::begin_with(SessionOptions {
        state_dir: Some(dir.path().to_path_buf()),
        lock_wait: Duration::from_millis(300),
        ..Default::default()
    })
    .unwrap();
    a.set_sysctl("vm.swappiness", "12").unwrap();
    let e = b.set_sysctl("vm.swappiness", "13").unwrap_err().to_string();
    assert!(
        e.contains("did not finish") && e.contains("another swaplab session"),
        "{e}"
    );
    assert_eq!(raw("/proc/sys/vm/swappiness"), "12");
    // Cgroup-only work is not blocked.
    if swaplab_host::cgroup::CgroupMounts::detect()
        .unwrap()
        .memory_fs()
        .is_some()
    {
        let g = b.create_cgroup(&CgroupOptions::default()).unwrap();
        assert!(g.memory.exists());
    }
    a.restore().unwrap();
    b.set_sysctl("vm.swappiness", "13").unwrap();
    assert_eq!(raw("/proc/sys/vm/swappiness"), "13");
    b.restore().unwrap();
    base.assert_restored();
}
