//! Fault-event sources (perf and tracefs) on the real machine. The test
//! binary re-executes itself (`--exact <test> --nocapture` with
//! `SWAPLAB_FAULTS_CHILD` set) as the traced child; the child prints what
//! it did as `FAULTCHILD ...` lines.
//!
//! Root-only; skips with a printed reason otherwise. The cost measurement
//! is `#[ignore]`d: `cargo test -p swaplab-host --test it -- --ignored
//! --nocapture faults::measure_cost`.

use crate::common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use swaplab_host::faults::{
    FaultKind, FaultOptions, FaultSample, FaultSourceKind, FaultStats, FaultTracerSetup,
};
use swaplab_host::journal::{Session, SessionOptions};

const CHILD_ENV: &str = "SWAPLAB_FAULTS_CHILD";
const N: usize = 2048;
const M: usize = 512;
const T: usize = 256;
const MAJOR_PAGES: usize = 4096;
const COST_PAGES: usize = 256 * 1024;

fn ps() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn map(pages: usize) -> usize {
    // SAFETY: a fresh anonymous mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages * ps(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // One fault per page: no transparent huge pages.
    // SAFETY: advising our own mapping.
    unsafe { libc::madvise(p, pages * ps(), libc::MADV_NOHUGEPAGE) };
    p as usize
}

fn touch(base: usize, pages: usize) {
    for i in 0..pages {
        // SAFETY: inside our mapping.
        unsafe { std::ptr::write_volatile((base + i * ps()) as *mut u8, (i as u8) | 1) };
    }
}

fn majflt() -> i64 {
    // SAFETY: getrusage into a zeroed struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_majflt
}

fn say(line: String) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    writeln!(o, "\nFAULTCHILD {line}").unwrap();
    o.flush().unwrap();
}

/// The traced child's work; returns true when this process is the child.
fn child_role() -> bool {
    let Ok(phase) = std::env::var(CHILD_ENV) else {
        return false;
    };
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    say(format!("pid {me}"));
    match phase.as_str() {
        "basic" => {
            let a = map(N);
            say(format!("base1 {a} {N}"));
            touch(a, N);
            let b = map(M);
            // SAFETY: the forked child only touches memory and _exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                touch(b, M);
                // SAFETY: the forked child ends without running destructors.
                unsafe { libc::_exit(0) };
            }
            let mut st = 0;
            // SAFETY: waiting for our child.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            say(format!("base2 {b} {M} {pid}"));
            let c = map(T);
            let tid = std::thread::spawn(move || {
                // SAFETY: gettid cannot fail.
                let tid = unsafe { libc::gettid() };
                touch(c, T);
                tid
            })
            .join()
            .unwrap();
            say(format!("base3 {c} {T} {tid}"));
        }
        "major" => {
            let a = map(MAJOR_PAGES);
            touch(a, MAJOR_PAGES);
            let len = MAJOR_PAGES * ps();
            // SAFETY: advising our own mapping.
            unsafe { libc::madvise(a as *mut libc::c_void, len, libc::MADV_PAGEOUT) };
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: as above.
            unsafe { libc::madvise(a as *mut libc::c_void, len, libc::MADV_PAGEOUT) };
            std::thread::sleep(Duration::from_millis(200));
            let swap = std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find(|l| l.starts_with("VmSwap"))
                .unwrap_or("VmSwap: ?")
                .split_whitespace()
                .nth(1)
                .unwrap_or("?")
                .to_string();
            let before = majflt();
            let mut sum = 0u64;
            for i in 0..MAJOR_PAGES {
                // SAFETY: inside our mapping.
                sum += unsafe { std::ptr::read_volatile((a + i * ps()) as *const u8) } as u64;
            }
            let after = majflt();
            say(format!(
                "major {a} {MAJOR_PAGES} {} vmswap_kb={swap} sum={sum}",
                after - before
            ));
        }
        "cost" => {
            let a = map(COST_PAGES);
            let t = Instant::now();
            touch(a, COST_PAGES);
            say(format!("cost_ns {}", t.elapsed().as_nanos()));
        }
        other => panic!("unknown child phase {other}"),
    }
    true
}

struct Traced {
    samples: Vec<FaultSample>,
    stats: FaultStats,
    lines: Vec<Vec<String>>,
}

impl Traced {
    fn line(&self, key: &str) -> &[String] {
        self.lines
            .iter()
            .find(|l| l[0] == key)
            .unwrap_or_else(|| panic!("child did not print {key}: {:?}", self.lines))
    }
}

fn run_child(
    test: &str,
    phase: &str,
    kind: Option<FaultSourceKind>,
    session: &mut Session,
) -> Result<Traced, String> {
    let setup = match kind {
        Some(k) => Some(
            FaultTracerSetup::new(k, &FaultOptions::default(), session)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        test,
        "--exact",
        "--nocapture",
        "--include-ignored",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, phase)
    .stdout(Stdio::piped());
    if let Some(s) = &setup {
        let hook = s.child_hook();
        // SAFETY: the hook is async-signal-safe.
        unsafe { cmd.pre_exec(move || hook.run()) };
    }
    let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
    let mut tracer = setup.map(|s| s.attach(child.id()).expect("attach"));
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| {
                l.split_once("FAULTCHILD ")
                    .map(|(_, r)| r)
                    .map(|r| r.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            })
            .collect::<Vec<_>>()
    });
    let mut samples = Vec::new();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if let Some(t) = &mut tracer {
            t.drain(&mut samples).expect("drain");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "traced child failed: {status}");
    let stats = match tracer {
        Some(t) => t.finish(&mut samples).expect("finish"),
        None => FaultStats {
            lost: 0,
            samples: 0,
            source: FaultSourceKind::Perf,
            notes: vec![],
        },
    };
    Ok(Traced {
        samples,
        stats,
        lines: reader.join().unwrap(),
    })
}

/// This process's tracefs instances (`swaplab-PID-N`): other test
/// binaries trace at the same time (validate's reclaim trace, `run
/// --reclaim-trace`), and their instances come and go meanwhile (one
/// made this check fail in a suite run); the suite's state snapshot
/// checks every instance once all tests are done.
fn instances() -> Vec<String> {
    let mine = format!("swaplab-{}-", std::process::id());
    let mut v: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&mine))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn swaps() -> String {
    std::fs::read_to_string("/proc/swaps").unwrap()
}

fn skip(test: &str, kind: FaultSourceKind) -> bool {
    use common::Facility;
    let facility = match kind {
        FaultSourceKind::Perf => Facility::Perf,
        FaultSourceKind::Tracefs => Facility::Tracefs,
    };
    common::skip_unless(test, &[Facility::Root, facility])
}

fn in_range(s: &FaultSample, base: u64, pages: usize) -> bool {
    s.addr >= base && s.addr < base + (pages * ps()) as u64
}

fn check_pages(samples: &[&FaultSample], base: u64, pages: usize, what: &str) {
    assert_eq!(samples.len(), pages, "{what}: faults in range");
    let distinct: HashSet<u64> = samples
        .iter()
        .map(|s| (s.addr - base) / ps() as u64)
        .collect();
    assert_eq!(distinct.len(), pages, "{what}: one fault per page");
}

fn basic(test: &str, kind: FaultSourceKind) {
    let _base = common::Baseline::take();
    let inst_before = instances();
    let swaps_before = swaps();
    let dir = common::state_dir();
    let mut session = Session::begin_with(SessionOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    // The facility is present (checked by `skip`): any error is a failure.
    let tr = run_child(test, "basic", Some(kind), &mut session)
        .unwrap_or_else(|e| panic!("{test}: {kind} failed: {e}"));
    let pid: u32 = tr.line("pid")[1].parse().unwrap();
    let b1: u64 = tr.line("base1")[1].parse().unwrap();
    let b2 = tr.line("base2");
    let (b2, fork_pid): (u64, u32) = (b2[1].parse().unwrap(), b2[3].parse().unwrap());
    let b3 = tr.line("base3");
    let (b3, tid): (u64, u32) = (b3[1].parse().unwrap(), b3[3].parse().unwrap());
    eprintln!("{kind}: {} samples, stats {:?}", tr.samples.len(), tr.stats);
    let r1: Vec<_> = tr.samples.iter().filter(|s| in_range(s, b1, N)).collect();
    check_pages(&r1, b1, N, "first range");
    let want_kind = FaultKind::Minor;
    assert!(r1.iter().all(|s| s.kind == want_kind), "all minor");
    assert!(r1.iter().all(|s| s.pid == pid), "all of the child");
    let r2: Vec<_> = tr.samples.iter().filter(|s| in_range(s, b2, M)).collect();
    check_pages(&r2, b2, M, "forked child's range");
    assert_ne!(fork_pid, pid);
    assert!(r2.iter().all(|s| s.pid == fork_pid && s.tid == fork_pid));
    let r3: Vec<_> = tr.samples.iter().filter(|s| in_range(s, b3, T)).collect();
    check_pages(&r3, b3, T, "thread's range");
    assert_ne!(tid, pid);
    assert!(r3.iter().all(|s| s.pid == pid && s.tid == tid));
    let backwards = tr
        .samples
        .windows(2)
        .filter(|w| w[1].time_ns < w[0].time_ns)
        .count();
    assert_eq!(backwards, 0, "samples in time order");
    assert_eq!(tr.stats.lost, 0);
    assert_eq!(tr.stats.samples as usize, tr.samples.len());
    drop(session);
    assert_eq!(instances(), inst_before, "tracefs instances restored");
    assert_eq!(swaps(), swaps_before, "swaps restored");
}

fn major(test: &str, kind: FaultSourceKind) {
    let dir = common::state_dir();
    // Under the system lock, as `basic` does: taken before it, the
    // snapshot once held the instance of a tracefs test of this binary
    // that then finished while this one waited for the lock (a suite run:
    // "swaplab-PID-0" before, gone after).
    let base = common::Baseline::take();
    let inst_before = instances();
    let swaps_before = swaps();
    let mut session = Session::begin_with(SessionOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    // A swap file keeps MADV_PAGEOUT'ed pages in the swap cache (written
    // back, still cached): re-touching them is a minor fault for the kernel,
    // even after sleeping (measured: ru_majflt 0 for 4096 pages). zram
    // writes synchronously, frees them at once and swaps in without the
    // swap cache, so every re-touch is a real major fault.
    let spec = std::env::var("SWAPLAB_FAULTS_SWAP").unwrap_or_else(|_| "zram:256M".into());
    session.add_swap(&spec.parse().unwrap()).unwrap();
    // No swap readahead: every swap-in reads its own page.
    session.set_sysctl("vm.page-cluster", "0").unwrap();
    let tr = run_child(test, "major", Some(kind), &mut session)
        .unwrap_or_else(|e| panic!("{test}: {kind} failed: {e}"));
    let m = tr.line("major");
    let a: u64 = m[1].parse().unwrap();
    let ru: i64 = m[3].parse().unwrap();
    let in_range: Vec<_> = tr
        .samples
        .iter()
        .filter(|s| in_range(s, a, MAJOR_PAGES))
        .collect();
    // Faults of the re-touch pass only: the second fault of each page.
    let mut seen = HashSet::new();
    let retouch: Vec<_> = in_range
        .iter()
        .filter(|s| !seen.insert(s.addr / ps() as u64))
        .collect();
    let majors = retouch
        .iter()
        .filter(|s| s.kind == FaultKind::Major)
        .count() as i64;
    eprintln!(
        "{kind} major: child ru_majflt {ru}, {} ({}), {} faults in range, {} re-touch faults, {majors} Major; stats {:?}",
        m[4], m[5], in_range.len(), retouch.len(), tr.stats
    );
    assert!(ru > 0, "the child saw no major faults (pages not swapped?)");
    let tol = (ru as f64 * 0.05).ceil() as i64;
    assert!(
        (majors - ru).abs() <= tol,
        "{kind}: {majors} Major samples vs ru_majflt {ru} (tolerance {tol})"
    );
    assert_eq!(tr.stats.lost, 0);
    drop(session);
    base.assert_restored();
    assert_eq!(instances(), inst_before, "tracefs instances restored");
    assert_eq!(swaps(), swaps_before, "swaps restored");
}

#[test]
fn perf_basic() {
    if child_role() || skip(&test_name!(), FaultSourceKind::Perf) {
        return;
    }
    basic(&test_name!(), FaultSourceKind::Perf);
}

#[test]
fn tracefs_basic() {
    if child_role() || skip(&test_name!(), FaultSourceKind::Tracefs) {
        return;
    }
    basic(&test_name!(), FaultSourceKind::Tracefs);
}

#[test]
fn perf_major() {
    if child_role() || skip(&test_name!(), FaultSourceKind::Perf) {
        return;
    }
    major(&test_name!(), FaultSourceKind::Perf);
}

#[test]
fn tracefs_major() {
    if child_role() || skip(&test_name!(), FaultSourceKind::Tracefs) {
        return;
    }
    major(&test_name!(), FaultSourceKind::Tracefs);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[test]
#[ignore = "measurement: run with --ignored --nocapture"]
fn measure_cost() {
    if child_role() || skip(&test_name!(), FaultSourceKind::Tracefs) {
        return;
    }
    let dir = common::state_dir();
    let mut session = Session::begin_with(SessionOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    let kinds = [
        None,
        Some(FaultSourceKind::Perf),
        Some(FaultSourceKind::Tracefs),
    ];
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for _round in 0..5 {
        for (i, k) in kinds.iter().enumerate() {
            let tr = run_child(&test_name!(), "cost", *k, &mut session).unwrap();
            let ns: f64 = tr.line("cost_ns")[1].parse().unwrap();
            per[i].push(ns / COST_PAGES as f64);
            if k.is_some() {
                assert_eq!(tr.stats.lost, 0, "{:?}", tr.stats);
            }
        }
    }
    let med: Vec<f64> = per.iter().map(|v| median(v.clone())).collect();
    eprintln!("per-fault ns (all runs): {per:?}");
    eprintln!(
        "median ns/fault: untraced {:.0}, perf {:.0} (+{:.0}), tracefs {:.0} (+{:.0})",
        med[0],
        med[1],
        med[1] - med[0],
        med[2],
        med[2] - med[0]
    );
}
