//! `swaplab bench reclaim` against the kernel's own counters: under a
//! memory cgroup limit the reclaim is direct (vmstat pgsteal_direct), with
//! THP never not one huge page is faulted (thp_fault_alloc), the machine's
//! CPU time from /proc/stat is the wall time times the CPUs; under
//! `--machine-mem` kswapd works; the balloon and every setting are gone
//! afterwards — also when swaplab is killed with SIGKILL.
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use swaplab_testkit::{balloon_pids, browser, skip, skip_unless, system_state, Facility};

/// One at a time: the counters are machine-wide.
use crate::common::root_lock;

fn swaplab_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_swaplab"));
    c.args(args)
        .current_dir(dir)
        .env("CI", "1")
        .env("SWAPLAB_HOME", dir.join("home"))
        .env("SWAPLAB_STATE_DIR", dir.join("state"));
    c
}

fn swaplab(dir: &Path, args: &[&str]) -> Output {
    swaplab_cmd(dir, args).output().unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn ok_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let o = swaplab(dir, args);
    assert!(
        o.status.success(),
        "swaplab {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn var_tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("swaplab-reclaim-test-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// The run's machine CPU time is its wall time times the CPUs, and the
/// kswapd share is kswapd's time over it.
fn check_cpu_accounting(name: &str, run: &serde_json::Value) {
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let wall = f(&run["touch"]["wall_ns"]);
    let total = f(&run["cpu_total_ns"]);
    // /proc/stat ticks are 10 ms per CPU; the runner reads it just outside
    // the wall-time interval.
    assert!(
        (total - wall * cpus).abs() <= 0.15 * wall * cpus + 0.05e9 * cpus,
        "{name}: {total} ns of machine CPU time over {wall} ns on {cpus} CPUs"
    );
    let share = f(&run["kswapd_machine_share"]);
    assert!(
        (share - f(&run["kswapd_cpu_ns"]) / total).abs() < 1e-9,
        "{name}: share {share}"
    );
}

#[test]
fn memcg_reclaim_is_direct_and_thp_follows_the_mode() {
    let test = &test_name!();
    if skip_unless(
        test,
        &[Facility::Root, Facility::MemoryCgroup, Facility::Swapfile],
    ) {
        return;
    }
    if !Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
        return skip(test, Facility::MachineState, "this kernel has no THP");
    }
    let lock = root_lock();
    let before = system_state();
    let dir = var_tmp();
    let d = dir.path();
    let v = ok_json(
        d,
        &[
            "bench",
            "reclaim",
            "--quick",
            "--thp",
            "always,never",
            "--json",
            "--save",
            "r.json",
            "--report",
            "r.html",
        ],
    );
    assert_eq!(
        system_state(),
        before,
        "{test}: the system was left changed"
    );
    // What follows reads the result and looks at the report: no root, so
    // the other tests that change the system go on meanwhile.
    drop(lock);
    let modes = v["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 2);
    for m in modes {
        let thp = m["thp"].as_str().unwrap();
        let run = &m["runs"][0];
        assert_eq!(run["touch"]["outcome"], "ok", "{thp}: {run}");
        check_cpu_accounting(thp, run);
        // A memory cgroup's limit is enforced by the faulting task; the
        // kernel counts that reclaim only in the group (not in
        // /proc/vmstat's pgsteal_*), so it shows as swap-outs beyond them.
        let limit = f(&run["limit_reclaim"]);
        let kswapd = f(&run["pgsteal_kswapd"]);
        eprintln!(
            "{test}: THP {thp}: {limit} pages by the limit, {} direct, {kswapd} by kswapd",
            run["pgsteal_direct"]
        );
        assert!(
            limit > kswapd && limit >= 1024.0,
            "{thp}: {limit} vs {kswapd}"
        );
        assert_eq!(m["summary"]["dominant"], "direct");
        let counter = |k: &str| {
            run["thp_counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c[0] == k)
                .map(|c| f(&c[1]))
                .unwrap_or_else(|| panic!("no {k}"))
        };
        let huge = counter("thp_fault_alloc");
        match thp {
            // THP off for the whole machine: not one huge page at a fault.
            "never" => assert_eq!(huge, 0.0, "THP never"),
            // On: the workload's faults ask for huge pages (some may fall
            // back to 4 KiB pages when a 2 MiB charge does not fit).
            _ => assert!(
                huge + counter("thp_fault_fallback") > 0.0,
                "THP always: no huge page faults"
            ),
        }
    }
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("kswapd against direct"));
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(&d.join("r.html"), Path::new("bench-reclaim.png"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 1);
    assert_eq!(c.figures.len(), 4, "{c:?}");
}

#[test]
fn machine_pressure_wakes_kswapd_and_the_balloon_leaves_nothing() {
    let test = &test_name!();
    if skip_unless(
        test,
        &[Facility::Root, Facility::MemoryCgroup, Facility::Swapfile],
    ) {
        return;
    }
    let _g = root_lock();
    let before = system_state();
    let dir = var_tmp();
    let v = ok_json(
        dir.path(),
        &[
            "bench",
            "reclaim",
            "--machine-mem",
            "1G",
            "--touches",
            "1x",
            "--repeat",
            "1",
            "--json",
        ],
    );
    assert_eq!(
        system_state(),
        before,
        "{test}: the system was left changed"
    );
    let b = &v["balloon"];
    eprintln!("{test}: balloon {b}");
    assert!(b["released"].is_null(), "the watchdog fired: {b}");
    let run = &v["modes"][0]["runs"][0];
    assert_eq!(run["touch"]["outcome"], "ok", "{run}");
    check_cpu_accounting("machine", run);
    let kswapd = f(&run["pgsteal_kswapd"]);
    eprintln!(
        "{test}: kswapd reclaimed {kswapd} pages in {} ns of CPU; direct {}",
        run["kswapd_cpu_ns"], run["pgsteal_direct"]
    );
    // The whole machine is short: kswapd wakes and reclaims.
    assert!(kswapd > 0.0 && f(&run["kswapd_cpu_ns"]) > 0.0, "{run}");
}

#[test]
fn a_killed_bench_leaves_no_balloon() {
    let test = &test_name!();
    if skip_unless(test, &[Facility::Root, Facility::MemoryCgroup]) {
        return;
    }
    let _g = root_lock();
    let before = system_state();
    let dir = var_tmp();
    let d = dir.path();
    let mut child = swaplab_cmd(
        d,
        &["bench", "reclaim", "--machine-mem", "1G", "--repeat", "1"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Wait for the balloon to hold memory, then SIGKILL swaplab.
    let t0 = Instant::now();
    let balloon = loop {
        let held = balloon_pids().into_iter().find(|p| {
            // Locked and resident: the balloon locks its whole mapping on
            // fault first (VmLck is its size at once), then faults it in.
            std::fs::read_to_string(format!("/proc/{p}/status"))
                .map(|s| {
                    let kb = |key: &str| {
                        s.lines()
                            .find_map(|l| l.strip_prefix(key))
                            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
                            .unwrap_or(0)
                    };
                    kb("VmLck:") > 0 && kb("VmRSS:") >= 64 << 10
                })
                .unwrap_or(false)
        });
        if let Some(p) = held {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{test}: no balloon appeared"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "{test}: swaplab ended early"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // The balloon dies with swaplab (PR_SET_PDEATHSIG)...
    let t1 = Instant::now();
    while Path::new(&format!("/proc/{balloon}")).exists() {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "{test}: the balloon outlived swaplab"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // ...and the next swaplab start undoes the rest (its cgroup, the run's).
    let o = swaplab(d, &["restore"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        system_state(),
        before,
        "{test}: restore left the system changed"
    );
}

#[test]
fn bad_reclaim_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["bench", "reclaim", "--mem-limit", "64M", "--size", "32M"][..],
            "not larger than the memory given",
        ),
        (
            &["bench", "reclaim", "--thp", "sometimes"][..],
            "[possible values: always, madvise, never]",
        ),
        (&["bench", "reclaim", "--touches", "lots"][..], "--touches"),
        (
            &["bench", "reclaim", "--swap", "file:1x,file:2x"][..],
            "one swap area",
        ),
        (&["bench", "reclaim", "--repeat", "0"][..], "--repeat"),
    ] {
        let o = swaplab(dir.path(), args);
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}
