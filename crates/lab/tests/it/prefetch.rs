//! `swaplab run --prefetch leap|stride` on the real kernel (root, swap
//! files): the requests land on the trend (checked against the program's
//! own mincore(2) and the prefetcher's request log), a program that exits
//! or unmaps while being prefetched leaves no error and nothing behind,
//! and a random walk gets (almost) no requests.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_restored, serial, sys_state, temp_lab, workload_exe};

/// Runs need root, a memory cgroup, zram and perf software events.
fn skip(test: &str) -> bool {
    use swaplab_testkit::Facility::*;
    swaplab_testkit::skip_unless(test, &[Root, MemoryCgroup, Zram, Perf, ProcessMadvise])
}
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::prefetcher::{PrefetchSpec, LOG_FILE};
use swaplab_lab::record::{MetricName, Outcome, RunRecord};
use swaplab_report::model::Value;

/// Builds tests/prefetch_walker.c with the system C compiler.
fn walker(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prefetch_walker.c");
    let exe = dir.join("prefetch_walker");
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("running cc");
    assert!(st.success(), "compiling {}", src.display());
    exe
}

fn run(lab: &swaplab_lab::runner::Lab, cmd: Vec<String>, o: RunOptions) -> RunRecord {
    let set = lab.run(&cmd, &o, 1, &mut |_| {}).expect("run");
    let r = set.runs.into_iter().next().unwrap();
    if r.outcome != Some(Outcome::Ok) {
        let err = std::fs::read_to_string(r.dir.join("stderr.txt")).unwrap_or_default();
        panic!(
            "{cmd:?}: {:?} exit {:?}: {err} {:?}",
            r.outcome, r.exit_code, r.notes
        );
    }
    r
}

fn metric(r: &RunRecord, name: MetricName) -> f64 {
    r.get(name)
        .unwrap_or_else(|| panic!("no metric {name}: {:?}", r.metrics.keys()))
}

/// Threads named swaplab-prefetch or swaplab-pageout, and perf / pidfd
/// descriptors, of this process.
fn prefetch_leftovers() -> (usize, usize) {
    let threads = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .map(|c| matches!(c.trim(), "swaplab-prefetch" | "swaplab-pageout"))
                .unwrap_or(false)
        })
        .count();
    let fds = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|f| {
            std::fs::read_link(f.path())
                .map(|l| {
                    let l = l.to_string_lossy();
                    l.contains("perf_event") || l.contains("pidfd")
                })
                .unwrap_or(false)
        })
        .count();
    (threads, fds)
}

fn opts(spec: &str) -> RunOptions {
    RunOptions {
        swap: vec!["zram:128M".parse().unwrap()],
        // zram: a page out completes at once, so the walker's own
        // MADV_PAGEOUT frees its pages (with a swap file they would stay in
        // the swap cache under writeback, and a second MADV_PAGEOUT does
        // not see them: their PTEs are swap entries already). zram reads
        // nothing ahead: every page in the swap cache after the walk was
        // read by a fault of the walk or by the prefetcher.
        page_cluster: Some(0),
        prefetch: Some(spec.parse::<PrefetchSpec>().unwrap()),
        timeout: Some(std::time::Duration::from_secs(60)),
        ..Default::default()
    }
}

/// Runs the walker over `n` pages, walking `walk` of them one every
/// `step_us`, under prefetcher `spec`; returns the run, the region's base
/// address and the walker's mincore(2) of each page after the walk.
fn walk_check(
    lab: &swaplab_lab::runner::Lab,
    exe: &Path,
    (n, walk, step_us): (usize, usize, u32),
    spec: &str,
) -> (RunRecord, u64, Vec<bool>) {
    let cmd = vec![
        exe.display().to_string(),
        n.to_string(),
        walk.to_string(),
        step_us.to_string(),
        "check".into(),
    ];
    let r = run(lab, cmd, opts(spec));
    let out = r.workload_output.clone().expect("walker output");
    let base = out["base"].as_u64().unwrap();
    let res: Vec<bool> = out["resident"]
        .as_str()
        .unwrap()
        .bytes()
        .map(|b| b == b'1')
        .collect();
    assert_eq!(res.len(), n);
    (r, base, res)
}

/// One line of the prefetcher's request log (`log=1`), in pages of the
/// walker's region at `base`.
struct Logged {
    kind: String,
    first: usize,
    pages: usize,
    at: usize,
    line: String,
}

/// The run's request log (`time_ns tid willneed|pageout 0xSTART pages
/// 0xFAULT_ADDR`), each line checked for its six fields; the sampled major
/// faults it also logs (`major-KIND 0xADDR 1 0xADDR`) are checked and left
/// out.
fn request_log(r: &RunRecord, base: u64) -> Vec<Logged> {
    let log = std::fs::read_to_string(r.dir.join(LOG_FILE)).expect("prefetch log");
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    log.lines()
        .filter_map(|l| {
            let page = |addr: u64| {
                assert!(
                    addr >= base,
                    "an address below the walker's region at {base:#x}: {l}"
                );
                ((addr - base) / 4096) as usize
            };
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "{l}");
            if let Some(kind) = f[2].strip_prefix("major-") {
                assert!(
                    ["late", "outran", "skipped", "unasked"].contains(&kind),
                    "{l}"
                );
                assert_eq!((f[3], f[4]), (f[5], "1"), "{l}");
                return None;
            }
            Some(Logged {
                kind: f[2].to_string(),
                first: page(hex(f[3])),
                pages: f[4].parse().unwrap(),
                at: page(hex(f[5])),
                line: l.to_string(),
            })
        })
        .collect()
}

#[test]
fn requests_land_ahead_of_a_sequential_walk() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let exe = walker(dir.path());
    let (n, walk) = (4096usize, 400usize);
    // Swap areas besides the run's zram (none on CI).
    let others = swaplab_host::swap::read_swaps().unwrap();
    // window 16 pages, max 128 pages.
    let (r, base, res) = walk_check(
        &lab,
        &exe,
        (n, walk, 1000),
        "leap:window=64K:max=512K:log=1",
    );
    assert_eq!(r.outcome, Some(Outcome::Ok), "{:?} {:?}", r.error, r.notes);
    // With zram the only swap, the run says prefetching alone seldom pays.
    assert_eq!(
        r.notes
            .iter()
            .any(|n| n.contains("every swap area is zram")),
        others.is_empty(),
        "{:?} {others:?}",
        r.notes
    );
    // The request log: every WILLNEED range starts after the page whose
    // fault triggered it and lies inside the region.
    let mut requested = vec![false; n];
    let mut lines = 0;
    for Logged {
        kind,
        first,
        pages,
        at,
        line: l,
    } in request_log(&r, base)
    {
        assert_eq!(kind, "willneed", "{l}");
        assert!(first > at, "request behind its fault: {l}");
        assert!(at < walk, "triggered outside the walk: {l}");
        assert!(first + pages <= n, "outside the region: {l}");
        // Ahead of the walk by at most the max window (128 pages).
        assert!(first + pages <= at + 1 + 128, "too far ahead: {l}");
        requested[first..first + pages].fill(true);
        lines += 1;
    }
    assert!(lines > 0, "no request logged");
    let req: Vec<usize> = (0..n).filter(|&p| requested[p]).collect();
    assert_eq!(
        req.len() as f64,
        metric(&r, MetricName::PrefetchPagesRequested),
        "the log and the counter disagree"
    );
    // Landed: requested pages are in memory or the swap cache.
    let landed = req.iter().filter(|&&p| res[p]).count();
    assert!(
        landed * 10 >= req.len() * 9,
        "only {landed} of {} requested pages resident",
        req.len()
    );
    // The pages just ahead of where the walk stopped were requested.
    assert!(
        (walk..walk + 8).all(|p| requested[p] && res[p]),
        "{:?}",
        &res[walk..walk + 8]
    );
    // Nothing off the trend: pages neither walked nor requested stayed out.
    let stray = (walk..n).filter(|&p| res[p] && !requested[p]).count();
    assert!(
        stray <= n / 100,
        "{stray} pages resident that nobody asked for"
    );
    // The walk ran into the prefetches: most of its pages had been asked
    // for when it touched them, served from the swap cache (used) or read
    // too late (late). How many came in time depends on how much CPU the
    // prefetcher's thread got on a shared machine (used 127 and 69 of the
    // 400 in two suite runs beside other test binaries, 200 or more in
    // the others): that is a speed, which `swaplab bench hints` measures
    // (its `run --prefetch` arms), not this test.
    let used = metric(&r, MetricName::PrefetchPagesUsed);
    let late = metric(&r, MetricName::PrefetchPagesLate);
    assert!(
        used > 0.0 && used + late >= (walk / 2) as f64,
        "used {used}, late {late} of a {walk}-page walk"
    );
    assert!(metric(&r, MetricName::PrefetchAccuracy) > 0.5);
    assert!(metric(&r, MetricName::PrefetchCpuNs) > 0.0);
    // The report's metrics table of the run carries them, with their meaning.
    let t = swaplab_study::report::run::metrics_table(&r);
    let row = t
        .rows
        .iter()
        .find(|row| matches!(&row[0], Value::Text(n) if n == "prefetch_accuracy"))
        .expect("prefetch_accuracy in the metrics table");
    assert!(matches!(row[1], Value::Float(v) if v == metric(&r, MetricName::PrefetchAccuracy)));
    assert!(matches!(&row[4], Value::Text(m) if m.contains("used")));
    assert_eq!(prefetch_leftovers(), (0, 0));
    drop(lab);
    assert_restored(&before, "prefetch walk");
}

#[test]
fn pageout_reclaims_the_walked_pages_a_lag_behind_and_keeps_the_rest() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let exe = walker(dir.path());
    let (n, walk) = (4096usize, 1500usize);
    // window 16 pages, max 64, lag 32 pages (128 KiB)
    let (r, base, res) = walk_check(
        &lab,
        &exe,
        (n, walk, 500),
        "leap:window=64K:max=256K:pageout=1:lag=128K:log=1",
    );
    let mut paged = vec![false; n];
    let mut total = 0;
    let mut next: Option<usize> = None;
    let log = request_log(&r, base);
    for e in log.iter().filter(|e| e.kind == "pageout") {
        let (first, pages, l) = (e.first, e.pages, &e.line);
        // Behind the fault that triggered it by at least the lag.
        assert!(first + pages + 32 <= e.at, "closer than the lag: {l}");
        // Each range starts where the last ended: every page once.
        if let Some(p) = next {
            assert_eq!(first, p, "{l}");
        }
        next = Some(first + pages);
        paged[first..first + pages].fill(true);
        total += pages;
    }
    assert!(total > 0, "nothing paged out ({} lines logged)", log.len());
    assert_eq!(total as f64, metric(&r, MetricName::PrefetchPagesPagedOut));
    // Paged out by its own thread, whose CPU time is part of the total.
    let po_cpu = metric(&r, MetricName::PrefetchPageoutCpuNs);
    assert!(po_cpu > 0.0 && po_cpu < metric(&r, MetricName::PrefetchCpuNs));
    // The kernel's view (the walker's own mincore after the walk): on zram
    // a page out completes at once, so the pages paged out are gone, and
    // the last lag's worth of the walk, never paged out, is still there.
    let gone: Vec<usize> = (0..n).filter(|&p| paged[p]).collect();
    let back = gone.iter().filter(|&&p| res[p]).count();
    assert!(
        back * 20 <= gone.len(),
        "{back} of {} paged-out pages resident",
        gone.len()
    );
    assert!(
        (walk - 32..walk).all(|p| res[p] && !paged[p]),
        "the last 32 pages walked: {:?}",
        &res[walk - 32..walk]
    );
    // The walk was prefetched meanwhile.
    assert!(metric(&r, MetricName::PrefetchPagesUsed) >= (walk / 2) as f64);
    assert_eq!(prefetch_leftovers(), (0, 0));
    drop(lab);
    assert_restored(&before, "prefetch pageout");
}

#[test]
fn a_hint_files_prefetch_starts_the_prefetcher_unless_the_command_line_chose() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let exe = walker(dir.path());
    let hints = dir.path().join("hints.toml");
    // what `advise` writes for a swept heap: no site hint, a prefetcher
    std::fs::write(
        &hints,
        "version = 1\nprefetch = \"leap:window=64K:max=512K:log=1\"\n",
    )
    .unwrap();
    let cmd = vec![
        exe.display().to_string(),
        "4096".into(),
        "400".into(),
        "1000".into(),
        "check".into(),
    ];
    let with_file = |prefetch: Option<&str>| RunOptions {
        hints: Some(hints.clone()),
        prefetch: prefetch.map(|p| p.parse::<PrefetchSpec>().unwrap()),
        ..opts("leap")
    };
    let r = run(&lab, cmd.clone(), with_file(None));
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("prefetch leap:window=64K:max=512K:log=1 from the hint file")),
        "{:?}",
        r.notes
    );
    // it ran with the file's options: its request log (log=1) is there
    // and agrees with its counter
    let log = std::fs::read_to_string(r.dir.join(LOG_FILE)).expect("prefetch log");
    let requested: f64 = log
        .lines()
        .filter(|l| l.split('\t').nth(2) == Some("willneed"))
        .map(|l| l.split('\t').nth(4).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(requested > 0.0, "no request");
    assert_eq!(requested, metric(&r, MetricName::PrefetchPagesRequested));
    // --prefetch on the command line wins (no log: its spec has no log=1)
    let r = run(&lab, cmd, with_file(Some("stride")));
    assert!(
        !r.notes.iter().any(|n| n.contains("from the hint file")),
        "{:?}",
        r.notes
    );
    assert!(!r.dir.join(LOG_FILE).exists());
    assert!(metric(&r, MetricName::PrefetchCpuNs) > 0.0);
    // a bad prefetch in a hint file fails before any run, naming the file
    std::fs::write(&hints, "version = 1\nprefetch = \"leap:window=zz\"\n").unwrap();
    let e = lab
        .run(
            &[exe.display().to_string()],
            &with_file(None),
            1,
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hints.toml: prefetch = \"leap:window=zz\""),
        "{e}"
    );
    assert_eq!(prefetch_leftovers(), (0, 0));
    drop(lab);
    assert_restored(&before, "prefetch from a hint file");
}

#[test]
fn exit_or_unmap_while_prefetching_is_quiet_and_leaks_nothing() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let exe = walker(dir.path());
    // Also with pageout on: its own thread may still hold ranges queued
    // when the program goes.
    let specs = ["leap:window=1M:max=8M", "leap:window=1M:max=8M:pageout=1"];
    for (spec, mode) in specs
        .into_iter()
        .flat_map(|s| ["exit", "unmap"].map(|m| (s, m)))
    {
        let cmd = vec![
            exe.display().to_string(),
            "16384".into(),
            "16384".into(),
            "0".into(),
            mode.into(),
        ];
        let r = run(&lab, cmd.clone(), opts(spec));
        let mode = format!("{spec} {mode}");
        assert_eq!(
            r.outcome,
            Some(Outcome::Ok),
            "{mode}: {:?} {:?}",
            r.error,
            r.notes
        );
        assert!(r.error.is_none());
        // No error notes (the zram advice is not one).
        assert!(
            !r.notes
                .iter()
                .any(|n| n.contains("prefetcher") && !n.contains("every swap area is zram")),
            "{mode}: {:?}",
            r.notes
        );
        // It acted during the walk, and the record has its counts.
        assert!(metric(&r, MetricName::PrefetchMadviseCalls) > 0.0, "{mode}");
        assert!(metric(&r, MetricName::PrefetchMajorFaults) > 0.0, "{mode}");
        if spec.ends_with("pageout=1") && metric(&r, MetricName::PrefetchPagesPagedOut) == 0.0 {
            // On a loaded machine (a suite beside the guest kernels) the
            // pageout thread may not have run before the program went:
            // once more, and it must page out then.
            let again = run(&lab, cmd, opts(spec));
            assert!(
                metric(&again, MetricName::PrefetchPagesPagedOut) > 0.0,
                "{mode}: paged out nothing, twice"
            );
        }
        // The record is in the catalog with the prefetcher's counts.
        let stored = lab.catalog.run(r.id).unwrap();
        assert_eq!(
            stored.get(MetricName::PrefetchMadviseCalls),
            r.get(MetricName::PrefetchMadviseCalls),
            "{mode}"
        );
        assert_eq!(prefetch_leftovers(), (0, 0), "{mode}");
    }
    drop(lab);
    assert_restored(&before, "prefetch exit/unmap");
}

#[test]
fn a_random_walk_gets_almost_no_requests() {
    if skip(&test_name!()) {
        return;
    }
    random_walk_goes_sparse(&chase_cmd(), "prefetch chase");
}

/// The same through `sh -c` with a command after it, so that the shell
/// forks chase and waits: the child's inherited events must go sparse too
/// (PERF_EVENT_IOC_PERIOD would not reach them; enable/disable does).
#[test]
fn a_forked_random_walk_goes_sparse_too() {
    if skip(&test_name!()) {
        return;
    }
    let line = format!("{}; true", chase_cmd().join(" "));
    random_walk_goes_sparse(
        &["/bin/sh".to_string(), "-c".into(), line],
        "prefetch chase via sh -c",
    );
}

fn chase_cmd() -> Vec<String> {
    vec![
        workload_exe().display().to_string(),
        "chase".into(),
        "--size".into(),
        "32M".into(),
        "--ops".into(),
        "500000".into(),
    ]
}

fn random_walk_goes_sparse(cmd: &[String], what: &str) {
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    // A v1 memory cgroup OOM-kills a fast random writer now and then at a
    // limit where it swaps steadily (docs/decisions.md, "Swapping tests
    // under a v1 memory cgroup"): then once more 2 MiB higher, twice at
    // most; 24 MiB of chase's 32 still swaps (the assertions below).
    let mut mib = 20;
    let r = loop {
        let mut o = opts("leap");
        o.page_cluster = None;
        o.mem_limit = Some(LimitSpec::Bytes(mib << 20));
        // A small group churning fast: keep its statistics fresh (docs/decisions.md).
        o.flush_stats = Some(std::time::Duration::from_millis(1));
        let set = lab.run(cmd, &o, 1, &mut |_| {}).expect("run");
        let r = set.runs.into_iter().next().unwrap();
        if r.outcome == Some(Outcome::Oom) && mib < 24 {
            eprintln!(
                "{what}: OOM-killed at {mib} MiB, once more at {} MiB",
                mib + 2
            );
            mib += 2;
            continue;
        }
        break r;
    };
    assert_eq!(r.outcome, Some(Outcome::Ok), "{:?} {:?}", r.error, r.notes);
    let majors = metric(&r, MetricName::PrefetchMajorFaults);
    let requested = metric(&r, MetricName::PrefetchPagesRequested);
    assert!(majors > 1000.0, "chase did not swap: {majors} major faults");
    assert!(
        requested <= majors * 0.02,
        "{requested} pages requested for {majors} random major faults"
    );
    // With no trend the prefetcher samples one major fault in SPARSE, and
    // the kernel still counts every one: its count is the program's own
    // (getrusage of the child, its waited-for children included), less the
    // few that perf does not see: faults before exec (the events start at
    // exec), faults taken in kernel mode, on user buffers of system calls
    // (exclude_kernel), and those between the two ioctls of a switch.
    // Sampled faults alone would be about 1/16 of it.
    assert!(metric(&r, MetricName::PrefetchSparseSwitches) >= 1.0);
    assert!(metric(&r, MetricName::PrefetchSparseNs) > 0.0);
    // And the kernel did sample sparsely, in the process that faulted:
    // far fewer samples than faults.
    let samples = metric(&r, MetricName::PrefetchSamples);
    assert!(
        samples > 0.0 && samples <= majors / 4.0,
        "{samples} samples for {majors} major faults"
    );
    let rusage = metric(&r, MetricName::Majflt);
    assert!(
        majors <= rusage && rusage - majors <= 64.0 + rusage / 1000.0,
        "perf counted {majors} major faults, getrusage {rusage}"
    );
    assert_eq!(prefetch_leftovers(), (0, 0));
    drop(lab);
    assert_restored(&before, what);
}

#[test]
fn thread_mode_hands_the_preload_library_its_switch() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let cmd = vec![
        "/bin/sh".to_string(),
        "-c".into(),
        "echo \"$SWAPLAB_PREFETCH|$LD_PRELOAD\"".into(),
    ];
    let o = RunOptions {
        prefetch: Some("thread".parse().unwrap()),
        ..Default::default()
    };
    let r = run(&lab, cmd, o);
    let out = std::fs::read_to_string(r.dir.join("stdout.txt")).unwrap();
    let (mode, preload) = out.trim().split_once('|').unwrap();
    assert_eq!(mode, "thread");
    assert_eq!(
        Path::new(preload),
        swaplab_lab::preload::library_path().unwrap()
    );
    // No external prefetcher ran.
    assert!(r.get(MetricName::PrefetchMadviseCalls).is_none());
    assert_eq!(prefetch_leftovers(), (0, 0));
    drop(lab);
    assert_restored(&before, "prefetch thread");
}
