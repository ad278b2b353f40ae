//! A stable-Rust randomized fuzz test of the simulator's spec parsers —
//! policies (`--policy`), prefetchers (`--prefetch`), devices (`--device`),
//! fault paths (`--fault-path`) and device profiles (the TOML `swaplab
//! calibrate` writes): random strings and mutations of valid specs must
//! parse or give an error, never panic; and whatever parses must simulate.
//! A device or fault path that parses is used in a costed simulation of a
//! small trace, whose predicted times must be finite and not negative (a
//! parameter of 0 or a huge one must be refused by the parser, not turn
//! into a division by zero or an infinity later). Deterministic: fixed
//! seeds and iteration counts, a few seconds in all.
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::panic::{catch_unwind, AssertUnwindSafe};
use swaplab_sim::device::profile::DeviceProfile;
use swaplab_sim::engine::{simulate_costed, simulate_ext, Extras};
use swaplab_sim::prefetch::PrefetchSpec;
use swaplab_sim::{Costs, DeviceSpec, FaultPath, PolicySpec};
use swaplab_trace::DenseTrace;

const POLICIES: &[&str] = &[
    "lru",
    "clock",
    "linux",
    "linux:ratio=2",
    "mglru",
    "mglru:access=fd",
    "arc",
    "lirs",
    "opt",
    "rrip:bits=2",
    "fifo",
    "random",
];
const PREFETCHERS: &[&str] = &[
    "none",
    "next:n=4",
    "cluster:pc=3",
    "vma:pc=3",
    "leap:max=256",
    "leap:history=32:split=4",
];
const DEVICES: &[&str] = &[
    "ssd",
    "hdd",
    "hdd:rpm=5400",
    "zram",
    "remote:rtt_us=10:gbit=8",
    "hybrid:ssd+hdd",
    "hybrid:ssd+hdd:rules=run+refault",
    "hybrid:ssd+hdd:run=2:batch=4",
    "hybrid:ssd+hdd:rules=prio:fast=64K",
    "hybrid:ssd+remote:rules=prio:fast=32K:cluster=4",
];
const FAULT_PATHS: &[&str] = &[
    "kernel",
    "pfa",
    "pfa:batch=32:page_us=0.3",
    "kernel:io_us=3",
];
/// Pieces that mutations splice in: separators, numbers at the edges of
/// what a parameter can hold, names of other specs.
const PIECES: &[&str] = &[
    ":",
    "=",
    "+",
    ",",
    "0",
    "-1",
    "1e308",
    "NaN",
    "inf",
    "18446744073709551616",
    "4096",
    "0.0",
    "rpm",
    "pc",
    "n",
    "batch",
    "rtt_us",
    "gbit",
    "ratio",
    "rules",
    "prio",
    "fast",
    "cluster",
    "ssd",
    "hdd",
    "hybrid",
    "file",
    ".toml",
    " ",
    "\u{e9}",
    "\0",
];

fn inputs(rng: &mut Pcg64, seeds: &[&str], n: usize) -> Vec<String> {
    swaplab_testkit::fuzz::inputs(rng.random(), seeds, PIECES, n, 24)
}

/// A small trace with reuse and writes: 2,000 references over 64 pages.
fn small_trace() -> DenseTrace {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let refs: Vec<(u64, bool)> = (0..2000)
        .map(|i: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let page = if i.is_multiple_of(3) {
                (i / 3) % 64
            } else {
                x % 40
            };
            (page, x.is_multiple_of(5))
        })
        .collect();
    DenseTrace::from_refs(&refs)
}

fn no_panic<T>(what: &str, input: &str, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| panic!("{what} panicked on {input:?}"))
}

#[test]
fn policy_and_prefetcher_specs_parse_or_fail_and_what_parses_runs() {
    let mut rng = Pcg64::seed_from_u64(11);
    let t = small_trace();
    let (mut ok, mut err) = (0, 0);
    for s in inputs(&mut rng, POLICIES, 10000) {
        match no_panic("PolicySpec::parse", &s, || PolicySpec::parse(&s)) {
            Ok(spec) => {
                ok += 1;
                no_panic("a parsed policy's simulation", &s, || {
                    simulate_ext(&t, None, &spec, 16, 1, &Extras::default(), &|_| {})
                })
                .unwrap_or_else(|e| panic!("{s:?} parsed but does not simulate: {e}"));
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(ok > 10 && err > 100, "{ok} parsed, {err} refused");
    let lru = PolicySpec::parse("lru").unwrap();
    let (mut ok, mut err) = (0, 0);
    for s in inputs(&mut rng, PREFETCHERS, 10000) {
        match no_panic("PrefetchSpec::parse", &s, || PrefetchSpec::parse(&s)) {
            Ok(pf) => {
                ok += 1;
                let extras = Extras {
                    prefetch: Some(&pf),
                    hints: &[],
                };
                no_panic("a parsed prefetcher's simulation", &s, || {
                    simulate_ext(&t, None, &lru, 16, 1, &extras, &|_| {})
                })
                .unwrap_or_else(|e| panic!("{s:?} parsed but does not simulate: {e}"));
            }
            Err(_) => err += 1,
        }
    }
    assert!(ok > 10 && err > 100, "{ok} parsed, {err} refused");
}

#[test]
fn device_and_fault_path_specs_parse_or_fail_and_what_parses_costs_finite_time() {
    let mut rng = Pcg64::seed_from_u64(12);
    let t = small_trace();
    let lru = PolicySpec::parse("lru").unwrap();
    let kernel = FaultPath::parse("kernel").unwrap();
    let ssd = DeviceSpec::parse("ssd", None).unwrap();
    let check = |s: &str, device: &DeviceSpec, fault_path: &FaultPath| {
        let costs = Costs {
            device,
            fault_path,
            base_time_s: Some(1.0),
        };
        // 48 of the trace's 64 pages: room for zram's stored pages too.
        let r = no_panic("a costed simulation", s, || {
            simulate_costed(&t, None, &lru, 48, 1, &Extras::default(), &costs, &|_| {})
        })
        .unwrap_or_else(|e| panic!("{s:?} parsed but does not simulate: {e}"));
        let c = r.cost.expect("a costed result has its cost");
        for (name, v) in [
            ("fault_time_s", c.fault_time_s),
            ("major_time_s", c.major_time_s),
            ("minor_time_s", c.minor_time_s),
            ("reclaim_time_s", c.reclaim_time_s),
            ("predicted_time_s", c.predicted_time_s.unwrap_or(0.0)),
        ] {
            assert!(v.is_finite() && v >= 0.0, "{s:?}: {name} = {v}");
        }
    };
    let (mut ok, mut err) = (0, 0);
    for s in inputs(&mut rng, DEVICES, 10000) {
        match no_panic("DeviceSpec::parse", &s, || DeviceSpec::parse(&s, None)) {
            Ok(d) => {
                ok += 1;
                check(&s, &d, &kernel);
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(ok > 10 && err > 100, "devices: {ok} parsed, {err} refused");
    let (mut ok, mut err) = (0, 0);
    for s in inputs(&mut rng, FAULT_PATHS, 10000) {
        match no_panic("FaultPath::parse", &s, || FaultPath::parse(&s)) {
            Ok(fp) => {
                ok += 1;
                check(&s, &ssd, &fp);
            }
            Err(_) => err += 1,
        }
    }
    assert!(
        ok > 10 && err > 100,
        "fault paths: {ok} parsed, {err} refused"
    );
}

#[test]
fn device_profiles_parse_or_fail_and_what_parses_costs_finite_time() {
    let valid = r#"kind = "file"
name = "swapfile on vda"
kernel = "6.18.0"
measured = "2026-11-25T20:00:00Z"
read_seq_us = 46.6
read_rand_us = 48.1
read_rand_p99_us = 126.0
write_us = 7.3
read_mb_s = 912.0
fault_path_us = 1.3
minor_fault_us = 2.3
compress_ratio = 1.0
"#;
    let p = DeviceProfile::parse(valid).expect("the seed profile parses");
    assert_eq!(p.kind, "file");
    let mut rng = Pcg64::seed_from_u64(13);
    let t = small_trace();
    let lru = PolicySpec::parse("lru").unwrap();
    let kernel = FaultPath::parse("kernel").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut ok, mut err) = (0, 0);
    for (i, text) in inputs(&mut rng, &[valid], 2000).into_iter().enumerate() {
        match no_panic("DeviceProfile::parse", &text, || {
            DeviceProfile::parse(&text)
        }) {
            Ok(_) => {
                ok += 1;
                // The same text as a --device PROFILE.toml.
                let path = dir.path().join(format!("p{i}.toml"));
                std::fs::write(&path, &text).unwrap();
                let d = DeviceSpec::parse(path.to_str().unwrap(), None)
                    .unwrap_or_else(|e| panic!("parsed as text, refused as a file: {e}"));
                let costs = Costs {
                    device: &d,
                    fault_path: &kernel,
                    base_time_s: Some(1.0),
                };
                let r = no_panic("a profile's simulation", &text, || {
                    simulate_costed(&t, None, &lru, 16, 1, &Extras::default(), &costs, &|_| {})
                })
                .unwrap_or_else(|e| panic!("{text:?} parsed but does not simulate: {e}"));
                let c = r.cost.unwrap();
                assert!(
                    c.fault_time_s.is_finite() && c.fault_time_s >= 0.0,
                    "{text:?}: fault_time_s = {}",
                    c.fault_time_s
                );
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(ok > 5 && err > 50, "profiles: {ok} parsed, {err} refused");
}
