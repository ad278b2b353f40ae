//! `swaplab bench touch` against what the kernel itself reports: the
//! process's own getrusage major faults, wait4's and the memory cgroup's
//! pgmajfault agree; the seq pattern swaps out at least what the limit
//! forces out; the summary's tail shares recomputed from the raw latency
//! file; the system as it was afterwards; the report opens in a browser.
use crate::common;
use common::{f, root_json, swaplab, ROOT_SWAP};
use std::path::Path;

use swaplab_testkit::{browser, skip, Facility};

#[test]
fn touch_faults_agree_with_the_cgroup_and_rusage() {
    let test = &test_name!();
    let Some((dir, v)) = root_json(
        test,
        &ROOT_SWAP,
        "swaplab-touch-test-",
        &[
            "bench", "touch", "--quick", "--json", "--save", "t.json", "--report", "t.html",
        ],
    ) else {
        return;
    };
    let d = dir.path();
    let limit = f(&v["mem_limit_bytes"]);
    let region = f(&v["region_bytes"]);
    assert_eq!(
        (limit, region),
        (64.0 * 1048576.0, 128.0 * 1048576.0),
        "--quick"
    );
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2, "seq and random on file:2x");
    for c in configs {
        let name = format!("{} {}", c["pattern"], c["swap"]);
        let runs = c["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{name}");
        let r = &runs[0];
        assert_eq!(r["outcome"], "ok", "{name}: {r}");
        // Major faults three ways: the process's own getrusage after its
        // touches, wait4's rusage at exit, the memory cgroup's pgmajfault.
        let own = f(&r["majflt_self"]);
        let rusage = f(&r["majflt_rusage"]);
        let cgroup = f(&r["majflt_cgroup"]);
        eprintln!("{test}: {name}: major faults self {own}, rusage {rusage}, cgroup {cgroup}");
        assert!(
            own <= rusage && rusage - own <= 64.0,
            "{name}: getrusage {own} vs wait4 {rusage}"
        );
        assert!(
            (cgroup - rusage).abs() <= 16.0_f64.max(0.02 * rusage),
            "{name}: cgroup {cgroup} vs rusage {rusage}"
        );
        // The raw file: one u32 per touch; the tail shares recomputed.
        let lat =
            std::fs::read(Path::new(r["run_dir"].as_str().unwrap()).join("touch_ns.u32")).unwrap();
        let lat: Vec<f64> = lat
            .chunks_exact(4)
            .map(|b| f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        assert_eq!(lat.len() as f64, f(&r["touches"]), "{name}");
        let total: f64 = lat.iter().sum();
        let slow: f64 = lat.iter().filter(|&&x| x > 1e6).sum();
        assert!(
            (f(&r["slow_1ms_time_share"]) - slow / total).abs() < 1e-9,
            "{name}"
        );
        assert_eq!(
            f(&r["max_ns"]),
            lat.iter().cloned().fold(0.0, f64::max),
            "{name}"
        );
        let s = &c["summary"];
        let q = ["p50_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns"].map(|k| f(&s[k]));
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "{name}: {q:?}");
        // The anonymous RSS levels off under the limit.
        let plateau = f(&s["rss_plateau_bytes"]);
        assert!(
            plateau <= limit && plateau >= 0.75 * limit,
            "{name}: plateau {plateau} against the limit {limit}"
        );
        match c["pattern"].as_str().unwrap() {
            "seq" => {
                // Each page once: what does not fit must have been written out.
                assert_eq!(f(&r["distinct_pages"]), region / 4096.0);
                assert!(
                    f(&r["swapout_pages"]) >= (region - limit) / 4096.0,
                    "{name}: {} pages swapped out",
                    r["swapout_pages"]
                );
            }
            _ => {
                // Random pages come back from swap: major faults happen.
                assert!(own >= 100.0, "{name}: only {own} major faults");
            }
        }
    }
    let html = std::fs::read_to_string(d.join("t.html")).unwrap();
    assert!(html.contains("Touch latency under swap"));
    // The benchmark is in the catalog as a group of its runs.
    let id = v["sweep_id"].as_i64().expect("a catalog group id");
    let o = swaplab(d, &["show", &format!("s{id}")]);
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && shown.contains("bench-touch"),
        "{shown}"
    );
    for c in configs {
        let name = format!(
            "{} {}",
            c["pattern"].as_str().unwrap(),
            c["swap"].as_str().unwrap()
        );
        assert!(shown.contains(&name), "{name} not in:\n{shown}");
    }
    let o = swaplab(d, &["report", &format!("s{id}"), "-o", "s.html"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again = std::fs::read_to_string(d.join("s.html")).unwrap();
    assert!(again.contains("Touch latency under swap"));
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(&d.join("t.html"), Path::new("bench-touch.png"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 1);
    assert_eq!(c.figures.len(), 6, "{c:?}");
    assert_eq!(c.figures[0].series_found, ["seq file:2x", "random file:2x"]);
}

#[test]
fn bad_touch_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["bench", "touch", "--mem-limit", "64M", "--size", "32M"][..],
            "not larger than --mem-limit",
        ),
        (
            &["bench", "touch", "--pattern", "zigzag"][..],
            "seq, random",
        ),
        (&["bench", "touch", "--swap", "disk:1G"][..], "swap"),
        (&["bench", "touch", "--swap", "file:twox"][..], "multiple"),
        (
            &["bench", "touch", "--pattern", "seq", "--touches", "100M"][..],
            "seq touches each page once",
        ),
        (&["bench", "touch", "--repeat", "0"][..], "--repeat"),
    ] {
        let o = swaplab(dir.path(), args);
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}
