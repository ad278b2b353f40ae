//! Memory cgroups on this machine's real hierarchy (root needed).

use crate::common;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Baseline;
use swaplab_host::cgroup::{CgroupOptions, CgroupVersion, MemoryLimits};
use swaplab_host::journal::{Session, SessionOptions};
use swaplab_host::procfs::wait_with_rusage;

fn session(dir: &tempfile::TempDir) -> Session {
    Session::begin_with(SessionOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .expect("session")
}

fn skip(test: &str) -> bool {
    common::skip_unless(
        test,
        &[common::Facility::Root, common::Facility::MemoryCgroup],
    )
}

fn raw_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some(key))
            .then(|| it.next()?.parse().ok())
            .flatten()
    })
}

#[test]
fn child_joins_before_exec_and_is_oom_killed_at_the_limit() {
    if skip(&test_name!()) {
        return;
    }
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session(&dir);
    let limit = 32u64 << 20;
    let g = s
        .create_cgroup(&CgroupOptions {
            limits: MemoryLimits {
                memory: Some(limit),
                swap: Some(0),
            },
            ..Default::default()
        })
        .unwrap();
    assert!(g
        .memory
        .name()
        .starts_with(&format!("swaplab-{}-", std::process::id())));
    // Independent answer: the kernel's own limit file.
    let lim_file = match g.memory.version {
        CgroupVersion::V1 => "memory.limit_in_bytes",
        CgroupVersion::V2 => "memory.max",
    };
    assert_eq!(
        fs::read_to_string(g.memory.file(lim_file)).unwrap().trim(),
        limit.to_string()
    );
    if g.memory.version == CgroupVersion::V1 {
        assert_eq!(
            fs::read_to_string(g.memory.file("memory.memsw.limit_in_bytes"))
                .unwrap()
                .trim(),
            limit.to_string(),
            "swap 0 on v1 means memsw = memory"
        );
    }

    // A sleeping child: /proc/PID/cgroup (kernel's answer) names our groups.
    let mut cmd = Command::new("sleep");
    cmd.arg("60");
    g.attach_on_spawn(&mut cmd).unwrap();
    let mut sleeper = cmd.spawn().unwrap();
    let cg = fs::read_to_string(format!("/proc/{}/cgroup", sleeper.id())).unwrap();
    let rel = format!("/{}", g.memory.name());
    match g.memory.version {
        CgroupVersion::V1 => assert!(
            cg.lines()
                .any(|l| l.contains(":memory:") && l.ends_with(&rel)),
            "{cg}"
        ),
        CgroupVersion::V2 => assert!(
            cg.lines()
                .any(|l| l.starts_with("0::") && l.ends_with(&rel)),
            "{cg}"
        ),
    }
    if let Some(psi) = &g.psi {
        assert!(
            cg.lines().any(|l| l == format!("0::/{}", psi.name())),
            "companion missing: {cg}"
        );
        assert_eq!(psi.pids().unwrap(), vec![sleeper.id()]);
    }
    assert_eq!(g.memory.pids().unwrap(), vec![sleeper.id()]);
    assert_eq!(
        g.kill_all(Duration::from_secs(5)).unwrap(),
        1,
        "one distinct task"
    );
    let st = sleeper.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL), "{st:?}");

    // A child that wants 4x the limit with no swap allowed: OOM-killed.
    let mut cmd = Command::new(common::helper());
    cmd.args(["alloc", "128M"]);
    g.attach_on_spawn(&mut cmd).unwrap();
    let mut hog = cmd.spawn().unwrap();
    let (status, rusage) = wait_with_rusage(&mut hog).unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "expected an OOM kill, got {status:?}"
    );
    assert!(
        rusage.maxrss_bytes <= limit + (4 << 20),
        "rss {} above limit",
        rusage.maxrss_bytes
    );
    let stats = g.stats().unwrap();
    assert!(stats.oom_kill.unwrap_or(0) >= 1, "{stats:?}");
    // (On this kernel a v1 memsw-limited charge failure counts in neither
    // failcnt; compare with the files rather than assume.)
    let raw = |f: &str| {
        fs::read_to_string(g.memory.file(f))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    match g.memory.version {
        CgroupVersion::V1 => assert_eq!(
            stats.limit_hits,
            Some(raw("memory.failcnt").unwrap() + raw("memory.memsw.failcnt").unwrap_or(0))
        ),
        CgroupVersion::V2 => assert!(stats.limit_hits.unwrap() >= 1, "{stats:?}"),
    }
    let peak = stats.peak_bytes.unwrap();
    assert!(
        peak <= limit && peak >= limit / 2,
        "peak {peak} vs limit {limit}"
    );
    // Parsed counters equal the kernel's raw files.
    let raw_stat = fs::read_to_string(g.memory.file("memory.stat")).unwrap();
    assert_eq!(stats.pgmajfault, raw_field(&raw_stat, "pgmajfault"));
    assert!(
        stats.pgfault.unwrap() >= (limit / 2) / 4096,
        "faults {:?}",
        stats.pgfault
    );

    s.restore().unwrap();
    assert!(!g.memory.exists());
    assert!(g.psi.as_ref().is_none_or(|p| !p.exists()));
    base.assert_restored();
}

#[test]
fn stats_and_pressure_match_the_kernel_files() {
    if skip(&test_name!()) {
        return;
    }
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session(&dir);
    let g = s
        .create_cgroup(&CgroupOptions {
            limits: MemoryLimits {
                memory: Some(64 << 20),
                swap: None,
            },
            ..Default::default()
        })
        .unwrap();
    let mut cmd = Command::new(common::helper());
    cmd.args(["alloc", "16M"]);
    g.attach_on_spawn(&mut cmd).unwrap();
    let mut child = cmd.spawn().unwrap();
    let (status, _) = wait_with_rusage(&mut child).unwrap();
    assert!(status.success(), "{status:?}");
    let st = g.stats().unwrap();
    // 16 MiB were written: the group peaked above that and faulted each page.
    assert!(st.peak_bytes.unwrap() >= 16 << 20, "{st:?}");
    assert!(st.pgfault.unwrap() >= (16 << 20) / 4096, "{st:?}");
    let raw_stat = fs::read_to_string(g.memory.file("memory.stat")).unwrap();
    assert_eq!(st.pgfault, raw_field(&raw_stat, "pgfault"));
    let peak_file = match g.memory.version {
        CgroupVersion::V1 => "memory.max_usage_in_bytes",
        CgroupVersion::V2 => "memory.peak",
    };
    assert_eq!(
        st.peak_bytes.unwrap().to_string(),
        fs::read_to_string(g.memory.file(peak_file)).unwrap().trim()
    );
    assert_eq!(st.oom_kill, Some(0));

    match (g.memory.version, &g.psi) {
        (CgroupVersion::V1, None) => eprintln!("no cgroup2 mount: no PSI companion to check"),
        _ => {
            let p = g
                .pressure()
                .unwrap()
                .expect("PSI via the memory group or its companion");
            let src = if g.memory.file("memory.pressure").exists() {
                &g.memory
            } else {
                g.psi.as_ref().unwrap()
            };
            let raw = fs::read_to_string(src.file("memory.pressure")).unwrap();
            let total: u64 = raw
                .lines()
                .next()
                .unwrap()
                .rsplit("total=")
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            // The counter only grows; the idle group's total cannot have moved much.
            assert!(p.some.total_us <= total, "{p:?} vs {raw}");
            assert!(p.full.is_some());
        }
    }
    g.remove(Duration::from_secs(5)).unwrap();
    assert!(!g.memory.exists());
    s.restore().unwrap();
    base.assert_restored();
}

#[test]
fn kill_all_catches_forked_children() {
    if skip(&test_name!()) {
        return;
    }
    // The state dir outlives the baseline guard, which may need to
    // clean swap files inside it.
    let dir = common::state_dir();
    let base = Baseline::take();
    let mut s = session(&dir);
    let g = s
        .create_cgroup(&CgroupOptions {
            psi_companion: Some(false),
            ..Default::default()
        })
        .unwrap();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "sleep 100 & sleep 100 & echo started; wait"])
        .stdout(Stdio::piped());
    g.attach_on_spawn(&mut cmd).unwrap();
    let mut sh = cmd.spawn().unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(sh.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "started");
    let pids = g.memory.pids().unwrap();
    assert_eq!(pids.len(), 3, "sh and two sleeps: {pids:?}");
    let killed = g.memory.kill_all(Duration::from_secs(5)).unwrap();
    assert_eq!(killed, 3);
    assert!(g.memory.pids().unwrap().is_empty());
    assert_eq!(sh.wait().unwrap().signal(), Some(libc::SIGKILL));
    for p in pids {
        // The kernel's answer: the processes are gone (or zombies being reaped).
        let st = fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        assert!(
            st.is_empty() || st.contains(") Z "),
            "pid {p} still running: {st}"
        );
    }
    // Restore (not an explicit remove) must handle an empty group too.
    s.restore().unwrap();
    assert!(!g.memory.exists());
    base.assert_restored();
}
