//! `swaplab validate` on a real kernel: the workload's recorded footprint
//! is its array, Belady's OPT never needs more page loads than the kernel
//! swapped in (a theorem: no algorithm, prefetching or not, loads fewer
//! pages), the simulated swap-outs are near the kernel's count, a missing
//! device profile is calibrated first, the predicted run time is what
//! `swaplab sim --device file:this --fault-path kernel --base-time T0`
//! predicts, and the system is as it was.
mod common;
use common::{f, swaplab};

use swaplab_testkit::{skip_unless, system_state, Facility};

#[test]
fn validate_traverse_against_the_kernel() {
    let test = "validate_traverse_against_the_kernel";
    if skip_unless(
        test,
        &[Facility::Root, Facility::MemoryCgroup, Facility::Swapfile],
    ) {
        return;
    }
    let before = system_state();
    let dir = tempfile::Builder::new()
        .prefix("swaplab-validate-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let d = dir.path();
    let o = swaplab(
        d,
        &[
            "validate",
            "traverse",
            "--size",
            "16M",
            "--limits",
            "50%",
            "--swap",
            "file:256M",
            "--json",
            "--save",
            "v.json",
        ],
    );
    assert_eq!(
        system_state(),
        before,
        "{test}: the system was left changed"
    );
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
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
    // Swap-outs: traverse writes every page of every pass, so each pass
    // pushes out what does not fit; the simulation must be near the kernel.
    let err = f(&r["swapout_err"]);
    assert!(
        err.abs() < 0.5,
        "swap-outs predicted {} against {}",
        r["sim_swapout"],
        r["measured_swapout"]
    );
    // Two code paths, one answer: `swaplab sim` on the validation's trace
    // at the row's effective memory, with the machine's readahead, the
    // calibrated profile (`file:this`), the kernel's fault path and the
    // unlimited run's time, predicts exactly the run time validate printed.
    let t0 = f(&v["base_wall_s"]);
    assert!(t0 > 0.0, "{v}");
    let cap_s = (cap as u64).to_string();
    let t0_s = format!("{t0}");
    let sim = swaplab(
        d,
        &[
            "sim",
            v["trace"].as_str().unwrap(),
            "--policy",
            "linux",
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
    assert_eq!(s["capacity"], r["capacity_pages"], "{s}");
    assert_eq!(s["major_faults"], r["sim_majflt"], "{s}");
    assert_eq!(s["swap_outs"], r["sim_swapout"], "{s}");
    let (p_sim, p_val) = (f(&s["cost"]["predicted_time_s"]), f(&r["predicted_wall_s"]));
    assert!(
        (p_sim - p_val).abs() <= 1e-12 * p_val,
        "sim predicts {p_sim} s, validate {p_val} s"
    );
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

#[test]
fn bad_validate_arguments_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["validate", "ls"][..], "not a built-in workload"),
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
    ] {
        let o = swaplab(dir.path(), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
