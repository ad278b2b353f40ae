//! The doctor's findings against independent reads of the kernel's files.

use std::fs;
use std::path::Path;

use swaplab_host::doctor::{perf_count_page_faults, Doctor, DoctorReport, Need, Probe, Status};

fn cap_eff() -> u64 {
    let s = fs::read_to_string("/proc/self/status").unwrap();
    let v = s.lines().find(|l| l.starts_with("CapEff:")).unwrap();
    u64::from_str_radix(v[7..].trim(), 16).unwrap()
}

fn status(r: &DoctorReport, name: &str) -> Status {
    r.get(name)
        .unwrap_or_else(|| panic!("no probe {name}"))
        .status
}

#[test]
fn report_matches_the_machine() {
    // Other tests of this binary set vm.swappiness and add swap areas
    // under the system lock: the probe and the reads below hold it too.
    let _system = crate::common::system_lock();
    let r = Doctor::probe();
    eprintln!("{r}");
    let mut names: Vec<&str> = r.probes.iter().map(|p| p.name.as_str()).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "probe names must be unique");
    // Every need has a probe.
    for need in [
        Need::Root,
        Need::MemoryCgroup,
        Need::SwapLimit,
        Need::MemoryPeak,
        Need::CgroupReclaim,
        Need::SystemPsi,
        Need::CgroupPsi,
        Need::SwapActive,
        Need::Zram,
        Need::Zswap,
        Need::FaultTracepoint,
        Need::PerfPageFaults,
        Need::PerfSampleAddr,
        Need::Pagemap,
        Need::Kpageflags,
        Need::ProcessMadvise,
        Need::Userfaultfd,
        Need::Mglru,
    ] {
        assert!(r.get(need.probe_name()).is_some(), "{need:?}");
    }
    // JSON round trip.
    let json = serde_json::to_string(&r).unwrap();
    let back: DoctorReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    assert!(json.contains("\"status\":\"ok\""));

    // root: euid 0 and CAP_SYS_ADMIN (bit 21) from the raw status file.
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0 && cap_eff() & (1 << 21) != 0;
    assert_eq!(status(&r, "root") == Status::Ok, root);

    // memory cgroup: the v1 mount or a v2 root offering memory.
    let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
    let v2 = [
        "/sys/fs/cgroup/cgroup.controllers",
        "/sys/fs/cgroup/unified/cgroup.controllers",
    ]
    .iter()
    .any(|f| {
        fs::read_to_string(f)
            .map(|s| s.split_whitespace().any(|c| c == "memory"))
            .unwrap_or(false)
    });
    assert_eq!(status(&r, "cgroup.memory") != Status::Missing, v1 || v2);
    if v2 && !v1 {
        // A bare cgroup2 root (a guest kernel): swaplab enables `memory` in
        // its subtree_control for a run, so that is partial, not missing.
        let sub = fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control").unwrap();
        let on = sub.split_whitespace().any(|c| c == "memory");
        let want = if on { Status::Ok } else { Status::Partial };
        assert_eq!(status(&r, "cgroup.memory"), want);
    }
    if v1 && !v2 {
        assert!(r
            .get("cgroup.memory")
            .unwrap()
            .detail
            .starts_with("v1 at /sys/fs/cgroup/memory"));
        assert_eq!(
            status(&r, "cgroup.swap_limit") == Status::Ok,
            Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists()
        );
        assert_eq!(status(&r, "cgroup.reclaim"), Status::Missing);
        assert_eq!(status(&r, "cgroup.peak"), Status::Ok);
    }
    // swap areas: /proc/swaps beyond its header.
    let swaps = fs::read_to_string("/proc/swaps").unwrap().lines().count() > 1;
    assert_eq!(status(&r, "swap.areas") == Status::Ok, swaps);
    // zram: the algorithms the device lists.
    if let Ok(algos) = fs::read_to_string("/sys/block/zram0/comp_algorithm") {
        let want: Vec<String> = algos
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect();
        let d = &r.get("zram").unwrap().detail;
        assert!(
            d.ends_with(&format!("algorithms: {}", want.join(" "))),
            "{d}"
        );
    }
    // zswap: its compressor appears.
    if let Ok(c) = fs::read_to_string("/sys/module/zswap/parameters/compressor") {
        assert!(r
            .get("zswap")
            .unwrap()
            .detail
            .contains(&format!("compressor {}", c.trim())));
    }
    // tracefs: mounted → each tracepoint present iff its format file
    // exists; not mounted → usable with a restriction (swaplab mounts it)
    // iff we are root and the kernel lists tracefs; missing otherwise.
    let mounted = [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ]
    .iter()
    .any(|p| Path::new(p).is_dir());
    let listed = fs::read_to_string("/proc/filesystems")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().last() == Some("tracefs"));
    // SAFETY: geteuid cannot fail.
    let euid0 = unsafe { libc::geteuid() } == 0;
    if !mounted {
        let want = if euid0 && listed && Path::new("/sys/kernel/tracing").is_dir() {
            Status::Partial
        } else {
            Status::Missing
        };
        assert_eq!(status(&r, "tracefs"), want);
        assert_eq!(status(&r, "trace.page_fault_user"), want);
    }
    for (name, ev) in [
        ("trace.page_fault_user", "exceptions/page_fault_user"),
        (
            "trace.mm_vmscan_write_folio",
            "vmscan/mm_vmscan_write_folio",
        ),
        ("trace.rss_stat", "kmem/rss_stat"),
    ] {
        if !mounted {
            continue;
        }
        let present = Path::new("/sys/kernel/tracing/events")
            .join(ev)
            .join("format")
            .exists()
            || Path::new("/sys/kernel/debug/tracing/events")
                .join(ev)
                .join("format")
                .exists();
        assert_eq!(status(&r, name) == Status::Ok, present, "{name}");
    }
    // THP: the bracketed word.
    if let Ok(t) = fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled") {
        let w = t.split_whitespace().find(|w| w.starts_with('[')).unwrap();
        assert_eq!(
            r.get("thp").unwrap().detail,
            w.trim_matches(|c| c == '[' || c == ']')
        );
    }
    assert_eq!(
        r.get("vm.swappiness").unwrap().detail,
        fs::read_to_string("/proc/sys/vm/swappiness")
            .unwrap()
            .trim()
    );
    if root {
        assert_eq!(status(&r, "pagemap"), Status::Ok);
        assert_eq!(status(&r, "kpageflags"), Status::Ok);
    }
    let text = r.to_string();
    for p in &r.probes {
        assert!(text.contains(&p.name));
    }
}

/// perf_event_open exists here (an independent file check): counting must
/// work, count the pages touched, and the doctor must say so.
#[test]
fn perf_counts_exactly_the_pages_touched() {
    require!(Perf);
    let n = perf_count_page_faults(256).expect("perf_event_open of PAGE_FAULTS");
    assert!(
        (256..=300).contains(&n),
        "touched 256 fresh pages, perf counted {n}"
    );
    assert_eq!(status(&Doctor::probe(), "perf.page_faults"), Status::Ok);
}

#[test]
fn require_fails_with_the_doctors_words() {
    let fake = DoctorReport {
        kernel_release: "x".into(),
        probes: vec![
            Probe {
                name: "cgroup.reclaim".into(),
                status: Status::Missing,
                detail: "cgroup v1 has no memory.reclaim".into(),
                disables: vec!["proactive reclaim".into()],
                fix: "needs cgroup v2 with the memory controller".into(),
            },
            Probe {
                name: "pagemap".into(),
                status: Status::Partial,
                detail: "PFNs hidden".into(),
                disables: vec![],
                fix: String::new(),
            },
        ],
    };
    assert!(fake.check(&[Need::Pagemap]).is_ok(), "partial is usable");
    let e = fake
        .check(&[Need::CgroupReclaim, Need::Pagemap, Need::Zram])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cgroup.reclaim: cgroup v1 has no memory.reclaim — needs cgroup v2"),
        "{e}"
    );
    assert!(e.contains("zram: not probed"), "{e}");
    assert!(!e.contains("pagemap"), "{e}");

    // On this machine.
    let r = Doctor::probe();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(
        Doctor::require(&[Need::Root]).is_ok(),
        root && cap_eff() & (1 << 21) != 0
    );
    let reclaim_ok = r.get("cgroup.reclaim").unwrap().status != Status::Missing;
    match Doctor::require(&[Need::CgroupReclaim]) {
        Ok(_) => assert!(reclaim_ok),
        Err(e) => {
            assert!(!reclaim_ok);
            assert!(
                e.to_string()
                    .contains(&r.get("cgroup.reclaim").unwrap().detail),
                "{e}"
            );
        }
    }
}

#[test]
fn mglru_probe_matches_lru_gen_files() {
    use swaplab_host::doctor::probe_mglru;
    // This machine: present exactly when the kernel has lru_gen/enabled.
    let r = Doctor::probe();
    let real = Path::new("/sys/kernel/mm/lru_gen/enabled");
    let p = r.get("mglru").unwrap();
    assert_eq!(p.status == Status::Ok, real.exists(), "{p:?}");
    if let Ok(raw) = fs::read_to_string(real) {
        let on = u32::from_str_radix(raw.trim().trim_start_matches("0x"), 16).unwrap() & 1 != 0;
        assert!(
            p.detail.starts_with(if on { "on " } else { "off " }),
            "{p:?}"
        );
    } else {
        assert!(p.detail.contains("CONFIG_LRU_GEN"), "{p:?}");
    }
    // Fake trees, as 6.1 (off at boot) and 6.12 (on) show them.
    let dir = tempfile::tempdir().unwrap();
    let missing = probe_mglru(&dir.path().join("nope"));
    assert_eq!(missing.status, Status::Missing);
    assert!(missing.detail.contains("nope/enabled"), "{missing:?}");
    assert!(missing.disables.iter().any(|d| d.contains("--mglru")));
    fs::write(dir.path().join("enabled"), "0x0000\n").unwrap();
    fs::write(dir.path().join("min_ttl_ms"), "0\n").unwrap();
    let off = probe_mglru(dir.path());
    assert_eq!(off.status, Status::Ok);
    assert!(
        off.detail.starts_with("off (enabled 0x0000), min_ttl_ms 0"),
        "{off:?}"
    );
    fs::write(dir.path().join("enabled"), "0x0007\n").unwrap();
    fs::write(dir.path().join("min_ttl_ms"), "1000\n").unwrap();
    let on = probe_mglru(dir.path());
    assert!(
        on.detail
            .starts_with("on (enabled 0x0007), min_ttl_ms 1000"),
        "{on:?}"
    );
    fs::write(dir.path().join("enabled"), "garbage\n").unwrap();
    assert_eq!(probe_mglru(dir.path()).status, Status::Missing);
}
