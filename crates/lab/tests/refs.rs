//! Reference capture of real programs under valgrind lackey
//! (`swaplab_lab::refs`). Skipped (counted, with the reason) where valgrind
//! is not installed.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use swaplab_lab::refs::{capture_refs, RefOptions};
use swaplab_lab::workload;
use swaplab_trace::native::NativeReader;
use swaplab_trace::{RefBatch, RefSource, Source};

/// Records a skip (and returns false) when valgrind is not installed.
fn have_valgrind(test: &str) -> bool {
    !swaplab_testkit::skip_unless_program(test, "valgrind", "apt-get install valgrind")
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The `--objects` line of `name` on the workload's stderr: (start, end).
fn object_range(stderr: &str, name: &str) -> (u64, u64) {
    for line in stderr.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["object"] == name {
            let hex = |k: &str| {
                let s = v[k].as_str().unwrap();
                u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
            };
            return (hex("start"), hex("end"));
        }
    }
    panic!("no --objects line for {name} in {stderr:?}");
}

/// Counts of references per page of a native trace.
fn page_counts(path: &Path) -> (HashMap<u64, u64>, u64) {
    let mut r = NativeReader::open(path).unwrap();
    let mut b = RefBatch::default();
    let mut counts = HashMap::new();
    let mut n = 0;
    while r.next_batch(&mut b, 1 << 16).unwrap() {
        for &p in &b.page {
            *counts.entry(p).or_insert(0) += 1;
            n += 1;
        }
    }
    (counts, n)
}

#[test]
fn captures_every_page_of_a_traverse() {
    if !have_valgrind("captures_every_page_of_a_traverse") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refs.parquet");
    let err = dir.path().join("stderr.txt");
    let cmd = args("swaplab-workload traverse --size 1M --passes 2 --objects");
    let opts = RefOptions {
        stderr_to: Some(err.clone()),
        ..Default::default()
    };
    let cap = capture_refs(&cmd, &out, &opts).unwrap();
    assert_eq!(cap.exit_code, Some(0), "{cap:?}");
    assert_eq!(cap.meta.source, Source::Captured { command: cmd });
    assert_eq!(cap.meta.page_size, 4096);
    let (counts, n) = page_counts(&out);
    assert_eq!(n, cap.refs);
    assert_eq!(counts.len() as u64, cap.distinct_pages);
    assert!(cap.distinct_pages >= 256, "{}", cap.distinct_pages);
    let (start, end) = object_range(&std::fs::read_to_string(&err).unwrap(), "array");
    assert_eq!(end - start, 1 << 20);
    let pages = start / 4096..=(end - 1) / 4096;
    for p in pages.clone() {
        let c = counts.get(&p).copied().unwrap_or(0);
        assert!(c >= 2, "page {p:#x} of the array referenced {c} times");
    }
    // Each pass reads and writes every 8-byte word: 1 MiB / 8 × 2 passes × 2
    // accesses, plus the fill's writes.
    let in_array: u64 = pages.map(|p| counts.get(&p).copied().unwrap_or(0)).sum();
    assert!(in_array >= (1 << 17) * 5, "{in_array}");
    println!(
        "traverse 1M x2: {} refs, {} distinct pages, {} in the array, {:.2} s, {:.1} M refs/s",
        cap.refs,
        cap.distinct_pages,
        in_array,
        cap.wall_ns as f64 / 1e9,
        cap.refs as f64 / (cap.wall_ns as f64 / 1e9) / 1e6
    );
}

#[test]
fn failing_command_reports_its_exit_code() {
    if !have_valgrind("failing_command_reports_its_exit_code") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refs.parquet");
    let cmd = vec!["sh".to_string(), "-c".into(), "exit 3".into()];
    let cap = capture_refs(&cmd, &out, &RefOptions::default()).unwrap();
    assert_eq!(cap.exit_code, Some(3));
    assert!(
        cap.refs > 0,
        "the shell's own references are still captured"
    );
    assert!(NativeReader::open(&out).is_ok());
}

fn direct_wall(cmd: &[String]) -> f64 {
    let argv = workload::resolve_command(cmd).unwrap();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let st = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

/// The slowdown of a capture against a direct run (numbers for the module
/// docs): `cargo test --release -p swaplab-lab --test refs -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_slowdown() {
    if !have_valgrind("measure_slowdown") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for c in [
        "swaplab-workload traverse --size 4M --passes 2",
        "swaplab-workload qsort --size 1M",
    ] {
        let cmd = args(c);
        let direct = direct_wall(&cmd);
        let out = dir.path().join("refs.parquet");
        let mut best: Option<swaplab_lab::refs::RefCapture> = None;
        for _ in 0..3 {
            let cap = capture_refs(&cmd, &out, &RefOptions::default()).unwrap();
            assert_eq!(cap.exit_code, Some(0));
            if best.as_ref().is_none_or(|b| cap.wall_ns < b.wall_ns) {
                best = Some(cap);
            }
        }
        let cap = best.unwrap();
        let captured = cap.wall_ns as f64 / 1e9;
        let size = std::fs::metadata(&out).unwrap().len();
        println!(
            "{c}: direct {direct:.4} s, captured {captured:.3} s, slowdown {:.0}x, {} refs, {} distinct pages, {:.2} M refs/s, {} bytes ({:.2} bytes/ref)",
            captured / direct,
            cap.refs,
            cap.distinct_pages,
            cap.refs as f64 / captured / 1e6,
            size,
            size as f64 / cap.refs as f64
        );
    }
}
