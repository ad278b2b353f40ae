//! A stable-Rust randomized fuzz test of the run options' parsers: memory
//! limits (`--mem`, `--limits`), durations (`--timeout`), swap areas
//! (`--swap`), sweep variants (`--variant NAME="ARGS"`), the prefetcher
//! (`--prefetch`) and sizes. Random strings and mutations of valid inputs
//! must parse or give an error that says what to do, never panic; what
//! parses and has a printed form must print to text that parses back to the
//! same value (records and tables show these forms). Deterministic: fixed
//! seeds and iteration counts.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::parse_size;
use swaplab_lab::options::{parse_duration, parse_limits, LimitSpec, Variant};
use swaplab_lab::prefetcher::PrefetchSpec;

const PIECES: &[&str] = &[
    "%",
    ":",
    "=",
    ",",
    "\"",
    "'",
    "\\",
    " ",
    "0",
    "-1",
    "1e308",
    "NaN",
    "inf",
    ".",
    "K",
    "M",
    "G",
    "T",
    "ms",
    "s",
    "m",
    "h",
    "18446744073709551616",
    "99999999999999999999G",
    "file",
    "zram",
    "zswap",
    "prio",
    "path",
    "algo",
    "--swap",
    "--timeout",
    "--page-cluster",
    "cmd=",
    "leap",
    "window",
    "max",
    "\u{e9}",
    "\0",
];

fn inputs(seed: u64, seeds: &[&str], n: usize) -> Vec<String> {
    swaplab_testkit::fuzz::inputs(seed, seeds, PIECES, n, 16)
}

/// Runs `parse` on every input: no panic, errors non-empty; returns
/// (parsed, refused).
fn fuzz<T, E: std::fmt::Display>(
    what: &str,
    inputs: &[String],
    parse: impl Fn(&str) -> Result<T, E>,
    mut check: impl FnMut(&str, T),
) -> (usize, usize) {
    let (mut ok, mut err) = (0, 0);
    for s in inputs {
        match catch_unwind(AssertUnwindSafe(|| parse(s)))
            .unwrap_or_else(|_| panic!("{what} panicked on {s:?}"))
        {
            Ok(v) => {
                ok += 1;
                check(s, v);
            }
            Err(e) => {
                err += 1;
                assert!(
                    !e.to_string().trim().is_empty(),
                    "{what}: empty error for {s:?}"
                );
            }
        }
    }
    assert!(ok > 0 && err > 0, "{what}: {ok} parsed, {err} refused");
    (ok, err)
}

#[test]
fn limits_sizes_and_durations() {
    let limits = inputs(1, &["50%", "64M", "1.5G", "none", "4096", "12.5%"], 6000);
    fuzz("LimitSpec", &limits, LimitSpec::from_str, |s, v| {
        let shown = v.to_string();
        let back = LimitSpec::from_str(&shown)
            .unwrap_or_else(|e| panic!("{s:?} parsed, its form {shown:?} does not: {e}"));
        match (v, back) {
            (LimitSpec::Bytes(a), LimitSpec::Bytes(b)) => {
                // Sizes print rounded to 3 significant digits at most.
                assert!(
                    a.abs_diff(b) as f64 <= a as f64 * 0.005,
                    "{s:?} -> {shown:?}"
                )
            }
            (a, b) => assert_eq!(a, b, "{s:?} -> {shown:?}"),
        }
    });
    let lists = inputs(2, &["100%,75%,50%,25%", "64M,32M", "90%, 10%"], 3000);
    fuzz("parse_limits", &lists, parse_limits, |s, v| {
        assert!(!v.is_empty(), "{s:?} parsed to no limit");
    });
    let sizes = inputs(3, &["64M", "1.5G", "4096", "2K", "1T"], 6000);
    fuzz("parse_size", &sizes, parse_size, |_, _| {});
    let durations = inputs(4, &["10m", "90s", "1ms", "2h", "1.5s"], 6000);
    fuzz("parse_duration", &durations, parse_duration, |_, _| {});
}

#[test]
fn swap_specs_print_back() {
    let specs = inputs(
        5,
        &[
            "file:1G",
            "file:512M,path=/var/tmp/s,prio=5",
            "zram:1G,algo=lz4",
            "zram:256M",
            "zswap",
            "zswap:lz4",
            "existing",
        ],
        8000,
    );
    fuzz("SwapSpec", &specs, SwapSpec::from_str, |s, v| {
        let shown = v.to_string();
        let back = SwapSpec::from_str(&shown)
            .unwrap_or_else(|e| panic!("{s:?} parsed, its form {shown:?} does not: {e}"));
        assert_eq!(back.to_string(), shown, "{s:?}");
    });
}

#[test]
fn variants_and_prefetch_specs() {
    let variants = inputs(
        6,
        &[
            "pc0=--page-cluster 0",
            "big=cmd=./prog --big",
            "sw=--swappiness 100 --timeout 10s",
            "z=--swap zram:1G",
            "leap=--prefetch leap",
            "m=--mglru on",
            "q=\"--thp never\"",
        ],
        6000,
    );
    fuzz("Variant", &variants, Variant::from_str, |s, v| {
        assert!(!v.name.is_empty(), "{s:?}");
    });
    let prefetch = inputs(
        7,
        &[
            "leap",
            "stride:k=4",
            "leap:window=2M:max=64M:pageout=1",
            "leap:history=64:split=8:minor=0:log=1",
            "thread",
        ],
        6000,
    );
    fuzz("PrefetchSpec", &prefetch, PrefetchSpec::from_str, |s, v| {
        let shown = v.to_string();
        let back = PrefetchSpec::from_str(&shown)
            .unwrap_or_else(|e| panic!("{s:?} parsed, its form {shown:?} does not: {e}"));
        assert_eq!(back, v, "{s:?} -> {shown:?}");
    });
}
