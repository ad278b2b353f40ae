//! `swaplab bench capture` (`swaplab_study::bench::capture`): the built-in
//! workloads' references recorded to /dev/null, a dropped pipe and a
//! trace file.

use swaplab_study::bench::capture::bench_capture;

#[test]
fn bench_capture_counts_the_same_references_in_every_mode() {
    // The recording is deterministic (seeded), so /dev/null, a dropped
    // pipe and the trace file see the same number of references; the
    // workload's own count is the trace's.
    let dir = tempfile::tempdir().unwrap();
    let rows = bench_capture(
        &["qsort".to_string(), "traverse".to_string()],
        "1M",
        &[],
        2,
        dir.path(),
        &mut |_, _, _| {},
    )
    .unwrap();
    let modes: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.workload.as_str(), r.mode.as_str()))
        .collect();
    assert_eq!(
        modes,
        [
            ("qsort", "record"),
            ("qsort", "pipe"),
            ("qsort", "capture"),
            ("traverse", "record"),
            ("traverse", "pipe"),
            ("traverse", "capture"),
        ]
    );
    for w in rows.chunks(3) {
        assert!(w[0].refs > 0);
        assert!(w.iter().all(|r| r.refs == w[0].refs), "{w:?}");
        assert!(w.iter().all(|r| r.cpu_s > 0.0 && r.wall_s > 0.0), "{w:?}");
        assert_eq!(w[0].vs_record, 1.0);
        assert!(w[0].bytes_per_ref.is_none() && w[1].bytes_per_ref.is_none());
        assert!(w[2].bytes_per_ref.unwrap() > 0.0);
    }
    // qsort of 1M (262,144 ints) records far more references than a
    // two-pass traverse of 256 pages cut at 3 per page and pass.
    assert!(rows[0].refs > 100 * rows[3].refs, "{rows:?}");
    // The traces were removed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let e = bench_capture(
        &["ls".to_string()],
        "1M",
        &[],
        1,
        dir.path(),
        &mut |_, _, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("does not record its references: give some of"),
        "{e}"
    );
}
