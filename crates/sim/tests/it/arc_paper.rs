//! ARC against a straightforward transcription of the paper's pseudo-code
//! (Megiddo & Modha, FAST 2003, Fig. 4), written independently of
//! `policies/arc.rs`: four `VecDeque`s searched linearly, p a real number.
use std::collections::VecDeque;
use std::path::PathBuf;
use swaplab_sim::engine::simulate_checked;
use swaplab_sim::PolicySpec;
use swaplab_trace::import::{self, Format, ImportOptions};
use swaplab_trace::DenseTrace;

/// An LRU list, MRU at the front.
type List = VecDeque<u64>;

fn take(l: &mut List, x: u64) -> bool {
    match l.iter().position(|&y| y == x) {
        Some(i) => {
            l.remove(i);
            true
        }
        None => false,
    }
}

struct PaperArc {
    c: usize,
    p: f64,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
}

impl PaperArc {
    fn new(c: usize) -> Self {
        PaperArc {
            c,
            p: 0.0,
            t1: List::new(),
            t2: List::new(),
            b1: List::new(),
            b2: List::new(),
        }
    }

    /// Subroutine REPLACE(x_t, p).
    fn replace(&mut self, x_in_b2: bool) {
        let t1 = self.t1.len() as f64;
        if !self.t1.is_empty() && (t1 > self.p || (x_in_b2 && t1 == self.p)) {
            // Delete the LRU page in T1 and move it to the MRU position in B1.
            let v = self.t1.pop_back().unwrap();
            self.b1.push_front(v);
        } else {
            let v = self.t2.pop_back().unwrap();
            self.b2.push_front(v);
        }
    }

    /// ARC(c), one request x_t; true on a hit.
    fn request(&mut self, x: u64) -> bool {
        // Case I: x in T1 ∪ T2 — a hit; move x to the MRU position in T2.
        if take(&mut self.t1, x) || take(&mut self.t2, x) {
            self.t2.push_front(x);
            return true;
        }
        // Case II: x in B1.
        if self.b1.contains(&x) {
            let (b1, b2) = (self.b1.len() as f64, self.b2.len() as f64);
            let d1 = if b1 >= b2 { 1.0 } else { b2 / b1 };
            self.p = (self.p + d1).min(self.c as f64);
            self.replace(false);
            take(&mut self.b1, x);
            self.t2.push_front(x);
            return false;
        }
        // Case III: x in B2.
        if self.b2.contains(&x) {
            let (b1, b2) = (self.b1.len() as f64, self.b2.len() as f64);
            let d2 = if b2 >= b1 { 1.0 } else { b1 / b2 };
            self.p = (self.p - d2).max(0.0);
            self.replace(true);
            take(&mut self.b2, x);
            self.t2.push_front(x);
            return false;
        }
        // Case IV: x in no list.
        let l1 = self.t1.len() + self.b1.len();
        let l2 = self.t2.len() + self.b2.len();
        if l1 == self.c {
            // Case A: L1 has exactly c pages.
            if self.t1.len() < self.c {
                self.b1.pop_back();
                self.replace(false);
            } else {
                self.t1.pop_back();
            }
        } else if l1 < self.c && l1 + l2 >= self.c {
            // Case B.
            if l1 + l2 == 2 * self.c {
                self.b2.pop_back();
            }
            self.replace(false);
        }
        self.t1.push_front(x);
        false
    }
}

fn paper_misses(ids: &[u64], c: usize) -> u64 {
    let mut a = PaperArc::new(c);
    ids.iter().filter(|&&x| !a.request(x)).count() as u64
}

fn ours(ids: &[u64], c: usize) -> u64 {
    let t = DenseTrace::from_pages(ids);
    simulate_checked(&t, &PolicySpec::parse("arc").unwrap(), c, 0)
        .unwrap()
        .counters
        .misses()
}

/// A skewed xorshift trace over `pages` pages, with a looping phase so
/// that both ghost lists get hits (and |B2|/|B1| is often not whole).
fn trace(n: usize, pages: u64, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (i / 500) % 3 == 2 {
                (i as u64) % (pages / 2 + 1)
            } else {
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                (u * u * pages as f64) as u64
            }
        })
        .collect()
}

#[test]
fn arc_matches_the_papers_fig4_on_generated_traces() {
    for seed in 1..5 {
        let ids = trace(6000, 300, seed);
        for c in [1, 2, 3, 7, 16, 50, 99, 150, 299, 400] {
            assert_eq!(ours(&ids, c), paper_misses(&ids, c), "seed {seed}, c {c}");
        }
    }
}

#[test]
fn arc_matches_the_papers_fig4_on_cloudphysics() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/cloudPhysicsIO.oracleGeneral.bin.zst");
    if !p.exists() {
        // Fails instead on CI, which must have ../shared/data.
        return swaplab_testkit::skip(
            &swaplab_testkit::test_name!(),
            swaplab_testkit::Facility::SharedData,
            format!("{} not found", p.display()),
        );
    }
    let mut src = import::open(&p, Format::OracleGeneral, &ImportOptions::default()).unwrap();
    let t = DenseTrace::load(src.as_mut()).unwrap();
    let ids: Vec<u64> = t.ids.iter().map(|&i| u64::from(i)).collect();
    // Small sizes only: the transcription's linear searches are O(c) per
    // request (the larger sizes are checked against the peer in peer.rs).
    let ids = &ids[..40_000];
    for c in [64, 128, 300] {
        assert_eq!(ours(ids, c), paper_misses(ids, c), "c {c}");
    }
}
