//! `swaplab sim TRACE --hints FILE` with site hints: applied through the
//! trace's allocation-sites sidecar exactly like the equivalent range
//! hints, hints that match nothing reported by number, and clear errors
//! without sites or with another trace's.
use std::path::Path;
use std::process::{Command, Output};

use swaplab_trace::alloc_sites::{
    sidecar_path, AllocSites, SiteAlloc, SiteEntry, SITES_KIND, SITES_VERSION,
};
use swaplab_trace::native::NativeWriter;
use swaplab_trace::{RefBatch, Source};

fn swaplab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .args(args)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// An array of 10 pages at 0x64000 (pages 100..110), filled and swept 3
/// times, all writes; its sidecar names the array's allocation.
fn traverse_with_sites(dir: &Path) -> std::path::PathBuf {
    let t = dir.join("t.parquet");
    let mut w = NativeWriter::create(&t, 4096, Source::Unknown).unwrap();
    let mut b = RefBatch::default();
    for i in 0..40u64 {
        b.page.push(100 + i % 10);
        b.write.push(true);
    }
    w.write(&b).unwrap();
    w.finish().unwrap();
    let frames = [
        "w-0011223344556677!xmalloc+0x1e",
        "w-0011223344556677!run+0x10",
    ];
    AllocSites {
        kind: SITES_KIND.into(),
        version: SITES_VERSION,
        trace_count: 40,
        trace_distinct_pages: 10,
        page_size: 4096,
        alloc_min: 65536,
        capture: Some("lackey".into()),
        pid: 9,
        program: "w-0011223344556677".into(),
        modules: Default::default(),
        sites: vec![SiteEntry {
            site_id: 1,
            frames: frames.iter().map(|s| s.to_string()).collect(),
            locations: vec![String::new(); 2],
        }],
        allocations: vec![SiteAlloc {
            seq: 0,
            start: 0x64000,
            size: 0x14000,
            site_id: 1,
            func: "malloc".into(),
            free_seq: Some(1),
        }],
    }
    .write(&sidecar_path(&t))
    .unwrap();
    t
}

fn majors(out: &Output) -> Vec<u64> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["major_faults"].as_u64().unwrap())
        .collect()
}

#[test]
fn site_hints_apply_like_their_range_and_misses_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let t = traverse_with_sites(dir.path());
    let t = t.to_str().unwrap();
    // The array is 0x64000..0x78000 (20 pages; the trace uses the first 10).
    let site = dir.path().join("site.toml");
    std::fs::write(
        &site,
        "version = 1\nmlock_budget = 16384\n\
         [[hint]]\nsite = [\"w-89abcdef89abcdef!xmalloc+0x1e\", \"w-89abcdef89abcdef!run+0x10\"]\n\
         action = \"mlock\"\nbytes = 16384\n\
         [[hint]]\nsite = [\"w-89abcdef89abcdef!other+0x1\"]\naction = \"cold\"\ndelay_ms = 1\n",
    )
    .unwrap();
    let range = dir.path().join("range.toml");
    std::fs::write(
        &range,
        "version = 1\nmlock_budget = 16384\n\
         [[hint]]\nrange = [\"0x64000\", \"0x78000\"]\naction = \"mlock\"\nbytes = 16384\n",
    )
    .unwrap();
    let sim = |hints: Option<&Path>| {
        let mut a = vec!["sim", t, "--policy", "lru,linux", "--mem", "6", "--json"];
        if let Some(h) = hints {
            a.extend(["--hints", h.to_str().unwrap()]);
        }
        swaplab(&a)
    };
    let by_site = sim(Some(&site));
    let err = String::from_utf8_lossy(&by_site.stderr);
    assert!(
        err.contains("hint 1 (mlock): 1 allocation of its site, 4 pages"),
        "{err}"
    );
    assert!(
        err.contains("warning: hint 2 (site w-89abcdef89abcdef!other+0x1) matches none"),
        "{err}"
    );
    // LRU at 6 pages faults all 10 pages on each of the 3 sweeps; with 4
    // pinned, the other 6 share 2 frames and fault every sweep.
    let with = majors(&by_site);
    assert_eq!(with[0], 18);
    assert_eq!(with, majors(&sim(Some(&range))));
    let without = majors(&sim(None));
    assert_eq!(without[0], 30);
    assert!(with[1] < without[1], "linux: {with:?} {without:?}");

    // --sites names the sidecar explicitly; without one, the old error.
    let moved = dir.path().join("elsewhere.json");
    std::fs::rename(sidecar_path(Path::new(t)), &moved).unwrap();
    let o = swaplab(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "6",
        "--json",
        "--hints",
        site.to_str().unwrap(),
        "--sites",
        moved.to_str().unwrap(),
    ]);
    assert_eq!(majors(&o)[0], 18);
    let o = sim(Some(&site));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("hint 1 is a site hint, but this trace has no allocation sites"),
        "{err}"
    );
    assert!(err.contains("t.parquet.sites.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Range hints need no sidecar.
    assert_eq!(majors(&sim(Some(&range)))[0], 18);

    // A sidecar of another trace is refused.
    let mut other = AllocSites::read(&moved).unwrap();
    other.trace_count = 41;
    other.write(&sidecar_path(Path::new(t))).unwrap();
    let o = sim(Some(&site));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the allocation sites are of another trace"),
        "{err}"
    );
}

#[test]
fn trace_refs_writes_the_sites_sidecar_unless_no_allocs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.parquet");
    let o = out.to_str().unwrap();
    let cmd = [
        "--",
        "swaplab-workload",
        "traverse",
        "--size",
        "1M",
        "--passes",
        "1",
    ];
    let mut a = vec!["trace", "--refs", "-o", o];
    a.extend(cmd);
    let r = swaplab(&a);
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(
        stdout.contains("w.parquet.sites.json: 1 allocation of at least 64K from 1 site"),
        "{stdout}"
    );
    let s = AllocSites::read(&sidecar_path(&out)).unwrap();
    assert_eq!(s.capture.as_deref(), Some("instrumented"));
    let big: Vec<&SiteAlloc> = s.allocations.iter().filter(|a| a.size >= 65536).collect();
    assert_eq!(big.len(), 1);
    assert_eq!(big[0].size, 1 << 20);
    // --no-allocs: no sidecar, and the earlier one is gone with its trace.
    let mut a = vec!["trace", "--refs", "--no-allocs", "-o", o];
    a.extend(cmd);
    let r = swaplab(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!String::from_utf8_lossy(&r.stdout).contains("sites.json"));
    assert!(!sidecar_path(&out).exists());
}
