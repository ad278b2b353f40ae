//! `swaplab bench hints` against answers known without it: with swap
//! readahead off (page-cluster 0) a sweep over an array that does not fit
//! faults every page on every pass; the workload's own report of what it
//! locked and advised; speed-ups and p recomputed from the recorded runs;
//! the system as it was afterwards; the report's panels in a browser.
// Its own test binary, not a module of tests/it: it compares the share of
// major faults a prefetch thread saves across starts (±5 points), and the
// other modules' tests, running on the binary's other threads, starved that
// thread (direct 88.6 % against 95.4 % through `swaplab workload run`).
// Its two root tests take turns for the same reason (`ONE_AT_A_TIME`):
// beside the hints cells' runs the direct start saved 87.9 % and the
// forked one 94.7 %.
#[macro_use]
extern crate swaplab_testkit;
#[path = "it/common/mod.rs"]
mod common;
use common::{f, root_json, swaplab, ROOT_SWAP};
use std::path::Path;
use std::sync::Mutex;

use swaplab_testkit::{browser, skip, Facility};

/// Held by each test that runs workloads under a limit, for its whole run.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    // A test that failed holding it poisons it; the next one still runs.
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn show(dir: &Path, id: &serde_json::Value) -> serde_json::Value {
    let o = swaplab(dir, &["show", &id.to_string(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The cell's simulation pins the `locked` bytes the workload reported.
fn assert_pinned(c: &serde_json::Value, locked: f64, name: &str) {
    let pinned = format!("{} pages pinned", locked as u64 / 4096);
    assert!(
        c["sim_model"].as_str().unwrap().contains(&pinned),
        "{name}: {}",
        c["sim_model"]
    );
}

#[test]
fn hints_cells_agree_with_the_runs_and_the_kernel() {
    let _turn = one_at_a_time();
    let test = &test_name!();
    let Some((dir, v)) = root_json(
        test,
        &ROOT_SWAP,
        "swaplab-hints-test-",
        &[
            "bench", "hints", "--quick", "--json", "--save", "h.json", "--report", "h.html",
        ],
    ) else {
        return;
    };
    let d = dir.path();
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1, "--quick: one size");
    let s = &sizes[0];
    let size = f(&s["size_bytes"]);
    assert_eq!(size, 32.0 * 1048576.0);
    let peak = f(&s["peak_bytes"]);
    assert!(peak >= size, "the peak {peak} holds the object {size}");
    let pages = size / 4096.0;
    let cells = s["cells"].as_array().unwrap();
    let variants: Vec<&str> = cells
        .iter()
        .map(|c| c["variant"].as_str().unwrap())
        .collect();
    for want in [
        "base",
        "madvise",
        "mlock",
        "pc0",
        "pc6",
        "leap",
        "mlock-leap",
    ] {
        assert_eq!(
            variants.iter().filter(|v| **v == want).count(),
            2,
            "{want}: one cell per limit in {variants:?}"
        );
    }
    let cell = |v: &str, pct: f64| {
        cells
            .iter()
            .find(|c| c["variant"] == v && f(&c["limit_pct"]) == pct)
            .unwrap_or_else(|| panic!("no cell {v} {pct}"))
    };
    for pct in [75.0, 50.0] {
        let base = cell("base", pct);
        assert_eq!(
            f(&base["limit_bytes"]),
            ((peak * pct / 100.0) as u64 & !4095) as f64,
            "limits are shares of the base peak"
        );
        for c in cells.iter().filter(|c| f(&c["limit_pct"]) == pct) {
            let name = format!("{} {pct}%", c["variant"]);
            // Every variant got the same memory.
            assert_eq!(c["limit_bytes"], base["limit_bytes"], "{name}");
            // The cell's numbers are its runs' (one repeat: the run's own).
            let ids = c["run_ids"].as_array().unwrap();
            assert_eq!(ids.len(), 1, "{name}");
            let r = show(d, &ids[0]);
            if r["outcome"] != "ok" {
                eprintln!("{test}: {name} ended {}: left out", r["outcome"]);
                continue;
            }
            let wall = f(&r["metrics"]["wall_ns"]["value"]) / 1e9;
            assert!((f(&c["wall_s"]) - wall).abs() < 1e-9, "{name}");
            assert_eq!(
                f(&c["majflt"]),
                f(&r["metrics"]["majflt"]["value"]),
                "{name}"
            );
            for m in ["swapin_pages", "swapout_pages"] {
                assert_eq!(f(&c[m]), f(&r["metrics"][m]["value"]), "{name} {m}");
            }
            if let Some(bw) = base["wall_s"].as_f64() {
                assert!((f(&c["speedup"]) - bw / wall).abs() < 1e-9, "{name}");
            }
            let out = &r["workload_output"];
            match c["variant"].as_str().unwrap() {
                "pc0" => {
                    // No readahead: every swap-in is the one page a major
                    // fault asked for, so the kernel's two counters agree
                    // (here they were equal). The slack below is the
                    // binary's own file-backed faults; above, on cgroup v1,
                    // the swap-ins of other processes (/proc/vmstat's count).
                    // Each pass faults at least the pages the limit cannot
                    // hold, and at most every page. (Under pure LRU it would
                    // be every page; the kernel kept 16 % of them resident
                    // on a loaded CI machine, and 0 % here.)
                    let m = f(&c["majflt"]);
                    let swapins = f(&c["swapin_pages"]);
                    assert!(
                        swapins >= 0.98 * m - 200.0 && swapins <= 1.1 * m + 500.0,
                        "{name}: {m} major faults, {swapins} pages swapped in"
                    );
                    let held = f(&c["limit_bytes"]) / 4096.0;
                    assert!(
                        m >= 3.0 * (pages - held) && m <= 3.0 * pages + 200.0,
                        "{name}: {m} major faults for 3 passes over {pages} pages ({held} fit)"
                    );
                    assert_eq!(
                        r["settings"]["page_cluster"], 0,
                        "{name}: {}",
                        r["settings"]
                    );
                }
                "mlock" => {
                    // What the workload locked: limit - usage - headroom
                    // (an eighth of the limit, at least 4 MiB), never more.
                    let locked = f(&out["mlocked"]);
                    let limit = f(&c["limit_bytes"]);
                    let room = (limit / 8.0).max(4.0 * 1048576.0);
                    assert!(
                        locked > 0.0 && locked <= limit - room,
                        "{name}: locked {locked} under a {limit} limit"
                    );
                    // The simulation pins what the workload locked.
                    assert_pinned(c, locked, &name);
                }
                "mlock-leap" => {
                    // --mlock half: half the limit (page-rounded), never
                    // more than --mlock max would lock; and the prefetcher ran
                    let locked = f(&out["mlocked"]);
                    let limit = f(&c["limit_bytes"]);
                    let room = (limit / 8.0).max(4.0 * 1048576.0);
                    assert!(
                        locked <= (limit / 2.0).min(limit - room) && locked > limit / 2.0 - 8192.0,
                        "{name}: locked {locked} under a {limit} limit"
                    );
                    assert!(
                        f(&r["metrics"]["prefetch_cpu_ns"]["value"]) > 0.0,
                        "{name}: the prefetcher did not run"
                    );
                    assert_pinned(c, locked, &name);
                }
                "leap" => {
                    // leap's default pageout=auto: the 32M array is larger
                    // than the limit (75 % or 50 % of its peak), so pageout
                    // turned on at the first walk over it, and traverse
                    // never comes back to a page before walking the whole
                    // array, so it stayed on and paged out what the walk
                    // passed, from 64 KiB behind the faulting page.
                    let p = &r["options"]["prefetch"];
                    assert_eq!(
                        (&p["pageout"], &p["pageout_auto"], f(&p["lag"])),
                        (
                            &serde_json::Value::Bool(false),
                            &serde_json::Value::Bool(true),
                            65536.0
                        ),
                        "{name}: {p}"
                    );
                    let m = |k: &str| f(&r["metrics"][k]["value"]);
                    assert_eq!(
                        (m("prefetch_pageout_started"), m("prefetch_pageout_regrets")),
                        (1.0, 0.0),
                        "{name}: {:?}",
                        r["notes"]
                    );
                    let paged = m("prefetch_pages_paged_out");
                    assert!(paged > 0.0, "{name}: nothing paged out");
                    // `show` says so in words, and places the faults left:
                    // its three counts add up to at most the major faults.
                    let o = swaplab(d, &["show", &ids[0].to_string()]);
                    let text = String::from_utf8_lossy(&o.stdout);
                    assert!(
                        text.contains("pageout=auto     on, and it stayed on"),
                        "{name}: {text}"
                    );
                    let placed = m("prefetch_pages_late")
                        + m("prefetch_majors_skipped")
                        + m("prefetch_majors_outran");
                    assert!(
                        placed <= m("prefetch_major_faults"),
                        "{name}: {placed} placed of {} major faults",
                        m("prefetch_major_faults")
                    );
                }
                "madvise" => assert_eq!(out["madvise"], 3, "{name}: sequential + willneed"),
                _ => {}
            }
            // One run a side: the test cannot say anything.
            if c["variant"] != "base" {
                assert_eq!(f(&c["p_value"]), 1.0, "{name}");
            }
        }
        // Readahead saves major faults: pc6 fewer than pc0.
        let (p0, p6) = (cell("pc0", pct), cell("pc6", pct));
        if let (Some(a), Some(b)) = (p0["majflt"].as_f64(), p6["majflt"].as_f64()) {
            assert!(b < a / 4.0, "{pct}%: pc6 {b} vs pc0 {a} major faults");
        }
    }
    let html = std::fs::read_to_string(d.join("h.html")).unwrap();
    assert!(html.contains("Hints and prefetching against base"));
    // The benchmark is a catalog group of its own; its sweep holds the runs.
    let id = v["sweep_id"].as_i64().expect("a catalog group id");
    let o = swaplab(d, &["report", &format!("s{id}"), "-o", "s.html"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sweep = s["sweep_id"].as_i64().unwrap();
    let o = swaplab(
        d,
        &[
            "compare",
            &format!("s{sweep}:base"),
            &format!("s{sweep}:pc0"),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(&d.join("h.html"), Path::new("bench-hints.png"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 1);
    assert!(!c.figures.is_empty(), "{c:?}");
    for want in ["madvise", "mlock", "pc0", "pc6"] {
        assert!(
            c.figures[0].series_found.iter().any(|s| s == want),
            "{want} not drawn: {:?}",
            c.figures[0].series_found
        );
    }
}

#[test]
fn bad_hints_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["bench", "hints", "--variants", "magic"][..],
            "unknown variant",
        ),
        (
            &[
                "bench",
                "hints",
                "--workload",
                "chase",
                "--variants",
                "mlock",
            ][..],
            "--mlock and --madvise",
        ),
        (
            &["bench", "hints", "--workload", "nope"][..],
            "not a built-in workload",
        ),
        (
            &["bench", "hints", "--limits", "150%"][..],
            "share of the peak",
        ),
        (
            &["bench", "hints", "--limits", "64M"][..],
            "share of the peak",
        ),
        (&["bench", "hints", "--sizes", "big"][..], "--sizes"),
        (&["bench", "hints", "--page-cluster", "40"][..], "0..=31"),
        (&["bench", "hints", "--repeat", "0"][..], "--repeat"),
    ] {
        let o = swaplab(dir.path(), args);
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}

/// The prefetcher follows the process tree: traverse started directly,
/// through `sh -c`, through `swaplab workload run`, through a Python
/// launcher (`subprocess.call`) and with `--fork` (the parent fills the
/// array, a forked child sweeps it) saves the same share of base's major
/// faults under the same limit: each within 5 points of the starts'
/// median, as shares of the direct start's base (medians of 3 runs; see
/// below). Before the
/// prefetcher served each process in its own address space, every start
/// but the direct one got no request at all (it watched the launcher).
#[test]
fn leap_saves_the_same_share_however_the_program_is_started() {
    let _turn = one_at_a_time();
    let test = &test_name!();
    let w = swaplab_lab::workload::executable()
        .unwrap()
        .display()
        .to_string();
    let me = env!("CARGO_BIN_EXE_swaplab");
    let traverse = format!("{w} traverse --size 64M");
    // cmd=... is split like a shell line (crates/lab/src/options.rs).
    let starts = [
        ("direct", traverse.clone()),
        ("sh", format!("sh -c '{traverse}; true'")),
        ("workload", format!("{me} workload run traverse --size 64M")),
        (
            "python",
            format!(
                "python3 -c 'import subprocess, sys; sys.exit(subprocess.call(\"{traverse}\".split()))'"
            ),
        ),
        ("fork", format!("{traverse} --fork")),
    ];
    let mut needs = ROOT_SWAP.to_vec();
    needs.extend([
        Facility::Perf,
        Facility::ProcessMadvise,
        Facility::Program("python3"),
    ]);
    // One sweep of a base and a leap variant for each of `starts`, each
    // run 3 times under the same limit; None when a facility is missing.
    let sweep = |starts: &[(&str, String)]| {
        let mut args: Vec<String> = [
            "sweep",
            "--limits",
            "32M",
            "--repeat",
            "3",
            "--swap",
            "file:512M",
            "--json",
        ]
        .map(String::from)
        .to_vec();
        for (name, cmd) in starts {
            args.push("--variant".into());
            args.push(format!("{name}-base=cmd={cmd}"));
            args.push("--variant".into());
            args.push(format!("{name}-leap=--prefetch leap cmd={cmd}"));
        }
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        root_json(test, &needs, "swaplab-tree-test-", &args).map(|(_dir, v)| v)
    };
    let Some(v) = sweep(&starts) else {
        return;
    };
    let cell = |v: &serde_json::Value, name: &str| {
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == name)
            .unwrap_or_else(|| panic!("no cell {name}: {v}"))
            .clone()
    };
    // Faults saved, as a share of the direct start's base: a launcher's
    // own faults (python3's heap, swapped out while it waits and faulted
    // back when it exits: about 1,000 here) are not traverse's, and no
    // prefetcher could save them.
    let majors = |c: &serde_json::Value| f(&c["majflt"]["median"]);
    let direct_base = majors(&cell(&v, "direct-base"));
    let share_of = |v: &serde_json::Value, name: &str| {
        let (b, l) = (
            cell(v, &format!("{name}-base")),
            cell(v, &format!("{name}-leap")),
        );
        for c in [&b, &l] {
            assert_eq!(c["ok"], 3, "{name}: {c}");
            assert!(
                c.get("idle").is_none(),
                "{name}: a mechanism acted on nothing: {c}"
            );
        }
        let share = (majors(&b) - majors(&l)) / direct_base;
        eprintln!(
            "{name}: major faults {} -> {}: {:.1} % of the direct base saved",
            majors(&b),
            majors(&l),
            share * 100.0
        );
        share
    };
    let saved: Vec<(&str, f64)> = starts
        .iter()
        .map(|(name, _)| (*name, share_of(&v, name)))
        .collect();
    // The starts' common share: their median. The direct start is one
    // sample like the others, and as noisy (a suite run here: direct 88.2 %,
    // `sh -c` 93.6 %, the others 88.2-90.4 %: every start within 3.5
    // points of the median, the direct one 5.4 from `sh -c`).
    let mut shares: Vec<f64> = saved.iter().map(|s| s.1).collect();
    shares.sort_by(f64::total_cmp);
    let common = shares[shares.len() / 2];
    assert!(
        common > 0.5,
        "leap should save most of traverse's major faults at half its array: {saved:?}"
    );
    // ±5 points. Every start goes to sparse sampling while traverse fills
    // its array and finds the walk through one fault in 16 (enable and
    // disable reach the whole tree), so each loses about the same few
    // hundred faults before the first request. Seen here with other work
    // on the machine: direct 93.3-94.4 %, the others 90.8-97.4 % (Python's
    // own faults, paged back at its exit, are saved too); on a machine
    // loaded four times over its CPUs the spread grew past 10 points.
    //
    // A start outside the band is measured once more, alone, and that
    // second measurement must be inside it: a suite run on the loaded CI
    // machine once saw `workload` at 81.1 % against the median's 94.0 %,
    // a burst of other tests' work while its three runs ran. A start the
    // prefetcher does not follow (as every start but the direct one was,
    // before it served each process in its own address space) saves
    // nothing in both measurements.
    for (name, share) in &saved {
        if (share - common).abs() <= 0.05 {
            continue;
        }
        eprintln!(
            "{name} saved {:.1} %, the starts' median {:.1} %: measuring it again",
            share * 100.0,
            common * 100.0
        );
        let again = starts.iter().filter(|s| s.0 == *name).cloned();
        let v = sweep(&again.collect::<Vec<_>>()).expect("the facilities were there");
        let share = share_of(&v, name);
        assert!(
            (share - common).abs() <= 0.05,
            "{name} saved {:.1} % of base's major faults, measured twice, the starts' median \
             {:.1} %: {saved:?}",
            share * 100.0,
            common * 100.0
        );
    }
}
