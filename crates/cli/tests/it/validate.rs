//! `swaplab validate` on a real kernel: the workload's recorded footprint
//! is its array, Belady's OPT never needs more page loads than the kernel
//! swapped in (a theorem: no algorithm, prefetching or not, loads fewer
//! pages), the simulated swap-outs are near the kernel's count, a missing
//! device profile is calibrated first, the predicted run time is what
//! `swaplab sim --device file:this --fault-path kernel --base-time T0`
//! predicts, `--policy linux,mglru` predicts with both (each what `swaplab
//! sim --policy P` predicts), and the system is as it was.
use crate::common;
use common::{f, root_json, swaplab, ROOT_SWAP};

#[test]
fn validate_traverse_against_the_kernel() {
    let test = &test_name!();
    let Some((dir, v)) = root_json(
        test,
        &ROOT_SWAP,
        "swaplab-validate-test-",
        &[
            "validate",
            "traverse",
            "--size",
            "16M",
            "--limits",
            "50%",
            "--swap",
            "file:256M",
            "--policy",
            "linux,mglru",
            "--json",
            "--save",
            "v.json",
        ],
    ) else {
        return;
    };
    let d = dir.path();
    // No profile in the fresh home: the swap file was calibrated first.
    assert!(d.join("home/device-profiles/file.toml").is_file());
    assert!(
        v["notes"].to_string().contains("calibrated it first"),
        "{}",
        v["notes"]
    );
    // The footprint is the 16 MiB array (4096 pages, one more when malloc's
    // header shifts it across a page boundary).
    let fp = f(&v["footprint_pages"]);
    assert!((4096.0..=4097.0).contains(&fp), "footprint {fp}");
    // The memory beside the array is the charged memory the unlimited
    // run's timeline saw (pages and kernel memory, without the per-CPU
    // charge stock the usage peak counts), or, where the timeline missed
    // the array, the peak, with a note saying so.
    let peak = f(&v["base_peak_bytes"]);
    let beside = match v["base_charged_bytes"].as_f64() {
        Some(c) => {
            let slack =
                64.0 * 4096.0 * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            assert!(
                c >= fp * 4096.0 && c <= peak + slack,
                "charged {c}, peak {peak}"
            );
            c
        }
        None => {
            assert!(
                v["notes"].to_string().contains("per-CPU charge stock"),
                "{}",
                v["notes"]
            );
            peak
        }
    };
    assert_eq!(
        f(&v["overhead_bytes"]),
        (beside - fp * 4096.0).max(0.0),
        "{v}"
    );
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["ok_runs"], 1, "{r}");
    let cap = f(&r["capacity_pages"]);
    assert!(
        cap < fp && cap > 0.4 * fp,
        "effective memory {cap} pages at 50%"
    );
    assert!(
        f(&r["measured_majflt"]) > 0.0 && f(&r["sim_majflt"]) > 0.0,
        "{r}"
    );
    // OPT's page loads beyond the first touches never exceed what the
    // kernel swapped in.
    assert_eq!(r["opt_check"], true, "{r}");
    assert!(f(&r["opt_loads"]) <= f(&r["measured_swapin"]), "{r}");
    // Both policies predicted, in the order asked; the row's own fields
    // are the first's (linux), as in results saved before --policy.
    assert_eq!(v["policies"], serde_json::json!(["linux", "mglru"]));
    let preds = r["predictions"].as_array().unwrap();
    let names: Vec<&str> = preds
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["linux", "mglru"], "{r}");
    assert_eq!(preds[0]["sim_majflt"], r["sim_majflt"]);
    assert_eq!(preds[0]["predicted_wall_s"], r["predicted_wall_s"]);
    // Swap-outs: traverse writes every page of every pass, so each pass
    // pushes out what does not fit; each policy's simulation must be near
    // the kernel (a loop larger than memory: LRU, the classic lists and
    // MGLRU's generations all evict the page used longest ago). Major
    // faults are not bounded here: at 16 MiB the kernel's readahead and
    // the machine-wide swap counters of cgroup v1 move them by tens of
    // percent (docs/fidelity.md); the fidelity tables are benchmarks.
    for p in preds {
        let err = f(&p["swapout_err"]);
        assert!(
            err.abs() < 0.5,
            "{}: swap-outs predicted {} against {}",
            p["policy"],
            p["sim_swapout"],
            r["measured_swapout"]
        );
    }
    // The kernel's reclaim counters beside linux's: the group's reclaim
    // scanned at least what it freed, and freed pages (traverse at 50 %
    // evicts half its array every pass); linux counts the same; MGLRU
    // does not model the classic lists and counts none.
    let m = &r["measured_reclaim"];
    assert!(
        f(&m["pgsteal"]) > 0.0 && f(&m["pgscan"]) >= f(&m["pgsteal"]),
        "{m}"
    );
    let k = &preds[0]["reclaim"];
    assert!(
        f(&k["pgsteal"]) >= 0.4 * fp && f(&k["pgscan"]) >= f(&k["pgsteal"]),
        "{k}"
    );
    // As root with tracefs, the runs trace their own reclaim: the counts
    // are the group's, and they include the folios a scan found
    // referenced once and kept (the first scan of a page the sweep just
    // faulted in finds it young), which linux counts too. (MGLRU reclaims
    // without the classic lists' events: validate keeps /proc/vmstat's
    // counters then.)
    let mglru = std::fs::read_to_string("/sys/kernel/mm/lru_gen/enabled")
        .is_ok_and(|s| s.trim() != "0x0000");
    if swaplab_host::reclaim_trace::available() && !mglru {
        assert_eq!(m["traced"], true, "{m}");
        assert!(f(&m["ref_keep"]) > 0.0, "{m}");
        assert!(f(&k["ref_keep"]) > 0.0, "{k}");
    }
    assert!(preds[1].get("reclaim").is_none(), "{}", preds[1]);
    // Two code paths, one answer: `swaplab sim` on the validation's trace
    // at the effective memory of the prediction (the member of the row's
    // capacity ensemble with the median major faults), with the machine's
    // readahead, the calibrated profile (`file:this`), the kernel's fault
    // path and the unlimited run's time, predicts exactly the run time
    // validate printed.
    let t0 = f(&v["base_wall_s"]);
    assert!(t0 > 0.0, "{v}");
    let t0_s = format!("{t0}");
    let spread = v["capacity_spread_pages"].as_u64().unwrap();
    assert!(spread >= 64 && spread % 64 == 0, "{v}");
    for p in preds {
        let policy = p["policy"].as_str().unwrap();
        let ens = p["ensemble"].as_array().unwrap();
        let caps: Vec<u64> = ens
            .iter()
            .map(|m| m["capacity"].as_u64().unwrap())
            .collect();
        let c = cap as u64;
        assert_eq!(
            caps,
            vec![c - spread, c - spread / 2, c, c + spread / 2, c + spread],
            "{p}"
        );
        let mut majs: Vec<u64> = ens.iter().map(|m| m["majflt"].as_u64().unwrap()).collect();
        majs.sort();
        assert_eq!(p["sim_majflt"].as_u64(), Some(majs[2]), "{p}");
        let mem = common::sim_command_mem(p);
        assert!(caps.contains(&mem), "{p}");
        let cap_s = mem.to_string();
        let sim = swaplab(
            d,
            &[
                "sim",
                v["trace"].as_str().unwrap(),
                "--policy",
                policy,
                "--prefetch",
                v["readahead"].as_str().unwrap(),
                "--mem",
                &cap_s,
                "--device",
                "file:this",
                "--fault-path",
                "kernel",
                "--base-time",
                &t0_s,
                "--json",
            ],
        );
        assert!(
            sim.status.success(),
            "{}",
            String::from_utf8_lossy(&sim.stderr)
        );
        let sim: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
        let s = &sim[0];
        assert_eq!(s["capacity"].to_string(), cap_s, "{s}");
        assert_eq!(s["major_faults"], p["sim_majflt"], "{policy}: {s}");
        assert_eq!(s["swap_outs"], p["sim_swapout"], "{policy}: {s}");
        let (p_sim, p_val) = (f(&s["cost"]["predicted_time_s"]), f(&p["predicted_wall_s"]));
        assert!(
            (p_sim - p_val).abs() <= 1e-12 * p_val,
            "{policy}: sim predicts {p_sim} s, validate {p_val} s"
        );
        assert!(
            p["sim_command"]
                .to_string()
                .contains(&format!("\"{policy}\"")),
            "{p}"
        );
    }
    let p_val = f(&r["predicted_wall_s"]);
    // The prediction is the base plus the simulated stalls, and the row
    // says how to reproduce it.
    assert!((p_val - t0 - f(&r["sim_fault_time_s"])).abs() < 1e-9, "{r}");
    let cmd = r["sim_command"].to_string();
    assert!(
        cmd.contains("--device") && cmd.contains("--base-time"),
        "{cmd}"
    );
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("v.json")).unwrap()).unwrap();
    assert_eq!(saved["kind"], "swaplab.validate");
    let rep = swaplab(d, &["report", "v.json", "-o", "v.html"]);
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
}

/// A limit whose runs did not end ok gets `--retries` more runs, each
/// kept and listed: 8 MiB traversed under a quarter of its peak with 1 MiB
/// of swap cannot fit, so the kernel's OOM killer ends every run.
#[test]
fn validate_retries_runs_that_did_not_end_ok() {
    let test = &test_name!();
    let Some((_dir, v)) = root_json(
        test,
        &ROOT_SWAP,
        "swaplab-validate-retry-",
        &[
            "validate",
            "traverse",
            "--size",
            "8M",
            "--limits",
            "25%",
            "--swap",
            "file:1M",
            "--retries",
            "2",
            "--policy",
            "linux",
            "--json",
        ],
    ) else {
        return;
    };
    let r = &v["rows"][0];
    assert_eq!(r["ok_runs"], 0, "{r}");
    assert_eq!(r["not_ok"], serde_json::json!(["oom", "oom", "oom"]), "{r}");
    assert!(r["measured_majflt"].is_null(), "{r}");
    assert_eq!(v["retry_sweeps"].as_array().map(Vec::len), Some(2), "{v}");
}

#[test]
fn bad_validate_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["validate", "ls"][..], "is neither a built-in workload"),
        (
            &["validate", "qsort", "--limits", "50"][..],
            "give percentages of the peak",
        ),
        (
            &["validate", "qsort", "--limits", "150%"][..],
            "in (0, 100]",
        ),
        (
            &["validate", "qsort", "--swap", "zswap"][..],
            "give file:SIZE or zram:SIZE",
        ),
        (
            &["validate", "qsort", "--repeat", "0"][..],
            "--repeat: give 1 to 100",
        ),
        (
            &[
                "validate", "qsort", "--swap", "zram:8M", "--swap", "zram:64M",
            ][..],
            "give each area its own priority",
        ),
        (
            &[
                "validate",
                "qsort",
                "--swap",
                "zram:8M,prio=5",
                "--swap",
                "zram:9M,prio=5",
            ][..],
            "the fast one higher",
        ),
        (
            &[
                "validate", "qsort", "--swap", "zram:8M", "--swap", "zram:9M", "--swap", "zram:10M",
            ][..],
            "two of different priority",
        ),
    ] {
        let o = swaplab(dir.path(), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn validate_predicts_what_sim_predicts() {
    // Two code paths, one answer, without root: validate's prediction
    // (`swaplab_study::validate::predict`) and `swaplab sim --device PROFILE
    // --fault-path kernel --base-time T` on the same recorded trace and
    // capacity give the same run time, faults and swap-outs.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = swaplab(
        d,
        &[
            "trace",
            "--refs",
            "-o",
            "t.parquet",
            "--",
            "swaplab-workload",
            "traverse",
            "--size",
            "4M",
            "--passes",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let profile = d.join("p.toml");
    std::fs::write(
        &profile,
        swaplab_sim::device::DeviceProfile::example().to_toml(),
    )
    .unwrap();
    let trace_path = d.join("t.parquet");
    let t = swaplab_trace::DenseTrace::load(
        &mut swaplab_trace::native::NativeReader::open(&trace_path).unwrap(),
    )
    .unwrap();
    let device = swaplab_sim::DeviceSpec::parse(profile.to_str().unwrap(), None).unwrap();
    // A third of the 1,024 pages, with cluster readahead of 8 pages; the
    // classic lists, and the lists with their writes on a clock (whose
    // sleeps on writeback are part of the predicted time).
    let (cap, base) = (341u64, 0.25);
    for policy in [
        "linux",
        "linux:reclaim=batch:writeback=async:write_us=40:ref_us=0.5:read_us=60",
    ] {
        let p = swaplab_study::validate::predict(
            &t,
            &trace_path,
            policy,
            cap,
            "cluster:pc=3",
            &swaplab_study::validate::Costing {
                device: &device,
                paths: &[swaplab_sim::FaultPath::parse("kernel").unwrap()],
                base_wall: Some(base),
                spread: 0,
            },
        )
        .unwrap()
        .unwrap();
        assert!(p.sim.counters.major_faults > 0 && p.sim.counters.swap_outs > 0);
        let cost = p.cost.as_ref().unwrap();
        assert_eq!(p.predicted, cost.predicted_time_s);
        assert!(
            (p.predicted.unwrap() - base - cost.fault_time_s - cost.writeback_time_s).abs() < 1e-12
        );
        let wb = p.sim.reclaim.unwrap();
        assert_eq!(cost.writeback_time_s, wb.wait_s + wb.throttle_s);
        if policy != "linux" {
            // 40 µs a page written against 0.5 µs a reference: the reclaimer
            // waits on writeback.
            assert!(wb.waits > 0 && cost.writeback_time_s > 0.0, "{wb:?}");
        }
        // The CLI, given the flags by hand and given the row's command.
        let by_hand: Vec<String> = [
            "sim",
            trace_path.to_str().unwrap(),
            "--policy",
            policy,
            "--prefetch",
            "cluster:pc=3",
            "--mem",
            "341",
            "--device",
            profile.to_str().unwrap(),
            "--fault-path",
            "kernel",
            "--base-time",
            "0.25",
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut from_row = p.sim_command[1..].to_vec();
        from_row.push("--json".into());
        for args in [by_hand, from_row] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = swaplab(d, &args);
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let s = &v[0];
            assert_eq!(s["capacity"], cap, "{s}");
            assert_eq!(s["major_faults"], p.sim.counters.major_faults, "{s}");
            assert_eq!(s["swap_outs"], p.sim.counters.swap_outs, "{s}");
            assert_eq!(s["prefetch_reads"], p.sim.counters.prefetch_reads, "{s}");
            let ps = f(&s["cost"]["predicted_time_s"]);
            let pv = p.predicted.unwrap();
            assert!((ps - pv).abs() <= 1e-12 * pv, "sim {ps} s, validate {pv} s");
        }
    }
}

/// Two tiers (`--swap` twice, each with its priority): each row holds the
/// writes each zram area's own device counted, as the runs recorded them
/// (`swaplab show`: the records' `swap_areas`), and the writes the
/// simulator's priority tiering predicts, exactly what `swaplab sim` with
/// the row's command computes; the prediction is near the kernel (the
/// fast area's share within 5 points: crates/lab/tests/it/swap_tiers.rs
/// holds the model to 3 on hand-written traces), the slow area started
/// filling, and the report draws both. (zram frees a slot at swap-in, so
/// the fast area fills only when more pages than it holds are out at once:
/// 24 MiB at 75 % of the peak left about 1,550 out, all on the 8 MiB area,
/// predicted and measured. 32 MiB at 75 % is at the edge: the simulation
/// had 2,017–2,080 pages out against the area's 2,047 slots, by the few
/// pages the measured overhead moved between runs, and once put nothing on
/// the slow area where the kernel put 6,643. At 50 %, about 4,100 are out,
/// twice the fast area.)
#[test]
fn validate_two_tiers_predicts_each_areas_writes() {
    let test = &test_name!();
    let mut needs = ROOT_SWAP.to_vec();
    needs.push(swaplab_testkit::Facility::Zram);
    let Some((dir, v)) = root_json(
        test,
        &needs,
        "swaplab-validate-tiers-",
        &[
            "validate",
            "traverse",
            "--size",
            "32M",
            "--limits",
            "50%",
            "--swap",
            "zram:64M,prio=5",
            "--swap",
            "zram:8M,prio=10",
            "--json",
            "--save",
            "v.json",
            "--report",
            "v.html",
        ],
    ) else {
        return;
    };
    let d = dir.path();
    // The higher priority is the fast tier, whichever --swap came first.
    assert_eq!(v["swap"], "zram:8M,prio=10", "{v}");
    assert_eq!(v["lower_tier"], "zram:64M,prio=5", "{v}");
    // zram's store is outside the group's limit: the profile is simulated
    // with ram=0, so no row is left out for want of memory (at 50 % a zram
    // profile counting its pages in the memory left none).
    assert!(
        v["device"].as_str().unwrap().ends_with("zram.toml:ram=0"),
        "{v}"
    );
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    for r in rows {
        let p = &r["predictions"][0];
        assert!(
            p["sim_command"].to_string().contains("zram.toml:ram=0"),
            "{p}"
        );
    }
    let r = &rows[0];
    let t = &r["tiers"];
    // Measured: the run's own record of each area's device.
    let id = r["runs"][0].as_i64().unwrap();
    let o = swaplab(d, &["show", &id.to_string(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let area = |prio: i64| {
        run["swap_areas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["traffic"]["priority"] == prio)
            .unwrap_or_else(|| panic!("no area at prio {prio}: {}", run["swap_areas"]))
            .clone()
    };
    let written = |a: &serde_json::Value| f(&a["traffic"]["moved"]["sectors_written"]) / 8.0;
    let (fast, slow) = (area(10), area(5));
    assert_eq!(f(&t["measured_fast_writes"]), written(&fast), "{t}");
    assert_eq!(f(&t["measured_slow_writes"]), written(&slow), "{t}");
    assert!(
        f(&t["measured_slow_writes"]) > 0.0,
        "the slow area took nothing: {t}"
    );
    assert!(t["measured_slow_from_s"].as_f64().is_some(), "{t}");
    // Predicted: the row's `swaplab sim` command gives the same writes.
    let cmd: Vec<String> = t["sim_command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(cmd[..2], ["swaplab", "sim"], "{cmd:?}");
    assert!(
        cmd.iter()
            .any(|a| a.starts_with("hybrid:ssd+ssd:") && a.contains("rules=prio")),
        "{cmd:?}"
    );
    let mut args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
    args.push("--json");
    let o = swaplab(d, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let h = &sim[0]["cost"]["hybrid"];
    assert_eq!(h["fast_writes"], t["predicted_fast_writes"], "{h}");
    assert_eq!(h["disk_writes"], t["predicted_slow_writes"], "{h}");
    // The 8 MiB area's 2,047 slots (less the header page) go first.
    assert_eq!(t["predicted_slow_from_write"], 2048, "{t}");
    let share_err = f(&t["fast_share_err"]);
    assert!(
        share_err.abs() <= 0.05,
        "the fast area's share: predicted − measured = {share_err:.4} ({t})"
    );
    let html = std::fs::read_to_string(d.join("v.html")).unwrap();
    assert!(html.contains("Writes per swap area: measured and predicted"));
}
