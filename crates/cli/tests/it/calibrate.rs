//! `swaplab calibrate` against what the kernel itself reports: every timed
//! swap-in pass is made of major faults (the process's getrusage, and the
//! memory cgroup's pgmajfault covers them), the region was out of memory
//! before each pass (mincore), swap-cache touches are minor faults and
//! cheaper than swap-ins, zram's compression ratio is inside the bound the
//! data's entropy sets; the profiles are saved where the simulator looks;
//! the system is as it was; the report opens in a browser.
use crate::common;
use common::{f, root_json, swaplab, ROOT_SWAP};
use std::path::Path;

use swaplab_testkit::{browser, skip, Facility};

#[test]
fn calibrate_agrees_with_the_kernels_counters() {
    let test = &test_name!();
    let needs = [&ROOT_SWAP[..], &[Facility::Zram]].concat();
    let Some((dir, v)) = root_json(
        test,
        &needs,
        "swaplab-calibrate-test-",
        &[
            "calibrate",
            "--kinds",
            "zram,file",
            "--size",
            "16M",
            "--rounds",
            "1",
            "--json",
            "--save",
            "c.json",
            "--report",
            "c.html",
        ],
    ) else {
        return;
    };
    let d = dir.path();
    let kinds = v["kinds"].as_array().unwrap();
    assert_eq!(kinds.len(), 2);
    let pages = 16.0 * 256.0;
    for k in kinds {
        let kind = k["kind"].as_str().unwrap();
        assert_eq!(k["outcome"], "ok", "{kind}: {k}");
        let phase = |p: &str| {
            k["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["phase"] == p)
                .unwrap_or_else(|| panic!("{kind}: no phase {p}"))
                .clone()
        };
        // Before every timed pass the region was out of memory (mincore).
        for e in k["evicted"].as_array().unwrap() {
            assert!(
                f(e) >= 0.9 * pages,
                "{kind}: only {e} of {pages} pages evicted"
            );
        }
        // The swap-in passes are major faults, one per touch (the
        // process's own getrusage), and the cgroup counted at least those.
        // Above one per touch: the program's own pages, which the eviction
        // before the pass can take too (on v1 it squeezes the group to
        // 512 KiB above what reclaim cannot take, to drop the swap file's
        // cache):
        // its code (file pages, read
        // back with a major fault: 4 097 for 4 096 touches was seen), and
        // its arrays (latencies and the random order, 4 bytes a page each:
        // 8 pages here) when their best-effort mlock failed.
        let own_pages = (pages * 8.0 / 4096.0).ceil() + 8.0;
        let mut own = 0.0;
        for p in ["seq", "random"] {
            let s = phase(p);
            assert_eq!(f(&s["touches"]), pages, "{kind} {p}");
            assert!(
                f(&s["majflt"]) >= 0.9 * pages && f(&s["majflt"]) <= pages + own_pages,
                "{kind} {p}: {} major faults for {pages} touches",
                s["majflt"]
            );
            own += f(&s["majflt"]);
        }
        let cache = phase("cache");
        assert!(
            f(&cache["majflt"]) <= 0.01 * pages,
            "{kind}: swap-cache touches were major faults: {cache}"
        );
        own += f(&cache["majflt"]) + f(&phase("minor")["majflt"]);
        let cg = f(&k["majflt_cgroup"]);
        assert!(
            cg >= own && cg <= own * 1.05 + 200.0,
            "{kind}: cgroup pgmajfault {cg} against the process's {own}"
        );
        // A fault served from the swap cache does no I/O: cheaper than a
        // swap-in.
        let prof = &k["profile"];
        assert!(
            f(&prof["fault_path_us"]) < f(&prof["read_seq_us"])
                && f(&prof["fault_path_us"]) < f(&prof["read_rand_us"]),
            "{kind}: {prof}"
        );
        // Saved where the simulator looks, and identical to the result.
        let saved =
            std::fs::read_to_string(d.join(format!("home/device-profiles/{kind}.toml"))).unwrap();
        let t: toml::Value = toml::from_str(&saved).unwrap();
        for key in [
            "read_seq_us",
            "read_rand_us",
            "write_us",
            "fault_path_us",
            "compress_ratio",
        ] {
            // TOML and JSON print floats their own ways: equal to 1e-12.
            let (a, b) = (t[key].as_float().unwrap(), f(&prof[key]));
            assert!(
                (a - b).abs() <= 1e-12 * b.abs(),
                "{kind} {key}: {a} against {b}"
            );
        }
        // The limit run: under the lowered limit every fault was paid for
        // by reclaim, by the kernel's counters (machine-wide: nothing else
        // swaps during the suite's serial tests). A quarter of the region
        // out, two random passes: at least that quarter of the first
        // pass's touches fault, every page brought in makes one go, and
        // every page reclaimed (each was written) is written out.
        assert!(k["limit_run_id"].as_i64().is_some(), "{kind}: {k}");
        let lim = &k["limit_output"];
        for r in lim["rounds"]
            .as_array()
            .unwrap_or_else(|| panic!("{kind}: {lim}"))
        {
            let p = &r["limit"];
            assert_eq!(p["errno"], 0, "{kind}: {r}");
            let (maj, steal) = (f(&p["majflt"]), f(&p["pgsteal_anon"]));
            assert!(maj >= 0.25 * pages, "{kind}: {p}");
            assert!(steal >= 0.9 * maj, "{kind}: {p}");
            assert!(f(&p["pswpout"]) >= 0.9 * steal, "{kind}: {p}");
            assert!(
                f(&p["stime_s"]) > 0.0 && f(&r["random_majflt"]) >= 0.9 * pages,
                "{kind}: {r}"
            );
            // The reading pass: as many faults, and on a swap file the
            // pages it brought back kept their copies, so hardly any page
            // it reclaimed was written out.
            let rd = &r["limit_read"];
            assert_eq!(rd["errno"], 0, "{kind}: {r}");
            assert!(f(&rd["majflt"]) >= 0.25 * pages, "{kind}: {rd}");
            if kind == "file" {
                assert!(
                    f(&rd["pswpout"]) <= 0.1 * f(&rd["pgsteal_anon"]),
                    "{kind}: {rd}"
                );
            }
        }
        if kind == "file" {
            let (a, b) = (
                t["reclaim_clean_us"].as_float().unwrap(),
                f(&prof["reclaim_clean_us"]),
            );
            assert!(
                b >= 0.0 && (a - b).abs() <= 1e-12 * b.abs(),
                "reclaim_clean_us: {a} {b}"
            );
        }
        let (a, b) = (t["reclaim_us"].as_float().unwrap(), f(&prof["reclaim_us"]));
        assert!(
            b >= 0.0 && (a - b).abs() <= 1e-12 * b.abs(),
            "{kind} reclaim_us: {a} {b}"
        );
        // The same CPU over the pages scanned, which are at least those
        // written: per page scanned, at most the cost per page written.
        let (a, s) = (
            t["reclaim_scan_us"].as_float().unwrap(),
            f(&prof["reclaim_scan_us"]),
        );
        assert!(
            s >= 0.0 && (a - s).abs() <= 1e-12 * s.abs() && s <= b * (1.0 + 1e-9),
            "{kind} reclaim_scan_us: {a} {s}, reclaim_us {b}"
        );
        let ratio = f(&prof["compress_ratio"]);
        match kind {
            // Every 8-byte word holds a random 16-bit value: 2 of 8 bytes
            // are entropy, so no compressor stores less than a quarter;
            // the zero bytes make it compress well below 1.
            "zram" => assert!(ratio > 0.25 && ratio < 0.9, "zram ratio {ratio}"),
            _ => assert_eq!(ratio, 1.0),
        }
    }
    // The swap file's profile is the default one (`sim --device file:this`).
    let default = std::fs::read_to_string(d.join("home/device-profile.toml")).unwrap();
    assert!(default.contains("kind = \"file\""), "{default}");
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(&d.join("c.html"), Path::new("calibrate.png"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 1);
    assert_eq!(c.figures.len(), 2, "{c:?}");
}

#[test]
fn bad_calibrate_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["calibrate", "--kinds", "ssd"][..],
            "give file, zram, zswap or all",
        ),
        (
            &["calibrate", "--size", "12Q"][..],
            "give a size such as 64M",
        ),
        (&["calibrate", "--size", "64K"][..], "give 1M to 64G"),
        (
            &["calibrate", "--rounds", "0"][..],
            "--rounds: give 1 to 16",
        ),
        (
            &["calibrate", "--swap", "zswap"][..],
            "zswap is --kinds zswap",
        ),
        (
            &["calibrate", "--swap", "zram:8M", "--size", "8M"][..],
            "the area must hold twice the region",
        ),
        (&["calibrate", "--swap", "tape:8M"][..], "tape"),
    ] {
        let o = swaplab(dir.path(), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
