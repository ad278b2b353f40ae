//! Sampled attribution of a heap of small objects (root): the preload
//! probe's `heap-sites` mode allocates small objects (4–32 KiB) from two
//! call sites, `site_a` and `site_b`, interleaved in the heap, writes each
//! once and then sweeps only A's objects again and again, under a limit that
//! A alone does not fit. Known independently of swaplab: every object's size
//! (the probe's own generator, replayed here and checked against the totals
//! it prints) and which site's pages the program comes back to (A's).

use crate::common;

use std::time::Duration;

use common::*;
use swaplab_analysis::analyze::{analyze, attribute_paged, AnalyzeOptions, ObjectRef};
use swaplab_lab::options::{LimitSpec, RunOptions, TraceConfig};
use swaplab_lab::record::Outcome;
use swaplab_trace::alloc_log::sample_weight;
use swaplab_trace::events::FaultKind;
use swaplab_trace::trace_dir;

const PROBE: &str = env!("SWAPLAB_PRELOAD_PROBE");
const NA: u64 = 2048;
const NB: u64 = 2048;
const PASSES: u64 = 5;
const R: u64 = 64 << 10;

/// The probe's object sizes (its `hs_size`): A's and B's, in allocation order.
fn sizes() -> (Vec<u64>, Vec<u64>) {
    let mut x: u64 = 0x853c_49e6_748f_ea9b;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        4096 + (x >> 33) % (28 * 1024 + 1)
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..NA.max(NB) {
        if i < NA {
            a.push(next());
        }
        if i < NB {
            b.push(next());
        }
    }
    (a, b)
}

/// Standard deviation of the Horvitz–Thompson estimate of the bytes of
/// objects of these sizes, each sampled with p = 1 − exp(−s/R):
/// Var = Σ s² (1 − p) / p.
fn sigma(sizes: &[u64]) -> f64 {
    sizes
        .iter()
        .map(|&s| {
            let p = -(-(s as f64) / R as f64).exp_m1();
            (s as f64).powi(2) * (1.0 - p) / p
        })
        .sum::<f64>()
        .sqrt()
}

#[test]
fn small_objects_are_attributed_to_their_sites_by_sampling() {
    let test = &test_name!();
    if skip(test) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (a_sizes, b_sizes) = sizes();
    let (a_bytes, b_bytes): (u64, u64) = (a_sizes.iter().sum(), b_sizes.iter().sum());
    // A alone (about 37 MiB) cannot stay: every pass of the sweep swaps it in.
    let limit = (a_bytes / 2) / 4096 * 4096;
    let (_dir, lab) = temp_lab();
    let cmd: Vec<String> = [
        PROBE.to_string(),
        "heap-sites".into(),
        NA.to_string(),
        NB.to_string(),
        PASSES.to_string(),
    ]
    .to_vec();
    let opts = RunOptions {
        mem_limit: Some(LimitSpec::Bytes(limit)),
        swap: vec!["file:256M".parse().unwrap()],
        timeout: Some(Duration::from_secs(300)),
        trace: Some(TraceConfig {
            heap_sample: R,
            ..Default::default()
        }),
        flush_stats: Some(Duration::from_millis(1)),
        ..Default::default()
    };
    let set = lab.run(&cmd, &opts, 1, &mut |_| {}).unwrap();
    let rec = set.runs.into_iter().next().unwrap();
    assert_eq!(rec.outcome, Some(Outcome::Ok), "{rec:#?}");
    assert_restored(&before, test);

    // The probe's own totals equal the replayed sizes.
    let out = std::fs::read_to_string(rec.dir.join("stdout.txt")).unwrap();
    let v: serde_json::Value = out
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line from the probe: {out}"));
    assert_eq!(v["a_bytes"].as_u64(), Some(a_bytes), "{v}");
    assert_eq!(v["b_bytes"].as_u64(), Some(b_bytes), "{v}");

    let tdir = rec.trace_dir().expect("a trace dir").to_path_buf();
    let t = trace_dir::read_tables(&tdir).unwrap();
    let site_of = |name: &str| -> u32 {
        t.sites
            .iter()
            .find(|s| s.frames.first().is_some_and(|f| f.contains(name)))
            .unwrap_or_else(|| panic!("no site {name} in {:#?}", t.sites))
            .site_id
    };
    let (sa, sb) = (site_of("site_a"), site_of("site_b"));
    let samples = |site: u32| {
        t.allocations
            .iter()
            .filter(|a| a.site_id == site && a.weight.is_some())
            .count()
    };
    // Every sample has the weight of its size; the sample counts are
    // binomial with the known probabilities (4 σ).
    for a in t.allocations.iter().filter(|a| a.weight.is_some()) {
        assert_eq!(a.weight, Some(sample_weight(a.size, R)), "{a:?}");
    }
    for (site, sizes) in [(sa, &a_sizes), (sb, &b_sizes)] {
        let ps: Vec<f64> = sizes
            .iter()
            .map(|&s| -(-(s as f64) / R as f64).exp_m1())
            .collect();
        let mean: f64 = ps.iter().sum();
        let sd = ps.iter().map(|p| p * (1.0 - p)).sum::<f64>().sqrt();
        let n = samples(site) as f64;
        assert!(
            (n - mean).abs() <= 4.0 * sd,
            "site {site}: {n} samples, expected {mean:.0} ± {:.0}",
            4.0 * sd
        );
    }

    // Live bytes per site: the Horvitz–Thompson estimate within 4 σ.
    let an = analyze(&t, &AnalyzeOptions::default());
    for (site, bytes, sizes) in [(sa, a_bytes, &a_sizes), (sb, b_bytes, &b_sizes)] {
        let s = an
            .sampled_sites
            .iter()
            .find(|s| s.site_id == site)
            .unwrap_or_else(|| panic!("site {site} not among {:#?}", an.sampled_sites));
        let sd = sigma(sizes);
        eprintln!(
            "site {site}: {} samples, estimated {} live bytes, true {bytes} (σ {sd:.0})",
            s.samples, s.est_live_bytes
        );
        assert!(
            (s.est_live_bytes as f64 - bytes as f64).abs() <= 4.0 * sd,
            "site {site}: estimated {} live bytes, true {bytes}, 4 σ = {:.0}",
            s.est_live_bytes,
            4.0 * sd
        );
    }

    // Major faults + swap-ins on the heap that a sample covers: A's.
    let att = attribute_paged(&t, 4096);
    let site_at = |o: ObjectRef| match o {
        ObjectRef::Allocation(i) if t.allocations[i].weight.is_some() => {
            Some(t.allocations[i].site_id)
        }
        _ => None,
    };
    let (mut on_a, mut on_b, mut heap) = (0u64, 0u64, 0u64);
    let events = t
        .faults
        .iter()
        .zip(&att.faults)
        .filter(|(f, _)| f.kind == FaultKind::Major)
        .map(|(_, o)| *o)
        .chain(
            t.swaps
                .iter()
                .zip(&att.swaps)
                .filter(|(s, _)| s.dir == swaplab_trace::events::SwapDir::In)
                .map(|(_, o)| *o),
        );
    for o in events {
        match site_at(o) {
            Some(s) if s == sa => on_a += 1,
            Some(s) if s == sb => on_b += 1,
            Some(_) => {}
            None => heap += u64::from(matches!(o, ObjectRef::Region(_))),
        }
    }
    eprintln!("major faults + swap-ins: site A {on_a}, site B {on_b}, rest of the heap {heap}");
    assert!(on_a >= 1000, "too few events on A's samples: {on_a}");
    // Events on a sample's pages: a page A's sweep faults may also hold
    // bytes of a B sample (objects alternate), so B's samples see some.
    assert!(
        on_a > 2 * on_b,
        "A {on_a}, B {on_b}: most must be on A's samples"
    );
    // The estimates split a shared page by bytes: B's bytes on the two
    // pages it shares with its A neighbours (about half a page each, of
    // the 4.5 page-equivalents of an A object's own bytes) — about 18 % of
    // the total when only A is swept; 2/3 leaves room for readahead.
    let top = an.sites.first().expect("sites");
    assert_eq!(top.site_id, sa, "{:#?}", &an.sites[..an.sites.len().min(3)]);
    assert!(top.sampled);
    let est_b = an
        .sites
        .iter()
        .find(|s| s.site_id == sb)
        .map_or(0.0, |s| s.est_major_swap_ins);
    let est_a = top.est_major_swap_ins;
    eprintln!(
        "estimated major faults + swap-ins: A {est_a:.0}, B {est_b:.0} (A's share {:.1} %)",
        100.0 * est_a / (est_a + est_b)
    );
    assert!(
        est_a >= 2.0 * (est_a + est_b) / 3.0,
        "A {est_a:.0} vs B {est_b:.0}"
    );
    // advise: no hint for a site of sampled small objects, the reason instead
    let ctx = swaplab_analysis::advise::AdviseContext {
        limit_bytes: Some(limit),
        ..Default::default()
    };
    let advice = swaplab_analysis::advise::advise(&an, &t, &ctx);
    let for_a: Vec<_> = advice.iter().filter(|x| x.site_id == sa).collect();
    assert_eq!(for_a.len(), 1, "{advice:#?}");
    assert_eq!(for_a[0].action, swaplab_analysis::advise::Action::Nothing);
    assert!(
        for_a[0].evidence.contains("a site of small objects"),
        "{}",
        for_a[0].evidence
    );
    assert!(advice
        .iter()
        .all(|x| x.action == swaplab_analysis::advise::Action::Nothing
            || !an.sites.iter().any(|s| s.site_id == x.site_id && s.sampled)));
    // A's estimate is of the order of its pages × passes (each pass after
    // the first brings most of A back): between a quarter and twice that.
    let a_pages = (a_bytes / 4096) as f64;
    let want = a_pages * PASSES as f64;
    assert!(
        top.est_major_swap_ins >= 0.25 * want && top.est_major_swap_ins <= 2.0 * want,
        "A's estimate {} against {want} page swap-ins",
        top.est_major_swap_ins
    );
}
