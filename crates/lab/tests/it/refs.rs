//! Reference capture of real programs under valgrind lackey
//! (`swaplab_lab::refs`). Skipped (counted, with the reason) where valgrind
//! is not installed.

use crate::common;

use common::{args, object_range};
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
    if !have_valgrind(&test_name!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refs.parquet");
    let err = dir.path().join("stderr.txt");
    let cmd = args("swaplab-workload traverse --size 1M --passes 2 --objects");
    let opts = RefOptions {
        stderr_to: Some(err.clone()),
        lackey: true,
        ..Default::default()
    };
    let cap = capture_refs(&cmd, &out, &opts).unwrap();
    assert_eq!(cap.exit_code, Some(0), "{cap:?}");
    assert_eq!(cap.method, "lackey");
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
    if !have_valgrind(&test_name!()) {
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
/// docs): `cargo test --release -p swaplab-lab --test it -- --ignored --nocapture refs::`.
#[test]
#[ignore]
fn measure_slowdown() {
    if !have_valgrind(&test_name!()) {
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
            let opts = RefOptions {
                lackey: true,
                ..Default::default()
            };
            let cap = capture_refs(&cmd, &out, &opts).unwrap();
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

/// (page, write) of every reference of a native trace, in order.
fn refs_of(path: &Path) -> Vec<(u64, bool)> {
    let mut r = NativeReader::open(path).unwrap();
    let mut b = RefBatch::default();
    let mut out = Vec::new();
    while r.next_batch(&mut b, 1 << 16).unwrap() {
        out.extend(b.page.iter().copied().zip(b.write.iter().copied()));
    }
    out
}

/// Runs of one page collapsed to one reference (written if any was).
fn collapsed(refs: &[(u64, bool)]) -> Vec<(u64, bool)> {
    let mut out: Vec<(u64, bool)> = Vec::new();
    for &(p, w) in refs {
        match out.last_mut() {
            Some(last) if last.0 == p => last.1 |= w,
            _ => out.push((p, w)),
        }
    }
    out
}

/// A built-in workload records its own references (no valgrind): the
/// traverse's stream is, page by page, the fill and then each pass over
/// the array in address order, every page written — the hand-made model
/// `bench hints` simulates — with runs cut at 3 references, and the
/// workload's own counts add up.
#[test]
fn a_builtin_workload_records_the_references_the_model_predicts() {
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
    assert_eq!(cap.method, "instrumented");
    assert!(matches!(
        cap.meta.source,
        Source::Instrumented { max_repeat: 3, .. }
    ));
    let (start, end) = object_range(&std::fs::read_to_string(&err).unwrap(), "array");
    let (first, last) = (start / 4096, (end - 1) / 4096);
    let refs = refs_of(&out);
    assert_eq!(refs.len() as u64, cap.refs);
    // Only the array's pages.
    assert!(refs.iter().all(|r| (first..=last).contains(&r.0)));
    // Page order: 3 sweeps (fill + 2 passes) over the pages in address order.
    let pages: Vec<u64> = (first..=last).collect();
    let want: Vec<(u64, bool)> = (0..3)
        .flat_map(|_| pages.iter().map(|&p| (p, true)))
        .collect();
    assert_eq!(collapsed(&refs), want);
    // Runs cut at 3: a page holding k ≥ 3 of the array's words appears 3
    // times per sweep, a page holding k < 3 words k times.
    let words_on = |p: u64| -> u64 {
        let lo = (p * 4096).max(start);
        let hi = ((p + 1) * 4096).min(end);
        (hi - lo) / 8
    };
    let per_sweep: u64 = pages.iter().map(|&p| words_on(p).min(3)).sum();
    assert_eq!(cap.refs, 3 * per_sweep);
    let w = cap.workload_output.as_ref().unwrap();
    let accesses = w["refs"]["accesses"].as_u64().unwrap();
    assert_eq!(
        accesses,
        3 * (1 << 20) / 8,
        "fill + 2 passes, one access per word"
    );
    assert_eq!(
        accesses,
        cap.refs + w["refs"]["cut_repeats"].as_u64().unwrap()
    );
}

/// Lackey (valgrind, the machine's own loads and stores) and the
/// workload's own recording agree on the array: the same pages in the same
/// order, runs collapsed, reads and writes alike.
#[test]
fn the_recording_agrees_with_lackey_on_the_array() {
    if !have_valgrind(&test_name!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seqs = Vec::new();
    for lackey in [false, true] {
        let out = dir.path().join(format!("refs-{lackey}.parquet"));
        let err = dir.path().join(format!("stderr-{lackey}.txt"));
        let cmd = args("swaplab-workload traverse --size 256K --passes 1 --objects");
        let opts = RefOptions {
            stderr_to: Some(err.clone()),
            lackey,
            ..Default::default()
        };
        let cap = capture_refs(&cmd, &out, &opts).unwrap();
        assert_eq!(cap.exit_code, Some(0));
        let (start, end) = object_range(&std::fs::read_to_string(&err).unwrap(), "array");
        let (first, last) = (start / 4096, (end - 1) / 4096);
        // Relative to the array's first page (the two runs map it apart).
        // That page also holds malloc's chunk header, which malloc and free
        // touch (lackey sees them, the workload does not record them):
        // compare the pages after it.
        let on_array: Vec<(u64, bool)> = refs_of(&out)
            .into_iter()
            .filter(|r| (first + 1..=last).contains(&r.0))
            .map(|(p, w)| (p - first, w))
            .collect();
        seqs.push(collapsed(&on_array));
    }
    assert!(!seqs[0].is_empty());
    let at = seqs[0].iter().zip(&seqs[1]).position(|(a, b)| a != b);
    assert_eq!(
        seqs[0],
        seqs[1],
        "lengths {} and {}; first difference at {at:?}: {:?}",
        seqs[0].len(),
        seqs[1].len(),
        at.map(|i| (
            &seqs[0][i.saturating_sub(2)..],
            &seqs[1][i.saturating_sub(2)..]
        ))
    );
}
