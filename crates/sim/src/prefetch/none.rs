//! `none`: no readahead, only the faulting page is read (`page-cluster` 0).
//! `sim` runs it on the engine's plain path.
use super::{Fault, Prefetcher, PrefetcherInfo};

pub const INFO: PrefetcherInfo = PrefetcherInfo {
    name: "none",
    summary: "no readahead: only the faulting page is read",
    params: "",
    slots: false,
    build: |c| {
        c.params.allow_for("prefetcher", "none", &[])?;
        Ok(Box::new(NoPrefetch))
    },
};

struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    fn fault(&mut self, _f: &Fault, _out: &mut Vec<u64>) {}
}

#[cfg(test)]
mod tests {
    use crate::prefetch::testutil::*;

    #[test]
    fn hand_worked() {
        // lru, 2 pages: 1 2 3 1 2 3: 3 minor faults, then 3 major faults, no reads.
        // Same counts as the plain engine.
        let r = run("lru", 2, "none", &[1, 2, 3, 1, 2, 3]);
        assert_eq!(counts(&r), (3, 0, 0, 0));
        assert_eq!(r.counters.minor_faults, 3);
        let plain = crate::engine::testutil::run_spec("lru", 2, &[1, 2, 3, 1, 2, 3]);
        assert_eq!(plain.counters, r.counters);
    }
}
