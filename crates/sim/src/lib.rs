//! swaplab's page-replacement simulator.
//!
//! Pure computation over a [`DenseTrace`](swaplab_trace::DenseTrace): no OS calls.
//!
//! * [`policy`]: the small [`Policy`] trait every policy implements,
//!   its parameters and the [`registry`](policies::REGISTRY).
//! * [`engine`]: the memory model around a policy (minor/major faults, dirty
//!   pages, swap-outs) and the simulation loop.
//! * [`policies`]: one file per policy.
//! * [`prefetch`]: swap readahead models (Linux cluster and VMA readahead,
//!   Leap, next-N) behind the small [`Prefetcher`](prefetch::Prefetcher) trait.
//! * [`device`]: swap device models (ssd, hdd, zram, remote, hybrid,
//!   measured profiles) behind the small [`Device`](device::Device) trait,
//!   and the fault path that turns faults into time.
//! * [`mrc`]: miss-ratio curves (exact one-pass LRU, SHARDS).
//! * [`stream`]: simulations over a trace streamed from disk row group by
//!   row group (memory for the distinct pages only), a grid over one read.
//! * [`jobs`]: many simulations of one trace in parallel (every policy ×
//!   size × prefetcher × device), and the simulated half of `swaplab demo`;
//!   their [`error`].
//!
//! The simulator is hand-written rather than built on a library because it
//! is the product's hot path: every policy works on flat arrays indexed by
//! dense page id, with intrusive lists ([`util::Lists`]), so that a reference
//! costs a few nanoseconds.

pub mod device;
pub mod engine;
pub mod error;
pub mod jobs;
pub mod lazy_lists;
pub mod mrc;
pub mod policies;
pub mod policy;
pub mod prefetch;
pub mod stream;
pub mod util;

pub use device::{Costs, DeviceSpec, FaultPath};
pub use engine::{
    simulate, simulate_costed, simulate_ext, Counters, Extras, HintKind, RangeHint, Sim, SimError,
    SimResult,
};
pub use policy::{Access, Params, Policy, PolicyConfig, PolicyInfo, PolicySpec, Req};
pub use prefetch::PrefetchSpec;
