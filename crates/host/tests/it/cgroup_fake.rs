//! The cgroup v2 code paths against a fake cgroupfs tree written by hand
//! (this machine's cgroup2 has no memory controller), plus v1 parsing.

use std::fs;
use std::path::Path;
use std::time::Duration;

use swaplab_host::cgroup::{
    Cgroup, CgroupFs, CgroupOptions, CgroupVersion, MemoryGroup, MemoryLimits,
};
use swaplab_host::journal::{Session, SessionOptions, Undo};

fn fake_v2_root(dir: &Path, controllers: &str, subtree: &str) -> CgroupFs {
    fs::write(dir.join("cgroup.controllers"), controllers).unwrap();
    fs::write(dir.join("cgroup.subtree_control"), subtree).unwrap();
    fs::write(dir.join("cgroup.procs"), "1\n").unwrap();
    CgroupFs::new(dir, CgroupVersion::V2)
}

/// What the kernel would put into a fresh v2 memory group.
fn populate_v2_group(g: &Cgroup, with_swap: bool) {
    let w = |f: &str, c: &str| fs::write(g.file(f), c).unwrap();
    w("cgroup.procs", "");
    w("cgroup.kill", "");
    w("memory.max", "max\n");
    w("memory.current", "1310720\n");
    w("memory.peak", "5242880\n");
    if with_swap {
        w("memory.swap.max", "max\n");
        w("memory.swap.current", "65536\n");
        w("memory.swap.peak", "131072\n");
    }
    w(
        "memory.stat",
        "anon 1048576\nfile 262144\npgfault 1234\npgmajfault 56\nworkingset_refault_anon 7\n\
         zswpin 3\nzswpout 9\npswpin 11\npswpout 13\nthp_fault_alloc 0\n",
    );
    w(
        "memory.events",
        "low 0\nhigh 0\nmax 42\noom 2\noom_kill 1\noom_group_kill 0\n",
    );
    w(
        "memory.pressure",
        "some avg10=12.50 avg60=3.25 avg300=0.75 total=987654\nfull avg10=1.00 avg60=0.50 avg300=0.10 total=4321\n",
    );
}

#[test]
fn v2_create_limits_stats_pressure() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = fake_v2_root(dir.path(), "cpuset cpu io memory pids\n", "memory pids\n");
    assert!(fs_.children_have_memory());
    let name = fs_.unique_name();
    assert!(
        name.starts_with(&format!("swaplab-{}-", std::process::id())),
        "{name}"
    );
    let g = fs_.create(&name, true).unwrap();
    assert!(dir.path().join(&name).is_dir());
    populate_v2_group(&g, true);

    // Limits: the exact strings the kernel expects.
    g.set_limits(&MemoryLimits {
        memory: Some(256 << 20),
        swap: Some(0),
    })
    .unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.max")).unwrap(),
        "268435456"
    );
    assert_eq!(fs::read_to_string(g.file("memory.swap.max")).unwrap(), "0");
    assert_eq!(g.memory_limit(), Some(256 << 20));
    g.set_limits(&MemoryLimits {
        memory: None,
        swap: None,
    })
    .unwrap();
    assert_eq!(fs::read_to_string(g.file("memory.max")).unwrap(), "max");
    assert_eq!(
        fs::read_to_string(g.file("memory.swap.max")).unwrap(),
        "max"
    );
    assert_eq!(g.memory_limit(), None);

    // Stats: every field from the hand-written files.
    let s = g.stats().unwrap();
    assert_eq!(s.version, CgroupVersion::V2);
    assert_eq!(s.usage_bytes, Some(1310720));
    assert_eq!(s.peak_bytes, Some(5242880));
    assert_eq!(s.swap_bytes, Some(65536));
    assert_eq!(s.swap_peak_bytes, Some(131072));
    assert_eq!((s.pgfault, s.pgmajfault), (Some(1234), Some(56)));
    assert_eq!((s.pswpin, s.pswpout), (Some(11), Some(13)));
    assert_eq!((s.zswpin, s.zswpout), (Some(3), Some(9)));
    assert_eq!(s.workingset_refault_anon, Some(7));
    assert_eq!(
        (s.oom, s.oom_kill, s.limit_hits),
        (Some(2), Some(1), Some(42))
    );
    assert_eq!(s.stat.get("anon"), Some(&1048576));
    assert_eq!(s.events.get("oom_group_kill"), Some(&0));

    let p = g.pressure().unwrap().unwrap();
    assert!((p.some.avg10 - 12.5).abs() < 1e-6 && (p.some.avg300 - 0.75).abs() < 1e-6);
    assert_eq!(p.some.total_us, 987654);
    assert_eq!(p.full.unwrap().total_us, 4321);

    // Moving a pid writes it to cgroup.procs; pids() reads the list back.
    g.add_pid(4242).unwrap();
    assert_eq!(fs::read_to_string(g.file("cgroup.procs")).unwrap(), "4242");
    fs::write(g.file("cgroup.procs"), "10\n20\n").unwrap();
    assert_eq!(g.pids().unwrap(), vec![10, 20]);
    fs::write(g.file("cgroup.procs"), "").unwrap();

    // kill_all writes "1" to cgroup.kill when it exists.
    g.kill_all(Duration::from_millis(200)).unwrap();
    assert_eq!(fs::read_to_string(g.file("cgroup.kill")).unwrap(), "1");

    // Proactive reclaim.
    fs::write(g.file("memory.reclaim"), "").unwrap();
    g.reclaim(1 << 20).unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.reclaim")).unwrap(),
        "1048576"
    );

    // v2 has no per-group swappiness: a clear error.
    let e = g.set_swappiness(10).unwrap_err().to_string();
    assert!(e.contains("no per-group swappiness"), "{e}");
    assert_eq!(fs_.list_swaplab(), vec![g.clone()]);
}

#[test]
fn v2_without_swap_accounting_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = fake_v2_root(dir.path(), "memory\n", "memory\n");
    let g = fs_.create("swaplab-noswap", true).unwrap();
    populate_v2_group(&g, false);
    // A memory limit alone works.
    g.set_limits(&MemoryLimits {
        memory: Some(1 << 30),
        swap: None,
    })
    .unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.max")).unwrap(),
        "1073741824"
    );
    let e = g
        .set_limits(&MemoryLimits {
            memory: Some(1 << 30),
            swap: Some(0),
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("this kernel has no memory.swap.max"), "{e}");
    let s = g.stats().unwrap();
    assert_eq!(s.swap_bytes, None);
    // Not a memory group at all: stats explains.
    let bare = fs_.create("swaplab-bare", false).unwrap();
    let e = bare.stats().unwrap_err().to_string();
    assert!(e.contains("no memory.stat"), "{e}");
    let e = bare
        .set_limits(&MemoryLimits::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("memory.max"), "{e}");
    assert_eq!(bare.pressure().unwrap(), None);
}

#[test]
fn v2_memory_controller_must_reach_children() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = fake_v2_root(dir.path(), "cpu io memory\n", "cpu\n");
    let e = fs_.create("swaplab-x", true).unwrap_err().to_string();
    assert!(e.contains("echo +memory >"), "{e}");
    assert!(
        !dir.path().join("swaplab-x").exists(),
        "nothing may be created on failure"
    );
    let fs2 = fake_v2_root(dir.path(), "cpu io\n", "\n");
    let e = fs2.create("swaplab-x", true).unwrap_err().to_string();
    assert!(e.contains("has no memory controller"), "{e}");
    // A PSI-only group needs no controller.
    assert!(fs2.create("swaplab-psi", false).is_ok());
    for bad in ["", "a/b", ".."] {
        assert!(fs2.create(bad, false).is_err(), "{bad:?}");
    }
    let missing = CgroupFs::new(dir.path().join("nope"), CgroupVersion::V2);
    let e = missing.create("swaplab-y", false).unwrap_err().to_string();
    assert!(e.contains("no cgroup hierarchy"), "{e}");
}

#[test]
fn v1_limits_keep_memsw_above_limit_on_a_fake_tree() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = CgroupFs::new(dir.path(), CgroupVersion::V1);
    let g = fs_.create("swaplab-v1", true).unwrap();
    let w = |f: &str, c: &str| fs::write(g.file(f), c).unwrap();
    w("memory.limit_in_bytes", "9223372036854771712\n");
    w("memory.memsw.limit_in_bytes", "9223372036854771712\n");
    w("memory.usage_in_bytes", "4096\n");
    w("memory.max_usage_in_bytes", "8192\n");
    w("memory.failcnt", "5\n");
    w(
        "memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
    );
    w(
        "memory.stat",
        "cache 0\nrss 4096\nswap 12288\npgfault 77\npgmajfault 8\ntotal_swap 12288\n",
    );
    w("memory.swappiness", "60\n");
    assert_eq!(g.memory_limit(), None, "PAGE_COUNTER_MAX means unlimited");
    g.set_limits(&MemoryLimits {
        memory: Some(64 << 20),
        swap: Some(32 << 20),
    })
    .unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.limit_in_bytes")).unwrap(),
        (64u64 << 20).to_string()
    );
    assert_eq!(
        fs::read_to_string(g.file("memory.memsw.limit_in_bytes")).unwrap(),
        (96u64 << 20).to_string()
    );
    g.set_limits(&MemoryLimits {
        memory: Some(64 << 20),
        swap: None,
    })
    .unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.memsw.limit_in_bytes")).unwrap(),
        "-1"
    );
    let e = g
        .set_limits(&MemoryLimits {
            memory: None,
            swap: Some(0),
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("without a memory limit"), "{e}");
    g.set_swappiness(0).unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.swappiness")).unwrap(),
        "0"
    );
    let s = g.stats().unwrap();
    assert_eq!(
        (s.usage_bytes, s.peak_bytes, s.swap_bytes),
        (Some(4096), Some(8192), Some(12288))
    );
    assert_eq!((s.oom_kill, s.limit_hits, s.oom), (Some(3), Some(5), None));
    let e = g.reclaim(1).unwrap_err().to_string();
    assert!(e.contains("no memory.reclaim"), "{e}");
    // No memsw file (swap accounting off): memory limit works, swap limit explains.
    fs::remove_file(g.file("memory.memsw.limit_in_bytes")).unwrap();
    g.set_limits(&MemoryLimits {
        memory: Some(32 << 20),
        swap: None,
    })
    .unwrap();
    let e = g
        .set_limits(&MemoryLimits {
            memory: Some(32 << 20),
            swap: Some(0),
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("swapaccount=1"), "{e}");
}

#[test]
fn memory_group_prefers_own_pressure_then_companion() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = CgroupFs::new(dir.path().join("memory"), CgroupVersion::V1);
    fs::create_dir(&v1.root).unwrap();
    let v2dir = dir.path().join("unified");
    fs::create_dir(&v2dir).unwrap();
    let v2 = fake_v2_root(&v2dir, "", "");
    let mem = v1.create("swaplab-t", true).unwrap();
    let psi = v2.create("swaplab-t", false).unwrap();
    fs::write(
        psi.file("memory.pressure"),
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=55\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=44\n",
    )
    .unwrap();
    let g = MemoryGroup {
        memory: mem,
        psi: Some(psi),
    };
    assert_eq!(g.pressure().unwrap().unwrap().some.total_us, 55);
    for c in g.groups() {
        fs::write(c.file("cgroup.procs"), "").unwrap();
    }
    g.add_pid(77).unwrap();
    for c in g.groups() {
        assert_eq!(fs::read_to_string(c.file("cgroup.procs")).unwrap(), "77");
    }
}

#[test]
fn session_journals_fake_groups_and_removes_them() {
    // A session over a fake v2 tree: the journal records the group before it
    // exists, and restore removes it (rmdir of an empty fake directory).
    let state = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    let fs_ = fake_v2_root(tree.path(), "memory\n", "memory\n");
    let mut s = Session::begin_with(SessionOptions {
        state_dir: Some(state.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    let g = s
        .create_cgroup(&CgroupOptions {
            memory_fs: Some(fs_.clone()),
            psi_companion: Some(false),
            ..Default::default()
        })
        .unwrap();
    assert!(g.memory.exists() && g.psi.is_none());
    let journal: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.journal_path()).unwrap()).unwrap();
    assert_eq!(journal["actions"][0]["undo"], "remove_cgroup");
    assert_eq!(
        journal["actions"][0]["path"],
        g.memory.path.to_str().unwrap()
    );
    assert_eq!(
        s.actions(),
        &[Undo::RemoveCgroup {
            path: g.memory.path.clone(),
            version: CgroupVersion::V2
        }]
    );
    // Limits on a group without memory.max fail, but the group is still
    // journaled and removed by restore.
    let e = s
        .create_cgroup(&CgroupOptions {
            memory_fs: Some(fs_.clone()),
            psi_companion: Some(false),
            limits: MemoryLimits {
                memory: Some(1 << 20),
                swap: None,
            },
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("memory.max"), "{e}");
    assert_eq!(fs_.list_swaplab().len(), 2);
    s.restore().unwrap();
    assert!(
        fs_.list_swaplab().is_empty(),
        "groups left: {:?}",
        fs_.list_swaplab()
    );
    assert!(!s.journal_path().exists());
}

#[test]
fn memory_high_is_v2_only() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = fake_v2_root(dir.path(), "memory\n", "memory\n");
    let g = fs_.create("swaplab-high", true).unwrap();
    // Absent file (no memory controller in the group): a clear error.
    let e = g.set_high(Some(1 << 20)).unwrap_err().to_string();
    assert!(e.contains("memory.high"), "{e}");
    fs::write(g.file("memory.high"), "max\n").unwrap();
    g.set_high(Some(48 << 20)).unwrap();
    assert_eq!(
        fs::read_to_string(g.file("memory.high")).unwrap(),
        "50331648"
    );
    g.set_high(None).unwrap();
    assert_eq!(fs::read_to_string(g.file("memory.high")).unwrap(), "max");
    let v1 = CgroupFs::new(dir.path(), CgroupVersion::V1)
        .create("swaplab-high-v1", true)
        .unwrap();
    let e = v1.set_high(Some(1 << 20)).unwrap_err().to_string();
    assert!(e.contains("cgroup v1 has no memory.high"), "{e}");
    assert!(e.contains("--mem-limit"), "{e}");
}

#[test]
fn controller_undo_is_limited_to_memory_under_sys_fs_cgroup() {
    use swaplab_host::cgroup::disable_subtree_controller;
    // A tampered journal cannot make swaplab write elsewhere as root.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("cgroup.subtree_control"), "memory\n").unwrap();
    let e = disable_subtree_controller(dir.path(), "memory")
        .unwrap_err()
        .to_string();
    assert!(e.contains("refusing"), "{e}");
    assert_eq!(
        fs::read_to_string(dir.path().join("cgroup.subtree_control")).unwrap(),
        "memory\n"
    );
    for (root, ctl) in [
        ("/sys/fs/cgroup", "cpu"),
        ("/sys/fs/cgroup/../../etc", "memory"),
    ] {
        let e = disable_subtree_controller(Path::new(root), ctl)
            .unwrap_err()
            .to_string();
        assert!(e.contains("refusing"), "{root} {ctl}: {e}");
    }
    // The undo as journaled: JSON with its path and controller.
    let u = Undo::DisableController {
        path: "/sys/fs/cgroup".into(),
        controller: "memory".into(),
    };
    let j = serde_json::to_string(&u).unwrap();
    assert!(j.contains("\"undo\":\"disable_controller\""), "{j}");
    assert_eq!(serde_json::from_str::<Undo>(&j).unwrap(), u);
    assert_eq!(
        u.to_string(),
        "write -memory to /sys/fs/cgroup/cgroup.subtree_control"
    );
}
