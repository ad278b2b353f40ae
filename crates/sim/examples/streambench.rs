//! The streamed simulation's speed on `bench sim --scale`'s trace shape,
//! for comparing builds on one trace file:
//!
//! ```text
//! cargo run --release -p swaplab-sim --example streambench -- gen T.parquet 300M 50M
//! cargo run --release -p swaplab-sim --example streambench -- run T.parquet lru,clock 10
//! ```
//!
//! `gen` writes the scale benchmark's trace (a first touch of every page,
//! then Zipf 1.0 over them, scattered, 30 % writes); `run` streams it once
//! through each policy at the given % of the footprint (one after the
//! other on this thread, the row groups decoded on another, as `bench sim
//! --scale` does) and prints each one's rate over this thread's CPU time
//! and over the wall clock, and its misses.
use std::time::Instant;
use swaplab_sim::{PolicySpec, Sim};
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::native::write_source;
use swaplab_trace::stream::{DenseStream, StreamOptions};
use swaplab_trace::units::parse_count;

/// This thread's CPU time, in seconds.
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 3 || !matches!(a[0].as_str(), "gen" | "run") || (a[0] == "gen" && a.len() < 4) {
        eprintln!(
            "usage: streambench gen TRACE.parquet REFS PAGES | streambench run TRACE.parquet POLICIES [MEM_PCT]"
        );
        std::process::exit(2);
    }
    let path = std::path::Path::new(&a[1]);
    match a[0].as_str() {
        "gen" => {
            let refs = parse_count(&a[2]).unwrap();
            let pages = parse_count(&a[3]).unwrap();
            let pats: Vec<Pattern> = vec![
                format!("seq:pages={pages}:count={pages}:writes=1")
                    .parse()
                    .unwrap(),
                format!(
                    "zipf:pages={pages}:alpha=1.0:scatter=1:writes=0.3:count={}",
                    refs - pages
                )
                .parse()
                .unwrap(),
            ];
            let mut g = Generator::new(pats, Some(refs), Mix::Sequence, 42).unwrap();
            let m = write_source(&mut g, path, |_| {}).unwrap();
            println!("{} refs, {} distinct", m.count, m.distinct_pages);
        }
        "run" => {
            let specs = PolicySpec::parse_list(&a[2]).unwrap();
            let pct: u64 = a.get(3).map_or(10, |s| s.parse().unwrap());
            let mut st = DenseStream::open(path, &StreamOptions::default()).unwrap();
            let distinct = st.distinct();
            let mem = (distinct * pct / 100).max(1) as usize;
            let mut sims: Vec<Sim> = specs
                .iter()
                .map(|s| Sim::new(s, mem, distinct as usize, 42).unwrap())
                .collect();
            let mut cpu = vec![0f64; sims.len()];
            let mut wall = vec![0f64; sims.len()];
            // The rate after the first touch of every page too (the Zipf
            // part, most of a full-size trace but less of a short one).
            let mut zipf_cpu = vec![0f64; sims.len()];
            let (mut n, mut zn) = (0u64, 0u64);
            while let Some(c) = st.next_chunk().unwrap() {
                let zipf = c.start >= distinct;
                for (k, s) in sims.iter_mut().enumerate() {
                    let (t, c0) = (Instant::now(), cpu_s());
                    s.feed(c.start, &c.ids, &c.writes, &c.next_use).unwrap();
                    wall[k] += t.elapsed().as_secs_f64();
                    cpu[k] += cpu_s() - c0;
                    if zipf {
                        zipf_cpu[k] += cpu_s() - c0;
                    }
                }
                n += c.len() as u64;
                if zipf {
                    zn += c.len() as u64;
                }
            }
            for (k, s) in sims.iter().enumerate() {
                let r = s.result();
                println!(
                    "{:<8} {:6.1} M refs/cpu-s (zipf part {:6.1}) {:6.1} M refs/s wall  misses {}  bytes/page {}",
                    r.policy,
                    n as f64 / cpu[k] / 1e6,
                    zn as f64 / zipf_cpu[k] / 1e6,
                    n as f64 / wall[k] / 1e6,
                    r.counters.misses(),
                    r.bytes_per_page
                );
            }
            if std::env::var_os("STREAMBENCH_SMAPS").is_some() {
                let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
                for l in s
                    .lines()
                    .filter(|l| l.contains("AnonHuge") || l.starts_with("Rss"))
                {
                    println!("{l}");
                }
            }
        }
        _ => panic!("gen PATH REFS PAGES | run PATH POLICIES [PCT]"),
    }
}
