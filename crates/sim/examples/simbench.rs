//! Policy-loop speed on the standard bench trace, with FIFO as the in-run
//! reference: `cargo run --release -p swaplab-sim --example simbench -- lru,sieve [refs]`.
//! Rates under load vary; compare each policy's ratio to FIFO measured in the same run.
use std::time::Instant;
use swaplab_sim::{simulate, PolicySpec};
use swaplab_trace::gen::standard_bench;
use swaplab_trace::DenseTrace;

/// CPU seconds of this thread (user + system), from /proc: steadier than wall
/// time on a shared machine (10 ms resolution).
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let pol = args.next().unwrap_or_else(|| "fifo,lru,sieve".into());
    let refs: u64 = args.next().map_or(50_000_000, |s| s.parse().unwrap());
    let t = DenseTrace::load(&mut standard_bench(refs, 10_000_000).unwrap()).unwrap();
    let n = t.len() as f64;
    let mut fifo = None;
    for name in std::iter::once("fifo").chain(pol.split(',')) {
        let s = PolicySpec::parse(name).unwrap();
        let nu = s.info().needs_future.then(|| t.next_use());
        let (st, c0) = (Instant::now(), cpu_s());
        let r = simulate(&t, nu.as_deref(), &s, 1_000_000, 42, &|_| {}).unwrap();
        let wall = n / st.elapsed().as_secs_f64() / 1e6;
        let rate = n / (cpu_s() - c0) / 1e6;
        let f = *fifo.get_or_insert(rate);
        println!(
            "{name:<12} {rate:7.1} M refs/CPU-s ({wall:5.1} wall)  ({:.2}x fifo)  miss {:.4}  misses {}",
            rate / f,
            r.miss_ratio,
            r.counters.misses()
        );
    }
}
