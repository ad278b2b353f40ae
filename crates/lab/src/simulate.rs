//! The simulator for lab's callers: [`run_costed`] with this crate's error
//! (the simulation jobs are [`swaplab_sim::jobs`]), and hint files
//! resolved into the simulator's page ranges
//! ([`swaplab_analysis::sim_hints`]).

use swaplab_sim::jobs;
use swaplab_sim::{DeviceSpec, FaultPath, PolicySpec, PrefetchSpec, RangeHint, SimResult};
use swaplab_trace::DenseTrace;

use crate::error::Result;

pub use swaplab_analysis::sim_hints::{
    resolve_sim_hints, sim_hints, SimHints, MAX_HINTS_PER_ALLOCATION,
};

/// [`jobs::run_costed`]: every (policy, size, prefetcher, device, fault
/// path) with their costs; the rows a device could not run are named in
/// the second value, and when none could run the error is
/// [`crate::Error::Invalid`].
#[allow(clippy::too_many_arguments)]
pub fn run_costed(
    t: &DenseTrace,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    prefetchers: &[PrefetchSpec],
    hints: &[RangeHint],
    devices: &[DeviceSpec],
    paths: &[FaultPath],
    base_time_s: Option<f64>,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<SimResult>, Vec<String>)> {
    Ok(jobs::run_costed(
        t,
        specs,
        sizes,
        prefetchers,
        hints,
        devices,
        paths,
        base_time_s,
        seed,
        progress,
    )?)
}
