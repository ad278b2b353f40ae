//! /proc readers against independent reads and known workloads.

use crate::common;

use std::fs;
use std::path::Path;

use swaplab_host::procfs::{
    memory_pressure, proc_mem, wait_with_rusage, Environment, Kswapd, VmStat,
};

fn touch(bytes: usize) -> Vec<u8> {
    let mut v = vec![0u8; bytes];
    for i in (0..bytes).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&mut v);
    v
}

fn raw_status_kb(key: &str) -> u64 {
    let s = fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with(key)).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn vmstat_delta_counts_our_faults() {
    let a = VmStat::read().unwrap();
    let raw_keys: Vec<String> = fs::read_to_string("/proc/vmstat")
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(a.fields.len(), raw_keys.len());
    assert!(raw_keys.iter().all(|k| a.fields.contains_key(k)));
    let v = touch(64 << 20);
    let b = VmStat::read().unwrap();
    drop(v);
    let d = b.delta_since(&a);
    assert!(
        d.pgfault >= 16384,
        "touched 16384 pages, pgfault delta {}",
        d.pgfault
    );
    assert_eq!(d.pgfault, b.get("pgfault") - a.get("pgfault"));
    assert_eq!(d.fields["pgfault"], d.pgfault);
    assert!(d.pswpin >= 0 && d.pgmajfault >= 0);
}

#[test]
fn proc_mem_follows_rss() {
    let me = std::process::id();
    let before = proc_mem(me).unwrap();
    let v = touch(64 << 20);
    let after = proc_mem(me).unwrap();
    let raw_rss = raw_status_kb("VmRSS:") * 1024;
    assert!(
        after.rss_bytes >= before.rss_bytes + (60 << 20),
        "{before:?} → {after:?}"
    );
    // Same file read twice: within a few MiB of each other.
    assert!(
        after.rss_bytes.abs_diff(raw_rss) < 8 << 20,
        "{after:?} vs raw {raw_rss}"
    );
    assert!(after.hwm_bytes >= after.rss_bytes);
    drop(v);
    let e = proc_mem(u32::MAX - 3).unwrap_err().to_string();
    assert!(e.contains("/proc/"), "{e}");
}

#[test]
fn kswapd_threads_and_cpu() {
    let k = Kswapd::find().unwrap();
    let nodes = fs::read_dir("/sys/devices/system/node")
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(0);
    if nodes == 0 && k.threads.is_empty() {
        swaplab_testkit::skip(
            &test_name!(),
            swaplab_testkit::Facility::Kswapd,
            "no NUMA node info and no kswapd",
        );
        return;
    }
    assert_eq!(k.threads.len(), nodes.max(1), "{k:?}");
    let raw_ns = || -> u64 {
        k.threads
            .iter()
            .map(|t| {
                assert!(fs::read_to_string(format!("/proc/{}/comm", t.pid))
                    .unwrap()
                    .starts_with("kswapd"));
                swaplab_testkit::proc_cpu_ns(t.pid)
            })
            .sum()
    };
    let lo = raw_ns();
    let ns = k.cpu_ns().unwrap();
    let hi = raw_ns();
    assert!(lo <= ns && ns <= hi, "{lo} <= {ns} <= {hi}");
}

#[test]
fn global_pressure_reads_the_proc_file() {
    let p = Path::new("/proc/pressure/memory");
    match memory_pressure().unwrap() {
        None => assert!(!p.exists()),
        Some(psi) => {
            let raw = fs::read_to_string(p).unwrap();
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
            assert!(psi.some.total_us <= total);
            assert!(psi.full.is_some());
        }
    }
}

#[test]
fn rusage_of_a_child() {
    let mut c = std::process::Command::new(common::helper())
        .args(["alloc", "32M"])
        .spawn()
        .unwrap();
    let (st, ru) = wait_with_rusage(&mut c).unwrap();
    assert!(st.success());
    assert!(ru.maxrss_bytes >= 32 << 20, "{ru:?}");
    assert!(ru.minflt >= 8192, "{ru:?}");
}

#[test]
fn environment_snapshot() {
    // Other tests of this binary set vm.swappiness under the system lock:
    // the capture and the reads below hold it too.
    let _system = common::system_lock();
    let env = Environment::capture().unwrap();
    // SAFETY: uname writes into our zeroed struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::uname(&mut u) }, 0);
    // SAFETY: uname NUL-terminates release.
    let rel = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(env.kernel_release, rel);
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap();
    assert_eq!(
        env.cpu_count,
        cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count()
    );
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split_once(':').unwrap().1.trim().to_string());
    assert_eq!(env.cpu_model, model);
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = meminfo
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(env.mem_total_bytes, kb * 1024);
    // SAFETY: sysconf touches no memory of ours.
    assert_eq!(env.page_size, unsafe { libc::sysconf(libc::_SC_PAGESIZE) }
        as u64);
    // Other tests of this binary add and remove swap areas meanwhile: a
    // snapshot taken while /proc/swaps read the same before and after it.
    let swaps = || fs::read_to_string("/proc/swaps").unwrap().lines().count() - 1;
    let (areas, listed) = loop {
        let before = swaps();
        let areas = Environment::capture().unwrap().swap_areas.len();
        if swaps() == before {
            break (areas, before);
        }
    };
    assert_eq!(areas, listed);
    assert_eq!(
        env.knobs.swappiness.as_deref(),
        Some(
            fs::read_to_string("/proc/sys/vm/swappiness")
                .unwrap()
                .trim()
        )
    );
    let json = serde_json::to_string_pretty(&env).unwrap();
    assert!(json.contains("kernel_release"));
}

/// /proc/stat's total CPU time grows by the wall time times the CPUs (each
/// CPU is either busy or idle): checked over a 300 ms sleep, within the
/// tick granularity.
#[test]
fn total_cpu_time_grows_by_wall_time_times_cpus() {
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let a = swaplab_host::procfs::cpu_total_ns().unwrap();
    let t = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let b = swaplab_host::procfs::cpu_total_ns().unwrap();
    let wall = t.elapsed().as_secs_f64();
    let got = (b - a) as f64 / 1e9;
    let want = wall * cpus;
    // Ticks are 10 ms per CPU (USER_HZ 100): allow two per CPU, plus 10 %.
    assert!(
        (got - want).abs() <= 0.02 * cpus + 0.1 * want,
        "{got} s of CPU time over {wall} s on {cpus} CPUs"
    );
}
