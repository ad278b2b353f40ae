//! LFU and SIEVE against straightforward transcriptions of their
//! definitions (written independently of the optimized policies: a scan over
//! all resident pages for LFU, a vector queue with a hand for SIEVE).
use swaplab_sim::engine::simulate_checked;
use swaplab_sim::PolicySpec;
use swaplab_trace::DenseTrace;

fn trace(n: usize, pages: u64, seed: u64) -> Vec<u64> {
    // Skewed: a xorshift value squared towards small ids.
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (u * u * pages as f64) as u64
        })
        .collect()
}

/// In-cache LFU: evict the least count, ties to the least recently used.
fn lfu(ids: &[u64], cap: usize) -> u64 {
    let mut res: Vec<(u64, u64, usize)> = Vec::new(); // (page, count, last use)
    let mut miss = 0;
    for (t, &x) in ids.iter().enumerate() {
        if let Some(e) = res.iter_mut().find(|e| e.0 == x) {
            e.1 += 1;
            e.2 = t;
            continue;
        }
        miss += 1;
        if res.len() >= cap {
            let (i, _) = res
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| (e.1, e.2))
                .unwrap();
            res.swap_remove(i);
        }
        res.push((x, 1, t));
    }
    miss
}

/// SIEVE as in the NSDI 2024 paper's pseudocode: queue from tail (oldest)
/// to head (newest); the hand walks towards the head and wraps to the tail.
fn sieve(ids: &[u64], cap: usize) -> u64 {
    let mut q: Vec<(u64, bool)> = Vec::new(); // index 0 = tail
    let mut hand: Option<usize> = None;
    let mut miss = 0;
    for &x in ids {
        if let Some(e) = q.iter_mut().find(|e| e.0 == x) {
            e.1 = true;
            continue;
        }
        miss += 1;
        if q.len() >= cap {
            let mut i = hand.unwrap_or(0);
            loop {
                if i >= q.len() {
                    i = 0;
                }
                if q[i].1 {
                    q[i].1 = false;
                    i += 1;
                } else {
                    break;
                }
            }
            q.remove(i);
            hand = (i < q.len()).then_some(i);
        }
        q.push((x, false));
    }
    miss
}

#[test]
fn lfu_and_sieve_match_their_definitions() {
    for seed in 1..4 {
        let ids = trace(20_000, 700, seed);
        let t = DenseTrace::from_pages(&ids);
        for cap in [1, 5, 50, 200, 650] {
            for (name, f) in [("lfu", lfu as fn(&[u64], usize) -> u64), ("sieve", sieve)] {
                let got = simulate_checked(&t, &PolicySpec::parse(name).unwrap(), cap, 0).unwrap();
                assert_eq!(
                    got.counters.misses(),
                    f(&ids, cap),
                    "{name} cap {cap} seed {seed}"
                );
            }
        }
    }
}
