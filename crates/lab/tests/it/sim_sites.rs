//! Allocation sites of captured reference traces (`trace --refs` with the
//! preload library) and `sim --hints` site hints on them: the sidecar's
//! allocation is the one the workload itself reports (`--objects`), and
//! advise-style site hints simulate exactly like range hints over that
//! allocation, and unlike no hints. The lackey case is skipped (counted,
//! with the reason) where valgrind is not installed.

use crate::common;

use common::{args, object_range};
use std::path::Path;

use swaplab_analysis::advise::{Action, Advice};
use swaplab_analysis::hints::{self, HintFile};
use swaplab_analysis::sim_hints::resolve_sim_hints;
use swaplab_lab::refs::{capture_refs, RefOptions};
use swaplab_sim::{simulate_ext, Counters, Extras, PolicySpec, PrefetchSpec, RangeHint};
use swaplab_trace::alloc_sites::{sidecar_path, AllocSites};
use swaplab_trace::native::NativeReader;
use swaplab_trace::DenseTrace;

/// A hint file as `advise` writes it (through `from_advice` and back from
/// its TOML) for the site `frames`.
fn advised(frames: &[String], actions: &[Action], budget: u64) -> HintFile {
    let advice: Vec<Advice> = actions
        .iter()
        .map(|a| Advice {
            site_id: 1,
            site_frames: frames.to_vec(),
            location: "traverse.c:71".into(),
            action: *a,
            evidence: "test".into(),
            expected: "test".into(),
            expected_fault_reduction: 0.5,
            expected_faults_saved: 1,
            prediction: None,
        })
        .collect();
    let text = hints::from_advice(&advice, budget).to_toml();
    hints::parse(&text, "advised.toml").unwrap()
}

/// The same hints as range hints over `start..end`.
fn as_ranges(file: &HintFile, start: u64, end: u64) -> HintFile {
    let mut f = file.clone();
    for h in &mut f.hints {
        h.site.clear();
        h.range = Some((start, end));
    }
    hints::parse(&f.to_toml(), "ranges.toml").unwrap()
}

fn sim(t: &DenseTrace, policy: &str, prefetch: &str, cap: usize, h: &[RangeHint]) -> Counters {
    let spec = PolicySpec::parse(policy).unwrap();
    let pf = PrefetchSpec::parse(prefetch).unwrap();
    let x = Extras {
        prefetch: Some(&pf),
        hints: h,
    };
    simulate_ext(t, None, &spec, cap, 42, &x, &|_| {})
        .unwrap()
        .counters
}

/// Captures `traverse --size SIZE --passes 2` and checks its sites and
/// their hints.
fn check_traverse(size: u64, lackey: bool, dir: &Path) {
    let out = dir.join("refs.parquet");
    let err = dir.join("stderr.txt");
    let cmd = args(&format!(
        "swaplab-workload traverse --size {size} --passes 2 --objects"
    ));
    let opts = RefOptions {
        stderr_to: Some(err.clone()),
        lackey,
        allocs: true,
        ..Default::default()
    };
    let cap = capture_refs(&cmd, &out, &opts).unwrap();
    assert_eq!(cap.exit_code, Some(0), "{cap:?}");
    assert_eq!(cap.method, if lackey { "lackey" } else { "instrumented" });
    let written = cap.sites.clone().expect("a sidecar");
    assert_eq!(written.path, sidecar_path(&out));
    assert!(cap.notes.is_empty(), "{:?}", cap.notes);

    // The sidecar's one allocation of at least 64 KiB is the array the
    // workload reports (its own view of its address), with its stack.
    let sites = AllocSites::read(&written.path).unwrap();
    sites
        .check_trace(cap.meta.count, cap.meta.distinct_pages, 4096)
        .unwrap();
    let (start, end) = object_range(&std::fs::read_to_string(&err).unwrap(), "array");
    assert_eq!(end - start, size);
    let big: Vec<_> = sites
        .allocations
        .iter()
        .filter(|a| a.size >= 65536)
        .collect();
    assert_eq!(big.len(), 1, "{:?}", sites.allocations);
    assert_eq!((big[0].start, big[0].size), (start, size));
    assert!(big[0].free_seq.is_some(), "traverse frees its array");
    let site = sites.site(big[0].site_id).unwrap();
    assert!(site.frames[0].contains("!xmalloc+0x"), "{:?}", site.frames);
    // The recording build runs the recording copy of the function.
    let caller = if lackey {
        "!run_traverse+0x"
    } else {
        "!run_traverse_refs+0x"
    };
    assert!(site.frames[1].contains(caller), "{:?}", site.frames);
    assert!(
        site.frames[0].starts_with(&sites.program),
        "{} {:?}",
        sites.program,
        site.frames
    );
    // Every page of the array is in the trace: both views agree on where
    // it is.
    let t = DenseTrace::load(&mut NativeReader::open(&out).unwrap()).unwrap();
    let pages: std::collections::HashSet<u64> = t.pages.iter().copied().collect();
    for p in start / 4096..end.div_ceil(4096) {
        assert!(pages.contains(&p), "array page {p:#x} is not in the trace");
    }

    // advise-style hints: lock the first quarter of the array, prefetch a
    // 64 KiB window in it. Simulated at half the array.
    let quarter = size / 4;
    let file = advised(
        &site.frames,
        &[
            Action::Mlock { bytes: quarter },
            Action::Willneed {
                window_bytes: 65536,
                chunk_bytes: 32768,
            },
        ],
        quarter,
    );
    assert_eq!(file.hints.len(), 2);
    assert_eq!(
        file.hints[0].site,
        site.frames[..3].to_vec(),
        "advise's key frames"
    );
    let by_site = resolve_sim_hints(&file, 4096, 1000, Some(&sites)).unwrap();
    assert_eq!(by_site.matched, vec![Some(1), Some(1)]);
    assert!(by_site.warnings.is_empty(), "{:?}", by_site.warnings);
    let by_range = resolve_sim_hints(&as_ranges(&file, start, end), 4096, 1000, None).unwrap();
    assert_eq!(by_site.ranges, by_range.ranges);
    let cap_pages = (size / 4096 / 2) as usize;
    for (policy, prefetch) in [("linux", "none"), ("linux", "vma"), ("lru", "cluster:pc=3")] {
        let s = sim(&t, policy, prefetch, cap_pages, &by_site.ranges);
        let r = sim(&t, policy, prefetch, cap_pages, &by_range.ranges);
        let none = sim(&t, policy, prefetch, cap_pages, &[]);
        assert_eq!(s, r, "{policy} {prefetch}");
        assert!(
            s.major_faults < none.major_faults,
            "{policy} {prefetch}: {} with hints, {} without",
            s.major_faults,
            none.major_faults
        );
        println!(
            "traverse {size} ({}) {policy} {prefetch} at {cap_pages} pages: {} major faults with the site hints, {} without",
            cap.method, s.major_faults, none.major_faults
        );
    }
    // A hint for another site matches nothing: reported with its number.
    let mut other = file.clone();
    other.hints[1].site = vec![format!("{}!no_such_function+0x10", sites.program)];
    let h = resolve_sim_hints(&other, 4096, 1000, Some(&sites)).unwrap();
    assert_eq!(h.matched, vec![Some(1), Some(0)]);
    assert_eq!(h.warnings.len(), 1, "{:?}", h.warnings);
    assert!(
        h.warnings[0].starts_with("hint 2 (site "),
        "{}",
        h.warnings[0]
    );
    assert_eq!(
        h.warnings[0].contains("capture with `swaplab trace --refs --lackey`"),
        !lackey,
        "{}",
        h.warnings[0]
    );
}

#[test]
fn instrumented_capture_carries_the_array_site() {
    let dir = tempfile::tempdir().unwrap();
    check_traverse(4 << 20, false, dir.path());
    // No leftovers: the trace, its sidecar and the test's stderr file.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["refs.parquet", "refs.parquet.sites.json", "stderr.txt"]
    );
}

#[test]
fn lackey_capture_carries_the_array_site() {
    if swaplab_testkit::skip_unless_program(&test_name!(), "valgrind", "apt-get install valgrind") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_traverse(2 << 20, true, dir.path());
}

#[test]
fn without_allocs_no_sidecar_and_a_stale_one_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refs.parquet");
    let stale = sidecar_path(&out);
    std::fs::write(&stale, "{}").unwrap();
    let cmd = args("swaplab-workload traverse --size 256K --passes 1");
    let cap = capture_refs(&cmd, &out, &RefOptions::default()).unwrap();
    assert_eq!(cap.exit_code, Some(0));
    assert!(cap.sites.is_none());
    assert!(
        !stale.exists(),
        "a sidecar of an earlier capture describes another trace"
    );
}
