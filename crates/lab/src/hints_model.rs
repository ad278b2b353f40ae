//! The simulator's prediction for `bench hints` cells (filled in once the simulator models prefetch).
use crate::bench_hints::{HintsOptions, HintsSize};

pub fn predict(_s: &mut HintsSize, _o: &HintsOptions, _readahead: &str, _pc: Option<u32>) {}
