//! Correctness against a peer: libCacheSim's miss counts on the public
//! cloudPhysicsIO trace (../shared/data/README.md), for both encodings.
use std::path::PathBuf;
use swaplab_sim::engine::simulate_checked;
use swaplab_sim::mrc::stack_histogram;
use swaplab_sim::PolicySpec;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::DenseTrace;

const SIZES: [usize; 6] = [128, 1024, 5000, 10000, 20000, 40000];
/// libCacheSim --ignore-obj-size=1, no warm-up (the peer's numbers, copied from the README).
const LRU: [u64; 6] = [99411, 94816, 91527, 79438, 72053, 48994];
const FIFO: [u64; 6] = [100831, 95505, 91581, 79210, 72229, 49142];
const OPT: [u64; 6] = [93495, 86881, 71311, 61843, 51843, 48974];
/// The peer's ARC, from its Python package: `pip install libcachesim`
/// (version 0.3.5, 2025), then `python3 crates/sim/scripts/peer_misses.py
/// ../shared/data/cloudPhysicsIO.oracleGeneral.bin.zst arc
/// 128,1024,5000,10000,20000,40000` (ignore_obj_size, no warm-up; the same
/// script reproduces the LRU and FIFO rows above exactly).
const ARC: [u64; 6] = [96142, 94023, 87770, 79413, 64422, 48999];
// LIRS is not compared: the peer's LIRS departs from the paper (see
// policies/lirs.rs). Same command with `lirs`: 96758 94294 85289 74395
// 58681 50518; swaplab (the paper, checked on its worked example): 96514
// 94330 87358 72976 58672 50518.

fn data(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have the shared data: {} is missing",
        p.display()
    );
    eprintln!(
        "skipped: {} not found (the shared data sits beside the checkout on dev and CI machines)",
        p.display()
    );
    None
}

fn traces() -> Vec<(&'static str, DenseTrace)> {
    let mut v = Vec::new();
    if let Some(p) = data("cloudPhysicsIO.oracleGeneral.bin.zst") {
        let mut src = import::open(&p, Format::OracleGeneral, &ImportOptions::default()).unwrap();
        v.push(("oracleGeneral", DenseTrace::load(src.as_mut()).unwrap()));
    }
    if let Some(p) = data("cloudPhysicsIO.csv.zst") {
        let opts = ImportOptions {
            id_column: Column::Name("lbn".into()),
            has_header: true,
            ..Default::default()
        };
        let mut src = import::open(&p, Format::Csv, &opts).unwrap();
        v.push(("csv", DenseTrace::load(src.as_mut()).unwrap()));
    }
    v
}

#[test]
fn lru_fifo_opt_arc_match_libcachesim_exactly() {
    for (enc, t) in traces() {
        assert_eq!((t.len(), t.distinct()), (113_872, 48_974), "{enc}");
        for (policy, want) in [("lru", LRU), ("fifo", FIFO), ("opt", OPT), ("arc", ARC)] {
            let spec = PolicySpec::parse(policy).unwrap();
            for (i, &c) in SIZES.iter().enumerate() {
                let got = simulate_checked(&t, &spec, c, 0).unwrap().counters.misses();
                assert_eq!(got, want[i], "{policy} at {c} pages on the {enc} encoding");
            }
        }
    }
}

#[test]
fn one_pass_lru_curve_equals_simulation_at_each_size() {
    let Some((_, t)) = traces().into_iter().next() else {
        return;
    };
    let h = stack_histogram(&t).unwrap();
    for (i, &c) in SIZES.iter().enumerate() {
        assert_eq!(h.misses_at(c as u64), LRU[i], "curve at {c}");
    }
    // And at sizes between, against the simulator itself.
    let spec = PolicySpec::parse("lru").unwrap();
    for c in [
        1usize, 2, 3, 50, 777, 2500, 7500, 15000, 30000, 45000, 48974, 60000,
    ] {
        let sim = simulate_checked(&t, &spec, c, 0).unwrap().counters.misses();
        assert_eq!(h.misses_at(c as u64), sim, "size {c}");
    }
}
