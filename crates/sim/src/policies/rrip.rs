//! Re-reference interval prediction (Jaleel, Theobald, Steely, Emer,
//! "High Performance Cache Replacement Using Re-Reference Interval
//! Prediction (RRIP)", ISCA 2010): SRRIP, BRRIP and DRRIP with hit
//! priority, applied to memory as one fully-associative set whose ways are
//! the `capacity` page frames.
//!
//! Each resident page has an M-bit RRPV (param `m=`, 1..=7, default 2;
//! max = 2^M − 1). A hit sets the RRPV to 0. On a miss with memory full, the
//! victim is found exactly as in the paper's single-set algorithm: search
//! the frames **from frame 0 upwards** for the first page whose RRPV is
//! max; if there is none, increment every RRPV and search again. Frames are
//! numbered in the order they were first filled (0, 1, 2, … while memory
//! warms up), and the faulting page takes its victim's frame, just as a
//! cache fill takes the victim's way. (So among pages tied at max, the one
//! in the lowest frame goes first; with BRRIP this makes the page just
//! inserted at max the next victim unless it is hit — the thrash resistance
//! the paper describes.)
//!
//! * **SRRIP**: insert at max − 1 (for M = 1 that is 0: SRRIP becomes NRU).
//! * **BRRIP**: insert at max, and at max − 1 with probability `eps=`
//!   (default 1/32, the paper's ε), drawn from [`Rng`] seeded with the run's
//!   seed.
//! * **DRRIP**: set dueling. In the paper, leader *sets* are small
//!   independent caches, each fed the sub-stream of blocks that map to it;
//!   a fully-associative memory has no sets, so the leaders are simulated
//!   the same way: pages are split into 1024 groups by `hash64(id) % 1024`,
//!   and the pages of the 32 groups ≡ 0 (mod 32) — 1/32 of the pages, like
//!   the paper's 32 leader sets — are also fed to two **shadow memories** of
//!   `max(1, round(capacity / 32))` frames, one running SRRIP and one BRRIP
//!   (spatial sampling: a 1/32 sample of the pages in 1/32 of the memory
//!   behaves like the whole). A 10-bit saturating PSEL counter is
//!   incremented on a miss in the SRRIP shadow and decremented on a miss in
//!   the BRRIP shadow; every page of the real memory is inserted with BRRIP
//!   when PSEL's most significant bit is set (PSEL ≥ 512), else with SRRIP.
//!   PSEL starts at 511, just below the switch point, so memory starts with
//!   SRRIP (the paper does not fix an initial value). (Leader pages that
//!   always used one policy *inside* the shared memory would not measure the
//!   policies: an SRRIP-inserted page among BRRIP-inserted ones is favoured
//!   just for being inserted with a nearer prediction, while a
//!   BRRIP-inserted page among SRRIP-inserted ones is handicapped for the
//!   same reason, so PSEL would lean towards SRRIP whatever the workload.)
//!
//! Ageing is O(1): the simulator keeps a global age offset and stores each
//! page's RRPV minus that offset (modulo 2^M), so "increment every RRPV by
//! d" is one addition. Pages are bucketed by stored value in hierarchical
//! bitmaps over frames, so "lowest frame with RRPV max" is a handful of
//! word operations. Each page has one byte holding "resident" and its
//! stored value (hence at most 7 bits; the paper's main configurations use
//! 2 or 3); a hit
//! only rewrites that byte, and a frame whose page was hit is refiled
//! lazily when the victim search finds it under its old value (which gives
//! exactly the same victims, see `Core::victim_frame`). Memory: per page 4
//! bytes (its frame) and that byte; per frame 4 bytes (its page) and 2^M
//! bits of bitmap (+1/63 for the summary levels); `bytes_per_page` counts
//! the per-frame part as if every page had a frame (an upper bound). DRRIP
//! adds 4 bytes per page (the shadow memories' dense ids) and the shadows.
use crate::error::SimError;
use crate::policy::{Access, Policy, PolicyConfig, PolicyInfo, Req};
use crate::util::{hash64, Rng, NIL};

pub const SRRIP: PolicyInfo = PolicyInfo {
    name: "srrip",
    summary: "static re-reference interval prediction",
    params: "m=N (RRPV bits 1-7, default 2)",
    needs_future: false,
    build: |c| {
        c.params.allow("srrip", &["m"])?;
        Ok(Box::new(Rrip::new(c, Mode::Srrip)?))
    },
};
pub const BRRIP: PolicyInfo = PolicyInfo {
    name: "brrip",
    summary: "bimodal RRIP",
    params: "m=N (RRPV bits 1-7, default 2), eps=P (chance of a long insertion, default 1/32)",
    needs_future: false,
    build: |c| {
        c.params.allow("brrip", &["m", "eps"])?;
        Ok(Box::new(Rrip::new(c, Mode::Brrip)?))
    },
};
pub const DRRIP: PolicyInfo = PolicyInfo {
    name: "drrip",
    summary: "dynamic RRIP (set dueling SRRIP/BRRIP)",
    params: "m=N (RRPV bits 1-7, default 2), eps=P (BRRIP's chance, default 1/32)",
    needs_future: false,
    build: |c| {
        c.params.allow("drrip", &["m", "eps"])?;
        Ok(Box::new(Rrip::new(c, Mode::Drrip)?))
    },
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Srrip,
    Brrip,
    Drrip,
}

/// DRRIP: pages of groups ≡ 0 (mod `LEADER_STRIDE`) out of `GROUPS` feed the shadow memories.
const GROUPS: u64 = 1024;
const LEADER_STRIDE: u64 = 32;
const PSEL_MAX: u32 = 1023;
const PSEL_INIT: u32 = 511;
const PSEL_MSB: u32 = 512;

/// Whether DRRIP samples page `id` into its shadow memories.
#[inline]
fn sampled(id: u32) -> bool {
    (hash64(id as u64) % GROUPS).is_multiple_of(LEADER_STRIDE)
}

/// A set of frame numbers with O(log64 n) insert, remove and minimum.
struct Bits {
    /// `levels[0]` has one bit per frame; each level above has one bit per
    /// non-zero word of the level below; the last level is one word.
    levels: Vec<Vec<u64>>,
}

impl Bits {
    fn new(n: usize) -> Self {
        let mut levels = Vec::new();
        let mut len = n.div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; len]);
            if len == 1 {
                break;
            }
            len = len.div_ceil(64);
        }
        Bits { levels }
    }
    #[inline]
    fn insert(&mut self, mut i: usize) {
        for lv in &mut self.levels {
            let w = &mut lv[i >> 6];
            let was = *w;
            *w |= 1 << (i & 63);
            if was != 0 {
                return;
            }
            i >>= 6;
        }
    }
    #[inline]
    fn remove(&mut self, mut i: usize) {
        for lv in &mut self.levels {
            let w = &mut lv[i >> 6];
            *w &= !(1 << (i & 63));
            if *w != 0 {
                return;
            }
            i >>= 6;
        }
    }
    #[inline]
    fn first(&self) -> Option<usize> {
        let (top, rest) = self.levels.split_last()?;
        let w = top[0];
        if w == 0 {
            return None;
        }
        let mut i = w.trailing_zeros() as usize;
        for lv in rest.iter().rev() {
            i = i * 64 + lv[i].trailing_zeros() as usize;
        }
        Some(i)
    }
    fn bytes(&self) -> usize {
        8 * self.levels.iter().map(Vec::len).sum::<usize>()
    }
}

/// One fully-associative RRIP memory: frames, RRPVs, victim search.
struct Core {
    /// Frame of each resident page (stale for others).
    frame_of: Vec<u32>,
    /// Per page: `RESIDENT | stored value` (RRPV − age, mod 2^M), or 0:
    /// the truth about each page's RRPV.
    pk: Vec<u8>,
    /// Page in each frame.
    page: Vec<u32>,
    /// Frames by stored value, possibly stale (see `hit`).
    bits: Vec<Bits>,
    count: Vec<u32>,
    /// Frames in use (filled in order 0, 1, 2, …).
    used: usize,
    /// 2^M − 1: both the max RRPV and the mask of stored values.
    max: u32,
    age: u32,
}

const RESIDENT: u8 = 0x80;

impl Core {
    fn new(pages: usize, frames: usize, max: u32) -> Self {
        let frames = frames.min(pages).max(1);
        Core {
            frame_of: vec![NIL; pages],
            pk: vec![0; pages],
            page: vec![0; frames],
            bits: (0..=max).map(|_| Bits::new(frames)).collect(),
            count: vec![0; max as usize + 1],
            used: 0,
            max,
            age: 0,
        }
    }

    /// Stored value of an RRPV.
    #[inline]
    fn key_of(&self, rrpv: u32) -> usize {
        (rrpv.wrapping_sub(self.age) & self.max) as usize
    }

    /// Files frame `f` (holding `id`) under `rrpv`.
    #[inline]
    fn place(&mut self, f: usize, id: u32, rrpv: u32) {
        let k = self.key_of(rrpv);
        self.pk[id as usize] = RESIDENT | k as u8;
        self.bits[k].insert(f);
        self.count[k] += 1;
    }

    #[inline]
    fn unplace(&mut self, f: usize, k: usize) {
        self.bits[k].remove(f);
        self.count[k] -= 1;
    }

    /// If `id` is resident, sets its RRPV to 0 (hit priority) and returns
    /// true. Only the page's byte changes: its frame stays filed under the
    /// old value (which overstates its RRPV) until the victim search meets
    /// it, so a hit reads and writes one byte.
    #[inline]
    fn hit(&mut self, id: u32) -> bool {
        let p = self.pk[id as usize];
        if p & RESIDENT == 0 {
            return false;
        }
        let k0 = RESIDENT | self.key_of(0) as u8;
        if p != k0 {
            self.pk[id as usize] = k0;
        }
        true
    }

    /// The lowest frame whose page has RRPV max, ageing everyone as needed.
    /// Frames filed under a stale (higher) value are refiled on the way. A
    /// stale filing only overstates an RRPV, so every page truly at max is
    /// filed under max, and ageing by "max − the highest filed value" never
    /// ages further than the true highest RRPV allows: the result is the
    /// same as with eager refiling on every hit.
    fn victim_frame(&mut self) -> Option<usize> {
        loop {
            let km = self.key_of(self.max);
            if self.count[km] == 0 {
                // Increment all RRPVs by the distance from the largest filed to max.
                let top = (0..self.max)
                    .rev()
                    .find(|&r| self.count[self.key_of(r)] > 0)?;
                self.age = self.age.wrapping_add(self.max - top);
                continue;
            }
            let f = self.bits[km].first()?;
            let k = (self.pk[self.page[f] as usize] & !RESIDENT) as usize;
            if k == km {
                return Some(f);
            }
            self.unplace(f, km);
            self.bits[k].insert(f);
            self.count[k] += 1;
        }
    }

    /// Brings in non-resident `id` at `rrpv`; returns the evicted page, if any.
    fn insert(&mut self, id: u32, rrpv: u32) -> Option<u32> {
        let (f, victim) = if self.used < self.page.len() {
            self.used += 1;
            (self.used - 1, None)
        } else {
            // A full memory always has a page at some RRPV, so this finds one.
            let f = self.victim_frame()?;
            let v = self.page[f];
            self.unplace(f, self.key_of(self.max));
            self.pk[v as usize] = 0;
            (f, Some(v))
        };
        self.page[f] = id;
        self.frame_of[id as usize] = f as u32;
        self.place(f, id, rrpv);
        victim
    }

    /// Metadata bytes per frame (page, bitmaps), rounded up.
    fn bytes_per_frame(&self) -> usize {
        let bitmaps: usize = self.bits.iter().map(Bits::bytes).sum();
        4 + bitmaps.div_ceil(self.page.len())
    }
}

/// BRRIP's insertion: max, or max − 1 when the draw falls under `eps53`.
#[inline]
fn bimodal(rng: &mut Rng, eps53: u64, max: u32) -> u32 {
    if (rng.next_u64() >> 11) < eps53 {
        max - 1
    } else {
        max
    }
}

/// DRRIP's sampled shadow memories and policy selector.
struct Duel {
    /// Dense id of each sampled page in the shadows (NIL if not sampled).
    shadow_id: Vec<u32>,
    srrip: Core,
    brrip: Core,
    rng: Rng,
    psel: u32,
}

impl Duel {
    fn observe(&mut self, id: u32, eps53: u64) {
        let sid = self.shadow_id[id as usize];
        if sid == NIL {
            return;
        }
        if !self.srrip.hit(sid) {
            let r = self.srrip.max - 1;
            self.srrip.insert(sid, r);
            self.psel = (self.psel + 1).min(PSEL_MAX);
        }
        if !self.brrip.hit(sid) {
            let r = bimodal(&mut self.rng, eps53, self.brrip.max);
            self.brrip.insert(sid, r);
            self.psel = self.psel.saturating_sub(1);
        }
    }
}

struct Rrip {
    core: Core,
    mode: Mode,
    rng: Rng,
    /// A BRRIP insertion is "long" (max − 1) when the top 53 random bits are below this.
    eps53: u64,
    duel: Option<Box<Duel>>,
}

impl Rrip {
    fn new(c: &PolicyConfig, mode: Mode) -> Result<Self, SimError> {
        let m = c.params.int("m", 2, 1, 7)? as u32;
        let eps = if mode == Mode::Srrip {
            0.0
        } else {
            c.params.real("eps", 1.0 / 32.0, 0.0, 1.0)?
        };
        if c.pages >= NIL as usize {
            return Err(SimError::BadParam(format!(
                "{} distinct pages is too many for RRIP (ids are 32-bit)",
                c.pages
            )));
        }
        let max = (1u32 << m) - 1;
        let cap = c.capacity.max(1);
        let duel = (mode == Mode::Drrip).then(|| {
            let mut n = 0u32;
            let shadow_id: Vec<u32> = (0..c.pages as u32)
                .map(|id| {
                    if sampled(id) {
                        n += 1;
                        n - 1
                    } else {
                        NIL
                    }
                })
                .collect();
            let frames = ((cap as f64 / LEADER_STRIDE as f64).round() as usize).max(1);
            Box::new(Duel {
                shadow_id,
                srrip: Core::new(n as usize, frames, max),
                brrip: Core::new(n as usize, frames, max),
                rng: Rng::new(hash64(c.seed)),
                psel: PSEL_INIT,
            })
        });
        Ok(Rrip {
            core: Core::new(c.pages, cap, max),
            mode,
            rng: Rng::new(c.seed),
            eps53: (eps * (1u64 << 53) as f64) as u64,
            duel,
        })
    }
}

impl Policy for Rrip {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        if let Some(d) = &mut self.duel {
            if sampled(id) {
                d.observe(id, self.eps53);
            }
        }
        if self.core.hit(id) {
            return Access::Hit;
        }
        let max = self.core.max;
        let brrip = match self.mode {
            Mode::Srrip => false,
            Mode::Brrip => true,
            Mode::Drrip => self.duel.as_ref().is_some_and(|d| d.psel >= PSEL_MSB),
        };
        let rrpv = if brrip {
            bimodal(&mut self.rng, self.eps53, max)
        } else {
            max - 1
        };
        Access::Miss {
            victim: self.core.insert(id, rrpv),
        }
    }

    fn bytes_per_page(&self) -> usize {
        // frame_of, plus the per-frame part counted as if every page had a frame.
        let mut b = 4 + 1 + self.core.bytes_per_frame();
        if let Some(d) = &self.duel {
            let pages = d.shadow_id.len().max(1);
            let shadows = d.srrip.frame_of.len() * 10
                + d.srrip.page.len() * (d.srrip.bytes_per_frame() + d.brrip.bytes_per_frame());
            b += 4 + shadows.div_ceil(pages);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testutil::*;
    use crate::policy::PolicySpec;

    fn build(spec: &str, cap: usize) -> Result<usize, SimError> {
        let s = PolicySpec::parse(spec)?;
        let cfg = PolicyConfig {
            capacity: cap,
            pages: 100_000,
            params: &s.params,
            seed: 1,
        };
        (s.info().build)(&cfg).map(|p| p.bytes_per_page())
    }

    const REQ: Req = Req {
        pos: 0,
        write: false,
        next_use: u32::MAX,
    };

    #[test]
    fn bitmap_finds_the_lowest_frame() {
        let mut b = Bits::new(300_000); // 4688 words, 74, 2, 1: four levels
        assert_eq!(b.levels.len(), 4);
        assert_eq!(b.first(), None);
        for i in [299_999, 70_000, 4096, 64, 63] {
            b.insert(i);
        }
        assert_eq!(b.first(), Some(63));
        b.remove(63);
        assert_eq!(b.first(), Some(64));
        b.remove(64);
        b.remove(4096);
        assert_eq!(b.first(), Some(70_000));
        b.remove(70_000);
        assert_eq!(b.first(), Some(299_999));
        b.remove(299_999);
        assert_eq!(b.first(), None);
    }

    /// The paper's algorithm on one set of `cap` ways, literally: explicit
    /// RRPVs, search from way 0 for max, else increment all by one and
    /// search again. `brrip` draws like `bimodal` (one draw per miss).
    fn oracle(trace: &[u32], cap: usize, m: u32, brrip: Option<(f64, u64)>) -> Vec<bool> {
        let max = (1u32 << m) - 1;
        let mut ways: Vec<(u32, u32)> = Vec::new();
        let mut rng = brrip.map(|(_, seed)| Rng::new(seed));
        let eps53 = brrip.map_or(0, |(e, _)| (e * (1u64 << 53) as f64) as u64);
        let mut out = Vec::new();
        for &id in trace {
            if let Some(w) = ways.iter_mut().find(|w| w.0 == id) {
                w.1 = 0;
                out.push(true);
                continue;
            }
            out.push(false);
            let long = rng.as_mut().is_some_and(|r| (r.next_u64() >> 11) < eps53);
            let ins = if rng.is_some() && !long { max } else { max - 1 };
            if ways.len() < cap {
                ways.push((id, ins));
                continue;
            }
            loop {
                if let Some(w) = ways.iter_mut().find(|w| w.1 == max) {
                    *w = (id, ins);
                    break;
                }
                for w in ways.iter_mut() {
                    w.1 += 1;
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_literal_algorithm() {
        for seed in 1..4 {
            let t: Vec<u32> = random_trace(4000, 300, seed)
                .iter()
                .map(|&x| x as u32)
                .collect();
            for (spec, mode, brrip) in [
                ("srrip", Mode::Srrip, None),
                ("srrip:m=1", Mode::Srrip, None),
                ("srrip:m=3", Mode::Srrip, None),
                ("srrip:m=7", Mode::Srrip, None),
                ("brrip", Mode::Brrip, Some((1.0 / 32.0, seed))),
                ("brrip:eps=0:m=3", Mode::Brrip, Some((0.0, seed))),
                ("brrip:eps=0.5", Mode::Brrip, Some((0.5, seed))),
            ] {
                let s = PolicySpec::parse(spec).unwrap();
                let m = s.params.int("m", 2, 1, 7).unwrap() as u32;
                for cap in [1, 2, 5, 40, 150] {
                    let cfg = PolicyConfig {
                        capacity: cap,
                        pages: 300,
                        params: &s.params,
                        seed,
                    };
                    let mut p = Rrip::new(&cfg, mode).unwrap();
                    let got: Vec<bool> = t
                        .iter()
                        .map(|&id| p.access(id, &REQ) == Access::Hit)
                        .collect();
                    assert_eq!(got, oracle(&t, cap, m, brrip), "{spec} cap {cap}");
                }
            }
        }
    }

    #[test]
    fn hand_worked_srrip_scan_resistance() {
        // The paper's motivation: a working set that is re-referenced
        // survives a one-time scan under SRRIP but not under LRU.
        // cap 6, m=2 (max 3, insert 2). a b c fill frames 0-2 at RRPV 2,
        // their hits set 0. Scan pages s1.. take frames 3-5 at 2.
        // s4: no RRPV 3, so all age by 1 (a b c: 1, s1-s3: 3); frame 3 (s1)
        //     is the first at 3: s4 replaces it at 2. s5, s6 replace s2, s3.
        // s7: no 3: age by 1 (a b c: 2; s4-s6: 3): s7-s9 replace s4-s6.
        // s10: no 3: age by 1: everyone is at 3, and frame 0 (a) is first.
        // So a scan of 9 leaves a b c resident (3 hits after it), while a
        // scan of 10 evicts a, and then a evicts b (frame 1), b evicts c.
        let (a, b, c) = (1000, 1001, 1002);
        let run = |scan: u64| {
            let mut t = vec![a, b, c, a, b, c];
            t.extend(0..scan);
            t.extend([a, b, c]);
            t
        };
        let s9 = run(9);
        let h = hits("srrip", 6, &s9);
        assert_eq!(&h[..6], &[false, false, false, true, true, true]);
        assert!(h[6..15].iter().all(|&x| !x));
        assert_eq!(&h[15..], &[true, true, true]);
        // LRU loses the working set to the same scan.
        assert_eq!(&hits("lru", 6, &s9)[15..], &[false, false, false]);
        // One more scan page and SRRIP (2-bit) loses it too.
        assert_eq!(&hits("srrip", 6, &run(10))[16..], &[false, false, false]);
        // With m=3 (max 7, insert 6) every 3 scan pages age a b c by one
        // (at s4, s7, ..., s19 they go 1, 2, ..., 6), and s22 is the first
        // to find them at 7: a scan of 21 survives, one of 22 does not.
        assert_eq!(&hits("srrip:m=3", 6, &run(21))[27..], &[true, true, true]);
        assert_eq!(
            &hits("srrip:m=3", 6, &run(22))[28..],
            &[false, false, false]
        );
    }

    #[test]
    fn hand_worked_brrip_thrash_resistance() {
        // A loop over 4 pages in a memory of 3: LRU never hits.
        let lp: Vec<u64> = (0..4).cycle().take(40).collect();
        assert_eq!(misses("lru", 3, &lp), 40);
        // SRRIP on a loop: after the first fill all three are at 2; each
        // miss ages them to 3 and replaces frames 0, 1, 2 in turn, inserting
        // at 2: FIFO order, so every page is gone before its next use.
        assert_eq!(misses("srrip", 3, &lp), 40);
        // BRRIP with eps=0 inserts at 3. 0 1 2 fill frames 0-2 at 3; 3
        // replaces frame 0 (page 0). Then 0 replaces frame 0 again, 1 and 2
        // hit (RRPV 0), 3 replaces frame 0 (at 3), 0 replaces frame 0 ...
        // Round 1: 4 misses; every later round: 2 misses (the pages that
        // share frame 0) and 2 hits.
        let h = hits("brrip:eps=0", 3, &lp);
        assert_eq!(&h[..4], &[false; 4]);
        for round in h[4..].chunks(4) {
            assert_eq!(round, &[false, true, true, false]);
        }
        // eps=1 inserts at 2 always: exactly SRRIP.
        assert_eq!(hits("brrip:eps=1", 3, &lp), hits("srrip", 3, &lp));
        // The default eps is the paper's 1/32: of 32 000 insertions about
        // 1000 are long (binomial, standard deviation 31); 5 sigma either side.
        let s = PolicySpec::parse("brrip").unwrap();
        let cfg = PolicyConfig {
            capacity: 1,
            pages: 32_000,
            params: &s.params,
            seed: 9,
        };
        let mut p = Rrip::new(&cfg, Mode::Brrip).unwrap();
        let mut long = 0;
        for id in 0..32_000 {
            p.access(id, &REQ);
            long += usize::from(
                p.core.pk[id as usize] as usize == RESIDENT as usize | p.core.key_of(2),
            );
        }
        assert!((845..=1155).contains(&long), "{long}");
    }

    #[test]
    fn hand_worked_drrip_psel() {
        // Three sampled pages x y z looping in shadows of 2 frames (cap 64):
        // SRRIP shadow: x y fill at 2; z ages both to 3 and replaces frame 0
        // (x); x replaces frame 1 (y, at 3); y finds none at 3, ages z and x
        // to 3, replaces frame 0 (z); z replaces frame 1 (x): all misses.
        // BRRIP shadow (eps=0): x y at 3; z replaces frame 0 (x); x replaces
        // frame 0 (z); y hits; z replaces frame 0 (x).
        // PSEL (starts 511): round 1 both miss each page (net 0); round 2:
        // x both miss (511), y SRRIP-only miss (512), z both miss (512).
        let ids: Vec<u32> = (0u32..).filter(|&i| sampled(i)).take(3).collect();
        let follower = (0u32..).find(|&i| !sampled(i)).unwrap();
        let s = PolicySpec::parse("drrip:eps=0").unwrap();
        let cfg = PolicyConfig {
            capacity: 64,
            pages: 1 + ids[2].max(follower) as usize,
            params: &s.params,
            seed: 1,
        };
        let mut p = Rrip::new(&cfg, Mode::Drrip).unwrap();
        let psel = |p: &Rrip| p.duel.as_ref().unwrap().psel;
        let mut seen = Vec::new();
        for _ in 0..2 {
            for &i in &ids {
                p.access(i, &REQ);
                seen.push(psel(&p));
            }
        }
        assert_eq!(seen, vec![511, 511, 511, 511, 512, 512]);
        // MSB set: the follower is inserted with BRRIP, at RRPV 3.
        p.access(follower, &REQ);
        let k = p.core.pk[follower as usize];
        assert_eq!(k as usize, RESIDENT as usize | p.core.key_of(3));
    }

    #[test]
    fn drrip_follows_the_better_policy() {
        // A loop of 2000 pages in a memory of 1000.
        let lp: Vec<u64> = (0..2000).cycle().take(2000 * 10).collect();
        // SRRIP is FIFO on a loop (see above): no hits.
        assert_eq!(run_spec("srrip", 1000, &lp).counters.hits, 0);
        // BRRIP with eps=0 keeps 999 pages in frames 1-999 and cycles the
        // rest through frame 0: 999 hits per round after the first.
        let brrip = run_spec("brrip:eps=0", 1000, &lp).counters.hits;
        assert_eq!(brrip, 999 * 9);
        // DRRIP: the shadows get round(1000/32) = 31 frames and the n sampled
        // pages (more than 31, checked here) loop through them. Round 1:
        // every sampled page misses in both shadows (PSEL stays 511), so the
        // real memory runs SRRIP and ends with frame i holding page 1000+i
        // at RRPV 2. Round 2: s0 (the first sampled page) misses in both
        // shadows; s1 hits in the BRRIP shadow (it keeps s1..s30) but not
        // in the SRRIP one: PSEL 512 from page s1 on, and it never falls
        // again. So pages 0..s1-1 are SRRIP-inserted into frames 0..s1-1
        // (aged 2 -> 3 first), page s1 is BRRIP-inserted at 3 into frame
        // s1, and every later miss reuses frame s1: pages s1..1000+s1 miss,
        // 1001+s1..1999 hit (999 - s1 hits). Rounds 3-10: pages 0..s1-1 are
        // still at 2 (frame s1 always holds a page at 3, so no ageing) and
        // hit, as do 1001+s1..1999: 999 hits per round.
        let sampled_ids: Vec<u64> = (0u32..2000)
            .filter(|&i| sampled(i))
            .map(u64::from)
            .collect();
        assert!(sampled_ids.len() > 31, "{sampled_ids:?}");
        let s1 = sampled_ids[1];
        let drrip = run_spec("drrip:eps=0", 1000, &lp).counters.hits;
        assert_eq!(drrip, 999 * 9 - s1);

        // A working set that fits, then a scan (SRRIP's case): pages 0..499
        // ten times, 600 new pages, 0..499 again, in 1000 frames. SRRIP:
        // the working set is at RRPV 0 when the scan fills frames 500-999
        // at 2; the 501st scan page ages all by one (WS 1, scan 3) and the
        // last 100 replace frames 500-599, never reaching the WS: 4500 + 500
        // hits. DRRIP: the sampled WS pages (fewer than 31, checked) fit in
        // both shadows; sampled scan pages miss in both (net 0); in the
        // SRRIP shadow the overflow evicts scan pages only, as long as it
        // needs no more than the 31 - n_ws scan pages aged to 3 (checked),
        // and in the BRRIP shadow (eps=0) scan pages sit at 3 and go first.
        // So the WS never misses in a shadow, PSEL stays at 511 and DRRIP is
        // SRRIP exactly.
        let mut ws: Vec<u64> = (0..500).cycle().take(5000).collect();
        ws.extend(10_000..10_600);
        ws.extend(0..500);
        let n_ws = (0u32..500).filter(|&i| sampled(i)).count();
        let n_scan = (500u32..1100).filter(|&i| sampled(i)).count();
        assert!(
            n_ws < 31 && n_scan + n_ws <= 2 * 31 - n_ws,
            "{n_ws} {n_scan}"
        );
        assert_eq!(run_spec("srrip", 1000, &ws).counters.hits, 5000);
        assert_eq!(run_spec("drrip:eps=0", 1000, &ws).counters.hits, 5000);
    }

    #[test]
    fn params_are_checked() {
        // m=2, 10 frames: 4 (frame_of) + 4 (page) + 1 (key) + 4 one-word
        // bitmaps = 32 bytes over 10 frames -> 4.
        assert_eq!(build("srrip", 10).unwrap(), 13);
        // 64 000 frames: 4 bitmaps of 1000 + 16 + 1 words: 4136 words
        // = 33 088 bytes over 64 000 frames -> 1 byte.
        assert_eq!(build("srrip", 64_000).unwrap(), 10);
        assert!(build("srrip:m=7", 10).is_ok());
        assert!(build("srrip:m=0", 10).is_err());
        assert!(build("srrip:m=8", 10).is_err());
        assert!(build("srrip:eps=0.5", 10).is_err());
        assert!(build("brrip:eps=1.5", 10).is_err());
        assert!(build("brrip:eps=x", 10).is_err());
        assert!(build("drrip:eps=0.1:m=3", 10).is_ok());
    }

    #[test]
    fn contract() {
        for p in [
            "srrip",
            "brrip",
            "drrip",
            "srrip:m=1",
            "brrip:m=7",
            "drrip:m=3",
        ] {
            contract_all(p);
        }
    }
}
